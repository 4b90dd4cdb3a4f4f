//! Cube-XFTN2S (thesis, appendix A, Lemma 2.4): fault-tolerant node-to-set disjoint paths with an
//! optional forced first hop.
//!
//! Given a non-faulty source s, destinations D (k = |D|) and arbitrary faulty nodes F with
//! |D| + |F| <= n-1, and X ⊆ N(s) \ F with |X| <= 1, it returns k paths s ~> d_i, disjoint but for
//! s, with no faulty node, one of them starting with s -> x when X = {x}; length <= n+3, O(kn).
//!
//! We follow the appendix's two cases. Departures and choices:
//! - Cube-FTN2N, which the thesis only cites (Gu and Peng), is [`super::ftn2n`].
//! - Case 2, "select an arbitrary node d in D ∩ N(s)": we take x first when it is a destination,
//!   then the non-faulty ones, then the faulty ones, in input order.
//! - Case 2, reduction: δ is the lowest dimension splitting D; the path that keeps the direct edge
//!   s -> s_1 is the first one (all choices give the same lengths).
//! - Case 1 with X = {x} and d on s's side: the detour d ~> d' into x's side takes the one-edge
//!   candidate when it is free, else the first free two-edge one (Lemma 2.1's n paths).
//! - Faulty destinations only arise inside the recursion (F_1 marks the mirrors of faulty
//!   neighbours of s, which may be destinations); at the top, a faulty destination or source is
//!   refused as [`PathError::FaultyEndpoint`].
//! - As in [`super::n2s`], the computation is done with s translated to node 0.

use super::ftn2n::ftn2n;
use super::{
    adjacent, bits, check_node, check_set, dimension, full_mask, in_subcube, lowest, to_paths,
};
use crate::NodeId;
use crate::paths::error::PathError;
use crate::paths::system::PathSystem;
use crate::topology::hypercube::Hypercube;
use std::collections::VecDeque;

/// Cube-XFTN2S(Q_n, s, D, F, X): `paths[i]` runs from `s` to `dests[i]` and avoids `faults`.
pub fn cube_xftn2s(
    q: Hypercube,
    s: NodeId,
    dests: &[NodeId],
    faults: &[NodeId],
    first_hop: Option<NodeId>,
) -> Result<PathSystem, PathError> {
    let n = dimension(q)?;
    let s = check_node(n, s)?;
    let dests = check_set(n, dests, "destinations")?;
    let faults = check_set(n, faults, "faulty nodes")?;
    if dests.is_empty() {
        return Err(PathError::Empty("destination set"));
    }
    if let Some(&d) = dests.iter().find(|&&d| d == s) {
        return Err(PathError::DestinationIsSource(d));
    }
    if let Some(&f) = faults.iter().find(|&&f| f == s || dests.contains(&f)) {
        return Err(PathError::FaultyEndpoint(f));
    }
    if dests.len() + faults.len() > n as usize - 1 {
        return Err(if dests.len() > n as usize - 1 {
            PathError::OverAlgorithmLimit {
                given: dests.len(),
                max: n as usize - 1,
                n,
            }
        } else {
            PathError::TooManyFaults {
                faults: faults.len(),
                destinations: dests.len(),
                max: n as usize - 1 - dests.len(),
                n,
            }
        });
    }
    let x = match first_hop {
        None => None,
        Some(x) => {
            let x = check_node(n, x)?;
            if !adjacent(x, s) {
                return Err(PathError::NotANeighbour { node: x, of: s });
            }
            if faults.contains(&x) {
                return Err(PathError::FaultyFirstHop(x));
            }
            Some(x ^ s)
        }
    };
    let targets: Vec<(u64, usize)> = dests.iter().enumerate().map(|(i, &d)| (d ^ s, i)).collect();
    let faults: Vec<u64> = faults.iter().map(|&f| f ^ s).collect();
    let mut out = vec![VecDeque::new(); dests.len()];
    xftn2s(full_mask(n), 0, targets, faults, x, &mut out)?;
    Ok(PathSystem::paper(to_paths(out, s)))
}

