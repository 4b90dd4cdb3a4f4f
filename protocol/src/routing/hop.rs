//! The front door at every hop: [`hop`] turns (this node, a packet, the neighbour it came from)
//! into deliver, forward or drop, for both routing modes, with one [`DropReason`] and one flush
//! bound ([`flush_bound`]). It is the paper's `rcv`: a pure function of the node's id, the
//! packet's route and its sender, so corrupting a node's variables changes no decision.

use super::guarded::Checks;
use super::packet::{Packet, Route, RouteKind};
pub use super::reason::DropReason;
use super::{guarded, source};
use crate::NodeId;
use crate::paths::guarded::max_stretch;
use crate::topology::Topology;

/// What a node does with one packet.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Action<M> {
    /// This node is the destination: output the message.
    Deliver(Packet<M>),
    /// Send the packet, its route advanced, to neighbour `to`.
    Forward { to: NodeId, packet: Packet<M> },
    /// The route fails a check: the packet is discarded.
    Drop {
        reason: DropReason,
        packet: Packet<M>,
    },
}

/// The paper's `rcv(m) from q` at node `me`, for a packet of either routing mode: deliver here,
/// forward (the route advanced: a guarded header's turning point cleared, a source route's
/// position moved on) or drop with the reason.
pub fn hop<M>(topology: Topology, me: NodeId, packet: Packet<M>, from: NodeId) -> Action<M> {
    hop_checked(topology, me, packet, from, Checks::ALL)
}

/// [`hop`] with only the guarded checks `checks` names: every one in production; the model
/// checker's mutants leave one out (docs/verification.md).
pub fn hop_checked<M>(
    topology: Topology,
    me: NodeId,
    mut packet: Packet<M>,
    from: NodeId,
    checks: Checks,
) -> Action<M> {
    let next = match &mut packet.route {
        Route::Guarded(header) => {
            guarded::decide_checked(topology, me, header, from, checks).map(|next| {
                next.map(|(to, advanced)| {
                    *header = advanced;
                    to
                })
            })
        }
        Route::Source(r) => source::decide(topology, me, from, &r.path, usize::from(r.position))
            .map(|next| next.inspect(|_| r.position += 1)),
    };
    match next {
        Ok(None) => Action::Deliver(packet),
        Ok(Some(to)) => Action::Forward { to, packet },
        Err(reason) => Action::Drop { reason, packet },
    }
}

