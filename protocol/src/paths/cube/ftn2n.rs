//! Cube-FTN2N: a fault-free path between two non-faulty nodes of Q_n with at most n-1 faulty
//! nodes, of length at most n+1 (thesis, appendix A, Lemma 2.3, citing Gu and Peng).
//!
//! The thesis cites the routine without spelling it out; this is our own construction with the
//! same guarantees. Between s and d at distance h there are n internally disjoint paths (Saad and
//! Schultz): for each differing dimension a_j, the path that flips the differing dimensions
//! cyclically from a_j (length h), and for each other dimension q, the path that flips q, then
//! every differing dimension, then q again (length h+2). n-1 faults can block at most n-1 of
//! them, so one is free; its length is h <= n, or h+2 <= n+1 since such paths exist only when
//! h <= n-1. Each fault is mapped to the single candidate it can lie on in O(h), so the routine is
//! O(n |F|) rather than Gu and Peng's O(n) (departure: simplicity; |F| < n).
//!
//! As in the thesis (which replaces Gu and Peng's arbitrary SPR by SPR-Gray), the differing
//! dimensions are taken in Gray-code order, so the first candidate, used whenever it is
//! fault-free, is exactly SPR-Gray.

use super::gray::gray_order;
use super::{check_node, check_set, dimension, full_mask, in_subcube, walk};
use crate::NodeId;
use crate::paths::error::PathError;
use crate::paths::system::PathSystem;
use crate::topology::hypercube::Hypercube;

/// A fault-free path from `s` to `d` in Q_n avoiding every node of `faults`, with `|faults| <=
/// n-1`; its length is at most `min(H(s,d)+2, n+1)`, and exactly H(s,d) when SPR-Gray is free.
pub fn cube_ftn2n(
    q: Hypercube,
    s: NodeId,
    d: NodeId,
    faults: &[NodeId],
) -> Result<PathSystem, PathError> {
    let n = dimension(q)?;
    let (s, d) = (check_node(n, s)?, check_node(n, d)?);
    if s == d {
        return Err(PathError::SameNode(s));
    }
    let faults = check_set(n, faults, "faulty nodes")?;
    if let Some(&f) = faults.iter().find(|&&f| f == s || f == d) {
        return Err(PathError::FaultyEndpoint(f));
    }
    if faults.len() > n as usize - 1 {
        return Err(PathError::TooManyFaults {
            faults: faults.len(),
            destinations: 1,
            max: n as usize - 1,
            n,
        });
    }
    let path = ftn2n(full_mask(n), s, d, &faults).ok_or(PathError::internal(
        "Cube-FTN2N found every candidate blocked",
    ))?;
    Ok(PathSystem::paper(vec![
        path.into_iter().map(NodeId).collect(),
    ]))
}

/// The routine inside a subcube: `s`, `d` in the subcube with free dimensions `free`; faults
/// outside the subcube, and faults equal to `s` or `d`, are ignored. `None` only when more than
/// m-1 faults lie in the subcube (m = number of free dimensions) and block every candidate.
pub(crate) fn ftn2n(free: u64, s: u64, d: u64, faults: &[u64]) -> Option<Vec<u64>> {
    if s == d {
        return Some(vec![s]);
    }
    let differ = s ^ d;
    let order = gray_order(differ);
    let h = order.len();
    let others = gray_order(free & !differ);
    let mut blocked = vec![false; h + others.len()];
    for &f in faults {
        if f == s || f == d || !in_subcube(f, s, free) {
            continue;
        }
        if let Some(slot) = candidate_of(f ^ s, differ, &order, &others) {
            blocked[slot] = true;
        }
    }
    let slot = blocked.iter().position(|&b| !b)?;
    let mut path = vec![s];
    if slot < h {
        walk(
            &mut path,
            s,
            order[slot..].iter().chain(&order[..slot]).copied(),
        );
    } else {
        let q = others[slot - h];
        walk(
            &mut path,
            s,
            std::iter::once(q).chain(order.iter().copied()).chain([q]),
        );
    }
    Some(path)
}

