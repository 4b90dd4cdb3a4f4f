//! Cube-S2S: fault-tolerant set-to-set disjoint paths in Q_n (thesis, chapter 6 Lemma 11 and
//! chapter 7 Lemma 19, citing Gu, Okawa and Peng, IEICE E79-A(4), 1996).
//!
//! Given k <= n sources S, k destinations D and at most n-k faulty nodes F (S, D, F pairwise
//! disjoint), it returns k fault-free paths, pairwise disjoint, each from a source to a
//! destination, every node of S and of D used once: the algorithm chooses which source reaches
//! which destination. Length <= n+k.
//!
//! **Paired or not.** The thesis's Lemma 19 states exactly this unpaired problem ("s_i ~> d_{j_i}"
//! for a permutation j). A paired version (s_i must reach d_i) cannot exist for k up to n: in Q_2
//! the pairs 00 -> 11 and 01 -> 10 have no disjoint paths (a unit test shows it), and Q_n is only
//! known to be about n/2-linked. So there is one algorithm, and its output says who reaches whom.
//!
//! The thesis only cites the algorithm and summarises it (§2: reduce along a dimension, balance
//! the number of sources and destinations on each side by moving some of them across with paths
//! of at most two edges, recurse; a fault-tolerant node-to-node routing for a single pair); the
//! paper is not among our sources, so the construction below is ours, in that outline:
//!
//! - **Invariant**: k + |F ∩ subcube| <= m in a subcube of m free dimensions.
//! - **Base**: k = 1 is [`super::ftn2n`] (<= m-1 faults, <= m+1 = m+k edges).
//! - **Step**: pick a dimension δ; call *heavy* the side with more sources than destinations. The
//!   excess a is removed by a moves, each of one of five kinds: a heavy source whose mirror is a
//!   light destination is joined to it by that edge; a heavy source or a light destination crosses
//!   to its mirror (one edge), or through a neighbour on its own side (two edges). The node left
//!   behind and the middle node of a two-edge move become faults of their side. A side's load is
//!   then exactly max(|S_j|,|D_j|) + |F_j| + (middle nodes on it), which must stay <= m-1; a side
//!   that receives moved ends must keep <= k-1 pairs. A path gains edges only at a level that
//!   moves one of its ends (at most two), into a side of at most k-1 pairs; so with L(m,1) = m+1,
//!   L(m,k) <= max(L(m-1,k), L(m-1,k-1) + 2) <= m + k.
//! - **Search**: the invariant cannot always be kept (in Q_4, S = {0,1,2}, D = {7,11,15},
//!   F = {3} overloads a side for every δ, yet the instance is easy), so the construction is a
//!   search with backtracking: dimensions by decreasing slack, for each four plans (move only
//!   sources, only destinations, sources first, destinations first; one-edge moves before
//!   two-edge ones; direct pairs always), a side allowed one unit over
//!   the invariant; a sub-instance that fails sends the search to the next plan. The length bound
//!   holds for whatever plan succeeds. Departure: the time is not Gu, Okawa and Peng's
//!   O(kn log k); each plan costs about O(kn) to build, the measured times are microseconds
//!   (docs/notes/2026-11-22-study-q-n.md), but the number of plans tried is exponential in k
//!   at worst. We have no
//!   proof that some plan always works; the tests check it
//!   on every instance of Q_1..Q_4 with every fault set, and on random and crowded instances up
//!   to Q_32. Should it fail, the function returns [`PathError::Internal`], never a wrong path.

use super::ftn2n::ftn2n;
use super::{bits, check_set, dimension, full_mask, in_subcube};
use crate::NodeId;
use crate::paths::error::PathError;
use crate::paths::system::PathSystem;
use crate::topology::hypercube::Hypercube;

