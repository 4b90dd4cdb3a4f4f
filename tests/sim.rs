//! `cuberoute sim`: the chaos run on a whole cluster of real daemons on the simulated network.
//! For any seed the promises of RELIABILITY.md hold, and a seed's report is the same in every
//! run (a failing seed is the whole reproduction: `cuberoute sim <topology> --seed N ...`).

mod common;

use common::{cuberoute, stderr, stdout};
use proptest::prelude::*;
use serde_json::Value;

/// `cuberoute sim` with `extra`, for 2 s at 20 sets/s unless `extra` says otherwise.
fn sim(topology: &str, seed: u64, extra: &[&str]) -> Value {
    let seed = seed.to_string();
    let mut args = vec!["sim", topology, "--seed", &seed, "--json"];
    for (flag, default) in [("--duration", "2s"), ("--rate", "20")] {
        if !extra.contains(&flag) {
            args.extend([flag, default]);
        }
    }
    args.extend(extra);
    let out = cuberoute(&args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    serde_json::from_str(stdout(&out).trim()).unwrap()
}

/// The report without the wall-clock figures, which depend on the machine.
fn replayable(mut report: Value) -> Value {
    let object = report.as_object_mut().unwrap();
    object.remove("wall_ms");
    object.remove("simulated_seconds_per_wall_second");
    report
}

/// What every run promises whatever its faults: nothing corrupted reaches a client, every copy
/// follows its constructed path outside the faults (during `buffers` a flipped bit in a trace
/// that the checksum does not cover shows as a mismatch), and after the faults every set
/// arrives whole.
fn always(r: &Value) {
    // The verdict checks all of this, and the promises of the run's faults and mode.
    assert_eq!(r["verdict"]["valid"], true, "{}: {r}", r["verdict"]);
    assert_eq!(r["corrupted_delivered_to_client"], 0, "{r}");
    let after = &r["phases"]["after_faults"];
    assert_eq!(after["copies_delivered"], after["copies_expected"], "{r}");
    for phase in ["fault_free", "after_faults"] {
        assert_eq!(r["phases"][phase]["path_mismatches"], 0, "{phase}: {r}");
    }
    for phase in ["fault_free", "with_faults", "after_faults"] {
        assert_eq!(r["phases"][phase]["sets_failed_to_send"], 0, "{phase}: {r}");
    }
    assert!(r["sets_sent"].as_u64().unwrap() > 0);
    assert!(r["simulated_ms"].as_u64().unwrap() > 0);
}

/// A run that keeps what every run promises ([`always`]).
fn kept(topology: &str, seed: u64, extra: &[&str]) -> Value {
    let r = sim(topology, seed, extra);
    always(&r);
    r
}

fn promises_hold(topology: &str, seed: u64) {
    // State corruption changes nothing.
    let r = kept(topology, seed, &["--faults", "state"]);
    assert_eq!(r["copies_delivered"], r["copies_expected"], "{r}");
    assert!(r["state_corruptions"].as_u64().unwrap() > 0, "{r}");
    // Corrupted packets end within B hops and never reach a client.
    let r = kept(
        topology,
        seed,
        &["--faults", "buffers", "--fraction", "0.05"],
    );
    let recovery = &r["recovery"];
    assert!(recovery["packets_corrupted"].as_u64().unwrap() > 0, "{r}");
    assert!(
        recovery["max_hops"].as_u64() <= recovery["bound_hops"].as_u64(),
        "{r}"
    );
    // At most k-1 crashes and cuts: every set keeps a copy; the crashed come back.
    let r = kept(topology, seed, &["--faults", "crash,cut"]);
    assert_eq!(r["sets_lost"], 0, "{r}");
    assert!(!r["rejoin_ms"].is_null(), "every link comes back: {r}");
    // Reliable sets across crashes: none lost, none twice.
    let r = kept(
        topology,
        seed,
        &["--faults", "crash", "--delivery", "reliable"],
    );
    assert_eq!(r["sets_lost"], 0, "{r}");
    assert_eq!(r["duplicates_to_client"], 0, "{r}");
    // Byzantine relays: nothing forged reaches a client.
    let r = kept(
        topology,
        seed,
        &["--faults", "forge", "--delivery", "byzantine:1"],
    );
    assert_eq!(r["forged_delivered_to_client"], 0, "{r}");
    // The network loses datagrams, or splits in two: what it held back arrives once it
    // carries again (the link buffers keep every packet until acknowledged).
    let loss = kept(topology, seed, &["--faults", "loss", "--loss", "0.05"]);
    let partition = kept(topology, seed, &["--faults", "partition"]);
    assert!(
        partition["partitioned_links"].as_u64().unwrap() > 0,
        "{partition}"
    );
    for r in [loss, partition] {
        assert_eq!(r["copies_delivered"], r["copies_expected"], "{r}");
        assert!(!r["rejoin_ms"].is_null(), "every link comes back: {r}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 2,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn the_promises_hold_for_any_seed_on_eh_2_2(seed in 1u64..1_000_000) {
        promises_hold("eh:2,2", seed);
    }

    #[test]
    fn the_promises_hold_for_any_seed_on_q_4(seed in 1u64..1_000_000) {
        promises_hold("q:4", seed);
    }

    #[test]
    fn the_promises_hold_for_any_seed_on_hhc_2(seed in 1u64..1_000_000) {
        promises_hold("hhc:2", seed);
    }
}

/// Reliable sets under all four faults for a sustained run (the issue of 11 sets lost in a
/// five-minute run): every set arrives, none twice, and every one is settled at its source, each
/// in exactly one way.
fn reliable_sets_survive_sustained_faults(
    topology: &str,
    seed: u64,
    duration: &str,
    extra: &[&str],
) -> Value {
    let mut args = vec![
        "--duration",
        duration,
        "--rate",
        "150",
        "--faults",
        "state,buffers,crash,cut",
        "--delivery",
        "reliable",
    ];
    args.extend(extra);
    let r = kept(topology, seed, &args);
    assert_eq!(r["sets_lost"], 0, "{r}");
    assert_eq!(r["lost"], serde_json::json!([]), "{r}");
    assert_eq!(r["duplicates_to_client"], 0, "{r}");
    let outcomes = &r["reliable"];
    assert_eq!(outcomes["unsettled"], 0, "{r}");
    assert_eq!(outcomes["refused"], 0, "{r}");
    let settled = outcomes["acked"].as_u64().unwrap() + outcomes["expired"].as_u64().unwrap();
    assert_eq!(Some(settled), r["sets_sent"].as_u64(), "{r}");
    assert_eq!(r["attempts"]["settled"], r["sets_sent"], "{r}");
    r
}

/// The reproduction found by searching seeds: EH(2,2), seed 20, 30 s of all four faults at 150
/// sets/s. Node 23 crashed and link 28-29 was cut, so the set 0 -> 29 had one live path of
/// four hops, each corrupting 5% of packets; its source gave it up after five sends in 5 s
/// (resends after 0.2, 0.6, 1.4 and 3 s) and the report counted it lost without a reason. Now
/// the first resend follows the measured round trip and no wait is longer than an eighth of
/// the set's life, so it has a dozen sends. Without stores, as it was found: the stores' writes
/// change the seed's order of events, and with them the set takes no more than five sends.
/// Since sources route around the dead links they know of (2026-12-03), its resends leave the
/// corrupting path once node 23 and link 28-29 are known dead, and no set needs more than a few
/// sends (the resend schedule itself: `protocol/src/delivery/outbox.rs`,
/// `a_short_deadline_still_gets_about_twenty_attempts`).
#[test]
fn the_reliable_set_lost_under_sustained_faults_arrives() {
    let r = reliable_sets_survive_sustained_faults("eh:2,2", 20, "30s", &["--no-store"]);
    assert_eq!(r["crashed"], serde_json::json!([23]), "{r}");
    assert_eq!(r["cut"], serde_json::json!([[28, 29]]), "{r}");
    // Every live node knew of both within the phase, and the sets after went around them.
    let around = &r["around"];
    assert!(around["known_at_ms"].as_f64().is_some(), "{around}");
    assert!(
        around["after_known"]["copies_rerouted"].as_u64().unwrap() > 0,
        "{around}"
    );
}

/// The seed CI found (2026-12-04): on HHC(2), node 58 kept one live link (node 42 crashed, link
/// 58-59 cut), so the acknowledgements of its set to node 50 had one path back, of several
/// corrupting hops. The set arrived at its second send, and five acknowledgements in a row were
/// lost: its source heard at the seventh, more than the 5 s after delivery the client then
/// waited for the source's word, and the run called the set unsettled. A client now waits for
/// that word as long as its wait for the set had left (for a chaos run, the set's life).
#[test]
fn a_set_whose_acknowledgements_are_lost_again_and_again_is_still_settled() {
    let r = reliable_sets_survive_sustained_faults("hhc:2", 986034, "30s", &[]);
    assert_eq!(r["crashed"], serde_json::json!([42]), "{r}");
    assert_eq!(r["cut"], serde_json::json!([[58, 59]]), "{r}");
    assert!(r["attempts"]["max"].as_u64().unwrap() >= 7, "{r}");
    assert_eq!(r["unsettled"], serde_json::json!([]), "{r}");
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 2,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// 30 s runs, long enough to have found the loss: before the fix, 4 of 16 seeds lost a set
    /// in 30 s runs of this scenario. One test per topology, so that the harness's two threads
    /// share them (a 30 s run takes 8 to 21 s of one core).
    #[test]
    fn reliable_sets_survive_sustained_faults_on_eh_2_2(seed in 1u64..1_000_000) {
        reliable_sets_survive_sustained_faults("eh:2,2", seed, "30s", &[]);
    }

    #[test]
    fn reliable_sets_survive_sustained_faults_on_q_4(seed in 1u64..1_000_000) {
        reliable_sets_survive_sustained_faults("q:4", seed, "30s", &[]);
    }

    #[test]
    fn reliable_sets_survive_sustained_faults_on_hhc_2(seed in 1u64..1_000_000) {
        reliable_sets_survive_sustained_faults("hhc:2", seed, "30s", &[]);
    }
}

/// The forging relay, all four ways, on the simulated network: sealed, every forgery is
/// dropped under its reason; clear, `byzantine:1` outvotes the forged pieces and never takes
/// the sets that downgraded pieces make up. Nothing forged reaches a client, every set arrives,
/// and a seed replays exactly.
#[test]
fn a_relay_forging_every_way_is_caught_sealed_and_outvoted_clear() {
    let forge = [
        "--faults",
        "forge",
        "--forge",
        "payload,header,source,replay",
        "--delivery",
        "byzantine:1",
        "--rate",
        "40",
    ];
    let clear = [&forge[..], &["--clear"]].concat();
    for topology in ["eh:2,2", "q:4"] {
        let sealed = kept(topology, 3, &forge);
        let count = |r: &Value, a: &str, b: &str| r[a][b].as_u64().unwrap_or(0);
        for r in [&sealed, &kept(topology, 3, &clear)] {
            assert_eq!(r["forged_delivered_to_client"], 0, "{r}");
            assert_eq!(r["duplicates_to_client"], 0, "{r}");
            assert_eq!(r["sets_lost"], 0, "{r}");
            for what in ["payload", "header", "source", "replayed"] {
                assert!(count(r, "forgeries", what) > 0, "{what}: {r}");
            }
        }
        assert_eq!(
            count(&sealed, "drops", "seal_broken"),
            count(&sealed, "forgeries", "payload") + count(&sealed, "forgeries", "header"),
            "{sealed}"
        );
        assert_eq!(
            count(&sealed, "drops", "forged_source"),
            count(&sealed, "forgeries", "source"),
            "{sealed}"
        );
        assert_eq!(
            count(&sealed, "drops", "replayed"),
            count(&sealed, "forgeries", "replayed"),
            "{sealed}"
        );
        assert_eq!(
            replayable(sealed),
            replayable(sim(topology, 3, &forge)),
            "a seed replays exactly"
        );
    }
}

#[test]
fn a_seed_replays_exactly() {
    let faults = ["--faults", "state,buffers,crash,cut"];
    let first = sim("eh:2,2", 5, &faults);
    let again = sim("eh:2,2", 5, &faults);
    assert_eq!(replayable(first.clone()), replayable(again));
    let other = sim("eh:2,2", 6, &faults);
    assert_ne!(replayable(first), replayable(other));
}

/// The largest run CI affords: EH(4,4), 512 real daemons and their 1,280 links in this one
/// process, with k-1 faults (crashes and cuts) and a partition.
#[test]
fn a_512_node_cluster_keeps_its_promises() {
    let r = kept("eh:4,4", 1, &["--faults", "crash,cut,partition"]);
    assert_eq!(r["topology"], "eh:4,4");
    assert_eq!(r["sets_lost"], 0, "{r}");
    assert!(r["partitioned_links"].as_u64().unwrap() > 0, "{r}");
    assert!(!r["rejoin_ms"].is_null(), "every link comes back: {r}");
}

#[test]
fn sim_refuses_bad_input() {
    for args in [
        &["sim", "q:2", "--duration", "1s", "--rate", "0"][..],
        &["sim", "q:13", "--duration", "1s", "--rate", "1"],
        &["sim", "x:1", "--duration", "1s", "--rate", "1"],
        &["sim", "q:2", "--duration", "0s", "--rate", "1"],
        &[
            "sim",
            "q:2",
            "--duration",
            "1s",
            "--rate",
            "1",
            "--latency",
            "5ms..1ms",
        ],
        &[
            "sim",
            "q:2",
            "--duration",
            "1s",
            "--rate",
            "1",
            "--faults",
            "meteor",
        ],
        &[
            "sim",
            "q:2",
            "--duration",
            "1s",
            "--rate",
            "1",
            "--loss",
            "1",
        ],
        &[
            "sim",
            "q:2",
            "--duration",
            "1s",
            "--rate",
            "1",
            "--loss",
            "0",
        ],
        &[
            "sim",
            "q:2",
            "--duration",
            "1s",
            "--rate",
            "1",
            "--faults",
            "forge",
            "--forge",
            "payload,everything",
        ],
        &["sim", "q:2", "--duration", "1s", "--nodes-per-process", "0"],
        &["sim", "q:2", "--duration", "1s", "--nodes-per-process", "5"],
        &[
            "sim",
            "q:14",
            "--duration",
            "1s",
            "--nodes-per-process",
            "64",
        ],
        &[
            "sim",
            "q:2",
            "--duration",
            "1s",
            "--nodes-per-process",
            "auto",
        ],
    ] {
        let out = cuberoute(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    }
}

/// The simulator on node hosts (`--nodes-per-process 4`): EH(2,2)'s 32 nodes in 8 simulated
/// hosts of four, each running the daemon's node host (links inside a host by a call, to the
/// others QUIC on the simulated network). Crashes drop a node inside its host through the
/// control API, or crash the host with its last node; a `host` fault crashes a whole host.
/// Reliable sets: none lost, none twice, a valid verdict; the same seed, the same report.
#[test]
fn node_hosts_keep_the_promises_in_the_simulator() {
    let flags = [
        "--nodes-per-process",
        "4",
        "--faults",
        "crash,host",
        "--delivery",
        "reliable",
        "--duration",
        "6s",
    ];
    let r = kept("eh:2,2", 3, &flags);
    assert_eq!(r["sets_lost"], 0, "{r}");
    assert_eq!(r["duplicates_to_client"], 0, "{r}");
    let windows = r["fault_windows"].to_string();
    assert!(
        windows.contains("node dropped inside its simulated node host"),
        "{windows}"
    );
    assert!(
        windows.contains("simulated host crash of a node host"),
        "{windows}"
    );
    let host = &r["host_loss"];
    assert_eq!(host["nodes"].as_array().unwrap().len(), 4, "{host}");
    assert_eq!(host["below_promise"], 0, "{host}");
    assert!(!r["rejoin_ms"].is_null(), "every link comes back: {r}");
    let again = sim("eh:2,2", 3, &flags);
    assert_eq!(
        replayable(r),
        replayable(again),
        "a seed replays on node hosts"
    );
    // A partition of single links is not simulated between hosts of several nodes.
    let out = cuberoute(&[
        "sim",
        "eh:1,1",
        "--duration",
        "1s",
        "--rate",
        "5",
        "--nodes-per-process",
        "2",
        "--faults",
        "partition",
    ]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("not simulated between node hosts"),
        "{}",
        stderr(&out)
    );
}

/// The flags of a `crash-ends` run.
const CRASH_ENDS: &[&str] = &[
    "--faults",
    "crash-ends",
    "--delivery",
    "reliable",
    "--duration",
    "20s",
    "--life",
    "20s",
];

/// `crash-ends` on EH(2,2): sources and destinations crashed and restarted while clients
/// consume (its stores on simulated disks, losing what was not synced at each crash).
fn crash_ends(seed: u64, extra: &[&str]) -> Value {
    let args = [CRASH_ENDS, extra].concat();
    let r = sim("eh:2,2", seed, &args);
    assert!(r["ends"]["kills"].as_u64().unwrap() > 5, "{r}");
    assert!(r["ends"]["accepted"].as_u64().unwrap() > 300, "{r}");
    r
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 4,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Every set whose send was accepted reaches a consuming client exactly once, whichever
    /// ends crash when.
    #[test]
    fn accepted_sets_survive_their_ends_crashing(seed in 0u64..1_000_000) {
        let r = crash_ends(seed, &[]);
        prop_assert_eq!(&r["accepted_lost"], 0, "{}", r);
        prop_assert_eq!(&r["acked_lost"], 0, "{}", r);
        prop_assert_eq!(&r["duplicates_to_client"], 0, "{}", r);
        prop_assert_eq!(&r["ends"]["wrong_to_client"], 0, "{}", r);
        prop_assert_eq!(&r["verdict"]["valid"], true, "{}", r);
    }
}

/// The checker can fail: without a store the same seed loses accepted sets or hands some over
/// twice (seed 5: 4 lost, 27 twice when it was measured).
#[test]
fn without_a_store_the_ends_crashing_lose_or_duplicate() {
    let r = crash_ends(5, &["--no-store"]);
    let lost = r["accepted_lost"].as_u64().unwrap();
    let twice = r["duplicates_to_client"].as_u64().unwrap();
    assert!(lost + twice > 0, "{r}");
    // And the verdict, the report's first key, says so with those counts.
    let verdict = &r["verdict"];
    assert_eq!(verdict["valid"], false, "{verdict}");
    let reasons: Vec<&str> = verdict["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let said = |what: &str, n: u64| reasons.contains(&format!("{what}: {n}").as_str());
    assert!(
        (lost == 0 || said("accepted sets no consuming client took", lost))
            && (twice == 0 || said("entries a consuming client took twice", twice)),
        "{verdict}"
    );
    // With --check the run fails as a checker does: its report printed, the verdict's line on
    // stderr, exit 1.
    let args = [
        &["sim", "eh:2,2", "--seed", "5", "--rate", "20"],
        CRASH_ENDS,
        &["--no-store", "--check"],
    ]
    .concat();
    let out = cuberoute(&args);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("chaos run on eh:2,2"),
        "{}",
        stdout(&out)
    );
    assert!(
        stderr(&out).contains("verdict: INVALID: accepted sets no consuming client took")
            || stderr(&out).contains("verdict: INVALID: entries a consuming client took twice"),
        "{}",
        stderr(&out)
    );
}

/// With --check, a valid run succeeds as without it.
#[test]
fn a_valid_run_passes_the_check() {
    let args = [
        "sim",
        "q:3",
        "--seed",
        "2",
        "--faults",
        "crash",
        "--rate",
        "20",
        "--duration",
        "2s",
        "--check",
    ];
    let out = cuberoute(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out)
            .lines()
            .nth(1)
            .unwrap()
            .starts_with("verdict: valid ("),
        "{}",
        stdout(&out)
    );
}

/// The traffic is an open loop: the sets sent in each whole second stay within 10% of the rate
/// across the faults' start, the repair and the restarts (the old run sent nothing while it
/// repaired and restarted), and every set was sent.
#[test]
fn the_load_holds_its_rate_across_the_fault_edges() {
    let r = kept(
        "eh:2,2",
        7,
        &[
            "--faults",
            "crash,cut,loss,partition",
            "--rate",
            "40",
            "--duration",
            "6s",
        ],
    );
    let per_second: Vec<u64> = r["sent_per_second"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap())
        .collect();
    assert_eq!(
        per_second.iter().sum::<u64>(),
        r["sets_sent"].as_u64().unwrap(),
        "{r}"
    );
    let whole = &per_second[..per_second.len() - 1];
    // The run is longer than its phases: the repair and the restarts come between them.
    assert!(whole.len() >= 6, "{per_second:?}");
    for (second, &n) in whole.iter().enumerate() {
        assert!(
            (36..=44).contains(&n),
            "second {second}: {n} sets: {per_second:?}"
        );
    }
    // Sets sent while the network was repaired and nodes restarted belong to the faults.
    let with_faults = r["phases"]["with_faults"]["sets_sent"].as_u64().unwrap();
    assert!(with_faults >= 80, "{r}");
}

/// A partition's end costs the sealing handshakes cut off by it a round trip, not the rest of
/// their backoff (up to 8 s): a link coming up sends the handshakes in a long wait again at
/// once. These seeds' runs were ready again 8.9 and 7.7 s after the restart before; the
/// waits' first rungs and the links' own return take about 2 s.
#[test]
fn handshakes_cut_off_by_a_partition_go_again_when_it_heals() {
    for seed in [7, 11] {
        let r = kept(
            "eh:2,2",
            seed,
            &[
                "--faults",
                "crash,cut,partition",
                "--rate",
                "40",
                "--duration",
                "4s",
            ],
        );
        let rejoin = r["rejoin_ms"].as_f64().expect("ready again");
        assert!(
            rejoin < 3000.0,
            "seed {seed}: ready again after {rejoin} ms: {r}"
        );
    }
}
