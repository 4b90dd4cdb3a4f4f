//! `cuberoute`: the one command-line binary. Each subcommand lives in `commands/`.

mod commands;
mod print;
mod svg;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Route messages over all node-disjoint paths of hypercube-family networks: hypercubes (q:N),
/// exchanged hypercubes (eh:S,T), hierarchical hypercubes (hhc:M), metacubes (mc:K,M) and
/// recursive dual-nets (rdn:BASE,K).
#[derive(Parser, Debug)]
#[command(name = "cuberoute", version, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Name nodes by their integer ids in what is printed, not in the topology's notation
    /// (`00.10.1` on EH(2,2)); every command takes either as input.
    #[arg(long, global = true)]
    numeric: bool,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Facts of a topology: nodes, degrees, diameter, connectivity, k(u,v).
    Topology(commands::topology::Args),
    /// The k node-disjoint paths between two nodes, as a cluster routes them; also node-to-set
    /// (q:N, hhc:M, mc:K,M, rdn:BASE,K), set-to-set (q:N, hhc:M) and bit-constrained (q:N) paths.
    Paths(commands::paths::Args),
    /// Start a local cluster, send through it, show the paths and the status.
    Demo(commands::demo::Args),
    /// Start, watch and stop a cluster of daemons.
    #[command(subcommand)]
    Cluster(commands::cluster::Command),
    /// Send a message set through a running cluster.
    Send(commands::send::Args),
    /// Read a node's output buffer.
    Recv(commands::recv::Args),
    /// What a node runs with, and what its links are doing.
    #[command(subcommand)]
    Show(commands::show::Command),
    /// Send small sets from one node to another and show, per round and per path, how long
    /// each of the k copies took, which came first and which were lost.
    Ping(commands::ping::Args),
    /// Follow what the nodes see happen (links up and down, deliveries, drops, faults,
    /// reloads), one line or JSON object per event, until interrupted.
    Monitor(commands::monitor::Args),
    /// Run a whole cluster of real daemons in this process on a simulated network and clock,
    /// send through it and report; the same seed gives the same report.
    Sim(commands::sim::Args),
    /// Whether this node's daemon is up (`--local`: the container healthcheck).
    Status(commands::status::Args),
    /// A Docker Swarm of several engines on one machine, each host a network namespace with an
    /// address of its own: make it, cut and restore a host's link, take it down (root only).
    #[command(subcommand)]
    Testbed(commands::testbed::Command),
    /// Inject faults into a running cluster.
    #[command(subcommand)]
    Chaos(commands::chaos::Command),
    /// Measure clusters: latency, throughput, memory, start-up, against a raw quinn baseline.
    Bench(commands::bench::Args),
    #[command(hide = true)]
    BenchRelayPeer(commands::bench::RelayPeerArgs),
    #[command(hide = true)]
    BenchRelayRing(commands::bench::RelayRingArgs),
    #[command(hide = true)]
    BenchRelayMesh(commands::bench::RelayMeshArgs),
    /// Run one node (started by `cluster up`, or by hand with a config file).
    Daemon(Box<cuberoute_daemon::config::DaemonArgs>),
    /// Reproduce the papers' empirical study of an algorithm: on Q_n against the bound and a
    /// generic max flow, HHC-N2S against HHC-iN2S, MC-N2S against its bound; writes CSV,
    /// Markdown and SVG.
    Study(commands::study::Args),
    /// Model-check the protocol's own code: every interleaving of small configurations, with
    /// a budget of states; a violation is printed with a trace that replays it.
    #[command(subcommand)]
    Check(commands::check::Command),
}

/// When set, the command line is parsed and nothing is run (exit 0): tests/docs.rs checks
/// with it that each documented command needing a running cluster is spelled as the CLI takes
/// it.
const PARSE_ONLY: &str = "CUBEROUTE_PARSE_ONLY";

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => return usage_error(error),
    };
    if std::env::var_os(PARSE_ONLY).is_some() {
        return ExitCode::SUCCESS;
    }
    if !matches!(
        cli.command,
        Command::Daemon(_)
            | Command::BenchRelayPeer(_)
            | Command::BenchRelayRing(_)
            | Command::BenchRelayMesh(_)
    ) {
        // A command whose output is cut short (`| head`) ends quietly, as Unix tools do. The
        // daemon keeps Rust's default (SIGPIPE ignored): a scraper hanging up must not kill it.
        // SAFETY: at the start of main, before any thread exists; SIG_DFL is a valid handler.
        unsafe {
            let _ = nix::sys::signal::signal(
                nix::sys::signal::Signal::SIGPIPE,
                nix::sys::signal::SigHandler::SigDfl,
            );
        }
    }
    if cli.numeric {
        print::name_nodes_numerically();
    }
    let result = match cli.command {
        Command::Topology(args) => commands::topology::run(args),
        Command::Paths(args) => commands::paths::run(args),
        Command::Demo(args) => commands::demo::run(args),
        Command::Cluster(command) => commands::cluster::run(command),
        Command::Send(args) => commands::send::run(args),
        Command::Recv(args) => commands::recv::run(args),
        Command::Ping(args) => commands::ping::run(args),
        Command::Monitor(args) => commands::monitor::run(args),
        Command::Sim(args) => commands::sim::run_command(args),
        Command::Show(command) => commands::show::run(command),
        Command::Chaos(command) => commands::chaos::run(command),
        Command::Testbed(command) => commands::testbed::run(command),
        Command::Status(args) => commands::status::run(args),
        Command::Daemon(args) => commands::daemon::run(*args),
        Command::Bench(args) => commands::bench::run(args),
        Command::BenchRelayPeer(args) => commands::bench::relay_peer(args),
        Command::BenchRelayRing(args) => commands::bench::relay_ring(args),
        Command::BenchRelayMesh(args) => commands::bench::relay_mesh(args),
        Command::Study(args) => commands::study::run(args),
        Command::Check(command) => commands::check::run(command),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("cuberoute: {err:#}");
            ExitCode::from(commands::exit_code(&err))
        }
    }
}

/// A usage error of clap's as every other bad input is told: one line, with clap's tip if it
/// has one and the command's `--help` to try, and exit 2. Help and the version print as clap
/// prints them.
fn usage_error(error: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        error.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        error.exit();
    }
    let text = error.to_string();
    // The first line, and what clap lists under it up to the first blank line (the arguments
    // missing, say), on one line.
    let mut lines = text.lines();
    let mut first = lines
        .next()
        .unwrap_or_default()
        .trim_start_matches("error: ")
        .trim()
        .to_string();
    let listed: Vec<&str> = lines
        .take_while(|line| !line.trim().is_empty())
        .map(str::trim)
        .filter(|line| !line.starts_with("tip: "))
        .collect();
    if !listed.is_empty() {
        first = format!("{} {}", first, listed.join(", "));
    }
    let mut said = vec![first.as_str()];
    said.extend(
        text.lines()
            .filter_map(|line| line.trim().strip_prefix("tip: ")),
    );
    // `Usage: cuberoute cluster logs [OPTIONS] ...`: the command is the words before the first
    // option or argument.
    let command = text
        .lines()
        .find_map(|line| line.strip_prefix("Usage: "))
        .map(|usage| {
            usage
                .split_whitespace()
                .take_while(|word| !word.starts_with(['[', '<', '-']))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|command| !command.is_empty())
        .unwrap_or_else(|| "cuberoute".to_string());
    eprintln!("cuberoute: {} (try `{command} --help`)", said.join("; "));
    ExitCode::from(2)
}
