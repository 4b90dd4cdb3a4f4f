//! The studies on Q_n, as Bossard and Kaneko, "A Routing Algorithm Solving the Container
//! Problem in a Hypercube with Bit Constraint" (§4), and Bossard, "Disjoint-path Routing in
//! Hypercubes and their Variants" (Ph.D. thesis, 2011, §5.4 and §7.4) run them: random
//! instances per size n, and per size the mean, standard deviation and maximum of the longest
//! path of each instance and the mean time, against the algorithm's bound; and, on the first
//! instances of each size, the same figures for the generic max flow ([`crate::maxflow`]) on
//! the same instances.
//!
//! Instances, as in the papers, always use the most paths the algorithm allows:
//! - `container`: HC-CONTAINER, s != d uniform among the nodes satisfying gamma_i, k =
//!   min(n-i, i+1), bound n+3k;
//! - `n2s`: Cube-N2S, n destinations uniform among the other nodes, bound n+1;
//! - `xftn2s`: Cube-XFTN2S, ceil((n-1)/2) destinations and floor((n-1)/2) faulty nodes
//!   (|D| + |F| = n-1), bound n+3;
//! - `s2s`: Cube-S2S, n sources and n destinations, no faults, bound n+k = 2n.
//!
//! The algorithms, their names and their bounds come from the protocol's algorithm table
//! (`cuberoute_protocol::paths::table`).

use crate::chart;
use crate::error::Error;
use crate::maxflow;
use crate::measure::{Stats, timed};
use crate::options::{Options, range};
use crate::report::{Report, Table};
use crate::rng::Rng;
use cuberoute_protocol::paths::cube::container;
use cuberoute_protocol::paths::table::{self, Algorithm as Entry};
use cuberoute_protocol::paths::{self, Instance, Kind};
use cuberoute_protocol::{NodeId, Topology};

/// A study on Q_n. The discriminant enters the generator's seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algorithm {
    /// HC-CONTAINER: bit-constrained node-to-node.
    Container = 0,
    /// Cube-N2S: node-to-set.
    N2s = 1,
    /// Cube-XFTN2S: fault-tolerant node-to-set.
    Xftn2s = 2,
    /// Cube-S2S: set-to-set.
    S2s = 3,
}

impl Algorithm {
    pub const ALL: [Algorithm; 4] = [
        Algorithm::Container,
        Algorithm::N2s,
        Algorithm::Xftn2s,
        Algorithm::S2s,
    ];

    /// The study's name, which is also the algorithm's id in the table.
    pub fn id(self) -> &'static str {
        match self {
            Algorithm::Container => "container",
            Algorithm::N2s => "n2s",
            Algorithm::Xftn2s => "xftn2s",
            Algorithm::S2s => "s2s",
        }
    }

    fn kind(self) -> Kind {
        match self {
            Algorithm::Container => Kind::ConstrainedNodeToNode,
            Algorithm::N2s => Kind::NodeToSet,
            Algorithm::Xftn2s => Kind::FaultTolerantNodeToSet,
            Algorithm::S2s => Kind::SetToSet,
        }
    }

    /// The table's entry for this study on Q_n.
    pub fn entry(self, n: u32) -> Result<&'static Entry, Error> {
        let q = Topology::hypercube(n.into())
            .ok_or_else(|| Error::Internal(format!("Q_{n} is not a hypercube we route")))?;
        table::choose(q, self.kind(), Some(self.id())).map_err(|e| Error::Internal(e.to_string()))
    }

    /// What the study is, in one line (the name from the table).
    pub fn about(self) -> String {
        let what = match self {
            Algorithm::Container => "bit-constrained node-to-node",
            Algorithm::N2s => "node-to-set",
            Algorithm::Xftn2s => "fault-tolerant node-to-set",
            Algorithm::S2s => "set-to-set",
        };
        match self.entry(4) {
            Ok(entry) => format!("{}: {what}", entry.name),
            Err(_) => what.to_string(),
        }
    }

    fn title(self, i: u32) -> Result<String, Error> {
        let name = self.entry(4)?.name;
        Ok(match self {
            Algorithm::Container => format!("{name}, gamma_{i} = ({i},{})", i + 1),
            Algorithm::N2s => format!("{name}, k = n destinations"),
            Algorithm::Xftn2s => format!("{name}, |D| + |F| = n-1"),
            Algorithm::S2s => format!("{name}, k = n pairs"),
        })
    }
}

