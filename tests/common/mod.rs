//! Helpers for tests that run real clusters: the built binary, a cluster that is always taken
//! down, and JSON parsing.

#![allow(dead_code)]

pub mod browser;

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

pub fn cuberoute(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cuberoute"))
        .args(args)
        .env("RUST_LOG", "info")
        .output()
        .expect("the cuberoute binary runs")
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Run cuberoute and insist on success.
pub fn ok(args: &[&str]) -> String {
    let out = cuberoute(args);
    assert!(
        out.status.success(),
        "cuberoute {args:?} failed ({:?}):\n{}{}",
        out.status,
        stdout(&out),
        stderr(&out)
    );
    stdout(&out)
}

pub fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// A local cluster in a temporary directory, taken down when dropped (even when a test fails).
pub struct Cluster {
    pub dir: tempfile::TempDir,
    pub topology: String,
}

impl Cluster {
    /// `cluster up TOPOLOGY` on loopback addresses from `base` on.
    pub fn up(topology: &str, base: &str) -> Cluster {
        Cluster::up_with(topology, &["--base-addr", base])
    }

    /// `cluster up TOPOLOGY --no-store` on the addresses from `base`: a restart forgets all.
    pub fn up_without_store(topology: &str, base: &str) -> Cluster {
        Cluster::up_with(topology, &["--base-addr", base, "--no-store"])
    }

    /// `cluster up TOPOLOGY --docker` in the /16 network `subnet`.
    pub fn up_docker(topology: &str, subnet: &str) -> Cluster {
        Cluster::up_with(topology, &["--docker", "--subnet", subnet])
    }

    /// `cluster up TOPOLOGY ARGS` in a new temporary directory. The cluster is created before
    /// `up` runs, so that it is taken down even when `up` fails half way.
    pub fn up_with(topology: &str, args: &[&str]) -> Cluster {
        let cluster = Cluster {
            dir: tempfile::tempdir().unwrap(),
            topology: topology.to_string(),
        };
        let mut all = vec!["cluster", "up", topology, "--dir", cluster.path_str()];
        all.extend(args);
        ok(&all);
        cluster
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn path_str(&self) -> &str {
        self.dir.path().to_str().unwrap()
    }

    /// Run a cuberoute command against this cluster (`--dir` appended).
    pub fn run(&self, args: &[&str]) -> Output {
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["--dir", self.path_str()]);
        cuberoute(&all)
    }

    /// Start a long-running cuberoute command against this cluster (`--dir` appended), its
    /// stdout and stderr piped; the child is killed when the [`Running`] is dropped.
    pub fn spawn(&self, args: &[&str]) -> Running {
        let child = Command::new(env!("CARGO_BIN_EXE_cuberoute"))
            .args(args)
            .args(["--dir", self.path_str()])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("the cuberoute binary runs");
        Running(Some(child))
    }

    /// Run a command that must be refused as bad input: exit status 2.
    pub fn refused(&self, args: &[&str]) -> Output {
        let out = self.run(args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "cuberoute {args:?}: {}",
            stderr(&out)
        );
        out
    }

    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "cuberoute {args:?} failed ({:?}):\n{}{}",
            out.status,
            stdout(&out),
            stderr(&out)
        );
        stdout(&out)
    }

    /// The copies a plain set from `from` to `to` delivered within `timeout`.
    pub fn copies_delivered(&self, from: &str, to: &str, timeout: &str) -> usize {
        copies_delivered(self.path_str(), from, to, timeout)
    }

    /// The status of every node, as `cluster status --json` gives it.
    pub fn status(&self) -> Value {
        let out = self.run(&["cluster", "status", "--json"]);
        serde_json::from_str(stdout(&out).trim()).unwrap()
    }

    /// One node's status entry.
    pub fn node_status(&self, id: u64) -> Value {
        self.status()["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["id"] == id)
            .unwrap()
            .clone()
    }

    /// The link of `node` to `neighbour`, as `show links --json` gives it.
    pub fn link(&self, node: u64, neighbour: u64) -> Value {
        let out = self.ok(&["show", "links", "--node", &node.to_string(), "--json"]);
        let status: Value = serde_json::from_str(out.trim()).unwrap();
        status["links"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["neighbour"] == neighbour)
            .unwrap_or_else(|| panic!("node {node} has no link to {neighbour}: {status}"))
            .clone()
    }

    /// Wait (up to 20 s) until every node has every link up and knows of no dead one: after a
    /// restart, its neighbours saw the old process exit at once, and a source routes around
    /// that until the links are up again and the reports of it have spread.
    pub fn wait_linked(&self) {
        let linked = within(Duration::from_secs(20), || {
            self.status()["nodes"].as_array().unwrap().iter().all(|n| {
                n["links_up"] == n["degree"]
                    && n["around"]["dead_links"]
                        .as_array()
                        .is_some_and(|d| d.is_empty())
            })
        });
        assert!(linked.is_some(), "{}", self.status());
    }

    /// One node's own status, as `show node --json` gives it (its sealing, counters, links).
    pub fn show_node(&self, node: &str) -> Value {
        let out = self.ok(&["show", "node", "--node", node, "--json"]);
        serde_json::from_str(out.trim()).unwrap()
    }

    /// [`Cluster::wait_linked`], and then (up to 20 s) until no node has a sealing handshake in
    /// flight or a set waiting for one: nothing is left to send, so an idle cluster stays idle.
    pub fn wait_quiet(&self) {
        self.wait_linked();
        let ids: Vec<u64> = self.status()["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["id"].as_u64().unwrap())
            .collect();
        let sealing = |id: u64| self.show_node(&id.to_string())["sealing"].clone();
        let quiet = within(Duration::from_secs(20), || {
            ids.iter().all(|&id| {
                let s = sealing(id);
                s["handshakes_in_flight"] == 0 && s["waiting_sets"] == 0
            })
        });
        let all: Vec<Value> = ids.iter().map(|&id| sealing(id)).collect();
        assert!(quiet.is_some(), "{all:?}");
    }

    /// The daemons' pids in node id order (run.toml lists them in the order they started).
    pub fn pids(&self) -> Vec<u32> {
        let text = std::fs::read_to_string(self.path().join("run.toml")).unwrap();
        let mut by_id = Vec::new();
        let mut id = None;
        for line in text.lines() {
            if let Some(n) = line.strip_prefix("id = ") {
                id = Some(n.trim().parse::<u64>().unwrap());
            } else if let Some(p) = line.strip_prefix("pid = ") {
                let node = id.take().expect("a process's id comes before its pid");
                by_id.push((node, p.trim().parse::<u32>().unwrap()));
            }
        }
        by_id.sort();
        by_id.into_iter().map(|(_, pid)| pid).collect()
    }

    pub fn node_file(&self, id: u64, file: &str) -> PathBuf {
        self.path().join("nodes").join(id.to_string()).join(file)
    }
}

impl Drop for Cluster {
    /// Take the cluster down, trying again twice a second apart if that fails (Docker has
    /// refused to remove a compose network whose containers were all gone, "active
    /// endpoints"); each failure is printed, for the test's output, since a drop cannot fail.
    fn drop(&mut self) {
        for attempt in 1..=3 {
            let out = cuberoute(&["cluster", "down", "--dir", self.path_str()]);
            if out.status.success() {
                return;
            }
            eprintln!(
                "cluster down --dir {} failed (attempt {attempt} of 3): {}",
                self.path_str(),
                stderr(&out).trim()
            );
            if attempt < 3 {
                std::thread::sleep(std::time::Duration::from_secs(1));
            }
        }
    }
}

/// A cuberoute command running in the background.
pub struct Running(Option<std::process::Child>);

impl Running {
    /// Read stderr up to and including the first line containing `text`; panics if the
    /// command ends first.
    pub fn wait_for_stderr(&mut self, text: &str) -> String {
        let child = self.0.as_mut().expect("running");
        read_until(child.stderr.as_mut().expect("piped stderr"), text)
    }

    /// The same on stdout.
    pub fn wait_for_stdout(&mut self, text: &str) -> String {
        let child = self.0.as_mut().expect("running");
        read_until(child.stdout.as_mut().expect("piped stdout"), text)
    }

    /// Send the command a signal (SIGINT, as Ctrl-C would).
    pub fn signal(&self, signal: nix::sys::signal::Signal) {
        let child = self.0.as_ref().expect("running");
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), signal)
            .expect("the command takes the signal");
    }

    /// Wait for the command to end; its output.
    pub fn finish(mut self) -> Output {
        self.0
            .take()
            .expect("running")
            .wait_with_output()
            .expect("the command is waited for")
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Read `stream` line by line up to and including the first line containing `text`.
pub fn read_until(stream: &mut impl std::io::Read, text: &str) -> String {
    let mut seen = String::new();
    let mut byte = [0u8; 1];
    // Byte by byte: nothing after the line is taken from the stream.
    loop {
        let n = stream.read(&mut byte).expect("the stream reads");
        assert!(n > 0, "the stream ended before {text:?}: {seen}");
        seen.push(byte[0] as char);
        if byte[0] == b'\n' && seen.lines().last().is_some_and(|l| l.contains(text)) {
            return seen;
        }
    }
}

/// Poll `ready` every 100 ms for up to `limit`; the time it took, or `None`.
pub fn within(limit: Duration, mut ready: impl FnMut() -> bool) -> Option<Duration> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if ready() {
            return Some(start.elapsed());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    None
}

/// The fields of `/proc/PID/stat` after the command name (which may hold spaces and
/// parentheses): state (field 3) first, then ppid, pgrp, ...; `None` if there is no such process.
pub fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    Some(rest.split_whitespace().map(str::to_string).collect())
}

