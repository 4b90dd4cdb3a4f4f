//! `cuberoute chaos ...`: inject faults into a running cluster.

use super::cluster::DirArg;
use super::usage;
use anyhow::Context;
use cuberoute_cluster::local;
use cuberoute_daemon::manifest::Manifest;
use nix::sys::signal::Signal;

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Kill a node's process (SIGKILL: no draining, its buffers are lost).
    Kill(NodeArgs),
    /// Start a killed node's process again.
    Restart(NodeArgs),
}

#[derive(clap::Args, Debug)]
pub struct NodeArgs {
    #[command(flatten)]
    pub dir: DirArg,
    /// The node.
    #[arg(long)]
    pub node: String,
}

pub fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Kill(args) => {
            let (dir, id, name) = node(&args)?;
            if local::signal_node(&dir, id, Signal::SIGKILL)? {
                println!("node {name} killed");
                Ok(())
            } else {
                Err(usage(format!("node {name} is not running")))
            }
        }
        Command::Restart(args) => {
            let (dir, id, name) = node(&args)?;
            let state = local::RunState::load(&dir)?
                .ok_or_else(|| usage(format!("no cluster is running in {}", dir.display())))?;
            if state.alive(&dir).iter().any(|p| p.id == id) {
                return Err(usage(format!("node {name} is running; kill it first")));
            }
            let binary = std::env::current_exe().context("locating the cuberoute binary")?;
            let pid = local::restart_node(&dir, &binary, id)?;
            println!("node {name} restarted (pid {pid})");
            Ok(())
        }
    }
}

fn node(
    args: &NodeArgs,
) -> anyhow::Result<(
    cuberoute_cluster::ClusterDir,
    cuberoute_protocol::NodeId,
    String,
)> {
    let dir = args.dir.cluster();
    let manifest = Manifest::load(&dir.manifest()).map_err(|e| usage(e.to_string()))?;
    let id = super::parse_node(manifest.topology, &args.node)?;
    Ok((dir, id, manifest.topology.format_node(id)))
}
