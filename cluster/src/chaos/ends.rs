//! `chaos run --faults crash-ends`: the sources and destinations of sets are killed (SIGKILL,
//! `docker kill`, a simulated crash) at random moments while traffic runs, and restarted; a
//! consuming client on every node takes what is delivered, and a checker over the run's
//! history says whether every set whose send was accepted reached a client exactly once.
//!
//! The history:
//! - every send: its payload (unique to the run), its ends, and whether the source answered
//!   "accepted" (a source that was down, or died before answering, did not accept it);
//! - for a reliable set, how its source said it ended (acknowledged or expired), asked again
//!   after the source's restarts until its deadline has passed;
//! - every entry a consuming client took, on every node: reliable sets from the node's store
//!   (`Request::Consume`, which a restart does not rewind), anything else from the output
//!   buffer, read again from its start when the node's incarnation changes.
//!
//! The verdict: `accepted_lost` (accepted, never taken), `acked_lost` (acknowledged to the
//! source, never taken), `duplicates_to_client` (taken more than once).

use crate::chaos::scenario::{Harness, Progress, REJOIN_TIMEOUT, RunConfig};
use crate::ops::cluster_client::ClusterClient;
use crate::ops::ready;
use crate::ops::traffic::SendOptions;
use cuberoute_daemon::client::ClientError;
use cuberoute_protocol::delivery::{Mode, Settlement};
use cuberoute_protocol::wire::control::{
    ControlErrorKind, Delivery, MAX_RECV_BATCH, Request, Response,
};
use cuberoute_protocol::{NodeId, SendRequest};
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// The consumer name a run's readers take sets as.
const CONSUMER: &str = "chaos-run";
/// How long one request may take before the node is taken for down.
const REQUEST_LIMIT: Duration = Duration::from_secs(2);
/// How long a killed node stays down: drawn between these.
const DOWN_MIN: Duration = Duration::from_millis(200);
const DOWN_MAX: Duration = Duration::from_millis(2500);
/// How long the readers keep taking after the last set settled, for late deliveries.
const SETTLE_SLACK: Duration = Duration::from_secs(3);
/// A consuming client takes what arrived this often (as a client that works through batches
/// does): what a destination holds for less than this is at stake when it dies.
const READ_EVERY: Duration = Duration::from_millis(400);
/// Of the sends made while some node is down, this share goes to a node that is down: sets
/// accepted while their destination is away, at stake if their source dies too.
const TO_A_DOWN_NODE: f64 = 0.25;

/// What the run found.
#[derive(Clone, Debug, Default, Serialize)]
pub struct EndsReport {
    /// Sends asked for, and those the source accepted.
    pub sends: u64,
    pub accepted: u64,
    /// Sends the source did not accept (down, refused, or died before it answered).
    pub not_accepted: u64,
    /// Accepted sets taken by a consuming client at least once.
    pub taken: u64,
    pub accepted_lost: u64,
    /// Accepted reliable sets their source said were acknowledged (as far as it could be
    /// asked: a source that died after the acknowledgement forgets it), and of those, the ones
    /// no client took.
    pub acked: u64,
    pub acked_lost: u64,
    /// Reliable sets their source said expired, and those it could not tell.
    pub expired: u64,
    pub unsettled: u64,
    /// Entries taken beyond the first of their set.
    pub duplicates_to_client: u64,
    /// Sets taken that were never accepted (their source died before it answered): not lost,
    /// not duplicates.
    pub taken_not_accepted: u64,
    /// Entries of this run whose payload or source is not what was sent.
    pub wrong_to_client: u64,
    /// Kills and restarts, and the nodes read through the store (the others' output buffer).
    pub kills: u64,
    pub restarts: u64,
    pub nodes_consumed_from_store: u64,
    pub nodes_read_from_output: u64,
    /// The first 20 sets lost, with what their source said.
    pub lost: Vec<LostEnd>,
}

#[derive(Clone, Debug, Serialize)]
pub struct LostEnd {
    pub from: u64,
    pub to: u64,
    pub seq: u64,
    pub settled: Option<String>,
}

struct Sent {
    from: NodeId,
    to: NodeId,
    accepted: Option<(u64, u64)>,
    settlement: Option<Settlement>,
}

