//! The one packet of both routing modes: a message with its route. On Q_n and EH(s,t) a
//! node-to-node set travels by the guarded-action protocol, its route a [`Header`] that every
//! node reads afresh; everything else is source-routed, its route the whole path the source
//! computed ([`SourceRoute`]). [`crate::routing::hop`] handles both.

use super::header::Header;
use crate::NodeId;
use crate::topology::Topology;
use serde::{Deserialize, Serialize};

/// A message and its route. `M` is whatever the caller carries: a `wire::message::Message` in
/// the daemon, small integers in the simulator.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Packet<M> {
    pub route: Route,
    pub message: M,
}

/// How a packet finds its way.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub enum Route {
    /// The guarded-action protocol: the header decides every hop.
    Guarded(Header),
    /// A source route: the whole path, checked hop by hop.
    Source(SourceRoute),
}

/// A source-routed copy: the path from the source (first) to the destination (last), the
/// position of the node it is being sent to, and which copy of how many it is.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct SourceRoute {
    pub path: Vec<NodeId>,
    pub position: u16,
    pub index: u8,
    /// How many copies the set has (one per route).
    pub copies: u8,
}

/// The two routing modes, for what differs between them (the flush bound).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum RouteKind {
    Guarded,
    Source,
}

impl Route {
    pub fn kind(&self) -> RouteKind {
        match self {
            Route::Guarded(_) => RouteKind::Guarded,
            Route::Source(_) => RouteKind::Source,
        }
    }

    /// The source (S). `None` only for a source route with no nodes, which no hop accepts.
    pub fn src(&self) -> Option<NodeId> {
        match self {
            Route::Guarded(h) => Some(h.src),
            Route::Source(r) => r.path.first().copied(),
        }
    }

    /// The destination (D).
    pub fn dst(&self) -> Option<NodeId> {
        match self {
            Route::Guarded(h) => Some(h.dst),
            Route::Source(r) => r.path.last().copied(),
        }
    }

    /// Which copy of its set this is, 0-based.
    pub fn index(&self) -> u8 {
        match self {
            Route::Guarded(h) => h.index,
            Route::Source(r) => r.index,
        }
    }

    /// How many copies its set has: k(S, D) for the guarded-action protocol, the number of
    /// routes the source made otherwise.
    pub fn copies(&self, topology: Topology) -> u32 {
        match self {
            Route::Guarded(h) => topology.local_connectivity(h.src, h.dst),
            Route::Source(r) => u32::from(r.copies),
        }
    }
}
