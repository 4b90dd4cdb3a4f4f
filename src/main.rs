//! `cuberoute`: the one command-line binary. Each subcommand lives in `commands/`.

mod commands;
mod maxflow;
mod plot;
mod svg;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Route messages over all node-disjoint paths of hypercubes and exchanged hypercubes.
#[derive(Parser, Debug)]
#[command(name = "cuberoute", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Facts of a topology: nodes, degrees, diameter, connectivity, k(u,v).
    Topology(commands::topology::Args),
    /// The k node-disjoint paths between two nodes, as the protocol routes them; on q:N also
    /// node-to-set, set-to-set and bit-constrained paths.
    Paths(commands::paths::Args),
    /// Reproduce the papers' empirical study of an algorithm on Q_n: longest paths and time per
    /// size, against the bound and a generic max flow; writes CSV, Markdown and SVG.
    Study(commands::study::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Topology(args) => commands::topology::run(args),
        Command::Paths(args) => commands::paths::run(args),
        Command::Study(args) => commands::study::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("cuberoute: {err:#}");
            ExitCode::from(commands::exit_code(&err))
        }
    }
}
