//! The stronger adversary of the chaos tooling on real processes: a relay that forges payloads,
//! headers (a clear piece downgraded to a reliable copy), sources (a sealed message sealed
//! again with the relay's own key in another node's name) and replays what it forwarded.
//! Sealed (the default) every forgery is dropped at the destination, each under its reason;
//! clear, `byzantine:1` outvotes them and never takes a set of the shape a relay made up; plain
//! clear copies hand the forgeries to the client (the control). The report counts every entry
//! a client got that its source did not send, not only the sets it awaited. A consumer on a
//! sealing node takes a made-up clear set only when it asks for clear sets, and a relay that
//! rewrites `attempt` does not stop a later resend from being acknowledged.

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

/// The entries of `node`'s store that `recv --consume NAME --json` hands over (with `extra`).
fn consume(cluster: &Cluster, node: &str, consumer: &str, extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["recv", "--node", node, "--json", "--consume", consumer];
    args.extend(extra);
    common::json_lines(&cluster.ok(&args))
}

/// `(from, payload, sealed)` of each entry.
fn described(entries: &[Value]) -> Vec<(u64, String, bool)> {
    entries
        .iter()
        .map(|e| {
            (
                e["from"].as_u64().unwrap(),
                e["payload"].as_str().unwrap().to_string(),
                e["sealed"].as_bool().unwrap(),
            )
        })
        .collect()
}

/// `send --reliable --wait` from 0 to 7 (with `extra`): acknowledged.
fn send_reliable(cluster: &Cluster, message: &str, extra: &[&str]) {
    let mut args = vec![
        "send",
        "--json",
        "--reliable",
        "--from",
        "0",
        "--to",
        "7",
        "--message",
        message,
        "--wait",
        "--timeout",
        "60s",
    ];
    args.extend(extra);
    let report: Value = serde_json::from_str(cluster.ok(&args).trim()).unwrap();
    assert_eq!(report["acked"], true, "{report}");
}

/// A consumer on a node that seals takes sealed sets only, as `recv` shows them: a clear
/// reliable set whose source a relay rewrote (a set node 0 never sent, in another node's name)
/// is kept in the destination's store, but handed only to a consumer that asks for clear sets.
/// A consumer that did not ask passes over the clear sets for good and takes the sealed ones
/// that come after, once each.
#[test]
fn a_consumer_on_a_sealing_node_takes_made_up_clear_sets_only_when_it_asks() {
    let cluster = Cluster::up("q:3", "127.2.121.0");
    // 0 -> 7: the paths 0-1-3-7, 0-2-6-7, 0-4-5-7; node 2 claims another source on path 1.
    cluster.ok(&["chaos", "forge", "--node", "2", "--what", "source"]);
    send_reliable(&cluster, "sealed before", &[]);
    send_reliable(&cluster, "clear", &["--clear"]);
    // The made-up set is whole at node 7 with its one piece, as a set of another source.
    let made_up = || {
        described(&common::json_lines(
            &cluster.ok(&["recv", "--node", "7", "--json", "--clear"]),
        ))
        .into_iter()
        .any(|(from, payload, _)| from != 0 && payload == "clear")
    };
    assert!(
        common::within(std::time::Duration::from_secs(30), made_up).is_some(),
        "no made-up set at node 7"
    );
    send_reliable(&cluster, "sealed after", &[]);
    assert!(cluster.node_status(2)["chaos"]["forged_source"].as_u64() >= Some(3));

    let sealed = |payload: &str| (0, payload.to_string(), true);
    assert_eq!(
        described(&consume(&cluster, "7", "sealed-only", &[])),
        [sealed("sealed before"), sealed("sealed after")],
        "no clear set, made up or not"
    );
    let everything = described(&consume(&cluster, "7", "everything", &["--clear"]));
    assert!(
        everything.contains(&sealed("sealed before"))
            && everything.contains(&sealed("sealed after"))
            && everything.contains(&(0, "clear".to_string(), false)),
        "{everything:?}"
    );
    assert!(
        everything
            .iter()
            .any(|(from, payload, sealed)| *from != 0 && payload == "clear" && !sealed),
        "the made-up set, to a consumer that asks for clear sets: {everything:?}"
    );
    // The first consumer's place moved past what it took and what it passed over: it gets the
    // next sealed set alone, and asking for clear sets now gives only those kept from its
    // place on.
    send_reliable(&cluster, "sealed last", &[]);
    assert_eq!(
        described(&consume(&cluster, "7", "sealed-only", &[])),
        [sealed("sealed last")]
    );
    cluster.ok(&["chaos", "forge", "--node", "2", "--off"]);
    send_reliable(&cluster, "clear last", &["--clear"]);
    assert_eq!(
        described(&consume(&cluster, "7", "sealed-only", &["--clear"])),
        [(0, "clear last".to_string(), false)]
    );
    assert!(consume(&cluster, "7", "sealed-only", &["--clear"]).is_empty());
}

