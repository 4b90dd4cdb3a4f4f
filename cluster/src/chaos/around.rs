//! Routing around dead nodes and links, judged (issue 48, goal 4): how long until every live node
//! knew of every crash and cut of the run ([`detection`], by asking the nodes what they know),
//! and what the sets sent before the faults, during them until the news settled (known, and
//! the settling time after which a source may move the paths the faults left whole), after
//! then, and after the repair became ([`AroundReport`]): copies delivered per set against the most disjoint live
//! paths the graph without the faults has (its max flow, computed here with the protocol's
//! [`live::around`]), every set's delivered paths checked disjoint and live, and the latency of
//! the first copy (of the set, in a delivery mode) at p50 and p99.

use super::judge::{SetResult, internally_disjoint};
use super::scenario::Phase;
use super::schedule::Schedule;
use crate::ops::cluster_client::ClusterClient;
use crate::ops::percentiles::Percentiles;
use cuberoute_protocol::paths::live::{self, Faults};
use cuberoute_protocol::routing::down::DownLimits;
use cuberoute_protocol::{NodeId, Topology};
use serde::Serialize;
use std::collections::BTreeSet;
use std::time::Duration;
use tokio::time::Instant;

/// How often the nodes are asked what they know while the faults are in force.
const ASK_EVERY: Duration = Duration::from_millis(200);

/// The sets of one stretch of the run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct AroundPhase {
    pub sets: u64,
    /// Copies (distinct paths) delivered per set, on average (plain sets).
    pub copies_per_set: f64,
    /// The max flow between the set's ends, on average: what the graph without the faults
    /// allows.
    pub max_flow_per_set: f64,
    /// Sets that got a copy on as many paths as the max flow (plain sets).
    pub sets_on_max_flow: u64,
    /// Sets whose delivered paths all avoid the dead nodes and links and share no inner node.
    pub sets_on_disjoint_live_paths: u64,
    /// Copies delivered on a path around dead links (not the construction's).
    pub copies_rerouted: u64,
    pub latency: Percentiles,
}

/// What routing around did in a run with crashes or cuts.
#[derive(Clone, Debug, Default, Serialize)]
pub struct AroundReport {
    /// When the faults were injected, and when every live node first knew of every dead link
    /// of them (ms on the run's clock); `None`: not within the phase.
    pub faults_at_ms: f64,
    pub known_at_ms: Option<f64>,
    /// `known_at_ms` and the settling time ([`DownLimits::settle_us`]): from then on every
    /// source may take the max flow. `until_known` and `after_known` are split here.
    pub settled_at_ms: Option<f64>,
    /// When the phase with faults ended and the repair began: the sets sent from then on
    /// (the traffic goes on while crashed nodes restart) are left out of `after_known`, since
    /// their sources learn of links coming back as they go.
    pub ended_at_ms: f64,
    /// The links the faults killed: those of the crashed nodes to live ones, and the cut ones.
    pub dead_links: Vec<(u64, u64)>,
    pub fault_free: AroundPhase,
    pub until_known: AroundPhase,
    pub after_known: AroundPhase,
    pub after_faults: AroundPhase,
}

/// The links a schedule kills, each once with its lower end first: every link of a crashed node
/// to a live one (the live end reports it), and every cut link.
pub fn dead_links(topology: Topology, schedule: &Schedule) -> BTreeSet<(NodeId, NodeId)> {
    let mut links = BTreeSet::new();
    for &c in &schedule.crashed {
        for n in topology.neighbours(c) {
            if !schedule.crashed.contains(&n) {
                links.insert((c.min(n), c.max(n)));
            }
        }
    }
    for &(a, b) in &schedule.cut {
        links.insert((a.min(b), a.max(b)));
    }
    links
}

/// Ask every node of `alive` what dead links it knows of, every [`ASK_EVERY`], until each
/// knows all of `dead` or `within` has passed: when that was, in ms since `t0`.
pub async fn detection(
    client: &ClusterClient,
    alive: &[NodeId],
    dead: &BTreeSet<(NodeId, NodeId)>,
    t0: Instant,
    within: Duration,
) -> Option<f64> {
    if dead.is_empty() {
        return None;
    }
    let until = Instant::now() + within;
    while Instant::now() < until {
        let statuses = client.statuses(Duration::from_secs(2)).await;
        let everyone_knows = alive.iter().all(|id| {
            statuses
                .iter()
                .find(|(n, _)| n == id)
                .and_then(|(_, s)| s.as_ref().ok())
                .is_some_and(|s| dead.iter().all(|l| s.around.dead_links.contains(l)))
        });
        if everyone_knows {
            return Some(t0.elapsed().as_secs_f64() * 1e3);
        }
        tokio::time::sleep(ASK_EVERY).await;
    }
    None
}

