//! The per-hop check of a source route: the route of a message (a whole path computed at the
//! source, e.g. by [`crate::cube`]) travels in its header with the index of the hop it is at;
//! each node checks that it is that hop and that the next node is a real neighbour, then forwards.
//! Like [`crate::receive`], a pure function of the node's id and the header: no state.

use crate::cube::{self, CubeError};
use crate::{NodeId, Topology};
use serde::{Deserialize, Serialize};

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

/// What a source-routed send asks for. The source turns it into routes with [`routes`].
#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RouteRequest {
    /// The destinations: one copy to each (node-to-set), or k copies to the only one (with a
    /// constraint).
    pub to: Vec<NodeId>,
    /// Nodes the routes must avoid (fault-tolerant node-to-set).
    pub avoid: Vec<NodeId>,
    /// The bit constraint gamma_i: every node of every route has weight i or i+1.
    pub constraint: Option<u32>,
}

/// Why no routes could be made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RoutesError {
    #[error(transparent)]
    Cube(#[from] CubeError),
    #[error("{0}")]
    Invalid(String),
    #[error("{topology} has no source-routed algorithm for {what}")]
    Unsupported {
        topology: Topology,
        what: &'static str,
    },
}

/// The routes of a source-routed send from `src`, one per copy, each a whole path from `src`.
/// This is where a request meets its algorithm:
/// * a constraint: HC-CONTAINER (k copies to the one destination);
/// * nodes to avoid: Cube-XFTN2S (one copy to each destination);
/// * else: Cube-N2S (one copy to each destination).
pub fn routes(
    topology: Topology,
    src: NodeId,
    request: &RouteRequest,
) -> Result<Vec<Vec<NodeId>>, RoutesError> {
    let Topology::Hypercube(q) = topology else {
        return Err(RoutesError::Unsupported {
            topology,
            what: "source-routed sends",
        });
    };
    match request.constraint {
        Some(i) => {
            let [d] = request.to[..] else {
                return Err(RoutesError::Invalid(format!(
                    "a constrained send has one destination, not {}",
                    request.to.len()
                )));
            };
            if !request.avoid.is_empty() {
                return Err(RoutesError::Invalid(
                    "a constrained send cannot also avoid nodes".into(),
                ));
            }
            Ok(cube::container::hc_container(q, i, src, d)?)
        }
        None if !request.avoid.is_empty() => Ok(cube::xftn2s::cube_xftn2s(
            q,
            src,
            &request.to,
            &request.avoid,
            None,
        )?),
        None => Ok(cube::n2s::cube_n2s(q, src, &request.to, &[])?),
    }
}

/// The most nodes a source route may have: no algorithm builds a longer one (the container's
/// bound n + 3k with k <= n/2+1 stays below 4n + 4 hops), so a longer route is a corrupted one.
/// With the position moving on by one per hop, no source-routed packet lives more hops than
/// this.
pub fn max_route_len(topology: Topology) -> usize {
    4 * topology.bits() as usize + 5
}

/// Why a node drops a source-routed packet.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SourceDrop {
    #[error("a route of {len} nodes is longer than any this topology's algorithms build")]
    TooLong { len: usize },
    #[error("the packet came from {from}, not from the route's previous node")]
    NotFromPrevious { from: NodeId },
    #[error(transparent)]
    Route(#[from] RouteError),
}

impl SourceDrop {
    /// A stable snake_case name, for metrics labels.
    pub fn as_str(&self) -> &'static str {
        match self {
            SourceDrop::TooLong { .. } => "route_too_long",
            SourceDrop::NotFromPrevious { .. } => "route_not_from_previous",
            SourceDrop::Route(RouteError::PastTheEnd { .. }) => "route_past_the_end",
            SourceDrop::Route(RouteError::NotMe { .. }) => "route_not_this_node",
            SourceDrop::Route(RouteError::NotANeighbour { .. }) => "route_not_a_neighbour",
        }
    }
}

