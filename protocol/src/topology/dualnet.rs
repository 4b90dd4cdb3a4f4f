//! The recursive dual-net RDN^k(B) (Li, Peng and Chu, *Node-to-Set Disjoint-Paths Routing in
//! Recursive Dual-Net*, §2): id layout, adjacency and distance. Its disjoint-path algorithms are in
//! `crate::paths::dualnet`.
//!
//! RDN^0(B) = B, a symmetric base network with n_0 nodes, degree d_0 and diameter D_0. RDN^k(B)
//! has 2 n_{k-1} *clusters* (copies of RDN^{k-1}(B)), n_{k-1} of type 0 and n_{k-1} of type 1; a
//! node is a triple (b, x, y): type b, cluster id x and node id y, both ids of RDN^{k-1}(B). The
//! level-k *cross edge* joins (b, x, y) to (1-b, y, x): one edge between every cluster of type 0
//! and every cluster of type 1. n_k = 2 n_{k-1}^2, degree d_0 + k, diameter
//! D_k = 2^k D_0 + 2^{k+1} - 2 (Lemma 1).
//!
//! Ids (issue 7, the paper's lexicographic order): `id = b * n_{k-1}^2 + x * n_{k-1} + y`,
//! recursively, with base ids 0..n_0-1. So the id of a node inside its level-j cluster is
//! `id mod n_j`, and every edge of level j or below changes only that part.
//!
//! Bases: `ring3` (the 3-node ring of the paper's examples; n_0 = 3, d_0 = 2, D_0 = 1) and the
//! hypercubes `q2`, `q3`, `q4` of Table 1. Ids are `u64`: k <= 4 for ring3, q2 and q3
//! (RDN^4(Q_3) has exactly 2^63 nodes), k <= 3 for q4.
//!
//! Neighbour numbering follows the paper: u^(i) for 1 <= i <= d_0 are the neighbours in B (ring:
//! +1 then +2 mod 3; Q_d: bit 0, 1, ... flipped), u^(d_0+j) is the level-j cross neighbour.
//!
//! Distances are exact in closed form ([`DualNet::distance`]).

use super::bits::BitIter;
use super::node::NodeId;
use std::collections::VecDeque;

/// The base network B.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Base {
    /// The ring of three nodes (a triangle).
    Ring3,
    /// The hypercube Q_2 (a ring of four).
    Q2,
    Q3,
    Q4,
}

impl Base {
    pub const ALL: [Base; 4] = [Base::Ring3, Base::Q2, Base::Q3, Base::Q4];

    pub fn name(self) -> &'static str {
        match self {
            Base::Ring3 => "ring3",
            Base::Q2 => "q2",
            Base::Q3 => "q3",
            Base::Q4 => "q4",
        }
    }

    pub fn from_name(name: &str) -> Option<Base> {
        Self::ALL.into_iter().find(|b| b.name() == name)
    }

    /// n_0.
    pub fn nodes(self) -> u64 {
        match self {
            Base::Ring3 => 3,
            Base::Q2 => 4,
            Base::Q3 => 8,
            Base::Q4 => 16,
        }
    }

    /// d_0.
    pub fn degree(self) -> u32 {
        match self {
            Base::Ring3 | Base::Q2 => 2,
            Base::Q3 => 3,
            Base::Q4 => 4,
        }
    }

    /// D_0.
    pub fn diameter(self) -> u32 {
        match self {
            Base::Ring3 => 1,
            Base::Q2 => 2,
            Base::Q3 => 3,
            Base::Q4 => 4,
        }
    }

    /// Neighbour `i` (0-based, < d_0) of base node `y`.
    pub fn neighbour(self, y: u64, i: u32) -> u64 {
        match self {
            Base::Ring3 => (y + 1 + i as u64) % 3,
            _ => y ^ (1 << i),
        }
    }

    /// A shortest path in B from `a` to `b`, inclusive (ring: the direct edge; Q_d: ascending
    /// dimension order).
    pub fn shortest_path(self, a: u64, b: u64) -> Vec<u64> {
        match self {
            Base::Ring3 if a == b => vec![a],
            Base::Ring3 => vec![a, b],
            _ => {
                let mut path = vec![a];
                let mut at = a;
                for bit in BitIter(a ^ b) {
                    at ^= 1 << bit;
                    path.push(at);
                }
                path
            }
        }
    }

    /// The distance in B.
    pub fn distance(self, a: u64, b: u64) -> u32 {
        match self {
            Base::Ring3 => u32::from(a != b),
            _ => (a ^ b).count_ones(),
        }
    }

    /// The largest k whose node count fits a `u64` id.
    pub fn max_level(self) -> u32 {
        match self {
            Base::Q4 => 3,
            _ => 4,
        }
    }
}

