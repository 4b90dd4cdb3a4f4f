//! `cuberoute study hhc-n2s` and `cuberoute study mc-n2s`: the empirical studies of the thesis
//! on the seed topologies, reproduced.
//!
//! - `hhc-n2s` (thesis §5.4 and appendix A §5): HHC-N2S and HHC-iN2S on the *same* random
//!   instances of HHC_{2^m+m}, k = m+1 destinations, source and destinations uniform and
//!   distinct; per m the mean, standard deviation and maximum of each instance's longest path,
//!   the mean time, the bounds, and the gain of HHC-iN2S over HHC-N2S in the mean and the
//!   maximum longest path (the appendix reports 16-21% and 19-23% for m = 3..9). m runs up to 5,
//!   the largest whose ids fit a u64 (hhc module docs).
//! - `mc-n2s` (thesis §6.4): MC-N2S on random instances of MC(k,m) with n = k+m destinations,
//!   for every k in `--sizes` and m = 1..9 with k + m 2^k <= 63 (the thesis's 1 <= k,m <= 9 within
//!   our id width); per (k,m) the mean, standard deviation and maximum longest path against
//!   Theorem 3's bound, the mean time, and how many instances a fallback answered.
//!
//! Writes `<out>/<study>.csv`, `.md` and `.svg` and prints the Markdown table.

use super::study::Rng;
use anyhow::Context;
use cuberoute_protocol::paths::table::{self, Algorithm};
use cuberoute_protocol::paths::{Instance, Kind};
use cuberoute_protocol::topology::hhc::Hhc;
use cuberoute_protocol::topology::metacube::Metacube;
use cuberoute_protocol::{NodeId, Topology};
use std::path::Path;
use std::time::Instant;

/// Mean, standard deviation and maximum of the longest paths.
struct Stats {
    mean: f64,
    std: f64,
    max: usize,
}

impl Stats {
    fn of(v: &[usize]) -> Stats {
        let mean = v.iter().sum::<usize>() as f64 / v.len() as f64;
        let var = v.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / v.len() as f64;
        Stats {
            mean,
            std: var.sqrt(),
            max: v.iter().copied().max().unwrap_or(0),
        }
    }
}

