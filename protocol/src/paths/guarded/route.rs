//! The per-hop rule: where a message goes next, from the current node and its target alone.
//!
//! Alsulaiman and Karaata, *An Optimal Inherently Stabilizing Algorithm for Routing over All
//! Node-Disjoint Paths in Exchanged Hypercubes*, §VI routes a message in *phases*: in the s-phase
//! it flips `a` bits (only s-type nodes can), in the t-phase `b` bits (only t-type nodes can), and
//! the dummy edge switches between them. `routPhase` and `decidePhase` pick the phase from a
//! `curPhase` counter in the header; `nextPos` picks the bit. Here the phase is read off the node
//! itself, which makes the rule a pure function of (own id, target, anchors) with no counter to
//! corrupt:
//!
//! * [`decide_phase`]: if the node's own subsequence still differs from the target, route in it
//!   ([`Phase::Own`], the paper's s-phase at an s-type node and t-phase at a t-type node); else, if
//!   anything differs, cross the dummy edge ([`Phase::Switch`]); else the target is reached.
//! * [`next_pos`]: the least differing position at or above the anchor `f`, cyclically. The
//!   paper's formula scans strictly above `f` and then strictly between 0 and `f`, which skips `f`
//!   itself and position 0 and drops messages (docs/protocol.md, "Errors and gaps", item 8). With
//!   a fixed anchor the cyclic scan flips the differing positions in the order `f, f+1, ..., f-1`:
//!   the rotations that make the Saad-Schultz hypercube paths disjoint.
//!
//! Each hop of this rule is a shortest-path hop toward the target, so a message needs exactly
//! `distance(p, target)` hops to get there.

use crate::NodeId;
use crate::topology::Topology;
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

/// What a node does with a message headed for `target` (the paper's decidePhase).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Phase {
    /// Flip a bit of the node's own subsequence (`a` at s-type, `b` at t-type; every bit in Q_n).
    Own,
    /// Cross the dummy edge: the own subsequence agrees with the target but the node does not.
    Switch,
    /// The node is the target.
    Arrived,
}

/// The paper's decidePhase, without curPhase: see the module documentation.
#[inline]
pub fn decide_phase(topology: Topology, p: NodeId, target: NodeId) -> Phase {
    let diff = p.0 ^ target.0;
    if diff == 0 {
        Phase::Arrived
    } else if diff & rout_phase(topology, p) != 0 {
        Phase::Own
    } else {
        Phase::Switch
    }
}

/// The paper's nextPos: the least set bit of `diff` at or above bit `anchor`, else the least set
/// bit of `diff`. `None` only when `diff` is empty.
#[inline]
pub fn next_pos(diff: u64, anchor: u32) -> Option<u32> {
    if diff == 0 {
        return None;
    }
    let high = diff & (u64::MAX << anchor);
    Some(if high != 0 { high } else { diff }.trailing_zeros())
}

/// The neighbour a message at `p` goes to next on its way to `target`; `None` at the target.
#[inline]
///
/// Only Q_n and EH route by this rule: for the other families it returns `None`.
pub fn next_hop(topology: Topology, p: NodeId, target: NodeId, anchors: Anchors) -> Option<NodeId> {
    if !topology.has_guarded_protocol() {
        return None;
    }
    match decide_phase(topology, p, target) {
        Phase::Arrived => None,
        Phase::Switch => Some(p.flip(0)),
        Phase::Own => {
            let own = (p.0 ^ target.0) & rout_phase(topology, p);
            next_pos(own, anchor_bit(topology, p, anchors)).map(|bit| p.flip(bit))
        }
    }
}

/// The paper's routPhase: which subsequence is routed at `p`, as a mask of id bits. The paper
/// derives it from curPhase and the types of S and D; here it is `p`'s own subsequence (`a` at
/// an s-type node, `b` at a t-type node, every bit in Q_n), the only one `p` can flip. Empty for
/// the topologies without guarded-action routing.
#[inline]
pub fn rout_phase(topology: Topology, p: NodeId) -> u64 {
    match topology {
        Topology::Hypercube(q) => q.dimension_mask(),
        Topology::Exchanged(eh) => eh.own_mask(p),
        _ => 0,
    }
}

/// The anchor of `p`'s own subsequence, as a bit position of the id.
#[inline]
fn anchor_bit(topology: Topology, p: NodeId, anchors: Anchors) -> u32 {
    match topology {
        Topology::Hypercube(_) => anchors.fa as u32,
        Topology::Exchanged(eh) if p.0 & 1 == 0 => eh.a_bit(anchors.fa as u32),
        Topology::Exchanged(eh) => eh.b_bit(anchors.fb as u32),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_pos_is_cyclic_from_the_anchor() {
        assert_eq!(next_pos(0b1010_0101, 3), Some(5));
        assert_eq!(next_pos(0b1010_0101, 5), Some(5));
        assert_eq!(next_pos(0b0000_0101, 3), Some(0));
        assert_eq!(
            next_pos(
                0b1000_0000_0000_0000_0000_0000_0000_0000_0000_0000_0000_0000_0000_0000_0000_0000,
                63
            ),
            Some(63)
        );
        assert_eq!(next_pos(0, 2), None);
    }

    #[test]
    fn greedy_hops_are_shortest() {
        for name in ["eh:2,3", "eh:3,1", "q:5"] {
            let topo: Topology = name.parse().unwrap();
            for u in topo.nodes() {
                for v in topo.nodes() {
                    let mut p = u;
                    let mut hops = 0;
                    while let Some(next) = next_hop(topo, p, v, Anchors { fa: 1, fb: 0 }) {
                        assert!(topo.is_adjacent(p, next));
                        assert_eq!(topo.distance(next, v) + 1, topo.distance(p, v));
                        p = next;
                        hops += 1;
                    }
                    assert_eq!(p, v);
                    assert_eq!(hops, topo.distance(u, v));
                }
            }
        }
    }
}
