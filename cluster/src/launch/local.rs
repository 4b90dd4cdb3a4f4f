//! A cluster of local processes: one `cuberoute daemon` per node, each in its own process group
//! so that it outlives the command that started it, with its stderr in `DIR/logs/<id>.log`.
//!
//! `DIR/run.toml` records the processes: each one's pid and the time it started (read from
//! /proc right after it was spawned), and the boot they belong to. A recorded process counts as
//! running only while a process with its pid exists, has not exited, and started at the recorded
//! time: so a pid that another program took over is never signalled, and how the cluster
//! directory is spelled (relative, absolute, through a symlink) does not matter. `down` forgets
//! a process only once it has seen it gone. (Records without a start time, written by earlier
//! versions, are matched by the daemon's canonical `--config` path instead.)
//!
//! A `--netns` cluster ([`netns`](crate::launch::netns)) runs each daemon inside its node's network
//! namespace: the run state records the network ([`make_network`]) before any of it is made,
//! each daemon enters its namespace between fork and exec (so the recorded pid is the daemon's
//! own), and [`stop`] removes the network once the daemons are gone.

use crate::launch::layout::ClusterDir;
use crate::launch::netns::{self, NetnsRun};
use anyhow::Context;
use cuberoute_protocol::{NodeId, Topology};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What runs a cluster: local processes, or containers of a compose project.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunState {
    pub topology: Topology,
    /// The boot the processes were started in (/proc/sys/kernel/random/boot_id): after a
    /// reboot, none of them runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot: Option<String>,
    /// Set when the cluster runs as containers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub docker: Option<crate::launch::docker::DockerRun>,
    /// Set when every node runs in a network namespace of its own (`cluster up --netns`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub netns: Option<NetnsRun>,
    /// Set when the cluster is a Swarm stack over several hosts (`cluster swarm`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swarm: Option<crate::launch::swarm::run::SwarmRun>,
    #[serde(rename = "process", default)]
    pub processes: Vec<NodeProcess>,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct NodeProcess {
    pub id: NodeId,
    pub pid: u32,
    /// When the process started, in clock ticks after boot (field 22 of /proc/PID/stat). With
    /// the pid and the boot it names the process: one that gets the same pid later starts later.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<u64>,
}

impl RunState {
    /// A cluster of containers.
    pub fn docker(topology: Topology, run: crate::launch::docker::DockerRun) -> RunState {
        RunState {
            topology,
            boot: None,
            docker: Some(run),
            netns: None,
            swarm: None,
            processes: Vec::new(),
        }
    }

    /// A Swarm stack (`cluster swarm`).
    pub fn swarm(topology: Topology, run: crate::launch::swarm::run::SwarmRun) -> RunState {
        RunState {
            topology,
            boot: None,
            docker: None,
            netns: None,
            swarm: Some(run),
            processes: Vec::new(),
        }
    }

    /// Whether the nodes run in containers (compose or Swarm).
    pub fn in_containers(&self) -> bool {
        self.docker.is_some() || self.swarm.is_some()
    }

    pub fn load(dir: &ClusterDir) -> anyhow::Result<Option<RunState>> {
        let path = dir.run_state();
        if !path.exists() {
            return Ok(None);
        }
        let text =
            fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        let state =
            toml::from_str(&text).with_context(|| format!("{} is not valid", path.display()))?;
        Ok(Some(state))
    }

    /// Write the run state whole or not at all (a temporary file renamed over the old one).
    pub fn save(&self, dir: &ClusterDir) -> anyhow::Result<()> {
        let path = dir.run_state();
        let partial = path.with_extension("toml.partial");
        fs::write(&partial, toml::to_string(self)?)
            .and_then(|()| fs::rename(&partial, &path))
            .with_context(|| format!("writing {}", path.display()))
    }

    /// The recorded processes that are still running.
    pub fn alive(&self, dir: &ClusterDir) -> Vec<NodeProcess> {
        self.processes
            .iter()
            .copied()
            .filter(|p| self.is_running(dir, p))
            .collect()
    }

    /// Whether the recorded process `p` still runs (see the module doc).
    pub fn is_running(&self, dir: &ClusterDir, p: &NodeProcess) -> bool {
        if self.boot.is_some() && self.boot != boot_id() {
            return false;
        }
        is_running(p, &dir.node_config(p.id))
    }
}

/// This boot's id, if the kernel tells it.
fn boot_id() -> Option<String> {
    fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|id| id.trim().to_string())
}

