//! An independent checker for the tests: graphs built from the definitions, BFS, max flow, a
//! path-set checker and an exact brute-force search of L*. Nothing here calls the constructor or
//! the topology module of the crate, so a bug there cannot hide itself.
#![allow(dead_code)]

pub mod families;

use std::collections::VecDeque;

/// A graph given by its definition.
#[derive(Clone, Copy, Debug)]
pub enum Graph {
    Q(u32),
    Eh(u32, u32),
}

impl Graph {
    pub fn name(self) -> String {
        match self {
            Graph::Q(n) => format!("q:{n}"),
            Graph::Eh(s, t) => format!("eh:{s},{t}"),
        }
    }

    pub fn nodes(self) -> u64 {
        match self {
            Graph::Q(n) => 1 << n,
            Graph::Eh(s, t) => 1 << (s + t + 1),
        }
    }

    /// Neighbours from the definition: Q_n flips any bit; in EH(s,t) (seed 004 §II) a node with
    /// c = 0 flips an `a` bit (the s bits above the t+1 low bits), a node with c = 1 flips a `b`
    /// bit (bits 1..=t), and every node flips c.
    pub fn neighbours(self, v: u64) -> Vec<u64> {
        match self {
            Graph::Q(n) => (0..n).map(|i| v ^ 1 << i).collect(),
            Graph::Eh(s, t) => {
                let mut out: Vec<u64> = if v & 1 == 0 {
                    (0..s).map(|i| v ^ 1 << (t + 1 + i)).collect()
                } else {
                    (0..t).map(|j| v ^ 1 << (1 + j)).collect()
                };
                out.push(v ^ 1);
                out
            }
        }
    }

    /// Adjacency from the same definition, without building neighbour lists.
    pub fn adjacent(self, u: u64, v: u64) -> bool {
        let x = u ^ v;
        if x.count_ones() != 1 || u >= self.nodes() || v >= self.nodes() {
            return false;
        }
        match self {
            Graph::Q(_) => true,
            Graph::Eh(s, t) => {
                let bit = x.trailing_zeros();
                bit == 0
                    || (u & 1 == 0 && bit > t && bit <= s + t)
                    || (u & 1 == 1 && (1..=t).contains(&bit))
            }
        }
    }

    /// Distance from the definition, for graphs too large for BFS: the closed form of
    /// docs/protocol.md ("Topologies and ids"), which the exhaustive tests check against BFS.
    pub fn distance(self, u: u64, v: u64) -> u32 {
        match self {
            Graph::Q(_) => (u ^ v).count_ones(),
            Graph::Eh(_, t) => {
                let x = u ^ v;
                let ha = (x >> (t + 1)).count_ones();
                let hb = ((x >> 1) & ((1 << t) - 1)).count_ones();
                match (u & 1, v & 1) {
                    (0, 0) if hb == 0 => ha,
                    (1, 1) if ha == 0 => hb,
                    (a, b) if a == b => ha + hb + 2,
                    _ => ha + hb + 1,
                }
            }
        }
    }

    /// k(u,v) as docs/protocol.md states it (max flow in the exhaustive tests).
    pub fn k(self, u: u64, v: u64) -> usize {
        match self {
            Graph::Q(n) => n as usize,
            Graph::Eh(s, t) => match (u & 1, v & 1) {
                (0, 0) => s as usize + 1,
                (1, 1) => t as usize + 1,
                _ => s.min(t) as usize + 1,
            },
        }
    }

    pub fn bfs(self, src: u64) -> Vec<u32> {
        let mut dist = vec![u32::MAX; self.nodes() as usize];
        dist[src as usize] = 0;
        let mut queue = VecDeque::from([src]);
        while let Some(u) = queue.pop_front() {
            for w in self.neighbours(u) {
                if dist[w as usize] == u32::MAX {
                    dist[w as usize] = dist[u as usize] + 1;
                    queue.push_back(w);
                }
            }
        }
        dist
    }

    /// The number of internally node-disjoint src-dst paths ([`node_split_max_flow`]).
    pub fn max_flow(self, src: u64, dst: u64) -> u32 {
        node_split_max_flow(self.nodes(), |v| self.neighbours(v), src, dst)
    }

    /// Check that `paths` are `k` valid, simple, internally node-disjoint src-dst paths.
    pub fn check_paths(
        self,
        src: u64,
        dst: u64,
        paths: &[Vec<u64>],
        k: usize,
    ) -> Result<(), String> {
        if paths.len() != k {
            return Err(format!("{} paths, expected {k}", paths.len()));
        }
        let mut inner: Vec<u64> = Vec::new();
        for path in paths {
            if path.first() != Some(&src) || path.last() != Some(&dst) {
                return Err(format!("path {path:?} does not run from {src} to {dst}"));
            }
            for pair in path.windows(2) {
                if !self.adjacent(pair[0], pair[1]) {
                    return Err(format!(
                        "{} -> {} is not an edge in {path:?}",
                        pair[0], pair[1]
                    ));
                }
            }
            inner.extend(&path[1..path.len() - 1]);
        }
        let total = inner.len();
        inner.sort_unstable();
        inner.dedup();
        if inner.len() != total || inner.iter().any(|&v| v == src || v == dst) {
            return Err(format!(
                "paths share a node or revisit an endpoint: {paths:?}"
            ));
        }
        Ok(())
    }

