//! `cuberoute check MODEL`: parses the options, runs the model checker (crate
//! `cuberoute-check`) and prints its report; a violation is exit 1, after its trace.

use super::usage;
use cuberoute_check::delivery::{self, Delivery, DeliveryTrace, Faults};
use cuberoute_check::routing::mutant::{Mutant, Mutants};
use cuberoute_check::routing::{self, Params, Routing, RoutingTrace};
use cuberoute_check::run::{self, Budget, Report, Stopped};
use std::path::{Path, PathBuf};

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// The guarded-action routing of Q_n and EH(s,t), every interleaving from every corrupted
    /// configuration of bounded buffers: every packet delivered or flushed within B, genuine
    /// copies dropped only for a full buffer, nothing delivered that is not a copy, no panic.
    Routing(RoutingArgs),
    /// The delivery layer (outbox, inbox, acknowledgements, resends, replay windows, stores),
    /// every interleaving of a network that loses, duplicates, reorders, delays and replays,
    /// with nodes that crash and restart: no acknowledged set lost, none handed over twice, no
    /// replay opened, every accepted set settled, and acknowledged while faults allow.
    Delivery(DeliveryArgs),
}

#[derive(clap::Args, Debug)]
pub struct DeliveryArgs {
    /// Nodes (2 to 4): node 0 the destination, the others sources.
    #[arg(long, default_value_t = 2)]
    nodes: usize,
    /// Reliable sets sent (1 to 3), by the sources in turn, each at any moment.
    #[arg(long, default_value_t = 2)]
    sets: usize,
    /// Disjoint paths between a source and the destination (1 to 3).
    #[arg(long, default_value_t = 2)]
    paths: usize,
    /// The sets' delivery mode: reliable, reliable+code:T, reliable+secret:T, ...
    #[arg(long, default_value = "reliable")]
    mode: String,
    /// How many sends a set's life allows (2 to 4).
    #[arg(long, default_value_t = 2)]
    attempts: u32,
    /// Messages the network may lose (0 to 3).
    #[arg(long, default_value_t = 1)]
    losses: u8,
    /// Messages on their way the network may deliver twice (0 to 3; a replay can do the same,
    /// and more).
    #[arg(long, default_value_t = 0)]
    duplicates: u8,
    /// Messages sent at any time before that someone may send again (0 to 3).
    #[arg(long, default_value_t = 1)]
    replays: u8,
    /// Timers that may fire while messages are on their way (0 to 3).
    #[arg(long, default_value_t = 0)]
    delays: u8,
    /// Nodes that may be killed and restarted (0 to 3).
    #[arg(long, default_value_t = 1)]
    crashes: u8,
    /// Sets travel clear (the default seals them end to end).
    #[arg(long)]
    clear: bool,
    /// No node keeps a store (what a restart forgets then is a finding, not a bug).
    #[arg(long)]
    no_store: bool,
    /// Check a deliberately broken rule: exit 0 once a property breaks (caught, its trace
    /// printed), 1 if none does. ack-before-write, accept-before-write,
    /// window-forgotten-at-restart, no-replay-window, no-resend, store-not-consulted,
    /// not-resumed.
    #[arg(long)]
    mutant: Option<String>,
    #[command(flatten)]
    run: RunArgs,
}

/// What every model's run takes.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// Stop after generating this many states (the report says the run was cut short).
    #[arg(long, default_value_t = 50_000_000)]
    max_states: usize,
    /// Replay a trace instead of exploring: a violation's `trace`, or a whole `--json` report
    /// (each of its violations' traces).
    #[arg(long, conflicts_with_all = ["mutant"])]
    replay: Option<PathBuf>,
    /// The whole report as one JSON object.
    #[arg(long)]
    json: bool,
}

impl RunArgs {
    /// The budget of a run; a mutant's stops at its first violation.
    fn budget(&self, mutant: bool) -> anyhow::Result<Budget> {
        if self.max_states == 0 {
            return Err(usage("--max-states must be at least 1"));
        }
        Ok(Budget {
            max_states: self.max_states,
            stop_at_violation: mutant,
        })
    }
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
    /// Check a deliberately broken `hop`, one check left out: exit 0 once a property breaks
    /// (the mutant is caught, its trace printed), 1 if none does (it survived: the check is not
    /// what keeps the properties on this topology). no-budget (caught from EH(1,2) on),
    /// no-pd-check, no-index-check, no-source-check, no-turning-point-check (on Q_n),
    /// no-node-check, no-anchor-check.
    #[arg(long)]
    mutant: Option<String>,
    #[command(flatten)]
    run: RunArgs,
}

