//! Source-routed sends: a request meets its algorithm (through the table of
//! [`crate::paths::table`]), and the per-hop check of a source route. The route of a message (a
//! whole path computed at the source) travels in its header with the index of the hop it is at;
//! each node checks that it is that hop and that the next node is a real neighbour, then forwards.
//! Like [`crate::receive`], a pure function of the node's id and the header: no state.

use crate::paths::error::PathError;
use crate::paths::instance::{Instance, Kind};
use crate::paths::system::PathSystem;
use crate::paths::table;
use crate::routing::actions;
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
    /// The destinations: one copy to each (node-to-set), or k copies to the only one (see
    /// [`RouteRequest::is_node_to_node`]).
    pub to: Vec<NodeId>,
    /// Nodes the routes must avoid (fault-tolerant node-to-set).
    pub avoid: Vec<NodeId>,
    /// The bit constraint gamma_i: every node of every route has weight i or i+1.
    pub constraint: Option<u32>,
}

impl RouteRequest {
    /// Whether a send of this request is source-routed. Otherwise it is a node-to-node set of
    /// the guarded-action protocol: one destination on Q_n or EH(s,t), nothing else asked.
    pub fn is_source_routed(&self, topology: Topology) -> bool {
        self.to.len() != 1
            || !self.avoid.is_empty()
            || self.constraint.is_some()
            || !topology.has_guarded_protocol()
    }

    /// Whether every copy goes to the one destination (k disjoint paths to it): under a
    /// constraint, and for one destination on the topologies without guarded-action routing.
    /// Otherwise copy `i` goes to destination `i`.
    pub fn is_node_to_node(&self, topology: Topology) -> bool {
        self.constraint.is_some() || (self.to.len() == 1 && !topology.has_guarded_protocol())
    }

    /// The destination of each of the `k` copies the source made.
    pub fn copy_destinations(&self, topology: Topology, k: usize) -> Vec<NodeId> {
        match self.to.first() {
            Some(&d) if self.is_node_to_node(topology) => vec![d; k],
            _ => self.to.clone(),
        }
    }
}

/// Why no routes could be made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RoutesError {
    #[error(transparent)]
    Path(#[from] PathError),
    #[error("{0}")]
    Invalid(String),
    #[error("{topology} has no source-routed algorithm for {what}")]
    Unsupported {
        topology: Topology,
        what: &'static str,
    },
}

/// The routes of a source-routed send from `src`, one per copy, each a whole path from `src`.
pub fn routes(
    topology: Topology,
    src: NodeId,
    request: &RouteRequest,
) -> Result<Vec<Vec<NodeId>>, RoutesError> {
    route_system(topology, src, request).map(|system| system.paths)
}

/// [`routes`], with how they were made (the paper's construction, or an exact fallback).
/// The request becomes an instance of the algorithm table ([`RouteRequest::instance`]), which
/// picks the algorithm (its defaults: on Q_n HC-CONTAINER, Cube-XFTN2S, Cube-N2S; on the seed
/// families their node-to-node and node-to-set algorithms).
pub fn route_system(
    topology: Topology,
    src: NodeId,
    request: &RouteRequest,
) -> Result<PathSystem, RoutesError> {
    let instance = request.instance(topology, src)?;
    Ok(table::solve(topology, &instance, None)?.1)
}

