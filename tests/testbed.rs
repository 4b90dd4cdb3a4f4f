//! End-to-end tests of `cuberoute testbed`: three hosts, each a network namespace with its own
//! address and Docker engine, joined in one Swarm; a container on one host reaching another
//! host; a host cut off and restored as the manager sees it; and `down` leaving nothing of a
//! testbed on the machine (no engine, containerd, shim, namespace, link, rule, mount, cgroup,
//! containerd namespace or data root): after a whole `up`, after an `up` killed (SIGKILL) half
//! way, and after one interrupted (SIGINT), which removes what it made by itself. Bad input
//! exits 2.
//!
//! The testbeds need root and the Docker engine (and the image, built by `cluster image` if it
//! is missing); without them each test prints a NOTE and passes. They run one at a time: three
//! testbeds of three engines on two cores help no one.

mod common;

use common::{cuberoute, docker_or_say_why, ok, read_until, stderr, stdout, within};
use serde_json::Value;
use std::fs;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

const IMAGE: &str = "cuberoute:local";

/// Root and Docker, or a NOTE on the real stderr.
fn root_and_docker_or_say_why(test: &str) -> bool {
    use std::io::Write;
    if !nix::unistd::Uid::effective().is_root() {
        let _ = writeln!(
            std::io::stderr(),
            "NOTE: the {test} test did NOT run: a testbed needs root"
        );
        return false;
    }
    docker_or_say_why(test)
}

/// The image every engine gets, built if the machine has none.
fn ensure_image() {
    let present = Command::new("docker")
        .args(["image", "inspect", IMAGE])
        .output()
        .unwrap()
        .status
        .success();
    if !present {
        let out = ok(&["cluster", "image"]);
        assert!(out.contains("FROM scratch"), "{out}");
    }
}

/// A testbed directory, taken down when dropped (even when a test fails).
struct Bed {
    dir: tempfile::TempDir,
}

