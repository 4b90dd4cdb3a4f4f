//! Least privilege for clients, on real local clusters: client certificates of a role
//! (`cluster client-cert`), each allowed what its role allows and refused the rest with one
//! line naming the role needed, nothing done and the refusal counted; `--as` limits where a
//! certificate sends; the operator's certificate does everything; a certificate of another
//! cluster opens nothing. The daemons decide, whatever the client: a hand-made client that
//! skips the CLI's own checks is refused the same.

mod common;

use common::{Cluster, cuberoute, stderr, stdout};
use cuberoute_daemon::client::{Client, ClientError};
use cuberoute_daemon::roles::REFUSAL_PREFIX;
use cuberoute_daemon::tls::Credentials;
use cuberoute_protocol::delivery::Mode;
use cuberoute_protocol::wire::control::{ControlErrorKind, Fault, Request, Response, SendSet};
use cuberoute_protocol::{NodeId, SendRequest};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// `cluster client-cert --role ROLE [EXTRA...] --out TMP/NAME` for `cluster`; the directory.
fn client_cert(cluster: &Cluster, tmp: &Path, name: &str, role: &str, extra: &[&str]) -> PathBuf {
    let out = tmp.join(name);
    let mut args = vec!["cluster", "client-cert", "--role", role];
    args.extend(extra);
    args.extend(["--out", out.to_str().unwrap()]);
    let said = cluster.ok(&args);
    assert!(said.contains("a client certificate of role"), "{said}");
    out
}

/// Run `args --cert CERT` against `cluster`; it must succeed. Its stdout.
fn ok_as(cluster: &Cluster, cert: &Path, args: &[&str]) -> String {
    let mut all = args.to_vec();
    all.extend(["--cert", cert.to_str().unwrap()]);
    cluster.ok(&all)
}

/// Run `args --cert CERT` against `cluster`; it must fail with one line on stderr that holds
/// `line`, and print nothing on stdout.
fn refused_as(cluster: &Cluster, cert: &Path, args: &[&str], line: &str) {
    let mut all = args.to_vec();
    all.extend(["--cert", cert.to_str().unwrap()]);
    let out = cluster.run(&all);
    let err = stderr(&out);
    assert!(!out.status.success(), "{all:?} succeeded: {}", stdout(&out));
    assert_eq!(out.status.code(), Some(1), "{all:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{all:?}: one line, not {err:?}");
    assert!(err.contains(line), "{all:?}: {err:?} does not say {line:?}");
    assert_eq!(stdout(&out), "", "{all:?}");
}

fn counter(node: &Value, name: &str) -> u64 {
    node["counters"]["events"][name].as_u64().unwrap_or(0)
}

fn sets_accepted(cluster: &Cluster, id: u64) -> u64 {
    cluster.node_status(id)["counters"]["sets_accepted"]
        .as_u64()
        .unwrap()
}

fn link_cut(cluster: &Cluster, id: u64, neighbour: u64) -> bool {
    let node: Value = serde_json::from_str(
        cluster
            .ok(&["show", "links", "--node", &id.to_string(), "--json"])
            .trim(),
    )
    .unwrap();
    node["links"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["neighbour"] == neighbour)
        .unwrap()["cut"]
        .as_bool()
        .unwrap()
}

