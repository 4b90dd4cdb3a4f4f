//! `cuberoute cluster revoke` on real processes: a revoked node is taken out everywhere within
//! seconds (measured), its links are refused for good (a heal and restarts change nothing), its
//! sets are refused at its daemon and dropped wherever they still travel (`revoked`), a set
//! whose path crosses it loses only that copy, a node that missed the push reads the list at its
//! next start; bad input is refused, and so is a list signed by another CA.
//!
//! Addresses: 127.2.210.0 to 127.2.212.0.

mod common;

use common::{Cluster, json_lines, stderr, stdout, within};
use cuberoute_cluster::launch::certs::ClusterCa;
use cuberoute_cluster::ops::revoke::sign;
use cuberoute_cluster::{ClusterClient, ClusterDir};
use cuberoute_daemon::client::ClientError;
use cuberoute_daemon::keys::Revocations;
use cuberoute_protocol::NodeId;
use cuberoute_protocol::wire::control::{Request, Response};
use serde_json::Value;
use std::time::{Duration, Instant};

/// Every node's entry of `cluster status --json`, by id.
fn nodes(cluster: &Cluster) -> Vec<Value> {
    cluster.status()["nodes"].as_array().unwrap().clone()
}

/// A node's whole status (`show node --json`).
fn show(cluster: &Cluster, node: u64) -> Value {
    let text = cluster.ok(&["show", "node", "--node", &node.to_string(), "--json"]);
    serde_json::from_str(text.trim()).unwrap()
}

fn revoked_drops(status: &Value) -> u64 {
    status["counters"]["dropped"]["revoked"]
        .as_u64()
        .unwrap_or(0)
}

/// The handshake Inits a node sent again so far.
fn inits_resent(status: &Value) -> u64 {
    status["counters"]["events"]["handshake_init_resent"]
        .as_u64()
        .unwrap_or(0)
}

/// Whether each of `node`'s links is up, by neighbour.
fn links(cluster: &Cluster, node: u64) -> Vec<(u64, bool)> {
    show(cluster, node)["links"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| (l["neighbour"].as_u64().unwrap(), l["up"] == true))
        .collect()
}

/// Entries of `node`'s output with this payload.
fn received(cluster: &Cluster, node: u64, payload: &str) -> Vec<Value> {
    json_lines(&cluster.ok(&["recv", "--node", &node.to_string(), "--json"]))
        .into_iter()
        .filter(|d| d["payload"] == payload)
        .collect()
}

/// Every link not of node `revoked` is up again, and all of its links are down.
fn links_settled(cluster: &Cluster, revoked: u64) -> bool {
    (0..16).all(|v| {
        links(cluster, v)
            .iter()
            .all(|&(n, up)| up == (v != revoked && n != revoked))
    })
}

