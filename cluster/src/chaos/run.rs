//! `cuberoute chaos run`: traffic between random pairs through a running cluster, faults on a
//! schedule made reproducible by a seed, and a report of what the protocol did.
//!
//! The run has three phases and one traffic across them ([`load`](super::load)): message sets
//! at a fixed rate from the run's start to its end, each waited for, none held back while the
//! run injects, repairs or restarts (an open loop: each set's latency counts from when it was
//! due):
//! 1. **fault-free**: the baseline for latency, between the nodes the faults will spare as
//!    ends (the schedule is known from the seed), so that a set the faults begin under loses
//!    no end; such a set is judged as one of the next phase;
//! 2. **with faults**: the chosen faults are injected at its start and last its whole length:
//!    * `state`: every node overwrites its protocol variables every 10 ms;
//!    * `buffers`: every node flips bits in its queued packets, and in a share of the packets
//!      entering its link buffers;
//!    * `crash`: nodes are killed (SIGKILL, or `docker kill`);
//!    * `cut`: links are severed on both sides;
//!    * `loss`, `delay`, `partition`: the network itself loses datagrams, holds them, or splits
//!      in two halves (a simulated network, or a network of the cluster's own:
//!      [`crate::chaos::netfault`], [`crate::ops::shaping`]).
//!
//!    Each fault's window (from when to when, what, where, what applied it) goes into the
//!    report, and every set into its timeline ([`crate::chaos::timeline`]), for the report page.
//!
//!    Crashed nodes and cut links together number at most k-1 = connectivity-1, so every set
//!    between live endpoints keeps a path; traffic in this phase is between live nodes only,
//!    and goes on so while the network is repaired, relays stop and nodes restart;
//! 3. **after faults**: from when the cluster is ready again, between all nodes. Everything
//!    sent in this phase must arrive.
//!
//! The run is [`run_with`]'s steps, in order: `Run::start` (the cluster ready, its state
//! noted), the fault-free phase, `Run::inject_faults`, the phase with faults,
//! `Run::repair_network` and `Run::stop_relays`, `Run::heal_and_restart`, the phase after
//! faults, and `Run::judge_and_report`. What each set became is judged in
//! [`judge`](super::judge), the totals are made in [`report`](super::report).

use crate::chaos::around::{self, AroundReport};
use crate::chaos::judge::{
    Judge, captures_and_leaks, forgeries, host_loss_outcome, output_cursors, sweep_outputs,
};
use crate::chaos::load::{Load, Policy, Traffic};
use crate::chaos::netfault;
use crate::chaos::report::{Report, timeline};
use crate::chaos::scenario::{Harness, Phase, Progress, REJOIN_TIMEOUT, RunConfig, Runners};
use crate::chaos::schedule::{self, FaultCounts, FaultKind, Partition, Schedule};
use crate::chaos::timeline::{Opened, Windows};
use crate::chaos::verdict;
use crate::launch::layout::ClusterDir;
use crate::ops::cluster_client::ClusterClient;
use crate::ops::ready::{self, Readiness};
use crate::ops::shaping::{self, ShapeRule};
use cuberoute_protocol::delivery::Mode;
use cuberoute_protocol::wire::control::{Fault, NodeStatus, Request, Response, SendSet};
use cuberoute_protocol::{NodeId, SendRequest, Topology};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
// tokio's clock: the real one, or a simulation's (`cuberoute sim`).
use tokio::time::Instant;

/// Mixed into the seed for what the faults draw, apart from the traffic's draws.
const FAULT_SEEDS: u64 = 0x6661_756c_7473;

async fn snapshot(client: &ClusterClient) -> BTreeMap<NodeId, NodeStatus> {
    client
        .statuses(Duration::from_secs(3))
        .await
        .into_iter()
        .filter_map(|(id, s)| s.ok().map(|s| (id, s)))
        .collect()
}

async fn inject_everywhere(
    client: &ClusterClient,
    nodes: &[NodeId],
    fault: impl Fn(NodeId) -> Fault,
) {
    let requests = nodes
        .iter()
        .map(|&id| (id, Request::Inject(fault(id))))
        .collect();
    client.request_each(requests, Duration::from_secs(3)).await;
}

