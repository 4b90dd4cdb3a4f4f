//! `cuberoute chaos run`: traffic between random pairs through a running cluster, faults on a
//! schedule made reproducible by a seed, and a report of what the protocol did.
//!
//! The run has three phases, each with the same traffic (message sets at a fixed rate, each
//! waited for):
//! 1. **fault-free**: the baseline for latency;
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
//!    between live endpoints keeps a path; traffic in this phase is between live nodes only;
//! 3. **after faults**: cut links are healed and crashed nodes restarted, and traffic goes on.
//!    Everything sent in this phase must arrive.

use crate::chaos::netfault;
use crate::chaos::scenario::{Harness, Phase, Progress, REJOIN_TIMEOUT, RunConfig, Runners};
pub use crate::chaos::schedule::FaultKind;
use crate::chaos::schedule::{self, FaultCounts, Schedule};
use crate::chaos::timeline::{FaultWindow, Outcome, SetPoint, Timeline, Windows};
use crate::launch::layout::ClusterDir;
use crate::ops::cluster_client::ClusterClient;
use crate::ops::percentiles::{Percentiles, serialize_whole_us};
use crate::ops::ready;
use crate::ops::shaping::{self, ShapeRule};
use crate::ops::traffic::SendOptions;
use cuberoute_daemon::client::ClientError;
use cuberoute_protocol::delivery::{Mode, Settlement};
use cuberoute_protocol::wire::control::{
    Captured, Delivery, Fault, MAX_RECV_BATCH, NodeStatus, Request, Response,
};
use cuberoute_protocol::{NodeId, SendRequest, Topology, flush_bound};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;
// tokio's clock: the real one, or a simulation's (`cuberoute sim`).
use tokio::time::Instant;

/// What one set became.
#[derive(Clone, Debug)]
struct SetResult {
    phase: Phase,
    /// When it was sent, in ms from the start of the run.
    sent_ms: f64,
    /// The copies (path indices) that arrived (plain sets).
    indices: BTreeSet<u8>,
    /// The set's name at its source (for matching captures), and what was sent.
    from: NodeId,
    to: NodeId,
    seq: u64,
    sent_at_us: u64,
    payload: Vec<u8>,
    k: u32,
    /// Entries the destination's client got: copies (plain) or rebuilt payloads.
    delivered: u32,
    /// Entries beyond one per copy (plain) or one per set (a delivery mode).
    duplicates: u32,
    /// Delivered entries whose payload differs from what was sent while relays forged.
    forged: u32,
    /// Reliable: how the source settled the set, if it did.
    settlement: Option<Settlement>,
    wire_bytes: u64,
    /// Delivered copies whose payload differs from what was sent.
    corrupted: u32,
    /// Delivered copies whose path differs from the protocol's construction.
    path_mismatches: u32,
    /// Whether the copy on the shortest constructed path arrived (the single-path baseline).
    shortest_delivered: bool,
    latencies_us: Vec<u64>,
    /// The request failed (the source was unreachable).
    failed: bool,
    /// The source refused the set at once, and why.
    refused: Option<String>,
    /// Whether it went sealed.
    sealed: bool,
    /// The output entries its await judged: (node, output index, copy index for a plain set).
    judged: Vec<(NodeId, u64, Option<u8>)>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct PhaseReport {
    pub sets_sent: u64,
    pub copies_expected: u64,
    pub copies_delivered: u64,
    pub sets_with_a_copy: u64,
    pub sets_lost: u64,
    pub sets_failed_to_send: u64,
    pub path_mismatches: u64,
    pub corrupted_delivered_to_client: u64,
    /// Sets whose copy on the shortest constructed path arrived: what routing over one path
    /// would have delivered.
    pub single_path_delivered: u64,
    pub duplicates_to_client: u64,
    pub forged_delivered_to_client: u64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Phases {
    pub fault_free: PhaseReport,
    pub with_faults: PhaseReport,
    pub after_faults: PhaseReport,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Latency {
    #[serde(serialize_with = "serialize_whole_us")]
    pub fault_free: Percentiles,
    #[serde(serialize_with = "serialize_whole_us")]
    pub with_faults: Percentiles,
    #[serde(serialize_with = "serialize_whole_us")]
    pub after_faults: Percentiles,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Recovery {
    /// The most hops a corrupted packet made after its corruption before it was dropped or
    /// delivered.
    pub max_hops: u32,
    pub max_ms: f64,
    /// The bound B of docs/protocol.md.
    pub bound_hops: u32,
    pub packets_corrupted: u64,
    pub corrupted_dropped: u64,
    pub corrupted_delivered: u64,
    /// Corrupted packets corrupted once more before they ended (then counted from there).
    pub corrupted_again: u64,
}

/// The report. Its first keys are the schema.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    pub sets_sent: u64,
    pub copies_expected: u64,
    pub copies_delivered: u64,
    pub sets_with_a_copy: u64,
    pub sets_lost: u64,
    pub corrupted_delivered_to_client: u64,
    pub drops: BTreeMap<String, u64>,
    pub latency_us: Latency,
    pub recovery: Recovery,
    pub topology: String,
    pub seed: u64,
    pub faults: Vec<FaultKind>,
    pub phases: Phases,
    pub state_corruptions: u64,
    pub crashed: Vec<u64>,
    pub cut: Vec<(u64, u64)>,
    /// From the restart of the crashed nodes (and the healing of cut links), or else from the
    /// repair of the network (loss, partition), until the cluster was ready again (every node
    /// answering, every link up, every container healthy), if within [`REJOIN_TIMEOUT`].
    pub rejoin_ms: Option<f64>,
    /// The delivery mode of the run's sets.
    pub delivery: String,
    /// Entries a client got more than once: a copy twice (plain), a set twice (a mode).
    pub duplicates_to_client: u64,
    /// Entries handed to a client whose payload their source did not send, whatever the
    /// forgery: those of the sets awaited whose payload differs (while relays forged), and
    /// those the sweep found ([`Sweep`]: sets never sent, other payloads).
    pub forged_delivered_to_client: u64,
    /// What the sweep of every node's output at the end found beyond the sets awaited; its
    /// forgeries and duplicates are in the totals above (not in the phases').
    pub sweep: Sweep,
    /// What the forging relays did during the faults.
    pub forgeries: Forgeries,
    /// Mean bytes of the k messages' payloads per set (one attempt), and of the payloads.
    pub wire_bytes_per_set: f64,
    pub payload_bytes_per_set: f64,
    /// Reliable sets: sends per set, over the sets settled.
    pub attempts: Attempts,
    /// Reliable sets: how each ended.
    pub reliable: ReliableOutcomes,
    /// The sets no client got (the first 100), each with what became of it.
    pub lost: Vec<LostSet>,
    /// The relays that captured or forged during the faults.
    pub relays: Vec<u64>,
    /// Payloads the capturing relays kept, and how many of them hold the payload of their
    /// set or any 8-byte run of it.
    pub captured: u64,
    pub leaked: u64,
    /// Where lost copies went besides the drops: output entries overwritten before any client
    /// read them (`output_overwritten_unread` of the nodes), and reliable sets their source
    /// gave up at the deadline.
    pub output_overwritten: u64,
    pub sets_expired_at_source: u64,
    /// `partition`: the id bit that split the network, and how many links joined the halves.
    pub partition_bit: Option<u32>,
    pub partitioned_links: u64,
    /// `loss`: the share of datagrams the network dropped during the faults.
    pub loss_rate: f64,
    /// `crash-ends`: sets whose send was accepted and that no consuming client took, and of
    /// those the ones acknowledged to their source (`None`: not checked by this run).
    pub accepted_lost: Option<u64>,
    pub acked_lost: Option<u64>,
    /// `crash-ends`: the whole history's verdict.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ends: Option<crate::chaos::ends::EndsReport>,
    /// `host`: what the lost host cost, set by set, against what the placement promised.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_loss: Option<HostLossOutcome>,
    /// `delay`: how long every datagram was held on every link, give or take the jitter.
    pub delay_ms: Option<f64>,
    pub jitter_ms: Option<f64>,
    /// Datagrams the kernel's rules (loss, partition) dropped during the faults, on a cluster
    /// whose network faults the kernel applies (`None` elsewhere).
    pub kernel_dropped: Option<u64>,
    /// Every fault of the run: from when to when (ms from the run's start), what, where, and
    /// what applied it.
    pub fault_windows: Vec<FaultWindow>,
    /// Every set and fault window, for the report page ([`crate::chaos::page`]); not in the JSON.
    #[serde(skip)]
    pub timeline: Timeline,
}

/// What the forging relays did: packets rewritten, by what, and packets sent again.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Forgeries {
    pub payload: u64,
    pub header: u64,
    pub source: u64,
    pub attempt: u64,
    pub replayed: u64,
}

/// The end-of-run sweep: every node's output entries since the run started (paged
/// `Request::Recv`, clear entries included), judged against what the run sent. Entries an
/// await judged already are not judged again.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct Sweep {
    /// Entries read.
    pub entries: u64,
    /// Entries of the run's sealing and mode that no await judged, naming a set the run never
    /// sent (forged, or corrupted in a run without forging relays) ...
    pub unknown_sets: u64,
    /// ... or a set it sent, with another payload or at another node ...
    pub other_payloads: u64,
    /// ... or a copy (plain) or set (a mode) the client had already got: duplicates.
    pub duplicates: u64,
    /// Entries in another mode than the run's, or clear in a sealed run: a client waiting for
    /// the run's sets never takes them (`Await` names the mode and sealing). The run sends
    /// nothing else, so a relay made each of them up: with the seal off, a relay that rewrites
    /// a piece's mode makes a set of another shape (docs/delivery.md).
    pub not_taken: u64,
    /// Entries overwritten before the sweep read them, which it could not judge.
    pub missed: u64,
    /// Nodes whose output could not be read.
    pub nodes_unread: u64,
}

/// Which entries the sweep counts as one copy (plain) or one set (a mode) a client got:
/// (node, source, sequence id, send time, the copy index of a plain set).
type EntryGroup = (NodeId, NodeId, u64, u64, Option<u8>);

/// A set's name: source, sequence id, send time.
type SetName = (NodeId, u64, u64);

/// Judges output entries one by one ([`Judge::entry`]) against the sets a run sent and the
/// entries its awaits judged.
struct Judge {
    sealed: bool,
    mode: Mode,
    /// Each set sent: its destination and payload.
    sent: BTreeMap<SetName, (NodeId, Vec<u8>)>,
    /// The entries awaits judged, by node, output index and set: an output index alone may
    /// name another entry in a restarted node's output.
    judged: BTreeSet<(NodeId, u64, SetName)>,
    judged_groups: BTreeSet<EntryGroup>,
    /// Entries of each group no await judged.
    unjudged: BTreeMap<EntryGroup, u64>,
    sweep: Sweep,
}

impl Judge {
    /// For a run whose sets went `sealed` in `mode`.
    fn new(sealed: bool, mode: Mode, results: &[SetResult]) -> Judge {
        let mut judge = Judge {
            sealed,
            mode,
            sent: BTreeMap::new(),
            judged: BTreeSet::new(),
            judged_groups: BTreeSet::new(),
            unjudged: BTreeMap::new(),
            sweep: Sweep::default(),
        };
        for r in results.iter().filter(|r| !r.failed) {
            judge
                .sent
                .insert((r.from, r.seq, r.sent_at_us), (r.to, r.payload.clone()));
            for &(node, output_index, index) in &r.judged {
                judge
                    .judged
                    .insert((node, output_index, (r.from, r.seq, r.sent_at_us)));
                judge
                    .judged_groups
                    .insert((node, r.from, r.seq, r.sent_at_us, index));
            }
        }
        judge
    }

