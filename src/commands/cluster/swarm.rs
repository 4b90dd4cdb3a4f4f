//! `cluster swarm`: one container per node over the hosts of a Docker Swarm
//! ([`cuberoute_cluster::launch::swarm`]), from a testbed (`cuberoute testbed up`) or a real
//! manager.

use super::super::{runtime, usage};
use crate::commands::args::DirArg;
use cuberoute_cluster::launch::hosting::NodesPerProcess;
use cuberoute_cluster::launch::placement::PlacementKind;
use cuberoute_cluster::launch::run_state::RunState;
use cuberoute_cluster::launch::start::ensure_free;
use cuberoute_cluster::launch::swarm::{self, Plan, SwarmRun, Target};
use cuberoute_cluster::ops::cluster_client::links_up;
use cuberoute_cluster::ops::ready::{self, NotReady};
use cuberoute_cluster::{ClusterClient, ClusterDir, launch::runner};
use cuberoute_protocol::Topology;
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The image unless told otherwise (a testbed's own otherwise).
pub const DEFAULT_IMAGE: &str = "cuberoute:latest";

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The topology: `q:N`, `eh:S,T`, `hhc:M`, `mc:K,M` or `rdn:BASE,K`.
    pub topology: String,
    #[command(flatten)]
    pub dir: DirArg,
    /// A testbed made by `cuberoute testbed up` (its directory): its manager, and every host's
    /// engine, which `cluster status`, `chaos kill` and `cluster down` then reach.
    #[arg(
        long,
        required_unless_present = "docker_host",
        conflicts_with = "docker_host"
    )]
    pub testbed: Option<PathBuf>,
    /// The Docker endpoint of a Swarm manager (`unix:///var/run/docker.sock` on the manager
    /// itself, `ssh://user@host`, `tcp://host:2376`). Its swarm nodes must be labelled
    /// cuberoute.host=h1..hN, or none: then they are, in hostname order.
    #[arg(long)]
    pub docker_host: Option<String>,
    /// Which host each node goes to: `paths` (keep a path for the most pairs when one host is
    /// lost), `packed` (blocks of ids) or `spread` (each node's neighbours on other hosts);
    /// `cuberoute cluster placement` compares them.
    #[arg(long, default_value = "paths", value_parser = parse_placement)]
    pub placement: PlacementKind,
    /// The stack's name (default: from the directory's path).
    #[arg(long)]
    pub stack: Option<String>,
    /// The image, on every host already (default: the testbed's, else cuberoute:latest).
    #[arg(long)]
    pub image: Option<String>,
    /// The overlay network's /16.
    #[arg(long, default_value = "10.210.0.0")]
    pub subnet: Ipv4Addr,
    /// Give up waiting for every task running and every link up after this long (default:
    /// 60 s plus 1 s per node).
    #[arg(long, value_parser = humantime::parse_duration)]
    pub timeout: Option<Duration>,
    /// Let the nodes take fault injection from clients of role chaos (`chaos.allow = true`).
    /// By default they refuse it: on real hosts no client certificate turns a node into a
    /// capturing or forging relay (`chaos kill` and `chaos run --faults host` act on the
    /// engines, not through the nodes, and work either way).
    #[arg(long)]
    pub allow_chaos: bool,
    /// How often the dialling end of each link probes its neighbour (`liveness.interval` in
    /// every node's configuration; default: paced by the cluster's links, as `cluster up`'s).
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub liveness_interval: Option<Duration>,
    /// How many nodes each task runs as one process (a node host, service `host-<first id>`):
    /// each host's nodes in tasks of up to N, or `auto`, one task a host. Default 1: a task a
    /// node. Crashing one node of a task alone (`chaos kill --node`) is fault injection: it
    /// needs --allow-chaos.
    #[arg(long, value_name = "N|auto", default_value = "1")]
    pub nodes_per_container: NodesPerProcess,
}

fn parse_placement(name: &str) -> Result<PlacementKind, String> {
    name.parse::<PlacementKind>().map_err(|e| e.to_string())
}

/// How long to wait by default: scheduling, configs and secrets, and every container's
/// healthcheck come before the links.
pub fn default_timeout(topology: Topology) -> Duration {
    Duration::from_secs(60) + Duration::from_secs(1) * topology.node_count() as u32
}