/// A generated instance: its node lists, lent to the table as an [`Instance`].
#[derive(Debug, PartialEq, Eq)]
enum Generated {
    Constrained {
        s: NodeId,
        d: NodeId,
        i: u32,
    },
    NodeToSet {
        s: NodeId,
        dests: Vec<NodeId>,
    },
    FaultTolerant {
        s: NodeId,
        dests: Vec<NodeId>,
        faults: Vec<NodeId>,
    },
    SetToSet {
        sources: Vec<NodeId>,
        dests: Vec<NodeId>,
    },
}

fn ids(v: Vec<u64>) -> Vec<NodeId> {
    v.into_iter().map(NodeId).collect()
}

fn raw(v: &[NodeId]) -> Vec<u64> {
    v.iter().map(|x| x.0).collect()
}

impl Generated {
    /// The next instance of `alg` on Q_n (constraint gamma_i for the container).
    fn draw(alg: Algorithm, n: u32, i: u32, rng: &mut Rng) -> Generated {
        let size = 1u64 << n;
        match alg {
            Algorithm::Container => loop {
                let (s, d) = (rng.constrained(n, i), rng.constrained(n, i));
                if s != d {
                    break Generated::Constrained {
                        s: NodeId(s),
                        d: NodeId(d),
                        i,
                    };
                }
            },
            Algorithm::N2s => {
                let s = rng.below(size);
                Generated::NodeToSet {
                    s: NodeId(s),
                    dests: ids(rng.distinct(size, n as usize, &[s])),
                }
            }
            Algorithm::Xftn2s => {
                let s = rng.below(size);
                let dests = rng.distinct(size, (n - 1).div_ceil(2) as usize, &[s]);
                let mut avoid = dests.clone();
                avoid.push(s);
                let faults = rng.distinct(size, n as usize - 1 - dests.len(), &avoid);
                Generated::FaultTolerant {
                    s: NodeId(s),
                    dests: ids(dests),
                    faults: ids(faults),
                }
            }
            Algorithm::S2s => {
                let sources = rng.distinct(size, n as usize, &[]);
                let dests = rng.distinct(size, n as usize, &sources);
                Generated::SetToSet {
                    sources: ids(sources),
                    dests: ids(dests),
                }
            }
        }
    }

    fn instance(&self) -> Instance<'_> {
        match self {
            &Generated::Constrained { s, d, i } => Instance::ConstrainedNodeToNode { s, d, i },
            Generated::NodeToSet { s, dests } => Instance::NodeToSet { s: *s, dests },
            Generated::FaultTolerant { s, dests, faults } => Instance::FaultTolerantNodeToSet {
                s: *s,
                dests,
                faults,
            },
            Generated::SetToSet { sources, dests } => Instance::SetToSet { sources, dests },
        }
    }

    /// The longest path of the same instance solved by the generic max flow, which must find
    /// `k` paths.
    fn max_flow_longest(&self, n: u32, k: usize) -> Result<usize, Error> {
        let flips = move |v: u64| (0..n).map(|j| v ^ (1u64 << j)).collect::<Vec<u64>>();
        let one = |v: &[NodeId]| v.iter().map(|x| (x.0, 1)).collect::<Vec<(u64, u32)>>();
        let paths = match self {
            Generated::Constrained { s, d, i } => {
                let nodes: Vec<u64> = (0..1u64 << n)
                    .filter(|v| v.count_ones() == *i || v.count_ones() == i + 1)
                    .collect();
                maxflow::disjoint_paths(&nodes, flips, &[(s.0, k as u32)], &[(d.0, k as u32)])
            }
            Generated::NodeToSet { s, dests } => {
                let nodes: Vec<u64> = (0..1u64 << n).collect();
                maxflow::disjoint_paths(&nodes, flips, &[(s.0, dests.len() as u32)], &one(dests))
            }
            Generated::FaultTolerant { s, dests, faults } => {
                let faults = raw(faults);
                let nodes: Vec<u64> = (0..1u64 << n).filter(|v| !faults.contains(v)).collect();
                maxflow::disjoint_paths(&nodes, flips, &[(s.0, dests.len() as u32)], &one(dests))
            }
            Generated::SetToSet { sources, dests } => {
                let nodes: Vec<u64> = (0..1u64 << n).collect();
                maxflow::disjoint_paths(&nodes, flips, &one(sources), &one(dests))
            }
        };
        if paths.len() != k {
            return Err(Error::Internal(format!(
                "Q_{n}: the max flow has {} paths, not k = {k}",
                paths.len()
            )));
        }
        Ok(paths::longest(
            &paths.into_iter().map(ids).collect::<Vec<_>>(),
        ))
    }
}