    /// Judge one entry of `node`'s output.
    fn entry(&mut self, node: NodeId, d: &Delivery) {
        self.sweep.entries += 1;
        if d.sealed != self.sealed || d.mode != self.mode {
            self.sweep.not_taken += 1;
            return;
        }
        let group = (
            node,
            d.src,
            d.seq,
            d.sent_at_us,
            self.mode.is_plain().then_some(d.index),
        );
        let name = (d.src, d.seq, d.sent_at_us);
        if self.judged.contains(&(node, d.output_index, name)) {
            return;
        }
        *self.unjudged.entry(group).or_default() += 1;
        match self.sent.get(&name) {
            None => self.sweep.unknown_sets += 1,
            Some((to, payload)) if *to != node || *payload != d.payload => {
                self.sweep.other_payloads += 1;
            }
            Some(_) => {}
        }
    }

    /// `n` entries overwritten before they could be read.
    fn missed(&mut self, n: u64) {
        self.sweep.missed += n;
    }

    /// What was found. A group's entries beyond the first the client got are duplicates (the
    /// first may be an awaited one, already judged).
    fn done(mut self) -> Sweep {
        self.sweep.duplicates = self
            .unjudged
            .iter()
            .map(|(group, &n)| n - u64::from(!self.judged_groups.contains(group)))
            .sum();
        self.sweep
    }
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Attempts {
    pub mean: f64,
    pub max: u32,
    pub settled: u64,
}

/// What one lost host cost the sets sent while it was gone. A path "avoids" the host when no
/// node strictly between its ends is on it: the placement promises that its copy arrives.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct HostLossOutcome {
    /// `h1`, `h2`, ...
    pub host: String,
    pub nodes: Vec<u64>,
    /// Sets whose two ends were on other hosts.
    pub sets_between_others: u64,
    /// ... of which some path avoided the host (the placement promised a copy) ...
    pub promised_a_copy: u64,
    /// ... and of those, how many got one.
    pub kept_a_copy: u64,
    /// Sets none of whose paths avoided the host; and of those, how many got a copy all the
    /// same (held in a buffer until the host was back, within the wait).
    pub promised_none: u64,
    pub got_one_anyway: u64,
    /// Plain runs: copies on paths that avoid the host, sent and arrived.
    pub copies_promised: u64,
    pub copies_kept: u64,
    /// Sets that missed a copy on a path avoiding the host (the promise broken).
    pub below_promise: u64,
    /// Reliable runs: sets sent to a node on the lost host, and how many arrived (once it was
    /// back).
    pub sets_to_lost_host: u64,
    pub delivered_to_lost_host: u64,
}

fn host_loss_outcome(
    topology: Topology,
    (host, lost): (usize, &[NodeId]),
    reliable: bool,
    results: &[SetResult],
) -> HostLossOutcome {
    let mut out = HostLossOutcome {
        host: crate::launch::swarm::stack::host_name(host),
        nodes: lost.iter().map(|n| n.0).collect(),
        ..HostLossOutcome::default()
    };
    for r in results.iter().filter(|r| r.phase == Phase::WithFaults) {
        if lost.contains(&r.to) {
            out.sets_to_lost_host += 1;
            out.delivered_to_lost_host += u64::from(r.delivered > 0);
            continue;
        }
        if lost.contains(&r.from) {
            continue;
        }
        out.sets_between_others += 1;
        let Ok(system) = SendRequest::to(r.to).route_system(topology, r.from) else {
            continue;
        };
        let avoiding: Vec<u8> = system
            .paths
            .iter()
            .enumerate()
            .filter(|(_, p)| p.len() < 3 || p[1..p.len() - 1].iter().all(|v| !lost.contains(v)))
            .map(|(i, _)| i as u8)
            .collect();
        if avoiding.is_empty() {
            out.promised_none += 1;
            out.got_one_anyway += u64::from(r.delivered > 0);
            continue;
        }
        out.promised_a_copy += 1;
        out.kept_a_copy += u64::from(r.delivered > 0);
        // A reliable set is judged as a whole: it arrives once, whatever path brought it.
        let missed = if reliable {
            r.delivered == 0
        } else {
            let kept = avoiding.iter().filter(|i| r.indices.contains(i)).count();
            out.copies_promised += avoiding.len() as u64;
            out.copies_kept += kept as u64;
            kept < avoiding.len()
        };
        out.below_promise += u64::from(missed);
    }
    out
}

/// How the run's reliable sets ended, each in exactly one way as its source told the client.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ReliableOutcomes {
    /// Acknowledged by the destination.
    pub acked: u64,
    /// Given up by the source at its deadline, unacknowledged; of those, how many the
    /// destination's client got all the same (the acknowledgements were lost or late).
    pub expired: u64,
    pub expired_but_delivered: u64,
    /// Refused by the source at once (outbox or memory full, shutting down), with the reason.
    pub refused: u64,
    /// Neither: the source could not be asked, or did not know the set. Always 0 unless a
    /// source died.
    pub unsettled: u64,
}