/// RDN^k(B), 1 <= k <= [`Base::max_level`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct DualNet {
    pub base: Base,
    pub k: u32,
}

/// A node as the paper writes it: (type, cluster id, node id) at one level.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Triple {
    pub kind: u64,
    pub cluster: u64,
    pub node: u64,
}

impl DualNet {
    pub fn new(base: Base, k: u32) -> Option<DualNet> {
        (1..=base.max_level())
            .contains(&k)
            .then_some(DualNet { base, k })
    }

    /// n_j, the node count of RDN^j(B).
    pub fn nodes_at(self, level: u32) -> u64 {
        (0..level).fold(self.base.nodes(), |n, _| 2 * n * n)
    }

    pub fn node_count(self) -> u64 {
        self.nodes_at(self.k)
    }

    pub fn contains(self, v: NodeId) -> bool {
        v.0 < self.node_count()
    }

    /// Bits needed to write the largest id.
    pub fn bits(self) -> u32 {
        64 - (self.node_count() - 1).leading_zeros()
    }

    pub fn degree(self) -> u32 {
        self.base.degree() + self.k
    }

    /// D_k = 2^k D_0 + 2^{k+1} - 2 (Lemma 1; BFS in the tests).
    pub fn diameter_at(self, level: u32) -> u32 {
        (1 << level) * self.base.diameter() + (2 << level) - 2
    }

    pub fn diameter(self) -> u32 {
        self.diameter_at(self.k)
    }

    /// d_0 + k (the degree; Theorem 1's d_0 + k disjoint paths, max flow in the tests).
    pub fn connectivity(self) -> u32 {
        self.degree()
    }

    /// The triple of `v` at `level` (1 <= level <= k): `v`'s id inside its level-`level`
    /// cluster, split into type, cluster id and node id.
    pub fn triple(self, v: NodeId, level: u32) -> Triple {
        let n = self.nodes_at(level - 1);
        let y = v.0 % self.nodes_at(level);
        Triple {
            kind: y / (n * n),
            cluster: y / n % n,
            node: y % n,
        }
    }

    /// `v` with its level-`level` part replaced by `t`.
    pub fn with_triple(self, v: NodeId, level: u32, t: Triple) -> NodeId {
        let n = self.nodes_at(level - 1);
        let outer = v.0 - v.0 % self.nodes_at(level);
        NodeId(outer + t.kind * n * n + t.cluster * n + t.node)
    }

    /// The level-`level` cross neighbour of `v`: (b, x, y) -> (1-b, y, x).
    pub fn cross(self, v: NodeId, level: u32) -> NodeId {
        let t = self.triple(v, level);
        self.with_triple(
            v,
            level,
            Triple {
                kind: 1 - t.kind,
                cluster: t.node,
                node: t.cluster,
            },
        )
    }

    /// The paper's u^(i), 1 <= i <= d_0 + k.
    pub fn neighbour(self, v: NodeId, i: u32) -> NodeId {
        let d0 = self.base.degree();
        assert!((1..=d0 + self.k).contains(&i), "no neighbour u^({i})");
        if i <= d0 {
            let y = v.0 % self.base.nodes();
            NodeId(v.0 - y + self.base.neighbour(y, i - 1))
        } else {
            self.cross(v, i - d0)
        }
    }

