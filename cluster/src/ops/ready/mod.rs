//! The one readiness wait: until every node answers, every link is up, no sealing handshake is
//! in flight, no node takes a link for dead and, for containers, every container reports
//! healthy. `cluster up` (processes and containers), `demo`, `bench`
//! and `chaos run` (before it starts, and after it restarts crashed nodes) all wait here.
//! On a cluster of node hosts the rounds are brief ([`brief`]: a few bytes per process) until
//! one says the cluster may be ready, which a full round then confirms.

mod brief;

use crate::ClusterDir;
use crate::launch::run_state::RunState;
use crate::launch::runner::{self, Runner, Runners};
use crate::ops::cluster_client::{ClusterClient, links_up, links_up_of, may_be_up, revoked};
use cuberoute_protocol::NodeId;
use cuberoute_protocol::wire::control::NodeStatus;
use std::collections::{HashMap, HashSet};
use std::time::Duration;
// tokio's clock: the real one, or a simulation's (`cuberoute sim`).
use tokio::time::Instant;

/// How long each node may take to answer one round's status request.
const ROUND_TIMEOUT: Duration = Duration::from_secs(2);
/// The pause between rounds (short: `chaos run` measures how long a cluster takes to be ready
/// again by this wait).
const POLL: Duration = Duration::from_millis(50);

/// One round of the wait: what every node answered, and what runs them.
#[derive(Clone, Debug)]
pub struct Readiness {
    /// Every node's status, or why it gave none, in manifest order. A node whose process or
    /// container is known not to run is not asked.
    pub statuses: Vec<(NodeId, Result<NodeStatus, String>)>,
    pub link_ends_up: usize,
    pub link_ends: usize,
    /// The processes or containers, when this directory knows what runs the nodes (not, for
    /// instance, in Kubernetes).
    pub runners: Option<Runners>,
    /// Whether every container reports healthy (true for processes, and without runners).
    pub healthy: bool,
    /// Nodes whose process or container is known not to run, with why.
    pub dead: Vec<(NodeId, String)>,
}

impl Readiness {
    pub fn nodes(&self) -> usize {
        self.statuses.len()
    }

    pub fn answering(&self) -> usize {
        self.statuses.iter().filter(|(_, s)| s.is_ok()).count()
    }

    pub fn is_ready(&self) -> bool {
        self.answering() == self.nodes()
            && self.link_ends_up == self.link_ends
            && self.healthy
            && self.handshakes_in_flight() == 0
            && self.dead_links_known() == 0
    }

    /// Links some answering node still takes for dead (neither a revoked node's links nor
    /// what a revoked node knows: cut off, it hears no report): once every link is up, a report
    /// of one down is a few hops from being overtaken by its end's report of it up, and until it
    /// is, that node's sets go around a live link on fewer paths.
    pub fn dead_links_known(&self) -> usize {
        let revoked = revoked(&self.statuses);
        self.statuses
            .iter()
            .filter(|(id, _)| !revoked.contains(id))
            .filter_map(|(_, s)| s.as_ref().ok())
            .flat_map(|s| s.around.dead_links.iter())
            .filter(|&&(a, b)| may_be_up(a, b, &revoked))
            .collect::<HashSet<_>>()
            .len()
    }

    /// Sealing handshakes the answering nodes have in flight: a node that restarted is ready
    /// once the nodes it held sessions with moved to new ones (docs/security.md, "Replay").
    pub fn handshakes_in_flight(&self) -> u64 {
        self.statuses
            .iter()
            .filter_map(|(_, s)| s.as_ref().ok())
            .map(|s| s.sealing.handshakes_in_flight)
            .sum()
    }

    /// Nodes that do not answer or miss a link (not counting links of revoked nodes).
    pub fn not_ready(&self) -> Vec<NodeId> {
        let revoked = revoked(&self.statuses);
        self.statuses
            .iter()
            .filter(|(_, s)| {
                s.as_ref().map_or(true, |s| {
                    let (up, may) = links_up_of(s, &revoked);
                    up < may
                })
            })
            .map(|(id, _)| *id)
            .collect()
    }
}

