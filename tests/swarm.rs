//! `cluster swarm` end to end on a testbed of three Docker engines (`cuberoute testbed up
//! --hosts 3`): EH(2,2), 32 tasks over three hosts by the default placement, reached from this
//! machine by the same client as a local cluster, then taken down to nothing; then on the same
//! testbed EH(1,2) in tasks of up to four nodes each (`--nodes-per-container 4`).
//!
//! One engine-heavy test only: 32 containers on three engines on two cores is slow (its
//! timings are printed on stderr, which the harness does not capture). It needs root and the
//! Docker engine; without either it says so on stderr and does NOT run.

mod common;

use common::{cuberoute, json_lines, ok, stderr, stdout};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

fn note(text: &str) {
    let _ = writeln!(std::io::stderr(), "{text}");
}

/// Whether this test can run here; if not, why, on stderr.
fn can_run(test: &str) -> bool {
    if !nix::unistd::Uid::effective().is_root() {
        note(&format!(
            "NOTE: the {test} test did NOT run: a testbed needs root"
        ));
        return false;
    }
    common::docker_or_say_why(test)
}

/// A testbed, taken down when dropped (after the cluster on it: declare it first). Taking down
/// a testbed already down does nothing.
struct Testbed {
    dir: tempfile::TempDir,
}

impl Testbed {
    fn path(&self) -> &str {
        self.dir.path().to_str().unwrap()
    }
}

impl Drop for Testbed {
    fn drop(&mut self) {
        let out = cuberoute(&["testbed", "down", "--dir", self.path()]);
        if !out.status.success() {
            note(&format!("testbed down failed: {}", stderr(&out)));
        }
    }
}

/// A swarm cluster's directory, taken down when dropped (if `cluster down` has not run).
struct SwarmCluster {
    dir: tempfile::TempDir,
}

impl SwarmCluster {
    fn path(&self) -> &str {
        self.dir.path().to_str().unwrap()
    }

    fn ok(&self, args: &[&str]) -> String {
        let mut all = args.to_vec();
        all.extend(["--dir", self.path()]);
        ok(&all)
    }

    /// What `DIR/run.toml` records of the stack: its name, and each host's name and engine.
    fn recorded(&self) -> (String, Vec<(String, String)>) {
        let text = std::fs::read_to_string(self.dir.path().join("run.toml")).unwrap();
        let value = |line: &str, key: &str| {
            line.strip_prefix(key)?
                .trim_start()
                .strip_prefix('=')
                .map(|v| v.trim().trim_matches('"').to_string())
        };
        let mut stack = String::new();
        let mut hosts: Vec<(String, String)> = Vec::new();
        let mut in_host = false;
        for line in text.lines() {
            let line = line.trim();
            if line.starts_with('[') {
                in_host = line == "[[swarm.host]]";
                if in_host {
                    hosts.push(Default::default());
                }
            } else if let Some(v) = value(line, "stack") {
                stack = v;
            } else if in_host && let Some(v) = value(line, "name") {
                hosts.last_mut().unwrap().0 = v;
            } else if in_host && let Some(v) = value(line, "endpoint") {
                hosts.last_mut().unwrap().1 = v;
            }
        }
        (stack, hosts)
    }
}

impl Drop for SwarmCluster {
    fn drop(&mut self) {
        if self.dir.path().join("run.toml").exists() {
            let out = cuberoute(&["cluster", "down", "--dir", self.path()]);
            if !out.status.success() {
                note(&format!("cluster down failed: {}", stderr(&out)));
            }
        }
    }
}

fn docker(endpoint: &str, args: &[&str]) -> String {
    let out = Command::new("docker")
        .arg("-H")
        .arg(endpoint)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "docker -H {endpoint} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn words(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_string).collect()
}

