//! The studies on the seed families, as Bossard, "Disjoint-path Routing in Hypercubes and their
//! Variants" (Ph.D. thesis, 2011) runs them:
//!
//! - `hhc-n2s` (§5.4 and appendix A §5): HHC-N2S and HHC-iN2S on the *same* random instances
//!   of HHC_{2^m+m}, k = m+1 destinations, source and destinations uniform and distinct; per m
//!   the mean, standard deviation and maximum of each instance's longest path, the mean time,
//!   the bounds, and the gain of HHC-iN2S over HHC-N2S in the mean and the maximum longest path
//!   (the appendix reports 16-21% and 19-23% for m = 3..9). m runs up to 5, the largest whose
//!   ids fit a u64.
//! - `mc-n2s` (§6.4): MC-N2S on random instances of MC(k,m) with n = k+m destinations, for every
//!   k of the sizes and m = 1..9 with k + m 2^k <= 63 (the thesis's 1 <= k,m <= 9 within our id
//!   width); per (k,m) the mean, standard deviation and maximum longest path against Theorem 3's
//!   bound, the mean time, and how many instances a fallback answered.
//!
//! The algorithms, their names and their bounds come from the protocol's algorithm table
//! (`cuberoute_protocol::paths::table`).

use crate::chart::{self, Line};
use crate::error::Error;
use crate::measure::{Stats, timed};
use crate::options::{Options, range};
use crate::report::{Report, Table};
use crate::rng::Rng;
use cuberoute_protocol::paths::table::{self, Algorithm};
use cuberoute_protocol::paths::{Instance, Kind};
use cuberoute_protocol::topology::hhc::Hhc;
use cuberoute_protocol::topology::metacube::Metacube;
use cuberoute_protocol::{NodeId, Topology};

/// A study on a seed family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Study {
    /// HHC-N2S against HHC-iN2S on the same instances.
    HhcN2s,
    /// MC-N2S against its bound.
    McN2s,
}

impl Study {
    pub const ALL: [Study; 2] = [Study::HhcN2s, Study::McN2s];

    pub fn id(self) -> &'static str {
        match self {
            Study::HhcN2s => "hhc-n2s",
            Study::McN2s => "mc-n2s",
        }
    }

    /// What the study is, in one line (the names from the table).
    pub fn about(self) -> String {
        let name = |topology, id| node_to_set(topology, Some(id)).map(|a| a.name);
        match self {
            Study::HhcN2s => {
                let hhc = Topology::Hhc(Hhc { m: 3 });
                match (name(hhc, "n2s"), name(hhc, "in2s")) {
                    (Ok(a), Ok(b)) => format!("{a} against {b} on the same instances"),
                    _ => "node-to-set on HHC".to_string(),
                }
            }
            Study::McN2s => match name(Topology::Metacube(Metacube { k: 2, m: 2 }), "n2s") {
                Ok(a) => format!("{a} against its bound"),
                Err(_) => "node-to-set on the metacube".to_string(),
            },
        }
    }

    /// Run the study: the table and the chart.
    pub fn run(self, options: &Options, progress: &mut dyn FnMut(&str)) -> Result<Report, Error> {
        let count = options.instances()?;
        let default = match self {
            Study::HhcN2s => "3..5",
            Study::McN2s => "1..5",
        };
        let text = options.sizes.as_deref().unwrap_or(default);
        let (lo, hi) = range(text)
            .ok_or_else(|| Error::usage(format!("--sizes {text:?}: expected A..B with A <= B")))?;
        match self {
            Study::HhcN2s => hhc(lo, hi, count, options.seed, progress),
            Study::McN2s => mc(lo, hi, count, options.seed, progress),
        }
    }
}

/// The table's node-to-set algorithm `id` on `topology` (the default when `None`).
fn node_to_set(topology: Topology, id: Option<&str>) -> Result<&'static Algorithm, Error> {
    table::choose(topology, Kind::NodeToSet, id).map_err(|e| Error::Internal(e.to_string()))
}

