//! HC-SPR and HC-CONTAINER: internally disjoint paths under a bit constraint (seed 001, Bossard
//! and Kaneko, "A routing algorithm solving the container problem in a hypercube with bit
//! constraint", §3, Algorithms 1-3, Lemma 3, Theorem 4).
//!
//! A node satisfies gamma_i = (i, i+1) when its weight (number of one bits) is i or i+1; a path
//! satisfies it when all its nodes do. Between two distinct nodes s, d satisfying gamma_i in Q_n,
//! HC-CONTAINER returns k = min(n-i, i+1) internally disjoint gamma_i-paths of length <= n+3k in
//! O(kn). HC-SPR, the paper's reference 13, is a shortest gamma-path: at weight i flip a bit that
//! is 0 here and 1 in d, at weight i+1 a bit that is 1 here and 0 in d (the highest such bit).
//!
//! The recursion reduces along a dimension δ (CASE1: s_δ = 0, d_δ = 1), builds k-1 paths from
//! s' = s ^ 2^z ^ 2^δ to d in d's subcube, a path p* from s to d inside s's subcube and through one
//! edge (1.A) or two (1.B) to d, and lifts the k-1 paths onto s through s'' = s ^ 2^δ or a stub
//! s -> v_j -> u_j -> u'_j. CASE2 (w(s) = i+1, w(d) = i+1) is CASE1 on complemented addresses
//! (complementing the free dimensions maps gamma_i onto gamma_{n-1-i} and the paper's CASE2 steps
//! onto CASE1's one by one); w(s) = i+1, w(d) = i swaps s and d and reverses the paths.
//!
//! Departures from the paper (its errors are listed in docs/cube-algorithms.md and each has a
//! test in `protocol/tests/container.rs`):
//! 1. z and every stub dimension are taken among the *free* dimensions of the current subcube
//!    (literal `⌊log s⌋` / `⌊log ¬s⌋` can name a fixed dimension, and ¬s is unmasked).
//! 2. s' = s ^ 2^z ^ 2^δ and u_j = v_j ^ 2^z (the pseudo-code writes `⊕ z`); the stubs are all
//!    n-i-1 gamma-neighbours of s on its side, not k-1 of them, and the detour stub u'_w ranges
//!    over all of them.
//! 3. CASE1 1.B ends p* with w -> d (line 42 returns p* -> d for both sub-cases).
//! 4. CASE2 takes w in d's own subcube (line 12 says Q^1, which holds no gamma-neighbour of d).
//! 5. p* starts at s and is spliced: its prefix up to the stub node closest to d' is replaced by
//!    that stub's prefix. (HC-SPR paths are shortest, so they meet one stub at most, in their
//!    first two hops, and the splice changes nothing; it is kept for any other p*.) What matters
//!    is the stub x it takes: the recursive path through u'_x cannot be lifted through x.
//! 6. Paths are kept *normalised*: each holds exactly one neighbour of its source (its first hop)
//!    and one of d (its last hop). The recursion and lifting keep this by construction; the only
//!    paths that may break it, the detours, are shortcut (s' ~> u'_2 -> d, not the paper's
//!    s' ~> u'_1 -> d, which is not an edge). Then "the neighbours of s' used by P" are the first
//!    hops and "the neighbours of d used by P" the last hops: O(k) per level, O(kn) in all (the
//!    paper's O(n) per step ignores the scan; naively it is O(k^2 n)).
//! 7. The cases the paper omits: s' = d (handled as in its Table 1: the k-1 paths through the far
//!    side are stubs s -> v -> u -> u' -> d, lowest stubs first, and p* prefers a w other than
//!    s''), d = s'' (p* is the edge s -> d; a recursive path s' -> d becomes
//!    s -> v_w -> u_w -> u'_w -> s' -> d), and w = s'' (taken first when free: p* = s -> s'' -> d,
//!    shorter than any other choice and blocking no stub).
//!
//! Choices where the paper is free: δ and z are the highest admissible dimensions (this is what
//! reproduces Table 1); otherwise w is the highest free candidate.

use super::{adjacent, bits, check_node, dimension, full_mask, highest};
use crate::NodeId;
use crate::paths::error::PathError;
use crate::paths::system::{Path, PathSystem};
use crate::topology::hypercube::Hypercube;
use std::collections::VecDeque;

/// k = min(n-i, i+1), the number of paths HC-CONTAINER returns for gamma_i in Q_n.
pub fn container_width(n: u32, i: u32) -> usize {
    n.saturating_sub(i).min(i + 1) as usize
}

/// Does `v` satisfy gamma_i?
pub fn satisfies(i: u32, v: NodeId) -> bool {
    let w = v.0.count_ones();
    w == i || w == i + 1
}

