//! The relay faults of the chaos tooling on real processes: a capturing relay reads what it
//! forwards, and a forging relay's copies pass every check and reach the client in the plain
//! mode (the delivery modes' answers to both are tested in tests/delivery.rs).

mod common;

use common::{Cluster, json_lines};

/// Q_3 from 0 to 7: the three disjoint paths are 0-1-3-7, 0-2-6-7 and 0-4-5-7 (each relay is
/// on exactly one of them), so relay 1 sees exactly one copy.
#[test]
fn a_capturing_relay_reads_and_a_forging_relay_rewrites_what_it_forwards() {
    let cluster = Cluster::up("q:3", "127.2.60.0");
    let first = cluster.ok(&["chaos", "captured", "--node", "1"]);
    assert_eq!(first, "", "nothing captured before capture is on");
    assert!(
        cluster
            .ok(&["chaos", "capture", "--node", "1"])
            .contains("capture on")
    );
    cluster.ok(&[
        "send",
        "--from",
        "0",
        "--to",
        "7",
        "--message",
        "attack at dawn",
        "--wait",
    ]);
    let captured = json_lines(&cluster.ok(&["chaos", "captured", "--node", "1", "--json"]));
    assert_eq!(captured.len(), 1, "{captured:?}");
    let hex: String = b"attack at dawn"
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(captured[0]["payload_hex"], hex.as_str());
    assert_eq!(
        (captured[0]["src"].as_u64(), captured[0]["dst"].as_u64()),
        (Some(0), Some(7))
    );

    // Forging on node 2: its copy passes the end-to-end checksum with another payload.
    cluster.ok(&["chaos", "capture", "--node", "1", "--off"]);
    assert!(
        cluster
            .ok(&["chaos", "forge", "--node", "2"])
            .contains("forge on")
    );
    cluster.ok(&[
        "send",
        "--from",
        "0",
        "--to",
        "7",
        "--message",
        "pay 10",
        "--wait",
    ]);
    let output = json_lines(&cluster.ok(&["recv", "--node", "7", "--json"]));
    let forged: Vec<_> = output
        .iter()
        .filter(|d| d["payload"] != "attack at dawn" && d["payload"] != "pay 10")
        .collect();
    assert_eq!(
        forged.len(),
        1,
        "one forged copy reached the client: {output:?}"
    );
    let status = cluster.node_status(2);
    assert_eq!(status["chaos"]["forged"], 1, "{status}");
    assert_eq!(cluster.node_status(1)["chaos"]["captured"], 1);
    // The forged copy was not counted as dropped anywhere: the checksum held.
    assert_eq!(
        cluster.node_status(7)["counters"]["dropped"],
        serde_json::json!({})
    );

    cluster.ok(&["chaos", "forge", "--node", "2", "--off"]);
    cluster.ok(&[
        "send",
        "--from",
        "0",
        "--to",
        "7",
        "--message",
        "honest",
        "--wait",
    ]);
    let output = json_lines(&cluster.ok(&["recv", "--node", "7", "--json", "--after", "6"]));
    assert_eq!(output.len(), 3, "{output:?}");
    assert!(
        output.iter().all(|d| d["payload"] == "honest"),
        "{output:?}"
    );
}

#[test]
fn relay_faults_refuse_bad_nodes() {
    let cluster = Cluster::up("q:2", "127.2.61.0");
    for args in [
        &["chaos", "forge", "--node", "9"][..],
        &["chaos", "capture", "--node", "x"][..],
        &["chaos", "captured", "--node", "4"][..],
    ] {
        let out = cluster.run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
}
