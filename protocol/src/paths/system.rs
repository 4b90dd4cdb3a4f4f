//! What every disjoint-path algorithm returns: a [`PathSystem`], the paths and how they were
//! obtained, so that the tests (and `cuberoute paths`) can say which instances a paper's
//! construction covers and which fall back to something else ([`Construction`]).

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
    /// of [`super::fallback`], with the reason.
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

    /// How the paths were obtained, in a few words, when it is not the paper's construction.
    pub fn note(self) -> Option<String> {
        match self {
            Construction::Paper => None,
            Construction::Corrected(why) => Some(format!("corrected: {why}")),
            Construction::ExactSearch(why) => Some(format!("exact search (min-cost flow): {why}")),
            Construction::Isomorphic(why) => Some(format!("through an isomorphism: {why}")),
        }
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
        longest(&self.paths)
    }
}

/// The longest path of a set, in edges (0 for no paths).
pub fn longest(paths: &[Path]) -> usize {
    paths
        .iter()
        .map(|p| p.len().saturating_sub(1))
        .max()
        .unwrap_or(0)
}

/// The k paths between two nodes with the pair they join, each from `src` to `dst` inclusive:
/// a node-to-node answer with what it takes to print or draw it.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct PathSet {
    pub topology: Topology,
    pub src: NodeId,
    pub dst: NodeId,
    pub paths: Vec<Path>,
}

impl PathSet {
    pub fn k(&self) -> usize {
        self.paths.len()
    }

    pub fn distance(&self) -> u32 {
        self.topology.distance(self.src, self.dst)
    }

    /// Length in hops of the longest path.
    pub fn longest(&self) -> u32 {
        longest(&self.paths) as u32
    }
}