/// A read certificate reads (status, show, recv, monitor's notices, the revocation list), and
/// is refused every send, consume, reload, revoke and chaos request, each with one line naming
/// the role it needs; nothing is done, and the nodes count what they refused. Before roles,
/// any client certificate could do all of it.
#[test]
fn a_read_certificate_reads_and_is_refused_everything_else() {
    let cluster = Cluster::up("q:2", "127.2.100.0");
    let tmp = tempfile::tempdir().unwrap();
    let read = client_cert(&cluster, tmp.path(), "read", "read", &[]);
    for file in ["ca.pem", "client.pem", "client.key"] {
        assert!(read.join(file).is_file(), "{file}");
    }

    let status: Value =
        serde_json::from_str(ok_as(&cluster, &read, &["cluster", "status", "--json"]).trim())
            .unwrap();
    assert_eq!(status["nodes_up"], 4, "{status}");
    let node = ok_as(&cluster, &read, &["show", "node", "--node", "1"]);
    assert!(node.contains("fault injection allowed"), "{node}");
    ok_as(
        &cluster,
        &read,
        &["show", "route", "--from", "0", "--to", "3"],
    );
    ok_as(&cluster, &read, &["recv", "--node", "1"]);
    ok_as(&cluster, &read, &["cluster", "revoke", "--list"]);
    ok_as(&cluster, &read, &["monitor", "--for", "1s", "--node", "1"]);

    let need = |what: &str, role: &str| {
        format!("this client certificate has role read; {what} needs role {role}")
    };
    refused_as(
        &cluster,
        &read,
        &[
            "send",
            "--from",
            "0",
            "--to",
            "3",
            "--message",
            "hi",
            "--wait",
        ],
        &need("send", "send"),
    );
    refused_as(
        &cluster,
        &read,
        &["ping", "--from", "0", "--to", "3", "--count", "1", "--json"],
        &need("send", "send"),
    );
    refused_as(
        &cluster,
        &read,
        &["recv", "--node", "1", "--consume"],
        &need("consume", "send"),
    );
    refused_as(
        &cluster,
        &read,
        &["cluster", "reload"],
        &need("reload", "operate"),
    );
    refused_as(
        &cluster,
        &read,
        &["cluster", "revoke", "--node", "3"],
        &need("revoke", "operate"),
    );
    refused_as(
        &cluster,
        &read,
        &["chaos", "cut", "--link", "0-1"],
        &need("chaos", "chaos"),
    );
    refused_as(
        &cluster,
        &read,
        &["chaos", "corrupt-state", "--all"],
        &need("chaos", "chaos"),
    );
    refused_as(
        &cluster,
        &read,
        &["chaos", "capture", "--node", "1"],
        &need("chaos", "chaos"),
    );
    refused_as(
        &cluster,
        &read,
        &["chaos", "captured", "--node", "1"],
        &need("chaos captured", "chaos"),
    );
    refused_as(
        &cluster,
        &read,
        &[
            "chaos",
            "run",
            "--faults",
            "state",
            "--duration",
            "1s",
            "--rate",
            "5",
        ],
        &need("chaos", "chaos"),
    );

    // Nothing was done: no set sent, no link cut, no state overwritten, no relay capturing,
    // nothing revoked (not even on disk, where a restarted node would read it).
    for id in 0..4 {
        let node = cluster.node_status(id);
        assert_eq!(node["counters"]["sets_accepted"], 0, "node {id}: {node}");
        assert_eq!(node["chaos"]["state_corruptions"], 0, "node {id}: {node}");
        assert_eq!(node["revocation_serial"], 0, "node {id}: {node}");
        assert!(!cluster.node_file(id, "revoked.bin").exists(), "node {id}");
    }
    assert!(!cluster.path().join("revoked.bin").exists());
    assert!(!link_cut(&cluster, 0, 1) && !link_cut(&cluster, 1, 0));
    let out = cluster.ok(&["chaos", "captured", "--node", "1"]);
    assert_eq!(out, "", "node 1 captured nothing");
    // The nodes counted what reached them: send, ping, cut (its first end) and corrupt-state
    // (its first node) at node 0; consume, capture and captured at node 1. Reload, revoke and
    // chaos run are refused before any request (the CLI knows its certificate's role; a
    // hand-made client is refused by the nodes: the test below).
    assert_eq!(counter(&cluster.node_status(0), "request_refused_role"), 4);
    assert_eq!(counter(&cluster.node_status(1), "request_refused_role"), 3);
}

