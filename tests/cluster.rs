//! End-to-end tests with real processes: `cuberoute cluster up` starts one daemon per node on
//! its own 127.x.y.z address, and the client commands talk to them over QUIC with mutual TLS.
//! Each test uses its own address range, so they can run in parallel.

mod common;

use common::{
    Cluster, cuberoute, json_lines, ok, process_exists, stat_fields, stderr, stdout, within,
};
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;

/// Send from every node to every other with `--wait`; check every copy, its path against
/// `cuberoute paths`, and the payload through `recv`.
fn every_pair_delivers_on_the_constructed_paths(topology: &str, base: &str, nodes: u64) {
    let cluster = Cluster::up(topology, base);
    for from in 0..nodes {
        for to in (0..nodes).filter(|&to| to != from) {
            let (f, t) = (from.to_string(), to.to_string());
            let message = format!("payload {from}->{to}");
            let report: Value = serde_json::from_str(
                cluster
                    .ok(&[
                        "send",
                        "--from",
                        &f,
                        "--to",
                        &t,
                        "--message",
                        &message,
                        "--wait",
                        "--json",
                    ])
                    .trim(),
            )
            .unwrap();
            let expected: Value =
                serde_json::from_str(ok(&["paths", topology, &f, &t, "--json"]).trim()).unwrap();
            assert_eq!(report["from"], from);
            assert_eq!(report["to"], to);
            assert_eq!(report["k"], expected["k"], "{from}->{to}");
            let copies = report["copies"].as_array().unwrap();
            assert_eq!(copies.len() as u64, report["k"].as_u64().unwrap());
            for (i, copy) in copies.iter().enumerate() {
                assert_eq!(copy["index"], i as u64);
                assert_eq!(copy["delivered"], true, "{from}->{to} copy {i}");
                assert_eq!(copy["path"], expected["paths"][i], "{from}->{to} copy {i}");
                let hops = copy["path"].as_array().unwrap().len() as u64 - 1;
                assert_eq!(copy["hops"], hops);
                assert!(copy["latency_us"].as_u64().unwrap() > 0);
            }
        }
    }
    // Every destination's output buffer holds k copies of each payload sent to it.
    for to in 0..nodes {
        let entries = json_lines(&cluster.ok(&["recv", "--node", &to.to_string(), "--json"]));
        let mut copies: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
        for e in &entries {
            let from = e["from"].as_u64().unwrap();
            assert_eq!(e["to"], to);
            assert_eq!(e["payload"], format!("payload {from}->{to}"));
            copies
                .entry(from)
                .or_default()
                .push(e["index"].as_u64().unwrap());
        }
        assert_eq!(copies.len() as u64, nodes - 1, "senders seen at {to}");
        for (from, mut indices) in copies {
            indices.sort();
            let k = entries.iter().find(|e| e["from"] == from).unwrap()["k"]
                .as_u64()
                .unwrap();
            assert_eq!(indices, (0..k).collect::<Vec<_>>(), "{from}->{to}");
        }
    }
    // Nothing was dropped anywhere.
    for node in cluster.status()["nodes"].as_array().unwrap() {
        assert_eq!(node["counters"]["dropped"], serde_json::json!({}), "{node}");
    }
}

#[test]
fn q3_every_pair_delivers_on_the_constructed_paths() {
    every_pair_delivers_on_the_constructed_paths("q:3", "127.2.0.0", 8);
}

#[test]
fn eh_1_2_every_pair_delivers_on_the_constructed_paths() {
    every_pair_delivers_on_the_constructed_paths("eh:1,2", "127.2.1.0", 16);
}

#[test]
fn split_sends_are_reassembled_from_k_parts() {
    let cluster = Cluster::up("eh:1,1", "127.2.2.0");
    let message = "the quick brown fox jumps over the lazy dog";
    let report: Value = serde_json::from_str(
        cluster
            .ok(&[
                "send",
                "--from",
                "0",
                "--to",
                "7",
                "--message",
                message,
                "--split",
                "--wait",
                "--json",
            ])
            .trim(),
    )
    .unwrap();
    let k = report["k"].as_u64().unwrap();
    assert_eq!(k, 2);
    let mut parts = json_lines(&cluster.ok(&["recv", "--node", "7", "--json"]));
    parts.sort_by_key(|e| e["index"].as_u64().unwrap());
    assert_eq!(parts.len() as u64, k);
    assert!(parts.iter().all(|p| p["split"] == true));
    let joined: String = parts
        .iter()
        .map(|p| p["payload"].as_str().unwrap())
        .collect();
    assert_eq!(joined, message);
}