/// HC-SPR: one shortest gamma_i-path from s to d (length H(s,d)).
pub fn hc_spr(q: Hypercube, i: u32, s: NodeId, d: NodeId) -> Result<PathSystem, PathError> {
    let n = check_input(q, i, s, d)?;
    let path = spr(full_mask(n), i, s.0, d.0);
    Ok(PathSystem::paper(vec![
        path.into_iter().map(NodeId).collect(),
    ]))
}

/// HC-CONTAINER(Q_n, i, k, s, d) with k = min(n-i, i+1).
pub fn hc_container(q: Hypercube, i: u32, s: NodeId, d: NodeId) -> Result<PathSystem, PathError> {
    hc_container_traced(q, i, s, d).map(|(paths, _)| PathSystem::paper(paths))
}

/// HC-CONTAINER with the record of every reduction, outermost first: the columns of the paper's
/// Table 1 and the cases taken.
pub fn hc_container_traced(
    q: Hypercube,
    i: u32,
    s: NodeId,
    d: NodeId,
) -> Result<(Vec<Path>, Vec<Reduction>), PathError> {
    let n = check_input(q, i, s, d)?;
    let k = container_width(n, i);
    let mut trace = Vec::new();
    let paths = container(full_mask(n), i, k, s.0, d.0, 0, false, &mut trace)?;
    let paths = paths
        .into_iter()
        .map(|p| p.into_iter().map(NodeId).collect())
        .collect();
    Ok((paths, trace))
}

fn check_input(q: Hypercube, i: u32, s: NodeId, d: NodeId) -> Result<u32, PathError> {
    let n = dimension(q)?;
    if i >= n {
        return Err(PathError::ConstraintRange { i, n });
    }
    for v in [s, d] {
        check_node(n, v)?;
        if !satisfies(i, v) {
            return Err(PathError::ViolatesConstraint {
                node: v.0,
                weight: v.0.count_ones(),
                i,
            });
        }
    }
    if s == d {
        return Err(PathError::SameNode(s.0));
    }
    Ok(n)
}

/// Which case a reduction took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Case {
    /// w(s) = i, w(d) = i+1.
    Case1A,
    /// w(s) = i, w(d) = i.
    Case1B,
    /// w(s) = i+1, w(d) = i+1: CASE1.B on complemented addresses.
    Case2,
}

/// The paper's omitted simple cases, when one occurred.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Special {
    /// s' = d.
    SPrimeIsD,
    /// d = s'' (so d' = s).
    DIsSSecond,
    /// w = s'' (so d' = s and p* = s -> s'' -> d).
    WIsSSecond,
}

/// How the recursive path whose stub p* took was joined to s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Detour {
    /// s -> s'' -> s' -> u'_x ~> d.
    ViaSSecond,
    /// s -> v_w -> u_w -> u'_w -> s' -> u'_x ~> d, with stub dimension w.
    ViaStub(u32),
}

/// One reduction of HC-CONTAINER, in the caller's addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reduction {
    /// Dimension of the subcube reduced (the `n` column of Table 1).
    pub dimension: u32,
    pub k: usize,
    pub case: Case,
    /// The caller had w(s) = i+1 and w(d) = i: s and d were swapped to get here.
    pub swapped: bool,
    pub delta: u32,
    pub z: u32,
    pub s: NodeId,
    pub d: NodeId,
    pub s_prime: NodeId,
    pub s_second: NodeId,
    pub d_prime: Option<NodeId>,
    pub w: Option<NodeId>,
    pub special: Option<Special>,
    /// The stub dimension p* took (x), if any.
    pub stub_x: Option<u32>,
    pub detour: Option<Detour>,
    /// Stub dimensions used by any path of this level (lifted paths, p*, detours).
    pub stubs_used: Vec<u32>,
    /// Number of stub dimensions available (n-i-1 in the paper's terms).
    pub stubs_available: usize,
    /// A recursive path left s' through u'_x, the stub p* took: lifting it through its own stub
    /// (s -> v_x -> u_x -> u'_x) would meet p*, so it was detoured.
    pub naive_lift_would_collide: bool,
    /// Path nodes looked at by this level to decide membership (first and last hops, the
    /// splice scan, detour normalisation).
    pub inspected: usize,
}

fn weight(free: u64, v: u64) -> u32 {
    (v & free).count_ones()
}

/// HC-SPR in the subcube of free dimensions `free`, constraint `lo` on the free bits.
fn spr(free: u64, lo: u32, s: u64, d: u64) -> Vec<u64> {
    let mut path = vec![s];
    let mut cur = s;
    while cur != d {
        let diff = (cur ^ d) & free;
        let cand = if weight(free, cur) == lo {
            diff & d
        } else {
            diff & cur
        };
        cur ^= 1u64 << highest(cand);
        path.push(cur);
    }
    path
}

type Deq = VecDeque<u64>;

