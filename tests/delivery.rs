//! The delivery modes on real processes (docs/delivery.md): every mode delivers the payload
//! once and whole; a reliable set survives a dead destination and still reaches its client
//! exactly once; a forging relay is outvoted and named; a capturing relay reads nothing of a
//! secret-shared payload; bad modes and payloads are one clear line and exit 2.

mod common;

use common::{Cluster, json_lines, stderr};
use serde_json::Value;
use std::time::Duration;

fn send_json(cluster: &Cluster, args: &[&str]) -> Value {
    let mut all = vec!["send", "--json", "--wait"];
    all.extend(args);
    serde_json::from_str(cluster.ok(&all).trim()).unwrap()
}

/// The entries of `node`'s output that belong to the set `seq`.
fn entries_of(cluster: &Cluster, node: &str, seq: u64) -> Vec<Value> {
    json_lines(&cluster.ok(&["recv", "--node", node, "--json"]))
        .into_iter()
        .filter(|e| e["seq"] == seq)
        .collect()
}

#[test]
fn every_mode_delivers_the_payload_once_and_whole() {
    let cluster = Cluster::up("q:3", "127.2.63.0");
    let payload = "a payload long enough to be cut into shards: 0123456789abcdef";
    for mode in [
        &["--reliable"][..],
        &["--code", "1"],
        &["--code", "2", "--reliable"],
        &["--secret", "1"],
        &["--secret", "2"],
        &["--byzantine", "1"],
        &["--byzantine", "1", "--reliable"],
    ] {
        let mut args = vec!["--from", "1", "--to", "6", "--message", payload];
        args.extend(mode);
        let report = send_json(&cluster, &args);
        assert_eq!(report["delivered"], true, "{mode:?}: {report}");
        assert_eq!(report["lost"], 0, "{mode:?}");
        assert_eq!(report["payload_bytes"], payload.len());
        let reliable = mode.contains(&"--reliable");
        assert_eq!(
            report["acked"],
            if reliable {
                Value::Bool(true)
            } else {
                Value::Null
            }
        );
        // Find the set at the destination: exactly one entry, the whole payload.
        let out = json_lines(&cluster.ok(&["recv", "--node", "6", "--json"]));
        let last = out.last().unwrap();
        let seq = last["seq"].as_u64().unwrap();
        let entries = entries_of(&cluster, "6", seq);
        assert_eq!(entries.len(), 1, "{mode:?}: {entries:?}");
        assert_eq!(entries[0]["payload"], payload, "{mode:?}");
        assert_eq!(entries[0]["mode"], report["mode"]);
    }
    // The erasure code puts less on the wire than k copies: k/(k-T) = 1.5 against 3 here
    // (compared clear: a seal adds the same fields and tag to every message of either).
    let coded = send_json(
        &cluster,
        &[
            "--from",
            "0",
            "--to",
            "7",
            "--message",
            payload,
            "--code",
            "1",
            "--clear",
        ],
    );
    let plain = send_json(
        &cluster,
        &["--from", "0", "--to", "7", "--message", payload, "--clear"],
    );
    let (coded, plain) = (
        coded["wire_bytes"].as_u64().unwrap(),
        plain["wire_bytes"].as_u64().unwrap(),
    );
    assert!(coded * 10 < plain * 7, "{coded} against {plain}");
}

#[test]
fn a_reliable_set_to_a_dead_destination_arrives_once_after_its_restart() {
    let cluster = Cluster::up("q:3", "127.2.64.0");
    cluster.ok(&["chaos", "kill", "--node", "7"]);
    let dir = cluster.path_str().to_string();
    let sender = std::thread::spawn(move || {
        common::cuberoute(&[
            "send",
            "--dir",
            &dir,
            "--from",
            "0",
            "--to",
            "7",
            "--message",
            "eventually",
            "--reliable",
            "--code",
            "1",
            "--wait",
            "--timeout",
            "30s",
            "--json",
        ])
    });
    // Long enough for several resends to pile up in the neighbours' link buffers.
    std::thread::sleep(Duration::from_millis(1500));
    cluster.ok(&["chaos", "restart", "--node", "7"]);
    let out = sender.join().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["delivered"], true, "{report}");
    assert_eq!(report["acked"], true, "{report}");
    assert!(report["attempts"].as_u64().unwrap() >= 2, "{report}");
    let entries = json_lines(&cluster.ok(&["recv", "--node", "7", "--json"]));
    assert_eq!(entries.len(), 1, "exactly once: {entries:?}");
    assert_eq!(entries[0]["payload"], "eventually");
    // Every resend that reached node 7 was known again, not delivered again.
    let status = cluster.node_status(7);
    let events = &status["counters"]["events"];
    assert_eq!(events["delivery_sets_delivered"], 1, "{status}");
    let source = cluster.node_status(0);
    assert!(
        source["counters"]["events"]["delivery_resends"]
            .as_u64()
            .unwrap()
            >= 1,
        "{source}"
    );
}

