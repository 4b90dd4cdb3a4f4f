//! `cuberoute sim`: a whole cluster in one process, on turmoil's simulated network and clock.
//! Every node is a turmoil host running the real daemon (`cuberoute_daemon::run_until`: its
//! links, buffers, acknowledgements, control API, QUIC and TLS) over the seam of
//! `cuberoute_daemon::net`; a client host runs the chaos run of [`crate::chaos::run`] against it
//! (its traffic, its faults on their seeded schedule, its report), crashing and restarting
//! nodes through the simulation. Time and every random draw (the daemons', quinn's,
//! turmoil's, the run's) come from the seed, so a run is a function of its options.

use crate::chaos::redundancy::{self, Cell, StudyConfig};
use crate::chaos::report::Report;
use crate::chaos::run;
use crate::chaos::scenario::{Harness, Progress, REJOIN_TIMEOUT, RunConfig};
use crate::chaos::schedule::FaultKind;
use crate::launch::generate::{
    self, Addressing, Ports, container_service, generate_with_keys, service_name,
};
use crate::launch::hosting::{self, NodesPerProcess, OpenFiles};
use crate::launch::in_host;
use crate::launch::layout::ClusterDir;
use cuberoute_daemon::client::Client;
use cuberoute_daemon::config::{DaemonArgs, NodeConfig};
use cuberoute_daemon::{disk, env};
use cuberoute_protocol::wire::control::Fault;
use cuberoute_protocol::{NodeId, Topology};
use serde::Serialize;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Mixed into the run's seed for the sealing keys' generator.
const SEAL_KEY_SEED: u64 = 0x5ea1_5eed_0fc0_ffee;

/// Where the simulated wall clock starts, in seconds since the Unix epoch: 2026-01-01 00:00:00
/// UTC.
pub const SIMULATED_EPOCH_SECS: u64 = 1_767_225_600;

/// The largest cluster simulated with `nodes_per_process` nodes a host: a host a node costs
/// about 1.2 MiB and a host to step every simulated millisecond (Q_12: 420 s of wall clock for
/// 18 s simulated, 5.6 GiB, 2026-11-25); on node hosts Q_13 took 99 s for 10.5 s simulated in
/// 7.3 GiB (2026-12-07; BENCHMARKS.md, "Simulation").
pub fn max_nodes(nodes_per_process: usize) -> u64 {
    if nodes_per_process > 1 { 8_192 } else { 4_096 }
}

/// What to simulate.
#[derive(Clone, Debug)]
pub struct SimOptions {
    pub topology: Topology,
    /// The chaos run's traffic and faults; its seed is the simulation's.
    pub run: RunConfig,
    /// One-way latency of every datagram: drawn between these (turmoil's latency curve).
    pub min_latency: Duration,
    pub max_latency: Duration,
    /// Every node keeps a store on a simulated disk (else reliable sets live in memory only).
    pub store: bool,
    /// Run the redundancy study ([`crate::chaos::redundancy`]) instead of the chaos run.
    pub study: Option<StudyConfig>,
    /// How many nodes each simulated host runs as one node host (`cuberoute_daemon::host`),
    /// grouped as `cluster up --nodes-per-process` groups them ([`hosting::groups`]); 1: a
    /// host a node.
    pub nodes_per_process: usize,
}

/// What a run did: the chaos run's report, and the simulation's time. The same options give
/// the same report, byte for byte, but for the wall-clock figures.
#[derive(Clone, Debug, Serialize)]
pub struct SimReport {
    #[serde(flatten)]
    pub run: Report,
    /// The redundancy study's table, when it ran instead of the chaos run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub study: Option<Vec<Cell>>,
    /// Simulated time of the whole run (start-up included), and the wall-clock time it took.
    pub simulated_ms: u64,
    pub wall_ms: u64,
    pub simulated_seconds_per_wall_second: f64,
}

/// What the run asks of the network, carried out by the simulation between two of its steps.
enum Action {
    /// A simulated host (`node-<id>`, `host-<id>`) crashed, with its nodes' stores.
    Crash(usize),
    Bounce(usize),
    FailRate(f64),
    Partition(Vec<(NodeId, NodeId)>, bool),
    /// Every link's latency between these (none: back to the run's own).
    Latency(Option<(Duration, Duration)>),
}

