//! Shortest walks in a small hypercube Q_d (d <= 6) that must visit a set of vertices: the core of
//! the distance in the two-level networks.
//!
//! In HHC_{2^m+m} an external edge at processor p flips bit p of the subcube id, and internal edges
//! move between processors of a Q_m. A shortest u-v path therefore makes one external edge per
//! differing subcube bit, and its internal edges form a shortest walk in Q_m from pi_u to pi_v that
//! visits every processor whose subcube bit differs (flipping a bit twice never helps). The metacube
//! is the same with classes for processors: the cube edges are the Hamming distance of the M
//! fields, the cross edges a shortest walk in Q_k through the classes whose field differs. Neither
//! paper gives a closed form; the tests check `|stops| + walk` against BFS on every pair of the
//! small instances.
//!
//! The walk is exact (Held-Karp over the stops) up to [`EXACT_MAX_STOPS`] stops, which covers every
//! pair of HHC with m <= 4 and of MC with k <= 4. Above that (only HHC with m = 5 and MC(5,1)) it is
//! the length of a nearest-neighbour walk: an upper bound, and [`Walk::exact`] says so.

use super::bits::BitIter;

/// Held-Karp is used up to this many stops (besides the two ends): 2^16 * 16^2 steps at most.
pub const EXACT_MAX_STOPS: u32 = 16;

/// The length of a walk, and whether it is known to be the shortest.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Walk {
    pub length: u32,
    pub exact: bool,
}

/// The shortest walk in Q_d from `a` to `b` through every vertex of `stops` (bit x set: vertex x
/// must be visited). Exact up to [`EXACT_MAX_STOPS`] stops other than `a` and `b`, else an upper
/// bound.
pub fn shortest_walk(a: u32, b: u32, stops: u64) -> Walk {
    let stops = stops & !(1u64 << a) & !(1u64 << b);
    let points: Vec<u32> = BitIter(stops).collect();
    let h = |x: u32, y: u32| (x ^ y).count_ones();
    if points.is_empty() {
        return Walk {
            length: h(a, b),
            exact: true,
        };
    }
    if points.len() as u32 > EXACT_MAX_STOPS {
        return Walk {
            length: nearest_neighbour(a, b, &points),
            exact: false,
        };
    }
    let p = points.len();
    let full = (1usize << p) - 1;
    // best[set][j]: shortest walk from a through exactly `set`, ending at points[j].
    let mut best = vec![u32::MAX; (full + 1) * p];
    for j in 0..p {
        best[(1 << j) * p + j] = h(a, points[j]);
    }
    for set in 1..=full {
        for j in 0..p {
            let here = best[set * p + j];
            if here == u32::MAX || set & (1 << j) == 0 {
                continue;
            }
            let mut rest = full & !set;
            while rest != 0 {
                let next = rest.trailing_zeros() as usize;
                rest &= rest - 1;
                let slot = &mut best[(set | 1 << next) * p + next];
                *slot = (*slot).min(here + h(points[j], points[next]));
            }
        }
    }
    let length = (0..p)
        .map(|j| best[full * p + j] + h(points[j], b))
        .min()
        .expect("at least one stop");
    Walk {
        length,
        exact: true,
    }
}

/// A walk that always goes to the nearest unvisited stop (lowest vertex on ties), then to `b`.
fn nearest_neighbour(a: u32, b: u32, points: &[u32]) -> u32 {
    let mut left: Vec<u32> = points.to_vec();
    let (mut at, mut length) = (a, 0);
    while !left.is_empty() {
        let (i, d) = left
            .iter()
            .enumerate()
            .map(|(i, &x)| (i, (x ^ at).count_ones()))
            .min_by_key(|&(i, d)| (d, left[i]))
            .expect("not empty");
        length += d;
        at = left.swap_remove(i);
    }
    length + (at ^ b).count_ones()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Brute force over every order of the stops.
    fn brute(a: u32, b: u32, stops: &[u32]) -> u32 {
        fn go(at: u32, b: u32, left: &mut Vec<u32>) -> u32 {
            if left.is_empty() {
                return (at ^ b).count_ones();
            }
            let mut best = u32::MAX;
            for i in 0..left.len() {
                let x = left.remove(i);
                best = best.min((at ^ x).count_ones() + go(x, b, left));
                left.insert(i, x);
            }
            best
        }
        go(a, b, &mut stops.to_vec())
    }

    #[test]
    fn held_karp_matches_brute_force_in_q3() {
        for a in 0..8 {
            for b in 0..8 {
                for stops in 0u64..256 {
                    let list: Vec<u32> = BitIter(stops).collect();
                    let walk = shortest_walk(a, b, stops);
                    assert!(walk.exact);
                    assert_eq!(walk.length, brute(a, b, &list), "{a} {b} {stops:b}");
                }
            }
        }
    }

    #[test]
    fn many_stops_give_an_upper_bound() {
        // Every vertex of Q_5 from 0 to 1: a Hamiltonian path has 31 edges.
        let walk = shortest_walk(0, 1, u32::MAX as u64);
        assert!(!walk.exact);
        assert!(walk.length >= 31);
        // Held-Karp finds the Hamiltonian path of Q_4 exactly.
        assert_eq!(shortest_walk(0, 1, 0xffff).length, 15);
        assert_eq!(shortest_walk(0, 0, 0xffff).length, 16);
    }
}