/// `cluster swarm`: deploy, wait, print how to use it.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let started = Instant::now();
    let topology = super::super::parse_topology(&args.topology)?;
    if topology.node_count() > swarm::max_nodes() {
        return Err(usage(format!(
            "{topology} has {} nodes: a swarm cluster takes at most {} (one published port \
             each, below the ephemeral ports)",
            topology.node_count(),
            swarm::max_nodes()
        )));
    }
    if u32::from(args.subnet) & 0xffff != 0 {
        return Err(usage(format!(
            "--subnet {} must be the base of a /16 (like 10.210.0.0)",
            args.subnet
        )));
    }
    let dir = args.dir.cluster();
    let stack = args
        .stack
        .clone()
        .unwrap_or_else(|| swarm::stack_name(&dir));
    swarm::check_stack_name(&stack).map_err(usage)?;
    ensure_free(&dir)?;
    let (target, testbed_image) = target(args)?;
    if let Err(why) = target.manager.answers() {
        anyhow::bail!(
            "the Swarm manager's engine at {} does not answer: {why}",
            target.manager.endpoint
        );
    }
    let (hosts, labelled) = swarm::hosts(&target)?;
    if labelled {
        println!(
            "labelled the swarm's {} nodes cuberoute.host=h1..h{} in hostname order",
            hosts.len(),
            hosts.len()
        );
    }
    let of =
        swarm::place(topology, hosts.len(), args.placement).map_err(|e| usage(e.to_string()))?;
    let containers = swarm::tasks(topology, &of, args.nodes_per_container).map_err(usage)?;
    let plan = Plan {
        topology,
        hosts: of,
        containers,
        placement: if hosts.len() == 1 {
            "one host".into()
        } else {
            args.placement.to_string()
        },
        stack,
        image: args
            .image
            .clone()
            .or(testbed_image)
            .unwrap_or_else(|| DEFAULT_IMAGE.into()),
        subnet: args.subnet,
        allow_chaos: args.allow_chaos,
        liveness_interval: args.liveness_interval,
    };
    let run = swarm::prepare(&dir, &target, hosts, &plan)?;
    // Recorded before the deploy: `cluster down` finds whatever part of it was made.
    RunState::Swarm {
        topology,
        run: run.clone(),
    }
    .save(&dir)?;
    let deploying = Instant::now();
    if let Err(e) = swarm::deploy(&dir, &run) {
        let removed = runner::stop(&dir);
        return Err(e.context(match removed {
            Ok(_) => "the stack was not deployed; what was made of it was removed".to_string(),
            Err(r) => format!(
                "the stack was not deployed, and removing it failed too ({r:#}): `cuberoute \
                 cluster down --dir {}` tries again",
                dir.display()
            ),
        }));
    }
    let deployed = deploying.elapsed();
    let timeout = args.timeout.unwrap_or_else(|| default_timeout(topology));
    let linked = wait(&dir, &run, timeout)?;
    summary(
        &dir,
        topology,
        &run,
        &plan,
        started.elapsed(),
        deployed,
        linked,
    );
    Ok(())
}

/// The manager and the endpoints known, and a testbed's image.
fn target(args: &Args) -> anyhow::Result<(Target, Option<String>)> {
    match (&args.testbed, &args.docker_host) {
        (Some(tb), _) => {
            let testbed = cuberoute_cluster::launch::testbed::load(tb)
                .map_err(|e| usage(format!("{e:#}")))?;
            let endpoints: BTreeMap<String, String> = testbed
                .hosts
                .iter()
                .map(|h| (h.name.clone(), h.docker_host()))
                .collect();
            Ok((
                Target {
                    manager: swarm::engine::Engine::new(testbed.manager().docker_host()),
                    endpoints,
                    testbed: Some(std::path::absolute(tb)?),
                },
                Some(testbed.image.clone()),
            ))
        }
        (None, Some(endpoint)) => Ok((
            Target {
                manager: swarm::engine::Engine::new(endpoint),
                endpoints: BTreeMap::new(),
                testbed: None,
            },
            None,
        )),
        (None, None) => Err(usage("--testbed TB or --docker-host ENDPOINT is needed")),
    }
}

