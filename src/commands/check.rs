//! `cuberoute check MODEL`: parses the options, runs the model checker (crate
//! `cuberoute-check`) and prints its report; a violation is exit 1, after its trace.

use super::usage;
use cuberoute_check::routing::mutant::Mutant;
use cuberoute_check::routing::{self, Params, Routing, RoutingTrace};
use cuberoute_check::run::{self, Budget, Report, Stopped};
use std::path::PathBuf;

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// The guarded-action routing of Q_n and EH(s,t), every interleaving from every corrupted
    /// configuration of bounded buffers: every packet delivered or flushed within B, genuine
    /// copies dropped only for a full buffer, nothing delivered that is not a copy, no panic.
    Routing(RoutingArgs),
}

#[derive(clap::Args, Debug)]
pub struct RoutingArgs {
    /// The topology: Q_n or EH(s,t) of at most 32 nodes.
    #[arg(long, default_value = "q:3")]
    topology: String,
    /// Corrupted packets in each initial configuration (0 to 3): every choice of them.
    #[arg(long, default_value_t = 1)]
    corrupted: usize,
    /// Packets each node's buffer holds (1 to 4); one more is dropped, as a full link buffer
    /// drops it.
    #[arg(long, default_value_t = 2)]
    capacity: usize,
    /// Genuine sets input at any moment (0 to 3): between node 0 and the farthest node, then
    /// back.
    #[arg(long, default_value_t = 1)]
    sets: usize,
    /// Stop after generating this many states (the report says the run was cut short).
    #[arg(long, default_value_t = 50_000_000)]
    max_states: usize,
    /// Check a deliberately broken `hop`, one check left out: exit 0 once a property breaks
    /// (the mutant is caught, its trace printed), 1 if none does (it survived: the check is not
    /// what keeps the properties on this topology). no-budget (caught from EH(1,2) on),
    /// no-pd-check, no-index-check, no-source-check, no-turning-point-check (on Q_n),
    /// no-node-check, no-anchor-check.
    #[arg(long)]
    mutant: Option<String>,
    /// Replay a trace instead of exploring: a violation's `trace`, or a whole `--json` report
    /// (each of its violations' traces).
    #[arg(long, conflicts_with_all = ["mutant"])]
    replay: Option<PathBuf>,
    /// The whole report as one JSON object.
    #[arg(long)]
    json: bool,
}

pub fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Routing(args) => check_routing(args),
    }
}

fn check_routing(args: RoutingArgs) -> anyhow::Result<()> {
    if let Some(path) = &args.replay {
        return replay_routing(path);
    }
    let mutant = args
        .mutant
        .as_deref()
        .map(str::parse::<Mutant>)
        .transpose()
        .map_err(usage)?;
    let params = Params {
        topology: super::parse_topology(&args.topology)?,
        corrupted: args.corrupted,
        capacity: args.capacity,
        sets: args.sets,
        mutant,
    };
    params.check().map_err(usage)?;
    if args.max_states == 0 {
        return Err(usage("--max-states must be at least 1"));
    }
    let budget = Budget {
        max_states: args.max_states,
        stop_at_violation: mutant.is_some(),
    };
    let report = run::check(Routing::new(params), budget);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_report(&report);
    }
    match mutant {
        None => conclude(&report),
        Some(mutant) if report.violated() => {
            let names: Vec<&str> = report.violations.iter().map(|v| v.property).collect();
            eprintln!("mutant {mutant} caught: {}", names.join(", "));
            Ok(())
        }
        Some(mutant) => anyhow::bail!(
            "mutant {mutant} survived on {}: no property broke without its check",
            args.topology
        ),
    }
}

/// The report, as a person reads it.
fn print_report<P: serde::Serialize, I, S: std::fmt::Debug>(report: &Report<P, I, S>) {
    let stopped = match report.stopped {
        Stopped::Exhausted => "every reachable state explored",
        Stopped::Budget => "stopped by --max-states: the rest is not explored",
        Stopped::Violation => "stopped at the first violation",
    };
    println!(
        "{} model: {} initial states, {} states ({} distinct), depth {}, {:.1} s on {} threads; {stopped}",
        report.model,
        report.initial_states,
        report.states,
        report.unique_states,
        report.max_depth,
        report.seconds,
        report.threads,
    );
    for p in &report.properties {
        let outcome = match (p.kind, p.holds) {
            ("sometimes", true) => "seen",
            ("sometimes", false) => "NEVER SEEN",
            (_, true) => "holds",
            (_, false) => "BROKEN",
        };
        println!("  {:<10} {:<32} {outcome}", p.kind, p.name);
    }
    println!("  figures: {}", report.figures);
    for v in &report.violations {
        println!(
            "violation of {:?} after {} steps: {:?}",
            v.property,
            v.trace.steps.len(),
            v.trace.steps
        );
        println!("  (the whole trace, to replay with --replay: --json)");
    }
}

/// Exit 1 when a property broke (or an expected example never showed), once the report is out.
fn conclude<P, I, S>(report: &Report<P, I, S>) -> anyhow::Result<()> {
    if report.violated() {
        let names: Vec<&str> = report.violations.iter().map(|v| v.property).collect();
        anyhow::bail!("{} broken: {}", report.model, names.join(", "));
    }
    let unseen: Vec<&str> = report
        .properties
        .iter()
        .filter(|p| !p.holds)
        .map(|p| p.name)
        .collect();
    if !unseen.is_empty() && report.stopped == Stopped::Exhausted {
        anyhow::bail!("{}: never seen: {}", report.model, unseen.join(", "));
    }
    Ok(())
}

fn replay_routing(path: &std::path::Path) -> anyhow::Result<()> {
    let text =
        std::fs::read_to_string(path).map_err(|e| usage(format!("{}: {e}", path.display())))?;
    let traces: Vec<RoutingTrace> = match serde_json::from_str::<RoutingTrace>(&text) {
        Ok(trace) => vec![trace],
        Err(_) => {
            #[derive(serde::Deserialize)]
            struct Violation {
                trace: RoutingTrace,
            }
            #[derive(serde::Deserialize)]
            struct Reported {
                violations: Vec<Violation>,
            }
            let reported: Reported = serde_json::from_str(&text).map_err(|e| {
                usage(format!(
                    "{} is neither a routing trace nor a report of one: {e}",
                    path.display()
                ))
            })?;
            reported.violations.into_iter().map(|v| v.trace).collect()
        }
    };
    let mut first_broken = None;
    for trace in &traces {
        let broken = routing::replay(trace).map_err(usage)?;
        match broken.first() {
            None => println!("replayed {} steps: no property broke", trace.steps.len()),
            Some((name, net)) => {
                println!(
                    "replayed {} steps: {name:?} broke, in {net:?}",
                    trace.steps.len()
                );
                first_broken.get_or_insert(name.clone());
            }
        }
    }
    match first_broken {
        Some(name) => anyhow::bail!("the trace breaks {name:?}"),
        None => Ok(()),
    }
}
