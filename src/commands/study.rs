//! `cuberoute study <ALGORITHM>`: the empirical study of seed 001 (§4) and of the thesis
//! (§5.4, §7.4), reproduced on Q_n: random instances per size, and per size the mean, standard
//! deviation and maximum of the longest path of each instance and the mean execution time,
//! against the theoretical bound; and, on the first instances of each size, the same figures for a
//! generic maximum-flow solution of the same instances (petgraph's Dinic, `crate::maxflow`).
//!
//! Instances, as in the papers, always use the most paths the algorithm allows:
//! - `container`: HC-CONTAINER, s != d uniform among the nodes satisfying gamma_i (i = 2 unless
//!   `--constraint`), k = min(n-i, i+1), bound n+3k;
//! - `n2s`: Cube-N2S, n destinations uniform among the other nodes, M empty, bound n+1;
//! - `xftn2s`: Cube-XFTN2S, ceil((n-1)/2) destinations and floor((n-1)/2) faulty nodes
//!   (|D| + |F| = n-1), bound n+3;
//! - `s2s`: Cube-S2S, n sources and n destinations, no faults, bound n+k = 2n.
//!
//! Writes `<out>/<algorithm>.csv`, `.md` and `.svg` and prints the Markdown table. The studies
//! of the seed topologies (`hhc-n2s`, `mc-n2s`) are in `study_seed`.

use anyhow::Context;
use cuberoute_protocol::paths::cube::container;
use cuberoute_protocol::paths::table::{self, Algorithm as Entry};
use cuberoute_protocol::paths::{self, Kind, Path};
use cuberoute_protocol::topology::hypercube::Hypercube;
use cuberoute_protocol::{NodeId, Topology};
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algorithm {
    /// HC-CONTAINER (seed 001): bit-constrained node-to-node.
    Container,
    /// Cube-N2S (thesis ch. 4): node-to-set.
    N2s,
    /// Cube-XFTN2S (thesis app. A): fault-tolerant node-to-set.
    Xftn2s,
    /// Cube-S2S: set-to-set.
    S2s,
    /// HHC-N2S against HHC-iN2S on the same instances (thesis ch. 5, app. A; `study_seed`).
    HhcN2s,
    /// MC-N2S against its bound (thesis ch. 6; `study_seed`).
    McN2s,
}

impl Algorithm {
    fn name(self) -> &'static str {
        match self {
            Algorithm::Container => "container",
            Algorithm::N2s => "n2s",
            Algorithm::Xftn2s => "xftn2s",
            Algorithm::S2s => "s2s",
            Algorithm::HhcN2s => "hhc-n2s",
            Algorithm::McN2s => "mc-n2s",
        }
    }

    /// The kind of instance a Q_n study solves; its [`Algorithm::name`] is the algorithm's id in
    /// the table.
    fn kind(self) -> Kind {
        match self {
            Algorithm::Container => Kind::ConstrainedNodeToNode,
            Algorithm::N2s => Kind::NodeToSet,
            Algorithm::Xftn2s => Kind::FaultTolerantNodeToSet,
            Algorithm::S2s => Kind::SetToSet,
            Algorithm::HhcN2s | Algorithm::McN2s => unreachable!("studied by study_seed"),
        }
    }

    /// The table's entry for this study on Q_n.
    fn entry(self, n: u32) -> anyhow::Result<&'static Entry> {
        let q = Topology::hypercube(n.into()).context("a studied Q_n")?;
        Ok(table::choose(q, self.kind(), Some(self.name()))?)
    }

    fn title(self, i: u32) -> anyhow::Result<String> {
        let name = self.entry(4)?.name;
        Ok(match self {
            Algorithm::Container => format!("{name}, gamma_{i} = ({i},{})", i + 1),
            Algorithm::N2s => format!("{name}, k = n destinations"),
            Algorithm::Xftn2s => format!("{name}, |D| + |F| = n-1"),
            Algorithm::S2s => format!("{name}, k = n pairs"),
            Algorithm::HhcN2s | Algorithm::McN2s => unreachable!("studied by study_seed"),
        })
    }
}

#[derive(clap::Args, Debug)]
pub struct Args {
    algorithm: Algorithm,
    /// Sizes to study, `A..B` inclusive: the dimension n on Q_n (default 4..16), m for
    /// hhc-n2s (default 3..5), k for mc-n2s (default 1..5, m running over 1..9).
    #[arg(long)]
    sizes: Option<String>,
    /// Random instances per size (the papers use 10,000).
    #[arg(long, default_value_t = 10_000)]
    instances: usize,
    /// Instances per size also solved by the generic max flow (the first ones).
    #[arg(long, default_value_t = 100)]
    maxflow_instances: usize,
    /// The bit constraint gamma_I of `container`.
    #[arg(long, default_value_t = 2)]
    constraint: u32,
    /// Seed of the instance generator.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Directory for the CSV, Markdown and SVG files.
    #[arg(long, default_value = "study")]
    out: PathBuf,
}

