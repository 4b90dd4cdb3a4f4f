//! `cuberoute sim <TOPOLOGY> --duration T --rate R [--faults ...] [--seed N] [--json]`: the
//! chaos run of `chaos run`, on a whole cluster of real daemons in this one process, on a
//! simulated network and clock (`cuberoute_cluster::chaos::sim`); the same seed gives the same
//! report.

use super::args::Scenario;
use super::{parse_topology, usage};
use crate::print::{print_report, print_study};
use cuberoute_cluster::ClusterDir;
use cuberoute_cluster::chaos::redundancy::{StudyConfig, conditions};
use cuberoute_cluster::chaos::sim::{SimOptions, run};
use std::time::Duration;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The topology: `q:N`, `eh:S,T`, `hhc:M`, `mc:K,M` or `rdn:BASE,K`.
    pub topology: String,
    #[command(flatten)]
    pub scenario: Scenario,
    /// One-way latency of every datagram, drawn from this range (`100us..500us`). The
    /// simulation moves datagrams on 1 ms ticks, so every hop takes at least one tick.
    #[arg(long, default_value = "100us..500us", value_parser = latency_range)]
    pub latency: (Duration, Duration),
    /// The report as one JSON object: `chaos run`'s keys, and the simulated and wall-clock
    /// durations.
    #[arg(long)]
    pub json: bool,
    /// Nodes without a store: reliable sets in memory only (the comparison for what the store
    /// keeps across a crash).
    #[arg(long)]
    pub no_store: bool,
    /// Run the redundancy study instead of the chaos run (`chaos study`'s table: no fault,
    /// loss 1% and 5%, and --delay ± --jitter on every link; --rate, --wait and --seed apply).
    #[arg(long)]
    pub study: bool,
    /// With --study: sets per cell.
    #[arg(long, default_value_t = 2000)]
    pub sets: usize,
    /// Also write DIR/report.html (charts of every set and every fault window) and
    /// DIR/report.json.
    #[arg(long, value_name = "DIR")]
    pub report: Option<std::path::PathBuf>,
    /// Exit 1 when the run's verdict is invalid (after printing its report), as a checker does.
    #[arg(long, conflicts_with = "study")]
    pub check: bool,
    /// How many nodes each simulated host runs as one node host, the daemon's own code for
    /// several nodes in one process (`cluster up --nodes-per-process`), grouped as it groups
    /// them. A number only: `auto` depends on the machine, and a run on its options only.
    /// `--faults crash` then crashes a node inside its host, `host` a whole host.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub nodes_per_process: usize,
}

fn latency_range(text: &str) -> Result<(Duration, Duration), String> {
    let (low, high) = text
        .split_once("..")
        .ok_or_else(|| format!("{text:?}: write MIN..MAX, as 100us..500us"))?;
    let parse = |t: &str| humantime::parse_duration(t.trim()).map_err(|e| format!("{t:?}: {e}"));
    let (low, high) = (parse(low)?, parse(high)?);
    if low > high || high > Duration::from_secs(1) {
        return Err(format!(
            "{text:?}: MIN must not exceed MAX, and MAX is at most 1s"
        ));
    }
    Ok((low, high))
}

pub fn run_command(args: Args) -> anyhow::Result<()> {
    let topology = parse_topology(&args.topology)?;
    let most = cuberoute_cluster::chaos::sim::max_nodes(args.nodes_per_process);
    if topology.node_count() > most {
        return Err(usage(format!(
            "{topology} has {} nodes: the simulation takes at most {most}{}",
            topology.node_count(),
            if args.nodes_per_process > 1 {
                ""
            } else {
                " a host a node (more on node hosts: --nodes-per-process N)"
            }
        )));
    }
    if args.nodes_per_process == 0 || args.nodes_per_process as u64 > topology.node_count() {
        return Err(usage(format!(
            "--nodes-per-process {}: from 1 to the {} nodes of {topology}",
            args.nodes_per_process,
            topology.node_count()
        )));
    }
    if std::env::var_os("RUST_LOG").is_some() {
        // The daemons' logs, stamped with the simulation's time, not the wall clock's: two
        // runs of a seed log alike.
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_timer(SimulatedTime)
            .with_writer(std::io::stderr)
            .try_init();
    }
    let options = SimOptions {
        topology,
        run: args.scenario.config()?,
        min_latency: args.latency.0,
        max_latency: args.latency.1,
        store: !args.no_store,
        study: args.study.then(|| StudyConfig {
            conditions: conditions(&[0.01, 0.05], args.scenario.delay, args.scenario.jitter),
            sets: args.sets,
            rate: args.scenario.rate,
            wait: args.scenario.wait,
            seed: args.scenario.seed,
        }),
        nodes_per_process: args.nodes_per_process,
    };
    let scratch = std::env::temp_dir().join(format!("cuberoute-sim-{}", std::process::id()));
    let dir = ClusterDir::new(&scratch);
    let report = run(&options, &dir);
    let _ = std::fs::remove_dir_all(&scratch);
    let report = report?;
    if let Some(out) = &args.report {
        let page = cuberoute_cluster::chaos::page::write(
            out,
            &report.run.timeline,
            &serde_json::to_value(&report)?,
        )?;
        eprintln!("report: {}", page.display());
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else if let Some(cells) = &report.study {
        print_study(cells);
    } else {
        print_report(&report.run);
        println!(
            "  simulated: {} ms of simulated time in {} ms of wall clock ({}x)",
            report.simulated_ms, report.wall_ms, report.simulated_seconds_per_wall_second
        );
    }
    super::check_verdict(&report.run.verdict, args.check)
}

/// A log line's time in a simulation: seconds since it began, by its clock (`-` between the
/// simulation's steps).
struct SimulatedTime;

impl tracing_subscriber::fmt::time::FormatTime for SimulatedTime {
    fn format_time(&self, w: &mut tracing_subscriber::fmt::format::Writer<'_>) -> std::fmt::Result {
        match cuberoute_daemon::env::simulated_elapsed() {
            Some(at) => write!(w, "{:>10.6}s", at.as_secs_f64()),
            None => write!(w, "{:>11}", "-"),
        }
    }
}
