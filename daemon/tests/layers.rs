//! The tiers of `daemon/src`, checked: every module of the daemon lies in one of the tiers of
//! [`TIERS`], and imports only from its own tier and the tiers below; and no two files import
//! each other, directly or round a longer loop (a module's files, such as `node/`'s, included).
//! ARCHITECTURE.md's daemon section gives the same order. The compiler enforces neither (the
//! modules are one crate), so this test does, in the manner of `protocol/tests/layers.rs`.
//!
//! A file *imports* a module when it names a path `crate::...`, `super::...` or `self::...` (in a
//! `use`, nested `use` groups included, or inline) that resolves to that module's file: the
//! longest prefix of the path that is a module of the crate. The crate root's re-exports resolve
//! to the module they re-export. Comments, strings and characters do not count. `lib.rs` declares
//! the modules and starts the node from all of them, so it is exempt: it is the top.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The tiers, bottom first: each a name and the modules in it (the first part of their path).
const TIERS: [(&str, &[&str]); 5] = [
    (
        "ground",
        &[
            "env",
            "io_counts",
            "shaper",
            "net",
            "priority",
            "keys",
            "roles",
            "tls",
            "client",
            "manifest",
            "disk",
            "store",
            "config",
            "packed",
            "journal",
            "stats",
            "logging",
            "reload",
            "budget",
            "waiters",
        ],
    ),
    (
        "node's parts",
        &["output", "relay", "chaos", "delivery", "sealing", "keeping"],
    ),
    ("link", &["link"]),
    ("node", &["node"]),
    (
        "on a node",
        &[
            "faults",
            "replay",
            "accept",
            "control",
            "telemetry",
            "quiet",
        ],
    ),
];

type Module = Vec<String>;

/// Every `.rs` file under `dir`, as (path relative to `dir` with `/`, text).
fn read_tree(dir: &Path, prefix: &str, out: &mut BTreeMap<String, String>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        if path.is_dir() {
            read_tree(&path, &format!("{prefix}{name}/"), out);
        } else if name.ends_with(".rs") {
            out.insert(
                format!("{prefix}{name}"),
                std::fs::read_to_string(&path).unwrap(),
            );
        }
    }
}

