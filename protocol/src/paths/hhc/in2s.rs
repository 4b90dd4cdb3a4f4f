//! HHC-iN2S (thesis appendix A: Bossard, Kaneko and Peng, Computer J. 54(8), 2011; Algorithm 2,
//! Theorem 4.1): HHC-N2S with shorter paths, at most 2^{m+1} + m^2 + m(ceil(log2 m) + 4) + 5.
//!
//! Three changes to HHC-N2S ([`super::n2s`]):
//! 1. every cube-level shortest path follows SPR-Gray, so that consecutive subcube routings in
//!    CONV are one internal edge apart (Case I here, and inside Cube-XFTN2S's Cube-FTN2N);
//! 2. distributed destinations go to distinct subcubes outside Z_1 ∪ Z_2 that hold no
//!    destination (Step 1);
//! 3. the cube level is routed by Cube-XFTN2S(Q_{2^m}, s_0, Z_3, Z_1 ∪ Z_2, X) with the
//!    multi-destination subcubes as faults instead of padded Cube-N2S (Step 2); X = {s_0 xor 2^p_0}
//!    when k = m+1 and that subcube is not in Z_1. When k = m+1 and it is in Z_1, the path
//!    s_0 -> s_0 xor 2^p_0 is aimed at the destination of that subcube (or its d'') nearest to
//!    (s_0 xor 2^p_0, p_0), ties to a destination (Step 3), unless that subcube's destination was
//!    distributed into Q_m(s_0) (then its path already leaves s by p_0).
//!
//! Small m, as the appendix's Remark 4 does: m = 1 by enumeration (our exact search,
//! [`crate::paths::fallback`]; the 8-cycle), m = 2 by HHC-N2S (|Z_3| + |Z_1 ∪ Z_2| can exceed 2^m -
//! 1 = 3 there). Case I is HHC-N2S's, with SPR-Gray for its cube-level path.
//!
//! Pitfall 000-5 (docs/family-algorithms.md): the bound is worse than HHC-N2S's at m = 3 (48
//! against 42); it wins from m = 4 on. The study measures both (BENCHMARKS.md, "The papers'
//! studies"; docs/notes/2026-11-23-study-hhc-metacube.md).

use super::distrib::distribute;
use super::n2s::{
    CubeOrder, Step1, assemble, case_one, exact, hhc_n2s, internal, nearest_in_subcube, verified,
};
use crate::NodeId;
use crate::Topology;
use crate::paths::check::check_node_to_set;
use crate::paths::cube::xftn2s::cube_xftn2s;
use crate::paths::error::PathError;
use crate::paths::system::{Path, PathSystem};
use crate::topology::hhc::Hhc;
use crate::topology::hypercube::Hypercube;

/// HHC-iN2S(HHC_{2^m+m}, s, D): `paths[i]` runs from `s` to `dests[i]`.
pub fn hhc_in2s(h: Hhc, s: NodeId, dests: &[NodeId]) -> Result<PathSystem, PathError> {
    check_node_to_set(Topology::Hhc(h), s, dests)?;
    match h.m {
        1 => {
            let system = exact(h, s, dests, "HHC-iN2S needs m >= 3; m = 1 by enumeration")?;
            verified(h, s, dests, system)
        }
        2 => hhc_n2s(h, s, dests),
        _ => {
            let paths = match case_one(h, s, dests, CubeOrder::Gray)? {
                Some(paths) => paths,
                None => case_two(h, s, dests)?,
            };
            verified(h, s, dests, PathSystem::paper(paths))
        }
    }
}

/// The bound of Theorem 4.1, 2^{m+1} + m^2 + m(ceil(log2 m) + 4) + 5, for m >= 3; Remark 4's 20
/// (HHC-N2S) for m = 2 and 6 (the 8-cycle) for m = 1.
pub fn bound(m: u32) -> usize {
    match m {
        1 => 6,
        2 => 20,
        _ => {
            let log = 32 - (m - 1).leading_zeros();
            ((2 << m) + m * m + m * (log + 4) + 5) as usize
        }
    }
}

