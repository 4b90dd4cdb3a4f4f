//! `cuberoute chaos ...`: inject faults into a running cluster.

use super::cluster::DirArg;
use super::usage;
use cuberoute_cluster::runner;
use cuberoute_daemon::manifest::Manifest;

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Kill a node's process or container (SIGKILL: no draining, its buffers are lost).
    Kill(NodeArgs),
    /// Start a killed node's process or container again.
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
            if runner::kill(&dir, id).map_err(|e| usage(e.to_string()))? {
                println!("node {name} killed");
                Ok(())
            } else {
                Err(usage(format!("node {name} is not running")))
            }
        }
        Command::Restart(args) => {
            let (dir, id, name) = node(&args)?;
            if runner::restart(&dir, id).map_err(|e| usage(e.to_string()))? {
                println!("node {name} restarted");
                Ok(())
            } else {
                Err(usage(format!("node {name} is running; kill it first")))
            }
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
