//! A node host (issue 50): several nodes in one process, linked with each other by a call and
//! with the rest of the cluster over QUIC, each with its own control address, keys and output.

mod common;

use common::{Cluster, within};
use std::process::{Command, Stdio};
use std::time::Duration;

/// The process of a node host, killed when dropped.
struct HostProcess(std::process::Child);

impl Drop for HostProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn four_nodes_in_one_process_route_with_the_rest_and_are_lost_together() {
    let cluster = Cluster::up("q:3", "127.2.150.0");
    cluster.wait_linked();
    // Nodes 4 to 7 (a Q_2 of the Q_3) leave their own processes for one.
    for n in 4..8 {
        cluster.ok(&["chaos", "kill", "--node", &n.to_string()]);
    }
    let config = |n: u64| config_file(&cluster, n);
    let mut args = vec!["daemon".to_string(), "--config".into(), config(4)];
    for n in 5..8 {
        args.extend(["--with-config".into(), config(n)]);
    }
    let host = HostProcess(
        Command::new(env!("CARGO_BIN_EXE_cuberoute"))
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // What `cluster up` will record for a node host: its pid for each of its nodes (so the
    // operator's commands find them, and `cluster down` stops the process).
    record_host(&cluster, 4..8, host.0.id());
    let links_of = |n: &str| cluster.show_node(n)["links"].as_array().unwrap().clone();
    let all_up = within(Duration::from_secs(20), || {
        (0..8).all(|n| links_of(&n.to_string()).iter().all(|l| l["up"] == true))
    });
    assert!(all_up.is_some(), "{:?}", links_of("4"));
    // One process, each node with its own control address.
    for n in 4..8 {
        let pid = cluster.show_node(&n.to_string())["pid"].as_u64();
        assert_eq!(pid, Some(u64::from(host.0.id())), "node {n}");
    }
    // One request tells what every node of a process is (what `cluster up`'s readiness asks):
    // any of them answers for all four; a node alone in its process, for itself.
    {
        use cuberoute_cluster::{ClusterClient, ClusterDir};
        use cuberoute_protocol::NodeId;
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let hosted = |node: u64| {
            runtime.block_on(async {
                let client = ClusterClient::open(&ClusterDir::new(cluster.path())).unwrap();
                let (statuses, stopped) = client
                    .hosted_statuses(NodeId(node), Duration::from_secs(5))
                    .await
                    .unwrap();
                let ids: Vec<u64> = statuses.iter().map(|s| s.id.0).collect();
                (ids, stopped)
            })
        };
        assert_eq!(hosted(6), (vec![4, 5, 6, 7], vec![]));
        assert_eq!(hosted(1), (vec![1], vec![]));
    }
    // Within the process a link is a call (no QUIC connection); to node 0, QUIC.
    for link in links_of("4") {
        let local = link["neighbour"] != 0;
        assert_eq!(link["transport"].is_null(), local, "{link}");
    }

    // Sets that cross the process's edge both ways, and one whose paths stay mostly inside.
    for (from, to) in [("0", "7"), ("6", "1"), ("4", "7")] {
        let copies = cluster.copies_delivered(from, to, "5s");
        assert_eq!(copies, 3, "{from} -> {to}");
    }
    let four = cluster.show_node("4");
    assert!(
        four["counters"]["packets_forwarded"].as_u64().unwrap() > 0
            || four["counters"]["packets_delivered"].as_u64().unwrap() > 0,
        "{four}"
    );

    // The process lost, its four nodes are lost together: their neighbours elsewhere take them
    // for dead.
    drop(host);
    let gone = within(Duration::from_secs(20), || {
        links_of("0")
            .iter()
            .any(|l| l["neighbour"] == 4 && l["up"] == false)
    });
    assert!(gone.is_some(), "{:?}", links_of("0"));
}

/// Node `n`'s configuration file.
fn config_file(cluster: &Cluster, n: u64) -> String {
    cluster
        .node_file(n, "node.toml")
        .to_str()
        .unwrap()
        .to_string()
}

/// Record `pid` in the cluster's run state as the process of `nodes`, with its start time.
fn record_host(cluster: &Cluster, nodes: std::ops::Range<u64>, pid: u32) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after_name = &stat[stat.rfind(')').unwrap() + 1..];
    let started = after_name.split_whitespace().nth(19).unwrap().to_string();
    let path = cluster.path().join("run.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut out = Vec::new();
    let mut hosted = false;
    for line in text.lines() {
        if let Some(n) = line.strip_prefix("id = ") {
            hosted = nodes.contains(&n.trim().parse::<u64>().unwrap());
        } else if hosted && line.starts_with("pid = ") {
            out.push(format!("pid = {pid}"));
            continue;
        } else if hosted && line.starts_with("started = ") {
            out.push(format!("started = {started}"));
            continue;
        }
        out.push(line.to_string());
    }
    std::fs::write(&path, out.join("\n") + "\n").unwrap();
}

#[test]
fn hosts_that_cannot_be_are_refused_as_usage() {
    let cluster = Cluster::up("q:2", "127.2.151.0");
    let config = |n: u64| config_file(&cluster, n);
    // The same node twice.
    let out = common::cuberoute(&[
        "daemon",
        "--config",
        &config(1),
        "--with-config",
        &config(1),
        "--check",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", common::stderr(&out));
    assert!(
        common::stderr(&out).contains("given twice"),
        "{}",
        common::stderr(&out)
    );
    // A file that is not there.
    let out = common::cuberoute(&[
        "daemon",
        "--config",
        &config(1),
        "--with-config",
        "/nonexistent/node.toml",
        "--check",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", common::stderr(&out));
    // Two nodes that can share a process: checked, nothing started.
    let out = common::cuberoute(&[
        "daemon",
        "--config",
        &config(1),
        "--with-config",
        &config(3),
        "--check",
    ]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    assert_eq!(
        common::stdout(&out).matches("configuration OK").count(),
        2,
        "{}",
        common::stdout(&out)
    );
}

#[test]
fn a_cluster_of_node_hosts_routes_survives_a_process_lost_and_leaves_nothing() {
    let cluster = Cluster::up_with(
        "q:3",
        &["--base-addr", "127.2.152.0", "--nodes-per-process", "4"],
    );
    cluster.wait_linked();
    let pids = cluster.pids();
    let mut processes = pids.clone();
    processes.sort();
    processes.dedup();
    assert_eq!(processes.len(), 2, "two processes of four nodes: {pids:?}");
    // The nodes of a process share one link address and one control address, its first
    // node's, and one socket at each: the machine's UDP table holds the link port and the
    // control port at two addresses of the cluster's, not eight.
    let mut homes = std::collections::BTreeMap::new();
    for (n, pid) in pids.iter().enumerate() {
        let status = cluster.show_node(&n.to_string());
        let config = &status["config"];
        let listen = config["listen"].as_str().unwrap().to_string();
        let control = config["control_listen"].as_str().unwrap().to_string();
        let home = homes
            .entry(*pid)
            .or_insert((listen.clone(), control.clone()));
        assert_eq!(*home, (listen, control), "node {n}");
    }
    assert_eq!(homes.len(), 2, "{homes:?}");
    let bound = |wanted: u16| -> Vec<std::net::Ipv4Addr> {
        std::fs::read_to_string("/proc/net/udp")
            .unwrap()
            .lines()
            .skip(1)
            .filter_map(|line| {
                let (ip, port) = line.split_whitespace().nth(1)?.split_once(':')?;
                let ip = std::net::Ipv4Addr::from(u32::from_be(u32::from_str_radix(ip, 16).ok()?));
                (u16::from_str_radix(port, 16).ok()? == wanted && ip.octets()[..3] == [127, 2, 152])
                    .then_some(ip)
            })
            .collect()
    };
    assert_eq!(bound(7000).len(), 2, "link sockets: {:?}", bound(7000));
    assert_eq!(bound(7001).len(), 2, "control sockets: {:?}", bound(7001));
    // A process's open files do not grow with its nodes: its links to the other process's four
    // nodes share one pidfd on it.
    for pid in &processes {
        let pidfds = std::fs::read_dir(format!("/proc/{pid}/fd"))
            .unwrap()
            .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
            .filter(|target| target.to_string_lossy().contains("pidfd"))
            .count();
        assert_eq!(pidfds, 1, "pidfds of process {pid}");
    }
    for (n, pid) in pids.iter().enumerate() {
        let status = cluster.show_node(&n.to_string());
        assert_eq!(status["pid"].as_u64(), Some(u64::from(*pid)), "node {n}");
        for link in status["links"].as_array().unwrap() {
            let neighbour = link["neighbour"].as_u64().unwrap() as usize;
            let local = pids[neighbour] == *pid;
            assert_eq!(link["transport"].is_null(), local, "{n}: {link}");
        }
    }
    for to in 1..8 {
        let copies = cluster.copies_delivered("0", &to.to_string(), "5s");
        assert_eq!(copies, 3, "0 -> {to}");
    }

    // Each process serves one exporter, at its first node's metrics address (the others have
    // none in force), with every one of its nodes' series labelled by the node.
    let mut exporters = std::collections::BTreeMap::new();
    for (n, pid) in pids.iter().enumerate() {
        let status = cluster.show_node(&n.to_string());
        if let Some(addr) = status["config"]["metrics_listen"].as_str() {
            assert!(
                exporters.insert(*pid, addr.to_string()).is_none(),
                "one exporter a process"
            );
        }
    }
    assert_eq!(exporters.len(), 2, "{exporters:?}");
    let mut scraped = std::collections::BTreeMap::new();
    let published = within(Duration::from_secs(5), || {
        scraped = exporters
            .iter()
            .map(|(pid, addr)| (*pid, common::scrape(addr)))
            .collect();
        let of = |n: usize| &scraped[&pids[n]];
        let sent = common::metric(of(0), "cuberoute_sets_accepted_total{node=\"0\"}");
        let delivered = (1..8).all(|to| {
            let count = format!("cuberoute_delivery_latency_seconds_count{{node=\"{to}\"}}");
            common::metric(of(to), &count).is_some_and(|c| c >= 3.0)
        });
        // A hosted node counts its links up; a link's own up series comes once it is down.
        let linked = (0..8usize).all(|n| {
            let up = format!("cuberoute_links_up{{node=\"{n}\"}}");
            common::metric(of(n), &up) == Some(3.0)
        });
        sent == Some(7.0) && delivered && linked
    });
    let all = || scraped.values().cloned().collect::<Vec<_>>().join("\n");
    assert!(published.is_some(), "{}", all());
    for (pid, text) in &scraped {
        let elsewhere = (0..8).filter(|&n| pids[n] != *pid);
        for n in elsewhere {
            let label = format!("node=\"{n}\"");
            assert!(
                !text.contains(&label),
                "node {n} is not in process {pid}: {text}"
            );
        }
    }

    // A cut between two nodes of one process: down at both ends, up again when healed.
    let (a, b) = (0..8u64)
        .flat_map(|a| (a + 1..8).map(move |b| (a, b)))
        .find(|&(a, b)| (a ^ b).count_ones() == 1 && pids[a as usize] == pids[b as usize])
        .unwrap();
    let link = format!("{a}-{b}");
    let up = |x: u64, y: u64| cluster.link(x, y)["up"] == true;
    let exporter = &exporters[&pids[a as usize]];
    let link_up = |x: u64, y: u64| {
        let series = format!("cuberoute_link_up{{neighbour=\"{y}\",node=\"{x}\"}}");
        common::metric(&common::scrape(exporter), &series)
    };
    assert_eq!(
        link_up(a, b),
        None,
        "no series while the link was always up"
    );
    cluster.ok(&["chaos", "cut", "--link", &link]);
    let down = within(Duration::from_secs(5), || !up(a, b) && !up(b, a));
    assert!(down.is_some(), "{link}: {}", cluster.link(a, b));
    let published = within(Duration::from_secs(5), || {
        link_up(a, b) == Some(0.0) && link_up(b, a) == Some(0.0)
    });
    assert!(
        published.is_some(),
        "{link}: down at both ends in the metrics"
    );
    cluster.ok(&["chaos", "heal", "--link", &link]);
    let healed = within(Duration::from_secs(5), || up(a, b) && up(b, a));
    assert!(healed.is_some(), "{link}: {}", cluster.link(a, b));
    let published = within(Duration::from_secs(5), || {
        link_up(a, b) == Some(1.0) && link_up(b, a) == Some(1.0)
    });
    assert!(published.is_some(), "{link}: up again in the metrics");

    // A process lost (killed from outside): its nodes go together, and `chaos restart` of one
    // of them brings the process back whole. (`chaos kill` of one node crashes that node alone:
    // `crashes_inside_a_node_host_and_of_a_whole_one_keep_every_promise`.)
    let killed = pids[1];
    let together: Vec<usize> = (0..8).filter(|&n| pids[n] == killed).collect();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(killed as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let gone = within(Duration::from_secs(5), || !common::process_exists(killed));
    assert!(gone.is_some());
    let status = cluster.status();
    for n in &together {
        let node = &status["nodes"].as_array().unwrap()[*n];
        assert_eq!(node["up"], false, "{node}");
    }
    cluster.ok(&["chaos", "restart", "--node", "1"]);
    cluster.wait_linked();
    let again = cluster.pids();
    for n in &together {
        assert_eq!(again[*n], again[1], "node {n} is back in node 1's process");
    }
    assert_ne!(again[1], killed);
    assert_eq!(cluster.copies_delivered("0", "7", "5s"), 3);

    // Down: nothing left behind.
    let mut left = again.clone();
    left.dedup();
    cluster.ok(&["cluster", "down"]);
    assert!(
        left.iter().all(|&pid| !common::process_exists(pid)),
        "{left:?}"
    );
}

#[test]
fn nodes_per_process_that_cannot_be_are_refused_as_usage() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    for (count, why) in [
        ("0", "at least 1"),
        ("9", "only 8 nodes"),
        ("some", "a number of nodes"),
    ] {
        let out = common::cuberoute(&[
            "cluster",
            "up",
            "q:3",
            "--dir",
            d,
            "--base-addr",
            "127.2.153.0",
            "--nodes-per-process",
            count,
        ]);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{count}: {}",
            common::stderr(&out)
        );
        assert!(
            common::stderr(&out).contains(why),
            "{count}: {}",
            common::stderr(&out)
        );
        assert!(!dir.path().join("run.toml").exists(), "nothing started");
    }
    let out = common::cuberoute(&[
        "cluster",
        "up",
        "q:3",
        "--dir",
        d,
        "--docker",
        "--nodes-per-process",
        "2",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", common::stderr(&out));
    // More nodes than a process may hold open files for: under a hard limit of 1,000 open
    // files, 744 a process (256 for the process, 1 a node: its store).
    let out = Command::new("sh")
        .args(["-c", "ulimit -n 1000 && exec \"$0\" \"$@\""])
        .arg(env!("CARGO_BIN_EXE_cuberoute"))
        .args(["cluster", "up", "q:10", "--dir", d])
        .args(["--base-addr", "127.2.153.0", "--nodes-per-process", "800"])
        .output()
        .unwrap();
    let err = common::stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("a process may hold at most 744 nodes here"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(!dir.path().join("run.toml").exists(), "nothing started");
}

/// The faults that act on nodes and links (state overwritten, packets corrupted, links cut, a
/// relay capturing and forging) keep every promise of RELIABILITY.md and docs/security.md on a
/// cluster of node hosts, plain and reliable: the chaos run's verdict is valid. Four nodes a
/// process, so most links are calls and the rest QUIC.
#[test]
fn chaos_on_node_hosts_keeps_every_promise() {
    let cluster = Cluster::up_with(
        "eh:2,2",
        &["--base-addr", "127.2.154.0", "--nodes-per-process", "4"],
    );
    let pids: std::collections::BTreeSet<u64> = cluster.status()["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["pid"].as_u64().unwrap())
        .collect();
    assert_eq!(pids.len(), 8, "32 nodes in 8 processes");
    for delivery in [
        &["--delivery", "plain"][..],
        &["--delivery", "reliable", "--life", "20s"],
    ] {
        let mut args = vec!["chaos", "run", "--json", "--check", "--rate", "30"];
        args.extend(["--duration", "6s"]);
        args.extend(["--faults", "state,buffers,cut,capture,forge"]);
        args.extend(delivery);
        let report: serde_json::Value = serde_json::from_str(cluster.ok(&args).trim()).unwrap();
        let verdict = &report["verdict"];
        assert_eq!(verdict["valid"], true, "{delivery:?}: {verdict}");
        assert!(report["sets_sent"].as_u64().unwrap() >= 300, "{report}");
        // The faults did act: variables overwritten, packets corrupted, payloads captured.
        assert!(
            report["state_corruptions"].as_u64().unwrap() > 0,
            "{report}"
        );
        assert!(report["captured"].as_u64().unwrap() > 0, "{report}");
    }
}

/// A node of a node host crashes alone (`chaos kill`): its process runs on with the others,
/// the node is down to every command, and `chaos restart` starts it in the same process. The
/// last node of a process to be killed takes the process with it, and a restart then starts the
/// process whole. The chaos run's crashes (one node inside its process), its `host` fault (a
/// whole process killed: what it cost, against the placement's promise) and `crash-ends` keep
/// every promise.
#[test]
fn crashes_inside_a_node_host_and_of_a_whole_one_keep_every_promise() {
    let cluster = Cluster::up_with(
        "eh:2,2",
        &["--base-addr", "127.2.156.0", "--nodes-per-process", "4"],
    );
    let pids = cluster.pids();
    let group: Vec<u64> = (0..32).filter(|&n| pids[n as usize] == pids[5]).collect();
    assert_eq!(group.len(), 4, "{pids:?}");
    let name = |n: u64| n.to_string();
    let up = |n: u64| cluster.node_status(n)["up"] == true;

    // One node crashed inside its process.
    cluster.ok(&["chaos", "kill", "--node", "5"]);
    let status = cluster.node_status(5);
    assert_eq!(status["up"], false, "{status}");
    assert!(
        status.to_string().contains("crashed inside its process"),
        "{status}"
    );
    assert!(common::process_exists(pids[5]), "its process runs on");
    assert!(group.iter().filter(|&&n| n != 5).all(|&n| up(n)));
    let to = *group.iter().find(|&&n| n != 5).unwrap();
    assert!(cluster.copies_delivered("0", &name(to), "5s") >= 1);
    let refused = cluster.refused(&["chaos", "kill", "--node", "5"]);
    assert!(common::stderr(&refused).contains("is not running"));
    cluster.ok(&["chaos", "restart", "--node", "5"]);
    assert!(up(5));
    assert_eq!(
        cluster.pids()[5],
        pids[5],
        "started again in the same process"
    );
    cluster.wait_linked();
    assert_eq!(
        cluster.copies_delivered("0", "5", "5s"),
        3,
        "on all its paths"
    );

    // The last node of a process takes the process with it; a restart starts it whole.
    for &n in &group {
        cluster.ok(&["chaos", "kill", "--node", &name(n)]);
    }
    assert!(
        within(Duration::from_secs(5), || !common::process_exists(pids[5])).is_some(),
        "the process exited with its last node"
    );
    cluster.ok(&["chaos", "restart", "--node", &name(group[1])]);
    let again = cluster.pids();
    assert_ne!(again[5], pids[5]);
    assert!(
        group
            .iter()
            .all(|&n| again[n as usize] == again[5] && up(n))
    );
    cluster.wait_linked();

    // The chaos run's crashes and a whole process lost, plain and reliable; then crash-ends.
    for (faults, delivery) in [
        ("crash,host", &["--delivery", "plain"][..]),
        ("crash,host", &["--delivery", "reliable", "--life", "20s"]),
        ("crash-ends", &["--delivery", "reliable", "--life", "20s"]),
    ] {
        let mut args = vec!["chaos", "run", "--json", "--check", "--rate", "20"];
        args.extend(["--duration", "6s", "--seed", "3", "--faults", faults]);
        args.extend(delivery);
        let report: serde_json::Value = serde_json::from_str(cluster.ok(&args).trim()).unwrap();
        let verdict = &report["verdict"];
        assert_eq!(verdict["valid"], true, "{faults} {delivery:?}: {verdict}");
        let windows = report["fault_windows"].to_string();
        if faults == "crash-ends" {
            let ends = &report["ends"];
            assert!(ends["kills"].as_u64().unwrap() > 0, "{ends}");
            assert_eq!(ends["kills"], ends["restarts"], "{ends}");
        } else {
            assert!(
                windows.contains("node dropped inside its node host"),
                "{windows}"
            );
            assert!(
                windows.contains("process kill (SIGKILL) of a node host"),
                "{windows}"
            );
            let host = &report["host_loss"];
            assert_eq!(host["nodes"].as_array().unwrap().len(), 4, "{host}");
            assert_eq!(host["below_promise"], 0, "{host}");
            assert!(host["promised_a_copy"].as_u64().unwrap() > 0, "{host}");
        }
        cluster.wait_linked();
    }
}

/// Ctrl-C on `cluster up --nodes-per-process`, while it generates, spawns its node hosts or
/// waits for them, stops every process it started.
#[test]
fn an_interrupted_up_of_node_hosts_leaves_no_process_behind() {
    let args = ["q:10", "--nodes-per-process", "auto"];
    common::interrupted_ups_leave_nothing(&args, 160, &[100, 300, 700, 1500]);
}

/// A process of 2,048 nodes answers for all of them in pages (each well under a frame): the first
/// page says where to go on, and the pages together name every node once.
#[test]
fn a_large_node_host_answers_for_all_its_nodes_page_after_page() {
    use cuberoute_cluster::{ClusterClient, ClusterDir};
    use cuberoute_protocol::NodeId;
    use cuberoute_protocol::wire::control::{Fault, Request, Response};
    let cluster = Cluster::up_with(
        "q:11",
        &["--base-addr", "127.2.180.0", "--nodes-per-process", "2048"],
    );
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let client = ClusterClient::open(&ClusterDir::new(cluster.path())).unwrap();
        let first = client
            .request(NodeId(700), &Request::Hosted { after: None })
            .await
            .unwrap();
        let Response::Hosted { statuses, next, .. } = first else {
            panic!("{first:?}")
        };
        assert!(statuses.len() < 2048, "{}", statuses.len());
        assert_eq!(
            next,
            statuses.last().map(|s| s.id),
            "the page ends where it says"
        );
        let (all, stopped) = client
            .hosted_statuses(NodeId(700), Duration::from_secs(10))
            .await
            .unwrap();
        let ids: Vec<u64> = all.iter().map(|s| s.id.0).collect();
        assert_eq!(ids, (0..2048).collect::<Vec<_>>());
        assert!(stopped.is_empty());
        assert!(all.iter().all(|s| s.links.iter().all(|l| l.up)));

        // The same process's readiness in a few bytes: every node running, every link end up.
        let brief = client
            .host_readiness(NodeId(700), Duration::from_secs(10))
            .await
            .unwrap();
        assert_eq!(brief.running, 2048, "{brief:?}");
        assert_eq!(
            (brief.link_ends_up, brief.link_ends),
            (2048 * 11, 2048 * 11)
        );
        assert_eq!((brief.not_ready, brief.stopped.len()), (0, 0), "{brief:?}");
        let bytes = cuberoute_protocol::wire::encode_body(&brief).unwrap().len();
        assert!(bytes < 32, "{bytes} bytes for {brief:?}");
        // One node crashed inside the process: named, and not counted as running.
        let crash = Request::Inject(Fault::CrashHosted { node: NodeId(5) });
        let done = client.request(NodeId(700), &crash).await.unwrap();
        assert!(matches!(done, Response::Injected(_)), "{done:?}");
        let brief = client
            .host_readiness(NodeId(700), Duration::from_secs(10))
            .await
            .unwrap();
        assert_eq!((brief.running, brief.stopped), (2047, vec![NodeId(5)]));
    });
}

/// Many sets in one request a process (`Request::SendMany`, `Request::AwaitMany`): a client's
/// batch across two node hosts arrives whole, in order; a set of a node of another process, or
/// a request of more than the most sets, is refused with why, and the others of the request go
/// on.
#[test]
fn many_sets_go_in_one_request_a_process() {
    use cuberoute_cluster::ops::traffic::{SendOptions, SetToSend};
    use cuberoute_cluster::{ClusterClient, ClusterDir};
    use cuberoute_protocol::delivery::Mode;
    use cuberoute_protocol::wire::control::{
        AwaitOne, ControlErrorKind, MAX_SETS_PER_REQUEST, Request, Response, SendOne, SendSet,
    };
    use cuberoute_protocol::{NodeId, SendRequest};
    let cluster = Cluster::up_with(
        "q:6",
        &["--base-addr", "127.2.184.0", "--nodes-per-process", "32"],
    );
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let client = ClusterClient::open(&ClusterDir::new(cluster.path())).unwrap();
        let processes = &client.process_of().nodes;
        assert_eq!(processes.len(), 2, "{processes:?}");
        // 300 sets, both ways between the processes and inside each: three requests of
        // sources a process at most (128 a request), sealed end to end.
        let sets: Vec<SetToSend> = (0..300u64)
            .map(|i| SetToSend {
                from: NodeId(i % 64),
                request: SendRequest::to(NodeId((i * 37 + 11) % 64)),
                payload: i.to_be_bytes().to_vec(),
            })
            .filter(|set| set.from != set.request.to[0])
            .collect();
        let options = SendOptions {
            wait: Some(Duration::from_secs(20)),
            ..SendOptions::default()
        };
        let reports = client.send_many(sets.clone(), options).await;
        assert_eq!(reports.len(), sets.len());
        for (set, report) in sets.iter().zip(&reports) {
            let report = report.as_ref().unwrap();
            assert_eq!(report.from, set.from.0);
            assert_eq!(report.k, 6, "{report:?}");
            assert_eq!(report.copies_delivered(), 6, "{report:?}");
            assert!(report.sealed && report.lost == 0, "{report:?}");
        }
        // Each set a sequence id of its own at its source, in the order sent.
        let mut seqs = std::collections::HashMap::<u64, Vec<u64>>::new();
        for report in reports.iter().flatten() {
            seqs.entry(report.from).or_default().push(report.seq);
        }
        assert!(
            seqs.values().all(|s| s.windows(2).all(|w| w[0] < w[1])),
            "{seqs:?}"
        );

        // Asked of node 0: node 40 runs in the other process.
        let one = |from: u64| SendOne {
            from: NodeId(from),
            set: SendSet {
                request: SendRequest::to(NodeId(63)),
                payload: b"x".to_vec(),
                trace: false,
                mode: Mode::default(),
                deadline_ms: 1000,
                clear: true,
            },
        };
        let answer = client
            .request(NodeId(0), &Request::SendMany(vec![one(1), one(40), one(2)]))
            .await
            .unwrap();
        let Response::SentMany(taken) = answer else {
            panic!("{answer:?}")
        };
        assert!(taken[0].is_ok() && taken[2].is_ok(), "{taken:?}");
        let refused = taken[1].as_ref().unwrap_err();
        assert_eq!(refused.kind, ControlErrorKind::UnknownNode);
        assert!(
            refused
                .message
                .contains("source 40 does not run in the process of node 0"),
            "{refused}"
        );
        // The two taken arrive at node 63 (the other process): awaited there, and refused at
        // node 0, which does not run it.
        let taken: Vec<_> = taken.into_iter().flatten().collect();
        let awaits: Vec<AwaitOne> = [(1, &taken[0]), (2, &taken[1])]
            .into_iter()
            .map(|(src, accepted)| AwaitOne {
                dst: NodeId(63),
                src: NodeId(src),
                seq: accepted.seq,
                sent_at_us: accepted.sent_at_us,
                copies: 0,
                sealed: false,
                mode: Mode::default(),
            })
            .collect();
        let ask = Request::AwaitMany {
            sets: awaits,
            timeout_ms: 10_000,
        };
        let answer = client.request(NodeId(40), &ask).await.unwrap();
        let Response::CopiesMany(copies) = answer else {
            panic!("{answer:?}")
        };
        for set in &copies {
            let set = set.as_ref().unwrap();
            assert_eq!(set.len(), 6, "{set:?}");
            assert!(set.iter().all(|c| c.payload.is_empty() && c.path.is_none()));
        }
        let answer = client.request(NodeId(0), &ask).await.unwrap();
        let Response::CopiesMany(copies) = answer else {
            panic!("{answer:?}")
        };
        assert!(
            copies.iter().all(|c| c
                .as_ref()
                .is_err_and(|e| e.kind == ControlErrorKind::UnknownNode)),
            "{copies:?}"
        );
        // One set more than a request may carry: the request is refused whole.
        let too_many = Request::SendMany(vec![one(1); MAX_SETS_PER_REQUEST + 1]);
        let refused = client.request(NodeId(0), &too_many).await.unwrap_err();
        let cuberoute_daemon::client::ClientError::Refused { error, .. } = refused else {
            panic!("{refused:?}")
        };
        assert_eq!(error.kind, ControlErrorKind::BadRequest);
        assert!(error.message.contains("at most 128"), "{error}");
    });
}
