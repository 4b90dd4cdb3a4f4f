//! The per-hop check of a source route: the route of a message (a whole path computed at the
//! source, e.g. by [`crate::cube`]) travels in its header with the index of the hop it is at;
//! each node checks that it is that hop and that the next node is a real neighbour, then forwards.
//! Like [`crate::receive`], a pure function of the node's id and the header: no state.

use crate::{NodeId, Topology};

/// What the node holding a source-routed message does with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hop {
    /// Forward to this neighbour, at position + 1.
    Forward(NodeId),
    /// This node is the last of the route: deliver.
    Deliver,
}

/// Why a source-routed message is dropped.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    #[error("position {position} is past the end of a route of {len} nodes")]
    PastTheEnd { position: usize, len: usize },
    #[error("the route names {expected} at position {position}, not this node {me}")]
    NotMe {
        me: NodeId,
        expected: NodeId,
        position: usize,
    },
    #[error("the route's next node {next} is not a neighbour of {me}")]
    NotANeighbour { me: NodeId, next: NodeId },
}

/// Check hop `position` of `route` at node `me` of `topology`.
pub fn check_route_hop(
    topology: Topology,
    me: NodeId,
    route: &[NodeId],
    position: usize,
) -> Result<Hop, RouteError> {
    let len = route.len();
    let here = *route
        .get(position)
        .ok_or(RouteError::PastTheEnd { position, len })?;
    if here != me {
        return Err(RouteError::NotMe {
            me,
            expected: here,
            position,
        });
    }
    match route.get(position + 1) {
        None => Ok(Hop::Deliver),
        Some(&next) if topology.contains(next) && topology.is_adjacent(me, next) => {
            Ok(Hop::Forward(next))
        }
        Some(&next) => Err(RouteError::NotANeighbour { me, next }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_a_route_and_refuses_a_bad_one() {
        let q: Topology = "q:3".parse().unwrap();
        let route = [0, 1, 3, 7].map(NodeId);
        let mut at = (NodeId(0), 0);
        let mut visited = vec![at.0];
        while let Hop::Forward(next) = check_route_hop(q, at.0, &route, at.1).unwrap() {
            at = (next, at.1 + 1);
            visited.push(next);
        }
        assert_eq!(visited, route);
        assert_eq!(
            check_route_hop(q, NodeId(1), &route, 0),
            Err(RouteError::NotMe {
                me: NodeId(1),
                expected: NodeId(0),
                position: 0
            })
        );
        assert!(matches!(
            check_route_hop(q, NodeId(0), &[NodeId(0), NodeId(3)], 0),
            Err(RouteError::NotANeighbour { .. })
        ));
        assert!(matches!(
            check_route_hop(q, NodeId(0), &[NodeId(0), NodeId(8)], 0),
            Err(RouteError::NotANeighbour { .. })
        ));
        assert!(matches!(
            check_route_hop(q, NodeId(7), &route, 4),
            Err(RouteError::PastTheEnd { .. })
        ));
    }
}
