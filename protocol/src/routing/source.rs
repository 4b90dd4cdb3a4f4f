//! `rcv` of a source-routed packet: the route (a whole path computed at the source by an
//! algorithm of [`crate::paths::table`]) travels in the packet with the position of the node it
//! is at; each node checks that it is that node, that the packet came from the route's previous
//! node and that the next node is a real neighbour. Like the guarded actions, a pure function of
//! (own id, route, sender): no state. [`crate::routing::hop`] calls this for source routes.

use super::reason::DropReason;
use crate::NodeId;
use crate::paths::instance::Kind;
use crate::paths::table;
use crate::topology::Topology;

/// The decision for a source-routed packet at `me`, received from `from`, at `position` of
/// `path`: `Ok(None)` to deliver (this node is the last), `Ok(Some(next))` to forward.
pub fn decide(
    topology: Topology,
    me: NodeId,
    from: NodeId,
    path: &[NodeId],
    position: usize,
) -> Result<Option<NodeId>, DropReason> {
    if path.len() > max_route_len(topology) {
        return Err(DropReason::RouteTooLong);
    }
    if position == 0 || path.get(position - 1) != Some(&from) {
        return Err(DropReason::RouteNotFromPrevious);
    }
    match path.get(position) {
        None => return Err(DropReason::RoutePastTheEnd),
        Some(&here) if here != me => return Err(DropReason::RouteNotThisNode),
        Some(_) => {}
    }
    match path.get(position + 1) {
        None => Ok(None),
        Some(&next) if topology.contains(next) && topology.is_adjacent(me, next) => Ok(Some(next)),
        Some(_) => Err(DropReason::RouteNotANeighbour),
    }
}

/// The most nodes a source route may have: no algorithm builds a longer one, so a longer route
/// is a corrupted one. With the position moving on by one per hop, no source-routed packet
/// lives more hops than this.
/// * Q_n: the container's bound n + 3k with k <= n/2+1 stays below 4n + 4 hops;
/// * the other families on at most 4,096 nodes (where the exact fallbacks may answer): a route
///   is a simple path, so at most every node;
/// * larger ones: the widest bound of the table's algorithms that serve a send there (every kind
///   but set-to-set), plus one: a route has one node more than edges.
pub fn max_route_len(topology: Topology) -> usize {
    const SMALL: u64 = 4096;
    match topology {
        Topology::Hypercube(_) | Topology::Exchanged(_) => 4 * topology.bits() as usize + 5,
        _ if topology.node_count() <= SMALL => topology.node_count() as usize,
        _ => {
            table::ALGORITHMS
                .iter()
                .filter(|a| a.kind != Kind::SetToSet && a.serves(topology))
                .map(|a| (a.widest)(topology))
                .max()
                .unwrap_or(0)
                + 1
        }
    }
}
