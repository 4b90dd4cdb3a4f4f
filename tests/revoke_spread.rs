//! Revocation reaches everyone, on real processes: nodes hand the newest signed revocation list
//! to each neighbour when a link comes up, and pass a newer one on as soon as they take it. A
//! node that was down during `cluster revoke` and has no list on disk refuses the revoked node
//! within seconds of its return; one that was alive but unreachable (stopped) learns it from its
//! neighbours; a list taken at one node reaches every node without a push; an older list is
//! refused, pushed or handed over, also by a node that started with no list; a neighbour's
//! malformed, forged or older list is counted and never taken. The times are printed, not
//! asserted.
//!
//! A node "whose directory the launcher does not write" is made as Kubernetes makes every node:
//! its configuration keeps the revocation list in a directory of its own (`keys.revoked =
//! "state/revoked.bin"`, as a pod keeps it on its volume claim), which `cluster revoke` does not
//! write (it writes `nodes/<id>/revoked.bin`, which that node does not read).
//!
//! Addresses: 127.2.110.0 to 127.2.114.0.

mod common;

use common::{Cluster, stderr, stdout, within};
use cuberoute_cluster::ops::revoke::sign;
use cuberoute_cluster::{ClusterClient, ClusterDir};
use cuberoute_daemon::keys::Revocations;
use cuberoute_daemon::tls::{self, ALPN_LINK, Credentials};
use cuberoute_protocol::NodeId;
use cuberoute_protocol::wire::control::{NodeStatus, Request, Response};
use cuberoute_protocol::wire::link::{Hello, LinkFrame};
use cuberoute_protocol::wire::{decode_body, encode_frame};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Node statuses asked over one control client, quickly enough to time a few hundred ms.
struct Watch {
    runtime: tokio::runtime::Runtime,
    client: ClusterClient,
}

impl Watch {
    fn new(cluster: &Cluster) -> Watch {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let client = {
            let _guard = runtime.enter();
            ClusterClient::open(&ClusterDir::new(cluster.path())).unwrap()
        };
        Watch { runtime, client }
    }

    /// `node`'s status, if it answers within 500 ms (a connection that did not is dropped, so
    /// that the next asks a restarted node afresh).
    fn status(&self, node: u64) -> Option<NodeStatus> {
        self.runtime.block_on(async {
            let asked = self.client.status(NodeId(node));
            match tokio::time::timeout(Duration::from_millis(500), asked).await {
                Ok(Ok(status)) => Some(status),
                _ => {
                    self.client.close();
                    None
                }
            }
        })
    }