/// `send --single`: one copy on the shortest of the pair's k paths (the first of the
/// shortest, as `cuberoute paths` lists them), plain and reliable; the modes that need k paths
/// and split are refused.
#[test]
fn single_sends_one_copy_on_the_shortest_path() {
    let cluster = Cluster::up("eh:1,1", "127.2.81.0");
    let nodes = 8;
    for from in 0..nodes {
        for to in (0..nodes).filter(|&to| to != from) {
            let (f, t) = (from.to_string(), to.to_string());
            let message = format!("single {from}->{to}");
            let report: Value = serde_json::from_str(
                cluster
                    .ok(&[
                        "send",
                        "--from",
                        &f,
                        "--to",
                        &t,
                        "--message",
                        &message,
                        "--single",
                        "--wait",
                        "--json",
                    ])
                    .trim(),
            )
            .unwrap();
            let expected: Value =
                serde_json::from_str(ok(&["paths", "eh:1,1", &f, &t, "--json"]).trim()).unwrap();
            let paths = expected["paths"].as_array().unwrap();
            let fewest = paths.iter().map(|p| p.as_array().unwrap().len()).min();
            let shortest = paths
                .iter()
                .find(|p| Some(p.as_array().unwrap().len()) == fewest)
                .unwrap();
            assert_eq!(report["k"], 1, "{report}");
            let copies = report["copies"].as_array().unwrap();
            assert_eq!(copies.len(), 1, "{report}");
            assert_eq!(copies[0]["delivered"], true, "{report}");
            assert_eq!(copies[0]["path"], *shortest, "{from}->{to}");
            assert_eq!(copies[0]["hops"], expected["distance"], "{from}->{to}");
        }
    }
    // Each destination got one copy of each, one of one.
    for to in 0..nodes {
        let entries = json_lines(&cluster.ok(&["recv", "--node", &to.to_string(), "--json"]));
        assert_eq!(entries.len() as u64, nodes - 1, "at {to}");
        for e in &entries {
            assert_eq!((e["index"].as_u64(), e["k"].as_u64()), (Some(0), Some(1)));
            assert_eq!(e["payload"], format!("single {}->{to}", e["from"]));
        }
    }
    // Reliable: delivered once and acknowledged, on the same one path.
    let report: Value = serde_json::from_str(
        cluster
            .ok(&[
                "send",
                "--from",
                "0",
                "--to",
                "7",
                "--message",
                "reliable single",
                "--single",
                "--reliable",
                "--wait",
                "--json",
            ])
            .trim(),
    )
    .unwrap();
    assert_eq!(
        (&report["k"], &report["delivered"], &report["acked"]),
        (&Value::from(1), &Value::from(true), &Value::from(true)),
        "{report}"
    );
    assert_eq!(report["copies"][0]["path"], serde_json::json!([0, 4, 5, 7]));
    // Refused by the CLI: split, and the modes that spread a set over k paths ...
    for extra in [["--split"], ["--code=1"], ["--secret=1"], ["--byzantine=1"]] {
        let mut args = vec![
            "send",
            "--from",
            "0",
            "--to",
            "7",
            "--message",
            "x",
            "--single",
        ];
        args.extend(extra);
        cluster.refused(&args);
    }
    // ... and by the daemon, whoever asks.
    use cuberoute_cluster::{ClusterClient, ClusterDir};
    use cuberoute_daemon::client::ClientError;
    use cuberoute_protocol::wire::control::{ControlErrorKind, Request, SendSet};
    use cuberoute_protocol::{NodeId, SendRequest};
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let client = runtime
        .block_on(async { ClusterClient::open(&ClusterDir::new(cluster.path())) })
        .unwrap();
    for (mode, split) in [
        ("code:1", false),
        ("reliable+secret:1", false),
        ("plain", true),
    ] {
        let send = Request::Send(SendSet {
            request: SendRequest {
                single: true,
                split,
                ..SendRequest::to(NodeId(7))
            },
            payload: b"x".to_vec(),
            trace: false,
            mode: mode.parse().unwrap(),
            deadline_ms: 1000,
            clear: false,
        });
        match runtime.block_on(client.request(NodeId(0), &send)) {
            Err(ClientError::Refused { error, .. }) => {
                assert_eq!(error.kind, ControlErrorKind::BadRequest, "{error}");
                assert!(error.message.contains("single"), "{error}");
            }
            other => panic!("{mode}, split {split}: {other:?}"),
        }
    }
    client.close();
}

#[test]
fn lifecycle_second_up_dead_process_and_down_leaves_nothing() {
    let cluster = Cluster::up("q:2", "127.2.3.0");
    // A second `up` on a running cluster says so and exits 2.
    let again = cluster.run(&["cluster", "up", "q:2", "--base-addr", "127.2.3.0"]);
    assert_eq!(again.status.code(), Some(2));
    assert!(
        stderr(&again).contains("already running"),
        "{}",
        stderr(&again)
    );

    // A dead process is reported as such, and status exits non-zero.
    let pids = cluster.pids();
    assert_eq!(pids.len(), 4);
    let victim = pids[3];
    std::process::Command::new("kill")
        .args(["-9", &victim.to_string()])
        .status()
        .unwrap();
    // `kill` returns once the signal is sent, before the process has died: status asked
    // in between found it still running (and not answering).
    assert!(
        within(Duration::from_secs(10), || !process_exists(victim)).is_some(),
        "pid {victim} outlived SIGKILL"
    );
    let out = cluster.run(&["cluster", "status"]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(
        text.contains("down") && text.contains("process exited"),
        "{text}"
    );
    assert!(text.contains("3/4 up"), "{text}");

    // `down` stops the others and leaves no process behind.
    let out = cluster.ok(&["cluster", "down"]);
    assert!(out.contains("3 processes exited on SIGTERM"), "{out}");
    for pid in pids {
        assert!(!process_exists(pid), "pid {pid} survived `cluster down`");
    }
    assert!(!cluster.path().join("run.toml").exists());
    let out = cluster.run(&["cluster", "status"]);
    assert_eq!(out.status.code(), Some(1));
}

/// A second cluster started from another directory on the addresses of one running: its
/// daemons cannot listen, `up` says why in one line (the first dead node's last words), exits
/// non-zero and leaves none of its processes, and the running cluster is untouched.
#[test]
fn up_on_the_addresses_of_a_running_cluster_says_why_and_leaves_both_as_they_were() {
    let first = Cluster::up("q:1", "127.2.146.0");
    let other = tempfile::tempdir().unwrap();
    let dir = other.path().join("second");
    let dir = dir.to_str().unwrap();
    let out = cuberoute(&[
        "cluster",
        "up",
        "q:1",
        "--dir",
        dir,
        "--base-addr",
        "127.2.146.0",
    ]);
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("said:") && err.contains("Address already in use"),
        "{err}"
    );
    assert!(err.contains("the cluster was stopped"), "{err}");
    let down = cuberoute(&["cluster", "down", "--dir", dir]);
    assert!(
        stdout(&down).contains("no cluster is running"),
        "{}{}",
        stdout(&down),
        stderr(&down)
    );
    for node in first.status()["nodes"].as_array().unwrap() {
        assert_eq!(node["up"], true, "{node}");
    }
}