/// The module a file defines: `node/mod.rs` and `node.rs` are `node`, `node/source.rs` is
/// `node::source`, `lib.rs` is the root.
fn module_of(file: &str) -> Module {
    let mut parts: Vec<String> = file
        .trim_end_matches(".rs")
        .split('/')
        .map(String::from)
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// The text without comments (line, block and doc comments), string literals (plain, byte and
/// raw) and character literals, each left as a space: a string's braces or `crate::` are not
/// code. Lifetimes are kept.
fn strip_comments(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let starts = |i: usize, s: &str| {
        s.chars()
            .enumerate()
            .all(|(j, c)| chars.get(i + j) == Some(&c))
    };
    while i < chars.len() {
        let c = chars[i];
        let after_ident = i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
        if starts(i, "/*") {
            // Block comments nest in Rust.
            let mut depth = 0;
            while i < chars.len() {
                if starts(i, "/*") {
                    depth += 1;
                    i += 2;
                } else if starts(i, "*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if starts(i, "//") {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if (c == 'r' || starts(i, "br")) && !after_ident && {
            let r = if c == 'r' { i + 1 } else { i + 2 };
            let hashes = chars[r..].iter().take_while(|&&h| h == '#').count();
            chars.get(r + hashes) == Some(&'"')
        } {
            // A raw string: r"..." or r#"..."#, as many hashes closing as opening.
            let r = if c == 'r' { i + 1 } else { i + 2 };
            let hashes = chars[r..].iter().take_while(|&&h| h == '#').count();
            let close: String = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            i = r + hashes + 1;
            while i < chars.len() && !starts(i, &close) {
                i += 1;
            }
            i += close.chars().count();
            out.push(' ');
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push(' ');
        } else if c == '\'' {
            // A character ('x', '\n', '\u{7f}', '\'') or a lifetime ('a, 'static).
            if chars.get(i + 1) == Some(&'\\') {
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
                out.push(' ');
            } else if chars.get(i + 2) == Some(&'\'') {
                i += 3;
                out.push(' ');
            } else {
                out.push(c);
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Ident(String),
    PathSep,
    Open,
    Close,
    Comma,
    Other,
}

fn tokens(text: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(Token::Ident(chars[start..i].iter().collect()));
            continue;
        }
        out.push(match c {
            ':' if chars.get(i + 1) == Some(&':') => {
                i += 1;
                Token::PathSep
            }
            '{' => Token::Open,
            '}' => Token::Close,
            ',' => Token::Comma,
            c if c.is_whitespace() => {
                i += 1;
                continue;
            }
            _ => Token::Other,
        });
        i += 1;
    }
    out
}

/// The paths of a use tree starting at `tokens[i]` (just after a `::`), each appended to
/// `prefix`; returns them and the index after the tree.
fn tree(tokens: &[Token], mut i: usize, prefix: &[String]) -> (Vec<Vec<String>>, usize) {
    let mut path = prefix.to_vec();
    loop {
        match tokens.get(i) {
            Some(Token::Ident(name)) => {
                path.push(name.clone());
                i += 1;
                if tokens.get(i) == Some(&Token::PathSep) {
                    i += 1;
                    continue;
                }
                return (vec![path], i);
            }
            Some(Token::Open) => {
                let mut all = Vec::new();
                i += 1;
                while !matches!(tokens.get(i), Some(Token::Close) | None) {
                    let (paths, next) = tree(tokens, i, &path);
                    all.extend(paths);
                    i = next;
                    while !matches!(tokens.get(i), Some(Token::Comma | Token::Close) | None) {
                        i += 1; // `as name`, `*`
                    }
                    if tokens.get(i) == Some(&Token::Comma) {
                        i += 1;
                    }
                }
                return (all, i + 1);
            }
            _ => return (vec![path], i),
        }
    }
}

/// Every path `crate::...`, `super::...`, `self::...` the text names, and the paths of `use`
/// statements relative to the module they are in (`use child::Item;`, read as
/// `self::child::Item`). Each comes with the inline modules (`mod tests { ... }`) it is in, so
/// that a `super` inside one means the file's own module.
fn paths_named(text: &str) -> Vec<(Vec<String>, Vec<String>)> {
    let tokens = tokens(&strip_comments(text));
    let mut out = Vec::new();
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0;
    for i in 0..tokens.len() {
        match &tokens[i] {
            Token::Open => {
                depth += 1;
                if let (Some(Token::Ident(name)), Some(Token::Ident(m))) = (
                    i.checked_sub(1).map(|j| &tokens[j]),
                    i.checked_sub(2).map(|j| &tokens[j]),
                ) && m == "mod"
                {
                    inline.push((name.clone(), depth));
                }
                continue;
            }
            Token::Close => {
                if inline.last().is_some_and(|&(_, d)| d == depth) {
                    inline.pop();
                }
                depth -= 1;
                continue;
            }
            _ => {}
        }
        let Token::Ident(head) = &tokens[i] else {
            continue;
        };
        let here: Vec<String> = inline.iter().map(|(name, _)| name.clone()).collect();
        let keyword = matches!(head.as_str(), "crate" | "super" | "self");
        let starts = keyword
            && i.checked_sub(1).map(|j| &tokens[j]) != Some(&Token::PathSep)
            && tokens.get(i + 1) == Some(&Token::PathSep);
        if starts {
            for path in tree(&tokens, i + 2, std::slice::from_ref(head)).0 {
                out.push((here.clone(), path));
            }
        } else if head == "use"
            && let Some(Token::Ident(first)) = tokens.get(i + 1)
            && !matches!(first.as_str(), "crate" | "super" | "self")
        {
            // Relative to this module; a path into another crate resolves to this module
            // itself and is ignored.
            for path in tree(&tokens, i + 1, &["self".to_string()]).0 {
                out.push((here.clone(), path));
            }
        }
    }
    out
}

/// The crate root's re-exports: item name -> the module it comes from.
fn root_exports(lib: &str) -> BTreeMap<String, Module> {
    let mut out = BTreeMap::new();
    let text = strip_comments(lib);
    for statement in text.split(';') {
        let Some(rest) = statement.trim().strip_prefix("pub use ") else {
            continue;
        };
        let tokens = tokens(rest);
        for path in tree(&tokens, 0, &[]).0 {
            if let Some((name, module)) = path.split_last() {
                out.insert(name.clone(), module.to_vec());
            }
        }
    }
    out
}

/// The tier of a module, by the first part of its path; `None` for the crate root.
fn tier(module: &[String]) -> Option<usize> {
    let first = module.first()?;
    Some(
        TIERS
            .iter()
            .position(|(_, modules)| modules.contains(&first.as_str()))
            .unwrap_or_else(|| {
                panic!(
                    "{} is in no tier of TIERS: put it in the lowest tier its imports allow, here and in ARCHITECTURE.md",
                    module.join("::")
                )
            }),
    )
}

/// What is wrong with a source tree (file -> text): imports that run up a tier, and loops.
fn problems(files: &BTreeMap<String, String>) -> Vec<String> {
    let modules: BTreeMap<Module, &str> =
        files.keys().map(|f| (module_of(f), f.as_str())).collect();
    let exports = files
        .get("lib.rs")
        .map(|t| root_exports(t))
        .unwrap_or_default();
    let resolve = |path: &[String]| -> Option<Module> {
        (1..=path.len())
            .rev()
            .map(|n| path[..n].to_vec())
            .find(|m| modules.contains_key(m))
    };
    let mut problems = Vec::new();
    let mut graph: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for (file, text) in files {
        let me = module_of(file);
        let Some(my_tier) = tier(&me) else {
            continue; // lib.rs
        };
        for (inline, path) in paths_named(text) {
            // The module the path is written in: the file's, or an inline one inside it.
            let mut here: Module = me.iter().chain(&inline).cloned().collect();
            let mut base: Module = match path[0].as_str() {
                "crate" => Vec::new(),
                "self" => here,
                _ => {
                    here.pop();
                    here
                }
            };
            let mut rest = &path[1..];
            while rest.first().map(String::as_str) == Some("super") {
                base.pop();
                rest = &rest[1..];
            }
            let full: Module = base.iter().chain(rest).cloned().collect();
            let target = match resolve(&full) {
                Some(m) if !m.is_empty() => m,
                // The root: a re-export, resolved to where it comes from.
                _ => match full.first().and_then(|name| exports.get(name)) {
                    Some(module) => match resolve(module) {
                        Some(m) if !m.is_empty() => m,
                        _ => continue,
                    },
                    None => continue,
                },
            };
            if target == me {
                continue;
            }
            let their_tier = tier(&target).expect("not the root");
            if their_tier > my_tier {
                problems.push(format!(
                    "{file} ({}) imports {} ({}), a higher tier: `{}`",
                    TIERS[my_tier].0,
                    modules[&target],
                    TIERS[their_tier].0,
                    path.join("::")
                ));
            }
            graph.entry(me.clone()).or_default().insert(target);
        }
    }
    for component in loops(&graph) {
        let names: Vec<&str> = component.iter().map(|m| modules[m]).collect();
        problems.push(format!("import loop: {}", names.join(" <-> ")));
    }
    problems
}

/// The strongly connected sets of more than one module (Tarjan).
fn loops(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<Module>> {
    struct State<'a> {
        graph: &'a BTreeMap<Module, BTreeSet<Module>>,
        index: BTreeMap<Module, usize>,
        low: BTreeMap<Module, usize>,
        stack: Vec<Module>,
        on_stack: BTreeSet<Module>,
        out: Vec<Vec<Module>>,
    }
    fn visit(s: &mut State, v: &Module) {
        let i = s.index.len();
        s.index.insert(v.clone(), i);
        s.low.insert(v.clone(), i);
        s.stack.push(v.clone());
        s.on_stack.insert(v.clone());
        let next: Vec<Module> = s
            .graph
            .get(v)
            .map(|w| w.iter().cloned().collect())
            .unwrap_or_default();
        for w in &next {
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v.clone(), low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v.clone(), low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            loop {
                let w = s.stack.pop().expect("v is on the stack");
                s.on_stack.remove(&w);
                let done = &w == v;
                component.push(w);
                if done {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.out.push(component);
            }
        }
    }
    let mut state = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !state.index.contains_key(v) {
            visit(&mut state, v);
        }
    }
    state.out
}

fn daemon_src() -> BTreeMap<String, String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = BTreeMap::new();
    read_tree(&src, "", &mut files);
    files
}

#[test]
fn imports_only_go_down_and_never_round_a_loop() {
    let files = daemon_src();
    assert!(files.len() > 30, "read {} files", files.len());
    let found = problems(&files);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// Every module of `src` is in exactly one tier, and every module a tier names is there.
#[test]
fn every_module_is_in_one_tier() {
    let files = daemon_src();
    // `lib.rs`, the root, is the one file in no module.
    let found: BTreeSet<String> = files
        .keys()
        .filter_map(|f| module_of(f).first().cloned())
        .collect();
    let mut listed = BTreeSet::new();
    for (_, modules) in TIERS {
        for module in modules {
            assert!(
                listed.insert(module.to_string()),
                "{module} is in two tiers"
            );
        }
    }
    let unlisted: Vec<_> = found.difference(&listed).collect();
    let missing: Vec<_> = listed.difference(&found).collect();
    assert!(
        unlisted.is_empty(),
        "in no tier of TIERS: {unlisted:?}; put each in the lowest tier its imports allow, here and in ARCHITECTURE.md"
    );
    assert!(
        missing.is_empty(),
        "TIERS names modules src does not have: {missing:?}"
    );
}

/// The checker itself: it finds an import up a tier (in a `use` group, inline, through a root
/// re-export, through `super::super`), a loop of two and a loop of three, a loop between a
/// module's folder and its files, and accepts imports that go down; strings, characters and
/// comments are not code.
#[test]
fn the_checker_catches_what_it_must() {
    let tree = |files: &[(&str, &str)]| -> BTreeMap<String, String> {
        files
            .iter()
            .map(|(f, t)| (f.to_string(), t.to_string()))
            .collect()
    };
    let lib = "pub mod env; pub mod output; pub mod link; pub mod node;\n\
               pub use link::LinkOwner;\npub use env::{now_us, Instant};";
    let clean = tree(&[
        ("lib.rs", lib),
        // Inside `tests`, `super::LinkOwner` is env's own item: read as the root's, it would
        // be link's, a tier up. A brace in a string or a character must not end `tests`.
        (
            "env.rs",
            r#"pub fn now_us() {}
mod tests { fn g() { let _ = ("}", '}'); } use super::*; use super::LinkOwner; use crate::env::now_us; }"#,
        ),
        (
            "output.rs",
            r##"use crate::env::{now_us, self};
// crate::node::Node
fn f<'a>(_: &'a str) { let _ = ("crate::link \" {", '{', '\'', b'}', r#"}" crate::node"#); }
mod tests { use super::now_us; }"##,
        ),
        (
            "link.rs",
            "use crate::output; use crate::now_us; /* crate::node */",
        ),
        ("node/mod.rs", "mod source;\nuse crate::link::LinkOwner;"),
        (
            "node/source.rs",
            "use super::Node; use crate::output::Output;",
        ),
    ]);
    assert_eq!(problems(&clean), Vec::<String>::new());
    let cases: [(&str, &str, &str); 5] = [
        (
            "env.rs",
            "use crate::{output, link::{self, LinkOwner}};",
            "link.rs",
        ),
        ("output.rs", "fn f() { crate::node::go() }", "node/mod.rs"),
        ("output.rs", "use crate::LinkOwner;", "link.rs"),
        (
            "env.rs",
            "mod tests { use super::super::link::Link; }",
            "link.rs",
        ),
        (
            "output.rs",
            "fn f() { let _ = '}'; let _ = r#\"\"}\"#; crate::link::go() }",
            "link.rs",
        ),
    ];
    for (file, text, target) in cases {
        let mut bad = clean.clone();
        bad.insert(file.to_string(), text.to_string());
        let found = problems(&bad);
        assert!(
            found
                .iter()
                .any(|p| p.contains("a higher tier") && p.contains(target)),
            "{text}: {found:?}"
        );
    }
    let two = tree(&[
        ("lib.rs", lib),
        ("env.rs", "use crate::shaper::X;"),
        ("shaper.rs", "use crate::env::Y;"),
    ]);
    assert_eq!(problems(&two), ["import loop: env.rs <-> shaper.rs"]);
    // A folder's `mod.rs` using its file, and the file its parent's items.
    let parent = tree(&[
        ("lib.rs", lib),
        (
            "node/mod.rs",
            "mod source;\npub use source::{Keep, Refusal as R};",
        ),
        ("node/source.rs", "use super::Node;"),
    ]);
    assert_eq!(
        problems(&parent),
        ["import loop: node/mod.rs <-> node/source.rs"]
    );
    let three = tree(&[
        ("lib.rs", lib),
        ("node/a.rs", "use super::b::X;"),
        ("node/b.rs", "use super::c::X;"),
        ("node/c.rs", "fn f() { crate::node::a::go() }"),
    ]);
    assert_eq!(
        problems(&three),
        ["import loop: node/a.rs <-> node/b.rs <-> node/c.rs"]
    );
}