async fn inject(client: &ClusterClient, node: NodeId, fault: Fault) -> anyhow::Result<()> {
    match client.request(node, &Request::Inject(fault)).await? {
        Response::Injected(_) => Ok(()),
        other => anyhow::bail!("node {}: unexpected answer {other:?}", client.name(node)),
    }
}

/// Run on the cluster of `dir`, crashing its nodes by their runners.
pub async fn run(
    dir: &ClusterDir,
    config: &RunConfig,
    progress: Arc<Mutex<Progress>>,
) -> anyhow::Result<Report> {
    run_with(dir, config, progress, &Runners::open(dir)?).await
}

/// Run on the cluster of `dir`, crashing nodes (and, on a simulated network, losing datagrams
/// and partitioning links) as `harness` does.
pub async fn run_with(
    dir: &ClusterDir,
    config: &RunConfig,
    progress: Arc<Mutex<Progress>>,
    harness: &dyn Harness,
) -> anyhow::Result<Report> {
    let client = ClusterClient::open(dir)?;
    let ready = wait_until_allowed_and_ready(&client).await?;
    let mut report = if config.faults.contains(&FaultKind::CrashEnds) {
        crash_ends(&client, config, progress, harness).await?
    } else {
        run_phases(client, config, progress, harness, ready).await?
    };
    report.verdict = verdict::judge(&report, config);
    Ok(report)
}

/// The three phases of a run, and its report.
async fn run_phases(
    client: ClusterClient,
    config: &RunConfig,
    progress: Arc<Mutex<Progress>>,
    harness: &dyn Harness,
    ready: Readiness,
) -> anyhow::Result<Report> {
    let mut run = Run::start(client, config, harness, progress, ready).await?;
    // 1. Fault-free.
    tokio::time::sleep_until(run.traffic.t0 + config.fault_free).await;
    // 2. Faults, each with its window on the run's clock; the traffic goes on throughout.
    let mut faults = run.inject_faults().await?;
    run.with_faults().await;
    let network_rejoin = run.repair_network(&mut faults).await?;
    run.stop_relays(&mut faults).await?;
    // 3. After: heal, restart, and once the cluster is ready, send between all nodes.
    let rejoin = run.heal_and_restart(&mut faults, network_rejoin).await?;
    run.traffic.follow(Policy {
        phase: Phase::AfterFaults,
        from: run.nodes.clone(),
        to: run.nodes.clone(),
        forging: false,
    });
    tokio::time::sleep(config.after_faults).await;
    run.judge_and_report(faults, rejoin).await
}

/// Check that the client's certificate may do what a run does, and wait until the cluster is
/// ready; its statuses then.
async fn wait_until_allowed_and_ready(client: &ClusterClient) -> anyhow::Result<Readiness> {
    let topology = client.manifest.topology;
    let nodes: Vec<NodeId> = client.manifest.nodes.iter().map(|n| n.id).collect();
    // A run sends from every node and injects faults: a certificate of role chaos without
    // --as, or nothing is done.
    let any_send = Request::Send(SendSet {
        request: SendRequest::to(nodes[nodes.len() - 1]),
        payload: Vec::new(),
        trace: false,
        mode: Mode::default(),
        deadline_ms: 0,
        clear: false,
    });
    client
        .allowed(&nodes, &[Request::Inject(Fault::Unshape), any_send])
        .map_err(|line| anyhow::anyhow!(line))?;
    ready::wait_ready(
        client,
        ready::default_timeout(topology.node_count()),
        &mut |_| {},
    )
    .await
    .map_err(|e| anyhow::anyhow!("{e}: start the run on a healthy cluster"))
}

/// A run under way: its cluster, what it was given, its traffic, and the windows of its faults
/// on its clock.
struct Run<'a> {
    client: ClusterClient,
    config: &'a RunConfig,
    harness: &'a dyn Harness,
    topology: Topology,
    nodes: Vec<NodeId>,
    /// Every node's status when the run began, and where its output stood.
    before: BTreeMap<NodeId, NodeStatus>,
    output_at_start: BTreeMap<NodeId, u64>,
    /// The faults it will inject, from its seed.
    plan: Plan,
    traffic: Traffic,
    /// Draws what the faults themselves need (the seeds of the corruption).
    rng: StdRng,
    windows: Windows,
    /// When the crashes and cuts were injected, and when every live node knew of them.
    /// And when the phase ended, the repair beginning.
    known: Option<(f64, Option<f64>, f64)>,
}

