//! `cuberoute sim <TOPOLOGY> [--seed N] [--duration T] [--rate R] [--json]`: a whole cluster of
//! real daemons in this one process, on a simulated network and clock
//! (`cuberoute_cluster::sim`); the same seed gives the same report.

use super::{parse_topology, usage};
use cuberoute_cluster::ClusterDir;
use cuberoute_cluster::sim::{SimOptions, run};
use std::time::Duration;

/// The largest cluster simulated.
const MAX_NODES: u64 = 4096;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The topology: `q:N`, `eh:S,T`, `hhc:M`, `mc:K,M` or `rdn:BASE,K`.
    pub topology: String,
    /// The seed every random draw of the run comes from.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Simulated time of traffic, after every link is up.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub duration: Duration,
    /// Sets a simulated second, each between two nodes drawn from the seed.
    #[arg(long, default_value_t = 20.0)]
    pub rate: f64,
    /// The report as one JSON document.
    #[arg(long)]
    pub json: bool,
}

pub fn run_command(args: Args) -> anyhow::Result<()> {
    let topology = parse_topology(&args.topology)?;
    if topology.node_count() > MAX_NODES {
        return Err(usage(format!(
            "{topology} has {} nodes: the simulation takes at most {MAX_NODES}",
            topology.node_count()
        )));
    }
    if !(args.rate > 0.0 && args.rate <= 10_000.0) {
        return Err(usage(format!(
            "--rate {}: must be above 0 and at most 10000",
            args.rate
        )));
    }
    if args.duration.is_zero() || args.duration > Duration::from_secs(3600) {
        return Err(usage("--duration must be above 0 and at most 1h"));
    }
    let options = SimOptions {
        topology,
        seed: args.seed,
        duration: args.duration,
        rate: args.rate,
        min_latency: Duration::from_micros(100),
        max_latency: Duration::from_micros(500),
    };
    let scratch = std::env::temp_dir().join(format!("cuberoute-sim-{}", std::process::id()));
    let dir = ClusterDir::new(&scratch);
    let report = run(&options, &dir);
    let _ = std::fs::remove_dir_all(&scratch);
    let report = report?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!(
            "{} seed {}: {} sets, {} of {} copies delivered, {} sets with a copy, {} lost, {} failed to send, {} path mismatches",
            report.topology,
            report.seed,
            report.sets_sent,
            report.copies_delivered,
            report.copies_expected,
            report.sets_with_a_copy,
            report.sets_lost,
            report.sets_failed_to_send,
            report.path_mismatches
        );
        println!(
            "latency p50 {:.0} µs, p99 {:.0} µs (simulated); every link up after {} ms; {} ms simulated in {} ms of wall clock ({}x)",
            report.latency_us.p50_us,
            report.latency_us.p99_us,
            report.ready_after_ms,
            report.simulated_ms,
            report.wall_ms,
            report.simulated_seconds_per_wall_second
        );
    }
    Ok(())
}
