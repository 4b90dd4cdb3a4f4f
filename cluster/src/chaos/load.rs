//! A chaos run's traffic: sets between random pairs on one schedule from the run's start to
//! its end ([`OpenLoop`]), whatever the cluster or the run does meanwhile (injecting faults,
//! repairing the network, restarting nodes). Which pairs, and how a set is judged, follow the
//! run's phase at the time the set is due ([`Policy`]); the run changes it as it goes.
//!
//! Each set is a task of its own that waits for what arrives and judges it
//! ([`SetResult::judge`]). Its latency counts from when it was due. A fault-free set still
//! under way when the faults begin is judged as one of the phase with faults: a set is
//! fault-free only if no fault touched it.

use crate::chaos::judge::SetResult;
use crate::chaos::scenario::{Phase, Progress};
use crate::ops::cluster_client::ClusterClient;
use crate::ops::open_loop::{Due, OpenLoop};
use crate::ops::traffic::SendOptions;
use cuberoute_protocol::delivery::Mode;
use cuberoute_protocol::{NodeId, SendRequest, Topology};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// What every set of a run is sent with.
#[derive(Clone, Copy, Debug)]
pub(super) struct Load {
    pub(super) rate: f64,
    /// How long a set is waited for (a reliable set: its whole life).
    pub(super) wait: Duration,
    pub(super) mode: Mode,
    /// Sent without the end-to-end seal.
    pub(super) clear: bool,
    /// Pad each payload with random bytes up to this length.
    pub(super) payload_bytes: usize,
    pub(super) seed: u64,
}

/// Who sends to whom now, and how a set sent now is judged.
#[derive(Clone, Debug)]
pub(super) struct Policy {
    pub(super) phase: Phase,
    pub(super) from: Vec<NodeId>,
    pub(super) to: Vec<NodeId>,
    /// Relays forge now: a payload that differs is forged, not corrupted.
    pub(super) forging: bool,
}

/// What the sender, the sets' tasks and the run share.
struct Shared {
    /// `None`: the sender stops before its next set.
    policy: Mutex<Option<Arc<Policy>>>,
    /// Set when the faults begin: whether relays forge in the run.
    faults_began: Mutex<Option<bool>>,
    results: Mutex<Vec<SetResult>>,
    progress: Arc<Mutex<Progress>>,
}

/// The sender's work when it stopped: the sets' tasks, and what went in each second.
struct Sent {
    tasks: Vec<JoinHandle<()>>,
    per_second: Vec<u64>,
}

/// The traffic of a run under way.
pub(super) struct Traffic {
    shared: Arc<Shared>,
    sender: JoinHandle<Sent>,
    /// The start of the run, the clock of the report's timeline and of the schedule.
    pub(super) t0: Instant,
}

/// What the traffic did, once stopped.
pub(super) struct Done {
    pub(super) results: Vec<SetResult>,
    /// Sets sent in each second of the run (the last one a part of a second).
    pub(super) sent_per_second: Vec<u64>,
}

impl Traffic {
    /// Start sending at `load.rate` from now, as `policy` says.
    pub(super) fn start(
        client: ClusterClient,
        load: Load,
        policy: Policy,
        progress: Arc<Mutex<Progress>>,
    ) -> Traffic {
        progress.lock().expect("progress").phase = Some(policy.phase);
        let shared = Arc::new(Shared {
            policy: Mutex::new(Some(Arc::new(policy))),
            faults_began: Mutex::new(None),
            results: Mutex::new(Vec::new()),
            progress,
        });
        let t0 = Instant::now();
        let sender = tokio::spawn(send_on_schedule(client, load, shared.clone(), t0));
        Traffic { shared, sender, t0 }
    }

    /// From the next set on, send as `policy` says.
    pub(super) fn follow(&self, policy: Policy) {
        self.shared.progress.lock().expect("progress").phase = Some(policy.phase);
        *self.shared.policy.lock().expect("policy") = Some(Arc::new(policy));
    }

    /// From the next set on, relays forge no more: a payload that differs is corrupted.
    pub(super) fn stop_forging(&self) {
        let mut policy = self.shared.policy.lock().expect("policy");
        if let Some(now) = policy.as_ref() {
            *policy = Some(Arc::new(Policy {
                forging: false,
                ..Policy::clone(now)
            }));
        }
    }

    /// The faults begin now (relays among them forge, or not): sets still under way are
    /// theirs.
    pub(super) fn faults_begin(&self, forging: bool) {
        *self.shared.faults_began.lock().expect("faults") = Some(forging);
    }

    /// Stop sending, wait for every set sent to end, and say what they became.
    pub(super) async fn finish(self) -> anyhow::Result<Done> {
        *self.shared.policy.lock().expect("policy") = None;
        let sent = self.sender.await?;
        for task in sent.tasks {
            task.await?;
        }
        let results = std::mem::take(&mut *self.shared.results.lock().expect("results"));
        Ok(Done {
            results,
            sent_per_second: sent.per_second,
        })
    }
}