impl Bed {
    fn new() -> Bed {
        Bed {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn dir(&self) -> &str {
        self.dir.path().to_str().unwrap()
    }

    /// The tag recorded in the state file, once it is.
    fn tag(&self) -> Option<String> {
        let text = fs::read_to_string(self.path().join("testbed.toml")).ok()?;
        let line = text.lines().find(|l| l.starts_with("tag = "))?;
        Some(line["tag = ".len()..].trim_matches('"').to_string())
    }

    /// `cuberoute testbed up ARGS --dir DIR`, its output piped; killed when dropped.
    fn spawn_up(&self, args: &[&str]) -> Up {
        let child = Command::new(env!("CARGO_BIN_EXE_cuberoute"))
            .args(["testbed", "up"])
            .args(args)
            .args(["--dir", self.dir()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        Up(Some(child))
    }
}

impl Drop for Bed {
    fn drop(&mut self) {
        let _ = cuberoute(&["testbed", "down", "--dir", self.dir()]);
    }
}

/// A `testbed up` running.
struct Up(Option<Child>);

impl Up {
    fn child(&mut self) -> &mut Child {
        self.0.as_mut().unwrap()
    }

    fn wait_for_stdout(&mut self, text: &str) -> String {
        read_until(self.child().stdout.as_mut().unwrap(), text)
    }

    fn signal(&mut self, signal: nix::sys::signal::Signal) {
        let pid = nix::unistd::Pid::from_raw(self.child().id() as i32);
        nix::sys::signal::kill(pid, signal).unwrap();
    }

    fn finish(mut self) -> std::process::Output {
        self.0.take().unwrap().wait_with_output().unwrap()
    }
}

impl Drop for Up {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn names(dir: &str) -> Vec<String> {
    fs::read_dir(dir)
        .map(|e| {
            e.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default()
}

fn text_of(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
}

/// Everything on the machine that carries the testbed's tag.
fn leftovers(tag: &str) -> Vec<String> {
    let mut left: Vec<String> = fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter(|l| l.contains(&format!("cuberoute-testbed/{tag}")))
        .map(|l| format!("mount {l}"))
        .collect();
    left.extend(
        text_of("ip", &["netns", "list"])
            .lines()
            .filter(|l| l.contains(&format!("-{tag}-")))
            .map(|l| format!("namespace {l}")),
    );
    left.extend(
        names("/sys/class/net")
            .into_iter()
            .filter(|n| n.contains(tag))
            .map(|n| format!("link {n}")),
    );
    for chain in ["FORWARD", "DOCKER-USER"] {
        left.extend(
            text_of("iptables", &["-w", "-S", chain])
                .lines()
                .filter(|l| l.contains(&format!("cuberoute-tb-{tag}")))
                .map(|l| format!("rule {l}")),
        );
    }
    for pid in names("/proc").iter().filter(|p| p.parse::<u32>().is_ok()) {
        let cmdline = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let zombie = stat
            .rsplit_once(')')
            .is_some_and(|(_, s)| s.trim_start().starts_with('Z'));
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if !zombie
            && (cmdline.contains(&format!("cuberoute-testbed/{tag}/"))
                || cmdline.contains(&format!("cr-{tag}-")))
        {
            left.push(format!("process {pid}: {cmdline}"));
        }
    }
    // The machine's containerd (the system's, or the one the machine's dockerd started).
    for address in [
        "/run/containerd/containerd.sock",
        "/var/run/docker/containerd/containerd.sock",
    ] {
        if Path::new(address).exists() {
            left.extend(
                text_of("ctr", &["-a", address, "namespaces", "ls", "-q"])
                    .lines()
                    .filter(|n| n.contains(tag))
                    .map(|n| format!("containerd namespace {n} in {address}")),
            );
        }
    }
    for hierarchy in names("/sys/fs/cgroup") {
        left.extend(
            names(&format!("/sys/fs/cgroup/{hierarchy}"))
                .into_iter()
                .filter(|n| n.starts_with(&format!("cuberoute-tb-{tag}-")))
                .map(|n| format!("cgroup {hierarchy}/{n}")),
        );
    }
    for root in [
        format!("/var/lib/cuberoute-testbed/{tag}"),
        format!("/run/cuberoute-testbed/{tag}"),
        format!("/run/cuberoute/netns/{tag}"),
    ] {
        if Path::new(&root).exists() {
            left.push(root);
        }
    }
    left
}

/// Nothing of the testbed is left (within a few seconds: killed processes are reaped by their
/// parents), nor its state file.
fn nothing_left(bed: &Bed, tag: &str) {
    let gone = within(Duration::from_secs(5), || leftovers(tag).is_empty());
    assert!(gone.is_some(), "left behind: {:#?}", leftovers(tag));
    assert!(
        !bed.path().join("testbed.toml").exists(),
        "testbed.toml is still there"
    );
}

/// `docker -H unix://SOCKET ARGS`: its stdout, insisting on success.
fn docker(socket: &str, args: &[&str]) -> String {
    let out = Command::new("docker")
        .args(["-H", socket])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "docker -H {socket} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A static busybox on this machine (Debian's busybox-static), to make an image with `ping`.
fn static_busybox() -> Option<&'static str> {
    let path = "/bin/busybox";
    let bytes = fs::read(path).ok()?;
    // A dynamic executable names its interpreter near its start.
    let head = &bytes[..bytes.len().min(4096)];
    let dynamic = head.windows(7).any(|w| w == b"ld-linu");
    (!dynamic).then_some(path)
}

#[test]
fn three_hosts_form_a_swarm_reach_each_other_lose_a_host_and_leave_nothing() {
    if !root_and_docker_or_say_why("testbed") {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    ensure_image();
    let bed = Bed::new();
    let up = ok(&["testbed", "up", "--hosts", "3", "--dir", bed.dir()]);
    assert!(up.contains("testbed up in"), "{up}");
    assert!(up.contains("swarm: 3 nodes Ready"), "{up}");
    let tag = bed.tag().expect("a tag recorded");

    // Every host's engine answers, each in the swarm, h1 the manager.
    let status: Value =
        serde_json::from_str(ok(&["testbed", "status", "--json", "--dir", bed.dir()]).trim())
            .unwrap();
    let hosts = status["hosts"].as_array().unwrap();
    assert_eq!(hosts.len(), 3, "{status}");
    let mut sockets = Vec::new();
    let mut addresses = Vec::new();
    for (k, host) in hosts.iter().enumerate() {
        assert_eq!(host["name"], format!("h{}", k + 1), "{host}");
        assert_eq!(host["engine_running"], true, "{host}");
        assert_eq!(host["answers"], true, "{host}");
        assert_eq!(host["swarm_state"], "active", "{host}");
        assert_eq!(
            host["role"],
            if k == 0 { "manager" } else { "worker" },
            "{host}"
        );
        assert_eq!(host["node_status"], "ready", "{host}");
        assert_eq!(host["cut"], false, "{host}");
        let socket = host["docker_host"].as_str().unwrap().to_string();
        // The engine answers on its own socket, and holds the image.
        let driver = docker(&socket, &["info", "--format", "{{.Driver}}"]);
        assert!(!driver.trim().is_empty());
        docker(&socket, &["image", "inspect", "--format", "{{.Id}}", IMAGE]);
        sockets.push(socket);
        addresses.push(host["address"].as_str().unwrap().to_string());
    }
    assert_eq!(status["manager"], format!("{}:2377", addresses[0]));
    // The manager sees three Ready nodes, one of them the leader, labelled h1, h2, h3.
    let nodes = docker(
        &sockets[0],
        &[
            "node",
            "ls",
            "--format",
            "{{.ID}} {{.Status}} {{.ManagerStatus}}",
        ],
    );
    let rows: Vec<Vec<&str>> = nodes
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), 3, "{nodes}");
    assert!(rows.iter().all(|r| r[1] == "Ready"), "{nodes}");
    assert_eq!(
        rows.iter().filter(|r| r.get(2) == Some(&"Leader")).count(),
        1,
        "{nodes}"
    );
    let mut labels: Vec<String> = rows
        .iter()
        .map(|r| {
            docker(
                &sockets[0],
                &[
                    "node",
                    "inspect",
                    "--format",
                    "{{index .Spec.Labels \"cuberoute.host\"}}",
                    r[0],
                ],
            )
            .trim()
            .to_string()
        })
        .collect();
    labels.sort();
    assert_eq!(labels, ["h1", "h2", "h3"]);
    // h2's node, by what h2's engine says of itself.
    let h2_node = docker(&sockets[1], &["info", "--format", "{{.Swarm.NodeID}}"])
        .trim()
        .to_string();
    let h2_state = || {
        docker(
            &sockets[0],
            &["node", "inspect", "--format", "{{.Status.State}}", &h2_node],
        )
        .trim()
        .to_string()
    };

    // A container on h2 reaches h3's address.
    match static_busybox() {
        Some(busybox) => {
            let root = tempfile::tempdir().unwrap();
            fs::create_dir(root.path().join("bin")).unwrap();
            fs::copy(busybox, root.path().join("bin/busybox")).unwrap();
            let tar = root.path().join("busybox.tar");
            let made = Command::new("tar")
                .arg("-C")
                .arg(root.path())
                .arg("-cf")
                .arg(&tar)
                .arg("bin")
                .status()
                .unwrap();
            assert!(made.success());
            docker(
                &sockets[1],
                &["import", tar.to_str().unwrap(), "cr-busybox:test"],
            );
            let ping = docker(
                &sockets[1],
                &[
                    "run",
                    "--rm",
                    "cr-busybox:test",
                    "/bin/busybox",
                    "ping",
                    "-c",
                    "2",
                    "-W",
                    "5",
                    &addresses[2],
                ],
            );
            assert!(ping.contains("2 packets received"), "{ping}");
        }
        None => {
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "NOTE: the testbed's ping from h2 to h3 did NOT run: no static /bin/busybox \
                 (apt-get install busybox-static)"
            );
        }
    }

    // No host h4 in a testbed of three.
    let refused = cuberoute(&["testbed", "cut", "--dir", bed.dir(), "h4"]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("h1 .. h3"),
        "{}",
        stderr(&refused)
    );

    // Cut h2: the manager sees it down; restored, ready again.
    let cut = ok(&["testbed", "cut", "--dir", bed.dir(), "h2"]);
    assert!(cut.contains("h2"), "{cut}");
    let down = within(Duration::from_secs(90), || h2_state() == "down");
    assert!(down.is_some(), "h2 still {} 90 s after its cut", h2_state());
    eprintln!(
        "the manager saw h2 down {:.1} s after its cut",
        down.unwrap().as_secs_f64()
    );
    let status: Value = serde_json::from_str(
        stdout(&cuberoute(&[
            "testbed",
            "status",
            "--json",
            "--dir",
            bed.dir(),
        ]))
        .trim(),
    )
    .unwrap();
    assert_eq!(status["hosts"][1]["cut"], true, "{status}");
    assert_eq!(status["hosts"][1]["node_status"], "down", "{status}");
    // Its engine runs on, cut off.
    assert_eq!(status["hosts"][1]["answers"], true, "{status}");
    ok(&["testbed", "restore", "--dir", bed.dir(), "h2"]);
    let ready = within(Duration::from_secs(60), || h2_state() == "ready");
    assert!(
        ready.is_some(),
        "h2 still {} 60 s after its restore",
        h2_state()
    );
    eprintln!(
        "the manager saw h2 ready {:.1} s after its restore",
        ready.unwrap().as_secs_f64()
    );

    // A service on the swarm, so that down has tasks and their containers to remove (each
    // task runs once: `status --local` finds no node there, and is not restarted).
    docker(
        &sockets[0],
        &[
            "service",
            "create",
            "-d",
            "--name",
            "once",
            "--replicas",
            "3",
            "--restart-condition",
            "none",
            IMAGE,
            "status",
            "--local",
        ],
    );
    let tasks = within(Duration::from_secs(30), || {
        sockets
            .iter()
            .map(|s| docker(s, &["ps", "-aq"]).lines().count())
            .sum::<usize>()
            >= 3
    });
    assert!(tasks.is_some(), "the service's tasks never made containers");

    let down = ok(&["testbed", "down", "--dir", bed.dir()]);
    assert!(down.contains(&format!("testbed {tag} down in")), "{down}");
    nothing_left(&bed, &tag);
    let again = ok(&["testbed", "down", "--dir", bed.dir()]);
    assert!(again.contains("nothing to take down"), "{again}");
}

#[test]
fn down_after_an_up_killed_half_way_leaves_nothing() {
    if !root_and_docker_or_say_why("testbed killed") {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    ensure_image();
    let bed = Bed::new();
    let mut up = bed.spawn_up(&["--hosts", "3"]);
    // The engines run; the image and the swarm are still to come.
    up.wait_for_stdout("engines:");
    up.signal(nix::sys::signal::Signal::SIGKILL);
    let _ = up.finish();
    let tag = bed
        .tag()
        .expect("the tag was recorded before anything was made");
    assert!(
        !leftovers(&tag).is_empty(),
        "a killed up left its engines running"
    );
    let down = ok(&["testbed", "down", "--dir", bed.dir()]);
    assert!(down.contains("engines: 3 stopped"), "{down}");
    nothing_left(&bed, &tag);
}

#[test]
fn an_up_interrupted_half_way_removes_what_it_made() {
    if !root_and_docker_or_say_why("testbed interrupted") {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    ensure_image();
    let bed = Bed::new();
    let mut up = bed.spawn_up(&["--hosts", "2"]);
    up.wait_for_stdout("engines:");
    let tag = bed.tag().expect("a tag recorded");
    up.signal(nix::sys::signal::Signal::SIGINT);
    let out = up.finish();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("interrupted"), "{}", stderr(&out));
    assert!(stderr(&out).contains("removed"), "{}", stderr(&out));
    nothing_left(&bed, &tag);
}

#[test]
fn bad_input_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_str().unwrap();
    for hosts in ["0", "1", "10"] {
        let out = cuberoute(&["testbed", "up", "--hosts", hosts, "--dir", dir]);
        assert_eq!(
            out.status.code(),
            Some(2),
            "--hosts {hosts}: {}",
            stderr(&out)
        );
        assert!(stderr(&out).contains("2 to 9"), "{}", stderr(&out));
    }
    for host in ["h2", "x"] {
        for verb in ["cut", "restore"] {
            let out = cuberoute(&["testbed", verb, "--dir", dir, host]);
            assert_eq!(
                out.status.code(),
                Some(2),
                "{verb} {host}: {}",
                stderr(&out)
            );
            assert!(stderr(&out).contains("no testbed"), "{}", stderr(&out));
        }
    }
    let out = cuberoute(&["testbed", "status", "--dir", dir]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    // Nothing there: down has nothing to do, and says so.
    assert!(ok(&["testbed", "down", "--dir", dir]).contains("nothing to take down"));
}