/// A set no client got, and what its source said of it.
#[derive(Clone, Debug, Serialize)]
pub struct LostSet {
    pub phase: Phase,
    pub from: u64,
    pub to: u64,
    pub seq: u64,
    pub sent_at_us: u64,
    /// `acked`, `expired`, `refused: <reason>`, `unsettled` (reliable); `copies_lost` (plain:
    /// every copy dropped, each counted in `drops`); `send_failed`.
    pub outcome: String,
    pub attempts: Option<u32>,
}

/// The most lost sets a report lists one by one.
const LOST_LISTED: usize = 100;

/// Sum of drop counters over nodes, between two snapshots. A node that restarted in between
/// counts from zero.
fn drop_delta(
    before: &BTreeMap<NodeId, NodeStatus>,
    after: &BTreeMap<NodeId, NodeStatus>,
) -> BTreeMap<String, u64> {
    let mut drops = BTreeMap::new();
    for (id, now) in after {
        let then = before
            .get(id)
            .filter(|b| b.incarnation == now.incarnation)
            .map(|b| b.counters.dropped.clone())
            .unwrap_or_default();
        for (reason, n) in &now.counters.dropped {
            let d = n - then.get(reason).copied().unwrap_or(0);
            if d > 0 {
                *drops.entry(reason.clone()).or_default() += d;
            }
        }
    }
    drops
}

async fn snapshot(client: &ClusterClient) -> BTreeMap<NodeId, NodeStatus> {
    client
        .statuses(Duration::from_secs(3))
        .await
        .into_iter()
        .filter_map(|(id, s)| s.ok().map(|s| (id, s)))
        .collect()
}

/// What a set of the run is sent with.
#[derive(Clone, Copy)]
struct SetOptions {
    wait: Duration,
    mode: Mode,
    /// Relays forge during this set's phase.
    forging: bool,
    /// Sent without the end-to-end seal.
    clear: bool,
}

/// Send one set and judge what arrived.
async fn one_set(
    client: ClusterClient,
    topology: Topology,
    (phase, sent_ms): (Phase, f64),
    (from, to): (NodeId, NodeId),
    payload: Vec<u8>,
    set: SetOptions,
) -> SetResult {
    let request = SendRequest::to(to);
    let expected = request
        .route_system(topology, from)
        .ok()
        .map(|system| system.paths);
    let options = SendOptions {
        trace: true,
        wait: Some(set.wait),
        mode: set.mode,
        clear: set.clear,
        ..SendOptions::default()
    };
    let mut result = SetResult {
        phase,
        sent_ms,
        indices: BTreeSet::new(),
        from,
        to,
        seq: 0,
        sent_at_us: 0,
        payload: payload.clone(),
        duplicates: 0,
        forged: 0,
        settlement: None,
        wire_bytes: 0,
        k: expected.as_ref().map_or(0, |paths| paths.len() as u32),
        delivered: 0,
        corrupted: 0,
        path_mismatches: 0,
        shortest_delivered: false,
        latencies_us: Vec::new(),
        failed: false,
        refused: None,
        sealed: false,
        judged: Vec::new(),
    };
    let Some(expected) = expected else {
        // Distinct nodes of the topology always have paths: a bug of ours, counted.
        result.failed = true;
        return result;
    };
    let shortest = (0..expected.len())
        .min_by_key(|&i| expected[i].len())
        .unwrap_or_default();
    let report = match client.send(from, request, payload.clone(), options).await {
        Ok(report) => report,
        Err(e) => {
            result.failed = true;
            if let ClientError::Refused { error, .. } = e {
                result.refused = Some(error.to_string());
            }
            return result;
        }
    };
    if !set.mode.is_plain() {
        // A set in a delivery mode reaches the client as one entry.
        result.k = 1;
    }
    result.seq = report.seq;
    result.sent_at_us = report.sent_at_us;
    result.settlement = match (report.acked, report.attempts) {
        (Some(true), Some(attempts)) => Some(Settlement::Acked { attempts }),
        (Some(false), Some(attempts)) => Some(Settlement::Expired { attempts }),
        _ => None,
    };
    result.wire_bytes = report.wire_bytes;
    result.sealed = report.sealed;
    let distinct: BTreeSet<u8> = report.deliveries.iter().map(|d| d.index).collect();
    result.indices = distinct.clone();
    let once = if set.mode.is_plain() {
        distinct.len()
    } else {
        distinct.len().min(1)
    };
    result.duplicates = (report.deliveries.len() - once) as u32;
    for d in &report.deliveries {
        result.judged.push((
            d.dst,
            d.output_index,
            set.mode.is_plain().then_some(d.index),
        ));
        result.delivered += 1;
        result.latencies_us.push(d.latency_us);
        if d.payload != payload {
            if set.forging {
                result.forged += 1;
            } else {
                result.corrupted += 1;
            }
        }
        let path_ok = d.path.as_ref() == expected.get(d.index as usize);
        if !path_ok {
            result.path_mismatches += 1;
        }
        if d.index as usize == shortest {
            result.shortest_delivered = true;
        }
    }
    result
}

/// The traffic of a run: sets at a fixed rate between random pairs, each waited for and judged.
struct Traffic {
    client: ClusterClient,
    rate: f64,
    wait: Duration,
    mode: Mode,
    payload_bytes: usize,
    /// Whether relays forge now.
    forging: bool,
    clear: bool,
    rng: StdRng,
    results: Arc<Mutex<Vec<SetResult>>>,
    progress: Arc<Mutex<Progress>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    /// The start of the run, the clock of the report's timeline.
    t0: Instant,
}

impl Traffic {
    /// Send between random pairs of `alive` nodes for `length`; the sets finish on their own.
    async fn run(&mut self, phase: Phase, length: Duration, alive: &[NodeId]) {
        self.run_to(phase, length, alive, alive).await
    }