/// The bound of a node-to-set algorithm for `count` destinations from node 0 (the bounds of
/// the seed families' node-to-set algorithms depend on the size of the set only).
fn bound(alg: &Algorithm, topology: Topology, count: usize) -> usize {
    let dests: Vec<NodeId> = topology.nodes().skip(1).take(count).collect();
    let instance = Instance::NodeToSet {
        s: NodeId(0),
        dests: &dests,
    };
    (alg.bound)(topology, &instance)
}

/// `count` instances: a source uniform among the `nodes`, `k` destinations uniform and
/// distinct among the others.
fn instances(rng: &mut Rng, nodes: u64, count: usize, k: usize) -> Vec<(NodeId, Vec<NodeId>)> {
    (0..count)
        .map(|_| {
            let s = rng.below(nodes);
            let dests = rng.distinct(nodes, k, &[s]);
            (NodeId(s), dests.into_iter().map(NodeId).collect())
        })
        .collect()
}

/// Run `alg` on every instance: the longest path of each, the mean time in microseconds, and
/// how many were answered by a fallback.
fn measure(
    instances: &[(NodeId, Vec<NodeId>)],
    topology: Topology,
    alg: &Algorithm,
) -> Result<(Vec<usize>, f64, usize), Error> {
    let (measured, us) = timed(instances.len(), || {
        let mut longest = Vec::with_capacity(instances.len());
        let mut fallbacks = 0;
        for (s, dests) in instances {
            let instance = Instance::NodeToSet { s: *s, dests };
            let system = (alg.run)(topology, &instance).map_err(|e| {
                Error::Internal(format!(
                    "{} refused the generated instance {s} -> {dests:?}: {e}",
                    alg.name
                ))
            })?;
            fallbacks += usize::from(system.construction.is_fallback());
            longest.push(system.longest());
        }
        Ok((longest, fallbacks))
    });
    let (longest, fallbacks) = measured?;
    Ok((longest, us, fallbacks))
}

/// HHC-N2S against HHC-iN2S, m in `lo..=hi`.
fn hhc(
    lo: u32,
    hi: u32,
    count: usize,
    seed: u64,
    progress: &mut dyn FnMut(&str),
) -> Result<Report, Error> {
    if lo < 2 || hi > Hhc::MAX_M {
        return Err(Error::usage(format!(
            "hhc-n2s --sizes: m must run within 2..{} (HHC_(2^m+m) ids are u64)",
            Hhc::MAX_M
        )));
    }
    let some = Topology::Hhc(Hhc { m: lo });
    let (a_name, b_name) = (
        node_to_set(some, Some("n2s"))?.name,
        node_to_set(some, Some("in2s"))?.name,
    );
    let mut table = Table::new(
        &format!(
            "m|k|instances|{a_name} mean|sd|max|bound|{b_name} mean|sd|max|bound|gain in mean|gain in max|{a_name} us|{b_name} us"
        ),
        "m,k,instances,n2s_mean,n2s_std,n2s_max,n2s_bound,in2s_mean,in2s_std,in2s_max,in2s_bound,gain_mean_pct,gain_max_pct,n2s_us,in2s_us",
    );
    let mut lines: [Vec<f64>; 6] = Default::default();
    let mut labels = Vec::new();
    for m in lo..=hi {
        let h = Hhc { m };
        let topology = Topology::Hhc(h);
        let (n2s, in2s) = (
            node_to_set(topology, Some("n2s"))?,
            node_to_set(topology, Some("in2s"))?,
        );
        let mut rng = Rng::new(seed ^ (m as u64) << 40 ^ 0x4848);
        let k = m as usize + 1;
        let instances = instances(&mut rng, h.node_count(), count, k);
        let (a, a_us, _) = measure(&instances, topology, n2s)?;
        let (b, b_us, _) = measure(&instances, topology, in2s)?;
        let (sa, sb) = (Stats::of(&a), Stats::of(&b));
        let gain_mean = 100.0 * (sa.mean - sb.mean) / sa.mean;
        let gain_max = 100.0 * (sa.max as f64 - sb.max as f64) / sa.max as f64;
        let (ba, bb) = (bound(n2s, topology, k), bound(in2s, topology, k));
        // Markdown and CSV differ in their decimals only (and the % of the gains).
        let cells = |stats: usize, gain: usize, percent: &str, us: usize| {
            [
                m.to_string(),
                k.to_string(),
                count.to_string(),
                format!("{:.*}", stats, sa.mean),
                format!("{:.*}", stats, sa.std),
                sa.max.to_string(),
                ba.to_string(),
                format!("{:.*}", stats, sb.mean),
                format!("{:.*}", stats, sb.std),
                sb.max.to_string(),
                bb.to_string(),
                format!("{gain_mean:.gain$}{percent}"),
                format!("{gain_max:.gain$}{percent}"),
                format!("{a_us:.us$}"),
                format!("{b_us:.us$}"),
            ]
        };
        table.push(&cells(2, 1, "%", 1), &cells(4, 2, "", 2));
        for (line, v) in lines.iter_mut().zip([
            sa.mean,
            sa.max as f64,
            sb.mean,
            sb.max as f64,
            ba as f64,
            bb as f64,
        ]) {
            line.push(v);
        }
        labels.push(m.to_string());
        progress(&format!("study hhc-n2s: m = {m} done"));
    }
    let [a_mean, a_max, b_mean, b_max, a_bound, b_bound] = lines;
    let title = format!("{a_name} and {b_name}, k = m+1 destinations: longest path per instance");
    let label = |name: &str, what: &str| format!("{name} {what}");
    let legend = [
        label(a_name, "bound"),
        label(b_name, "bound"),
        label(a_name, "max"),
        label(a_name, "mean"),
        label(b_name, "max"),
        label(b_name, "mean"),
    ];
    let line = |i: usize, colour, dash, values| Line {
        label: &legend[i],
        colour,
        dash,
        values,
    };
    let svg = chart::lines(
        &title,
        "m (HHC_(2^m+m))",
        &labels,
        &[
            line(0, "#999", "6,4", a_bound),
            line(1, "#555", "2,3", b_bound),
            line(2, "#c0392b", "", a_max),
            line(3, "#e67e22", "", a_mean),
            line(4, "#1f5fbf", "", b_max),
            line(5, "#2e8b57", "", b_mean),
        ],
    );
    Ok(Report::new(Study::HhcN2s.id(), title, table, svg))
}