/// One size's figures.
pub struct Row {
    pub n: u32,
    pub k: usize,
    pub bound: usize,
    pub instances: usize,
    pub mean: f64,
    pub std: f64,
    pub max: usize,
    pub mean_us: f64,
    pub flow_instances: usize,
    pub ours_mean_same: f64,
    pub ours_max_same: usize,
    pub flow_mean: f64,
    pub flow_max: usize,
    pub flow_us: f64,
}

/// splitmix64: a small, seedable, well-mixed generator (no dependency needed).
pub(super) struct Rng(u64);

impl Rng {
    pub(super) fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub(super) fn below(&mut self, n: u64) -> u64 {
        ((self.next() as u128 * n as u128) >> 64) as u64
    }

    /// `count` distinct nodes of Q_n, none in `avoid`.
    fn nodes(&mut self, n: u32, count: usize, avoid: &[u64]) -> Vec<u64> {
        let mut out: Vec<u64> = Vec::with_capacity(count);
        while out.len() < count {
            let v = self.below(1u64 << n);
            if !avoid.contains(&v) && !out.contains(&v) {
                out.push(v);
            }
        }
        out
    }

    /// A node of weight i or i+1, uniform among them.
    fn constrained(&mut self, n: u32, i: u32) -> u64 {
        let (a, b) = (binomial(n, i), binomial(n, i + 1));
        let w = if self.below((a + b) as u64) < a as u64 {
            i
        } else {
            i + 1
        };
        // A uniform w-subset of the n positions (partial Fisher-Yates).
        let mut pos: Vec<u32> = (0..n).collect();
        for j in 0..w as usize {
            let r = j + self.below((n as usize - j) as u64) as usize;
            pos.swap(j, r);
        }
        pos[..w as usize].iter().map(|&p| 1u64 << p).sum()
    }
}

fn binomial(n: u32, k: u32) -> u128 {
    if k > n {
        return 0;
    }
    (0..k).fold(1u128, |acc, j| acc * (n - j) as u128 / (j + 1) as u128)
}

enum Instance {
    Pair(u64, u64),
    NodeToSet(u64, Vec<u64>, Vec<u64>),
    SetToSet(Vec<u64>, Vec<u64>),
}

fn ids(v: &[u64]) -> Vec<NodeId> {
    v.iter().map(|&x| NodeId(x)).collect()
}

fn instance(alg: Algorithm, n: u32, i: u32, rng: &mut Rng) -> Instance {
    match alg {
        Algorithm::Container => loop {
            let (s, d) = (rng.constrained(n, i), rng.constrained(n, i));
            if s != d {
                break Instance::Pair(s, d);
            }
        },
        Algorithm::N2s => {
            let s = rng.below(1 << n);
            Instance::NodeToSet(s, rng.nodes(n, n as usize, &[s]), Vec::new())
        }
        Algorithm::Xftn2s => {
            let s = rng.below(1 << n);
            let dests = rng.nodes(n, (n - 1).div_ceil(2) as usize, &[s]);
            let mut avoid = dests.clone();
            avoid.push(s);
            let faults = rng.nodes(n, n as usize - 1 - dests.len(), &avoid);
            Instance::NodeToSet(s, dests, faults)
        }
        Algorithm::S2s => {
            let srcs = rng.nodes(n, n as usize, &[]);
            Instance::SetToSet(srcs.clone(), rng.nodes(n, n as usize, &srcs))
        }
        Algorithm::HhcN2s | Algorithm::McN2s => unreachable!("studied by study_seed"),
    }
}

/// The table's instance for a generated one, passed to `with` (the node lists live here).
fn with_instance<T>(
    alg: Algorithm,
    i: u32,
    inst: &Instance,
    with: impl FnOnce(&paths::Instance) -> T,
) -> T {
    match inst {
        Instance::Pair(s, d) => with(&paths::Instance::ConstrainedNodeToNode {
            s: NodeId(*s),
            d: NodeId(*d),
            i,
        }),
        Instance::NodeToSet(s, d, f) if alg == Algorithm::Xftn2s => {
            with(&paths::Instance::FaultTolerantNodeToSet {
                s: NodeId(*s),
                dests: &ids(d),
                faults: &ids(f),
            })
        }
        Instance::NodeToSet(s, d, _) => with(&paths::Instance::NodeToSet {
            s: NodeId(*s),
            dests: &ids(d),
        }),
        Instance::SetToSet(s, d) => with(&paths::Instance::SetToSet {
            sources: &ids(s),
            dests: &ids(d),
        }),
    }
}

