//! Open-loop overload: offer sets at a fixed rate, whatever the cluster manages, and watch
//! every daemon's resident memory. A closed loop (the saturation run of
//! [`crate::bench::measure`]) never offers more than the cluster carries; users do.
//!
//! Each offered set is one task: a send between a random pair that waits for its copies. The
//! client holds at most [`CLIENT_IN_FLIGHT`] of them; a set it could not even start counts as
//! held back by the client, so that the figure says what the daemons were offered. Sets go on
//! the schedule of [`OpenLoop`], and a completed set's latency counts from when it was due.

use crate::bench::measure::Load;
use crate::launch::usage;
use crate::ops::cluster_client::ClusterClient;
use crate::ops::open_loop::OpenLoop;
use crate::ops::percentiles::Percentiles;
use crate::ops::traffic::SendOptions;
use cuberoute_daemon::client::ClientError;
use cuberoute_protocol::SendRequest;
use rand::SeedableRng;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio::time::Instant;

/// The most sets the client keeps in flight during an overload run.
pub const CLIENT_IN_FLIGHT: usize = 20_000;
/// How often every daemon's resident set size is read.
const SAMPLE_EVERY: Duration = Duration::from_millis(250);
/// How long an offered set waits for its copies.
const WAIT: Duration = Duration::from_secs(5);

/// What one overload run offered, what the cluster did with it, and what it cost in memory.
#[derive(Clone, Debug, Serialize)]
pub struct Overload {
    /// The offered rate as a multiple of the saturation rate it was derived from.
    pub multiple: f64,
    pub offered_per_second: f64,
    pub seconds: f64,
    pub sets_offered: u64,
    /// Not started: the client already had [`CLIENT_IN_FLIGHT`] sets in flight.
    pub sets_held_back_by_client: u64,
    /// Sets sent in each second of the run (the last entry a part of a second), held back
    /// by the client or not.
    pub sent_per_second: Vec<u64>,
    /// Accepted by the source and complete at the destination within the wait.
    pub sets_completed: u64,
    /// The completed sets' latency, from when each was due to its last copy (ms).
    pub completed_p50_ms: f64,
    pub completed_p99_ms: f64,
    /// Accepted, but not every copy arrived within the wait.
    pub sets_incomplete: u64,
    /// Refused by the source daemon, by the reason it gave.
    pub refused: BTreeMap<String, u64>,
    /// Other client errors (unreachable, a stream that failed).
    pub errors: u64,
    /// Packets the daemons dropped over the run, by reason.
    pub drops: BTreeMap<String, u64>,
    /// Other events the daemons counted over the run (output entries overwritten before a
    /// client read them, requests refused as busy, links lost, ...).
    pub events: BTreeMap<String, u64>,
    /// Each daemon's highest resident set size over the run (sampled every 250 ms): the
    /// largest, the median and the mean, in MiB.
    pub peak_rss_mib_max: f64,
    pub peak_rss_mib_median: f64,
    pub peak_rss_mib_mean: f64,
    /// Every daemon's resident set size a few seconds after the run (MiB): memory kept.
    pub after_rss_mib_max: f64,
}

#[derive(Default)]
struct Tally {
    completed: u64,
    /// Each completed set's latency from when it was due, in µs.
    latencies_us: Vec<u64>,
    incomplete: u64,
    refused: BTreeMap<String, u64>,
    errors: u64,
}