    /// Check the node-to-node path set of a pair completely: `check_paths` with k from the
    /// definition, and the length bounds: Q_n exactly Saad-Schultz (h paths of length h, n-h of
    /// length h+2), EH(s,t) longest <= d+6.
    pub fn check_node_to_node(self, src: u64, dst: u64, paths: &[Vec<u64>]) -> Result<(), String> {
        self.check_paths(src, dst, paths, self.k(src, dst))?;
        let h = self.distance(src, dst);
        let mut lengths: Vec<u32> = paths.iter().map(|p| p.len() as u32 - 1).collect();
        lengths.sort_unstable();
        match self {
            Graph::Q(n) => {
                let mut optimal = vec![h; h as usize];
                optimal.extend(vec![h + 2; (n - h) as usize]);
                if lengths != optimal {
                    return Err(format!(
                        "lengths {lengths:?}, Saad-Schultz says {optimal:?}"
                    ));
                }
            }
            Graph::Eh(..) if *lengths.last().unwrap() > h + 6 => {
                return Err(format!("lengths {lengths:?} exceed d + 6 = {}", h + 6));
            }
            Graph::Eh(..) => {}
        }
        Ok(())
    }

    /// L*: the smallest L such that k internally disjoint src-dst paths of length <= L exist.
    /// Enumerates every simple path of length <= L (pruned by BFS distance to dst) and searches
    /// for k with disjoint interiors. Exponential; for graphs of at most 128 nodes and small L.
    pub fn l_star(self, src: u64, dst: u64, k: usize) -> u32 {
        assert!(self.nodes() <= 128);
        let to_dst = self.bfs(dst);
        let d = to_dst[src as usize];
        let firsts = self.neighbours(src);
        for limit in d.. {
            let mut by_first: Vec<Vec<u128>> = vec![Vec::new(); firsts.len()];
            for (slot, &first) in firsts.iter().enumerate() {
                if first == dst {
                    by_first[slot].push(0);
                    continue;
                }
                if 1 + to_dst[first as usize] > limit {
                    continue;
                }
                let mut stack = vec![(first, 1u128 << first, 1u32)];
                while let Some((u, mask, len)) = stack.pop() {
                    for w in self.neighbours(u) {
                        if w == dst {
                            by_first[slot].push(mask);
                        } else if w != src
                            && mask >> w & 1 == 0
                            && len + 1 + to_dst[w as usize] <= limit
                        {
                            stack.push((w, mask | 1 << w, len + 1));
                        }
                    }
                }
            }
            if pick_disjoint(&by_first, 0, 0, k) {
                return limit;
            }
        }
        unreachable!()
    }
}

fn pick_disjoint(by_first: &[Vec<u128>], slot: usize, used: u128, k: usize) -> bool {
    if k == 0 {
        return true;
    }
    if by_first.len() - slot < k {
        return false;
    }
    by_first[slot]
        .iter()
        .any(|&mask| mask & used == 0 && pick_disjoint(by_first, slot + 1, used | mask, k - 1))
        || pick_disjoint(by_first, slot + 1, used, k)
}

/// Every Q_n and EH(s,t) of the exhaustive tests.
pub fn small_graphs(max_q: u32, max_st: u32) -> Vec<Graph> {
    let mut graphs: Vec<Graph> = (1..=max_q).map(Graph::Q).collect();
    for sum in 2..=max_st {
        for s in 1..sum {
            graphs.push(Graph::Eh(s, sum - s));
        }
    }
    graphs
}

/// Check a family of paths in Q_n: every path in range, edge by edge valid and simple, and no
/// node on two paths unless it is in `shared` (the source of a node-to-set family, the two ends
/// of a container). Returns the longest length.
pub fn check_family(n: u32, paths: &[Vec<u64>], shared: &[u64]) -> Result<usize, String> {
    let mut seen: Vec<u64> = Vec::new();
    let mut longest = 0;
    for path in paths {
        if path.is_empty() {
            return Err("empty path".into());
        }
        if let Some(v) = path.iter().find(|&&v| v >> n != 0) {
            return Err(format!("node {v} out of Q_{n} in {path:?}"));
        }
        for pair in path.windows(2) {
            if !Graph::Q(n).adjacent(pair[0], pair[1]) {
                return Err(format!(
                    "{} -> {} is not an edge in {path:?}",
                    pair[0], pair[1]
                ));
            }
        }
        let mut own = path.clone();
        own.sort_unstable();
        own.dedup();
        if own.len() != path.len() {
            return Err(format!("path {path:?} is not simple"));
        }
        seen.extend(path.iter().filter(|v| !shared.contains(v)));
        longest = longest.max(path.len() - 1);
    }
    let total = seen.len();
    seen.sort_unstable();
    seen.dedup();
    if seen.len() != total {
        return Err(format!("paths share a node: {paths:?}"));
    }
    Ok(longest)
}

