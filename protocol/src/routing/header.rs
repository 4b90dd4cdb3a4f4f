//! The routing header every message of the guarded-action protocol carries (Alsulaiman and
//! Karaata, *An Optimal Inherently Stabilizing Algorithm for Routing over All Node-Disjoint Paths
//! in Exchanged Hypercubes*, §VI, extended; docs/protocol.md).

use crate::NodeId;
use crate::paths::guarded::map::Plan;
use crate::paths::guarded::route::Anchors;
use serde::{Deserialize, Serialize};

/// What a message carries besides its payload.
///
/// The paper's message is `(m_i, S, D, Pd, curPhase, f)`. Here:
/// * `src`, `dst`, `pd`, `index` are the paper's `S`, `D`, `Pd` and `i`;
/// * `anchors` replace `f` (see [`Anchors`]);
/// * `curPhase` is gone: the phase is read off the current node's type
///   ([`crate::paths::guarded::route`]);
/// * `via` is the extension that reaches the exact optimum: an optional turning point `W`
///   between the first hop and `Pd`. It generalises the paper's subcube switch (a detour before
///   the first phase) to any one extra change of subcube. It is cleared when the message reaches
///   it, and it is the only field that ever changes in flight.
///
/// Every routing decision is a function of (own id, header) alone.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
pub struct Header {
    /// S: the source.
    pub src: NodeId,
    /// D: the destination.
    pub dst: NodeId,
    /// Pd: the neighbour of `dst` through which this message enters `dst`.
    pub pd: NodeId,
    /// W: a turning point still to be visited, if any.
    pub via: Option<NodeId>,
    /// nextPos anchors.
    pub anchors: Anchors,
    /// i: which of the k messages this is, 0-based.
    pub index: u8,
}

impl Header {
    /// The header message `index` of `src -> dst` leaves with when the source's map gave it
    /// `plan`.
    pub fn for_plan(plan: &Plan, src: NodeId, dst: NodeId, index: u8) -> Header {
        Header {
            src,
            dst,
            pd: plan.pd,
            via: plan.via,
            anchors: plan.anchors,
            index,
        }
    }

    /// Where the message is headed now: the turning point while it has one, else `Pd`.
    pub fn target(&self) -> NodeId {
        self.via.unwrap_or(self.pd)
    }
}
