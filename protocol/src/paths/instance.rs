//! The questions the algorithms answer: an [`Instance`] (the nodes) of a [`Kind`] (the shape of
//! the problem).

use crate::NodeId;
use std::fmt;

/// The shape of a disjoint-path problem, as the papers name them.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Kind {
    /// k internally disjoint paths between two nodes.
    NodeToNode,
    /// One path from a source to each destination, disjoint but for the source.
    NodeToSet,
    /// Node-to-set avoiding a set of faulty nodes.
    FaultTolerantNodeToSet,
    /// Disjoint paths from a set of sources onto a set of destinations, each destination
    /// reached once (the algorithm chooses which).
    SetToSet,
    /// Node-to-node under the bit constraint gamma_i: every node of every path has weight i or
    /// i+1.
    ConstrainedNodeToNode,
}

impl Kind {
    pub const ALL: [Kind; 5] = [
        Kind::NodeToNode,
        Kind::NodeToSet,
        Kind::FaultTolerantNodeToSet,
        Kind::SetToSet,
        Kind::ConstrainedNodeToNode,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::NodeToNode => "node-to-node",
            Kind::NodeToSet => "node-to-set",
            Kind::FaultTolerantNodeToSet => "fault-tolerant node-to-set",
            Kind::SetToSet => "set-to-set",
            Kind::ConstrainedNodeToNode => "bit-constrained node-to-node",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One disjoint-path problem: its nodes, and for the constrained one the weight i.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Instance<'a> {
    NodeToNode {
        s: NodeId,
        d: NodeId,
    },
    NodeToSet {
        s: NodeId,
        dests: &'a [NodeId],
    },
    FaultTolerantNodeToSet {
        s: NodeId,
        dests: &'a [NodeId],
        faults: &'a [NodeId],
    },
    SetToSet {
        sources: &'a [NodeId],
        dests: &'a [NodeId],
    },
    ConstrainedNodeToNode {
        s: NodeId,
        d: NodeId,
        i: u32,
    },
}

impl Instance<'_> {
    pub fn kind(&self) -> Kind {
        match self {
            Instance::NodeToNode { .. } => Kind::NodeToNode,
            Instance::NodeToSet { .. } => Kind::NodeToSet,
            Instance::FaultTolerantNodeToSet { .. } => Kind::FaultTolerantNodeToSet,
            Instance::SetToSet { .. } => Kind::SetToSet,
            Instance::ConstrainedNodeToNode { .. } => Kind::ConstrainedNodeToNode,
        }
    }

    /// The sources: one node, or the source set of set-to-set.
    pub fn sources(&self) -> &[NodeId] {
        match self {
            Instance::NodeToNode { s, .. }
            | Instance::NodeToSet { s, .. }
            | Instance::FaultTolerantNodeToSet { s, .. }
            | Instance::ConstrainedNodeToNode { s, .. } => std::slice::from_ref(s),
            Instance::SetToSet { sources, .. } => sources,
        }
    }

    /// The destinations: one node, or the destination set.
    pub fn destinations(&self) -> &[NodeId] {
        match self {
            Instance::NodeToNode { d, .. } | Instance::ConstrainedNodeToNode { d, .. } => {
                std::slice::from_ref(d)
            }
            Instance::NodeToSet { dests, .. }
            | Instance::FaultTolerantNodeToSet { dests, .. }
            | Instance::SetToSet { dests, .. } => dests,
        }
    }

    /// The nodes the paths avoid (fault-tolerant node-to-set), else none.
    pub fn faults(&self) -> &[NodeId] {
        match self {
            Instance::FaultTolerantNodeToSet { faults, .. } => faults,
            _ => &[],
        }
    }

    /// The weight i of the bit constraint gamma_i, if any.
    pub fn constraint(&self) -> Option<u32> {
        match self {
            Instance::ConstrainedNodeToNode { i, .. } => Some(*i),
            _ => None,
        }
    }
}