/// Q_4, node 3 (0011) revoked. From 3 to 12 the four paths are 3-2-0-4-12, 3-1-5-13-12,
/// 3-7-15-14-12 and 3-11-10-8-12; from 0 to 15, 0-1-3-7-15, 0-2-6-14-15, 0-4-12-13-15 and
/// 0-8-9-11-15 (`cuberoute paths q:4 3 12`): the second pair's first path crosses 3; from 1 to
/// 14 the second path starts at 3.
#[test]
fn a_revoked_node_is_refused_everywhere_within_seconds_and_for_good() {
    // Sources on the constructed paths whatever they know, so that copies wait behind the cut
    // links (a source that routes around sends on the live paths: tests/liveness.rs).
    let cluster = Cluster::up_with("q:4", &["--base-addr", "127.2.210.0", "--no-route-around"]);

    // Two copies of a set from 3 held in flight: behind the cut 0-4 (at relay 0, whose next
    // hop 4 will drop it) and behind the cut 13-12 (at 13, next to the destination).
    cluster.ok(&["chaos", "cut", "--link", "0-4"]);
    cluster.ok(&["chaos", "cut", "--link", "13-12"]);
    let held = cluster.run(&[
        "send",
        "--from",
        "3",
        "--to",
        "12",
        "--message",
        "in flight",
        "--wait",
        "--timeout",
        "1s",
    ]);
    assert_eq!(held.status.code(), Some(1), "{}", stdout(&held));
    assert_eq!(received(&cluster, 12, "in flight").len(), 2);

    // The revocation, timed until every node's status holds it.
    let started = Instant::now();
    let revoking = cluster.spawn(&["cluster", "revoke", "--node", "3", "--json"]);
    let everywhere = within(Duration::from_secs(10), || {
        nodes(&cluster).iter().all(|n| n["revocation_serial"] == 1)
    });
    let report = revoking.finish();
    assert!(report.status.success(), "{}", stderr(&report));
    let everywhere = everywhere.expect("every node holds the list within 10 s");
    let report: Value = serde_json::from_str(stdout(&report).trim()).unwrap();
    eprintln!(
        "revocation of node 3 of Q_4: every node's status lists it {:.0} ms after the command \
         started (statuses polled); the push took {} ms; the command ran {:.0} ms",
        everywhere.as_secs_f64() * 1000.0,
        report["push_ms"],
        started.elapsed().as_secs_f64() * 1000.0
    );
    assert_eq!(
        (report["node"].as_u64(), report["serial"].as_u64()),
        (Some(3), Some(1))
    );
    assert_eq!(report["revoked"], serde_json::json!([3]));
    assert_eq!(report["files_written"], 16);
    let answers = report["nodes"].as_array().unwrap();
    assert_eq!(answers.len(), 16);
    assert!(
        answers
            .iter()
            .all(|a| a["answer"] == "took" && a["serial"] == 1),
        "{answers:?}"
    );
    for v in 0..16 {
        let status = show(&cluster, v);
        assert_eq!(status["revoked"], serde_json::json!([3]), "node {v}");
        let file = std::fs::read(cluster.node_file(v, "revoked.bin")).unwrap();
        assert_eq!(
            file,
            std::fs::read(cluster.path().join("revoked.bin")).unwrap()
        );
    }
    let table = cluster.ok(&["show", "node", "--node", "1"]);
    assert!(
        table.contains("revoked: 0011 (revocation list serial 1)"),
        "{table}"
    );

    // The held copies go on after the heal and are dropped: at relay 4, at destination 12.
    // Each place holds a copy of the set, and relay 0 the sealing handshake's first Init before
    // it (the first attempt goes on the first path alone). The next attempt, on every path, is
    // a resend: a cut link drops it (`resend_link_down`) rather than hold it.
    let held = |node: u64, next: u64| -> u64 {
        show(&cluster, node)["links"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["neighbour"] == next)
            .map(|l| l["queued"].as_u64().unwrap())
            .unwrap()
    };
    let (held_at_0, held_at_13) = (held(0, 4), held(13, 12));
    assert!(
        held_at_0 >= 2 && held_at_13 >= 1,
        "{held_at_0} {held_at_13}"
    );
    cluster.ok(&["chaos", "heal", "--link", "0-4"]);
    cluster.ok(&["chaos", "heal", "--link", "13-12"]);
    let dropped = within(Duration::from_secs(10), || {
        revoked_drops(&show(&cluster, 4)) == held_at_0
            && revoked_drops(&show(&cluster, 12)) == held_at_13
    });
    assert!(
        dropped.is_some(),
        "the held copies ({held_at_0} at 0, {held_at_13} at 13) are dropped as revoked"
    );
    assert_eq!(
        received(&cluster, 12, "in flight").len(),
        2,
        "no copy of 3's set reached the client after the revocation"
    );

    // Its links are down on both sides, and a heal does not bring one back.
    assert!(within(Duration::from_secs(5), || links_settled(&cluster, 3)).is_some());
    let healed = cluster.ok(&["chaos", "heal", "--link", "3-1"]);
    assert!(healed.contains("still refused: revoked"), "{healed}");
    std::thread::sleep(Duration::from_secs(3));
    assert!(links_settled(&cluster, 3), "a heal reopens no revoked link");
    let links_of_1 = cluster.ok(&["show", "links", "--node", "1"]);
    assert!(
        links_of_1
            .lines()
            .any(|l| l.starts_with("0011") && l.contains(" revoked ")),
        "{links_of_1}"
    );

    // Its daemon refuses its sets, and every daemon refuses sets to it: one line, exit 2.
    for (from, to) in [("3", "12"), ("0", "3"), ("0", "2,3")] {
        let out = cluster.refused(&["send", "--from", from, "--to", to, "--message", "x"]);
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("revoked"), "{err}");
    }

    // A set from 0 to 15 loses the copy whose path crosses 3 (dropped at relay 1), and only it.
    let before = revoked_drops(&show(&cluster, 1));
    let resent_before = inits_resent(&show(&cluster, 0));
    let out = cluster.run(&[
        "send",
        "--from",
        "0",
        "--to",
        "15",
        "--message",
        "across",
        "--wait",
        "--timeout",
        "3s",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let sent: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    let delivered: Vec<bool> = sent["copies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["delivered"] == true)
        .collect();
    assert_eq!(delivered, vec![false, true, true, true], "{sent}");
    let across = received(&cluster, 15, "across");
    assert_eq!(across.len(), 3, "{across:?}");
    assert!(
        across
            .iter()
            .all(|d| d["path"].as_array().is_none_or(|p| !p.contains(&3.into())))
    );
    // The set's copy, and the sealing handshake's Inits that came before it on that path: the
    // first attempt, on the first path alone, and each sent again, on every path (once, unless
    // a loaded machine answered the second too late as well).
    let resent = inits_resent(&show(&cluster, 0)) - resent_before;
    assert!(resent >= 1, "the first Init, dropped, was sent again");
    assert_eq!(revoked_drops(&show(&cluster, 1)), before + 2 + resent);

    // From 1 to 14 the second path starts at 3 (1-3-7-15-14): the source drops that copy
    // rather than queue it on a link that will never carry it.
    let status = show(&cluster, 1);
    let (before, resent_before) = (revoked_drops(&status), inits_resent(&status));
    let out = cluster.run(&[
        "send",
        "--from",
        "1",
        "--to",
        "14",
        "--message",
        "first hop",
        "--wait",
        "--timeout",
        "3s",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(received(&cluster, 14, "first hop").len(), 3);
    let status = show(&cluster, 1);
    // The set's copy; its handshake's first Init went on the first path alone. An Init sent
    // again (the first not answered within its wait, on a loaded machine) goes on every path,
    // and one more is dropped at the source for each.
    let resent = inits_resent(&status) - resent_before;
    assert_eq!(
        revoked_drops(&status),
        before + 1 + resent,
        "{resent} Inits resent"
    );
    let to_3 = status["links"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["neighbour"] == 3)
        .unwrap()
        .clone();
    // The set's copy, and each Init sent again: all dropped at the link to 3, none queued.
    assert_eq!(
        (to_3["queued"].as_u64(), to_3["drops"]["revoked"].as_u64()),
        (Some(0), Some(1 + resent)),
        "{resent} Inits resent"
    );

    // The cluster is ready without the revoked node's links.
    cluster.ok(&["cluster", "status", "--wait", "--timeout", "10s"]);
    let status = cluster.ok(&["cluster", "status"]);
    assert!(status.contains("revoked: 0011"), "{status}");
}

/// EH(1,2): a node that was down during the push is reported so, and reads the list at its next
/// start; a neighbour restarted after the revocation refuses the revoked node from its file,
/// even a revoked node that ignores its revocation; the revoked node restarted with its list
/// runs, alone.
#[test]
fn the_revocation_outlives_restarts_and_reaches_a_node_that_missed_it() {
    let cluster = Cluster::up("eh:1,2", "127.2.211.0");
    // EH(1,2): 5 (0.10.1) is a t-type node of degree 3: 4, 7 and 13.
    let revoked = 5;
    let neighbours: Vec<u64> = links(&cluster, revoked).iter().map(|l| l.0).collect();
    assert_eq!(neighbours.len(), 3, "{neighbours:?}");
    // A node away from 5 is down during the push.
    let away = 10;
    assert!(!neighbours.contains(&away));
    cluster.ok(&["chaos", "kill", "--node", &away.to_string()]);
    let out = cluster.ok(&["cluster", "revoke", "--node", &revoked.to_string()]);
    assert!(
        out.contains("15 took it, 1 did not answer, 0 refused it"),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.contains("node 1.01.0: ") && l.contains("reads the list at its next start")),
        "{out}"
    );
    let listing = cluster.ok(&["cluster", "revoke", "--list"]);
    assert!(
        listing.contains("revocation list serial 1: 1 revoked: 0.10.1"),
        "{listing}"
    );
    assert!(listing.contains("in force at 15 of 16 nodes"), "{listing}");
    // Named in the topology's notation, the error from the cluster's client too.
    assert!(
        listing.contains("node 1.01.0: does not answer (node 1.01.0 is down"),
        "{listing}"
    );

    cluster.ok(&["chaos", "restart", "--node", &away.to_string()]);
    let restarted = within(Duration::from_secs(10), || {
        cluster
            .run(&["show", "node", "--node", "10", "--json"])
            .status
            .success()
    });
    assert!(restarted.is_some());
    assert_eq!(show(&cluster, away)["revoked"], serde_json::json!([5]));
    assert_eq!(show(&cluster, away)["revocation_serial"], 1);

    // A revoked node that ignores its revocation: restarted without the list (its file gone),
    // it dials and knocks as any node. Its neighbours refuse it, one of them restarted since
    // (and so knowing of the revocation only from its file).
    let neighbour = neighbours[0];
    let file = cluster.node_file(revoked, "revoked.bin");
    for node in [neighbour, revoked] {
        cluster.ok(&["chaos", "kill", "--node", &node.to_string()]);
    }
    std::fs::remove_file(&file).unwrap();
    for node in [neighbour, revoked] {
        cluster.ok(&["chaos", "restart", "--node", &node.to_string()]);
    }
    cluster.ok(&["cluster", "status", "--wait", "--timeout", "15s"]);
    assert_eq!(
        show(&cluster, revoked)["revocation_serial"],
        0,
        "it holds no list"
    );
    let refused_everywhere = within(Duration::from_secs(15), || {
        neighbours.iter().all(|&n| {
            show(&cluster, n)["counters"]["events"]["peer_refused_revoked"]
                .as_u64()
                .is_some_and(|refused| refused > 0)
        })
    });
    assert!(
        refused_everywhere.is_some(),
        "every neighbour refused the revoked node's dial or knock"
    );
    assert_eq!(show(&cluster, neighbour)["revoked"], serde_json::json!([5]));
    for (n, up) in links(&cluster, neighbour) {
        assert_eq!(up, n != revoked, "link {neighbour}-{n}");
    }
    assert!(
        links(&cluster, revoked).iter().all(|l| !l.1),
        "nobody links with the revoked node"
    );

    // Restarted with its file, the revoked node knows it is revoked: it runs, links with
    // nobody, and its daemon refuses its clients' sets.
    cluster.ok(&["cluster", "revoke", "--push"]);
    assert!(file.exists(), "`--push` writes every node's file again");
    cluster.ok(&["chaos", "kill", "--node", "5"]);
    cluster.ok(&["chaos", "restart", "--node", "5"]);
    cluster.ok(&["cluster", "status", "--wait", "--timeout", "15s"]);
    let itself = show(&cluster, revoked);
    assert_eq!(itself["revoked"], serde_json::json!([5]));
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        links(&cluster, revoked).iter().all(|l| !l.1),
        "nobody links with the revoked node after its restart"
    );
    let table = cluster.ok(&["show", "node", "--node", "5"]);
    assert!(table.contains("this node is revoked itself"), "{table}");
    cluster.refused(&["send", "--from", "5", "--to", "0", "--message", "x"]);
    let listing = cluster.ok(&["cluster", "revoke", "--list"]);
    assert!(listing.contains("in force at 16 of 16 nodes"), "{listing}");
    let log = std::fs::read_to_string(cluster.path().join("logs").join("5.log")).unwrap();
    assert!(log.contains("revocation list in force"), "{log}");
}

/// Push a hand-made signed list to `node`: the error message if refused.
fn push_by_hand(dir: &ClusterDir, node: u64, signed: Vec<u8>) -> Result<Response, String> {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let client = ClusterClient::open(dir).unwrap();
        let answer = client
            .request(NodeId(node), &Request::Revoke { signed })
            .await;
        client.close();
        match answer {
            Ok(response) => Ok(response),
            Err(ClientError::Refused { error, .. }) => Err(error.message),
            Err(e) => panic!("no answer: {e}"),
        }
    })
}