/// The faults a run will inject, a function of its seed known before it begins: the
/// fault-free sets avoid the nodes they take as ends.
struct Plan {
    schedule: Schedule,
    /// `capture`, `forge`, or both, and the relays that do it.
    relaying: Vec<FaultKind>,
    relays: Vec<NodeId>,
    /// The host to lose (its index and nodes).
    lost_host: Option<(usize, Vec<NodeId>)>,
}

impl Plan {
    fn of(config: &RunConfig, topology: Topology, harness: &dyn Harness) -> anyhow::Result<Plan> {
        // At most k-1 failures in all, so that every set between live nodes keeps a path.
        let counts = FaultCounts::whole_budget(topology, &config.faults);
        let schedule = schedule::schedule(config.seed, topology, &config.faults, counts)?;
        let relaying = [FaultKind::Capture, FaultKind::Forge]
            .into_iter()
            .filter(|f| config.faults.contains(f))
            .collect::<Vec<_>>();
        let relays = if relaying.is_empty() {
            Vec::new()
        } else {
            schedule::relays(config.seed, topology, &schedule, config.relays)
        };
        let lost_host = if config.faults.contains(&FaultKind::Host) {
            let hosts = harness.hosts()?;
            let host = (config.seed as usize) % hosts.len();
            Some((host, hosts[host].clone()))
        } else {
            None
        };
        Ok(Plan {
            schedule,
            relaying,
            relays,
            lost_host,
        })
    }

    /// The nodes the faults leave as ends of sets: alive, neither relays (each then lies on
    /// at most one path of a set) nor on the lost host.
    fn spared(&self, topology: Topology) -> Vec<NodeId> {
        let on_lost_host = |n: &NodeId| {
            self.lost_host
                .as_ref()
                .is_some_and(|(_, on)| on.contains(n))
        };
        self.schedule
            .alive(topology)
            .into_iter()
            .filter(|n| !self.relays.contains(n) && !on_lost_host(n))
            .collect()
    }

    /// How the sets of the phase with faults go: from spared nodes to spared nodes, and
    /// reliable ones to the lost host's nodes too (they must arrive once it is back).
    fn with_faults(&self, topology: Topology, reliable: bool) -> Policy {
        let spared = self.spared(topology);
        let to = if self.lost_host.is_some() && reliable {
            topology.nodes().collect()
        } else {
            spared.clone()
        };
        Policy {
            phase: Phase::WithFaults,
            from: spared,
            to,
            forging: self.relaying.contains(&FaultKind::Forge),
        }
    }
}

/// The faults of the phase with faults, as injected: what to undo when it ends (beside the
/// run's [`Plan`]), and the windows to close then.
struct Faults {
    crashes: Vec<Opened>,
    cuts: Vec<Opened>,
    partition: Option<Partition>,
    losing: bool,
    delaying: bool,
    /// The windows of the partition, the loss and the delay.
    network_windows: Vec<Opened>,
    relay_windows: Vec<Opened>,
    /// The lost host's window.
    host_window: Option<Opened>,
    /// Datagrams the kernel's rules dropped, read when the network is repaired.
    kernel_dropped: Option<u64>,
}

