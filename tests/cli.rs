//! The CLI as a user runs it: real processes of the built binary.

use serde_json::Value;
use std::process::{Command, Output};

fn cuberoute(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cuberoute"))
        .args(args)
        .output()
        .unwrap()
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let cases: [&[&str]; 9] = [
        &["paths", "eh:2", "0", "1"],
        &["paths", "eh:0,3", "0", "1"],
        &["paths", "mesh:4", "0", "1"],
        &["paths", "eh:2,2", "32", "1"],
        &["paths", "eh:2,2", "0", "0b2"],
        &["paths", "eh:2,2", "5", "5"],
        &["paths", "q:64", "0", "1"],
        &["topology", "q:x"],
        &["paths", "eh:2,2", "1.001.1", "0"],
    ];
    for args in cases {
        let out = cuberoute(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("cuberoute: "), "{err}");
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn json_has_the_documented_schema() {
    let out = cuberoute(&["paths", "eh:2,2", "0", "0b11.11.1", "--json"]);
    assert!(out.status.success());
    let text = stdout(&out);
    assert_eq!(text.lines().count(), 1);
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v.as_object().unwrap().len(), 6);
    assert!(
        text.starts_with(
            r#"{"topology":"eh:2,2","from":0,"to":31,"distance":5,"k":3,"paths":[[0,"#
        ),
        "keys in the documented order: {text}"
    );
    assert_eq!(v["topology"], "eh:2,2");
    assert_eq!(v["from"], 0);
    assert_eq!(v["to"], 31);
    assert_eq!(v["distance"], 5);
    assert_eq!(v["k"], 3);
    let paths = v["paths"].as_array().unwrap();
    assert_eq!(paths.len(), 3);
    for path in paths {
        let path: Vec<u64> = path
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap())
            .collect();
        assert_eq!((path[0], *path.last().unwrap()), (0, 31));
    }
}

#[test]
fn all_pairs_streams_one_line_per_ordered_pair() {
    let out = cuberoute(&["paths", "eh:1,2", "--all-pairs", "--json"]);
    assert!(out.status.success());
    let text = stdout(&out);
    let mut seen = std::collections::HashSet::new();
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        assert!(seen.insert((v["from"].as_u64().unwrap(), v["to"].as_u64().unwrap())));
        assert_eq!(
            v["paths"].as_array().unwrap().len() as u64,
            v["k"].as_u64().unwrap()
        );
    }
    assert_eq!(seen.len(), 16 * 15);
    let out = cuberoute(&["paths", "eh:6,6", "--all-pairs", "--json"]);
    assert_eq!(out.status.code(), Some(2), "too large for --all-pairs");
}

#[test]
fn text_output_shows_binary_ids_lengths_and_the_optimum() {
    let out = cuberoute(&["paths", "eh:2,2", "0", "0b01.00.0"]);
    assert!(out.status.success());
    let text = stdout(&out);
    assert!(
        text.starts_with("eh:2,2  00.00.0 -> 01.00.0  distance 1, k 3, longest 7, L* 7"),
        "{text}"
    );
    assert_eq!(
        text.lines()
            .filter(|l| l.trim_start().starts_with("path "))
            .count(),
        3
    );
    assert!(text.contains("(length  1): 00.00.0 01.00.0"), "{text}");
}

#[test]
fn topology_facts_in_text_and_json() {
    let out = cuberoute(&["topology", "eh:31,31", "--json"]);
    assert!(out.status.success());
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["nodes"], 1u64 << 63);
    assert_eq!(v["diameter"], 64);
    assert_eq!(v["connectivity"], 32);
    assert_eq!(v["k"]["mixed"], 32);
    let out = cuberoute(&["topology", "q:7"]);
    let text = stdout(&out);
    assert!(
        text.contains("binary hypercube Q_7") && text.contains("nodes          128"),
        "{text}"
    );
}

#[test]
fn svg_is_written_and_refused_for_large_topologies() {
    let dir = std::env::temp_dir().join(format!("cuberoute-svg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("paths.svg");
    let out = cuberoute(&["paths", "q:4", "0", "15", "--svg", file.to_str().unwrap()]);
    assert!(out.status.success());
    let svg = std::fs::read_to_string(&file).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("path 3: 4 hops"));
    let out = cuberoute(&["paths", "q:7", "0", "15", "--svg", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    std::fs::remove_dir_all(&dir).unwrap();
}
