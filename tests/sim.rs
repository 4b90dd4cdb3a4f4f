//! `cuberoute sim`: a cluster of real daemons on the simulated network delivers every copy on
//! its constructed path, and a seed's report is the same in every run.

mod common;

use common::{cuberoute, stderr, stdout};
use serde_json::Value;

fn sim(args: &[&str]) -> Value {
    let mut all = vec!["sim"];
    all.extend(args);
    all.push("--json");
    let out = cuberoute(&all);
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

#[test]
fn a_simulated_cluster_delivers_every_copy_and_a_seed_replays_exactly() {
    for topology in ["eh:2,2", "q:4", "hhc:2"] {
        let args = ["--seed", "11", "--duration", "3s", "--rate", "20", topology];
        let first = sim(&args);
        assert_eq!(first["sets_sent"], 60, "{first}");
        assert_eq!(first["sets_failed_to_send"], 0, "{first}");
        assert_eq!(
            first["copies_delivered"], first["copies_expected"],
            "{first}"
        );
        assert_eq!(first["path_mismatches"], 0, "{first}");
        assert!(first["simulated_ms"].as_u64().unwrap() >= 3000, "{first}");
        let again = sim(&args);
        assert_eq!(replayable(first.clone()), replayable(again), "{topology}");
        // Another seed draws other pairs.
        let other = sim(&["--seed", "12", "--duration", "3s", "--rate", "20", topology]);
        assert_ne!(replayable(first), replayable(other), "{topology}");
    }
}

#[test]
fn sim_refuses_bad_input() {
    for args in [
        &["sim", "q:2", "--rate", "0"][..],
        &["sim", "q:13"],
        &["sim", "x:1"],
        &["sim", "q:2", "--duration", "0s"],
    ] {
        let out = cuberoute(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    }
}
