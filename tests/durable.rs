//! Reliable sets kept in the node's store, on real processes (docs/delivery.md): a set the
//! destination acknowledged reaches its consumer once after the destination is killed; sets
//! accepted while the destination is down survive a crash of their source; named consumers
//! take the same sets independently and resume where they were; a resend that reaches a
//! restarted destination is known from its store and handed to nobody; a store that is not
//! this node's, or no store at all, is refused with its reason and never overwritten.

mod common;

use common::{Cluster, cuberoute, json_lines, stderr, stdout, within};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(30);

/// How long `cluster status --wait` (the readiness wait of `cluster up`: every node answers,
/// every link is up) may take after `chaos restart`. A restart returns once the process is
/// spawned, not once it answers: the daemon opens its store before it listens, and a request
/// sent before then gets no answer within the client's connect timeout (3 s, in which QUIC
/// sends its first packet again only twice). A daemon runs at niceness 10, so on a loaded
/// 2-core machine it may take seconds to start: generous.
const READY: &str = "120s";

/// `send --reliable` from `from` to `to` with `extra` arguments; the JSON report.
fn send_reliable(cluster: &Cluster, from: u64, to: u64, message: &str, extra: &[&str]) -> Value {
    let (from, to) = (from.to_string(), to.to_string());
    let mut args = vec![
        "send",
        "--json",
        "--reliable",
        "--from",
        &from,
        "--to",
        &to,
        "--message",
        message,
    ];
    args.extend(extra);
    serde_json::from_str(cluster.ok(&args).trim()).unwrap()
}

/// The entries `recv --consume NAME --json` on `node` takes (all of them, as one call does).
fn consume(cluster: &Cluster, node: u64, consumer: &str) -> Vec<Value> {
    let node = node.to_string();
    let entries =
        json_lines(&cluster.ok(&["recv", "--node", &node, "--json", "--consume", consumer]));
    for e in &entries {
        assert_eq!(e["mode"], "reliable", "only reliable sets are kept: {e}");
        assert_eq!(e["to"].to_string(), node, "{e}");
    }
    entries
}

fn payloads(entries: &[Value]) -> Vec<String> {
    entries
        .iter()
        .map(|e| e["payload"].as_str().unwrap().to_string())
        .collect()
}

/// The payloads of the entries of `node`'s output buffer (plain `recv`).
fn ring(cluster: &Cluster, node: u64) -> Vec<String> {
    payloads(&json_lines(&cluster.ok(&[
        "recv",
        "--node",
        &node.to_string(),
        "--json",
    ])))
}

/// `got` holds every payload of `want` exactly once, and nothing else.
fn assert_exactly_once(got: &[String], want: &[String], what: &str) {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for p in got {
        *counts.entry(p.as_str()).or_default() += 1;
    }
    let twice: Vec<_> = counts.iter().filter(|(_, n)| **n > 1).collect();
    assert!(
        twice.is_empty(),
        "{what}: handed over more than once: {twice:?}"
    );
    let mut got_sorted: Vec<&str> = got.iter().map(String::as_str).collect();
    let mut want_sorted: Vec<&str> = want.iter().map(String::as_str).collect();
    got_sorted.sort_unstable();
    want_sorted.sort_unstable();
    assert_eq!(got_sorted, want_sorted, "{what}");
}

fn messages(prefix: &str, range: std::ops::Range<usize>) -> Vec<String> {
    range.map(|i| format!("{prefix}-{i}")).collect()
}

/// One node's whole status (`show node --json`): asks that node alone, so it answers at once
/// even while another node is stopped.
fn show(cluster: &Cluster, node: u64) -> Value {
    let out = cluster.ok(&["show", "node", "--node", &node.to_string(), "--json"]);
    serde_json::from_str(out.trim()).unwrap()
}

/// A counter of `node`'s `counters.events` (absent: 0).
fn event(cluster: &Cluster, node: u64, name: &str) -> u64 {
    show(cluster, node)["counters"]["events"][name]
        .as_u64()
        .unwrap_or(0)
}

fn signal(pid: u64, signal: &str) {
    let status = Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill {signal} {pid}");
}

/// A stopped process (SIGSTOP), continued when dropped, so that a failing test does not leave
/// it stopped for `cluster down`.
struct Stopped(Option<u64>);

impl Stopped {
    fn stop(pid: u64) -> Stopped {
        signal(pid, "-STOP");
        Stopped(Some(pid))
    }

