//! Every command in README.md and docs/ runs as written. The commands are taken from the pages'
//! code blocks (each line that starts with `cuberoute`, its `\` continuations joined, its
//! comment cut, `;` between commands split, and the optional parts in `[...]` left out). Those
//! that need no running cluster (topology facts, paths, the papers' studies, the simulator,
//! the cluster generators) run in a scratch directory and must succeed; the others, which need
//! a cluster, are parsed by the binary without running (`CUBEROUTE_PARSE_ONLY`) and must be
//! spelled as it takes them. A command written with placeholders (`--dir D`, `(--all | ...)`)
//! is a synopsis, not a command: it is left out, and the test says how many were.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

/// A command found in a page, and where.
#[derive(Debug)]
struct Documented {
    place: String,
    command: String,
}

fn pages() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// Where a `#` outside quotes, after a blank, begins a comment: the text before it.
fn without_comment(line: &str) -> &str {
    let mut quoted = false;
    let mut previous = ' ';
    for (i, c) in line.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '#' if !quoted && previous.is_whitespace() => return &line[..i],
            _ => {}
        }
        previous = c;
    }
    line
}

/// `text` split at each `;` outside quotes.
fn commands_of(text: &str) -> Vec<String> {
    let (mut parts, mut current, mut quoted) = (Vec::new(), String::new(), false);
    for c in text.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                current.push(c);
            }
            ';' if !quoted => parts.push(std::mem::take(&mut current)),
            _ => current.push(c),
        }
    }
    parts.push(current);
    parts
        .into_iter()
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect()
}

/// `command` without its optional parts (`[--json]`, `[--delay D [--jitter J]]`).
fn without_options(command: &str) -> String {
    let (mut out, mut depth, mut quoted) = (String::new(), 0usize, false);
    for c in command.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                out.push(c);
            }
            '[' if !quoted => depth += 1,
            ']' if !quoted && depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether `command` is a synopsis: alternatives in `(... | ...)`, or a placeholder word in
/// capitals (`D`, `N`, `A-B`, `TOPOLOGY`, `<FAULTS>`).
fn is_synopsis(command: &str) -> bool {
    let outside_quotes: String = command.split('"').step_by(2).collect();
    outside_quotes.contains(" | ")
        || outside_quotes.contains('<')
        || outside_quotes.split_whitespace().any(|word| {
            word.chars().any(|c| c.is_ascii_uppercase())
                && word
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || "-_,.".contains(c))
        })
}

fn documented() -> (Vec<Documented>, usize) {
    let (mut found, mut synopses) = (Vec::new(), 0);
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let name = page.file_name().unwrap().to_string_lossy().into_owned();
        let mut in_block = false;
        let mut lines = text.lines().enumerate().peekable();
        while let Some((number, line)) = lines.next() {
            if line.trim_start().starts_with("```") {
                in_block = !in_block;
                continue;
            }
            let trimmed = line.trim_start();
            if !in_block || !trimmed.starts_with("cuberoute ") {
                continue;
            }
            let mut whole = without_comment(trimmed).trim_end().to_string();
            while whole.ends_with('\\') {
                whole.pop();
                let Some((_, next)) = lines.next() else { break };
                whole.push(' ');
                whole.push_str(without_comment(next).trim());
            }
            for command in commands_of(&whole) {
                assert!(
                    command.starts_with("cuberoute "),
                    "{name}:{}: {command:?} is not a cuberoute command",
                    number + 1
                );
                let command = without_options(&command);
                if is_synopsis(&command) {
                    synopses += 1;
                    continue;
                }
                found.push(Documented {
                    place: format!("{name}:{}", number + 1),
                    command,
                });
            }
        }
    }
    (found, synopses)
}

/// Whether the command needs no running cluster: it is run for real.
fn runs_alone(command: &str) -> bool {
    let words: Vec<&str> = command.split_whitespace().skip(1).take(2).collect();
    matches!(
        words.as_slice(),
        ["topology" | "paths" | "study" | "sim", ..]
            | ["cluster", "placement" | "init" | "compose" | "k8s"]
    )
}

#[test]
fn every_documented_command_runs_as_written() {
    let (found, synopses) = documented();
    assert!(found.len() >= 90, "{} commands found", found.len());
    let binary = Path::new(env!("CARGO_BIN_EXE_cuberoute"));
    let path = format!(
        "{}:{}",
        binary.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let scratch = tempfile::tempdir().unwrap();
    let mut seen = std::collections::BTreeSet::new();
    let (mut ran, mut parsed, mut failures) = (0, 0, Vec::new());
    for doc in &found {
        if !seen.insert(doc.command.clone()) {
            continue;
        }
        let alone = runs_alone(&doc.command);
        let mut sh = Command::new("sh");
        sh.arg("-c")
            .arg(&doc.command)
            .current_dir(scratch.path())
            .env("PATH", &path);
        if alone {
            ran += 1;
        } else {
            parsed += 1;
            sh.env("CUBEROUTE_PARSE_ONLY", "1");
        }
        let out = sh.output().unwrap();
        if !out.status.success() {
            failures.push(format!(
                "{} ({}): `{}` exited {:?}: {}",
                doc.place,
                if alone { "run" } else { "parsed" },
                doc.command,
                out.status.code(),
                common::stderr(&out).lines().next().unwrap_or_default()
            ));
        }
    }
    eprintln!("{ran} commands run, {parsed} parsed, {synopses} synopses left out");
    assert!(ran >= 25 && parsed >= 40, "{ran} run, {parsed} parsed");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_extraction_reads_pages_as_a_reader_would() {
    assert_eq!(
        without_comment("cuberoute paths q:4 0 15   # draw it"),
        "cuberoute paths q:4 0 15   "
    );
    assert_eq!(
        without_comment(r#"cuberoute paths rdn:ring3,2 "(0,#)" 1"#),
        r#"cuberoute paths rdn:ring3,2 "(0,#)" 1"#
    );
    assert_eq!(
        commands_of("cuberoute chaos kill --node 3 ; cuberoute chaos restart --node 3"),
        [
            "cuberoute chaos kill --node 3",
            "cuberoute chaos restart --node 3"
        ]
    );
    assert_eq!(
        without_options("cuberoute chaos net --dir nf [--delay 1ms [--jitter 1ms]] --off"),
        "cuberoute chaos net --dir nf --off"
    );
    assert!(is_synopsis("cuberoute chaos net --dir D --off"));
    assert!(is_synopsis("cuberoute chaos heal --link A-B"));
    assert!(is_synopsis("cuberoute sim <TOPOLOGY> --seed 1"));
    assert!(is_synopsis("cuberoute chaos net (--all | --node 3)"));
    assert!(!is_synopsis(
        "cuberoute paths q:5 0b11010 0b10101 --constraint 2"
    ));
    assert!(!is_synopsis(
        r#"cuberoute paths rdn:ring3,2 "(0,(0,0,0),(0,0,0))" 1"#
    ));
    assert!(runs_alone("cuberoute paths q:4 0 15"));
    assert!(runs_alone("cuberoute cluster init q:7 --dir q7"));
    assert!(!runs_alone("cuberoute cluster up eh:2,2"));
    assert!(!runs_alone("cuberoute send --from 0 --to 5 --message hi"));
}
