//! What the disjoint-path algorithms of the seed topologies ([`crate::hhc`],
//! [`crate::metacube`], [`crate::dualnet`]) return and refuse.
//!
//! Every algorithm returns a [`PathSystem`]: the paths, and how they were obtained, so that the
//! tests (and `cuberoute paths`) can say which instances the paper's construction covers and
//! which fall back to the exact search of [`crate::fallback`]. Before returning, every path
//! system passes [`crate::verify`]; a construction that would return a wrong path system returns
//! [`FamilyError::Internal`] instead.

use crate::{NodeId, Topology};

/// A path, from its first node to its last inclusive.
pub type Path = Vec<NodeId>;

/// How a path system was obtained.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Construction {
    /// The paper's algorithm (with the documented corrections).
    Paper,
    /// The paper's printed construction fails on this instance; its building blocks with other
    /// free choices (and our documented corrections), found by a search, with the reason.
    Corrected(&'static str),
    /// The paper's algorithm does not cover this instance: the exact minimum-total-length search
    /// of [`crate::fallback`], with the reason.
    ExactSearch(&'static str),
    /// The paper's algorithm does not cover this instance, which is too large for the exact
    /// search: the instance is solved in an isomorphic network by that network's algorithm
    /// (MC(k,1) = HHC_{2^k+k}), with the reason.
    Isomorphic(&'static str),
}

impl Construction {
    pub fn is_fallback(self) -> bool {
        !matches!(self, Construction::Paper)
    }
}

/// Disjoint paths with how they were built. For node-to-set, `paths[i]` ends at the i-th
/// destination; for set-to-set, `paths[i]` starts at the i-th source; for node-to-node, every
/// path runs from the source to the destination.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct PathSystem {
    pub paths: Vec<Path>,
    pub construction: Construction,
}

impl PathSystem {
    pub fn paper(paths: Vec<Path>) -> PathSystem {
        PathSystem {
            paths,
            construction: Construction::Paper,
        }
    }

    /// The longest path, in edges.
    pub fn longest(&self) -> usize {
        crate::cube::longest(&self.paths)
    }
}

/// Why an algorithm refused its input. Every variant is a mistake of the caller, except
/// `Internal`, which would be a bug of ours (the tests look for it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FamilyError {
    #[error("node {node} is not in {topology}")]
    NotANode { node: u64, topology: Topology },
    #[error("node {0} appears twice")]
    Duplicate(u64),
    #[error("the {0} is empty")]
    Empty(&'static str),
    #[error("destination {0} is the source itself")]
    DestinationIsSource(u64),
    #[error("node {0} is both a source and a destination")]
    SourceIsDestination(u64),
    #[error("{given} destinations, but {topology} has at most {max} disjoint paths from a node")]
    TooManyDestinations {
        given: usize,
        max: usize,
        topology: Topology,
    },
    #[error("{sources} sources but {destinations} destinations: set-to-set needs as many of each")]
    SetSizes { sources: usize, destinations: usize },
    #[error("source and destination are the same node {0}")]
    SameNode(u64),
    #[error("{algorithm} is for {expected}, not {topology}")]
    WrongTopology {
        algorithm: &'static str,
        expected: &'static str,
        topology: Topology,
    },
    #[error("internal error: {0} (a bug, please report it)")]
    Internal(String),
}

/// Check a node-to-set instance: `s` and `dests` are nodes of `topology`, the destinations are
/// distinct, none is `s`, and there are 1..=connectivity of them.
pub fn check_node_to_set(
    topology: Topology,
    s: NodeId,
    dests: &[NodeId],
) -> Result<(), FamilyError> {
    check_nodes(topology, std::iter::once(s).chain(dests.iter().copied()))?;
    if dests.is_empty() {
        return Err(FamilyError::Empty("destination set"));
    }
    if let Some(&d) = dests.iter().find(|&&d| d == s) {
        return Err(FamilyError::DestinationIsSource(d.0));
    }
    check_distinct(dests)?;
    check_at_most_connectivity(topology, dests.len())
}

/// Check a set-to-set instance: as many sources as destinations, 1..=connectivity of each, all
/// distinct nodes of `topology`, no node on both sides.
pub fn check_set_to_set(
    topology: Topology,
    sources: &[NodeId],
    dests: &[NodeId],
) -> Result<(), FamilyError> {
    check_nodes(topology, sources.iter().chain(dests).copied())?;
    if sources.is_empty() {
        return Err(FamilyError::Empty("source set"));
    }
    if sources.len() != dests.len() {
        return Err(FamilyError::SetSizes {
            sources: sources.len(),
            destinations: dests.len(),
        });
    }
    check_distinct(sources)?;
    check_distinct(dests)?;
    if let Some(&v) = sources.iter().find(|v| dests.contains(v)) {
        return Err(FamilyError::SourceIsDestination(v.0));
    }
    check_at_most_connectivity(topology, dests.len())
}

/// At most as many destinations as the connectivity: no more disjoint paths exist.
fn check_at_most_connectivity(topology: Topology, given: usize) -> Result<(), FamilyError> {
    let max = topology.connectivity() as usize;
    if given > max {
        return Err(FamilyError::TooManyDestinations {
            given,
            max,
            topology,
        });
    }
    Ok(())
}

/// Check a node-to-node instance: two distinct nodes of `topology`.
pub fn check_node_to_node(topology: Topology, s: NodeId, d: NodeId) -> Result<(), FamilyError> {
    check_nodes(topology, [s, d])?;
    if s == d {
        return Err(FamilyError::SameNode(s.0));
    }
    Ok(())
}

fn check_nodes(
    topology: Topology,
    nodes: impl IntoIterator<Item = NodeId>,
) -> Result<(), FamilyError> {
    match nodes.into_iter().find(|&v| !topology.contains(v)) {
        Some(v) => Err(FamilyError::NotANode {
            node: v.0,
            topology,
        }),
        None => Ok(()),
    }
}

fn check_distinct(set: &[NodeId]) -> Result<(), FamilyError> {
    for (i, v) in set.iter().enumerate() {
        if set[..i].contains(v) {
            return Err(FamilyError::Duplicate(v.0));
        }
    }
    Ok(())
}