    /// The neighbours u^(1), ..., u^(d_0+k), in that order.
    pub fn neighbours(self, v: NodeId) -> impl Iterator<Item = NodeId> {
        (1..=self.degree()).map(move |i| self.neighbour(v, i))
    }

    pub fn is_adjacent(self, u: NodeId, v: NodeId) -> bool {
        self.contains(u) && self.contains(v) && self.neighbours(u).any(|w| w == v)
    }

    /// The shortest-path distance, in closed form by recursion on the level: the length of
    /// RDN_routing's path (`crate::paths::dualnet::routing`). With u = (b, x, y) and v = (b', x',
    /// y') at level k and d the distance at level k-1:
    /// - same cluster: d(y, y');
    /// - different types: d(y, x') + 1 + d(x, y');
    /// - same type, different clusters: d(x, x') + d(y, y') + 2.
    ///
    /// Lemma 2 claims that Algorithm 1 is a shortest-path routing; its proof only justifies the
    /// bound (pitfall 003-6 of docs/family-algorithms.md), but the claim holds: a path that leaves
    /// a cluster and comes back pays at least four cross edges for what the triangle inequality
    /// gives inside, and one with more cross edges than the cases above pays two more for each
    /// extra pair. The tests compare this with BFS on every pair of RDN^1 and RDN^2 of ring3, q2
    /// and q3 (sampled sources for the larger ones).
    pub fn distance(self, u: NodeId, v: NodeId) -> u32 {
        self.distance_at(u.0, v.0, self.k)
    }

    fn distance_at(self, u: u64, v: u64, level: u32) -> u32 {
        if level == 0 {
            return self.base.distance(u, v);
        }
        let n = self.nodes_at(level - 1);
        let (bu, xu, yu) = (u / (n * n), u / n % n, u % n);
        let (bv, xv, yv) = (v / (n * n), v / n % n, v % n);
        let d = |a, b| self.distance_at(a, b, level - 1);
        if bu != bv {
            d(yu, xv) + 1 + d(xu, yv)
        } else if xu == xv {
            d(yu, yv)
        } else {
            d(xu, xv) + d(yu, yv) + 2
        }
    }

    /// BFS distances from `src` to every node (only for small networks).
    pub fn bfs(self, src: NodeId) -> Vec<u32> {
        let mut dist = vec![u32::MAX; self.node_count() as usize];
        dist[src.0 as usize] = 0;
        let mut queue = VecDeque::from([src]);
        while let Some(u) = queue.pop_front() {
            for w in self.neighbours(u) {
                if dist[w.0 as usize] == u32::MAX {
                    dist[w.0 as usize] = dist[u.0 as usize] + 1;
                    queue.push_back(w);
                }
            }
        }
        dist
    }

    /// The id as the paper writes it: `(1,(1,0,0),(0,2,2))`.
    pub fn format(self, v: NodeId) -> String {
        self.format_at(v.0, self.k)
    }

    fn format_at(self, id: u64, level: u32) -> String {
        if level == 0 {
            return id.to_string();
        }
        let n = self.nodes_at(level - 1);
        format!(
            "({},{},{})",
            id / (n * n),
            self.format_at(id / n % n, level - 1),
            self.format_at(id % n, level - 1)
        )
    }

    /// Read the paper's nested-triple form back (spaces allowed). `None` if it is malformed or
    /// out of range at any level.
    pub fn parse_triple(self, text: &str) -> Option<NodeId> {
        let cleaned: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let mut rest = cleaned.as_str();
        let id = self.parse_at(&mut rest, self.k)?;
        rest.is_empty().then_some(NodeId(id))
    }

