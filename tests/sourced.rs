//! Source-routed sends on a running Q_4 cluster (issue: the Q_n algorithms on a cluster): a
//! disjoint multicast, the fault-tolerant one, and the bit-constrained container. Every copy's
//! traced path must be exactly what `cuberoute paths` computes for the same request.

mod common;

use common::{Cluster, ok};
use serde_json::Value;

fn json(text: &str) -> Value {
    serde_json::from_str(text.trim()).unwrap()
}

/// Send, and compare every copy with `paths` for the same request.
fn check(cluster: &Cluster, send: &[&str], paths: &[&str]) {
    let mut send_args = vec!["send", "--message", "m", "--wait", "--json"];
    send_args.extend(send);
    let report = json(&cluster.ok(&send_args));
    let mut path_args = vec!["paths", "q:4", "--json"];
    path_args.extend(paths);
    let expected = json(&ok(&path_args));
    let copies = report["copies"].as_array().unwrap();
    assert_eq!(
        copies.len(),
        expected["paths"].as_array().unwrap().len(),
        "{report}"
    );
    for (i, copy) in copies.iter().enumerate() {
        assert_eq!(copy["delivered"], true, "{send:?}: {report}");
        assert_eq!(copy["path"], expected["paths"][i], "{send:?} copy {i}");
        let last = copy["path"].as_array().unwrap().last().unwrap().clone();
        if let Some(to) = copy.get("to") {
            assert_eq!(to, &last, "copy {i} ends at its destination");
        }
    }
}

#[test]
fn q4_source_routed_sends_follow_the_computed_paths() {
    let cluster = Cluster::up("q:4", "127.2.16.0");
    // Node-to-set: one copy to each destination, disjoint paths (Cube-N2S).
    for (from, to) in [
        ("0", "3,12,15,5"),
        ("6", "9"),
        ("6", "9,1"),
        ("15", "0,1,2,4"),
        ("5", "10,12,3"),
    ] {
        let multi = to.contains(',');
        let send = ["--from", from, "--to", to];
        if multi {
            check(&cluster, &send, &[from, "--to-set", to]);
        } else {
            // A single destination is node-to-node: the guarded-action protocol's k paths.
            check(&cluster, &send, &[from, to]);
        }
    }
    // Fault-tolerant node-to-set (Cube-XFTN2S): |D| + |F| <= n - 1.
    for (from, to, avoid) in [("0", "3,12", "1"), ("9", "6", "8,1"), ("2", "13,7", "3")] {
        check(
            &cluster,
            &["--from", from, "--to", to, "--avoid", avoid],
            &[from, "--to-set", to, "--avoid", avoid],
        );
    }
    // The container (HC-CONTAINER): every node of weight i or i+1.
    for (from, to, i) in [
        ("3", "12", "2"),
        ("1", "14", "1"),
        ("7", "11", "2"),
        ("0", "15", "0"),
    ] {
        let refused = cluster.run(&[
            "send",
            "--from",
            from,
            "--to",
            to,
            "--constraint",
            i,
            "--message",
            "m",
        ]);
        if refused.status.success() {
            check(
                &cluster,
                &["--from", from, "--to", to, "--constraint", i],
                &[from, to, "--constraint", i],
            );
        } else {
            // Endpoints outside gamma_i are refused at the source, as `paths` refuses them.
            assert_eq!(refused.status.code(), Some(2));
            let paths = common::cuberoute(&["paths", "q:4", from, to, "--constraint", i]);
            assert_eq!(paths.status.code(), Some(2));
        }
    }
    // A container with --split: the payload cut over its k = 2 paths, joined at 12.
    let message = "split over a bit-constrained container";
    let report = json(&cluster.ok(&[
        "send",
        "--from",
        "3",
        "--to",
        "12",
        "--constraint",
        "2",
        "--split",
        "--message",
        message,
        "--wait",
        "--json",
    ]));
    assert_eq!(report["k"], 2, "{report}");
    let mut parts: Vec<Value> =
        common::json_lines(&cluster.ok(&["recv", "--node", "12", "--json"]))
            .into_iter()
            .filter(|d| d["split"] == true)
            .collect();
    parts.sort_by_key(|d| d["index"].as_u64());
    let joined: String = parts
        .iter()
        .map(|p| p["payload"].as_str().unwrap())
        .collect();
    assert_eq!(joined, message);
    // Every node still counts no drop.
    for node in cluster.status()["nodes"].as_array().unwrap() {
        assert_eq!(node["counters"]["dropped"], serde_json::json!({}), "{node}");
    }
    // Requests an algorithm cannot serve are refused with exit 2.
    for bad in [
        &["send", "--from", "0", "--to", "1,2,3,4,5", "--message", "m"][..],
        &[
            "send",
            "--from",
            "0",
            "--to",
            "3,12,5",
            "--avoid",
            "1",
            "--message",
            "m",
        ],
        &["send", "--from", "0", "--to", "3,3", "--message", "m"],
        &[
            "send",
            "--from",
            "0",
            "--to",
            "3,12",
            "--constraint",
            "1",
            "--message",
            "m",
        ],
    ] {
        cluster.refused(bad);
    }
}

#[test]
fn source_routes_are_refused_on_an_exchanged_hypercube() {
    let cluster = Cluster::up("eh:1,1", "127.2.17.0");
    let out = cluster.run(&["send", "--from", "0", "--to", "3,5", "--message", "m"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        common::stderr(&out).contains("no source-routed algorithm"),
        "{}",
        common::stderr(&out)
    );
}
