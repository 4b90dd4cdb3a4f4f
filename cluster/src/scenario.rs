//! What a chaos run is given and what it acts through: its configuration ([`RunConfig`]), its
//! live progress, and the [`Harness`] that kills and restarts nodes (and, on a simulated network,
//! loses datagrams and partitions links). `chaos` and `ends` run on it; `sim` and the CLI build
//! it.

use crate::layout::ClusterDir;
use crate::runner;
use crate::schedule::FaultKind;
use cuberoute_protocol::NodeId;
use cuberoute_protocol::delivery::Mode;
use cuberoute_protocol::wire::control::ForgeWhat;
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
    /// How long each set is waited for.
    pub wait: Duration,
    /// The delivery mode of every set.
    pub mode: Mode,
    /// For `capture` and `forge`: how many relays (each on at most one path of a set).
    pub relays: usize,
    /// Pad each payload with random bytes up to this length (0: the short text alone).
    pub payload_bytes: usize,
    /// For `loss`: the share of datagrams dropped on every link during the faults.
    pub loss_rate: f64,
    /// For `forge`: what the forging relays rewrite.
    pub forge: ForgeWhat,
    /// Send every set clear (no end-to-end seal).
    pub clear: bool,
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
/// (a process, a container, a simulated host) and, on a simulated network, lose datagrams and
/// partition links.
pub trait Harness {
    fn kill(&self, node: NodeId) -> anyhow::Result<()>;
    fn restart(&self, node: NodeId) -> anyhow::Result<()>;
    /// Drop this share of the datagrams on every link from now on (0: none).
    fn lose(&self, _rate: f64) -> anyhow::Result<()> {
        Err(needs_simulation(FaultKind::Loss))
    }
    /// Drop everything on these links (`on`), or nothing again.
    fn partition(&self, _links: &[(NodeId, NodeId)], _on: bool) -> anyhow::Result<()> {
        Err(needs_simulation(FaultKind::Partition))
    }
}

/// Why a run on processes or containers cannot inject `fault`.
pub fn needs_simulation(fault: FaultKind) -> anyhow::Error {
    anyhow::anyhow!(
        "`{}` is a fault of the network itself: only the simulated network injects it (cuberoute sim)",
        fault.name()
    )
}

/// The daemons of a cluster directory: processes or containers ([`runner`]).
pub struct Runners<'a>(pub &'a ClusterDir);

impl Harness for Runners<'_> {
    fn kill(&self, node: NodeId) -> anyhow::Result<()> {
        runner::kill(self.0, node).map(drop)
    }

    fn restart(&self, node: NodeId) -> anyhow::Result<()> {
        runner::restart(self.0, node).map(drop)
    }
}