#[derive(Default)]
struct History {
    sends: Vec<Sent>,
    /// Entries taken, by the send they carry (the index in `sends`).
    taken: HashMap<usize, u64>,
    taken_from: HashMap<usize, NodeId>,
    wrong: u64,
}

/// The payload of send `n` of the run `tag`: unique, and naming its send.
fn payload(tag: u64, n: usize, bytes: usize, rng: &mut StdRng) -> Vec<u8> {
    let mut p = format!("ends {tag:016x} #{n} ").into_bytes();
    while p.len() < bytes {
        p.push(rng.random());
    }
    p
}

/// The send an entry's payload names, if it is one of run `tag`'s.
fn send_of(tag: u64, payload: &[u8]) -> Option<usize> {
    let prefix = format!("ends {tag:016x} #");
    let rest = payload.strip_prefix(prefix.as_bytes())?;
    let end = rest.iter().position(|&b| b == b' ')?;
    std::str::from_utf8(&rest[..end]).ok()?.parse().ok()
}

/// The nodes up now, as the crasher keeps them, and the ends of the latest sends (the
/// crasher's victims: a source or destination of a set in flight).
#[derive(Default)]
struct Cluster {
    up: BTreeSet<NodeId>,
    recent_ends: std::collections::VecDeque<NodeId>,
}

type Up = Arc<Mutex<Cluster>>;

/// How many ends of recent sends the crasher chooses from.
const RECENT_ENDS: usize = 16;

