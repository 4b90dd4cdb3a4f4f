//! The flush bound B, counted as a daemon counts: a packet corrupted in a node's link buffer
//! makes at most B hops from that node (the hop out of it included) to the node where it ends,
//! delivered or dropped. [`cuberoute_protocol::flush_bound`] states B; here it is checked.
//!
//! * Guarded-action packets: every header a corruption can produce (every source, destination,
//!   Pd, turning point or none, pair of anchors) arriving at every node of Q_3..Q_6 and of every
//!   EH(s,t) with s+t <= 5, walked hop by hop with the front door's `hop`. Translations by an
//!   id with the c bit 0 are automorphisms of both families that the routing rule respects
//!   (it reads only differences of bits), so the arrival node is node 0 on Q_n and node 0 or
//!   node 1 (one of each type) on EH. The message index only takes part in one check at the
//!   first node, so index 0 stands for every valid one.
//! * Source routes: the position moves on by one per hop, so the bound is the longest route
//!   less one; a route of that length is followed to its end (the bound is met) and random
//!   routes never exceed it.

use cuberoute_protocol::{
    Action, Anchors, Header, NodeId, Packet, Route, RouteKind, SourceRoute, Topology, flush_bound,
    hop,
};
use proptest::prelude::*;

/// How many hops a packet makes from the node that corrupted it (`from`, one hop away from
/// `at`) to where it ends.
fn life(topology: Topology, mut at: NodeId, mut from: NodeId, mut packet: Packet<()>) -> u32 {
    let mut hops = 1;
    loop {
        match hop(topology, at, packet, from) {
            Action::Forward { to, packet: next } => {
                (from, at, packet) = (at, to, next);
                hops += 1;
            }
            Action::Deliver(_) | Action::Drop { .. } => return hops,
        }
        assert!(hops < 1000, "a packet that never ends");
    }
}

/// The longest life of any guarded header arriving at `at`, and one header that lives it.
fn longest_guarded_life(topology: Topology, at: NodeId) -> (u32, Header) {
    let from = topology
        .neighbours(at)
        .next()
        .expect("every node has neighbours");
    let (fa_max, fb_max) = match topology {
        Topology::Hypercube(q) => (q.n, 1),
        Topology::Exchanged(eh) => (eh.s, eh.t),
        _ => unreachable!("guarded topologies only"),
    };
    let nodes: Vec<NodeId> = topology.nodes().collect();
    let mut longest = (0, None);
    for &src in &nodes {
        for &dst in &nodes {
            for pd in topology.neighbours(dst) {
                for via in std::iter::once(None).chain(nodes.iter().copied().map(Some)) {
                    for fa in 0..fa_max as u8 {
                        for fb in 0..fb_max as u8 {
                            let header = Header {
                                src,
                                dst,
                                pd,
                                via,
                                anchors: Anchors { fa, fb },
                                index: 0,
                            };
                            let packet = Packet {
                                route: Route::Guarded(header),
                                message: (),
                            };
                            let hops = life(topology, at, from, packet);
                            if hops > longest.0 {
                                longest = (hops, Some(header));
                            }
                        }
                    }
                }
            }
        }
    }
    (longest.0, longest.1.expect("some header"))
}

#[test]
fn every_guarded_header_ends_within_the_bound() {
    let mut topologies: Vec<Topology> = (3..=6).map(|n| Topology::hypercube(n).unwrap()).collect();
    for s in 1..=4 {
        for t in 1..=5 - s {
            topologies.push(Topology::exchanged(s, t).unwrap());
        }
    }
    for t in topologies {
        let bound = flush_bound(t, RouteKind::Guarded);
        let arrivals: &[u64] = match t {
            Topology::Hypercube(_) => &[0],
            _ => &[0, 1],
        };
        let mut worst = 0;
        for &at in arrivals {
            let (hops, header) = longest_guarded_life(t, NodeId(at));
            assert!(
                hops <= bound,
                "{t}: a header arriving at {at} lives {hops} > B = {bound} hops: {header:?}"
            );
            worst = worst.max(hops);
        }
        println!("{t}: longest life {worst} hops, B = {bound}");
        // The bound is tight: some corruption lives B hops (B - 1 on EH(1,1), the smallest).
        assert!(worst + 1 >= bound, "{t}: B = {bound} is loose: {worst}");
    }
}

fn source(path: Vec<NodeId>, position: u16) -> Packet<()> {
    Packet {
        route: Route::Source(SourceRoute {
            path,
            position,
            index: 0,
            copies: 1,
        }),
        message: (),
    }
}

/// A walk of `len` nodes from 0 that goes back and forth over one edge.
fn back_and_forth(topology: Topology, len: usize) -> Vec<NodeId> {
    let other = topology.neighbours(NodeId(0)).next().unwrap();
    (0..len)
        .map(|i| if i % 2 == 0 { NodeId(0) } else { other })
        .collect()
}

#[test]
fn the_longest_source_route_meets_the_bound_and_a_longer_one_is_dropped() {
    for name in [
        "q:3",
        "q:6",
        "eh:2,2",
        "hhc:2",
        "mc:1,2",
        "rdn:ring3,1",
        "hhc:4",
    ] {
        let t: Topology = name.parse().unwrap();
        let bound = flush_bound(t, RouteKind::Source);
        let max = bound as usize + 1;
        let walk = back_and_forth(t, max);
        let (from, at) = (walk[0], walk[1]);
        assert_eq!(life(t, at, from, source(walk, 1)), bound, "{name}");
        let longer = back_and_forth(t, max + 1);
        assert_eq!(life(t, at, from, source(longer, 1)), 1, "{name}");
    }
}

proptest! {
    /// Any source route, at any position, arriving at any node from any neighbour: it ends
    /// within B hops.
    #[test]
    fn every_source_route_ends_within_the_bound(
        name in prop::sample::select(vec!["q:4", "eh:1,2", "hhc:2", "rdn:ring3,1"]),
        walk in proptest::collection::vec(any::<prop::sample::Index>(), 0..80),
        position in 0u16..90,
        at in any::<prop::sample::Index>(),
    ) {
        let t: Topology = name.parse().unwrap();
        // Mostly walks of the topology (which the checks follow far), from a random node.
        let nodes: Vec<NodeId> = t.nodes().collect();
        let mut path = vec![nodes[at.index(nodes.len())]];
        for step in &walk {
            let last = *path.last().unwrap();
            let neighbours: Vec<NodeId> = t.neighbours(last).collect();
            path.push(neighbours[step.index(neighbours.len())]);
        }
        let position = position.min(path.len() as u16);
        let at = path.get(usize::from(position)).copied().unwrap_or(path[0]);
        // Mostly from the route's previous node, so that the packet is followed.
        let from = usize::from(position)
            .checked_sub(1)
            .and_then(|p| path.get(p).copied())
            .filter(|&f| t.is_adjacent(f, at))
            .unwrap_or_else(|| t.neighbours(at).next().unwrap());
        prop_assert!(life(t, at, from, source(path, position)) <= flush_bound(t, RouteKind::Source));
    }
}
