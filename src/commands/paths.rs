//! `cuberoute paths <TOPO> <FROM> <TO> [--json] [--svg FILE]`, `--all-pairs --json`, and the
//! other instances: `--to-set` (node-to-set; with `--avoid` fault-tolerant), `--from-set
//! --to-set` (set-to-set) and `--constraint I` (the bit-constrained container). This module
//! parses the instance, asks the algorithm table of the protocol crate
//! (`cuberoute_protocol::paths::table`) to answer it, and prints: which algorithm answers which
//! instance, and its bound, are the table's.
//!
//! JSON is one line `{"topology","from","to","distance","k","paths"}` with integer ids, and:
//! - `"to"` a list (the destinations, in the order given) for node-to-set and set-to-set, and
//!   `"from"` a list for set-to-set;
//! - `"distance"` a list aligned with `"paths"` for node-to-set and set-to-set: the distance
//!   between the two ends of each path (for node-to-set, to each destination in `"to"` order; for
//!   set-to-set, from each source to the destination it was given); a number otherwise;
//! - `"k"` the number of paths;
//! - `"avoid"` (the faulty nodes) when `--avoid` is given, `"constraint"` (I) for the container;
//! - `"construction"` only when the paper's construction did not answer (its fallback).
//!
//! `paths[i]` starts at `from` (or `from[i]`) and, for node-to-set, ends at `to[i]`.

use anyhow::Context;
use cuberoute_protocol::paths::optimum;
use cuberoute_protocol::paths::table::{self, Algorithm};
use cuberoute_protocol::paths::{Instance, Kind, Path, PathError, PathSet, PathSystem};
use cuberoute_protocol::{NodeId, Topology};
use serde::Serialize;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

/// `--all-pairs` refuses topologies above this many nodes (16.7 million ordered pairs).
const ALL_PAIRS_MAX_NODES: u64 = 1 << 12;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// `q:N`, `eh:S,T`, `hhc:M`, `mc:K,M` or `rdn:BASE,K`.
    topology: String,
    /// Source node: decimal, `0b...` binary, dotted binary as `topology` prints it, or for RDN
    /// the paper's nested triple `(b,x,y)`.
    #[arg(required_unless_present_any = ["all_pairs", "from_set"])]
    from: Option<String>,
    /// Destination node, written like FROM.
    #[arg(required_unless_present_any = ["all_pairs", "to_set"])]
    to: Option<String>,
    /// Disjoint paths from FROM to each of these nodes (node-to-set: Cube-N2S on q:N, HHC-iN2S
    /// on hhc:M, MC-N2S on mc:K,M, RDN N2S on rdn:BASE,K). Comma-separated ids.
    #[arg(long, value_name = "D1,D2,...", conflicts_with_all = ["to", "all_pairs", "svg"])]
    to_set: Option<String>,
    /// With --to-set instead of FROM, set-to-set disjoint paths (Cube-S2S on q:N, HHC-S2S on
    /// hhc:M): each source reaches a different destination, the algorithm chooses which.
    #[arg(
        long,
        value_name = "S1,S2,...",
        requires = "to_set",
        conflicts_with = "from"
    )]
    from_set: Option<String>,
    /// Faulty nodes the paths must avoid (Cube-XFTN2S on q:N): to each node of --to-set, or,
    /// with one destination TO, one path to it, as `send --avoid` sends.
    #[arg(
        long,
        value_name = "F1,F2,...",
        conflicts_with_all = ["from_set", "all_pairs", "constraint"]
    )]
    avoid: Option<String>,
    /// Keep every node of every path at weight I or I+1 (HC-CONTAINER on q:N, bit constraint
    /// gamma_I).
    #[arg(long, value_name = "I", conflicts_with_all = ["to_set", "all_pairs"])]
    constraint: Option<String>,
    /// The algorithm with this id instead of the topology's default for the instance: on hhc:M
    /// with --to-set, `n2s` (HHC-N2S) instead of `in2s` (HHC-iN2S). A wrong id lists the ids
    /// that answer.
    #[arg(long, value_name = "ID")]
    algorithm: Option<String>,
    /// One JSON line: {"topology","from","to","distance","k","paths"} with integer ids.
    #[arg(long)]
    json: bool,
    /// Every ordered pair, one JSON line each, streamed (requires --json).
    #[arg(long, conflicts_with_all = ["from", "to", "svg"], requires = "json")]
    all_pairs: bool,
    /// Draw the topology (at most 64 nodes) with the paths in distinct colours.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let topology = super::parse_topology(&args.topology)?;
    let algorithm = args.algorithm.as_deref();
    if args.all_pairs {
        return all_pairs(topology, algorithm);
    }
    let query = Query::parse(topology, &args)?;
    if args.svg.is_some() && topology.node_count() > crate::svg::MAX_NODES {
        return Err(super::usage(format!(
            "--svg draws at most {} nodes; {topology} has {}",
            crate::svg::MAX_NODES,
            topology.node_count()
        )));
    }
    let instance = query.instance();
    let (algorithm, system) = table::solve(topology, &instance, algorithm).map_err(refused)?;
    let answer = Answer {
        topology,
        query: &query,
        algorithm,
        bound: (algorithm.bound)(topology, &instance),
        system,
    };
    if let Some(file) = &args.svg {
        let set = PathSet {
            topology,
            src: query.from[0],
            dst: query.to[0],
            paths: answer.system.paths.clone(),
        };
        std::fs::write(file, crate::svg::render(&set))
            .with_context(|| format!("writing {}", file.display()))?;
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if args.json {
        answer.write_json(&mut out)?;
    } else {
        answer.write_text(&mut out)?;
        if let Some(file) = &args.svg {
            writeln!(out, "drawing written to {}", file.display())?;
        }
    }
    Ok(())
}

