//! The import checker the layering tests share (`protocol/tests/layers.rs`,
//! `daemon/tests/layers.rs`, `cluster/tests/rooms.rs`, and the CLI's commands in
//! `src/commands/mod.rs`): which module of a crate may import which. The compiler enforces no
//! order between the modules of one crate, so these tests do.
//!
//! A crate's modules are put in rooms, and its rooms in layers, bottom first ([`Layers`]). A
//! module may import a module of its own room, and any module of a lower layer; not one of a
//! higher layer, nor one of another room of its own layer. With [`Layers::loops`], no two files
//! may import each other either, directly or round a longer loop (a folder's `mod.rs` and its
//! files included).
//!
//! A file *imports* a module when it names a path `crate::...`, `super::...` or `self::...` (in a
//! `use`, nested `use` groups included, or inline), or a relative `use child::...`, that resolves
//! to that module's file: the longest prefix of the path that is a module of the crate. The crate
//! root's re-exports resolve to the module they re-export. Comments, strings and characters do
//! not count. The root (`lib.rs`, or a binary's `main.rs`) declares the modules, so it is exempt:
//! it is the top.
//!
//! It reads the files as text, with no parser: a path written through a `use` alias of another
//! crate's module, or made by a macro, is not seen.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// A module path, `["paths", "cube"]` for `paths::cube`; empty for the root.
type Module = Vec<String>;

/// A room: a name, and the modules in it, each a path (`"node"`, `"commands::bench"`) that takes
/// in the modules below it. A module lies in the room that names the longest prefix of its path.
#[derive(Clone, Copy, Debug)]
pub struct Room<'a> {
    pub name: &'a str,
    pub modules: &'a [&'a str],
}

/// How a crate's modules may import each other.
#[derive(Clone, Copy, Debug)]
pub struct Layers<'a> {
    /// What a layer is called in the messages (`layer`, `tier`).
    pub noun: &'a str,
    /// The layers, bottom first, each the rooms in it.
    pub layers: &'a [&'a [Room<'a>]],
    /// Whether an import loop between files is a problem too.
    pub loops: bool,
}

impl Layers<'_> {
    /// The layer and room of `module`; `None` if no room names a prefix of its path.
    fn place(&self, module: &[String]) -> Option<(usize, &Room<'_>)> {
        let mut best: Option<(usize, usize, &Room<'_>)> = None;
        for (layer, rooms) in self.layers.iter().enumerate() {
            for room in rooms.iter() {
                for named in room.modules {
                    let named: Vec<&str> = named.split("::").collect();
                    let prefix = named.len() <= module.len()
                        && named.iter().zip(module).all(|(a, b)| *a == b.as_str());
                    if prefix && best.is_none_or(|(_, len, _)| named.len() > len) {
                        best = Some((layer, named.len(), room));
                    }
                }
            }
        }
        best.map(|(layer, _, room)| (layer, room))
    }

    /// What is wrong with a source tree (file -> text, as [`read_src`] gives it): a module in no
    /// room, an import up a layer or into another room of its own layer, and (with
    /// [`Layers::loops`]) a loop.
    pub fn problems(&self, files: &BTreeMap<String, String>) -> Vec<String> {
        let modules: BTreeMap<Module, &str> =
            files.keys().map(|f| (module_of(f), f.as_str())).collect();
        let exports = ["lib.rs", "main.rs"]
            .iter()
            .find_map(|root| files.get(*root))
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
            if me.is_empty() {
                continue; // the root
            }
            let Some((my_layer, my_room)) = self.place(&me) else {
                problems.push(format!("{file} is in no room of any {}", self.noun));
                continue;
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
                // A module in no room is reported as such above.
                if let Some((their_layer, their_room)) = self.place(&target) {
                    let wrong = if their_layer > my_layer {
                        Some(format!("a higher {}", self.noun))
                    } else if their_layer == my_layer && their_room.name != my_room.name {
                        Some(format!("another room of its {}", self.noun))
                    } else {
                        None
                    };
                    if let Some(wrong) = wrong {
                        problems.push(format!(
                            "{file} ({}) imports {} ({}), {wrong}: `{}`",
                            my_room.name,
                            modules[&target],
                            their_room.name,
                            path.join("::")
                        ));
                    }
                }
                graph.entry(me.clone()).or_default().insert(target);
            }
        }
        if self.loops {
            for component in loops(&graph) {
                let names: Vec<&str> = component.iter().map(|m| modules[m]).collect();
                problems.push(format!("import loop: {}", names.join(" <-> ")));
            }
        }
        problems
    }

    /// What is wrong with the rooms themselves, for the tree `files`: a module path a room names
    /// that no file of the tree is or lies under, and one named twice.
    pub fn unused(&self, files: &BTreeMap<String, String>) -> Vec<String> {
        let modules: BTreeSet<Module> = files.keys().map(|f| module_of(f)).collect();
        let mut named = BTreeSet::new();
        let mut problems = Vec::new();
        for rooms in self.layers {
            for room in rooms.iter() {
                for &module in room.modules {
                    if !named.insert(module) {
                        problems.push(format!("{module} is named twice"));
                    }
                    let path: Vec<&str> = module.split("::").collect();
                    let there = modules.iter().any(|m| {
                        m.len() >= path.len() && path.iter().zip(m).all(|(a, b)| *a == b.as_str())
                    });
                    if !there {
                        problems.push(format!(
                            "room {} names {module}, which src does not have",
                            room.name
                        ));
                    }
                }
            }
        }
        problems
    }
}