/// The state letter and the start time (clock ticks after boot) of a process, from
/// /proc/PID/stat; `None` if there is no such process.
fn stat(pid: u32) -> Option<(char, u64)> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split at the last ')'.
    let mut fields = text.rsplit_once(')')?.1.split_whitespace();
    let state = fields.next()?.chars().next()?;
    // The state is field 3 and the start time field 22.
    let started = fields.nth(18)?.parse().ok()?;
    Some((state, started))
}

/// How many threads process `pid` has left (0 if it is gone).
fn threads(pid: u32) -> usize {
    fs::read_dir(format!("/proc/{pid}/task")).map_or(0, |tasks| tasks.count())
}

/// When process `pid` started (clock ticks after boot), if it exists.
pub fn start_time(pid: u32) -> Option<u64> {
    stat(pid).map(|(_, started)| started)
}

/// The `--config` argument of process `pid`, resolved against its working directory and
/// canonicalised.
fn config_of(pid: u32) -> Option<PathBuf> {
    let cmdline = fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let mut args = cmdline.split(|b| *b == 0).map(std::ffi::OsStr::from_bytes);
    let config = loop {
        let arg = args.next()?;
        if arg == "--config" {
            break PathBuf::from(args.next()?);
        }
        if let Some(value) = arg.as_bytes().strip_prefix(b"--config=") {
            break PathBuf::from(std::ffi::OsStr::from_bytes(value));
        }
    };
    let config = if config.is_relative() {
        Path::new(&format!("/proc/{pid}/cwd")).join(config)
    } else {
        config
    };
    fs::canonicalize(config).ok()
}

/// Whether `p` is running: its pid exists and has not exited, and it started at the recorded
/// time (or, for a record without one, runs with `config`, however either path is spelled).
pub fn is_running(p: &NodeProcess, config: &Path) -> bool {
    let Some((state, started)) = stat(p.pid) else {
        return false;
    };
    // A zombie (or a dead task) has exited and only waits to be reaped, unless it is the leader
    // of threads still exiting: a leader killed with its threads turns zombie first, while the
    // others still hold the process's files (its store's lock) and sockets (its ports).
    if matches!(state, 'Z' | 'X' | 'x') {
        return threads(p.pid) > 1;
    }
    match p.started {
        Some(recorded) => recorded == started,
        None => config_of(p.pid).is_some_and(|c| fs::canonicalize(config).is_ok_and(|d| c == d)),
    }
}

/// How long the daemons of a cluster live.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Lifetime {
    /// Until they are stopped (`cluster down`): a cluster outlives the `cluster up` that
    /// started it.
    #[default]
    UntilStopped,
    /// No longer than the process that started them (a bench's clusters): however that process
    /// ends, killed outright included, the kernel sends each daemon SIGTERM, and it drains and
    /// exits. The starting thread must be the process's main thread, whose end is what the
    /// kernel watches.
    WithLauncher,
}

