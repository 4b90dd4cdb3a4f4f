//! Disjoint-path algorithms on the binary hypercube Q_n beyond node-to-node, after the Bossard
//! thesis (seed 000) and Bossard and Kaneko's bit-constraint paper (seed 001). One module per
//! algorithm, named as in the papers:
//!
//! | module | algorithm | source | bound |
//! |---|---|---|---|
//! | [`gray`] | SPR-Gray, shortest path in Gray-code dimension order | thesis, appendix A §2 | H(a,b) |
//! | [`ftn2n`] | Cube-FTN2N, fault-tolerant node-to-node (Gu-Peng's guarantees) | thesis, appendix A Lemma 2.3 | n+1, <= n-1 faults |
//! | [`n2s`] | Cube-N2S and Cube-N2N, node-to-set with excluded neighbours | thesis, ch. 4 | n+1 |
//! | [`xftn2s`] | Cube-XFTN2S, fault-tolerant node-to-set with a forced first hop | thesis, appendix A Lemma 2.4 | n+3 |
//! | [`s2s`] | Cube-S2S, fault-tolerant set-to-set | thesis, Lemma 11/19 (Gu, Okawa, Peng) | n+k |
//! | [`container`] | HC-SPR and HC-CONTAINER under the bit constraint gamma_i | seed 001 | n+3k |
//!
//! Every function takes the [`Hypercube`], checks its input and returns a
//! [`PathSystem`](super::system::PathSystem) (paths as `Vec<NodeId>` from source to destination
//! inclusive), or a [`PathError`]. The recursions work on *subcubes*:
//! a subcube is given by a node in it and the mask of its free dimensions, so no address is ever
//! re-encoded. Everything here is pure and deterministic.

pub mod container;
pub mod ftn2n;
pub mod gray;
pub mod n2s;
pub mod s2s;
pub mod xftn2s;

use super::error::PathError;
use super::system::Path;
use crate::topology::bits::BitIter;
use crate::topology::hypercube::Hypercube;
use crate::{NodeId, Topology};
use std::collections::VecDeque;

/// The dimension of `q`, checked.
pub(crate) fn dimension(q: Hypercube) -> Result<u32, PathError> {
    if (1..=Hypercube::MAX_DIMENSION).contains(&q.n) {
        Ok(q.n)
    } else {
        Err(PathError::Dimension(q.n))
    }
}

pub(crate) fn check_node(n: u32, v: NodeId) -> Result<u64, PathError> {
    if v.0 >> n == 0 {
        Ok(v.0)
    } else {
        Err(PathError::NotANode {
            node: v.0,
            topology: Topology::Hypercube(Hypercube { n }),
        })
    }
}

/// Check that every node of `set` is in range and appears once.
pub(crate) fn check_set(n: u32, set: &[NodeId], name: &'static str) -> Result<Vec<u64>, PathError> {
    let mut seen = Vec::with_capacity(set.len());
    for &v in set {
        let x = check_node(n, v)?;
        if seen.contains(&x) {
            return Err(PathError::Duplicate { node: x, set: name });
        }
        seen.push(x);
    }
    Ok(seen)
}

/// The mask of all n dimensions.
pub(crate) fn full_mask(n: u32) -> u64 {
    if n == 64 { u64::MAX } else { (1u64 << n) - 1 }
}

pub(crate) fn adjacent(a: u64, b: u64) -> bool {
    (a ^ b).count_ones() == 1
}

/// Highest set bit of a non-zero mask.
pub(crate) fn highest(mask: u64) -> u32 {
    63 - mask.leading_zeros()
}

/// Lowest set bit of a non-zero mask.
pub(crate) fn lowest(mask: u64) -> u32 {
    mask.trailing_zeros()
}

/// Is `v` in the subcube of `base` whose free dimensions are `free`?
pub(crate) fn in_subcube(v: u64, base: u64, free: u64) -> bool {
    (v ^ base) & !free == 0
}

/// Iterate the set bits of a mask, lowest first.
pub(crate) fn bits(mask: u64) -> BitIter {
    BitIter(mask)
}

/// Append the path that flips `order` one bit after the other, starting at `from` (excluded).
pub(crate) fn walk(path: &mut Vec<u64>, from: u64, order: impl IntoIterator<Item = u32>) {
    let mut cur = from;
    for bit in order {
        cur ^= 1u64 << bit;
        path.push(cur);
    }
}

pub(crate) fn to_paths(paths: Vec<VecDeque<u64>>, translate: u64) -> Vec<Path> {
    paths
        .into_iter()
        .map(|p| p.into_iter().map(|v| NodeId(v ^ translate)).collect())
        .collect()
}