/// A relay that sets `attempt` to `u32::MAX` on the pieces it forwards of a clear reliable set
/// does not stop the set's later resends from being acknowledged. Node 1 rewrites the attempt
/// of what it forwards on path 0-1-3-7; nodes 6, 5 and 2, one on each path back from 7 to 0
/// (7-6-4-0, 7-5-1-0, 7-3-2-0), claim another source for what they forward, so that no
/// acknowledgement reaches node 0 while they forge (node 0 settles a set only on its
/// destination's word). The destination takes the set, with a piece of attempt u32::MAX, and
/// acknowledges it in vain; once the relays stop, the next resend is acknowledged.
#[test]
fn a_relay_rewriting_attempt_does_not_stop_a_later_resend_from_being_acknowledged() {
    let cluster = Cluster::up("q:3", "127.2.120.0");
    cluster.ok(&["chaos", "forge", "--node", "1", "--what", "attempt"]);
    for node in ["6", "5", "2"] {
        cluster.ok(&["chaos", "forge", "--node", node, "--what", "source"]);
    }
    cluster.ok(&[
        "send",
        "--from",
        "0",
        "--to",
        "7",
        "--message",
        "resent",
        "--reliable",
        "--clear",
        "--life",
        "40s",
    ]);
    let event = |node: u64, name: &str| {
        cluster.node_status(node)["counters"]["events"][name]
            .as_u64()
            .unwrap_or(0)
    };
    // The set is whole at node 7, and node 0 has sent it twice more, unacknowledged: the
    // pieces node 1 rewrote reached node 7 long before.
    let delivered = || {
        described(&common::json_lines(
            &cluster.ok(&["recv", "--node", "7", "--json", "--clear"]),
        ))
        .contains(&(0, "resent".to_string(), false))
    };
    let limit = std::time::Duration::from_secs(15);
    assert!(common::within(limit, delivered).is_some(), "not delivered");
    assert!(common::within(limit, || event(0, "delivery_resends") >= 2).is_some());
    assert!(cluster.node_status(1)["chaos"]["forged_attempt"].as_u64() >= Some(1));
    assert!(event(7, "delivery_acks_sent") >= 1);
    assert_eq!(
        event(0, "delivery_sets_acked"),
        0,
        "an acknowledgement got through the forgers"
    );
    for node in ["1", "6", "5", "2"] {
        cluster.ok(&["chaos", "forge", "--node", node, "--off"]);
    }
    // Acknowledged, or given up at the end of its life (40 s).
    let settled = || event(0, "delivery_sets_acked") + event(0, "delivery_sets_expired") > 0;
    assert!(common::within(std::time::Duration::from_secs(60), settled).is_some());
    assert_eq!(
        (
            event(0, "delivery_sets_acked"),
            event(0, "delivery_sets_expired")
        ),
        (1, 0),
        "a later resend unacknowledged"
    );
    assert!(event(0, "delivery_resends") >= 3);
}
