//! Cube-N2S and Cube-N2N (thesis, chapter 4: Lemma 1, Algorithm 3, Lemma 2, Theorem 1).
//!
//! Given a source s, k <= n destinations D and a set M of at most n-k neighbours of s that the
//! paths must not use as first hops (D and M may intersect), Cube-N2S returns k paths s ~> d_i,
//! disjoint but for s, of length at most n+1, with no edge s -> M and no node of M \ D; O(kn).
//!
//! Departures from the pseudo-code, and choices the thesis leaves open:
//! - **Step 1 follows the prose, not the pseudo-code** (docs/cube-algorithms.md, Cube-N2S). The
//!   pseudo-code runs `M := M ∪ (D∩N(s)); D := D \ (N(s)\M)`, which leaves every directly connected
//!   destination in D (it is in M by then) and routes it a second time. The prose connects D∩N(s)\M
//!   by one edge, *then* removes those nodes from D and adds them to M; so do we.
//! - A source that is itself a destination (a zero-length path in the thesis) is refused as
//!   [`PathError::DestinationIsSource`]: a message is never routed to its own sender.
//! - Choices: δ is the lowest dimension splitting D; the path given the direct prefix s -> s'
//!   (Step 6, "arbitrary" in the thesis) is the first one of C_1 (every choice adds one edge to
//!   every path, so lengths do not depend on it); Cube-N2N leaves through a neighbour on a
//!   shortest path to d when M allows.
//! - The whole computation is done with s translated to node 0 and translated back, so the result
//!   for source s is the result for source 0 XOR s. The exhaustive tests rely on this.

use super::{adjacent, bits, check_node, check_set, dimension, full_mask, lowest, to_paths};
use crate::NodeId;
use crate::paths::error::PathError;
use crate::paths::system::PathSystem;
use crate::topology::hypercube::Hypercube;
use std::collections::VecDeque;

/// Cube-N2S(Q_n, s, D, M): `paths[i]` runs from `s` to `dests[i]`.
pub fn cube_n2s(
    q: Hypercube,
    s: NodeId,
    dests: &[NodeId],
    excluded: &[NodeId],
) -> Result<PathSystem, PathError> {
    let n = dimension(q)?;
    let s = check_node(n, s)?;
    let dests = check_set(n, dests, "destinations")?;
    let excluded = check_set(n, excluded, "excluded neighbours")?;
    if dests.is_empty() {
        return Err(PathError::Empty("destination set"));
    }
    if let Some(&d) = dests.iter().find(|&&d| d == s) {
        return Err(PathError::DestinationIsSource(d));
    }
    if dests.len() > n as usize {
        return Err(PathError::OverAlgorithmLimit {
            given: dests.len(),
            max: n as usize,
            n,
        });
    }
    if let Some(&m) = excluded.iter().find(|&&m| !adjacent(m, s)) {
        return Err(PathError::NotANeighbour { node: m, of: s });
    }
    if dests.len() + excluded.len() > n as usize {
        return Err(PathError::TooManyExcluded {
            excluded: excluded.len(),
            destinations: dests.len(),
            n,
        });
    }
    // Work with s = 0: M becomes a mask of dimensions.
    let excl: u64 = excluded.iter().map(|&m| m ^ s).sum();
    let targets: Vec<(u64, usize)> = dests.iter().enumerate().map(|(i, &d)| (d ^ s, i)).collect();
    let mut out = vec![VecDeque::new(); dests.len()];
    n2s(full_mask(n), 0, targets, excl, &mut out)?;
    Ok(PathSystem::paper(to_paths(out, s)))
}

/// The recursion. `excl` is M as a mask of dimensions (m in M iff m = s ^ 2^j, bit j set). Fills
/// `out[i]` with the path from `s` to each `(d, i)` of `dests`.
fn n2s(
    free: u64,
    s: u64,
    mut dests: Vec<(u64, usize)>,
    mut excl: u64,
    out: &mut [VecDeque<u64>],
) -> Result<(), PathError> {
    // Step 1: connect the neighbours outside M by one edge, then move them from D to M.
    let mut direct = 0u64;
    dests.retain(|&(d, i)| {
        let x = d ^ s;
        if x.count_ones() == 1 && x & excl == 0 {
            out[i] = VecDeque::from([s, d]);
            direct |= x;
            false
        } else {
            true
        }
    });
    excl |= direct;
    match dests.len() {
        0 => return Ok(()),
        1 => {
            let (d, i) = dests[0];
            out[i] = n2n(free, s, d, excl).into();
            return Ok(());
        }
        _ => {}
    }
    // Step 2: a dimension splitting D; s is in Q^0, s' its neighbour in Q^1.
    let spread = dests.iter().fold(0, |acc, &(d, _)| acc | (d ^ dests[0].0)) & free;
    let delta = lowest(spread);
    let bit = 1u64 << delta;
    let s1 = s ^ bit;
    let sub = free & !bit;
    let (mut d1, d0): (Vec<_>, Vec<_>) = dests.into_iter().partition(|&(d, _)| (d ^ s) & bit != 0);
    // Step 3: M_1 mirrors M ∩ Q^0 into Q^1 (same dimensions, seen from s').
    let excl1 = excl & !bit;
    let s1_excluded = excl & bit != 0;
    // Step 4: if s' is an excluded destination, aim at a neighbour s'_w of it instead.
    let mut detour = None;
    if let Some(pos) = d1.iter().position(|&(d, _)| d == s1) {
        let taken = |v: u64| d1.iter().any(|&(d, _)| d == v);
        // Lemma 2: |D'| + |M_1| <= n-2 leaves a free neighbour of s'.
        let w = bits(sub & !excl1)
            .map(|j| s1 ^ (1u64 << j))
            .find(|&v| !taken(v))
            .ok_or(PathError::internal(
                "Cube-N2S found no neighbour s'_w of s'",
            ))?;
        detour = Some(d1[pos].1);
        d1[pos].0 = w;
    }
    let upper: Vec<usize> = d1.iter().map(|&(_, i)| i).collect();
    n2s(sub, s1, d1, excl1, out)?;
    // Step 5: s' -> s'_w becomes s' -> s'_w -> s'.
    if let Some(i) = detour {
        out[i].push_back(s1);
    }
    // Step 6: one path (the first) gets the prefix s -> s' unless s' is in M; the others
    // replace s' -> s'_i by s -> s_i -> s'_i.
    let direct_path = (!s1_excluded).then(|| upper[0]);
    let mut used = 0u64;
    for &i in &upper {
        let path = &mut out[i];
        if Some(i) == direct_path {
            path.push_front(s);
        } else {
            path.pop_front();
            let si = path[0] ^ bit;
            used |= si ^ s;
            path.push_front(si);
            path.push_front(s);
        }
    }
    // Step 7: Q^0 with M_0 = (M ∩ Q^0) ∪ {the s_i used}.
    n2s(sub, s, d0, (excl & !bit) | used, out)
}

