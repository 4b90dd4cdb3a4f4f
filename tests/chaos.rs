//! The theory's promises, shown on real processes with `cuberoute chaos run`:
//! 1. inherent stabilization: overwriting every process's variables changes nothing;
//! 2. stabilization: corrupted packets are gone within B hops, later traffic is untouched;
//! 3. with up to k-1 crashed nodes, every set between live endpoints delivers a copy.
//!
//! The runs share two cores, so they take turns. Each prints its report (see RELIABILITY.md).

mod common;

use common::Cluster;
use serde_json::Value;
use std::sync::Mutex;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn chaos_run(cluster: &Cluster, args: &[&str]) -> Value {
    let mut all = vec!["chaos", "run", "--json"];
    all.extend(args);
    let out = cluster.ok(&all);
    let report: Value = serde_json::from_str(out.trim()).unwrap();
    eprintln!("{}", serde_json::to_string_pretty(&report).unwrap());
    report
}

fn phase<'a>(report: &'a Value, name: &str) -> &'a Value {
    &report["phases"][name]
}

fn pids(cluster: &Cluster) -> Vec<u64> {
    let status = cluster.status();
    let mut pids: Vec<u64> = status["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["pid"].as_u64().unwrap_or(0))
        .collect();
    pids.sort();
    pids
}

#[test]
fn overwriting_every_process_every_10ms_changes_nothing() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let cluster = Cluster::up("eh:2,2", "127.2.11.0");
    let report = chaos_run(
        &cluster,
        &[
            "--duration",
            "8s",
            "--rate",
            "250",
            "--faults",
            "state",
            "--state-every",
            "10ms",
        ],
    );
    let with = phase(&report, "with_faults");
    assert!(with["sets_sent"].as_u64().unwrap() >= 2000, "{with}");
    // 32 nodes, every 10 ms, for 8 s.
    assert!(
        report["state_corruptions"].as_u64().unwrap() > 32 * 400,
        "{report}"
    );
    // Nothing lost, nothing changed: every copy, on its constructed path; the verdict says so.
    assert_eq!(report["verdict"]["valid"], true, "{}", report["verdict"]);
    assert_eq!(
        report["copies_delivered"], report["copies_expected"],
        "{report}"
    );
    for name in ["fault_free", "with_faults", "after_faults"] {
        assert_eq!(phase(&report, name)["path_mismatches"], 0, "{name}");
    }
    // Nothing dropped but, on a loaded machine, the copies of a handshake's attempt that a
    // later one replaced (its second Init goes before the first is answered; both arrive).
    let drops = report["drops"].as_object().unwrap();
    assert!(
        drops.keys().all(|reason| reason == "handshake_superseded"),
        "{drops:?}"
    );
    assert_eq!(report["corrupted_delivered_to_client"], 0);
}

#[test]
fn corrupted_packets_are_flushed_within_the_bound_and_later_traffic_is_untouched() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let cluster = Cluster::up("eh:2,2", "127.2.12.0");
    let before = pids(&cluster);
    let report = chaos_run(
        &cluster,
        &[
            "--duration",
            "5s",
            "--rate",
            "200",
            "--faults",
            "buffers",
            "--fraction",
            "0.05",
        ],
    );
    // No daemon crashed: the same processes answer.
    assert_eq!(pids(&cluster), before);
    assert_eq!(cluster.status()["nodes_up"], 32);
    // No corrupted payload reached a client.
    assert_eq!(report["corrupted_delivered_to_client"], 0, "{report}");
    // Every corrupted packet ended (dropped or delivered) or was corrupted again, within B.
    let r = &report["recovery"];
    let corrupted = r["packets_corrupted"].as_u64().unwrap();
    assert!(
        corrupted > 100,
        "the run corrupted too little to show anything: {r}"
    );
    assert_eq!(
        corrupted,
        r["corrupted_dropped"].as_u64().unwrap()
            + r["corrupted_delivered"].as_u64().unwrap()
            + r["corrupted_again"].as_u64().unwrap(),
        "a corrupted packet is unaccounted for: {r}"
    );
    assert!(
        r["max_hops"].as_u64().unwrap() <= r["bound_hops"].as_u64().unwrap(),
        "{r}"
    );
    // What was sent after the corruption stopped all arrived.
    let after = phase(&report, "after_faults");
    assert!(after["sets_sent"].as_u64().unwrap() > 0);
    assert_eq!(
        after["copies_delivered"], after["copies_expected"],
        "{after}"
    );
    assert_eq!(after["path_mismatches"], 0);
    // The drops name protocol checks and the checksum.
    let drops = report["drops"].as_object().unwrap();
    assert!(drops.contains_key("checksum_failed"), "{drops:?}");
}