/// What a round of the wait saw, in counts: for a progress display.
#[derive(Clone, Debug)]
pub struct Progress {
    pub nodes: usize,
    pub answering: usize,
    pub link_ends_up: usize,
    pub link_ends: usize,
    /// Whether every container reports healthy (true for processes).
    pub healthy: bool,
    /// Processes or containers running, when the directory knows what runs the nodes.
    pub running: Option<usize>,
}

impl Readiness {
    pub fn progress(&self) -> Progress {
        Progress {
            nodes: self.nodes(),
            answering: self.answering(),
            link_ends_up: self.link_ends_up,
            link_ends: self.link_ends,
            healthy: self.healthy,
            running: self.runners.as_ref().map(|r| r.alive()),
        }
    }
}

/// What runs the nodes, as a round sees it before asking them.
#[derive(Debug)]
struct Seen {
    runners: Option<Runners>,
    /// Whether every container reports healthy (true for processes, and without runners).
    healthy: bool,
    /// Nodes whose process or container is known not to run, with why.
    dead: Vec<(NodeId, String)>,
    /// Swarm tasks on their way: not asked (they would not answer), not dead either.
    starting: Vec<(NodeId, String)>,
}

impl Seen {
    fn now(client: &ClusterClient) -> anyhow::Result<Seen> {
        let runners = runner::inspect(&client.dir)?;
        let starting: Vec<(NodeId, String)> = runners.as_ref().map_or(Vec::new(), |r| {
            r.nodes
                .iter()
                .filter(|(_, r)| matches!(r, Runner::Starting(_)))
                .map(|(id, r)| (*id, format!("not asked: {}", r.describe())))
                .collect()
        });
        let (healthy, dead): (bool, Vec<(NodeId, String)>) = match &runners {
            None => (true, Vec::new()),
            Some(runners) => (
                !runners.state.in_containers() || runners.all_healthy(),
                runners
                    .nodes
                    .iter()
                    .filter(|(_, r)| r.is_dead())
                    .map(|(id, r)| (*id, Runner::describe(r).to_string()))
                    .collect(),
            ),
        };
        Ok(Seen {
            runners,
            healthy,
            dead,
            starting,
        })
    }
}

/// Why the wait gave up.
#[derive(Debug, thiserror::Error)]
pub enum NotReady {
    #[error("nodes are not running: {}", describe_dead(.0))]
    Dead(Vec<(NodeId, String)>),
    #[error(
        "the cluster is not ready within {timeout:?}: {answering} of {nodes} nodes answer, {up}/{total} link \
         ends up, all healthy: {healthy}, sealing handshakes in flight: {handshakes}, dead links still \
         known: {dead_links}; nodes not ready: {}",
        list(.not_ready)
    )]
    TimedOut {
        timeout: Duration,
        answering: usize,
        nodes: usize,
        up: usize,
        total: usize,
        healthy: bool,
        handshakes: u64,
        dead_links: usize,
        not_ready: Vec<NodeId>,
    },
    #[error("cannot tell what runs the nodes: {0:#}")]
    Runners(anyhow::Error),
}

/// The dead nodes by reason, each reason once with the first few of its nodes: a cluster of
/// 2,048 that could not start says so in a line, not in 2,048 parts.
fn describe_dead(dead: &[(NodeId, String)]) -> String {
    let mut reasons: Vec<(&str, Vec<NodeId>)> = Vec::new();
    for (id, why) in dead {
        match reasons.iter_mut().find(|(w, _)| *w == why.as_str()) {
            Some((_, nodes)) => nodes.push(*id),
            None => reasons.push((why, vec![*id])),
        }
    }
    let parts: Vec<String> = reasons
        .iter()
        .map(|(why, nodes)| match nodes.as_slice() {
            [one] => format!("{one} ({why})"),
            _ => format!("{} nodes ({why}): {}", nodes.len(), list(nodes)),
        })
        .collect();
    parts.join("; ")
}

