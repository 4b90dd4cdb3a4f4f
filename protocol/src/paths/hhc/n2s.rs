//! HHC-N2S (thesis chapter 5, Algorithm 6, Theorem 2): k <= m+1 disjoint paths from a node to k
//! nodes of HHC_{2^m+m}, of length at most m 2^m + 2^m + 2m + 4, in O(k m 2^m).
//!
//! **Case I** (at most one destination outside the source's subcube Q_m(s_0)) is shared with
//! HHC-iN2S ([`case_one`]): Cube-N2S inside Q_m(s_0), plus one path outside it for the last
//! destination (I-b: four external edges around a square of subcubes; I-c: a cube-level shortest
//! path converted by CONV). **Case II** reduces to Cube-N2S on the cube level Q_{2^m}: destinations
//! sharing a subcube, or whose subcube is the external neighbour of a destination inside
//! Q_m(s_0), are moved to distinct subcubes by DISTRIB (Step 1); Z_4 pads the excluded neighbours
//! so that |D| + |M| = 2^m forces the external port of s onto some path (Step 2); Step 3 reroutes
//! when it is in Z_4 anyway; Step 4 keeps, among the paths to the multi-destination subcubes Z_1,
//! only the one through s_0 xor 2^p_0, aimed at the destination (or d'') nearest its entry node;
//! Step 5 converts by CONV and joins everything to s inside Q_m(s_0) by Cube-N2S.
//!
//! Departures and resolutions (docs/family-algorithms.md has the full list):
//! - **Case I-c, pitfall 000-2**: when d_k's external neighbour is in Q_m(s_0) (s_k xor 2^p_k =
//!   s_0) the thesis's target does not exist; we aim the cube-level path at s_k itself. The
//!   cube-level shortest path avoids s_0 by not flipping bit p_0 first (the thesis asks only that
//!   it avoid s_0).
//! - **Step 4, pitfall 000-3**: when sigma = s_0 xor 2^p_0 the path has no node before sigma; its
//!   entry processor is p_0.
//! - Choices left open: in Case I-b the destination routed outside is the last one inside; Z_4
//!   takes the lowest free dimensions; Step 3 takes the lowest s_i; Step 4 breaks ties towards
//!   a destination, then the lowest index.
//! - **m = 1**: Case II needs m >= 2 (Lemma 6); the thesis calls the 8-cycle trivial. Case I runs
//!   as written; Case II falls back to [`crate::paths::fallback`] (exact).

use super::conv::conv;
use super::distrib::{Distribution, distribute};
use crate::NodeId;
use crate::Topology;
use crate::paths::check::check_node_to_set;
use crate::paths::cube::gray::gray_order;
use crate::paths::cube::n2s::cube_n2s;
use crate::paths::error::PathError;
use crate::paths::system::{Path, PathSystem};
use crate::paths::verify::{Shape, check};
use crate::topology::hhc::Hhc;
use crate::topology::hypercube::Hypercube;

/// HHC-N2S(HHC_{2^m+m}, s, D): `paths[i]` runs from `s` to `dests[i]`.
pub fn hhc_n2s(h: Hhc, s: NodeId, dests: &[NodeId]) -> Result<PathSystem, PathError> {
    let topology = Topology::Hhc(h);
    check_node_to_set(topology, s, dests)?;
    let system = match case_one(h, s, dests, CubeOrder::Ascending)? {
        Some(paths) => PathSystem::paper(paths),
        None if h.m == 1 => exact(h, s, dests, "HHC-N2S Case II needs m >= 2 (Lemma 6)")?,
        None => PathSystem::paper(case_two(h, s, dests)?),
    };
    verified(h, s, dests, system)
}

/// The bound of Theorem 2, m 2^m + 2^m + 2m + 4.
pub fn bound(m: u32) -> usize {
    ((m << m) + (1 << m) + 2 * m + 4) as usize
}

/// The exact fallback of [`crate::paths::fallback`] for a small instance, with the reason.
pub(super) fn exact(
    h: Hhc,
    s: NodeId,
    dests: &[NodeId],
    why: &'static str,
) -> Result<PathSystem, PathError> {
    crate::paths::fallback::node_to_set(Topology::Hhc(h), s, dests)
        .map(|paths| PathSystem {
            paths,
            construction: crate::paths::system::Construction::ExactSearch(why),
        })
        .ok_or_else(|| PathError::internal(format!("no exact fallback for {why}")))
}

