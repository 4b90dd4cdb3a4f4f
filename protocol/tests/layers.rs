//! The layers of `protocol/src`, checked: every file lies in one of the folders `topology`,
//! `paths`, `routing`, `delivery`, `seal` and `wire`, in that order from the bottom, and imports
//! only from its own layer and the layers below; and no two files import each other, directly or
//! round a longer loop. The compiler enforces neither (the layers are folders of one crate), so
//! this test does.
//!
//! A file *imports* a module when it names a path `crate::...`, `super::...` or `self::...` (in a
//! `use`, nested `use` groups included, or inline) that resolves to that module's file: the
//! longest prefix of the path that is a module of the crate. The crate root's re-exports
//! (`crate::NodeId`, `crate::Header`, ...) resolve to the module they re-export. Comments do not
//! count. `lib.rs` declares the layers and re-exports from all of them, so it is exempt.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The layers, bottom first.
const LAYERS: [&str; 6] = ["topology", "paths", "routing", "delivery", "seal", "wire"];

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

/// The module a file defines: `paths/cube/mod.rs` and `paths/cube.rs` are `paths::cube`,
/// `lib.rs` is the root.
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

/// The text without comments (line, block and doc comments). String literals are kept, except
/// that `//` inside one is read as a comment: no string of this crate holds a module path after
/// a `//`.
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("/*") {
            rest = after.find("*/").map_or("", |end| &after[end + 2..]);
        } else if rest.starts_with("//") {
            rest = rest.find('\n').map_or("", |end| &rest[end..]);
        } else {
            let c = rest.chars().next().unwrap();
            out.push(c);
            rest = &rest[c.len_utf8()..];
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

/// The layer of a module, by its first folder; `None` for the crate root.
fn layer(module: &[String]) -> Option<usize> {
    let first = module.first()?;
    Some(
        LAYERS
            .iter()
            .position(|l| l == first)
            .unwrap_or_else(|| panic!("{} is in no layer: {LAYERS:?}", module.join("::"))),
    )
}

/// What is wrong with a source tree (file -> text): imports that run up a layer, and loops.
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
        let Some(my_layer) = layer(&me) else {
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
            let their_layer = layer(&target).expect("not the root");
            if their_layer > my_layer {
                problems.push(format!(
                    "{file} ({}) imports {} ({}), a higher layer: `{}`",
                    LAYERS[my_layer],
                    modules[&target],
                    LAYERS[their_layer],
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

#[test]
fn imports_only_go_down_and_never_round_a_loop() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = BTreeMap::new();
    read_tree(&src, "", &mut files);
    assert!(files.len() > 40, "read {} files", files.len());
    let found = problems(&files);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn every_folder_of_src_is_a_layer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut folders: Vec<String> = std::fs::read_dir(&src)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .map(|p| p.file_name().unwrap().to_str().unwrap().to_string())
        .collect();
    folders.sort();
    let mut layers = LAYERS.map(String::from).to_vec();
    layers.sort();
    assert_eq!(folders, layers);
    let loose: Vec<String> = std::fs::read_dir(&src)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| p.file_name().unwrap().to_str().unwrap().to_string())
        .collect();
    assert_eq!(loose, ["lib.rs"], "every file but lib.rs lies in a layer");
}

/// The checker itself: it finds an import up a layer (in a `use` group, inline, through a
/// root re-export, through `super::super`), a loop of two and a loop of three, and accepts
/// imports that go down.
#[test]
fn the_checker_catches_what_it_must() {
    let tree = |files: &[(&str, &str)]| -> BTreeMap<String, String> {
        files
            .iter()
            .map(|(f, t)| (f.to_string(), t.to_string()))
            .collect()
    };
    let lib = "pub mod topology; pub mod paths; pub mod routing;\n\
               pub use routing::header::Header;\npub use topology::node::{NodeId, Other};";
    let clean = tree(&[
        ("lib.rs", lib),
        ("topology/mod.rs", "pub mod node;\nuse crate::NodeId;"),
        (
            "topology/node.rs",
            "pub struct NodeId;\nmod tests { use super::*; use crate::topology::node::NodeId; }",
        ),
        (
            "paths/mod.rs",
            "use crate::topology::{node::NodeId, self};\n// crate::routing::header",
        ),
        (
            "routing/header.rs",
            "use crate::paths; use crate::NodeId; /* crate::wire */",
        ),
    ]);
    assert_eq!(problems(&clean), Vec::<String>::new());
    let cases: [(&str, &str, &str); 4] = [
        (
            "topology/node.rs",
            "use crate::{paths, routing::header::{self, Header}};",
            "routing/header.rs",
        ),
        (
            "topology/node.rs",
            "fn f() { crate::paths::go() }",
            "paths/mod.rs",
        ),
        ("paths/mod.rs", "use crate::Header;", "routing/header.rs"),
        (
            "topology/node.rs",
            "use super::super::routing::header;",
            "routing/header.rs",
        ),
    ];
    for (file, text, target) in cases {
        let mut bad = clean.clone();
        bad.insert(file.to_string(), text.to_string());
        let found = problems(&bad);
        assert!(
            found
                .iter()
                .any(|p| p.contains("a higher layer") && p.contains(target)),
            "{text}: {found:?}"
        );
    }
    let two = tree(&[
        ("lib.rs", lib),
        ("topology/a.rs", "use super::b::X;"),
        ("topology/b.rs", "use crate::topology::a::Y;"),
    ]);
    assert_eq!(
        problems(&two),
        ["import loop: topology/a.rs <-> topology/b.rs"]
    );
    // A parent's relative `use` of its child, and the child using its parent's items.
    let parent = tree(&[
        ("lib.rs", lib),
        (
            "paths/mod.rs",
            "pub mod a;\npub use a::{X, Y as Z};\nuse std::fmt;",
        ),
        ("paths/a.rs", "use super::Item;"),
    ]);
    assert_eq!(
        problems(&parent),
        ["import loop: paths/mod.rs <-> paths/a.rs"]
    );
    let three = tree(&[
        ("lib.rs", lib),
        ("paths/a.rs", "use super::b::X;"),
        ("paths/b.rs", "use super::c::X;"),
        ("paths/c.rs", "fn f() { crate::paths::a::go() }"),
    ]);
    assert_eq!(
        problems(&three),
        ["import loop: paths/a.rs <-> paths/b.rs <-> paths/c.rs"]
    );
}
