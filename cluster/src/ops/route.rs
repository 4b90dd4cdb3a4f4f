//! `cuberoute show route`: the k paths a set from S to D takes, as the algorithm table
//! constructs them (every delivered copy follows them: `tests/cluster.rs`), each hop with the
//! state of its link as the hop's sending node reports it now, and which paths are broken.

use crate::ops::cluster_client::ClusterClient;
use cuberoute_protocol::NodeId;
use cuberoute_protocol::paths::table;
use cuberoute_protocol::paths::{Instance, PathError};
use cuberoute_protocol::wire::control::NodeStatus;
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Duration;

/// One hop of a path, as its sending node sees its link to the next.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Hop {
    pub from: u64,
    pub to: u64,
    /// `up`, `down`, `cut`, or `unknown` when the sending node did not answer.
    pub state: &'static str,
    pub rtt_us: Option<u64>,
    /// Packets waiting in the link's buffer.
    pub queued: Option<u64>,
    /// Why the sending node could not be asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unreachable: Option<String>,
}

/// One of the k paths.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct PathNow {
    pub index: usize,
    pub nodes: Vec<u64>,
    pub hops: Vec<Hop>,
    /// Some hop is not up: a copy sent now waits (down, cut) or is lost with its node.
    pub broken: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct Route {
    pub from: u64,
    pub to: u64,
    pub algorithm: &'static str,
    pub paths: Vec<PathNow>,
    /// Paths with every hop up.
    pub intact: usize,
}

/// The paths from `from` to `to` and the state of every hop on them now.
pub async fn route(
    client: &ClusterClient,
    from: NodeId,
    to: NodeId,
    timeout: Duration,
) -> Result<Route, PathError> {
    let topology = client.manifest.topology;
    let (algorithm, system) =
        table::solve(topology, &Instance::NodeToNode { s: from, d: to }, None)?;
    // Every node that sends on some path: each reports its own links.
    let mut senders: Vec<NodeId> = system
        .paths
        .iter()
        .flat_map(|p| p[..p.len() - 1].iter().copied())
        .collect();
    senders.sort();
    senders.dedup();
    let statuses: BTreeMap<NodeId, Result<NodeStatus, String>> = client
        .statuses_of(senders, timeout)
        .await
        .into_iter()
        .collect();
    let paths: Vec<PathNow> = system
        .paths
        .iter()
        .enumerate()
        .map(|(index, path)| {
            let hops: Vec<Hop> = path
                .windows(2)
                .map(|pair| hop(pair[0], pair[1], &statuses[&pair[0]]))
                .collect();
            PathNow {
                index,
                nodes: path.iter().map(|v| v.0).collect(),
                broken: hops.iter().any(|h| h.state != "up"),
                hops,
            }
        })
        .collect();
    Ok(Route {
        from: from.0,
        to: to.0,
        algorithm: algorithm.name,
        intact: paths.iter().filter(|p| !p.broken).count(),
        paths,
    })
}

fn hop(from: NodeId, to: NodeId, status: &Result<NodeStatus, String>) -> Hop {
    let base = Hop {
        from: from.0,
        to: to.0,
        state: "unknown",
        rtt_us: None,
        queued: None,
        unreachable: None,
    };
    let status = match status {
        Ok(status) => status,
        Err(why) => {
            return Hop {
                unreachable: Some(why.clone()),
                ..base
            };
        }
    };
    match status.links.iter().find(|l| l.neighbour == to) {
        Some(link) => Hop {
            state: match (link.cut, link.up) {
                (true, _) => "cut",
                (false, true) => "up",
                (false, false) => "down",
            },
            rtt_us: link.transport.as_ref().map(|t| t.rtt_us),
            queued: Some(link.queued),
            ..base
        },
        None => base,
    }
}