/// Start one daemon per node of the generated cluster in `dir`, with `binary` (the cuberoute
/// executable), each in its namespace of `netns` if there is one ([`make_network`] made it).
/// `interrupt`, installed by the caller for the whole start (readiness wait included), ends the
/// loop: what was started is stopped (and the network removed).
pub fn start(
    dir: &ClusterDir,
    topology: Topology,
    binary: &Path,
    interrupt: &interrupt::Catch,
    netns: Option<NetnsRun>,
    lifetime: Lifetime,
) -> anyhow::Result<RunState> {
    let mut state = RunState {
        topology,
        boot: boot_id(),
        docker: None,
        netns,
        swarm: None,
        processes: Vec::new(),
    };
    for (index, id) in spawn_order(topology) {
        let namespace = state.netns.as_ref().map(|n| n.namespace(index));
        let spawned = if interrupt.caught() {
            Err(anyhow::anyhow!(
                "interrupted while starting the cluster; every daemon started was stopped"
            ))
        } else {
            spawn(dir, binary, id, namespace.as_deref(), lifetime)
        };
        match spawned {
            Ok(process) => {
                state.processes.push(process);
                if state.processes.len() % SAVE_EVERY == 0 {
                    state.save(dir)?;
                }
            }
            Err(e) => {
                // Leave nothing behind: stop what was started, then report.
                state.save(dir)?;
                let _ = stop(dir, Duration::from_secs(2));
                return Err(e);
            }
        }
    }
    state.save(dir)?;
    Ok(state)
}

/// The order in which [`start`] spawns the nodes, each with its index in node order: the
/// highest id first. The lower id of a link dials it (`cuberoute_daemon::link`), so every node
/// starts after the neighbours it dials, and its first dials find them listening. In id order
/// a dialler started first, its dials to neighbours not yet running failed (after a handshake
/// timeout) and waited out a backoff, or a knock from the neighbour, a handshake more: on
/// EH(5,5), 1,112 failed dials and 539 knocks for 6,144 links.
fn spawn_order(topology: Topology) -> impl Iterator<Item = (usize, NodeId)> {
    let nodes: Vec<NodeId> = topology.nodes().collect();
    nodes.into_iter().enumerate().rev()
}

/// Make the network of a `--netns` cluster of `topology` in `dir` ([`netns::make`]), recorded
/// in the run state before any of it is made. On an error or an interrupt, what was made is
/// removed and the run state forgotten (or kept, if the removal failed, for `cluster down`).
pub fn make_network(
    dir: &ClusterDir,
    topology: Topology,
    interrupt: &interrupt::Catch,
) -> anyhow::Result<NetnsRun> {
    fs::create_dir_all(dir.path()).with_context(|| format!("making {}", dir.display()))?;
    let reserved = netns::reserve(dir, topology.node_count() as usize)?;
    let run = reserved.run().clone();
    let state = RunState {
        topology,
        boot: boot_id(),
        docker: None,
        netns: Some(run.clone()),
        swarm: None,
        processes: Vec::new(),
    };
    let made = state
        .save(dir)
        .and_then(|()| netns::make(reserved, topology, &|| interrupt.caught()));
    let Err(e) = made else {
        return Ok(run);
    };
    match netns::remove(&run) {
        Ok(()) => {
            let _ = fs::remove_file(dir.run_state());
            Err(e.context("no cluster started; what was made of its network was removed"))
        }
        Err(r) => Err(e.context(format!(
            "making the cluster's network; removing it failed too ({r:#}): \
             `cuberoute cluster down --dir {}` tries again",
            dir.display()
        ))),
    }
}

/// Take down what a cluster in `dir` left after its processes all ended (a launcher killed
/// while it started, daemons that died): a `--netns` cluster's network. Nothing if a process of
/// it still runs or it has no network.
pub fn clear_stale(dir: &ClusterDir) -> anyhow::Result<()> {
    if let Some(state) = RunState::load(dir)?
        && state.netns.is_some()
        && state.alive(dir).is_empty()
    {
        stop(dir, Duration::ZERO)?;
    }
    Ok(())
}

/// While a cluster starts, the run state is saved every this many processes: a launcher
/// killed outright (SIGKILL) leaves at most this many unrecorded. SIGINT and SIGTERM are caught
/// instead ([`interrupt`]): the launcher stops what it started.
const SAVE_EVERY: usize = 16;

