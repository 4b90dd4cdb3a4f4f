//! The node-to-node construction of the guarded-action protocol on Q_n and EH(s,t) (Alsulaiman
//! and Karaata, *An Optimal Inherently Stabilizing Algorithm for Routing over All Node-Disjoint
//! Paths in Exchanged Hypercubes*; on Q_n after Sinanoglu, Karaata and AlBdaiwi), as an algorithm
//! of this layer: [`map()`](map::map) gives the source's k plans, [`route`] the per-hop rule
//! (decidePhase, nextPos), and [`disjoint_paths`] walks every plan hop by hop with that rule.
//!
//! The guarded actions `input` and `rcv` (`crate::routing`, its front door) decide with the same
//! functions, one hop at a time, so the paths walked here are the paths the network routes: the
//! tests run the actions and the whole-network simulator and compare them with these, pair by
//! pair.

pub mod map;
pub mod route;

use crate::NodeId;
use crate::paths::system::{Path, PathSet};
use crate::topology::Topology;
use map::{MapError, Plan};
use route::{Phase, decide_phase, next_hop};

/// The longest route the map builds, beyond the distance: `d + 2` in Q_n (Saad-Schultz), `d + 6`
/// in EH (the exact optimum L* itself reaches `d + 6`: docs/protocol.md, "Optimality"). `None`
/// for the topologies without guarded-action routing (HHC, MC, RDN).
pub fn max_stretch(topology: Topology) -> Option<u32> {
    match topology {
        Topology::Hypercube(_) => Some(2),
        Topology::Exchanged(_) => Some(6),
        _ => None,
    }
}

/// The k internally node-disjoint paths from `src` to `dst`, k = k(src, dst), in message-index
/// order: each plan of the map walked with decidePhase and nextPos.
pub fn disjoint_paths(topology: Topology, src: NodeId, dst: NodeId) -> Result<PathSet, MapError> {
    let paths = map::map(topology, src, dst)?
        .iter()
        .map(|plan| walk(topology, src, dst, plan))
        .collect();
    Ok(PathSet {
        topology,
        src,
        dst,
        paths,
    })
}

/// One message's path: the first hop, then the rule's hops to the turning point (if any) and to
/// Pd, then the last hop into `dst`. The same decisions as `rcv` makes at every node.
pub(crate) fn walk(topology: Topology, src: NodeId, dst: NodeId, plan: &Plan) -> Path {
    let stretch = max_stretch(topology).expect("the map succeeded, so the topology routes");
    let limit = (topology.distance(src, dst) + stretch) as usize;
    let mut path = vec![src, plan.first];
    let (mut at, mut via) = (plan.first, plan.via);
    while at != dst {
        assert!(
            path.len() <= limit,
            "the plan {plan:?} of {topology} {src} -> {dst} outgrew d + {stretch}: a bug in the map"
        );
        if via == Some(at) {
            via = None;
        }
        let target = via.unwrap_or(plan.pd);
        at = match decide_phase(topology, at, target) {
            Phase::Arrived => dst,
            _ => next_hop(topology, at, target, plan.anchors)
                .expect("a node that is not the target has a next hop"),
        };
        path.push(at);
    }
    path
}