impl AroundReport {
    /// Judge `results` against the `schedule`'s faults, injected at `faults_at_ms`, known
    /// everywhere at `known_at_ms`, and repaired from `ended_at_ms` on.
    pub(super) fn of(
        topology: Topology,
        schedule: &Schedule,
        results: &[SetResult],
        (faults_at_ms, known_at_ms, ended_at_ms): (f64, Option<f64>, f64),
    ) -> AroundReport {
        let dead = dead_links(topology, schedule);
        let mut faults = Faults::new();
        for &c in &schedule.crashed {
            faults.node(c);
        }
        for &(a, b) in &dead {
            faults.link(a, b);
        }
        let none = Faults::new();
        let stretch = |keep: &dyn Fn(&SetResult) -> bool, faults: &Faults| {
            phase(topology, faults, results.iter().filter(|r| keep(r)))
        };
        let settled_at_ms =
            known_at_ms.map(|known| known + DownLimits::default().settle_us as f64 / 1e3);
        let known = settled_at_ms.unwrap_or(f64::INFINITY);
        AroundReport {
            faults_at_ms,
            known_at_ms,
            settled_at_ms,
            ended_at_ms,
            dead_links: dead.iter().map(|&(a, b)| (a.0, b.0)).collect(),
            fault_free: stretch(&|r| r.phase == Phase::FaultFree, &none),
            until_known: stretch(
                &|r| r.phase == Phase::WithFaults && r.sent_ms < known,
                &faults,
            ),
            after_known: stretch(
                &|r| r.phase == Phase::WithFaults && r.sent_ms >= known && r.sent_ms < ended_at_ms,
                &faults,
            ),
            after_faults: stretch(&|r| r.phase == Phase::AfterFaults, &none),
        }
    }
}

fn phase<'a>(
    topology: Topology,
    faults: &Faults,
    results: impl Iterator<Item = &'a SetResult>,
) -> AroundPhase {
    let mut p = AroundPhase::default();
    let (mut copies, mut flows) = (0u64, 0u64);
    let mut latencies = Vec::new();
    for r in results.filter(|r| !r.failed) {
        p.sets += 1;
        let flow = live::around(
            topology,
            r.from,
            r.to,
            faults,
            (&[], live::Kept::MayMove),
            live::BUDGET,
        )
        .len() as u64;
        flows += flow;
        let distinct: BTreeSet<&Vec<NodeId>> = r.paths.iter().collect();
        copies += distinct.len() as u64;
        p.sets_on_max_flow += u64::from(distinct.len() as u64 >= flow);
        let paths: Vec<Vec<NodeId>> = distinct.into_iter().cloned().collect();
        let live = paths.iter().all(|path| !faults.breaks(path));
        p.sets_on_disjoint_live_paths += u64::from(live && internally_disjoint(&paths));
        p.copies_rerouted += u64::from(r.rerouted);
        if let Some(first) = r.latencies_us.iter().min() {
            latencies.push(*first);
        }
    }
    if p.sets > 0 {
        p.copies_per_set = copies as f64 / p.sets as f64;
        p.max_flow_per_set = flows as f64 / p.sets as f64;
    }
    p.latency = Percentiles::of_us(latencies);
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crash_kills_its_links_to_live_nodes_and_a_cut_its_own() {
        let q3: Topology = "q:3".parse().unwrap();
        let schedule = Schedule {
            crashed: vec![NodeId(0), NodeId(1)],
            cut: vec![(NodeId(7), NodeId(6))],
        };
        let dead: Vec<(u64, u64)> = dead_links(q3, &schedule)
            .into_iter()
            .map(|(a, b)| (a.0, b.0))
            .collect();
        // 0-1 joins two crashed nodes: nobody alive reports it.
        assert_eq!(dead, [(0, 2), (0, 4), (1, 3), (1, 5), (6, 7)]);
    }
}
