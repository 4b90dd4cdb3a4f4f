//! Stabilization, shown in the round-based simulator (seed 004 §I), for both routing modes: the
//! guarded-action protocol on Q_n and EH(s,t), source routes on HHC, the metacube and the
//! recursive dual-net.
//!
//! * Inherent stabilization: corrupting every process's variables at every round changes
//!   nothing: same deliveries, same paths, same rounds.
//! * Stabilization: corrupting the routes of packets in flight, every corrupted packet is
//!   delivered or dropped within B = `flush_bound` hops of its last corruption (as a daemon
//!   counts: the hop that carried it to where it was corrupted included), and every other
//!   packet arrives untouched. The test reports which check dropped what.

// EH ids are written grouped a_b_c.
#![allow(clippy::unusual_byte_groupings)]

use cuberoute_protocol::routing::guarded;
use cuberoute_protocol::routing::sim::{Departed, Network};
use cuberoute_protocol::{
    Anchors, DropReason, Header, NodeId, Plan, Process, Route, SendRequest, SourceRoute, Topology,
    flush_bound,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;

/// A message: (source, destination, index, the round its set was input).
type Message = (u64, u64, usize, u64);

/// A busy workload: `sets` random message sets, input a few per round over the first rounds.
fn workload(topology: Topology, sets: usize, seed: u64) -> Vec<Vec<(NodeId, NodeId)>> {
    let mut rng = StdRng::seed_from_u64(seed);
    let n = topology.node_count();
    let mut rounds = vec![Vec::new(); sets.div_ceil(8)];
    for i in 0..sets {
        let src = NodeId(rng.random_range(0..n));
        let mut dst = NodeId(rng.random_range(0..n));
        while dst == src {
            dst = NodeId(rng.random_range(0..n));
        }
        rounds[i / 8].push((src, dst));
    }
    rounds
}

/// Run `workload`, calling `fault` on the network before every round.
fn run(
    topology: Topology,
    workload: &[Vec<(NodeId, NodeId)>],
    mut fault: impl FnMut(&mut Network<Message>, &mut StdRng),
) -> Vec<Departed<Message>> {
    let mut network = Network::with_all_processes(topology);
    let mut rng = StdRng::seed_from_u64(7);
    let mut round = 0;
    while round < workload.len() || !network.is_idle() {
        if let Some(inputs) = workload.get(round) {
            for &(src, dst) in inputs {
                let messages = (0..copies(topology, src, dst))
                    .map(|i| (src.0, dst.0, i, round as u64))
                    .collect();
                network.input(src, dst, messages).unwrap();
            }
        }
        fault(&mut network, &mut rng);
        network.round();
        round += 1;
        assert!(round < 10_000, "the network does not quiesce");
    }
    network.take_departed()
}

/// How many copies a node-to-node set from `src` to `dst` travels as.
fn copies(topology: Topology, src: NodeId, dst: NodeId) -> usize {
    SendRequest::to(dst).routes(topology, src).unwrap().k()
}

/// The k paths a node-to-node set takes, whichever way the topology routes it.
fn paths(topology: Topology, src: NodeId, dst: NodeId) -> Vec<Vec<NodeId>> {
    SendRequest::to(dst)
        .route_system(topology, src)
        .unwrap()
        .paths
}

fn expected(topology: Topology, work: &[Vec<(NodeId, NodeId)>]) -> usize {
    work.iter()
        .flatten()
        .map(|&(s, d)| copies(topology, s, d))
        .sum()
}

fn random_node(topology: Topology, rng: &mut StdRng) -> NodeId {
    NodeId(rng.random_range(0..topology.node_count()))
}

fn random_header(topology: Topology, rng: &mut StdRng) -> Header {
    Header {
        src: random_node(topology, rng),
        dst: random_node(topology, rng),
        pd: random_node(topology, rng),
        via: rng.random_bool(0.5).then(|| random_node(topology, rng)),
        anchors: Anchors {
            fa: rng.random(),
            fb: rng.random(),
        },
        index: rng.random(),
    }
}

/// Overwrite every variable of a process with random values.
fn corrupt_process(process: &mut Process, rng: &mut StdRng) {
    let t = process.topology;
    let vars = &mut process.vars;
    vars.k = rng.random();
    vars.cur_phase = rng.random();
    vars.pos_to_flip = rng.random_bool(0.5).then(|| rng.random());
    vars.map = (0..rng.random_range(0..8))
        .map(|_| Plan {
            first: random_node(t, rng),
            pd: random_node(t, rng),
            via: rng.random_bool(0.5).then(|| random_node(t, rng)),
            anchors: Anchors {
                fa: rng.random(),
                fb: rng.random(),
            },
        })
        .collect();
    vars.last_header = rng.random_bool(0.5).then(|| random_header(t, rng));
}

/// Guarded-action routing (the first four) and source routing (the last three).
const TOPOLOGIES: [&str; 7] = [
    "eh:2,2",
    "eh:3,2",
    "eh:1,3",
    "q:5",
    "hhc:2",
    "mc:1,2",
    "rdn:ring3,1",
];

#[test]
fn fault_free_runs_deliver_every_message_on_its_path_in_path_length_rounds() {
    for name in TOPOLOGIES {
        let t: Topology = name.parse().unwrap();
        let work = workload(t, 400, 1);
        let departed = run(t, &work, |_, _| {});
        assert_eq!(departed.len(), expected(t, &work), "{name}");
        for out in &departed {
            let (src, dst, index, start) = out.packet.message;
            assert_eq!(out.dropped, None, "{name}");
            assert_eq!(
                out.trace,
                paths(t, NodeId(src), NodeId(dst))[index],
                "{name}"
            );
            // Input in round start+1, hop h sent in round start+h.
            assert_eq!(out.round, start + out.hops() as u64, "{name}");
        }
    }
}

#[test]
fn corrupting_every_process_every_round_changes_nothing() {
    for name in TOPOLOGIES {
        let t: Topology = name.parse().unwrap();
        let work = workload(t, 400, 2);
        let clean = run(t, &work, |_, _| {});
        let mut corruptions = 0usize;
        let faulty = run(t, &work, |network, rng| {
            for process in network.processes_mut() {
                corrupt_process(process, rng);
                corruptions += 1;
            }
        });
        let key = |d: &Departed<Message>| (d.round, d.packet.message, d.trace.clone(), d.dropped);
        let clean: Vec<_> = clean.iter().map(key).collect();
        let faulty: Vec<_> = faulty.iter().map(key).collect();
        assert_eq!(
            clean, faulty,
            "{name}: corrupted process variables changed the run"
        );
        println!(
            "{name}: {corruptions} process corruptions, {} deliveries unchanged",
            clean.len()
        );
    }
}

/// A node id to corrupt a field with: mostly a node of the topology, sometimes anything.
fn corrupt_node(topology: Topology, rng: &mut StdRng) -> NodeId {
    if rng.random_bool(0.1) {
        NodeId(rng.random())
    } else {
        random_node(topology, rng)
    }
}

/// Corrupt one header field: mostly to another plausible value, sometimes to anything.
fn corrupt_header(topology: Topology, header: &mut Header, rng: &mut StdRng) {
    let node = |rng: &mut StdRng| corrupt_node(topology, rng);
    match rng.random_range(0..6) {
        0 => header.src = node(rng),
        1 => header.dst = node(rng),
        2 => header.pd = node(rng),
        3 => header.via = rng.random_bool(0.8).then(|| node(rng)),
        4 => {
            header.anchors = Anchors {
                fa: rng.random_range(0..8),
                fb: rng.random_range(0..8),
            }
        }
        _ => header.index = rng.random_range(0..8),
    }
}

/// Corrupt one field of a source route: a node of the path, the position, the index or the
/// copy count, or the path's length.
fn corrupt_source_route(topology: Topology, route: &mut SourceRoute, rng: &mut StdRng) {
    let node = |rng: &mut StdRng| corrupt_node(topology, rng);
    match rng.random_range(0..6) {
        0 if !route.path.is_empty() => {
            let at = rng.random_range(0..route.path.len());
            route.path[at] = node(rng);
        }
        1 => route.position = rng.random_range(0..route.path.len() as u16 + 2),
        2 => route.index = rng.random_range(0..8),
        3 => route.copies = rng.random_range(0..8),
        4 => {
            let extra = rng.random_range(1..6);
            route.path.extend((0..extra).map(|_| node(rng)));
        }
        _ => {
            let keep = rng.random_range(0..=route.path.len());
            route.path.truncate(keep);
        }
    }
}

fn corrupt_route(topology: Topology, route: &mut Route, rng: &mut StdRng) {
    match route {
        Route::Guarded(header) => corrupt_header(topology, header, rng),
        Route::Source(r) => corrupt_source_route(topology, r, rng),
    }
}

#[test]
fn corrupted_routes_are_flushed_within_the_bound() {
    for name in TOPOLOGIES {
        let t: Topology = name.parse().unwrap();
        let kind = SendRequest::to(NodeId(1))
            .routes(t, NodeId(0))
            .unwrap()
            .kind();
        let bound = flush_bound(t, kind) as usize;
        let work = workload(t, 1500, 3);
        let departed = run(t, &work, |network, rng| {
            for packet in network.in_flight_mut() {
                if rng.random_bool(0.03) {
                    corrupt_route(t, &mut packet.packet.route, rng);
                    packet.mark = Some(packet.trace.len());
                }
            }
        });
        assert_eq!(
            departed.len(),
            expected(t, &work),
            "{name}: a packet vanished"
        );

        let mut outcome: BTreeMap<&str, usize> = BTreeMap::new();
        let mut longest_after = 0;
        for out in &departed {
            let (src, dst, index, _) = out.packet.message;
            match out.mark {
                None => {
                    // Untouched traffic: delivered on its own path.
                    assert_eq!(out.dropped, None, "{name}: a clean packet was dropped");
                    assert_eq!(
                        out.trace,
                        paths(t, NodeId(src), NodeId(dst))[index],
                        "{name}"
                    );
                }
                Some(mark) => {
                    // The hops made after the corruption, and the one that brought it to the
                    // node where it was corrupted: a daemon corrupts a packet in the link
                    // buffer it leaves by, and counts that hop.
                    let after = out.trace.len() - mark + 1;
                    assert!(
                        after <= bound,
                        "{name}: a corrupted packet lived {after} > B = {bound} hops"
                    );
                    longest_after = longest_after.max(after);
                    let what = match out.dropped {
                        None if out.packet.route.dst() == Some(NodeId(dst))
                            && out.trace.last() == Some(&NodeId(dst)) =>
                        {
                            "delivered to its own destination"
                        }
                        None => "delivered elsewhere",
                        Some(reason) => reason.as_str(),
                    };
                    *outcome.entry(what).or_default() += 1;
                }
            }
        }
        let corrupted: usize = outcome.values().sum();
        assert!(
            corrupted > 100,
            "{name}: too few corruptions to mean anything"
        );
        println!(
            "{name}: {} packets, {corrupted} corrupted in flight, B = {bound}, longest life after corruption {longest_after} hops",
            departed.len()
        );
        for (what, count) in &outcome {
            println!("  {what:<34} {count:>6}");
        }
    }
}

#[test]
fn every_drop_reason_is_reachable() {
    // One handcrafted header per check, so that a check that never fires is noticed.
    let t: Topology = "eh:2,2".parse().unwrap();
    let set = paths(t, NodeId(0), NodeId(0b01_00_0));
    let path = &set[0];
    let (at, from) = (path[2], path[1]);
    let plans = cuberoute_protocol::map(t, NodeId(0), NodeId(0b01_00_0)).unwrap();
    let good = Header::for_plan(&plans[0], NodeId(0), NodeId(0b01_00_0), 0);
    type Corruption = Box<dyn Fn(&mut Header)>;
    let cases: [(DropReason, Corruption); 6] = [
        (DropReason::UnknownNode, Box::new(|h| h.pd = NodeId(99))),
        (DropReason::SourceIsDestination, Box::new(|h| h.src = h.dst)),
        (
            DropReason::PdNotNeighbour,
            Box::new(|h| h.pd = NodeId(0b11_11_1)),
        ),
        (DropReason::BadIndex, Box::new(|h| h.index = 3)),
        (DropReason::BadAnchor, Box::new(|h| h.anchors.fb = 2)),
        (
            DropReason::OverBudget,
            Box::new(move |h| h.via = Some(farthest_detour(t, at, h))),
        ),
    ];
    for (reason, corrupt) in cases {
        let mut header = good;
        corrupt(&mut header);
        assert_eq!(guarded::decide(t, at, &header, from), Err(reason));
    }
    assert_eq!(
        guarded::decide(t, at, &good, NodeId(31)),
        Err(DropReason::NotFromNeighbour)
    );
    assert!(guarded::decide(t, at, &good, from).is_ok());
    // A turning point in a Q_n header: the Q_n map never sets one.
    let q: Topology = "q:5".parse().unwrap();
    let plans = cuberoute_protocol::map(q, NodeId(0), NodeId(31)).unwrap();
    let mut header = Header::for_plan(&plans[0], NodeId(0), NodeId(31), 0);
    header.via = Some(NodeId(1));
    assert_eq!(
        guarded::decide(q, plans[0].first, &header, NodeId(0)),
        Err(DropReason::TurningPointOnHypercube)
    );
    // The source routes' reasons are reached in routing::hop's unit tests.
}

/// The turning point that makes the route from `at` longest.
fn farthest_detour(t: Topology, at: NodeId, header: &Header) -> NodeId {
    t.nodes()
        .max_by_key(|&w| t.distance(at, w) + t.distance(w, header.pd))
        .unwrap()
}
