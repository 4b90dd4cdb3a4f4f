//! Why an algorithm refused its input: one error type for every algorithm of this layer.

use super::instance::Kind;
use crate::Topology;
use std::borrow::Cow;

/// Why an algorithm refused its input. Every variant is a mistake of the caller, except
/// `Internal`, which would be a bug of ours (the tests look for it): a construction that would
/// return a wrong path system returns `Internal` instead (see [`super::verify`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("q:{0} is not a hypercube this crate supports (1 <= n <= 63)")]
    Dimension(u32),
    #[error("node {node} is not in {topology}")]
    NotANode { node: u64, topology: Topology },
    #[error("node {node} appears twice in the {set}")]
    Duplicate { node: u64, set: &'static str },
    #[error("the {0} is empty")]
    Empty(&'static str),
    #[error("destination {0} is the source itself")]
    DestinationIsSource(u64),
    #[error("node {0} is both a source and a destination")]
    SourceIsDestination(u64),
    #[error("source and destination are the same node {0}")]
    SameNode(u64),
    /// More destinations than the topology has disjoint paths from a node.
    #[error("{given} destinations, but {topology} has at most {max} disjoint paths from a node")]
    TooManyDestinations {
        given: usize,
        max: usize,
        topology: Topology,
    },
    /// More destinations than a Q_n algorithm routes (with its faults, for the fault-tolerant
    /// ones).
    #[error("{given} destinations, but this algorithm routes at most {max} in Q_{n}")]
    OverAlgorithmLimit { given: usize, max: usize, n: u32 },
    #[error("{sources} sources but {destinations} destinations: set-to-set needs as many of each")]
    SetSizes { sources: usize, destinations: usize },
    #[error(
        "{faults} faulty nodes with {destinations} destinations exceed the {max} this algorithm tolerates in Q_{n}"
    )]
    TooManyFaults {
        faults: usize,
        destinations: usize,
        max: usize,
        n: u32,
    },
    #[error("node {0} is both faulty and an end of a path")]
    FaultyEndpoint(u64),
    #[error("node {node} is not a neighbour of {of}")]
    NotANeighbour { node: u64, of: u64 },
    #[error("{excluded} excluded neighbours with {destinations} destinations exceed n = {n}")]
    TooManyExcluded {
        excluded: usize,
        destinations: usize,
        n: u32,
    },
    #[error("the forced first hop {0} is faulty")]
    FaultyFirstHop(u64),
    #[error("the constraint gamma_{i} needs 0 <= i <= n-1 = {}", n - 1)]
    ConstraintRange { i: u32, n: u32 },
    #[error("node {node} has weight {weight}, outside gamma_{i} = ({i},{})", i + 1)]
    ViolatesConstraint { node: u64, weight: u32, i: u32 },
    #[error("{algorithm} is for {expected}, not {topology}")]
    WrongTopology {
        algorithm: &'static str,
        expected: &'static str,
        topology: Topology,
    },
    /// No algorithm of the table answers this kind of instance on this topology; `served` says
    /// where one does.
    #[error("{topology} has no {kind} algorithm: the papers give one for {served}")]
    NoAlgorithm {
        topology: Topology,
        kind: Kind,
        served: String,
    },
    /// An algorithm asked for by its id that does not answer this instance; `expected` lists
    /// the ids that do.
    #[error("{name:?}: expected {expected}")]
    UnknownAlgorithm { name: String, expected: String },
    #[error("internal error: {0} (a bug, please report it)")]
    Internal(Cow<'static, str>),
}

impl PathError {
    /// An internal error: a bug of ours, never the caller's mistake.
    pub fn internal(what: impl Into<Cow<'static, str>>) -> PathError {
        PathError::Internal(what.into())
    }

    /// Whether the caller can fix this (every variant but [`PathError::Internal`]).
    pub fn is_usage(&self) -> bool {
        !matches!(self, PathError::Internal(_))
    }
}