    fn resume(mut self) {
        if let Some(pid) = self.0.take() {
            signal(pid, "-CONT");
        }
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        if let Some(pid) = self.0.take() {
            let _ = Command::new("kill")
                .args(["-CONT", &pid.to_string()])
                .status();
        }
    }
}

#[test]
fn sets_acknowledged_then_the_destination_killed_reach_its_consumer_once() {
    let cluster = Cluster::up("eh:2,2", "127.83.1.0");
    let sent = messages("acked", 0..20);
    for m in &sent {
        let report = send_reliable(&cluster, 0, 5, m, &["--wait", "--timeout", "60s"]);
        assert_eq!(report["acked"], true, "{m}: {report}");
        assert_eq!(report["delivered"], true, "{m}: {report}");
        assert_eq!(report["mode"], "reliable", "{report}");
    }
    // Killed without draining: only what the store kept is left.
    cluster.ok(&["chaos", "kill", "--node", "5"]);
    cluster.ok(&["chaos", "restart", "--node", "5"]);
    cluster.ok(&["cluster", "status", "--wait", "--timeout", READY]);
    let taken = consume(&cluster, 5, "default");
    assert_exactly_once(&payloads(&taken), &sent, "the consumer after a restart");
    let mut indices: Vec<u64> = taken
        .iter()
        .map(|e| e["output_index"].as_u64().unwrap())
        .collect();
    indices.sort_unstable();
    indices.dedup();
    assert_eq!(indices.len(), 20, "one store index each: {indices:?}");
    assert!(
        consume(&cluster, 5, "default").is_empty(),
        "what the consumer took is not given to it again"
    );
    // `--consume` without a name is the consumer `default`; with nothing left it prints no
    // entry, and says so on stderr.
    let out = cluster.run(&["recv", "--node", "5", "--consume"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "", "the default consumer took them all");
    let said = stderr(&out);
    assert!(
        said.starts_with("nothing left for consumer default at node ")
            && said.trim_end().ends_with(": it took every entry"),
        "{said}"
    );
    // The output buffer is filled again from the store at start, each set once, and still
    // takes new sets (plain ones, which the store does not keep).
    assert_exactly_once(
        &ring(&cluster, 5),
        &sent,
        "the output buffer after a restart",
    );
    let report: Value = serde_json::from_str(
        cluster
            .ok(&[
                "send",
                "--json",
                "--wait",
                "--from",
                "0",
                "--to",
                "5",
                "--message",
                "plain-after",
            ])
            .trim(),
    )
    .unwrap();
    assert_eq!(report["delivered"], true, "{report}");
    let after = ring(&cluster, 5);
    assert!(after.iter().any(|p| p == "plain-after"), "{after:?}");
    let reliable: Vec<String> = after.into_iter().filter(|p| p != "plain-after").collect();
    assert_exactly_once(&reliable, &sent, "the output buffer with a plain set");
    assert!(
        consume(&cluster, 5, "default").is_empty(),
        "plain sets are not in the store"
    );
    // The restarted destination delivered nothing anew: every set came from the store.
    assert_eq!(event(&cluster, 5, "delivery_sets_delivered"), 0);
}

#[test]
fn sets_accepted_while_the_destination_is_down_survive_a_source_crash() {
    let cluster = Cluster::up("eh:2,2", "127.83.2.0");
    cluster.ok(&["chaos", "kill", "--node", "5"]);
    let sent = messages("accepted", 0..10);
    for m in &sent {
        // Accepted: written to the source's store, not acknowledged (the destination is down).
        let report = send_reliable(&cluster, 0, 5, m, &["--life", "120s"]);
        assert_eq!(report["mode"], "reliable", "{report}");
        assert_eq!(report["delivered"], false, "{report}");
    }
    cluster.ok(&["chaos", "kill", "--node", "0"]);
    cluster.ok(&["chaos", "restart", "--node", "0"]);
    cluster.ok(&["chaos", "restart", "--node", "5"]);
    cluster.ok(&["cluster", "status", "--wait", "--timeout", READY]);
    let mut gathered = Vec::new();
    let took = within(LIMIT, || {
        gathered.extend(payloads(&consume(&cluster, 5, "default")));
        gathered.len() >= sent.len()
    });
    assert!(
        took.is_some(),
        "only {} of {} sets reached the consumer: {gathered:?}",
        gathered.len(),
        sent.len()
    );
    assert_exactly_once(&gathered, &sent, "the consumer");
    // The restarted source found the 10 sets in its store and sent them again; they settle.
    assert_eq!(
        event(&cluster, 0, "store_resumed"),
        10,
        "{}",
        show(&cluster, 0)
    );
    assert!(
        within(LIMIT, || event(&cluster, 0, "delivery_sets_acked") >= 10).is_some(),
        "{}",
        show(&cluster, 0)
    );
    // Nothing more arrives later: another consumer sees each set once.
    std::thread::sleep(Duration::from_secs(1));
    assert!(consume(&cluster, 5, "default").is_empty());
    assert_exactly_once(
        &payloads(&consume(&cluster, 5, "late")),
        &sent,
        "a second consumer",
    );
    // Stopped cleanly, the stores say what they hold: the destination the 10 sets, the
    // source no unsettled send.
    cluster.ok(&["cluster", "down"]);
    let check = |node: u64| {
        let config = cluster.node_file(node, "node.toml");
        let out = cuberoute(&["daemon", "--config", config.to_str().unwrap(), "--check"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let text = stdout(&out);
        text.lines()
            .find(|l| l.starts_with("  store "))
            .unwrap_or_else(|| panic!("no store line: {text}"))
            .to_string()
    };
    let destination = check(5);
    assert!(destination.contains(": 10 entries"), "{destination}");
    let source = check(0);
    assert!(source.contains(" 0 unsettled sends"), "{source}");
}

#[test]
fn a_consumer_resumes_after_what_it_took() {
    let cluster = Cluster::up("q:3", "127.83.3.0");
    let first = messages("first", 0..3);
    for m in &first {
        send_reliable(&cluster, 0, 7, m, &["--wait", "--timeout", "60s"]);
    }
    assert_exactly_once(&payloads(&consume(&cluster, 7, "a")), &first, "a, first");
    let second = messages("second", 0..4);
    for m in &second {
        send_reliable(&cluster, 0, 7, m, &["--wait", "--timeout", "60s"]);
    }
    assert_exactly_once(
        &payloads(&consume(&cluster, 7, "a")),
        &second,
        "a takes only the new ones",
    );
    assert!(consume(&cluster, 7, "a").is_empty());
    let all: Vec<String> = first.iter().chain(&second).cloned().collect();
    assert_exactly_once(&payloads(&consume(&cluster, 7, "b")), &all, "b takes all");
    assert!(consume(&cluster, 7, "b").is_empty());
    // A consumer's place survives a restart of the node.
    cluster.ok(&["chaos", "kill", "--node", "7"]);
    cluster.ok(&["chaos", "restart", "--node", "7"]);
    cluster.ok(&["cluster", "status", "--wait", "--timeout", READY]);
    assert!(consume(&cluster, 7, "a").is_empty(), "a after a restart");
    assert!(consume(&cluster, 7, "b").is_empty(), "b after a restart");
    send_reliable(&cluster, 0, 7, "third", &["--wait", "--timeout", "60s"]);
    assert_eq!(payloads(&consume(&cluster, 7, "a")), ["third"]);
    assert_eq!(payloads(&consume(&cluster, 7, "b")), ["third"]);

    // `--follow --consume` keeps going; what it printed before its next request is taken.
    let mut follower = cluster.spawn(&[
        "recv",
        "--node",
        "7",
        "--json",
        "--follow",
        "--consume",
        "f",
    ]);
    let seen = follower.wait_for_stdout("\"third\"");
    let mut all: Vec<String> = all;
    all.push("third".into());
    assert_exactly_once(
        &payloads(&json_lines(&seen)),
        &all,
        "a following consumer, from the start",
    );
    send_reliable(&cluster, 0, 7, "followed", &["--wait", "--timeout", "60s"]);
    let seen = follower.wait_for_stdout("\"followed\"");
    assert_eq!(payloads(&json_lines(&seen)), ["followed"]);
    send_reliable(&cluster, 0, 7, "last", &["--wait", "--timeout", "60s"]);
    let seen = follower.wait_for_stdout("\"last\"");
    assert_eq!(payloads(&json_lines(&seen)), ["last"]);
    drop(follower);
    // The request that brought "last" said "followed" was taken; "last" may come again (the
    // follower was killed before its next request), nothing before it.
    let again = payloads(&consume(&cluster, 7, "f"));
    assert!(
        again.is_empty() || again == ["last"],
        "a following consumer resumes after what it took: {again:?}"
    );

    // `--check` on a running node does not open its store (the daemon holds it).
    let config = cluster.node_file(7, "node.toml");
    let out = cuberoute(&["daemon", "--config", config.to_str().unwrap(), "--check"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("in use by a running daemon"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_resend_after_a_destination_restart_is_not_handed_over_twice() {
    let cluster = Cluster::up("eh:2,2", "127.83.4.0");
    let neighbours: Vec<u64> = show(&cluster, 0)["links"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["neighbour"].as_u64().unwrap())
        .collect();
    assert!(!neighbours.contains(&5), "0 and 5 are not neighbours");
    let forwarded = |c: &Cluster| -> u64 {
        neighbours
            .iter()
            .map(|&n| {
                show(c, n)["counters"]["packets_forwarded"]
                    .as_u64()
                    .unwrap()
            })
            .sum()
    };
    // A set first, so that the two hold a sealing session: a sealed set leaves its source
    // once its destination answered the handshake, and this one must leave while 5 is stopped.
    send_reliable(&cluster, 0, 5, "first", &["--wait", "--timeout", "60s"]);
    assert_eq!(payloads(&consume(&cluster, 5, "default")), ["first"]);
    let acks_before = event(&cluster, 5, "delivery_acks_sent");
    let before = forwarded(&cluster);
    // The destination is stopped: the set reaches it only once its source is dead, and the
    // acknowledgement is lost.
    let stopped = Stopped::stop(show(&cluster, 5)["pid"].as_u64().unwrap());
    send_reliable(&cluster, 0, 5, "once", &["--life", "120s"]);
    // The pieces left the source: its neighbours forwarded them (5 is not one of them).
    assert!(
        within(LIMIT, || forwarded(&cluster) >= before + 3).is_some(),
        "the pieces did not leave node 0"
    );
    cluster.ok(&["chaos", "kill", "--node", "0"]);
    stopped.resume();
    let mut gathered = Vec::new();
    assert!(
        within(LIMIT, || {
            gathered.extend(payloads(&consume(&cluster, 5, "default")));
            !gathered.is_empty()
        })
        .is_some(),
        "the set did not reach node 5"
    );
    assert_eq!(gathered, ["once"]);
    assert!(
        within(LIMIT, || event(&cluster, 5, "delivery_acks_sent")
            > acks_before)
        .is_some(),
        "node 5 did not acknowledge"
    );
    // An acknowledgement sealed more than the seal's skew (1 s) before its source restarted is
    // refused there as replayed: the restarted source must hear a new one.
    std::thread::sleep(Duration::from_millis(1500));
    // The destination restarts (it knows the set from its store only), then the source, which
    // sends the set again with its own key.
    cluster.ok(&["chaos", "kill", "--node", "5"]);
    cluster.ok(&["chaos", "restart", "--node", "5"]);
    cluster.ok(&["chaos", "restart", "--node", "0"]);
    cluster.ok(&["cluster", "status", "--wait", "--timeout", READY]);
    assert!(
        within(LIMIT, || event(&cluster, 0, "delivery_sets_acked") >= 1).is_some(),
        "the resent set was not acknowledged: {}",
        show(&cluster, 0)
    );
    assert_eq!(
        event(&cluster, 0, "store_resumed"),
        1,
        "{}",
        show(&cluster, 0)
    );
    let destination = show(&cluster, 5);
    let events = &destination["counters"]["events"];
    assert!(
        events["delivery_duplicate_sets"].as_u64().unwrap_or(0) >= 1,
        "the resend reached node 5 and was known: {destination}"
    );
    assert_eq!(
        events["delivery_sets_delivered"].as_u64().unwrap_or(0),
        0,
        "{destination}"
    );
    assert!(
        consume(&cluster, 5, "default").is_empty(),
        "handed over twice"
    );
    assert_eq!(payloads(&consume(&cluster, 5, "other")), ["first", "once"]);
    let ring = ring(&cluster, 5);
    assert_eq!(ring, ["first", "once"], "the output buffer");
}

/// `node`'s output entries from output index `after` on (plain `recv --after`), as
/// (output index, payload).
fn indexed(cluster: &Cluster, node: u64, after: u64) -> Vec<(u64, String)> {
    json_lines(&cluster.ok(&[
        "recv",
        "--node",
        &node.to_string(),
        "--after",
        &after.to_string(),
        "--json",
    ]))
    .iter()
    .map(|e| {
        (
            e["output_index"].as_u64().unwrap(),
            e["payload"].as_str().unwrap().to_string(),
        )
    })
    .collect()
}

/// A node's output indices survive its restart (issue 49): each reliable set comes back under
/// the index a reader saw it at, and an entry made after the restart takes an index after
/// every one handed out before, so a reader going on from its cursor sees no set twice and
/// misses none.
#[test]
fn a_readers_cursor_means_the_same_entries_after_a_restart() {
    let cluster = Cluster::up("eh:2,2", "127.83.10.0");
    let sent = messages("kept", 0..6);
    for (i, m) in sent.iter().enumerate() {
        let report = send_reliable(&cluster, 0, 5, m, &["--wait", "--timeout", "60s"]);
        assert_eq!(report["acked"], true, "{m}: {report}");
        // Plain copies between them, which the store does not keep: their indices are
        // handed out all the same.
        cluster.ok(&[
            "send",
            "--wait",
            "--from",
            "3",
            "--to",
            "5",
            "--message",
            &format!("plain-{i}"),
        ]);
    }
    let before = indexed(&cluster, 5, 0);
    let kept_before: Vec<(u64, String)> = before
        .iter()
        .filter(|(_, p)| p.starts_with("kept"))
        .cloned()
        .collect();
    assert_exactly_once(
        &kept_before
            .iter()
            .map(|(_, p)| p.clone())
            .collect::<Vec<_>>(),
        &sent,
        "before the restart",
    );
    let cursor = before.iter().map(|&(i, _)| i + 1).max().unwrap();
    assert!(
        cursor as usize > sent.len(),
        "plain copies took indices: {before:?}"
    );
    cluster.ok(&["chaos", "kill", "--node", "5"]);
    cluster.ok(&["chaos", "restart", "--node", "5"]);
    cluster.ok(&["cluster", "status", "--wait", "--timeout", READY]);
    assert_eq!(
        indexed(&cluster, 5, 0),
        kept_before,
        "every reliable set under the index it had; the plain copies were not kept"
    );
    assert!(
        indexed(&cluster, 5, cursor).is_empty(),
        "nothing new past the reader's cursor"
    );
    let report = send_reliable(
        &cluster,
        0,
        5,
        "kept-after",
        &["--wait", "--timeout", "60s"],
    );
    assert_eq!(report["acked"], true, "{report}");
    let new = indexed(&cluster, 5, cursor);
    assert_eq!(new.len(), 1, "{new:?}");
    assert_eq!(new[0].1, "kept-after");
    assert!(new[0].0 >= cursor, "{new:?} after {cursor}");
    // Once more: the set made after the restart keeps its index too.
    cluster.ok(&["chaos", "kill", "--node", "5"]);
    cluster.ok(&["chaos", "restart", "--node", "5"]);
    cluster.ok(&["cluster", "status", "--wait", "--timeout", READY]);
    assert_eq!(indexed(&cluster, 5, cursor), new);
}

/// Start the daemon of `config` until it has made its store at `store`, then stop it (SIGTERM:
/// the store is closed cleanly, so a check can read it without recovering it).
fn make_store(config: &Path, store: &Path) {
    let mut daemon = Command::new(env!("CARGO_BIN_EXE_cuberoute"))
        .args(["daemon", "--config", config.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The cluster's directory holds the node's configuration at nodes/ID/node.toml.
    let dir = config.ancestors().nth(3).unwrap().to_str().unwrap();
    let node = config
        .parent()
        .unwrap()
        .file_name()
        .unwrap()
        .to_str()
        .unwrap();
    let to = if node == "0" { "1" } else { "0" };
    // A daemon makes its store for the first set it keeps, not before: reading what it
    // holds (a consumer's read included) makes none.
    let mut last = String::new();
    let answered = within(LIMIT, || {
        let out = cuberoute(&["recv", "--dir", dir, "--node", node, "--consume", "c"]);
        last = stderr(&out);
        out.status.success()
    });
    let made_early = store.exists();
    let sent = within(LIMIT, || {
        let out = cuberoute(&[
            "send",
            "--dir",
            dir,
            "--reliable",
            "--from",
            node,
            "--to",
            to,
            "--message",
            "kept",
        ]);
        out.status.success()
    });
    let made = within(LIMIT, || {
        stdout(&check(config, &[])).contains("in use by a running daemon")
    });
    signal(u64::from(daemon.id()), "-TERM");
    let status = daemon.wait().unwrap();
    assert!(answered.is_some(), "node {node} never answered: {last}");
    assert!(!made_early, "a store was made with nothing kept");
    assert!(sent.is_some(), "node {node} took no set");
    assert!(made.is_some(), "the daemon made no store at {store:?}");
    assert!(status.success(), "{status:?}");
    assert!(store.is_file());
}

/// `daemon --config CONFIG --check` with `extra` arguments.
fn check(config: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["daemon", "--config", config.to_str().unwrap(), "--check"];
    args.extend(extra);
    cuberoute(&args)
}

fn refused_check(config: &Path, extra: &[&str], says: &[&str]) {
    let out = check(config, extra);
    let text = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{config:?} {extra:?}: {text}");
    for s in says {
        assert!(
            text.contains(s),
            "{config:?} {extra:?}: {s:?} not in {text}"
        );
    }
}

/// A config next to `config` (its relative paths resolve alike) with `lines` added to its
/// `[store]` table.
fn with_store_lines(config: &Path, name: &str, lines: &str) -> std::path::PathBuf {
    let text = std::fs::read_to_string(config).unwrap();
    assert!(text.contains("\n[store]\n"), "{text}");
    let changed = text.replace("\n[store]\n", &format!("\n[store]\n{lines}\n"));
    let path = config.with_file_name(name);
    std::fs::write(&path, changed).unwrap();
    path
}

fn init(topology: &str, base: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    common::ok(&[
        "cluster",
        "init",
        topology,
        "--dir",
        dir.path().to_str().unwrap(),
        "--base-addr",
        base,
    ]);
    dir
}

#[test]
fn a_bad_store_is_refused_with_its_reason() {
    let dir = init("q:3", "127.83.5.0");
    let node = |id: u64| dir.path().join("nodes").join(id.to_string());
    let config = |id: u64| node(id).join("node.toml");
    let store = |id: u64| node(id).join("store.redb");

    // (e) No store yet: said so, and none is made by a check.
    let out = check(&config(1), &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("none yet"), "{}", stdout(&out));
    assert!(!store(1).exists(), "a check writes nothing");
    // A good store (the daemon made it and stopped): read, and left byte for byte.
    make_store(&config(1), &store(1));
    let before = std::fs::read(store(1)).unwrap();
    for _ in 0..2 {
        let out = check(&config(1), &[]);
        assert!(out.status.success(), "{}", stderr(&out));
        let line = stdout(&out)
            .lines()
            .find(|l| l.starts_with("  store "))
            .unwrap_or_else(|| panic!("no store line: {}", stdout(&out)))
            .to_string();
        assert!(line.contains("store.redb"), "{line}");
        assert!(line.contains("0 entries"), "{line}");
    }
    assert!(
        std::fs::read(store(1)).unwrap() == before,
        "a check writes nothing"
    );

    // (a) Garbage where the store is: refused, named, and left as it was.
    let garbage: Vec<u8> = (0..5000u32).map(|i| (i * 7919 % 251) as u8).collect();
    std::fs::write(store(3), &garbage).unwrap();
    refused_check(&config(3), &[], &["store.path", "store.redb"]);
    assert!(
        std::fs::read(store(3)).unwrap() == garbage,
        "never overwritten"
    );
    // A text file too.
    std::fs::write(store(4), "not a store\n").unwrap();
    refused_check(&config(4), &[], &["store", "store.redb"]);
    assert!(std::fs::read(store(4)).unwrap() == b"not a store\n");

    // (b) The store of node 1 under node 2: it says whose it is, and is left as it was.
    std::fs::copy(store(1), store(2)).unwrap();
    refused_check(
        &config(2),
        &[],
        &["store", "belongs to node 1", "not to node 2"],
    );
    assert!(std::fs::read(store(2)).unwrap() == before, "left as it was");
    // Still node 1's store (redb's own header bytes may change on an open, its tables do not).
    let moved = store(2);
    let out = check(&config(1), &["--store", moved.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    // The store of node 5 of another cluster (another CA): refused too.
    let other = init("q:3", "127.83.6.0");
    let theirs = other.path().join("nodes/5/node.toml");
    make_store(&theirs, &other.path().join("nodes/5/store.redb"));
    std::fs::copy(other.path().join("nodes/5/store.redb"), store(5)).unwrap();
    refused_check(&config(5), &[], &["store", "another cluster"]);
    // The flag names another node's store: refused the same way.
    let of_one = store(1);
    refused_check(
        &config(6),
        &["--store", of_one.to_str().unwrap()],
        &["belongs to node 1"],
    );

    // (c) A store where none can be made.
    refused_check(
        &config(6),
        &["--store", "/proc/nope/store.redb"],
        &["store", "/proc/nope"],
    );
    let under_a_file = config(6).join("store.redb");
    refused_check(
        &config(6),
        &["--store", under_a_file.to_str().unwrap()],
        &["store", "node.toml/store.redb"],
    );

    // (d) Bad `[store]` values name their key.
    for (lines, key) in [
        ("max_mib = 0", "store.max_mib"),
        ("seen_for_s = 599", "store.seen_for_s"),
        ("max_age_s = 0", "store.max_age_s"),
        ("path = \"\"", "store.path"),
        ("colour = \"blue\"", "config key `store.colour`"),
    ] {
        // A second `path` would be a duplicate key: the empty one replaces it.
        let text = std::fs::read_to_string(config(6)).unwrap();
        let base = if lines.starts_with("path") {
            let path = node(6).join("base.toml");
            std::fs::write(&path, text.replace("path = \"store.redb\"\n", "")).unwrap();
            path
        } else {
            config(6)
        };
        let bad = with_store_lines(&base, "bad.toml", lines);
        refused_check(&bad, &[], &[key]);
    }
    // Nothing of the refused ones made a store.
    assert!(!node(6).join("store.redb").exists());

    // (f) No store: said so.
    let out = check(&config(6), &["--store", "none"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("  store none"), "{}", stdout(&out));

    // The daemon itself, with garbage for a store, does not start: a non-zero exit, the reason
    // on stderr, the file left as it was.
    let mut daemon = Command::new(env!("CARGO_BIN_EXE_cuberoute"))
        .args(["daemon", "--config", config(3).to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut ended = None;
    within(LIMIT, || {
        ended = daemon.try_wait().unwrap();
        ended.is_some()
    });
    if ended.is_none() {
        let _ = daemon.kill();
    }
    let out = daemon.wait_with_output().unwrap();
    assert!(ended.is_some(), "the daemon ran on a garbage store");
    assert!(!out.status.success(), "{:?}", out.status);
    let text = stderr(&out);
    assert!(
        text.contains("does not start") && text.contains("store.redb"),
        "{text}"
    );
    assert!(
        std::fs::read(store(3)).unwrap() == garbage,
        "never overwritten"
    );
}

#[test]
fn a_node_whose_store_is_not_its_own_stays_down_and_says_why() {
    let cluster = Cluster::up("q:3", "127.83.7.0");
    send_reliable(&cluster, 0, 6, "kept", &["--wait", "--timeout", "60s"]);
    // Killed: their stores are left as a crash leaves them.
    cluster.ok(&["chaos", "kill", "--node", "6"]);
    cluster.ok(&["chaos", "kill", "--node", "5"]);
    let (store5, store6) = (
        cluster.node_file(5, "store.redb"),
        cluster.node_file(6, "store.redb"),
    );
    // Node 5 keeps nothing (a relay at most): it has made no store.
    assert!(!store5.exists(), "node 5 made a store with nothing kept");
    // Node 6's store under node 5, garbage under node 6.
    std::fs::copy(&store6, &store5).unwrap();
    let garbage = vec![0x5au8; 4096];
    std::fs::write(&store6, &garbage).unwrap();
    // `chaos restart` waits for the node to answer: it says the node exited, and why.
    for (node, why) in [(5, "belongs to node 6"), (6, "store.redb")] {
        let out = cluster.run(&["chaos", "restart", "--node", &node.to_string()]);
        let err = stderr(&out);
        assert!(
            !out.status.success() && err.contains("is not running") && err.contains(why),
            "{err}"
        );
    }
    for node in [5, 6] {
        assert!(
            within(LIMIT, || cluster.node_status(node)["runner"]
                == "process exited")
            .is_some(),
            "node {node} runs on a store not its own: {}",
            cluster.node_status(node)
        );
    }
    let logs = cluster.ok(&["cluster", "logs", "--node", "5"]);
    assert!(
        logs.contains("the store cannot be used") && logs.contains("belongs to node 6"),
        "{logs}"
    );
    let logs = cluster.ok(&["cluster", "logs", "--node", "6"]);
    assert!(
        logs.contains("the store cannot be used") && logs.contains("store.redb"),
        "{logs}"
    );
    assert!(
        std::fs::read(&store6).unwrap() == garbage,
        "never overwritten"
    );
    // Node 6's store back where it belongs (as node 5 left it when it refused it), node 5
    // without one again: both start, and node 6's set is there.
    std::fs::rename(&store5, &store6).unwrap();
    cluster.ok(&["chaos", "restart", "--node", "5"]);
    cluster.ok(&["chaos", "restart", "--node", "6"]);
    cluster.ok(&["cluster", "status", "--wait", "--timeout", READY]);
    assert_eq!(payloads(&consume(&cluster, 6, "c")), ["kept"]);
    assert!(consume(&cluster, 5, "c").is_empty());
    assert_eq!(
        cluster.node_status(5)["up"],
        true,
        "{}",
        cluster.node_status(5)
    );
}

#[test]
fn bad_consumers_are_refused_and_a_node_without_a_store_says_so() {
    // `cluster up --no-store`, taken down when the test ends however it ends.
    let cluster = Cluster {
        dir: tempfile::tempdir().unwrap(),
        topology: "q:3".into(),
    };
    common::ok(&[
        "cluster",
        "up",
        "q:3",
        "--no-store",
        "--dir",
        cluster.path_str(),
        "--base-addr",
        "127.83.8.0",
    ]);
    for name in ["bad name!", "", "a/b", &"x".repeat(65)] {
        let out = cluster.refused(&["recv", "--node", "1", "--consume", name]);
        assert!(stderr(&out).contains("--consume"), "{}", stderr(&out));
    }
    // A consumer takes from the store: no output index.
    cluster.refused(&["recv", "--node", "1", "--consume", "a", "--after", "3"]);
    // No store: the node refuses a consumer and says why; its reliable sets are in its output
    // buffer.
    let report = send_reliable(&cluster, 0, 7, "in memory", &["--wait", "--timeout", "60s"]);
    assert_eq!(report["acked"], true, "{report}");
    let out = cluster.run(&["recv", "--node", "7", "--consume", "a"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("keeps no store"), "{}", stderr(&out));
    assert_eq!(stdout(&out), "");
    assert_eq!(ring(&cluster, 7), ["in memory"]);
    let config = cluster.node_file(7, "node.toml");
    let out = check(&config, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("  store none"), "{}", stdout(&out));
}

/// A consumer's place comes from what it was given: a request that says it took sets the store
/// does not hold yet is refused (it would skip every set still to come), and the place stays.
#[test]
fn a_consumer_cannot_claim_to_have_taken_what_is_not_there() {
    use cuberoute_cluster::{ClusterClient, ClusterDir};
    use cuberoute_daemon::client::ClientError;
    use cuberoute_protocol::NodeId;
    use cuberoute_protocol::wire::control::{ControlErrorKind, Request, Response};

    let cluster = Cluster::up("q:2", "127.83.9.0");
    send_reliable(&cluster, 0, 3, "first", &["--wait"]);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let client = runtime
        .block_on(async { ClusterClient::open(&ClusterDir::new(cluster.path())) })
        .unwrap();
    let consume = |taken| Request::Consume {
        consumer: "claims".into(),
        taken,
        max: 10,
        wait_ms: 0,
        clear: None,
    };
    let answer = runtime.block_on(client.request(NodeId(3), &consume(Some(1_000_000))));
    match answer {
        Err(ClientError::Refused { error, .. }) => {
            assert_eq!(error.kind, ControlErrorKind::BadRequest, "{error}");
            assert!(
                error.message.contains("past the store's next index"),
                "{error}"
            );
        }
        other => panic!("a claim past the store was taken: {other:?}"),
    }
    // The place did not move: the consumer still gets the set.
    match runtime.block_on(client.request(NodeId(3), &consume(None))) {
        Ok(Response::Output { entries, .. }) => {
            let got: Vec<String> = entries
                .iter()
                .map(|d| String::from_utf8_lossy(&d.payload).into_owned())
                .collect();
            assert_eq!(got, ["first"]);
        }
        other => panic!("{other:?}"),
    }
    client.close();
}