/// `cluster up` says where its time went: one line of phases after "is up in", in the order
/// they ran, that add up to the total (each printed to 10 ms, the total to 100 ms).
#[test]
fn up_reports_its_phases_and_they_add_up_to_the_total() {
    let cluster = Cluster {
        dir: tempfile::tempdir().unwrap(),
        topology: "q:3".into(),
    };
    let out = ok(&[
        "cluster",
        "up",
        "q:3",
        "--dir",
        cluster.path_str(),
        "--base-addr",
        "127.2.220.0",
    ]);
    let total: f64 = out
        .split_once(" is up in ")
        .and_then(|(_, rest)| rest.split_once(" s:"))
        .map(|(seconds, _)| seconds.parse().unwrap())
        .unwrap_or_else(|| panic!("no total: {out}"));
    let line = out
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("phases:"))
        .unwrap_or_else(|| panic!("no phases: {out}"));
    let phases: Vec<(&str, f64)> = line
        .split(',')
        .map(|phase| {
            let (name, seconds) = phase
                .trim()
                .strip_suffix(" s")
                .and_then(|p| p.rsplit_once(' '))
                .unwrap_or_else(|| panic!("{phase:?} in {line}"));
            (name, seconds.parse().unwrap())
        })
        .collect();
    let names: Vec<&str> = phases.iter().map(|(name, _)| *name).collect();
    assert_eq!(
        names,
        [
            "checks",
            "credentials",
            "files",
            "spawn",
            "answering",
            "links"
        ],
        "{out}"
    );
    let sum: f64 = phases.iter().map(|(_, seconds)| seconds).sum();
    let rounding = 0.05 + 0.005 * phases.len() as f64;
    assert!(
        (sum - total).abs() <= rounding + 1e-9,
        "phases add up to {sum} s, the total is {total} s: {out}"
    );
    assert!(phases.iter().all(|(_, seconds)| *seconds >= 0.0));
    // And what it cost the processors: the 8 daemons' CPU, and the least time it takes.
    let cpu = out
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("cpu:"))
        .unwrap_or_else(|| panic!("no cpu line: {out}"));
    let number_after = |what: &str| -> f64 {
        cpu.split_once(what)
            .and_then(|(_, rest)| rest.trim_start().split([' ', ':']).next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no number after {what:?} in {cpu}"))
    };
    // Per daemon, in ms: 8 fast starts' CPU-s can print as 0.0.
    assert!(number_after("(") > 0.0, "{cpu}");
    assert!(
        number_after("at least") <= total + 0.1,
        "{cpu}: more than {total} s"
    );
}

