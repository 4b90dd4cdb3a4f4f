//! Measurements of a running cluster: latency, saturation, the daemons' CPU and wake-ups per
//! packet-hop, what a set's ends cost apart from its hops. Their baselines are
//! [`raw_hop`](super::raw_hop), [`raw_ring`](super::raw_ring) and [`raw_mesh`](super::raw_mesh).

use crate::launch::usage::{self, Runs};
use crate::ops::cluster_client::ClusterClient;
use crate::ops::percentiles::Percentiles;
use crate::ops::traffic::{SendOptions, SendReport, SetToSend};
use cuberoute_daemon::client::ClientError;
use cuberoute_protocol::delivery::Mode;
use cuberoute_protocol::paths::table;
use cuberoute_protocol::wire::control::{IoCounters, KeyAgreements, Request};
use cuberoute_protocol::{NodeId, SendRequest, Topology};
use rand::{Rng, SeedableRng};
use serde::Serialize;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// Latency of k-copy sends between one pair.
#[derive(Clone, Debug, Serialize)]
pub struct PairLatency {
    pub from: u64,
    pub to: u64,
    pub k: u32,
    pub distance: u32,
    /// From `input` at the source until the last copy is delivered.
    pub set: Percentiles,
    /// Each copy's latency divided by its hops.
    pub per_hop: Percentiles,
    /// (hops, latency in µs) of every delivered copy, for [`hop_slope`].
    #[serde(skip)]
    pub copies: Vec<(u32, f64)>,
}

/// The least-squares line `latency = fixed + slope * hops` through the copies of several
/// pairs: `slope` is the marginal latency of one hop, `fixed` what input and delivery cost.
/// `None` unless the copies have at least two different hop counts.
pub fn hop_slope(copies: &[(u32, f64)]) -> Option<(f64, f64)> {
    let n = copies.len() as f64;
    let mean_h = copies.iter().map(|c| f64::from(c.0)).sum::<f64>() / n;
    let mean_l = copies.iter().map(|c| c.1).sum::<f64>() / n;
    let var = copies
        .iter()
        .map(|c| (f64::from(c.0) - mean_h).powi(2))
        .sum::<f64>();
    if var == 0.0 {
        return None;
    }
    let cov = copies
        .iter()
        .map(|c| (f64::from(c.0) - mean_h) * (c.1 - mean_l))
        .sum::<f64>();
    let slope = cov / var;
    Some((slope, mean_l - slope * mean_h))
}

/// Which pairs the saturation sets go between.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Pairs {
    /// Random pairs.
    #[default]
    Random,
    /// Every set to this node, each from another drawn at random (what one destination
    /// carries, as under a flooding neighbour): `--to`.
    To(NodeId),
    /// Random pairs, neither of them this node, one of whose k paths passes through it (what
    /// it carries for others as a relay): `--through`.
    Through(NodeId),
}

/// Random pairs drawn for [`Pairs::Through`] before the bench gives up on finding one whose
/// paths pass through the node.
const THROUGH_TRIES: usize = 100_000;

impl Pairs {
    /// The ends of the next set.
    pub fn pair(self, topology: Topology, rng: &mut impl Rng) -> (NodeId, NodeId) {
        match self {
            Pairs::Random => random_pair(topology, rng),
            Pairs::To(to) => {
                let n = topology.node_count();
                (NodeId((to.0 + rng.random_range(1..n)) % n), to)
            }
            Pairs::Through(node) => {
                through(topology, node, rng).expect("Pairs::check found a pair through the node")
            }
        }
    }

    /// Whether these pairs exist at all: some pair's paths pass through a `--through` node.
    pub fn check(self, topology: Topology, seed: u64) -> Result<(), String> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        match self {
            Pairs::Through(node) if through(topology, node, &mut rng).is_none() => Err(format!(
                "no pair of {topology} found (in {THROUGH_TRIES} drawn) whose paths pass through node {}",
                node.0
            )),
            _ => Ok(()),
        }
    }
}