/// B: no packet of `kind` on `topology`, whatever its route, makes more hops than this after
/// its last corruption, counted as a daemon counts them: from the node that corrupted it (the
/// hop out of it included) to the node where it ends, delivered or dropped.
/// * guarded, on Q_n: n + 2; on EH(s,t): the diameter + 6. A header that passes the checks at
///   a node p needs at most `d(S,D) + stretch - d(S,p)` more hops and each hop takes one off;
///   docs/protocol.md ("Stabilization") has the argument, and `protocol/tests/flush_bound.rs`
///   walks every header a corruption can produce on Q_3..Q_6 and every EH with s+t <= 5;
/// * guarded, on the other families: 1 (dropped where it first arrives);
/// * source-routed: the longest route less one node ([`source::max_route_len`]): the position
///   moves on by one per hop and starts at 1.
pub fn flush_bound(topology: Topology, kind: RouteKind) -> u32 {
    match kind {
        RouteKind::Guarded => max_stretch(topology).map_or(1, |s| topology.diameter() + s),
        RouteKind::Source => source::max_route_len(topology) as u32 - 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paths::guarded::route::Anchors;
    use crate::routing::header::Header;
    use crate::routing::packet::SourceRoute;
    use crate::routing::source::max_route_len;
    use proptest::prelude::*;

    fn topologies() -> impl Strategy<Value = Topology> {
        prop_oneof![
            (1u64..=63).prop_map(|n| Topology::hypercube(n).unwrap()),
            (1u64..=61)
                .prop_flat_map(|s| (Just(s), 1u64..=(62 - s)))
                .prop_map(|(s, t)| Topology::exchanged(s, t).unwrap()),
            (1u64..=5).prop_map(|m| Topology::hhc(m).unwrap()),
            (1u64..=3, 1u64..=3).prop_map(|(k, m)| Topology::metacube(k, m).unwrap()),
            (0usize..4, 1u64..=3).prop_map(|(b, k)| {
                Topology::dualnet(crate::topology::dualnet::Base::ALL[b], k).unwrap()
            }),
        ]
    }

    fn small_id(topology: Topology) -> impl Strategy<Value = NodeId> {
        // Mostly ids of the topology, sometimes any u64: both must be handled.
        let count = topology.node_count();
        prop_oneof![
            4 => any::<u64>().prop_map(move |x| NodeId(x % count)),
            1 => any::<u64>().prop_map(NodeId),
        ]
    }

    fn source(path: &[u64], position: u16) -> Packet<()> {
        Packet {
            route: Route::Source(SourceRoute {
                path: path.iter().copied().map(NodeId).collect(),
                position,
                index: 0,
                copies: 1,
            }),
            message: (),
        }
    }

    fn reason(action: Action<()>) -> Option<&'static str> {
        match action {
            Action::Drop { reason, .. } => Some(reason.as_str()),
            _ => None,
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(20_000))]

        /// `hop` runs on whatever arrives from the network: any guarded header, any sender, at
        /// any node. It decides, and never panics.
        #[test]
        fn hop_never_panics_on_any_header(
            (topology, me, from, src, dst, pd, via, fa, fb, index) in topologies().prop_flat_map(|t| (
                Just(t), small_id(t), small_id(t), small_id(t), small_id(t), small_id(t),
                proptest::option::of(small_id(t)), any::<u8>(), any::<u8>(), any::<u8>(),
            ))
        ) {
            let header = Header { src, dst, pd, via, anchors: Anchors { fa, fb }, index };
            let _ = hop(topology, me, Packet { route: Route::Guarded(header), message: () }, from);
        }
    }

    proptest! {
        /// Whatever the source route and position, `hop` decides and never panics; a packet that
        /// passes moves one position on, so it lives at most max_route_len hops.
        #[test]
        fn a_source_route_hop_is_total(
            path in proptest::collection::vec(0u64..16, 0..40),
            position in 0u16..45, me in 0u64..16, from in 0u64..16,
        ) {
            let q: Topology = "q:4".parse().unwrap();
            if let Action::Forward { to, packet } = hop(q, NodeId(me), source(&path, position), NodeId(from)) {
                let Route::Source(r) = packet.route else { unreachable!() };
                prop_assert_eq!(r.position, position + 1);
                prop_assert_eq!(NodeId(path[usize::from(position) + 1]), to);
                prop_assert!(usize::from(r.position) < max_route_len(q));
            }
        }
    }

    #[test]
    fn a_source_route_is_followed_only_from_its_previous_node() {
        let q: Topology = "q:3".parse().unwrap();
        let route = [0, 1, 3, 7];
        let mut at = (NodeId(0), NodeId(1), source(&route, 1));
        let mut visited = vec![NodeId(0)];
        loop {
            let (from, me, packet) = at;
            visited.push(me);
            match hop(q, me, packet, from) {
                Action::Forward { to, packet } => at = (me, to, packet),
                Action::Deliver(_) => break,
                Action::Drop { reason, .. } => panic!("{reason:?}"),
            }
        }
        assert_eq!(visited, route.map(NodeId));
        let at = |me, from, path: &[u64], position| {
            reason(hop(q, NodeId(me), source(path, position), NodeId(from)))
        };
        assert_eq!(at(1, 5, &route, 1), Some("route_not_from_previous"));
        assert_eq!(at(0, 1, &route, 0), Some("route_not_from_previous"));
        assert_eq!(at(3, 0, &route, 1), Some("route_not_this_node"));
        assert_eq!(at(0, 7, &route, 4), Some("route_past_the_end"));
        assert_eq!(at(1, 0, &[0, 1, 2], 1), Some("route_not_a_neighbour"));
        assert_eq!(at(1, 0, &[0, 1, 9], 1), Some("route_not_a_neighbour"));
        let long = vec![0; max_route_len(q) + 1];
        assert_eq!(at(0, 0, &long, 1), Some("route_too_long"));
    }
}
