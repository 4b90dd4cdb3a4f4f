//! RDN node-to-set (seed 003) against the independent checker: exhaustive over RDN^1 of the
//! 3-ring, random instances up to RDN^2(Q_3) (crowded into few clusters, or into C_s), the bound
//! 3 D_{k-1} + 6, and which instances use the exact fallback.

mod common;

use common::families::{Base, Family, Rng};
use cuberoute_protocol::NodeId;
use cuberoute_protocol::paths::dualnet::{self, n2s};
use cuberoute_protocol::topology::dualnet::{self as rdn, DualNet};

fn rdn(f: Family) -> DualNet {
    match f.topology() {
        cuberoute_protocol::Topology::DualNet(r) => r,
        _ => unreachable!(),
    }
}

/// Paths as plain integer ids, for the independent checker.
fn raw(paths: &[Vec<NodeId>]) -> Vec<Vec<u64>> {
    paths
        .iter()
        .map(|p| p.iter().map(|v| v.0).collect())
        .collect()
}

/// Run and check one instance; returns whether the fallback answered.
fn run(f: Family, s: u64, targets: &[u64]) -> bool {
    let r = rdn(f);
    let ids: Vec<NodeId> = targets.iter().map(|&t| NodeId(t)).collect();
    let system = n2s::rdn_n2s(r, NodeId(s), &ids)
        .unwrap_or_else(|e| panic!("{} {s} -> {targets:?}: {e}", f.name()));
    let longest = f
        .check_node_to_set(s, targets, &raw(&system.paths))
        .unwrap_or_else(|e| panic!("{} {s} -> {targets:?}: {e}", f.name()));
    let fallback = system.construction.is_fallback();
    // Every answer, the exact search's too, within 3 D_{k-1} + 6.
    let bound = n2s::bound(r);
    assert!(
        longest <= bound,
        "{} {s} -> {targets:?}: {longest} > {bound} ({:?})",
        f.name(),
        system.construction
    );
    fallback
}

#[test]
fn rdn_1_of_the_ring_every_source_and_target_set() {
    let f = Family::Rdn(Base::Ring3, 1);
    let mut fallbacks = 0;
    let mut instances = 0;
    for s in 0..18u64 {
        let others: Vec<u64> = (0..18).filter(|&v| v != s).collect();
        for size in 1..=3 {
            common::subsets(&others, size, |set| {
                instances += 1;
                fallbacks += run(f, s, set) as usize;
            });
        }
    }
    eprintln!("rdn:ring3,1: {fallbacks} of {instances} instances use the exact search");
    assert_eq!(fallbacks, 0);
}

#[test]
fn random_instances_up_to_rdn_2_of_q3() {
    let mut rng = Rng(13);
    let cases = [
        (Family::Rdn(Base::Q(2), 1), 3000),
        (Family::Rdn(Base::Q(3), 1), 3000),
        (Family::Rdn(Base::Q(4), 1), 2000),
        (Family::Rdn(Base::Ring3, 2), 3000),
        (Family::Rdn(Base::Q(2), 2), 2000),
        (Family::Rdn(Base::Q(3), 2), 2000),
        (Family::Rdn(Base::Ring3, 3), 300),
    ];
    for (f, count) in cases {
        let r = rdn(f);
        let n = r.node_count();
        let cluster = r.nodes_at(r.k - 1);
        let d = r.degree() as usize;
        let mut fallbacks = 0;
        for _ in 0..count {
            let s = rng.below(n);
            let targets: Vec<u64> = match rng.below(4) {
                0 => rng.distinct(n, d, &[s]),
                // Crowded: targets in two or three clusters, one of them maybe C_s.
                _ => {
                    let homes: Vec<u64> = (0..3)
                        .map(|i| {
                            if i == 0 && rng.below(2) == 0 {
                                s / cluster
                            } else {
                                rng.below(n / cluster)
                            }
                        })
                        .collect();
                    let mut out = Vec::new();
                    while out.len() < d {
                        let v = homes[rng.below(3) as usize] * cluster + rng.below(cluster);
                        if v != s && !out.contains(&v) {
                            out.push(v);
                        }
                    }
                    out
                }
            };
            fallbacks += run(f, s, &targets) as usize;
        }
        eprintln!("{}: {fallbacks} of {count} use the exact search", f.name());
        if f != Family::Rdn(Base::Q(2), 1) {
            assert_eq!(fallbacks, 0, "{}", f.name());
        }
    }
}

#[test]
fn the_bound_is_the_papers() {
    // 3 D_{k-1} + 6: D_0 = 1 for the ring, so 9 at k = 1 and 18 at k = 2 (Example 1).
    let bound = |name: &str| match name.parse::<cuberoute_protocol::Topology>().unwrap() {
        cuberoute_protocol::Topology::DualNet(r) => n2s::bound(r),
        _ => unreachable!(),
    };
    assert_eq!(bound("rdn:ring3,1"), 9);
    assert_eq!(bound("rdn:ring3,2"), 18);
    assert_eq!(
        bound("rdn:q3,2"),
        3 * DualNet {
            base: rdn::Base::Q3,
            k: 1
        }
        .diameter() as usize
            + 6
    );
}

/// Node-to-node (ours, from RDN N2S to the neighbours of d; `dualnet::n2n`): every pair of the
/// smallest networks, random pairs (a quarter of them adjacent) up to RDN^2(Q_3), each checked
/// by the independent checker with k = d_0 + k paths, within RDN N2S's bound plus the last
/// edge, and none from the exact search.
#[test]
fn node_to_node_every_pair_of_the_smallest_and_random_up_to_rdn_2_of_q3() {
    let n2n = |f: Family, s: u64, d: u64| -> bool {
        let r = rdn(f);
        let system = dualnet::n2n::rdn_n2n(r, NodeId(s), NodeId(d))
            .unwrap_or_else(|e| panic!("{} {s} -> {d}: {e}", f.name()));
        let longest = f
            .check_node_to_node(s, d, f.degree(), &raw(&system.paths))
            .unwrap_or_else(|e| panic!("{} {s} -> {d}: {e}", f.name()));
        assert!(longest <= n2s::bound(r) + 1, "{} {s} -> {d}", f.name());
        system.construction.is_fallback()
    };
    for f in [Family::Rdn(Base::Ring3, 1), Family::Rdn(Base::Q(2), 1)] {
        let n = f.nodes();
        let mut fallbacks = 0;
        for s in 0..n {
            for d in (0..n).filter(|&d| d != s) {
                fallbacks += n2n(f, s, d) as usize;
            }
        }
        eprintln!(
            "{} node-to-node: {fallbacks} of {} pairs use the exact search",
            f.name(),
            n * (n - 1)
        );
        assert_eq!(fallbacks, 0, "{}", f.name());
    }
    let mut rng = Rng(17);
    for (f, count) in [
        (Family::Rdn(Base::Q(3), 1), 2000),
        (Family::Rdn(Base::Ring3, 2), 2000),
        (Family::Rdn(Base::Q(2), 2), 1000),
        (Family::Rdn(Base::Q(3), 2), 1000),
        (Family::Rdn(Base::Ring3, 3), 200),
    ] {
        let n = f.nodes();
        for _ in 0..count {
            let s = rng.below(n);
            let d = if rng.below(4) == 0 {
                let near = f.neighbours(s);
                near[rng.below(near.len() as u64) as usize]
            } else {
                rng.distinct(n, 1, &[s])[0]
            };
            assert!(
                !n2n(f, s, d),
                "{} {s} -> {d} used the exact search",
                f.name()
            );
        }
    }
}
