//! End-to-end tests of `cluster up --netns` on real processes: every node in a network
//! namespace of its own on a bridge. A set crosses the veth pairs on all k paths, each daemon
//! runs in its namespace, and `cluster down` leaves nothing of the cluster: after a normal
//! `up`, after an `up` interrupted (SIGINT) while it made the network or started the daemons,
//! and after an `up` killed outright (SIGKILL). Without root, `--netns` is refused (exit 2).
//!
//! Every test but the refusal needs root; without it each prints a NOTE and passes. Each test
//! has its own temporary cluster directory, so its own tag and block: they run in parallel.

mod common;

use common::{Cluster, cuberoute, ok, stderr, stdout, within};
use serde_json::Value;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

fn root_or_say_why(test: &str) -> bool {
    use std::io::Write;
    let root = nix::unistd::Uid::effective().is_root();
    if !root {
        let _ = writeln!(
            std::io::stderr(),
            "NOTE: the {test} test did NOT run: cluster up --netns needs root"
        );
    }
    root
}

/// A cluster directory taken down when dropped (even when a test fails), not started yet.
fn cluster(topology: &str) -> Cluster {
    Cluster {
        dir: tempfile::tempdir().unwrap(),
        topology: topology.to_string(),
    }
}

/// The tag recorded in the cluster's run state, once it is.
fn tag(dir: &Path) -> Option<String> {
    let text = fs::read_to_string(dir.join("run.toml")).ok()?;
    let table = text.split("[netns]").nth(1)?;
    let line = table.lines().find(|l| l.starts_with("tag = "))?;
    Some(
        line.trim_start_matches("tag = ")
            .trim_matches('"')
            .to_string(),
    )
}

/// The (id, pid) of every process recorded in the run state.
fn recorded(dir: &Path) -> Vec<(u64, u32)> {
    let text = fs::read_to_string(dir.join("run.toml")).unwrap_or_default();
    let mut id = None;
    let mut processes = Vec::new();
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("id = ") {
            id = v.trim().parse().ok();
        }
        if let (Some(v), Some(i)) = (line.strip_prefix("pid = "), id) {
            processes.push((i, v.trim().parse().unwrap()));
        }
    }
    processes
}

