//! The routing header every message carries (seed 004 §VI, extended; docs/protocol.md).

use crate::NodeId;
use serde::{Deserialize, Serialize};

/// The rotation anchors `f` of nextPos, one per subsequence.
///
/// The paper carries one `f` and overwrites it on every hop with the position just flipped.
/// Here the anchors are fixed for the whole route, one for the `a` bits (`fa`) and one for the
/// `b` bits (`fb`); for Q_n only `fa` is used and `fb` is 0. A fixed anchor yields the same
/// cyclic flip order as "the next position after the last one flipped", and a header that never
/// changes along a route is one less thing to corrupt.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default, Serialize, Deserialize)]
pub struct Anchors {
    pub fa: u8,
    pub fb: u8,
}

/// What a message carries besides its payload.
///
/// The paper's message is `(m_i, S, D, Pd, curPhase, f)`. Here:
/// * `src`, `dst`, `pd`, `index` are the paper's `S`, `D`, `Pd` and `i`;
/// * `anchors` replace `f` (see [`Anchors`]);
/// * `curPhase` is gone: the phase is read off the current node's type ([`crate::route`]);
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
    /// Where the message is headed now: the turning point while it has one, else `Pd`.
    pub fn target(&self) -> NodeId {
        self.via.unwrap_or(self.pd)
    }
}