#[derive(Clone, Default)]
struct SimHarness {
    actions: Arc<Mutex<Vec<Action>>>,
    /// Each node's store, on a simulated disk ([`disk`]).
    stores: Arc<std::collections::BTreeMap<NodeId, PathBuf>>,
    /// The nodes of each simulated host, in id order.
    groups: Arc<Vec<Vec<NodeId>>>,
    /// The nodes crashed inside their hosts, which run on, and the hosts crashed whole.
    down: Arc<Mutex<Down>>,
    /// The order of a node's crash or restart inside its host, to the client's task that asks
    /// the host for it ([`in_host`]): started with the first.
    in_host: Arc<Mutex<Option<InHostOrders>>>,
    dir: Option<ClusterDir>,
    /// The simulated hosts each pair of which a link joins (for `delay`: a link inside a host
    /// is a call), and the latency of a link without it.
    links: Arc<Vec<(String, String)>>,
    latency: (Duration, Duration),
}

/// Where the harness sends a fault on a node inside its host, with the nodes to ask it of.
type InHostOrders = tokio::sync::mpsc::UnboundedSender<InHostOrder>;

/// A fault on a node inside its host ([`in_host`]): asked of the first of `via` that answers,
/// unless the host was crashed or started again whole since (`epoch`, its count of those then):
/// the fault was for the incarnation that is gone.
struct InHostOrder {
    fault: Fault,
    via: Vec<NodeId>,
    host: usize,
    epoch: u64,
}

/// What is down in a simulation of node hosts.
#[derive(Default)]
struct Down {
    /// Nodes crashed inside their hosts, which run on.
    in_host: std::collections::BTreeSet<NodeId>,
    /// Hosts crashed whole (by index).
    hosts: std::collections::BTreeSet<usize>,
    /// How many times each host was crashed or started again whole.
    epochs: std::collections::BTreeMap<usize, u64>,
}

impl SimHarness {
    fn push(&self, action: Action) -> anyhow::Result<()> {
        self.actions.lock().expect("harness lock").push(action);
        Ok(())
    }

    /// The index of node `node`'s host.
    fn host_of(&self, node: NodeId) -> anyhow::Result<usize> {
        self.groups
            .iter()
            .position(|g| g.contains(&node))
            .ok_or_else(|| anyhow::anyhow!("node {node} is in no simulated host"))
    }

    /// Whether some host runs several nodes.
    fn node_hosts(&self) -> bool {
        self.groups.iter().any(|g| g.len() > 1)
    }

    /// Ask node `node`'s host, through one of `via` (its other nodes that run), to crash it or
    /// start it again: in order, by one task of the client's (the run's calls are not async).
    fn in_host(&self, fault: Fault, via: Vec<NodeId>, host: usize) -> anyhow::Result<()> {
        let epoch = self.epoch(host);
        let mut sender = self.in_host.lock().expect("harness lock");
        if sender.is_none() {
            let dir = self
                .dir
                .clone()
                .ok_or_else(|| anyhow::anyhow!("no cluster directory"))?;
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
            tokio::spawn(in_host(dir, rx, self.down.clone()));
            *sender = Some(tx);
        }
        sender
            .as_ref()
            .expect("set above")
            .send(InHostOrder {
                fault,
                via,
                host,
                epoch,
            })
            .map_err(|_| anyhow::anyhow!("the client's task for node hosts ended"))
    }

    /// How many times host `host` was crashed or started again whole.
    fn epoch(&self, host: usize) -> u64 {
        let down = self.down.lock().expect("harness lock");
        down.epochs.get(&host).copied().unwrap_or(0)
    }

    /// Crash host `host` whole, or start it again, with every node of it.
    fn host(&self, host: usize, lost: bool) -> anyhow::Result<()> {
        let mut down = self.down.lock().expect("harness lock");
        *down.epochs.entry(host).or_default() += 1;
        for node in &self.groups[host] {
            down.in_host.remove(node);
        }
        if lost {
            down.hosts.insert(host);
            self.push(Action::Crash(host))
        } else {
            down.hosts.remove(&host);
            self.push(Action::Bounce(host))
        }
    }