/// The generated instance solved by the study's algorithm of the table.
fn solve(
    alg: Algorithm,
    entry: &Entry,
    q: Hypercube,
    i: u32,
    inst: &Instance,
) -> anyhow::Result<Vec<Path>> {
    let result = with_instance(alg, i, inst, |instance| {
        (entry.run)(Topology::Hypercube(q), instance)
    });
    // A refusal here is a bug: the instances are generated valid.
    result
        .map(|system| system.paths)
        .with_context(|| format!("{alg:?} refused a generated instance of Q_{}", q.n))
}

/// The same instance solved by the generic max flow; returns its longest path.
fn max_flow_longest(
    alg: Algorithm,
    n: u32,
    i: u32,
    inst: &Instance,
    k: usize,
) -> anyhow::Result<usize> {
    let flips = move |v: u64| (0..n).map(|j| v ^ (1u64 << j)).collect::<Vec<u64>>();
    let paths = match inst {
        Instance::Pair(s, d) => {
            let nodes: Vec<u64> = (0..1u64 << n)
                .filter(|v| v.count_ones() == i || v.count_ones() == i + 1)
                .collect();
            crate::maxflow::disjoint_paths(&nodes, flips, &[(*s, k as u32)], &[(*d, k as u32)])
        }
        Instance::NodeToSet(s, d, f) => {
            let nodes: Vec<u64> = (0..1u64 << n).filter(|v| !f.contains(v)).collect();
            let sinks: Vec<(u64, u32)> = d.iter().map(|&v| (v, 1)).collect();
            crate::maxflow::disjoint_paths(&nodes, flips, &[(*s, d.len() as u32)], &sinks)
        }
        Instance::SetToSet(s, d) => {
            let nodes: Vec<u64> = (0..1u64 << n).collect();
            let sources: Vec<(u64, u32)> = s.iter().map(|&v| (v, 1)).collect();
            let sinks: Vec<(u64, u32)> = d.iter().map(|&v| (v, 1)).collect();
            crate::maxflow::disjoint_paths(&nodes, flips, &sources, &sinks)
        }
    };
    if paths.len() != k {
        anyhow::bail!(
            "{alg:?} Q_{n}: the max flow has {} paths, not k = {k}",
            paths.len()
        );
    }
    Ok(paths::longest(
        &paths.iter().map(|p| ids(p)).collect::<Vec<_>>(),
    ))
}

/// `A..B` as two numbers, A <= B (each study checks its own range).
fn parse_range(text: &str) -> anyhow::Result<(u32, u32)> {
    let bad = || super::usage(format!("--sizes {text:?}: expected A..B with A <= B"));
    let (a, b) = text.split_once("..").ok_or_else(bad)?;
    let (a, b): (u32, u32) = (
        a.trim().parse().map_err(|_| bad())?,
        b.trim().parse().map_err(|_| bad())?,
    );
    if a > b {
        return Err(bad());
    }
    Ok((a, b))
}

