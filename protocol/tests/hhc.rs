//! HHC-N2S and HHC-iN2S (thesis ch. 5 and appendix A) against the independent checker:
//! exhaustive over HHC_6 and HHC_11 for the smallest destination sets, random instances with the
//! most destinations up to m = 5, and which instances use the exact fallback.

mod common;

use common::families::{Family, Rng};
use cuberoute_protocol::NodeId;
use cuberoute_protocol::family::{Construction, PathSystem};
use cuberoute_protocol::hhc::{Hhc, in2s, n2s};

type Algorithm =
    fn(Hhc, NodeId, &[NodeId]) -> Result<PathSystem, cuberoute_protocol::family::FamilyError>;

fn ids(v: &[u64]) -> Vec<NodeId> {
    v.iter().map(|&x| NodeId(x)).collect()
}

fn raw(p: &[NodeId]) -> Vec<u64> {
    p.iter().map(|v| v.0).collect()
}

/// Run `alg` and check its answer; returns (longest, used the fallback).
fn run(alg: Algorithm, m: u32, s: u64, dests: &[u64], bound: usize) -> (usize, bool) {
    let h = Hhc { m };
    let system = alg(h, NodeId(s), &ids(dests))
        .unwrap_or_else(|e| panic!("hhc:{m} s = {s} D = {dests:?}: {e}"));
    let paths: Vec<Vec<u64>> = system.paths.iter().map(|p| raw(p)).collect();
    let longest = Family::Hhc(m)
        .check_node_to_set(s, dests, &paths)
        .unwrap_or_else(|e| panic!("hhc:{m} s = {s} D = {dests:?}: {e}"));
    assert!(
        longest <= bound,
        "hhc:{m} s = {s} D = {dests:?}: longest {longest} > {bound}"
    );
    (longest, system.construction != Construction::Paper)
}

#[test]
fn hhc_6_every_source_and_every_set_of_one_or_two() {
    let m = 2;
    let nodes = 64;
    let mut fallbacks = 0;
    for s in 0..nodes {
        for d1 in (0..nodes).filter(|&d| d != s) {
            fallbacks += run(n2s::hhc_n2s, m, s, &[d1], n2s::bound(m)).1 as usize;
            for d2 in (d1 + 1..nodes).filter(|&d| d != s) {
                fallbacks += run(n2s::hhc_n2s, m, s, &[d1, d2], n2s::bound(m)).1 as usize;
                fallbacks += run(in2s::hhc_in2s, m, s, &[d2, d1], in2s::bound(m)).1 as usize;
            }
        }
    }
    assert_eq!(
        fallbacks, 0,
        "HHC_6 is covered by the thesis's construction"
    );
}

#[test]
fn hhc_6_every_set_of_three_from_two_sources() {
    let m = 2;
    for s in [0u64, 45] {
        let others: Vec<u64> = (0..64).filter(|&d| d != s).collect();
        common::subsets(&others, 3, |set| {
            assert!(!run(n2s::hhc_n2s, m, s, set, n2s::bound(m)).1);
        });
    }
}

/// Every destination set of size 1 and 2 of HHC_11 from node 0 (HHC is vertex-transitive, so
/// every instance is one of these up to an automorphism; the algorithms are not equivariant,
/// which the random tests cover).
fn hhc_11_from_node_0(alg: Algorithm, bound: usize) {
    let m = 3;
    let nodes = 1 << 11;
    for d1 in 1..nodes {
        assert!(!run(alg, m, 0, &[d1], bound).1);
        for d2 in d1 + 1..nodes {
            assert!(!run(alg, m, 0, &[d1, d2], bound).1);
        }
    }
}

#[test]
fn hhc_11_n2s_every_set_of_one_or_two_from_node_0() {
    hhc_11_from_node_0(n2s::hhc_n2s, n2s::bound(3));
}

#[test]
fn hhc_11_in2s_every_set_of_one_or_two_from_node_0() {
    hhc_11_from_node_0(in2s::hhc_in2s, in2s::bound(3));
}

#[test]
fn random_instances_with_m_plus_1_destinations_up_to_m_5() {
    let mut rng = Rng(11);
    for (m, count) in [(2u32, 20_000), (3, 20_000), (4, 10_000), (5, 5_000)] {
        let nodes = 1u64 << ((1 << m) + m);
        for _ in 0..count {
            let s = rng.below(nodes);
            // Mostly uniform, sometimes crowded around s (Case I and DISTRIB at work).
            let dests: Vec<u64> = if rng.below(4) == 0 {
                let near = rng.below(nodes) & !((1 << (m + 3)) - 1) | s & ((1 << (m + 3)) - 1);
                let mut out = Vec::new();
                while out.len() < m as usize + 1 {
                    let v = (s & !((1 << (m + 3)) - 1)) | rng.below(1 << (m + 3));
                    let v = if rng.below(3) == 0 {
                        near ^ rng.below(1 << m)
                    } else {
                        v
                    };
                    if v != s && !out.contains(&v) {
                        out.push(v);
                    }
                }
                out
            } else {
                rng.distinct(nodes, m as usize + 1, &[s])
            };
            assert!(!run(n2s::hhc_n2s, m, s, &dests, n2s::bound(m)).1);
            assert!(!run(in2s::hhc_in2s, m, s, &dests, in2s::bound(m)).1);
        }
    }
}

#[test]
fn m_1_is_the_8_cycle_and_uses_the_exact_search() {
    let m = 1;
    let (mut n2s_fallbacks, mut in2s_fallbacks, mut instances) = (0, 0, 0);
    for s in 0..8 {
        for d1 in (0..8).filter(|&d| d != s) {
            for d2 in (0..8).filter(|&d| d != s && d != d1) {
                instances += 1;
                n2s_fallbacks += run(n2s::hhc_n2s, m, s, &[d1, d2], n2s::bound(m)).1 as usize;
                in2s_fallbacks += run(in2s::hhc_in2s, m, s, &[d1, d2], in2s::bound(m)).1 as usize;
            }
        }
    }
    // HHC-iN2S: the appendix's enumeration, always. HHC-N2S: Case I runs, Case II (both
    // destinations outside Q_1(s_0)) falls back.
    assert_eq!(in2s_fallbacks, instances);
    assert!(
        n2s_fallbacks > 0 && n2s_fallbacks < instances,
        "{n2s_fallbacks} of {instances}"
    );
}