impl<'a> Run<'a> {
    /// Plan the faults, note where every node stands, and start the run's clock and
    /// traffic.
    async fn start(
        client: ClusterClient,
        config: &'a RunConfig,
        harness: &'a dyn Harness,
        progress: Arc<Mutex<Progress>>,
        ready: Readiness,
    ) -> anyhow::Result<Run<'a>> {
        let topology = client.manifest.topology;
        let plan = Plan::of(config, topology, harness)?;
        let nodes: Vec<NodeId> = client.manifest.nodes.iter().map(|n| n.id).collect();
        let before: BTreeMap<NodeId, NodeStatus> = ready
            .statuses
            .into_iter()
            .filter_map(|(id, s)| s.ok().map(|s| (id, s)))
            .collect();
        let output_at_start = output_cursors(&client, &nodes).await;
        let load = Load {
            rate: config.rate,
            wait: config.set_wait(),
            mode: config.mode,
            clear: config.clear,
            payload_bytes: config.payload_bytes,
            seed: config.seed,
        };
        let spared = plan.spared(topology);
        let fault_free = Policy {
            phase: Phase::FaultFree,
            from: spared.clone(),
            to: spared,
            forging: false,
        };
        let traffic = Traffic::start(client.clone(), load, fault_free, progress);
        Ok(Run {
            client,
            config,
            harness,
            topology,
            nodes,
            before,
            output_at_start,
            plan,
            traffic,
            rng: StdRng::seed_from_u64(config.seed ^ FAULT_SEEDS),
            windows: Windows::default(),
            known: None,
        })
    }

    /// ms on the run's clock.
    fn now_ms(&self) -> f64 {
        ms_since(self.traffic.t0)
    }

    /// Inject every fault of the run, each opening its window: state and buffer corruption,
    /// crashes, the network's faults, cut links, relays that capture or forge, a lost host.
    async fn inject_faults(&mut self) -> anyhow::Result<Faults> {
        // From now on the sets go between the nodes the faults spare, and those under way
        // are the faults'.
        let policy = self
            .plan
            .with_faults(self.topology, self.config.mode.reliable);
        self.traffic.faults_begin(policy.forging);
        self.traffic.follow(policy);
        self.corrupt().await;
        let schedule = self.plan.schedule.clone();
        let crashes = self.crash(&schedule)?;
        let (partition, losing, delaying, network_windows) = self.impair_network().await?;
        let cuts = self.cut(&schedule).await?;
        let relay_windows = self.start_relays().await?;
        let host_window = self.lose_host()?;
        Ok(Faults {
            crashes,
            cuts,
            partition,
            losing,
            delaying,
            network_windows,
            relay_windows,
            host_window,
            kernel_dropped: None,
        })
    }

    /// `state` and `buffers`: every node corrupts its variables or its buffers for the phase.
    async fn corrupt(&mut self) {
        let config = self.config;
        let all_nodes = format!("all {} nodes", self.nodes.len());
        let for_ms = config.with_faults.as_millis() as u32;
        if config.faults.contains(&FaultKind::State) {
            let every_ms = config.state_every.as_millis().max(1) as u32;
            let seed = self.rng.random::<u64>();
            inject_everywhere(&self.client, &self.nodes, |id| Fault::CorruptState {
                seed: seed ^ id.0,
                every_ms,
                for_ms,
            })
            .await;
            let at = self.now_ms();
            let w = self.windows.open(
                at,
                format!("state every {every_ms} ms"),
                all_nodes.clone(),
                self.harness.mechanism(FaultKind::State),
            );
            self.windows.close(w, at + f64::from(for_ms));
        }
        if config.faults.contains(&FaultKind::Buffers) {
            let seed = self.rng.random::<u64>();
            inject_everywhere(&self.client, &self.nodes, |id| Fault::CorruptBuffers {
                seed: seed ^ id.0,
                fraction_ppm: config.buffer_fraction_ppm,
                for_ms,
            })
            .await;
            let at = self.now_ms();
            let w = self.windows.open(
                at,
                format!("buffers {}%", f64::from(config.buffer_fraction_ppm) / 1e4),
                all_nodes,
                self.harness.mechanism(FaultKind::Buffers),
            );
            self.windows.close(w, at + f64::from(for_ms));
        }
    }

    /// Kill the nodes the schedule crashes.
    fn crash(&mut self, schedule: &Schedule) -> anyhow::Result<Vec<Opened>> {
        let mut crashes = Vec::new();
        for &id in &schedule.crashed {
            self.harness.kill(id)?;
            crashes.push(self.windows.open(
                self.now_ms(),
                "crash".into(),
                format!("node {}", crate::ops::names::node(self.topology, id)),
                self.harness.mechanism(FaultKind::Crash),
            ));
        }
        Ok(crashes)
    }

    /// The network's own faults: the partition, the loss, the delay (whichever the run has).
    async fn impair_network(
        &mut self,
    ) -> anyhow::Result<(Option<Partition>, bool, bool, Vec<Opened>)> {
        let config = self.config;
        let partition = config
            .faults
            .contains(&FaultKind::Partition)
            .then(|| schedule::partition(config.seed, self.topology));
        let mut network_windows = Vec::new();
        if let Some(p) = &partition {
            self.harness.partition(&p.links, true)?;
            network_windows.push(self.windows.open(
                self.now_ms(),
                "partition".into(),
                format!("bit {} ({} links)", p.bit, p.links.len()),
                self.harness.mechanism(FaultKind::Partition),
            ));
        }
        let losing = config.faults.contains(&FaultKind::Loss);
        if losing {
            self.harness.lose(config.loss_rate)?;
            network_windows.push(self.windows.open(
                self.now_ms(),
                format!("loss {}%", config.loss_rate * 100.0),
                "all links".into(),
                self.harness.mechanism(FaultKind::Loss),
            ));
        }
        let delaying = config.faults.contains(&FaultKind::Delay);
        if delaying {
            delay(
                self.harness,
                &self.client,
                &self.nodes,
                config.delay,
                config.jitter,
            )
            .await?;
            network_windows.push(self.windows.open(
                self.now_ms(),
                format!(
                    "delay {} ms ± {} ms",
                    config.delay.as_millis(),
                    config.jitter.as_millis()
                ),
                "all links".into(),
                self.harness.mechanism(FaultKind::Delay),
            ));
        }
        Ok((partition, losing, delaying, network_windows))
    }

    /// Cut the links the schedule cuts, on both sides.
    async fn cut(&mut self, schedule: &Schedule) -> anyhow::Result<Vec<Opened>> {
        let mut cuts = Vec::new();
        for &(a, b) in &schedule.cut {
            inject(&self.client, a, Fault::Cut { neighbour: b }).await?;
            inject(&self.client, b, Fault::Cut { neighbour: a }).await?;
            cuts.push(self.windows.open(
                self.now_ms(),
                "cut".into(),
                format!(
                    "link {}-{}",
                    crate::ops::names::node(self.topology, a),
                    crate::ops::names::node(self.topology, b)
                ),
                self.harness.mechanism(FaultKind::Cut),
            ));
        }
        Ok(cuts)
    }

    /// Relays that capture or forge: traffic runs between the other live nodes, so each relay
    /// is on at most one path of a set.
    async fn start_relays(&mut self) -> anyhow::Result<Vec<Opened>> {
        let mut relay_windows = Vec::new();
        for &kind in &self.plan.relaying {
            for &relay in &self.plan.relays {
                inject(&self.client, relay, relay_fault(self.config, kind, true)).await?;
                relay_windows.push(self.windows.open(
                    ms_since(self.traffic.t0),
                    kind.name().into(),
                    format!("node {}", crate::ops::names::node(self.topology, relay)),
                    self.harness.mechanism(kind),
                ));
            }
        }
        Ok(relay_windows)
    }

    /// A whole host lost: every node on it at once. Plain sets run between the other hosts'
    /// nodes; reliable ones also go to the lost host's nodes, and must arrive once it is back.
    fn lose_host(&mut self) -> anyhow::Result<Option<Opened>> {
        let Some((host, on)) = &self.plan.lost_host else {
            return Ok(None);
        };
        self.harness.lose_host(*host, true)?;
        Ok(Some(self.windows.open(
            ms_since(self.traffic.t0),
            "host lost".into(),
            format!("h{} ({} nodes)", host + 1, on.len()),
            self.harness.mechanism(FaultKind::Host),
        )))
    }

    /// The phase with faults, as long as the run was given, while its sets go on; meanwhile,
    /// ask the nodes until every live one knows every dead link.
    async fn with_faults(&mut self) {
        let dead = around::dead_links(self.topology, &self.plan.schedule);
        let faults_at_ms = self.now_ms();
        let live: Vec<NodeId> = self.plan.schedule.alive(self.topology);
        let t0 = self.traffic.t0;
        let (_, known_at_ms) = tokio::join!(
            tokio::time::sleep(self.config.with_faults),
            around::detection(&self.client, &live, &dead, t0, self.config.with_faults)
        );
        if !dead.is_empty() {
            self.known = Some((faults_at_ms, known_at_ms, self.now_ms()));
        }
    }

    /// The network's own faults end with the phase (what a partition or loss held back in the
    /// link buffers arrives once the links carry again), and the links come back: how long
    /// that took, if the network's faults were all the run had (with crashed nodes or cut
    /// links they cannot all be up before the restarts and heals: the wait after those
    /// counts). The sets go on meanwhile, between the nodes the faults spared.
    async fn repair_network(&mut self, faults: &mut Faults) -> anyhow::Result<Option<Duration>> {
        let repaired = Instant::now();
        faults.kernel_dropped = self.harness.kernel_dropped();
        if let Some(p) = &faults.partition {
            self.harness.partition(&p.links, false)?;
        }
        if faults.losing {
            self.harness.lose(0.0)?;
        }
        if faults.delaying {
            delay(
                self.harness,
                &self.client,
                &self.nodes,
                Duration::ZERO,
                Duration::ZERO,
            )
            .await?;
        }
        for w in std::mem::take(&mut faults.network_windows) {
            let at = self.now_ms();
            self.windows.close(w, at);
        }
        if let (Some((host, _)), Some(window)) = (&self.plan.lost_host, faults.host_window.take()) {
            self.harness.lose_host(*host, false)?;
            let at = self.now_ms();
            self.windows.close(window, at);
        }
        let network_faults = (faults.partition.is_some()
            || faults.losing
            || faults.delaying
            || self.plan.lost_host.is_some())
            && self.plan.schedule == Schedule::default();
        if !network_faults {
            return Ok(None);
        }
        let waited = ready::wait_ready(&self.client, REJOIN_TIMEOUT, &mut |_| {}).await;
        Ok(waited.ok().map(|_| repaired.elapsed()))
    }

    /// The relays capture and forge no more. The sets sent while they forged are judged so,
    /// however late they end.
    async fn stop_relays(&mut self, faults: &mut Faults) -> anyhow::Result<()> {
        self.traffic.stop_forging();
        for &kind in &self.plan.relaying {
            for &relay in &self.plan.relays {
                inject(&self.client, relay, relay_fault(self.config, kind, false)).await?;
            }
        }
        for w in std::mem::take(&mut faults.relay_windows) {
            let at = self.now_ms();
            self.windows.close(w, at);
        }
        Ok(())
    }

    /// Heal the cut links and restart the crashed nodes; how long until the cluster was ready
    /// again (from the repair of the network, if it had no crash or cut). The corruption
    /// windows closed with the phase; a little slack keeps the next phase's packets out of
    /// them.
    async fn heal_and_restart(
        &mut self,
        faults: &mut Faults,
        network_rejoin: Option<Duration>,
    ) -> anyhow::Result<Option<Duration>> {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let healing = Instant::now();
        for &(a, b) in &self.plan.schedule.cut {
            inject(&self.client, a, Fault::Heal { neighbour: b }).await?;
            inject(&self.client, b, Fault::Heal { neighbour: a }).await?;
        }
        for w in std::mem::take(&mut faults.cuts) {
            let at = self.now_ms();
            self.windows.close(w, at);
        }
        for &id in &self.plan.schedule.crashed {
            self.harness.restart(id)?;
        }
        for w in std::mem::take(&mut faults.crashes) {
            let at = self.now_ms();
            self.windows.close(w, at);
        }
        Ok(if self.plan.schedule == Schedule::default() {
            network_rejoin
        } else {
            let waited = ready::wait_ready(&self.client, REJOIN_TIMEOUT, &mut |_| {}).await;
            waited.ok().map(|_| healing.elapsed())
        })
    }

    /// Judge what the run's sets became and what else reached the clients, and make the
    /// report.
    async fn judge_and_report(
        self,
        faults: Faults,
        rejoin: Option<Duration>,
    ) -> anyhow::Result<Report> {
        let (config, client, topology) = (self.config, &self.client, self.topology);
        // The traffic stops here, and every set sent is waited for.
        let t0 = self.traffic.t0;
        let traffic = self.traffic.finish().await?;
        let results = traffic.results;
        let after = snapshot(client).await;
        let plan = &self.plan;
        let (captured, leaked) = if plan.relaying.contains(&FaultKind::Capture) {
            captures_and_leaks(client, &plan.relays, &results).await?
        } else {
            (0, 0)
        };
        // Every output from where it stood at the start (a restarted node's from its new start).
        let from: BTreeMap<NodeId, u64> = self
            .nodes
            .iter()
            .map(|id| {
                // A restarted node without a store starts its output at 0 again: read from
                // there. With one, its indices lasted (docs/delivery.md, "Output indices
                // last"), and the entries it kept from before the run stay unread.
                let same = self.before.get(id).map(|b| b.incarnation)
                    == after.get(id).map(|a| a.incarnation);
                let lasted = after.get(id).is_some_and(|a| a.output_lasts);
                let at = self
                    .output_at_start
                    .get(id)
                    .copied()
                    .filter(|_| same || lasted);
                (*id, at.unwrap_or(0))
            })
            .collect();
        let sealed = results
            .iter()
            .find(|r| !r.failed)
            .map_or(!config.clear, |r| r.sealed);
        let mut judge = Judge::new(sealed, config.mode, &results);
        sweep_outputs(client, &from, &mut judge).await;
        client.close();
        let mut report = Report::of(
            config,
            topology,
            &results,
            &self.before,
            &after,
            plan.schedule.clone(),
            rejoin,
        );
        report.add_sweep(judge.done(), config.faults.contains(&FaultKind::Forge));
        report.forgeries = forgeries(&self.before, &after, &plan.relays);
        report.relays = plan.relays.iter().map(|r| r.0).collect();
        if let Some(p) = faults.partition {
            report.partition_bit = Some(p.bit);
            report.partitioned_links = p.links.len() as u64;
        }
        report.loss_rate = if faults.losing { config.loss_rate } else { 0.0 };
        if faults.delaying {
            report.delay_ms = Some(config.delay.as_secs_f64() * 1e3);
            report.jitter_ms = Some(config.jitter.as_secs_f64() * 1e3);
        }
        report.kernel_dropped = faults.kernel_dropped;
        report.host_loss = plan.lost_host.as_ref().map(|(host, on)| {
            let also = &plan.schedule;
            host_loss_outcome(topology, (*host, on), also, config.mode.reliable, &results)
        });
        let end_ms = ms_since(t0);
        report.sent_per_second = traffic.sent_per_second;
        report.fault_windows = self.windows.finish(end_ms);
        report.timeline = timeline(config, topology, &results, &report.fault_windows, end_ms);
        report.captured = captured;
        report.leaked = leaked;
        report.around = self
            .known
            .map(|times| AroundReport::of(topology, &plan.schedule, &results, times));
        Ok(report)
    }
}

