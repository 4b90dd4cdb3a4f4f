//! Following what nodes see happen: one long-polling loop per node over its notice ring
//! (`Request::Notices`), merged into one stream. A node that does not answer is reported once,
//! asked again every second, and reported back when it answers; a restarted node is followed
//! from its new ring's present.

use crate::ops::cluster_client::{ClusterClient, FAN_OUT};
use cuberoute_protocol::NodeId;
use cuberoute_protocol::wire::control::{Notice, Request, Response};
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
        let answer = tokio::time::timeout(WAIT + RETRY * 5, cluster.request(node, &request)).await;
        slot.take();
        let failed: Result<(), String> = match answer {
            Ok(Ok(Response::Notices {
                notices,
                next,
                missed,
            })) => {
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
            Ok(Ok(Response::Error(e))) => Err(e.to_string()),
            Ok(Ok(other)) => Err(format!("unexpected answer {other:?}")),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err(format!("no answer within {:?}", WAIT + RETRY * 5)),
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

async fn send(out: &mpsc::Sender<(NodeId, Watched)>, node: NodeId, watched: Watched) {
    // A closed stream ends `follow`, which aborts this task.
    let _ = out.send((node, watched)).await;
}
