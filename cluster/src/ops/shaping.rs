//! Network faults between real daemons, in user space: delay, jitter, reordering and
//! duplication of the datagrams a node's link socket sends (`cuberoute_daemon::shaper`), set
//! and removed through the control API. The building block of the chaos tooling's network
//! commands; a simulation has its own network faults and refuses these.

use crate::ops::cluster_client::ClusterClient;
use cuberoute_protocol::NodeId;
pub use cuberoute_protocol::wire::control::ShapeRule;
use cuberoute_protocol::wire::control::{Fault, Request, Response};
use std::time::Duration;

/// How long a node is given to answer.
const ANSWER_WITHIN: Duration = Duration::from_secs(5);

/// Put `rule` in force at each of `nodes` (for the datagrams each sends to the rule's
/// destinations; `netfault::node_addresses` names nodes as destinations). An error names every node
/// that refused or did not answer; the others have the rule.
pub async fn shape(
    client: &ClusterClient,
    nodes: &[NodeId],
    rule: ShapeRule,
) -> anyhow::Result<()> {
    rule.check().map_err(anyhow::Error::msg)?;
    inject(client, nodes, Fault::Shape(rule)).await
}

/// Remove every shaping rule at each of `nodes`.
pub async fn unshape(client: &ClusterClient, nodes: &[NodeId]) -> anyhow::Result<()> {
    inject(client, nodes, Fault::Unshape).await
}

async fn inject(client: &ClusterClient, nodes: &[NodeId], fault: Fault) -> anyhow::Result<()> {
    let requests = nodes
        .iter()
        .map(|&id| (id, Request::Inject(fault.clone())))
        .collect();
    let failed: Vec<String> = client
        .request_each(requests, ANSWER_WITHIN)
        .await
        .into_iter()
        .filter_map(|(node, answer)| match answer {
            Ok(Response::Injected(_)) => None,
            Ok(Response::Error(e)) => Some(format!("node {}: {e}", client.name(node))),
            Ok(other) => Some(format!(
                "node {}: unexpected answer {other:?}",
                client.name(node)
            )),
            // The client's error names the node already.
            Err(e) => Some(e.to_string()),
        })
        .collect();
    anyhow::ensure!(failed.is_empty(), "{}", failed.join("; "));
    Ok(())
}
