//! Reporting a chaos run: the totals of its sets by phase, latency, recovery from corruption,
//! drops and events from the nodes' counters, reliable sets' outcomes and attempts, the sets
//! lost (the [`Report`] the CLI prints and writes as JSON), and the timeline its report page
//! draws. The numbers come from [`run`](super::run) and [`judge`](super::judge).

use crate::chaos::around::AroundReport;
use crate::chaos::ends::EndsReport;
use crate::chaos::judge::{Forgeries, HostLossOutcome, SetResult, Sweep};
use crate::chaos::scenario::{Phase, RunConfig};
use crate::chaos::schedule::{FaultKind, Schedule};
use crate::chaos::timeline::{FaultWindow, Outcome, SetPoint, Timeline};
use crate::ops::percentiles::{Percentiles, serialize_whole_us};
use cuberoute_protocol::delivery::{Mode, Settlement};
use cuberoute_protocol::wire::control::NodeStatus;
use cuberoute_protocol::{NodeId, RouteKind, SendRequest, Topology, flush_bound};
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Duration;

#[derive(Clone, Debug, Default, Serialize)]
pub struct PhaseReport {
    pub sets_sent: u64,
    pub copies_expected: u64,
    pub copies_delivered: u64,
    pub sets_with_a_copy: u64,
    pub sets_lost: u64,
    pub sets_failed_to_send: u64,
    pub path_mismatches: u64,
    /// Copies delivered on a path around dead links (not the construction's, but a simple path
    /// of real links disjoint from the set's other copies).
    pub copies_rerouted: u64,
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
    /// The bound B of docs/protocol.md for the routes the run's packets could take: the
    /// routing mode's, or the larger of it and source routes' where links could die (routes
    /// around dead links are source routes).
    pub bound_hops: u32,
    pub packets_corrupted: u64,
    pub corrupted_dropped: u64,
    pub corrupted_delivered: u64,
    /// Corrupted packets corrupted once more before they ended (then counted from there).
    pub corrupted_again: u64,
}

/// The report. It opens with its verdict; the keys after are the schema.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    /// Whether the run kept its promises, and the counts that decide it.
    pub verdict: Verdict,
    pub sets_sent: u64,
    pub copies_expected: u64,
    pub copies_delivered: u64,
    pub sets_with_a_copy: u64,
    pub sets_lost: u64,
    /// Sets sent in each second of the run, by when they went (the last entry a part of a
    /// second): the traffic runs on a schedule whatever the cluster does.
    pub sent_per_second: Vec<u64>,
    /// The most a set went out late against its schedule, in ms; latencies count from when
    /// each set was due.
    pub latest_send_ms: f64,
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
    /// answering, every link up, every container healthy), if within
    /// [`REJOIN_TIMEOUT`](crate::chaos::scenario::REJOIN_TIMEOUT).
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
    /// Reliable sets a client got whose source never said how they ended (the first 100).
    pub unsettled: Vec<LostSet>,
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
    /// Sets whose send was accepted and that no client got (`crash-ends`: no consuming client
    /// took), and of those the ones acknowledged to their source (`None`: a run of plain
    /// sets).
    pub accepted_lost: Option<u64>,
    pub acked_lost: Option<u64>,
    /// `crash-ends`: the whole history's verdict.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ends: Option<EndsReport>,
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
    /// With crashes or cuts: when every live node knew of them, and what the sets became before,
    /// until then, after then and after the repair ([`crate::chaos::around`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub around: Option<AroundReport>,
    /// Every set and fault window, for the report page ([`crate::chaos::page`]); not in the JSON.
    #[serde(skip)]
    pub timeline: Timeline,
}

/// Whether a run kept every promise its faults and mode make ([`crate::chaos::verdict`]
/// judges).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Verdict {
    pub valid: bool,
    /// The broken promises, each as what broke it and how often (empty when valid).
    pub reasons: Vec<String>,
    /// Every promise checked, with what was counted against it.
    pub checks: Vec<Check>,
    /// Losses the faults and mode allowed, each as what and how many.
    pub allowed: Vec<String>,
}

/// One promise, and the count of anomalies against it (0 when kept).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Check {
    pub check: &'static str,
    pub count: u64,
}

