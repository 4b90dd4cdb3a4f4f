//! The front door at the source: one [`SendRequest`] for every send (one destination or a set, with
//! the options `split`, `avoid` and `constraint`), turned by [`SendRequest::routes`] into the set's
//! [`Routes`] and by [`Routes::start`] into its first packets. Which routing mode carries a
//! request, and which algorithm of [`crate::paths::table`] computes source routes, is decided
//! here and nowhere else.
//!
//! * one destination on Q_n or EH(s,t), nothing else asked: the guarded-action protocol, k
//!   copies, each routed hop by hop from its header;
//! * with `single`, one copy only, on the shortest of the k paths either mode would use;
//! * everything else is source-routed: a constraint (HC-CONTAINER, k copies to the one
//!   destination), nodes to avoid (fault-tolerant node-to-set, one copy each), one destination
//!   on HHC, the metacube or the dual-net (their node-to-node algorithms, k copies), a set of
//!   destinations (node-to-set, one copy each).

use super::header::Header;
use super::packet::{Packet, Route, RouteKind, SourceRoute};
use crate::NodeId;
use crate::paths::error::PathError;
use crate::paths::guarded;
use crate::paths::guarded::map::{self, MapError, Plan};
use crate::paths::instance::{Instance, Kind};
use crate::paths::live::{self, Faults, Kept};
use crate::paths::system::{Path, PathSystem};
use crate::paths::table;
use crate::topology::Topology;
use serde::{Deserialize, Serialize};

/// What a source asks the network to do with one payload.
#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SendRequest {
    /// The destinations: k copies to the only one (node-to-node), or one copy to each.
    pub to: Vec<NodeId>,
    /// Nodes the routes must avoid (fault-tolerant node-to-set).
    pub avoid: Vec<NodeId>,
    /// The bit constraint gamma_i: every node of every route has weight i or i+1.
    pub constraint: Option<u32>,
    /// Cut the payload into k parts, one per path, instead of sending it on every path:
    /// node-to-node sets only.
    pub split: bool,
    /// One copy on one path instead of k copies on the k disjoint paths: the shortest of the
    /// k paths constructed for the pair (the fewest hops; ties: the lowest index), in either
    /// routing mode. k is 1 for the set. Node-to-node sets only, not with `split` (the
    /// baseline that k disjoint paths are compared with).
    pub single: bool,
}

/// Why a request has no routes.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
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

impl SendRequest {
    /// k copies of a payload to `dst` over the k disjoint paths.
    pub fn to(dst: NodeId) -> SendRequest {
        SendRequest {
            to: vec![dst],
            ..SendRequest::default()
        }
    }

    /// Whether the guarded-action protocol carries this request: one destination on Q_n or
    /// EH(s,t), nothing else asked.
    pub fn is_guarded(&self, topology: Topology) -> bool {
        topology.has_guarded_protocol()
            && self.to.len() == 1
            && self.avoid.is_empty()
            && self.constraint.is_none()
    }

    /// The routing mode that carries this request.
    pub fn kind(&self, topology: Topology) -> RouteKind {
        if self.is_guarded(topology) {
            RouteKind::Guarded
        } else {
            RouteKind::Source
        }
    }

    /// Whether every copy goes to the one destination over k disjoint paths (otherwise copy `i`
    /// goes to destination `i`).
    pub fn is_node_to_node(&self, topology: Topology) -> bool {
        self.is_guarded(topology)
            || self.constraint.is_some()
            || (self.to.len() == 1 && self.avoid.is_empty() && !topology.has_guarded_protocol())
    }

