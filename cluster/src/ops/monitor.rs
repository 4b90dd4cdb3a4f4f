//! Following what nodes see happen: one long-polling loop per node over its notice ring
//! (`Request::Notices`), merged into one stream. A node that does not answer is reported once,
//! asked again every second, and reported back when it answers; a restarted node is followed
//! from its new ring's present. [`NodeVerdicts`] says from those notices when a node is down:
//! every neighbour of it that is followed and answers saw its link to it go down.

use crate::ops::cluster_client::{ClusterClient, FAN_OUT};
use cuberoute_protocol::wire::control::{Happening, Notice, Request, Response};
use cuberoute_protocol::{NodeId, Topology};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Semaphore, mpsc};

/// How long one request waits for a notice before asking again.
const WAIT: Duration = Duration::from_secs(10);
/// How long an unreachable node is left before it is asked again.
const RETRY: Duration = Duration::from_secs(1);
/// The most notices one answer carries.
const BATCH: u32 = 512;

/// What following one node yields.
#[derive(Clone, Debug, PartialEq)]
pub enum Watched {
    Notice(Notice),
    /// Notices the node's ring overwrote before they were read (the follower fell behind).
    Missed(u64),
    /// The node does not answer (it crashed, or its address is cut off), and why.
    Unreachable(String),
    /// The node answers again, after [`Watched::Unreachable`].
    Back,
    /// The node answered for the first time: from now on nothing it notes is missed.
    Following,
}

/// Follow `nodes`, sending what each yields to `out`, until `out` is closed. Only
/// [`FAN_OUT`] nodes at a time make their first connection (see [`crate::ops::cluster_client`]).
pub async fn follow(
    cluster: &ClusterClient,
    nodes: &[NodeId],
    out: mpsc::Sender<(NodeId, Watched)>,
) {
    let first_connections = Arc::new(Semaphore::new(FAN_OUT));
    let follows = nodes.iter().map(|&node| {
        let (cluster, out, first) = (cluster.clone(), out.clone(), first_connections.clone());
        tokio::spawn(async move { follow_one(&cluster, node, &out, &first).await })
    });
    let tasks: Vec<_> = follows.collect();
    out.closed().await;
    for task in tasks {
        task.abort();
    }
}

async fn follow_one(
    cluster: &ClusterClient,
    node: NodeId,
    out: &mpsc::Sender<(NodeId, Watched)>,
    first_connections: &Semaphore,
) {
    let mut after = u64::MAX;
    let (mut unreachable, mut following) = (false, false);
    let mut slot = Some(first_connections.acquire().await);
    loop {
        // The first request returns at once: from its answer on, nothing is missed.
        let request = Request::Notices {
            after,
            max: BATCH,
            wait_ms: if following {
                WAIT.as_millis() as u32
            } else {
                0
            },
        };
        // A long poll to a process that exits would wait out its timeout: the launcher's
        // record of the process says so sooner.
        let answer = tokio::select! {
            answer = tokio::time::timeout(WAIT + RETRY * 5, cluster.request(node, &request)) => Some(answer),
            () = exited(cluster, node) => None,
        };
        slot.take();
        let failed: Result<(), String> = match answer {
            None => Err("its process exited".to_string()),
            Some(Ok(Ok(Response::Notices {
                notices,
                next,
                missed,
            }))) => {
                if !following {
                    following = true;
                    send(out, node, Watched::Following).await;
                }
                if unreachable {
                    unreachable = false;
                    send(out, node, Watched::Back).await;
                }
                if missed > 0 {
                    send(out, node, Watched::Missed(missed)).await;
                }
                for notice in notices {
                    send(out, node, Watched::Notice(notice)).await;
                }
                after = next;
                continue;
            }
            Some(Ok(Ok(Response::Error(e)))) => Err(e.to_string()),
            Some(Ok(Ok(other))) => Err(format!("unexpected answer {other:?}")),
            Some(Ok(Err(e))) => Err(e.to_string()),
            Some(Err(_)) => Err(format!("no answer within {:?}", WAIT + RETRY * 5)),
        };
        if let Err(why) = failed {
            if !unreachable {
                unreachable = true;
                send(out, node, Watched::Unreachable(why)).await;
            }
            // A restarted node numbers its notices from 0 again: follow it from its present.
            after = u64::MAX;
            tokio::time::sleep(RETRY).await;
        }
    }
}

