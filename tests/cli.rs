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
    let cases: [&[&str]; 52] = [
        &["paths", "eh:2", "0", "1"],
        &["paths", "eh:0,3", "0", "1"],
        &["paths", "mesh:4", "0", "1"],
        &["paths", "eh:2,2", "32", "1"],
        &["paths", "eh:2,2", "0", "0b2"],
        &["paths", "eh:2,2", "5", "5"],
        &["paths", "q:64", "0", "1"],
        &["topology", "q:x"],
        &["paths", "eh:2,2", "1.001.1", "0"],
        &["bench", "--overload", "0"],
        &["bench", "--overload", "1,500"],
        &["bench", "--load-generator-nice", "20"],
        &["bench", "--sweep", "4096,0"],
        &["bench", "--sets-per-request", "0"],
        &["bench", "--sets-per-request", "129"],
        &["check", "routing", "--mutant", "nope"],
        &["check", "routing", "--topology", "hhc:2"],
        &["check", "routing", "--topology", "q:6"],
        &["check", "routing", "--capacity", "0"],
        &["check", "routing", "--corrupted", "4"],
        &["check", "routing", "--max-states", "0"],
        &["check", "delivery", "--mutant", "nope"],
        &["check", "delivery", "--nodes", "5"],
        &["check", "delivery", "--sets", "0"],
        &["check", "delivery", "--paths", "4"],
        &["check", "delivery", "--attempts", "1"],
        &["check", "delivery", "--mode", "code:1"],
        &["check", "delivery", "--mode", "reliable+code:2"],
        &["check", "delivery", "--losses", "4"],
        &["check", "delivery", "--crashes", "x"],
        &["check", "delivery", "--max-states", "0"],
        &["check", "delivery", "--replay", "/nonexistent/trace.json"],
        &["bench", "--load-generator-nice", "-21"],
        &["bench", "--to", "0"],
        &["bench", "--through", "0"],
        &["bench", "--running", "x", "--to", "0", "--through", "1"],
        &["bench", "--nodes-per-process", "0"],
        &["bench", "--docker", "--nodes-per-process", "2"],
        &["bench", "--running", "x", "--nodes-per-process", "2"],
        &["bench", "--nodes-per-container", "2"],
        &["cluster", "up", "q:3", "--nodes-per-container", "2"],
        &[
            "cluster",
            "up",
            "q:3",
            "--docker",
            "--nodes-per-container",
            "0",
        ],
        &[
            "cluster",
            "up",
            "q:3",
            "--docker",
            "--nodes-per-process",
            "2",
        ],
        &["cluster", "compose", "q:3", "--nodes-per-container", "9"],
        &[
            "cluster",
            "swarm",
            "q:3",
            "--docker-host",
            "unix:///nonexistent.sock",
            "--nodes-per-container",
            "0",
        ],
        &[
            "daemon",
            "--config",
            "/nonexistent.toml",
            "--with-config",
            "/nonexistent2.toml",
        ],
        &["ping", "--from", "0", "--to", "1", "--count", "0"],
        &["ping", "--from", "0", "--to", "1", "--interval", "1ms"],
        &["cluster", "placement", "eh:2,2", "--hosts", "1"],
        &["cluster", "placement", "eh:2,2", "--hosts", "17"],
        &["cluster", "placement", "q:2", "--hosts", "5"],
        &["cluster", "placement", "eh:2,2", "--placement", "nearby"],
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

/// clap's own usage errors are told as every other bad input: one line, with the command's
/// `--help` to try, and exit 2.
#[test]
fn usage_errors_are_one_line_with_the_help_to_try() {
    let cases: [(&[&str], &str, &str); 4] = [
        (
            &["send", "--bogus"],
            "unexpected argument '--bogus'",
            "cuberoute send --help",
        ),
        (
            &["sim", "eh:1,1", "--study"],
            "required arguments were not provided: --rate <RATE>",
            "cuberoute sim --help",
        ),
        (
            &["cluster", "logs", "5", "--node", "6"],
            "cannot be used with",
            "cuberoute cluster logs --help",
        ),
        (
            &["bogus"],
            "unrecognized subcommand 'bogus'",
            "cuberoute --help",
        ),
    ];
    for (args, says, hint) in cases {
        let out = cuberoute(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("cuberoute: "), "{err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(err.contains(&format!("(try `{hint}`)")), "{args:?}: {err}");
        assert!(!err.contains('\x1b'), "no terminal colours: {err:?}");
    }
    // Help still prints whole, to stdout, and succeeds.
    let out = cuberoute(&["send", "--help"]);
    assert!(out.status.success());
    assert!(stdout(&out).contains("Usage: cuberoute send"));
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
    let mut pairs = Vec::new();
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        pairs.push((v["from"].as_u64().unwrap(), v["to"].as_u64().unwrap()));
        assert_eq!(
            v["paths"].as_array().unwrap().len() as u64,
            v["k"].as_u64().unwrap()
        );
    }
    let in_id_order: Vec<(u64, u64)> = (0..16)
        .flat_map(|s| (0..16).filter(move |&d| d != s).map(move |d| (s, d)))
        .collect();
    assert_eq!(
        pairs, in_id_order,
        "every ordered pair once, sources then destinations in id order"
    );
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

/// The nodes of a JSON list of ids.
fn ids(v: &Value) -> Vec<u64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect()
}

/// Each path of a JSON answer: ids, consecutive ids one bit apart.
fn json_paths(v: &Value) -> Vec<Vec<u64>> {
    let paths: Vec<Vec<u64>> = v["paths"].as_array().unwrap().iter().map(ids).collect();
    for p in &paths {
        assert!(
            p.windows(2).all(|w| (w[0] ^ w[1]).count_ones() == 1),
            "{p:?}"
        );
    }
    paths
}

#[test]
fn node_to_set_json_lists_the_destinations() {
    let out = cuberoute(&["paths", "q:5", "0", "--to-set", "3,5,24,31,1", "--json"]);
    assert!(out.status.success());
    let text = stdout(&out);
    assert!(
        text.starts_with(r#"{"topology":"q:5","from":0,"to":[3,5,24,31,1],"distance":[2,2,2,5,1],"k":5,"paths":[["#),
        "{text}"
    );
    let v: Value = serde_json::from_str(&text).unwrap();
    let paths = json_paths(&v);
    let to = ids(&v["to"]);
    let mut inner = Vec::new();
    for (p, d) in paths.iter().zip(&to) {
        assert_eq!((p[0], *p.last().unwrap()), (0, *d));
        assert!(p.len() - 1 <= 6, "n+1");
        inner.extend_from_slice(&p[1..]);
    }
    let total = inner.len();
    inner.sort_unstable();
    inner.dedup();
    assert_eq!(inner.len(), total, "disjoint but for the source");
}

#[test]
fn avoid_makes_node_to_set_fault_tolerant() {
    let out = cuberoute(&[
        "paths", "q:5", "0", "--to-set", "3,24", "--avoid", "1,2", "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(ids(&v["avoid"]), [1, 2]);
    for p in json_paths(&v) {
        assert!(!p.contains(&1) && !p.contains(&2), "{p:?}");
        assert!(p.len() - 1 <= 8, "n+3");
    }
    // One destination: one path around the faulty nodes, as `send --avoid` sends it (the
    // option was ignored there, and paths through node 1 printed).
    let out = cuberoute(&["paths", "q:5", "0", "31", "--avoid", "1", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let paths = json_paths(&v);
    assert_eq!(paths.len(), 1, "{v}");
    assert!(!paths[0].contains(&1), "{paths:?}");
    assert_eq!(
        (paths[0].first(), paths[0].last()),
        (Some(&0), Some(&31)),
        "{paths:?}"
    );
    let text = stdout(&cuberoute(&[
        "paths", "q:5", "0", "--to-set", "3,24", "--avoid", "1,2",
    ]));
    assert!(
        text.contains("Cube-XFTN2S, avoiding {00001, 00010}, k 2"),
        "{text}"
    );
}

#[test]
fn set_to_set_json_has_lists_on_both_sides() {
    let out = cuberoute(&[
        "paths",
        "q:4",
        "--from-set",
        "0,1,2",
        "--to-set",
        "7,11,15",
        "--json",
    ]);
    assert!(out.status.success());
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(ids(&v["from"]), [0, 1, 2]);
    assert_eq!(v["k"], 3);
    let paths = json_paths(&v);
    let mut ends: Vec<u64> = paths.iter().map(|p| *p.last().unwrap()).collect();
    ends.sort_unstable();
    assert_eq!(ends, [7, 11, 15]);
    let distance = ids(&v["distance"]);
    for ((p, s), d) in paths.iter().zip([0, 1, 2]).zip(distance) {
        assert_eq!(p[0], s);
        assert_eq!((p[0] ^ p.last().unwrap()).count_ones() as u64, d);
        assert!(p.len() - 1 <= 4 + 3, "n+k");
    }
}

#[test]
fn constraint_gives_the_papers_container() {
    let out = cuberoute(&[
        "paths",
        "q:5",
        "0b11010",
        "0b10101",
        "--constraint",
        "2",
        "--json",
    ]);
    assert!(out.status.success());
    let text = stdout(&out);
    assert_eq!(
        text.trim_end(),
        r#"{"topology":"q:5","from":26,"to":21,"distance":4,"k":3,"constraint":2,"paths":[[26,18,19,17,21],[26,10,14,6,7,5,21],[26,24,28,20,21]]}"#
    );
    let file = std::env::temp_dir().join(format!("cuberoute-container-{}.svg", std::process::id()));
    let out = cuberoute(&[
        "paths",
        "q:4",
        "1",
        "6",
        "--constraint",
        "1",
        "--svg",
        file.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let svg = std::fs::read_to_string(&file).unwrap();
    assert!(
        svg.starts_with("<svg") && svg.contains("path 1: 3 hops"),
        "{svg}"
    );
    std::fs::remove_file(&file).unwrap();
    let text = stdout(&cuberoute(&[
        "paths",
        "q:5",
        "0b11010",
        "0b10101",
        "--constraint",
        "2",
    ]));
    assert!(
        text.starts_with(
            "q:5  11010 -> 10101  HC-CONTAINER gamma_2 = (2,3), k 3, longest 6, bound 14"
        ),
        "{text}"
    );
}

#[test]
fn bad_sets_are_one_line_and_exit_2() {
    let cases: [&[&str]; 14] = [
        &["paths", "q:5", "0", "--to-set", "1,1"],
        &["paths", "q:5", "0", "--to-set", "1,,2"],
        &["paths", "q:5", "0", "--to-set", ""],
        &["paths", "q:3", "0", "--to-set", "1,2,3,4"],
        &["paths", "q:5", "0", "--to-set", "0"],
        &["paths", "q:5", "0", "--to-set", "3,5", "--avoid", "1,2,4"],
        &["paths", "q:5", "0", "--to-set", "3,5", "--avoid", "3"],
        &["paths", "eh:2,2", "0", "--to-set", "1"],
        &["paths", "q:5", "--from-set", "1,2", "--to-set", "3"],
        &["paths", "q:5", "--from-set", "1,2", "--to-set", "2,3"],
        &["paths", "q:5", "0", "31", "--constraint", "2"],
        &["paths", "q:5", "1", "2", "--constraint", "x"],
        // Faulty nodes to avoid: the fault-tolerant algorithm is Q_n's, and not the ends.
        &["paths", "eh:2,2", "0", "31", "--avoid", "1"],
        &["paths", "q:5", "0", "31", "--avoid", "31"],
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
fn study_writes_csv_markdown_and_svg() {
    let dir = std::env::temp_dir().join(format!("cuberoute-study-{}", std::process::id()));
    let out = cuberoute(&[
        "study",
        "container",
        "--sizes",
        "4..6",
        "--instances",
        "50",
        "--maxflow-instances",
        "5",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let csv = std::fs::read_to_string(dir.join("container.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 4, "header and n = 4, 5, 6");
    for (line, n) in lines[1..].iter().zip(4..) {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells[0], n.to_string());
        let (bound, max): (usize, usize) = (cells[2].parse().unwrap(), cells[6].parse().unwrap());
        assert!(max <= bound, "{line}");
    }
    let md = std::fs::read_to_string(dir.join("container.md")).unwrap();
    assert!(md.contains("| 5 | 3 | 14 | 50 |"), "{md}");
    let svg = std::fs::read_to_string(dir.join("container.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
    assert!(stdout(&out).starts_with("| n | k | bound |"));
    let bad = cuberoute(&["study", "container", "--sizes", "9..4"]);
    assert_eq!(bad.status.code(), Some(2));
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---- The seed topologies of issue 7: hhc:M, mc:K,M, rdn:BASE,K ----

/// Paths of a JSON answer, checked against a topology's adjacency (via `cuberoute topology`
/// facts is not enough: the neighbours are recomputed here from the definitions).
fn family_paths(v: &Value, adjacent: impl Fn(u64, u64) -> bool) -> Vec<Vec<u64>> {
    let paths: Vec<Vec<u64>> = v["paths"].as_array().unwrap().iter().map(ids).collect();
    for p in &paths {
        assert!(p.windows(2).all(|w| adjacent(w[0], w[1])), "{p:?}");
    }
    paths
}

/// HHC_{2^m+m} adjacency from the definition: id = sigma << m | pi.
fn hhc_adjacent(m: u32) -> impl Fn(u64, u64) -> bool {
    move |u, v| {
        let x = u ^ v;
        let bit = x.trailing_zeros() as u64;
        x.count_ones() == 1 && (bit < m as u64 || bit == m as u64 + (u & ((1 << m) - 1)))
    }
}

#[test]
fn seed_topologies_facts() {
    let out = cuberoute(&["topology", "hhc:3", "--json"]);
    assert!(out.status.success());
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        (v["nodes"].as_u64(), v["degree"].as_u64()),
        (Some(2048), Some(4))
    );
    assert_eq!(v["diameter"], 16);
    assert_eq!(v["flush_bound"], Value::Null);
    let out = cuberoute(&["topology", "mc:3,3", "--json"]);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["nodes"].as_u64(), Some(1 << 27));
    assert_eq!(
        (v["diameter"].as_u64(), v["k"].as_u64()),
        (Some(32), Some(6))
    );
    let out = cuberoute(&["topology", "rdn:q3,2"]);
    let text = stdout(&out);
    assert!(
        text.contains("RDN^2(Q_3)") && text.contains("nodes          32768"),
        "{text}"
    );
}

#[test]
fn seed_topologies_node_to_node_json_keeps_the_schema() {
    // MC(2,2), *Disjoint Paths in Metacube*, Example 3: the four paths of Table 3.
    let out = cuberoute(&["paths", "mc:2,2", "0", "0b00.01.01.11.01", "--json"]);
    assert!(out.status.success());
    let text = stdout(&out);
    assert!(
        text.starts_with(
            r#"{"topology":"mc:2,2","from":0,"to":93,"distance":9,"k":4,"paths":[[0,256,"#
        ),
        "{text}"
    );
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v.as_object().unwrap().len(), 6);
    let lengths: Vec<usize> = v["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| ids(p).len() - 1)
        .collect();
    assert_eq!(lengths, [11, 13, 11, 11]);
    // HHC_11: m+1 = 4 paths from the thesis's source to a destination of Table 5.1.
    let out = cuberoute(&["paths", "hhc:3", "00000000.000", "00001010.001", "--json"]);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["k"], 4);
    let paths = family_paths(&v, hhc_adjacent(3));
    assert!(
        paths
            .iter()
            .all(|p| p[0] == 0 && *p.last().unwrap() == (0b0000_1010 << 3 | 1))
    );
}

#[test]
fn seed_topologies_sets() {
    // Node-to-set on HHC_11 (Table 5.1's instance, HHC-N2S: lengths 14, 5, 16, 9).
    let out = cuberoute(&[
        "paths",
        "hhc:3",
        "0",
        "--to-set",
        "00001010.000,00001010.001,00111000.100,10000010.010",
        "--algorithm",
        "n2s",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let lengths: Vec<usize> = family_paths(&v, hhc_adjacent(3))
        .iter()
        .map(|p| p.len() - 1)
        .collect();
    assert_eq!(lengths, [14, 5, 16, 9]);
    // RDN with the paper's triples, commas and all (*Node-to-Set Disjoint-Paths Routing in
    // Recursive Dual-Net*, Example 1).
    let out = cuberoute(&[
        "paths",
        "rdn:ring3,2",
        "(0,(0,0,0),(0,0,0))",
        "--to-set",
        "(0,(1,0,0),(1,1,0)),(0,(1,0,0),(0,1,1)),(1,(1,1,1),(1,0,0)),(1,(1,1,1),(0,2,2))",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let lengths: Vec<usize> = v["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| ids(p).len() - 1)
        .collect();
    assert_eq!(lengths, [7, 11, 9, 11]);
    // Set-to-set on HHC_6 (HHC-S2S): lists on both sides, every destination once.
    let out = cuberoute(&[
        "paths",
        "hhc:2",
        "--from-set",
        "0,1,2",
        "--to-set",
        "60,61,62",
        "--json",
    ]);
    assert!(out.status.success());
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let paths = family_paths(&v, hhc_adjacent(2));
    let mut ends: Vec<u64> = paths.iter().map(|p| *p.last().unwrap()).collect();
    ends.sort_unstable();
    assert_eq!(ends, [60, 61, 62]);
    // MC-N2S text output names the algorithm and its bound.
    let out = cuberoute(&["paths", "mc:2,2", "0", "--to-set", "341,853,768,748"]);
    let text = stdout(&out);
    assert!(
        text.contains("MC-N2S") && text.contains("bound 42"),
        "{text}"
    );
}

#[test]
fn seed_topologies_refuse_bad_input_in_one_line() {
    let cases: [&[&str]; 10] = [
        &["paths", "hhc:0", "0", "1"],
        &["paths", "hhc:6", "0", "1"],
        &["paths", "mc:3,8", "0", "1"],
        &["paths", "rdn:q5,1", "0", "1"],
        &["paths", "rdn:ring3", "0", "1"],
        &["paths", "rdn:ring3,1", "0", "18"],
        &["paths", "rdn:ring3,1", "(0,0,3)", "1"],
        &["paths", "mc:2,2", "--from-set", "0,1", "--to-set", "5,6"],
        &[
            "paths",
            "hhc:3",
            "0",
            "--to-set",
            "1,2",
            "--algorithm",
            "fast",
        ],
        &["paths", "hhc:2", "0", "--to-set", "1,2,3,4"],
    ];
    for args in cases {
        let out = cuberoute(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn seed_topologies_all_pairs() {
    let out = cuberoute(&["paths", "rdn:ring3,1", "--all-pairs", "--json"]);
    assert!(out.status.success());
    let text = stdout(&out);
    assert_eq!(text.lines().count(), 18 * 17);
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["k"], 3);
    }
}

#[test]
fn seed_studies_write_their_tables() {
    let dir = std::env::temp_dir().join(format!("cuberoute-seed-study-{}", std::process::id()));
    let run = |args: &[&str]| {
        let mut all = vec!["study"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--instances", "40", "--out", dir.to_str().unwrap()]);
        let out = cuberoute(&all);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    run(&["hhc-n2s", "--sizes", "3..4"]);
    let csv = std::fs::read_to_string(dir.join("hhc-n2s.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 3, "header and m = 3, 4");
    for line in &lines[1..] {
        let c: Vec<&str> = line.split(',').collect();
        let n = |i: usize| c[i].parse::<f64>().unwrap();
        assert!(
            n(5) <= n(6) && n(9) <= n(10),
            "max <= bound for both: {line}"
        );
    }
    run(&["mc-n2s", "--sizes", "2..2"]);
    let md = std::fs::read_to_string(dir.join("mc-n2s.md")).unwrap();
    assert!(md.contains("| 2 | 2 | 4 | 40 |"), "{md}");
    let svg = std::fs::read_to_string(dir.join("mc-n2s.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("MC-N2S"));
    let bad = cuberoute(&["study", "hhc-n2s", "--sizes", "3..6"]);
    assert_eq!(bad.status.code(), Some(2));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every command that takes a topology, and the binary's own description, name all five
/// families (regression: `cluster up`, `demo`, `cluster compose`, `cluster k8s` and the daemon
/// said "`q:N` or `eh:S,T`", the about line only hypercubes and exchanged hypercubes).
#[test]
fn help_names_all_five_families() {
    for command in [
        &["--help"][..],
        &["cluster", "up", "--help"],
        &["cluster", "init", "--help"],
        &["cluster", "compose", "--help"],
        &["cluster", "k8s", "--help"],
        &["demo", "--help"],
        &["daemon", "--help"],
        &["topology", "--help"],
        &["paths", "--help"],
    ] {
        let out = cuberoute(command);
        assert!(out.status.success(), "{command:?}");
        let help = stdout(&out);
        for family in ["q:N", "eh:S,T", "hhc:M", "mc:K,M", "rdn:BASE,K"] {
            assert!(
                help.contains(family),
                "`cuberoute {}` does not name {family}:\n{help}",
                command.join(" ")
            );
        }
    }
}

/// One spelling (issue 49): nodes in the topology's notation by default, by integer ids with
/// `--numeric` (before or after the command), and paths numbered from 1, as copies are.
#[test]
fn nodes_are_named_in_the_notation_or_with_numeric_by_integers() {
    let text = stdout(&cuberoute(&["paths", "eh:2,2", "0", "5"]));
    assert!(text.starts_with("eh:2,2  00.00.0 -> 00.10.1 "), "{text}");
    assert!(
        text.contains("  path 1 (length  2): 00.00.0 00.00.1 00.10.1"),
        "{text}"
    );
    assert!(!text.contains("path 0 "), "{text}");
    for args in [
        &["paths", "eh:2,2", "0", "5", "--numeric"][..],
        &["--numeric", "paths", "eh:2,2", "00.00.0", "00.10.1"],
    ] {
        let text = stdout(&cuberoute(args));
        assert!(text.starts_with("eh:2,2  0 -> 5 "), "{args:?}: {text}");
        assert!(text.contains("  path 1 (length  2): 0 1 5"), "{text}");
        assert!(text.contains("  path 3 (length  6): "), "{text}");
    }
}