/// Cube-S2S(Q_n, S, D, F): `paths[i]` runs from `sources[i]` to some destination; together they
/// end at every destination once.
pub fn cube_s2s(
    q: Hypercube,
    sources: &[NodeId],
    dests: &[NodeId],
    faults: &[NodeId],
) -> Result<PathSystem, PathError> {
    let n = dimension(q)?;
    let srcs = check_set(n, sources, "sources")?;
    let dsts = check_set(n, dests, "destinations")?;
    let faults = check_set(n, faults, "faulty nodes")?;
    if srcs.is_empty() {
        return Err(PathError::Empty("source set"));
    }
    if srcs.len() != dsts.len() {
        return Err(PathError::SetSizes {
            sources: srcs.len(),
            destinations: dsts.len(),
        });
    }
    if srcs.len() > n as usize {
        return Err(PathError::OverAlgorithmLimit {
            given: dsts.len(),
            max: n as usize,
            n,
        });
    }
    if let Some(&v) = srcs.iter().find(|v| dsts.contains(v)) {
        return Err(PathError::SourceIsDestination(v));
    }
    if let Some(&f) = faults.iter().find(|f| srcs.contains(f) || dsts.contains(f)) {
        return Err(PathError::FaultyEndpoint(f));
    }
    if srcs.len() + faults.len() > n as usize {
        return Err(PathError::TooManyFaults {
            faults: faults.len(),
            destinations: dsts.len(),
            max: n as usize - dsts.len(),
            n,
        });
    }
    // Translate by the first source (an automorphism): the answer for (S, D, F) is the answer
    // for (S^t, D^t, F^t) translated back, which the exhaustive tests rely on.
    let t = srcs[0];
    let end = |(idx, &node): (usize, &u64)| End {
        node: node ^ t,
        idx,
        hops: Vec::new(),
    };
    let faults: Vec<u64> = faults.iter().map(|&f| f ^ t).collect();
    let srcs: Vec<End> = srcs.iter().enumerate().map(end).collect();
    let dsts: Vec<End> = dsts.iter().enumerate().map(end).collect();
    let mut out = vec![Vec::new(); srcs.len()];
    if !s2s(full_mask(n), srcs, dsts, faults, &mut out) {
        return Err(PathError::internal("Cube-S2S found no plan"));
    }
    Ok(PathSystem::paper(
        out.into_iter()
            .map(|p| p.into_iter().map(|v| NodeId(v ^ t)).collect())
            .collect(),
    ))
}

/// An end of a future path: where it stands now, and the nodes it has moved through to get there
/// from the original source or destination (original first).
#[derive(Clone, Debug)]
struct End {
    node: u64,
    idx: usize,
    hops: Vec<u64>,
}

impl End {
    fn moved(&self, via: &[u64], to: u64) -> End {
        let mut hops = self.hops.clone();
        hops.push(self.node);
        hops.extend(via);
        End {
            node: to,
            idx: self.idx,
            hops,
        }
    }
}

/// Write the whole path: the source's hops, the core, the destination's hops backwards.
fn finish(out: &mut [Vec<u64>], s: &End, core: &[u64], d: &End) {
    let mut path = s.hops.clone();
    path.extend(core);
    path.extend(d.hops.iter().rev());
    out[s.idx] = path;
}

/// The recursion; `false` when no plan of this subcube works (the caller then tries another).
fn s2s(
    free: u64,
    srcs: Vec<End>,
    dsts: Vec<End>,
    mut faults: Vec<u64>,
    out: &mut [Vec<u64>],
) -> bool {
    let Some(base) = srcs.first().map(|e| e.node) else {
        return true;
    };
    faults.retain(|&f| in_subcube(f, base, free));
    if srcs.len() == 1 {
        let Some(core) = ftn2n(free, srcs[0].node, dsts[0].node, &faults) else {
            return false;
        };
        finish(out, &srcs[0], &core, &dsts[0]);
        return true;
    }
    let m = free.count_ones() as usize;
    let mut dims: Vec<(i64, u32)> = bits(free)
        .map(|delta| (slack(delta, &srcs, &dsts, &faults, m), delta))
        .collect();
    dims.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    for &(_, delta) in &dims {
        for kinds in [
            Kinds::SourcesOnly,
            Kinds::DestinationsOnly,
            Kinds::SourcesFirst,
            Kinds::DestinationsFirst,
        ] {
            if let Some(plan) = plan(free, delta, &srcs, &dsts, &faults, kinds) {
                if apply(free, delta, plan, out) {
                    return true;
                }
            }
        }
    }
    false
}

