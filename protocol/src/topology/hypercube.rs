//! The binary hypercube Q_n: facts in closed form.
//!
//! Node ids are the n-bit addresses; bit i is dimension i. Two nodes are adjacent when they differ
//! in exactly one bit.

use super::node::NodeId;

/// Q_n, 1 <= n <= 63.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Hypercube {
    pub n: u32,
}

impl Hypercube {
    pub const MAX_DIMENSION: u32 = 63;

    pub fn node_count(self) -> u64 {
        1u64 << self.n
    }

    pub fn contains(self, v: NodeId) -> bool {
        v.0 >> self.n == 0
    }

    /// Every bit of the id is a dimension.
    pub fn dimension_mask(self) -> u64 {
        (1u64 << self.n) - 1
    }

    pub fn distance(self, u: NodeId, v: NodeId) -> u32 {
        (u.0 ^ v.0).count_ones()
    }

    /// Q_n is n-connected and n-regular: every pair has n internally disjoint paths.
    pub fn connectivity(self) -> u32 {
        self.n
    }
}