/// Regression: EH(4,4) started with an absolute `--dir`, then `cluster down --dir eh44` from its
/// parent, said "0 processes exited on SIGTERM, 0 killed", forgot the run state and left every
/// daemon running. However the directory is spelled, status sees the processes and down stops
/// every one; run.toml goes only once they are gone.
#[test]
fn down_with_another_spelling_of_the_directory_stops_every_process() {
    let cluster = Cluster::up("q:2", "127.2.40.0");
    let pids = cluster.pids();
    assert_eq!(pids.len(), 4);
    let parent = cluster.path().parent().unwrap();
    let name = cluster.path().file_name().unwrap().to_str().unwrap();
    let links = tempfile::tempdir().unwrap();
    let link = links.path().join("link");
    std::os::unix::fs::symlink(cluster.path(), &link).unwrap();
    let in_parent = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_cuberoute"))
            .args(args)
            .current_dir(parent)
            .output()
            .unwrap()
    };
    let spellings = [
        name.to_string(),
        format!("./{name}"),
        format!("{name}/"),
        format!("{name}/../{name}"),
        link.to_str().unwrap().to_string(),
    ];
    for dir in &spellings {
        let out = in_parent(&["cluster", "status", "--wait", "--json", "--dir", dir]);
        let status: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
        assert_eq!(status["nodes_up"], 4, "--dir {dir}: {status}");
        for node in status["nodes"].as_array().unwrap() {
            assert!(
                node["runner"].as_str().unwrap().starts_with("process "),
                "--dir {dir}: {node}"
            );
        }
    }
    // A node killed and restarted through another spelling is recorded and found again.
    let out = in_parent(&["chaos", "kill", "--dir", &spellings[1], "--node", "2"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = in_parent(&["chaos", "restart", "--dir", &spellings[4], "--node", "2"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let restarted = cluster.pids();
    assert_eq!(restarted.len(), 4);
    assert!(!process_exists(pids[2]), "the killed daemon is gone");

    let out = in_parent(&["cluster", "down", "--dir", &format!("./{name}/../{name}/")]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("4 processes exited on SIGTERM, 0 killed"),
        "{}",
        stdout(&out)
    );
    for pid in pids.iter().chain(&restarted) {
        assert!(!process_exists(*pid), "pid {pid} survived `cluster down`");
    }
    assert!(!cluster.path().join("run.toml").exists());
    let again = in_parent(&["cluster", "down", "--dir", name]);
    assert!(
        stdout(&again).contains("no cluster is running"),
        "{}",
        stdout(&again)
    );
}

#[test]
fn generated_nodes_run_below_the_priority_of_their_clients() {
    let cluster = Cluster::up("q:2", "127.2.42.0");
    // Field 19 of stat, the 17th after the command name.
    let nice = |pid: u32| -> i32 { stat_fields(pid).unwrap()[16].parse().unwrap() };
    let ours = nice(std::process::id());
    for pid in cluster.pids() {
        assert_eq!(nice(pid), ours.max(10), "pid {pid}");
    }
}

/// A run.toml of an earlier version (no start times) is matched by the daemons' configuration
/// path, however spelled.
#[test]
fn down_finds_processes_recorded_without_a_start_time() {
    let cluster = Cluster::up("q:2", "127.2.41.0");
    let pids = cluster.pids();
    let run = cluster.path().join("run.toml");
    let old: String = std::fs::read_to_string(&run)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with("started = ") && !l.starts_with("boot = "))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&run, old).unwrap();
    let link = tempfile::tempdir().unwrap();
    let spelled = link.path().join("c");
    std::os::unix::fs::symlink(cluster.path(), &spelled).unwrap();
    let out = cuberoute(&["cluster", "down", "--dir", spelled.to_str().unwrap()]);
    assert!(
        stdout(&out).contains("4 processes exited on SIGTERM"),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    for pid in pids {
        assert!(!process_exists(pid), "pid {pid} survived `cluster down`");
    }
}

#[test]
fn refused_requests_are_one_line_and_non_zero() {
    let cluster = Cluster::up("q:2", "127.2.4.0");
    let cases: [(&[&str], &str); 9] = [
        (
            &["send", "--from", "0", "--to", "9", "--message", "x"],
            "not in q:2",
        ),
        (
            &[
                "send",
                "--from",
                "0",
                "--to",
                "3",
                "--message",
                "x",
                "--life",
                "1m",
            ],
            "give it with --reliable",
        ),
        (
            &[
                "send",
                "--from",
                "0",
                "--to",
                "3",
                "--message",
                "x",
                "--reliable",
                "--life",
                "0s",
            ],
            "must be above 0 and at most 10m",
        ),
        (
            &[
                "send",
                "--from",
                "0",
                "--to",
                "3",
                "--message",
                "x",
                "--reliable",
                "--life",
                "11m",
            ],
            "must be above 0 and at most 10m",
        ),
        (
            &[
                "chaos", "run", "--rate", "5", "--faults", "crash", "--life", "1m",
            ],
            "is not reliable",
        ),
        (
            &["send", "--from", "0", "--to", "0", "--message", "x"],
            "itself",
        ),
        (
            &["send", "--from", "0", "--to", "x1", "--message", "x"],
            "node id",
        ),
        (&["recv", "--node", "4"], "not in q:2"),
        (&["cluster", "logs", "--node", "7"], "not in q:2"),
    ];
    for (args, needle) in cases {
        let out = cluster.run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr(&out);
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    let big = cluster.path().join("big");
    std::fs::write(&big, vec![b'x'; 70_000]).unwrap();
    let out = cluster.run(&[
        "send",
        "--from",
        "0",
        "--to",
        "1",
        "--file",
        big.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("limit"), "{}", stderr(&out));

    // A cluster that is down is unreachable: one line, non-zero.
    cluster.ok(&["cluster", "down"]);
    let out = cluster.run(&["send", "--from", "0", "--to", "1", "--message", "x"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("unreachable"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}

#[test]
fn bad_configs_name_the_key_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    ok(&[
        "cluster",
        "init",
        "q:3",
        "--dir",
        d,
        "--base-addr",
        "127.2.5.0",
    ]);
    let node = |id: u64, file: &str| format!("{d}/nodes/{id}/{file}");
    let config = node(0, "node.toml");
    // A manifest that misses neighbour 4 of node 0.
    let manifest = std::fs::read_to_string(node(0, "manifest.toml")).unwrap();
    let without_4: String = manifest
        .split("[[node]]")
        .filter(|block| !block.contains("id = 4\n"))
        .collect::<Vec<_>>()
        .join("[[node]]");
    let short_manifest = format!("{d}/short.toml");
    std::fs::write(&short_manifest, without_4).unwrap();
    let stranger_manifest = format!("{d}/eh.toml");
    std::fs::write(&stranger_manifest, manifest.replace("q:3", "q:4")).unwrap();
    // Another cluster of the same topology: its key directory is signed by another CA.
    let other = format!("{d}/other");
    ok(&["cluster", "init", "q:3", "--dir", &other]);
    let other_keys = format!("{other}/keys.bin");
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec!["--id".into(), "8".into()], "`id`"),
        (vec!["--id".into(), "0b1x".into()], "`id`"),
        (vec!["--topology".into(), "q:99".into()], "`topology`"),
        (vec!["--listen".into(), "localhost".into()], "`listen`"),
        (vec!["--manifest".into(), short_manifest], "`manifest`"),
        (vec!["--manifest".into(), stranger_manifest], "`manifest`"),
        (
            vec!["--manifest".into(), format!("{d}/none.toml")],
            "`manifest`",
        ),
        (vec!["--tls-ca".into(), config.clone()], "`tls.ca`"),
        (
            vec![
                "--tls-cert".into(),
                node(1, "node.pem"),
                "--tls-key".into(),
                node(1, "node.key"),
            ],
            "`tls.cert`",
        ),
        (vec!["--tls-key".into(), node(1, "node.key")], "`tls.cert`"),
        (
            vec!["--tls-key".into(), format!("{d}/missing.key")],
            "`tls.key`",
        ),
        (vec!["--input-buffer".into(), "0".into()], "`buffers.input`"),
        (
            vec!["--requests-limit".into(), "0".into()],
            "`buffers.requests`",
        ),
        (vec!["--nice".into(), "20".into()], "`nice`"),
        (vec!["--nice=-1".into()], "`nice`"),
        (
            vec!["--keys-directory".into(), other_keys],
            "not signed by this cluster's CA",
        ),
        (
            vec!["--keys-directory".into(), config.clone()],
            "`keys.directory`",
        ),
        (
            vec!["--keys-directory".into(), format!("{d}/none.bin")],
            "`keys.directory`",
        ),
        (
            vec!["--keys-secret".into(), node(1, "seal.key")],
            "not the key the directory binds to node 0",
        ),
        (
            vec!["--keys-secret".into(), format!("{d}/missing.key")],
            "`keys.secret`",
        ),
        (
            vec!["--keys-secret".into(), config.clone()],
            "`keys.secret`",
        ),
    ];
    for (flags, key) in cases {
        let mut args = vec!["daemon".to_string(), "--config".into(), config.clone()];
        args.extend(flags.iter().cloned());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = cuberoute(&args);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(key), "{flags:?}: {}", stderr(&out));
    }
    // --check: a good configuration is summarised, exit 0; a bad one is the same one line
    // and exit 2.
    let out = cuberoute(&["daemon", "--check", "--config", &config]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("configuration OK: node 0 "),
        "{}",
        stdout(&out)
    );
    assert!(stdout(&out).contains("64 MiB in all"), "{}", stdout(&out));
    // A generated node runs below its clients.
    assert!(stdout(&out).contains("niceness 10"), "{}", stdout(&out));
    let out = cuberoute(&[
        "daemon",
        "--check",
        "--config",
        &config,
        "--memory-mib",
        "3",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("`buffers.memory_mib`"),
        "{}",
        stderr(&out)
    );
    // An unknown key in the file.
    let bad = format!("{d}/nodes/0/bad.toml");
    std::fs::write(
        &bad,
        std::fs::read_to_string(&config).unwrap() + "colour = \"blue\"\n",
    )
    .unwrap();
    let out = cuberoute(&["daemon", "--config", &bad]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("colour"), "{}", stderr(&out));
}

/// A StatefulSet pod's configuration of several nodes (`nodes_per_pod` with
/// `id_from_hostname`, what `cluster k8s --nodes-per-pod` writes): pod 1 of pods of four runs
/// nodes 4 to 7, each resolved from the one file with its own `{id}` paths; a pod past the
/// topology's nodes, 0 nodes a pod, and nodes a pod without the pod's ordinal are refused
/// (exit 2, naming the key).
#[test]
fn a_pod_configuration_runs_its_block_of_nodes() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().to_str().unwrap().to_string();
    common::ok(&["cluster", "init", "q:3", "--dir", &d]);
    let pod = |head: &str| {
        let path = tmp.path().join("pod.toml");
        std::fs::write(
            &path,
            format!(
                "topology = \"q:3\"\n{head}\nlisten = \"127.1.0.1:7000\"\n\
                 control_listen = \"127.1.0.1:7001\"\nmanifest = \"manifest.toml\"\n\
                 [tls]\nca = \"ca.pem\"\ncert = \"nodes/{{id}}/node.pem\"\n\
                 key = \"nodes/{{id}}/node.key\"\n[keys]\ndirectory = \"keys.bin\"\n\
                 secret = \"nodes/{{id}}/seal.key\"\nrevoked = \"nodes/{{id}}/revoked.bin\"\n\
                 [store]\npath = \"nodes/{{id}}/store.redb\"\n"
            ),
        )
        .unwrap();
        path.to_str().unwrap().to_string()
    };
    let check = |config: &str, hostname: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_cuberoute"))
            .args(["daemon", "--check", "--config", config])
            .env("HOSTNAME", hostname)
            .output()
            .unwrap()
    };
    let config = pod("id_from_hostname = true\nnodes_per_pod = 4");
    let out = check(&config, "cuberoute-1");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let checked: Vec<String> = stdout(&out)
        .lines()
        .filter_map(|l| l.strip_prefix("configuration OK: node "))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect();
    assert_eq!(checked, ["4", "5", "6", "7"], "{}", stdout(&out));
    let out = check(&config, "cuberoute-2");
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert!(stderr(&out).contains("`id`"), "{}", stderr(&out));
    for (head, key) in [
        (
            "id_from_hostname = true\nnodes_per_pod = 0",
            "`nodes_per_pod`",
        ),
        ("id = 0\nnodes_per_pod = 4", "`nodes_per_pod`"),
    ] {
        let out = check(&pod(head), "cuberoute-1");
        assert_eq!(out.status.code(), Some(2), "{head}: {}", stdout(&out));
        assert!(stderr(&out).contains(key), "{head}: {}", stderr(&out));
    }
}

#[test]
fn the_demo_runs_the_main_job_and_tears_down() {
    // As on a fresh machine: no --dir, so the default directory in the working directory (the
    // addresses are this test's own, so that a demo left running elsewhere does not collide).
    let cwd = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cuberoute"))
        .args(["demo", "eh:1,2", "--down", "--base-addr", "127.2.19.0"])
        .current_dir(cwd.path())
        .output()
        .unwrap();
    let text = stdout(&out);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    assert!(text.contains("farthest pair: distance 5, k 2"), "{text}");
    assert!(text.contains("adjacent pair: distance 1"), "{text}");
    assert_eq!(text.matches("copies delivered").count(), 2, "{text}");
    assert_eq!(
        text.matches("every path is the one `cuberoute paths` constructs: yes")
            .count(),
        2,
        "{text}"
    );
    assert!(text.contains("16/16 up"), "{text}");
    assert!(text.contains("stopped"), "{text}");
    // Taken down at once: no commands for a cluster that is gone.
    assert!(!text.contains("cuberoute send --dir"), "{text}");
    let d = cwd.path().join("cuberoute-cluster");
    let svg = std::fs::read_to_string(d.join("demo-farthest-pair.svg")).unwrap();
    assert!(svg.starts_with("<svg"), "{}", &svg[..50.min(svg.len())]);
}

/// A cluster larger than the machine holds is refused before anything starts, with the limit
/// it exceeds and the numbers.
#[test]
fn a_cluster_too_large_for_the_machine_is_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().join("huge");
    // Q_16: 65,536 daemons of 6 MiB need 384 GiB.
    let out = cuberoute(&["cluster", "up", "q:16", "--dir", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("65536 daemons do not fit on this machine"),
        "{err}"
    );
    assert!(
        err.contains("memory: 65536 x 6 MiB needs 393216 MiB"),
        "{err}"
    );
    assert!(!dir.exists(), "nothing was generated");
}

/// Ctrl-C on `cluster up`, while it spawns daemons or waits for their links, stops every daemon
/// it started (regression: an interrupted start left hundreds of daemons running, recorded
/// nowhere).
#[test]
fn an_interrupted_up_leaves_no_daemon_behind() {
    common::interrupted_ups_leave_nothing(&["q:7"], 71, &[150, 400, 900, 1500]);
}

/// The largest cluster CI affords: EH(4,4), 512 daemons and 1,280 links on one machine. Every
/// link comes up, a set crosses the farthest pair (from node 0 to the first node at the
/// diameter) on all k disjoint paths, and `cluster down` leaves no process behind.
#[test]
fn a_cluster_of_512_daemons_delivers_between_its_farthest_pair_and_leaves_nothing() {
    let topology = "eh:4,4";
    let facts: Value = serde_json::from_str(ok(&["topology", topology, "--json"]).trim()).unwrap();
    assert_eq!(facts["nodes"], 512);
    let diameter = facts["diameter"].as_u64().unwrap();
    // The first 511 lines of --all-pairs are the pairs from node 0.
    let all_pairs = ok(&["paths", topology, "--all-pairs", "--json"]);
    let farthest = all_pairs
        .lines()
        .take(511)
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["distance"] == diameter)
        .expect("a node at the diameter from node 0");
    let to = farthest["to"].as_u64().unwrap().to_string();

    let cluster = Cluster::up(topology, "127.9.0.0");
    let pids = cluster.pids();
    assert_eq!(pids.len(), 512);
    let report: Value = serde_json::from_str(
        cluster
            .ok(&[
                "send",
                "--from",
                "0",
                "--to",
                &to,
                "--message",
                "far",
                "--wait",
                "--json",
            ])
            .trim(),
    )
    .unwrap();
    assert_eq!(report["k"], farthest["k"]);
    for (i, copy) in report["copies"].as_array().unwrap().iter().enumerate() {
        assert_eq!(copy["delivered"], true, "copy {i}");
        assert_eq!(copy["path"], farthest["paths"][i], "copy {i}");
    }
    let received = json_lines(&cluster.ok(&["recv", "--node", &to, "--json"]));
    assert_eq!(received.len() as u64, farthest["k"].as_u64().unwrap());
    assert!(
        received
            .iter()
            .all(|e| e["payload"] == "far" && e["from"] == 0)
    );

    cluster.ok(&["cluster", "down"]);
    let left: Vec<u32> = pids.into_iter().filter(|&p| process_exists(p)).collect();
    assert!(left.is_empty(), "still running after down: {left:?}");
    assert!(common::processes_naming(cluster.path_str()).is_empty());
}

/// `ping` shows each of the k paths the network takes, each with its hops, and a cut link as
/// a lost copy on the path that crosses it while the others still arrive.
#[test]
fn ping_shows_every_path_and_a_cut_one_as_lost() {
    // Sources on the constructed paths whatever they know, so that a cut path stays one of the
    // set's (a source that routes around sends on the live ones: tests/liveness.rs).
    let cluster = Cluster::up_with(
        "eh:2,2",
        &["--base-addr", "127.2.76.0", "--no-route-around"],
    );
    let expected: Value =
        serde_json::from_str(ok(&["paths", "eh:2,2", "0", "30", "--json"]).trim()).unwrap();
    let ping = |extra: &[&str]| -> Value {
        let mut args = vec![
            "ping",
            "--from",
            "0",
            "--to",
            "30",
            "--interval",
            "50ms",
            "--json",
        ];
        args.extend(extra);
        serde_json::from_str(cluster.ok(&args).trim()).unwrap()
    };
    let report = ping(&["--count", "3"]);
    assert_eq!(report["k"], expected["k"]);
    let paths = report["paths"].as_array().unwrap();
    assert_eq!(paths.len() as u64, expected["k"].as_u64().unwrap());
    for (i, p) in paths.iter().enumerate() {
        let hops = expected["paths"][i].as_array().unwrap().len() as u64 - 1;
        assert_eq!(p["hops"], hops, "path {i}");
        assert_eq!(p["received"], 3, "path {i}");
        assert!(p["min_us"].as_u64().unwrap() <= p["max_us"].as_u64().unwrap());
    }
    assert_eq!(report["rounds"].as_array().unwrap().len(), 3);
    // In text, one spelling of the nodes from the first line to the last, and counts in words
    // that agree with their number (issue 49: `--- 0 -> 30 ping statistics`, `1 rounds`).
    let text = cluster.ok(&["ping", "--from", "0", "--to", "30", "--count", "1"]);
    assert!(
        text.starts_with("PING 00.00.0 -> 11.11.0 on eh:2,2: 1 round, 3 paths each"),
        "{text}"
    );
    assert!(
        text.contains("--- 00.00.0 -> 11.11.0 ping statistics"),
        "{text}"
    );
    assert!(
        !text.contains("1 rounds") && !text.contains("(1 hops)"),
        "{text}"
    );
    // Cut the first link of path 1: its copies wait in the link buffer, the others arrive.
    let first_hop = &expected["paths"][1];
    let link = format!("{}-{}", first_hop[0], first_hop[1]);
    cluster.ok(&["chaos", "cut", "--link", &link]);
    let report = ping(&["--count", "2", "--timeout", "1s"]);
    let paths = report["paths"].as_array().unwrap();
    assert_eq!(paths[1]["received"], 0, "{report}");
    assert_eq!(paths[1]["loss_percent"], 100.0);
    assert_eq!(paths[0]["received"], 2, "{report}");
    assert_eq!(paths[2]["received"], 2, "{report}");
    cluster.ok(&["chaos", "heal", "--link", &link]);
    // Bad input: one line, exit 2.
    cluster.refused(&["ping", "--from", "0", "--to", "0"]);
    cluster.refused(&["ping", "--from", "0", "--to", "30", "--count", "0"]);
}

/// `show node` gives what the node runs with; `show links` each link's state, QUIC's view of
/// it and its frame counts, and a cut link as cut.
#[test]
fn show_node_and_links_report_configuration_state_and_traffic() {
    let cluster = Cluster::up("eh:2,2", "127.2.77.0");
    cluster.ok(&[
        "send",
        "--from",
        "0",
        "--to",
        "30",
        "--message",
        "x",
        "--wait",
    ]);
    cluster.ok(&["chaos", "cut", "--link", "0-1"]);
    let node: Value = serde_json::from_str(
        cluster
            .ok(&["show", "node", "--node", "0", "--json"])
            .trim(),
    )
    .unwrap();
    assert_eq!(node["id"], 0);
    assert_eq!(node["wire_version"], cuberoute_protocol::wire::VERSION);
    assert_eq!(node["config"]["memory_mib"], 64);
    assert_eq!(node["config"]["nice"], 10);
    assert_eq!(node["config"]["listen"], "127.2.77.1:7000");
    assert_eq!(node["counters"]["sets_accepted"], 1);
    let text = cluster.ok(&["show", "node", "--node", "0"]);
    assert!(text.starts_with("node 00.00.0 of eh:2,2"), "{text}");
    assert!(text.contains("links: 2 of 3 up"), "{text}");
    assert!(text.contains("niceness 10"), "{text}");

    let links = node["links"].as_array().unwrap();
    assert_eq!(links.len(), 3);
    let written: u64 = links
        .iter()
        .map(|l| l["frames_written"].as_u64().unwrap())
        .sum();
    assert_eq!(
        written, 4,
        "the k = 3 first hops of the set, and the first hop of the sealing handshake's Init \
         before it (a first attempt goes on one path)"
    );
    for l in links {
        if l["neighbour"] == 1 {
            assert_eq!(l["cut"], true);
            assert!(l["transport"].is_null());
        } else {
            assert_eq!(l["up"], true);
            assert!(l["transport"]["rtt_us"].as_u64().unwrap() > 0, "{l}");
            assert!(
                l["transport"]["datagrams_sent"].as_u64().unwrap() > 0,
                "{l}"
            );
        }
    }
    let table = cluster.ok(&["show", "links", "--node", "0"]);
    assert_eq!(table.lines().count(), 4, "{table}");
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("00.00.1") && l.contains(" cut ")),
        "{table}"
    );
    cluster.refused(&["show", "links", "--node", "77"]);

    // show route: the paths of `paths`, and the one through the cut link broken.
    let route: Value = serde_json::from_str(
        cluster
            .ok(&["show", "route", "--from", "0", "--to", "30", "--json"])
            .trim(),
    )
    .unwrap();
    let expected: Value =
        serde_json::from_str(ok(&["paths", "eh:2,2", "0", "30", "--json"]).trim()).unwrap();
    let paths = route["paths"].as_array().unwrap();
    assert_eq!(paths.len(), 3);
    let mut broken = 0;
    for (i, p) in paths.iter().enumerate() {
        assert_eq!(p["nodes"], expected["paths"][i], "path {i}");
        let crosses_cut = p["hops"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["from"] == 0 && h["to"] == 1);
        assert_eq!(p["broken"], crosses_cut, "{p}");
        broken += usize::from(crosses_cut);
    }
    assert_eq!(broken, 1, "exactly one path leaves 0 through 1");
    assert_eq!(route["intact"], 2);
    cluster.refused(&["show", "route", "--from", "0", "--to", "0"]);
    cluster.ok(&["chaos", "heal", "--link", "0-1"]);

    // A neighbour that died: the side that dials it shows its retries.
    let pid = cluster.node_status(8)["pid"].as_u64().unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let redial = || -> Value {
        cluster.ok(&["send", "--from", "0", "--to", "8", "--message", "?"]);
        let node: Value = serde_json::from_str(
            cluster
                .ok(&["show", "node", "--node", "0", "--json"])
                .trim(),
        )
        .unwrap();
        let link = node["links"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["neighbour"] == 8)
            .unwrap()
            .clone();
        link["redial"].clone()
    };
    assert!(
        within(Duration::from_secs(20), || redial()["failures"]
            .as_u64()
            .is_some_and(|f| f >= 1))
        .is_some(),
        "node 0 redials its dead neighbour 8"
    );
    let table = cluster.ok(&["show", "links", "--node", "0"]);
    assert!(
        table.lines().any(|l| l.contains(" down ")
            && l.contains("dial(s) failed, next in")
            && l.contains("; down: ")),
        "the dead hop marked down, with its redialling and why: {table}"
    );
}

