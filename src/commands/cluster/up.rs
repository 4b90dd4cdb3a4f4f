//! `cluster init` and `cluster up` for local processes: the arguments read, the start and its
//! wait left to the cluster crate (`launch::start`, `ops::up`), what they did printed.

use super::super::{parse_topology, usage};
use crate::commands::args::DirArg;
use crate::print;
use cuberoute_cluster::launch::hosting::NodesPerProcess;
use cuberoute_cluster::launch::local::Lifetime;
use cuberoute_cluster::launch::netns;
use cuberoute_cluster::launch::phases::Phases;
use cuberoute_cluster::launch::start::{self, Local};
use cuberoute_protocol::Topology;
use std::net::Ipv4Addr;
use std::time::Duration;

#[derive(clap::Args, Debug)]
pub struct InitArgs {
    /// The topology: `q:N`, `eh:S,T`, `hhc:M`, `mc:K,M` or `rdn:BASE,K`.
    pub topology: String,
    #[command(flatten)]
    pub dir: DirArg,
    /// Node i listens on this address + 1 + i (inside 127.0.0.0/8).
    #[arg(long, default_value = "127.1.0.0")]
    pub base_addr: Ipv4Addr,
    /// The link port; control and metrics take the next two.
    #[arg(long, default_value_t = 7000)]
    pub port: u16,
    /// Keep reliable sets in memory only: no store in the nodes' configurations (the
    /// comparison for what durability costs; a restart forgets what a node held).
    #[arg(long)]
    pub no_store: bool,
    /// How often the dialling end of each link probes its neighbour (`liveness.interval` in
    /// every node's configuration; default: the daemon's 200 ms, or longer for a cluster whose
    /// links would probe more than 25 times a second together).
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub liveness_interval: Option<Duration>,
    /// Sources send on the constructed paths even around the dead links they know of
    /// (`liveness.route_around = false`): the baseline routing around is compared with.
    #[arg(long)]
    pub no_route_around: bool,
    /// Links do not watch a neighbour's process exit (`liveness.watch_exits = false`): probes
    /// alone find it gone, the baseline the watch is compared with.
    #[arg(long)]
    pub no_watch_exits: bool,
}

#[derive(clap::Args, Debug)]
pub struct UpArgs {
    #[command(flatten)]
    pub init: InitArgs,
    /// Give up waiting after this long (default: 30 s plus 100 ms per node).
    #[arg(long, value_parser = humantime::parse_duration)]
    pub timeout: Option<Duration>,
    #[command(flatten)]
    pub docker: super::docker::DockerArgs,
    /// Run every node in a Linux network namespace of its own, on a bridge, with its own address
    /// from 198.18.0.0/15 instead of --base-addr (root only; `cluster down` removes it all;
    /// docs/daemon.md, "Hosts with a network of their own").
    #[arg(long)]
    pub netns: bool,
    /// How many nodes each process runs: N, or `auto` (one process per core). The nodes of
    /// one process link with each other by a call; the processes are placed as `cluster
    /// placement` places hosts (docs/daemon.md, "Several nodes in one process").
    #[arg(long, value_name = "N|auto", default_value = "1")]
    pub nodes_per_process: NodesPerProcess,
}

impl InitArgs {
    /// The local cluster these arguments describe, its processes in network namespaces of
    /// their own with `netns`; a malformed topology is a usage error.
    pub fn local(&self, netns: bool) -> anyhow::Result<Local> {
        Ok(Local {
            topology: parse_topology(&self.topology)?,
            dir: self.dir.cluster(),
            base_addr: self.base_addr,
            port: self.port,
            no_store: self.no_store,
            liveness_interval: self.liveness_interval,
            no_route_around: self.no_route_around,
            no_watch_exits: self.no_watch_exits,
            netns,
            lifetime: Lifetime::UntilStopped,
            nodes_per_process: NodesPerProcess::default(),
        })
    }
}

impl UpArgs {
    pub fn timeout(&self, topology: Topology) -> Duration {
        self.timeout
            .unwrap_or(cuberoute_cluster::ops::ready::default_timeout(
                topology.node_count(),
            ))
    }
}

/// `cluster init`: check the arguments and the directory, and generate the cluster on
/// loopback addresses.
pub fn init_command(args: &InitArgs) -> anyhow::Result<()> {
    let local = args.local(false)?;
    start::init(&local, &mut Phases::start())?;
    println!(
        "cluster {} generated in {} ({} nodes); start it with `cuberoute cluster up`",
        local.topology,
        local.dir.display(),
        local.topology.node_count()
    );
    Ok(())
}

/// `cluster up`: generate, start, wait for every link, print a summary with where the time
/// went and what the start cost the processors.
pub fn up(args: &UpArgs) -> anyhow::Result<()> {
    if args.netns {
        // Before the topology is read, as the start checks it.
        netns::need_root().map_err(|e| usage(e.to_string()))?;
    }
    let local = Local {
        nodes_per_process: args.nodes_per_process,
        ..args.init.local(args.netns)?
    };
    let up = print::start_local(&local, args.timeout(local.topology))?;
    let what = match args.netns {
        true => "processes in network namespaces of their own".to_string(),
        false => print::hosted(args.nodes_per_process, "process", "processes"),
    };
    print::up_summary(&up, &what)
}