/// The fault that turns a relay of `kind` (capture or forge) on or off.
fn relay_fault(config: &RunConfig, kind: FaultKind, on: bool) -> Fault {
    match kind {
        FaultKind::Capture => Fault::Capture { on },
        _ => Fault::Forge {
            on,
            what: config.forge,
        },
    }
}

/// ms on the run's clock.
fn ms_since(t0: Instant) -> f64 {
    t0.elapsed().as_secs_f64() * 1e3
}

/// Hold every datagram between nodes `delay` ± `jitter` (zero: no longer): by the harness if it
/// can (a simulated network), else in the daemons' own sockets ([`shaping`]).
pub async fn delay(
    harness: &dyn Harness,
    client: &ClusterClient,
    nodes: &[NodeId],
    delay: Duration,
    jitter: Duration,
) -> anyhow::Result<()> {
    if harness.delay(delay, jitter)? {
        return Ok(());
    }
    if delay.is_zero() && jitter.is_zero() {
        return shaping::unshape(client, nodes).await;
    }
    let rule = ShapeRule {
        to: netfault::node_addresses(&client.manifest),
        delay_us: netfault::micros(delay),
        jitter_us: netfault::micros(jitter),
        ..ShapeRule::default()
    };
    shaping::shape(client, nodes, rule).await
}

/// `crash-ends`: a run of its own ([`crate::chaos::ends`]), its verdict in the report's keys.
async fn crash_ends(
    client: &ClusterClient,
    config: &RunConfig,
    progress: Arc<Mutex<Progress>>,
    harness: &dyn Harness,
) -> anyhow::Result<Report> {
    if config.faults.len() > 1 {
        anyhow::bail!(
            "crash-ends runs alone: it kills nodes itself, and its checker reads every node"
        );
    }
    progress.lock().expect("progress").phase = Some(Phase::WithFaults);
    let ends = crate::chaos::ends::run(client, config, progress, harness).await?;
    client.close();
    Ok(Report::of_ends(config, client.manifest.topology, ends))
}