fn list(serial: u64, revoked: &[u64]) -> Revocations {
    Revocations {
        serial,
        revoked: revoked.iter().map(|&v| NodeId(v)).collect(),
    }
}

#[test]
fn revocation_refuses_bad_input_and_lists_it_did_not_sign() {
    let cluster = Cluster::up("q:2", "127.2.212.0");
    let dir = ClusterDir::new(cluster.path());
    // Nothing revoked yet.
    assert!(
        cluster
            .ok(&["cluster", "revoke", "--list"])
            .starts_with("no node is revoked")
    );
    for args in [
        &["cluster", "revoke", "--node", "4"][..],
        &["cluster", "revoke", "--node", "x"],
        &["cluster", "revoke", "--push"],
    ] {
        let out = cluster.refused(args);
        assert_eq!(
            stderr(&out).trim().lines().count(),
            1,
            "{args:?}: {}",
            stderr(&out)
        );
    }
    // What clap refuses (usage shown below the error).
    cluster.refused(&["cluster", "revoke"]);
    cluster.refused(&["cluster", "revoke", "--node", "1", "--list"]);
    let empty = tempfile::tempdir().unwrap();
    let out = common::cuberoute(&[
        "cluster",
        "revoke",
        "--node",
        "1",
        "--dir",
        empty.path().to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("holds no cluster"),
        "{}",
        stderr(&out)
    );

    // The CA key cannot be read: exit 1, nothing written.
    let key = cluster.path().join("ca.key");
    let aside = cluster.path().join("ca.key.aside");
    std::fs::rename(&key, &aside).unwrap();
    let out = cluster.run(&["cluster", "revoke", "--node", "1"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("cannot read the CA key"),
        "{}",
        stderr(&out)
    );
    assert!(!cluster.path().join("revoked.bin").exists());
    std::fs::rename(&aside, &key).unwrap();

    cluster.ok(&["cluster", "revoke", "--node", "1"]);
    let twice = cluster.refused(&["cluster", "revoke", "--node", "1"]);
    assert!(
        stderr(&twice).contains("already revoked"),
        "{}",
        stderr(&twice)
    );
    // Pushing the list in force again is taken, and changes nothing.
    let again = cluster.ok(&["cluster", "revoke", "--push"]);
    assert!(again.contains("4 took it"), "{again}");

    // Lists the nodes refuse, pushed by hand: signed by another CA; by this CA but with the
    // serial in force and another node (a fork); a later serial that leaves node 1 out.
    let ours = std::fs::read_to_string(&key).unwrap();
    let theirs = ClusterCa::generate("q:2").unwrap().key_pem();
    for (signed, why) in [
        (
            sign(&list(9, &[1, 2]), &theirs).unwrap(),
            "not signed by this cluster's CA",
        ),
        (
            sign(&list(1, &[2]), &ours).unwrap(),
            "differs from the one in force",
        ),
        (sign(&list(2, &[2]), &ours).unwrap(), "leaves out node 1"),
        (
            b"garbage".to_vec(),
            "the pushed list is not a cuberoute revocations",
        ),
    ] {
        let answer = push_by_hand(&dir, 0, signed);
        assert!(
            answer.as_ref().is_err_and(|e| e.contains(why)),
            "{why}: {answer:?}"
        );
    }
    let status = show(&cluster, 0);
    assert_eq!(
        (
            status["revoked"].clone(),
            status["revocation_serial"].clone()
        ),
        (serde_json::json!([1]), serde_json::json!(1))
    );
    assert_eq!(
        std::fs::read(cluster.node_file(0, "revoked.bin")).unwrap(),
        std::fs::read(cluster.path().join("revoked.bin")).unwrap(),
        "a refused list is not kept"
    );

    // The cluster's own list altered: `cluster revoke` will not build on it (exit 1).
    std::fs::write(
        cluster.path().join("revoked.bin"),
        sign(&list(1, &[1]), &theirs).unwrap(),
    )
    .unwrap();
    let out = cluster.run(&["cluster", "revoke", "--node", "2"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("not signed by this cluster's CA"),
        "{}",
        stderr(&out)
    );
}