impl Verdict {
    /// One line: `valid` or `INVALID`, with the counts that decide it.
    pub fn line(&self) -> String {
        if self.valid {
            let counts: Vec<String> = self
                .checks
                .iter()
                .map(|c| format!("{} {}", c.count, c.check))
                .collect();
            format!("verdict: valid ({})", counts.join(", "))
        } else {
            format!("verdict: INVALID: {}", self.reasons.join("; "))
        }
    }
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Attempts {
    pub mean: f64,
    pub max: u32,
    pub settled: u64,
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

impl Report {
    /// The totals of a run's sets (`results`), and what the nodes' counters say happened between
    /// the snapshots `before` and `after`; the sweep, the relays and the network's faults are
    /// added by the run once it knows them.
    pub(super) fn of(
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
            p.copies_rerouted += u64::from(r.rerouted);
            p.corrupted_delivered_to_client += u64::from(r.corrupted);
            p.single_path_delivered += u64::from(r.shortest_delivered);
            p.duplicates_to_client += u64::from(r.duplicates);
            p.forged_delivered_to_client += u64::from(r.forged);
            latency.entry(r.phase).or_default().extend(&r.latencies_us);
        }
        let total = |f: fn(&PhaseReport) -> u64| phases.values().map(f).sum::<u64>();
        // The run's sets are node-to-node, all of one routing mode; but where a fault can take
        // links down, sources route new sets, resends and acknowledgements around the links
        // they know dead by source routes, whose bound is theirs.
        let kind = SendRequest::to(NodeId(1)).kind(topology);
        let links_die = [
            FaultKind::Crash,
            FaultKind::Cut,
            FaultKind::Partition,
            FaultKind::Loss,
            FaultKind::Delay,
            FaultKind::Host,
        ]
        .iter()
        .any(|f| config.faults.contains(f));
        let mut recovery = Recovery {
            bound_hops: if links_die {
                flush_bound(topology, kind).max(flush_bound(topology, RouteKind::Source))
            } else {
                flush_bound(topology, kind)
            },
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
            if c.packets_corrupted > then.packets_corrupted
                || c.max_hops_after > then.max_hops_after
            {
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
            sent_per_second: Vec::new(),
            latest_send_ms: results.iter().map(|r| r.late_us).max().unwrap_or(0) as f64 / 1e3,
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
            unsettled: results
                .iter()
                .filter(|r| {
                    config.mode.reliable
                        && r.delivered > 0
                        && r.settlement.is_none()
                        && r.refused.is_none()
                })
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
            accepted_lost: config
                .mode
                .reliable
                .then(|| lost_where(results, |r| !r.failed && r.refused.is_none())),
            acked_lost: config.mode.reliable.then(|| {
                lost_where(results, |r| {
                    matches!(r.settlement, Some(Settlement::Acked { .. }))
                })
            }),
            ends: None,
            ..Report::default()
        }
    }

    /// Count what the sweep of every output found beyond the sets awaited: its entries of a set
    /// never sent or with another payload as forged (in a run with forging relays) or corrupted,
    /// and its duplicates.
    pub(super) fn add_sweep(&mut self, sweep: Sweep, forging: bool) {
        let swept_wrong = sweep.unknown_sets + sweep.other_payloads;
        if forging {
            self.forged_delivered_to_client += swept_wrong;
        } else {
            self.corrupted_delivered_to_client += swept_wrong;
        }
        self.duplicates_to_client += sweep.duplicates;
        self.sweep = sweep;
    }

    /// A `crash-ends` run's report: its verdict ([`EndsReport`]) in the report's keys.
    pub(super) fn of_ends(config: &RunConfig, topology: Topology, ends: EndsReport) -> Report {
        Report {
            sets_sent: ends.sends,
            sets_lost: ends.accepted_lost,
            topology: topology.to_string(),
            seed: config.seed,
            faults: config.faults.iter().copied().collect(),
            delivery: config.mode.to_string(),
            duplicates_to_client: ends.duplicates_to_client,
            corrupted_delivered_to_client: ends.wrong_to_client,
            accepted_lost: Some(ends.accepted_lost),
            acked_lost: Some(ends.acked_lost),
            ends: Some(ends),
            ..Report::default()
        }
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

/// How many sets no client got that are `such`.
fn lost_where(results: &[SetResult], such: impl Fn(&SetResult) -> bool) -> u64 {
    results
        .iter()
        .filter(|r| r.delivered == 0 && such(r))
        .count() as u64
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

/// Every set and every fault window of the run, for the report page.
pub(super) fn timeline(
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
