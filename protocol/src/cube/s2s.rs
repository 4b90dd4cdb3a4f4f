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
//!   that receives moved ends must keep <= k-1 pairs. Every path then gains at most two edges per
//!   level while k drops by at least one, which gives (m-1) + (k-1) + 2 = m + k.
//! - **Search**: the dimensions are tried by decreasing slack, and for each the one-edge moves
//!   before the two-edge ones, sources first and then destinations first. We have no written
//!   proof that some dimension always admits a plan; the tests check it on every instance of
//!   Q_1..Q_4 with every fault set, and on random and adversarial instances up to Q_32. Should it
//!   ever fail, the function returns [`CubeError::Internal`] rather than a wrong path.

use super::ftn2n::ftn2n;
use super::{CubeError, Path, bits, check_set, dimension, full_mask, in_subcube};
use crate::NodeId;
use crate::hypercube::Hypercube;

/// Cube-S2S(Q_n, S, D, F): `paths[i]` runs from `sources[i]` to some destination; together they
/// end at every destination once.
pub fn cube_s2s(
    q: Hypercube,
    sources: &[NodeId],
    dests: &[NodeId],
    faults: &[NodeId],
) -> Result<Vec<Path>, CubeError> {
    let n = dimension(q)?;
    let srcs = check_set(n, sources, "sources")?;
    let dsts = check_set(n, dests, "destinations")?;
    let faults = check_set(n, faults, "faulty nodes")?;
    if srcs.is_empty() {
        return Err(CubeError::Empty("source set"));
    }
    if srcs.len() != dsts.len() {
        return Err(CubeError::SetSizes {
            sources: srcs.len(),
            destinations: dsts.len(),
        });
    }
    if srcs.len() > n as usize {
        return Err(CubeError::TooManyDestinations {
            given: dsts.len(),
            max: n as usize,
            n,
        });
    }
    if let Some(&v) = srcs.iter().find(|v| dsts.contains(v)) {
        return Err(CubeError::SourceIsDestination(v));
    }
    if let Some(&f) = faults.iter().find(|f| srcs.contains(f) || dsts.contains(f)) {
        return Err(CubeError::FaultyEndpoint(f));
    }
    if srcs.len() + faults.len() > n as usize {
        return Err(CubeError::TooManyFaults {
            faults: faults.len(),
            destinations: dsts.len(),
            max: n as usize - dsts.len(),
            n,
        });
    }
    let end = |(idx, &node): (usize, &u64)| End {
        node,
        idx,
        hops: Vec::new(),
    };
    let srcs: Vec<End> = srcs.iter().enumerate().map(end).collect();
    let dsts: Vec<End> = dsts.iter().enumerate().map(end).collect();
    let mut out = vec![Vec::new(); srcs.len()];
    s2s(full_mask(n), srcs, dsts, faults, &mut out)?;
    Ok(out
        .into_iter()
        .map(|p| p.into_iter().map(NodeId).collect())
        .collect())
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

fn s2s(
    free: u64,
    srcs: Vec<End>,
    dsts: Vec<End>,
    mut faults: Vec<u64>,
    out: &mut [Vec<u64>],
) -> Result<(), CubeError> {
    let Some(base) = srcs.first().map(|e| e.node) else {
        return Ok(());
    };
    faults.retain(|&f| in_subcube(f, base, free));
    if srcs.len() == 1 {
        let core = ftn2n(free, srcs[0].node, dsts[0].node, &faults)
            .ok_or(CubeError::Internal("Cube-S2S: Cube-FTN2N blocked"))?;
        finish(out, &srcs[0], &core, &dsts[0]);
        return Ok(());
    }
    let m = free.count_ones() as usize;
    let mut dims: Vec<(i64, u32)> = bits(free)
        .map(|delta| (slack(delta, &srcs, &dsts, &faults, m), delta))
        .collect();
    dims.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    for &(_, delta) in &dims {
        for sources_first in [true, false] {
            if let Some(plan) = plan(free, delta, &srcs, &dsts, &faults, sources_first) {
                return apply(free, delta, plan, out);
            }
        }
    }
    Err(CubeError::Internal("Cube-S2S found no balancing dimension"))
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
    sources_first: bool,
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
        for sources in [sources_first, !sources_first] {
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
        if s.len() + f.len() > m - 1 || (received[j] && s.len() >= k) {
            return None;
        }
    }
    Some(Plan { sides, finished })
}

fn apply(free: u64, delta: u32, plan: Plan, out: &mut [Vec<u64>]) -> Result<(), CubeError> {
    for (s, d) in &plan.finished {
        finish(out, s, &[s.node, d.node], d);
    }
    let sub = free & !(1u64 << delta);
    for (s, d, f) in plan.sides {
        s2s(sub, s, d, f, out)?;
    }
    Ok(())
}
