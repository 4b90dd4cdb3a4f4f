//! What a chaos run is given and what it acts through: its configuration ([`RunConfig`]), its
//! live progress, and the [`Harness`] that kills and restarts nodes (and, on a simulated network,
//! loses datagrams and partitions links). `chaos` and `ends` run on it; `sim` and the CLI build
//! it.

use crate::chaos::netfault::{self, Chain, Network, Place};
use crate::chaos::schedule::FaultKind;
use crate::launch::layout::ClusterDir;
use crate::launch::local;
use crate::launch::placement::PlacementKind;
use crate::launch::run_state::{self, RunState};
use crate::launch::runner;
use crate::launch::swarm::{self, SwarmRun};
use crate::launch::testbed;
use cuberoute_protocol::delivery::Mode;
use cuberoute_protocol::wire::control::ForgeWhat;
use cuberoute_protocol::{NodeId, Topology};
use serde::Serialize;
use std::collections::BTreeSet;
use std::time::Duration;

/// How long a run waits for the cluster to be ready again after the faults.
pub const REJOIN_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Clone, Debug)]
pub struct RunConfig {
    pub fault_free: Duration,
    pub with_faults: Duration,
    pub after_faults: Duration,
    /// Message sets per second.
    pub rate: f64,
    pub faults: BTreeSet<FaultKind>,
    pub seed: u64,
    /// How often `state` overwrites every node's variables.
    pub state_every: Duration,
    /// The share of packets `buffers` corrupts, in parts per million.
    pub buffer_fraction_ppm: u32,
    /// How long each plain set is waited for.
    pub wait: Duration,
    /// How long the source keeps each reliable set: the run waits for it as long, so that a
    /// set still sent again is never counted lost (`--life`).
    pub life: Duration,
    /// The delivery mode of every set.
    pub mode: Mode,
    /// For `capture` and `forge`: how many relays (each on at most one path of a set).
    pub relays: usize,
    /// Pad each payload with random bytes up to this length (0: the short text alone).
    pub payload_bytes: usize,
    /// For `loss`: the share of datagrams dropped on every link during the faults.
    pub loss_rate: f64,
    /// For `delay`: how long every datagram is held on every link, give or take `jitter`.
    pub delay: Duration,
    pub jitter: Duration,
    /// For `forge`: what the forging relays rewrite.
    pub forge: ForgeWhat,
    /// Send every set clear (no end-to-end seal).
    pub clear: bool,
}