/// A random pair whose node-to-node paths (those the cluster routes every copy on) pass
/// through `node`, neither end being it.
fn through(topology: Topology, node: NodeId, rng: &mut impl Rng) -> Option<(NodeId, NodeId)> {
    (0..THROUGH_TRIES)
        .map(|_| random_pair(topology, rng))
        .filter(|&(from, to)| from != node && to != node)
        .find(|&(from, to)| {
            table::node_to_node_paths(topology, from, to)
                .iter()
                .any(|path| path.contains(&node))
        })
}

/// What the bench sends: the delivery mode and the payload's length.
#[derive(Clone, Copy, Debug)]
pub struct Load {
    pub mode: Mode,
    pub payload_bytes: usize,
    /// Sent clear, without the end-to-end seal (sealed by default).
    pub clear: bool,
    /// Between which pairs the saturation sets go.
    pub pairs: Pairs,
    /// How many saturation sets the client sends in one request, and waits for in one
    /// (`send_many`: one pair of requests a process); 1: a request a set.
    pub sets_per_request: usize,
}

impl Default for Load {
    fn default() -> Load {
        Load {
            mode: Mode::PLAIN,
            payload_bytes: 64,
            clear: false,
            pairs: Pairs::Random,
            sets_per_request: 1,
        }
    }
}

impl Load {
    /// The ends of the next saturation set.
    pub fn pair(self, topology: Topology, rng: &mut impl Rng) -> (NodeId, NodeId) {
        self.pairs.pair(topology, rng)
    }

    fn options(self) -> SendOptions {
        SendOptions {
            trace: false,
            wait: Some(Duration::from_secs(5)),
            // As long as the bench waits: a set it gave up on loads no later round.
            life: Some(Duration::from_secs(5)),
            mode: self.mode,
            clear: self.clear,
        }
    }
}

/// Whether a set is complete at its destination: every copy (plain), or the rebuilt payload.
fn complete(report: &SendReport) -> bool {
    if report.mode.is_plain() {
        report.copies_delivered() == report.k as usize
    } else {
        report.delivered
    }
}

/// Send `n` sets from `from` to `to`, one after the other, each waiting until it is complete
/// at the destination.
pub async fn pair_latency(
    client: &ClusterClient,
    from: NodeId,
    to: NodeId,
    n: usize,
    load: Load,
) -> Result<PairLatency, ClientError> {
    let options = load.options();
    let (mut sets, mut hops, mut copies) = (Vec::new(), Vec::new(), Vec::new());
    let mut k = 0;
    for _ in 0..n {
        let report = client
            .send(
                from,
                SendRequest::to(to),
                vec![0; load.payload_bytes],
                options,
            )
            .await?;
        k = report.k;
        if !complete(&report) {
            continue;
        }
        let mut last = 0;
        for d in &report.deliveries {
            last = last.max(d.latency_us);
            hops.push(d.latency_us as f64 / f64::from(d.hops.max(1)));
            copies.push((d.hops, d.latency_us as f64));
        }
        sets.push(last as f64);
    }
    Ok(PairLatency {
        from: from.0,
        to: to.0,
        k,
        distance: client.manifest.topology.distance(from, to),
        set: Percentiles::of(sets),
        per_hop: Percentiles::of(hops),
        copies,
    })
}

/// What a saturation run achieved.
#[derive(Clone, Debug, Serialize)]
pub struct Throughput {
    pub seconds: f64,
    pub concurrency: usize,
    /// How many sets the client sent (and awaited) in one request ([`Load::sets_per_request`]).
    pub sets_per_request: usize,
    pub sets_completed: u64,
    pub sets_incomplete: u64,
    pub sets_per_second: f64,
    /// Packets received by some node (forwarded, delivered or dropped), over all nodes.
    pub packet_hops: u64,
    pub packet_hops_per_second: f64,
    pub packets_dropped: u64,
    /// Each completed set, from the client's send to its completion as the client waits for
    /// it (every copy, or the rebuilt payload; a reliable set's settlement too): what a
    /// closed-loop client sees with this many sets in flight.
    pub completion: Percentiles,
    /// The completion of a plain set in three parts, by the machine's wall clock (the client's
    /// and the daemons', one clock on one machine): where a long tail waits.
    pub completion_parts: Option<CompletionParts>,
}

