//! `cuberoute paths <TOPO> <FROM> <TO> [--json] [--svg FILE]` and `--all-pairs --json`; on Q_N
//! also the forms of `cube_paths`: `--to-set` (node-to-set, with `--avoid` fault-tolerant),
//! `--from-set --to-set` (set-to-set) and `--constraint I` (the bit-constrained container); on
//! `hhc:M`, `mc:K,M` and `rdn:BASE,K` the forms of `family_paths`.

use anyhow::Context;
use cuberoute_protocol::{NodeId, PathSet, Topology, disjoint_paths, optimum};
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
    /// Disjoint paths from FROM to each of these nodes: Cube-N2S on q:N (Cube-XFTN2S with
    /// --avoid), HHC-iN2S on hhc:M, MC-N2S on mc:K,M, RDN N2S on rdn:BASE,K. Comma-separated ids.
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
    /// Q_N: faulty nodes the node-to-set paths must avoid (Cube-XFTN2S).
    #[arg(
        long,
        value_name = "F1,F2,...",
        requires = "to_set",
        conflicts_with = "from_set"
    )]
    avoid: Option<String>,
    /// Q_N: keep every node of every path at weight I or I+1 (HC-CONTAINER, bit constraint
    /// gamma_I).
    #[arg(long, value_name = "I", conflicts_with_all = ["to_set", "all_pairs"])]
    constraint: Option<String>,
    /// hhc:M with --to-set: `in2s` (HHC-iN2S, the default) or `n2s` (HHC-N2S).
    #[arg(long, value_name = "NAME", requires = "to_set")]
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
    if args.all_pairs {
        return all_pairs(topology);
    }
    if args.to_set.is_some() || args.constraint.is_some() || !topology.has_guarded_protocol() {
        return super::cube_paths::run(
            topology,
            super::cube_paths::Request {
                from: args.from,
                to: args.to,
                to_set: args.to_set,
                from_set: args.from_set,
                avoid: args.avoid,
                constraint: args.constraint,
                algorithm: args.algorithm,
                json: args.json,
                svg: args.svg,
            },
        );
    }
    let (Some(from), Some(to)) = (&args.from, &args.to) else {
        return Err(super::usage("FROM and TO are required without --all-pairs"));
    };
    let src = super::parse_node(topology, from)?;
    let dst = super::parse_node(topology, to)?;
    if src == dst {
        return Err(super::usage(format!(
            "FROM and TO are the same node {}: there are no paths to route over",
            topology.format_node(src)
        )));
    }
    if args.svg.is_some() && topology.node_count() > crate::svg::MAX_NODES {
        return Err(super::usage(format!(
            "--svg draws at most {} nodes; {topology} has {}",
            crate::svg::MAX_NODES,
            topology.node_count()
        )));
    }
    let set = disjoint_paths(topology, src, dst)?;
    if let Some(file) = &args.svg {
        std::fs::write(file, crate::svg::render(&set))
            .with_context(|| format!("writing {}", file.display()))?;
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if args.json {
        write_json(&mut out, &set)?;
    } else {
        write_text(&mut out, &set)?;
        if let Some(file) = &args.svg {
            writeln!(out, "drawing written to {}", file.display())?;
        }
    }
    Ok(())
}

fn all_pairs(topology: Topology) -> anyhow::Result<()> {
    if topology.node_count() > ALL_PAIRS_MAX_NODES {
        return Err(super::usage(format!(
            "--all-pairs is limited to {ALL_PAIRS_MAX_NODES} nodes; {topology} has {}",
            topology.node_count()
        )));
    }
    let mut out = BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    for src in topology.nodes() {
        for dst in topology.nodes().filter(|&dst| dst != src) {
            let set = if topology.has_guarded_protocol() {
                disjoint_paths(topology, src, dst)?
            } else {
                let (system, _, _) = super::family_paths::node_to_node_system(topology, src, dst)?;
                PathSet {
                    topology,
                    src,
                    dst,
                    paths: system.paths,
                }
            };
            write_json(&mut out, &set)?;
        }
    }
    out.flush()?;
    Ok(())
}

/// The one-line JSON schema of the issue, written by hand: serde_json would allocate a value
/// per path and halve the speed of `--all-pairs`.
fn write_json(out: &mut impl Write, set: &PathSet) -> std::io::Result<()> {
    write!(
        out,
        r#"{{"topology":"{}","from":{},"to":{},"distance":{},"k":{},"paths":["#,
        set.topology,
        set.src,
        set.dst,
        set.distance(),
        set.k()
    )?;
    for (i, path) in set.paths.iter().enumerate() {
        out.write_all(if i == 0 { b"[" } else { b",[" })?;
        for (j, v) in path.iter().enumerate() {
            if j > 0 {
                out.write_all(b",")?;
            }
            write!(out, "{}", v.0)?;
        }
        out.write_all(b"]")?;
    }
    out.write_all(b"]}\n")
}

fn write_text(out: &mut impl Write, set: &PathSet) -> std::io::Result<()> {
    let t = set.topology;
    let name = |v: NodeId| t.format_node(v);
    let optimum = match optimum::l_star(t, set.src, set.dst) {
        Some(l) => format!("L* {l}"),
        None => format!("L* not computed above {} nodes", optimum::MAX_NODES),
    };
    writeln!(
        out,
        "{t}  {} -> {}  distance {}, k {}, longest {}, {optimum}",
        name(set.src),
        name(set.dst),
        set.distance(),
        set.k(),
        set.longest()
    )?;
    for (i, path) in set.paths.iter().enumerate() {
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
