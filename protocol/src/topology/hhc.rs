//! The perfect hierarchical hypercube HHC_{2^m+m} (Bossard, *Disjoint-path Routing in Hypercubes
//! and their Variants*, §3.2, after Malluhi and Bayoumi; also called the cube-connected cube): id
//! layout, adjacency and distance. Its disjoint-path algorithms are in `crate::paths::hhc`.
//!
//! A node is (sigma, pi): sigma is the 2^m-bit *subcube id*, pi the m-bit *processor id*. Its id
//! is `sigma << m | pi` (issue 7), so bit 0 of sigma is bit m of the id. Edges:
//! - *internal*: same sigma, pi differs in one bit (the subcube Q_m(sigma));
//! - *external*: same pi, sigma differs in bit pi.
//!
//! Both flip one bit of the id, so the family fits the crate's bit-flip model. Degree and
//! connectivity m+1, diameter 2^{m+1}; for m = 1 the graph is an 8-cycle. Contracting every
//! subcube gives the *cube level* Q_{2^m}, where the HHC algorithms do most of their work.
//!
//! **Id width.** m = 5 needs 32 + 5 = 37 bits and a cube level Q_32; m = 6 would need 70 bits
//! and a Q_64 cube level. Node ids are `u64` and the Q_n algorithms (`crate::paths::cube`) work on
//! `u64` addresses of at most 63 dimensions, so this crate stops at m = 5 ([`Hhc::MAX_M`]); the
//! study of appendix A (m = 3..9) is reproduced for m = 3..5
//! (docs/notes/2026-11-23-study-hhc-metacube.md).

use super::node::NodeId;
use super::tour::{Walk, shortest_walk};

/// HHC_{2^m+m}, 1 <= m <= [`Hhc::MAX_M`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Hhc {
    pub m: u32,
}

impl Hhc {
    /// The largest m whose ids fit a `u64` and whose cube level fits the Q_n algorithms.
    pub const MAX_M: u32 = 5;

    /// `Some` for 1 <= m <= [`Hhc::MAX_M`].
    pub fn new(m: u32) -> Option<Hhc> {
        (1..=Self::MAX_M).contains(&m).then_some(Hhc { m })
    }

    /// 2^m: the number of subcube-id bits, and the dimension of the cube level.
    pub fn cube_dimension(self) -> u32 {
        1 << self.m
    }

    pub fn bits(self) -> u32 {
        self.cube_dimension() + self.m
    }

    pub fn node_count(self) -> u64 {
        1u64 << self.bits()
    }

    pub fn contains(self, v: NodeId) -> bool {
        v.0 >> self.bits() == 0
    }

    /// Mask of the processor-id bits.
    pub fn processor_mask(self) -> u64 {
        (1u64 << self.m) - 1
    }

    /// sigma, the subcube id of `v`.
    pub fn subcube(self, v: NodeId) -> u64 {
        v.0 >> self.m
    }

    /// pi, the processor id of `v`.
    pub fn processor(self, v: NodeId) -> u32 {
        (v.0 & self.processor_mask()) as u32
    }

    pub fn node(self, sigma: u64, pi: u32) -> NodeId {
        NodeId(sigma << self.m | pi as u64)
    }

    /// The other end of `v`'s external edge: (sigma xor 2^pi, pi).
    pub fn external(self, v: NodeId) -> NodeId {
        v.flip(self.m + self.processor(v))
    }

    /// Bits `v` may flip: the m processor bits and subcube bit pi.
    pub fn edge_mask(self, v: NodeId) -> u64 {
        self.processor_mask() | 1u64 << (self.m + self.processor(v))
    }

    /// The shortest-path distance: one external edge per differing subcube bit, plus a shortest
    /// walk in Q_m from pi_u to pi_v through those processors ([`super::tour`]). Exact for m <= 4
    /// and for m = 5 pairs whose subcube ids differ in at most 16 bits; otherwise `exact` is false
    /// and the length is an upper bound.
    pub fn distance(self, u: NodeId, v: NodeId) -> Walk {
        let differ = self.subcube(u) ^ self.subcube(v);
        let walk = shortest_walk(self.processor(u), self.processor(v), differ);
        Walk {
            length: walk.length + differ.count_ones(),
            exact: walk.exact,
        }
    }

    /// 2^{m+1} (thesis §3.2; BFS in the tests for m <= 3).
    pub fn diameter(self) -> u32 {
        2 << self.m
    }

    /// m+1, the degree (thesis §3.2; max flow in the tests).
    pub fn connectivity(self) -> u32 {
        self.m + 1
    }

    /// The id written `sigma.pi` in binary, as in the thesis: `(00001010, 001)` is `00001010.001`.
    pub fn format(self, v: NodeId) -> String {
        format!(
            "{:0w$b}.{:0m$b}",
            self.subcube(v),
            self.processor(v),
            w = self.cube_dimension() as usize,
            m = self.m as usize
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_follows_the_issue() {
        let h = Hhc { m: 3 };
        // (00001010, 001) of Table 5.1.
        let v = h.node(0b0000_1010, 0b001);
        assert_eq!(v.0, 0b0000_1010_001);
        assert_eq!(h.format(v), "00001010.001");
        assert_eq!(h.external(v), h.node(0b0000_1000, 0b001));
        assert_eq!(h.node_count(), 2048);
        // Thesis §3.2: in HHC_6, (0000,00) is adjacent to (0000,01), (0000,10) and (0001,00).
        let h6 = Hhc { m: 2 };
        let neighbours: Vec<u64> = crate::topology::bits::BitIter(h6.edge_mask(NodeId(0)))
            .map(|b| 1u64 << b)
            .collect();
        assert_eq!(neighbours, [0b0000_01, 0b0000_10, 0b0001_00]);
    }
}
