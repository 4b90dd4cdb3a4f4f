//! `cluster init` and `cluster up` for local processes.

use super::super::{runtime, usage};
use super::{check_size, ensure_free, print_summary, wait_ready};
use crate::commands::args::DirArg;
use anyhow::Context;
use cuberoute_cluster::launch::generate;
use cuberoute_cluster::launch::local;
use cuberoute_cluster::launch::netns;
use cuberoute_cluster::launch::phases::Phases;
use cuberoute_cluster::launch::start_cpu::{LauncherMark, StartCpu};
use cuberoute_cluster::{Addressing, ClusterDir, Ports};
use cuberoute_protocol::Topology;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

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
    /// Local daemons end with this process (a bench's clusters); not a flag.
    #[arg(skip)]
    pub lifetime: local::Lifetime,
}

impl UpArgs {
    /// A local cluster of `topology` in `dir`, on loopback addresses after `base`.
    pub fn local(topology: Topology, dir: DirArg, base: Ipv4Addr) -> UpArgs {
        UpArgs {
            init: InitArgs {
                topology: topology.to_string(),
                dir,
                base_addr: base,
                port: 7000,
                no_store: false,
            },
            timeout: None,
            docker: super::docker::DockerArgs::none(),
            netns: false,
            lifetime: local::Lifetime::UntilStopped,
        }
    }

    pub fn timeout(&self, topology: Topology) -> Duration {
        self.timeout
            .unwrap_or(cuberoute_cluster::ops::ready::default_timeout(
                topology.node_count(),
            ))
    }
}

pub fn init_command(args: &InitArgs) -> anyhow::Result<()> {
    let (dir, topology) = init(args)?;
    println!(
        "cluster {topology} generated in {} ({} nodes); start it with `cuberoute cluster up`",
        dir.display(),
        topology.node_count()
    );
    Ok(())
}

/// Check the arguments and the directory, and generate the cluster on loopback addresses.
fn init(args: &InitArgs) -> anyhow::Result<(ClusterDir, Topology)> {
    init_timed(args, &mut Phases::start())
}

/// [`init`], ending the phases `checks`, `credentials` and `files` of `phases`.
fn init_timed(args: &InitArgs, phases: &mut Phases) -> anyhow::Result<(ClusterDir, Topology)> {
    let (dir, topology) = check(args, true)?;
    phases.end("checks");
    write(args, &dir, topology, phases, |ports| Addressing::Loopback {
        base: args.base_addr,
        ports,
    })?;
    Ok((dir, topology))
}

/// Check the arguments (the loopback base with `loopback`) and that the directory is free.
fn check(args: &InitArgs, loopback: bool) -> anyhow::Result<(ClusterDir, Topology)> {
    let topology = super::super::parse_topology(&args.topology)?;
    check_size(topology)?;
    if loopback {
        generate::check_loopback(args.base_addr, topology.node_count())
            .map_err(|e| usage(e.to_string()))?;
    }
    if args.port > u16::MAX - 2 {
        return Err(usage(format!(
            "--port {} leaves no room for the control and metrics ports",
            args.port
        )));
    }
    let dir = args.dir.cluster();
    ensure_free(&dir)?;
    Ok((dir, topology))
}

/// Generate the cluster, its nodes addressed by `addressing` on the ports of `args`, ending the
/// phases `credentials` and `files` of `phases`.
fn write(
    args: &InitArgs,
    dir: &ClusterDir,
    topology: Topology,
    phases: &mut Phases,
    addressing: impl FnOnce(Ports) -> Addressing,
) -> anyhow::Result<()> {
    let ports = Ports {
        link: args.port,
        control: args.port + 1,
        metrics: args.port + 2,
    };
    generate::generate_timed(dir, topology, &addressing(ports), None, phases)?;
    if args.no_store {
        generate::drop_store(dir, topology)?;
        phases.end("no store");
    }
    Ok(())
}

/// `cluster up`: generate, start, wait for every link, print a summary with where the time
/// went. Returns the time from start to all links up.
pub fn up(args: &UpArgs) -> anyhow::Result<Duration> {
    let (dir, topology, phases, cpu) = start_timed(args)?;
    let what = match args.netns {
        true => "processes in network namespaces of their own",
        false => "processes",
    };
    print_summary(&dir, topology, what, phases.total(), Some((&phases, &cpu)))?;
    Ok(phases.total())
}

/// Generate and start the cluster, and wait until every link is up. Returns the time that took
/// and the CPU it took.
pub fn start(args: &UpArgs) -> anyhow::Result<(ClusterDir, Topology, Duration, StartCpu)> {
    start_timed(args).map(|(dir, topology, phases, cpu)| (dir, topology, phases.total(), cpu))
}

/// [`start`], timed phase by phase: `checks`, (`network`,) `credentials`, `files`, `spawn`,
/// `answering` (until a round of the wait found every daemon answering), `links` (until every
/// link is up); with the CPU the daemons and this process used until then.
pub fn start_timed(args: &UpArgs) -> anyhow::Result<(ClusterDir, Topology, Phases, StartCpu)> {
    let mut phases = Phases::start();
    let mark = LauncherMark::now();
    if args.netns {
        netns::need_root().map_err(|e| usage(e.to_string()))?;
    }
    let binary = std::env::current_exe().context("locating the cuberoute binary")?;
    // Ctrl-C (or SIGTERM) while the cluster starts stops everything started so far (and
    // removes the network made for it, from the moment it is begun).
    let (dir, topology, network, interrupt) = if args.netns {
        let (dir, topology) = check(&args.init, false)?;
        phases.end("checks");
        let interrupt = local::interrupt::Catch::install();
        let making = Instant::now();
        let network = local::make_network(&dir, topology, &interrupt)?;
        phases.end("network");
        println!(
            "network: {} (made in {:.2} s)",
            network.describe(),
            making.elapsed().as_secs_f64()
        );
        let subnet = network.block;
        let written = write(&args.init, &dir, topology, &mut phases, |ports| {
            Addressing::Netns { subnet, ports }
        });
        if let Err(e) = written {
            let _ = local::stop(&dir, Duration::ZERO);
            return Err(e);
        }
        (dir, topology, Some(network), interrupt)
    } else {
        let (dir, topology) = init_timed(&args.init, &mut phases)?;
        (dir, topology, None, local::interrupt::Catch::install())
    };
    local::start(&dir, topology, &binary, &interrupt, network, args.lifetime)?;
    phases.end("spawn");
    let started = phases.started();
    let ready = runtime()?.block_on(async {
        tokio::select! {
            ready = wait_ready(&dir, started, args.timeout(topology)) => Some(ready),
            () = interrupt.wait() => None,
        }
    });
    match ready {
        Some(ready) => {
            let answering = ready?;
            phases.end_at("answering", answering);
            phases.end("links");
        }
        None => {
            let stopped = cuberoute_cluster::launch::runner::stop(&dir)?;
            anyhow::bail!("interrupted while waiting for the cluster; {stopped}");
        }
    }
    let cpu = StartCpu::measure(&cuberoute_cluster::launch::runner::pids(&dir)?, mark);
    Ok((dir, topology, phases, cpu))
}