/// Every k-subset of `items`, in lexicographic order of positions.
pub fn subsets<T: Copy>(items: &[T], k: usize, mut visit: impl FnMut(&[T])) {
    fn go<T: Copy>(
        items: &[T],
        k: usize,
        start: usize,
        cur: &mut Vec<T>,
        visit: &mut impl FnMut(&[T]),
    ) {
        if cur.len() == k {
            visit(cur);
            return;
        }
        for i in start..items.len() {
            if items.len() - i < k - cur.len() {
                break;
            }
            cur.push(items[i]);
            go(items, k, i + 1, cur, visit);
            cur.pop();
        }
    }
    go(items, k, 0, &mut Vec::with_capacity(k), &mut visit);
}

/// Max flow (internally disjoint paths) between two nodes of the subgraph of Q_n induced by the
/// nodes `keep` accepts, by BFS augmentation on the node-split graph.
pub fn induced_max_flow(n: u32, keep: impl Fn(u64) -> bool, src: u64, dst: u64) -> u32 {
    let nodes = 1usize << n;
    let mut head = vec![usize::MAX; 2 * nodes];
    let (mut to, mut cap, mut next) = (Vec::new(), Vec::new(), Vec::new());
    let mut add = |a: usize, b: usize, c: i32, head: &mut Vec<usize>| {
        for (x, y, c) in [(a, b, c), (b, a, 0)] {
            to.push(y);
            cap.push(c);
            next.push(head[x]);
            head[x] = to.len() - 1;
        }
    };
    for v in (0..nodes as u64).filter(|&v| keep(v)) {
        let inner = if v == src || v == dst {
            2 * n as i32
        } else {
            1
        };
        add(2 * v as usize, 2 * v as usize + 1, inner, &mut head);
        for w in Graph::Q(n).neighbours(v).into_iter().filter(|&w| keep(w)) {
            add(2 * v as usize + 1, 2 * w as usize, 1, &mut head);
        }
    }
    let (s, t) = (2 * src as usize + 1, 2 * dst as usize);
    let mut flow = 0;
    loop {
        let mut prev = vec![usize::MAX; 2 * nodes];
        let mut seen = vec![false; 2 * nodes];
        seen[s] = true;
        let mut queue = VecDeque::from([s]);
        while let Some(x) = queue.pop_front() {
            let mut e = head[x];
            while e != usize::MAX {
                if cap[e] > 0 && !seen[to[e]] {
                    seen[to[e]] = true;
                    prev[to[e]] = e;
                    queue.push_back(to[e]);
                }
                e = next[e];
            }
        }
        if !seen[t] {
            return flow;
        }
        let mut x = t;
        while x != s {
            let e = prev[x];
            cap[e] -= 1;
            cap[e ^ 1] += 1;
            x = to[e ^ 1];
        }
        flow += 1;
    }
}

/// The number of internally node-disjoint src-dst paths in the graph on nodes 0..n given by
/// `neighbours`: unit-capacity max flow on the node-split graph (each node becomes in -> out,
/// capacity 1), by BFS augmenting paths.
pub fn node_split_max_flow(
    n: u64,
    neighbours: impl Fn(u64) -> Vec<u64>,
    src: u64,
    dst: u64,
) -> u32 {
    let n = n as usize;
    // node v: in = 2v, out = 2v+1. Edge list with residual capacities.
    let mut head = vec![usize::MAX; 2 * n];
    let (mut to, mut cap, mut next) = (Vec::new(), Vec::new(), Vec::new());
    let mut add = |a: usize, b: usize, c: i32, head: &mut Vec<usize>| {
        for (x, y, c) in [(a, b, c), (b, a, 0)] {
            to.push(y);
            cap.push(c);
            next.push(head[x]);
            head[x] = to.len() - 1;
        }
    };
    for v in 0..n as u64 {
        add(2 * v as usize, 2 * v as usize + 1, 1, &mut head);
        for w in neighbours(v) {
            add(2 * v as usize + 1, 2 * w as usize, 1, &mut head);
        }
    }
    // From src's out to dst's in: their own in -> out arcs are never on a path.
    let (s, t) = (2 * src as usize + 1, 2 * dst as usize);
    let mut flow = 0;
    loop {
        let mut prev = vec![usize::MAX; 2 * n];
        let mut seen = vec![false; 2 * n];
        seen[s] = true;
        let mut queue = VecDeque::from([s]);
        while let Some(x) = queue.pop_front() {
            let mut e = head[x];
            while e != usize::MAX {
                if cap[e] > 0 && !seen[to[e]] {
                    seen[to[e]] = true;
                    prev[to[e]] = e;
                    queue.push_back(to[e]);
                }
                e = next[e];
            }
        }
        if !seen[t] {
            return flow;
        }
        let mut x = t;
        while x != s {
            let e = prev[x];
            cap[e] -= 1;
            cap[e ^ 1] += 1;
            x = to[e ^ 1];
        }
        flow += 1;
    }
}