/// The recursion. Nodes are internal addresses; `flip` maps them to the caller's (v ^ flip).
#[allow(clippy::too_many_arguments)]
fn container(
    free: u64,
    lo: u32,
    k: usize,
    s: u64,
    d: u64,
    flip: u64,
    swapped: bool,
    trace: &mut Vec<Reduction>,
) -> Result<Vec<Deq>, PathError> {
    if free != 0 && flip & free == free {
        // A complemented frame (inside CASE2): decide in the caller's addresses, as the paper.
        let m = free.count_ones();
        let mut paths = container(
            free,
            m - lo - 1,
            k,
            s ^ free,
            d ^ free,
            flip ^ free,
            swapped,
            trace,
        )?;
        for p in &mut paths {
            p.iter_mut().for_each(|v| *v ^= free);
        }
        return Ok(paths);
    }
    if k == 1 {
        return Ok(vec![spr(free, lo, s, d).into()]);
    }
    let (ws, wd) = (weight(free, s), weight(free, d));
    if ws == lo {
        case_1(free, lo, k, s, d, flip, swapped, false, trace)
    } else if wd == lo {
        let mut paths = container(free, lo, k, d, s, flip, true, trace)?;
        for p in &mut paths {
            p.make_contiguous().reverse();
        }
        Ok(paths)
    } else {
        let m = free.count_ones();
        let mut paths = case_1(
            free,
            m - lo - 1,
            k,
            s ^ free,
            d ^ free,
            flip ^ free,
            swapped,
            true,
            trace,
        )?;
        for p in &mut paths {
            p.iter_mut().for_each(|v| *v ^= free);
        }
        Ok(paths)
    }
}

/// Cut a path at its first inner neighbour of its end, and from its last inner neighbour of its
/// start (the paper's error 6 in docs/cube-algorithms.md). Returns the nodes looked at.
fn normalise(path: &mut Deq) -> usize {
    let (s, d) = (path[0], path[path.len() - 1]);
    let len = path.len();
    if let Some(t) = (1..path.len() - 1).find(|&t| adjacent(path[t], d)) {
        path.truncate(t + 1);
        path.push_back(d);
    }
    if let Some(t) = (1..path.len() - 1).rev().find(|&t| adjacent(path[t], s)) {
        path.drain(1..t);
    }
    len
}

