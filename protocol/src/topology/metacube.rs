//! The metacube MC(k,m) (Li, Peng and Chu, *Disjoint Paths in Metacube*, §2; Bossard,
//! *Disjoint-path Routing in Hypercubes and their Variants*, §3.3): id layout, adjacency and
//! distance. Its disjoint-path algorithms are in `crate::paths::metacube`.
//!
//! A node is (c, M[2^k-1], ..., M[0]): the k-bit *class* c and 2^k fields of m bits. Its id puts
//! c in the leftmost k bits and M[i] at bit offset m*i (issue 7). Seed 002 writes the field
//! weights as 2^i; they are 2^{m*i} (pitfall 002-1 of docs/family-algorithms.md: in MC(2,2) the
//! node 0100111000 is node 56 = 48 + 8 of cluster {48, 52, 56, 60}). Edges, each flipping one
//! bit of the id:
//! - *cube edges*: flip one bit of M[c] (the node's own field; m of them);
//! - *cross edges*: flip one bit of c (k of them).
//!
//! Degree and connectivity k+m, diameter 2^k(m+1). A *cluster* is the Q_m of nodes that differ
//! only in M[c]; the thesis's *k-cube* Q_k(u) is the Q_k of nodes that differ only in c.
//! k >= 1 (MC(0,m) is Q_m, for which seed 002's diameter formula is off by one) and
//! k + m*2^k <= 63.

use super::hhc::Hhc;
use super::node::NodeId;
use super::tour::{Walk, shortest_walk};

/// MC(k,m), k, m >= 1, k + m*2^k <= 63.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Metacube {
    pub k: u32,
    pub m: u32,
}

impl Metacube {
    pub const MAX_BITS: u32 = 63;

    /// `Some` when k, m >= 1 and the ids fit [`Metacube::MAX_BITS`] bits.
    pub fn new(k: u32, m: u32) -> Option<Metacube> {
        (k >= 1 && m >= 1 && k < 6 && k + (m << k) <= Self::MAX_BITS).then_some(Metacube { k, m })
    }

    /// h = 2^k, the number of classes and of fields.
    pub fn classes(self) -> u32 {
        1 << self.k
    }

    /// Bits of the fields, m * 2^k: the dimension of the thesis's cube level Q_{m 2^k}.
    pub fn field_bits(self) -> u32 {
        self.m << self.k
    }

    pub fn bits(self) -> u32 {
        self.field_bits() + self.k
    }

    pub fn node_count(self) -> u64 {
        1u64 << self.bits()
    }

    pub fn contains(self, v: NodeId) -> bool {
        v.0 >> self.bits() == 0
    }

    pub fn class(self, v: NodeId) -> u32 {
        (v.0 >> self.field_bits()) as u32
    }

    /// M[i] of `v`.
    pub fn field(self, v: NodeId, i: u32) -> u64 {
        (v.0 >> (self.m * i)) & self.field_mask()
    }

    /// The mask of one field, unshifted.
    pub fn field_mask(self) -> u64 {
        (1u64 << self.m) - 1
    }

    /// All the fields together: the thesis's k-cube id c-bar(v), a node of Q_{m 2^k}.
    pub fn fields(self, v: NodeId) -> u64 {
        v.0 & ((1u64 << self.field_bits()) - 1)
    }

    /// The id of class `c` with fields `fields`.
    pub fn node(self, c: u32, fields: u64) -> NodeId {
        NodeId((c as u64) << self.field_bits() | fields)
    }

    /// Bit position of bit `j` of field M[i].
    pub fn field_bit(self, i: u32, j: u32) -> u32 {
        self.m * i + j
    }

    /// Bit position of class bit `i`.
    pub fn class_bit(self, i: u32) -> u32 {
        self.field_bits() + i
    }

    /// Bits `v` may flip: its own field M[c] and the class.
    pub fn edge_mask(self, v: NodeId) -> u64 {
        self.field_mask() << (self.m * self.class(v)) | ((1u64 << self.k) - 1) << self.field_bits()
    }

