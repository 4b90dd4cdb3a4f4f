//! The seed topologies of issue 7 from their definitions, for the tests: neighbours, BFS, max
//! flow, and checkers for node-to-set, set-to-set and node-to-node path systems. Written from
//! the papers, not from the crate's topology code, so that a bug there cannot hide itself.

use std::collections::{HashSet, VecDeque};

/// A seed topology, from its definition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// HHC_{2^m+m}: id = sigma << m | pi.
    Hhc(u32),
    /// MC(k,m): class in the top k bits, M[i] at offset m*i.
    Mc(u32, u32),
    /// RDN^k(B) with B = ring of 3 (`n0 = 3`) or Q_d (`n0 = 2^d`).
    Rdn(Base, u32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Base {
    Ring3,
    Q(u32),
}

impl Base {
    fn nodes(self) -> u64 {
        match self {
            Base::Ring3 => 3,
            Base::Q(d) => 1 << d,
        }
    }

    fn neighbours(self, y: u64) -> Vec<u64> {
        match self {
            Base::Ring3 => vec![(y + 1) % 3, (y + 2) % 3],
            Base::Q(d) => (0..d).map(|i| y ^ 1 << i).collect(),
        }
    }
}

impl Family {
    /// The name `cuberoute` uses for it.
    pub fn name(self) -> String {
        match self {
            Family::Hhc(m) => format!("hhc:{m}"),
            Family::Mc(k, m) => format!("mc:{k},{m}"),
            Family::Rdn(Base::Ring3, k) => format!("rdn:ring3,{k}"),
            Family::Rdn(Base::Q(d), k) => format!("rdn:q{d},{k}"),
        }
    }

    pub fn topology(self) -> cuberoute_protocol::Topology {
        self.name().parse().unwrap()
    }

    pub fn nodes(self) -> u64 {
        match self {
            Family::Hhc(m) => 1 << ((1 << m) + m),
            Family::Mc(k, m) => 1 << (k + (m << k)),
            Family::Rdn(b, k) => (0..k).fold(b.nodes(), |n, _| 2 * n * n),
        }
    }

    /// The degree (every family is regular): m+1, k+m, d_0+k.
    pub fn degree(self) -> usize {
        match self {
            Family::Hhc(m) => m as usize + 1,
            Family::Mc(k, m) => (k + m) as usize,
            Family::Rdn(b, k) => b.neighbours(0).len() + k as usize,
        }
    }

    pub fn neighbours(self, v: u64) -> Vec<u64> {
        match self {
            Family::Hhc(m) => {
                // Internal: same sigma, pi one bit apart. External: sigma xor 2^pi, same pi.
                let pi = v & ((1 << m) - 1);
                let mut out: Vec<u64> = (0..m).map(|j| v ^ 1 << j).collect();
                out.push(v ^ 1 << (m as u64 + pi));
                out
            }
            Family::Mc(k, m) => {
                // Cube edges flip a bit of M[c]; cross edges flip a bit of c.
                let c = v >> (m << k);
                let mut out: Vec<u64> =
                    (0..m).map(|j| v ^ 1 << (m as u64 * c + j as u64)).collect();
                out.extend((0..k).map(|i| v ^ 1 << ((m << k) + i)));
                out
            }
            Family::Rdn(b, k) => rdn_neighbours(b, k, v),
        }
    }

    pub fn adjacent(self, u: u64, v: u64) -> bool {
        if u >= self.nodes() || v >= self.nodes() {
            return false;
        }
        let x = u ^ v;
        match self {
            // The bit-flip families, straight from the edge definitions.
            Family::Hhc(m) => {
                let bit = x.trailing_zeros() as u64;
                x.count_ones() == 1 && (bit < m as u64 || bit == m as u64 + (u & ((1 << m) - 1)))
            }
            Family::Mc(k, m) => {
                let bit = x.trailing_zeros() as u64;
                let c = u >> (m << k);
                x.count_ones() == 1 && (bit >= (m << k) as u64 || bit / m as u64 == c)
            }
            Family::Rdn(..) => self.neighbours(u).contains(&v),
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

    /// Internally disjoint src-dst paths: unit-capacity max flow on the node-split graph.
    pub fn max_flow(self, src: u64, dst: u64) -> u32 {
        super::node_split_max_flow(self.nodes(), |v| self.neighbours(v), src, dst)
    }

    /// Each path valid (in range, consecutive nodes adjacent, no node twice). Returns the
    /// longest length.
    fn check_each(self, paths: &[Vec<u64>]) -> Result<usize, String> {
        let mut longest = 0;
        for p in paths {
            if p.is_empty() {
                return Err("empty path".into());
            }
            for w in p.windows(2) {
                if !self.adjacent(w[0], w[1]) {
                    return Err(format!(
                        "{} -> {} is not an edge of {}",
                        w[0],
                        w[1],
                        self.name()
                    ));
                }
            }
            let mut own = p.clone();
            own.sort_unstable();
            if own.windows(2).any(|w| w[0] == w[1]) {
                return Err(format!("path {p:?} is not simple"));
            }
            longest = longest.max(p.len() - 1);
        }
        Ok(longest)
    }

    /// `paths[i]` from `s` to `dests[i]`, sharing only `s`. Returns the longest length.
    pub fn check_node_to_set(
        self,
        s: u64,
        dests: &[u64],
        paths: &[Vec<u64>],
    ) -> Result<usize, String> {
        if paths.len() != dests.len() {
            return Err(format!(
                "{} paths for {} destinations",
                paths.len(),
                dests.len()
            ));
        }
        let longest = self.check_each(paths)?;
        let mut seen = Vec::new();
        for (p, &d) in paths.iter().zip(dests) {
            if p[0] != s || p[p.len() - 1] != d {
                return Err(format!("path {p:?} does not run from {s} to {d}"));
            }
            seen.extend_from_slice(&p[1..]);
        }
        no_repeat(seen)?;
        Ok(longest)
    }

    /// `paths[i]` from `sources[i]` to a distinct destination, no node shared.
    pub fn check_set_to_set(
        self,
        sources: &[u64],
        dests: &[u64],
        paths: &[Vec<u64>],
    ) -> Result<usize, String> {
        if paths.len() != sources.len() || sources.len() != dests.len() {
            return Err(format!("{} paths for {} pairs", paths.len(), sources.len()));
        }
        let longest = self.check_each(paths)?;
        let mut seen = HashSet::new();
        let mut ends = HashSet::new();
        for (p, &s) in paths.iter().zip(sources) {
            let last = p[p.len() - 1];
            if p[0] != s || !dests.contains(&last) || !ends.insert(last) {
                return Err(format!(
                    "path {p:?} does not run from {s} to a new destination"
                ));
            }
            for &v in p {
                if !seen.insert(v) {
                    return Err(format!("node {v} is on two paths"));
                }
            }
        }
        Ok(longest)
    }

    /// `k` paths from `s` to `d`, sharing only their ends.
    pub fn check_node_to_node(
        self,
        s: u64,
        d: u64,
        k: usize,
        paths: &[Vec<u64>],
    ) -> Result<usize, String> {
        if paths.len() != k {
            return Err(format!("{} paths, not k = {k}", paths.len()));
        }
        let longest = self.check_each(paths)?;
        let mut inner = Vec::new();
        let mut direct = 0;
        for p in paths {
            if p[0] != s || p[p.len() - 1] != d {
                return Err(format!("path {p:?} does not run from {s} to {d}"));
            }
            direct += usize::from(p.len() == 2);
            inner.extend_from_slice(&p[1..p.len() - 1]);
        }
        no_repeat(inner)?;
        if direct > 1 {
            return Err("the direct edge twice".into());
        }
        Ok(longest)
    }
}

/// `Err` if a node appears twice.
fn no_repeat(mut nodes: Vec<u64>) -> Result<(), String> {
    nodes.sort_unstable();
    match nodes.windows(2).find(|w| w[0] == w[1]) {
        Some(w) => Err(format!("node {} is on two paths", w[0])),
        None => Ok(()),
    }
}

/// RDN neighbours by the definition: decode the nested triples, take the base edges of the
/// innermost level and each level's cross edge (b, x, y) -> (1-b, y, x).
fn rdn_neighbours(b: Base, k: u32, v: u64) -> Vec<u64> {
    let sizes: Vec<u64> = (0..=k)
        .scan(b.nodes(), |n, _| {
            let here = *n;
            *n = 2 * *n * *n;
            Some(here)
        })
        .collect();
    let n0 = sizes[0];
    let mut out: Vec<u64> = b
        .neighbours(v % n0)
        .into_iter()
        .map(|y| v - v % n0 + y)
        .collect();
    for level in 1..=k {
        let (n, size) = (sizes[level as usize - 1], sizes[level as usize]);
        let inner = v % size;
        let outer = v - inner;
        let (bit, x, y) = (inner / (n * n), inner / n % n, inner % n);
        out.push(outer + (1 - bit) * n * n + y * n + x);
    }
    out
}

/// The smallest instances of each family, for exhaustive tests.
pub fn small_families() -> Vec<Family> {
    vec![
        Family::Hhc(1),
        Family::Hhc(2),
        Family::Hhc(3),
        Family::Mc(1, 1),
        Family::Mc(1, 2),
        Family::Mc(1, 3),
        Family::Mc(2, 1),
        Family::Mc(2, 2),
        Family::Mc(3, 1),
        Family::Rdn(Base::Ring3, 1),
        Family::Rdn(Base::Q(2), 1),
        Family::Rdn(Base::Q(3), 1),
        Family::Rdn(Base::Ring3, 2),
    ]
}

/// splitmix64, for reproducible random instances.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next() as u128 * n as u128) >> 64) as u64
    }

    /// `count` distinct values below `n`, none in `avoid`.
    pub fn distinct(&mut self, n: u64, count: usize, avoid: &[u64]) -> Vec<u64> {
        let mut out = Vec::with_capacity(count);
        while out.len() < count {
            let v = self.below(n);
            if !avoid.contains(&v) && !out.contains(&v) {
                out.push(v);
            }
        }
        out
    }
}
