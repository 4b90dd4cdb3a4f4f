//! Starting a cluster: on local processes (`cluster up`; in network namespaces of their own
//! with `--netns`) or as the containers of a compose project (`cluster up --docker`). First the
//! checks before anything is made ([`check_size`]: a size this machine holds; [`ensure_free`]:
//! a directory no running cluster uses), then the cluster generated ([`init`]) and its daemons
//! spawned ([`spawn`], [`compose`]). What a start leaves is a [`Spawned`] cluster, not yet known
//! to be ready: the readiness wait of the operating room (`ops::ready::wait_started`) ends the
//! start, and stops what was started if a daemon died or an interrupt came.
//!
//! A start the caller must fix (a topology too large, a directory in use, a bad port or
//! subnet) is refused with a [`Refused`] in the error's chain: the CLI's usage error, exit 2.

use crate::launch::capacity::{Machine, Shape, check};
use crate::launch::docker::{self, BuiltImage, Compose, DEFAULT_IMAGE};
use crate::launch::generate::{self, Addressing, Ports};
use crate::launch::hosting::{self, NodesPerProcess};
use crate::launch::layout::ClusterDir;
use crate::launch::local::{self, Lifetime, interrupt::Catch};
use crate::launch::netns::{self, NetnsRun};
use crate::launch::phases::Phases;
use crate::launch::run_state::RunState;
use crate::launch::runner;
use crate::launch::start_cpu::LauncherMark;
use anyhow::Context;
use cuberoute_protocol::{NodeId, Topology};
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

/// What was asked cannot be done as asked (a topology too large for this machine, a directory
/// in use, a bad port or subnet, no cluster where one was named): the caller's to fix, the
/// CLI's usage error (exit 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

fn refused(message: impl Into<String>) -> anyhow::Error {
    Refused(message.into()).into()
}

/// A cluster of local processes: `cluster init` generates it, `cluster up` starts it too.
#[derive(Clone, Debug)]
pub struct Local {
    pub topology: Topology,
    pub dir: ClusterDir,
    /// Node i listens on this address + 1 + i (inside 127.0.0.0/8); not with `netns`.
    pub base_addr: Ipv4Addr,
    /// The link port; control and metrics take the next two.
    pub port: u16,
    /// Reliable sets in memory only: no store in the nodes' configurations.
    pub no_store: bool,
    /// The nodes' liveness interval, instead of the one paced by the cluster's links
    /// (`generate::liveness_interval`).
    pub liveness_interval: Option<Duration>,
    /// Sources always send on the constructed paths, even around dead links they know of
    /// (`liveness.route_around = false`): the baseline routing around is measured against.
    pub no_route_around: bool,
    /// Links do not watch a neighbour's process exit (`liveness.watch_exits = false`): probes
    /// alone find it gone.
    pub no_watch_exits: bool,
    /// Every node in a network namespace of its own, on a bridge (root only).
    pub netns: bool,
    /// How long the daemons live.
    pub lifetime: Lifetime,
    /// How many nodes each process runs ([`hosting`](crate::launch::hosting)).
    pub nodes_per_process: NodesPerProcess,
}

impl Local {
    /// `topology` in `dir` on loopback addresses after `base`, on port 7000, with stores,
    /// until stopped.
    pub fn loopback(topology: Topology, dir: ClusterDir, base: Ipv4Addr) -> Local {
        Local {
            topology,
            dir,
            base_addr: base,
            port: 7000,
            no_store: false,
            liveness_interval: None,
            no_route_around: false,
            no_watch_exits: false,
            netns: false,
            lifetime: Lifetime::UntilStopped,
            nodes_per_process: NodesPerProcess::default(),
        }
    }
}

/// A cluster of containers of a compose project (`cluster up --docker`): one per node, or
/// per group of nodes run by one process (`--nodes-per-container`).
#[derive(Clone, Debug)]
pub struct Containers {
    pub topology: Topology,
    pub dir: ClusterDir,
    /// The /16 network the containers get (node i at subnet + 2 + i; a container of several
    /// at its first node's).
    pub subnet: Ipv4Addr,
    pub image: String,
    /// How many nodes each container runs, grouped as processes are
    /// ([`hosting`](crate::launch::hosting)).
    pub nodes_per_container: NodesPerProcess,
}

impl Containers {
    /// The nodes of each container, once the cluster is known to fit on this machine; or why
    /// not (a [`Refused`], for the user).
    pub fn groups(&self) -> anyhow::Result<Vec<Vec<NodeId>>> {
        let per = self.nodes_per_container;
        check_size(self.topology, per, true)?;
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        hosting::groups(self.topology, per, cores, hosting::OpenFiles::here(true)).map_err(refused)
    }
}