/// Steps 1 to 3 of HHC-iN2S (the case |D ∩ Q_m(s_0)| <= k-2).
fn case_two(h: Hhc, s: NodeId, dests: &[NodeId]) -> Result<Vec<Path>, PathError> {
    let (s0, p0) = (h.subcube(s), h.processor(s));
    let n = h.cube_dimension();
    let a = s0 ^ 1 << p0;
    let k = dests.len();
    let Step1 {
        z1,
        z2,
        inside,
        moved,
    } = Step1::of(h, s, dests);
    // Step 1: targets outside Z_1 ∪ Z_2 (DISTRIB already keeps them off subcubes holding a
    // destination, which covers Z_1) and in distinct subcubes.
    let dist = distribute(h, dests, &moved, |path| {
        !z2.contains(&h.subcube(path[path.len() - 1]))
    })
    .ok_or_else(|| internal("Step 1 found no free distribution candidate (Lemma 2.5)"))?;
    let mut z3: Vec<u64> = dist.iter().map(|c| h.subcube(c.target())).collect();
    z3.extend(
        (0..k)
            .filter(|i| !inside.contains(i) && !moved.contains(i))
            .map(|i| h.subcube(dests[i])),
    );
    // A destination distributed into Q_m(s_0) gets the path of length zero.
    let into_source = dist.iter().find(|c| h.subcube(c.target()) == s0);
    z3.retain(|&sigma| sigma != s0);
    // Step 2: Cube-XFTN2S with Z_1 ∪ Z_2 faulty.
    let faults: Vec<NodeId> = z1.iter().chain(&z2).map(|&x| NodeId(x)).collect();
    let first_hop = (k == h.m as usize + 1 && !z1.contains(&a)).then_some(NodeId(a));
    let z3_ids: Vec<NodeId> = z3.iter().map(|&x| NodeId(x)).collect();
    let c1 = if z3_ids.is_empty() {
        Vec::new()
    } else {
        cube_xftn2s(Hypercube { n }, NodeId(s0), &z3_ids, &faults, first_hop)
            .map_err(|e| internal(&format!("Cube-XFTN2S on the cube level: {e}")))?
            .paths
    };
    let cube: Vec<(u64, Vec<u64>)> = z3
        .iter()
        .zip(c1)
        .map(|(&t, p)| (t, p.into_iter().map(|v| v.0).collect()))
        .collect();
    // Step 3: the special path P_x through s_0 xor 2^p_0 when it is in Z_1.
    let mut special: Option<(usize, u32)> = None;
    let into_source_from_a = into_source.is_some_and(|c| h.subcube(c.destination()) == a);
    if k == h.m as usize + 1 && z1.contains(&a) && !into_source_from_a {
        let (x, e) = nearest_in_subcube(h, dests, &dist, a, p0)
            .ok_or_else(|| internal("Step 3 found no destination in Q_m(s_0 xor 2^p_0)"))?;
        special = Some((x, h.processor(e)));
    }
    let mut outside: Vec<(usize, Vec<u64>, u32)> = Vec::new();
    for i in (0..k).filter(|i| !inside.contains(i)) {
        if let Some((x, aim)) = special
            && x == i
        {
            outside.push((i, vec![s0, a], aim));
            continue;
        }
        let target = match dist.iter().find(|c| c.index == i) {
            Some(c) => h.subcube(c.target()),
            None => h.subcube(dests[i]),
        };
        let mut path = if target == s0 {
            vec![s0]
        } else {
            cube.iter()
                .find(|(t, _)| *t == target)
                .map(|(_, p)| p.clone())
                .ok_or_else(|| internal("a destination has no cube-level path"))?
        };
        if target != h.subcube(dests[i]) {
            path.push(h.subcube(dests[i]));
        }
        outside.push((i, path, h.processor(dests[i])));
    }
    assemble(h, s, dests, &inside, outside)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Appendix A, Table 1: HHC_11, s = (00000000, 000). Every path is the table's, node for
    /// node; lengths 6, 14, 7, 13 (the table gives none).
    #[test]
    fn appendix_table_1() {
        let h = Hhc { m: 3 };
        let s = h.node(0, 0);
        let dests = [
            h.node(0b0101_0001, 0b100),
            h.node(0b0101_0001, 0b111),
            h.node(0b0000_1101, 0b011),
            h.node(0b1100_0001, 0b000),
        ];
        let table = [
            "00000000.000 00000001.000 00000001.010 00000001.110 01000001.110 01000001.100 \
             01010001.100",
            "00000000.000 00000000.100 00010000.100 00010000.110 01010000.110 01010000.111 \
             11010000.111 11010000.110 11010000.100 11010000.000 11010001.000 11010001.001 \
             11010001.011 11010001.111 01010001.111",
            "00000000.000 00000000.010 00000100.010 00000100.000 00000101.000 00000101.001 \
             00000101.011 00001101.011",
            "00000000.000 00000000.001 00000000.011 00000000.111 10000000.111 10000000.110 \
             10000000.100 10000000.000 10000001.000 10000001.010 10000001.110 11000001.110 \
             11000001.100 11000001.000",
        ];
        let system = hhc_in2s(h, s, &dests).unwrap();
        for (path, row) in system.paths.iter().zip(table) {
            let names: Vec<String> = path.iter().map(|&v| h.format(v)).collect();
            assert_eq!(names.join(" "), row);
        }
        let lengths: Vec<usize> = system.paths.iter().map(|p| p.len() - 1).collect();
        assert_eq!(lengths, [6, 14, 7, 13]);
    }

    #[test]
    fn bounds_at_m_3_to_5() {
        // Theorem 4.1's 2^(m+1) + m^2 + m(ceil(log2 m) + 4) + 5: 48, 77, 129 for m = 3, 4, 5.
        assert_eq!(bound(3), 48);
        assert_eq!(bound(4), 77);
        assert_eq!(bound(5), 129);
    }
}