    /// Send from random nodes of `from` to random others of `to` for `length`.
    async fn run_to(&mut self, phase: Phase, length: Duration, from: &[NodeId], to: &[NodeId]) {
        let alive = from;
        let topology = self.client.manifest.topology;
        self.progress.lock().expect("progress").phase = Some(phase);
        let started = tokio::time::Instant::now();
        let interval = Duration::from_secs_f64(1.0 / self.rate);
        for n in 0u64.. {
            let at = started + interval.mul_f64(n as f64);
            if at.duration_since(started) >= length {
                return;
            }
            tokio::time::sleep_until(at).await;
            let from = alive[self.rng.random_range(0..alive.len())];
            let to = loop {
                let d = to[self.rng.random_range(0..to.len())];
                if d != from {
                    break d;
                }
            };
            let mut payload = format!(
                "chaos {phase:?} #{n} {from}->{to} {}",
                self.rng.random::<u32>()
            )
            .into_bytes();
            while payload.len() < self.payload_bytes {
                payload.push(self.rng.random());
            }
            let (client, results, progress) = (
                self.client.clone(),
                self.results.clone(),
                self.progress.clone(),
            );
            let set = SetOptions {
                wait: self.wait,
                mode: self.mode,
                forging: self.forging,
                clear: self.clear,
            };
            progress.lock().expect("progress").sets_sent += 1;
            let sent_ms = ms_since(self.t0);
            self.tasks.push(tokio::spawn(async move {
                let result =
                    one_set(client, topology, (phase, sent_ms), (from, to), payload, set).await;
                {
                    let mut p = progress.lock().expect("progress");
                    p.sets_done += 1;
                    p.copies_delivered += u64::from(result.delivered);
                }
                results.lock().expect("results").push(result);
            }));
        }
    }

    /// Wait until every set sent so far is done.
    async fn finish(&mut self) -> anyhow::Result<()> {
        for task in self.tasks.drain(..) {
            task.await?;
        }
        Ok(())
    }
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
        other => anyhow::bail!("node {node}: unexpected answer {other:?}"),
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
    let topology = client.manifest.topology;
    let nodes: Vec<NodeId> = client.manifest.nodes.iter().map(|n| n.id).collect();
    // A run sends from every node and injects faults: a certificate of role chaos without
    // --as, or nothing is done.
    let any_send = Request::Send {
        request: SendRequest::to(nodes[nodes.len() - 1]),
        payload: Vec::new(),
        trace: false,
        mode: Mode::default(),
        deadline_ms: 0,
        clear: false,
    };
    client
        .allowed(&nodes, &[Request::Inject(Fault::Unshape), any_send])
        .map_err(|line| anyhow::anyhow!(line))?;
    let ready = ready::wait_ready(
        &client,
        ready::default_timeout(topology.node_count()),
        &mut |_| {},
    )
    .await
    .map_err(|e| anyhow::anyhow!("{e}: start the run on a healthy cluster"))?;
    if config.faults.contains(&FaultKind::CrashEnds) {
        return crash_ends(&client, config, progress, harness).await;
    }
    let before: BTreeMap<NodeId, NodeStatus> = ready
        .statuses
        .into_iter()
        .filter_map(|(id, s)| s.ok().map(|s| (id, s)))
        .collect();
    let output_at_start = output_cursors(&client, &nodes).await;
    let t0 = Instant::now();
    let mut traffic = Traffic {
        client: client.clone(),
        rate: config.rate,
        wait: config.wait,
        mode: config.mode,
        payload_bytes: config.payload_bytes,
        forging: false,
        clear: config.clear,
        rng: StdRng::seed_from_u64(config.seed),
        results: Arc::new(Mutex::new(Vec::new())),
        progress,
        tasks: Vec::new(),
        t0,
    };

    // 1. Fault-free, and let those sets finish, so that no fault touches them.
    traffic
        .run(Phase::FaultFree, config.fault_free, &nodes)
        .await;
    traffic.finish().await?;

