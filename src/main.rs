//! `cuberoute`: the one command-line binary. Each subcommand lives in `commands/`.

mod commands;
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
    /// The k node-disjoint paths between two nodes, as the protocol routes them.
    Paths(commands::paths::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Topology(args) => commands::topology::run(args),
        Command::Paths(args) => commands::paths::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("cuberoute: {err:#}");
            ExitCode::from(commands::exit_code(&err))
        }
    }
}