/// Where the time of a completed plain set went.
#[derive(Clone, Debug, Serialize)]
pub struct CompletionParts {
    /// From the client's send to the source's taking the set (the control request, the
    /// source's front door).
    pub front_door: Percentiles,
    /// From the source's taking it to its last copy's delivery (the network of nodes).
    pub travel: Percentiles,
    /// From the last delivery to the client's having the answer (the wait's answer).
    pub answered: Percentiles,
}

/// The wall clock in µs since the epoch, as the daemons stamp sets.
fn wall_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// One completed plain set's parts (front door, travel, answered) in µs: `sent_us` and
/// `done_us` are the client's wall clock at its send and at the answer.
fn parts_of(report: &SendReport, sent_us: u64, done_us: u64) -> Option<[f64; 3]> {
    let travel = report.deliveries.iter().map(|d| d.latency_us).max()?;
    let front = report.sent_at_us.saturating_sub(sent_us);
    let answered = done_us.saturating_sub(report.sent_at_us + travel);
    Some([front as f64, travel as f64, answered as f64])
}

/// Counters of the whole cluster, summed over the nodes that answered.
#[derive(Clone, Copy, Debug, Default)]
pub struct ClusterCounts {
    /// Packet receptions (forwarded, delivered or dropped)...
    pub packet_hops: u64,
    /// ...of which dropped.
    pub drops: u64,
    /// What the daemons' endpoints and timers did.
    pub io: IoCounters,
    /// Link ends that went down, and frames written again on a new connection after it.
    pub links_lost: u64,
    pub frames_resent: u64,
    /// The sealing's key agreements, at both ends of pairs.
    pub key_agreements: KeyAgreements,
}

/// Sum over all nodes of their counters now.
pub async fn cluster_counts(client: &ClusterClient) -> ClusterCounts {
    let mut sum = ClusterCounts::default();
    for (_, status) in client.statuses(Duration::from_secs(5)).await {
        if let Ok(s) = status {
            let c = &s.counters;
            sum.packet_hops += c.packets_forwarded + c.packets_delivered + c.dropped_total();
            sum.drops += c.dropped_total();
            sum.links_lost += c.events.get("link_lost").copied().unwrap_or(0);
            sum.frames_resent += s.links.iter().map(|l| l.frames_resent).sum::<u64>();
            let (agreed, add) = (&mut sum.key_agreements, c.key_agreements);
            agreed.to_seal += add.to_seal;
            agreed.to_open += add.to_open;
            agreed.cpu_us += add.cpu_us;
            let (io, add) = (&mut sum.io, s.io);
            io.datagrams_sent += add.datagrams_sent;
            io.send_calls += add.send_calls;
            io.datagrams_received += add.datagrams_received;
            io.receive_calls += add.receive_calls;
            io.quic_timers_fired += add.quic_timers_fired;
            io.link_timers_fired += add.link_timers_fired;
            io.pings_sent += add.pings_sent;
            io.link_ack_frames_sent += add.link_ack_frames_sent;
        }
    }
    sum
}

/// What woke the daemons over a window, per packet-hop of the cluster in it. A wake-up is a
/// time the scheduler put a daemon's thread on a CPU (`usage::scheduled_runs`); beside it,
/// what can cause one: a datagram received, a timer that expired, a keep-alive.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Wakeups {
    pub packet_hops: u64,
    pub wakeups: u64,
    pub wakeups_per_packet_hop: f64,
    /// Of the wake-ups, returns to a CPU after a preemption (the thread was not asleep).
    pub preempted_per_packet_hop: f64,
    /// UDP datagrams the daemons sent (links and control connections)...
    pub datagrams_sent_per_packet_hop: f64,
    /// ...the send calls that carried them...
    pub send_calls_per_packet_hop: f64,
    /// ...and the receive calls that returned any.
    pub receive_calls_per_packet_hop: f64,
    /// QUIC's timers and the links' own that expired.
    pub timer_wakeups_per_packet_hop: f64,
    pub quic_timers_per_packet_hop: f64,
    pub link_timers_per_packet_hop: f64,
    /// QUIC PING frames: keep-alives of links and control connections, and loss probes.
    pub keepalives_per_packet_hop: f64,
    /// QUIC ACK frames on links, alone or riding on data.
    pub link_ack_frames_per_packet_hop: f64,
    /// Link ends that went down in the window (each end of a link counts), and the frames
    /// written again after: on a live cluster, none.
    pub links_lost: u64,
    pub frames_resent: u64,
}

