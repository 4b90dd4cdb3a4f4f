//! `cuberoute cluster reload [--node N ...] [--json]`: every node (or those named) reads its
//! configuration file again, as on SIGHUP, and says what it changed and what needs a restart.
//! Exits 1 if any node did not reload (a bad file, or no answer).

use crate::commands::args::{ClientArg, JsonArg};
use crate::commands::runtime;
use cuberoute_protocol::NodeId;
use cuberoute_protocol::wire::control::{Reload, Request, Response};
use std::time::Duration;

#[derive(clap::Args, Debug)]
#[command(mut_arg("json", |a| a.help(
    "One JSON document: per node, what changed, what needs a restart, or the error"
)))]
pub struct Args {
    #[command(flatten)]
    pub dir: ClientArg,
    /// A node to reload (repeat for more); every node when not given.
    #[arg(long)]
    pub node: Vec<String>,
    #[command(flatten)]
    pub output: JsonArg,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let runtime = runtime()?;
    let _guard = runtime.enter();
    let cluster = args.dir.open()?;
    let topology = cluster.manifest.topology;
    let mut nodes = Vec::new();
    for text in &args.node {
        let node = crate::commands::parse_node(topology, text)?;
        if !nodes.contains(&node) {
            nodes.push(node);
        }
    }
    if nodes.is_empty() {
        nodes = cluster.manifest.nodes.iter().map(|n| n.id).collect();
    }
    // The role is checked first: a certificate that may not reload is told so once.
    cluster
        .allowed(&nodes, &[Request::Reload])
        .map_err(|line| anyhow::anyhow!(line))?;
    let requests = nodes.iter().map(|&n| (n, Request::Reload)).collect();
    let answers = runtime.block_on(cluster.request_each(requests, Duration::from_secs(10)));
    cluster.close();
    let results: Vec<(NodeId, Result<Reload, String>)> = answers
        .into_iter()
        .map(|(node, answer)| {
            let result = answer.and_then(|response| match response {
                Response::Reloaded(reload) => Ok(reload),
                Response::Error(e) => Err(e.message),
                other => Err(format!("unexpected answer {other:?}")),
            });
            (node, result)
        })
        .collect();
    let failed = results.iter().filter(|(_, r)| r.is_err()).count();
    if args.output.json {
        let nodes: Vec<serde_json::Value> = results
            .iter()
            .map(|(node, result)| match result {
                Ok(r) => serde_json::json!({
                    "id": node.0, "reloaded": true,
                    "changed": r.changed, "needs_restart": r.needs_restart,
                }),
                Err(e) => serde_json::json!({"id": node.0, "reloaded": false, "error": e}),
            })
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({ "nodes": nodes }))?
        );
    } else {
        for (node, result) in &results {
            let name = format!("node {}", crate::print::node(topology, *node));
            match result {
                Ok(r) if r.changed.is_empty() && r.needs_restart.is_empty() => {
                    println!("{name}: reloaded, nothing changed");
                }
                Ok(r) => {
                    println!("{name}: reloaded");
                    for line in &r.changed {
                        println!("  changed        {line}");
                    }
                    for line in &r.needs_restart {
                        println!("  needs restart  {line}");
                    }
                }
                Err(e) => println!("{name}: NOT reloaded: {e}"),
            }
        }
    }
    if failed > 0 {
        anyhow::bail!("{failed} of {} nodes did not reload", results.len());
    }
    Ok(())
}