/// `monitor` streams what the nodes see: a fault where it was injected, the link going down
/// and up at both ends, and each copy delivered with its path; `--node` follows only the
/// nodes named and `--count` stops it.
#[test]
fn monitor_streams_faults_links_and_deliveries_as_they_happen() {
    let cluster = Cluster::up("eh:2,2", "127.2.78.0");
    let mut all = cluster.spawn(&["monitor", "--json", "--for", "6s"]);
    all.wait_for_stderr("following 32 nodes");
    let mut one = cluster.spawn(&["monitor", "--node", "30", "--count", "3"]);
    one.wait_for_stderr("following 1 node");
    cluster.ok(&["chaos", "cut", "--link", "0-1"]);
    cluster.ok(&["chaos", "heal", "--link", "0-1"]);
    assert!(
        within(
            Duration::from_secs(5),
            || cluster.node_status(0)["links_up"] == 3
        )
        .is_some(),
        "the healed link comes back up"
    );
    cluster.ok(&[
        "send",
        "--from",
        "0",
        "--to",
        "30",
        "--message",
        "m",
        "--wait",
    ]);

    let out = all.finish();
    let notices = json_lines(&stdout(&out));
    let has = |node: u64, kind: &str, check: &dyn Fn(&Value) -> bool| {
        notices
            .iter()
            .any(|n| n["node"] == node && n["kind"] == kind && check(n))
    };
    assert!(
        has(0, "fault", &|n| n["fault"] == "link to 00.00.1 cut"),
        "{notices:?}"
    );
    assert!(has(1, "fault", &|n| n["fault"] == "link to 00.00.0 cut"));
    assert!(has(0, "link_down", &|n| n["neighbour"] == 1));
    assert!(has(1, "link_down", &|n| n["neighbour"] == 0));
    assert!(has(0, "link_up", &|n| n["neighbour"] == 1));
    let expected: Value =
        serde_json::from_str(ok(&["paths", "eh:2,2", "0", "30", "--json"]).trim()).unwrap();
    let mut delivered: Vec<&Value> = notices
        .iter()
        .filter(|n| n["kind"] == "delivered")
        .collect();
    assert_eq!(delivered.len(), 3, "{notices:?}");
    delivered.sort_by_key(|n| n["index"].as_u64());
    for (i, d) in delivered.iter().enumerate() {
        assert_eq!(d["node"], 30);
        assert_eq!(d["src"], 0);
        assert_eq!(d["path"], expected["paths"][i], "{d}");
    }
    // Indices grow by one per node, with no gap: nothing was missed.
    assert!(!notices.iter().any(|n| n["kind"] == "missed"));

    let out = one.finish();
    assert!(out.status.success());
    let lines: Vec<String> = stdout(&out).lines().map(str::to_string).collect();
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert!(
        lines
            .iter()
            .all(|l| l.contains("node 11.11.0") && l.contains("delivered")),
        "{lines:?}"
    );
    cluster.refused(&["monitor", "--node", "99"]);
    cluster.refused(&["monitor", "--count", "0"]);
}