    fn parse_at(self, rest: &mut &str, level: u32) -> Option<u64> {
        if level == 0 {
            let end = rest
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len());
            let id: u64 = rest[..end].parse().ok()?;
            *rest = &rest[end..];
            return (id < self.base.nodes()).then_some(id);
        }
        let n = self.nodes_at(level - 1);
        *rest = rest.strip_prefix('(')?;
        let b = self.parse_at_digit(rest)?;
        *rest = rest.strip_prefix(',')?;
        let x = self.parse_at(rest, level - 1)?;
        *rest = rest.strip_prefix(',')?;
        let y = self.parse_at(rest, level - 1)?;
        *rest = rest.strip_prefix(')')?;
        (b <= 1).then_some(b * n * n + x * n + y)
    }

    fn parse_at_digit(self, rest: &mut &str) -> Option<u64> {
        let c = rest.chars().next()?;
        *rest = &rest[1..];
        c.to_digit(10).map(u64::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_follow_the_paper() {
        // §2: the id of (1,1,2) in RDN^1(B(3)) is 1*9 + 1*3 + 2 = 14.
        let r = DualNet::new(Base::Ring3, 1).unwrap();
        assert_eq!(r.parse_triple("(1,1,2)"), Some(NodeId(14)));
        assert_eq!(r.format(NodeId(14)), "(1,1,2)");
        assert_eq!(r.cross(NodeId(14), 1), r.parse_triple("(0,2,1)").unwrap());
        let r2 = DualNet::new(Base::Ring3, 2).unwrap();
        let t4 = r2.parse_triple("(1, (1,1,1), (0,2,2))").unwrap();
        assert_eq!(r2.format(t4), "(1,(1,1,1),(0,2,2))");
        assert_eq!(r2.parse_triple("(2,(1,1,1),(0,2,2))"), None);
        assert_eq!(r2.parse_triple("(1,(1,1,1),(0,2,3))"), None);
        assert_eq!(r2.parse_triple("(1,(1,1,1),(0,2,2)"), None);
    }

    #[test]
    fn neighbours_of_example_1_source() {
        // Seed 003, Example 1: s = (0,(0,0,0),(0,0,0)) in RDN^2(B(3)); s^(1..3) lie in C_s,
        // s^(4) = (1,(0,0,0),(0,0,0)).
        let r = DualNet::new(Base::Ring3, 2).unwrap();
        let s = NodeId(0);
        let names: Vec<String> = r.neighbours(s).map(|v| r.format(v)).collect();
        assert_eq!(
            names,
            [
                "(0,(0,0,0),(0,0,1))",
                "(0,(0,0,0),(0,0,2))",
                "(0,(0,0,0),(1,0,0))",
                "(1,(0,0,0),(0,0,0))"
            ]
        );
        // Their level-2 partners are the first three nodes of U after Stage 1.
        let u: Vec<String> = (1..=3)
            .map(|i| r.format(r.cross(r.neighbour(s, i), 2)))
            .collect();
        assert_eq!(
            u,
            [
                "(1,(0,0,1),(0,0,0))",
                "(1,(0,0,2),(0,0,0))",
                "(1,(1,0,0),(0,0,0))"
            ]
        );
    }

    #[test]
    fn table_1_node_counts() {
        let count = |b, k| DualNet { base: b, k }.node_count();
        assert_eq!(count(Base::Q3, 1), 128);
        assert_eq!(count(Base::Q3, 2), 32_768);
        assert_eq!(count(Base::Q4, 1), 512);
        assert_eq!(count(Base::Q4, 2), 524_288);
        // §2: RDN^k of the 3-ring.
        assert_eq!(count(Base::Ring3, 1), 18);
        assert_eq!(count(Base::Ring3, 2), 648);
        assert_eq!(count(Base::Ring3, 3), 839_808);
        assert_eq!(count(Base::Q3, 4), 1 << 63);
        assert_eq!(DualNet::new(Base::Ring3, 3).unwrap().diameter(), 22);
        assert!(DualNet::new(Base::Q4, 4).is_none());
    }
}