    // 2. Faults, each with its window on the run's clock.
    let mut windows = Windows::default();
    let all_nodes = format!("all {} nodes", nodes.len());
    let for_ms = config.with_faults.as_millis() as u32;
    if config.faults.contains(&FaultKind::State) {
        let every_ms = config.state_every.as_millis().max(1) as u32;
        let seed = traffic.rng.random::<u64>();
        inject_everywhere(&client, &nodes, |id| Fault::CorruptState {
            seed: seed ^ id.0,
            every_ms,
            for_ms,
        })
        .await;
        let at = ms_since(t0);
        let w = windows.open(
            at,
            format!("state every {every_ms} ms"),
            all_nodes.clone(),
            harness.mechanism(FaultKind::State),
        );
        windows.close(w, at + f64::from(for_ms));
    }
    if config.faults.contains(&FaultKind::Buffers) {
        let seed = traffic.rng.random::<u64>();
        inject_everywhere(&client, &nodes, |id| Fault::CorruptBuffers {
            seed: seed ^ id.0,
            fraction_ppm: config.buffer_fraction_ppm,
            for_ms,
        })
        .await;
        let at = ms_since(t0);
        let w = windows.open(
            at,
            format!("buffers {}%", f64::from(config.buffer_fraction_ppm) / 1e4),
            all_nodes.clone(),
            harness.mechanism(FaultKind::Buffers),
        );
        windows.close(w, at + f64::from(for_ms));
    }
    // At most k-1 failures in all, so that every set between live nodes keeps a path.
    let counts = FaultCounts::whole_budget(topology, &config.faults);
    let schedule = schedule::schedule(config.seed, topology, &config.faults, counts)?;
    let mut crashes = Vec::new();
    for &id in &schedule.crashed {
        harness.kill(id)?;
        crashes.push(windows.open(
            ms_since(t0),
            "crash".into(),
            format!("node {}", topology.format_node(id)),
            harness.mechanism(FaultKind::Crash),
        ));
    }
    let partition = config
        .faults
        .contains(&FaultKind::Partition)
        .then(|| schedule::partition(config.seed, topology));
    let mut network_windows = Vec::new();
    if let Some(p) = &partition {
        harness.partition(&p.links, true)?;
        network_windows.push(windows.open(
            ms_since(t0),
            "partition".into(),
            format!("bit {} ({} links)", p.bit, p.links.len()),
            harness.mechanism(FaultKind::Partition),
        ));
    }
    let losing = config.faults.contains(&FaultKind::Loss);
    if losing {
        harness.lose(config.loss_rate)?;
        network_windows.push(windows.open(
            ms_since(t0),
            format!("loss {}%", config.loss_rate * 100.0),
            "all links".into(),
            harness.mechanism(FaultKind::Loss),
        ));
    }
    let delaying = config.faults.contains(&FaultKind::Delay);
    if delaying {
        delay(harness, &client, &nodes, config.delay, config.jitter).await?;
        network_windows.push(windows.open(
            ms_since(t0),
            format!(
                "delay {} ms ± {} ms",
                config.delay.as_millis(),
                config.jitter.as_millis()
            ),
            "all links".into(),
            harness.mechanism(FaultKind::Delay),
        ));
    }
    let mut cuts = Vec::new();
    for &(a, b) in &schedule.cut {
        inject(&client, a, Fault::Cut { neighbour: b }).await?;
        inject(&client, b, Fault::Cut { neighbour: a }).await?;
        cuts.push(windows.open(
            ms_since(t0),
            "cut".into(),
            format!(
                "link {}-{}",
                topology.format_node(a),
                topology.format_node(b)
            ),
            harness.mechanism(FaultKind::Cut),
        ));
    }
    // Relays that capture or forge: traffic runs between the other live nodes, so each relay
    // is on at most one path of a set.
    let relaying = [FaultKind::Capture, FaultKind::Forge]
        .into_iter()
        .filter(|f| config.faults.contains(f))
        .collect::<Vec<_>>();
    let relays = if relaying.is_empty() {
        Vec::new()
    } else {
        schedule::relays(config.seed, topology, &schedule, config.relays)
    };
    let relay_fault = |kind: FaultKind, on: bool| match kind {
        FaultKind::Capture => Fault::Capture { on },
        _ => Fault::Forge {
            on,
            what: config.forge,
        },
    };
    let mut relay_windows = Vec::new();
    for &kind in &relaying {
        for &relay in &relays {
            inject(&client, relay, relay_fault(kind, true)).await?;
            relay_windows.push(windows.open(
                ms_since(t0),
                kind.name().into(),
                format!("node {}", topology.format_node(relay)),
                harness.mechanism(kind),
            ));
        }
    }
    // A whole host lost: every node on it at once. Plain sets run between the other hosts'
    // nodes; reliable ones also go to the lost host's nodes, and must arrive once it is back.
    let lost_host = if config.faults.contains(&FaultKind::Host) {
        let hosts = harness.hosts()?;
        let host = (config.seed as usize) % hosts.len();
        harness.lose_host(host, true)?;
        let window = windows.open(
            ms_since(t0),
            "host lost".into(),
            format!("h{} ({} nodes)", host + 1, hosts[host].len()),
            harness.mechanism(FaultKind::Host),
        );
        Some((host, hosts[host].clone(), window))
    } else {
        None
    };
    let (lost_host, host_window) = match lost_host {
        Some((host, on, window)) => (Some((host, on)), Some(window)),
        None => (None, None),
    };
    let on_lost_host = |n: &NodeId| lost_host.as_ref().is_some_and(|(_, on)| on.contains(n));
    traffic.forging = relaying.contains(&FaultKind::Forge);
    let alive: Vec<NodeId> = schedule
        .alive(topology)
        .into_iter()
        .filter(|n| !relays.contains(n) && !on_lost_host(n))
        .collect();
    let destinations: Vec<NodeId> = if lost_host.is_some() && config.mode.reliable {
        nodes.clone()
    } else {
        alive.clone()
    };
    traffic
        .run_to(Phase::WithFaults, config.with_faults, &alive, &destinations)
        .await;
    // The network's own faults end with the phase, and its sets are then waited for: what a
    // partition or loss held back in the link buffers arrives once the links carry again.
    let repaired = Instant::now();
    let kernel_dropped = harness.kernel_dropped();
    if let Some(p) = &partition {
        harness.partition(&p.links, false)?;
    }
    if losing {
        harness.lose(0.0)?;
    }
    if delaying {
        delay(harness, &client, &nodes, Duration::ZERO, Duration::ZERO).await?;
    }
    for w in network_windows {
        windows.close(w, ms_since(t0));
    }
    if let (Some((host, _)), Some(window)) = (&lost_host, host_window) {
        harness.lose_host(*host, false)?;
        windows.close(window, ms_since(t0));
    }
    // The sets of this phase are judged as sent while relays forged, however late they end;
    // meanwhile, after the network's faults, the links come back (with crashed nodes or cut
    // links they cannot all be up before the restarts and heals: the wait after those counts).
    let network_faults = (partition.is_some() || losing || delaying || lost_host.is_some())
        && schedule == Schedule::default();
    let (finished, network_rejoin) = tokio::join!(traffic.finish(), async {
        if network_faults {
            let waited = ready::wait_ready(&client, REJOIN_TIMEOUT, &mut |_| {}).await;
            waited.ok().map(|_| repaired.elapsed())
        } else {
            None
        }
    });
    finished?;
    traffic.forging = false;
    for &kind in &relaying {
        for &relay in &relays {
            inject(&client, relay, relay_fault(kind, false)).await?;
        }
    }
    for w in relay_windows {
        windows.close(w, ms_since(t0));
    }