/// The recursion inside the subcube of `s` with free dimensions `free`. `faults` may hold nodes
/// outside the subcube (ignored) and destinations (faulty destinations, reached as endpoints).
fn xftn2s(
    free: u64,
    s: u64,
    mut dests: Vec<(u64, usize)>,
    mut faults: Vec<u64>,
    x: Option<u64>,
    out: &mut [VecDeque<u64>],
) -> Result<(), PathError> {
    faults.retain(|&f| in_subcube(f, s, free));
    if dests.len() == 1 {
        let (d, i) = dests[0];
        out[i] = case_1(free, s, d, &faults, x)?.into();
        return Ok(());
    }
    // Case 2, destinations next to s: x first, then non-faulty, then faulty ones.
    let faulty = |v: u64| faults.contains(&v);
    let neighbour = dests
        .iter()
        .position(|&(d, _)| Some(d) == x)
        .or_else(|| {
            dests
                .iter()
                .position(|&(d, _)| adjacent(d, s) && !faulty(d))
        })
        .or_else(|| dests.iter().position(|&(d, _)| adjacent(d, s)));
    if let Some(pos) = neighbour {
        let (d, i) = dests[pos];
        if !faulty(d) {
            out[i] = VecDeque::from([s, d]);
            dests.remove(pos);
            faults.push(d);
            let x = x.filter(|&x| x != d);
            return xftn2s(free, s, dests, faults, x, out);
        }
        // A faulty destination next to s: aim at d' in N(d) \ (F ∪ D ∪ {s}), then step to d.
        let taken = |v: u64| v == s || faults.contains(&v) || dests.iter().any(|&(e, _)| e == v);
        let d2 = bits(free)
            .map(|j| d ^ (1u64 << j))
            .find(|&v| !taken(v))
            .ok_or(PathError::internal(
                "Cube-XFTN2S found no substitute for a faulty destination",
            ))?;
        dests[pos].0 = d2;
        xftn2s(free, s, dests, faults, x, out)?;
        out[i].push_back(d);
        return Ok(());
    }
    // Case 2, reduction along a dimension splitting D.
    let spread = dests.iter().fold(0, |acc, &(d, _)| acc | (d ^ dests[0].0)) & free;
    let bit = 1u64 << lowest(spread);
    let s1 = s ^ bit;
    let sub = free & !bit;
    let (d1, d0): (Vec<_>, Vec<_>) = dests.into_iter().partition(|&(d, _)| (d ^ s) & bit != 0);
    let s1_faulty = faults.contains(&s1);
    let mut f1: Vec<u64> = faults
        .iter()
        .filter(|&&f| f != s1 && (f ^ s1) & !sub == 0)
        .copied()
        .collect();
    f1.extend(
        faults
            .iter()
            .filter(|&&f| adjacent(f, s) && f != s1)
            .map(|&f| f ^ bit),
    );
    let upper: Vec<usize> = d1.iter().map(|&(_, i)| i).collect();
    xftn2s(sub, s1, d1, f1, None, out)?;
    let mut f0: Vec<u64> = faults
        .iter()
        .filter(|&&f| (f ^ s) & bit == 0)
        .copied()
        .collect();
    for (n, &i) in upper.iter().enumerate() {
        let path = &mut out[i];
        if n == 0 && !s1_faulty {
            path.push_front(s);
        } else {
            path.pop_front();
            let si = path[0] ^ bit;
            f0.push(si);
            path.push_front(si);
            path.push_front(s);
        }
    }
    let x0 = x.filter(|&x| (x ^ s) & bit == 0 && !f0.contains(&x));
    xftn2s(sub, s, d0, f0, x0, out)
}

/// Case 1, |D| = 1.
fn case_1(
    free: u64,
    s: u64,
    d: u64,
    faults: &[u64],
    x: Option<u64>,
) -> Result<Vec<u64>, PathError> {
    let blocked = |v: u64| faults.contains(&v);
    let internal = || PathError::internal("Cube-XFTN2S Case 1 found no fault-free path");
    if let Some(x) = x {
        if d == x {
            return Ok(vec![s, d]);
        }
        let bit = x ^ s;
        let sub = free & !bit;
        let inner: Vec<u64> = faults.iter().filter(|&&f| f != d).copied().collect();
        let mut path = vec![s];
        if (d ^ x) & bit == 0 {
            // d on x's side: s -> x ~> d by Cube-FTN2N.
            path.extend(ftn2n(sub, x, d, &inner).ok_or_else(internal)?);
            return Ok(path);
        }
        // d on s's side: a fault-free d ~> d' on x's side of at most two edges avoiding s.
        let (mid, d2) = std::iter::once((None, d ^ bit))
            .chain(bits(sub).map(|j| (Some(d ^ (1u64 << j)), d ^ (1u64 << j) ^ bit)))
            .find(|&(mid, d2)| !blocked(d2) && mid.is_none_or(|m| m != s && !blocked(m)))
            .ok_or_else(internal)?;
        path.extend(ftn2n(sub, x, d2, &inner).ok_or_else(internal)?);
        path.extend(mid);
        path.push(d);
        return Ok(path);
    }
    if blocked(d) && adjacent(s, d) {
        // A faulty destination next to s: s -> a -> a ^ (s ^ d) -> d with a fault-free middle.
        let e = s ^ d;
        return bits(free & !e)
            .map(|j| s ^ (1u64 << j))
            .find(|&a| !blocked(a) && !blocked(a ^ e))
            .map(|a| vec![s, a, a ^ e, d])
            .ok_or_else(internal);
    }
    let inner: Vec<u64> = faults.iter().filter(|&&f| f != d).copied().collect();
    ftn2n(free, s, d, &inner).ok_or_else(internal)
}
