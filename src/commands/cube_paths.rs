//! The Q_N forms of `cuberoute paths` (the seed families go to `family_paths`, which prints with
//! [`print`]): node-to-set (`--to-set`, fault-tolerant with `--avoid`),
//! set-to-set (`--from-set --to-set`) and the bit-constrained container (`--constraint I`).
//!
//! JSON keeps the node-to-node schema `{"topology","from","to","distance","k","paths"}`, with:
//! - `"to"` a list (the destinations, in the order given) for node-to-set and set-to-set, and
//!   `"from"` a list for set-to-set;
//! - `"distance"` a list aligned with `"paths"`: the distance between the two ends of each path
//!   (the Hamming distance on Q_N) (for node-to-set, the distance to each destination in `"to"` order; for
//!   set-to-set, from each source to the destination it was given); a number for the container,
//!   as for node-to-node;
//! - `"k"` the number of paths;
//! - `"avoid"` (the faulty nodes) when `--avoid` is given, `"constraint"` (I) for the container;
//! - `"construction"` only when a seed family's paper did not answer the instance (its fallback).
//!
//! `paths[i]` starts at `from` (or `from[i]`) and, for node-to-set, ends at `to[i]`.

use super::usage;
use cuberoute_protocol::cube::{self, CubeError, Path};
use cuberoute_protocol::hypercube::Hypercube;
use cuberoute_protocol::source_route::{self, RouteRequest, RoutesError};
use cuberoute_protocol::{NodeId, PathSet, Topology};
use std::io::Write;
use std::path::PathBuf;

/// What the user asked for, as typed.
pub struct Request {
    pub from: Option<String>,
    pub to: Option<String>,
    pub to_set: Option<String>,
    pub from_set: Option<String>,
    pub avoid: Option<String>,
    pub constraint: Option<String>,
    /// hhc:M node-to-set: `n2s` or `in2s`.
    pub algorithm: Option<String>,
    pub json: bool,
    pub svg: Option<PathBuf>,
}

/// A computed answer, ready to print.
pub struct Answer {
    pub topology: Topology,
    pub from: Vec<NodeId>,
    pub to: Vec<NodeId>,
    /// From and to are single nodes (node-to-node schema).
    pub single: (bool, bool),
    pub avoid: Option<Vec<NodeId>>,
    pub constraint: Option<u32>,
    pub algorithm: &'static str,
    pub bound: usize,
    /// Where the paper's construction did not answer: how the paths were obtained instead.
    pub construction: Option<String>,
    pub paths: Vec<Path>,
}

pub fn run(topology: Topology, req: Request) -> anyhow::Result<()> {
    if !matches!(topology, Topology::Hypercube(_))
        && req.constraint.is_none()
        && req.avoid.is_none()
    {
        return super::family_paths::run(topology, req);
    }
    let q = match topology {
        Topology::Hypercube(q) => q,
        other => {
            return Err(usage(format!(
                "--avoid and --constraint need a hypercube q:N, not {other}"
            )));
        }
    };
    let answer = if let Some(i) = &req.constraint {
        container(topology, q, &req, i)?
    } else if let Some(sources) = &req.from_set {
        set_to_set(topology, q, &req, sources)?
    } else {
        node_to_set(topology, q, &req)?
    };
    print(&answer, req.json, req.svg.as_deref())
}

/// Print an answer (text or one JSON line), drawing it first when `svg` is given.
pub fn print(answer: &Answer, json: bool, svg: Option<&std::path::Path>) -> anyhow::Result<()> {
    let topology = answer.topology;
    if let Some(file) = svg {
        if topology.node_count() > crate::svg::MAX_NODES {
            return Err(usage(format!(
                "--svg draws at most {} nodes; {topology} has {}",
                crate::svg::MAX_NODES,
                topology.node_count()
            )));
        }
        let set = PathSet {
            topology,
            src: answer.from[0],
            dst: answer.to[0],
            paths: answer.paths.clone(),
        };
        std::fs::write(file, crate::svg::render(&set))?;
    }
    let drawn = svg.filter(|_| !json);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if json {
        write_json(&mut out, answer)?;
    } else {
        write_text(&mut out, answer)?;
        if let Some(file) = drawn {
            writeln!(out, "drawing written to {}", file.display())?;
        }
    }
    Ok(())
}

/// A protocol refusal is the user's to fix (exit 2), except an internal error (exit 1).
/// `source_route::routes`, with its refusals as usage errors.
fn routes(topology: Topology, s: NodeId, request: &RouteRequest) -> anyhow::Result<Vec<Path>> {
    match source_route::routes(topology, s, request) {
        Ok(paths) => Ok(paths),
        Err(RoutesError::Cube(e)) => Err(refused(e)),
        Err(e) => Err(usage(e.to_string())),
    }
}

fn refused(err: CubeError) -> anyhow::Error {
    match err {
        CubeError::Internal(_) => anyhow::anyhow!(err),
        other => usage(other.to_string()),
    }
}

/// Read a comma-separated set of node ids (commas inside RDN's parenthesised triples do not
/// separate): no empty items, no duplicates.
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
        let v = super::parse_node(topology, item)?;
        if set.contains(&v) {
            return Err(usage(format!("{option}: node {} is given twice", v.0)));
        }
        set.push(v);
    }
    Ok(set)
}

