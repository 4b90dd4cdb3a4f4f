//! `cuberoute monitor [--node N ...] [--json] [--count C] [--for T]`: what the nodes see
//! happen, one line (or one JSON object) per notice, as it happens, until interrupted
//! (`cuberoute_cluster::ops::monitor` follows the nodes); and a `node_down` line when every
//! followed neighbour of a node saw its link to it go down (`NodeVerdicts` decides), `node_up`
//! when it is back.

use super::args::{ClientArg, JsonArg};
use super::{runtime, usage};
use crate::print;
use cuberoute_cluster::ops::monitor::{NodeChange, NodeVerdicts, Watched, follow};
use cuberoute_protocol::wire::control::{Happening, Notice};
use cuberoute_protocol::{NodeId, Topology};
use serde_json::{Value, json};
use std::io::Write;
use std::time::{Duration, SystemTime};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub dir: ClientArg,
    /// A node to follow (repeat for more); every node when not given.
    #[arg(long)]
    pub node: Vec<String>,
    #[command(flatten)]
    pub output: JsonArg,
    /// Stop after this many notices.
    #[arg(long)]
    pub count: Option<u64>,
    /// Stop after this long (`30s`, `5m`).
    #[arg(long = "for", value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub duration: Option<Duration>,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    if args.count == Some(0) {
        return Err(usage("--count must be at least 1"));
    }
    let runtime = runtime()?;
    let _guard = runtime.enter();
    let cluster = args.dir.open()?;
    let topology = cluster.manifest.topology;
    let mut nodes = Vec::new();
    for text in &args.node {
        let node = super::parse_node(topology, text)?;
        if nodes.contains(&node) {
            return Err(usage(format!("--node {text}: given twice")));
        }
        nodes.push(node);
    }
    if nodes.is_empty() {
        nodes = cluster.manifest.nodes.iter().map(|n| n.id).collect();
    }
    runtime.block_on(async {
        let (tx, mut rx) = tokio::sync::mpsc::channel(1024);
        let follower = {
            let (cluster, nodes) = (cluster.clone(), nodes.clone());
            tokio::spawn(async move { follow(&cluster, &nodes, tx).await })
        };
        let stop = async {
            match args.duration {
                Some(d) => tokio::time::sleep(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(stop);
        let (mut seen, mut following, total) = (0u64, 0usize, nodes.len());
        let mut verdicts = NodeVerdicts::new(topology, &nodes);
        let mut out = std::io::stdout().lock();
        loop {
            let (node, watched) = tokio::select! {
                got = rx.recv() => match got {
                    Some(got) => got,
                    None => break,
                },
                () = &mut stop => break,
                _ = tokio::signal::ctrl_c() => break,
            };
            if watched == Watched::Following {
                following += 1;
                if following == total {
                    eprintln!("following {}", print::count(total as u64, "node"));
                }
                continue;
            }
            let line = if args.output.json {
                json_line(node, &watched).to_string()
            } else {
                text_line(topology, node, &watched)
            };
            writeln!(out, "{line}")?;
            for change in verdicts.watched(node, &watched) {
                let line = if args.output.json {
                    json_change(&change).to_string()
                } else {
                    text_change(topology, &change)
                };
                writeln!(out, "{line}")?;
            }
            out.flush()?;
            if matches!(watched, Watched::Notice(_)) {
                seen += 1;
                if args.count.is_some_and(|c| seen >= c) {
                    break;
                }
            }
        }
        drop(rx);
        let _ = follower.await;
        cluster.close();
        anyhow::Ok(())
    })
}

/// The notice's kind as the JSON's `kind` and the text's second column.
fn kind(what: &Happening) -> &'static str {
    match what {
        Happening::LinkUp { .. } => "link_up",
        Happening::LinkDown { .. } => "link_down",
        Happening::Delivered { .. } => "delivered",
        Happening::Dropped { .. } => "dropped",
        Happening::Fault { .. } => "fault",
        Happening::Event { .. } => "event",
        Happening::Reloaded { .. } => "reloaded",
    }
}

/// One JSON object: `node`, `kind`, and the notice's fields (`index`, `at_ms`, ...).
fn json_line(node: NodeId, watched: &Watched) -> Value {
    match watched {
        Watched::Notice(notice) => {
            let mut object = json!({
                "node": node.0,
                "kind": kind(&notice.what),
                "index": notice.index,
                "at_ms": notice.at_ms,
            });
            // serde writes an enum variant as {"Variant": {fields}}: lift the fields up.
            if let Ok(Value::Object(variant)) = serde_json::to_value(&notice.what)
                && let Some(Value::Object(fields)) = variant.into_values().next()
            {
                object.as_object_mut().expect("an object").extend(fields);
            }
            object
        }
        Watched::Missed(n) => {
            json!({"node": node.0, "kind": "missed", "count": n, "at_ms": now_ms()})
        }
        Watched::Unreachable(why) => {
            json!({"node": node.0, "kind": "unreachable", "error": why, "at_ms": now_ms()})
        }
        Watched::Back | Watched::Following => {
            json!({"node": node.0, "kind": "back", "at_ms": now_ms()})
        }
    }
}

/// A node's verdict as one JSON object: `kind` `node_down` (with `seen_by`, each neighbour
/// and its `at_ms`) or `node_up`.
fn json_change(change: &NodeChange) -> Value {
    match change {
        NodeChange::Down { node, seen_by } => json!({
            "node": node.0,
            "kind": "node_down",
            "at_ms": seen_by.iter().map(|(_, at)| *at).max().unwrap_or(0),
            "seen_by": seen_by
                .iter()
                .map(|(n, at)| json!({"node": n.0, "at_ms": at}))
                .collect::<Vec<_>>(),
        }),
        NodeChange::Up {
            node,
            seen_by,
            at_ms,
        } => json!({"node": node.0, "kind": "node_up", "at_ms": at_ms, "seen_by": seen_by.0}),
    }
}

/// `node N down: seen by A at T, B at T', ...`, at the time the last of them saw it.
fn text_change(topology: Topology, change: &NodeChange) -> String {
    let name = |n: NodeId| print::node(topology, n);
    let clock = |at_ms: u64| {
        humantime::format_rfc3339_millis(SystemTime::UNIX_EPOCH + Duration::from_millis(at_ms))
            .to_string()
    };
    let (node, at_ms, kind, what) = match change {
        NodeChange::Down { node, seen_by } => {
            let seen: Vec<String> = seen_by
                .iter()
                .map(|(n, at)| format!("{} at {}", name(*n), clock(*at)))
                .collect();
            (
                *node,
                seen_by.iter().map(|(_, at)| *at).max().unwrap_or(0),
                "node_down",
                format!("node {} down: seen by {}", name(*node), seen.join(", ")),
            )
        }
        NodeChange::Up {
            node,
            seen_by,
            at_ms,
        } => (
            *node,
            *at_ms,
            "node_up",
            if seen_by == node {
                format!("node {} up: answers again", name(*node))
            } else {
                format!("node {} up: link up at {}", name(*node), name(*seen_by))
            },
        ),
    };
    format!(
        "{}  node {:<12} {:<11} {what}",
        clock(at_ms),
        name(node),
        kind
    )
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn text_line(topology: Topology, node: NodeId, watched: &Watched) -> String {
    let name = |n: NodeId| print::node(topology, n);
    let (at_ms, kind, what) = match watched {
        Watched::Notice(Notice { at_ms, what, .. }) => (*at_ms, kind(what), describe(&name, what)),
        Watched::Missed(n) => (
            now_ms(),
            "missed",
            format!("{n} notices overwritten before they were read"),
        ),
        Watched::Unreachable(why) => (now_ms(), "unreachable", why.clone()),
        Watched::Back | Watched::Following => (now_ms(), "back", "answers again".to_string()),
    };
    let at = SystemTime::UNIX_EPOCH + Duration::from_millis(at_ms);
    format!(
        "{}  node {:<12} {:<11} {what}",
        humantime::format_rfc3339_millis(at),
        name(node),
        kind
    )
}

fn describe(name: &dyn Fn(NodeId) -> String, what: &Happening) -> String {
    match what {
        Happening::LinkUp { neighbour } => format!("neighbour {}", name(*neighbour)),
        Happening::LinkDown { neighbour, why } if why.is_empty() => {
            format!("neighbour {}", name(*neighbour))
        }
        Happening::LinkDown { neighbour, why } => {
            format!("neighbour {}: {why}", name(*neighbour))
        }
        Happening::Delivered {
            src,
            seq,
            index,
            k,
            hops,
            latency_us,
            path,
            ..
        } => {
            let mut line = format!(
                "from {} seq {seq} copy {}/{k}, {}, {:.3} ms",
                name(*src),
                u32::from(*index) + 1,
                print::count(*hops, "hop"),
                *latency_us as f64 / 1000.0
            );
            if let Some(path) = path {
                let ids: Vec<String> = path.iter().map(|&n| name(n)).collect();
                line.push_str(&format!(", path {}", ids.join(" ")));
            }
            line
        }
        Happening::Dropped { reason, count } => {
            format!("{}: {reason}", print::count(*count, "packet"))
        }
        Happening::Fault { fault } => fault.clone(),
        Happening::Event {
            name: event,
            neighbour,
        } => match neighbour {
            Some(n) => format!("{event}, neighbour {}", name(*n)),
            None => event.clone(),
        },
        Happening::Reloaded { changed } if changed.is_empty() => "nothing changed".to_string(),
        Happening::Reloaded { changed } => changed.join("; "),
    }
}