/// Kill k-1 random nodes (never S or D of a set: traffic runs between live nodes).
fn crash_of_k_minus_1_nodes(topology: &str, base: &str) {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let cluster = Cluster::up(topology, base);
    let report = chaos_run(
        &cluster,
        &[
            "--duration",
            "6s",
            "--rate",
            "150",
            "--faults",
            "crash",
            "--seed",
            "7",
        ],
    );
    let crashed = report["crashed"].as_array().unwrap().len();
    let status = cluster.status();
    let k = status["nodes"][0]["degree"].as_u64().unwrap() as usize;
    assert_eq!(crashed, k - 1, "{report}");
    let with = phase(&report, "with_faults");
    assert!(with["sets_sent"].as_u64().unwrap() > 500);
    assert_eq!(with["sets_with_a_copy"], with["sets_sent"], "{with}");
    assert_eq!(with["corrupted_delivered_to_client"], 0);
    // Disjointness pays off: a single path would have lost sets.
    assert!(
        with["single_path_delivered"].as_u64() < with["sets_sent"].as_u64(),
        "{with}"
    );
    // Every live node learnt of every dead link within the phase, and from then on every set
    // went on as many disjoint live paths as the graph without the crashed nodes has.
    let around = &report["around"];
    assert!(around["known_at_ms"].as_f64().is_some(), "{around}");
    let after = &around["after_known"];
    assert!(after["sets"].as_u64().unwrap() > 0, "{around}");
    assert_eq!(after["sets_on_max_flow"], after["sets"], "{around}");
    assert_eq!(
        after["sets_on_disjoint_live_paths"], after["sets"],
        "{around}"
    );
    assert_eq!(with["path_mismatches"], 0, "{with}");
    // The killed nodes rejoined: every link is up again.
    assert!(report["rejoin_ms"].as_f64().is_some(), "{report}");
    assert_eq!(status["link_ends_up"], status["link_ends"]);
    let after = phase(&report, "after_faults");
    assert_eq!(
        after["copies_delivered"], after["copies_expected"],
        "{after}"
    );
}

#[test]
fn eh_2_2_with_k_minus_1_crashed_nodes_delivers_every_set() {
    crash_of_k_minus_1_nodes("eh:2,2", "127.2.13.0");
}

#[test]
fn q4_with_k_minus_1_crashed_nodes_delivers_every_set() {
    crash_of_k_minus_1_nodes("q:4", "127.2.14.0");
}