/// One size's figures.
#[derive(Debug, PartialEq)]
struct Row {
    n: u32,
    k: usize,
    bound: usize,
    instances: usize,
    ours: Stats,
    mean_us: f64,
    flow_instances: usize,
    /// Ours on the instances the max flow solved.
    ours_same: Stats,
    flow: Stats,
    flow_us: f64,
}

impl Row {
    const MARKDOWN: &str = "n|k|bound|instances|mean longest|std|max longest|mean time (us)|max-flow instances|ours on them: mean / max|max flow: mean longest|max flow: max longest|max flow: mean time (us)";
    const CSV: &str = "n,k,bound,instances,mean_longest,std_longest,max_longest,mean_time_us,maxflow_instances,ours_mean_on_them,ours_max_on_them,maxflow_mean_longest,maxflow_max_longest,maxflow_mean_time_us";

    fn markdown(&self) -> [String; 13] {
        [
            self.n.to_string(),
            self.k.to_string(),
            self.bound.to_string(),
            self.instances.to_string(),
            format!("{:.2}", self.ours.mean),
            format!("{:.2}", self.ours.std),
            self.ours.max.to_string(),
            format!("{:.2}", self.mean_us),
            self.flow_instances.to_string(),
            format!("{:.2} / {}", self.ours_same.mean, self.ours_same.max),
            format!("{:.2}", self.flow.mean),
            self.flow.max.to_string(),
            format!("{:.0}", self.flow_us),
        ]
    }

    fn csv(&self) -> [String; 14] {
        [
            self.n.to_string(),
            self.k.to_string(),
            self.bound.to_string(),
            self.instances.to_string(),
            format!("{:.4}", self.ours.mean),
            format!("{:.4}", self.ours.std),
            self.ours.max.to_string(),
            format!("{:.4}", self.mean_us),
            self.flow_instances.to_string(),
            format!("{:.4}", self.ours_same.mean),
            self.ours_same.max.to_string(),
            format!("{:.4}", self.flow.mean),
            self.flow.max.to_string(),
            format!("{:.1}", self.flow_us),
        ]
    }

    fn chart(&self) -> chart::Size {
        chart::Size {
            n: self.n,
            bound: self.bound,
            mean: self.ours.mean,
            std: self.ours.std,
            max: self.ours.max,
            flow_mean: self.flow.mean,
            flow_max: self.flow.max,
        }
    }
}

/// Sizes of `options` for a study on Q_n: 4..16 by default, within 2..32.
fn sizes(options: &Options) -> Result<(u32, u32), Error> {
    let text = options.sizes.as_deref().unwrap_or("4..16");
    range(text)
        .filter(|&(lo, hi)| lo >= 2 && hi <= 32)
        .ok_or_else(|| {
            Error::usage(format!(
                "--sizes {text:?}: expected A..B with 2 <= A <= B <= 32"
            ))
        })
}

