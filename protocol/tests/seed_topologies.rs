//! The topologies of issue 7 (HHC, metacube, recursive dual-net) against their definitions:
//! neighbours, adjacency, degree, distance against BFS, diameter, connectivity by max flow, node
//! counts (the RDN paper's Table 1), names and ids.
// Ids are written grouped as the papers group them (sigma_pi, c_M..._M0).
#![allow(clippy::unusual_byte_groupings)]

mod common;

use common::families::{Base, Family, small_families};
use cuberoute_protocol::{NodeId, Topology};

fn ids(v: impl IntoIterator<Item = NodeId>) -> Vec<u64> {
    let mut out: Vec<u64> = v.into_iter().map(|x| x.0).collect();
    out.sort_unstable();
    out
}

#[test]
fn neighbours_degree_and_adjacency_follow_the_definitions() {
    for f in small_families() {
        let t = f.topology();
        assert_eq!(t.node_count(), f.nodes(), "{}", f.name());
        for v in 0..f.nodes() {
            let mut want = f.neighbours(v);
            want.sort_unstable();
            assert_eq!(ids(t.neighbours(NodeId(v))), want, "{} node {v}", f.name());
            assert_eq!(t.degree(NodeId(v)) as usize, f.degree());
            for &w in &want {
                assert!(t.is_adjacent(NodeId(v), NodeId(w)));
            }
        }
        // A few non-edges, and ids out of range.
        assert!(!t.is_adjacent(NodeId(0), NodeId(0)));
        assert!(!t.contains(NodeId(f.nodes())));
        assert!(!t.is_adjacent(NodeId(0), NodeId(f.nodes())));
    }
}

#[test]
fn distance_is_bfs_and_diameter_is_the_papers() {
    for f in small_families() {
        let t = f.topology();
        let mut diameter = 0;
        for u in 0..f.nodes() {
            let dist = f.bfs(u);
            for v in 0..f.nodes() {
                let d = t.distance_or_bound(NodeId(u), NodeId(v));
                assert!(d.exact);
                assert_eq!(d.length, dist[v as usize], "{}: {u} -> {v}", f.name());
            }
            diameter = diameter.max(*dist.iter().max().unwrap());
        }
        assert_eq!(t.diameter(), diameter, "{}", f.name());
    }
}

#[test]
fn distance_on_larger_instances_from_sampled_sources() {
    let cases = [
        Family::Hhc(4),
        Family::Mc(2, 3),
        Family::Mc(3, 2),
        Family::Mc(4, 1),
        Family::Rdn(Base::Q(3), 2),
        Family::Rdn(Base::Q(2), 2),
    ];
    let mut rng = common::families::Rng(7);
    for f in cases {
        let t = f.topology();
        for _ in 0..2 {
            let u = rng.below(f.nodes());
            let dist = f.bfs(u);
            assert_eq!(
                *dist.iter().max().unwrap(),
                t.diameter(),
                "{} diameter from {u}",
                f.name()
            );
            for _ in 0..2000 {
                let v = rng.below(f.nodes());
                let d = t.distance_or_bound(NodeId(u), NodeId(v));
                assert!(d.exact, "{}", f.name());
                assert_eq!(d.length, dist[v as usize], "{}: {u} -> {v}", f.name());
            }
        }
    }
}

#[test]
fn hhc_5_distance_is_exact_up_to_16_differing_bits_and_an_upper_bound_beyond() {
    let t: Topology = "hhc:5".parse().unwrap();
    let close = NodeId(0xffff << 5 | 3);
    let d = t.distance_or_bound(NodeId(0), close);
    assert!(d.exact);
    // 16 external edges, and a walk from processor 0 through 0..15 to 3.
    assert!(d.length >= 16 + 15);
    let far = NodeId(0xffff_ffff << 5);
    let d = t.distance_or_bound(NodeId(0), far);
    assert!(!d.exact);
    // At least 32 external edges and a closed walk through all 32 processors.
    assert!(d.length >= 64 && d.length <= t.diameter() + 8, "{d:?}");
}

#[test]
fn connectivity_is_the_degree_by_max_flow() {
    for f in small_families() {
        let t = f.topology();
        // Every family is vertex-transitive; take node 0 and a second source against every node.
        for u in [0, f.nodes() / 2 + 1] {
            for v in (0..f.nodes()).filter(|&v| v != u) {
                assert_eq!(
                    f.max_flow(u, v),
                    t.local_connectivity(NodeId(u), NodeId(v)),
                    "{}: {u} -> {v}",
                    f.name()
                );
            }
        }
        assert_eq!(t.connectivity() as usize, f.degree());
    }
}