/// A refusal of the table is the user's to fix (exit 2), except an internal error (exit 1).
fn refused(err: PathError) -> anyhow::Error {
    match err {
        PathError::UnknownAlgorithm { .. } => super::usage(format!("--algorithm {err}")),
        err if err.is_usage() => super::usage(err.to_string()),
        err => anyhow::anyhow!(err),
    }
}

/// The instance the user asked for, parsed.
struct Query {
    kind: Kind,
    from: Vec<NodeId>,
    to: Vec<NodeId>,
    avoid: Option<Vec<NodeId>>,
    constraint: Option<u32>,
}

impl Query {
    fn parse(topology: Topology, args: &Args) -> anyhow::Result<Query> {
        let node = |text: &Option<String>, what: &str| match text {
            Some(text) => super::parse_node(topology, text),
            None => Err(super::usage(what.to_string())),
        };
        let set = |text: &Option<String>, option: &str| {
            super::parse_set(topology, text.as_deref().unwrap_or_default(), option)
        };
        if let Some(i) = &args.constraint {
            let i: u32 = i.trim().parse().map_err(|_| {
                super::usage(format!(
                    "--constraint {i:?}: expected a weight I, 0 <= I < N"
                ))
            })?;
            let from = node(&args.from, "--constraint needs FROM and TO")?;
            let to = node(&args.to, "--constraint needs FROM and TO")?;
            return Ok(Query {
                kind: Kind::ConstrainedNodeToNode,
                from: vec![from],
                to: vec![to],
                avoid: None,
                constraint: Some(i),
            });
        }
        if args.from_set.is_some() {
            return Ok(Query {
                kind: Kind::SetToSet,
                from: set(&args.from_set, "--from-set")?,
                to: set(&args.to_set, "--to-set")?,
                avoid: None,
                constraint: None,
            });
        }
        if args.to_set.is_some() {
            let from = node(
                &args.from,
                "--to-set needs FROM (or --from-set for set-to-set)",
            )?;
            let to = set(&args.to_set, "--to-set")?;
            let avoid = match &args.avoid {
                Some(_) => Some(set(&args.avoid, "--avoid")?),
                None => None,
            };
            return Ok(Query {
                kind: if avoid.is_some() {
                    Kind::FaultTolerantNodeToSet
                } else {
                    Kind::NodeToSet
                },
                from: vec![from],
                to,
                avoid,
                constraint: None,
            });
        }
        let from = node(&args.from, "FROM and TO are required")?;
        let to = node(&args.to, "FROM and TO are required")?;
        if from == to {
            return Err(super::usage(format!(
                "FROM and TO are the same node {}: there are no paths to route over",
                crate::print::node(topology, from)
            )));
        }
        if args.avoid.is_some() {
            // As `send --avoid` to one destination: the fault-tolerant node-to-set with one.
            return Ok(Query {
                kind: Kind::FaultTolerantNodeToSet,
                from: vec![from],
                to: vec![to],
                avoid: Some(set(&args.avoid, "--avoid")?),
                constraint: None,
            });
        }
        Ok(Query {
            kind: Kind::NodeToNode,
            from: vec![from],
            to: vec![to],
            avoid: None,
            constraint: None,
        })
    }

