//! The corrupted packets a configuration may hold: every header a corruption can produce, at
//! every node, come from a neighbour or from a node that is not one. Each node-valued field is
//! any node or one id that is none, the turning point none, any node or that id; each anchor
//! every valid value and one beyond. The index and the sender are read by one check each and by
//! nothing else (`guarded::decide`: `index < k(S, D)`, `from` a neighbour; the per-hop rule
//! reads neither), so an index that passes (0) and one that cannot (255), and one neighbour and
//! one other node, stand for all. Two such packets that make the same hops and end the same way
//! behave the same in every interleaving (a step depends on a packet only through what `hop`
//! decides for it), so one packet stands for each such class: what a configuration holds is a
//! choice of classes, each walked here once with the production `hop`.

use super::Ends;
use cuberoute_protocol::routing::guarded::Checks;
use cuberoute_protocol::routing::hop::hop_checked;
use cuberoute_protocol::{Action, Anchors, Header, NodeId, Packet, Route, Topology};
use std::collections::HashSet;

/// One class of corrupted packets: the packet that stands for it (where it waits, the node it
/// came from, its header), and how it goes when it is alone.
#[derive(Clone, Debug)]
pub struct Class {
    pub at: NodeId,
    pub from: NodeId,
    pub header: Header,
    /// The hops it makes from the node that corrupted it (`from`, the hop to `at` included) to
    /// where it ends, when no buffer is full on its way.
    pub life: u32,
    pub ends: Ends,
}

/// How far a packet is walked before it is taken to go on for ever (a mutant's loop).
pub fn walk_limit(bound: u32) -> u32 {
    4 * bound + 8
}

/// Every class of corrupted packets on `topology` under `checks`, in a fixed order.
pub fn classes(topology: Topology, checks: Checks, bound: u32) -> Vec<Class> {
    let headers = headers(topology);
    let mut seen = HashSet::new();
    let mut classes = Vec::new();
    for at in topology.nodes() {
        let neighbour = topology.neighbours(at).next();
        let stranger = topology
            .nodes()
            .find(|&v| v != at && !topology.is_adjacent(v, at));
        for from in neighbour.into_iter().chain(stranger) {
            for &header in &headers {
                let (hops, life, ends) = walk(topology, checks, bound, at, from, header);
                if seen.insert((at, hops, ends)) {
                    classes.push(Class {
                        at,
                        from,
                        header,
                        life,
                        ends,
                    });
                }
            }
        }
    }
    classes
}

/// Every header a corruption can produce, up to the index (see the module's comment).
fn headers(topology: Topology) -> Vec<Header> {
    let none = NodeId(topology.node_count());
    let ids: Vec<NodeId> = topology.nodes().chain([none]).collect();
    let vias: Vec<Option<NodeId>> = std::iter::once(None)
        .chain(ids.iter().copied().map(Some))
        .collect();
    let (fa_valid, fb_valid) = match topology {
        Topology::Hypercube(q) => (q.n as u8, 1),
        Topology::Exchanged(eh) => (eh.s as u8, eh.t as u8),
        _ => (0, 0),
    };
    let mut headers = Vec::new();
    for &src in &ids {
        for &dst in &ids {
            for &pd in &ids {
                for &via in &vias {
                    for fa in 0..=fa_valid {
                        for fb in 0..=fb_valid {
                            for index in [0, u8::MAX] {
                                let anchors = Anchors { fa, fb };
                                headers.push(Header {
                                    src,
                                    dst,
                                    pd,
                                    via,
                                    anchors,
                                    index,
                                });
                            }
                        }
                    }
                }
            }
        }
    }
    headers
}

/// Walk one packet alone from `at` (come from `from`) with `hop_checked`: the nodes it is
/// forwarded to, its life in hops (counted from `from`), and how it ends.
fn walk(
    topology: Topology,
    checks: Checks,
    bound: u32,
    mut at: NodeId,
    mut from: NodeId,
    header: Header,
) -> (Vec<NodeId>, u32, Ends) {
    let mut packet = Packet {
        route: Route::Guarded(header),
        message: (),
    };
    let mut hops = Vec::new();
    let mut life = 1;
    loop {
        let step = std::panic::catch_unwind(|| hop_checked(topology, at, packet, from, checks));
        let ends = match step {
            Err(_) => Ends::Panicked,
            Ok(Action::Forward { to, packet: next }) => {
                if life >= walk_limit(bound) {
                    return (hops, life, Ends::Walking);
                }
                hops.push(to);
                (from, at, packet) = (at, to, next);
                life += 1;
                continue;
            }
            Ok(Action::Deliver(p)) => Ends::delivered(topology, at, &p),
            Ok(Action::Drop { .. }) => Ends::Dropped,
        };
        return (hops, life, ends);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuberoute_protocol::{RouteKind, flush_bound};

    /// Under the production checks every class ends (delivered or dropped) within B, and the
    /// classes are distinct walks: no two of one node share their hops and their end.
    #[test]
    fn production_classes_end_within_the_bound_and_are_distinct() {
        for topology in ["q:3", "eh:1,1"] {
            let topology: Topology = topology.parse().unwrap();
            let bound = flush_bound(topology, RouteKind::Guarded);
            let classes = classes(topology, Checks::ALL, bound);
            assert!(!classes.is_empty());
            let mut walks = std::collections::HashSet::new();
            for c in &classes {
                assert!(c.life <= bound, "{topology}: {c:?}");
                assert!(
                    matches!(c.ends, Ends::Delivered { copy: true } | Ends::Dropped),
                    "{c:?}"
                );
                let (hops, life, ends) = walk(topology, Checks::ALL, bound, c.at, c.from, c.header);
                assert_eq!((life, ends), (c.life, c.ends));
                assert!(walks.insert((c.at, hops, ends)), "{c:?} twice");
            }
            // Some corrupted header is delivered as a copy, some dropped at once: both ends
            // are among the classes.
            assert!(
                classes
                    .iter()
                    .any(|c| c.ends == Ends::Dropped && c.life == 1)
            );
            assert!(
                classes
                    .iter()
                    .any(|c| matches!(c.ends, Ends::Delivered { copy: true }))
            );
        }
    }
}