impl RouteRequest {
    /// The instance of the algorithm table this request asks for from `src`:
    /// * a constraint: bit-constrained node-to-node (k copies to the one destination), Q_n only;
    /// * nodes to avoid: fault-tolerant node-to-set (one copy to each destination), Q_n only;
    /// * one destination on a topology without guarded-action routing: node-to-node (k copies);
    /// * else node-to-set (one copy to each destination).
    ///
    /// A node-to-node send on Q_n and EH(s,t) takes the guarded-action protocol instead.
    pub fn instance<'a>(
        &'a self,
        topology: Topology,
        src: NodeId,
    ) -> Result<Instance<'a>, RoutesError> {
        let kind = match (self.constraint, self.avoid.is_empty()) {
            (Some(_), _) => Kind::ConstrainedNodeToNode,
            (None, false) => Kind::FaultTolerantNodeToSet,
            (None, true) if self.is_node_to_node(topology) => Kind::NodeToNode,
            (None, true) => Kind::NodeToSet,
        };
        if table::choose(topology, kind, None).is_err() {
            return Err(RoutesError::Unsupported {
                topology,
                what: kind.name(),
            });
        }
        Ok(match (self.constraint, &self.to[..]) {
            (Some(i), [d]) if self.avoid.is_empty() => {
                Instance::ConstrainedNodeToNode { s: src, d: *d, i }
            }
            (Some(_), [_]) => {
                return Err(RoutesError::Invalid(
                    "a constrained send cannot also avoid nodes".into(),
                ));
            }
            (Some(_), to) => {
                return Err(RoutesError::Invalid(format!(
                    "a constrained send has one destination, not {}",
                    to.len()
                )));
            }
            (None, [d]) if kind == Kind::NodeToNode => Instance::NodeToNode { s: src, d: *d },
            (None, to) if kind == Kind::FaultTolerantNodeToSet => {
                Instance::FaultTolerantNodeToSet {
                    s: src,
                    dests: to,
                    faults: &self.avoid,
                }
            }
            (None, to) => Instance::NodeToSet { s: src, dests: to },
        })
    }
}

/// The k paths a node-to-node set from `src` to `dst` takes on a cluster, whichever way it is
/// routed: the guarded-action protocol's on Q_n and EH(s,t), the source's routes on the other
/// topologies; the table's node-to-node algorithm for the topology either way.
pub fn node_to_node_paths(
    topology: Topology,
    src: NodeId,
    dst: NodeId,
) -> Result<Vec<Vec<NodeId>>, RoutesError> {
    let instance = Instance::NodeToNode { s: src, d: dst };
    Ok(table::solve(topology, &instance, None)?.1.paths)
}

/// B for node-to-node sets, whichever way they are routed: no packet of one, whatever its
/// header, makes more hops than this after its last corruption. The guarded-action protocol's
/// [`actions::flush_bound`] on Q_n and EH(s,t); a source route's length less one elsewhere.
pub fn node_to_node_flush_bound(topology: Topology) -> u32 {
    actions::flush_bound(topology).unwrap_or(max_route_len(topology) as u32 - 1)
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
    fn family_requests_meet_their_algorithms() {
        use crate::paths::verify::{Shape, check};
        for name in ["hhc:2", "mc:1,2", "rdn:ring3,1", "hhc:3"] {
            let t: Topology = name.parse().unwrap();
            let (s, far) = (NodeId(0), t.nodes().last().unwrap());
            let n2n = route_system(
                t,
                s,
                &RouteRequest {
                    to: vec![far],
                    ..Default::default()
                },
            )
            .unwrap();
            let k = t.connectivity() as usize;
            check(t, Shape::NodeToNode { s, d: far, k }, &n2n.paths).unwrap();
            let dests: Vec<NodeId> = t.nodes().skip(1).step_by(5).take(k).collect();
            let n2s = routes(
                t,
                s,
                &RouteRequest {
                    to: dests.clone(),
                    ..Default::default()
                },
            )
            .unwrap();
            check(t, Shape::NodeToSet { s, dests: &dests }, &n2s).unwrap();
            let longest = n2n.paths.iter().chain(&n2s).map(Vec::len).max().unwrap();
            assert!(longest <= max_route_len(t), "{name}");
            let avoid = RouteRequest {
                to: vec![far],
                avoid: vec![dests[0]],
                constraint: None,
            };
            assert!(matches!(
                routes(t, s, &avoid),
                Err(RoutesError::Unsupported { .. })
            ));
        }
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
