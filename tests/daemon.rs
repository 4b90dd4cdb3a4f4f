//! One daemon's behaviour as a process: signals, logs, metrics, and surviving a neighbour's
//! crash without losing what it had accepted.

mod common;

use common::{Cluster, cuberoute, metric, ok, scrape, stderr, stdout, within};
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn sigterm_drains_and_exits_0_with_json_logs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    ok(&[
        "cluster",
        "init",
        "q:2",
        "--dir",
        d,
        "--base-addr",
        "127.2.8.0",
    ]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_cuberoute"))
        .args([
            "daemon",
            "--config",
            &format!("{d}/nodes/0/node.toml"),
            "--log-format",
            "json",
        ])
        .env("RUST_LOG", "debug")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let started = Instant::now();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    assert!(started.elapsed() < Duration::from_secs(10));
    let mut logs = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut logs)
        .unwrap();
    let lines: Vec<serde_json::Value> = logs
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let messages: Vec<&str> = lines
        .iter()
        .filter_map(|l| l["fields"]["message"].as_str())
        .collect();
    assert!(messages.contains(&"node started"), "{messages:?}");
    assert!(
        messages.contains(&"stopping: draining buffers"),
        "{messages:?}"
    );
    assert!(messages.contains(&"node stopped"), "{messages:?}");
    // Nodes 1 and 2 never ran, so node 0 kept dialling them: debug logs show the failures,
    // naming them as the node names itself, in the topology's notation.
    assert!(messages.contains(&"dial failed"), "{messages:?}");
    let field = |message: &str, key: &str| -> Vec<String> {
        lines
            .iter()
            .filter(|l| l["fields"]["message"] == message)
            .filter_map(|l| l["fields"][key].as_str().map(str::to_string))
            .collect()
    };
    assert_eq!(field("node started", "id"), ["00"]);
    let dialled = field("dial failed", "neighbour");
    assert!(
        !dialled.is_empty() && dialled.iter().all(|n| n == "01" || n == "10"),
        "{dialled:?}"
    );
}

#[test]
fn prometheus_metrics_count_packets_links_buffers_and_latency() {
    let cluster = Cluster::up("q:2", "127.2.9.0");
    for _ in 0..5 {
        cluster.ok(&[
            "send",
            "--from",
            "0",
            "--to",
            "3",
            "--message",
            "m",
            "--wait",
        ]);
    }
    // Counters are published twice a second.
    std::thread::sleep(Duration::from_millis(1200));
    let source = scrape("127.2.9.1:7002");
    assert_eq!(
        metric(&source, "cuberoute_sets_accepted_total"),
        Some(5.0),
        "{source}"
    );
    // Each of the 5 sets sent one copy over each of the source's 2 paths; the first drew the
    // sealing handshake, whose Init went on the first path (a first attempt goes on one; its
    // answer came back on one).
    assert_eq!(
        metric(&source, "cuberoute_packets_sent_total"),
        Some(11.0),
        "{source}"
    );
    assert_eq!(
        metric(&source, "cuberoute_link_up{neighbour=\"1\"}"),
        Some(1.0),
        "{source}"
    );
    assert_eq!(
        metric(&source, "cuberoute_link_up{neighbour=\"2\"}"),
        Some(1.0),
        "{source}"
    );
    assert!(
        source.contains("cuberoute_link_buffer_depth{neighbour=\"1\"}"),
        "{source}"
    );
    assert!(source.contains("cuberoute_input_buffer_depth"), "{source}");
    // Each of the 5 sets sent one copy over each of the source's 2 links, after the Init.
    assert_eq!(
        metric(
            &source,
            "cuberoute_link_frames_written_total{neighbour=\"1\"}"
        ),
        Some(6.0),
        "{source}"
    );
    assert!(
        metric(&source, "cuberoute_link_rtt_seconds{neighbour=\"1\"}").is_some_and(|r| r > 0.0),
        "{source}"
    );
    assert!(
        source.contains(&format!(
            "cuberoute_build_info{{version=\"{}\",wire_version=\"{}\"}} 1",
            env!("CARGO_PKG_VERSION"),
            cuberoute_protocol::wire::VERSION
        )),
        "{source}"
    );
    assert!(
        source.contains("cuberoute_buffered_bytes_limit 25165824"),
        "{source}"
    );
    let middle = scrape("127.2.9.2:7002");
    // A copy of each set, and one of the two handshake messages: each went on its first path,
    // and the first paths of 0 -> 3 and of 3 -> 0 pass different middle nodes.
    assert_eq!(
        metric(&middle, "cuberoute_packets_forwarded_total"),
        Some(6.0),
        "{middle}"
    );
    let dest = scrape("127.2.9.4:7002");
    // The 10 copies, and the Init.
    assert_eq!(
        metric(&dest, "cuberoute_packets_delivered_total"),
        Some(11.0),
        "{dest}"
    );
    assert_eq!(
        metric(&dest, "cuberoute_delivery_latency_seconds_count"),
        Some(10.0),
        "{dest}"
    );
    assert!(
        dest.contains("cuberoute_delivery_latency_seconds_bucket{le=\"0.001\"}"),
        "{dest}"
    );
    assert!(dest.contains("cuberoute_output_buffer_depth 10"), "{dest}");

    // Every metric the Grafana dashboard queries is one the daemons export.
    let dashboard: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/deploy/grafana/cuberoute.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let exported = format!("{source}{middle}{dest}");
    let mut queried = 0;
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().unwrap() {
            let expr = target["expr"].as_str().unwrap();
            for name in expr
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .filter(|w| w.starts_with("cuberoute_"))
            {
                queried += 1;
                // A counter by reason appears with its first increment; this run drops nothing.
                if name == "cuberoute_packets_dropped_total" {
                    continue;
                }
                assert!(
                    exported.lines().any(|l| l.starts_with(name)),
                    "the dashboard queries {name}, which no daemon exports"
                );
            }
        }
    }
    assert!(queried >= 15, "{queried} metrics queried");
}

