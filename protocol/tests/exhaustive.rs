//! Exhaustive tests on every ordered pair of Q_1..Q_10 and of every EH(s,t) with s+t <= 7,
//! against graphs built from the definitions (tests/common), BFS, max flow and brute-force L*.

mod common;

use common::{Graph, small_graphs};
use cuberoute_protocol::paths::optimum;
use cuberoute_protocol::routing::sim::Network;
use cuberoute_protocol::{NodeId, Topology, disjoint_paths, map};

fn topology(g: Graph) -> Topology {
    g.name().parse().unwrap()
}

fn as_u64(paths: &[Vec<NodeId>]) -> Vec<Vec<u64>> {
    paths
        .iter()
        .map(|p| p.iter().map(|v| v.0).collect())
        .collect()
}

/// Degrees, neighbours, adjacency, distance, diameter against the graph and BFS.
#[test]
fn topology_facts_match_bfs() {
    for g in small_graphs(10, 7) {
        let t = topology(g);
        assert_eq!(t.node_count(), g.nodes());
        let mut diameter = 0;
        for u in 0..g.nodes() {
            let mut expected = g.neighbours(u);
            expected.sort_unstable();
            let mut got: Vec<u64> = t.neighbours(NodeId(u)).map(|v| v.0).collect();
            got.sort_unstable();
            assert_eq!(got, expected, "{} neighbours of {u}", g.name());
            assert_eq!(t.degree(NodeId(u)) as usize, expected.len());
            let dist = g.bfs(u);
            for v in 0..g.nodes() {
                assert_eq!(
                    t.distance(NodeId(u), NodeId(v)),
                    dist[v as usize],
                    "{} d({u},{v})",
                    g.name()
                );
                assert_eq!(t.is_adjacent(NodeId(u), NodeId(v)), dist[v as usize] == 1);
                diameter = diameter.max(dist[v as usize]);
            }
        }
        assert_eq!(t.diameter(), diameter, "{} diameter", g.name());
    }
}

/// k(u,v) equals the max flow of the node-split graph; connectivity is its minimum.
#[test]
fn k_is_max_flow() {
    for g in small_graphs(6, 5) {
        let t = topology(g);
        let mut min = u32::MAX;
        for u in 0..g.nodes() {
            for v in (0..g.nodes()).filter(|&v| v != u) {
                let flow = g.max_flow(u, v);
                assert_eq!(
                    t.local_connectivity(NodeId(u), NodeId(v)),
                    flow,
                    "{} k({u},{v})",
                    g.name()
                );
                min = min.min(flow);
            }
        }
        assert_eq!(t.connectivity(), min, "{} connectivity", g.name());
    }
}

/// Every ordered pair: k valid, internally disjoint paths within the length bounds, each as
/// long as its plan says, and exactly the paths a whole simulated network routes.
#[test]
fn every_pair_gets_k_disjoint_paths_within_bounds() {
    for g in small_graphs(10, 7) {
        let t = topology(g);
        for src in 0..g.nodes() {
            // One network per source: every message set from it runs concurrently.
            let mut network: Network<u64> = Network::new(t);
            let mut expected = Vec::new();
            for dst in (0..g.nodes()).filter(|&dst| dst != src) {
                let (s, d) = (NodeId(src), NodeId(dst));
                let set = disjoint_paths(t, s, d).unwrap();
                let paths = as_u64(&set.paths);
                let k = g.k(src, dst);
                g.check_node_to_node(src, dst, &paths)
                    .unwrap_or_else(|e| panic!("{} {src} -> {dst}: {e}", g.name()));
                let plans = map(t, s, d).unwrap();
                assert!(plans.is_sorted_by_key(|plan| (plan.first.0 ^ src).trailing_zeros()));
                for (plan, path) in plans.iter().zip(&set.paths) {
                    assert_eq!(plan.length(t, d) as usize, path.len() - 1);
                }
                let messages: Vec<u64> = (0..k as u64).map(|i| dst << 8 | i).collect();
                network.input(s, d, messages).unwrap();
                expected.push(set);
            }
            let longest = expected.iter().map(|set| set.longest()).max().unwrap_or(0);
            network.run(longest as u64 + 2);
            assert!(network.is_idle());
            let departed = network.take_departed();
            assert_eq!(
                departed.len(),
                expected.iter().map(|set| set.k()).sum::<usize>()
            );
            for out in departed {
                assert_eq!(out.dropped, None);
                let (dst, index) = (out.packet.message >> 8, out.packet.message & 0xff);
                let set = expected.iter().find(|set| set.dst.0 == dst).unwrap();
                assert_eq!(out.packet.route.index() as u64, index);
                assert_eq!(
                    out.trace,
                    set.paths[index as usize],
                    "{} {src} -> {dst}",
                    g.name()
                );
                assert_eq!(
                    out.round as usize,
                    out.trace.len() - 1,
                    "arrival round = hops"
                );
            }
        }
    }
}

/// Every ordered pair of the EH(s,t) with s+t <= 4: the longest path equals the exact optimum
/// L*, found by brute force; the crate's own L* search agrees.
#[test]
fn longest_path_is_the_exact_optimum() {
    for g in small_graphs(0, 4) {
        let t = topology(g);
        let (mut pairs, mut optimal) = (0, 0);
        for src in 0..g.nodes() {
            for dst in (0..g.nodes()).filter(|&dst| dst != src) {
                let l_star = g.l_star(src, dst, g.k(src, dst));
                let set = disjoint_paths(t, NodeId(src), NodeId(dst)).unwrap();
                assert_eq!(optimum::l_star(t, NodeId(src), NodeId(dst)), Some(l_star));
                pairs += 1;
                if set.longest() == l_star {
                    optimal += 1;
                } else {
                    eprintln!(
                        "{} {src} -> {dst}: longest {} > L* {l_star}",
                        g.name(),
                        set.longest()
                    );
                }
            }
        }
        println!(
            "{}: longest = L* on {optimal} of {pairs} ordered pairs ({:.1}%)",
            g.name(),
            100.0 * optimal as f64 / pairs as f64
        );
        assert_eq!(
            optimal,
            pairs,
            "{}: the map misses L* on some pairs",
            g.name()
        );
    }
}