/// One size: generate, solve, measure.
fn measure(alg: Algorithm, n: u32, options: &Options) -> Result<Row, Error> {
    let i = options.constraint;
    let mut rng = Rng::new(options.seed ^ (n as u64) << 32 ^ alg as u64);
    let q = Topology::hypercube(n.into()).expect("2 <= n <= 32");
    let entry = alg.entry(n)?;
    let instances: Vec<Generated> = (0..options.instances)
        .map(|_| Generated::draw(alg, n, i, &mut rng))
        .collect();
    let solve = |generated: &Generated| {
        (entry.run)(q, &generated.instance()).map_err(|e| {
            // A refusal is a bug: the instances are generated valid.
            Error::Internal(format!(
                "{} refused a generated instance of Q_{n}: {e}",
                entry.name
            ))
        })
    };
    let (longest, mean_us) = timed(instances.len(), || {
        instances
            .iter()
            .map(|generated| solve(generated).map(|system| system.longest()))
            .collect::<Result<Vec<usize>, Error>>()
    });
    let longest = longest?;
    let k = match alg {
        Algorithm::Container => container::container_width(n, i),
        _ => solve(&instances[0])?.paths.len(),
    };
    // Every instance of a size has the same bound: the table's, on the first one.
    let bound = (entry.bound)(q, &instances[0].instance());
    let m = options.maxflow_instances.min(instances.len());
    let (flow, flow_us) = timed(m, || {
        instances[..m]
            .iter()
            .map(|generated| generated.max_flow_longest(n, k))
            .collect::<Result<Vec<usize>, Error>>()
    });
    Ok(Row {
        n,
        k,
        bound,
        instances: instances.len(),
        ours: Stats::of(&longest),
        mean_us,
        flow_instances: m,
        ours_same: Stats::of(&longest[..m]),
        flow: Stats::of(&flow?),
        flow_us,
    })
}