fn list(nodes: &[NodeId]) -> String {
    const SHOWN: usize = 20;
    let mut all: Vec<String> = nodes.iter().take(SHOWN).map(NodeId::to_string).collect();
    if nodes.len() > SHOWN {
        all.push(format!("and {} more", nodes.len() - SHOWN));
    }
    all.join(", ")
}

/// One round: every runner's state, then the status of every node not known to be dead or
/// still starting (a node that does not answer is asked twice).
pub async fn check(client: &ClusterClient) -> anyhow::Result<Readiness> {
    full(client, Seen::now(client)?).await
}

/// A full round, after `seen`.
async fn full(client: &ClusterClient, seen: Seen) -> anyhow::Result<Readiness> {
    let Seen {
        runners,
        healthy,
        dead,
        starting,
    } = seen;
    let manifest: Vec<NodeId> = client.manifest.nodes.iter().map(|n| n.id).collect();
    let started: Vec<NodeId> = match runners.as_ref().map(|r| &r.state) {
        Some(RunState::Processes(state)) => state.processes.iter().map(|p| p.id).collect(),
        _ => Vec::new(),
    };
    let asked: Vec<NodeId> = ask_order(&manifest, &started)
        .into_iter()
        .filter(|id| !dead.iter().chain(&starting).any(|(d, _)| d == id))
        .collect();
    let mut answers = client.statuses_of(asked, ROUND_TIMEOUT).await;
    // A node that did not answer is asked once more, after the others: on a machine loaded
    // to saturation (1,024 daemons on two cores) a handshake can miss its time, and a second
    // try, among few, mostly does not.
    let silent: Vec<usize> = (0..answers.len())
        .filter(|&i| answers[i].1.is_err())
        .collect();
    if !silent.is_empty() {
        let again = client
            .statuses_each(
                silent.iter().map(|&i| answers[i].0).collect(),
                ROUND_TIMEOUT,
            )
            .await;
        for (i, answer) in silent.into_iter().zip(again) {
            answers[i] = answer;
        }
    }
    let mut answers: HashMap<NodeId, Result<NodeStatus, String>> = answers.into_iter().collect();
    let statuses: Vec<(NodeId, Result<NodeStatus, String>)> = manifest
        .iter()
        .map(|&id| {
            if dead.iter().any(|(d, _)| *d == id) {
                (id, Err("not asked: not running".to_string()))
            } else if let Some((_, why)) = starting.iter().find(|(d, _)| *d == id) {
                (id, Err(why.clone()))
            } else {
                let answer = answers.remove(&id).expect("one answer per node asked");
                (id, answer)
            }
        })
        .collect();
    let (link_ends_up, link_ends) = links_up(&statuses, &client.manifest);
    Ok(Readiness {
        statuses,
        link_ends_up,
        link_ends,
        runners,
        healthy,
        dead,
    })
}

/// The order in which a round asks the nodes of `manifest`: first those `started` names (the
/// processes of a local cluster, in the order they were started), then the rest in manifest
/// order. A node started last has had the least time to bring its links up: asked last, it
/// has had the most by then, and the first round more often finds the whole cluster ready
/// (asked in id order, a cluster started highest id first had its latest nodes asked first,
/// and every start of EH(5,5) took a second round, 0.65 s).
fn ask_order(manifest: &[NodeId], started: &[NodeId]) -> Vec<NodeId> {
    let known: HashSet<NodeId> = manifest.iter().copied().collect();
    let mut seen = HashSet::new();
    started
        .iter()
        .chain(manifest)
        .copied()
        .filter(|id| known.contains(id) && seen.insert(*id))
        .collect()
}