/// The `rcv` of a source-routed packet at `me`, received from `from` at hop `position` of
/// `route`: the checks of [`check_route_hop`], plus that the sender is the route's previous
/// node and that the route is not longer than [`max_route_len`].
pub fn receive_source(
    topology: Topology,
    me: NodeId,
    from: NodeId,
    route: &[NodeId],
    position: usize,
) -> Result<Hop, SourceDrop> {
    if route.len() > max_route_len(topology) {
        return Err(SourceDrop::TooLong { len: route.len() });
    }
    if position == 0 || route.get(position - 1) != Some(&from) {
        return Err(SourceDrop::NotFromPrevious { from });
    }
    Ok(check_route_hop(topology, me, route, position)?)
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
    use proptest::prelude::*;

    #[test]
    fn requests_meet_their_algorithms() {
        let q: Topology = "q:4".parse().unwrap();
        let to = vec![NodeId(3), NodeId(12), NodeId(15)];
        let n2s = routes(
            q,
            NodeId(0),
            &RouteRequest {
                to: to.clone(),
                ..Default::default()
            },
        )
        .unwrap();
        let ends: Vec<NodeId> = n2s.iter().map(|r| *r.last().unwrap()).collect();
        assert_eq!(ends, to);
        // |D| + |F| <= n - 1.
        let avoid = RouteRequest {
            to: to[..2].to_vec(),
            avoid: vec![NodeId(1)],
            constraint: None,
        };
        let ft = routes(q, NodeId(0), &avoid).unwrap();
        assert!(ft.iter().all(|r| !r.contains(&NodeId(1))));
        let constrained = RouteRequest {
            to: vec![NodeId(0b1100)],
            avoid: vec![],
            constraint: Some(2),
        };
        let c = routes(q, NodeId(0b0011), &constrained).unwrap();
        assert_eq!(c.len(), 2, "k = min(n-i, i+1)");
        assert!(
            c.iter()
                .flatten()
                .all(|v| matches!(v.0.count_ones(), 2 | 3))
        );
        assert!(matches!(
            routes(
                q,
                NodeId(1),
                &RouteRequest {
                    to: to.clone(),
                    constraint: Some(1),
                    ..Default::default()
                }
            ),
            Err(RoutesError::Invalid(_))
        ));
        assert!(matches!(
            routes(
                "eh:1,1".parse().unwrap(),
                NodeId(0),
                &RouteRequest {
                    to: vec![NodeId(1)],
                    ..Default::default()
                }
            ),
            Err(RoutesError::Unsupported { .. })
        ));
    }

    #[test]
    fn a_source_route_is_followed_only_from_its_previous_node() {
        let q: Topology = "q:3".parse().unwrap();
        let route = [0, 1, 3, 7].map(NodeId);
        assert_eq!(
            receive_source(q, NodeId(1), NodeId(0), &route, 1),
            Ok(Hop::Forward(NodeId(3)))
        );
        assert_eq!(
            receive_source(q, NodeId(7), NodeId(3), &route, 3),
            Ok(Hop::Deliver)
        );
        assert_eq!(
            receive_source(q, NodeId(1), NodeId(5), &route, 1),
            Err(SourceDrop::NotFromPrevious { from: NodeId(5) })
        );
        assert!(matches!(
            receive_source(q, NodeId(0), NodeId(1), &route, 0),
            Err(SourceDrop::NotFromPrevious { .. })
        ));
        let long = vec![NodeId(0); max_route_len(q) + 1];
        assert_eq!(
            receive_source(q, NodeId(0), NodeId(0), &long, 1).map_err(|e| e.as_str()),
            Err("route_too_long")
        );
    }

    proptest! {
        /// Whatever the route and position, the check decides and never panics; a packet that
        /// passes moves one position on, so it lives at most max_route_len hops.
        #[test]
        fn receive_source_is_total(
            route in proptest::collection::vec(0u64..16, 0..40),
            position in 0usize..45, me in 0u64..16, from in 0u64..16,
        ) {
            let q: Topology = "q:4".parse().unwrap();
            let route: Vec<NodeId> = route.into_iter().map(NodeId).collect();
            if let Ok(Hop::Forward(next)) = receive_source(q, NodeId(me), NodeId(from), &route, position) {
                prop_assert_eq!(route[position + 1], next);
                prop_assert!(position + 1 < max_route_len(q));
            }
        }
    }

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