/// min over the two sides of (m-1) - load, before any two-edge move.
fn slack(delta: u32, srcs: &[End], dsts: &[End], faults: &[u64], m: usize) -> i64 {
    let side = |v: u64| (v >> delta & 1) as usize;
    let mut s = [0i64; 2];
    let mut d = [0i64; 2];
    let mut f = [0i64; 2];
    srcs.iter().for_each(|e| s[side(e.node)] += 1);
    dsts.iter().for_each(|e| d[side(e.node)] += 1);
    faults.iter().for_each(|&v| f[side(v)] += 1);
    (0..2)
        .map(|j| m as i64 - 1 - (s[j].max(d[j]) + f[j]))
        .min()
        .unwrap()
}

/// Which ends a plan may move across, in which order (direct pairs are always allowed).
#[derive(Clone, Copy, Debug)]
enum Kinds {
    SourcesOnly,
    DestinationsOnly,
    SourcesFirst,
    DestinationsFirst,
}

impl Kinds {
    /// `true` stands for sources, `false` for destinations.
    fn order(self) -> &'static [bool] {
        match self {
            Kinds::SourcesOnly => &[true],
            Kinds::DestinationsOnly => &[false],
            Kinds::SourcesFirst => &[true, false],
            Kinds::DestinationsFirst => &[false, true],
        }
    }
}

/// The two sub-instances of a reduction, and the paths it finished (direct pairs).
struct Plan {
    sides: [(Vec<End>, Vec<End>, Vec<u64>); 2],
    finished: Vec<(End, End)>,
}

fn plan(
    free: u64,
    delta: u32,
    srcs: &[End],
    dsts: &[End],
    faults: &[u64],
    kinds: Kinds,
) -> Option<Plan> {
    let bit = 1u64 << delta;
    let side = |v: u64| (v >> delta & 1) as usize;
    let m = free.count_ones() as usize;
    let k = srcs.len();
    let count = |set: &[End], j: usize| set.iter().filter(|e| side(e.node) == j).count();
    let heavy = if count(srcs, 0) >= count(dsts, 0) {
        0
    } else {
        1
    };
    let light = 1 - heavy;
    let mut excess = count(srcs, heavy) - count(dsts, heavy);
    let mut sides: [(Vec<End>, Vec<End>, Vec<u64>); 2] = Default::default();
    for &f in faults {
        sides[side(f)].2.push(f);
    }
    // The load of a side: max(|S_j|, |D_j|) + |F_j|, whatever moves are chosen.
    let mut load = [0usize; 2];
    load[heavy] = count(srcs, heavy) + sides[heavy].2.len();
    load[light] = count(dsts, light) + sides[light].2.len();
    let mut busy: Vec<u64> = srcs
        .iter()
        .chain(dsts)
        .map(|e| e.node)
        .chain(faults.iter().copied())
        .collect();
    let mut finished = Vec::new();
    let mut received = [false; 2];
    let heavy_srcs: Vec<&End> = srcs.iter().filter(|e| side(e.node) == heavy).collect();
    let light_dsts: Vec<&End> = dsts.iter().filter(|e| side(e.node) == light).collect();
    sides[light]
        .0
        .extend(srcs.iter().filter(|e| side(e.node) == light).cloned());
    sides[heavy]
        .1
        .extend(dsts.iter().filter(|e| side(e.node) == heavy).cloned());
    let mut moved_s = vec![false; heavy_srcs.len()];
    let mut moved_d = vec![false; light_dsts.len()];
    // Direct pairs: a heavy source whose mirror is a light destination.
    for (a, s) in heavy_srcs.iter().enumerate() {
        if excess == 0 {
            break;
        }
        let mirror =
            (0..light_dsts.len()).find(|&b| !moved_d[b] && light_dsts[b].node == s.node ^ bit);
        if let Some(b) = mirror {
            moved_s[a] = true;
            moved_d[b] = true;
            excess -= 1;
            sides[heavy].2.push(s.node);
            sides[light].2.push(light_dsts[b].node);
            finished.push(((*s).clone(), light_dsts[b].clone()));
        }
    }
    // One-edge moves, then two-edge moves whose middle node costs its side one unit of slack.
    for two_edges in [false, true] {
        for &sources in kinds.order() {
            let (ends, moved, from, to) = if sources {
                (&heavy_srcs, &mut moved_s, heavy, light)
            } else {
                (&light_dsts, &mut moved_d, light, heavy)
            };
            for (a, e) in ends.iter().enumerate() {
                if excess == 0 {
                    break;
                }
                if moved[a] {
                    continue;
                }
                let found = if !two_edges {
                    let t = e.node ^ bit;
                    (!busy.contains(&t)).then_some((None, t))
                } else if load[from] < m - 1 {
                    bits(free & !bit)
                        .map(|j| e.node ^ (1u64 << j))
                        .find(|&mid| !busy.contains(&mid) && !busy.contains(&(mid ^ bit)))
                        .map(|mid| (Some(mid), mid ^ bit))
                } else {
                    None
                };
                let Some((mid, t)) = found else { continue };
                moved[a] = true;
                excess -= 1;
                busy.push(t);
                sides[from].2.push(e.node);
                if let Some(mid) = mid {
                    busy.push(mid);
                    load[from] += 1;
                    sides[from].2.push(mid);
                }
                let via: Vec<u64> = mid.into_iter().collect();
                let end = e.moved(&via, t);
                received[to] = true;
                if sources {
                    sides[to].0.push(end);
                } else {
                    sides[to].1.push(end);
                }
            }
        }
    }
    if excess != 0 {
        return None;
    }
    sides[heavy].0.extend(
        heavy_srcs
            .iter()
            .zip(&moved_s)
            .filter(|(_, m)| !**m)
            .map(|(e, _)| (*e).clone()),
    );
    sides[light].1.extend(
        light_dsts
            .iter()
            .zip(&moved_d)
            .filter(|(_, m)| !**m)
            .map(|(e, _)| (*e).clone()),
    );
    for (j, (s, d, f)) in sides.iter().enumerate() {
        debug_assert_eq!(s.len(), d.len());
        // One over the invariant is still tried: such sub-instances often solve, and a failure
        // only sends the search to the next plan.
        if s.len() + f.len() > m || (received[j] && s.len() >= k) {
            return None;
        }
    }
    Some(Plan { sides, finished })
}