/// A packet queued for a crashed neighbour is not lost: it waits in the link's buffer and is
/// sent when the neighbour is back. (The source sends on the constructed paths: one routing
/// around, which knows of the crash at once here, sends no copy that way.)
#[test]
fn packets_for_a_crashed_neighbour_are_delivered_after_its_restart() {
    let cluster = Cluster::up_with("q:3", &["--base-addr", "127.2.10.0", "--no-route-around"]);
    cluster.ok(&["chaos", "kill", "--node", "1"]);
    let dir = cluster.path_str().to_string();
    // 0 -> 3 travels 0-1-3, 0-2-3 and 0-4-5-7-3: one copy must cross the dead node 1.
    let sender = std::thread::spawn(move || {
        cuberoute(&[
            "send",
            "--dir",
            &dir,
            "--from",
            "0",
            "--to",
            "3",
            "--message",
            "patience",
            "--wait",
            "--timeout",
            "30s",
            "--json",
        ])
    });
    std::thread::sleep(Duration::from_secs(1));
    let status = cluster.node_status(0);
    assert!(status["link_queued"].as_u64().unwrap() >= 1, "{status}");
    cluster.ok(&["chaos", "restart", "--node", "1"]);
    let out = sender.join().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let copies = report["copies"].as_array().unwrap();
    assert!(copies.iter().all(|c| c["delivered"] == true), "{report}");
    assert!(
        copies
            .iter()
            .any(|c| c["path"] == serde_json::json!([0, 1, 3])),
        "{report}"
    );
    let out = cluster.run(&["chaos", "restart", "--node", "1"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "restarting a running node is refused"
    );
}

fn links_up(cluster: &Cluster, id: u64) -> u64 {
    cluster.node_status(id)["links_up"].as_u64().unwrap_or(0)
}

/// Where links are seldom probed (a large cluster on one machine paces its probes to minutes;
/// here every hour), failures are found another way: a link with frames waiting for an
/// acknowledgement fails after 2.5 s, and a restarted node that waits to be dialled knocks.
/// (With the default liveness a probe draws the reset first, and on one machine the kernel
/// says a process exited before that: tests/liveness.rs. Neither here.)
#[test]
fn a_dead_neighbour_is_noticed_under_traffic_and_a_restarted_one_relinks_while_idle() {
    let cluster = Cluster::up_with(
        "q:3",
        &[
            "--base-addr",
            "127.2.70.0",
            "--liveness-interval",
            "1h",
            "--no-watch-exits",
        ],
    );
    // Node 7 accepts from 3, 5 and 6. Kill it; traffic towards it makes its neighbours
    // notice.
    cluster.ok(&["chaos", "kill", "--node", "7"]);
    cluster.ok(&[
        "send",
        "--from",
        "0",
        "--to",
        "7",
        "--message",
        "anyone there",
    ]);
    let noticed = within(Duration::from_secs(20), || {
        [3, 5, 6].iter().all(|&n| links_up(&cluster, n) == 2)
    });
    eprintln!("the neighbours of a dead node noticed it after {noticed:?}");
    assert!(noticed.is_some(), "{}", cluster.status());

    // Node 7 dials nobody (every neighbour has a lower id). Kill it and restart it with no
    // traffic at all: 3, 5 and 6 still hold their old connections, and only its knock tells
    // the first of them (the others may then hear it from the reports of links going up).
    cluster.ok(&["chaos", "restart", "--node", "7"]);
    assert!(within(Duration::from_secs(20), || links_up(&cluster, 7) == 3).is_some());
    // Idle means idle: the set sent above reached the restarted node, which asked its source
    // for a new session (a recovery handshake). A neighbour with anything still to send to
    // node 7 would draw a reset from its next process and redial before any knock (the
    // clean-clone run of e11d33a relinked so in 0.43 s, without one).
    cluster.wait_quiet();
    cluster.ok(&["chaos", "kill", "--node", "7"]);
    std::thread::sleep(Duration::from_millis(300));
    cluster.ok(&["chaos", "restart", "--node", "7"]);
    let relinked = within(Duration::from_secs(20), || {
        links_up(&cluster, 7) == 3 && [3, 5, 6].iter().all(|&n| links_up(&cluster, n) == 3)
    });
    eprintln!("a restarted node relinked with idle neighbours after {relinked:?}");
    assert!(relinked.is_some(), "{}", cluster.status());
    let events = &cluster.node_status(7)["counters"]["events"];
    assert!(events["knock_sent"].as_u64().unwrap_or(0) >= 1, "{events}");
    // And the cluster carries a set whole again.
    let out = cluster.ok(&[
        "send",
        "--from",
        "2",
        "--to",
        "7",
        "--message",
        "back",
        "--wait",
        "--json",
    ]);
    let report: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let copies = report["copies"].as_array().unwrap();
    assert!(copies.iter().all(|c| c["delivered"] == true), "{report}");
}

/// A daemon takes at most `buffers.requests` control requests at once: one more is refused as
/// busy, with the reason, and counted; once the waiting ones end, requests are taken again.
#[test]
fn requests_beyond_the_limit_are_refused_as_busy_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    ok(&[
        "cluster",
        "init",
        "q:1",
        "--dir",
        d,
        "--base-addr",
        "127.2.75.0",
    ]);
    // Killed when the test ends, whether it passes or not: a daemon left behind would hold the
    // address for the next run.
    let _daemon = KillOnDrop(
        Command::new(env!("CARGO_BIN_EXE_cuberoute"))
            .args(["daemon", "--config", &format!("{d}/nodes/0/node.toml")])
            .args(["--requests-limit", "2"])
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let recv = |extra: &[&str]| {
        let mut args = vec!["recv", "--node", "0", "--dir", d];
        args.extend(extra);
        cuberoute(&args)
    };
    assert!(
        within(Duration::from_secs(10), || recv(&[]).status.success()).is_some(),
        "the daemon answers"
    );
    // Two followers each keep one waiting request open: the limit. A follower asks again
    // every second; when its new request meets the probe below holding the other permit, the
    // follower is refused and exits, so one that has exited is started again.
    let follower = || {
        Command::new(env!("CARGO_BIN_EXE_cuberoute"))
            .args(["recv", "--node", "0", "--follow", "--dir", d])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    let mut followers = vec![KillOnDrop(follower()), KillOnDrop(follower())];
    let busy = within(Duration::from_secs(20), || {
        for f in followers.iter_mut() {
            if f.0.try_wait().unwrap().is_some() {
                *f = KillOnDrop(follower());
            }
        }
        let out = recv(&[]);
        !out.status.success() && stderr(&out).contains("buffers.requests")
    });
    drop(followers);
    assert!(busy.is_some(), "a third request was refused as busy");
    // The followers' requests end with their connections; then requests are taken again,
    // and the refusals were counted.
    let status = within(Duration::from_secs(20), || recv(&[]).status.success());
    // Node 1 never runs: the status of node 0 is what counts.
    let counted = cuberoute(&["cluster", "status", "--json", "--dir", d]);
    assert!(status.is_some(), "requests are taken again");
    assert!(
        stdout(&counted).contains("\"request_refused_busy\""),
        "{}{}",
        stdout(&counted),
        stderr(&counted)
    );
}

/// A child process killed (and reaped) when dropped.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