/// Offer `rate` sets per second for `duration` between random pairs of the cluster whose
/// daemons are `pids`, and report.
pub async fn overload(
    client: &ClusterClient,
    pids: &[u32],
    multiple: f64,
    rate: f64,
    duration: Duration,
    seed: u64,
    load: Load,
) -> Overload {
    let topology = client.manifest.topology;
    let before = counters(client).await;
    let tally = Arc::new(Mutex::new(Tally::default()));
    let in_flight = Arc::new(Semaphore::new(CLIENT_IN_FLIGHT));
    let mut peaks: Vec<u64> = vec![0; pids.len()];
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let options = SendOptions {
        trace: false,
        wait: Some(WAIT),
        // A set that does not complete within the wait is over for the bench: its source
        // stops sending it then too, so that it loads no later round.
        life: Some(WAIT),
        mode: load.mode,
        clear: load.clear,
    };
    let started = Instant::now();
    let end = started + duration;
    let mut stream = OpenLoop::new(started, rate);
    let mut sampling = tokio::time::interval(SAMPLE_EVERY);
    let mut held_back = 0u64;
    let mut tasks = Vec::new();
    loop {
        if stream.next_due() >= end {
            break;
        }
        tokio::select! {
            _ = sampling.tick() => {
                sample(pids, &mut peaks);
                continue;
            }
            _ = stream.wait() => {}
        }
        let due = stream.take();
        let Ok(permit) = in_flight.clone().try_acquire_owned() else {
            held_back += 1;
            continue;
        };
        let (from, to) = load.pair(topology, &mut rng);
        let (client, tally) = (client.clone(), tally.clone());
        tasks.push(tokio::spawn(async move {
            let payload = vec![0; load.payload_bytes];
            let late_us = due.late_us();
            let result = client
                .send(from, SendRequest::to(to), payload, options)
                .await;
            let mut tally = tally.lock().expect("tally lock");
            match result {
                Ok(r) if r.lost == 0 && r.delivered => {
                    tally.completed += 1;
                    let last = r.deliveries.iter().map(|d| d.latency_us).max();
                    tally.latencies_us.push(late_us + last.unwrap_or(0));
                }
                Ok(_) => tally.incomplete += 1,
                Err(ClientError::Refused { error, .. }) => {
                    *tally
                        .refused
                        .entry(format!("{:?}", error.kind))
                        .or_default() += 1;
                }
                Err(_) => tally.errors += 1,
            }
            drop(permit);
        }));
    }
    let seconds = started.elapsed().as_secs_f64();
    // The sets still in flight finish or time out; memory is watched until they have.
    let mut waiting = futures_util::future::join_all(tasks);
    loop {
        tokio::select! {
            _ = &mut waiting => break,
            _ = tokio::time::sleep(SAMPLE_EVERY) => sample(pids, &mut peaks),
        }
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after: Vec<u64> = pids.iter().filter_map(|&p| usage::rss_kib(p)).collect();
    let after_counters = counters(client).await;
    let tally = std::mem::take(&mut *tally.lock().expect("tally lock"));
    let latency = Percentiles::of_us(tally.latencies_us.iter().copied());
    let mib = |kib: u64| kib as f64 / 1024.0;
    peaks.sort_unstable();
    let (drops, events) = (
        increase(&before.0, after_counters.0),
        increase(&before.1, after_counters.1),
    );
    Overload {
        multiple,
        offered_per_second: rate,
        seconds,
        sets_offered: stream.sent(),
        sets_held_back_by_client: held_back,
        sent_per_second: stream.sent_per_second().to_vec(),
        sets_completed: tally.completed,
        completed_p50_ms: latency.p50_us / 1e3,
        completed_p99_ms: latency.p99_us / 1e3,
        sets_incomplete: tally.incomplete,
        refused: tally.refused,
        errors: tally.errors,
        drops,
        events,
        peak_rss_mib_max: mib(peaks.last().copied().unwrap_or(0)),
        peak_rss_mib_median: mib(peaks.get(peaks.len() / 2).copied().unwrap_or(0)),
        peak_rss_mib_mean: mib(peaks.iter().sum::<u64>()) / peaks.len().max(1) as f64,
        after_rss_mib_max: mib(after.iter().copied().max().unwrap_or(0)),
    }
}

/// Raise each daemon's peak to its resident set size now.
fn sample(pids: &[u32], peaks: &mut [u64]) {
    for (peak, &pid) in peaks.iter_mut().zip(pids) {
        *peak = (*peak).max(usage::rss_kib(pid).unwrap_or(0));
    }
}

/// Drops by reason and events by kind, each summed over the cluster.
async fn counters(client: &ClusterClient) -> (BTreeMap<String, u64>, BTreeMap<String, u64>) {
    let (mut drops, mut events) = (BTreeMap::new(), BTreeMap::new());
    for (_, status) in client.statuses(Duration::from_secs(5)).await {
        if let Ok(s) = status {
            for (reason, n) in s.counters.dropped {
                *drops.entry(reason).or_default() += n;
            }
            for (event, n) in s.counters.events {
                *events.entry(event).or_default() += n;
            }
        }
    }
    (drops, events)
}

/// What grew from `before` to `after`, leaving out what did not.
fn increase(before: &BTreeMap<String, u64>, after: BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    after
        .into_iter()
        .map(|(key, n)| {
            let was = before.get(&key).copied().unwrap_or(0);
            (key, n.saturating_sub(was))
        })
        .filter(|&(_, n)| n > 0)
        .collect()
}