/// SIGINT and SIGTERM, caught for the length of a start.
pub mod interrupt {
    use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    static CAUGHT: AtomicBool = AtomicBool::new(false);
    /// Catches in force: one inside another (a start inside a bench) keeps what the outer one
    /// caught, so that a signal caught just before the inner one is installed is not lost.
    static DEPTH: AtomicUsize = AtomicUsize::new(0);

    extern "C" fn on_signal(_: nix::libc::c_int) {
        CAUGHT.store(true, Ordering::SeqCst);
    }

    /// The handlers in force before; put back on drop.
    pub struct Catch {
        before: Vec<(Signal, SigAction)>,
    }

    impl Catch {
        pub fn install() -> Catch {
            if DEPTH.fetch_add(1, Ordering::SeqCst) == 0 {
                CAUGHT.store(false, Ordering::SeqCst);
            }
            let action = SigAction::new(
                SigHandler::Handler(on_signal),
                SaFlags::empty(),
                SigSet::empty(),
            );
            let before = [Signal::SIGINT, Signal::SIGTERM]
                .into_iter()
                // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
                .filter_map(|signal| {
                    unsafe { sigaction(signal, &action) }
                        .ok()
                        .map(|b| (signal, b))
                })
                .collect();
            Catch { before }
        }

        pub fn caught(&self) -> bool {
            CAUGHT.load(Ordering::SeqCst)
        }

        /// Until a signal is caught (checked every 50 ms).
        pub async fn wait(&self) {
            while !self.caught() {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        }
    }