/// The sender: a set each time one is due, between a random pair the policy allows, until
/// the policy is taken away.
async fn send_on_schedule(
    client: ClusterClient,
    load: Load,
    shared: Arc<Shared>,
    t0: Instant,
) -> Sent {
    let topology = client.manifest.topology;
    let mut rng = StdRng::seed_from_u64(load.seed);
    let mut stream = OpenLoop::new(t0, load.rate);
    let mut tasks = Vec::new();
    loop {
        stream.wait().await;
        let Some(policy) = shared.policy.lock().expect("policy").clone() else {
            break;
        };
        let due = stream.take();
        let Some((from, to)) = pair(&policy, &mut rng) else {
            continue;
        };
        let n = due.n;
        let mut payload = format!(
            "chaos {:?} #{n} {from}->{to} {}",
            policy.phase,
            rng.random::<u32>()
        )
        .into_bytes();
        while payload.len() < load.payload_bytes {
            payload.push(rng.random());
        }
        shared.progress.lock().expect("progress").sets_sent += 1;
        let (client, shared) = (client.clone(), shared.clone());
        let set = SetOptions {
            load,
            phase: policy.phase,
            forging: policy.forging,
            sent_ms: ms_between(t0, due.at),
            due,
        };
        tasks.push(tokio::spawn(async move {
            let result = one_set(&client, topology, (from, to), payload, set, &shared).await;
            {
                let mut p = shared.progress.lock().expect("progress");
                p.sets_done += 1;
                p.copies_delivered += u64::from(result.delivered);
            }
            shared.results.lock().expect("results").push(result);
        }));
    }
    Sent {
        tasks,
        per_second: stream.sent_per_second().to_vec(),
    }
}

/// A random source of `policy.from` and another node of `policy.to`, if there are two.
fn pair(policy: &Policy, rng: &mut StdRng) -> Option<(NodeId, NodeId)> {
    if policy.from.is_empty() || policy.to.iter().all(|&t| policy.from == [t]) {
        return None;
    }
    loop {
        let from = policy.from[rng.random_range(0..policy.from.len())];
        let to = policy.to[rng.random_range(0..policy.to.len())];
        if to != from {
            return Some((from, to));
        }
    }
}

/// One set as it was due.
#[derive(Clone, Copy)]
struct SetOptions {
    load: Load,
    phase: Phase,
    forging: bool,
    due: Due,
    sent_ms: f64,
}

/// Send one set, wait for what arrives, and judge it.
async fn one_set(
    client: &ClusterClient,
    topology: Topology,
    (from, to): (NodeId, NodeId),
    payload: Vec<u8>,
    set: SetOptions,
    shared: &Shared,
) -> SetResult {
    let request = SendRequest::to(to);
    let expected = request
        .route_system(topology, from)
        .ok()
        .map(|system| system.paths);
    let options = SendOptions {
        trace: true,
        wait: Some(set.load.wait),
        // A reliable set is waited for as long as it lives.
        life: Some(set.load.wait),
        mode: set.load.mode,
        clear: set.load.clear,
    };
    let k = expected.as_ref().map_or(0, |paths| paths.len() as u32);
    let mut result = SetResult::sent((set.phase, set.sent_ms), (from, to), &payload, k);
    let Some(expected) = expected else {
        // Distinct nodes of the topology always have paths: a bug of ours, counted.
        result.failed = true;
        return result;
    };
    let late_us = set.due.late_us();
    let sent = client.send(from, request, payload, options).await;
    // A fault-free set the faults began under is theirs.
    let mut forging = set.forging;
    if set.phase == Phase::FaultFree {
        if let Some(relays_forge) = *shared.faults_began.lock().expect("faults") {
            result.phase = Phase::WithFaults;
            forging = relays_forge;
        }
    }
    match sent {
        Ok(report) => {
            result.judge(topology, &report, &expected, set.load.mode, forging);
            // From when it was due, not from when it could be sent.
            for latency in &mut result.latencies_us {
                *latency += late_us;
            }
            result.late_us = late_us;
        }
        Err(e) => result.failed(e),
    }
    result
}

/// ms from `t0` to `at` on the run's clock.
fn ms_between(t0: Instant, at: Instant) -> f64 {
    at.saturating_duration_since(t0).as_secs_f64() * 1e3
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(from: &[u64], to: &[u64]) -> Policy {
        Policy {
            phase: Phase::FaultFree,
            from: from.iter().map(|&n| NodeId(n)).collect(),
            to: to.iter().map(|&n| NodeId(n)).collect(),
            forging: false,
        }
    }

    #[test]
    fn pairs_are_distinct_nodes_the_policy_allows_or_none() {
        let mut rng = StdRng::seed_from_u64(1);
        for _ in 0..200 {
            let (from, to) = pair(&policy(&[1, 2], &[2, 3]), &mut rng).expect("a pair");
            assert!([1, 2].contains(&from.0) && [2, 3].contains(&to.0) && from != to);
        }
        assert_eq!(pair(&policy(&[2], &[2]), &mut rng), None);
        assert_eq!(pair(&policy(&[], &[1, 2]), &mut rng), None);
        assert_eq!(pair(&policy(&[1], &[]), &mut rng), None);
    }
}