impl RunConfig {
    /// How long the run waits for each of its sets: a reliable set's life, else the wait.
    pub fn set_wait(&self) -> Duration {
        if self.mode.reliable {
            self.life
        } else {
            self.wait
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    FaultFree,
    WithFaults,
    AfterFaults,
}

/// Live counts, for a progress display.
#[derive(Clone, Debug, Default)]
pub struct Progress {
    pub phase: Option<Phase>,
    pub sets_sent: u64,
    pub sets_done: u64,
    pub copies_delivered: u64,
}

/// What a run does to the cluster from outside its daemons: crash a node and bring it back
/// (a process, a container, a simulated host) and, on a network of its own (a simulated one,
/// or namespaces: [`crate::chaos::netfault`]), lose datagrams, delay them and partition links.
pub trait Harness {
    fn kill(&self, node: NodeId) -> anyhow::Result<()>;
    fn restart(&self, node: NodeId) -> anyhow::Result<()>;
    /// Drop this share of the datagrams on every link from now on (0: none).
    fn lose(&self, _rate: f64) -> anyhow::Result<()> {
        Err(needs_network(FaultKind::Loss))
    }
    /// Drop everything on these links (`on`), or nothing again.
    fn partition(&self, _links: &[(NodeId, NodeId)], _on: bool) -> anyhow::Result<()> {
        Err(needs_network(FaultKind::Partition))
    }
    /// Hold every datagram on every link `delay` ± `jitter` (zero: no longer). `Ok(false)`:
    /// this harness does not, and the daemons' own sockets must (`crate::ops::shaping`).
    fn delay(&self, _delay: Duration, _jitter: Duration) -> anyhow::Result<bool> {
        Ok(false)
    }
    /// The nodes on each host, when the cluster is spread over several (`cluster swarm`):
    /// what a `host` fault loses at once.
    fn hosts(&self) -> anyhow::Result<Vec<Vec<NodeId>>> {
        Err(needs_hosts())
    }
    /// Cut host `host` (0-based) off the network (`lost`), or bring it back.
    fn lose_host(&self, _host: usize, _lost: bool) -> anyhow::Result<()> {
        Err(needs_hosts())
    }
    /// What applies `fault` here, as the report's fault windows name it.
    fn mechanism(&self, fault: FaultKind) -> &'static str;
    /// The kernel's own count of the datagrams its rules dropped, if the kernel applies them.
    fn kernel_dropped(&self) -> Option<u64> {
        None
    }
}

/// Why a run on loopback processes cannot inject `fault`.
pub fn needs_network(fault: FaultKind) -> anyhow::Error {
    anyhow::anyhow!(
        "`{}` is a fault of the network itself: it needs nodes with a network of their own \
         (`cluster up --netns`, compose containers, or `cuberoute sim`); loopback processes share \
         one perfect interface",
        fault.name()
    )
}

/// Why a run cannot lose a host here.
pub fn needs_hosts() -> anyhow::Error {
    anyhow::anyhow!(
        "`host` loses a whole host: it needs a cluster spread over the hosts of a test bed \
         (`cuberoute testbed up`, then `cuberoute cluster swarm --testbed`), or processes or \
         containers that run several nodes each (`cluster up --nodes-per-process`, `cluster up \
         --docker --nodes-per-container`)"
    )
}

/// The daemons of a cluster directory: processes or containers ([`runner`]), and their network
/// if they have one of their own ([`Network`]).
pub struct Runners<'a> {
    pub dir: &'a ClusterDir,
    pub network: Option<Network>,
}

impl<'a> Runners<'a> {
    pub fn open(dir: &'a ClusterDir) -> anyhow::Result<Runners<'a>> {
        Ok(Runners {
            dir,
            network: Network::open(dir)?,
        })
    }

    fn network(&self, fault: FaultKind) -> anyhow::Result<&Network> {
        self.network.as_ref().ok_or_else(|| needs_network(fault))
    }

    /// The swarm this cluster runs as, if it does.
    fn swarm(&self) -> anyhow::Result<(Topology, SwarmRun)> {
        match RunState::load(self.dir)? {
            Some(RunState::Swarm { topology, run }) => Ok((topology, run)),
            _ => Err(needs_hosts()),
        }
    }

    fn in_containers(&self) -> bool {
        matches!(runner::find(self.dir), Ok(Some(state)) if state.in_containers())
    }

    /// The nodes of each process, when local processes or containers run several (`cluster up
    /// --nodes-per-process`, `--docker --nodes-per-container`), by their lowest node: the hosts
    /// a `host` fault chooses from.
    fn node_hosts(&self) -> Option<Vec<Vec<NodeId>>> {
        let mut groups = match runner::find(self.dir) {
            Ok(Some(RunState::Processes(state))) => run_state::by_process(&state.processes),
            Ok(Some(RunState::Compose { .. })) => runner::compose::containers(self.dir).ok()?,
            _ => return None,
        };
        groups.iter_mut().for_each(|g| g.sort());
        groups.sort();
        groups.iter().any(|g| g.len() > 1).then_some(groups)
    }
}

impl Harness for Runners<'_> {
    fn kill(&self, node: NodeId) -> anyhow::Result<()> {
        runner::kill(self.dir, node).map(drop)
    }

    fn restart(&self, node: NodeId) -> anyhow::Result<()> {
        runner::restart(self.dir, node).map(drop)
    }

    fn lose(&self, rate: f64) -> anyhow::Result<()> {
        let network = self.network(FaultKind::Loss)?;
        network.flush(Chain::Loss)?;
        if rate > 0.0 {
            let senders = netfault::egress(network.topology, &Place::All);
            network.add(Chain::Loss, &senders, (rate * 1e6).round() as u32)?;
        }
        Ok(())
    }

    fn partition(&self, links: &[(NodeId, NodeId)], on: bool) -> anyhow::Result<()> {
        let network = self.network(FaultKind::Partition)?;
        if on {
            network.add(Chain::Partition, &netfault::links_egress(links), 1_000_000)
        } else {
            network.flush(Chain::Partition)
        }
    }