/// How often a follower looks whether the process of the node it waits on has exited.
const EXIT_LOOK: Duration = Duration::from_millis(500);

/// Once the launcher of this local cluster knows `node`'s process exited. Never, for
/// containers and clusters started elsewhere.
async fn exited(cluster: &ClusterClient, node: NodeId) {
    loop {
        tokio::time::sleep(EXIT_LOOK).await;
        if cluster.known_down(node).is_some() {
            return;
        }
    }
}

async fn send(out: &mpsc::Sender<(NodeId, Watched)>, node: NodeId, watched: Watched) {
    // A closed stream ends `follow`, which aborts this task.
    let _ = out.send((node, watched)).await;
}

/// A node's verdict changed, by the notices of its neighbours.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeChange {
    /// Every neighbour of `node` that is followed and answers saw its link to it go down:
    /// who saw it, and when (its clock's `at_ms`), in the order they said so.
    Down {
        node: NodeId,
        seen_by: Vec<(NodeId, u64)>,
    },
    /// A node taken for down has a link up again (`seen_by` saw it at `at_ms`), or answers.
    Up {
        node: NodeId,
        seen_by: NodeId,
        at_ms: u64,
    },
}

/// Which nodes are down, as the notices of the nodes followed say: the one place `monitor`
/// decides it. A node is down once every neighbour of it that is followed and answers has
/// noted its link to it down since it was last up (at least one neighbour); an unreachable
/// neighbour (itself down, say) is not waited for. Up again at its first link up, or when it
/// answers after not answering.
#[derive(Debug)]
pub struct NodeVerdicts {
    topology: Topology,
    followed: BTreeSet<NodeId>,
    unreachable: BTreeSet<NodeId>,
    /// For each node, the neighbours that saw their link to it down, and when.
    seen_down: BTreeMap<NodeId, Vec<(NodeId, u64)>>,
    down: BTreeSet<NodeId>,
}

impl NodeVerdicts {
    pub fn new(topology: Topology, followed: &[NodeId]) -> NodeVerdicts {
        NodeVerdicts {
            topology,
            followed: followed.iter().copied().collect(),
            unreachable: BTreeSet::new(),
            seen_down: BTreeMap::new(),
            down: BTreeSet::new(),
        }
    }

    /// Whether `node` is down now.
    pub fn is_down(&self, node: NodeId) -> bool {
        self.down.contains(&node)
    }

    /// Take what following `from` yielded; the verdicts it changed.
    pub fn watched(&mut self, from: NodeId, watched: &Watched) -> Vec<NodeChange> {
        let mut changes = Vec::new();
        match watched {
            Watched::Notice(Notice {
                what: Happening::LinkDown { neighbour, .. },
                at_ms,
                ..
            }) => {
                let seen = self.seen_down.entry(*neighbour).or_default();
                if !seen.iter().any(|(n, _)| *n == from) {
                    seen.push((from, *at_ms));
                }
                changes.extend(self.judge(*neighbour));
            }
            Watched::Notice(Notice {
                what: Happening::LinkUp { neighbour },
                at_ms,
                ..
            }) => {
                if let Some(seen) = self.seen_down.get_mut(neighbour) {
                    seen.retain(|(n, _)| *n != from);
                }
                if self.down.remove(neighbour) {
                    self.seen_down.remove(neighbour);
                    changes.push(NodeChange::Up {
                        node: *neighbour,
                        seen_by: from,
                        at_ms: *at_ms,
                    });
                }
            }
            Watched::Unreachable(_) => {
                self.unreachable.insert(from);
                // Its neighbours no longer wait for its word.
                let around: Vec<NodeId> = self.topology.neighbours(from).collect();
                for n in around {
                    changes.extend(self.judge(n));
                }
            }
            Watched::Back => {
                self.unreachable.remove(&from);
                if self.down.remove(&from) {
                    self.seen_down.remove(&from);
                    changes.push(NodeChange::Up {
                        node: from,
                        seen_by: from,
                        at_ms: now_ms(),
                    });
                }
            }
            Watched::Notice(_) | Watched::Missed(_) | Watched::Following => {}
        }
        changes
    }

