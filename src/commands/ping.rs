//! `cuberoute ping --from S --to D [--count C] [--interval I] [--json]`: one small set per
//! round; per round, each of the k paths' one-way time, which copy came first and which were
//! lost; then min/avg/max/mdev per path (`cuberoute_cluster::ops::ping`).

use super::args::{ClientArg, JsonArg, PairArgs};
use super::{runtime, usage};
use crate::print;
use cuberoute_cluster::ops::ping::{self, PingOptions, PingReport, Round};
use std::io::Write;
use std::time::Duration;

/// The most rounds one `ping` sends.
const MAX_COUNT: u32 = 100_000;
/// The shortest interval between rounds.
const MIN_INTERVAL: Duration = Duration::from_millis(10);

#[derive(clap::Args, Debug)]
#[command(mut_arg("json", |a| a.help(
    "One JSON document with every round and the summary, at the end"
)))]
pub struct Args {
    #[command(flatten)]
    pub dir: ClientArg,
    #[command(flatten)]
    pub pair: PairArgs,
    /// Rounds to send.
    #[arg(long, short = 'c', default_value_t = 5)]
    pub count: u32,
    /// From the start of one round to the next (at least 10 ms).
    #[arg(long, short = 'i', default_value = "1s", value_parser = humantime::parse_duration)]
    pub interval: Duration,
    /// How long each round waits for its copies.
    #[arg(long, default_value = "2s", value_parser = humantime::parse_duration)]
    pub timeout: Duration,
    #[command(flatten)]
    pub output: JsonArg,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    if !(1..=MAX_COUNT).contains(&args.count) {
        return Err(usage(format!(
            "--count {}: must be from 1 to {MAX_COUNT}",
            args.count
        )));
    }
    if args.interval < MIN_INTERVAL {
        return Err(usage(format!(
            "--interval {:?}: must be at least {MIN_INTERVAL:?}",
            args.interval
        )));
    }
    if args.timeout.is_zero() {
        return Err(usage("--timeout must be above 0"));
    }
    let runtime = runtime()?;
    let _guard = runtime.enter();
    let cluster = args.dir.open()?;
    let topology = cluster.manifest.topology;
    let from = super::parse_node(topology, &args.pair.from)?;
    let to = super::parse_node(topology, &args.pair.to)?;
    if from == to {
        return Err(usage("--from and --to are the same node"));
    }
    let options = PingOptions {
        count: args.count,
        interval: args.interval,
        wait: args.timeout,
    };
    if !args.output.json {
        println!(
            "PING {} -> {} on {topology}: {}, {} each",
            crate::print::node(topology, from),
            crate::print::node(topology, to),
            print::count(args.count, "round"),
            print::count(topology.local_connectivity(from, to), "path")
        );
    }
    let json = args.output.json;
    let report = runtime.block_on(ping::ping(&cluster, from, to, options, |round| {
        if !json {
            print_round(round);
        }
    }))?;
    cluster.close();
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer(&mut out, &report)?;
        writeln!(out)?;
    } else {
        print_summary(&mut out, topology, &report)?;
    }
    Ok(())
}

fn print_round(round: &Round) {
    let copies: Vec<String> = round
        .copies
        .iter()
        .map(|c| {
            let hops = c
                .hops
                .map_or("? hops".to_string(), |h| print::count(h, "hop"));
            let mark = if round.first == Some(c.index) {
                "*"
            } else {
                ""
            };
            match c.latency_us {
                // Numbered from 1, as copies are (copy n of k travels path n).
                Some(t) => format!("path {} ({hops}) {t} µs{mark}", c.index + 1),
                None => format!("path {} lost", c.index + 1),
            }
        })
        .collect();
    println!("round {}: {}", round.round, copies.join(", "));
}

fn print_summary(
    out: &mut impl Write,
    topology: cuberoute_protocol::Topology,
    report: &PingReport,
) -> std::io::Result<()> {
    // The nodes spelt as the first line spelt them.
    writeln!(
        out,
        "--- {} -> {} ping statistics (one way; * came first) ---",
        crate::print::node(topology, cuberoute_protocol::NodeId(report.from)),
        crate::print::node(topology, cuberoute_protocol::NodeId(report.to))
    )?;
    writeln!(
        out,
        "{:>4} {:>5} {:>9} {:>6} {:>6}  min/avg/max/mdev (µs)",
        "path", "hops", "received", "loss", "first"
    )?;
    for p in &report.paths {
        let hops = p.hops.map_or("-".to_string(), |h| h.to_string());
        let times = match (p.min_us, p.avg_us, p.max_us, p.mdev_us) {
            (Some(min), Some(avg), Some(max), Some(mdev)) => {
                format!("{min}/{avg:.0}/{max}/{mdev:.0}")
            }
            _ => "-".to_string(),
        };
        writeln!(
            out,
            "{:>4} {:>5} {:>5}/{:<3} {:>5.1}% {:>6}  {times}",
            p.index + 1,
            hops,
            p.received,
            p.sent,
            p.loss_percent,
            p.first
        )?;
    }
    Ok(())
}