    /// Ask `node` every 10 ms until `ready` holds of its status, for up to `limit`: how long
    /// that took, and the status then.
    fn until(
        &self,
        node: u64,
        limit: Duration,
        ready: impl Fn(&NodeStatus) -> bool,
    ) -> Option<(Duration, NodeStatus)> {
        let started = Instant::now();
        while started.elapsed() < limit {
            if let Some(status) = self.status(node).filter(&ready) {
                return Some((started.elapsed(), status));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        None
    }

    /// Push a signed list to `node` alone: the answer, or the refusal's message.
    fn push(&self, node: u64, signed: &[u8]) -> Result<Response, String> {
        let request = Request::Revoke {
            signed: signed.to_vec(),
        };
        match self
            .runtime
            .block_on(self.client.request(NodeId(node), &request))
        {
            Ok(response) => Ok(response),
            Err(cuberoute_daemon::client::ClientError::Refused { error, .. }) => Err(error.message),
            Err(e) => panic!("node {node} did not answer: {e}"),
        }
    }
}

fn event(status: &NodeStatus, name: &str) -> u64 {
    status.counters.events.get(name).copied().unwrap_or(0)
}

fn dropped(status: &NodeStatus, reason: &str) -> u64 {
    status.counters.dropped.get(reason).copied().unwrap_or(0)
}

/// `status` holds a list that revokes `revoked`, and its link to it is not up.
fn refuses(status: &NodeStatus, revoked: u64) -> bool {
    status.revoked.contains(&NodeId(revoked))
        && !status
            .links
            .iter()
            .any(|l| l.neighbour == NodeId(revoked) && l.up)
}

/// Make node `node` keep its revocation list where `cluster revoke` does not write it, as a
/// Kubernetes pod does (module doc): its list file, from its next start on.
fn own_list_dir(cluster: &Cluster, node: u64) -> PathBuf {
    let config = cluster.node_file(node, "node.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    let line = "revoked = \"revoked.bin\"";
    assert!(text.contains(line), "{text}");
    std::fs::write(
        &config,
        text.replace(line, "revoked = \"state/revoked.bin\""),
    )
    .unwrap();
    std::fs::create_dir_all(cluster.node_file(node, "state")).unwrap();
    cluster.node_file(node, "state/revoked.bin")
}

fn list(serial: u64, revoked: &[u64]) -> Revocations {
    Revocations {
        serial,
        revoked: revoked.iter().map(|&v| NodeId(v)).collect(),
    }
}

/// (a) Q_3, node 3 revoked while node 1, its neighbour, is down and keeps its list where the
/// launcher does not write it; node 3 ignores its revocation (restarted without its list) and
/// dials and knocks as any node. Node 1, restarted with no list on disk and without any push,
/// is handed the list by its other neighbours as its links come up: it refuses node 3's link
/// and drops what would go through node 3, and keeps the list for its next start.
#[test]
fn a_node_down_during_the_revocation_refuses_the_revoked_node_soon_after_its_return() {
    // Sources on the constructed paths whatever they know, so that a copy still goes towards
    // the revoked node and is dropped there (routing around: tests/liveness.rs).
    let cluster = Cluster::up_with("q:3", &["--base-addr", "127.2.110.0", "--no-route-around"]);
    let watch = Watch::new(&cluster);
    let (away, revoked) = (1, 3);
    cluster.ok(&["chaos", "kill", "--node", &away.to_string()]);
    let kept = own_list_dir(&cluster, away);

    let out = cluster.ok(&["cluster", "revoke", "--node", &revoked.to_string()]);
    assert!(out.contains("7 took it, 1 did not answer"), "{out}");
    // The revoked node ignores its revocation: restarted without its list.
    cluster.ok(&["chaos", "kill", "--node", &revoked.to_string()]);
    std::fs::remove_file(cluster.node_file(revoked, "revoked.bin")).unwrap();
    cluster.ok(&["chaos", "restart", "--node", &revoked.to_string()]);
    let (_, ignoring) = watch
        .until(revoked, Duration::from_secs(10), |_| true)
        .expect("the revoked node runs again");
    assert_eq!(ignoring.revocation_serial, 0, "it holds no list");
    assert!(!kept.exists());

    let restarting = Instant::now();
    cluster.ok(&["chaos", "restart", "--node", &away.to_string()]);
    let (_, status) = watch
        .until(away, Duration::from_secs(15), |s| refuses(s, revoked))
        .expect("node 1 refuses node 3 within 15 s of its restart, without a push");
    eprintln!(
        "REVOKE-SPREAD a node down during the revocation (no list on disk) refuses the revoked \
         node {} ms after its restart command began, {} ms into its own uptime",
        restarting.elapsed().as_millis(),
        status.uptime_ms
    );
    assert_eq!(status.revocation_serial, 1);
    assert!(event(&status, "revocation_learned") >= 1, "{status:?}");
    assert_eq!(
        std::fs::read(&kept).unwrap(),
        std::fs::read(cluster.path().join("revoked.bin")).unwrap(),
        "kept where it keeps its list"
    );

    // The revoked node knocks (node 1 dials it, by the lower id): refused.
    let refused = watch.until(away, Duration::from_secs(15), |s| {
        event(s, "peer_refused_revoked") > 0
    });
    assert!(refused.is_some(), "node 1 refuses the revoked node's knock");
    // A set from 0 to 7: its first path is 0-1-3-7, whose copy node 1 drops (`revoked`), as it
    // drops the sealing handshake's Inits before it (the first attempt, on the first path
    // alone, and the next, on every path); the other two copies arrive.
    let before = dropped(&watch.status(away).unwrap(), "revoked");
    let delivered = cluster.copies_delivered("0", "7", "3s");
    assert_eq!(delivered, 2);
    let dropped_at_1 = within(Duration::from_secs(5), || {
        dropped(&watch.status(away).unwrap(), "revoked") == before + 3
    });
    assert!(dropped_at_1.is_some(), "node 1 drops the copy for node 3");
    let status = watch.status(away).unwrap();
    assert!(refuses(&status, revoked), "{status:?}");
}

/// Stops a process on drop too (a failing test must not leave a stopped daemon behind).
struct Stopped(nix::unistd::Pid);

impl Stopped {
    fn stop(pid: u32) -> Stopped {
        let pid = nix::unistd::Pid::from_raw(pid as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGSTOP).unwrap();
        Stopped(pid)
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(self.0, nix::sys::signal::Signal::SIGCONT);
    }
}

/// (b) Q_3, node 1 alive but stopped (SIGSTOP) while node 3 is revoked: the push cannot reach
/// it. Continued, it is handed the list on its links, which stayed up, and refuses node 3.
#[test]
fn a_node_unreachable_during_the_revocation_learns_it_from_its_neighbours() {
    let cluster = Cluster::up("q:3", "127.2.111.0");
    let watch = Watch::new(&cluster);
    let (stopped, revoked) = (1, 3);
    let pid = watch.status(stopped).unwrap().pid;
    let before = watch.status(stopped).unwrap();
    assert_eq!(
        event(&before, "revocation_handed") + event(&before, "revocation_learned"),
        0,
        "a cluster started without a list hands none"
    );
    let stop = Stopped::stop(pid);
    let out = cluster.ok(&["cluster", "revoke", "--node", &revoked.to_string()]);
    assert!(out.contains("7 took it, 1 did not answer"), "{out}");
    drop(stop);
    let (after, status) = watch
        .until(stopped, Duration::from_secs(15), |s| refuses(s, revoked))
        .expect("node 1 refuses node 3 within 15 s of being continued, without a push");
    eprintln!(
        "REVOKE-SPREAD a node stopped during the revocation refuses the revoked node {} ms \
         after it was continued",
        after.as_millis()
    );
    assert_eq!(status.revocation_serial, 1);
    assert!(event(&status, "revocation_learned") >= 1, "{status:?}");
    assert_eq!(status.pid, pid, "the same process, never restarted");
}

/// (c) Q_3: node 1 starts with no list on disk (its own list directory) and is down during two
/// revocations (serials 1 and 2). Back, it is handed serial 2 by its neighbours; serial 1
/// pushed afterwards (the cluster's own list set back, then `cluster revoke --push`) is refused
/// there and everywhere, in one line and exit 1, and counted; no node's file is set back, and
/// node 1 restarted again holds serial 2 from its own file before any link.
#[test]
fn an_older_list_is_refused_after_a_newer_one_came_from_a_neighbour() {
    let cluster = Cluster::up("q:3", "127.2.112.0");
    let watch = Watch::new(&cluster);
    let away = 1;
    cluster.ok(&["chaos", "kill", "--node", &away.to_string()]);
    let kept = own_list_dir(&cluster, away);
    cluster.ok(&["cluster", "revoke", "--node", "6"]);
    let older = std::fs::read(cluster.path().join("revoked.bin")).unwrap();
    cluster.ok(&["cluster", "revoke", "--node", "4"]);
    let newer = std::fs::read(cluster.path().join("revoked.bin")).unwrap();

    cluster.ok(&["chaos", "restart", "--node", &away.to_string()]);
    let (_, status) = watch
        .until(away, Duration::from_secs(15), |s| s.revocation_serial == 2)
        .expect("node 1 is handed serial 2 by its neighbours");
    assert_eq!(status.revoked, vec![NodeId(4), NodeId(6)]);
    assert_eq!(std::fs::read(&kept).unwrap(), newer);

    // The cluster's list set back to serial 1, and pushed.
    std::fs::write(cluster.path().join("revoked.bin"), &older).unwrap();
    let out = cluster.run(&["cluster", "revoke", "--push"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let err = stderr(&out);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("8 of 8 nodes refused the revocation list (serial 1)")
            && err.contains("does not replace the one in force (serial 2)"),
        "{err}"
    );
    let status = watch.status(away).unwrap();
    assert_eq!(status.revocation_serial, 2);
    assert_eq!(event(&status, "revocation_refused"), 1);
    assert_eq!(
        std::fs::read(&kept).unwrap(),
        newer,
        "its file is not set back"
    );
    for node in [0, 2, 3, 5, 7] {
        assert_eq!(
            std::fs::read(cluster.node_file(node, "revoked.bin")).unwrap(),
            newer,
            "node {node}'s file is not set back"
        );
    }

    // Restarted: serial 2 from its own file, so its neighbours, holding the same, hand it
    // nothing.
    cluster.ok(&["chaos", "kill", "--node", &away.to_string()]);
    cluster.ok(&["chaos", "restart", "--node", &away.to_string()]);
    let (_, status) = watch
        .until(away, Duration::from_secs(10), |s| s.links_up() == 3)
        .expect("node 1 links again with 0, 3 and 5");
    assert_eq!(status.revocation_serial, 2);
    assert_eq!(event(&status, "revocation_learned"), 0, "{status:?}");
    assert_eq!(watch.push(away, &older).unwrap_err(), {
        "a revocation list with serial 1 does not replace the one in force (serial 2)"
    });
}

/// The address node `id` of a cluster on loopback listens on for links.
fn link_addr(cluster: &Cluster, id: u64) -> std::net::SocketAddr {
    let manifest = std::fs::read_to_string(cluster.path().join("manifest.toml")).unwrap();
    let block = manifest
        .split("[[node]]")
        .find(|b| b.contains(&format!("id = {id}\n")))
        .unwrap();
    block
        .lines()
        .find_map(|l| l.strip_prefix("addr = \""))
        .unwrap()
        .trim_end_matches('"')
        .parse()
        .unwrap()
}

/// A certified neighbour's revocation lists are read from the network. Q_3 with serial 2 in
/// force (nodes 6 and 4 revoked); we pose as node 0 (killed) with its certificate towards node
/// 1. Our hello says we hold no list: node 1 hands us its list at once. Then we hand it a
/// malformed list, one signed by another CA, and the older serial 1: each is counted and none
/// taken, and node 1 does not hand its list again. A newer list signed by the cluster CA is
/// taken, and node 1 passes it on: every other node holds it without any push.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_neighbours_bad_or_older_list_is_counted_and_never_taken_and_a_newer_one_spreads() {
    let cluster = Cluster::up("q:3", "127.2.113.0");
    cluster.ok(&["cluster", "revoke", "--node", "6"]);
    let older = std::fs::read(cluster.path().join("revoked.bin")).unwrap();
    cluster.ok(&["cluster", "revoke", "--node", "4"]);
    let in_force = std::fs::read(cluster.path().join("revoked.bin")).unwrap();
    cluster.ok(&["chaos", "kill", "--node", "0"]);
    let dir = ClusterDir::new(cluster.path());
    let client = ClusterClient::open(&dir).unwrap();
    let status = |node: u64| {
        let client = client.clone();
        async move { client.status(NodeId(node)).await.unwrap() }
    };
    let before = status(1).await;
    let handed_before = event(&before, "revocation_handed");
    // Some lists may have come from a neighbour before the pushes did.
    let learned_before = event(&before, "revocation_learned");

    let node0 = Credentials::load(
        &cluster.path().join("ca.pem"),
        &cluster.node_file(0, "node.pem"),
        &cluster.node_file(0, "node.key"),
    )
    .unwrap();
    let endpoint = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    let connection = endpoint
        .connect_with(
            node0.client_config(ALPN_LINK),
            link_addr(&cluster, 1),
            &tls::node_name(NodeId(1)),
        )
        .unwrap()
        .await
        .unwrap();
    let (mut send, mut recv) = connection.open_bi().await.unwrap();
    let write = |frame: LinkFrame| encode_frame(&frame).unwrap();
    send.write_all(&write(LinkFrame::Hello(Hello {
        node: NodeId(0),
        topology: "q:3".parse().unwrap(),
        incarnation: 77,
        received: None,
        revocation_serial: 0,
        process: None,
    })))
    .await
    .unwrap();
    // Node 1's hello, then its list.
    let mut read_frame = async || {
        let read = async {
            let mut prefix = [0u8; 4];
            recv.read_exact(&mut prefix).await.unwrap();
            let mut body = vec![0u8; u32::from_be_bytes(prefix) as usize];
            recv.read_exact(&mut body).await.unwrap();
            decode_body::<LinkFrame>(&body).unwrap()
        };
        tokio::time::timeout(Duration::from_secs(10), read)
            .await
            .expect("a frame from node 1 within 10 s")
    };
    match read_frame().await {
        LinkFrame::Hello(hello) => assert_eq!(hello.revocation_serial, 2),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        read_frame().await,
        LinkFrame::Revocations {
            signed: in_force.clone()
        },
        "a neighbour with no list is handed the list in force at link up"
    );

    let ours = std::fs::read_to_string(cluster.path().join("ca.key")).unwrap();
    let theirs = cuberoute_cluster::launch::certs::ClusterCa::generate("q:3")
        .unwrap()
        .key_pem();
    for signed in [
        b"not a list".to_vec(),
        sign(&list(9, &[4, 6]), &theirs).unwrap(),
        older.clone(),
    ] {
        send.write_all(&write(LinkFrame::Revocations { signed }))
            .await
            .unwrap();
    }
    let counted = async {
        loop {
            let s = status(1).await;
            if event(&s, "revocation_invalid") == 2 && event(&s, "revocation_refused") == 1 {
                return s;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    let s = tokio::time::timeout(Duration::from_secs(10), counted)
        .await
        .expect("the three lists are counted");
    assert_eq!(s.revocation_serial, 2);
    assert!(event(&s, "frame_malformed") >= 2, "{:?}", s.counters);
    assert_eq!(
        event(&s, "revocation_handed"),
        handed_before + 1,
        "handed once on this connection, not again for an older list"
    );
    assert!(s.links.iter().any(|l| l.neighbour == NodeId(0) && l.up));

    // A newer list signed by the cluster CA (node 5 revoked too), handed over by us only.
    let newer = sign(&list(3, &[4, 5, 6]), &ours).unwrap();
    send.write_all(&write(LinkFrame::Revocations {
        signed: newer.clone(),
    }))
    .await
    .unwrap();
    let spread = async {
        loop {
            let mut all = true;
            for node in [1, 2, 3, 7] {
                let s = status(node).await;
                all &= s.revocation_serial == 3 && refuses(&s, 5);
            }
            if all {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), spread)
        .await
        .expect("nodes 1, 2, 3 and 7 hold serial 3 without a push");
    assert_eq!(
        std::fs::read(cluster.node_file(2, "revoked.bin")).unwrap(),
        newer
    );
    assert_eq!(
        event(&status(1).await, "revocation_learned"),
        learned_before + 1
    );
    client.close();
    connection.close(0u32.into(), b"done");
}

/// Q_4: a list pushed to node 0 alone reaches every node that is not revoked by its links
/// (timed, printed), each taking it once; no list is handed at the start of a cluster without
/// one, and the spread hands at most one list each way per link.
#[test]
fn a_list_taken_at_one_node_reaches_every_node_without_a_push() {
    let cluster = Cluster::up("q:4", "127.2.114.0");
    let watch = Watch::new(&cluster);
    let nodes: Vec<u64> = (0..16).collect();
    for &node in &nodes {
        let status = watch.status(node).unwrap();
        assert_eq!(event(&status, "revocation_handed"), 0, "node {node}");
    }
    let key = std::fs::read_to_string(cluster.path().join("ca.key")).unwrap();
    let signed = sign(&list(1, &[15]), &key).unwrap();
    let pushed = Instant::now();
    match watch.push(0, &signed) {
        Ok(Response::Revoked { serial: 1, newly }) => assert_eq!(newly, vec![NodeId(15)]),
        other => panic!("{other:?}"),
    }
    let mut last = Duration::ZERO;
    for &node in &nodes[1..15] {
        let (_, status) = watch
            .until(node, Duration::from_secs(10), |s| refuses(s, 15))
            .unwrap_or_else(|| panic!("node {node} holds the list within 10 s"));
        last = pushed.elapsed();
        assert_eq!(event(&status, "revocation_learned"), 1, "node {node}");
    }
    eprintln!(
        "REVOKE-SPREAD a list pushed to node 0 of Q_4 alone is held by the 14 other nodes not \
         revoked {} ms after the push began (statuses asked one after the other)",
        last.as_millis()
    );
    // Q_4 has 32 links, 4 of them node 15's: at most one list each way on the other 28.
    let handed: u64 = nodes
        .iter()
        .map(|&n| event(&watch.status(n).unwrap(), "revocation_handed"))
        .sum();
    assert!((14..=56).contains(&handed), "{handed} lists handed");
    eprintln!("REVOKE-SPREAD lists handed over in all: {handed}");
}