/// A send certificate `--as 1` sends from node 1 (and waits for the copies at the destination:
/// reading is not limited), and is refused a send or consume at node 2, a reload and chaos.
#[test]
fn a_send_certificate_as_node_1_sends_from_node_1_only() {
    let cluster = Cluster::up("q:2", "127.2.101.0");
    let tmp = tempfile::tempdir().unwrap();
    let send = client_cert(&cluster, tmp.path(), "send1", "send", &["--as", "1"]);

    let report: Value = serde_json::from_str(
        ok_as(
            &cluster,
            &send,
            &[
                "send",
                "--from",
                "1",
                "--to",
                "2",
                "--message",
                "from one",
                "--wait",
                "--json",
            ],
        )
        .trim(),
    )
    .unwrap();
    assert_eq!(report["k"], 2, "{report}");
    assert_eq!(report["copies"].as_array().unwrap().len(), 2, "{report}");
    assert!(
        report["copies"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["delivered"] == true),
        "{report}"
    );
    // Reading at node 2 is not limited by --as.
    let entries = common::json_lines(&ok_as(&cluster, &send, &["recv", "--node", "2", "--json"]));
    assert_eq!(entries.len(), 2, "{entries:?}");
    assert!(entries.iter().all(|e| e["payload"] == "from one"));
    // Consuming at node 1, its own, is allowed (nothing reliable is there yet).
    ok_as(&cluster, &send, &["recv", "--node", "1", "--consume"]);

    let at_2 = |what: &str| {
        format!("this client certificate has role send as node 1 only; {what} at node 2 is refused")
    };
    refused_as(
        &cluster,
        &send,
        &[
            "send",
            "--from",
            "2",
            "--to",
            "1",
            "--message",
            "hi",
            "--wait",
        ],
        &at_2("send"),
    );
    refused_as(
        &cluster,
        &send,
        &["recv", "--node", "2", "--consume"],
        &at_2("consume"),
    );
    refused_as(
        &cluster,
        &send,
        &["cluster", "reload"],
        "this client certificate has role send; reload needs role operate",
    );
    refused_as(
        &cluster,
        &send,
        &["chaos", "cut", "--link", "1-3"],
        "this client certificate has role send; chaos needs role chaos",
    );
    assert_eq!(sets_accepted(&cluster, 1), 1);
    assert_eq!(sets_accepted(&cluster, 2), 0, "node 2 sent nothing");
    assert_eq!(counter(&cluster.node_status(2), "request_refused_role"), 2);
}

/// operate reloads and revokes and is refused chaos; chaos injects faults and reads what a
/// capturing relay kept; the operator's certificate, every client command's default, does all
/// of it. `cluster status` and `show node` say whether each node takes fault injection, and a
/// node with `chaos.allow = false` refuses it even to the operator.
#[test]
fn operate_reloads_chaos_injects_and_the_operator_does_everything() {
    let cluster = Cluster::up("q:2", "127.2.102.0");
    let tmp = tempfile::tempdir().unwrap();
    let operate = client_cert(&cluster, tmp.path(), "operate", "operate", &[]);
    let chaos = client_cert(&cluster, tmp.path(), "chaos", "chaos", &[]);

    // operate: also everything before it, and reload; not chaos.
    let reloaded = ok_as(&cluster, &operate, &["cluster", "reload"]);
    assert_eq!(reloaded.matches("reloaded").count(), 4, "{reloaded}");
    ok_as(
        &cluster,
        &operate,
        &[
            "send",
            "--from",
            "0",
            "--to",
            "3",
            "--message",
            "hi",
            "--wait",
        ],
    );
    refused_as(
        &cluster,
        &operate,
        &["chaos", "cut", "--link", "0-1"],
        "this client certificate has role operate; chaos needs role chaos",
    );
    refused_as(
        &cluster,
        &operate,
        &["chaos", "captured", "--node", "1"],
        "this client certificate has role operate; chaos captured needs role chaos",
    );

    // chaos: cut and heal a link, make a relay capture and read what it kept.
    ok_as(&cluster, &chaos, &["chaos", "cut", "--link", "0-1"]);
    assert!(link_cut(&cluster, 0, 1) && link_cut(&cluster, 1, 0));
    ok_as(&cluster, &chaos, &["chaos", "heal", "--link", "0-1"]);
    assert!(!link_cut(&cluster, 0, 1));
    ok_as(&cluster, &chaos, &["chaos", "capture", "--node", "1"]);
    ok_as(&cluster, &chaos, &["chaos", "captured", "--node", "1"]);
    ok_as(
        &cluster,
        &chaos,
        &["chaos", "capture", "--node", "1", "--off"],
    );

    // The operator's certificate: every role, with no --cert.
    cluster.ok(&[
        "send",
        "--from",
        "1",
        "--to",
        "2",
        "--message",
        "op",
        "--wait",
    ]);
    cluster.ok(&["cluster", "reload", "--node", "2"]);
    cluster.ok(&["chaos", "cut", "--link", "2-3"]);
    cluster.ok(&["chaos", "heal", "--link", "2-3"]);
    cluster.ok(&["chaos", "corrupt-state", "--node", "2"]);
    for id in 0..4 {
        assert_eq!(
            counter(&cluster.node_status(id), "request_refused_role"),
            u64::from(id < 2),
            "operate's cut at node 0 and captured at node 1, and nothing else"
        );
    }

    // Whether a node takes fault injection is in its status; with chaos.allow = false it
    // refuses even a chaos certificate and the operator.
    let status = cluster.ok(&["cluster", "status"]);
    assert!(
        status.lines().nth(1).unwrap().ends_with("allowed"),
        "{status}"
    );
    assert!(status.contains("4/4 allowed"), "{status}");
    let file = cluster.node_file(2, "node.toml");
    let config = std::fs::read_to_string(&file).unwrap() + "\n[chaos]\nallow = false\n";
    std::fs::write(&file, config).unwrap();
    ok_as(&cluster, &operate, &["cluster", "reload", "--node", "2"]);
    assert_eq!(cluster.node_status(2)["chaos_allowed"], false);
    assert_eq!(cluster.node_status(1)["chaos_allowed"], true);
    let status = cluster.ok(&["cluster", "status"]);
    assert!(status.contains("3/4 allowed"), "{status}");
    let row = status.lines().find(|l| l.starts_with("10 ")).unwrap();
    assert!(row.ends_with("refused"), "{status}");
    let node = cluster.ok(&["show", "node", "--node", "2"]);
    assert!(
        node.contains("fault injection refused (chaos.allow = false)"),
        "{node}"
    );
    for cert in [Some(&chaos), None] {
        let mut args = vec!["chaos", "corrupt-state", "--node", "2"];
        if let Some(cert) = cert {
            args.extend(["--cert", cert.to_str().unwrap()]);
        }
        let out = cluster.run(&args);
        assert!(!out.status.success(), "{}", stdout(&out));
        assert!(
            stderr(&out).contains("does not allow fault injection (chaos.allow = false)"),
            "{}",
            stderr(&out)
        );
    }

    // operate revokes: the list signed, written and pushed.
    ok_as(&cluster, &operate, &["cluster", "revoke", "--node", "3"]);
    assert_eq!(cluster.node_status(0)["revocation_serial"], 1);
}

