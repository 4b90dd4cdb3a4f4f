//! Cube-N2S, Cube-XFTN2S and Cube-FTN2N against the independent checker of tests/common:
//! exhaustively on small hypercubes, by property tests up to Q_32.
//!
//! Exhaustive tests use the source 0 only. That is sound because every public function of
//! `cube::n2s`, `cube::xftn2s` and `cube::ftn2n` computes with the source translated to 0 and
//! translates back (XOR is an automorphism of Q_n), so its answer for source s is its answer for
//! source 0 XOR s; `source_translation_is_exact` checks that claim on every instance of Q_3.

mod common;

use common::{check_family, subsets};
use cuberoute_protocol::NodeId;
use cuberoute_protocol::paths::cube::ftn2n::cube_ftn2n;
use cuberoute_protocol::paths::cube::n2s::cube_n2s;
use cuberoute_protocol::paths::cube::xftn2s::cube_xftn2s;
use cuberoute_protocol::topology::hypercube::Hypercube;
use proptest::prelude::*;

fn ids(v: &[u64]) -> Vec<NodeId> {
    v.iter().map(|&x| NodeId(x)).collect()
}

fn raw(paths: &[Vec<NodeId>]) -> Vec<Vec<u64>> {
    paths
        .iter()
        .map(|p| p.iter().map(|v| v.0).collect())
        .collect()
}

/// Everything Lemma 2 promises for Cube-N2S(Q_n, s, D, M).
fn check_n2s(n: u32, s: u64, dests: &[u64], excl: &[u64]) -> Result<usize, String> {
    let paths = cube_n2s(Hypercube { n }, NodeId(s), &ids(dests), &ids(excl))
        .map_err(|e| format!("refused: {e}"))?;
    let paths = raw(&paths.paths);
    let ctx = || format!("Q_{n} s={s} D={dests:?} M={excl:?}: {paths:?}");
    if paths.len() != dests.len() {
        return Err(format!("wrong count, {}", ctx()));
    }
    for (p, &d) in paths.iter().zip(dests) {
        if p[0] != s || *p.last().unwrap() != d {
            return Err(format!("wrong ends, {}", ctx()));
        }
        if excl.contains(&p[1]) && p[1] != d || p.len() == 2 && excl.contains(&d) {
            return Err(format!("uses an edge s -> M, {}", ctx()));
        }
        if p.iter().any(|v| excl.contains(v) && !dests.contains(v)) {
            return Err(format!("visits M \\ D, {}", ctx()));
        }
    }
    let longest = check_family(n, &paths, &[s]).map_err(|e| format!("{e}, {}", ctx()))?;
    if longest > n as usize + 1 {
        return Err(format!("longer than n+1, {}", ctx()));
    }
    Ok(longest)
}

/// Everything Lemma 2.4 promises for Cube-XFTN2S(Q_n, s, D, F, X).
fn check_xftn2s(
    n: u32,
    s: u64,
    dests: &[u64],
    faults: &[u64],
    x: Option<u64>,
) -> Result<usize, String> {
    let paths = cube_xftn2s(
        Hypercube { n },
        NodeId(s),
        &ids(dests),
        &ids(faults),
        x.map(NodeId),
    )
    .map_err(|e| format!("refused: {e}"))?;
    let paths = raw(&paths.paths);
    let ctx = || format!("Q_{n} s={s} D={dests:?} F={faults:?} X={x:?}: {paths:?}");
    if paths.len() != dests.len() {
        return Err(format!("wrong count, {}", ctx()));
    }
    for (p, &d) in paths.iter().zip(dests) {
        if p[0] != s || *p.last().unwrap() != d {
            return Err(format!("wrong ends, {}", ctx()));
        }
        if p.iter().any(|v| faults.contains(v)) {
            return Err(format!("visits a faulty node, {}", ctx()));
        }
    }
    if let Some(x) = x {
        if !paths.iter().any(|p| p[1] == x) {
            return Err(format!("no path starts s -> x, {}", ctx()));
        }
    }
    let longest = check_family(n, &paths, &[s]).map_err(|e| format!("{e}, {}", ctx()))?;
    if longest > n as usize + 3 {
        return Err(format!("longer than n+3, {}", ctx()));
    }
    Ok(longest)
}

