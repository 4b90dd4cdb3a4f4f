//! Who a daemon lets in, and what it does with garbage: real daemons, and hand-made QUIC peers.

mod common;

use common::Cluster;
use cuberoute_daemon::tls::{self, ALPN_CONTROL, ALPN_LINK, Credentials};
use cuberoute_protocol::NodeId;
use cuberoute_protocol::wire::encode_frame;
use cuberoute_protocol::wire::link::{Hello, LinkFrame};
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

/// The address node `id` listens on for links (`port` 7000) or control (7001).
fn addr(cluster: &Cluster, id: u64, port: u16) -> SocketAddr {
    let manifest = std::fs::read_to_string(cluster.path().join("manifest.toml")).unwrap();
    let block = manifest
        .split("[[node]]")
        .find(|b| b.contains(&format!("id = {id}\n")))
        .unwrap();
    let host = block
        .lines()
        .find_map(|l| l.strip_prefix("addr = \""))
        .unwrap()
        .split(':')
        .next()
        .unwrap();
    format!("{host}:{port}").parse().unwrap()
}

/// Credentials that trust the cluster CA and present a self-signed certificate naming `name`.
fn stranger(dir: &Path, cluster: &Cluster, name: &str) -> Credentials {
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec![name.to_string()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let (cert_path, key_path) = (
        dir.join(format!("{name}.pem")),
        dir.join(format!("{name}.key")),
    );
    std::fs::write(&cert_path, cert.pem()).unwrap();
    std::fs::write(&key_path, key.serialize_pem()).unwrap();
    Credentials::load(&cluster.path().join("ca.pem"), &cert_path, &key_path).unwrap()
}

fn node_credentials(cluster: &Cluster, id: u64) -> Credentials {
    Credentials::load(
        &cluster.path().join("ca.pem"),
        &cluster.node_file(id, "node.pem"),
        &cluster.node_file(id, "node.key"),
    )
    .unwrap()
}

fn endpoint() -> quinn::Endpoint {
    quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap()
}

async fn connect(
    credentials: &Credentials,
    alpn: &[u8],
    to: SocketAddr,
    node: u64,
) -> Result<quinn::Connection, quinn::ConnectionError> {
    endpoint()
        .connect_with(
            credentials.client_config(alpn),
            to,
            &tls::node_name(NodeId(node)),
        )
        .unwrap()
        .await
}

fn event(cluster: &Cluster, node: u64, name: &str) -> u64 {
    cluster.node_status(node)["counters"]["events"][name]
        .as_u64()
        .unwrap_or(0)
}

/// Wait until `done` holds, for at most 10 s.
fn eventually(what: &str, done: impl FnMut() -> bool) {
    if common::within(Duration::from_secs(10), done).is_none() {
        panic!("never: {what}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strangers_and_non_neighbours_are_refused() {
    let cluster = Cluster::up("q:3", "127.2.6.0");
    let tmp = tempfile::tempdir().unwrap();

    // A stranger with a self-signed client certificate: the control handshake fails.
    let client_stranger = stranger(tmp.path(), &cluster, tls::CLIENT_NAME);
    let result = connect(&client_stranger, ALPN_CONTROL, addr(&cluster, 0, 7001), 0).await;
    if let Ok(connection) = result {
        // Under TLS 1.3 the client may finish before the server's verdict arrives.
        let reason = connection.closed().await;
        assert!(
            !matches!(reason, quinn::ConnectionError::LocallyClosed),
            "{reason:?}"
        );
    }
    eventually("the control refusal is counted", || {
        event(&cluster, 0, "client_refused") >= 1
    });

    // A stranger whose self-signed certificate names node 1, on node 0's link port.
    let node_stranger = stranger(tmp.path(), &cluster, &tls::node_name(NodeId(1)));
    if let Ok(connection) = connect(&node_stranger, ALPN_LINK, addr(&cluster, 0, 7000), 0).await {
        connection.closed().await;
    }
    eventually("the link refusal is counted", || {
        event(&cluster, 0, "peer_refused_tls") >= 1
    });

    // Node 0, authenticated, is not a neighbour of node 7 (Q_3: they differ in 3 bits).
    let node0 = node_credentials(&cluster, 0);
    let connection = connect(&node0, ALPN_LINK, addr(&cluster, 7, 7000), 7)
        .await
        .expect("the handshake itself succeeds: the certificate is the cluster's");
    match connection.closed().await {
        quinn::ConnectionError::ApplicationClosed(close) => {
            assert_eq!(close.error_code, 3u32.into());
            assert!(String::from_utf8_lossy(&close.reason).contains("not a neighbour"));
        }
        other => panic!("unexpected close {other:?}"),
    }
    assert_eq!(event(&cluster, 7, "peer_refused_not_neighbour"), 1);

    // A node certificate does not open the control API.
    let connection = connect(&node0, ALPN_CONTROL, addr(&cluster, 1, 7001), 1)
        .await
        .unwrap();
    connection.closed().await;
    assert!(event(&cluster, 1, "client_refused") >= 1);

    // The client certificate does not open a link.
    let client = Credentials::load(
        &cluster.path().join("ca.pem"),
        &cluster.path().join("client.pem"),
        &cluster.path().join("client.key"),
    )
    .unwrap();
    let connection = connect(&client, ALPN_LINK, addr(&cluster, 2, 7000), 2)
        .await
        .unwrap();
    connection.closed().await;
    assert_eq!(event(&cluster, 2, "peer_refused_not_a_node"), 1);

    // After all that, the cluster still delivers.
    cluster.ok(&[
        "send",
        "--from",
        "0",
        "--to",
        "7",
        "--message",
        "still here",
        "--wait",
    ]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_sending_garbage_is_counted_and_disconnected_and_the_daemon_serves_on() {
    let cluster = Cluster::up("q:3", "127.2.7.0");
    // Node 0 dials node 1 (the lower id dials); we pose as node 0 with its own certificate.
    let node0 = node_credentials(&cluster, 0);
    let target = addr(&cluster, 1, 7000);
    // The real node 0, stopped while we pose as it: its own dial, which replaces ours at node 1
    // ("replaced"), would race the garbage (a CI run lost that race once).
    let real0 = nix::unistd::Pid::from_raw(cluster.pids()[0] as i32);
    nix::sys::signal::kill(real0, nix::sys::signal::Signal::SIGSTOP).unwrap();

    // 1. Garbage instead of a hello: refused at once.
    let connection = connect(&node0, ALPN_LINK, target, 1).await.unwrap();
    let (mut send, _recv) = connection.open_bi().await.unwrap();
    send.write_all(&[0, 0, 0, 3, 1, 0xff, 0xff]).await.unwrap();
    connection.closed().await;
    eventually("the bad hello is counted", || {
        event(&cluster, 1, "hello_mismatch") >= 1
    });

    // 2. A proper hello, then malformed frames: disconnected after the limit.
    let connection = connect(&node0, ALPN_LINK, target, 1).await.unwrap();
    let (mut send, _recv) = connection.open_bi().await.unwrap();
    let hello = LinkFrame::Hello(Hello {
        node: NodeId(0),
        topology: "q:3".parse().unwrap(),
        incarnation: 42,
        received: None,
        revocation_serial: 0,
        process: None,
    });
    send.write_all(&encode_frame(&hello).unwrap())
        .await
        .unwrap();
    let garbage: Vec<u8> = [0u8, 0, 0, 5, 1, 0xfe, 0xff, 0xff, 0xff].repeat(40);
    let _ = send.write_all(&garbage).await;
    match connection.closed().await {
        quinn::ConnectionError::ApplicationClosed(close) => {
            assert_eq!(close.error_code, 2u32.into(), "{close:?}")
        }
        other => panic!("unexpected close {other:?}"),
    }
    let status = cluster.node_status(1);
    let events = &status["counters"]["events"];
    assert!(events["frame_malformed"].as_u64().unwrap() > 16, "{events}");
    assert_eq!(events["peer_disconnected_garbage"], 1, "{events}");

    // 3. Raw UDP garbage at both ports is ignored.
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    for port in [7000, 7001] {
        for n in 0..50u8 {
            socket.send_to(&[n; 100], addr(&cluster, 1, port)).unwrap();
        }
    }

    // The real node 0 reconnects, and node 1 keeps serving everyone.
    nix::sys::signal::kill(real0, nix::sys::signal::Signal::SIGCONT).unwrap();
    eventually("every link of node 1 is up again", || {
        cluster.node_status(1)["links_up"] == 3
    });
    for (from, to) in [("0", "7"), ("1", "6"), ("3", "1"), ("1", "0"), ("5", "2")] {
        cluster.ok(&[
            "send",
            "--from",
            from,
            "--to",
            to,
            "--message",
            "after garbage",
            "--wait",
        ]);
    }
}

/// A neighbour holding a valid node certificate is as hostile as a frame can be: a data packet
/// of nearly a whole frame with a trace (which the next hop lengthens), packets that are not
/// packets, routes that lie about their source, replayed sequence numbers and acknowledgements
/// of frames never sent. The daemon counts each as a drop, keeps its other links and keeps
/// delivering.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certified_neighbour_sending_hostile_frames_poisons_nothing() {
    use cuberoute_protocol::wire::message::Message;
    use cuberoute_protocol::wire::packet::set_checksum;
    use cuberoute_protocol::wire::{MAX_FRAME_LEN, encode_body};
    use cuberoute_protocol::{Process, SendRequest, Topology};

    let cluster = Cluster::up("q:3", "127.2.62.0");
    let topology: Topology = "q:3".parse().unwrap();
    // The copy of a set 0 -> 7 whose first hop is node 1, with a payload of `len` bytes.
    let packet_via_1 = |len: usize, src: NodeId| {
        let routes = SendRequest::to(NodeId(7)).routes(topology, src).unwrap();
        let message = Message::new(src, 9, false, 1, true, vec![0x61; len]);
        let messages = vec![message; routes.k()];
        let (_, mut packet) = Process::new(topology, src)
            .start(&routes, messages)
            .into_iter()
            .find(|(first, _)| *first == NodeId(1))
            .unwrap();
        set_checksum(&mut packet);
        encode_body(&packet).ok()
    };
    let frame = |seq: u64, packet: Vec<u8>| {
        encode_frame(&LinkFrame::Data {
            seq,
            packet,
            mark: None,
        })
    };
    // 1. The largest packet that still fits a frame: node 1 appends itself to its trace, and
    // then it no longer does.
    let (mut fits, mut too_big) = (MAX_FRAME_LEN - 4096, MAX_FRAME_LEN);
    while too_big - fits > 1 {
        let mid = (fits + too_big) / 2;
        if packet_via_1(mid, NodeId(0)).is_some_and(|p| frame(1, p).is_ok()) {
            fits = mid;
        } else {
            too_big = mid;
        }
    }
    let len = fits;

    // We are node 0, with its certificate; the real node 0 is stopped so that it does not
    // take its link back.
    cluster.ok(&["chaos", "kill", "--node", "0"]);
    let node0 = node_credentials(&cluster, 0);
    let target = addr(&cluster, 1, 7000);
    let connection = connect(&node0, ALPN_LINK, target, 1).await.unwrap();
    let (mut send, _recv) = connection.open_bi().await.unwrap();
    let hello = LinkFrame::Hello(Hello {
        node: NodeId(0),
        topology,
        incarnation: 4242,
        received: None,
        revocation_serial: 0,
        process: None,
    });
    send.write_all(&encode_frame(&hello).unwrap())
        .await
        .unwrap();

    let mut seq = 0;
    let mut next = || {
        seq += 1;
        seq
    };
    // Data frames go in batches, one stream each.
    let mut batch = connection.open_uni().await.unwrap();
    batch
        .write_all(&frame(next(), packet_via_1(len, NodeId(0)).unwrap()).unwrap())
        .await
        .unwrap();
    // 2. Bytes that are no packet; 3. a route that claims to start at node 5.
    batch
        .write_all(&frame(next(), vec![1, 0xff, 0xfe, 0x00, 7]).unwrap())
        .await
        .unwrap();
    batch
        .write_all(&frame(next(), packet_via_1(10, NodeId(5)).unwrap()).unwrap())
        .await
        .unwrap();
    // 4. A sequence number replayed, in this batch and the next.
    let replayed = frame(7, packet_via_1(10, NodeId(0)).unwrap()).unwrap();
    batch.write_all(&replayed).await.unwrap();
    batch.finish().unwrap();
    let mut batch = connection.open_uni().await.unwrap();
    batch.write_all(&replayed).await.unwrap();
    // 5. A batch that ends inside a frame.
    batch
        .write_all(&replayed[..replayed.len() / 2])
        .await
        .unwrap();
    batch.finish().unwrap();
    // 6. An acknowledgement of frames never sent, and 7. a data frame on the hello stream.
    send.write_all(&encode_frame(&LinkFrame::Ack { upto: u64::MAX }).unwrap())
        .await
        .unwrap();
    send.write_all(&replayed).await.unwrap();
    eventually(
        "the cut batch and the data on the hello stream are malformed frames",
        || event(&cluster, 1, "frame_malformed") >= 2,
    );

    let dropped = |reason: &str| {
        cluster.node_status(1)["counters"]["dropped"][reason]
            .as_u64()
            .unwrap_or(0)
    };
    eventually("the oversized packet is a counted drop", || {
        dropped("frame_too_large") == 1
    });
    eventually("the garbage packet is a counted drop", || {
        dropped("packet_malformed") >= 1
    });
    let status = cluster.node_status(1);
    assert!(status["up"] == true, "{status}");
    // The lying route ends in a counted drop somewhere on its way, never in a panic; node 1
    // still holds its links to 3 and 5.
    assert!(status["links_up"].as_u64().unwrap() >= 2, "{status}");
    drop(send);
    connection.close(0u32.into(), b"done");
    cluster.ok(&["chaos", "restart", "--node", "0"]);
    eventually("every link of node 1 is up again", || {
        cluster.node_status(1)["links_up"] == 3
    });
    for (from, to) in [("0", "7"), ("1", "6"), ("3", "1")] {
        cluster.ok(&[
            "send",
            "--from",
            from,
            "--to",
            to,
            "--message",
            "after",
            "--wait",
        ]);
    }
    assert_eq!(cluster.status()["nodes_up"], 8);
}
