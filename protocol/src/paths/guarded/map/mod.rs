//! The source's map: which neighbour each of the k messages leaves by, and how it travels on.
//!
//! Alsulaiman and Karaata, *An Optimal Inherently Stabilizing Algorithm for Routing over All
//! Node-Disjoint Paths in Exchanged Hypercubes*, §V defines `map(S, D, i)` as a pairing of the
//! source's neighbours with the destination's neighbours that minimises the summed distance, and
//! §VI routes message `i` from `N(S, i)` to `Pd = N(D, map(S, D, i))` by phases. That pairing alone
//! cannot reach the optimum L* on every pair (docs/protocol.md, "Why `via`"), so here the map
//! returns a whole [`Plan`] per message: the first hop, `Pd`, the nextPos anchors and, where one
//! more change of subcube is needed, a turning point. The constructions and why they are disjoint
//! and optimal are in docs/protocol.md.

mod exchanged;
mod hypercube;

use super::route::Anchors;
use crate::NodeId;
use crate::topology::Topology;

/// How one message travels: what the source puts on the wire for it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Plan {
    /// The neighbour of the source the message is sent to (the paper's `N(S, i)`).
    pub first: NodeId,
    /// Pd: the neighbour of the destination the message enters it through.
    pub pd: NodeId,
    /// An optional turning point between `first` and `pd`.
    pub via: Option<NodeId>,
    pub anchors: Anchors,
}

impl Plan {
    /// The paper's fPhase: 0 when the message makes a subcube switch before its first phase,
    /// else 1. Here the switch is generalised to a turning point (`via`), so 0 exactly when the
    /// plan has one.
    pub fn f_phase(&self) -> u8 {
        u8::from(self.via.is_none())
    }

    /// The length of the path this plan yields: first hop, then shortest hops to the turning
    /// point and to `pd`, then the last hop. The direct edge has length 1.
    pub fn length(&self, topology: Topology, dst: NodeId) -> u32 {
        if self.first == dst {
            return 1;
        }
        let to_pd = match self.via {
            Some(w) => topology.distance(self.first, w) + topology.distance(w, self.pd),
            None => topology.distance(self.first, self.pd),
        };
        1 + to_pd + 1
    }
}

/// Why the source cannot route.
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error)]
pub enum MapError {
    #[error("node {0} is not in the topology")]
    NotANode(NodeId),
    #[error("source and destination are the same node {0}: there is no path to route over")]
    SourceIsDestination(NodeId),
    /// The guarded-action protocol is defined for Q_n and EH(s,t) only; the other families are
    /// routed at the source by their papers' algorithms (`cuberoute paths`, source routes).
    #[error(
        "{0} has no guarded-action routing (only q:N and eh:S,T do): route it with its own algorithms and source routes"
    )]
    Unsupported(Topology),
}

/// The k plans for `src -> dst`, k = k(src, dst), ordered by the bit the first hop flips.
pub fn map(topology: Topology, src: NodeId, dst: NodeId) -> Result<Vec<Plan>, MapError> {
    if !topology.has_guarded_protocol() {
        return Err(MapError::Unsupported(topology));
    }
    for v in [src, dst] {
        if !topology.contains(v) {
            return Err(MapError::NotANode(v));
        }
    }
    if src == dst {
        return Err(MapError::SourceIsDestination(src));
    }
    let plans = match topology {
        Topology::Hypercube(q) => hypercube::map(q, src, dst),
        Topology::Exchanged(eh) => exchanged::map(eh, src, dst),
        _ => unreachable!("checked by has_guarded_protocol"),
    };
    debug_assert_eq!(plans.len() as u32, topology.local_connectivity(src, dst));
    debug_assert!(plans.is_sorted_by_key(|plan| first_bit(src, plan)));
    Ok(plans)
}

/// The bit of the source's id that a plan's first hop flips: the order of the plans.
pub fn first_bit(src: NodeId, plan: &Plan) -> u32 {
    (plan.first.0 ^ src.0).trailing_zeros()
}

/// The cyclic predecessor of position `i` among the set bits of `mask`: the largest set bit
/// below `i`, else the largest set bit.
fn cyclic_prev(mask: u64, i: u32) -> u32 {
    let below = mask & ((1u64 << i) - 1);
    63 - if below != 0 { below } else { mask }.leading_zeros()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f_phase_marks_the_subcube_switch() {
        let eh: Topology = "eh:2,2".parse().unwrap();
        // Same s-subcube: only S's dummy-edge message switches subcube first.
        let plans = map(eh, NodeId(0), NodeId(0b01000)).unwrap();
        let phases: Vec<u8> = plans.iter().map(Plan::f_phase).collect();
        assert_eq!(phases, [0, 1, 1]);
        let q: Topology = "q:5".parse().unwrap();
        assert!(
            map(q, NodeId(3), NodeId(28))
                .unwrap()
                .iter()
                .all(|p| p.f_phase() == 1)
        );
    }

    #[test]
    fn refuses_bad_pairs() {
        let eh: Topology = "eh:1,1".parse().unwrap();
        assert_eq!(
            map(eh, NodeId(3), NodeId(3)),
            Err(MapError::SourceIsDestination(NodeId(3)))
        );
        assert_eq!(
            map(eh, NodeId(3), NodeId(8)),
            Err(MapError::NotANode(NodeId(8)))
        );
        for name in ["hhc:2", "mc:1,2", "rdn:ring3,1"] {
            let t: Topology = name.parse().unwrap();
            assert_eq!(map(t, NodeId(0), NodeId(1)), Err(MapError::Unsupported(t)));
        }
    }
}