    /// The routes of this request from `src`, or why there are none.
    pub fn routes(&self, topology: Topology, src: NodeId) -> Result<Routes, SendError> {
        if self.to.is_empty() {
            return Err(SendError::Invalid("a send needs a destination".into()));
        }
        if self.to.contains(&src) {
            return Err(SendError::Invalid(format!(
                "the source {} is also a destination: a node does not send to itself",
                topology.format_node(src)
            )));
        }
        if self.split && !self.is_node_to_node(topology) {
            return Err(SendError::Invalid(
                "split cuts a payload over the k paths to one destination: not for a set of destinations or with nodes to avoid"
                    .into(),
            ));
        }
        if self.single && (self.split || !self.is_node_to_node(topology)) {
            return Err(SendError::Invalid(
                "single sends one copy on the shortest of the k paths to one destination: not with split, a set of destinations or nodes to avoid"
                    .into(),
            ));
        }
        let plan = if self.kind(topology) == RouteKind::Guarded {
            let dst = self.to[0];
            let invalid = |e: MapError| SendError::Invalid(e.to_string());
            let mut plans = map::map(topology, src, dst).map_err(invalid)?;
            if self.single {
                // The plan whose walk (the path the per-hop rule routes it on) is shortest.
                let walked = guarded::disjoint_paths(topology, src, dst).map_err(invalid)?;
                let i = shortest(&walked.paths).expect("a pair has at least one path");
                plans = vec![plans[i]];
            }
            RoutesPlan::Guarded { dst, plans }
        } else {
            let mut paths = self.route_system(topology, src)?.paths;
            if self.single {
                let i = shortest(&paths).expect("a node-to-node answer has a path");
                paths = vec![paths.swap_remove(i)];
            }
            RoutesPlan::Source(paths)
        };
        Ok(Routes {
            src,
            split: self.split,
            single: self.single,
            reroutable: self.is_node_to_node(topology) && self.constraint.is_none(),
            plan,
        })
    }

    /// The one path a [`SendRequest::single`] request from `src` travels (for a client to
    /// check the path its copy took): the shortest of the k paths of the pair, as
    /// [`SendRequest::routes`] picks it.
    pub fn single_path(&self, topology: Topology, src: NodeId) -> Result<Path, SendError> {
        let mut paths = match self.kind(topology) {
            RouteKind::Guarded => {
                guarded::disjoint_paths(topology, src, self.to[0])
                    .map_err(|e| SendError::Invalid(e.to_string()))?
                    .paths
            }
            RouteKind::Source => self.route_system(topology, src)?.paths,
        };
        let i =
            shortest(&paths).ok_or_else(|| SendError::Invalid("the request has no path".into()))?;
        Ok(paths.swap_remove(i))
    }

    /// The source routes of this request from `src`, with how they were made: the table's
    /// algorithm for [`SendRequest::instance`].
    pub fn route_system(&self, topology: Topology, src: NodeId) -> Result<PathSystem, SendError> {
        let instance = self.instance(topology, src)?;
        Ok(table::solve(topology, &instance, None)?.1)
    }