#[test]
fn rdn_node_counts_match_table_1() {
    // Seed 003, Table 1 (hypercube bases; the 3-cube and 4-cube rows), and §2 for the 3-ring.
    let table = [
        ("rdn:q3,1", 128u64, 4u32),
        ("rdn:q3,2", 32_768, 5),
        ("rdn:q4,1", 512, 5),
        ("rdn:q4,2", 524_288, 6),
        ("rdn:ring3,1", 18, 3),
        ("rdn:ring3,2", 648, 4),
        ("rdn:ring3,3", 839_808, 5),
    ];
    for (name, nodes, degree) in table {
        let t: Topology = name.parse().unwrap();
        assert_eq!(t.node_count(), nodes, "{name}");
        assert_eq!(t.degree(NodeId(0)), degree, "{name}");
    }
    // RDN^3(ring3): degree 5 and diameter 22 (§2).
    let t: Topology = "rdn:ring3,3".parse().unwrap();
    assert_eq!(t.diameter(), 22);
}

#[test]
fn names_ids_and_ranges() {
    for name in [
        "hhc:1",
        "hhc:5",
        "mc:1,1",
        "mc:3,3",
        "mc:5,1",
        "rdn:ring3,4",
        "rdn:q4,3",
    ] {
        let t: Topology = name.parse().unwrap();
        assert_eq!(t.to_string(), name);
        let json = serde_json::to_string(&t).unwrap();
        assert_eq!(serde_json::from_str::<Topology>(&json).unwrap(), t);
    }
    for bad in [
        "hhc:0",
        "hhc:6",
        "mc:0,2",
        "mc:3,8",
        "mc:6,1",
        "rdn:q5,1",
        "rdn:q4,4",
        "rdn:ring3,0",
        "rdn:ring3",
        "mc:2",
    ] {
        assert!(bad.parse::<Topology>().is_err(), "{bad}");
    }
    // Every id reads back from its printed form.
    for f in small_families() {
        let t = f.topology();
        for v in (0..f.nodes()).step_by(7) {
            let text = t.format_node(NodeId(v));
            assert_eq!(t.parse_node(&text), Ok(NodeId(v)), "{} {text}", f.name());
        }
    }
    let h: Topology = "hhc:3".parse().unwrap();
    assert_eq!(h.parse_node("00001010.001"), Ok(NodeId(0b00001010_001)));
    assert!(
        h.parse_node("0001010.001").is_err(),
        "7-bit sigma (thesis typo)"
    );
    let mc: Topology = "mc:2,2".parse().unwrap();
    assert_eq!(
        mc.parse_node("10.11.10.11.00"),
        Ok(NodeId(0b10_11_10_11_00))
    );
    assert!(
        mc.parse_node("10.11.10.11.00.00").is_err(),
        "6 groups (thesis typo)"
    );
    let r: Topology = "rdn:ring3,2".parse().unwrap();
    assert_eq!(r.format_node(NodeId(14)), "(0,(0,0,0),(1,1,2))");
    assert!(r.parse_node("(0,(0,0,0),(1,1,3))").is_err());
    assert!(r.parse_node("648").is_err());
}

#[test]
fn guarded_actions_refuse_the_new_families_without_panicking() {
    use cuberoute_protocol::{
        Anchors, DropReason, Header, Packet, Route, RouteKind, SendRequest, flush_bound, hop,
    };
    for name in ["hhc:2", "mc:1,2", "rdn:ring3,1"] {
        let t: Topology = name.parse().unwrap();
        assert!(!t.has_guarded_protocol());
        assert!(cuberoute_protocol::map(t, NodeId(0), NodeId(1)).is_err());
        let routes = SendRequest::to(NodeId(1)).routes(t, NodeId(0)).unwrap();
        assert_eq!(
            routes.kind(),
            RouteKind::Source,
            "{name}: a send is source-routed"
        );
        let header = Header {
            src: NodeId(0),
            dst: NodeId(5),
            pd: NodeId(4),
            via: None,
            anchors: Anchors { fa: 0, fb: 0 },
            index: 0,
        };
        let from = t.neighbours(NodeId(1)).next().unwrap();
        match hop(
            t,
            NodeId(1),
            Packet {
                route: Route::Guarded(header),
                message: (),
            },
            from,
        ) {
            cuberoute_protocol::Action::Drop { reason, .. } => {
                assert_eq!(reason, DropReason::UnsupportedTopology)
            }
            other => panic!("{name}: {other:?}"),
        }
        // Dropped where it first arrives.
        assert_eq!(flush_bound(t, RouteKind::Guarded), 1);
    }
}