/// What a start tells its caller as it goes, for the user.
#[derive(Debug)]
pub enum Note<'a> {
    /// A `--netns` cluster's network was made, in `took`.
    Network {
        network: &'a NetnsRun,
        took: Duration,
    },
    /// The default image is being brought up to date from the source tree (`cluster image`).
    RefreshingImage,
    /// ... and was built.
    ImageBuilt(&'a BuiltImage),
}

/// A cluster whose daemons were started, not yet known to be ready.
pub struct Spawned {
    pub dir: ClusterDir,
    pub topology: Topology,
    /// The start's clock. Local processes: its phases `checks`, (`network`,) `credentials`,
    /// `files` and `spawn` ended. Containers: started before the compose project was prepared.
    pub phases: Phases,
    /// Local processes: the launcher's CPU when the start began, and SIGINT and SIGTERM
    /// caught since (an interrupt stops what was started).
    pub local: Option<(LauncherMark, Catch)>,
}

/// Check that a topology fits on this machine (memory, processes) with `per` nodes a process,
/// or say why not.
pub fn check_size(topology: Topology, per: NodesPerProcess, stores: bool) -> anyhow::Result<()> {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let files = hosting::OpenFiles::here(stores);
    let (_, processes) = hosting::shape(topology, per, cores, files).map_err(refused)?;
    let shape = Shape {
        nodes: topology.node_count(),
        processes: processes as u64,
    };
    check(shape, Machine::read()).map_err(|e| refused(format!("{topology}: {e}")))
}

/// Refuse to generate over a cluster that runs, or over a directory that is not a cluster's.
pub fn ensure_free(dir: &ClusterDir) -> anyhow::Result<()> {
    // A Swarm stack stays recorded until `cluster down`, whether its tasks run or wait.
    if let Some(RunState::Swarm { topology, run }) = RunState::load(dir)? {
        return Err(refused(format!(
            "the Swarm stack {} ({}) is deployed from {}; take it down with `cuberoute cluster              down --dir {}`",
            run.stack,
            topology,
            dir.display(),
            dir.display()
        )));
    }
    if let Some(runners) = runner::inspect(dir)?
        && runners.alive() > 0
    {
        return Err(refused(format!(
            "a cluster of {} is already running in {} ({} of {} {} alive); \
             stop it with `cuberoute cluster down --dir {}`",
            runners.state.topology(),
            dir.display(),
            runners.alive(),
            runners.nodes.len(),
            match runners.state {
                RunState::Processes(_) => "processes",
                RunState::Compose { .. } => "containers",
                RunState::Swarm { .. } => "Swarm tasks",
            },
            dir.display()
        )));
    }
    // What a cluster whose processes all ended left (a --netns cluster's network) goes first.
    local::clear_stale(dir)?;
    if dir.path().exists() && !dir.is_cluster() && std::fs::read_dir(dir.path())?.next().is_some() {
        return Err(refused(format!(
            "{} exists and is not a cluster directory; choose another --dir",
            dir.display()
        )));
    }
    Ok(())
}

/// Check `local` and its directory, and generate the cluster on loopback addresses, ending the
/// phases `checks`, `credentials` and `files` of `phases` (`cluster init`, and the first steps
/// of a start on loopback).
pub fn init(local: &Local, phases: &mut Phases) -> anyhow::Result<()> {
    init_probing(local, phases, &[])
}

/// [`init`] for the processes `groups` (none: a process per node): the links probing are
/// those between processes (a node host's links between its own nodes are calls), and the
/// nodes of a process share the link and control address of its first.
fn init_probing(local: &Local, phases: &mut Phases, groups: &[Vec<NodeId>]) -> anyhow::Result<()> {
    check_local(local, true)?;
    phases.end("checks");
    let probing = probing_links(local.topology, groups);
    write(local, phases, probing, |ports| Addressing::Loopback {
        base: local.base_addr,
        ports,
        home: hosting::homes(local.topology, groups),
    })
}

/// The links between two of `groups` (the processes): those that probe. None when every
/// process runs one node (all do).
fn probing_links(topology: Topology, groups: &[Vec<NodeId>]) -> Option<u32> {
    if groups.iter().all(|g| g.len() == 1) {
        return None;
    }
    let mut process = std::collections::HashMap::new();
    for (p, group) in groups.iter().enumerate() {
        for id in group {
            process.insert(*id, p);
        }
    }
    let ends = topology
        .nodes()
        .flat_map(|n| topology.neighbours(n).map(move |m| (n, m)))
        .filter(|(n, m)| process.get(n) != process.get(m))
        .count();
    Some((ends / 2) as u32)
}