    fn apply(&self, sim: &mut turmoil::Sim) {
        for action in self.actions.lock().expect("harness lock").drain(..) {
            match action {
                Action::Crash(host) => {
                    let nodes = &self.groups[host];
                    // What the nodes' stores had not synced is lost with them.
                    for node in nodes {
                        if let Some(store) = self.stores.get(node) {
                            disk::crash(store);
                        }
                    }
                    sim.crash(container_service(nodes))
                }
                Action::Bounce(host) => sim.bounce(container_service(&self.groups[host])),
                Action::FailRate(rate) => sim.set_fail_rate(rate),
                Action::Latency(range) => {
                    let (min, max) = range.unwrap_or(self.latency);
                    for (a, b) in self.links.iter() {
                        let (a, b) = (a.clone(), b.clone());
                        sim.set_link_latency(a.clone(), b.clone(), min);
                        sim.set_link_max_message_latency(a, b, max);
                    }
                }
                Action::Partition(links, on) => {
                    for (a, b) in links {
                        let (a, b) = (service_name(a), service_name(b));
                        if on {
                            sim.partition(a, b);
                        } else {
                            sim.repair(a, b);
                        }
                    }
                }
            }
        }
    }
}

impl Harness for SimHarness {
    /// A node alone in its host: the host crashed. A node of a host whose other nodes run:
    /// crashed inside it, through the control API as `chaos kill` does it to a node host's
    /// node (what its store had synced or not is the process's, which runs on); the last one
    /// that runs: the host crashed.
    fn kill(&self, node: NodeId) -> anyhow::Result<()> {
        let host = self.host_of(node)?;
        let mut down = self.down.lock().expect("harness lock");
        let others: Vec<NodeId> = self.groups[host]
            .iter()
            .copied()
            .filter(|&n| n != node && !down.in_host.contains(&n))
            .collect();
        if others.is_empty() {
            drop(down);
            return self.host(host, true);
        }
        down.in_host.insert(node);
        drop(down);
        self.in_host(Fault::CrashHosted { node }, others, host)
    }

    /// A node crashed inside its host, started there again; a node whose host is down, its
    /// host started again; a node that runs (its host came back whole meanwhile), left.
    fn restart(&self, node: NodeId) -> anyhow::Result<()> {
        let host = self.host_of(node)?;
        let mut down = self.down.lock().expect("harness lock");
        if down.hosts.contains(&host) {
            drop(down);
            return self.host(host, false);
        }
        if down.in_host.remove(&node) {
            let others: Vec<NodeId> = self.groups[host]
                .iter()
                .copied()
                .filter(|n| !down.in_host.contains(n))
                .collect();
            drop(down);
            return self.in_host(Fault::RestartHosted { node }, others, host);
        }
        Ok(())
    }

    /// With node hosts, the simulated hosts of several nodes: a `host` fault crashes one whole.
    fn hosts(&self) -> anyhow::Result<Vec<Vec<NodeId>>> {
        anyhow::ensure!(
            self.node_hosts(),
            "each simulated host runs one node: a host fault is a crash (--nodes-per-process N \
             makes hosts of several)"
        );
        anyhow::ensure!(
            self.groups.len() >= 2,
            "the simulation runs one host: losing it loses every node"
        );
        Ok(self.groups.to_vec())
    }

    fn lose_host(&self, host: usize, lost: bool) -> anyhow::Result<()> {
        anyhow::ensure!(
            host < self.groups.len(),
            "no host {} in the simulation",
            host + 1
        );
        self.host(host, lost)
    }

    fn lose(&self, rate: f64) -> anyhow::Result<()> {
        self.push(Action::FailRate(rate))
    }

    /// One link cut is a partition of its two simulated hosts; between node hosts it would cut
    /// every link between the two (and none inside one, a call): refused.
    fn partition(&self, links: &[(NodeId, NodeId)], on: bool) -> anyhow::Result<()> {
        anyhow::ensure!(
            !self.node_hosts() || !on,
            "a partition of single links is not simulated between node hosts (the network \
             joins hosts, each of several nodes)"
        );
        self.push(Action::Partition(links.to_vec(), on))
    }

    /// turmoil draws each datagram's latency from `delay - jitter` plus an exponential tail,
    /// capped at `delay + jitter`: not the uniform jitter of the daemons' shaping.
    fn delay(&self, delay: Duration, jitter: Duration) -> anyhow::Result<bool> {
        let range = (!delay.is_zero() || !jitter.is_zero())
            .then(|| (delay.saturating_sub(jitter), delay + jitter));
        self.push(Action::Latency(range))?;
        Ok(true)
    }