#[test]
fn a_forging_relay_is_outvoted_and_a_capturing_relay_reads_no_secret() {
    let cluster = Cluster::up("q:3", "127.2.65.0");
    // 0 -> 7: the paths 0-1-3-7, 0-2-6-7, 0-4-5-7; node 2 forges on path 1.
    cluster.ok(&["chaos", "forge", "--node", "2"]);
    let report = send_json(
        &cluster,
        &[
            "--from",
            "0",
            "--to",
            "7",
            "--message",
            "pay 10",
            "--byzantine",
            "1",
        ],
    );
    assert_eq!(report["delivered"], true, "{report}");
    // The forged copy is named when it arrived before two true ones agreed; after, it is a
    // late piece of a delivered set. Either way the client gets the true payload, once.
    let rejected = &report["rejected_paths"];
    assert!(
        *rejected == serde_json::json!([1]) || *rejected == serde_json::json!([]),
        "{report}"
    );
    let entries = json_lines(&cluster.ok(&["recv", "--node", "7", "--json"]));
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["payload"], "pay 10");
    assert_eq!(cluster.node_status(2)["chaos"]["forged"], 1);
    cluster.ok(&["chaos", "forge", "--node", "2", "--off"]);

    // Node 4 captures what it forwards of a secret shared with threshold 2 (T = 1).
    cluster.ok(&["chaos", "capture", "--node", "4"]);
    let secret = "the secret recipe: 2 cups of flour, 1 cup of sugar, 3 eggs";
    send_json(
        &cluster,
        &[
            "--from",
            "0",
            "--to",
            "7",
            "--message",
            secret,
            "--secret",
            "1",
        ],
    );
    let captured = json_lines(&cluster.ok(&["chaos", "captured", "--node", "4", "--json"]));
    assert_eq!(captured.len(), 1, "{captured:?}");
    let hex = captured[0]["payload_hex"].as_str().unwrap();
    let bytes: Vec<u8> = (0..hex.len() / 2)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    for run in secret.as_bytes().windows(8) {
        assert!(
            !bytes.windows(8).any(|w| w == run),
            "the share holds {:?}",
            String::from_utf8_lossy(run)
        );
    }
    // The same relay reads a clear plain copy whole...
    cluster.ok(&[
        "send",
        "--from",
        "0",
        "--to",
        "7",
        "--message",
        secret,
        "--wait",
        "--clear",
    ]);
    let captured = json_lines(&cluster.ok(&["chaos", "captured", "--node", "4", "--json"]));
    let plain_hex: String = secret.bytes().map(|b| format!("{b:02x}")).collect();
    assert_eq!(captured.last().unwrap()["payload_hex"], plain_hex.as_str());
    // ...and nothing of a sealed one (the default), which the destination reads whole.
    let report = send_json(&cluster, &["--from", "0", "--to", "7", "--message", secret]);
    assert_eq!(report["delivered"], true, "{report}");
    let captured = json_lines(&cluster.ok(&["chaos", "captured", "--node", "4", "--json"]));
    let hex = captured.last().unwrap()["payload_hex"].as_str().unwrap();
    let bytes: Vec<u8> = (0..hex.len() / 2)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    for run in secret.as_bytes().windows(8) {
        assert!(!bytes.windows(8).any(|w| w == run), "sealed, yet {run:?}");
    }
    let entries = json_lines(&cluster.ok(&["recv", "--node", "7", "--json"]));
    assert_eq!(entries.last().unwrap()["payload"], secret);
    assert_eq!(entries.last().unwrap()["sealed"], true);
}

#[test]
fn a_source_routed_family_sends_in_every_mode() {
    let cluster = Cluster::up("hhc:1", "127.2.66.0");
    // HHC_3 has connectivity 2: code:1 and secret:1 fit, byzantine:1 needs 3 paths.
    for mode in [&["--code", "1"][..], &["--secret", "1", "--reliable"]] {
        let mut args = vec![
            "--from",
            "0",
            "--to",
            "7",
            "--message",
            "over source routes",
        ];
        args.extend(mode);
        let report = send_json(&cluster, &args);
        assert_eq!(report["delivered"], true, "{mode:?}: {report}");
    }
    let out = cluster.run(&[
        "send",
        "--from",
        "0",
        "--to",
        "7",
        "--message",
        "x",
        "--byzantine",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("k >= 2T+1"), "{}", stderr(&out));
}

#[test]
fn bad_modes_and_payloads_are_one_line_and_exit_2() {
    let cluster = Cluster::up("q:3", "127.2.67.0");
    let big = cluster.path().join("big");
    std::fs::write(&big, vec![b'x'; 70_000]).unwrap();
    let big = big.to_str().unwrap();
    for (args, says) in [
        (&["--code", "3"][..], "out of range"),
        (&["--code", "0"], "out of range"),
        (&["--secret", "3"], "out of range"),
        (&["--byzantine", "2"], "k >= 2T+1"),
        (&["--byzantine", "1", "--code", "2"], "parity"),
        (&["--secret", "1", "--code", "1"], "does not combine"),
        (&["--secret", "1", "--byzantine", "1"], "does not combine"),
        (&["--code", "1", "--split"], "one destination"),
    ] {
        let mut all = vec!["send", "--from", "0", "--to", "7", "--message", "m"];
        all.extend(args);
        let out = cluster.run(&all);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr(&out);
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    let out = cluster.run(&[
        "send",
        "--from",
        "0",
        "--to",
        "3,5",
        "--message",
        "m",
        "--reliable",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("one destination"));
    let out = cluster.run(&[
        "send", "--from", "0", "--to", "7", "--file", big, "--secret", "1",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("too large"), "{}", stderr(&out));
    // An erasure code cuts it into shards that each fit: taken.
    cluster.ok(&[
        "send", "--from", "0", "--to", "7", "--file", big, "--code", "1", "--wait",
    ]);
}