/// Run `config.with_faults` of traffic at `config.rate` while nodes are killed and restarted,
/// then restart every node, wait for the sets to settle and the readers to take them, and
/// judge.
pub async fn run(
    client: &ClusterClient,
    config: &RunConfig,
    progress: Arc<Mutex<Progress>>,
    harness: &dyn Harness,
) -> anyhow::Result<EndsReport> {
    let topology = client.manifest.topology;
    let nodes: Vec<NodeId> = client.manifest.nodes.iter().map(|n| n.id).collect();
    let mut rng = StdRng::seed_from_u64(config.seed ^ 0xe4d5_c4a5_11ed_0001);
    // The run's tag, in every payload: from the seed and the nodes' incarnations, so that a
    // run again with the same seed on the same cluster does not take an earlier run's entries
    // (a restart puts kept ones back in the output buffer) for its own.
    let statuses = client
        .request_each(
            nodes.iter().map(|&n| (n, Request::Status)).collect(),
            REQUEST_LIMIT,
        )
        .await;
    let tag = statuses
        .into_iter()
        .filter_map(|(_, s)| match s {
            Ok(Response::Status(s)) => Some(s.incarnation),
            _ => None,
        })
        .fold(rng.random::<u64>(), |tag, i| tag.rotate_left(7) ^ i);
    let history = Arc::new(Mutex::new(History::default()));
    let stop = Arc::new(tokio::sync::watch::channel(false).0);
    // Readers first, each starting past what its node holds now.
    let mut readers = Vec::new();
    let store_readers = Arc::new(std::sync::atomic::AtomicU64::new(0));
    for &node in &nodes {
        let reader = Reader {
            client: client.clone(),
            node,
            tag,
            reliable: config.mode.reliable,
            history: history.clone(),
            stop: stop.subscribe(),
            store_readers: store_readers.clone(),
        };
        readers.push(tokio::spawn(reader.run()));
    }
    // Let every reader skip what was there before.
    tokio::time::sleep(Duration::from_millis(500)).await;

    let up: Up = Arc::new(Mutex::new(Cluster {
        up: nodes.iter().copied().collect(),
        recent_ends: Default::default(),
    }));
    let budget = (topology.connectivity() as usize).saturating_sub(1).max(1);
    let started = Instant::now();
    let length = config.with_faults;
    let crasher = {
        let up = up.clone();
        let seed = rng.random::<u64>();
        let every = Duration::from_secs_f64((length.as_secs_f64() / 12.0).clamp(0.5, 3.0));
        async move {
            let mut rng = StdRng::seed_from_u64(seed);
            let mut down: Vec<(NodeId, Instant)> = Vec::new();
            let (mut kills, mut restarts) = (0u64, 0u64);
            let mut next_kill = started + every;
            while started.elapsed() < length {
                let now = Instant::now();
                for i in (0..down.len()).rev() {
                    if down[i].1 <= now {
                        let (node, _) = down.remove(i);
                        if harness.restart(node).is_ok() {
                            restarts += 1;
                        }
                        up.lock().expect("up").up.insert(node);
                    }
                }
                if now >= next_kill && down.len() < budget {
                    // An end of a set sent just now, if one is up: a source with the set
                    // unacknowledged, or a destination with it unread.
                    let candidates: Vec<NodeId> = {
                        let cluster = up.lock().expect("up");
                        let ends: Vec<NodeId> = cluster
                            .recent_ends
                            .iter()
                            .copied()
                            .filter(|n| cluster.up.contains(n))
                            .collect();
                        if ends.is_empty() {
                            cluster.up.iter().copied().collect()
                        } else {
                            ends
                        }
                    };
                    if let Some(&victim) = candidates.choose(&mut rng) {
                        up.lock().expect("up").up.remove(&victim);
                        if harness.kill(victim).is_ok() {
                            kills += 1;
                        }
                        let stay = rng.random_range(DOWN_MIN..DOWN_MAX);
                        down.push((victim, Instant::now() + stay));
                    }
                    next_kill = now + every.mul_f64(rng.random_range(0.5..1.5));
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            for (node, _) in down {
                if harness.restart(node).is_ok() {
                    restarts += 1;
                }
                up.lock().expect("up").up.insert(node);
            }
            (kills, restarts)
        }
    };
    let traffic = send_all(client, config, &up, &history, &progress, tag, &mut rng);
    let ((kills, restarts), settles) = tokio::join!(crasher, traffic);
    // Every node back, then every reliable set settled (or past its deadline), then the
    // readers' last rounds.
    let _ = ready::wait_ready(client, REJOIN_TIMEOUT, &mut |_| {}).await;
    for settle in settles {
        let _ = settle.await;
    }
    tokio::time::sleep(SETTLE_SLACK).await;
    stop.send_replace(true);
    for reader in readers {
        let _ = reader.await;
    }
    let history = history.lock().expect("history");
    let mut report = judge(&history, config.mode);
    report.kills = kills;
    report.restarts = restarts;
    report.nodes_consumed_from_store = store_readers.load(std::sync::atomic::Ordering::Relaxed);
    report.nodes_read_from_output = nodes.len() as u64 - report.nodes_consumed_from_store;
    Ok(report)
}

/// The sends of the run, at its rate, between nodes up at the time; each accepted reliable
/// set gets a task that learns how it settled.
async fn send_all(
    client: &ClusterClient,
    config: &RunConfig,
    up: &Up,
    history: &Arc<Mutex<History>>,
    progress: &Arc<Mutex<Progress>>,
    tag: u64,
    rng: &mut StdRng,
) -> Vec<tokio::task::JoinHandle<()>> {
    let started = Instant::now();
    let interval = Duration::from_secs_f64(1.0 / config.rate);
    let mut tasks = Vec::new();
    for n in 0usize.. {
        let at = started + interval.mul_f64(n as f64);
        if at.duration_since(started) >= config.with_faults {
            break;
        }
        tokio::time::sleep_until(at).await;
        let alive: Vec<NodeId> = up.lock().expect("up").up.iter().copied().collect();
        if alive.len() < 2 {
            continue;
        }
        let from = *alive.choose(rng).expect("two or more");
        // The destination may be any node, a down one more often than its share: it gets the
        // set when it is back.
        let all: Vec<NodeId> = client.manifest.nodes.iter().map(|n| n.id).collect();
        let down: Vec<NodeId> = all.iter().copied().filter(|n| !alive.contains(n)).collect();
        let to = if !down.is_empty() && rng.random_bool(TO_A_DOWN_NODE) {
            *down.choose(rng).expect("one or more")
        } else {
            loop {
                let to = *all.choose(rng).expect("nodes");
                if to != from {
                    break to;
                }
            }
        };
        {
            let mut cluster = up.lock().expect("up");
            for end in [from, to] {
                cluster.recent_ends.push_back(end);
            }
            while cluster.recent_ends.len() > RECENT_ENDS {
                cluster.recent_ends.pop_front();
            }
        }
        let body = payload(tag, n, config.payload_bytes.max(32), rng);
        let index = {
            let mut h = history.lock().expect("history");
            h.sends.push(Sent {
                from,
                to,
                accepted: None,
                settlement: None,
            });
            h.sends.len() - 1
        };
        progress.lock().expect("progress").sets_sent += 1;
        let (client, history, progress) = (client.clone(), history.clone(), progress.clone());
        let (mode, deadline, clear) = (config.mode, config.life, config.clear);
        tasks.push(tokio::spawn(async move {
            let options = SendOptions {
                mode,
                life: Some(deadline),
                clear,
                ..SendOptions::default()
            };
            let sent = tokio::time::timeout(
                REQUEST_LIMIT,
                client.send(from, SendRequest::to(to), body, options),
            )
            .await;
            let Ok(Ok(report)) = sent else {
                progress.lock().expect("progress").sets_done += 1;
                return;
            };
            let set = (report.seq, report.sent_at_us);
            history.lock().expect("history").sends[index].accepted = Some(set);
            if mode.reliable {
                let settled = settlement(&client, from, set, deadline).await;
                history.lock().expect("history").sends[index].settlement = settled;
            }
            progress.lock().expect("progress").sets_done += 1;
        }));
    }
    tasks
}

/// How the reliable set `set` from `from` ended, asking again across the source's restarts
/// until a little after its deadline.
async fn settlement(
    client: &ClusterClient,
    from: NodeId,
    set: (u64, u64),
    deadline: Duration,
) -> Option<Settlement> {
    let give_up = Instant::now() + deadline + Duration::from_secs(5);
    while Instant::now() < give_up {
        let left = give_up.saturating_duration_since(Instant::now());
        let wait = left.min(Duration::from_secs(1));
        match tokio::time::timeout(wait + REQUEST_LIMIT, client.settled(from, set, wait)).await {
            Ok(Ok(Some(settled))) => return Some(settled),
            Ok(Ok(None)) => {}
            _ => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
    None
}

/// A consuming client on one node.
struct Reader {
    client: ClusterClient,
    node: NodeId,
    tag: u64,
    reliable: bool,
    history: Arc<Mutex<History>>,
    stop: tokio::sync::watch::Receiver<bool>,
    store_readers: Arc<std::sync::atomic::AtomicU64>,
}

impl Reader {
    async fn run(self) {
        let mut from_store = self.reliable;
        let mut counted_store = false;
        // What this reader has taken: the store's consumer place, or the output index and
        // the incarnation it belongs to.
        let mut taken: Option<u64> = None;
        let mut after: Option<u64> = None;
        let mut incarnation: Option<u64> = None;
        let mut skipping = true;
        let mut last_empty_after_stop = false;
        loop {
            let stopping = *self.stop.borrow();
            if stopping && last_empty_after_stop {
                return;
            }
            let request = if from_store {
                Request::Consume {
                    consumer: CONSUMER.to_string(),
                    taken,
                    max: MAX_RECV_BATCH,
                    wait_ms: 200,
                    clear: Some(true),
                }
            } else {
                if let Some(now) = self.incarnation().await {
                    if incarnation.is_some_and(|i| i != now) {
                        // Restarted: its output starts again from 0.
                        after = Some(0);
                    }
                    incarnation = Some(now);
                }
                Request::Recv {
                    after: after.unwrap_or(u64::MAX),
                    max: MAX_RECV_BATCH,
                    wait_ms: 200,
                    clear: Some(true),
                }
            };
            let answer =
                tokio::time::timeout(REQUEST_LIMIT, self.client.request(self.node, &request)).await;
            match answer {
                Ok(Ok(Response::Output { entries, next, .. })) => {
                    if from_store && !counted_store {
                        counted_store = true;
                        self.store_readers
                            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    if !skipping {
                        self.take(&entries);
                    }
                    if from_store {
                        if !entries.is_empty() {
                            taken = Some(next);
                        }
                    } else {
                        after = Some(next);
                    }
                    if entries.is_empty() {
                        skipping = false;
                        last_empty_after_stop = stopping;
                    } else {
                        last_empty_after_stop = false;
                    }
                    if !skipping && !stopping {
                        tokio::time::sleep(READ_EVERY).await;
                    }
                }
                Ok(Err(ClientError::Refused { error, .. }))
                    if from_store && error.kind == ControlErrorKind::Store =>
                {
                    // No store on this node: its output buffer is all there is.
                    from_store = false;
                }
                _ => {
                    if stopping {
                        // A node that does not answer at the end is not waited for forever.
                        last_empty_after_stop = true;
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }

    async fn incarnation(&self) -> Option<u64> {
        match tokio::time::timeout(
            REQUEST_LIMIT,
            self.client.request(self.node, &Request::Status),
        )
        .await
        {
            Ok(Ok(Response::Status(s))) => Some(s.incarnation),
            _ => None,
        }
    }

    fn take(&self, entries: &[Delivery]) {
        let mut history = self.history.lock().expect("history");
        for d in entries {
            let Some(index) = send_of(self.tag, &d.payload) else {
                // Not this run's (an earlier run's, restored into the output at a restart).
                continue;
            };
            let right = history
                .sends
                .get(index)
                .is_some_and(|s| s.from == d.src && s.to == self.node);
            if !right {
                history.wrong += 1;
                continue;
            }
            *history.taken.entry(index).or_default() += 1;
            history.taken_from.insert(index, self.node);
        }
    }
}

fn judge(history: &History, mode: Mode) -> EndsReport {
    let mut r = EndsReport {
        sends: history.sends.len() as u64,
        wrong_to_client: history.wrong,
        ..EndsReport::default()
    };
    for (index, sent) in history.sends.iter().enumerate() {
        let times = history.taken.get(&index).copied().unwrap_or(0);
        // For plain sets an entry is one copy: k copies of one set are one take.
        let once = if mode.is_plain() { times.min(1) } else { times };
        let Some((seq, _)) = sent.accepted else {
            r.not_accepted += 1;
            if times > 0 {
                r.taken_not_accepted += 1;
            }
            continue;
        };
        r.accepted += 1;
        let acked = matches!(sent.settlement, Some(Settlement::Acked { .. }));
        match sent.settlement {
            Some(Settlement::Acked { .. }) => r.acked += 1,
            Some(Settlement::Expired { .. }) => r.expired += 1,
            None if mode.reliable => r.unsettled += 1,
            None => {}
        }
        if times == 0 {
            r.accepted_lost += 1;
            if acked {
                r.acked_lost += 1;
            }
            if r.lost.len() < 20 {
                r.lost.push(LostEnd {
                    from: sent.from.0,
                    to: sent.to.0,
                    seq,
                    settled: sent.settlement.map(|s| format!("{s:?}")),
                });
            }
        } else {
            r.taken += 1;
            if !mode.is_plain() {
                r.duplicates_to_client += once - 1;
            }
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_payload_names_its_send_and_its_run() {
        let mut rng = StdRng::seed_from_u64(1);
        let p = payload(0xab, 42, 64, &mut rng);
        assert_eq!(p.len(), 64);
        assert_eq!(send_of(0xab, &p), Some(42));
        assert_eq!(send_of(0xac, &p), None, "another run's");
        assert_eq!(send_of(0xab, b"ends 00000000000000ab #x "), None);
    }

    fn sent(accepted: bool, settlement: Option<Settlement>) -> Sent {
        Sent {
            from: NodeId(1),
            to: NodeId(2),
            accepted: accepted.then_some((7, 8)),
            settlement,
        }
    }

    #[test]
    fn the_checker_counts_lost_acked_and_twice() {
        let reliable: Mode = "reliable".parse().unwrap();
        let acked = Some(Settlement::Acked { attempts: 1 });
        let history = History {
            sends: vec![
                sent(true, acked), // taken once
                sent(true, acked), // lost after its ack
                sent(true, None),  // lost, unsettled
                sent(true, acked), // taken twice
                sent(false, None), // never accepted, taken
                sent(false, None), // never accepted, not taken
            ],
            taken: [(0, 1), (3, 2), (4, 1)].into_iter().collect(),
            taken_from: HashMap::new(),
            wrong: 1,
        };
        let r = judge(&history, reliable);
        assert_eq!(r.accepted, 4);
        assert_eq!(r.not_accepted, 2);
        assert_eq!(r.accepted_lost, 2);
        assert_eq!(r.acked_lost, 1);
        assert_eq!(r.duplicates_to_client, 1);
        assert_eq!(r.taken_not_accepted, 1);
        assert_eq!(r.taken, 2);
        assert_eq!(r.unsettled, 1);
        assert_eq!(r.wrong_to_client, 1);
        assert_eq!(r.lost.len(), 2);
    }
}