    /// The shortest-path distance: the Hamming distance of the fields (cube edges) plus a shortest
    /// walk in the class cube Q_k from c_u to c_v through every class whose field differs
    /// ([`super::tour`]). Exact for k <= 4; for MC(5,1), exact when at most 16 fields differ, else
    /// an upper bound. Seed 002's Theorem 1 only bounds it: d <= H(u,v) - H_k(u,v) + 2^k.
    pub fn distance(self, u: NodeId, v: NodeId) -> Walk {
        let x = self.fields(u) ^ self.fields(v);
        let stops = (0..self.classes())
            .filter(|&i| (x >> (self.m * i)) & self.field_mask() != 0)
            .fold(0u64, |acc, i| acc | 1 << i);
        let walk = shortest_walk(self.class(u), self.class(v), stops);
        Walk {
            length: walk.length + x.count_ones(),
            exact: walk.exact,
        }
    }

    /// 2^k (m+1) (seed 002 Theorem 1; BFS in the tests).
    pub fn diameter(self) -> u32 {
        self.classes() * (self.m + 1)
    }

    /// k+m, the degree (seed 002 §4; max flow in the tests).
    pub fn connectivity(self) -> u32 {
        self.k + self.m
    }

    /// The id as `c.M[h-1]. ... .M[0]` in binary, as the papers write it: `01.00.00.01.11`.
    pub fn format(self, v: NodeId) -> String {
        let mut out = format!("{:0w$b}", self.class(v), w = self.k as usize);
        for i in (0..self.classes()).rev() {
            out += &format!(".{:0w$b}", self.field(v, i), w = self.m as usize);
        }
        out
    }
}

/// The isomorphism MC(k,1) = HHC_{2^k+k} (the thesis states MC(2,1) = HHC_6 in §6.3, in the
/// proof of Lemma 17; a unit test checks every edge for k = 1..3): the fields are the subcube id
/// and the class the processor id, so a cube edge (flip M[c]) is the external edge at processor
/// c and a cross edge an internal edge. Returns the HHC and the image of `v`.
pub fn hhc_isomorphism(mc: Metacube, v: NodeId) -> (Hhc, NodeId) {
    assert_eq!(mc.m, 1, "only MC(k,1) is an HHC");
    let h = Hhc { m: mc.k };
    (h, h.node(mc.fields(v), mc.class(v)))
}

/// The inverse of [`hhc_isomorphism`].
pub fn from_hhc(mc: Metacube, v: NodeId) -> NodeId {
    let h = Hhc { m: mc.k };
    mc.node(h.processor(v), h.subcube(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_weights_are_2_to_the_m_i() {
        // Pitfall 002-1: 0100111000 in MC(2,2) is node 56 of cluster {48, 52, 56, 60}.
        let mc = Metacube { k: 2, m: 2 };
        let v = NodeId(0b01_00_11_10_00);
        assert_eq!(mc.class(v), 1);
        assert_eq!(mc.field(v, 1), 0b10);
        let cluster: Vec<u64> = (0..4)
            .map(|x| mc.fields(v) & !(0b11 << 2) | x << 2)
            .collect();
        assert_eq!(cluster, [48, 52, 56, 60]);
        assert_eq!(mc.format(v), "01.00.11.10.00");
        assert_eq!(mc.node_count(), 1024);
        assert_eq!(mc.edge_mask(v), 0b11_00_00_11_00);
    }

    #[test]
    fn sizes_of_the_named_instances() {
        assert_eq!(Metacube::new(3, 3).unwrap().node_count(), 1 << 27);
        assert_eq!(Metacube::new(2, 3).unwrap().node_count(), 16384);
        assert!(Metacube::new(3, 8).is_none());
        assert!(Metacube::new(0, 3).is_none());
        assert_eq!(Metacube::new(5, 1).unwrap().bits(), 37);
    }
}