/// Cube-N2N (Lemma 1): a path s ~> d of length <= n+1 using no edge s -> M and no node of
/// M \ {d}, with |M| <= n-1. It leaves s through s' in N(s) \ M, preferring a dimension where s
/// and d differ, and then stays on the far side of that dimension.
fn n2n(free: u64, s: u64, d: u64, excl: u64) -> Vec<u64> {
    let differ = s ^ d;
    let allowed = free & !excl;
    let delta = if differ & allowed != 0 {
        lowest(differ & allowed)
    } else {
        lowest(allowed)
    };
    let bit = 1u64 << delta;
    let mut path = vec![s, s ^ bit];
    super::walk(&mut path, s ^ bit, bits(differ & !bit));
    if differ & bit == 0 {
        path.push(d);
    }
    debug_assert_eq!(path.last(), Some(&d));
    path
}

/// The pseudo-code's literal Step 1, for the test that shows why we do not follow it: the
/// destinations it keeps in D, as masks of dimensions, for a source at 0.
#[cfg(test)]
fn literal_step_1(dests: u64, excl: u64) -> (u64, u64) {
    // M := M ∪ (D ∩ N(s)); D := D \ (N(s) \ M)   (D, M as sets of unit vectors: bit j = 2^j)
    let neighbours = u64::MAX;
    let m = excl | dests;
    let d = dests & !(neighbours & !m);
    (d, m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[u64]) -> Vec<NodeId> {
        v.iter().map(|&x| NodeId(x)).collect()
    }

    /// The thesis's error in Step 1 (docs/cube-algorithms.md): the pseudo-code's order keeps a
    /// directly connected destination in D.
    #[test]
    fn pseudo_code_step_1_would_route_a_neighbour_twice() {
        // s = 0, D = {e_0, e_1}, M = {}: both are connected by one edge in Step 1.
        let (kept, _) = literal_step_1(0b11, 0);
        assert_eq!(kept, 0b11, "the literal pseudo-code leaves both in D");
        let paths = cube_n2s(Hypercube { n: 3 }, NodeId(0), &ids(&[1, 2]), &[])
            .unwrap()
            .paths;
        assert_eq!(paths, vec![ids(&[0, 1]), ids(&[0, 2])]);
    }

    #[test]
    fn excluded_neighbour_destination_is_reached_around() {
        // d = e_0 is in M: no edge 0 -> 1, and the path must not use another node of M.
        let q = Hypercube { n: 3 };
        let paths = cube_n2s(q, NodeId(0), &ids(&[1]), &ids(&[1, 2]))
            .unwrap()
            .paths;
        assert_eq!(paths, vec![ids(&[0, 4, 5, 1])]);
    }

    #[test]
    fn refuses_bad_input() {
        let q = Hypercube { n: 3 };
        let e = |d: &[u64], m: &[u64]| cube_n2s(q, NodeId(0), &ids(d), &ids(m)).unwrap_err();
        assert!(matches!(
            e(&[1, 2, 3, 4], &[]),
            PathError::OverAlgorithmLimit {
                given: 4,
                max: 3,
                ..
            }
        ));
        assert!(matches!(
            e(&[1, 1], &[]),
            PathError::Duplicate { node: 1, .. }
        ));
        assert_eq!(e(&[0, 1], &[]), PathError::DestinationIsSource(0));
        assert!(matches!(e(&[9], &[]), PathError::NotANode { node: 9, .. }));
        assert_eq!(e(&[3], &[3]), PathError::NotANeighbour { node: 3, of: 0 });
        assert!(matches!(
            e(&[3, 5], &[1, 2]),
            PathError::TooManyExcluded { .. }
        ));
        assert_eq!(e(&[], &[]), PathError::Empty("destination set"));
    }
}
