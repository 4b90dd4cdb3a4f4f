//! The exact fallback of the seed-topology algorithms: disjoint paths by minimum-cost flow on
//! the whole (small) graph.
//!
//! Where a paper's construction does not cover an instance (HHC with m = 1, MC(1,2) and MC(1,3) for
//! MC-N2S, ...; each algorithm's module says which), the algorithm calls this instead and says so
//! in its [`crate::paths::system::Construction`]. Every node is split into an entry and an exit
//! joined by a unit-capacity arc (terminals have none, so no path passes through a source or a
//! destination), every edge is a unit-capacity arc of cost 1, and successive shortest augmenting
//! paths (Bellman-Ford on the residual graph) give a flow of the required value if and only if the
//! disjoint paths exist, of minimum total length among all such path systems. It is exact in that
//! sense; it does not minimise the longest path.
//!
//! Only for topologies of at most [`MAX_NODES`] nodes: it materialises the graph.

use crate::paths::system::Path;
use crate::{NodeId, Topology};
use std::collections::{HashMap, VecDeque};

/// The largest topology the fallback materialises.
pub const MAX_NODES: u64 = 1 << 12;

/// k paths from `s` to `d`, internally disjoint, of minimum total length; `None` if they do not
/// exist or the topology is too large.
pub fn node_to_node(topology: Topology, s: NodeId, d: NodeId, k: usize) -> Option<Vec<Path>> {
    let mut paths = solve(topology, &[(s, k as u32)], &[(d, k as u32)])?;
    // One path per unit of flow; the direct edge first if used.
    paths.sort_by_key(|p| p.len());
    Some(paths)
}

/// `paths[i]` from `s` to `dests[i]`, disjoint but for `s`, of minimum total length.
pub fn node_to_set(topology: Topology, s: NodeId, dests: &[NodeId]) -> Option<Vec<Path>> {
    let sinks: Vec<(NodeId, u32)> = dests.iter().map(|&d| (d, 1)).collect();
    let paths = solve(topology, &[(s, dests.len() as u32)], &sinks)?;
    let mut by_end: HashMap<NodeId, Path> =
        paths.into_iter().map(|p| (p[p.len() - 1], p)).collect();
    dests.iter().map(|d| by_end.remove(d)).collect()
}

/// `paths[i]` from `sources[i]` to some destination, all disjoint, of minimum total length.
pub fn set_to_set(topology: Topology, sources: &[NodeId], dests: &[NodeId]) -> Option<Vec<Path>> {
    let srcs: Vec<(NodeId, u32)> = sources.iter().map(|&v| (v, 1)).collect();
    let sinks: Vec<(NodeId, u32)> = dests.iter().map(|&v| (v, 1)).collect();
    let paths = solve(topology, &srcs, &sinks)?;
    let mut by_start: HashMap<NodeId, Path> = paths.into_iter().map(|p| (p[0], p)).collect();
    sources.iter().map(|s| by_start.remove(s)).collect()
}

struct Arc {
    to: usize,
    cap: i32,
    cost: i32,
}

struct Network {
    arcs: Vec<Arc>,
    out: Vec<Vec<usize>>,
}

impl Network {
    fn add(&mut self, from: usize, to: usize, cap: i32, cost: i32) {
        self.out[from].push(self.arcs.len());
        self.arcs.push(Arc { to, cap, cost });
        self.out[to].push(self.arcs.len());
        self.arcs.push(Arc {
            to: from,
            cap: 0,
            cost: -cost,
        });
    }

    /// One cheapest augmenting path from `s` to `t` (Bellman-Ford with a queue), pushed by one
    /// unit. `false` when `t` is unreachable.
    fn augment(&mut self, s: usize, t: usize) -> bool {
        let n = self.out.len();
        let mut dist = vec![i32::MAX; n];
        let mut via = vec![usize::MAX; n];
        let mut queued = vec![false; n];
        dist[s] = 0;
        let mut queue = VecDeque::from([s]);
        while let Some(u) = queue.pop_front() {
            queued[u] = false;
            for &a in &self.out[u] {
                let arc = &self.arcs[a];
                if arc.cap > 0 && dist[u] + arc.cost < dist[arc.to] {
                    dist[arc.to] = dist[u] + arc.cost;
                    via[arc.to] = a;
                    if !queued[arc.to] {
                        queued[arc.to] = true;
                        queue.push_back(arc.to);
                    }
                }
            }
        }
        if dist[t] == i32::MAX {
            return false;
        }
        let mut v = t;
        while v != s {
            let a = via[v];
            self.arcs[a].cap -= 1;
            self.arcs[a ^ 1].cap += 1;
            v = self.arcs[a ^ 1].to;
        }
        true
    }
}

