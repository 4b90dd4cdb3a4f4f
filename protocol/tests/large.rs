//! Property tests on random pairs of large topologies, up to EH(31,31) and Q_63, checked by the
//! independent checker of tests/common (adjacency, distance and k from the definitions).

mod common;

use common::Graph;
use cuberoute_protocol::routing::sim::Network;
use cuberoute_protocol::{NodeId, Topology, disjoint_paths};
use proptest::prelude::*;

/// A random topology and two distinct random nodes of it.
fn instance() -> impl Strategy<Value = (Graph, u64, u64)> {
    let graph = prop_oneof![
        (1u32..=63).prop_map(Graph::Q),
        (1u32..=31, 1u32..=31).prop_map(|(s, t)| Graph::Eh(s, t)),
    ];
    graph.prop_flat_map(|g| {
        let mask = g.nodes() - 1;
        (Just(g), any::<u64>(), any::<u64>()).prop_filter_map("distinct nodes", move |(g, a, b)| {
            (a & mask != b & mask).then_some((g, a & mask, b & mask))
        })
    })
}

/// Pairs close to each other (a few bits apart) exercise the detours; uniform random pairs are
/// far apart almost always.
fn near_instance() -> impl Strategy<Value = (Graph, u64, u64)> {
    instance().prop_flat_map(|(g, a, _)| {
        let bits = match g {
            Graph::Q(n) => n,
            Graph::Eh(s, t) => s + t + 1,
        };
        (Just(g), Just(a), proptest::collection::vec(0..bits, 1..4)).prop_filter_map(
            "distinct nodes",
            |(g, a, flips)| {
                let b = flips.iter().fold(a, |b, &bit| b ^ 1 << bit);
                (a != b).then_some((g, a, b))
            },
        )
    })
}

fn check(g: Graph, src: u64, dst: u64) -> Result<(), TestCaseError> {
    let t: Topology = g.name().parse().unwrap();
    let set = disjoint_paths(t, NodeId(src), NodeId(dst)).unwrap();
    let paths: Vec<Vec<u64>> = set
        .paths
        .iter()
        .map(|p| p.iter().map(|v| v.0).collect())
        .collect();
    g.check_node_to_node(src, dst, &paths)
        .map_err(|e| TestCaseError::fail(format!("{} {src} -> {dst}: {e}", g.name())))?;
    // The whole-network simulation routes the same paths, in exactly `longest` rounds.
    let mut network: Network<usize> = Network::new(t);
    network
        .input(NodeId(src), NodeId(dst), (0..set.k()).collect())
        .unwrap();
    let rounds = network.run(100);
    prop_assert_eq!(rounds, set.longest() as u64 + 1, "the last round outputs");
    for out in network.departed() {
        prop_assert_eq!(out.dropped, None);
        prop_assert_eq!(&out.trace, &set.paths[out.packet.message]);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(10000))]

    #[test]
    fn random_pairs_get_valid_disjoint_paths((g, src, dst) in instance()) {
        check(g, src, dst)?;
    }

    #[test]
    fn near_pairs_get_valid_disjoint_paths((g, src, dst) in near_instance()) {
        check(g, src, dst)?;
    }
}