/// A client certificate of another cluster (signed by another CA) is refused by the client
/// with one line and exit 2, and by the daemons at the handshake, counted; so is a --cert
/// directory that is missing or holds no client certificate.
#[test]
fn a_certificate_of_another_cluster_is_refused() {
    let cluster = Cluster::up("q:2", "127.2.103.0");
    let tmp = tempfile::tempdir().unwrap();
    // Another cluster of the same topology, generated only (nothing runs on its addresses).
    let other = tmp.path().join("other");
    common::ok(&[
        "cluster",
        "init",
        "q:2",
        "--dir",
        other.to_str().unwrap(),
        "--base-addr",
        "127.2.104.0",
    ]);
    let foreign = tmp.path().join("foreign");
    common::ok(&[
        "cluster",
        "client-cert",
        "--dir",
        other.to_str().unwrap(),
        "--role",
        "chaos",
        "--out",
        foreign.to_str().unwrap(),
    ]);
    let usage_line = |args: &[&str], line: &str| {
        let out = cluster.refused(args);
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err:?}");
        assert!(err.contains(line), "{args:?}: {err:?}");
    };
    let foreign_str = foreign.to_str().unwrap();
    for args in [
        vec!["cluster", "status", "--cert", foreign_str],
        vec![
            "send",
            "--from",
            "0",
            "--to",
            "3",
            "--message",
            "x",
            "--cert",
            foreign_str,
        ],
        vec!["chaos", "cut", "--link", "0-1", "--cert", foreign_str],
    ] {
        usage_line(&args, "not signed by the CA of the cluster in");
    }
    let missing = tmp.path().join("missing");
    usage_line(
        &["cluster", "status", "--cert", missing.to_str().unwrap()],
        "no such directory",
    );
    // A node's directory holds a certificate and the CA, but no client certificate.
    let node_dir = cluster.path().join("nodes/1");
    usage_line(
        &["recv", "--node", "1", "--cert", node_dir.to_str().unwrap()],
        "client.pem is missing",
    );

    // The daemons refuse it at the handshake, whatever the client: a hand-made one.
    let credentials = Credentials::load(
        &foreign.join("ca.pem"),
        &foreign.join("client.pem"),
        &foreign.join("client.key"),
    )
    .unwrap();
    let before = counter(&cluster.node_status(0), "client_refused");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let answer = runtime.block_on(async {
        let client = Client::new(&credentials).unwrap();
        let connection = client.connect(NodeId(0), "127.2.103.1:7001").await?;
        connection
            .request(&Request::Inject(Fault::Cut {
                neighbour: NodeId(1),
            }))
            .await
    });
    assert!(answer.is_err(), "{answer:?}");
    assert!(
        common::within(std::time::Duration::from_secs(10), || {
            counter(&cluster.node_status(0), "client_refused") > before
        })
        .is_some()
    );
    assert!(!link_cut(&cluster, 0, 1));
}