impl Wakeups {
    /// The window between the counts `before` and `after`, in which the daemons' threads were
    /// put on a CPU `runs.runs` times.
    pub fn between(before: &ClusterCounts, after: &ClusterCounts, runs: Runs) -> Wakeups {
        let wakeups = runs.runs;
        let packet_hops = after.packet_hops.saturating_sub(before.packet_hops);
        let per_hop = |a: u64, b: u64| a.saturating_sub(b) as f64 / packet_hops.max(1) as f64;
        let (a, b) = (&after.io, &before.io);
        let quic = per_hop(a.quic_timers_fired, b.quic_timers_fired);
        let link = per_hop(a.link_timers_fired, b.link_timers_fired);
        Wakeups {
            packet_hops,
            wakeups,
            wakeups_per_packet_hop: wakeups as f64 / packet_hops.max(1) as f64,
            preempted_per_packet_hop: runs.preempted as f64 / packet_hops.max(1) as f64,
            datagrams_sent_per_packet_hop: per_hop(a.datagrams_sent, b.datagrams_sent),
            send_calls_per_packet_hop: per_hop(a.send_calls, b.send_calls),
            receive_calls_per_packet_hop: per_hop(a.receive_calls, b.receive_calls),
            timer_wakeups_per_packet_hop: quic + link,
            quic_timers_per_packet_hop: quic,
            link_timers_per_packet_hop: link,
            keepalives_per_packet_hop: per_hop(a.pings_sent, b.pings_sent),
            link_ack_frames_per_packet_hop: per_hop(a.link_ack_frames_sent, b.link_ack_frames_sent),
            links_lost: after.links_lost.saturating_sub(before.links_lost),
            frames_resent: after.frames_resent.saturating_sub(before.frames_resent),
        }
    }
}

/// What a window cost the daemons `pids`: their CPU and wake-ups per packet-hop.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct WindowCost {
    pub cpu: HopCost,
    pub wakeups: Wakeups,
    /// Of the CPU, the sealing's key agreements: each pair of nodes that met for the first
    /// time in the window.
    pub key_agreements: KeyAgreementCost,
    /// Packets the cluster dropped in the window.
    pub packets_dropped: u64,
}

/// The sealing's key agreements in a window (an HPKE setup at each end of a pair that had not
/// met), as the daemons measured their CPU around each, against the window's CPU.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq)]
pub struct KeyAgreementCost {
    /// Setups at senders and at receivers.
    pub to_seal: u64,
    pub to_open: u64,
    /// Their CPU, and its share of the daemons' CPU in the window.
    pub cpu_seconds: f64,
    pub share_of_cpu: f64,
    /// The daemons' CPU per packet-hop besides them: what the window cost with every pair
    /// already agreed.
    pub cpu_us_per_packet_hop_besides: f64,
}

impl KeyAgreementCost {
    /// Between the counts `before` and `after` of a window whose cost is `cpu`.
    pub fn between(before: &KeyAgreements, after: &KeyAgreements, cpu: &HopCost) -> Self {
        let cpu_seconds = after.cpu_us.saturating_sub(before.cpu_us) as f64 / 1e6;
        KeyAgreementCost {
            to_seal: after.to_seal.saturating_sub(before.to_seal),
            to_open: after.to_open.saturating_sub(before.to_open),
            cpu_seconds,
            share_of_cpu: if cpu.cpu_seconds > 0.0 {
                cpu_seconds / cpu.cpu_seconds
            } else {
                0.0
            },
            cpu_us_per_packet_hop_besides: (cpu.cpu_seconds - cpu_seconds).max(0.0) * 1e6
                / cpu.packet_hops.max(1) as f64,
        }
    }
}