fn check_ftn2n(n: u32, s: u64, d: u64, faults: &[u64]) -> Result<usize, String> {
    let path = cube_ftn2n(Hypercube { n }, NodeId(s), NodeId(d), &ids(faults))
        .map_err(|e| format!("refused: {e}"))?;
    let path: Vec<u64> = path.paths[0].iter().map(|v| v.0).collect();
    let ctx = || format!("Q_{n} {s} -> {d} F={faults:?}: {path:?}");
    if path[0] != s || *path.last().unwrap() != d || path.iter().any(|v| faults.contains(v)) {
        return Err(format!("bad ends or faulty node, {}", ctx()));
    }
    let len =
        check_family(n, std::slice::from_ref(&path), &[]).map_err(|e| format!("{e}, {}", ctx()))?;
    let h = (s ^ d).count_ones() as usize;
    if len > (h + 2).min(n as usize + 1) {
        return Err(format!("longer than min(H+2, n+1), {}", ctx()));
    }
    Ok(len)
}

#[test]
fn n2s_every_destination_set_and_excluded_set_up_to_q5() {
    let mut instances = 0u64;
    for n in 1..=5u32 {
        let others: Vec<u64> = (1..1u64 << n).collect();
        let neighbours: Vec<u64> = (0..n).map(|j| 1u64 << j).collect();
        let mut worst = 0;
        for k in 1..=n as usize {
            subsets(&others, k, |dests| {
                for size in 0..=n as usize - k {
                    subsets(&neighbours, size, |excl| {
                        worst = worst.max(check_n2s(n, 0, dests, excl).unwrap());
                        instances += 1;
                    });
                }
            });
        }
        assert!(worst <= n as usize + 1);
        if n >= 2 {
            assert_eq!(worst, n as usize + 1, "Q_{n}: the bound n+1 is reached");
        }
    }
    println!("Cube-N2S: {instances} instances");
    assert!(instances > 400_000, "{instances}");
}

#[test]
fn xftn2s_every_fault_set_up_to_q5() {
    let mut instances = 0u64;
    for n in 2..=5u32 {
        let others: Vec<u64> = (1..1u64 << n).collect();
        let mut worst = 0;
        for k in 1..n as usize {
            subsets(&others, k, |dests| {
                let rest: Vec<u64> = others
                    .iter()
                    .copied()
                    .filter(|v| !dests.contains(v))
                    .collect();
                for f in 0..n as usize - k {
                    subsets(&rest, f, |faults| {
                        let hops = (0..n).map(|j| 1u64 << j).filter(|x| !faults.contains(x));
                        for x in std::iter::once(None).chain(hops.map(Some)) {
                            worst = worst.max(check_xftn2s(n, 0, dests, faults, x).unwrap());
                            instances += 1;
                        }
                    });
                }
            });
        }
        assert!(worst <= n as usize + 3, "Q_{n}: {worst}");
        println!(
            "Cube-XFTN2S Q_{n}: longest path over every instance {worst} (bound {})",
            n + 3
        );
    }
    println!("Cube-XFTN2S: {instances} instances");
    assert!(instances > 2_000_000, "{instances}");
}

#[test]
fn ftn2n_every_fault_set_up_to_q5() {
    for n in 1..=5u32 {
        let others: Vec<u64> = (1..1u64 << n).collect();
        let mut worst = 0;
        for &d in &others {
            let rest: Vec<u64> = others.iter().copied().filter(|&v| v != d).collect();
            for f in 0..n as usize {
                subsets(&rest, f, |faults| {
                    worst = worst.max(check_ftn2n(n, 0, d, faults).unwrap())
                });
            }
        }
        assert_eq!(
            worst,
            n as usize + (n >= 3) as usize,
            "Q_{n}: n+1 is reached for n >= 3"
        );
    }
}