/// Poll until the cluster is ready; `on_round` sees every round (for a progress display).
/// Gives up at once when a node's process or container is not running, and after `timeout`.
/// Returns the ready round, whose statuses are a snapshot of the whole cluster. On node hosts
/// a round is brief until one may be ready; a full round confirms it (or not: brief again).
pub async fn wait_ready(
    client: &ClusterClient,
    timeout: Duration,
    on_round: &mut dyn FnMut(&Progress),
) -> Result<Readiness, NotReady> {
    let started = Instant::now();
    loop {
        let seen = Seen::now(client).map_err(NotReady::Runners)?;
        if !seen.dead.is_empty() {
            return Err(NotReady::Dead(seen.dead));
        }
        let not_ready = match brief::round(client, &seen, ROUND_TIMEOUT).await {
            Some(brief) if !brief.maybe_ready => {
                on_round(&brief.progress);
                let dead_links = brief.dead_links_known as usize;
                let handshakes = brief.handshakes_in_flight;
                timed_out(
                    timeout,
                    &brief.progress,
                    handshakes,
                    dead_links,
                    brief.not_ready,
                )
            }
            _ => {
                let round = full(client, seen).await.map_err(NotReady::Runners)?;
                let progress = round.progress();
                on_round(&progress);
                if round.is_ready() {
                    return Ok(round);
                }
                if !round.dead.is_empty() {
                    return Err(NotReady::Dead(round.dead));
                }
                let (handshakes, dead_links) =
                    (round.handshakes_in_flight(), round.dead_links_known());
                timed_out(
                    timeout,
                    &progress,
                    handshakes,
                    dead_links,
                    round.not_ready(),
                )
            }
        };
        if started.elapsed() >= timeout {
            return Err(not_ready);
        }
        tokio::time::sleep(POLL).await;
    }
}

/// What the wait says if it gives up after a round that saw `progress`, `handshakes` in flight,
/// `dead_links` known and the nodes `not_ready`.
fn timed_out(
    timeout: Duration,
    progress: &Progress,
    handshakes: u64,
    dead_links: usize,
    not_ready: Vec<NodeId>,
) -> NotReady {
    NotReady::TimedOut {
        timeout,
        answering: progress.answering,
        nodes: progress.nodes,
        up: progress.link_ends_up,
        total: progress.link_ends,
        healthy: progress.healthy,
        handshakes,
        dead_links,
        not_ready,
    }
}

/// How long `chaos restart` waits for the node it started to answer.
pub const RESTART_ANSWERS_WITHIN: Duration = Duration::from_secs(30);

/// After [`runner::restart`]: wait until node `id` answers ([`node_answers`], with the
/// operator's certificate of `dir`), for at most [`RESTART_ANSWERS_WITHIN`].
pub async fn restarted(dir: &ClusterDir, id: NodeId) -> anyhow::Result<NodeStatus> {
    let client = ClusterClient::open(dir)?;
    node_answers(&client, id, RESTART_ANSWERS_WITHIN).await
}

/// Poll until node `id`, just started again, answers a status request: its daemon is serving
/// (a send right after `chaos restart` is sealed after the node's start, which its recovery
/// handshake asks about). Gives up at once when its process or container is seen not to run,
/// and after `timeout`.
pub async fn node_answers(
    client: &ClusterClient,
    id: NodeId,
    timeout: Duration,
) -> anyhow::Result<NodeStatus> {
    let started = Instant::now();
    loop {
        let last = match client.status(id).await {
            Ok(status) => return Ok(status),
            Err(e) => e.to_string(),
        };
        if let Some(runners) = runner::inspect(&client.dir)?
            && let Some(runner) = runners.nodes.get(&id)
            && runner.is_dead()
        {
            anyhow::bail!(
                "node {} is not running: {}{}",
                client.name(id),
                runner.describe(),
                client
                    .dir
                    .last_log_line(id)
                    .map(|l| format!("; its log ends: {l}"))
                    .unwrap_or_default()
            );
        }
        if started.elapsed() >= timeout {
            anyhow::bail!(
                "node {} does not answer within {timeout:?}: {last}",
                client.name(id)
            );
        }
        tokio::time::sleep(POLL).await;
    }
}