/// Run `work` and measure what it cost the daemons `pids` per packet-hop of the cluster. The
/// cluster's counters are read outside the window of CPU and wake-ups, so that reading them
/// (a control request to every node) is not charged to the work.
pub async fn window_cost<T>(
    client: &ClusterClient,
    pids: &[u32],
    work: impl Future<Output = T>,
) -> (T, WindowCost) {
    let before = cluster_counts(client).await;
    let runs_before = usage::runs_now(pids);
    let (result, cpu_seconds) = cpu_during(pids, work).await;
    let runs = usage::runs_since(&runs_before);
    let after = cluster_counts(client).await;
    let wakeups = Wakeups::between(&before, &after, runs);
    let cpu = HopCost::new(cpu_seconds, wakeups.packet_hops);
    let cost = WindowCost {
        cpu,
        wakeups,
        key_agreements: KeyAgreementCost::between(
            &before.key_agreements,
            &after.key_agreements,
            &cpu,
        ),
        packets_dropped: after.drops.saturating_sub(before.drops),
    };
    (result, cost)
}

/// Keep `concurrency` sets in flight between random pairs for `duration`, each waiting for
/// its copies, and count what the whole cluster forwarded. With [`Load::sets_per_request`]
/// above 1, the sets go in rounds of that many, each round sent and awaited in one request a
/// process ([`ClusterClient::send_many`]), as many rounds at once as keep `concurrency` in
/// flight; each set's completion is its round's.
pub async fn saturate(
    client: &ClusterClient,
    duration: Duration,
    concurrency: usize,
    seed: u64,
    load: Load,
) -> Throughput {
    saturate_costed(client, &[], duration, concurrency, seed, load)
        .await
        .0
}

/// [`saturate`], and what it cost the daemons `pids` (see [`window_cost`]).
pub async fn saturate_costed(
    client: &ClusterClient,
    pids: &[u32],
    duration: Duration,
    concurrency: usize,
    seed: u64,
    load: Load,
) -> (Throughput, WindowCost) {
    let topology = client.manifest.topology;
    let completed = Arc::new(AtomicU64::new(0));
    let incomplete = Arc::new(AtomicU64::new(0));
    // Counters reach the control API at once; nothing is left in flight once every set is
    // complete or timed out.
    let (((took_us, parts), seconds), cost) = window_cost(client, pids, async {
        let started = Instant::now();
        let per_round = load.sets_per_request.max(1);
        let rounds = concurrency.div_ceil(per_round);
        let workers = (0..rounds).map(|w| {
            let client = client.clone();
            let completed = completed.clone();
            let incomplete = incomplete.clone();
            // The last round holds what is left of `concurrency`.
            let sets = per_round.min(concurrency - w * per_round);
            tokio::spawn(async move {
                let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ (w as u64) << 32);
                let options = load.options();
                let mut took_us = Vec::new();
                let mut parts = Vec::new();
                while started.elapsed() < duration {
                    let round: Vec<SetToSend> = (0..sets)
                        .map(|_| {
                            let (from, to) = load.pair(topology, &mut rng);
                            let payload = vec![0; load.payload_bytes];
                            SetToSend {
                                from,
                                request: SendRequest::to(to),
                                payload,
                            }
                        })
                        .collect();
                    let sent = Instant::now();
                    let sent_us = wall_us();
                    let reports = if per_round == 1 {
                        let set = round.into_iter().next().expect("one set a round");
                        vec![
                            client
                                .send(set.from, set.request, set.payload, options)
                                .await,
                        ]
                    } else {
                        client.send_many(round, options).await
                    };
                    let (took, done_us) = (sent.elapsed().as_secs_f64() * 1e6, wall_us());
                    for report in reports {
                        match report {
                            Ok(r) if complete(&r) => {
                                took_us.push(took);
                                if r.mode.is_plain() {
                                    parts.extend(parts_of(&r, sent_us, done_us));
                                }
                                completed.fetch_add(1, Relaxed)
                            }
                            _ => incomplete.fetch_add(1, Relaxed),
                        };
                    }
                }
                (took_us, parts)
            })
        });
        let mut took_us = Vec::new();
        let mut parts = Vec::new();
        for worker in futures_util::future::join_all(workers).await {
            let (took, of) = worker.expect("a bench worker does not panic");
            took_us.extend(took);
            parts.extend(of);
        }
        ((took_us, parts), started.elapsed().as_secs_f64())
    })
    .await;
    let part =
        |i: usize| Percentiles::of(parts.iter().map(|p: &[f64; 3]| p[i]).collect::<Vec<f64>>());
    let completion_parts = (!parts.is_empty()).then(|| CompletionParts {
        front_door: part(0),
        travel: part(1),
        answered: part(2),
    });
    let sets = completed.load(Relaxed);
    let packet_hops = cost.wakeups.packet_hops;
    let throughput = Throughput {
        seconds,
        concurrency,
        sets_per_request: load.sets_per_request.max(1),
        sets_completed: sets,
        sets_incomplete: incomplete.load(Relaxed),
        sets_per_second: sets as f64 / seconds,
        packet_hops,
        packet_hops_per_second: packet_hops as f64 / seconds,
        packets_dropped: cost.packets_dropped,
        completion: Percentiles::of(took_us),
        completion_parts,
    };
    (throughput, cost)
}

