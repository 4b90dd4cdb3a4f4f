//! CONV (thesis §3.2, Algorithm 5; appendix A, Algorithm 1): a cube-level path
//! sigma_0 -> ... -> sigma_n of Q_{2^m} to the HHC-level path (sigma_0, pi_beg) ~> (sigma_n, pi_end).
//!
//! In each subcube sigma_j the path routes by SPR from its current processor to
//! pi_{j+1} = log2(sigma_j xor sigma_{j+1}), the processor whose external edge leads to
//! sigma_{j+1}, and takes that edge; in the last subcube it routes to pi_end. SPR inside a subcube
//! is ascending dimension order: the thesis's Table 5.1 and appendix Table 1 flip the lowest
//! differing processor bit first (e.g. 000 -> 001 -> 101). HHC-iN2S's gain comes from the
//! *cube-level* order (SPR-Gray makes consecutive pi_j one bit apart), not from this one.

use crate::NodeId;
use crate::topology::hhc::Hhc;

/// Append to `path` the SPR route inside subcube `sigma` from processor `from` (already in
/// `path`) to processor `to`: ascending dimension order.
pub fn spr_in_subcube(h: Hhc, path: &mut Vec<NodeId>, sigma: u64, from: u32, to: u32) {
    let mut pi = from;
    for bit in crate::topology::bits::BitIter((from ^ to) as u64) {
        pi ^= 1 << bit;
        path.push(h.node(sigma, pi));
    }
}

/// CONV(P, pi_beg, pi_end): the HHC-level path following the cube-level path `cube`, from
/// (cube[0], pi_beg) to (cube[last], pi_end). Consecutive subcube ids of `cube` must differ in
/// one bit.
pub fn conv(h: Hhc, cube: &[u64], pi_beg: u32, pi_end: u32) -> Vec<NodeId> {
    let mut path = vec![h.node(cube[0], pi_beg)];
    let mut pi = pi_beg;
    for pair in cube.windows(2) {
        let next = (pair[0] ^ pair[1]).trailing_zeros();
        debug_assert_eq!((pair[0] ^ pair[1]).count_ones(), 1);
        spr_in_subcube(h, &mut path, pair[0], pi, next);
        pi = next;
        path.push(h.node(pair[1], pi));
    }
    spr_in_subcube(h, &mut path, cube[cube.len() - 1], pi, pi_end);
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_path_of_table_5_1() {
        // Thesis Table 5.1, the path to d_1 (from the cube level 00000000 -> ... -> 00001010).
        let h = Hhc { m: 3 };
        let cube = [
            0b0000_0000,
            0b0000_0001,
            0b0010_0001,
            0b0010_0011,
            0b0010_1011,
            0b0000_1011,
            0b0000_1010,
        ];
        let path = conv(h, &cube, 0, 0b000);
        let expected = [
            (0b0000_0000, 0b000),
            (0b0000_0001, 0b000),
            (0b0000_0001, 0b001),
            (0b0000_0001, 0b101),
            (0b0010_0001, 0b101),
            (0b0010_0001, 0b001),
            (0b0010_0011, 0b001),
            (0b0010_0011, 0b011),
            (0b0010_1011, 0b011),
            (0b0010_1011, 0b001),
            (0b0010_1011, 0b101),
            (0b0000_1011, 0b101),
            (0b0000_1011, 0b100),
            (0b0000_1011, 0b000),
            (0b0000_1010, 0b000),
        ];
        let expected: Vec<NodeId> = expected.iter().map(|&(s, p)| h.node(s, p)).collect();
        assert_eq!(path, expected);
        assert_eq!(path.len() - 1, 14);
    }
}
