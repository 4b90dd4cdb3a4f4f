//! `cuberoute demo [TOPO]`: the main job in one command. Start a local cluster (EH(2,2) by
//! default), send a message between the farthest pair and between an adjacent pair, print
//! each delivery report with its k paths, draw them, and show the cluster's status.

use super::args::DirArg;
use super::{runtime, usage};
use crate::print;
use anyhow::Context;
use cuberoute_cluster::ClusterClient;
use cuberoute_cluster::launch::run_state::RunState;
use cuberoute_cluster::launch::start::Local;
use cuberoute_cluster::ops::traffic::SendOptions;
use cuberoute_protocol::{NodeId, PathSet, SendRequest, Topology};
use std::net::Ipv4Addr;
use std::time::Duration;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The topology: `q:N`, `eh:S,T`, `hhc:M`, `mc:K,M` or `rdn:BASE,K`.
    #[arg(default_value = "eh:2,2")]
    pub topology: String,
    #[command(flatten)]
    pub dir: DirArg,
    /// Take the cluster down at the end instead of leaving it running.
    #[arg(long)]
    pub down: bool,
    /// Node i listens on this address + 1 + i (inside 127.0.0.0/8).
    #[arg(long, default_value = "127.1.0.0")]
    pub base_addr: Ipv4Addr,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let topology = super::parse_topology(&args.topology)?;
    let dir = args.dir.cluster();
    let running = RunState::load(&dir)?.filter(|s| !s.alive(&dir).is_empty());
    match running {
        Some(state) if state.topology() == topology => {
            println!(
                "reusing the {topology} cluster running in {}",
                dir.display()
            );
            runtime()?.block_on(cuberoute_cluster::ops::up::wait_running(&dir, None))?;
        }
        Some(state) => {
            return Err(usage(format!(
                "a cluster of {} is running in {}; take it down first (cuberoute cluster down --dir {})",
                state.topology(),
                dir.display(),
                dir.display()
            )));
        }
        None => {
            let local = Local::loopback(topology, dir.clone(), args.base_addr);
            let timeout = cuberoute_cluster::ops::ready::default_timeout(topology.node_count());
            // Its commands come at the end, once the demo has used the cluster.
            print::up_banner(&print::start_local(&local, timeout)?, "processes")?;
        }
    }
    println!();

    let (src, far, near) = demo_pairs(topology);
    let runtime = runtime()?;
    let _guard = runtime.enter();
    let client = ClusterClient::open(&dir)?;
    let options = SendOptions {
        trace: true,
        wait: Some(Duration::from_secs(5)),
        ..SendOptions::default()
    };
    let mut out = std::io::stdout().lock();
    let mut all_delivered = true;
    for (what, dst) in [("farthest pair", far), ("adjacent pair", near)] {
        let message = format!(
            "hello from {} to {}",
            crate::print::node(topology, src),
            crate::print::node(topology, dst)
        );
        let request = SendRequest::to(dst);
        let expected = request.route_system(topology, src)?.paths;
        let sending = runtime.block_on(client.send(src, request, message.into_bytes(), options));
        let report =
            sending.with_context(|| format!("sending to {}", crate::print::node(topology, dst)))?;
        println!(
            "{what}: distance {}, k {}",
            topology.distance(src, dst),
            report.k
        );
        print::write_report(&mut out, topology, &report, true)?;
        all_delivered &= report.copies_delivered() == report.k as usize;
        let traced: Vec<Vec<NodeId>> = report
            .copies
            .iter()
            .filter_map(|c| c.path.as_ref())
            .map(|p| p.iter().map(|&v| NodeId(v)).collect())
            .collect();
        println!(
            "  every path is the one `cuberoute paths` constructs: {}",
            if traced == expected { "yes" } else { "NO" }
        );
        if topology.node_count() <= crate::svg::MAX_NODES && traced.len() == report.k as usize {
            let file = dir
                .path()
                .join(format!("demo-{}.svg", what.replace(' ', "-")));
            let set = PathSet {
                topology,
                src,
                dst,
                paths: traced,
            };
            std::fs::write(&file, crate::svg::render(&set))
                .with_context(|| format!("writing {}", file.display()))?;
            println!("  drawn in {}", file.display());
        }
        println!();
    }
    drop(out);
    client.close();

    println!("cluster status:");
    let status = print::status(&dir, false);
    println!();
    if args.down {
        print::down(&dir, false)?;
    } else {
        println!("the cluster keeps running. Next:");
        print::commands(&dir, topology, Some((src, far)))?;
    }
    status?;
    anyhow::ensure!(all_delivered, "some copies were not delivered");
    Ok(())
}

/// Node 0, the node farthest from it (the largest id among ties), and a neighbour of node 0.
fn demo_pairs(topology: Topology) -> (NodeId, NodeId, NodeId) {
    let src = NodeId(0);
    let far = topology
        .nodes()
        .max_by_key(|&v| (topology.distance(src, v), v))
        .expect("a topology has nodes");
    let near = topology
        .neighbours(src)
        .last()
        .expect("every node has a neighbour");
    (src, far, near)
}
