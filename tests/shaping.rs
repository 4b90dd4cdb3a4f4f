//! Network faults between real daemons in user space (issue 26): the daemons' link sockets
//! delay and duplicate datagrams as the chaos tooling asks (`cuberoute_cluster::ops::shaping`,
//! `daemon/src/shaper.rs`), on real processes over loopback.

mod common;

use common::{Cluster, json_lines};
use cuberoute_cluster::ops::shaping::{self, ShapeRule};
use cuberoute_cluster::{ClusterClient, ClusterDir};
use cuberoute_protocol::NodeId;
use cuberoute_protocol::wire::control::{Fault, Request, Response, ShaperCounters};
use serde_json::Value;
use std::collections::BTreeSet;

struct Shaping {
    runtime: tokio::runtime::Runtime,
    client: ClusterClient,
    nodes: Vec<NodeId>,
}

impl Shaping {
    fn new(cluster: &Cluster) -> Shaping {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let client = runtime
            .block_on(async { ClusterClient::open(&ClusterDir::new(cluster.path())) })
            .unwrap();
        let nodes = client.manifest.nodes.iter().map(|n| n.id).collect();
        Shaping {
            runtime,
            client,
            nodes,
        }
    }

    fn shape(&self, rule: ShapeRule) {
        self.runtime
            .block_on(shaping::shape(&self.client, &self.nodes, rule))
            .unwrap();
    }

    fn unshape(&self) {
        self.runtime
            .block_on(shaping::unshape(&self.client, &self.nodes))
            .unwrap();
    }

    fn inject(&self, node: u64, fault: Fault) -> String {
        match self
            .runtime
            .block_on(self.client.request(NodeId(node), &Request::Inject(fault)))
        {
            Ok(Response::Injected(done)) => done,
            other => panic!("{other:?}"),
        }
    }

    fn counters(&self, node: NodeId) -> ShaperCounters {
        match self
            .runtime
            .block_on(self.client.request(node, &Request::Status))
        {
            Ok(Response::Status(status)) => status.chaos.shaper,
            other => panic!("{other:?}"),
        }
    }
}

impl Drop for Shaping {
    fn drop(&mut self) {
        self.client.close();
    }
}

/// One set from 0 to 7 with a trace: each copy's (hops, latency in µs), by copy index.
fn send(cluster: &Cluster) -> Vec<(u64, u64)> {
    let out = cluster.ok(&[
        "send",
        "--from",
        "0",
        "--to",
        "7",
        "--message",
        "shaped",
        "--wait",
        "--timeout",
        "5s",
        "--json",
    ]);
    let report = &json_lines(&out)[0];
    let copies = report["copies"].as_array().unwrap();
    assert_eq!(copies.len(), 3, "{report}");
    copies
        .iter()
        .map(|c| {
            assert_eq!(c["delivered"], true, "{report}");
            (
                c["hops"].as_u64().unwrap(),
                c["latency_us"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// The smallest latency of each copy over `n` sets, with its hops.
fn fastest(cluster: &Cluster, n: usize) -> Vec<(u64, u64)> {
    let mut best = send(cluster);
    for _ in 1..n {
        for (b, s) in best.iter_mut().zip(send(cluster)) {
            assert_eq!(b.0, s.0, "a copy's path changed");
            b.1 = b.1.min(s.1);
        }
    }
    best
}

#[test]
fn a_delay_at_every_node_adds_its_delay_per_hop_and_is_removed() {
    let cluster = Cluster::up("q:3", "127.84.1.0");
    let shaping = Shaping::new(&cluster);
    let before = fastest(&cluster, 5);
    eprintln!("before: {before:?}");
    let rule = ShapeRule {
        delay_us: 20_000,
        ..ShapeRule::default()
    };
    let done = shaping.inject(0, Fault::Shape(rule.clone()));
    assert!(done.contains("daemon socket (user space)"), "{done}");
    assert!(done.contains("every destination"), "{done}");
    assert!(done.contains("delay 20 ms"), "{done}");
    shaping.shape(rule);
    for &node in &shaping.nodes {
        assert_eq!(shaping.counters(node).rules, 1, "node {node}");
    }
    let during = fastest(&cluster, 3);
    eprintln!("shaped 20 ms: {during:?}");
    // Each hop holds every datagram 20 ms: the delay alone is a bound. (Not the fastest copy
    // before plus the delay: what a copy takes besides the delay varies from set to set, and a
    // run once came 130 µs under that sum, 5,952 µs before and 65,822 µs shaped on 3 hops.)
    for ((hops, base), (_, shaped)) in before.iter().zip(&during) {
        assert!(
            *shaped >= hops * 20_000 && shaped > base,
            "{hops} hops: {base} µs before, {shaped} µs with 20 ms per hop"
        );
    }
    // Every node on a path held datagrams back, and lost none.
    for node in [0, 1, 2, 4] {
        let c = shaping.counters(NodeId(node));
        assert!(c.delayed > 0, "node {node}: {c:?}");
        assert!(c.dropped.is_empty(), "node {node}: {c:?}");
    }
    shaping.unshape();
    for &node in &shaping.nodes {
        assert_eq!(shaping.counters(node).rules, 0, "node {node}");
    }
    let after = fastest(&cluster, 5);
    eprintln!("after: {after:?}");
    for ((hops, base), (_, now)) in before.iter().zip(&after) {
        assert!(
            *now < base + 10_000 && *now < hops * 20_000,
            "{hops} hops: {base} µs before shaping, {now} µs after it was removed"
        );
    }
}

#[test]
fn duplicated_datagrams_reach_the_client_once() {
    let cluster = Cluster::up("q:3", "127.84.2.0");
    let shaping = Shaping::new(&cluster);
    shaping.shape(ShapeRule {
        duplicate_ppm: 1_000_000,
        ..ShapeRule::default()
    });
    let sets = 20;
    for _ in 0..sets {
        send(&cluster);
    }
    // Every copy once in the destination's output, nothing else.
    let out = cluster.ok(&["recv", "--node", "7", "--json"]);
    let entries: Vec<Value> = json_lines(&out);
    let copies: BTreeSet<(u64, u64)> = entries
        .iter()
        .map(|e| (e["seq"].as_u64().unwrap(), e["index"].as_u64().unwrap()))
        .collect();
    assert_eq!(entries.len(), 3 * sets, "{out}");
    assert_eq!(
        copies.len(),
        3 * sets,
        "a copy reached the client twice: {out}"
    );
    // Every node sent each datagram twice, and the daemons dropped no duplicate packet: QUIC
    // discarded the second copies.
    for &node in &shaping.nodes {
        let c = shaping.counters(node);
        assert!(c.duplicated > 0, "node {node}: {c:?}");
        assert!(c.dropped.is_empty(), "node {node}: {c:?}");
    }
    let status = cluster.status();
    for node in status["nodes"].as_array().unwrap() {
        let dropped = &node["counters"]["dropped"];
        assert!(dropped.get("duplicate").is_none(), "{node}");
    }
    shaping.unshape();
}
