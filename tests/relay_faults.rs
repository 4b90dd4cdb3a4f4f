//! The relay faults of the chaos tooling on real processes: a capturing relay reads what it
//! forwards clear, and a forging relay's clear copies pass every check and reach the client;
//! sealed (the default), the capture holds nothing of the payload and the forged copy is
//! dropped (`seal_broken`). The delivery modes' answers to both are tested in
//! tests/delivery.rs, the stronger forgers in tests/forgery.rs.

mod common;

use common::{Cluster, json_lines};
use cuberoute_protocol::seal::sealed::Sealed;
use serde_json::Value;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(hex: &str) -> Vec<u8> {
    (0..hex.len() / 2)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

/// Whether a captured payload is a sealing handshake message (an Init or its answer, which the
/// first sealed set to a destination draws), not a copy of a set.
fn is_handshake(captured: &Value) -> bool {
    let bytes = unhex(captured["payload_hex"].as_str().unwrap());
    matches!(
        Sealed::from_bytes(&bytes),
        Some(Sealed::Init(_) | Sealed::Resp(_))
    )
}

fn send(cluster: &Cluster, message: &str, clear: bool) {
    let mut args = vec![
        "send",
        "--from",
        "0",
        "--to",
        "7",
        "--message",
        message,
        "--wait",
    ];
    if clear {
        args.push("--clear");
    }
    cluster.ok(&args);
}

/// Q_3 from 0 to 7: the three disjoint paths are 0-1-3-7, 0-2-6-7 and 0-4-5-7 (each relay is
/// on exactly one of them), so relay 1 sees exactly one copy.
#[test]
fn a_capturing_relay_reads_and_a_forging_relay_rewrites_only_what_goes_clear() {
    let cluster = Cluster::up("q:3", "127.2.60.0");
    let first = cluster.ok(&["chaos", "captured", "--node", "1"]);
    assert_eq!(first, "", "nothing captured before capture is on");
    assert!(
        cluster
            .ok(&["chaos", "capture", "--node", "1"])
            .contains("capture on")
    );
    send(&cluster, "attack at dawn", true);
    send(&cluster, "attack at dusk", false);
    let all = json_lines(&cluster.ok(&["chaos", "captured", "--node", "1", "--json"]));
    let captured: Vec<_> = all.iter().filter(|c| !is_handshake(c)).collect();
    assert_eq!(captured.len(), 2, "{all:?}");
    assert_eq!(captured[0]["payload_hex"], hex(b"attack at dawn").as_str());
    assert_eq!(
        (captured[0]["src"].as_u64(), captured[0]["dst"].as_u64()),
        (Some(0), Some(7))
    );
    let sealed = unhex(captured[1]["payload_hex"].as_str().unwrap());
    assert!(
        !sealed
            .windows(8)
            .any(|w| b"attack at dusk".windows(8).any(|p| p == w)),
        "a sealed copy holds nothing of its payload: {sealed:?}"
    );

    // Forging on node 2: its clear copy passes the end-to-end checksum with another payload;
    // its sealed copy does not open.
    cluster.ok(&["chaos", "capture", "--node", "1", "--off"]);
    assert!(
        cluster
            .ok(&["chaos", "forge", "--node", "2"])
            .contains("forge on")
    );
    send(&cluster, "pay 10", true);
    let output = json_lines(&cluster.ok(&["recv", "--node", "7", "--json", "--clear"]));
    let forged: Vec<_> = output
        .iter()
        .filter(|d| {
            !["attack at dawn", "attack at dusk", "pay 10"]
                .contains(&d["payload"].as_str().unwrap())
        })
        .collect();
    assert_eq!(
        forged.len(),
        1,
        "one forged clear copy reached the client: {output:?}"
    );
    assert_eq!(forged[0]["sealed"], false);
    // The forged clear copy was not counted as dropped anywhere: the checksum held.
    assert_eq!(
        cluster.node_status(7)["counters"]["dropped"],
        serde_json::json!({})
    );
    // One copy dropped: the send says so (exit 1), the other two arrive.
    let out = cluster.run(&[
        "send",
        "--from",
        "0",
        "--to",
        "7",
        "--message",
        "pay 20",
        "--wait",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let sealed: Vec<_> = json_lines(&cluster.ok(&["recv", "--node", "7", "--json"]));
    assert!(
        sealed
            .iter()
            .all(|d| d["sealed"] == true && d["payload"] != "pay 10"),
        "recv shows sealed entries only by default: {sealed:?}"
    );
    let twenty = sealed.iter().filter(|d| d["payload"] == "pay 20").count();
    assert_eq!(twenty, 2, "two true copies, the third dropped: {sealed:?}");
    assert_eq!(cluster.node_status(2)["chaos"]["forged"], 2);
    assert_eq!(
        cluster.node_status(1)["chaos"]["captured"].as_u64(),
        Some(all.len() as u64)
    );
    assert_eq!(
        cluster.node_status(7)["counters"]["dropped"]["seal_broken"],
        1
    );

    cluster.ok(&["chaos", "forge", "--node", "2", "--off"]);
    send(&cluster, "honest", false);
    let output = json_lines(&cluster.ok(&["recv", "--node", "7", "--json", "--after", "11"]));
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
        &["chaos", "forge", "--node", "1", "--what", "everything"][..],
    ] {
        let out = cluster.run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
}