#[allow(clippy::too_many_arguments)]
fn case_1(
    free: u64,
    lo: u32,
    k: usize,
    s: u64,
    d: u64,
    flip: u64,
    swapped: bool,
    mirrored: bool,
    trace: &mut Vec<Reduction>,
) -> Result<Vec<Deq>, PathError> {
    let m = free.count_ones();
    let delta = highest((s ^ d) & d & free);
    let bit = 1u64 << delta;
    let z = highest(s & free);
    let zb = 1u64 << z;
    let s2 = s ^ bit;
    let s1 = s ^ zb ^ bit;
    let sub = free & !bit;
    let stub_dims = free & !s & !bit;
    let v = |b: u32| s ^ (1u64 << b);
    let u = |b: u32| s ^ (1u64 << b) ^ zb;
    let u1 = |b: u32| s1 ^ (1u64 << b);
    let case = if weight(free, d) == lo + 1 {
        Case::Case1A
    } else {
        Case::Case1B
    };
    let slot = trace.len();
    trace.push(Reduction {
        dimension: m,
        k,
        case: if mirrored { Case::Case2 } else { case },
        swapped,
        delta,
        z,
        s: NodeId(s ^ flip),
        d: NodeId(d ^ flip),
        s_prime: NodeId(s1 ^ flip),
        s_second: NodeId(s2 ^ flip),
        d_prime: None,
        w: None,
        special: None,
        stub_x: None,
        detour: None,
        stubs_used: Vec::new(),
        stubs_available: stub_dims.count_ones() as usize,
        naive_lift_would_collide: false,
        inspected: 0,
    });
    let mut inspected = 0;
    let mut special = None;
    // The k-1 paths through d's side, not yet lifted (None when s' = d: built whole below).
    let recursive: Option<Vec<Deq>> = if s1 == d {
        special = Some(Special::SPrimeIsD);
        None
    } else {
        if d == s2 {
            special = Some(Special::DIsSSecond);
        }
        Some(container(sub, lo - 1, k - 1, s1, d, flip, false, trace)?)
    };
    let mut result: Vec<Deq> = Vec::with_capacity(k);
    let mut firsts: Vec<u64> = Vec::new();
    let mut lasts: Vec<u64> = Vec::new();
    let mut stubs_used: Vec<u32> = Vec::new();
    match &recursive {
        Some(paths) => {
            for p in paths {
                firsts.push(p[1]);
                lasts.push(p[p.len() - 2]);
                inspected += 2;
            }
        }
        None => {
            for b in bits(stub_dims).take(k - 1) {
                result.push(Deq::from([s, v(b), u(b), u1(b), d]));
                lasts.push(u1(b));
                stubs_used.push(b);
            }
        }
    }
    // p*: s ~> d' in s's side, then d' -> d (1.A) or d' -> w -> d (1.B).
    let (d_prime, w, pstar_stub, pstar): (Option<u64>, Option<u64>, Option<u32>, Deq) =
        if special == Some(Special::DIsSSecond) {
            (Some(s), None, None, Deq::from([s, d]))
        } else {
            let (d_prime, tail, w) = if case == Case::Case1A {
                (d ^ bit, vec![d], None)
            } else {
                let candidates: Vec<u64> = bits(sub & !d)
                    .map(|b| d ^ (1u64 << b))
                    .filter(|c| !lasts.contains(c))
                    .collect();
                let w = if special == Some(Special::SPrimeIsD) {
                    candidates
                        .iter()
                        .rev()
                        .copied()
                        .find(|&c| c != s2)
                        .or(candidates.first().copied())
                } else if candidates.contains(&s2) {
                    Some(s2)
                } else {
                    candidates.last().copied()
                };
                // Lemma 2: d has m-i >= k gamma-neighbours on its side and P uses k-1 of them.
                let w = w.ok_or(PathError::internal(
                    "HC-CONTAINER found no free neighbour w of d",
                ))?;
                if w == s2 && special.is_none() {
                    special = Some(Special::WIsSSecond);
                }
                (w ^ bit, vec![w, d], Some(w))
            };
            let core = spr(sub, lo, s, d_prime);
            inspected += core.len();
            let stub_of = |node: u64| -> Option<u32> {
                let x = node ^ s;
                if x.count_ones() == 1 && x & stub_dims != 0 {
                    Some(x.trailing_zeros())
                } else if x.count_ones() == 2 && x & zb != 0 && (x & !zb) & stub_dims != 0 {
                    Some((x & !zb).trailing_zeros())
                } else {
                    None
                }
            };
            let splice = (1..core.len())
                .rev()
                .find_map(|t| stub_of(core[t]).map(|b| (t, b)));
            let mut pstar = Deq::from([s]);
            let stub = match splice {
                Some((t, b)) => {
                    pstar.push_back(v(b));
                    if core[t] == u(b) {
                        pstar.push_back(u(b));
                    }
                    pstar.extend(&core[t + 1..]);
                    Some(b)
                }
                None => None,
            };
            pstar.extend(tail);
            (Some(d_prime), w, stub, pstar)
        };
    if let Some(b) = pstar_stub {
        stubs_used.push(b);
        trace[slot].naive_lift_would_collide = firsts.contains(&u1(b));
    }
    let mut detour = None;
    if let Some(paths) = recursive {
        for mut p in paths {
            let f = p[1];
            let stub = bits(stub_dims).find(|&b| u1(b) == f);
            let blocked = f == d && special == Some(Special::DIsSSecond)
                || stub.is_some() && stub == pstar_stub;
            if f == s2 && !blocked {
                p.pop_front();
                p.push_front(s);
            } else if blocked {
                // Blocked: p* uses this stub (or, d = s'', p* is the edge s -> d).
                let spare =
                    |b: u32| Some(b) != pstar_stub && !firsts.contains(&u1(b)) && Some(u1(b)) != w;
                if special != Some(Special::DIsSSecond) && !firsts.contains(&s2) && w != Some(s2) {
                    detour = Some(Detour::ViaSSecond);
                    p.push_front(s2);
                } else {
                    // Lemma 2: P uses k-2 stubs besides u'_x and s'', and there are >= k-1.
                    let b = bits(stub_dims)
                        .find(|&b| spare(b))
                        .ok_or(PathError::internal(
                            "HC-CONTAINER found no spare stub for a detour",
                        ))?;
                    detour = Some(Detour::ViaStub(b));
                    stubs_used.push(b);
                    p.push_front(u1(b));
                    p.push_front(u(b));
                    p.push_front(v(b));
                }
                p.push_front(s);
                inspected += normalise(&mut p);
            } else {
                let b = stub.ok_or(PathError::internal(
                    "HC-CONTAINER: a recursive path leaves s' neither through s'' nor a stub",
                ))?;
                stubs_used.push(b);
                p.pop_front();
                p.push_front(u(b));
                p.push_front(v(b));
                p.push_front(s);
            }
            result.push(p);
        }
    }
    result.push(pstar);
    let r = &mut trace[slot];
    r.d_prime = d_prime.map(|x| NodeId(x ^ flip));
    r.w = w.map(|x| NodeId(x ^ flip));
    r.special = special;
    r.stub_x = pstar_stub;
    r.detour = detour;
    stubs_used.sort_unstable();
    stubs_used.dedup();
    r.stubs_used = stubs_used;
    r.inspected = inspected;
    Ok(result)
}
