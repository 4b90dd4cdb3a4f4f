//! The instance checks the algorithms share: the nodes are nodes of the topology, distinct where
//! they must be, and no more destinations than disjoint paths exist.

use super::error::PathError;
use crate::{NodeId, Topology};

/// Check a node-to-set instance: `s` and `dests` are nodes of `topology`, the destinations are
/// distinct, none is `s`, and there are 1..=connectivity of them.
pub fn check_node_to_set(topology: Topology, s: NodeId, dests: &[NodeId]) -> Result<(), PathError> {
    check_nodes(topology, std::iter::once(s).chain(dests.iter().copied()))?;
    if dests.is_empty() {
        return Err(PathError::Empty("destination set"));
    }
    if let Some(&d) = dests.iter().find(|&&d| d == s) {
        return Err(PathError::DestinationIsSource(d.0));
    }
    check_distinct(dests, "destination set")?;
    check_at_most_connectivity(topology, dests.len())
}

/// Check a set-to-set instance: as many sources as destinations, 1..=connectivity of each, all
/// distinct nodes of `topology`, no node on both sides.
pub fn check_set_to_set(
    topology: Topology,
    sources: &[NodeId],
    dests: &[NodeId],
) -> Result<(), PathError> {
    check_nodes(topology, sources.iter().chain(dests).copied())?;
    if sources.is_empty() {
        return Err(PathError::Empty("source set"));
    }
    if sources.len() != dests.len() {
        return Err(PathError::SetSizes {
            sources: sources.len(),
            destinations: dests.len(),
        });
    }
    check_distinct(sources, "source set")?;
    check_distinct(dests, "destination set")?;
    if let Some(&v) = sources.iter().find(|v| dests.contains(v)) {
        return Err(PathError::SourceIsDestination(v.0));
    }
    check_at_most_connectivity(topology, dests.len())
}

/// At most as many destinations as the connectivity: no more disjoint paths exist.
fn check_at_most_connectivity(topology: Topology, given: usize) -> Result<(), PathError> {
    let max = topology.connectivity() as usize;
    if given > max {
        return Err(PathError::TooManyDestinations {
            given,
            max,
            topology,
        });
    }
    Ok(())
}

/// Check a node-to-node instance: two distinct nodes of `topology`.
pub fn check_node_to_node(topology: Topology, s: NodeId, d: NodeId) -> Result<(), PathError> {
    check_nodes(topology, [s, d])?;
    if s == d {
        return Err(PathError::SameNode(s.0));
    }
    Ok(())
}

fn check_nodes(
    topology: Topology,
    nodes: impl IntoIterator<Item = NodeId>,
) -> Result<(), PathError> {
    match nodes.into_iter().find(|&v| !topology.contains(v)) {
        Some(v) => Err(PathError::NotANode {
            node: v.0,
            topology,
        }),
        None => Ok(()),
    }
}

fn check_distinct(set: &[NodeId], name: &'static str) -> Result<(), PathError> {
    for (i, v) in set.iter().enumerate() {
        if set[..i].contains(v) {
            return Err(PathError::Duplicate {
                node: v.0,
                set: name,
            });
        }
    }
    Ok(())
}