/// Check a result before it leaves the crate.
pub(super) fn verified(
    h: Hhc,
    s: NodeId,
    dests: &[NodeId],
    system: PathSystem,
) -> Result<PathSystem, PathError> {
    check(
        Topology::Hhc(h),
        Shape::NodeToSet { s, dests },
        &system.paths,
    )
    .map_err(|e| PathError::internal(format!("HHC node-to-set built a wrong path: {e}")))?;
    Ok(system)
}

/// How cube-level shortest paths order their dimensions: ascending (HHC-N2S) or SPR-Gray
/// (HHC-iN2S).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum CubeOrder {
    Ascending,
    Gray,
}

impl CubeOrder {
    fn order(self, mask: u64) -> Vec<u32> {
        match self {
            CubeOrder::Ascending => crate::topology::bits::BitIter(mask).collect(),
            CubeOrder::Gray => gray_order(mask),
        }
    }
}

pub(super) fn internal(what: &str) -> PathError {
    PathError::internal(format!("HHC node-to-set: {what}"))
}

/// Cube-N2S inside Q_m(s_0): paths from `s` to the processors `targets` of its own subcube.
pub(super) fn inside_paths(h: Hhc, s: NodeId, targets: &[u32]) -> Result<Vec<Path>, PathError> {
    if targets.is_empty() {
        return Ok(Vec::new());
    }
    let sigma = h.subcube(s);
    let procs: Vec<NodeId> = targets.iter().map(|&p| NodeId(p as u64)).collect();
    let paths = cube_n2s(
        Hypercube { n: h.m },
        NodeId(h.processor(s) as u64),
        &procs,
        &[],
    )
    .map_err(|e| internal(&format!("Cube-N2S in Q_m(s_0): {e}")))?
    .paths;
    Ok(paths
        .into_iter()
        .map(|p| p.into_iter().map(|pi| h.node(sigma, pi.0 as u32)).collect())
        .collect())
}

/// A cube-level shortest path from `a` to `b` that does not start by flipping `avoid` (so that it
/// avoids a ^ 2^avoid), dimensions in `order`. `a ^ b` must not be exactly 2^avoid.
fn cube_path_avoiding_first(a: u64, b: u64, avoid: u32, order: CubeOrder) -> Vec<u64> {
    let mut dims = order.order(a ^ b);
    if dims.len() > 1 && dims[0] == avoid {
        dims.swap(0, 1);
    }
    let mut path = vec![a];
    let mut at = a;
    for d in dims {
        at ^= 1 << d;
        path.push(at);
    }
    path
}

/// Case I (|D ∩ Q_m(s_0)| >= k-1), shared by HHC-N2S and HHC-iN2S; `None` in Case II.
pub(super) fn case_one(
    h: Hhc,
    s: NodeId,
    dests: &[NodeId],
    order: CubeOrder,
) -> Result<Option<Vec<Path>>, PathError> {
    let (s0, p0) = (h.subcube(s), h.processor(s));
    let k = dests.len();
    let inside: Vec<usize> = (0..k).filter(|&i| h.subcube(dests[i]) == s0).collect();
    if inside.len() + 1 < k {
        return Ok(None);
    }
    let mut out: Vec<Path> = vec![Vec::new(); k];
    let procs = |ix: &[usize]| -> Vec<u32> { ix.iter().map(|&i| h.processor(dests[i])).collect() };
    if inside.len() == k && k <= h.m as usize {
        // Case I-a.
        for (&i, p) in inside.iter().zip(inside_paths(h, s, &procs(&inside))?) {
            out[i] = p;
        }
        return Ok(Some(out));
    }
    if inside.len() == k {
        // Case I-b: k = m+1, all inside. The last one goes around outside; if it lies on the path
        // to another, that path stops there and the other goes around.
        let (&last, rest) = inside.split_last().expect("k >= 1");
        let mut around = last;
        for (&i, mut p) in rest.iter().zip(inside_paths(h, s, &procs(rest))?) {
            if let Some(cut) = p.iter().position(|&v| v == dests[last]) {
                p.truncate(cut + 1);
                out[last] = p;
                around = i;
            } else {
                out[i] = p;
            }
        }
        let px = h.processor(dests[around]);
        let a = s0 ^ 1 << p0;
        let square = [s0, a, a ^ 1 << px, s0 ^ 1 << px, s0];
        out[around] = conv(h, &square, p0, px);
        return Ok(Some(out));
    }
    // Case I-c: one destination d_x outside.
    let x = (0..k).find(|i| !inside.contains(i)).expect("one outside");
    for (&i, p) in inside.iter().zip(inside_paths(h, s, &procs(&inside))?) {
        out[i] = p;
    }
    let (sx, px) = (h.subcube(dests[x]), h.processor(dests[x]));
    let a = s0 ^ 1 << p0;
    let b = sx ^ 1 << px;
    let mut path = vec![s];
    if b == s0 {
        // Pitfall 000-2: d_x's external neighbour is in Q_m(s_0); aim at s_x itself.
        let cube = cube_path_avoiding_first(a, sx, p0, order);
        path.extend(conv(h, &cube, p0, px));
    } else {
        let mut cube = cube_path_avoiding_first(a, b, p0, order);
        if let Some(cut) = cube.iter().position(|&c| c == sx) {
            cube.truncate(cut + 1);
            path.extend(conv(h, &cube, p0, px));
        } else {
            path.extend(conv(h, &cube, p0, px));
            path.push(dests[x]);
        }
    }
    out[x] = path;
    Ok(Some(out))
}