    /// `node` is down if every neighbour that is followed and answers saw its link go down.
    fn judge(&mut self, node: NodeId) -> Option<NodeChange> {
        if self.down.contains(&node) {
            return None;
        }
        let seen = self.seen_down.get(&node)?;
        if seen.is_empty() {
            return None;
        }
        let all = self
            .topology
            .neighbours(node)
            .filter(|n| self.followed.contains(n) && !self.unreachable.contains(n))
            .all(|n| seen.iter().any(|(s, _)| *s == n));
        all.then(|| {
            self.down.insert(node);
            NodeChange::Down {
                node,
                seen_by: seen.clone(),
            }
        })
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn down(neighbour: u64, at_ms: u64) -> Watched {
        Watched::Notice(Notice {
            index: 0,
            at_ms,
            what: Happening::LinkDown {
                neighbour: NodeId(neighbour),
                why: "taken for dead".into(),
            },
        })
    }

    fn up(neighbour: u64) -> Watched {
        Watched::Notice(Notice {
            index: 0,
            at_ms: 9,
            what: Happening::LinkUp {
                neighbour: NodeId(neighbour),
            },
        })
    }

    #[test]
    fn a_node_is_down_once_every_neighbour_saw_its_link_go_down_and_up_at_its_first_link_up() {
        let q3: Topology = "q:3".parse().expect("a topology");
        let all: Vec<NodeId> = q3.nodes().collect();
        let mut v = NodeVerdicts::new(q3, &all);
        // Node 0's neighbours are 1, 2 and 4.
        assert_eq!(v.watched(NodeId(1), &down(0, 10)), vec![]);
        assert_eq!(v.watched(NodeId(2), &down(0, 11)), vec![]);
        // A link down elsewhere says nothing of node 0.
        assert_eq!(v.watched(NodeId(5), &down(7, 11)), vec![]);
        assert_eq!(
            v.watched(NodeId(4), &down(0, 12)),
            vec![NodeChange::Down {
                node: NodeId(0),
                seen_by: vec![(NodeId(1), 10), (NodeId(2), 11), (NodeId(4), 12)],
            }]
        );
        assert!(v.is_down(NodeId(0)));
        // Said once.
        assert_eq!(v.watched(NodeId(4), &down(0, 13)), vec![]);
        assert_eq!(
            v.watched(NodeId(2), &up(0)),
            vec![NodeChange::Up {
                node: NodeId(0),
                seen_by: NodeId(2),
                at_ms: 9
            }]
        );
        assert!(!v.is_down(NodeId(0)));
    }

    #[test]
    fn an_unreachable_neighbour_is_not_waited_for_and_an_unfollowed_one_never() {
        let q3: Topology = "q:3".parse().expect("a topology");
        // Node 4 is not followed.
        let followed: Vec<NodeId> = q3.nodes().filter(|n| n.0 != 4).collect();
        let mut v = NodeVerdicts::new(q3, &followed);
        assert_eq!(v.watched(NodeId(1), &down(0, 10)), vec![]);
        // Node 2 does not answer (down with node 0, say): node 1's word is enough.
        let changes = v.watched(NodeId(2), &Watched::Unreachable("no answer".into()));
        assert_eq!(
            changes,
            vec![NodeChange::Down {
                node: NodeId(0),
                seen_by: vec![(NodeId(1), 10)],
            }]
        );
    }
}