/// How long to wait for a cluster of `nodes` nodes to come up: 30 s plus 100 ms per node.
pub fn default_timeout(nodes: u64) -> Duration {
    Duration::from_secs(30) + Duration::from_millis(100) * nodes as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuberoute_daemon::manifest::Manifest;
    use cuberoute_protocol::Topology;
    use cuberoute_protocol::wire::control::LinkStatus;

    pub(super) fn status(topology: Topology, id: u64, links_up: usize) -> NodeStatus {
        NodeStatus {
            id: NodeId(id),
            topology,
            pid: 1,
            incarnation: 1,
            uptime_ms: 1,
            links: topology
                .neighbours(NodeId(id))
                .enumerate()
                .map(|(i, neighbour)| LinkStatus {
                    neighbour,
                    up: i < links_up,
                    cut: false,
                    queued: 0,
                    written_unacknowledged: 0,
                    since_ms: 0,
                    frames_written: 0,
                    frames_received: 0,
                    frames_resent: 0,
                    drops: Default::default(),
                    transport: None,
                    dials: false,
                    redial: None,
                    suspected: false,
                    down: None,
                })
                .collect(),
            input_queued: 0,
            output_len: 0,
            output_lasts: false,
            counters: Default::default(),
            chaos: Default::default(),
            version: "test".into(),
            wire_version: cuberoute_protocol::wire::VERSION,
            config: Default::default(),
            buffered_bytes: 0,
            revoked: Vec::new(),
            revocation_serial: 0,
            io: Default::default(),
            sealing: Default::default(),
            around: Default::default(),
        }
    }

    fn round(statuses: Vec<(NodeId, Result<NodeStatus, String>)>, healthy: bool) -> Readiness {
        let up = statuses
            .iter()
            .filter_map(|(_, s)| s.as_ref().ok())
            .map(NodeStatus::links_up)
            .sum();
        Readiness {
            link_ends: 8,
            link_ends_up: up,
            statuses,
            runners: None,
            healthy,
            dead: Vec::new(),
        }
    }

    #[test]
    fn ready_means_every_node_answers_every_link_is_up_and_all_are_healthy() {
        let q2: Topology = "q:2".parse().unwrap();
        let all = |links: usize| -> Vec<_> {
            (0..4)
                .map(|id| (NodeId(id), Ok(status(q2, id, links))))
                .collect()
        };
        assert!(round(all(2), true).is_ready());
        assert!(round(all(2), true).not_ready().is_empty());
        assert!(
            !round(all(2), false).is_ready(),
            "a container is not healthy"
        );
        let one_link_short = round(all(1), true);
        assert!(!one_link_short.is_ready());
        assert_eq!(one_link_short.not_ready().len(), 4);
        let mut silent = all(2);
        silent[3].1 = Err("no answer".into());
        let silent = round(silent, true);
        assert!(!silent.is_ready());
        assert_eq!((silent.answering(), silent.nodes()), (3, 4));
        assert_eq!(silent.not_ready(), vec![NodeId(3)]);
        // Every link up, but a node still takes one for dead (its end's report of it up is on
        // its way): its sets would go around it on fewer paths.
        let mut stale = all(2);
        for (_, s) in stale.iter_mut().take(2) {
            s.as_mut().unwrap().around.dead_links = vec![(NodeId(0), NodeId(1))];
        }
        let stale = round(stale, true);
        assert_eq!(stale.dead_links_known(), 1, "each link once");
        assert!(!stale.is_ready());
        // What a revoked node knows is not waited for: cut off, it hears no report of a link
        // up again.
        let mut revoked_knows = all(2);
        for (id, s) in revoked_knows.iter_mut() {
            let s = s.as_mut().unwrap();
            s.revoked = vec![NodeId(3)];
            s.revocation_serial = 1;
            for link in &mut s.links {
                link.up = *id != NodeId(3) && link.neighbour != NodeId(3);
            }
        }
        revoked_knows[3].1.as_mut().unwrap().around.dead_links = vec![(NodeId(0), NodeId(1))];
        let revoked_knows = round(revoked_knows, true);
        assert_eq!(revoked_knows.dead_links_known(), 0);
    }

    /// After `cluster revoke`, the revoked node's links are down for good: a cluster whose
    /// other links are all up is ready.
    #[test]
    fn the_links_of_a_revoked_node_are_not_waited_for() {
        let q2: Topology = "q:2".parse().unwrap();
        let manifest = Manifest {
            topology: q2,
            nodes: (0..4)
                .map(|id| cuberoute_daemon::manifest::ManifestNode {
                    id: NodeId(id),
                    addr: "a".into(),
                    control: "c".into(),
                    metrics: None,
                })
                .collect(),
        };
        // Node 3 revoked: 0-1 and 0-2 are up; 1-3 and 2-3 are down.
        let statuses: Vec<_> = (0..4)
            .map(|id| {
                let mut s = status(q2, id, 2);
                for link in &mut s.links {
                    link.up = id != 3 && link.neighbour != NodeId(3);
                }
                (NodeId(id), Ok(s))
            })
            .collect();
        assert_eq!(links_up(&statuses, &manifest), (4, 8));
        assert!(round(statuses.clone(), true).not_ready().len() == 3);
        let revoked_three = |mut s: NodeStatus| {
            s.revoked = vec![NodeId(3)];
            s.revocation_serial = 1;
            s
        };
        let mut statuses: Vec<_> = statuses
            .into_iter()
            .map(|(id, s)| (id, s.map(revoked_three)))
            .collect();
        // One node still holds no list: the latest list any node holds counts.
        statuses[1].1.as_mut().unwrap().revoked.clear();
        statuses[1].1.as_mut().unwrap().revocation_serial = 0;
        assert_eq!(links_up(&statuses, &manifest), (4, 4));
        assert!(round(statuses.clone(), true).not_ready().is_empty());
        // A link that may be up and is not still counts.
        statuses[0].1.as_mut().unwrap().links[0].up = false;
        assert_eq!(links_up(&statuses, &manifest), (3, 4));
        assert_eq!(round(statuses, true).not_ready(), vec![NodeId(0)]);
    }

    #[test]
    fn a_round_asks_the_nodes_in_the_order_they_were_started_then_the_rest() {
        let ids = |v: &[u64]| v.iter().map(|&i| NodeId(i)).collect::<Vec<_>>();
        let manifest = ids(&[0, 1, 2, 3]);
        assert_eq!(ask_order(&manifest, &[]), manifest);
        assert_eq!(
            ask_order(&manifest, &ids(&[3, 2, 1, 0])),
            ids(&[3, 2, 1, 0])
        );
        // Restarted (recorded again at the end), unknown to the manifest, never started.
        assert_eq!(
            ask_order(&manifest, &ids(&[3, 9, 1, 3])),
            ids(&[3, 1, 0, 2])
        );
    }

    #[test]
    fn a_long_list_of_nodes_is_cut_short() {
        let late = NotReady::TimedOut {
            timeout: Duration::from_secs(1),
            answering: 0,
            nodes: 25,
            up: 0,
            total: 50,
            healthy: true,
            handshakes: 0,
            dead_links: 0,
            not_ready: (0..25).map(NodeId).collect(),
        };
        let text = late.to_string();
        assert!(text.ends_with("17, 18, 19, and 5 more"), "{text}");
        let dead = NotReady::Dead(vec![(NodeId(3), "process exited".into())]);
        assert_eq!(
            dead.to_string(),
            "nodes are not running: 3 (process exited)"
        );
        let mut many: Vec<(NodeId, String)> = (0..2048)
            .map(|i| (NodeId(i), "process exited".into()))
            .collect();
        many.push((NodeId(7), "killed by signal 9".into()));
        assert_eq!(
            NotReady::Dead(many).to_string(),
            "nodes are not running: 2048 nodes (process exited): 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, \
             10, 11, 12, 13, 14, 15, 16, 17, 18, 19, and 2028 more; 7 (killed by signal 9)"
        );
    }
}