/// The sets of Step 1, shared by both algorithms.
pub(super) struct Step1 {
    /// Z_1: subcubes other than s_0 holding at least two destinations.
    pub z1: Vec<u64>,
    /// Z_2: external neighbours of the destinations inside Q_m(s_0), outside Z_1.
    pub z2: Vec<u64>,
    /// Indices of the destinations inside Q_m(s_0).
    pub inside: Vec<usize>,
    /// Indices of the destinations in subcubes of Z_1 ∪ Z_2: the ones DISTRIB moves.
    pub moved: Vec<usize>,
}

impl Step1 {
    pub fn of(h: Hhc, s: NodeId, dests: &[NodeId]) -> Step1 {
        let s0 = h.subcube(s);
        let k = dests.len();
        let sub = |i: usize| h.subcube(dests[i]);
        let inside: Vec<usize> = (0..k).filter(|&i| sub(i) == s0).collect();
        let mut z1: Vec<u64> = (0..k)
            .map(sub)
            .filter(|&sigma| sigma != s0 && (0..k).filter(|&j| sub(j) == sigma).count() >= 2)
            .collect();
        z1.sort_unstable();
        z1.dedup();
        let z2: Vec<u64> = inside
            .iter()
            .map(|&i| s0 ^ 1 << h.processor(dests[i]))
            .filter(|sigma| !z1.contains(sigma))
            .collect();
        let moved = (0..k)
            .filter(|&i| z1.contains(&sub(i)) || z2.contains(&sub(i)))
            .collect();
        Step1 {
            z1,
            z2,
            inside,
            moved,
        }
    }
}

/// The node of E (the destinations of subcube `sigma` and the d'' of their distribution paths
/// that lie in it) nearest to processor `entry` of `sigma`: ties go to a destination, then to
/// the lowest index. Returns (destination index, the node).
pub(super) fn nearest_in_subcube(
    h: Hhc,
    dests: &[NodeId],
    dist: &[Distribution],
    sigma: u64,
    entry: u32,
) -> Option<(usize, NodeId)> {
    let mut e: Vec<(u32, u8, usize, NodeId)> = Vec::new();
    for (i, &d) in dests.iter().enumerate() {
        if h.subcube(d) == sigma {
            e.push(((h.processor(d) ^ entry).count_ones(), 0, i, d));
        }
    }
    for c in dist {
        let before = c.before();
        if before != c.destination() && h.subcube(before) == sigma {
            e.push((
                (h.processor(before) ^ entry).count_ones(),
                1,
                c.index,
                before,
            ));
        }
    }
    e.into_iter().min().map(|(_, _, i, v)| (i, v))
}