fn apply(free: u64, delta: u32, plan: Plan, out: &mut [Vec<u64>]) -> bool {
    for (s, d) in &plan.finished {
        finish(out, s, &[s.node, d.node], d);
    }
    let sub = free & !(1u64 << delta);
    plan.sides
        .into_iter()
        .all(|(s, d, f)| s2s(sub, s, d, f, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Why there is no paired variant for k up to n: in Q_2 (a 4-cycle) the pairs 00 -> 11 and
    /// 01 -> 10 cannot be joined disjointly, since both paths from 00 to 11 pass through 01 or 10.
    #[test]
    fn paired_routing_is_impossible_in_q2() {
        let paths_00_11 = [[0b00, 0b01, 0b11], [0b00, 0b10, 0b11]];
        assert!(
            paths_00_11
                .iter()
                .all(|p| p.contains(&0b01) || p.contains(&0b10))
        );
        // Unpaired, the same sets are easy: each source goes to an adjacent destination.
        let q = Hypercube { n: 2 };
        let ids = |v: &[u64]| v.iter().map(|&x| NodeId(x)).collect::<Vec<_>>();
        let paths = cube_s2s(q, &ids(&[0b00, 0b01]), &ids(&[0b11, 0b10]), &[])
            .unwrap()
            .paths;
        assert!(paths.iter().all(|p| p.len() == 2));
    }

    #[test]
    fn refuses_bad_input() {
        let q = Hypercube { n: 3 };
        let ids = |v: &[u64]| v.iter().map(|&x| NodeId(x)).collect::<Vec<_>>();
        let e =
            |s: &[u64], d: &[u64], f: &[u64]| cube_s2s(q, &ids(s), &ids(d), &ids(f)).unwrap_err();
        assert_eq!(
            e(&[0, 1], &[2], &[]),
            PathError::SetSizes {
                sources: 2,
                destinations: 1
            }
        );
        assert_eq!(e(&[0, 1], &[1, 2], &[]), PathError::SourceIsDestination(1));
        assert_eq!(e(&[0], &[1], &[1]), PathError::FaultyEndpoint(1));
        assert!(matches!(
            e(&[0, 1], &[2, 3], &[4, 5]),
            PathError::TooManyFaults { .. }
        ));
        assert!(matches!(
            e(&[0, 1, 2, 3], &[4, 5, 6, 7], &[]),
            PathError::OverAlgorithmLimit { .. }
        ));
        assert_eq!(e(&[], &[], &[]), PathError::Empty("source set"));
    }
}
