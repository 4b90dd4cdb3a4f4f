//! SPR-Gray (thesis, appendix A §2, after Lemma 2.2): a shortest path between a and b that flips
//! the differing dimensions in the order in which they occur in a Gray code.
//!
//! The thesis defines the order by f(gamma_i) = i over the g-bit reflected Gray code
//! gamma_0, ..., gamma_{2^g - 1}, g = ceil(log2 n) (the extracted text prints the last index as
//! "gamma_{2^{s-1}}", a typo for gamma_{2^g - 1}). f is the inverse Gray code, which does not depend
//! on g once 2^g > every dimension, so [`gray_rank`] ignores g. Example 1 of the appendix
//! (differing dimensions 1,3,4,5 are flipped as 1,3,5,4) is a unit test below.

use super::{bits, check_node, dimension, walk};
use crate::NodeId;
use crate::paths::error::PathError;
use crate::paths::system::PathSystem;
use crate::topology::hypercube::Hypercube;

/// The place of dimension `p` in the reflected Gray code: f with f(gamma_i) = i, where
/// gamma_i = i ^ (i >> 1).
pub fn gray_rank(p: u32) -> u32 {
    let mut r = p;
    let mut shift = p >> 1;
    while shift != 0 {
        r ^= shift;
        shift >>= 1;
    }
    r
}

/// The set bits of `mask` in Gray-code order (increasing [`gray_rank`]).
pub fn gray_order(mask: u64) -> Vec<u32> {
    let mut dims: Vec<u32> = bits(mask).collect();
    dims.sort_unstable_by_key(|&p| gray_rank(p));
    dims
}

/// SPR-Gray(a, b) in Q_n: one path of H(a,b) edges, dimensions flipped in Gray-code order.
pub fn spr_gray(q: Hypercube, a: NodeId, b: NodeId) -> Result<PathSystem, PathError> {
    let n = dimension(q)?;
    let (a, b) = (check_node(n, a)?, check_node(n, b)?);
    let mut path = vec![a];
    walk(&mut path, a, gray_order(a ^ b));
    Ok(PathSystem::paper(vec![
        path.into_iter().map(NodeId).collect(),
    ]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(n: u32) -> Hypercube {
        Hypercube { n }
    }

    /// Appendix A, Example 1: SPR flips 1,3,4,5; SPR-Gray flips 1,3,5,4.
    #[test]
    fn thesis_example_1() {
        let path = spr_gray(q(8), NodeId(0), NodeId(0b0011_1010))
            .unwrap()
            .paths;
        let expected = [
            0b0000_0000,
            0b0000_0010,
            0b0000_1010,
            0b0010_1010,
            0b0011_1010,
        ];
        assert_eq!(path, [expected.map(NodeId).to_vec()]);
        assert_eq!(gray_order(0b0011_1010), [1, 3, 5, 4]);
    }

    #[test]
    fn rank_inverts_the_gray_code() {
        for i in 0..64u32 {
            assert_eq!(gray_rank(i ^ (i >> 1)), i);
        }
    }

    #[test]
    fn shortest_and_valid() {
        for a in 0..32u64 {
            for b in 0..32u64 {
                let path = spr_gray(q(5), NodeId(a), NodeId(b))
                    .unwrap()
                    .paths
                    .remove(0);
                assert_eq!(path.len() as u32 - 1, (a ^ b).count_ones());
                assert_eq!((path[0].0, path.last().unwrap().0), (a, b));
                assert!(path.windows(2).all(|w| (w[0].0 ^ w[1].0).count_ones() == 1));
            }
        }
        assert_eq!(
            spr_gray(q(3), NodeId(8), NodeId(0)),
            Err(PathError::NotANode {
                node: 8,
                topology: "q:3".parse().unwrap()
            })
        );
    }
}