    fn hosts(&self) -> anyhow::Result<Vec<Vec<NodeId>>> {
        if let Some(hosts) = self.node_hosts() {
            anyhow::ensure!(
                hosts.len() >= 2,
                "the cluster runs in one process: losing it loses every node"
            );
            return Ok(hosts);
        }
        let (topology, run) = self.swarm()?;
        anyhow::ensure!(
            run.hosts.len() >= 2,
            "the swarm has one host: losing it loses every node"
        );
        let kind: PlacementKind = run.placement.parse()?;
        let place = swarm::place(topology, run.hosts.len(), kind)?;
        let mut hosts = vec![Vec::new(); run.hosts.len()];
        for (id, host) in topology.nodes().zip(place) {
            hosts[host].push(id);
        }
        Ok(hosts)
    }

    fn lose_host(&self, host: usize, lost: bool) -> anyhow::Result<()> {
        if let Some(hosts) = self.node_hosts() {
            // A node host: its process killed with every node it runs, and started again.
            let first = *hosts
                .get(host)
                .and_then(|nodes| nodes.first())
                .ok_or_else(|| anyhow::anyhow!("no process {} in the cluster", host + 1))?;
            if let Some(RunState::Compose { topology, run }) = runner::find(self.dir)? {
                // A container's: killed with every node it runs, and started again.
                return if lost {
                    runner::compose::kill_container(self.dir, topology, run, first).map(drop)
                } else {
                    runner::compose::restart(self.dir, topology, run, first)
                };
            }
            return if lost {
                local::kill_process_of(self.dir, first, Duration::from_secs(5)).map(drop)
            } else {
                local::restart_node(self.dir, &std::env::current_exe()?, first).map(drop)
            };
        }
        let (_, run) = self.swarm()?;
        let testbed = run.testbed.as_ref().ok_or_else(|| {
            anyhow::anyhow!(
                "the swarm of {} runs on real hosts: a run cannot cut one off (stop its engine \
                 or its link by hand, and watch with `cluster status`)",
                self.dir.display()
            )
        })?;
        let name = &run
            .hosts
            .get(host)
            .ok_or_else(|| anyhow::anyhow!("no host {} in the swarm", host + 1))?
            .name;
        if lost {
            testbed::cut(testbed, name).map(drop)
        } else {
            testbed::restore(testbed, name).map(drop)
        }
    }

    fn mechanism(&self, fault: FaultKind) -> &'static str {
        let node_hosts = self.node_hosts().is_some();
        let containers = self.in_containers();
        let swarm_tasks_hosted = self.swarm().is_ok()
            && swarm::tasks_of(self.dir).is_ok_and(|tasks| tasks.iter().any(|t| t.len() > 1));
        match fault {
            FaultKind::Crash | FaultKind::CrashEnds if swarm_tasks_hosted => {
                return "node dropped inside its Swarm task (control API), or the task's container killed";
            }
            FaultKind::Host if node_hosts && containers => {
                return "container kill (docker) of a node host";
            }
            FaultKind::Host if node_hosts => return "process kill (SIGKILL) of a node host",
            FaultKind::Host => return "host link down (testbed)",
            FaultKind::Crash | FaultKind::CrashEnds if node_hosts && containers => {
                return "node dropped inside its node host (control API), or its container killed";
            }
            FaultKind::Crash | FaultKind::CrashEnds if node_hosts => {
                return "node dropped inside its node host (control API), or its process killed";
            }
            _ => {}
        }
        match fault {
            FaultKind::Crash | FaultKind::CrashEnds if containers => "container kill (docker)",
            FaultKind::Crash | FaultKind::CrashEnds => "process kill (SIGKILL)",
            FaultKind::Loss | FaultKind::Partition => netfault::KERNEL,
            FaultKind::Delay => netfault::USER_SPACE,
            _ => "the daemons (control API)",
        }
    }

    fn kernel_dropped(&self) -> Option<u64> {
        let network = self.network.as_ref()?;
        let loss = network.dropped(Chain::Loss).ok()?;
        Some(loss + network.dropped(Chain::Partition).ok()?)
    }
}