/// The candidate path an inner node `s ^ x` lies on, if any: slot j < h for the cyclic path from
/// `order[j]`, slot h + r for the detour through `others[r]`.
fn candidate_of(x: u64, differ: u64, order: &[u32], others: &[u32]) -> Option<usize> {
    let h = order.len();
    let outside = x & !differ;
    if outside == 0 {
        // On a cyclic path iff x is a proper cyclic interval of `order`; it starts at the one
        // member whose cyclic predecessor is not a member.
        let member = |j: usize| x >> order[j] & 1 == 1;
        let mut starts = (0..h).filter(|&j| member(j) && !member((j + h - 1) % h));
        let start = starts.next()?;
        return starts.next().is_none().then_some(start);
    }
    if outside.count_ones() != 1 {
        return None;
    }
    // On the detour through q iff the rest is a prefix of `order`.
    let q = outside.trailing_zeros();
    let rest = x & differ;
    let t = rest.count_ones() as usize;
    let prefix: u64 = order[..t].iter().map(|&b| 1u64 << b).sum();
    (prefix == rest)
        .then(|| others.iter().position(|&o| o == q).map(|r| h + r))
        .flatten()
}

/// All candidate paths, for tests: the n internally disjoint paths the routine chooses from.
#[cfg(test)]
pub(crate) fn candidates(free: u64, s: u64, d: u64) -> Vec<Vec<u64>> {
    let order = gray_order(s ^ d);
    let h = order.len();
    let mut out = Vec::new();
    for j in 0..h {
        let mut p = vec![s];
        walk(&mut p, s, order[j..].iter().chain(&order[..j]).copied());
        out.push(p);
    }
    for q in gray_order(free & !(s ^ d)) {
        let mut p = vec![s];
        walk(
            &mut p,
            s,
            std::iter::once(q).chain(order.iter().copied()).chain([q]),
        );
        out.push(p);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every inner node of every candidate is classified onto its own candidate, so a fault
    /// blocks exactly the candidate it lies on.
    #[test]
    fn faults_are_mapped_to_their_candidate() {
        let free = 0b11_1111;
        for d in 1..64u64 {
            let cands = candidates(free, 0, d);
            assert_eq!(cands.len(), 6);
            let order = gray_order(d);
            let others = gray_order(free & !d);
            for (slot, path) in cands.iter().enumerate() {
                for &v in &path[1..path.len() - 1] {
                    assert_eq!(
                        candidate_of(v, d, &order, &others),
                        Some(slot),
                        "d={d} v={v}"
                    );
                }
            }
            let on_some: Vec<u64> = cands
                .iter()
                .flat_map(|p| p[1..p.len() - 1].to_vec())
                .collect();
            for v in 1..64u64 {
                if v != d && !on_some.contains(&v) {
                    assert_eq!(candidate_of(v, d, &order, &others), None);
                }
            }
        }
    }

    #[test]
    fn refuses_bad_input() {
        let q = Hypercube { n: 4 };
        let f = |v: &[u64]| v.iter().map(|&x| NodeId(x)).collect::<Vec<_>>();
        assert_eq!(
            cube_ftn2n(q, NodeId(0), NodeId(0), &[]),
            Err(PathError::SameNode(0))
        );
        assert_eq!(
            cube_ftn2n(q, NodeId(0), NodeId(15), &f(&[15])),
            Err(PathError::FaultyEndpoint(15))
        );
        assert!(matches!(
            cube_ftn2n(q, NodeId(0), NodeId(15), &f(&[1, 2, 4, 8])),
            Err(PathError::TooManyFaults { .. })
        ));
        assert!(matches!(
            cube_ftn2n(q, NodeId(0), NodeId(15), &f(&[1, 1])),
            Err(PathError::Duplicate { node: 1, .. })
        ));
    }

    /// Three faults on the three shortest paths of Q_4, 0 -> 7: the detour through dimension 3.
    #[test]
    fn detours_when_every_shortest_path_is_blocked() {
        let q = Hypercube { n: 4 };
        let faults = [NodeId(1), NodeId(2), NodeId(4)];
        let path = cube_ftn2n(q, NodeId(0), NodeId(7), &faults)
            .unwrap()
            .paths
            .remove(0);
        assert_eq!(path.len() - 1, 5);
        assert_eq!(path[1], NodeId(8));
    }
}