/// CPU the daemons used per packet-hop over a measured window: the time the scheduler ran
/// them, summed, over the packet receptions of the whole cluster.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct HopCost {
    pub cpu_seconds: f64,
    pub packet_hops: u64,
    pub cpu_us_per_packet_hop: f64,
}

impl HopCost {
    pub fn new(cpu_seconds: f64, packet_hops: u64) -> HopCost {
        HopCost {
            cpu_seconds,
            packet_hops,
            cpu_us_per_packet_hop: cpu_seconds * 1e6 / packet_hops.max(1) as f64,
        }
    }
}

/// The daemons' CPU one set at a time, split by a line through two pairs' windows of sets:
/// what a set costs whatever its paths' length (the source's input and sealing, the
/// destination's opening and delivery, the client's requests) and what each packet-hop adds.
/// A line through two points: it holds only if a hop costs the same in the sets of both pairs.
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct SetCost {
    pub cpu_us_per_set: f64,
    pub cpu_us_per_packet_hop: f64,
}

impl SetCost {
    /// From the windows of two pairs, `(cost, sets sent)` each. `None` unless both sent sets and
    /// their sets took different numbers of packet-hops.
    pub fn between(far: (&HopCost, usize), near: (&HopCost, usize)) -> Option<SetCost> {
        let per_set = |(cost, sets): (&HopCost, usize)| {
            (sets > 0).then(|| {
                (
                    cost.packet_hops as f64 / sets as f64,
                    cost.cpu_seconds * 1e6 / sets as f64,
                )
            })
        };
        let ((far_hops, far_us), (near_hops, near_us)) = (per_set(far)?, per_set(near)?);
        if far_hops == near_hops {
            return None;
        }
        let per_hop = (far_us - near_us) / (far_hops - near_hops);
        Some(SetCost {
            cpu_us_per_set: far_us - per_hop * far_hops,
            cpu_us_per_packet_hop: per_hop,
        })
    }
}

/// The client's share of one set at a time. A set sent and waited for is two control requests,
/// each a stream of its own: the send at the source and the wait for the copies at the
/// destination. What a request costs the daemons whatever it asks is measured apart, by a window
/// of waits for a set the destination holds complete already, each answered at once.
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct RequestCost {
    pub requests_per_set: u32,
    pub cpu_us_per_request: f64,
    /// The sets' CPU per packet-hop less their requests' cost.
    pub cpu_us_per_packet_hop_besides: f64,
}

/// Control requests a set costs when it is sent and waited for: [`ClusterClient::send`] asks
/// its source, then its destination.
pub const REQUESTS_PER_SET: u32 = 2;