/// Wait until every task runs and every link is up; the time it took. On a timeout, the
/// error names the nodes that are not ready and what the manager says of their tasks; the
/// stack is left deployed.
fn wait(dir: &ClusterDir, run: &SwarmRun, timeout: Duration) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let runtime = runtime()?;
    let _guard = runtime.enter();
    let cluster = ClusterClient::open(dir)?;
    let (_, total) = links_up(&[], &cluster.manifest);
    let bar = ProgressBar::new(total as u64);
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg} {pos}/{len} link ends {wide_bar} {elapsed}")
            .expect("a valid template"),
    );
    let waited = runtime.block_on(ready::wait_ready(&cluster, timeout, &mut |round| {
        bar.set_position(round.link_ends_up as u64);
        let running = round.running.unwrap_or(0);
        bar.set_message(format!("{running}/{} tasks running,", round.nodes));
    }));
    cluster.close();
    match waited {
        Ok(_) => {
            bar.finish_and_clear();
            Ok(started.elapsed())
        }
        Err(e) => {
            bar.abandon();
            let nodes = match &e {
                NotReady::TimedOut { not_ready, .. } => not_ready.clone(),
                NotReady::Dead(dead) => dead.iter().map(|(id, _)| *id).collect(),
                NotReady::Runners(_) => Vec::new(),
            };
            let mut tasks = swarm::explain(dir, run, &nodes);
            tasks.truncate(20);
            anyhow::bail!(
                "{e}.\n{}\nThe stack {} is left deployed: `cuberoute cluster status --dir {}`, \
                 `cuberoute cluster logs --dir {} --node NODE`, `cuberoute cluster down --dir {}`",
                tasks.join("\n"),
                run.stack,
                dir.display(),
                dir.display(),
                dir.display()
            )
        }
    }
}

fn summary(
    dir: &ClusterDir,
    topology: Topology,
    run: &SwarmRun,
    plan: &Plan,
    elapsed: Duration,
    deployed: Duration,
    linked: Duration,
) {
    let links: u64 = topology
        .nodes()
        .map(|v| u64::from(topology.degree(v)))
        .sum::<u64>()
        / 2;
    let d = dir.display();
    let most = plan.containers.iter().map(Vec::len).max().unwrap_or(1);
    let nodes_each = match most {
        1 => String::new(),
        most => format!(" of up to {most} nodes each"),
    };
    println!(
        "cluster {topology} is up in {:.1} s: {} Swarm tasks{nodes_each} over {} hosts \
         (placement {}), {links} links, stack {} (deployed in {:.1} s, every task running and \
         every link up {:.1} s later)",
        elapsed.as_secs_f64(),
        plan.containers.len(),
        run.hosts.len(),
        run.placement,
        run.stack,
        deployed.as_secs_f64(),
        linked.as_secs_f64()
    );
    let nodes: Vec<_> = topology.nodes().collect();
    for (h, host) in run.hosts.iter().enumerate() {
        let on: Vec<String> = nodes
            .iter()
            .zip(&plan.hosts)
            .filter(|(_, of)| **of == h)
            .map(|(v, _)| crate::print::node(topology, *v))
            .collect();
        println!(
            "  {} {} ({}{}): {} nodes: {}",
            host.name,
            host.address,
            host.hostname,
            if host.endpoint.is_some() {
                ", engine known"
            } else {
                ""
            },
            on.len(),
            on.join(" ")
        );
    }
    let first = nodes[0];
    let far = topology
        .nodes()
        .max_by_key(|&v| topology.distance(first, v))
        .expect("a topology has nodes");
    let name = |v| crate::print::node(topology, v);
    println!(
        "  node i's control and metrics ports are published on its host at 17000 + i and 22000 + i{}",
        if most > 1 {
            " (a task's nodes share its first node's)"
        } else {
            ""
        }
    );
    println!(
        "  send:    cuberoute send --dir {d} --from {} --to {} --message hello --wait",
        name(first),
        name(far)
    );
    println!("  status:  cuberoute cluster status --dir {d}");
    println!(
        "  logs:    cuberoute cluster logs --dir {d} --node {}",
        name(first)
    );
    println!("  down:    cuberoute cluster down --dir {d}");
}