/// Run the study of `alg`: the table and the chart.
pub fn run(
    alg: Algorithm,
    options: &Options,
    progress: &mut dyn FnMut(&str),
) -> Result<Report, Error> {
    let count = options.instances()?;
    let (lo, hi) = sizes(options)?;
    let i = options.constraint;
    if alg == Algorithm::Container && lo <= i + 1 {
        return Err(Error::usage(format!(
            "container with gamma_{i} needs n >= {} (k = min(n-i, i+1) >= 2)",
            i + 2
        )));
    }
    let mut table = Table::new(Row::MARKDOWN, Row::CSV);
    let mut chart = Vec::new();
    for n in lo..=hi {
        let row = measure(alg, n, options)?;
        table.push(&row.markdown(), &row.csv());
        chart.push(row.chart());
        progress(&format!("study {}: n = {n} done", alg.id()));
    }
    let title = alg.title(i)?;
    let svg = chart::by_size(&title, &chart, count, options.maxflow_instances.min(count));
    Ok(Report::new(alg.id(), title, table, svg))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(sizes: &str, instances: usize, maxflow_instances: usize) -> Options {
        Options {
            sizes: Some(sizes.into()),
            instances,
            maxflow_instances,
            ..Options::default()
        }
    }

    #[test]
    fn generated_instances_are_what_the_study_says() {
        let mut rng = Rng::new(5);
        for _ in 0..200 {
            let n = 7;
            match Generated::draw(Algorithm::Container, n, 2, &mut rng) {
                Generated::Constrained { s, d, i: 2 } => {
                    assert_ne!(s, d);
                    for v in [s, d] {
                        assert!(container::satisfies(2, v), "{v:?}");
                    }
                }
                other => panic!("{other:?}"),
            }
            let Generated::FaultTolerant { s, dests, faults } =
                Generated::draw(Algorithm::Xftn2s, n, 2, &mut rng)
            else {
                panic!("not fault-tolerant")
            };
            assert_eq!((dests.len(), faults.len()), (3, 3));
            let mut all: Vec<NodeId> = [vec![s], dests, faults].concat();
            all.sort_unstable();
            all.dedup();
            assert_eq!(all.len(), 7);
            let Generated::SetToSet { sources, dests } =
                Generated::draw(Algorithm::S2s, n, 2, &mut rng)
            else {
                panic!("not set-to-set")
            };
            assert_eq!((sources.len(), dests.len()), (7, 7));
            assert!(sources.iter().all(|v| !dests.contains(v)));
        }
    }

    #[test]
    fn every_study_stays_within_its_bound_and_matches_the_max_flow_count() {
        for alg in Algorithm::ALL {
            let report = run(alg, &options("4..6", 30, 5), &mut |_| {}).unwrap();
            let lines: Vec<&str> = report.csv.lines().collect();
            assert_eq!(lines.len(), 4, "{alg:?}: header and n = 4, 5, 6");
            for (line, n) in lines[1..].iter().zip(4..) {
                let c: Vec<&str> = line.split(',').collect();
                let int = |i: usize| c[i].parse::<usize>().unwrap();
                assert_eq!(int(0), n);
                let (k, bound) = (int(1), int(2));
                let expected_k = match alg {
                    Algorithm::Container => container::container_width(n as u32, 2),
                    Algorithm::Xftn2s => (n - 1).div_ceil(2),
                    Algorithm::N2s | Algorithm::S2s => n,
                };
                assert_eq!(k, expected_k, "{alg:?} {line}");
                let expected_bound = match alg {
                    Algorithm::Container => n + 3 * k,
                    Algorithm::N2s => n + 1,
                    Algorithm::Xftn2s => n + 3,
                    Algorithm::S2s => 2 * n,
                };
                assert_eq!(bound, expected_bound, "{alg:?} {line}");
                // max longest, ours on the max-flow instances, the max flow's longest.
                assert!(int(6) <= bound && int(10) <= int(6), "{alg:?} {line}");
                assert_eq!(int(8), 5);
                // A path to another node has at least one edge.
                assert!(int(12) >= 1, "{alg:?} {line}");
            }
            assert!(report.markdown.starts_with("| n | k | bound |"));
            assert!(report.svg.starts_with("<svg") && report.svg.ends_with("</svg>\n"));
        }
    }

    #[test]
    fn the_tables_and_chart_depend_on_the_seed_alone() {
        let a = run(Algorithm::N2s, &options("4..5", 40, 4), &mut |_| {}).unwrap();
        let b = run(Algorithm::N2s, &options("4..5", 40, 4), &mut |_| {}).unwrap();
        assert_eq!(a.svg, b.svg);
        let other = Options {
            seed: 2,
            ..options("4..5", 40, 4)
        };
        let c = run(Algorithm::N2s, &other, &mut |_| {}).unwrap();
        assert_ne!(a.svg, c.svg, "another seed, other instances");
    }

    #[test]
    fn progress_is_reported_per_size() {
        let mut seen = Vec::new();
        run(Algorithm::S2s, &options("3..4", 2, 1), &mut |line| {
            seen.push(line.to_string())
        })
        .unwrap();
        assert_eq!(seen, ["study s2s: n = 3 done", "study s2s: n = 4 done"]);
    }

    #[test]
    fn bad_options_are_usage_errors() {
        for (alg, sizes, constraint, instances) in [
            (Algorithm::N2s, "9..4", 2, 1),
            (Algorithm::N2s, "1..3", 2, 1),
            (Algorithm::N2s, "4..33", 2, 1),
            (Algorithm::S2s, "x", 2, 1),
            (Algorithm::Container, "3..6", 2, 1),
            (Algorithm::Container, "4..6", 3, 1),
            (Algorithm::N2s, "4..6", 2, 0),
        ] {
            let options = Options {
                constraint,
                ..options(sizes, instances, 0)
            };
            let err = run(alg, &options, &mut |_| {}).unwrap_err();
            assert!(matches!(err, Error::Usage(_)), "{alg:?} {sizes}: {err}");
        }
    }
}