    fn mechanism(&self, fault: FaultKind) -> &'static str {
        match fault {
            FaultKind::Crash | FaultKind::CrashEnds if self.node_hosts() => {
                "node dropped inside its simulated node host (control API), or the host crashed"
            }
            FaultKind::Host => "simulated host crash of a node host",
            FaultKind::Crash | FaultKind::CrashEnds => "simulated host crash",
            FaultKind::Loss | FaultKind::Delay | FaultKind::Partition => "simulated network",
            _ => "the daemons (control API)",
        }
    }
}

/// The pairs of simulated hosts (`groups`: each one's nodes) that at least one link joins.
fn host_links(topology: Topology, groups: &[Vec<NodeId>]) -> Vec<(String, String)> {
    let host: std::collections::HashMap<NodeId, usize> = groups
        .iter()
        .enumerate()
        .flat_map(|(h, nodes)| nodes.iter().map(move |&v| (v, h)))
        .collect();
    let pairs: std::collections::BTreeSet<(usize, usize)> = topology
        .nodes()
        .flat_map(|a| topology.neighbours(a).map(move |b| (a, b)))
        .map(|(a, b)| (host[&a], host[&b]))
        .filter(|(a, b)| a < b)
        .collect();
    pairs
        .into_iter()
        .map(|(a, b)| (container_service(&groups[a]), container_service(&groups[b])))
        .collect()
}

/// The client's task that carries out the harness's crashes and restarts inside node hosts, in
/// order: each asked of the first node of its `via` that answers
/// (`Fault::CrashHosted`, `Fault::RestartHosted`, as [`crate::launch::in_host`] asks them of a
/// real process).
async fn in_host(
    dir: ClusterDir,
    mut orders: tokio::sync::mpsc::UnboundedReceiver<InHostOrder>,
    down: Arc<Mutex<Down>>,
) {
    let connect = || -> anyhow::Result<_> {
        let credentials = crate::launch::certs::client_credentials(&dir)?;
        let manifest = cuberoute_daemon::manifest::Manifest::load(&dir.manifest())?;
        Ok((Client::new(&credentials)?, manifest))
    };
    let (client, manifest) = match connect() {
        Ok(both) => both,
        Err(e) => {
            tracing::warn!(error = %e, "the simulation's client for node hosts did not start");
            return;
        }
    };
    while let Some(order) = orders.recv().await {
        // Whether the host is still the incarnation the order was for.
        let current = || {
            let down = down.lock().expect("harness lock");
            down.epochs.get(&order.host).copied().unwrap_or(0) == order.epoch
        };
        let fault = order.fault.clone();
        if let Err(e) = in_host::ask_first(&client, &manifest, &order.via, fault, current).await {
            tracing::warn!(error = %e, fault = ?order.fault, "a node host did not carry it out");
        }
    }
}