fn names(dir: &str) -> Vec<String> {
    fs::read_dir(dir)
        .map(|e| {
            e.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Everything on the machine that carries `tag`, and every process whose command line names
/// the cluster directory.
fn leftovers(tag: &str, dir: &Path) -> Vec<String> {
    let mut left: Vec<String> = names("/var/run/netns")
        .into_iter()
        .filter(|n| n.starts_with(&format!("cr-{tag}-")))
        .collect();
    left.extend(names("/sys/class/net").into_iter().filter(|n| {
        n == &format!("crb-{tag}")
            || ["crb", "crv", "crl", "crh"]
                .iter()
                .any(|k| n.starts_with(&format!("{k}-{tag}-")))
    }));
    let rules = Command::new("iptables")
        .args(["-w", "-S"])
        .output()
        .unwrap();
    left.extend(
        String::from_utf8_lossy(&rules.stdout)
            .lines()
            .filter(|l| {
                l.split_whitespace()
                    .any(|w| w == format!("cuberoute-{tag}"))
            })
            .map(String::from),
    );
    if Path::new("/run/cuberoute/netns").join(tag).exists() {
        left.push(format!("the claim of {tag}"));
    }
    let dir = dir.to_str().unwrap();
    for pid in names("/proc").iter().filter(|p| p.parse::<u32>().is_ok()) {
        let cmdline = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let zombie = stat
            .rsplit_once(')')
            .is_some_and(|(_, s)| s.trim_start().starts_with('Z'));
        if !zombie && String::from_utf8_lossy(&cmdline).contains(dir) {
            left.push(format!("process {pid}"));
        }
    }
    left
}

/// `leftovers` is empty within a few seconds (a killed process is reaped by its parent).
fn nothing_left(tag: &str, dir: &Path) {
    let gone = within(Duration::from_secs(5), || leftovers(tag, dir).is_empty());
    assert!(gone.is_some(), "left behind: {:?}", leftovers(tag, dir));
    assert!(!dir.join("run.toml").exists(), "run.toml is still there");
}

/// The inode of a network namespace file (or a process's /proc/PID/ns/net).
fn inode(path: impl AsRef<Path>) -> u64 {
    fs::metadata(path).unwrap().ino()
}

#[test]
fn a_netns_cluster_carries_sets_over_veth_pairs_and_down_leaves_nothing() {
    if !root_or_say_why("netns cluster") {
        return;
    }
    let cluster = cluster("eh:2,2");
    let up = ok(&[
        "cluster",
        "up",
        "eh:2,2",
        "--netns",
        "--dir",
        cluster.path_str(),
    ]);
    assert!(up.contains("network namespaces of their own"), "{up}");
    assert!(up.contains("nodes at 198.1"), "{up}");
    let tag = tag(cluster.path()).expect("run.toml records the network");
    // Each daemon runs in its own namespace, not the host's: the recorded pid is the daemon's.
    let processes = recorded(cluster.path());
    assert_eq!(processes.len(), 32);
    let host = inode("/proc/self/ns/net");
    for &(id, pid) in &processes {
        let ns = format!("cr-{tag}-{id}");
        assert_eq!(
            inode(format!("/proc/{pid}/ns/net")),
            inode(format!("/var/run/netns/{ns}")),
            "node {id} (pid {pid}) is not in {ns}"
        );
        assert_ne!(inode(format!("/proc/{pid}/ns/net")), host);
        let cmdline = fs::read_to_string(format!("/proc/{pid}/cmdline")).unwrap();
        assert!(
            cmdline.starts_with(env!("CARGO_BIN_EXE_cuberoute")),
            "{cmdline}"
        );
    }
    // Its address on eth0 in the namespace is the one the manifest names.
    let manifest = fs::read_to_string(cluster.path().join("manifest.toml")).unwrap();
    let inside = Command::new("nsenter")
        .arg(format!("--net=/var/run/netns/cr-{tag}-5"))
        .args(["ip", "-4", "-o", "addr", "show", "dev", "eth0"])
        .output()
        .unwrap();
    let address = stdout(&inside)
        .split_whitespace()
        .skip_while(|w| *w != "inet")
        .nth(1)
        .expect("eth0 has an address")
        .split('/')
        .next()
        .unwrap()
        .to_string();
    assert!(address.starts_with("198.1"), "{address}");
    assert!(
        manifest.contains(&format!("\"{address}:7000\"")),
        "{manifest}"
    );
    let far = "31";
    let before: u64 =
        fs::read_to_string(format!("/sys/class/net/crv-{tag}-0/statistics/rx_packets"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
    let report: Value = serde_json::from_str(
        cluster
            .ok(&[
                "send",
                "--from",
                "0",
                "--to",
                far,
                "--message",
                "over veth",
                "--wait",
                "--json",
            ])
            .trim(),
    )
    .unwrap();
    let expected: Value =
        serde_json::from_str(ok(&["paths", "eh:2,2", "0", far, "--json"]).trim()).unwrap();
    let k = expected["k"].as_u64().unwrap();
    assert!(k >= 3, "{expected}");
    assert_eq!(report["k"], k);
    let copies = report["copies"].as_array().unwrap();
    assert_eq!(copies.len() as u64, k);
    for (i, copy) in copies.iter().enumerate() {
        assert_eq!(copy["delivered"], true, "copy {i}: {report}");
        assert_eq!(copy["path"], expected["paths"][i], "copy {i}");
    }
    let received = cluster.ok(&["recv", "--node", far, "--json"]);
    assert_eq!(
        received.matches("over veth").count() as u64,
        k,
        "{received}"
    );
    // Node 0's packets left through its veth pair (its host end received them).
    let after: u64 =
        fs::read_to_string(format!("/sys/class/net/crv-{tag}-0/statistics/rx_packets"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
    assert!(
        after > before,
        "no packet crossed crv-{tag}-0 ({before} -> {after})"
    );
    let down = cluster.ok(&["cluster", "down"]);
    assert!(
        down.contains(&format!("removed 32 namespaces cr-{tag}-*")),
        "{down}"
    );
    nothing_left(&tag, cluster.path());
    // Down again: nothing to do, and nothing fails.
    cluster.ok(&["cluster", "down"]);
}

/// Start `cluster up TOPOLOGY --netns` in `cluster`'s directory in the background.
fn spawn_up(cluster: &Cluster) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_cuberoute"))
        .args([
            "cluster",
            "up",
            &cluster.topology,
            "--netns",
            "--dir",
            cluster.path_str(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Wait (up to 60 s) until `ready` holds of the cluster directory, polling every 2 ms.
fn wait_for(dir: &Path, what: &str, ready: impl Fn(&Path) -> bool) {
    let start = std::time::Instant::now();
    while !ready(dir) {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "never saw {what}"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn signal(child: &std::process::Child, signal: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), signal).unwrap();
}

/// An `up` interrupted when `ready` holds ends with an error and leaves nothing behind.
fn interrupted_up_leaves_nothing(topology: &str, ready: impl Fn(&Path) -> bool, when: &str) {
    let cluster = cluster(topology);
    let child = spawn_up(&cluster);
    wait_for(cluster.path(), when, &ready);
    let tag = tag(cluster.path()).unwrap();
    signal(&child, nix::sys::signal::Signal::SIGINT);
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success(), "an interrupted up succeeded");
    assert!(stderr(&out).contains("interrupted"), "{}", stderr(&out));
    nothing_left(&tag, cluster.path());
}

#[test]
fn an_up_interrupted_while_it_makes_the_namespaces_leaves_nothing() {
    if !root_or_say_why("interrupted netns up (namespaces)") {
        return;
    }
    // 256 nodes: four chunks of namespaces; the interrupt comes once the network is recorded.
    interrupted_up_leaves_nothing("q:8", |d| tag(d).is_some(), "the network recorded");
}

#[test]
fn an_up_interrupted_while_it_starts_the_daemons_leaves_nothing() {
    if !root_or_say_why("interrupted netns up (daemons)") {
        return;
    }
    interrupted_up_leaves_nothing("q:7", |d| recorded(d).len() >= 16, "16 daemons recorded");
}

/// `down` after an `up` killed outright (SIGKILL) when `ready` held leaves nothing, daemons the
/// launcher never recorded included.
fn down_after_a_killed_up_leaves_nothing(
    topology: &str,
    ready: impl Fn(&Path) -> bool,
    when: &str,
) {
    let cluster = cluster(topology);
    let mut child = spawn_up(&cluster);
    wait_for(cluster.path(), when, &ready);
    let tag = tag(cluster.path()).unwrap();
    signal(&child, nix::sys::signal::Signal::SIGKILL);
    child.wait().unwrap();
    let down = cuberoute(&["cluster", "down", "--dir", cluster.path_str()]);
    assert!(down.status.success(), "{}{}", stdout(&down), stderr(&down));
    nothing_left(&tag, cluster.path());
}

#[test]
fn down_after_an_up_killed_while_it_made_the_namespaces_leaves_nothing() {
    if !root_or_say_why("killed netns up (namespaces)") {
        return;
    }
    down_after_a_killed_up_leaves_nothing("q:8", |d| tag(d).is_some(), "the network recorded");
}

#[test]
fn down_after_an_up_killed_while_it_started_the_daemons_leaves_nothing() {
    if !root_or_say_why("killed netns up (daemons)") {
        return;
    }
    down_after_a_killed_up_leaves_nothing(
        "q:7",
        |d| recorded(d).len() >= 16,
        "16 daemons recorded",
    );
}

#[test]
fn netns_without_root_or_with_docker_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let args = ["cluster", "up", "eh:2,2", "--netns", "--dir", d];
    // As nobody (from root), or as whoever runs the tests.
    let out = if nix::unistd::Uid::effective().is_root() {
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_cuberoute"))
            .args(args)
            .output()
            .unwrap()
    } else {
        cuberoute(&args)
    };
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let message = stderr(&out);
    assert!(message.contains("--netns needs root: "), "{message}");
    assert_eq!(message.trim().lines().count(), 1, "{message}");
    assert!(
        fs::read_dir(dir.path()).unwrap().next().is_none(),
        "nothing written"
    );
    let out = cuberoute(&["cluster", "up", "eh:2,2", "--netns", "--docker", "--dir", d]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--netns does not combine with --docker"));
}