fn node_to_set(topology: Topology, q: Hypercube, req: &Request) -> anyhow::Result<Answer> {
    let from = req
        .from
        .as_deref()
        .ok_or_else(|| usage("--to-set needs FROM (or --from-set for set-to-set)"))?;
    let s = super::parse_node(topology, from)?;
    let dests = parse_set(
        topology,
        req.to_set.as_deref().unwrap_or_default(),
        "--to-set",
    )?;
    let faults = match &req.avoid {
        Some(text) => Some(parse_set(topology, text, "--avoid")?),
        None => None,
    };
    // The same choice of algorithm as a source-routed send on a cluster.
    let request = RouteRequest {
        to: dests.clone(),
        avoid: faults.clone().unwrap_or_default(),
        constraint: None,
    };
    let paths = routes(topology, s, &request)?;
    let (avoid, algorithm, bound) = match faults {
        None => (None, "Cube-N2S", q.n as usize + 1),
        Some(faults) => (Some(faults), "Cube-XFTN2S", q.n as usize + 3),
    };
    Ok(Answer {
        topology,
        from: vec![s],
        to: dests,
        single: (true, false),
        avoid,
        constraint: None,
        algorithm,
        bound,
        construction: None,
        paths,
    })
}

fn set_to_set(
    topology: Topology,
    q: Hypercube,
    req: &Request,
    sources: &str,
) -> anyhow::Result<Answer> {
    let srcs = parse_set(topology, sources, "--from-set")?;
    let dests = parse_set(
        topology,
        req.to_set.as_deref().unwrap_or_default(),
        "--to-set",
    )?;
    let paths = cube::s2s::cube_s2s(q, &srcs, &dests, &[]).map_err(refused)?;
    let bound = q.n as usize + srcs.len();
    Ok(Answer {
        topology,
        from: srcs,
        to: dests,
        single: (false, false),
        avoid: None,
        constraint: None,
        algorithm: "Cube-S2S",
        bound,
        construction: None,
        paths,
    })
}

fn container(topology: Topology, q: Hypercube, req: &Request, i: &str) -> anyhow::Result<Answer> {
    let i: u32 = i.trim().parse().map_err(|_| {
        usage(format!(
            "--constraint {i:?}: expected a weight I, 0 <= I < N"
        ))
    })?;
    let (Some(from), Some(to)) = (&req.from, &req.to) else {
        return Err(usage("--constraint needs FROM and TO"));
    };
    let s = super::parse_node(topology, from)?;
    let d = super::parse_node(topology, to)?;
    let request = RouteRequest {
        to: vec![d],
        avoid: Vec::new(),
        constraint: Some(i),
    };
    let paths = routes(topology, s, &request)?;
    let k = paths.len();
    Ok(Answer {
        topology,
        from: vec![s],
        to: vec![d],
        single: (true, true),
        avoid: None,
        constraint: Some(i),
        algorithm: "HC-CONTAINER",
        bound: q.n as usize + 3 * k,
        construction: None,
        paths,
    })
}

fn list(v: impl IntoIterator<Item = u64>) -> String {
    let items: Vec<String> = v.into_iter().map(|x| x.to_string()).collect();
    format!("[{}]", items.join(","))
}

fn ends_distance(topology: Topology, p: &Path) -> u64 {
    topology.distance(p[0], p[p.len() - 1]) as u64
}

fn write_json(out: &mut impl Write, a: &Answer) -> std::io::Result<()> {
    let one_or_list = |single: bool, v: &[NodeId]| {
        if single {
            v[0].0.to_string()
        } else {
            list(v.iter().map(|x| x.0))
        }
    };
    let distance = if a.single == (true, true) {
        ends_distance(a.topology, &a.paths[0]).to_string()
    } else {
        list(a.paths.iter().map(|p| ends_distance(a.topology, p)))
    };
    write!(
        out,
        r#"{{"topology":"{}","from":{},"to":{},"distance":{},"k":{},"#,
        a.topology,
        one_or_list(a.single.0, &a.from),
        one_or_list(a.single.1, &a.to),
        distance,
        a.paths.len()
    )?;
    if let Some(f) = &a.avoid {
        write!(out, r#""avoid":{},"#, list(f.iter().map(|x| x.0)))?;
    }
    if let Some(i) = a.constraint {
        write!(out, r#""constraint":{i},"#)?;
    }
    if let Some(how) = &a.construction {
        write!(
            out,
            r#""construction":{},"#,
            serde_json::Value::from(how.as_str())
        )?;
    }
    let paths: Vec<String> = a
        .paths
        .iter()
        .map(|p| list(p.iter().map(|x| x.0)))
        .collect();
    writeln!(out, r#""paths":[{}]}}"#, paths.join(","))
}

fn write_text(out: &mut impl Write, a: &Answer) -> std::io::Result<()> {
    let t = a.topology;
    let name = |v: NodeId| t.format_node(v);
    let set = |v: &[NodeId]| {
        let names: Vec<String> = v.iter().map(|&x| name(x)).collect();
        format!("{{{}}}", names.join(", "))
    };
    let side = |single: bool, v: &[NodeId]| if single { name(v[0]) } else { set(v) };
    let longest = cube::longest(&a.paths);
    write!(
        out,
        "{t}  {} -> {}  {}",
        side(a.single.0, &a.from),
        side(a.single.1, &a.to),
        a.algorithm
    )?;
    if let Some(i) = a.constraint {
        write!(out, " gamma_{i} = ({i},{})", i + 1)?;
    }
    if let Some(f) = &a.avoid {
        write!(out, ", avoiding {}", set(f))?;
    }
    writeln!(
        out,
        ", k {}, longest {longest}, bound {}",
        a.paths.len(),
        a.bound
    )?;
    if let Some(how) = &a.construction {
        writeln!(out, "  (not the paper's construction: {how})")?;
    }
    for (i, path) in a.paths.iter().enumerate() {
        let nodes: Vec<String> = path.iter().map(|&v| name(v)).collect();
        writeln!(
            out,
            "  path {i} (length {:>2}): {}",
            path.len() - 1,
            nodes.join(" ")
        )?;
    }
    Ok(())
}
