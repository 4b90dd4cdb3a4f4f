//! A brief round of the readiness wait, for clusters of node hosts: one
//! `Request::HostReadiness` per process, answered in a few bytes whatever its number of nodes,
//! where a full round carries every node's whole status (Q_14's two processes: 16,384 statuses
//! a round, most of the launcher's CPU during a start). A brief round can only say "not yet"
//! or "maybe": the wait confirms a "maybe" by a full round, whose statuses it returns.

use super::{Progress, Seen};
use crate::ops::cluster_client::{ClusterClient, ask_process, link_ends_may_be_up, links_up_of};
use cuberoute_daemon::manifest::Manifest;
use cuberoute_protocol::NodeId;
use cuberoute_protocol::wire::control::{HOST_READINESS_NAMED, HostReadiness, NodeStatus};
use futures_util::future::join_all;
use std::collections::{BTreeSet, HashSet};
use std::time::Duration;

/// What a brief round saw.
#[derive(Clone, Debug)]
pub(super) struct Brief {
    pub progress: Progress,
    pub handshakes_in_flight: u64,
    pub dead_links_known: u64,
    /// Nodes that do not answer or are not ready (the first few of each process's).
    pub not_ready: Vec<NodeId>,
    /// Whether a full round may find the cluster ready.
    pub maybe_ready: bool,
}

/// A brief round, or `None` on a cluster with no node host. A process none of whose first
/// nodes answers ([`ask_process`]) is not ready: a full round would ask each of its nodes
/// alone, and a process of 65,536 nodes busy starting them, asked so, took 65,536 control
/// handshakes it could not finish in time, over and over (memory grew by gigabytes).
pub(super) async fn round(client: &ClusterClient, seen: &Seen, timeout: Duration) -> Option<Brief> {
    let hosts = client.hosts();
    if hosts.is_empty() {
        return None;
    }
    let skipped: HashSet<NodeId> = seen
        .dead
        .iter()
        .chain(&seen.starting)
        .map(|(id, _)| *id)
        .collect();
    let grouped: HashSet<NodeId> = hosts.iter().flatten().copied().collect();
    let alone: Vec<NodeId> = client
        .manifest
        .nodes
        .iter()
        .map(|n| n.id)
        .filter(|id| !grouped.contains(id) && !skipped.contains(id))
        .collect();
    let hosts: Vec<Vec<NodeId>> = hosts
        .into_iter()
        .map(|host| {
            host.into_iter()
                .filter(|id| !skipped.contains(id))
                .collect()
        })
        .filter(|host: &Vec<NodeId>| !host.is_empty())
        .collect();
    let asks = hosts
        .iter()
        .map(|host| ask_process(host, |node| client.host_readiness(node, timeout)));
    let (answers, alone) = tokio::join!(join_all(asks), client.statuses_each(alone, timeout));
    let mut answered = Vec::new();
    let mut silent = Vec::new();
    for (host, answer) in hosts.into_iter().zip(answers) {
        match answer {
            Ok((_, answer)) => answered.push(answer),
            Err(_) => silent.push(host),
        }
    }
    Some(sum(&client.manifest, seen, &answered, &silent, &alone))
}