#[test]
fn cut_links_refuse_both_ways_and_heal() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // Sources on the constructed paths whatever they know, so that a copy waits for the cut
    // link (routing around it: tests/liveness.rs).
    let cluster = Cluster::up_with("q:3", &["--base-addr", "127.2.15.0", "--no-route-around"]);
    cluster.ok(&["chaos", "cut", "--link", "0-1"]);
    let node0 = cluster.node_status(0);
    assert_eq!(node0["links_up"], 2, "{node0}");
    assert_eq!(node0["counters"]["events"]["chaos_cut"], 1);
    // 0 -> 1 still arrives over the other two disjoint paths, and the direct copy waits.
    let out = cluster.run(&[
        "send",
        "--from",
        "0",
        "--to",
        "1",
        "--message",
        "x",
        "--wait",
        "--timeout",
        "1s",
        "--json",
    ]);
    let partial: Value = serde_json::from_slice(&out.stdout).unwrap();
    let delivered = partial["copies"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["delivered"] == true)
        .count();
    assert_eq!(delivered, 2, "{partial}");
    assert_eq!(
        out.status.code(),
        Some(1),
        "a missing copy is a non-zero exit"
    );
    cluster.ok(&["chaos", "heal", "--link", "0-1"]);
    for _ in 0..100 {
        if cluster.node_status(0)["links_up"] == 3 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(cluster.node_status(0)["links_up"], 3);
    // The copies held while the link was cut arrive after the heal.
    let entries = cluster.ok(&["recv", "--node", "1", "--json"]);
    assert_eq!(
        entries
            .lines()
            .filter(|l| l.contains("\"payload\":\"x\""))
            .count(),
        3,
        "{entries}"
    );
    let bad = cluster.run(&["chaos", "cut", "--link", "0-7"]);
    assert_eq!(bad.status.code(), Some(2));
    // The network's own faults belong to the simulated network.
    for fault in ["loss", "partition"] {
        let bad = cluster.run(&[
            "chaos",
            "run",
            "--duration",
            "1s",
            "--rate",
            "1",
            "--faults",
            fault,
        ]);
        assert_eq!(bad.status.code(), Some(2), "{fault}");
        assert!(
            String::from_utf8_lossy(&bad.stderr).contains("cuberoute sim"),
            "{fault}"
        );
    }
}

/// Every fault at once, twice with the same seed on the same cluster (so that sequence ids the
/// first run overwrote may come again): nothing corrupted reaches a client, and the traffic
/// after the faults arrives whole.
#[test]
fn all_faults_at_once_twice_deliver_nothing_corrupted() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let cluster = Cluster::up("eh:2,2", "127.2.18.0");
    for _ in 0..2 {
        let report = chaos_run(
            &cluster,
            &[
                "--duration",
                "4s",
                "--rate",
                "150",
                "--faults",
                "state,buffers,crash,cut",
                "--seed",
                "5",
            ],
        );
        assert_eq!(report["corrupted_delivered_to_client"], 0, "{report}");
        let after = phase(&report, "after_faults");
        assert_eq!(
            after["copies_delivered"], after["copies_expected"],
            "{after}"
        );
        assert_eq!(after["corrupted_delivered_to_client"], 0);
        assert!(report["rejoin_ms"].as_f64().is_some());
    }
}

/// Issue 49: a reliable run after another on the same cluster, with crashes in both and a
/// plain run between them, judges no set twice and takes no set of the earlier run for one of
/// its own: a restarted node gives its kept sets back under the output indices they had, so
/// the sweep reads it from where the run began, as any other node (before, it read a restarted
/// node from 0 and met the earlier run's sets, or the run's own under new indices).
#[test]
fn a_reliable_run_after_another_with_crashes_judges_each_kept_set_once() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let cluster = Cluster::up("eh:2,2", "127.3.70.0");
    for (seed, delivery) in [("23", "reliable"), ("24", "plain"), ("25", "reliable")] {
        let report = chaos_run(
            &cluster,
            &[
                "--faults",
                "buffers,crash",
                "--delivery",
                delivery,
                "--rate",
                "50",
                "--seed",
                seed,
            ],
        );
        assert_eq!(report["verdict"]["valid"], true, "seed {seed}");
        assert_eq!(
            report["crashed"].as_array().unwrap().len(),
            2,
            "seed {seed}"
        );
        let sweep = &report["sweep"];
        assert_eq!(sweep["duplicates"], 0, "seed {seed}: {sweep}");
        assert_eq!(sweep["unknown_sets"], 0, "seed {seed}: {sweep}");
        assert_eq!(sweep["missed"], 0, "seed {seed}: {sweep}");
        if delivery == "reliable" {
            // Every set's entry read once: by its await, or by the sweep.
            assert_eq!(
                sweep["entries"], report["sets_sent"],
                "seed {seed}: {sweep}"
            );
        }
    }
}