    fn instance(&self) -> Instance<'_> {
        let (s, d) = (self.from[0], self.to[0]);
        match self.kind {
            Kind::NodeToNode => Instance::NodeToNode { s, d },
            Kind::NodeToSet => Instance::NodeToSet { s, dests: &self.to },
            Kind::FaultTolerantNodeToSet => Instance::FaultTolerantNodeToSet {
                s,
                dests: &self.to,
                faults: self.avoid.as_deref().unwrap_or_default(),
            },
            Kind::SetToSet => Instance::SetToSet {
                sources: &self.from,
                dests: &self.to,
            },
            Kind::ConstrainedNodeToNode => Instance::ConstrainedNodeToNode {
                s,
                d,
                i: self.constraint.unwrap_or_default(),
            },
        }
    }

    /// Whether FROM, resp. TO, is one node (else a set, printed as a list).
    fn single(&self) -> (bool, bool) {
        match self.kind {
            Kind::NodeToNode | Kind::ConstrainedNodeToNode => (true, true),
            Kind::NodeToSet | Kind::FaultTolerantNodeToSet => (true, false),
            Kind::SetToSet => (false, false),
        }
    }
}

/// An answer, ready to print.
struct Answer<'a> {
    topology: Topology,
    query: &'a Query,
    algorithm: &'static Algorithm,
    bound: usize,
    system: PathSystem,
}

/// A node or a list of them, a distance or a list of them, as the JSON schema has it.
#[derive(Serialize)]
#[serde(untagged)]
enum OneOrList<T> {
    One(T),
    List(Vec<T>),
}

impl<T: Copy> OneOrList<T> {
    fn of(single: bool, v: &[T]) -> OneOrList<T> {
        if single {
            OneOrList::One(v[0])
        } else {
            OneOrList::List(v.to_vec())
        }
    }
}

/// The JSON line, keys in the documented order.
#[derive(Serialize)]
struct Json<'a> {
    topology: Topology,
    from: OneOrList<NodeId>,
    to: OneOrList<NodeId>,
    distance: OneOrList<u32>,
    k: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    avoid: Option<&'a [NodeId]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    constraint: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    construction: Option<String>,
    paths: &'a [Path],
}