/// What an attacker who has read the code would try: skip the CLI, load a certificate of a
/// role and ask the control API for everything. Each node answers what the role allows and
/// refuses the rest (`Forbidden`, the line naming the role needed), counted; `--as` holds at
/// the node itself.
#[test]
fn the_daemons_refuse_what_the_role_does_not_allow_whatever_the_client() {
    let cluster = Cluster::up("q:2", "127.2.105.0");
    let tmp = tempfile::tempdir().unwrap();
    let load = |dir: &Path| {
        Credentials::load(
            &dir.join("ca.pem"),
            &dir.join("client.pem"),
            &dir.join("client.key"),
        )
        .unwrap()
    };
    let read = load(&client_cert(&cluster, tmp.path(), "read", "read", &[]));
    let send1 = load(&client_cert(
        &cluster,
        tmp.path(),
        "send1",
        "send",
        &["--as", "1"],
    ));
    let operate = load(&client_cert(
        &cluster,
        tmp.path(),
        "operate",
        "operate",
        &[],
    ));
    let send = |from_node_to: u64| {
        Request::Send(SendSet {
            request: SendRequest::to(NodeId(from_node_to)),
            payload: b"forged".to_vec(),
            trace: false,
            mode: Mode::default(),
            deadline_ms: 1000,
            clear: false,
        })
    };
    let consume = Request::Consume {
        consumer: "c".into(),
        taken: None,
        max: 1,
        wait_ms: 0,
        clear: None,
    };
    // (certificate, node, request, the role refused, if refused)
    let cases: Vec<(&Credentials, u64, Request, Option<&str>)> = vec![
        (&read, 2, Request::Status, None),
        (
            &read,
            2,
            Request::Recv {
                after: 0,
                max: 1,
                wait_ms: 0,
                clear: None,
            },
            None,
        ),
        (&read, 2, send(1), Some("read; send needs role send")),
        (
            &read,
            2,
            consume.clone(),
            Some("read; consume needs role send"),
        ),
        (
            &read,
            2,
            Request::Reload,
            Some("read; reload needs role operate"),
        ),
        (
            &read,
            2,
            Request::Revoke {
                signed: vec![1, 2, 3],
            },
            Some("read; revoke needs role operate"),
        ),
        (
            &read,
            2,
            Request::Inject(Fault::Cut {
                neighbour: NodeId(0),
            }),
            Some("read; chaos needs role chaos"),
        ),
        (
            &read,
            2,
            Request::Inject(Fault::Heal {
                neighbour: NodeId(0),
            }),
            Some("read; chaos needs role chaos"),
        ),
        (
            &read,
            2,
            Request::Captured { after: 0, max: 1 },
            Some("read; chaos captured needs role chaos"),
        ),
        (
            &send1,
            2,
            send(1),
            Some("send as node 1 only; send at node 2 is refused"),
        ),
        (
            &send1,
            2,
            consume.clone(),
            Some("send as node 1 only; consume at node 2 is refused"),
        ),
        (
            &send1,
            2,
            Request::Inject(Fault::Capture { on: true }),
            Some("send; chaos needs role chaos"),
        ),
        (&send1, 1, send(2), None),
        (&send1, 1, consume, None),
        (
            &operate,
            2,
            Request::Inject(Fault::Forge {
                on: true,
                what: Default::default(),
            }),
            Some("operate; chaos needs role chaos"),
        ),
        (&operate, 2, Request::Reload, None),
    ];
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mut refused = [0u64; 4];
    for (credentials, node, request, refusal) in &cases {
        let answer = runtime.block_on(async {
            let client = Client::new(credentials).unwrap();
            let addr = format!("127.2.105.{}:7001", node + 1);
            let connection = client.connect(NodeId(*node), &addr).await?;
            let answer = connection.request(request).await;
            connection.close();
            answer
        });
        match (refusal, answer) {
            (None, Ok(response)) => {
                assert!(!matches!(response, Response::Error(_)), "{request:?}")
            }
            (Some(line), Err(ClientError::Refused { error, .. })) => {
                assert_eq!(error.kind, ControlErrorKind::Forbidden, "{request:?}");
                assert_eq!(
                    error.message,
                    format!("{REFUSAL_PREFIX}{line}"),
                    "{request:?}"
                );
                refused[*node as usize] += 1;
            }
            (expected, answer) => panic!("{request:?} at {node}: {answer:?}, not {expected:?}"),
        }
    }
    for (id, &n) in refused.iter().enumerate() {
        let node = cluster.node_status(id as u64);
        assert_eq!(counter(&node, "request_refused_role"), n, "node {id}");
    }
    // Nothing refused was done: node 2 sent nothing and no relay captures or forges.
    let node2 = cluster.node_status(2);
    assert_eq!(node2["counters"]["sets_accepted"], 0, "{node2}");
    assert!(!link_cut(&cluster, 2, 0));
    assert_eq!(sets_accepted(&cluster, 1), 1, "the one send allowed");
}