/// The nodes running on each engine: service `<stack>_node-<id>` -> id.
fn nodes_on(endpoint: &str, stack: &str) -> BTreeSet<u64> {
    let filter = format!("label=com.docker.stack.namespace={stack}");
    docker(
        endpoint,
        &[
            "ps",
            "--filter",
            &filter,
            "--format",
            "{{.Label \"com.docker.swarm.service.name\"}}",
        ],
    )
    .lines()
    .filter_map(|s| s.strip_prefix(&format!("{stack}_node-"))?.parse().ok())
    .collect()
}

/// Everything of `stack` an engine still holds, by kind (empty when nothing is left).
fn leftovers(endpoint: &str, stack: &str, manager: bool) -> BTreeMap<&'static str, Vec<String>> {
    let filter = format!("label=com.docker.stack.namespace={stack}");
    let mut kinds: Vec<(&str, Vec<&str>)> = vec![
        ("container", vec!["ps", "-aq", "--filter", &filter]),
        ("volume", vec!["volume", "ls", "-q", "--filter", &filter]),
        ("network", vec!["network", "ls", "-q", "--filter", &filter]),
    ];
    if manager {
        kinds.push(("service", vec!["service", "ls", "-q", "--filter", &filter]));
        kinds.push(("secret", vec!["secret", "ls", "-q", "--filter", &filter]));
        kinds.push(("config", vec!["config", "ls", "-q", "--filter", &filter]));
    }
    kinds
        .into_iter()
        .map(|(kind, args)| (kind, words(&docker(endpoint, &args))))
        .filter(|(_, left)| !left.is_empty())
        .collect()
}

/// The body of `GET path` from `address` (HTTP/1.0: the answer ends with the connection), if
/// it answered 200.
fn http_get(address: &str, path: &str) -> Option<String> {
    use std::io::Read;
    let mut stream = std::net::TcpStream::connect(address).ok()?;
    stream
        .write_all(format!("GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n").as_bytes())
        .ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    let (head, body) = answer.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.1 200")
        .then(|| body.to_string())
        .or_else(|| head.starts_with("HTTP/1.0 200").then(|| body.to_string()))
}

fn timed<T>(what: &str, times: &mut Vec<(String, Duration)>, f: impl FnOnce() -> T) -> T {
    let started = Instant::now();
    let value = f();
    times.push((what.to_string(), started.elapsed()));
    note(&format!(
        "swarm test: {what} in {:.1} s",
        started.elapsed().as_secs_f64()
    ));
    value
}

