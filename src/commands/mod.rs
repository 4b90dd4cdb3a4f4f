//! The subcommands, and the error convention they share: bad input is a [`UsageError`] and
//! exits 2; anything else exits 1.

pub mod args;
pub mod bench;
pub mod chaos;
pub mod check;
pub mod cluster;
pub mod daemon;
pub mod demo;
pub mod monitor;
pub mod paths;
pub mod ping;
pub mod recv;
pub mod send;
pub mod show;
pub mod sim;
pub mod status;
pub mod study;
pub mod testbed;
pub mod topology;

use cuberoute_cluster::launch::interrupted::Interrupted;
use cuberoute_cluster::launch::owned::INTERRUPTED_STATUS;
use cuberoute_cluster::launch::start::Refused;
use cuberoute_protocol::{NodeId, Topology};

/// Input the user must fix: a malformed topology or id, a node out of range, a bad option.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// 2 for a [`UsageError`] anywhere in the chain (or a start the cluster crate refused for what
/// was asked, [`Refused`]), 130 for a start interrupted ([`Interrupted`]), else 1.
pub fn exit_code(err: &anyhow::Error) -> u8 {
    if err
        .chain()
        .any(|cause| cause.is::<UsageError>() || cause.is::<Refused>())
    {
        2
    } else if err.chain().any(|cause| cause.is::<Interrupted>()) {
        INTERRUPTED_STATUS as u8
    } else {
        1
    }
}

/// With `--check`, a run whose verdict is invalid fails (exit 1) with the verdict's line, after
/// its report is printed; a valid one, or a run without `--check`, succeeds.
pub fn check_verdict(
    verdict: &cuberoute_cluster::chaos::report::Verdict,
    check: bool,
) -> anyhow::Result<()> {
    if check && !verdict.valid {
        anyhow::bail!("{}", verdict.line());
    }
    Ok(())
}

pub fn usage(message: impl Into<String>) -> anyhow::Error {
    UsageError(message.into()).into()
}

/// `--life` as given, or the default; a usage error when it is 0 or beyond the longest a
/// source keeps a set.
pub fn life(given: Option<std::time::Duration>) -> anyhow::Result<std::time::Duration> {
    use cuberoute_cluster::ops::traffic::{DEFAULT_LIFE, MAX_LIFE};
    let life = given.unwrap_or(DEFAULT_LIFE);
    if life.is_zero() || life > MAX_LIFE {
        return Err(usage(format!(
            "--life {}: must be above 0 and at most {} (every store remembers a delivered set \
             that long, so that no resend is taken twice)",
            humantime::format_duration(life),
            humantime::format_duration(MAX_LIFE)
        )));
    }
    Ok(life)
}

/// Read a topology name, as a usage error when malformed.
pub fn parse_topology(text: &str) -> anyhow::Result<Topology> {
    text.parse().map_err(|e| usage(format!("{e}")))
}

/// Read a node id of `topology`, as a usage error when malformed or out of range.
pub fn parse_node(topology: Topology, text: &str) -> anyhow::Result<NodeId> {
    topology.parse_node(text).map_err(|e| usage(format!("{e}")))
}

/// Read a comma-separated set of node ids of `topology` given to `option` (commas inside RDN's
/// parenthesised triples do not separate): no empty items, no duplicates.
pub fn parse_set(topology: Topology, text: &str, option: &str) -> anyhow::Result<Vec<NodeId>> {
    let mut items: Vec<&str> = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&text[start..]);
    let mut set = Vec::new();
    for item in items {
        if item.trim().is_empty() {
            return Err(usage(format!(
                "{option} {text:?}: empty item (write ids separated by single commas)"
            )));
        }
        let v = parse_node(topology, item)?;
        if set.contains(&v) {
            return Err(usage(format!("{option}: node {} is given twice", v.0)));
        }
        set.push(v);
    }
    Ok(set)
}

/// The async runtime of the client commands.
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?)
}

#[cfg(test)]
mod tests {
    use cuberoute_layering::{Layers, Room, read_src};
    use std::collections::BTreeSet;
    use std::path::Path;

    /// No command imports another: each module of `commands/` but `args` (a file or a folder)
    /// is a room of its own, above what they share (`commands/mod.rs`, `args`, `print`,
    /// `svg`), which imports no command. A command shares code with another through those, or
    /// through the cluster crate.
    #[test]
    fn no_command_imports_another() {
        let files = read_src(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
        let commands: BTreeSet<String> = files
            .keys()
            .filter_map(|f| f.strip_prefix("commands/"))
            .map(|rest| rest.split('/').next().unwrap().trim_end_matches(".rs"))
            .filter(|m| !matches!(*m, "mod" | "args"))
            .map(|m| format!("commands::{m}"))
            .collect();
        assert!(commands.len() > 10, "{commands:?}");
        let paths: Vec<[&str; 1]> = commands.iter().map(|m| [m.as_str()]).collect();
        let rooms: Vec<Room> = paths
            .iter()
            .map(|path| Room {
                name: &path[0]["commands::".len()..],
                modules: path,
            })
            .collect();
        let layers = Layers {
            noun: "layer",
            layers: &[
                &[Room {
                    name: "shared",
                    modules: &["commands", "commands::args", "print", "svg"],
                }],
                &rooms,
            ],
            loops: false,
        };
        let found = layers.problems(&files);
        assert!(found.is_empty(), "{}", found.join("\n"));
        assert_eq!(layers.unused(&files), Vec::<String>::new());
    }
}