#[test]
fn source_translation_is_exact() {
    let n = 3u32;
    let q = Hypercube { n };
    let all: Vec<u64> = (0..8).collect();
    for s in 0..8u64 {
        let others: Vec<u64> = all.iter().copied().filter(|&v| v != s).collect();
        for k in 1..=3 {
            subsets(&others, k, |dests| {
                let shifted: Vec<u64> = dests.iter().map(|d| d ^ s).collect();
                let here = raw(&cube_n2s(q, NodeId(s), &ids(dests), &[]).unwrap().paths);
                let there = raw(&cube_n2s(q, NodeId(0), &ids(&shifted), &[]).unwrap().paths);
                let moved: Vec<Vec<u64>> = there
                    .iter()
                    .map(|p| p.iter().map(|v| v ^ s).collect())
                    .collect();
                assert_eq!(here, moved);
                if k < 2 {
                    let f = [others.iter().copied().find(|v| !dests.contains(v)).unwrap()];
                    let fs = [f[0] ^ s];
                    let here = raw(&cube_xftn2s(q, NodeId(s), &ids(dests), &ids(&f), None)
                        .unwrap()
                        .paths);
                    let there = raw(&cube_xftn2s(q, NodeId(0), &ids(&shifted), &ids(&fs), None)
                        .unwrap()
                        .paths);
                    let moved: Vec<Vec<u64>> = there
                        .iter()
                        .map(|p| p.iter().map(|v| v ^ s).collect())
                        .collect();
                    assert_eq!(here, moved);
                }
            });
        }
    }
}

/// A random instance: n, source, k distinct destinations, and a list of extra distinct nodes.
fn instance(max_n: u32) -> impl Strategy<Value = (u32, u64, Vec<u64>, Vec<u64>)> {
    (2u32..=max_n).prop_flat_map(|n| {
        let mask = (1u64 << n) - 1;
        (
            Just(n),
            any::<u64>().prop_map(move |s| s & mask),
            proptest::collection::vec(any::<u64>(), 1..=n as usize),
            proptest::collection::vec(any::<u64>(), 0..n as usize),
            proptest::collection::vec(0..n, 0..n as usize),
            any::<bool>(),
        )
            .prop_map(move |(n, s, ds, more, near, clustered)| {
                // Clustered instances put destinations a few bits from s, where paths collide.
                let pick = |x: u64, i: usize| {
                    if clustered {
                        s ^ (1u64 << (x % n as u64))
                            ^ (1u64 << ((x >> 8) % n as u64))
                            ^ ((i as u64 % 3) << ((x >> 16) % (n as u64 - 1)))
                    } else {
                        x & mask
                    }
                };
                let mut dests: Vec<u64> = Vec::new();
                for (i, &x) in ds.iter().enumerate() {
                    let d = pick(x, i) & mask;
                    if d != s && !dests.contains(&d) {
                        dests.push(d);
                    }
                }
                if dests.is_empty() {
                    dests.push(s ^ 1);
                }
                let mut extra: Vec<u64> = Vec::new();
                for (i, &x) in more.iter().enumerate() {
                    let f = if i < near.len() {
                        s ^ (1u64 << near[i])
                    } else {
                        pick(x, i) & mask
                    };
                    if f != s && !dests.contains(&f) && !extra.contains(&f) {
                        extra.push(f);
                    }
                }
                (n, s, dests, extra)
            })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn n2s_random_up_to_q32((n, s, dests, extra) in instance(32), take_dests in any::<u8>()) {
        // M: neighbours of s, some of them destinations, |M| <= n - k.
        let room = n as usize - dests.len();
        let mut excl: Vec<u64> = extra.iter().copied().filter(|&v| (v ^ s).count_ones() == 1).collect();
        excl.extend(dests.iter().copied().filter(|&d| (d ^ s).count_ones() == 1).take(take_dests as usize % 3));
        excl.sort_unstable();
        excl.dedup();
        excl.truncate(room);
        check_n2s(n, s, &dests, &excl).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn xftn2s_random_up_to_q32((n, s, mut dests, extra) in instance(32), hop in any::<u32>()) {
        dests.truncate(n as usize - 1);
        let faults: Vec<u64> = extra.iter().copied().take(n as usize - 1 - dests.len()).collect();
        let x = s ^ (1u64 << (hop % n));
        let x = (hop % 3 != 0 && !faults.contains(&x)).then_some(x);
        check_xftn2s(n, s, &dests, &faults, x).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn ftn2n_random_up_to_q32((n, s, dests, extra) in instance(32)) {
        let d = dests[0];
        let faults: Vec<u64> = extra.iter().copied().take(n as usize - 1).collect();
        check_ftn2n(n, s, d, &faults).map_err(TestCaseError::fail)?;
    }
}