/// Run the simulation, generating the cluster's files (certificates, configurations,
/// manifests) into `dir`.
pub fn run(options: &SimOptions, dir: &ClusterDir) -> anyhow::Result<SimReport> {
    let topology = options.topology;
    let seed = options.run.seed;
    // The sealing keys from the seed too (their own generator: the run's draws stay as they
    // were), so that every sealed byte, and what a flipped bit does to it, replays. The
    // certificates stay random: nothing a fault touches depends on them.
    // Grouped as a machine of one core groups them (the simulation's shape depends on its
    // options only), with no limit of open files: a simulated store holds none.
    let files = OpenFiles {
        limit: u64::MAX,
        per_node: 0,
    };
    let per = NodesPerProcess::Count(options.nodes_per_process);
    let groups = hosting::groups(topology, per, 1, files).map_err(anyhow::Error::msg)?;
    generate_with_keys(
        dir,
        topology,
        &Addressing::Simulated {
            ports: Ports::default(),
            containers: generate::containers(topology, &groups),
        },
        Some(seed ^ SEAL_KEY_SEED),
    )?;
    if !options.store {
        // In every configuration, so that a node started again inside its host reads none.
        generate::drop_store(dir, topology)?;
    }
    // Everything random in the daemons (and quinn through them) draws from the seed.
    env::seed_simulation(Some(seed));
    // Every node's store on a simulated disk: a crash loses what was not synced.
    disk::forget_all();
    let stores: std::collections::BTreeMap<NodeId, PathBuf> = topology
        .nodes()
        .filter(|_| options.store)
        .map(|node| {
            let path = dir.node_dir(node).join(crate::launch::layout::NODE_STORE);
            disk::simulate(&path);
            (node, path)
        })
        .collect();
    let run = &options.run;
    let length = crate::ops::ready::default_timeout(topology.node_count()) * 2
        + run.fault_free
        + run.with_faults
        + run.after_faults
        + REJOIN_TIMEOUT
        + run.set_wait() * 3;
    let mut sim = turmoil::Builder::new()
        .rng_seed(seed)
        // A fixed start for the simulated wall clock (turmoil's default is the real one, and
        // send times are inside every packet a fault may corrupt).
        .epoch(std::time::UNIX_EPOCH + Duration::from_secs(SIMULATED_EPOCH_SECS))
        .simulation_duration(length)
        .tick_duration(Duration::from_millis(1))
        .min_message_latency(options.min_latency)
        .max_message_latency(options.max_latency)
        .udp_capacity(1 << 16)
        .build();
    for nodes in &groups {
        let paths: Vec<PathBuf> = nodes.iter().map(|&id| dir.node_config(id)).collect();
        let keep_store = options.store;
        sim.host(container_service(nodes), move || {
            let args: Vec<DaemonArgs> = paths
                .iter()
                .map(|path| DaemonArgs {
                    config: Some(path.clone()),
                    ..DaemonArgs::default()
                })
                .collect();
            async move {
                let mut configs = Vec::new();
                for args in &args {
                    let mut config = NodeConfig::resolve(args)?;
                    // No metrics endpoint: it would bind a real TCP socket.
                    config.metrics_listen = None;
                    if !keep_store {
                        config.store = None;
                    }
                    configs.push(config);
                }
                if configs.len() == 1 {
                    let (config, args) = (configs.remove(0), args[0].clone());
                    cuberoute_daemon::run_until(config, args, false, std::future::pending())
                        .await?;
                } else {
                    cuberoute_daemon::run_host_until(configs, args, std::future::pending()).await?;
                }
                Ok(())
            }
        });
    }
    let report: Arc<Mutex<Option<Report>>> = Arc::default();
    let study: Arc<Mutex<Option<Vec<Cell>>>> = Arc::default();
    let harness = SimHarness {
        actions: Arc::default(),
        stores: Arc::new(stores),
        groups: Arc::new(groups.clone()),
        down: Arc::default(),
        in_host: Arc::default(),
        dir: Some(dir.clone()),
        links: Arc::new(host_links(topology, &groups)),
        latency: (options.min_latency, options.max_latency),
    };
    if let Some(study_config) = options.study.clone() {
        let (study, dir) = (study.clone(), dir.clone());
        let harness = harness.clone();
        sim.client("client", async move {
            let client = crate::ops::cluster_client::ClusterClient::open(&dir)?;
            let timeout = crate::ops::ready::default_timeout(client.manifest.topology.node_count());
            crate::ops::ready::wait_ready(&client, timeout, &mut |_| {})
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            let cells = redundancy::run(&client, &harness, &study_config).await?;
            client.close();
            *study.lock().expect("study lock") = Some(cells);
            Ok(())
        });
    } else {
        let (report, dir, config) = (report.clone(), dir.clone(), options.run.clone());
        let harness = harness.clone();
        sim.client("client", async move {
            let progress = Arc::new(Mutex::new(Progress::default()));
            let done = run::run_with(&dir, &config, progress, &harness).await?;
            *report.lock().expect("report lock") = Some(done);
            Ok(())
        });
    }
    let wall = Instant::now();
    let result = (|| loop {
        harness.apply(&mut sim);
        if sim.step()? {
            return Ok(());
        }
    })();
    let simulated = sim.elapsed();
    env::seed_simulation(None);
    disk::forget_all();
    result
        .map_err(|e: Box<dyn std::error::Error>| anyhow::anyhow!("the simulation failed: {e}"))?;
    let study = study.lock().expect("study lock").take();
    let run = match report.lock().expect("report lock").take() {
        Some(run) => run,
        None if study.is_some() => Report {
            topology: topology.to_string(),
            seed,
            ..Report::default()
        },
        None => anyhow::bail!("the run ended without a report"),
    };
    let wall = wall.elapsed();
    Ok(SimReport {
        run,
        study,
        simulated_ms: simulated.as_millis() as u64,
        wall_ms: wall.as_millis() as u64,
        simulated_seconds_per_wall_second: (simulated.as_secs_f64() / wall.as_secs_f64().max(1e-9)
            * 100.0)
            .round()
            / 100.0,
    })
}