/// `cluster up` with `args`, interrupted (SIGINT) after each of `delays_ms` in a fresh directory
/// (the `i`th at base address `127.2.{first_octet + i}.0`), leaves no process naming its
/// directory; a start that was done before the signal is taken down.
pub fn interrupted_ups_leave_nothing(args: &[&str], first_octet: usize, delays_ms: &[u64]) {
    let tmp = tempfile::tempdir().unwrap();
    for (i, &delay_ms) in delays_ms.iter().enumerate() {
        let dir = tmp.path().join(format!("interrupted-{i}"));
        let dir = dir.to_str().unwrap();
        let base = format!("127.2.{}.0", first_octet + i);
        let mut up = Command::new(env!("CARGO_BIN_EXE_cuberoute"))
            .args(["cluster", "up"])
            .args(args)
            .args(["--dir", dir, "--base-addr", &base])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay_ms));
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(up.id() as i32),
            nix::sys::signal::Signal::SIGINT,
        )
        .unwrap();
        let status = up.wait().unwrap();
        if status.success() {
            // It was up before the signal: nothing to check at this delay.
            ok(&["cluster", "down", "--dir", dir]);
            continue;
        }
        // Interrupted: 130, as a shell gives a process SIGINT ended (or ended by it, if it
        // came before the launcher caught it).
        use std::os::unix::process::ExitStatusExt;
        assert!(
            status.code() == Some(130) || status.signal() == Some(2),
            "after {delay_ms} ms: {status:?}"
        );
        let left = processes_naming(dir);
        assert!(left.is_empty(), "after {delay_ms} ms: {left:?} still run");
    }
}

