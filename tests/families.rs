//! The seed families on real processes (issue 7): `cluster up hhc:2` (64 processes), `mc:1,2`
//! (32) and `rdn:ring3,1` (18). Every send is source-routed: one destination gets the k
//! node-to-node paths, a set one copy per destination. Every copy of every sampled send must
//! arrive, intact, over exactly the path `cuberoute paths` computes for the same request.

mod common;

use common::{Cluster, ok};
use serde_json::Value;

fn json(text: &str) -> Value {
    serde_json::from_str(text.trim()).unwrap()
}

/// Send `from -> to` and compare every copy with `paths` (node-to-node, or `--to-set`).
fn check(cluster: &Cluster, topology: &str, from: u64, to: &[u64]) {
    let (from, list) = (
        from.to_string(),
        to.iter().map(u64::to_string).collect::<Vec<_>>().join(","),
    );
    let report = json(&cluster.ok(&[
        "send",
        "--from",
        &from,
        "--to",
        &list,
        "--message",
        &message(&from, &list),
        "--wait",
        "--json",
    ]));
    let expected = if to.len() == 1 {
        json(&ok(&["paths", topology, &from, &list, "--json"]))
    } else {
        json(&ok(&[
            "paths", topology, &from, "--to-set", &list, "--json",
        ]))
    };
    let paths = expected["paths"].as_array().unwrap();
    assert!(!paths.is_empty(), "{expected}");
    let copies = report["copies"].as_array().unwrap();
    assert_eq!(copies.len(), paths.len(), "{topology} {from} -> {list}");
    assert_eq!(report["k"], paths.len(), "{report}");
    for (i, copy) in copies.iter().enumerate() {
        assert_eq!(
            copy["delivered"], true,
            "{topology} {from} -> {list}: {report}"
        );
        assert_eq!(
            copy["path"], paths[i],
            "{topology} {from} -> {list}, copy {i}"
        );
        let end = copy["path"].as_array().unwrap().last().unwrap().as_u64();
        let want = if to.len() == 1 { to[0] } else { to[i] };
        assert_eq!(end, Some(want), "copy {i} ends at its destination");
    }
}

/// The message of the send `from -> list`.
fn message(from: &str, list: &str) -> String {
    format!("family {from}->{list}")
}

/// Sampled pairs and sets of `topology` (n nodes, connectivity k): the farthest-apart ids,
/// neighbours, and a deterministic scatter; sets of 2..=k destinations.
fn sample(cluster: &Cluster, topology: &str, n: u64, k: u64) {
    let mut pairs = vec![(0, n - 1), (n - 1, 0), (0, 1), (1, 0)];
    let mut x = 7u64;
    while pairs.len() < 14 {
        x = (x * 37 + 11) % n;
        let y = (x * 13 + 5) % n;
        if x != y {
            pairs.push((x, y));
        }
    }
    for (from, to) in pairs {
        check(cluster, topology, from, &[to]);
    }
    for size in 2..=k {
        for start in [0, n / 3, n - 1] {
            // `size` distinct destinations spread over the network, none the source.
            let dests: Vec<u64> = (1..=size)
                .map(|j| (start + j * (n / (size + 1)).max(1)) % n)
                .collect();
            assert!(!dests.contains(&start));
            check(cluster, topology, start, &dests);
        }
    }
    // The destination's output buffer holds the k copies, intact.
    let out = cluster.ok(&["recv", "--node", &(n - 1).to_string(), "--json"]);
    let want = message("0", &(n - 1).to_string());
    let copies = common::json_lines(&out)
        .into_iter()
        .filter(|d| d["payload"] == want.as_str())
        .count() as u64;
    assert_eq!(copies, k, "{out}");
    // Every node delivered everything: no drop anywhere.
    for node in cluster.status()["nodes"].as_array().unwrap() {
        assert_eq!(node["counters"]["dropped"], serde_json::json!({}), "{node}");
    }
}

/// `--split`: the payload cut into k parts over the k source routes to one destination, and
/// joined again in index order from the destination's output buffer.
fn split(cluster: &Cluster, n: u64, k: u64) {
    let to = (n - 2).to_string();
    let message = "a payload cut into k parts, one per disjoint path";
    let report = json(&cluster.ok(&[
        "send",
        "--from",
        "1",
        "--to",
        &to,
        "--message",
        message,
        "--split",
        "--wait",
        "--json",
    ]));
    assert_eq!(report["k"], k, "{report}");
    let mut parts: Vec<Value> = common::json_lines(&cluster.ok(&["recv", "--node", &to, "--json"]))
        .into_iter()
        .filter(|d| d["split"] == true && d["from"] == 1)
        .collect();
    parts.sort_by_key(|d| d["index"].as_u64());
    assert_eq!(parts.len() as u64, k);
    let joined: String = parts
        .iter()
        .map(|p| p["payload"].as_str().unwrap())
        .collect();
    assert_eq!(joined, message);
}

/// What a family cluster refuses, with exit 2: what the papers give no algorithm for, and a
/// split over several destinations.
fn refusals(cluster: &Cluster) {
    for bad in [
        &[
            "send",
            "--from",
            "0",
            "--to",
            "1,2",
            "--split",
            "--message",
            "m",
        ][..],
        &[
            "send",
            "--from",
            "0",
            "--to",
            "2",
            "--avoid",
            "1",
            "--message",
            "m",
        ],
        &[
            "send",
            "--from",
            "0",
            "--to",
            "2",
            "--constraint",
            "1",
            "--message",
            "m",
        ],
        &["send", "--from", "0", "--to", "0", "--message", "m"],
    ] {
        cluster.refused(bad);
    }
}

/// Bring up `topology` as `nodes` processes at `base`, and run every check above.
fn runs_on_a_cluster(topology: &str, base: &str, nodes: u64, k: u64) {
    let cluster = Cluster::up(topology, base);
    assert_eq!(
        cluster.status()["nodes"].as_array().unwrap().len() as u64,
        nodes
    );
    sample(&cluster, topology, nodes, k);
    split(&cluster, nodes, k);
    refusals(&cluster);
}

#[test]
fn hhc_2_cluster_of_64_processes_routes_over_the_computed_paths() {
    runs_on_a_cluster("hhc:2", "127.2.20.0", 64, 3);
}

#[test]
fn metacube_1_2_cluster_of_32_processes_routes_over_the_computed_paths() {
    runs_on_a_cluster("mc:1,2", "127.2.21.0", 32, 3);
}

#[test]
fn dual_net_ring3_1_cluster_of_18_processes_routes_over_the_computed_paths() {
    runs_on_a_cluster("rdn:ring3,1", "127.2.22.0", 18, 3);
}