    impl Drop for Catch {
        fn drop(&mut self) {
            for (signal, action) in &self.before {
                // SAFETY: restores the handler that was in force before `install`.
                let _ = unsafe { sigaction(*signal, action) };
            }
            DEPTH.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// Start the daemon of node `id` again (after a crash or a kill), and record it.
pub fn restart_node(dir: &ClusterDir, binary: &Path, id: NodeId) -> anyhow::Result<u32> {
    let mut state = RunState::load(dir)?.context("the cluster is not running")?;
    if let Some(old) = state.processes.iter().find(|p| p.id == id)
        && state.is_running(dir, old)
    {
        anyhow::bail!("node {id} is still running as process {}", old.pid);
    }
    let namespace = match &state.netns {
        Some(n) => Some(
            state
                .topology
                .nodes()
                .position(|v| v == id)
                .map(|index| n.namespace(index))
                .with_context(|| format!("node {id} is not a node of {}", state.topology))?,
        ),
        None => None,
    };
    let process = spawn(
        dir,
        binary,
        id,
        namespace.as_deref(),
        Lifetime::UntilStopped,
    )?;
    state.processes.retain(|p| p.id != id);
    state.processes.push(process);
    if state.boot.is_none() {
        state.boot = boot_id();
    }
    state.save(dir)?;
    Ok(process.pid)
}

/// Start node `id`'s daemon, with the canonical path of its configuration (inside network
/// namespace `namespace`, if given), and read when it started.
fn spawn(
    dir: &ClusterDir,
    binary: &Path,
    id: NodeId,
    namespace: Option<&str>,
    lifetime: Lifetime,
) -> anyhow::Result<NodeProcess> {
    use std::os::unix::process::CommandExt;
    let log_path = dir.log(id);
    let log = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .with_context(|| format!("opening {}", log_path.display()))?;
    let config = fs::canonicalize(dir.node_config(id))
        .with_context(|| format!("no configuration for node {id}"))?;
    let mut command = Command::new(binary);
    command
        .arg("daemon")
        .arg("--config")
        .arg(config)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .process_group(0);
    if let Some(ns) = namespace {
        let ns = netns::open(ns)?;
        // SAFETY: between fork and exec the hook makes one syscall (setns) on a file opened
        // before the fork; it allocates nothing.
        unsafe { command.pre_exec(move || netns::enter(&ns)) };
    }
    if lifetime == Lifetime::WithLauncher {
        let launcher = nix::unistd::getpid();
        // SAFETY: between fork and exec the hook makes two syscalls (prctl, getppid); it
        // allocates nothing. A launcher gone before the prctl took effect is seen by getppid.
        unsafe {
            command.pre_exec(move || {
                nix::sys::prctl::set_pdeathsig(Signal::SIGTERM)?;
                if nix::unistd::getppid() != launcher {
                    return Err(std::io::Error::other("the launcher is gone"));
                }
                Ok(())
            })
        };
    }
    let child = command
        .spawn()
        .with_context(|| format!("starting {} daemon for node {id}", binary.display()))?;
    let pid = child.id();
    // The child exists from the fork on, so its start time can be read (even if it has
    // already exited: a zombie keeps it until reaped, and it is our child).
    Ok(NodeProcess {
        id,
        pid,
        started: start_time(pid),
    })
}

/// What [`stop`] did.
#[derive(Debug, Default)]
pub struct StopReport {
    pub terminated: usize,
    /// Processes that ignored SIGTERM for the whole grace time.
    pub killed: usize,
    /// Recorded processes that had exited before.
    pub gone_before: usize,
    /// A `--netns` cluster's network, removed (what it was).
    pub network: Option<String>,
}

/// Stop every process of the cluster: SIGTERM (each daemon drains), then SIGKILL after `grace`;
/// then remove a `--netns` cluster's network ([`netns::remove`]). `DIR/run.toml` is removed
/// only once every recorded process is seen gone and the network removed; if either is not, it
/// stays, and this fails naming what is left.
pub fn stop(dir: &ClusterDir, grace: Duration) -> anyhow::Result<StopReport> {
    let Some(state) = RunState::load(dir)? else {
        return Ok(StopReport::default());
    };
    let running = |p: &NodeProcess| state.is_running(dir, p);
    let alive: Vec<NodeProcess> = state.alive(dir).into_iter().map(pinned).collect();
    for p in &alive {
        let _ = kill(Pid::from_raw(p.pid as i32), Signal::SIGTERM);
    }
    let deadline = Instant::now() + grace;
    let mut left = alive.clone();
    while !left.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        left.retain(running);
    }
    for p in &left {
        let _ = kill(Pid::from_raw(p.pid as i32), Signal::SIGKILL);
    }
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline && left.iter().any(running) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let survivors: Vec<String> = alive
        .iter()
        .filter(|p| running(p))
        .map(|p| format!("{} (pid {})", p.id, p.pid))
        .collect();
    anyhow::ensure!(
        survivors.is_empty(),
        "processes of nodes {} survived SIGKILL; {} still records them",
        survivors.join(", "),
        dir.run_state().display()
    );
    let removing = Instant::now();
    if let Some(net) = &state.netns {
        netns::remove(net).with_context(|| {
            format!(
                "the daemons are stopped but not all of the network; {} still records it \
                 (`cluster down` again tries again)",
                dir.run_state().display()
            )
        })?;
    }
    fs::remove_file(dir.run_state())
        .with_context(|| format!("removing {}", dir.run_state().display()))?;
    Ok(StopReport {
        terminated: alive.len() - left.len(),
        killed: left.len(),
        gone_before: state.processes.len() - alive.len(),
        network: state.netns.as_ref().map(|net| {
            format!(
                "{} (in {:.2} s)",
                net.describe(),
                removing.elapsed().as_secs_f64()
            )
        }),
    })
}

/// Kill one node's process (SIGKILL) and wait until it is seen gone. False if it was not
/// running; an error if it still runs after `wait`.
pub fn kill_node(dir: &ClusterDir, id: NodeId, wait: Duration) -> anyhow::Result<bool> {
    let state = RunState::load(dir)?.context("the cluster is not running")?;
    let Some(p) = state
        .alive(dir)
        .into_iter()
        .find(|p| p.id == id)
        .map(pinned)
    else {
        return Ok(false);
    };
    kill(Pid::from_raw(p.pid as i32), Signal::SIGKILL)?;
    let deadline = Instant::now() + wait;
    while state.is_running(dir, &p) {
        anyhow::ensure!(
            Instant::now() < deadline,
            "node {id} (pid {}) still runs {wait:?} after SIGKILL",
            p.pid
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(true)
}

/// `p` followed from now on by its pid and start time. A record without a start time is
/// recognised by the configuration in its command line, but a process on its way out loses
/// its command line before it becomes a zombie: recognised once, it is then known by its start
/// time, so that it is not taken for gone while it still exits.
fn pinned(p: NodeProcess) -> NodeProcess {
    NodeProcess {
        started: p.started.or_else(|| start_time(p.pid)),
        ..p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in daemon: `sh` whose command line holds `--config CONFIG` (relative to `cwd`).
    fn stand_in(cwd: &Path, config: &str) -> std::process::Child {
        Command::new("sh")
            .args(["-c", "sleep 30; :", "daemon", "--config", config])
            .current_dir(cwd)
            .spawn()
            .unwrap()
    }

    #[test]
    fn a_process_is_known_by_its_start_time_and_its_config_however_spelled() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("c");
        for id in [0, 1] {
            let node = ClusterDir::new(&root).node_dir(NodeId(id));
            fs::create_dir_all(&node).unwrap();
            fs::write(node.join("node.toml"), "").unwrap();
        }
        std::os::unix::fs::symlink(&root, tmp.path().join("link")).unwrap();
        let mut child = stand_in(tmp.path(), "c/nodes/0/node.toml");
        let pid = child.id();
        let started = start_time(pid).unwrap();
        let recorded = NodeProcess {
            id: NodeId(0),
            pid,
            started: Some(started),
        };
        let unrecorded = NodeProcess {
            started: None,
            ..recorded
        };
        let t = tmp.path().display();
        let spellings = [
            format!("{t}/c"),
            format!("{t}/./c"),
            format!("{t}/c/"),
            format!("{t}/c/../c"),
            format!("{t}/link"),
        ];
        // `sh` may not have exec'd yet: its command line is the test's until it has.
        let deadline = Instant::now() + Duration::from_secs(5);
        while config_of(pid).is_none_or(|c| !c.ends_with("c/nodes/0/node.toml")) {
            assert!(Instant::now() < deadline, "sh never started");
            std::thread::sleep(Duration::from_millis(10));
        }
        for spelling in &spellings {
            let dir = ClusterDir::new(spelling);
            assert!(
                is_running(&recorded, &dir.node_config(NodeId(0))),
                "{spelling}"
            );
            assert!(
                is_running(&unrecorded, &dir.node_config(NodeId(0))),
                "{spelling}"
            );
            // Without a start time, another node's config is another process.
            assert!(
                !is_running(&unrecorded, &dir.node_config(NodeId(1))),
                "{spelling}"
            );
        }
        // A pid that started at another time is another program's.
        let reused = NodeProcess {
            started: Some(started + 1),
            ..recorded
        };
        assert!(!is_running(&reused, &root.join("nodes/0/node.toml")));
        // A record from another boot runs no more.
        let state = RunState {
            topology: "q:1".parse().unwrap(),
            boot: Some("another boot".into()),
            docker: None,
            netns: None,
            swarm: None,
            processes: vec![recorded],
        };
        assert!(state.alive(&ClusterDir::new(&root)).is_empty());
        let this_boot = RunState {
            boot: boot_id(),
            ..state
        };
        assert_eq!(
            this_boot.alive(&ClusterDir::new(&spellings[4])),
            vec![recorded]
        );
        // Exited (a zombie until reaped), then gone.
        child.kill().unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while is_running(&recorded, &root.join("nodes/0/node.toml")) {
            assert!(
                Instant::now() < deadline,
                "a killed process still counts as running"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        child.wait().unwrap();
        assert!(!is_running(&recorded, &root.join("nodes/0/node.toml")));
        assert!(!is_running(&unrecorded, &root.join("nodes/0/node.toml")));
    }

    /// A leader that has exited while its threads still run (as when a daemon is killed and its
    /// threads are slower to go) still runs: its threads hold its files and ports.
    #[test]
    fn a_leader_whose_threads_still_exit_still_runs() {
        let tmp = tempfile::tempdir().unwrap();
        let config = tmp.path().join("node.toml");
        fs::write(&config, "").unwrap();
        // The leader ends with exit(2) (not exit_group), its thread sleeps 1 s longer.
        let mut child = Command::new("python3")
            .args([
                "-c",
                "import ctypes, threading, time\n\
                 threading.Thread(target=time.sleep, args=(1.0,)).start()\n\
                 ctypes.CDLL(None).syscall(60, 0)",
            ])
            .spawn()
            .expect("python3 runs");
        let pid = child.id();
        let recorded = NodeProcess {
            id: NodeId(0),
            pid,
            started: start_time(pid),
        };
        let deadline = Instant::now() + Duration::from_secs(5);
        while stat(pid).is_some_and(|(state, _)| state != 'Z') {
            assert!(Instant::now() < deadline, "the leader did not exit");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(threads(pid), 2, "the leader exited, its thread did not");
        assert!(is_running(&recorded, &config));
        while is_running(&recorded, &config) {
            assert!(Instant::now() < deadline, "gone threads still count");
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(threads(pid), 1);
        child.wait().unwrap();
    }

    /// A run state written before `--netns` existed still loads; one with a network keeps it.
    #[test]
    fn run_states_with_and_without_a_network_load() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = ClusterDir::new(tmp.path());
        fs::write(
            dir.run_state(),
            "topology = \"q:1\"\n\n[[process]]\nid = 0\npid = 7\nstarted = 9\n",
        )
        .unwrap();
        let old = RunState::load(&dir).unwrap().unwrap();
        assert_eq!((old.netns, old.processes.len()), (None, 1));
        let net = NetnsRun {
            tag: "0a1f".into(),
            block: std::net::Ipv4Addr::new(198, 18, 16, 0),
            prefix: 20,
            nodes: 2,
            claim: "/c".into(),
        };
        RunState {
            netns: Some(net.clone()),
            ..old
        }
        .save(&dir)
        .unwrap();
        assert_eq!(RunState::load(&dir).unwrap().unwrap().netns, Some(net));
    }

    /// Every node is spawned after each neighbour it dials (the higher ids), with its index
    /// in node order (its address, its network namespace).
    #[test]
    fn every_node_starts_after_the_neighbours_it_dials() {
        for name in ["q:4", "eh:2,3", "hhc:2", "mc:1,2"] {
            let topology: Topology = name.parse().unwrap();
            let order: Vec<(usize, NodeId)> = spawn_order(topology).collect();
            assert_eq!(order.len() as u64, topology.node_count());
            let position = |v: NodeId| order.iter().position(|&(_, u)| u == v).unwrap();
            for (index, id) in &order {
                assert_eq!(topology.nodes().nth(*index), Some(*id));
                for neighbour in topology.neighbours(*id).filter(|n| n > id) {
                    assert!(position(neighbour) < position(*id), "{name}: {id}");
                }
            }
        }
    }

    #[test]
    fn the_start_time_is_field_22_of_stat() {
        let own = std::process::id();
        let text = fs::read_to_string(format!("/proc/{own}/stat")).unwrap();
        let fields: Vec<&str> = text
            .rsplit_once(')')
            .unwrap()
            .1
            .split_whitespace()
            .collect();
        assert_eq!(
            stat(own).map(|(_, started)| started),
            Some(fields[19].parse().unwrap())
        );
        assert_eq!(stat(u32::MAX), None);
    }
}