/// `cluster reload` (and SIGHUP) applies the log level and format, the request limit and the
/// chaos permission at once, says what else needs a restart, and a bad file changes nothing.
#[test]
fn reload_applies_what_it_may_and_a_bad_file_changes_nothing() {
    let cluster = Cluster::up("q:2", "127.2.79.0");
    let file = cluster.node_file(1, "node.toml");
    let original = std::fs::read_to_string(&file).unwrap();
    let edited = original.replace(
        "log_format = \"text\"",
        "log_format = \"json\"\nlog_level = \"debug\"",
    ) + "\n[buffers]\nrequests = 7\n\n[chaos]\nallow = false\n";
    assert_ne!(edited, original);
    std::fs::write(&file, &edited).unwrap();
    let reload = |extra: &[&str]| {
        let mut args = vec!["cluster", "reload", "--node", "1", "--json"];
        args.extend(extra);
        let out = cluster.run(&args);
        let doc: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
        (out.status.success(), doc["nodes"][0].clone())
    };
    let (reloaded, node) = reload(&[]);
    assert!(reloaded, "{node}");
    let changed: Vec<&str> = node["changed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(
        changed,
        [
            "log_level: info -> debug",
            "log_format: text -> json",
            "buffers.requests: 4096 -> 7",
            "chaos.allow: true -> false"
        ]
    );
    assert_eq!(node["needs_restart"], serde_json::json!([]));
    let config = |id: &str| -> Value {
        let node: Value =
            serde_json::from_str(cluster.ok(&["show", "node", "--node", id, "--json"]).trim())
                .unwrap();
        node["config"].clone()
    };
    let c = config("1");
    assert_eq!(
        (
            &c["log_level"],
            &c["log_format"],
            &c["requests"],
            &c["chaos_allowed"]
        ),
        (&"debug".into(), &"json".into(), &7.into(), &false.into())
    );
    let refused = cluster.run(&["chaos", "cut", "--link", "1-0"]);
    assert!(!refused.status.success());
    let said = stdout(&refused) + &stderr(&refused);
    assert!(said.contains("does not allow fault injection"), "{said}");
    cluster.ok(&["chaos", "heal", "--link", "1-0"]);
    let log = std::fs::read_to_string(cluster.path().join("logs/1.log")).unwrap();
    let reloaded_line = log
        .lines()
        .find(|l| l.contains("configuration reloaded"))
        .expect("the reload is logged");
    assert!(reloaded_line.starts_with('{'), "{reloaded_line}");

    // A bad file: not reloaded, the configuration in force unchanged.
    std::fs::write(&file, edited.replace("requests = 7", "requests = 0")).unwrap();
    let (reloaded, node) = reload(&[]);
    assert!(!reloaded);
    assert!(
        node["error"].as_str().unwrap().contains("buffers.requests"),
        "{node}"
    );
    assert_eq!(config("1")["requests"], 7);

    // SIGHUP does the same; a changed address waits for a restart.
    std::fs::write(
        &file,
        original.replace("127.2.79.2:7000", "127.2.79.2:7100") + "\n[chaos]\nallow = true\n",
    )
    .unwrap();
    let pid = cluster.node_status(1)["pid"].as_u64().unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGHUP,
    )
    .unwrap();
    assert!(
        within(Duration::from_secs(5), || config("1")["chaos_allowed"]
            == true)
        .is_some(),
        "SIGHUP reloads"
    );
    let c = config("1");
    assert_eq!(
        (&c["log_level"], &c["requests"]),
        (&"info".into(), &4096.into())
    );
    let (_, node) = reload(&[]);
    assert_eq!(
        node["needs_restart"],
        serde_json::json!(["listen: 127.2.79.2:7000 -> 127.2.79.2:7100"])
    );
    cluster.refused(&["cluster", "reload", "--node", "9"]);
}