/// Disjoint paths from the sources to the sinks (each with how many paths it starts or ends),
/// sources and sinks being terminals that no path passes through. `None` unless the flow
/// saturates every source.
fn solve(
    topology: Topology,
    sources: &[(NodeId, u32)],
    sinks: &[(NodeId, u32)],
) -> Option<Vec<Path>> {
    if topology.node_count() > MAX_NODES {
        return None;
    }
    let nodes: Vec<u64> = (0..topology.node_count()).collect();
    let raw = |v: &[(NodeId, u32)]| v.iter().map(|&(x, c)| (x.0, c)).collect::<Vec<_>>();
    let paths = min_cost_paths(
        &nodes,
        |v| topology.neighbours(NodeId(v)).map(|w| w.0).collect(),
        &raw(sources),
        &raw(sinks),
    )?;
    Some(
        paths
            .into_iter()
            .map(|p| p.into_iter().map(NodeId).collect())
            .collect(),
    )
}

/// Disjoint paths of minimum total length in any small graph, given by its node list and a
/// neighbour function (edges leaving `nodes` are ignored): from the sources to the sinks, each
/// terminal with how many paths it starts or ends; no path passes through a terminal. `None`
/// unless every source is saturated. The algorithms use it for small local problems (inside one
/// subcube of HHC, for instance).
pub fn min_cost_paths(
    nodes: &[u64],
    neighbours: impl Fn(u64) -> Vec<u64>,
    sources: &[(u64, u32)],
    sinks: &[(u64, u32)],
) -> Option<Vec<Vec<u64>>> {
    let n = nodes.len();
    let index: HashMap<u64, usize> = nodes.iter().enumerate().map(|(i, &v)| (v, i)).collect();
    let (src, sink) = (2 * n, 2 * n + 1);
    let entry = |v: usize| 2 * v;
    let exit = |v: usize| 2 * v + 1;
    let mut net = Network {
        arcs: Vec::new(),
        out: vec![Vec::new(); 2 * n + 2],
    };
    let source_cap: HashMap<u64, u32> = sources.iter().copied().collect();
    let sink_cap: HashMap<u64, u32> = sinks.iter().copied().collect();
    for (i, &v) in nodes.iter().enumerate() {
        if let Some(&c) = source_cap.get(&v) {
            net.add(src, exit(i), c as i32, 0);
        } else if let Some(&c) = sink_cap.get(&v) {
            net.add(entry(i), sink, c as i32, 0);
            continue;
        } else {
            net.add(entry(i), exit(i), 1, 0);
        }
        for w in neighbours(v) {
            if let Some(&j) = index.get(&w)
                && !source_cap.contains_key(&w)
            {
                net.add(exit(i), entry(j), 1, 1);
            }
        }
    }
    let want: u32 = sources.iter().map(|&(_, c)| c).sum();
    for _ in 0..want {
        if !net.augment(src, sink) {
            return None;
        }
    }
    // Decompose: from each source's exit, follow arcs that carry flow.
    let mut paths = Vec::new();
    for &(s, count) in sources {
        for _ in 0..count {
            let mut path = vec![s];
            let mut at = exit(*index.get(&s)?);
            loop {
                let next = net.out[at]
                    .iter()
                    .copied()
                    .find(|&a| a % 2 == 0 && net.arcs[a].to < 2 * n && net.arcs[a ^ 1].cap > 0)?;
                // Use this unit of flow once.
                net.arcs[next ^ 1].cap -= 1;
                let w = nodes[net.arcs[next].to / 2];
                path.push(w);
                if sink_cap.contains_key(&w) {
                    break;
                }
                at = exit(net.arcs[next].to / 2);
            }
            paths.push(path);
        }
    }
    Some(paths)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_8_cycle_has_two_disjoint_paths() {
        let h: Topology = "hhc:1".parse().unwrap();
        let (s, d) = (NodeId(0), NodeId(0b11_0));
        let paths = node_to_node(h, s, d, 2).unwrap();
        assert_eq!(paths.len(), 2);
        assert!(paths.iter().all(|p| p.len() == 5));
        crate::paths::verify::check(
            h,
            crate::paths::verify::Shape::NodeToNode { s, d, k: 2 },
            &paths,
        )
        .unwrap();
        assert!(node_to_node(h, s, d, 3).is_none());
    }

    #[test]
    fn node_to_set_and_set_to_set_in_q3() {
        let q: Topology = "q:3".parse().unwrap();
        let dests = [NodeId(7), NodeId(1), NodeId(6)];
        let paths = node_to_set(q, NodeId(0), &dests).unwrap();
        let shape = crate::paths::verify::Shape::NodeToSet {
            s: NodeId(0),
            dests: &dests,
        };
        crate::paths::verify::check(q, shape, &paths).unwrap();
        // Minimum total length: 1 (to 1) + 2 (to 6) + 3 (to 7, avoiding 1 and 6).
        assert_eq!(paths.iter().map(|p| p.len() - 1).sum::<usize>(), 6);
        let srcs = [NodeId(0), NodeId(3)];
        let dsts = [NodeId(5), NodeId(6)];
        let paths = set_to_set(q, &srcs, &dsts).unwrap();
        let shape = crate::paths::verify::Shape::SetToSet {
            sources: &srcs,
            dests: &dsts,
        };
        crate::paths::verify::check(q, shape, &paths).unwrap();
    }
}
