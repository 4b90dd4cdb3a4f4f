//! The stronger adversary of the chaos tooling on real processes: a relay that forges payloads,
//! headers (a clear piece downgraded to a reliable copy), sources (a sealed message sealed
//! again with the relay's own key in another node's name) and replays what it forwarded.
//! Sealed (the default) every forgery is dropped at the destination, each under its reason;
//! clear, `byzantine:1` outvotes them and never takes a set of the shape a relay made up; plain
//! clear copies hand the forgeries to the client (the control). The report counts every entry
//! a client got that its source did not send, not only the sets it awaited.

mod common;

use common::Cluster;
use serde_json::Value;

const FORGE_ALL: [&str; 4] = [
    "--faults",
    "forge",
    "--forge",
    "payload,header,source,replay",
];

fn chaos_run(cluster: &Cluster, extra: &[&str]) -> Value {
    let mut args = vec![
        "chaos",
        "run",
        "--json",
        "--duration",
        "5s",
        "--rate",
        "50",
        "--seed",
        "1",
    ];
    args.extend(FORGE_ALL);
    args.extend(extra);
    let out = cluster.ok(&args);
    let report: Value = serde_json::from_str(out.trim()).unwrap();
    eprintln!("{extra:?}: {report}");
    report
}

fn count(report: &Value, path: &[&str]) -> u64 {
    let mut v = report;
    for key in path {
        v = &v[key];
    }
    v.as_u64().unwrap_or(0)
}

/// Every way of forging was used during the run.
fn every_forgery_tried(r: &Value) {
    for what in ["payload", "header", "source", "replayed"] {
        assert!(count(r, &["forgeries", what]) > 0, "{what}: {r}");
    }
}

#[test]
fn every_forgery_is_dropped_sealed_outvoted_clear_and_delivered_plain() {
    let cluster = Cluster::up("q:4", "127.2.200.0");

    // Sealed, plain copies: every forgery dropped under its reason, every set delivered.
    let sealed = chaos_run(&cluster, &[]);
    every_forgery_tried(&sealed);
    assert_eq!(sealed["forged_delivered_to_client"], 0, "{sealed}");
    assert_eq!(sealed["duplicates_to_client"], 0, "{sealed}");
    assert_eq!(sealed["sets_lost"], 0, "{sealed}");
    let drops = &sealed["drops"];
    let f = &sealed["forgeries"];
    // The payload and header forgeries break the seal; the source forgeries are sealed by the
    // relay itself and caught as such; every replay is known again.
    assert_eq!(
        count(drops, &["seal_broken"]),
        count(f, &["payload"]) + count(f, &["header"]),
        "{sealed}"
    );
    assert_eq!(
        count(drops, &["forged_source"]),
        count(f, &["source"]),
        "{sealed}"
    );
    assert_eq!(
        count(drops, &["replayed"]),
        count(f, &["replayed"]),
        "{sealed}"
    );
    let sweep = &sealed["sweep"];
    assert!(count(sweep, &["entries"]) > 0, "{sealed}");
    for key in [
        "unknown_sets",
        "other_payloads",
        "duplicates",
        "not_taken",
        "missed",
    ] {
        assert_eq!(sweep[key], 0, "{key}: {sealed}");
    }

    // Clear, byzantine:1: the forged pieces are outvoted; the downgraded ones make sets of
    // another mode, which no client of the run's sets takes (counted apart).
    let byzantine = chaos_run(&cluster, &["--clear", "--delivery", "byzantine:1"]);
    every_forgery_tried(&byzantine);
    assert_eq!(byzantine["forged_delivered_to_client"], 0, "{byzantine}");
    assert_eq!(byzantine["duplicates_to_client"], 0, "{byzantine}");
    assert_eq!(byzantine["sets_lost"], 0, "{byzantine}");
    assert_eq!(
        count(&byzantine, &["sweep", "not_taken"]),
        count(&byzantine, &["forgeries", "header"]),
        "each downgraded piece completed a made-up set alone: {byzantine}"
    );

    // Clear plain copies, the control: the forgeries reach the client, those of the sets
    // awaited (payloads) and those the sweep finds (sets renamed, sources claimed).
    let plain = chaos_run(&cluster, &["--clear"]);
    every_forgery_tried(&plain);
    let f = &plain["forgeries"];
    assert_eq!(
        count(&plain, &["forged_delivered_to_client"]),
        count(f, &["payload"]) + count(f, &["header"]) + count(f, &["source"]),
        "{plain}"
    );
    assert_eq!(
        count(&plain, &["sweep", "unknown_sets"]),
        count(f, &["header"]) + count(f, &["source"]),
        "{plain}"
    );
    assert_eq!(plain["sets_lost"], 0, "{plain}");
    // A replayed copy still in the output is refused as a duplicate there.
    assert_eq!(
        count(&plain, &["drops", "duplicate"]) + count(&plain, &["duplicates_to_client"]),
        count(f, &["replayed"]),
        "{plain}"
    );

    // Bad input: one line, exit 2.
    for args in [
        &["chaos", "forge", "--node", "1", "--what", "payload,bogus"][..],
        &["chaos", "forge", "--node", "1", "--what", ""],
        &[
            "chaos",
            "run",
            "--duration",
            "1s",
            "--rate",
            "1",
            "--faults",
            "forge",
            "--forge",
            "payload,everything",
        ],
        &[
            "chaos",
            "run",
            "--duration",
            "1s",
            "--rate",
            "1",
            "--faults",
            "forge",
            "--forge",
            "",
        ],
    ] {
        let out = cluster.refused(args);
        let err = common::stderr(&out);
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains("not something to forge"), "{args:?}: {err}");
    }
}