/// The HHC-level paths of the outside destinations and the Cube-N2S join inside Q_m(s_0), from
/// the cube-level paths of both algorithms (Step 5 of HHC-N2S, Step 3 of HHC-iN2S).
///
/// `cube[i]` is the cube-level path for outside destination i, from s_0 to its subcube
/// (through s'_i when distributed), and `aim[i]` the processor CONV ends at in the last
/// subcube (p_i, or the processor of d''_i for the special path, which then takes one more
/// internal edge to d_i).
pub(super) fn assemble(
    h: Hhc,
    s: NodeId,
    dests: &[NodeId],
    inside: &[usize],
    outside: Vec<(usize, Vec<u64>, u32)>,
) -> Result<Vec<Path>, PathError> {
    let p0 = h.processor(s);
    let mut out: Vec<Path> = vec![Vec::new(); dests.len()];
    let mut joins: Vec<(usize, u32, Path)> = Vec::new();
    for (i, cube, aim) in outside {
        if cube.len() < 2 {
            return Err(internal("a cube-level path of length zero was left"));
        }
        let pi = (cube[0] ^ cube[1]).trailing_zeros();
        let mut path = conv(h, &cube, pi, aim);
        if *path.last().expect("non-empty") != dests[i] {
            path.push(dests[i]);
        }
        if pi == p0 {
            out[i] = path;
        } else {
            joins.push((i, pi, path));
        }
    }
    let mut targets: Vec<u32> = inside.iter().map(|&i| h.processor(dests[i])).collect();
    targets.extend(joins.iter().map(|&(_, pi, _)| pi));
    if targets.len() > h.m as usize {
        return Err(internal("more than m paths to join inside Q_m(s_0)"));
    }
    let prefixes = inside_paths(h, s, &targets)?;
    let mut prefixes = prefixes.into_iter();
    for &i in inside {
        out[i] = prefixes.next().expect("one per target");
    }
    for (i, _, path) in joins {
        let mut prefix = prefixes.next().expect("one per target");
        prefix.extend_from_slice(&path[1..]);
        out[i] = prefix;
    }
    Ok(out)
}