/// EH(2,2) over three hosts of a testbed with the default placement: every task running on the
/// host its placement gives it; `status`, `send` and `recv` from this machine as on a local
/// cluster; `cluster down` then `testbed down` leave nothing.
#[test]
fn a_swarm_cluster_over_three_hosts_routes_across_them_and_leaves_nothing() {
    if !can_run("swarm") {
        return;
    }
    let mut times = Vec::new();
    // The image every engine of the testbed loads: this tree's binary.
    timed("cluster image", &mut times, || ok(&["cluster", "image"]));
    let testbed = Testbed {
        dir: tempfile::tempdir().unwrap(),
    };
    timed("testbed up --hosts 3", &mut times, || {
        ok(&["testbed", "up", "--hosts", "3", "--dir", testbed.path()])
    });
    let cluster = SwarmCluster {
        dir: tempfile::tempdir().unwrap(),
    };
    let up = timed("cluster swarm eh:2,2", &mut times, || {
        cluster.ok(&["cluster", "swarm", "eh:2,2", "--testbed", testbed.path()])
    });
    note(&format!("swarm test: cluster swarm said:\n{up}"));
    let (stack, hosts) = cluster.recorded();
    assert_eq!(hosts.len(), 3, "{hosts:?}");
    assert!(hosts.iter().all(|(_, endpoint)| !endpoint.is_empty()));

    // 32 tasks running, at least 8 per host, each on its placement's host.
    let placement = placement_over_three_hosts("eh:2,2");
    let mut host_of: BTreeMap<u64, usize> = BTreeMap::new();
    for (h, (name, endpoint)) in hosts.iter().enumerate() {
        assert_eq!(name, &format!("h{}", h + 1));
        let running = nodes_on(endpoint, &stack);
        let expected: BTreeSet<u64> = placement["nodes"][h]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        assert!(running.len() >= 8, "{name}: {running:?}");
        assert_eq!(running, expected, "{name} runs what its placement says");
        for id in running {
            host_of.insert(id, h);
        }
    }
    assert_eq!(host_of.len(), 32);

    // Every node up and linked, seen from this machine through the published control ports.
    let status: Value =
        serde_json::from_str(cluster.ok(&["cluster", "status", "--json"]).trim()).unwrap();
    assert_eq!(status["nodes_up"], 32, "{status}");
    assert_eq!(status["link_ends_up"], status["link_ends"], "{status}");

    // A set whose paths cross hosts: from node 0 to the farthest node on another host.
    let (from, to) = (0u64, 31u64);
    let paths: Value =
        serde_json::from_str(ok(&["paths", "eh:2,2", "0", "31", "--json"]).trim()).unwrap();
    let k = paths["k"].as_u64().unwrap();
    let crossing = paths["paths"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| {
            let on: BTreeSet<usize> = p
                .as_array()
                .unwrap()
                .iter()
                .map(|v| host_of[&v.as_u64().unwrap()])
                .collect();
            on.len() > 1
        })
        .count();
    assert!(crossing > 0, "no path of 0 -> 31 crosses hosts: {paths}");
    let report: Value = timed("send 0 -> 31", &mut times, || {
        serde_json::from_str(
            cluster
                .ok(&[
                    "send",
                    "--from",
                    &from.to_string(),
                    "--to",
                    &to.to_string(),
                    "--message",
                    "across hosts",
                    "--wait",
                    "--timeout",
                    "10s",
                    "--json",
                ])
                .trim(),
        )
        .unwrap()
    });
    let copies = report["copies"].as_array().unwrap();
    assert_eq!(copies.len() as u64, k, "{report}");
    for (i, copy) in copies.iter().enumerate() {
        assert_eq!(copy["delivered"], true, "{report}");
        assert_eq!(copy["path"], paths["paths"][i], "{report}");
    }
    let entries = json_lines(&cluster.ok(&["recv", "--node", &to.to_string(), "--json"]));
    let indices: BTreeSet<u64> = entries
        .iter()
        .filter(|e| e["payload"] == "across hosts")
        .map(|e| e["index"].as_u64().unwrap())
        .collect();
    assert_eq!(indices.len() as u64, k, "{entries:?}");
    let route: Value = serde_json::from_str(
        cluster
            .ok(&["show", "route", "--from", "0", "--to", "31", "--json"])
            .trim(),
    )
    .unwrap();
    assert_eq!(
        route["paths"].as_array().map(Vec::len),
        Some(k as usize),
        "{route}"
    );
    cluster.ok(&["monitor", "--for", "2s", "--json"]);
    // The live view serves the swarm's state from this machine as well.
    let mut view = Command::new(env!("CARGO_BIN_EXE_cuberoute"))
        .args(["cluster", "view", "--dir", cluster.path()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let said = common::read_until(view.stdout.as_mut().unwrap(), "http://127.0.0.1:");
    let address = said
        .split_whitespace()
        .find_map(|w| w.strip_prefix("http://"))
        .unwrap()
        .trim_end_matches('/')
        .to_string();
    let mut state = Value::Null;
    for _ in 0..60 {
        if let Some(body) = http_get(&address, "/state.json") {
            state = serde_json::from_str(&body).unwrap_or(Value::Null);
            if state["nodes_up"] == 32 {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let _ = view.kill();
    let _ = view.wait();
    assert_eq!(state["nodes_up"], 32, "the view's state: {state}");
    assert_eq!(state["links_up"], 48, "the view's state: {state}");
    let log = cluster.ok(&["cluster", "logs", "--node", "5"]);
    assert!(!log.trim().is_empty(), "node 5 logged nothing");

    // A node's container killed on its host: Swarm starts a new task there, with the same
    // store, and its neighbours find it again by name (DNS round robin, no virtual IP).
    let killed = cluster.ok(&["chaos", "kill", "--node", "5"]);
    assert!(killed.contains("killed"), "{killed}");
    timed("node 5 killed -> every link up again", &mut times, || {
        cluster.ok(&["cluster", "status", "--wait", "--timeout", "90s"])
    });
    let on = nodes_on(&hosts[host_of[&5]].1, &stack);
    assert!(on.contains(&5), "node 5 came back on its own host");

    // A host lost, and back: `chaos run --faults host` cuts the seed's host off for the fault
    // phase. Plain sets between the other hosts' nodes: every copy on a path that avoids the
    // lost host arrives (the placement's promise), and with the default placement every such
    // set has such a path but a handful; copies follow their constructed paths.
    let plain: Value = timed("a host lost, plain sets", &mut times, || {
        serde_json::from_str(
            cluster
                .ok(&[
                    "chaos",
                    "run",
                    "--faults",
                    "host",
                    "--duration",
                    "15s",
                    "--rate",
                    "10",
                    "--seed",
                    "1",
                    "--wait",
                    "5s",
                    "--json",
                ])
                .trim(),
        )
        .unwrap()
    });
    let lost = &plain["host_loss"];
    note(&format!("swarm test: a host lost, plain: {lost}"));
    let lost_nodes: BTreeSet<u64> = lost["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    let lost_host = lost["host"].as_str().unwrap().to_string();
    assert!(lost_nodes.len() >= 10, "{lost}");
    assert!(
        lost_nodes.iter().all(|n| hosts[host_of[n]].0 == lost_host),
        "the lost nodes are the lost host's: {lost}"
    );
    assert!(lost["sets_between_others"].as_u64().unwrap() > 50, "{lost}");
    assert_eq!(lost["below_promise"], 0, "{lost}");
    assert_eq!(lost["kept_a_copy"], lost["promised_a_copy"], "{lost}");
    // At least the copies the placement promised: sources that know the host's nodes are dead
    // send on the live graph's max flow, often more paths than the constructed ones left.
    assert!(
        lost["copies_kept"].as_u64() >= lost["copies_promised"].as_u64(),
        "{lost}"
    );
    assert!(
        lost["promised_none"].as_u64().unwrap() * 20
            <= lost["sets_between_others"].as_u64().unwrap(),
        "the paths placement leaves nearly every pair a path: {lost}"
    );
    assert_eq!(
        plain["phases"]["with_faults"]["path_mismatches"], 0,
        "{plain}"
    );
    let windows = plain["fault_windows"].as_array().unwrap();
    assert!(
        windows
            .iter()
            .any(|w| w["what"] == "host lost"
                && w["place"].as_str().unwrap().starts_with(&lost_host)),
        "{windows:?}"
    );

    // Reliable sets, some to the lost host's nodes: every one arrives once it is back (the
    // tasks Swarm starts again there keep their stores), each acknowledged.
    let reliable: Value = timed("a host lost, reliable sets", &mut times, || {
        serde_json::from_str(
            cluster
                .ok(&[
                    "chaos",
                    "run",
                    "--faults",
                    "host",
                    "--duration",
                    "15s",
                    "--rate",
                    "5",
                    "--seed",
                    "1",
                    "--delivery",
                    "reliable",
                    "--wait",
                    "150s",
                    "--json",
                ])
                .trim(),
        )
        .unwrap()
    });
    let lost = &reliable["host_loss"];
    note(&format!("swarm test: a host lost, reliable: {lost}"));
    assert!(lost["sets_to_lost_host"].as_u64().unwrap() > 0, "{lost}");
    assert_eq!(
        lost["delivered_to_lost_host"], lost["sets_to_lost_host"],
        "{lost}"
    );
    assert_eq!(reliable["sets_lost"], 0, "{reliable}");
    // Each acknowledged, or unsettled where its source was a task Swarm replaced (the new one
    // resumes the set from its store but cannot say how the old one settled it); none expired
    // or refused.
    let outcomes = &reliable["reliable"];
    assert_eq!(outcomes["expired"], 0, "{reliable}");
    assert_eq!(outcomes["refused"], 0, "{reliable}");
    assert_eq!(
        outcomes["acked"].as_u64().unwrap() + outcomes["unsettled"].as_u64().unwrap(),
        reliable["sets_sent"].as_u64().unwrap(),
        "{reliable}"
    );
    cluster.ok(&["cluster", "status", "--wait", "--timeout", "120s"]);

    // Down: nothing of the stack on any engine, then nothing of the testbed.
    let down = timed("cluster down", &mut times, || {
        cluster.ok(&["cluster", "down"])
    });
    assert!(down.contains("stack"), "{down}");
    for (h, (name, endpoint)) in hosts.iter().enumerate() {
        let left = leftovers(endpoint, &stack, h == 0);
        assert!(left.is_empty(), "{name} still holds {left:?}");
    }
    assert!(!cluster.dir.path().join("run.toml").exists());
    drop(cluster);
    timed("tasks of several nodes", &mut times, || {
        tasks_of_several_nodes(&testbed, &hosts)
    });
    let tb = testbed.path().to_string();
    let out = timed("testbed down", &mut times, || {
        cuberoute(&["testbed", "down", "--dir", &tb])
    });
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    for (name, endpoint) in &hosts {
        let socket = endpoint.trim_start_matches("unix://");
        assert!(
            !Path::new(socket).exists(),
            "{name}'s engine socket is left"
        );
    }
    let summary: Vec<String> = times
        .iter()
        .map(|(what, t)| format!("{what} {:.1} s", t.as_secs_f64()))
        .collect();
    note(&format!("swarm test timings: {}", summary.join("; ")));
}

/// EH(1,2) over the testbed's three hosts in tasks of up to four nodes (`cluster swarm
/// --nodes-per-container 4 --allow-chaos`): each host's nodes in tasks on it, every node up and
/// linked, a set on all its paths; one exporter a task of several with its nodes' series and no
/// other's;
/// one node crashed inside its task while the task's container runs on, started there again;
/// a chaos run's crashes with reliable sets: a valid verdict; down leaves nothing.
fn tasks_of_several_nodes(testbed: &Testbed, hosts: &[(String, String)]) {
    let cluster = SwarmCluster {
        dir: tempfile::tempdir().unwrap(),
    };
    let up = cluster.ok(&[
        "cluster",
        "swarm",
        "eh:1,2",
        "--testbed",
        testbed.path(),
        "--nodes-per-container",
        "4",
        "--allow-chaos",
    ]);
    note(&format!("swarm test: tasks of four nodes:\n{up}"));
    let (stack, _) = cluster.recorded();
    let placement = placement_over_three_hosts("eh:1,2");
    // The tasks running on each host: `<stack>_host-<first>` (or `node-<id>` for a task of
    // one), as many as its nodes make in fours.
    let mut tasks = 0;
    for (h, (name, endpoint)) in hosts.iter().enumerate() {
        let filter = format!("label=com.docker.stack.namespace={stack}");
        let services = words(&docker(
            endpoint,
            &[
                "ps",
                "--filter",
                &filter,
                "--format",
                "{{.Label \"com.docker.swarm.service.name\"}}",
            ],
        ));
        let on = placement["nodes"][h].as_array().unwrap().len();
        assert_eq!(services.len(), on.div_ceil(4), "{name}: {services:?}");
        tasks += services.len();
    }
    assert!(
        up.contains(&format!("{tasks} Swarm tasks of up to 4 nodes")),
        "{up}"
    );

    let status: Value =
        serde_json::from_str(cluster.ok(&["cluster", "status", "--json"]).trim()).unwrap();
    assert_eq!(status["nodes_up"], 16, "{status}");
    assert_eq!(status["link_ends_up"], status["link_ends"], "{status}");
    let paths: Value =
        serde_json::from_str(ok(&["paths", "eh:1,2", "0", "15", "--json"]).trim()).unwrap();
    let k = paths["k"].as_u64().unwrap() as usize;
    assert_eq!(
        common::copies_delivered(cluster.path(), "0", "15", "10s"),
        k,
        "the farthest pair on all its {k} paths"
    );

    // The nodes of each task share its published ports (the client's manifest), and its one
    // exporter serves its nodes' series, no other's.
    let by_task = common::node_hosts(&cluster.dir.path().join("manifest.toml"));
    assert_eq!(by_task.len(), tasks, "{by_task:?}");
    // (A task of one node is a daemon alone, whose series carry no node label.)
    for (metrics, nodes) in by_task.values().filter(|(_, nodes)| nodes.len() > 1) {
        common::exporter_serves_only(metrics, nodes, 16);
    }

    // A node crashed alone inside its task, whose container runs on; started there again.
    let (_, group) = by_task.values().find(|(_, g)| g.len() > 1).unwrap();
    let victim = group[1];
    let containers_before = count_containers(hosts, &stack);
    cluster.ok(&["chaos", "kill", "--node", &victim.to_string()]);
    // (`cluster status` exits 1 while a node is down; its report is whole.)
    let out = cuberoute(&["cluster", "status", "--json", "--dir", cluster.path()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let status: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    let node_up = |status: &Value, id: u64| {
        status["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["id"] == id)
            .map(|n| n["up"].clone())
    };
    assert_eq!(
        node_up(&status, victim),
        Some(Value::Bool(false)),
        "{status}"
    );
    for &other in group.iter().filter(|&&n| n != victim) {
        assert_eq!(node_up(&status, other), Some(Value::Bool(true)), "{status}");
    }
    assert_eq!(
        count_containers(hosts, &stack),
        containers_before,
        "its task's container runs on"
    );
    cluster.ok(&["chaos", "restart", "--node", &victim.to_string()]);
    cluster.ok(&["cluster", "status", "--wait", "--timeout", "60s"]);
    assert_eq!(
        count_containers(hosts, &stack),
        containers_before,
        "started inside the same container"
    );

    // The chaos run's crashes, of a node inside its task or of a task's last node (its
    // container), with reliable sets.
    let report: Value = serde_json::from_str(
        cluster
            .ok(&[
                "chaos",
                "run",
                "--json",
                "--check",
                "--rate",
                "10",
                "--duration",
                "8s",
                "--seed",
                "5",
                "--faults",
                "crash",
                "--delivery",
                "reliable",
                "--life",
                "60s",
                "--wait",
                "60s",
            ])
            .trim(),
    )
    .unwrap();
    let verdict = &report["verdict"];
    assert_eq!(verdict["valid"], true, "{verdict}");
    let windows = report["fault_windows"].to_string();
    assert!(
        windows.contains("node dropped inside its Swarm task"),
        "{windows}"
    );
    cluster.ok(&["cluster", "status", "--wait", "--timeout", "90s"]);

    let down = cluster.ok(&["cluster", "down"]);
    assert!(down.contains("stack"), "{down}");
    for (h, (name, endpoint)) in hosts.iter().enumerate() {
        let left = leftovers(endpoint, &stack, h == 0);
        assert!(left.is_empty(), "{name} still holds {left:?}");
    }
}

/// `cluster placement TOPO --hosts 3 --placement paths --json`: the nodes of each host.
fn placement_over_three_hosts(topology: &str) -> Value {
    let args = [
        "cluster",
        "placement",
        topology,
        "--hosts",
        "3",
        "--placement",
        "paths",
        "--json",
    ];
    serde_json::from_str(ok(&args).trim()).unwrap()
}

/// The running containers of `stack` on every host.
fn count_containers(hosts: &[(String, String)], stack: &str) -> usize {
    let filter = format!("label=com.docker.stack.namespace={stack}");
    hosts
        .iter()
        .map(|(_, endpoint)| words(&docker(endpoint, &["ps", "-q", "--filter", &filter])).len())
        .sum()
}