    // 3. After: heal, restart, and keep sending. The corruption windows close with the phase;
    // a little slack keeps this phase's packets out of them.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let healing = Instant::now();
    for &(a, b) in &schedule.cut {
        inject(&client, a, Fault::Heal { neighbour: b }).await?;
        inject(&client, b, Fault::Heal { neighbour: a }).await?;
    }
    for w in cuts {
        windows.close(w, ms_since(t0));
    }
    for &id in &schedule.crashed {
        harness.restart(id)?;
    }
    for w in crashes {
        windows.close(w, ms_since(t0));
    }
    let rejoin = if schedule == Schedule::default() {
        network_rejoin
    } else {
        let waited = ready::wait_ready(&client, REJOIN_TIMEOUT, &mut |_| {}).await;
        waited.ok().map(|_| healing.elapsed())
    };
    traffic
        .run(Phase::AfterFaults, config.after_faults, &nodes)
        .await;
    traffic.finish().await?;
    let after = snapshot(&client).await;
    let results = traffic.results.lock().expect("results").clone();
    let (captured, leaked) = if relaying.contains(&FaultKind::Capture) {
        captures_and_leaks(&client, &relays, &results).await?
    } else {
        (0, 0)
    };
    // Every output from where it stood at the start (a restarted node's from its new start).
    let from: BTreeMap<NodeId, u64> = nodes
        .iter()
        .map(|id| {
            let same =
                before.get(id).map(|b| b.incarnation) == after.get(id).map(|a| a.incarnation);
            let at = output_at_start.get(id).copied().filter(|_| same);
            (*id, at.unwrap_or(0))
        })
        .collect();
    let sealed = results
        .iter()
        .find(|r| !r.failed)
        .map_or(!config.clear, |r| r.sealed);
    let mut judge = Judge::new(sealed, config.mode, &results);
    sweep_outputs(&client, &from, &mut judge).await;
    client.close();
    let mut report = report(
        config, topology, &results, &before, &after, schedule, rejoin,
    );
    let sweep = judge.done();
    let swept_wrong = sweep.unknown_sets + sweep.other_payloads;
    if config.faults.contains(&FaultKind::Forge) {
        report.forged_delivered_to_client += swept_wrong;
    } else {
        report.corrupted_delivered_to_client += swept_wrong;
    }
    report.duplicates_to_client += sweep.duplicates;
    report.sweep = sweep;
    report.forgeries = forgeries(&before, &after, &relays);
    report.relays = relays.iter().map(|r| r.0).collect();
    if let Some(p) = partition {
        report.partition_bit = Some(p.bit);
        report.partitioned_links = p.links.len() as u64;
    }
    report.loss_rate = if losing { config.loss_rate } else { 0.0 };
    if delaying {
        report.delay_ms = Some(config.delay.as_secs_f64() * 1e3);
        report.jitter_ms = Some(config.jitter.as_secs_f64() * 1e3);
    }
    report.kernel_dropped = kernel_dropped;
    report.host_loss = lost_host
        .as_ref()
        .map(|(host, on)| host_loss_outcome(topology, (*host, on), config.mode.reliable, &results));
    let end_ms = ms_since(t0);
    report.fault_windows = windows.finish(end_ms);
    report.timeline = timeline(config, topology, &results, &report.fault_windows, end_ms);
    report.captured = captured;
    report.leaked = leaked;
    Ok(report)
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

/// Every set and every fault window of the run, for the report page.
fn timeline(
    config: &RunConfig,
    topology: Topology,
    results: &[SetResult],
    windows: &[FaultWindow],
    end_ms: f64,
) -> Timeline {
    let faults: Vec<&str> = config.faults.iter().map(|f| f.name()).collect();
    let sets: Vec<SetPoint> = results
        .iter()
        .map(|r| {
            let ms = |us: u64| us as f64 / 1e3;
            let first = r.latencies_us.iter().min().map(|&us| ms(us));
            let last = r.latencies_us.iter().max().map(|&us| ms(us));
            let plain = config.mode.is_plain();
            let outcome = if r.failed {
                Outcome::Failed
            } else if r.delivered == 0 {
                Outcome::Lost
            } else if plain && (r.indices.len() as u32) < r.k {
                Outcome::Partial
            } else {
                Outcome::Delivered
            };
            let paths_lost = if plain && !r.failed {
                (0..r.k)
                    .filter(|i| !r.indices.contains(&(*i as u8)))
                    .collect()
            } else {
                Vec::new()
            };
            SetPoint {
                sent_ms: r.sent_ms,
                first_ms: first,
                last_ms: last,
                outcome,
                k: r.k,
                paths_lost,
            }
        })
        .collect();
    Timeline {
        title: format!(
            "{topology}: {} at {} sets/s, delivery {}, seed {}",
            faults.join(", "),
            config.rate,
            config.mode,
            config.seed
        ),
        duration_ms: end_ms,
        max_k: results.iter().map(|r| r.k).max().unwrap_or(0),
        sets,
        windows: windows.to_vec(),
    }
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
    Ok(Report {
        sets_sent: ends.sends,
        sets_lost: ends.accepted_lost,
        topology: client.manifest.topology.to_string(),
        seed: config.seed,
        faults: config.faults.iter().copied().collect(),
        delivery: config.mode.to_string(),
        duplicates_to_client: ends.duplicates_to_client,
        corrupted_delivered_to_client: ends.wrong_to_client,
        accepted_lost: Some(ends.accepted_lost),
        acked_lost: Some(ends.acked_lost),
        ends: Some(ends),
        ..Report::default()
    })
}

/// Where each node's output stands: the index its next entry will have (a `Recv` from beyond
/// the newest answers with it). Nodes that do not answer are left out (swept from 0).
async fn output_cursors(client: &ClusterClient, nodes: &[NodeId]) -> BTreeMap<NodeId, u64> {
    let ask = Request::Recv {
        after: u64::MAX,
        max: 1,
        wait_ms: 0,
        clear: Some(true),
    };
    let requests = nodes.iter().map(|&id| (id, ask.clone())).collect();
    client
        .request_each(requests, Duration::from_secs(3))
        .await
        .into_iter()
        .filter_map(|(id, answer)| match answer {
            Ok(Response::Output { next, .. }) => Some((id, next)),
            _ => None,
        })
        .collect()
}

/// Read every node's output from `from` on, clear entries included, 16 nodes at a time, and
/// judge each entry; entries overwritten before they were read are counted missed.
async fn sweep_outputs(client: &ClusterClient, from: &BTreeMap<NodeId, u64>, judge: &mut Judge) {
    use futures_util::StreamExt;
    let reads = futures_util::stream::iter(
        from.iter()
            .map(|(&id, &after)| async move { (id, read_output(client, id, after).await) }),
    )
    .buffer_unordered(16)
    .collect::<Vec<_>>()
    .await;
    for (id, read) in reads {
        match read {
            Ok((entries, missed)) => {
                judge.missed(missed);
                for d in &entries {
                    judge.entry(id, d);
                }
            }
            Err(_) => judge.sweep.nodes_unread += 1,
        }
    }
}

/// Node `id`'s output entries from index `after` on, and how many of those were overwritten
/// before they could be read.
async fn read_output(
    client: &ClusterClient,
    id: NodeId,
    mut after: u64,
) -> anyhow::Result<(Vec<Delivery>, u64)> {
    let (mut all, mut missed) = (Vec::new(), 0);
    loop {
        let ask = Request::Recv {
            after,
            max: MAX_RECV_BATCH,
            wait_ms: 0,
            clear: Some(true),
        };
        let answer = tokio::time::timeout(Duration::from_secs(10), client.request(id, &ask))
            .await
            .map_err(|_| anyhow::anyhow!("node {id}: no answer within 10 s"))??;
        match answer {
            Response::Output { entries, next } => {
                if entries.is_empty() {
                    return Ok((all, missed));
                }
                for d in &entries {
                    missed += d.output_index.saturating_sub(after);
                    after = d.output_index + 1;
                }
                all.extend(entries);
                after = after.max(next);
            }
            Response::Error(e) => anyhow::bail!("node {id}: {e}"),
            other => anyhow::bail!("node {id}: unexpected answer {other:?}"),
        }
    }
}

/// What the forging `relays` did between the two snapshots.
fn forgeries(
    before: &BTreeMap<NodeId, NodeStatus>,
    after: &BTreeMap<NodeId, NodeStatus>,
    relays: &[NodeId],
) -> Forgeries {
    let mut f = Forgeries::default();
    for id in relays {
        let Some(now) = after.get(id) else { continue };
        let zero = Default::default();
        let then = before
            .get(id)
            .filter(|b| b.incarnation == now.incarnation)
            .map_or(&zero, |b| &b.chaos);
        let (c, t) = (&now.chaos, then);
        f.payload += c.forged_payload - t.forged_payload;
        f.header += c.forged_header - t.forged_header;
        f.source += c.forged_source - t.forged_source;
        f.attempt += c.forged_attempt - t.forged_attempt;
        f.replayed += c.replayed - t.replayed;
    }
    f
}

/// How many payloads the capturing `relays` kept, and how many of those hold their set's
/// payload or any 8-byte run of it.
async fn captures_and_leaks(
    client: &ClusterClient,
    relays: &[NodeId],
    results: &[SetResult],
) -> anyhow::Result<(u64, u64)> {
    let sent: BTreeMap<(NodeId, u64, u64), &[u8]> = results
        .iter()
        .map(|r| ((r.from, r.seq, r.sent_at_us), r.payload.as_slice()))
        .collect();
    let (mut captured, mut leaked) = (0, 0);
    for &relay in relays {
        for c in captured_by(client, relay).await? {
            let Some(payload) = sent.get(&(c.src, c.seq, c.sent_at_us)) else {
                continue;
            };
            captured += 1;
            leaked += u64::from(leaks(&c.payload, payload));
        }
    }
    Ok((captured, leaked))
}

/// Whether `captured` holds `payload` whole or any 8-byte run of it.
pub fn leaks(captured: &[u8], payload: &[u8]) -> bool {
    if payload.len() < 8 {
        return !payload.is_empty() && captured.windows(payload.len()).any(|w| w == payload);
    }
    let runs: std::collections::HashSet<&[u8]> = captured.windows(8).collect();
    payload.windows(8).any(|w| runs.contains(w))
}

#[allow(clippy::too_many_arguments)]
fn report(
    config: &RunConfig,
    topology: Topology,
    results: &[SetResult],
    before: &BTreeMap<NodeId, NodeStatus>,
    after: &BTreeMap<NodeId, NodeStatus>,
    schedule: Schedule,
    rejoin: Option<Duration>,
) -> Report {
    let mut phases: BTreeMap<Phase, PhaseReport> = BTreeMap::new();
    let mut latency: BTreeMap<Phase, Vec<u64>> = BTreeMap::new();
    for r in results {
        let p = phases.entry(r.phase).or_default();
        p.sets_sent += 1;
        p.copies_expected += u64::from(r.k);
        p.copies_delivered += u64::from(r.delivered);
        p.sets_with_a_copy += u64::from(r.delivered > 0);
        p.sets_lost += u64::from(r.delivered == 0);
        p.sets_failed_to_send += u64::from(r.failed);
        p.path_mismatches += u64::from(r.path_mismatches);
        p.corrupted_delivered_to_client += u64::from(r.corrupted);
        p.single_path_delivered += u64::from(r.shortest_delivered);
        p.duplicates_to_client += u64::from(r.duplicates);
        p.forged_delivered_to_client += u64::from(r.forged);
        latency.entry(r.phase).or_default().extend(&r.latencies_us);
    }
    let total = |f: fn(&PhaseReport) -> u64| phases.values().map(f).sum::<u64>();
    let mut recovery = Recovery {
        // The run's sets are node-to-node, all of one routing mode.
        bound_hops: flush_bound(topology, SendRequest::to(NodeId(1)).kind(topology)),
        ..Recovery::default()
    };
    let mut state_corruptions = 0;
    for (id, status) in after {
        // Counters since the run began: a node that restarted counts from zero.
        let zero = Default::default();
        let then = before
            .get(id)
            .filter(|b| b.incarnation == status.incarnation)
            .map_or(&zero, |b| &b.chaos);
        let c = &status.chaos;
        recovery.packets_corrupted += c.packets_corrupted - then.packets_corrupted;
        recovery.corrupted_dropped += c.corrupted_dropped - then.corrupted_dropped;
        recovery.corrupted_delivered += c.corrupted_delivered - then.corrupted_delivered;
        recovery.corrupted_again += c.corrupted_again - then.corrupted_again;
        state_corruptions += c.state_corruptions - then.state_corruptions;
        // The maxima are since the process started: meaningful when this run is the first
        // to corrupt packets on this cluster.
        if c.packets_corrupted > then.packets_corrupted || c.max_hops_after > then.max_hops_after {
            recovery.max_hops = recovery.max_hops.max(c.max_hops_after);
            recovery.max_ms = recovery.max_ms.max(c.max_us_after as f64 / 1000.0);
        }
    }
    let duplicates_to_client = total(|p| p.duplicates_to_client);
    let forged_delivered_to_client = total(|p| p.forged_delivered_to_client);
    let mut take = |p| Percentiles::of_us(latency.remove(&p).unwrap_or_default());
    let sent = results.iter().filter(|r| !r.failed).count().max(1) as f64;
    let settled: Vec<u32> = results
        .iter()
        .filter_map(|r| r.settlement.map(Settlement::attempts))
        .collect();
    let attempts = Attempts {
        mean: if settled.is_empty() {
            0.0
        } else {
            settled.iter().map(|&a| f64::from(a)).sum::<f64>() / settled.len() as f64
        },
        max: settled.iter().copied().max().unwrap_or(0),
        settled: settled.len() as u64,
    };
    Report {
        sets_sent: total(|p| p.sets_sent),
        copies_expected: total(|p| p.copies_expected),
        copies_delivered: total(|p| p.copies_delivered),
        sets_with_a_copy: total(|p| p.sets_with_a_copy),
        sets_lost: total(|p| p.sets_lost),
        corrupted_delivered_to_client: total(|p| p.corrupted_delivered_to_client),
        drops: drop_delta(before, after),
        latency_us: Latency {
            fault_free: take(Phase::FaultFree),
            with_faults: take(Phase::WithFaults),
            after_faults: take(Phase::AfterFaults),
        },
        recovery,
        topology: topology.to_string(),
        seed: config.seed,
        faults: config.faults.iter().copied().collect(),
        phases: Phases {
            fault_free: phases.remove(&Phase::FaultFree).unwrap_or_default(),
            with_faults: phases.remove(&Phase::WithFaults).unwrap_or_default(),
            after_faults: phases.remove(&Phase::AfterFaults).unwrap_or_default(),
        },
        state_corruptions,
        crashed: schedule.crashed.iter().map(|n| n.0).collect(),
        cut: schedule.cut.iter().map(|(a, b)| (a.0, b.0)).collect(),
        rejoin_ms: rejoin.map(|d| d.as_secs_f64() * 1000.0),
        delivery: config.mode.to_string(),
        duplicates_to_client,
        forged_delivered_to_client,
        sweep: Sweep::default(),
        forgeries: Forgeries::default(),
        wire_bytes_per_set: results.iter().map(|r| r.wire_bytes as f64).sum::<f64>() / sent,
        payload_bytes_per_set: results
            .iter()
            .filter(|r| !r.failed)
            .map(|r| r.payload.len() as f64)
            .sum::<f64>()
            / sent,
        attempts,
        reliable: if config.mode.reliable {
            reliable_outcomes(results)
        } else {
            ReliableOutcomes::default()
        },
        lost: results
            .iter()
            .filter(|r| r.delivered == 0)
            .take(LOST_LISTED)
            .map(|r| lost_set(r, config.mode))
            .collect(),
        relays: Vec::new(),
        captured: 0,
        leaked: 0,
        output_overwritten: event_delta(before, after, "output_overwritten_unread"),
        sets_expired_at_source: event_delta(before, after, "delivery_sets_expired"),
        partition_bit: None,
        partitioned_links: 0,
        loss_rate: 0.0,
        accepted_lost: None,
        acked_lost: None,
        ends: None,
        ..Report::default()
    }
}

fn reliable_outcomes(results: &[SetResult]) -> ReliableOutcomes {
    let mut outcomes = ReliableOutcomes::default();
    for r in results {
        match (r.settlement, &r.refused) {
            (Some(Settlement::Acked { .. }), _) => outcomes.acked += 1,
            (Some(Settlement::Expired { .. }), _) => {
                outcomes.expired += 1;
                outcomes.expired_but_delivered += u64::from(r.delivered > 0);
            }
            (None, Some(_)) => outcomes.refused += 1,
            (None, None) => outcomes.unsettled += 1,
        }
    }
    outcomes
}

fn lost_set(r: &SetResult, mode: Mode) -> LostSet {
    let outcome = match (&r.refused, r.settlement) {
        (Some(why), _) => format!("refused: {why}"),
        (None, _) if r.failed => "send_failed".to_string(),
        (None, Some(Settlement::Acked { .. })) => "acked".to_string(),
        (None, Some(Settlement::Expired { .. })) => "expired".to_string(),
        (None, None) if mode.reliable => "unsettled".to_string(),
        (None, None) => "copies_lost".to_string(),
    };
    LostSet {
        phase: r.phase,
        from: r.from.0,
        to: r.to.0,
        seq: r.seq,
        sent_at_us: r.sent_at_us,
        outcome,
        attempts: r.settlement.map(Settlement::attempts),
    }
}

/// The growth of the event counter `name` over nodes, between two snapshots.
fn event_delta(
    before: &BTreeMap<NodeId, NodeStatus>,
    after: &BTreeMap<NodeId, NodeStatus>,
    name: &str,
) -> u64 {
    after
        .iter()
        .map(|(id, now)| {
            let then = before
                .get(id)
                .filter(|b| b.incarnation == now.incarnation)
                .and_then(|b| b.counters.events.get(name).copied())
                .unwrap_or(0);
            now.counters
                .events
                .get(name)
                .copied()
                .unwrap_or(0)
                .saturating_sub(then)
        })
        .sum()
}

/// Every payload node `id` kept as a capturing relay, oldest first (paged through
/// `Request::Captured`).
pub async fn captured_by(client: &ClusterClient, id: NodeId) -> anyhow::Result<Vec<Captured>> {
    let mut all = Vec::new();
    let mut after = 0;
    loop {
        match client
            .request(id, &Request::Captured { after, max: 1024 })
            .await?
        {
            Response::Captured { entries, next } => {
                if entries.is_empty() {
                    return Ok(all);
                }
                all.extend(entries);
                after = next;
            }
            Response::Error(e) => anyhow::bail!("node {id}: {e}"),
            other => anyhow::bail!("node {id}: unexpected answer {other:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(from: u64, to: u64, seq: u64, payload: &[u8]) -> SetResult {
        SetResult {
            phase: Phase::WithFaults,
            sent_ms: seq as f64,
            indices: BTreeSet::new(),
            from: NodeId(from),
            to: NodeId(to),
            seq,
            sent_at_us: 100 + seq,
            payload: payload.to_vec(),
            k: 3,
            delivered: 0,
            duplicates: 0,
            forged: 0,
            settlement: None,
            wire_bytes: 0,
            corrupted: 0,
            path_mismatches: 0,
            shortest_delivered: false,
            latencies_us: Vec::new(),
            failed: false,
            refused: None,
            sealed: false,
            judged: Vec::new(),
        }
    }

    /// A lost host's outcome counts, set by set, the copies on paths that avoid it: all of
    /// them arrived (the promise kept), one missing (below it), none promised, and a set to
    /// the lost host.
    #[test]
    fn a_lost_hosts_outcome_is_judged_path_by_path() {
        let topology: Topology = "q:3".parse().unwrap();
        let lost = [NodeId(1), NodeId(2)];
        let avoiding = |from: u64, to: u64| -> BTreeSet<u8> {
            let system = SendRequest::to(NodeId(to))
                .route_system(topology, NodeId(from))
                .unwrap();
            system
                .paths
                .iter()
                .enumerate()
                .filter(|(_, p)| p[1..p.len() - 1].iter().all(|v| !lost.contains(v)))
                .map(|(i, _)| i as u8)
                .collect()
        };
        // 0 -> 7: paths through 1, 2 and 4; one avoids the lost host.
        let promised = avoiding(0, 7);
        assert_eq!(promised.len(), 1, "{promised:?}");
        let mut kept = result(0, 7, 1, b"a");
        kept.indices = promised.clone();
        kept.delivered = 1;
        let mut missed = result(0, 7, 2, b"b");
        missed.delivered = 0;
        // A set to a node on the lost host.
        let mut to_lost = result(0, 2, 3, b"c");
        to_lost.delivered = 0;
        let mut before = result(0, 7, 4, b"d");
        before.phase = Phase::FaultFree;
        let out = host_loss_outcome(
            topology,
            (1, &lost),
            false,
            &[kept, missed, to_lost, before],
        );
        assert_eq!(out.host, "h2");
        assert_eq!(out.nodes, vec![1, 2]);
        assert_eq!(out.sets_between_others, 2);
        assert_eq!(out.promised_a_copy, 2);
        assert_eq!(out.kept_a_copy, 1);
        assert_eq!(out.copies_promised, 2);
        assert_eq!(out.copies_kept, 1);
        assert_eq!(out.below_promise, 1);
        assert_eq!((out.sets_to_lost_host, out.delivered_to_lost_host), (1, 0));
    }

    fn entry(
        output_index: u64,
        (from, to, seq): (u64, u64, u64),
        index: u8,
        payload: &[u8],
    ) -> Delivery {
        Delivery {
            output_index,
            src: NodeId(from),
            dst: NodeId(to),
            seq,
            sent_at_us: 100 + seq,
            index,
            k: 3,
            split: false,
            hops: 2,
            path: None,
            latency_us: 1,
            mode: Mode::PLAIN,
            rejected_paths: Vec::new(),
            sealed: false,
            payload: payload.to_vec(),
        }
    }

    /// A plain clear run: set 1 from 0 to 7 awaited (copies 0 and 1 judged); the sweep finds
    /// its third copy late (fine), that copy again (a duplicate), a copy of a set never sent
    /// and one with another payload (forged), and an entry of another mode (not taken).
    #[test]
    fn the_sweep_counts_what_the_awaits_did_not_judge_once() {
        let mut sent = result(0, 7, 1, b"pay 10");
        sent.judged = vec![(NodeId(7), 10, Some(0)), (NodeId(7), 11, Some(1))];
        let other = result(2, 7, 2, b"pay 20");
        let mut judge = Judge::new(false, Mode::PLAIN, &[sent, other]);
        let seven = NodeId(7);
        judge.entry(seven, &entry(10, (0, 7, 1), 0, b"pay 10"));
        judge.entry(seven, &entry(11, (0, 7, 1), 1, b"pay 10"));
        judge.entry(seven, &entry(12, (0, 7, 1), 2, b"pay 10"));
        judge.entry(seven, &entry(13, (0, 7, 1), 1, b"pay 10"));
        judge.entry(seven, &entry(14, (5, 7, 1), 0, b"pay 10"));
        judge.entry(seven, &entry(15, (2, 7, 2), 2, b"pay 99"));
        judge.entry(seven, &entry(16, (2, 7, 2 ^ 0x5a), 0, b"pay 20"));
        let mut reliable = entry(17, (2, 7, 2), 1, b"forged");
        reliable.mode = "reliable".parse().unwrap();
        judge.entry(seven, &reliable);
        let mut sealed = entry(18, (2, 7, 2), 1, b"pay 20");
        sealed.sealed = true;
        judge.entry(seven, &sealed);
        judge.missed(3);
        assert_eq!(
            judge.done(),
            Sweep {
                entries: 9,
                unknown_sets: 2,
                other_payloads: 1,
                duplicates: 1,
                not_taken: 2,
                missed: 3,
                nodes_unread: 0,
            }
        );
    }

    /// A restarted node numbers its output from 0 again: an entry at an index an await judged
    /// before the restart is judged anew when it is another set's.
    #[test]
    fn an_output_index_judged_before_a_restart_names_no_other_entry() {
        let mut sent = result(0, 7, 1, b"pay 10");
        sent.judged = vec![(NodeId(7), 0, Some(0))];
        let mut judge = Judge::new(false, Mode::PLAIN, &[sent]);
        judge.entry(NodeId(7), &entry(0, (3, 7, 9), 0, b"made up"));
        assert_eq!(judge.done().unknown_sets, 1);
    }

    /// In a delivery mode one entry is the whole set: a second entry of a set is a duplicate
    /// whatever its path; an entry at a node the set was not sent to is another payload.
    #[test]
    fn in_a_mode_a_set_counts_once_whatever_its_path() {
        let mode: Mode = "byzantine:1".parse().unwrap();
        let mut sent = result(0, 7, 1, b"x");
        sent.judged = vec![(NodeId(7), 4, None)];
        let mut judge = Judge::new(false, mode, &[sent]);
        for (at, index) in [(4, 0), (5, 2)] {
            let mut d = entry(at, (0, 7, 1), index, b"x");
            d.mode = mode;
            judge.entry(NodeId(7), &d);
        }
        let mut elsewhere = entry(9, (0, 6, 1), 0, b"x");
        elsewhere.mode = mode;
        judge.entry(NodeId(6), &elsewhere);
        let sweep = judge.done();
        assert_eq!(
            (sweep.duplicates, sweep.other_payloads),
            (1, 1),
            "{sweep:?}"
        );
    }
}