impl RequestCost {
    /// From a window of `sets` sets sent one at a time, and the CPU of one request.
    pub fn of((window, sets): (&HopCost, usize), cpu_us_per_request: f64) -> RequestCost {
        let requests_us = sets as f64 * f64::from(REQUESTS_PER_SET) * cpu_us_per_request;
        RequestCost {
            requests_per_set: REQUESTS_PER_SET,
            cpu_us_per_request,
            cpu_us_per_packet_hop_besides: (window.cpu_seconds * 1e6 - requests_us).max(0.0)
                / window.packet_hops.max(1) as f64,
        }
    }
}

/// The daemons' CPU per control request: send one set from `from` to `to` and wait for it,
/// then ask `to` for it `n` times, a request at a time, in a window of CPU. Each is answered
/// at once from what the destination holds, so the window is the requests' own cost: the
/// stream, its task, the request's decoding and the answer's encoding. `None` if no copy of
/// the set arrived within the bench's wait: there is nothing to ask for.
pub async fn cpu_per_request(
    client: &ClusterClient,
    pids: &[u32],
    (from, to): (NodeId, NodeId),
    n: usize,
) -> Result<Option<f64>, ClientError> {
    let load = Load::default();
    let set = client
        .send(
            from,
            SendRequest::to(to),
            vec![0; load.payload_bytes],
            load.options(),
        )
        .await?;
    let held = set.copies_delivered() as u32;
    if held == 0 {
        return Ok(None);
    }
    let ask = Request::Await {
        src: from,
        seq: set.seq,
        sent_at_us: set.sent_at_us,
        copies: held,
        timeout_ms: 0,
        sealed: set.sealed,
        mode: set.mode,
    };
    let (answers, cpu_seconds) = cpu_during(pids, async {
        for _ in 0..n {
            client.request(to, &ask).await?;
        }
        Ok(())
    })
    .await;
    answers.map(|()| Some(cpu_seconds * 1e6 / n.max(1) as f64))
}

/// Run `work`, and the CPU seconds the daemons `pids` used meanwhile (see `usage::cpu_seconds`).
pub async fn cpu_during<T>(pids: &[u32], work: impl Future<Output = T>) -> (T, f64) {
    let cpu_before = usage::cpu_now(pids);
    let started = Instant::now();
    let result = work.await;
    let cpu = usage::cpu_since(&cpu_before, started);
    (result, cpu.cores * cpu.seconds)
}

/// The niceness the bench's load generator asks for by default. Daemons run at niceness 10,
/// below their clients, but the scheduler weighs each runnable daemon apart: with 2,048 daemons
/// at saturation (a run queue 200 deep) a generator at niceness 0 got about a tenth of the CPU,
/// and half of its 1,024 workers had not sent their first set 4.6 s into the run
/// (docs/notes/2026-11-27-raw-relays-and-load-generator.md, "The load generator's priority",
/// which also has what it costs small clusters).
pub const LOAD_GENERATOR_NICE: i32 = -20;

/// Set this thread's niceness, and that of the threads and processes it starts after, to
/// `nice` (-20 to 19); the niceness in force, and why it is not `nice` where it could not be
/// raised (that needs root or CAP_SYS_NICE). Call it before any runtime starts its threads.
pub fn prioritize_load_generator(nice: i32) -> (i32, Option<String>) {
    use cuberoute_daemon::priority;
    let now = priority::current().unwrap_or(0);
    match priority::set_to(nice) {
        Ok(()) => (nice, None),
        Err(e) => {
            let why = format!(
                "the load generator stays at niceness {now}: setting it to {nice} needs root or CAP_SYS_NICE ({e}); on clusters of hundreds of daemons at saturation it then gets a small share of the CPU and fewer sets are in flight than --concurrency says"
            );
            (now, Some(why))
        }
    }
}