fn parse_sizes(text: &str) -> anyhow::Result<(u32, u32)> {
    let bad = || {
        super::usage(format!(
            "--sizes {text:?}: expected A..B with 2 <= A <= B <= 32"
        ))
    };
    let (a, b) = text.split_once("..").ok_or_else(bad)?;
    let (a, b): (u32, u32) = (
        a.trim().parse().map_err(|_| bad())?,
        b.trim().parse().map_err(|_| bad())?,
    );
    if a < 2 || a > b || b > 32 {
        return Err(bad());
    }
    Ok((a, b))
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let alg = args.algorithm;
    if args.instances == 0 {
        return Err(super::usage("--instances must be at least 1"));
    }
    if matches!(alg, Algorithm::HhcN2s | Algorithm::McN2s) {
        let default = if alg == Algorithm::HhcN2s {
            "3..5"
        } else {
            "1..5"
        };
        let (lo, hi) = parse_range(args.sizes.as_deref().unwrap_or(default))?;
        return match alg {
            Algorithm::HhcN2s => {
                super::study_seed::hhc(lo, hi, args.instances, args.seed, &args.out)
            }
            _ => super::study_seed::mc(lo, hi, args.instances, args.seed, &args.out),
        };
    }
    let (lo, hi) = parse_sizes(args.sizes.as_deref().unwrap_or("4..16"))?;
    let i = args.constraint;
    if alg == Algorithm::Container && lo <= i + 1 {
        return Err(super::usage(format!(
            "container with gamma_{i} needs n >= {} (k = min(n-i, i+1) >= 2)",
            i + 2
        )));
    }
    let mut rows = Vec::new();
    for n in lo..=hi {
        let mut rng = Rng(args.seed ^ (n as u64) << 32 ^ alg as u64);
        let q = Hypercube { n };
        let entry = alg.entry(n)?;
        let instances: Vec<Instance> = (0..args.instances)
            .map(|_| instance(alg, n, i, &mut rng))
            .collect();
        let start = Instant::now();
        let longest: Vec<usize> = instances
            .iter()
            .map(|inst| solve(alg, entry, q, i, inst).map(|paths| paths::longest(&paths)))
            .collect::<anyhow::Result<_>>()?;
        let elapsed = start.elapsed();
        let k = match alg {
            Algorithm::Container => container::container_width(n, i),
            _ => solve(alg, entry, q, i, &instances[0])?.len(),
        };
        // Every instance of a size has the same bound: the table's, on the first one.
        let bound = with_instance(alg, i, &instances[0], |instance| {
            (entry.bound)(Topology::Hypercube(q), instance)
        });
        let m = args.maxflow_instances.min(instances.len());
        let start = Instant::now();
        let flow: Vec<usize> = instances[..m]
            .iter()
            .map(|inst| max_flow_longest(alg, n, i, inst, k))
            .collect::<anyhow::Result<_>>()?;
        let flow_elapsed = start.elapsed();
        let mean = |v: &[usize]| v.iter().sum::<usize>() as f64 / v.len().max(1) as f64;
        let mu = mean(&longest);
        let var = longest
            .iter()
            .map(|&l| (l as f64 - mu).powi(2))
            .sum::<f64>()
            / longest.len() as f64;
        rows.push(Row {
            n,
            k,
            bound,
            instances: instances.len(),
            mean: mu,
            std: var.sqrt(),
            max: *longest.iter().max().unwrap(),
            mean_us: elapsed.as_secs_f64() * 1e6 / instances.len() as f64,
            flow_instances: m,
            ours_mean_same: mean(&longest[..m]),
            ours_max_same: longest[..m].iter().copied().max().unwrap_or(0),
            flow_mean: mean(&flow),
            flow_max: flow.iter().copied().max().unwrap_or(0),
            flow_us: flow_elapsed.as_secs_f64() * 1e6 / m.max(1) as f64,
        });
        eprintln!("study {}: n = {n} done", alg.name());
    }
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let base = args.out.join(alg.name());
    let title = alg.title(i)?;
    let markdown = markdown(&rows);
    std::fs::write(base.with_extension("csv"), csv(&rows))?;
    std::fs::write(
        base.with_extension("md"),
        format!("# {title}\n\n{markdown}"),
    )?;
    std::fs::write(
        base.with_extension("svg"),
        crate::plot::longest_path_chart(&title, &rows),
    )?;
    print!("{markdown}");
    println!("\nwritten: {0}.csv, {0}.md, {0}.svg", base.display());
    Ok(())
}

const HEADER: [&str; 13] = [
    "n",
    "k",
    "bound",
    "instances",
    "mean longest",
    "std",
    "max longest",
    "mean time (us)",
    "max-flow instances",
    "ours on them: mean / max",
    "max flow: mean longest",
    "max flow: max longest",
    "max flow: mean time (us)",
];

fn cells(r: &Row) -> [String; 13] {
    [
        r.n.to_string(),
        r.k.to_string(),
        r.bound.to_string(),
        r.instances.to_string(),
        format!("{:.2}", r.mean),
        format!("{:.2}", r.std),
        r.max.to_string(),
        format!("{:.2}", r.mean_us),
        r.flow_instances.to_string(),
        format!("{:.2} / {}", r.ours_mean_same, r.ours_max_same),
        format!("{:.2}", r.flow_mean),
        r.flow_max.to_string(),
        format!("{:.0}", r.flow_us),
    ]
}

pub fn markdown(rows: &[Row]) -> String {
    let mut s = format!(
        "| {} |\n|{}\n",
        HEADER.join(" | "),
        "---|".repeat(HEADER.len())
    );
    for r in rows {
        s += &format!("| {} |\n", cells(r).join(" | "));
    }
    s
}

fn csv(rows: &[Row]) -> String {
    let mut s = "n,k,bound,instances,mean_longest,std_longest,max_longest,mean_time_us,maxflow_instances,ours_mean_on_them,ours_max_on_them,maxflow_mean_longest,maxflow_max_longest,maxflow_mean_time_us\n".to_string();
    for r in rows {
        s += &format!(
            "{},{},{},{},{:.4},{:.4},{},{:.4},{},{:.4},{},{:.4},{},{:.1}\n",
            r.n,
            r.k,
            r.bound,
            r.instances,
            r.mean,
            r.std,
            r.max,
            r.mean_us,
            r.flow_instances,
            r.ours_mean_same,
            r.ours_max_same,
            r.flow_mean,
            r.flow_max,
            r.flow_us
        );
    }
    s
}