/// Every `.rs` file under `dir` (a crate's `src`), as (path relative to `dir` with `/`, text).
pub fn read_src(dir: &Path) -> BTreeMap<String, String> {
    let mut files = BTreeMap::new();
    read_tree(dir, "", &mut files);
    files
}

fn read_tree(dir: &Path, prefix: &str, out: &mut BTreeMap<String, String>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
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
/// `node::source`, `lib.rs` and a binary's `main.rs` are the root.
pub fn module_of(file: &str) -> Vec<String> {
    let mut parts: Vec<String> = file
        .trim_end_matches(".rs")
        .split('/')
        .map(String::from)
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib"))
        || parts == ["main".to_string()]
    {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> BTreeMap<String, String> {
        files
            .iter()
            .map(|(f, t)| (f.to_string(), t.to_string()))
            .collect()
    }

    /// `env` and `output` at the bottom, `link` above, `node` (a folder) on top.
    const TIERS: Layers = Layers {
        noun: "tier",
        layers: &[
            &[Room {
                name: "ground",
                modules: &["env", "shaper", "output"],
            }],
            &[Room {
                name: "link",
                modules: &["link"],
            }],
            &[Room {
                name: "node",
                modules: &["node"],
            }],
        ],
        loops: true,
    };

    const LIB: &str = "pub mod env; pub mod output; pub mod link; pub mod node;\n\
                       pub use link::LinkOwner;\npub use env::{now_us, Instant};";

    fn clean() -> BTreeMap<String, String> {
        tree(&[
            ("lib.rs", LIB),
            // Inside `tests`, `super::LinkOwner` is env's own item: read as the root's, it
            // would be link's, a tier up. A brace in a string or a character must not end
            // `tests`.
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
            ("shaper.rs", "use super::env::now_us;"),
            (
                "link.rs",
                "use crate::output; use crate::now_us; /* crate::node */",
            ),
            ("node/mod.rs", "mod source;\nuse crate::link::LinkOwner;"),
            (
                "node/source.rs",
                "use super::Node; use crate::output::Output;",
            ),
        ])
    }

    #[test]
    fn imports_that_go_down_pass() {
        assert_eq!(TIERS.problems(&clean()), Vec::<String>::new());
        assert_eq!(TIERS.unused(&clean()), Vec::<String>::new());
    }

    /// An import up a tier: in a `use` group, inline, through a root re-export, through
    /// `super::super`, after a character and a raw string holding braces.
    #[test]
    fn an_import_up_a_layer_is_caught() {
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
            let mut bad = clean();
            bad.insert(file.to_string(), text.to_string());
            let found = TIERS.problems(&bad);
            assert!(
                found
                    .iter()
                    .any(|p| p.contains("a higher tier") && p.contains(target)),
                "{text}: {found:?}"
            );
        }
    }

    /// Rooms of one layer do not import each other; `commands::args` is a room of its own
    /// below the commands (the longest prefix a room names wins).
    #[test]
    fn an_import_into_a_room_beside_is_caught() {
        let commands = Layers {
            noun: "layer",
            layers: &[
                &[Room {
                    name: "shared",
                    modules: &["commands", "commands::args"],
                }],
                &[
                    Room {
                        name: "bench",
                        modules: &["commands::bench"],
                    },
                    Room {
                        name: "cluster",
                        modules: &["commands::cluster"],
                    },
                ],
            ],
            loops: false,
        };
        let files = |bench: &str| {
            tree(&[
                ("main.rs", "mod commands;"),
                (
                    "commands/mod.rs",
                    "pub mod args; pub mod bench; pub mod cluster;",
                ),
                ("commands/args.rs", "pub struct DirArg;"),
                ("commands/bench.rs", bench),
                (
                    "commands/cluster/mod.rs",
                    "mod up; use super::args::DirArg;",
                ),
                ("commands/cluster/up.rs", "use super::super::args::DirArg;"),
            ])
        };
        assert_eq!(
            commands.problems(&files(
                "use super::args::DirArg; use crate::commands::runtime;"
            )),
            Vec::<String>::new()
        );
        for (bench, target) in [
            ("use super::cluster::up;", "commands/cluster/up.rs"),
            (
                "use crate::commands::cluster::{self, DirArg};",
                "commands/cluster/mod.rs",
            ),
            (
                "fn f() { super::cluster::up::start() }",
                "commands/cluster/up.rs",
            ),
        ] {
            let found = commands.problems(&files(bench));
            assert!(
                !found.is_empty()
                    && found.iter().all(|p| p.starts_with(&format!(
                        "commands/bench.rs (bench) imports {target} (cluster), another room of its layer: `"
                    ))),
                "{bench}: {found:?}"
            );
        }
        // The shared room may not import a command either: it is a layer down.
        let mut up = files("");
        up.insert("commands/args.rs".into(), "use super::bench::X;".into());
        assert_eq!(
            commands.problems(&up),
            [
                "commands/args.rs (shared) imports commands/bench.rs (bench), a higher layer: `super::bench::X`"
            ]
        );
    }

    #[test]
    fn a_loop_is_caught() {
        let two = tree(&[
            ("lib.rs", LIB),
            ("env.rs", "use crate::shaper::X;"),
            ("shaper.rs", "use crate::env::Y;"),
        ]);
        assert_eq!(TIERS.problems(&two), ["import loop: env.rs <-> shaper.rs"]);
        // A folder's `mod.rs` using its file, and the file its parent's items.
        let parent = tree(&[
            ("lib.rs", LIB),
            (
                "node/mod.rs",
                "mod source;\npub use source::{Keep, Refusal as R};\nuse std::fmt;",
            ),
            ("node/source.rs", "use super::Node;"),
        ]);
        assert_eq!(
            TIERS.problems(&parent),
            ["import loop: node/mod.rs <-> node/source.rs"]
        );
        let three = tree(&[
            ("lib.rs", LIB),
            ("node/a.rs", "use super::b::X;"),
            ("node/b.rs", "use super::c::X;"),
            ("node/c.rs", "fn f() { crate::node::a::go() }"),
        ]);
        assert_eq!(
            TIERS.problems(&three),
            ["import loop: node/a.rs <-> node/b.rs <-> node/c.rs"]
        );
        // Without `loops`, a loop inside a room is allowed.
        let rooms_only = Layers {
            loops: false,
            ..TIERS
        };
        assert_eq!(rooms_only.problems(&three), Vec::<String>::new());
    }

    #[test]
    fn a_module_in_no_room_and_a_room_of_no_module_are_caught() {
        let mut files = clean();
        files.insert("stray.rs".into(), String::new());
        assert_eq!(
            TIERS.problems(&files),
            ["stray.rs is in no room of any tier"]
        );
        files.remove("link.rs");
        assert_eq!(
            TIERS.unused(&files),
            ["room link names link, which src does not have"]
        );
    }
}
