//! `cuberoute check`: the model checker from the command line. The routing and delivery
//! models run to the end with every property holding; a mutant is caught (exit 0, its trace
//! in the JSON report) or survives (exit 1); a report's traces replay (exit 1, the property
//! named).

use std::process::Command;

fn cuberoute(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_cuberoute"))
        .args(args)
        .output()
        .expect("cuberoute runs")
}

/// The JSON report of a run that exited 0.
fn json_report(out: &std::process::Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_routing_model_holds_and_its_mutants_are_caught_and_replayed() {
    let out = cuberoute(&["check", "routing", "--topology", "eh:1,1", "--json"]);
    let report = json_report(&out);
    assert_eq!(report["model"], "routing");
    assert_eq!(report["stopped"], "exhausted");
    assert!(report["unique_states"].as_u64().unwrap() > 1000, "{report}");
    assert!(report["violations"].as_array().unwrap().is_empty());
    assert_eq!(report["figures"]["flush_bound"], 10);
    assert_eq!(report["figures"]["longest_life"], 9);

    // Caught: the report names the property and holds the trace, which replays it.
    let out = cuberoute(&["check", "routing", "--mutant", "no-index-check", "--json"]);
    let report = json_report(&out);
    assert_eq!(report["stopped"], "violation");
    assert_eq!(report["violations"][0]["property"], "copies only");
    assert_eq!(
        report["violations"][0]["trace"]["params"]["mutant"],
        "no-index-check"
    );
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), &out.stdout).unwrap();
    let replayed = cuberoute(&[
        "check",
        "routing",
        "--replay",
        file.path().to_str().unwrap(),
    ]);
    assert_eq!(replayed.status.code(), Some(1));
    let said = String::from_utf8_lossy(&replayed.stderr);
    assert!(said.contains("the trace breaks \"copies only\""), "{said}");

    // Survived: on Q_3 the budget check is redundant.
    let out = cuberoute(&["check", "routing", "--mutant", "no-budget"]);
    assert_eq!(out.status.code(), Some(1));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("mutant no-budget survived on q:3"), "{said}");
}

#[test]
fn the_delivery_model_holds_and_its_mutants_are_caught_and_replayed() {
    let out = cuberoute(&["check", "delivery", "--sets", "1", "--json"]);
    let report = json_report(&out);
    assert_eq!(report["model"], "delivery");
    assert_eq!(report["stopped"], "exhausted");
    assert!(report["unique_states"].as_u64().unwrap() > 1000, "{report}");
    assert!(report["violations"].as_array().unwrap().is_empty());
    assert_eq!(report["params"]["faults"]["replays"], 1);

    // Caught: an acknowledgement before the store's write is an acknowledged set a crash
    // loses; the report's trace replays it.
    let out = cuberoute(&[
        "check",
        "delivery",
        "--sets",
        "1",
        "--mutant",
        "ack-before-write",
        "--json",
    ]);
    let report = json_report(&out);
    assert_eq!(report["stopped"], "violation");
    assert_eq!(report["violations"][0]["property"], "acknowledged is kept");
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), &out.stdout).unwrap();
    let replayed = cuberoute(&[
        "check",
        "delivery",
        "--replay",
        file.path().to_str().unwrap(),
    ]);
    assert_eq!(replayed.status.code(), Some(1));
    let said = String::from_utf8_lossy(&replayed.stderr);
    assert!(
        said.contains("the trace breaks \"acknowledged is kept\""),
        "{said}"
    );

    // Without stores the model finds what a restart forgets: exit 1, the properties named.
    let out = cuberoute(&["check", "delivery", "--sets", "1", "--no-store"]);
    assert_eq!(out.status.code(), Some(1));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("settled at the end"), "{said}");

    // A mutant no property catches on these parameters survives: exit 1.
    let out = cuberoute(&[
        "check",
        "delivery",
        "--sets",
        "1",
        "--replays",
        "0",
        "--crashes",
        "0",
        "--mutant",
        "window-forgotten-at-restart",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("survived"), "{said}");
}