/// `count` distinct ids below `n`, none equal to `avoid`.
fn distinct(rng: &mut Rng, n: u64, count: usize, avoid: u64) -> Vec<NodeId> {
    let mut out: Vec<NodeId> = Vec::with_capacity(count);
    while out.len() < count {
        let v = NodeId(rng.below(n));
        if v.0 != avoid && !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

/// The table's node-to-set algorithm `id` on `topology` (the default when `None`).
fn node_to_set(topology: Topology, id: Option<&str>) -> anyhow::Result<&'static Algorithm> {
    Ok(table::choose(topology, Kind::NodeToSet, id)?)
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

/// Run `alg` on every instance: the longest path of each, the mean time in microseconds, and
/// how many were answered by a fallback.
fn measure(
    instances: &[(NodeId, Vec<NodeId>)],
    topology: Topology,
    alg: &Algorithm,
) -> anyhow::Result<(Vec<usize>, f64, usize)> {
    let start = Instant::now();
    let mut longest = Vec::with_capacity(instances.len());
    let mut fallbacks = 0;
    for (s, dests) in instances {
        let instance = Instance::NodeToSet { s: *s, dests };
        let system = (alg.run)(topology, &instance).with_context(|| {
            format!(
                "{} refused the generated instance {s} -> {dests:?}",
                alg.name
            )
        })?;
        fallbacks += usize::from(system.construction.is_fallback());
        longest.push(system.longest());
    }
    let us = start.elapsed().as_secs_f64() * 1e6 / instances.len() as f64;
    Ok((longest, us, fallbacks))
}

fn write(
    out: &Path,
    name: &str,
    csv: &str,
    markdown: &str,
    title: &str,
    svg: &str,
) -> anyhow::Result<()> {
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let base = out.join(name);
    std::fs::write(base.with_extension("csv"), csv)?;
    std::fs::write(
        base.with_extension("md"),
        format!("# {title}\n\n{markdown}"),
    )?;
    std::fs::write(base.with_extension("svg"), svg)?;
    print!("{markdown}");
    println!("\nwritten: {0}.csv, {0}.md, {0}.svg", base.display());
    Ok(())
}

/// HHC-N2S against HHC-iN2S, m in `lo..=hi`.
pub fn hhc(lo: u32, hi: u32, count: usize, seed: u64, out: &Path) -> anyhow::Result<()> {
    if lo < 2 || hi > Hhc::MAX_M || lo > hi {
        return Err(super::usage(format!(
            "hhc-n2s --sizes: m must run within 2..{} (HHC_(2^m+m) ids are u64)",
            Hhc::MAX_M
        )));
    }
    let some = Topology::Hhc(Hhc { m: lo });
    let (a_name, b_name) = (
        node_to_set(some, Some("n2s"))?.name,
        node_to_set(some, Some("in2s"))?.name,
    );
    let mut md = format!(
        "| m | k | instances | {a_name} mean | sd | max | bound | {b_name} mean | sd | max | bound | gain in mean | gain in max | {a_name} us | {b_name} us |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
    );
    let mut csv = "m,k,instances,n2s_mean,n2s_std,n2s_max,n2s_bound,in2s_mean,in2s_std,in2s_max,in2s_bound,gain_mean_pct,gain_max_pct,n2s_us,in2s_us\n".to_string();
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
        let instances: Vec<(NodeId, Vec<NodeId>)> = (0..count)
            .map(|_| {
                let s = NodeId(rng.below(h.node_count()));
                (s, distinct(&mut rng, h.node_count(), k, s.0))
            })
            .collect();
        let (a, a_us, _) = measure(&instances, topology, n2s)?;
        let (b, b_us, _) = measure(&instances, topology, in2s)?;
        let (sa, sb) = (Stats::of(&a), Stats::of(&b));
        let gain_mean = 100.0 * (sa.mean - sb.mean) / sa.mean;
        let gain_max = 100.0 * (sa.max as f64 - sb.max as f64) / sa.max as f64;
        let (ba, bb) = (bound(n2s, topology, k), bound(in2s, topology, k));
        md += &format!(
            "| {m} | {k} | {count} | {:.2} | {:.2} | {} | {ba} | {:.2} | {:.2} | {} | {bb} | {gain_mean:.1}% | {gain_max:.1}% | {a_us:.1} | {b_us:.1} |\n",
            sa.mean, sa.std, sa.max, sb.mean, sb.std, sb.max
        );
        csv += &format!(
            "{m},{k},{count},{:.4},{:.4},{},{ba},{:.4},{:.4},{},{bb},{gain_mean:.2},{gain_max:.2},{a_us:.2},{b_us:.2}\n",
            sa.mean, sa.std, sa.max, sb.mean, sb.std, sb.max
        );
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
        eprintln!("study hhc-n2s: m = {m} done");
    }
    let [a_mean, a_max, b_mean, b_max, a_bound, b_bound] = lines;
    let title = format!("{a_name} and {b_name}, k = m+1 destinations: longest path per instance");
    let label = |name: &str, what: &str| format!("{name} {what}");
    let labels_of = [
        label(a_name, "bound"),
        label(b_name, "bound"),
        label(a_name, "max"),
        label(a_name, "mean"),
        label(b_name, "max"),
        label(b_name, "mean"),
    ];
    let svg = crate::chart::lines(
        &title,
        "m (HHC_(2^m+m))",
        &labels,
        &[
            crate::chart::Line {
                label: &labels_of[0],
                colour: "#999",
                dash: "6,4",
                values: a_bound,
            },
            crate::chart::Line {
                label: &labels_of[1],
                colour: "#555",
                dash: "2,3",
                values: b_bound,
            },
            crate::chart::Line {
                label: &labels_of[2],
                colour: "#c0392b",
                dash: "",
                values: a_max,
            },
            crate::chart::Line {
                label: &labels_of[3],
                colour: "#e67e22",
                dash: "",
                values: a_mean,
            },
            crate::chart::Line {
                label: &labels_of[4],
                colour: "#1f5fbf",
                dash: "",
                values: b_max,
            },
            crate::chart::Line {
                label: &labels_of[5],
                colour: "#2e8b57",
                dash: "",
                values: b_mean,
            },
        ],
    );
    write(out, "hhc-n2s", &csv, &md, &title, &svg)
}

/// MC-N2S on MC(k,m), k in `lo..=hi`, m = 1..9 within 63-bit ids.
pub fn mc(lo: u32, hi: u32, count: usize, seed: u64, out: &Path) -> anyhow::Result<()> {
    if lo < 1 || hi > 5 || lo > hi {
        return Err(super::usage(
            "mc-n2s --sizes: k must run within 1..5 (MC(k,m) ids are u64)",
        ));
    }
    let mut md = "| k | m | n | instances | mean longest | sd | max longest | bound | max / bound | mean time (us) | fallback |\n|---|---|---|---|---|---|---|---|---|---|---|\n".to_string();
    let mut csv =
        "k,m,n,instances,mean_longest,std_longest,max_longest,bound,mean_time_us,fallback\n"
            .to_string();
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
            let instances: Vec<(NodeId, Vec<NodeId>)> = (0..count)
                .map(|_| {
                    let s = NodeId(rng.below(mc.node_count()));
                    (s, distinct(&mut rng, mc.node_count(), n, s.0))
                })
                .collect();
            let (longest, us, fallbacks) = measure(&instances, topology, alg)?;
            let st = Stats::of(&longest);
            let bound = bound(alg, topology, n);
            md += &format!(
                "| {k} | {m} | {n} | {count} | {:.2} | {:.2} | {} | {bound} | {:.2} | {us:.1} | {fallbacks} |\n",
                st.mean,
                st.std,
                st.max,
                st.max as f64 / bound as f64
            );
            csv += &format!(
                "{k},{m},{n},{count},{:.4},{:.4},{},{bound},{us:.2},{fallbacks}\n",
                st.mean, st.std, st.max
            );
            means.push(st.mean);
            maxes.push(st.max as f64);
            bounds.push(bound as f64);
            labels.push(format!("{k},{m}"));
            eprintln!("study mc-n2s: MC({k},{m}) done");
        }
    }
    let title = format!("{name}, n = k+m destinations: longest path per instance");
    let svg = crate::chart::lines(
        &title,
        "k,m (MC(k,m))",
        &labels,
        &[
            crate::chart::Line {
                label: "bound (Theorem 3)",
                colour: "#555",
                dash: "6,4",
                values: bounds,
            },
            crate::chart::Line {
                label: "max longest",
                colour: "#c0392b",
                dash: "",
                values: maxes,
            },
            crate::chart::Line {
                label: "mean longest",
                colour: "#1f5fbf",
                dash: "",
                values: means,
            },
        ],
    );
    write(out, "mc-n2s", &csv, &md, &title, &svg)
}
