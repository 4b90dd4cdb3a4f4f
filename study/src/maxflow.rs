//! The generic baseline: node-disjoint paths by maximum flow (petgraph's Dinic) on the
//! node-split graph of *any* graph, then decomposed into paths. It knows nothing of hypercubes:
//! the caller gives the node set and the neighbour function, and which nodes are sources and
//! sinks. This is what a topology-agnostic router would do.

use petgraph::algo::dinics;
use petgraph::graph::{DiGraph, NodeIndex};
use std::collections::HashMap;

/// Disjoint paths from `sources` to `sinks` inside `nodes`, each terminal with how many paths may
/// leave or reach it. Sources and sinks are terminals: no path passes through them.
/// Paths share no other node. Returns the paths of a maximum flow, node ids from source to
/// sink.
pub fn disjoint_paths(
    nodes: &[u64],
    neighbours: impl Fn(u64) -> Vec<u64>,
    sources: &[(u64, u32)],
    sinks: &[(u64, u32)],
) -> Vec<Vec<u64>> {
    let index: HashMap<u64, usize> = nodes.iter().enumerate().map(|(i, &v)| (v, i)).collect();
    let mut g: DiGraph<(), u32> = DiGraph::with_capacity(2 * nodes.len() + 2, nodes.len() * 8);
    let (s, t) = (g.add_node(()), g.add_node(()));
    for _ in 0..2 * nodes.len() {
        g.add_node(());
    }
    let inn = |i: usize| NodeIndex::new(2 + 2 * i);
    let out = |i: usize| NodeIndex::new(3 + 2 * i);
    let source_cap: HashMap<u64, u32> = sources.iter().copied().collect();
    let sink_cap: HashMap<u64, u32> = sinks.iter().copied().collect();
    for (i, &v) in nodes.iter().enumerate() {
        if let Some(&c) = source_cap.get(&v) {
            g.add_edge(s, out(i), c);
        } else if let Some(&c) = sink_cap.get(&v) {
            g.add_edge(inn(i), t, c);
        } else {
            g.add_edge(inn(i), out(i), 1);
        }
        if sink_cap.contains_key(&v) {
            continue;
        }
        for w in neighbours(v) {
            if let Some(&j) = index.get(&w) {
                if !source_cap.contains_key(&w) {
                    g.add_edge(out(i), inn(j), 1);
                }
            }
        }
    }
    let (_, flows) = dinics(&g, s, t);
    // Decompose: follow edges that carry flow from s to t, using each once.
    let mut next: Vec<Vec<usize>> = vec![Vec::new(); g.node_count()];
    for e in g.edge_indices() {
        if flows[e.index()] > 0 {
            let (a, _) = g.edge_endpoints(e).unwrap();
            for _ in 0..flows[e.index()] {
                next[a.index()].push(e.index());
            }
        }
    }
    let mut paths = Vec::new();
    while let Some(e) = next[s.index()].pop() {
        let mut path = Vec::new();
        let mut at = g.raw_edges()[e].target().index();
        while at != t.index() {
            let e = next[at].pop().expect("flow is conserved");
            let to = g.raw_edges()[e].target();
            // An out-node stands for its node; a sink is seen only as an in-node.
            if at % 2 == 1 {
                path.push(nodes[(at - 3) / 2]);
            } else if to == t {
                path.push(nodes[(at - 2) / 2]);
            }
            at = to.index();
        }
        paths.push(path);
    }
    paths
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(n: u32) -> (Vec<u64>, impl Fn(u64) -> Vec<u64>) {
        ((0..1u64 << n).collect(), move |v: u64| {
            (0..n).map(|j| v ^ 1 << j).collect()
        })
    }

    #[test]
    fn node_to_node_in_q4_gives_four_paths() {
        let (nodes, nb) = q(4);
        let paths = disjoint_paths(&nodes, nb, &[(0, 4)], &[(15, 4)]);
        assert_eq!(paths.len(), 4);
        for p in &paths {
            assert_eq!((p[0], *p.last().unwrap()), (0, 15));
            assert!(p.windows(2).all(|w| (w[0] ^ w[1]).count_ones() == 1));
        }
    }

    #[test]
    fn set_to_set_and_node_to_set() {
        let (nodes, nb) = q(3);
        let paths = disjoint_paths(&nodes, &nb, &[(0, 1), (1, 1)], &[(6, 1), (7, 1)]);
        assert_eq!(paths.len(), 2);
        let paths = disjoint_paths(&nodes, &nb, &[(0, 3)], &[(3, 1), (5, 1), (6, 1)]);
        assert_eq!(paths.len(), 3);
        let mut inner: Vec<u64> = paths.iter().flat_map(|p| p[1..].to_vec()).collect();
        inner.sort_unstable();
        assert_eq!(inner.len(), 6, "{paths:?}");
        inner.dedup();
        assert_eq!(inner.len(), 6, "{paths:?}");
    }
}