/// Case II of HHC-N2S (Steps 1 to 5).
fn case_two(h: Hhc, s: NodeId, dests: &[NodeId]) -> Result<Vec<Path>, PathError> {
    let (s0, p0) = (h.subcube(s), h.processor(s));
    let n = h.cube_dimension();
    let a = s0 ^ 1 << p0;
    let k = dests.len();
    let step1 = Step1::of(h, s, dests);
    let Step1 {
        z1,
        z2,
        inside,
        moved,
    } = &step1;
    // Step 1: DISTRIB, whose targets avoid the subcubes of D̃' (the external neighbours of the
    // destinations inside Q_m(s_0)).
    let tilde: Vec<u64> = inside
        .iter()
        .map(|&i| h.subcube(h.external(dests[i])))
        .collect();
    let dist = distribute(h, dests, moved, |path| {
        !tilde.contains(&h.subcube(path[path.len() - 1]))
    })
    .ok_or_else(|| internal("DISTRIB found no free candidate (Lemma 3)"))?;
    // Step 2: Z_3, Z_4 and Cube-N2S on the cube level.
    let mut z3: Vec<u64> = dist.iter().map(|c| h.subcube(c.target())).collect();
    z3.extend(
        (0..k)
            .filter(|i| !inside.contains(i) && !moved.contains(i))
            .map(|i| h.subcube(dests[i])),
    );
    let zero_length = z3.contains(&s0);
    z3.retain(|&sigma| sigma != s0);
    let taken = |sigma: u64| z1.contains(&sigma) || z2.contains(&sigma) || z3.contains(&sigma);
    let need = (n as usize)
        .checked_sub(z1.len() + z2.len() + z3.len())
        .ok_or_else(|| internal("|Z_1| + |Z_2| + |Z_3| > 2^m (Lemma 6)"))?;
    let mut free: Vec<u64> = (0..n)
        .map(|b| s0 ^ 1 << b)
        .filter(|&sigma| !taken(sigma) && sigma != a)
        .collect();
    if !taken(a) {
        free.push(a);
    }
    if free.len() < need {
        return Err(internal("too few neighbours of s_0 for Z_4 (Lemma 6)"));
    }
    let z4: Vec<u64> = free[..need].to_vec();
    let targets: Vec<NodeId> = z1.iter().chain(&z3).map(|&x| NodeId(x)).collect();
    let excluded: Vec<NodeId> = z2.iter().chain(&z4).map(|&x| NodeId(x)).collect();
    let c0 = cube_n2s(Hypercube { n }, NodeId(s0), &targets, &excluded)
        .map_err(|e| internal(&format!("Cube-N2S on the cube level: {e}")))?
        .paths;
    let mut cube: Vec<(u64, Vec<u64>)> = targets
        .iter()
        .zip(c0)
        .map(|(t, p)| (t.0, p.into_iter().map(|v| v.0).collect()))
        .collect();
    if zero_length {
        cube.push((s0, vec![s0]));
    }
    // Step 3: if the external port of s is padding, reroute one direct path through it.
    if z4.contains(&a) {
        let (si, path) = cube
            .iter_mut()
            .find(|(t, p)| z3.contains(t) && p.len() == 2)
            .ok_or_else(|| internal("Step 3 found no s_i in Z_3 ∩ N(s_0) (Lemma 7)"))?;
        let q = (*si ^ s0).trailing_zeros();
        *path = vec![s0, a, a ^ 1 << q, *si];
    }
    // Step 4: among the paths to Z_1 keep the one through a, aimed at the node of E nearest
    // its entry.
    let mut special: Option<(usize, Vec<u64>, u32)> = None;
    if let Some((sigma, path)) = cube.iter().find(|(t, p)| z1.contains(t) && p.contains(&a)) {
        let before = path[path.len() - 2];
        let entry = (before ^ sigma).trailing_zeros();
        let (j, e) = nearest_in_subcube(h, dests, &dist, *sigma, entry)
            .ok_or_else(|| internal("Step 4 found no destination in a Z_1 subcube"))?;
        special = Some((j, path.clone(), h.processor(e)));
    }
    // Step 5: the cube-level path of every outside destination, then CONV and the join.
    let mut outside: Vec<(usize, Vec<u64>, u32)> = Vec::new();
    for i in (0..k).filter(|i| !inside.contains(i)) {
        if let Some((j, path, aim)) = &special
            && *j == i
        {
            outside.push((i, path.clone(), *aim));
            continue;
        }
        let target = match dist.iter().find(|c| c.index == i) {
            Some(c) => h.subcube(c.target()),
            None => h.subcube(dests[i]),
        };
        let (_, path) = cube
            .iter()
            .find(|(t, _)| *t == target)
            .ok_or_else(|| internal("a destination has no cube-level path"))?;
        let mut path = path.clone();
        if target != h.subcube(dests[i]) {
            path.push(h.subcube(dests[i]));
        }
        outside.push((i, path, h.processor(dests[i])));
    }
    assemble(h, s, dests, inside, outside)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Thesis Table 5.1: HHC_11, s = (00000000, 000), four destinations; lengths 14, 5, 16, 9.
    #[test]
    fn table_5_1() {
        let h = Hhc { m: 3 };
        let s = h.node(0, 0);
        let dests = [
            h.node(0b0000_1010, 0b000),
            h.node(0b0000_1010, 0b001),
            h.node(0b0011_1000, 0b100),
            h.node(0b1000_0010, 0b010),
        ];
        let system = hhc_n2s(h, s, &dests).unwrap();
        let lengths: Vec<usize> = system.paths.iter().map(|p| p.len() - 1).collect();
        assert_eq!(lengths, [14, 5, 16, 9]);
        // The cube-level paths of the table. The HHC-level paths are the table's node for node
        // but for the join inside Q_m(s_0), where our Cube-N2S reaches (0, 011) through (0, 001)
        // and the table through (0, 010) (same length; Cube-N2S leaves that choice open).
        let table: [&[u64]; 4] = [
            &[0, 0b1, 0b10_0001, 0b10_0011, 0b10_1011, 0b1011, 0b1010],
            &[0, 0b1000, 0b1010],
            &[0, 0b100_0000, 0b100_1000, 0b101_1000, 0b111_1000, 0b11_1000],
            &[0, 0b1000_0000, 0b1000_0010],
        ];
        for (path, cube) in system.paths.iter().zip(table) {
            let mut subcubes: Vec<u64> = path.iter().map(|&v| h.subcube(v)).collect();
            subcubes.dedup();
            assert_eq!(subcubes, cube);
        }
        let d2: Vec<String> = system.paths[1].iter().map(|&v| h.format(v)).collect();
        assert_eq!(
            d2.join(" "),
            "00000000.000 00000000.001 00000000.011 00001000.011 00001000.001 00001010.001"
        );
        assert_eq!(
            system.construction,
            crate::paths::system::Construction::Paper
        );
    }
}