/// Processes whose command line names `needle`.
pub fn processes_naming(needle: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(needle))
        })
        .filter(|&pid| process_exists(pid))
        .collect()
}

/// Whether process `pid` exists and has not exited (a zombie has).
pub fn process_exists(pid: u32) -> bool {
    stat_fields(pid).is_some_and(|f| f.first().is_some_and(|state| state != "Z"))
}

/// Whether the Docker engine answers. When it does not, say so on the real stderr (which the
/// test harness does not capture), so that a skipped test never passes silently.
pub fn docker_or_say_why(test: &str) -> bool {
    use std::io::Write;
    match Command::new("docker").arg("info").output() {
        Ok(out) if out.status.success() => true,
        other => {
            let why = match other {
                Ok(out) => String::from_utf8_lossy(&out.stderr).trim().to_string(),
                Err(e) => e.to_string(),
            };
            let _ = writeln!(
                std::io::stderr(),
                "NOTE: the {test} test did NOT run: `docker info` failed: {why}"
            );
            false
        }
    }
}

/// The metrics of the daemon whose Prometheus endpoint is `addr`.
pub fn scrape(addr: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    text
}

/// The copies a plain set from `from` to `to` in the cluster of `dir` delivered within
/// `timeout`.
pub fn copies_delivered(dir: &str, from: &str, to: &str, timeout: &str) -> usize {
    let out = cuberoute(&[
        "send",
        "--from",
        from,
        "--to",
        to,
        "--message",
        "hi",
        "--wait",
        "--timeout",
        timeout,
        "--json",
        "--dir",
        dir,
    ]);
    let report: Value = serde_json::from_str(stdout(&out).trim())
        .unwrap_or_else(|e| panic!("{e}: {}{}", stdout(&out), stderr(&out)));
    report["copies"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["delivered"] == true)
        .count()
}

/// The nodes of each process of the cluster whose client manifest is `manifest` (a node host's
/// nodes share its control address), by that address: its metrics address, and its nodes.
pub fn node_hosts(manifest: &Path) -> BTreeMap<String, (String, Vec<u64>)> {
    let text = std::fs::read_to_string(manifest).unwrap();
    let mut hosts: BTreeMap<String, (String, Vec<u64>)> = BTreeMap::new();
    let (mut id, mut control) = (None, None);
    for line in text.lines() {
        let field = |name: &str| {
            let (key, value) = line.split_once('=')?;
            (key.trim() == name).then(|| value.trim().trim_matches('"').to_string())
        };
        if let Some(n) = field("id") {
            id = n.parse::<u64>().ok();
        }
        if let Some(c) = field("control") {
            control = Some(c);
        }
        if let (Some(metrics), Some(n)) = (field("metrics"), id) {
            let c = control
                .take()
                .expect("a node's control address comes before its metrics");
            hosts.entry(c).or_insert((metrics, Vec::new())).1.push(n);
        }
    }
    hosts
}

/// Within 10 s, the exporter at `metrics` serves a link series of each of `nodes` (labelled
/// `node`) and no series of any other node below `all`.
pub fn exporter_serves_only(metrics: &str, nodes: &[u64], all: u64) {
    let mut text = String::new();
    let served = within(Duration::from_secs(10), || {
        text = scrape(metrics);
        nodes.iter().all(|n| {
            // Its links up counted (a hosted node's link has its own up series only once it
            // went down).
            let series = format!("cuberoute_links_up{{node=\"{n}\"}} ");
            text.lines()
                .any(|l| l.starts_with(&series) && !l.ends_with(" 0"))
        })
    });
    assert!(served.is_some(), "{metrics}: {text}");
    for n in (0..all).filter(|n| !nodes.contains(n)) {
        assert!(!text.contains(&format!("node=\"{n}\"")), "{n} at {metrics}");
    }
}

/// The value of the metric line that starts with `prefix`.
pub fn metric(text: &str, prefix: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(prefix))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}
