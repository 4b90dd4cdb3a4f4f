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
use crate::launch::generate::{Addressing, Ports, generate_with_keys, service_name};
use crate::launch::layout::ClusterDir;
use cuberoute_daemon::config::{DaemonArgs, NodeConfig};
use cuberoute_daemon::{disk, env};
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
    Crash(NodeId),
    Bounce(NodeId),
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
    /// Every link (for `delay`), and the latency of a link without it.
    links: Arc<Vec<(NodeId, NodeId)>>,
    latency: (Duration, Duration),
}

impl SimHarness {
    fn push(&self, action: Action) -> anyhow::Result<()> {
        self.actions.lock().expect("harness lock").push(action);
        Ok(())
    }

    fn apply(&self, sim: &mut turmoil::Sim) {
        for action in self.actions.lock().expect("harness lock").drain(..) {
            match action {
                Action::Crash(node) => {
                    // What the node's store had not synced is lost with it.
                    if let Some(store) = self.stores.get(&node) {
                        disk::crash(store);
                    }
                    sim.crash(service_name(node))
                }
                Action::Bounce(node) => sim.bounce(service_name(node)),
                Action::FailRate(rate) => sim.set_fail_rate(rate),
                Action::Latency(range) => {
                    let (min, max) = range.unwrap_or(self.latency);
                    for &(a, b) in self.links.iter() {
                        let (a, b) = (service_name(a), service_name(b));
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
    fn kill(&self, node: NodeId) -> anyhow::Result<()> {
        self.push(Action::Crash(node))
    }

    fn restart(&self, node: NodeId) -> anyhow::Result<()> {
        self.push(Action::Bounce(node))
    }

    fn lose(&self, rate: f64) -> anyhow::Result<()> {
        self.push(Action::FailRate(rate))
    }

    fn partition(&self, links: &[(NodeId, NodeId)], on: bool) -> anyhow::Result<()> {
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
            FaultKind::Crash | FaultKind::CrashEnds => "simulated host crash",
            FaultKind::Loss | FaultKind::Delay | FaultKind::Partition => "simulated network",
            _ => "the daemons (control API)",
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
    generate_with_keys(
        dir,
        topology,
        &Addressing::Simulated {
            ports: Ports::default(),
        },
        Some(seed ^ SEAL_KEY_SEED),
    )?;
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
    for node in topology.nodes() {
        let config_path = dir
            .path()
            .join("nodes")
            .join(node.0.to_string())
            .join("node.toml");
        let keep_store = options.store;
        sim.host(service_name(node), move || {
            let args = DaemonArgs {
                config: Some(config_path.clone()),
                ..DaemonArgs::default()
            };
            async move {
                let mut config = NodeConfig::resolve(&args)?;
                // No metrics endpoint: it would bind a real TCP socket.
                config.metrics_listen = None;
                if !keep_store {
                    config.store = None;
                }
                cuberoute_daemon::run_until(config, args, false, std::future::pending()).await?;
                Ok(())
            }
        });
    }
    let report: Arc<Mutex<Option<Report>>> = Arc::default();
    let study: Arc<Mutex<Option<Vec<Cell>>>> = Arc::default();
    let harness = SimHarness {
        actions: Arc::default(),
        stores: Arc::new(stores),
        links: Arc::new(
            topology
                .nodes()
                .flat_map(|a| topology.neighbours(a).map(move |b| (a, b)))
                .filter(|(a, b)| a < b)
                .collect(),
        ),
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