/// `cluster client-cert` refuses bad input with one line and exit 2, and writes nothing.
#[test]
fn client_cert_refuses_bad_input_with_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("c");
    let d = dir.to_str().unwrap();
    common::ok(&[
        "cluster",
        "init",
        "q:2",
        "--dir",
        d,
        "--base-addr",
        "127.2.106.0",
    ]);
    let out = tmp.path().join("out");
    let o = out.to_str().unwrap();
    let cases: [(&[&str], &str); 9] = [
        (&["--role", "admin"], "unknown role \"admin\""),
        (&["--role", "READ"], "unknown role"),
        (&["--role", "send", "--as", "4"], "node 4 is not in q:2"),
        (&["--role", "send", "--as", "1,,2"], "empty item"),
        (&["--role", "send", "--as", "one"], "one"),
        (&["--role", "send", "--as", "1,1"], "node 1 is given twice"),
        (&["--role", "read", "--as", "1"], "role read does not send"),
        // The cluster directory holds the operator's certificate: never overwritten.
        (&["--role", "read", "--out", d], "exists already"),
        (
            &["--role", "read", "--dir", "/nonexistent/c"],
            "holds no cluster",
        ),
    ];
    for (args, line) in cases {
        let mut all = vec!["cluster", "client-cert"];
        all.extend(args);
        if !args.contains(&"--dir") {
            all.extend(["--dir", d]);
        }
        if !args.contains(&"--out") {
            all.extend(["--out", o]);
        }
        let run = cuberoute(&all);
        let err = stderr(&run);
        assert_eq!(run.status.code(), Some(2), "{all:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{all:?}: {err:?}");
        assert!(err.contains(line), "{all:?}: {err:?} does not say {line:?}");
        assert!(
            !out.join("client.pem").exists(),
            "{all:?} wrote a certificate"
        );
    }
    // Written once, never over.
    common::ok(&[
        "cluster",
        "client-cert",
        "--dir",
        d,
        "--role",
        "read",
        "--out",
        o,
    ]);
    let first = std::fs::read(out.join("client.pem")).unwrap();
    let run = cuberoute(&[
        "cluster",
        "client-cert",
        "--dir",
        d,
        "--role",
        "chaos",
        "--out",
        o,
    ]);
    assert_eq!(run.status.code(), Some(2), "{}", stderr(&run));
    assert_eq!(std::fs::read(out.join("client.pem")).unwrap(), first);
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(out.join("client.key"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "the key is its owner's only");
}