    /// The instance of the algorithm table this request asks for from `src`:
    /// * a constraint: bit-constrained node-to-node (k copies to the one destination), Q_n only;
    /// * nodes to avoid: fault-tolerant node-to-set (one copy to each destination), Q_n only;
    /// * one destination: node-to-node (k copies);
    /// * else node-to-set (one copy to each destination).
    pub fn instance<'a>(
        &'a self,
        topology: Topology,
        src: NodeId,
    ) -> Result<Instance<'a>, SendError> {
        let kind = match (self.constraint, self.avoid.is_empty()) {
            (Some(_), _) => Kind::ConstrainedNodeToNode,
            (None, false) => Kind::FaultTolerantNodeToSet,
            (None, true) if self.to.len() == 1 => Kind::NodeToNode,
            (None, true) => Kind::NodeToSet,
        };
        if table::choose(topology, kind, None).is_err() {
            return Err(SendError::Unsupported {
                topology,
                what: kind.name(),
            });
        }
        Ok(match (self.constraint, &self.to[..]) {
            (Some(i), [d]) if self.avoid.is_empty() => {
                Instance::ConstrainedNodeToNode { s: src, d: *d, i }
            }
            (Some(_), [_]) => {
                return Err(SendError::Invalid(
                    "a constrained send cannot also avoid nodes".into(),
                ));
            }
            (Some(_), to) => {
                return Err(SendError::Invalid(format!(
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

/// The index of the shortest of `paths` (the fewest hops; ties: the lowest index).
pub fn shortest(paths: &[Path]) -> Option<usize> {
    // `min_by_key` keeps the first of equal minima.
    paths
        .iter()
        .enumerate()
        .min_by_key(|(_, p)| p.len())
        .map(|(i, _)| i)
}

/// A set's routes, decided at its source: one per copy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Routes {
    src: NodeId,
    split: bool,
    single: bool,
    /// Node-to-node with no constraint: [`Routes::around`] may choose other paths.
    reroutable: bool,
    plan: RoutesPlan,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum RoutesPlan {
    /// The map's k plans to `dst` (the guarded-action protocol).
    Guarded { dst: NodeId, plans: Vec<Plan> },
    /// Whole paths from the source, one per copy.
    Source(Vec<Path>),
}

impl Routes {
    /// How many copies (or parts) the set travels as.
    pub fn k(&self) -> usize {
        match &self.plan {
            RoutesPlan::Guarded { plans, .. } => plans.len(),
            RoutesPlan::Source(paths) => paths.len(),
        }
    }

    pub fn kind(&self) -> RouteKind {
        match self.plan {
            RoutesPlan::Guarded { .. } => RouteKind::Guarded,
            RoutesPlan::Source(_) => RouteKind::Source,
        }
    }

    pub fn is_split(&self) -> bool {
        self.split
    }

    /// Whether the set travels as one copy on one of its pair's k paths
    /// ([`SendRequest::single`]): its messages say so, for the destination counts k = 1.
    pub fn is_single(&self) -> bool {
        self.single
    }

    /// The plans of the guarded-action protocol (the paper's `map`), if that is how it travels.
    pub fn plans(&self) -> Option<&[Plan]> {
        match &self.plan {
            RoutesPlan::Guarded { plans, .. } => Some(plans),
            RoutesPlan::Source(_) => None,
        }
    }

    /// The path each copy travels, in copy order: a guarded plan walked with the per-hop rule,
    /// or the source route.
    pub fn paths(&self, topology: Topology) -> Vec<Path> {
        match &self.plan {
            RoutesPlan::Guarded { dst, plans } => plans
                .iter()
                .map(|plan| guarded::walk(topology, self.src, *dst, plan))
                .collect(),
            RoutesPlan::Source(paths) => paths.clone(),
        }
    }

    /// These routes with what the source knows is dead (`faults`): `None` when they stay as
    /// they are (no path crosses a dead node or link, or the routes are not node-to-node
    /// without a constraint, or nothing live connects the ends); otherwise source routes on
    /// the most internally disjoint live paths the graph without the faults has (its max flow,
    /// [`live::around`]) around the unbroken paths, which are moved only where `kept` allows it
    /// and the maximum needs it, shortest first; with `single`,
    /// the shortest of them.
    pub fn around(&self, topology: Topology, faults: &Faults, kept: Kept) -> Option<Routes> {
        if !self.reroutable || faults.is_empty() {
            return None;
        }
        let paths = self.paths(topology);
        if !paths.iter().any(|p| faults.breaks(p)) {
            return None;
        }
        let dst = *paths.first()?.last()?;
        let start = match &self.plan {
            // All k paths of the pair, so a single copy's reroute can pick the shortest.
            RoutesPlan::Guarded { .. } if self.single => {
                guarded::disjoint_paths(topology, self.src, dst)
                    .map(|set| set.paths)
                    .unwrap_or(paths)
            }
            _ => paths,
        };
        let mut live = live::around(
            topology,
            self.src,
            dst,
            faults,
            (&start, kept),
            live::BUDGET,
        );
        if live.is_empty() {
            return None;
        }
        if self.single {
            live.truncate(1);
        }
        Some(Routes {
            plan: RoutesPlan::Source(live),
            ..self.clone()
        })
    }

    /// These routes made `k` long by taking their paths again in turn (route `i` on path
    /// `i mod len`): how a set made of k pieces (a reliable one, or its resend) travels when
    /// fewer paths are live. Unchanged if they are `k` long already; source routes only.
    pub fn cycled(self, k: usize) -> Routes {
        match &self.plan {
            RoutesPlan::Source(paths) if paths.len() < k && !paths.is_empty() => {
                let paths = (0..k).map(|i| paths[i % paths.len()].clone()).collect();
                Routes {
                    plan: RoutesPlan::Source(paths),
                    ..self
                }
            }
            _ => self,
        }
    }

    /// The destination of each copy, in copy order.
    pub fn destinations(&self) -> Vec<NodeId> {
        match &self.plan {
            RoutesPlan::Guarded { dst, plans } => vec![*dst; plans.len()],
            RoutesPlan::Source(paths) => paths
                .iter()
                .map(|p| *p.last().expect("a route has its source and destination"))
                .collect(),
        }
    }

    /// The parts of `payload` the copies carry, in copy order: the payload cut into k parts
    /// with `split` (the first `len % k` parts one byte longer; concatenated in index order they
    /// give it back), else k copies of it.
    pub fn parts(&self, payload: &[u8]) -> Vec<Vec<u8>> {
        let k = self.k();
        if !self.split {
            return vec![payload.to_vec(); k];
        }
        let (base, extra) = (payload.len() / k, payload.len() % k);
        let mut rest = payload;
        (0..k)
            .map(|i| {
                let (part, tail) = rest.split_at(base + usize::from(i < extra));
                rest = tail;
                part.to_vec()
            })
            .collect()
    }

    /// The paper's `input(M, D)`: the first packets, one per copy for a distinct first hop,
    /// message `i` on route `i`. `messages` holds one message per copy ([`Routes::k`]); the
    /// messages beyond `k` are not sent, and fewer than `k` send fewer copies.
    pub fn start<M>(&self, messages: Vec<M>) -> Vec<(NodeId, Packet<M>)> {
        self.start_from(0, messages)
    }

    /// [`Routes::start`] from route `first` on: message `i` on route `first + i`.
    pub fn start_from<M>(&self, first: usize, messages: Vec<M>) -> Vec<(NodeId, Packet<M>)> {
        match &self.plan {
            RoutesPlan::Guarded { dst, plans } => plans
                .iter()
                .enumerate()
                .skip(first)
                .zip(messages)
                .map(|((i, plan), message)| {
                    let header = Header::for_plan(plan, self.src, *dst, i as u8);
                    let route = Route::Guarded(header);
                    (plan.first, Packet { route, message })
                })
                .collect(),
            RoutesPlan::Source(paths) => {
                let copies = paths.len() as u8;
                paths
                    .iter()
                    .enumerate()
                    .skip(first)
                    .zip(messages)
                    .map(|((i, path), message)| {
                        let route = Route::Source(SourceRoute {
                            path: path.clone(),
                            position: 1,
                            index: i as u8,
                            copies,
                        });
                        (path[1], Packet { route, message })
                    })
                    .collect()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routing::source::max_route_len;

    fn routes(t: Topology, src: NodeId, r: &SendRequest) -> Result<Vec<Path>, SendError> {
        r.route_system(t, src).map(|system| system.paths)
    }

    fn set(to: &[NodeId]) -> SendRequest {
        SendRequest {
            to: to.to_vec(),
            ..SendRequest::default()
        }
    }

    #[test]
    fn requests_meet_their_algorithms() {
        let q: Topology = "q:4".parse().unwrap();
        let to = vec![NodeId(3), NodeId(12), NodeId(15)];
        let n2s = routes(q, NodeId(0), &set(&to)).unwrap();
        let ends: Vec<NodeId> = n2s.iter().map(|r| *r.last().unwrap()).collect();
        assert_eq!(ends, to);
        // |D| + |F| <= n - 1.
        let avoid = SendRequest {
            avoid: vec![NodeId(1)],
            ..set(&to[..2])
        };
        let ft = routes(q, NodeId(0), &avoid).unwrap();
        assert!(ft.iter().all(|r| !r.contains(&NodeId(1))));
        let constrained = SendRequest {
            constraint: Some(2),
            ..SendRequest::to(NodeId(0b1100))
        };
        let c = routes(q, NodeId(0b0011), &constrained).unwrap();
        assert_eq!(c.len(), 2, "k = min(n-i, i+1)");
        assert!(
            c.iter()
                .flatten()
                .all(|v| matches!(v.0.count_ones(), 2 | 3))
        );
        let constrained_set = SendRequest {
            constraint: Some(1),
            ..set(&to)
        };
        assert!(matches!(
            routes(q, NodeId(1), &constrained_set),
            Err(SendError::Invalid(_))
        ));
        assert!(matches!(
            routes(
                "eh:1,1".parse().unwrap(),
                NodeId(0),
                &set(&[NodeId(1), NodeId(2)])
            ),
            Err(SendError::Unsupported { .. })
        ));
    }

    #[test]
    fn the_routing_mode_follows_the_request() {
        let (q, eh, hhc): (Topology, Topology, Topology) = (
            "q:4".parse().unwrap(),
            "eh:2,2".parse().unwrap(),
            "hhc:2".parse().unwrap(),
        );
        let one = SendRequest::to(NodeId(5));
        for (t, kind, k) in [
            (q, RouteKind::Guarded, 4),
            (eh, RouteKind::Guarded, 3),
            (hhc, RouteKind::Source, 3),
        ] {
            let routes = one.routes(t, NodeId(0)).unwrap();
            assert_eq!((routes.kind(), routes.k()), (kind, k), "{t}");
            assert_eq!(routes.destinations(), vec![NodeId(5); k]);
        }
        let many = set(&[NodeId(3), NodeId(5)]);
        let routes = many.routes(q, NodeId(0)).unwrap();
        assert_eq!(routes.kind(), RouteKind::Source);
        assert_eq!(routes.destinations(), vec![NodeId(3), NodeId(5)]);
    }

    #[test]
    fn split_is_for_node_to_node_sets_only() {
        let q: Topology = "q:4".parse().unwrap();
        let hhc: Topology = "hhc:2".parse().unwrap();
        let split = |r: SendRequest| SendRequest { split: true, ..r };
        for (t, ok) in [
            (split(SendRequest::to(NodeId(5))), true),
            (
                split(SendRequest {
                    constraint: Some(1),
                    ..SendRequest::to(NodeId(0b0110))
                }),
                true,
            ),
            (split(set(&[NodeId(3), NodeId(5)])), false),
            (
                split(SendRequest {
                    avoid: vec![NodeId(1)],
                    ..SendRequest::to(NodeId(5))
                }),
                false,
            ),
        ] {
            let src = if t.constraint.is_some() {
                NodeId(0b0011)
            } else {
                NodeId(0)
            };
            assert_eq!(t.routes(q, src).is_ok(), ok, "{t:?}");
        }
        assert!(
            split(SendRequest::to(NodeId(9)))
                .routes(hhc, NodeId(0))
                .is_ok()
        );
        assert!(
            split(set(&[NodeId(3), NodeId(9)]))
                .routes(hhc, NodeId(0))
                .is_err()
        );
    }

    #[test]
    fn parts_concatenate_back_and_copies_are_whole() {
        let q: Topology = "q:5".parse().unwrap();
        for len in 0..20u8 {
            let payload: Vec<u8> = (0..len).collect();
            let split = SendRequest {
                split: true,
                ..SendRequest::to(NodeId(7))
            };
            let parts = split.routes(q, NodeId(0)).unwrap().parts(&payload);
            assert_eq!(parts.len(), 5);
            assert_eq!(parts.concat(), payload);
            let longest = parts.iter().map(Vec::len).max().unwrap();
            let shortest = parts.iter().map(Vec::len).min().unwrap();
            assert!(longest - shortest <= 1);
            let copies = SendRequest::to(NodeId(7)).routes(q, NodeId(0)).unwrap();
            assert!(copies.parts(&payload).iter().all(|p| *p == payload));
        }
    }

    #[test]
    fn a_source_is_never_its_own_destination() {
        let q: Topology = "q:3".parse().unwrap();
        for r in [
            SendRequest::to(NodeId(0)),
            set(&[NodeId(1), NodeId(0)]),
            set(&[]),
        ] {
            assert!(matches!(r.routes(q, NodeId(0)), Err(SendError::Invalid(_))));
        }
    }

    #[test]
    fn family_requests_meet_their_algorithms() {
        use crate::paths::verify::{Shape, check};
        for name in ["hhc:2", "mc:1,2", "rdn:ring3,1", "hhc:3"] {
            let t: Topology = name.parse().unwrap();
            let (s, far) = (NodeId(0), t.nodes().last().unwrap());
            let n2n = SendRequest::to(far).route_system(t, s).unwrap();
            let k = t.connectivity() as usize;
            check(t, Shape::NodeToNode { s, d: far, k }, &n2n.paths).unwrap();
            let dests: Vec<NodeId> = t.nodes().skip(1).step_by(5).take(k).collect();
            let n2s = routes(t, s, &set(&dests)).unwrap();
            check(t, Shape::NodeToSet { s, dests: &dests }, &n2s).unwrap();
            let longest = n2n.paths.iter().chain(&n2s).map(Vec::len).max().unwrap();
            assert!(longest <= max_route_len(t), "{name}");
            let avoid = SendRequest {
                avoid: vec![dests[0]],
                ..SendRequest::to(far)
            };
            assert!(matches!(
                routes(t, s, &avoid),
                Err(SendError::Unsupported { .. })
            ));
        }
    }

    /// Where a packet `start` sent goes, hop by hop with the front door's `hop`, until it is
    /// delivered: its path.
    fn walk(t: Topology, src: NodeId, first: NodeId, packet: Packet<()>) -> Vec<NodeId> {
        use crate::routing::hop::{Action, hop};
        let (mut path, mut from, mut at, mut packet) = (vec![src], src, first, packet);
        loop {
            path.push(at);
            assert!(path.len() <= t.node_count() as usize, "{path:?}");
            match hop(t, at, packet, from) {
                Action::Deliver(_) => return path,
                Action::Forward { to, packet: p } => (from, at, packet) = (at, to, p),
                Action::Drop { reason, .. } => panic!("{t} {path:?}: dropped, {reason:?}"),
            }
        }
    }

    fn single(dst: NodeId) -> SendRequest {
        SendRequest {
            single: true,
            ..SendRequest::to(dst)
        }
    }

    #[test]
    fn single_takes_a_shortest_of_the_k_paths_on_every_pair() {
        for name in ["q:3", "eh:1,1", "eh:2,2"] {
            let t: Topology = name.parse().unwrap();
            for s in t.nodes() {
                for d in t.nodes().filter(|&d| d != s) {
                    let all = guarded::disjoint_paths(t, s, d).unwrap().paths;
                    let fewest = all.iter().map(Vec::len).min().unwrap();
                    let expected = all.iter().position(|p| p.len() == fewest).unwrap();
                    let routes = single(d).routes(t, s).unwrap();
                    assert_eq!(routes.kind(), RouteKind::Guarded, "{name}");
                    assert_eq!((routes.k(), routes.is_single()), (1, true));
                    assert_eq!(routes.destinations(), vec![d]);
                    let plans = map::map(t, s, d).unwrap();
                    assert_eq!(routes.plans().unwrap(), &plans[expected..=expected]);
                    // The one packet is copy 0 of 1 and the hop rule walks it on that path, a
                    // shortest one of the pair.
                    let mut sends = routes.start(vec![()]);
                    assert_eq!(sends.len(), 1);
                    let (first, packet) = sends.pop().unwrap();
                    assert_eq!(packet.route.index(), 0);
                    let path = walk(t, s, first, packet);
                    assert_eq!(path, all[expected], "{name} {s} -> {d}");
                    assert_eq!(path, single(d).single_path(t, s).unwrap());
                    assert_eq!(
                        path.len() - 1,
                        t.distance(s, d) as usize,
                        "{name} {s} -> {d}: {all:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn single_source_routes_keep_the_shortest_path() {
        let q: Topology = "q:4".parse().unwrap();
        let hhc: Topology = "hhc:2".parse().unwrap();
        let constrained = SendRequest {
            constraint: Some(2),
            ..single(NodeId(0b1100))
        };
        for (t, src, request) in [
            (q, NodeId(0b0011), constrained),
            (hhc, NodeId(0), single(hhc.nodes().last().unwrap())),
            (hhc, NodeId(3), single(NodeId(40))),
        ] {
            let all = SendRequest {
                single: false,
                ..request.clone()
            }
            .route_system(t, src)
            .unwrap()
            .paths;
            let fewest = all.iter().map(Vec::len).min().unwrap();
            let expected = all.iter().position(|p| p.len() == fewest).unwrap();
            let routes = request.routes(t, src).unwrap();
            assert_eq!((routes.kind(), routes.k()), (RouteKind::Source, 1));
            let mut sends = routes.start(vec![()]);
            let (first, packet) = sends.pop().unwrap();
            match &packet.route {
                Route::Source(r) => assert_eq!((r.index, r.copies), (0, 1)),
                other => panic!("{other:?}"),
            }
            assert_eq!(packet.route.copies(t), 1);
            let path = walk(t, src, first, packet);
            assert_eq!(path, all[expected], "{t}");
            assert_eq!(path, request.single_path(t, src).unwrap());
        }
    }

    /// Starting from route `i` sends its messages as `start` sends its `i`-th and later ones:
    /// the same first hops and copy indices, and the hop rule walks each on its own path.
    #[test]
    fn start_from_a_route_sends_as_start_does_from_there() {
        for (name, src, dst) in [("eh:2,2", 0, 30), ("q:4", 0b0011, 0b1100), ("hhc:2", 3, 40)] {
            let t: Topology = name.parse().unwrap();
            let (src, dst) = (NodeId(src), NodeId(dst));
            let routes = SendRequest::to(dst).routes(t, src).unwrap();
            let k = routes.k();
            assert!(k >= 2, "{name}");
            let all = routes.start(vec![(); k]);
            for first in 0..k {
                let from = routes.start_from(first, vec![(); k]);
                assert_eq!(from.len(), k - first, "{name}: beyond k nothing goes");
                for (i, (hop, packet)) in from.into_iter().enumerate() {
                    let (all_hop, all_packet) = &all[first + i];
                    assert_eq!(hop, *all_hop, "{name}");
                    assert_eq!(packet.route.index(), all_packet.route.index(), "{name}");
                    assert_eq!(packet.route.index() as usize, first + i, "{name}");
                    let path = walk(t, src, hop, packet);
                    assert_eq!(path.last(), Some(&dst), "{name}");
                }
            }
            assert!(routes.start_from(k, vec![()]).is_empty());
        }
    }

    #[test]
    fn single_is_for_one_destination_without_split() {
        let q: Topology = "q:3".parse().unwrap();
        for request in [
            SendRequest {
                split: true,
                ..single(NodeId(7))
            },
            SendRequest {
                to: vec![NodeId(3), NodeId(5)],
                ..single(NodeId(7))
            },
            SendRequest {
                avoid: vec![NodeId(1)],
                ..single(NodeId(7))
            },
        ] {
            assert!(
                matches!(request.routes(q, NodeId(0)), Err(SendError::Invalid(_))),
                "{request:?}"
            );
        }
    }

    #[test]
    fn shortest_prefers_the_lowest_index_among_equals() {
        let p = |n: u64| (0..n).map(NodeId).collect::<Vec<_>>();
        assert_eq!(shortest(&[p(4), p(3), p(3), p(5)]), Some(1));
        assert_eq!(shortest(&[p(2)]), Some(0));
        assert_eq!(shortest(&[]), None);
    }

    #[test]
    fn routes_around_dead_nodes_keep_the_live_paths_and_take_the_max_flow() {
        use crate::paths::live::Faults;
        for t in ["q:4", "eh:2,2", "hhc:2"] {
            let t: Topology = t.parse().unwrap();
            let (s, d) = (NodeId(0), NodeId(t.node_count() - 1));
            let routes = SendRequest::to(d).routes(t, s).unwrap();
            let paths = routes.paths(t);
            assert_eq!(routes.around(t, &Faults::new(), Kept::MayMove), None);
            // A dead link on no path changes nothing.
            let mut off = Faults::new();
            let unused = t
                .nodes()
                .find(|v| !paths.iter().flatten().any(|w| w == v))
                .unwrap();
            off.link(unused, t.neighbours(unused).next().unwrap());
            if !paths.iter().any(|p| off.breaks(p)) {
                assert_eq!(routes.around(t, &off, Kept::MayMove), None, "{t}");
            }
            // A middle node of the first path dies: the others stay, and the most live paths go.
            let mut faults = Faults::new();
            faults.node(paths[0][paths[0].len() / 2]);
            let around = routes
                .around(t, &faults, Kept::MayMove)
                .expect("a path is broken");
            assert_eq!(around.kind(), RouteKind::Source);
            let live = around.paths(t);
            assert!(faults.check(t, s, d, &live), "{t}: {live:?}");
            let kept = paths[1..].iter().filter(|p| live.contains(p)).count();
            assert!(
                kept == paths.len() - 1 || live.len() == t.local_connectivity(s, d) as usize - 1,
                "{t}: the unbroken paths are kept unless the max flow moves them"
            );
            // While the news settles, they stay whatever the max flow.
            let stay = routes.around(t, &faults, Kept::Stay).unwrap().paths(t);
            assert!(faults.check(t, s, d, &stay), "{t}: {stay:?}");
            assert!(paths[1..].iter().all(|p| stay.contains(p)), "{t}: {stay:?}");
            assert!(
                live.len() + 1 >= paths.len(),
                "{t}: one dead node takes one path at most"
            );
            let packets = around.start(vec![(); live.len()]);
            assert!(packets.iter().all(|(first, _)| !faults.is_dead(*first)));
            // One copy: the shortest live path.
            let single = SendRequest {
                single: true,
                ..SendRequest::to(d)
            }
            .routes(t, s)
            .unwrap();
            if let Some(one) = single.around(t, &faults, Kept::MayMove) {
                assert_eq!(one.k(), 1);
                assert!(faults.check(t, s, d, &one.paths(t)));
            }
        }
    }

    #[test]
    fn constrained_sets_and_sets_of_destinations_are_not_rerouted() {
        use crate::paths::live::Faults;
        let q: Topology = "q:4".parse().unwrap();
        let constrained = SendRequest {
            constraint: Some(2),
            ..SendRequest::to(NodeId(0b1100))
        }
        .routes(q, NodeId(0b0011))
        .unwrap();
        let to_set = set(&[NodeId(3), NodeId(12)]).routes(q, NodeId(0)).unwrap();
        for routes in [constrained, to_set] {
            let mut faults = Faults::new();
            for p in routes.paths(q) {
                faults.node(p[1]);
            }
            assert_eq!(routes.around(q, &faults, Kept::MayMove), None);
        }
    }

    #[test]
    fn cycled_routes_carry_every_piece_over_the_live_paths() {
        use crate::paths::live::Faults;
        let q: Topology = "q:3".parse().unwrap();
        let routes = SendRequest::to(NodeId(7)).routes(q, NodeId(0)).unwrap();
        let mut faults = Faults::new();
        faults.node(NodeId(1));
        let around = routes.around(q, &faults, Kept::MayMove).unwrap();
        assert_eq!(around.k(), 2, "two of Q_3's three neighbours of 0 are live");
        let cycled = around.clone().cycled(3);
        assert_eq!(cycled.k(), 3);
        let packets = cycled.start(vec!['a', 'b', 'c']);
        let indices: Vec<u8> = packets.iter().map(|(_, p)| p.route.index()).collect();
        assert_eq!(indices, [0, 1, 2]);
        assert!(packets.iter().all(|(_, p)| p.route.copies(q) == 3));
        let paths = cycled.paths(q);
        assert_eq!(paths[2], paths[0]);
        assert_eq!(around.clone().cycled(2), around);
        assert_eq!(
            routes.clone().cycled(5),
            routes,
            "guarded routes are never cycled"
        );
    }
}