/// A brief round from the processes' answers, the nodes of those that gave none (`silent`),
/// and the statuses of the nodes alone in theirs.
fn sum(
    manifest: &Manifest,
    seen: &Seen,
    hosts: &[HostReadiness],
    silent: &[Vec<NodeId>],
    alone: &[(NodeId, Result<NodeStatus, String>)],
) -> Brief {
    let statuses = || alone.iter().filter_map(|(_, s)| s.as_ref().ok());
    let revoked: BTreeSet<NodeId> = hosts
        .iter()
        .map(|h| (h.revocation_serial, &h.revoked))
        .chain(statuses().map(|s| (s.revocation_serial, &s.revoked)))
        .max_by_key(|(serial, _)| *serial)
        .map(|(_, list)| list.iter().copied().collect())
        .unwrap_or_default();
    let mut not_ready: Vec<NodeId> = Vec::new();
    let (mut answering, mut up, mut handshakes, mut dead_links) = (0, 0, 0, 0);
    for host in hosts {
        answering += host.running as usize;
        up += host.link_ends_up as usize;
        handshakes += host.handshakes_in_flight;
        dead_links += host.dead_links_known;
        not_ready.extend(host.stopped.iter().chain(&host.not_ready_first));
    }
    for host in silent {
        not_ready.extend(host.iter().take(HOST_READINESS_NAMED));
    }
    let mut alone_short = false;
    for (id, status) in alone {
        match status {
            Ok(s) => {
                answering += 1;
                let (links_up, may) = links_up_of(s, &revoked);
                up += links_up;
                handshakes += s.sealing.handshakes_in_flight;
                dead_links += s.around.dead_links.len() as u64;
                if links_up < may {
                    alone_short = true;
                    not_ready.push(*id);
                }
            }
            Err(_) => not_ready.push(*id),
        }
    }
    let nodes = manifest.nodes.len();
    let link_ends = link_ends_may_be_up(manifest, &revoked);
    let maybe_ready = answering == nodes
        && up == link_ends
        && handshakes == 0
        && dead_links == 0
        && !alone_short
        && silent.is_empty()
        && hosts.iter().all(|h| h.not_ready == 0)
        && seen.healthy
        && seen.dead.is_empty()
        && seen.starting.is_empty();
    Brief {
        progress: Progress {
            nodes,
            answering,
            link_ends_up: up,
            link_ends,
            healthy: seen.healthy,
            running: seen.runners.as_ref().map(|r| r.alive()),
        },
        handshakes_in_flight: handshakes,
        dead_links_known: dead_links,
        not_ready,
        maybe_ready,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::ready::tests::status;
    use cuberoute_daemon::manifest::ManifestNode;
    use cuberoute_protocol::Topology;

    fn q3() -> Manifest {
        let topology: Topology = "q:3".parse().unwrap();
        Manifest {
            topology,
            nodes: (0..8)
                .map(|id| ManifestNode {
                    id: NodeId(id),
                    addr: "a".into(),
                    control: "c".into(),
                    metrics: None,
                })
                .collect(),
        }
    }

    fn seen() -> Seen {
        Seen {
            runners: None,
            healthy: true,
            dead: Vec::new(),
            starting: Vec::new(),
        }
    }

    /// A process of `running` nodes of Q_3, every link up.
    fn host(running: u32) -> HostReadiness {
        HostReadiness {
            running,
            link_ends_up: 3 * u64::from(running),
            link_ends: 3 * u64::from(running),
            ..HostReadiness::default()
        }
    }

    #[test]
    fn two_processes_every_link_up_may_be_ready() {
        let brief = sum(&q3(), &seen(), &[host(4), host(4)], &[], &[]);
        assert!(brief.maybe_ready, "{brief:?}");
        assert_eq!(brief.progress.answering, 8);
        assert_eq!(
            (brief.progress.link_ends_up, brief.progress.link_ends),
            (24, 24)
        );
        assert!(brief.not_ready.is_empty());
    }

    #[test]
    fn a_node_alone_in_its_process_counts_by_its_status() {
        let q3 = q3();
        let alone = vec![(NodeId(7), Ok(status(q3.topology, 7, 3)))];
        assert!(sum(&q3, &seen(), &[host(4), host(3)], &[], &alone).maybe_ready);
        let short = vec![(NodeId(7), Ok(status(q3.topology, 7, 2)))];
        let brief = sum(&q3, &seen(), &[host(4), host(3)], &[], &short);
        assert!(!brief.maybe_ready);
        assert_eq!(brief.not_ready, vec![NodeId(7)]);
        let silent = vec![(NodeId(7), Err("no answer".to_string()))];
        let brief = sum(&q3, &seen(), &[host(4), host(3)], &[], &silent);
        assert!(!brief.maybe_ready);
        assert_eq!(brief.progress.answering, 7);
    }

    #[test]
    fn anything_short_in_a_process_is_not_ready_and_named() {
        let q3 = q3();
        let cases: Vec<(&str, HostReadiness)> = vec![
            (
                "a link down",
                HostReadiness {
                    link_ends_up: 11,
                    not_ready: 1,
                    not_ready_first: vec![NodeId(5)],
                    ..host(4)
                },
            ),
            (
                "a node not running",
                HostReadiness {
                    running: 3,
                    link_ends_up: 9,
                    link_ends: 9,
                    stopped: vec![NodeId(5)],
                    ..host(4)
                },
            ),
            (
                "a handshake in flight",
                HostReadiness {
                    handshakes_in_flight: 1,
                    not_ready: 1,
                    not_ready_first: vec![NodeId(5)],
                    ..host(4)
                },
            ),
            (
                "a dead link known",
                HostReadiness {
                    dead_links_known: 1,
                    not_ready: 1,
                    not_ready_first: vec![NodeId(5)],
                    ..host(4)
                },
            ),
        ];
        for (what, short) in cases {
            let brief = sum(&q3, &seen(), &[host(4), short], &[], &[]);
            assert!(!brief.maybe_ready, "{what}: {brief:?}");
            assert_eq!(brief.not_ready, vec![NodeId(5)], "{what}");
        }
        let quiet = sum(
            &q3,
            &seen(),
            &[host(4)],
            &[(4..8).map(NodeId).collect()],
            &[],
        );
        assert!(!quiet.maybe_ready, "a process that did not answer");
        assert_eq!(quiet.progress.answering, 4);
        assert_eq!(quiet.not_ready, (4..8).map(NodeId).collect::<Vec<_>>());
        let unhealthy = Seen {
            healthy: false,
            ..seen()
        };
        assert!(!sum(&q3, &unhealthy, &[host(4), host(4)], &[], &[]).maybe_ready);
    }

    #[test]
    fn the_newest_revocation_list_says_which_link_ends_may_be_up() {
        // Node 7 revoked (serial 2, known to one process; the other still holds serial 1):
        // its three links are not waited for, from either end.
        let revoking = HostReadiness {
            running: 3,
            link_ends_up: 6,
            link_ends: 6,
            revocation_serial: 2,
            revoked: vec![NodeId(7)],
            stopped: vec![NodeId(7)],
            ..host(3)
        };
        let older = HostReadiness {
            revocation_serial: 1,
            ..host(4)
        };
        let brief = sum(&q3(), &seen(), &[older, revoking], &[], &[]);
        assert_eq!(brief.progress.link_ends, 18);
        assert!(!brief.maybe_ready, "node 7 does not answer: {brief:?}");
    }
}