/// MC-N2S on MC(k,m), k in `lo..=hi`, m = 1..9 within 63-bit ids.
fn mc(
    lo: u32,
    hi: u32,
    count: usize,
    seed: u64,
    progress: &mut dyn FnMut(&str),
) -> Result<Report, Error> {
    if lo < 1 || hi > 5 {
        return Err(Error::usage(
            "mc-n2s --sizes: k must run within 1..5 (MC(k,m) ids are u64)",
        ));
    }
    let mut table = Table::new(
        "k|m|n|instances|mean longest|sd|max longest|bound|max / bound|mean time (us)|fallback",
        "k,m,n,instances,mean_longest,std_longest,max_longest,bound,mean_time_us,fallback",
    );
    let (mut means, mut maxes, mut bounds, mut labels) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut name = "";
    for k in lo..=hi {
        for m in (1..=9).filter(|&m| Metacube::new(k, m).is_some()) {
            let mc = Metacube { k, m };
            let topology = Topology::Metacube(mc);
            let alg = node_to_set(topology, None)?;
            name = alg.name;
            let n = (k + m) as usize;
            let mut rng = Rng::new(seed ^ (k as u64) << 40 ^ (m as u64) << 48 ^ 0x4d43);
            let instances = instances(&mut rng, mc.node_count(), count, n);
            let (longest, us, fallbacks) = measure(&instances, topology, alg)?;
            let st = Stats::of(&longest);
            let bound = bound(alg, topology, n);
            let common = [
                k.to_string(),
                m.to_string(),
                n.to_string(),
                count.to_string(),
            ];
            table.push(
                &[
                    &common[..],
                    &[
                        format!("{:.2}", st.mean),
                        format!("{:.2}", st.std),
                        st.max.to_string(),
                        bound.to_string(),
                        format!("{:.2}", st.max as f64 / bound as f64),
                        format!("{us:.1}"),
                        fallbacks.to_string(),
                    ],
                ]
                .concat(),
                &[
                    &common[..],
                    &[
                        format!("{:.4}", st.mean),
                        format!("{:.4}", st.std),
                        st.max.to_string(),
                        bound.to_string(),
                        format!("{us:.2}"),
                        fallbacks.to_string(),
                    ],
                ]
                .concat(),
            );
            means.push(st.mean);
            maxes.push(st.max as f64);
            bounds.push(bound as f64);
            labels.push(format!("{k},{m}"));
            progress(&format!("study mc-n2s: MC({k},{m}) done"));
        }
    }
    let title = format!("{name}, n = k+m destinations: longest path per instance");
    let svg = chart::lines(
        &title,
        "k,m (MC(k,m))",
        &labels,
        &[
            Line {
                label: "bound (Theorem 3)",
                colour: "#555",
                dash: "6,4",
                values: bounds,
            },
            Line {
                label: "max longest",
                colour: "#c0392b",
                dash: "",
                values: maxes,
            },
            Line {
                label: "mean longest",
                colour: "#1f5fbf",
                dash: "",
                values: means,
            },
        ],
    );
    Ok(Report::new(Study::McN2s.id(), title, table, svg))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(sizes: &str, instances: usize) -> Options {
        Options {
            sizes: Some(sizes.into()),
            instances,
            ..Options::default()
        }
    }

    #[test]
    fn instances_have_distinct_nodes() {
        let mut rng = Rng::new(1);
        for (s, dests) in instances(&mut rng, 2048, 500, 6) {
            let mut all = dests.clone();
            all.push(s);
            all.sort_unstable();
            all.dedup();
            assert_eq!(all.len(), 7);
            assert!(all.iter().all(|v| v.0 < 2048));
        }
    }

    #[test]
    fn hhc_both_algorithms_stay_within_their_bounds() {
        let report = Study::HhcN2s
            .run(&options("2..4", 60), &mut |_| {})
            .unwrap();
        let lines: Vec<&str> = report.csv.lines().collect();
        assert_eq!(lines.len(), 4, "header and m = 2, 3, 4");
        for (line, m) in lines[1..].iter().zip(2..) {
            let c: Vec<f64> = line.split(',').map(|x| x.parse().unwrap()).collect();
            assert_eq!(
                (c[0], c[1], c[2]),
                (m as f64, m as f64 + 1.0, 60.0),
                "{line}"
            );
            // mean <= max <= bound, for each algorithm.
            assert!(c[3] <= c[5] && c[5] <= c[6], "HHC-N2S: {line}");
            assert!(c[7] <= c[9] && c[9] <= c[10], "HHC-iN2S: {line}");
        }
        assert!(report.title.starts_with("HHC-N2S and HHC-iN2S"));
        assert_eq!(report.svg.matches("<polyline").count(), 6);
    }

    #[test]
    fn mc_stays_within_theorem_3() {
        let mut seen = Vec::new();
        let report = Study::McN2s
            .run(&options("1..2", 30), &mut |line| {
                seen.push(line.to_string())
            })
            .unwrap();
        // MC(1,m) for m = 1..9 and MC(2,m) for m = 1..9 all fit 63 bits.
        assert_eq!(report.csv.lines().count(), 1 + 18);
        assert_eq!(seen.len(), 18);
        assert_eq!(seen[0], "study mc-n2s: MC(1,1) done");
        for line in report.csv.lines().skip(1) {
            let c: Vec<f64> = line.split(',').map(|x| x.parse().unwrap()).collect();
            assert_eq!(c[2], c[0] + c[1], "n = k + m: {line}");
            assert!(c[4] <= c[6] && c[6] <= c[7], "mean <= max <= bound: {line}");
        }
        assert!(report.markdown.contains("| 2 | 2 | 4 | 30 |"));
    }

    #[test]
    fn sizes_out_of_range_are_usage_errors() {
        for (study, sizes, instances) in [
            (Study::HhcN2s, "3..6", 1),
            (Study::HhcN2s, "1..3", 1),
            (Study::HhcN2s, "4..3", 1),
            (Study::McN2s, "0..2", 1),
            (Study::McN2s, "5..6", 1),
            (Study::McN2s, "k", 1),
            (Study::McN2s, "1..2", 0),
        ] {
            let err = study
                .run(&options(sizes, instances), &mut |_| {})
                .unwrap_err();
            assert!(matches!(err, Error::Usage(_)), "{study:?} {sizes}: {err}");
        }
    }
}
