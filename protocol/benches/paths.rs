//! Path construction per pair, against a generic max flow on the same pairs.
//!
//! * `plan`: the source's map, the k headers (what `input` computes);
//! * `paths`: the k full paths, by running `receive` hop by hop (what `cuberoute paths` prints);
//! * `maxflow`: petgraph's Dinic on the node-split graph, which finds k disjoint paths for any
//!   graph; the baseline, on EH(4,4) and EH(5,5) (2,048 nodes);
//! * `around`: the paths a source takes around one dead node, the middle of the pair's first
//!   path (`paths::live::around` from the unbroken paths, what a source computes once per
//!   destination while what it knows of dead links stays the same), beside `paths` of the same
//!   sizes.
//!
//! Each iteration handles the next pair of a fixed list of 1,024 random pairs.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use cuberoute_protocol::paths::live::{self, Faults};
use cuberoute_protocol::{NodeId, Topology, disjoint_paths, map};
use petgraph::algo::dinics;
use petgraph::graph::{DiGraph, NodeIndex};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::hint::black_box;

const PAIRS: usize = 1024;
const SIZES: [&str; 9] = [
    "eh:2,2", "eh:5,5", "eh:10,10", "eh:20,20", "eh:31,31", "q:8", "q:16", "q:32", "q:63",
];

fn pairs(t: Topology) -> Vec<(NodeId, NodeId)> {
    let mut rng = StdRng::seed_from_u64(42);
    let n = t.node_count();
    (0..PAIRS)
        .map(|_| {
            loop {
                let (a, b) = (rng.random_range(0..n), rng.random_range(0..n));
                if a != b {
                    break (NodeId(a), NodeId(b));
                }
            }
        })
        .collect()
}

fn construction(c: &mut Criterion) {
    for (group, full) in [("plan", false), ("paths", true)] {
        let mut g = c.benchmark_group(group);
        g.throughput(Throughput::Elements(1));
        for name in SIZES.iter().chain(&["eh:4,4"]) {
            let t: Topology = name.parse().unwrap();
            let pairs = pairs(t);
            let mut i = 0;
            g.bench_function(BenchmarkId::from_parameter(name), |b| {
                b.iter(|| {
                    let (src, dst) = pairs[i % PAIRS];
                    i += 1;
                    if full {
                        black_box(disjoint_paths(t, src, dst).unwrap());
                    } else {
                        black_box(map(t, src, dst).unwrap());
                    }
                })
            });
        }
        g.finish();
    }
}

/// The node-split graph: node v becomes v_in = 2v -> v_out = 2v+1 (capacity 1), and each edge
/// u-v becomes u_out -> v_in (capacity 1). Max flow from src_out to dst_in = k(src, dst).
fn split_graph(t: Topology) -> DiGraph<(), u32> {
    let mut g = DiGraph::with_capacity(2 * t.node_count() as usize, 0);
    for _ in 0..2 * t.node_count() {
        g.add_node(());
    }
    for v in t.nodes() {
        let (v_in, v_out) = (
            NodeIndex::new(2 * v.0 as usize),
            NodeIndex::new(2 * v.0 as usize + 1),
        );
        g.add_edge(v_in, v_out, 1);
        for w in t.neighbours(v) {
            g.add_edge(v_out, NodeIndex::new(2 * w.0 as usize), 1);
        }
    }
    g
}

fn maxflow(c: &mut Criterion) {
    let mut g = c.benchmark_group("maxflow");
    g.throughput(Throughput::Elements(1));
    g.sample_size(20);
    for name in ["eh:4,4", "eh:5,5"] {
        let t: Topology = name.parse().unwrap();
        let graph = split_graph(t);
        let pairs = pairs(t);
        let mut i = 0;
        g.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| {
                let (src, dst) = pairs[i % PAIRS];
                i += 1;
                let (s, d) = (
                    NodeIndex::new(2 * src.0 as usize + 1),
                    NodeIndex::new(2 * dst.0 as usize),
                );
                let (flow, _) = dinics(&graph, s, d);
                assert_eq!(flow, t.local_connectivity(src, dst));
                black_box(flow)
            })
        });
    }
    g.finish();
}

fn around(c: &mut Criterion) {
    let mut g = c.benchmark_group("around");
    g.throughput(Throughput::Elements(1));
    for name in ["eh:2,2", "eh:5,5", "q:8", "q:16"] {
        let t: Topology = name.parse().unwrap();
        let cases: Vec<_> = pairs(t)
            .into_iter()
            .map(|(src, dst)| {
                let start = disjoint_paths(t, src, dst).unwrap().paths;
                let mut faults = Faults::new();
                faults.node(start[0][start[0].len() / 2]);
                (src, dst, start, faults)
            })
            .filter(|(src, dst, _, faults)| !faults.is_dead(*src) && !faults.is_dead(*dst))
            .collect();
        let mut i = 0;
        g.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| {
                let (src, dst, start, faults) = &cases[i % cases.len()];
                i += 1;
                black_box(live::around(
                    t,
                    *src,
                    *dst,
                    faults,
                    (start, live::Kept::MayMove),
                    live::BUDGET,
                ))
            })
        });
    }
    g.finish();
}

criterion_group!(benches, construction, maxflow, around);
criterion_main!(benches);