impl Answer<'_> {
    fn write_json(&self, out: &mut impl Write) -> anyhow::Result<()> {
        let (one_from, one_to) = self.query.single();
        let ends = |p: &Path| self.topology.distance(p[0], p[p.len() - 1]);
        let distances: Vec<u32> = self.system.paths.iter().map(ends).collect();
        let json = Json {
            topology: self.topology,
            from: OneOrList::of(one_from, &self.query.from),
            to: OneOrList::of(one_to, &self.query.to),
            distance: OneOrList::of(one_from && one_to, &distances),
            k: self.system.paths.len(),
            avoid: self.query.avoid.as_deref(),
            constraint: self.query.constraint,
            construction: self.system.construction.note(),
            paths: &self.system.paths,
        };
        serde_json::to_writer(&mut *out, &json)?;
        writeln!(out)?;
        Ok(())
    }

    fn write_text(&self, out: &mut impl Write) -> std::io::Result<()> {
        let t = self.topology;
        let q = self.query;
        let name = |v: NodeId| crate::print::node(t, v);
        let set = |v: &[NodeId]| {
            let names: Vec<String> = v.iter().map(|&x| name(x)).collect();
            format!("{{{}}}", names.join(", "))
        };
        let side = |single: bool, v: &[NodeId]| if single { name(v[0]) } else { set(v) };
        let (one_from, one_to) = q.single();
        let paths = &self.system.paths;
        let k = paths.len();
        let longest = self.system.longest();
        write!(
            out,
            "{t}  {} -> {}  ",
            side(one_from, &q.from),
            side(one_to, &q.to)
        )?;
        if self.algorithm.optimal {
            // The bound is the exact optimum: print the distance and L* instead.
            let optimum = match optimum::l_star(t, q.from[0], q.to[0]) {
                Some(l) => format!("L* {l}"),
                None => format!("L* not computed above {} nodes", optimum::MAX_NODES),
            };
            let d = t.distance(q.from[0], q.to[0]);
            writeln!(out, "distance {d}, k {k}, longest {longest}, {optimum}")?;
        } else {
            write!(out, "{}", self.algorithm.name)?;
            if let Some(i) = q.constraint {
                write!(out, " gamma_{i} = ({i},{})", i + 1)?;
            }
            if let Some(f) = &q.avoid {
                write!(out, ", avoiding {}", set(f))?;
            }
            writeln!(out, ", k {k}, longest {longest}, bound {}", self.bound)?;
        }
        if let Some(how) = self.system.construction.note() {
            writeln!(out, "  (not the paper's construction: {how})")?;
        }
        for (i, path) in paths.iter().enumerate() {
            let nodes: Vec<String> = path.iter().map(|&v| name(v)).collect();
            writeln!(
                out,
                "  path {} (length {:>2}): {}",
                i + 1,
                path.len() - 1,
                nodes.join(" ")
            )?;
        }
        Ok(())
    }
}

/// Every ordered pair's node-to-node paths, one JSON line each, sources in id order and each
/// source's destinations in id order.
///
/// The sources are dealt round-robin to one worker per core; each worker renders one source's
/// lines into a buffer and hands it over a channel of its own that holds at most
/// [`ALL_PAIRS_BUFFERED`] buffers, and the writer takes them worker by worker in turn, so the
/// order is the sequential one and memory stays bounded however slow the reader of stdout is.
fn all_pairs(topology: Topology, algorithm: Option<&str>) -> anyhow::Result<()> {
    if topology.node_count() > ALL_PAIRS_MAX_NODES {
        return Err(super::usage(format!(
            "--all-pairs is limited to {ALL_PAIRS_MAX_NODES} nodes; {topology} has {}",
            topology.node_count()
        )));
    }
    let sources: Vec<NodeId> = topology.nodes().collect();
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(sources.len().max(1));
    let mut out = BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    std::thread::scope(|scope| -> anyhow::Result<()> {
        let mut lanes = Vec::with_capacity(workers);
        for worker in 0..workers {
            let (lines, lane) = std::sync::mpsc::sync_channel(ALL_PAIRS_BUFFERED);
            let mine = sources.iter().copied().skip(worker).step_by(workers);
            scope.spawn(move || {
                for src in mine {
                    let rendered = one_source(topology, src, algorithm);
                    let failed = rendered.is_err();
                    if lines.send(rendered).is_err() || failed {
                        return;
                    }
                }
            });
            lanes.push(lane);
        }
        for i in 0..sources.len() {
            let block = lanes[i % workers]
                .recv()
                .context("an --all-pairs worker stopped early")??;
            out.write_all(&block)?;
        }
        Ok(())
    })?;
    out.flush()?;
    Ok(())
}

/// How many rendered sources each `--all-pairs` worker may have waiting for the writer.
const ALL_PAIRS_BUFFERED: usize = 4;

/// The JSON lines of every pair (`src`, d), d ≠ `src` in id order.
fn one_source(topology: Topology, src: NodeId, algorithm: Option<&str>) -> anyhow::Result<Vec<u8>> {
    let mut block = Vec::new();
    for dst in topology.nodes().filter(|&dst| dst != src) {
        let query = Query {
            kind: Kind::NodeToNode,
            from: vec![src],
            to: vec![dst],
            avoid: None,
            constraint: None,
        };
        let instance = query.instance();
        let (algorithm, system) = table::solve(topology, &instance, algorithm).map_err(refused)?;
        let answer = Answer {
            topology,
            query: &query,
            algorithm,
            bound: 0,
            system,
        };
        answer.write_json(&mut block)?;
    }
    Ok(block)
}