pub fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Routing(args) => check_routing(args),
        Command::Delivery(args) => check_delivery(args),
    }
}

fn check_delivery(args: DeliveryArgs) -> anyhow::Result<()> {
    if let Some(path) = &args.run.replay {
        return replay_traces(path, "delivery", |t: &DeliveryTrace| {
            delivery::replay(t).map(|b| b.into_iter().map(|(n, w)| (n, format!("{w:?}"))).collect())
        });
    }
    let mutant = args
        .mutant
        .as_deref()
        .map(delivery::mutant::Mutant::parse)
        .transpose()
        .map_err(usage)?;
    let params = delivery::Params {
        nodes: args.nodes,
        sets: args.sets,
        paths: args.paths,
        mode: args.mode.parse().map_err(usage)?,
        attempts: args.attempts,
        faults: Faults {
            losses: args.losses,
            duplicates: args.duplicates,
            replays: args.replays,
            delays: args.delays,
            crashes: args.crashes,
        },
        sealed: !args.clear,
        store: !args.no_store,
        mutant,
    };
    params.check().map_err(usage)?;
    let budget = args.run.budget(mutant.is_some())?;
    let report = run::check(Delivery::new(params), budget);
    print(&report, args.run.json)?;
    match mutant {
        None => conclude(&report),
        Some(mutant) => caught(&report, &mutant.to_string(), "these parameters"),
    }
}

/// The report, as JSON or as a person reads it.
fn print<P: serde::Serialize, I: serde::Serialize, S: std::fmt::Debug + serde::Serialize>(
    report: &Report<P, I, S>,
    json: bool,
) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(report)?);
    } else {
        print_report(report);
    }
    Ok(())
}

/// A mutant's run: caught (exit 0) when a property broke, survived (exit 1) when none did.
fn caught<P, I, S>(report: &Report<P, I, S>, mutant: &str, on: &str) -> anyhow::Result<()> {
    if report.violated() {
        let names: Vec<&str> = report.violations.iter().map(|v| v.property).collect();
        eprintln!("mutant {mutant} caught: {}", names.join(", "));
        Ok(())
    } else {
        anyhow::bail!("mutant {mutant} survived on {on}: no property broke")
    }
}

fn check_routing(args: RoutingArgs) -> anyhow::Result<()> {
    if let Some(path) = &args.run.replay {
        return replay_routing(path);
    }
    let mutant = args
        .mutant
        .as_deref()
        .map(Mutant::parse)
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
    let budget = args.run.budget(mutant.is_some())?;
    let report = run::check(Routing::new(params), budget);
    print(&report, args.run.json)?;
    match mutant {
        None => conclude(&report),
        Some(mutant) => caught(&report, &mutant.to_string(), &args.topology),
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

fn replay_routing(path: &Path) -> anyhow::Result<()> {
    replay_traces(path, "routing", |t: &RoutingTrace| {
        routing::replay(t).map(|b| {
            b.into_iter()
                .map(|(n, net)| (n, format!("{net:?}")))
                .collect()
        })
    })
}

/// Replay the traces of `path` (a trace of `model`, or a report of its violations) with
/// `replay`, which names each property broken on the way and the state it broke in; exit 1
/// when one broke.
fn replay_traces<T: serde::de::DeserializeOwned>(
    path: &Path,
    model: &str,
    replay: impl Fn(&T) -> Result<Vec<(String, String)>, String>,
) -> anyhow::Result<()> {
    let text =
        std::fs::read_to_string(path).map_err(|e| usage(format!("{}: {e}", path.display())))?;
    let traces: Vec<T> = match serde_json::from_str::<T>(&text) {
        Ok(trace) => vec![trace],
        Err(_) => {
            #[derive(serde::Deserialize)]
            struct Violation<T> {
                trace: T,
            }
            #[derive(serde::Deserialize)]
            struct Reported<T> {
                violations: Vec<Violation<T>>,
            }
            let reported: Reported<T> = serde_json::from_str(&text).map_err(|e| {
                usage(format!(
                    "{} is neither a {model} trace nor a report of one: {e}",
                    path.display()
                ))
            })?;
            reported.violations.into_iter().map(|v| v.trace).collect()
        }
    };
    let mut first_broken = None;
    for trace in &traces {
        let broken = replay(trace).map_err(usage)?;
        match broken.first() {
            None => println!("replayed: no property broke"),
            Some((name, state)) => {
                println!("replayed: {name:?} broke, in {state}");
                first_broken.get_or_insert(name.clone());
            }
        }
    }
    match first_broken {
        Some(name) => anyhow::bail!("the trace breaks {name:?}"),
        None => Ok(()),
    }
}
