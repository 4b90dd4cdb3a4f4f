//! The exchanged hypercube EH(s,t): id layout and facts in closed form.
//!
//! A node id is `a_{s-1}..a_0 b_{t-1}..b_0 c`, as an integer `a << (t+1) | b << 1 | c`
//! (Alsulaiman and Karaata, *An Optimal Inherently Stabilizing Algorithm for Routing over All
//! Node-Disjoint Paths in Exchanged Hypercubes*, §II). `c` is the dummy bit: `c = 0` is an
//! *s-type* node, whose edges flip one `a` bit or `c`; `c = 1` is a *t-type* node, whose edges
//! flip one `b` bit or `c`. The edge that flips `c` is the *dummy edge*.

use super::node::NodeId;

/// EH(s,t), s,t >= 1, s+t+1 <= 63.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Exchanged {
    pub s: u32,
    pub t: u32,
}

/// Which subsequence a node routes in: its own type.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum NodeType {
    /// `c = 0`: flips `a` bits.
    S,
    /// `c = 1`: flips `b` bits.
    T,
}

impl Exchanged {
    pub const MAX_BITS: u32 = 63;

    pub fn bits(self) -> u32 {
        self.s + self.t + 1
    }

    pub fn node_count(self) -> u64 {
        1u64 << self.bits()
    }

    pub fn contains(self, v: NodeId) -> bool {
        v.0 >> self.bits() == 0
    }

    /// Bit position (in the id) of `a_i`.
    #[inline]
    pub fn a_bit(self, i: u32) -> u32 {
        self.t + 1 + i
    }

    /// Bit position (in the id) of `b_j`.
    #[inline]
    pub fn b_bit(self, j: u32) -> u32 {
        1 + j
    }

    /// Mask of the `a` bits within an id.
    #[inline]
    pub fn a_mask(self) -> u64 {
        ((1u64 << self.s) - 1) << (self.t + 1)
    }

    /// Mask of the `b` bits within an id.
    #[inline]
    pub fn b_mask(self) -> u64 {
        ((1u64 << self.t) - 1) << 1
    }

    pub fn a_of(self, v: NodeId) -> u64 {
        v.0 >> (self.t + 1)
    }

    pub fn b_of(self, v: NodeId) -> u64 {
        (v.0 >> 1) & ((1u64 << self.t) - 1)
    }

    pub fn node(self, a: u64, b: u64, c: u64) -> NodeId {
        NodeId(a << (self.t + 1) | b << 1 | c)
    }

    #[inline]
    pub fn node_type(self, v: NodeId) -> NodeType {
        if v.0 & 1 == 0 {
            NodeType::S
        } else {
            NodeType::T
        }
    }

    /// The bits a node of this type may flip besides the dummy bit: its own subsequence.
    #[inline]
    pub fn own_mask(self, v: NodeId) -> u64 {
        match self.node_type(v) {
            NodeType::S => self.a_mask(),
            NodeType::T => self.b_mask(),
        }
    }

    pub fn degree(self, v: NodeId) -> u32 {
        match self.node_type(v) {
            NodeType::S => self.s + 1,
            NodeType::T => self.t + 1,
        }
    }

    /// Mask of the bits whose flip leads to a neighbour: the own subsequence and the dummy bit.
    pub fn edge_mask(self, v: NodeId) -> u64 {
        self.own_mask(v) | 1
    }

    /// Closed-form distance (docs/protocol.md, "Topologies and ids"; checked against BFS on every
    /// pair in the tests). With `ha`, `hb` the
    /// numbers of differing `a` and `b` bits: different types `ha + hb + 1`; both s-type `ha` if
    /// `hb = 0`, else `ha + hb + 2`; both t-type `hb` if `ha = 0`, else `ha + hb + 2`.
    pub fn distance(self, u: NodeId, v: NodeId) -> u32 {
        let x = u.0 ^ v.0;
        let ha = (x & self.a_mask()).count_ones();
        let hb = (x & self.b_mask()).count_ones();
        match (self.node_type(u), self.node_type(v)) {
            (NodeType::S, NodeType::S) if hb == 0 => ha,
            (NodeType::T, NodeType::T) if ha == 0 => hb,
            (NodeType::S, NodeType::S) | (NodeType::T, NodeType::T) => ha + hb + 2,
            _ => ha + hb + 1,
        }
    }

    /// Two nodes of the same type differing in every bit: `s + t + 2`.
    pub fn diameter(self) -> u32 {
        self.s + self.t + 2
    }

    /// The minimum degree, `min(s,t) + 1`.
    pub fn connectivity(self) -> u32 {
        self.s.min(self.t) + 1
    }

    /// k(u,v), the number of internally disjoint u-v paths (seed 004 §IV; max flow in the tests):
    /// `s+1` for two s-type nodes, `t+1` for two t-type nodes, `min(s,t)+1` for mixed types. The
    /// paper's pseudo-code line `k := min(s,t)+1` is wrong for same-type pairs.
    pub fn local_connectivity(self, u: NodeId, v: NodeId) -> u32 {
        match (self.node_type(u), self.node_type(v)) {
            (NodeType::S, NodeType::S) => self.s + 1,
            (NodeType::T, NodeType::T) => self.t + 1,
            _ => self.connectivity(),
        }
    }

    /// The mirror image EH(t,s): swaps the roles of `a` and `b` and flips `c`. It maps EH(s,t)
    /// isomorphically onto EH(t,s), so every t-type source can be handled as an s-type one.
    pub fn mirrored(self) -> Exchanged {
        Exchanged {
            s: self.t,
            t: self.s,
        }
    }

    /// The image of `v` in [`Exchanged::mirrored`]: `(a, b, c) -> (b, a, 1-c)`.
    pub fn mirror(self, v: NodeId) -> NodeId {
        self.mirrored()
            .node(self.b_of(v), self.a_of(v), (v.0 & 1) ^ 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_matches_the_paper() {
        let eh = Exchanged { s: 2, t: 3 };
        let v = eh.node(0b10, 0b011, 1);
        assert_eq!(v.0, 0b10_011_1);
        assert_eq!(eh.a_of(v), 0b10);
        assert_eq!(eh.b_of(v), 0b011);
        assert_eq!(eh.node_count(), 64);
        assert_eq!(eh.degree(v), 4);
        assert_eq!(eh.degree(NodeId(0)), 3);
    }

    #[test]
    fn mirror_is_an_involution_and_swaps_types() {
        let eh = Exchanged { s: 3, t: 2 };
        for v in 0..eh.node_count() {
            let v = NodeId(v);
            let m = eh.mirror(v);
            assert_ne!(eh.node_type(v), eh.mirrored().node_type(m));
            assert_eq!(eh.mirrored().mirror(m), v);
        }
    }
}
