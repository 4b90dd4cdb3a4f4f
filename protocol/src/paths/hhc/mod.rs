//! The disjoint-path algorithms of the perfect hierarchical hypercube HHC_{2^m+m} (the topology
//! is [`crate::topology::hhc`]), after Bossard, *Disjoint-path Routing in Hypercubes and their
//! Variants*. One module each, named as in the thesis:
//! - [`conv`]: CONV, a cube-level path to an HHC-level path (Algorithm 5);
//! - [`distrib`]: DISTRIB, Lemma 3's distribution of destinations to distinct subcubes;
//! - [`n2s`]: HHC-N2S (chapter 5, Algorithm 6);
//! - [`in2s`]: HHC-iN2S (appendix A, Algorithm 2);
//! - [`n2n`]: the m+1 disjoint paths between two nodes, derived from node-to-set (ours);
//! - [`s2s`]: HHC-S2S (chapter 7), with the m = 2, k = 3 case table of §7.6.

pub mod conv;
pub mod distrib;
pub mod in2s;
pub mod n2n;
pub mod n2s;
pub mod s2s;