/// Check `local` (its loopback base with `loopback`) and that its directory is free.
fn check_local(local: &Local, loopback: bool) -> anyhow::Result<()> {
    check_size(local.topology, local.nodes_per_process, !local.no_store)?;
    if loopback {
        generate::check_loopback(local.base_addr, local.topology.node_count())
            .map_err(|e| refused(e.to_string()))?;
    }
    if local.port > u16::MAX - 2 {
        return Err(refused(format!(
            "--port {} leaves no room for the control and metrics ports",
            local.port
        )));
    }
    ensure_free(&local.dir)
}

/// Generate the cluster, its nodes addressed by `addressing` on the ports of `local`, ending
/// the phases `credentials` and `files` of `phases`.
fn write(
    local: &Local,
    phases: &mut Phases,
    probing: Option<u32>,
    addressing: impl FnOnce(Ports) -> Addressing,
) -> anyhow::Result<()> {
    let ports = Ports {
        link: local.port,
        control: local.port + 1,
        metrics: local.port + 2,
    };
    let (dir, topology) = (&local.dir, local.topology);
    generate::generate_timed(dir, topology, &addressing(ports), None, probing, phases)?;
    if local.no_store {
        generate::drop_store(dir, topology)?;
        phases.end("no store");
    }
    if let Some(interval) = local.liveness_interval {
        generate::set_liveness_interval(dir, topology, interval)?;
        phases.end("liveness");
    }
    if local.no_route_around {
        generate::set_liveness(dir, topology, "route_around = false")?;
    }
    if local.no_watch_exits {
        generate::set_liveness(dir, topology, "watch_exits = false")?;
    }
    Ok(())
}

/// Generate the cluster `local` and start its daemons (highest id first), each in a network
/// namespace of its own with `netns` (whose network is made first and told through `note`).
/// Phases `checks`, (`network`,) `credentials`, `files` and `spawn`. SIGINT or SIGTERM from
/// the start of the network or the spawns on stops what was started so far.
pub fn spawn(local: &Local, note: &mut dyn FnMut(Note)) -> anyhow::Result<Spawned> {
    let mut phases = Phases::start();
    let mark = LauncherMark::now();
    if local.netns {
        netns::need_root().map_err(|e| refused(e.to_string()))?;
    }
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let groups = hosting::groups(
        local.topology,
        local.nodes_per_process,
        cores,
        hosting::OpenFiles::here(!local.no_store),
    )
    .map_err(refused)?;
    if local.netns && groups.iter().any(|g| g.len() > 1) {
        return Err(refused(
            "--netns gives each node a network namespace of its own: it runs one node per process"
                .to_string(),
        ));
    }
    let binary = std::env::current_exe().context("locating the cuberoute binary")?;
    let (dir, topology) = (&local.dir, local.topology);
    // Ctrl-C (or SIGTERM) while the cluster starts stops everything started so far (and
    // removes the network made for it, from the moment it is begun).
    let (network, interrupt) = if local.netns {
        check_local(local, false)?;
        phases.end("checks");
        let interrupt = Catch::install();
        let making = Instant::now();
        let network = local::make_network(dir, topology, &interrupt)?;
        phases.end("network");
        note(Note::Network {
            network: &network,
            took: making.elapsed(),
        });
        let subnet = network.block;
        let written = write(local, &mut phases, None, |ports| Addressing::Netns {
            subnet,
            ports,
        });
        if let Err(e) = written {
            let _ = local::stop(dir, Duration::ZERO);
            return Err(e);
        }
        (Some(network), interrupt)
    } else {
        init_probing(local, &mut phases, &groups)?;
        (None, Catch::install())
    };
    local::start(
        dir,
        topology,
        &binary,
        &interrupt,
        (network, &groups),
        local.lifetime,
    )?;
    phases.end("spawn");
    Ok(Spawned {
        dir: dir.clone(),
        topology,
        phases,
        local: Some((mark, interrupt)),
    })
}

/// Refuse a `--subnet` that is not the base of a /16 holding the cluster.
pub fn check_subnet(subnet: Ipv4Addr, topology: Topology) -> anyhow::Result<()> {
    if u32::from(subnet) & 0xffff != 0 || topology.node_count() > 65_000 {
        return Err(refused(format!(
            "--subnet {subnet} must be the base of a /16 (like 10.200.0.0)"
        )));
    }
    Ok(())
}

