//! What k disjoint paths buy when the network itself is bad: under each network condition
//! (loss, or delay with jitter, on every link), sets between random pairs sent over all k
//! paths and as one copy on one shortest path (`SendRequest::single`), each plain and reliable;
//! for each, the first copy's latency (p50, p99, p99.9) and the share of sets lost.
//!
//! The conditions are applied through the run's [`Harness`] (the kernel and the daemons'
//! sockets on a cluster with a network of its own, turmoil's network under `cuberoute sim`), so
//! the same study runs on real processes and in the simulator.

use crate::chaos::run;
use crate::chaos::scenario::Harness;
use crate::ops::cluster_client::ClusterClient;
use crate::ops::open_loop::OpenLoop;
use crate::ops::percentiles::Percentiles;
use crate::ops::traffic::SendOptions;
use cuberoute_protocol::delivery::Mode;
use cuberoute_protocol::{NodeId, SendRequest};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A network condition on every link.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Condition {
    /// As the table prints it: `loss 1%`, `delay 10 ms ± 5 ms`, `none`.
    pub name: String,
    pub loss: f64,
    #[serde(serialize_with = "as_ms")]
    pub delay: Duration,
    #[serde(serialize_with = "as_ms")]
    pub jitter: Duration,
}

fn as_ms<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1e3)
}

impl Condition {
    pub fn none() -> Condition {
        Condition {
            name: "none".into(),
            loss: 0.0,
            delay: Duration::ZERO,
            jitter: Duration::ZERO,
        }
    }

    pub fn loss(share: f64) -> Condition {
        Condition {
            name: format!("loss {}%", share * 100.0),
            loss: share,
            ..Condition::none()
        }
    }

    pub fn delay(delay: Duration, jitter: Duration) -> Condition {
        Condition {
            name: format!(
                "delay {} ms ± {} ms",
                delay.as_secs_f64() * 1e3,
                jitter.as_secs_f64() * 1e3
            ),
            delay,
            jitter,
            ..Condition::none()
        }
    }
}

/// What the study sends under each condition.
#[derive(Clone, Debug)]
pub struct StudyConfig {
    pub conditions: Vec<Condition>,
    /// Sets per cell, and how many per second.
    pub sets: usize,
    pub rate: f64,
    /// How long each set is waited for (and a reliable set kept by its source).
    pub wait: Duration,
    pub seed: u64,
}

/// One cell of the table: a condition, a way of sending, what it gave.
#[derive(Clone, Debug, Serialize)]
pub struct Cell {
    pub condition: String,
    /// `k paths` or `single path`.
    pub paths: &'static str,
    pub reliable: bool,
    pub sets: u64,
    pub lost: u64,
    pub lost_share: f64,
    /// The first copy's latency (a reliable set: its delivery), of the sets delivered, in ms,
    /// from when the set was due (the sets go on a schedule).
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub mean_ms: f64,
    /// The mean k of the sets sent (1 for a single path).
    pub mean_k: f64,
}

/// No fault, then each loss, then the delay: the study's conditions.
pub fn conditions(losses: &[f64], delay: Duration, jitter: Duration) -> Vec<Condition> {
    let mut conditions = vec![Condition::none()];
    conditions.extend(
        losses
            .iter()
            .filter(|&&l| l > 0.0)
            .map(|&l| Condition::loss(l)),
    );
    if !delay.is_zero() {
        conditions.push(Condition::delay(delay, jitter));
    }
    conditions
}

/// Run every condition, each with the four ways of sending, on the cluster `client` reaches.
pub async fn run(
    client: &ClusterClient,
    harness: &dyn Harness,
    config: &StudyConfig,
) -> anyhow::Result<Vec<Cell>> {
    let nodes: Vec<NodeId> = client.manifest.nodes.iter().map(|n| n.id).collect();
    anyhow::ensure!(nodes.len() >= 2, "the study needs two nodes at least");
    let mut rng = StdRng::seed_from_u64(config.seed);
    let mut cells = Vec::new();
    for condition in &config.conditions {
        if condition.loss > 0.0 {
            harness.lose(condition.loss)?;
        }
        if !condition.delay.is_zero() || !condition.jitter.is_zero() {
            run::delay(harness, client, &nodes, condition.delay, condition.jitter).await?;
        }
        for (single, reliable) in [(false, false), (true, false), (false, true), (true, true)] {
            let seed = rng.random();
            cells.push(cell(client, &nodes, config, condition, (single, reliable), seed).await);
        }
        if condition.loss > 0.0 {
            harness.lose(0.0)?;
        }
        if !condition.delay.is_zero() || !condition.jitter.is_zero() {
            run::delay(harness, client, &nodes, Duration::ZERO, Duration::ZERO).await?;
        }
    }
    Ok(cells)
}

/// A set's first copy's latency in µs (if one came), and its k.
type Outcome = (Option<u64>, u32);

/// Send `config.sets` sets one way and judge them.
async fn cell(
    client: &ClusterClient,
    nodes: &[NodeId],
    config: &StudyConfig,
    condition: &Condition,
    (single, reliable): (bool, bool),
    seed: u64,
) -> Cell {
    let mut rng = StdRng::seed_from_u64(seed);
    // Each set's first copy's latency (if one came) and its k.
    let outcomes: Arc<Mutex<Vec<Outcome>>> = Arc::default();
    let mut stream = OpenLoop::new(tokio::time::Instant::now(), config.rate);
    let mut tasks = Vec::new();
    for n in 0..config.sets {
        let due = stream.next().await;
        let from = nodes[rng.random_range(0..nodes.len())];
        let to = loop {
            let to = nodes[rng.random_range(0..nodes.len())];
            if to != from {
                break to;
            }
        };
        let request = SendRequest {
            single,
            ..SendRequest::to(to)
        };
        let options = SendOptions {
            wait: Some(config.wait),
            // The study's sets live as long as they are waited for: a cell measures what
            // arrives within that time.
            life: Some(config.wait),
            mode: Mode {
                reliable,
                ..Mode::PLAIN
            },
            ..SendOptions::default()
        };
        let payload = format!("study #{n} {from}->{to}").into_bytes();
        let (client, outcomes) = (client.clone(), outcomes.clone());
        tasks.push(tokio::spawn(async move {
            // From when it was due.
            let late_us = due.late_us();
            let outcome = match client.send(from, request, payload, options).await {
                Ok(report) => (
                    report
                        .deliveries
                        .iter()
                        .map(|d| late_us + d.latency_us)
                        .min(),
                    report.k,
                ),
                Err(_) => (None, 0),
            };
            outcomes.lock().expect("outcomes").push(outcome);
        }));
    }
    for task in tasks {
        let _ = task.await;
    }
    let outcomes = outcomes.lock().expect("outcomes").clone();
    let latencies: Vec<u64> = outcomes.iter().filter_map(|o| o.0).collect();
    let sets = outcomes.len() as u64;
    let lost = sets - latencies.len() as u64;
    let p = Percentiles::of_us(latencies.iter().copied());
    Cell {
        condition: condition.name.clone(),
        paths: if single { "single path" } else { "k paths" },
        reliable,
        sets,
        lost,
        lost_share: lost as f64 / sets.max(1) as f64,
        p50_ms: p.p50_us / 1e3,
        p99_ms: p.p99_us / 1e3,
        p999_ms: p.p999_us / 1e3,
        mean_ms: p.mean_us / 1e3,
        mean_k: outcomes.iter().map(|o| f64::from(o.1)).sum::<f64>() / sets.max(1) as f64,
    }
}