/// A uniformly random ordered pair of distinct nodes.
pub fn random_pair(topology: Topology, rng: &mut impl Rng) -> (NodeId, NodeId) {
    let n = topology.node_count();
    let from = rng.random_range(0..n);
    let to = (from + rng.random_range(1..n)) % n;
    (NodeId(from), NodeId(to))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_through_a_node_have_a_path_through_it_and_are_refused_where_none_has() {
        let eh = Topology::exchanged(2, 2).unwrap();
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let node = NodeId(5);
        Pairs::Through(node).check(eh, 1).unwrap();
        for _ in 0..200 {
            let (from, to) = Pairs::Through(node).pair(eh, &mut rng);
            assert!(from != node && to != node && from != to);
            let paths = table::node_to_node_paths(eh, from, to);
            assert!(paths.iter().any(|p| p[1..p.len() - 1].contains(&node)));
        }
        // Q_1 has two nodes: no path has an inner node.
        let q1 = Topology::hypercube(1).unwrap();
        assert!(Pairs::Through(NodeId(0)).check(q1, 1).is_err());
        assert!(Pairs::To(NodeId(0)).check(q1, 1).is_ok());
    }

    #[test]
    fn a_set_cost_is_the_line_through_two_windows() {
        // 10 sets of 20 packet-hops at 100 + 5 per hop, and 10 sets of 4 at the same line.
        let far = HopCost::new(10.0 * (100.0 + 5.0 * 20.0) / 1e6, 200);
        let near = HopCost::new(10.0 * (100.0 + 5.0 * 4.0) / 1e6, 40);
        let cost = SetCost::between((&far, 10), (&near, 10)).unwrap();
        assert!((cost.cpu_us_per_set - 100.0).abs() < 1e-6);
        assert!((cost.cpu_us_per_packet_hop - 5.0).abs() < 1e-6);
        assert_eq!(SetCost::between((&far, 10), (&far, 10)), None);
        assert_eq!(SetCost::between((&far, 10), (&near, 0)), None);
    }

    #[test]
    fn a_sets_requests_are_taken_out_of_its_window() {
        // 10 sets of 18 packet-hops at 50 µs each, and two requests of 40 µs per set.
        let window = HopCost::new(10.0 * (18.0 * 50.0 + 2.0 * 40.0) / 1e6, 180);
        let cost = RequestCost::of((&window, 10), 40.0);
        assert_eq!(cost.requests_per_set, 2);
        assert!((cost.cpu_us_per_packet_hop_besides - 50.0).abs() < 1e-6);
        // Requests dearer than the whole window leave nothing, not less.
        assert_eq!(
            RequestCost::of((&window, 10), 1e6).cpu_us_per_packet_hop_besides,
            0.0
        );
    }

    #[test]
    fn key_agreements_are_taken_out_of_the_window_they_happened_in() {
        let before = KeyAgreements {
            to_seal: 5,
            to_open: 4,
            cpu_us: 1_000,
        };
        let after = KeyAgreements {
            to_seal: 15,
            to_open: 14,
            cpu_us: 1_000 + 3_000_000,
        };
        // 12 CPU-s over a million packet-hops, 3 of them key agreements.
        let cpu = HopCost::new(12.0, 1_000_000);
        let cost = KeyAgreementCost::between(&before, &after, &cpu);
        assert_eq!((cost.to_seal, cost.to_open), (10, 10));
        assert!((cost.cpu_seconds - 3.0).abs() < 1e-9);
        assert!((cost.share_of_cpu - 0.25).abs() < 1e-9);
        assert!((cost.cpu_us_per_packet_hop_besides - 9.0).abs() < 1e-9);
        // A window with no CPU measured shares nothing, and never goes below zero.
        let none = KeyAgreementCost::between(&before, &after, &HopCost::new(0.0, 0));
        assert_eq!(
            (none.share_of_cpu, none.cpu_us_per_packet_hop_besides),
            (0.0, 0.0)
        );
    }

    #[test]
    fn hop_slope_is_least_squares() {
        let copies = [(1, 150.0), (3, 250.0), (7, 450.0), (7, 450.0)];
        let (slope, fixed) = hop_slope(&copies).unwrap();
        assert!((slope - 50.0).abs() < 1e-9 && (fixed - 100.0).abs() < 1e-9);
        assert_eq!(hop_slope(&[(2, 1.0), (2, 5.0)]), None);
    }
}