/// Generate the cluster `containers` for a compose project and bring its containers up: the
/// default image brought up to date from the source tree first (told through `note`), any
/// other image present. On an error once the project is up, what was started is stopped.
pub fn compose(containers: &Containers, note: &mut dyn FnMut(Note)) -> anyhow::Result<Spawned> {
    let (dir, topology) = (&containers.dir, containers.topology);
    let groups = containers.groups()?;
    check_subnet(containers.subnet, topology)?;
    docker::available().map_err(|e| anyhow::anyhow!("the Docker engine is not available: {e}"))?;
    let compose = Compose::detect()?;
    ensure_free(dir)?;
    if containers.image == DEFAULT_IMAGE
        && docker::source_tree().join("deploy/Dockerfile").is_file()
    {
        // The default image is this build's: brought up to date from the source tree this
        // binary was built from (cargo and docker rebuild only what changed), so that the
        // containers never run an older daemon than the client speaks to.
        note(Note::RefreshingImage);
        note(Note::ImageBuilt(&docker::build_this_image()?));
    } else if !docker::image_exists(&containers.image) {
        return Err(refused(format!("there is no image {}", containers.image)));
    }
    let phases = Phases::start();
    let run = docker::prepare(dir, topology, containers.subnet, &containers.image, &groups)?;
    RunState::Compose {
        topology,
        run: run.clone(),
    }
    .save(dir)?;
    if let Err(e) = compose.run(&run, &["up", "-d"]) {
        let _ = runner::stop(dir);
        return Err(e);
    }
    Ok(Spawned {
        dir: dir.clone(),
        topology,
        phases,
        local: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(result: anyhow::Result<()>) -> String {
        let err = result.expect_err("refused");
        let refused = err.downcast_ref::<Refused>().expect("a Refused");
        refused.0.clone()
    }

    /// What the caller must fix is a `Refused`, saying what: a subnet that is no /16's base, a
    /// port without room for the two after it, a loopback base the nodes do not fit after.
    #[test]
    fn only_links_between_processes_probe_and_set_the_pace() {
        let q3: Topology = "q:3".parse().unwrap();
        let alone: Vec<Vec<NodeId>> = q3.nodes().map(|n| vec![n]).collect();
        assert_eq!(probing_links(q3, &alone), None);
        // Two Q_2 halves: the four links of dimension 2 cross.
        let halves = vec![
            (0..4).map(NodeId).collect::<Vec<_>>(),
            (4..8).map(NodeId).collect(),
        ];
        assert_eq!(probing_links(q3, &halves), Some(4));
        // Q_14 in three processes: its 114,688 links would pace each at over an hour (the
        // daemon's longest); those between processes, at most that.
        let q14: Topology = "q:14".parse().unwrap();
        let groups = hosting::groups(
            q14,
            NodesPerProcess::Count(5462),
            2,
            hosting::OpenFiles {
                limit: 20_000,
                per_node: cuberoute_daemon::host::FILES_PER_NODE,
            },
        )
        .unwrap();
        let probing = probing_links(q14, &groups).unwrap();
        assert!(probing < 114_688 / 4, "{probing}");
        let pacing = generate::Pacing::of(probing);
        assert!(pacing.interval <= cuberoute_daemon::liveness::MAX_INTERVAL);
        assert_eq!(
            generate::Pacing::of(114_688).interval,
            cuberoute_daemon::liveness::MAX_INTERVAL
        );
    }

    #[test]
    fn what_the_caller_must_fix_is_refused() {
        let q2: Topology = "q:2".parse().unwrap();
        assert_eq!(
            refusal(check_subnet(Ipv4Addr::new(10, 200, 1, 0), q2)),
            "--subnet 10.200.1.0 must be the base of a /16 (like 10.200.0.0)"
        );
        check_subnet(Ipv4Addr::new(10, 200, 0, 0), q2).unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let local = Local::loopback(q2, ClusterDir::new(tmp.path()), Ipv4Addr::new(127, 1, 0, 0));
        let no_room = Local {
            port: u16::MAX - 1,
            ..local.clone()
        };
        assert_eq!(
            refusal(init(&no_room, &mut Phases::start())),
            "--port 65534 leaves no room for the control and metrics ports"
        );
        let outside = Local {
            base_addr: Ipv4Addr::new(10, 0, 0, 0),
            ..local
        };
        assert!(refusal(init(&outside, &mut Phases::start())).contains("10.0.0.0"));
    }
}
