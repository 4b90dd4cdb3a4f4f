//! The disjoint-path algorithms of the metacube MC(k,m) (the topology is
//! [`crate::topology::metacube`]): [`n2n`] MC-N2N (Li, Peng and Chu, *Disjoint Paths in
//! Metacube*, Algorithm 4: all k+m disjoint paths between two nodes), [`n2s`] MC-N2S (Bossard,
//! *Disjoint-path Routing in Hypercubes and their Variants*, chapter 6: node-to-set), and [`k1`]
//! node-to-node on MC(k,1) where MC-N2N's construction does not apply.

pub mod k1;
pub mod n2n;
pub mod n2s;

use crate::topology::metacube::Metacube;
use crate::topology::node::NodeId;

/// MC-N2N's length bound H(s,t) + 2^k + k + 5 (Theorem 2 with pitfall 002-9's correction of the
/// printed H(s,t) + 2^k + m + 5; docs/family-algorithms.md), which [`k1`] keeps on MC(k,1) too.
pub fn n2n_bound(mc: Metacube, s: NodeId, t: NodeId) -> usize {
    ((s.0 ^ t.0).count_ones() + mc.classes() + mc.k + 5) as usize
}