/// One spelling on a running cluster (issue 49): `send --wait`, `recv`, `ping`, `cluster
/// status` and `show node` name nodes in the topology's notation, or all by integer ids with
/// `--numeric`; copies and paths are numbered from 1.
#[test]
fn every_command_names_nodes_one_way() {
    let cluster = Cluster::up("eh:1,1", "127.3.71.0");
    // Node 6 is 1.1.0 in EH(1,1)'s notation, node 0 is 0.0.0.
    let sent = cluster.ok(&[
        "send",
        "--from",
        "0",
        "--to",
        "1.1.0",
        "--message",
        "hi",
        "--wait",
    ]);
    assert!(sent.contains(" from 0.0.0 to 1.1.0: "), "{sent}");
    assert!(sent.contains("  copy 1/2: "), "{sent}");
    assert!(
        sent.lines()
            .skip(1)
            .all(|l| l.trim_end().ends_with("1.1.0")),
        "{sent}"
    );
    let numeric = cluster.ok(&[
        "send",
        "--from",
        "0",
        "--to",
        "6",
        "--message",
        "hi",
        "--wait",
        "--numeric",
    ]);
    assert!(numeric.contains(" from 0 to 6: "), "{numeric}");
    assert!(
        numeric
            .lines()
            .skip(1)
            .all(|l| l.trim_end().ends_with(" 6") && !l.contains('.')),
        "{numeric}"
    );
    let recv = cluster.ok(&["recv", "--node", "6"]);
    assert!(
        recv.lines().all(|l| l.contains(" from 0.0.0 seq ")),
        "{recv}"
    );
    let recv = cluster.ok(&["recv", "--node", "6", "--numeric"]);
    assert!(recv.lines().all(|l| l.contains(" from 0 seq ")), "{recv}");
    let ping = cluster.ok(&["ping", "--from", "0", "--to", "6", "--count", "1"]);
    assert!(
        ping.contains("--- 0.0.0 -> 1.1.0 ping statistics"),
        "{ping}"
    );
    assert!(ping.contains("path 1 ("), "{ping}");
    let ping = cluster.ok(&[
        "ping",
        "--from",
        "0",
        "--to",
        "6",
        "--count",
        "1",
        "--numeric",
    ]);
    assert!(ping.contains("--- 0 -> 6 ping statistics"), "{ping}");
    let status = cluster.ok(&["cluster", "status", "--numeric"]);
    assert!(status.lines().nth(1).unwrap().starts_with("0 "), "{status}");
    let status = cluster.ok(&["cluster", "status"]);
    assert!(
        status.lines().nth(1).unwrap().starts_with("0.0.0 "),
        "{status}"
    );
    let show = cluster.ok(&["show", "node", "--node", "6"]);
    assert!(show.starts_with("node 1.1.0 of eh:1,1\n"), "{show}");
    let show = cluster.ok(&["show", "node", "--node", "1.1.0", "--numeric"]);
    assert!(show.starts_with("node 6 of eh:1,1\n"), "{show}");
}
