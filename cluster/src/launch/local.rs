//! A cluster of local processes: one `cuberoute daemon` per node, or per group of nodes
//! ([`hosting`](crate::launch::hosting): a node host), each in its own process group so that it
//! outlives the command that started it, with its stderr in `DIR/logs/<id>.log` (a host's in its
//! first node's, the others' a link to it).
//!
//! `DIR/run.toml` records the processes ([`RunState::Processes`]): each one's pid, the time it
//! started and the boot, by which a recorded process is known
//! ([`run_state`](crate::launch::run_state)): a pid that another program took over is never
//! signalled. `down` forgets a process only once it has seen it gone. A node host is recorded
//! once for each of its nodes, with the same pid and start time: those records are one process.
//! A kill of one of its nodes crashes that node inside the process while others run there
//! ([`in_host`]; the record says `crashed`), and its restart starts it there again; the last
//! node's kill kills the process, and a restart then starts the process whole.
//!
//! A `--netns` cluster ([`netns`]) runs each daemon inside its node's network
//! namespace: the run state records the network ([`make_network`]) before any of it is made,
//! each daemon enters its namespace between fork and exec (so the recorded pid is the daemon's
//! own), and [`stop`] removes the network once the daemons are gone.

use crate::launch::in_host;
use crate::launch::layout::ClusterDir;
use crate::launch::netns::{self, NetnsRun};
use crate::launch::run_state::{NodeProcess, Processes, RunState, boot_id, start_time};
use anyhow::Context;
use cuberoute_protocol::{NodeId, Topology};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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

/// Start one daemon per group of `groups` (each node alone by default) of the generated
/// cluster in `dir`, with `binary` (the cuberoute executable), each in its namespace of
/// `netns` if there is one ([`make_network`] made it; nodes alone only). `interrupt`, installed
/// by the caller for the whole start (readiness wait included), ends the loop: what was started
/// is stopped (and the network removed).
pub fn start(
    dir: &ClusterDir,
    topology: Topology,
    binary: &Path,
    interrupt: &interrupt::Catch,
    (netns, groups): (Option<NetnsRun>, &[Vec<NodeId>]),
    lifetime: Lifetime,
) -> anyhow::Result<Processes> {
    let mut state = Processes::new(topology, netns);
    anyhow::ensure!(
        state.netns.is_none() || groups.iter().all(|g| g.len() == 1),
        "a network namespace holds one node: nodes that share a process cannot each have one"
    );
    for group in spawn_order(groups) {
        let namespace = match &state.netns {
            Some(n) => Some(n.namespace(index_of(topology, group[0])?)),
            None => None,
        };
        let spawned = if interrupt.caught() {
            Err(crate::launch::interrupted::Interrupted(
                "while starting the cluster; every daemon started was stopped".into(),
            )
            .into())
        } else {
            spawn(dir, binary, group, namespace.as_deref(), lifetime)
        };
        match spawned {
            Ok(processes) => {
                let before = state.processes.len();
                state.processes.extend(processes);
                if before / SAVE_EVERY != state.processes.len() / SAVE_EVERY {
                    save(dir, &state)?;
                }
            }
            Err(e) => {
                // Leave nothing behind: stop what was started, then report.
                save(dir, &state)?;
                let _ = stop(dir, Duration::from_secs(2));
                return Err(e);
            }
        }
    }
    save(dir, &state)?;
    Ok(state)
}

/// Node `id`'s index in node order (its address, its network namespace).
fn index_of(topology: Topology, id: NodeId) -> anyhow::Result<usize> {
    topology
        .nodes()
        .position(|v| v == id)
        .with_context(|| format!("node {id} is not a node of {topology}"))
}

/// Record `state` as the run state of `dir`.
fn save(dir: &ClusterDir, state: &Processes) -> anyhow::Result<()> {
    RunState::Processes(state.clone()).save(dir)
}

/// The order in which [`start`] spawns the processes: the one with the highest id first. The
/// lower id of a link dials it (`cuberoute_daemon::link`), so every node starts after the
/// neighbours it dials, and its first dials find them listening. In id order a dialler started
/// first, its dials to neighbours not yet running failed (after a handshake timeout) and waited
/// out a backoff, or a knock from the neighbour, a handshake more: on EH(5,5), 1,112 failed
/// dials and 539 knocks for 6,144 links. (Nodes that share a process start together; between
/// processes the highest node of each orders them.)
fn spawn_order(groups: &[Vec<NodeId>]) -> Vec<&[NodeId]> {
    let mut order: Vec<&[NodeId]> = groups.iter().map(Vec::as_slice).collect();
    order.sort_by_key(|g| std::cmp::Reverse(g.iter().max().copied()));
    order
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
    let state = RunState::Processes(Processes::new(topology, Some(run.clone())));
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
    if let Some(RunState::Processes(state)) = RunState::load(dir)?
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
    let Some(RunState::Processes(mut state)) = RunState::load(dir)? else {
        anyhow::bail!("the cluster is not running");
    };
    // Crashed inside its process, which runs on: that process starts it again.
    if let Some(i) = state.processes.iter().position(|p| p.id == id)
        && state.processes[i].crashed
        && state.is_running(dir, &state.processes[i])
    {
        let via = others_running(dir, &state, &state.processes[i]);
        in_host::restart(dir, id, &via)?;
        state.processes[i].crashed = false;
        save(dir, &state)?;
        return Ok(state.processes[i].pid);
    }
    // The nodes of its process: those recorded with the same process.
    let group: Vec<NodeId> = match state.processes.iter().find(|p| p.id == id) {
        Some(old) => {
            if let Some(running) = state
                .processes
                .iter()
                .find(|p| same_process(p, old) && state.is_running(dir, p))
            {
                anyhow::bail!(
                    "node {id} is still running as process {}{}",
                    running.pid,
                    if running.id == id {
                        String::new()
                    } else {
                        format!(" (with node {})", running.id)
                    }
                );
            }
            let mut group: Vec<NodeId> = state
                .processes
                .iter()
                .filter(|p| same_process(p, old))
                .map(|p| p.id)
                .collect();
            group.sort();
            group
        }
        None => vec![id],
    };
    let namespace = match &state.netns {
        Some(n) => Some(n.namespace(index_of(state.topology, id)?)),
        None => None,
    };
    let processes = spawn(
        dir,
        binary,
        &group,
        namespace.as_deref(),
        Lifetime::UntilStopped,
    )?;
    state.processes.retain(|p| !group.contains(&p.id));
    let pid = processes[0].pid;
    state.processes.extend(processes);
    if state.boot.is_none() {
        state.boot = boot_id();
    }
    save(dir, &state)?;
    Ok(pid)
}

/// Whether two records are one process (a node host's nodes).
fn same_process(a: &NodeProcess, b: &NodeProcess) -> bool {
    a.pid == b.pid && a.started == b.started
}

/// The other nodes of `p`'s process that run (a node host's; none for a node alone).
fn others_running(dir: &ClusterDir, state: &Processes, p: &NodeProcess) -> Vec<NodeId> {
    state
        .processes
        .iter()
        .filter(|q| q.id != p.id && same_process(q, p) && state.node_runs(dir, q))
        .map(|q| q.id)
        .collect()
}

use crate::launch::layout::NODE_HOSTED_LIST as HOSTED_LIST;

/// Start the daemon of the nodes `ids` (one, or a node host's), with the canonical paths of
/// their configurations (inside network namespace `namespace`, if given), and read when it
/// started: a record for each node.
fn spawn(
    dir: &ClusterDir,
    binary: &Path,
    ids: &[NodeId],
    namespace: Option<&str>,
    lifetime: Lifetime,
) -> anyhow::Result<Vec<NodeProcess>> {
    use std::os::unix::process::CommandExt;
    let id = ids[0];
    let log_path = dir.log(id);
    let log = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .with_context(|| format!("opening {}", log_path.display()))?;
    // The other nodes' logs are the host's.
    for &other in &ids[1..] {
        let link = dir.log(other);
        let _ = fs::remove_file(&link);
        let target = log_path.file_name().expect("a log file's name");
        std::os::unix::fs::symlink(target, &link)
            .with_context(|| format!("linking {} to {}", link.display(), log_path.display()))?;
    }
    let config = |id: NodeId| {
        fs::canonicalize(dir.node_config(id))
            .with_context(|| format!("no configuration for node {id}"))
    };
    let mut command = Command::new(binary);
    command.arg("daemon").arg("--config").arg(config(id)?);
    if ids.len() > 1 {
        // The others in a list beside the first's configuration: 65,536 paths are more than
        // a command line holds.
        let list = dir.node_config(id).with_file_name(HOSTED_LIST);
        let mut lines = String::new();
        for &other in &ids[1..] {
            lines.push_str(&config(other)?.to_string_lossy());
            lines.push('\n');
        }
        fs::write(&list, lines).with_context(|| format!("writing {}", list.display()))?;
        command.arg("--with-configs").arg(fs::canonicalize(&list)?);
    }
    command
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
    let started = start_time(pid);
    Ok(ids
        .iter()
        .map(|&id| NodeProcess {
            id,
            pid,
            started,
            crashed: false,
        })
        .collect())
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

/// The time a node host takes to stop beyond a daemon alone, for its largest process: its
/// nodes drain and close on one thread (measured: 8.8 s for 2,048 nodes of Q_12 after
/// SIGTERM, where a daemon alone takes at most its 3 s drain and 1 s close).
fn host_grace(processes: &[NodeProcess]) -> Duration {
    let largest = crate::launch::run_state::by_process(processes)
        .iter()
        .map(Vec::len)
        .max()
        .unwrap_or(1);
    HOST_GRACE_PER_NODE * (largest as u32).saturating_sub(1)
}

/// What [`host_grace`] gives each node of a process beyond the first.
const HOST_GRACE_PER_NODE: Duration = Duration::from_millis(3);

/// Stop every process of the cluster: SIGTERM (each daemon drains), then SIGKILL after `grace`
/// (and [`host_grace`] for processes that run several nodes);
/// then remove a `--netns` cluster's network ([`netns::remove`]). `DIR/run.toml` is removed
/// only once every recorded process is seen gone and the network removed; if either is not, it
/// stays, and this fails naming what is left.
pub fn stop(dir: &ClusterDir, grace: Duration) -> anyhow::Result<StopReport> {
    let Some(RunState::Processes(state)) = RunState::load(dir)? else {
        return Ok(StopReport::default());
    };
    let running = |p: &NodeProcess| state.is_running(dir, p);
    // A node host is recorded once per node: signalled, and counted, once.
    let mut alive: Vec<NodeProcess> = state.alive(dir).into_iter().map(pinned).collect();
    alive.sort_by_key(|p| (p.pid, p.started));
    alive.dedup_by(|a, b| same_process(a, b));
    let recorded = {
        let mut all: Vec<(u32, Option<u64>)> =
            state.processes.iter().map(|p| (p.pid, p.started)).collect();
        all.sort();
        all.dedup();
        all.len()
    };
    for p in &alive {
        let _ = kill(Pid::from_raw(p.pid as i32), Signal::SIGTERM);
    }
    let hosts = if grace.is_zero() {
        Duration::ZERO
    } else {
        host_grace(&state.processes)
    };
    let deadline = Instant::now() + grace + hosts;
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
        gone_before: recorded.saturating_sub(alive.len()),
        network: state.netns.as_ref().map(|net| {
            format!(
                "{} (in {:.2} s)",
                net.describe(),
                removing.elapsed().as_secs_f64()
            )
        }),
    })
}

/// Kill one node: its process (SIGKILL), waiting until it is seen gone; or, for a node of a
/// node host whose other nodes run, the node alone inside its process ([`in_host`]), recorded
/// as crashed. False if it was not running; an error if it still runs after `wait`.
pub fn kill_node(dir: &ClusterDir, id: NodeId, wait: Duration) -> anyhow::Result<bool> {
    let Some(RunState::Processes(mut state)) = RunState::load(dir)? else {
        anyhow::bail!("the cluster is not running");
    };
    let Some(p) = state
        .alive(dir)
        .into_iter()
        .find(|p| p.id == id && !p.crashed)
        .map(pinned)
    else {
        return Ok(false);
    };
    // A node host's node, with others that run: crashed inside the process, which runs on.
    let via = others_running(dir, &state, &p);
    if !via.is_empty() {
        in_host::crash(dir, id, &via)?;
        for q in state.processes.iter_mut().filter(|q| q.id == id) {
            q.crashed = true;
        }
        save(dir, &state)?;
        return Ok(true);
    }
    kill_process(dir, &state, p, wait)
}

/// Kill node `id`'s process (SIGKILL) with every node it runs, and wait until it is seen gone.
/// False if it was not running; an error if it still runs after `wait`.
pub fn kill_process_of(dir: &ClusterDir, id: NodeId, wait: Duration) -> anyhow::Result<bool> {
    let Some(RunState::Processes(state)) = RunState::load(dir)? else {
        anyhow::bail!("the cluster is not running");
    };
    match state.alive(dir).into_iter().find(|p| p.id == id) {
        Some(p) => kill_process(dir, &state, pinned(p), wait),
        None => Ok(false),
    }
}

fn kill_process(
    dir: &ClusterDir,
    state: &Processes,
    p: NodeProcess,
    wait: Duration,
) -> anyhow::Result<bool> {
    let id = p.id;
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

    #[test]
    fn a_node_host_is_given_time_to_stop_by_its_largest_process() {
        let p = |id: u64, pid: u32| NodeProcess {
            id: NodeId(id),
            pid,
            started: Some(7),
            crashed: false,
        };
        assert_eq!(host_grace(&[p(0, 1), p(1, 2)]), Duration::ZERO);
        let hosts: Vec<NodeProcess> = (0..10).map(|i| p(i, 1)).collect();
        assert_eq!(host_grace(&hosts), HOST_GRACE_PER_NODE * 9);
        let mut two = vec![p(0, 5), p(1, 5), p(2, 6)];
        assert_eq!(host_grace(&two), HOST_GRACE_PER_NODE);
        // A pid used again by a later process is another process.
        two[1].started = Some(8);
        assert_eq!(host_grace(&two), Duration::ZERO);
    }

    /// Every node is spawned after each neighbour it dials (the higher ids), with its index
    /// in node order (its address, its network namespace).
    #[test]
    fn every_node_starts_after_the_neighbours_it_dials() {
        for name in ["q:4", "eh:2,3", "hhc:2", "mc:1,2"] {
            let topology: Topology = name.parse().unwrap();
            let groups: Vec<Vec<NodeId>> = topology.nodes().map(|v| vec![v]).collect();
            let order: Vec<NodeId> = spawn_order(&groups).into_iter().map(|g| g[0]).collect();
            assert_eq!(order.len() as u64, topology.node_count());
            let position = |v: NodeId| order.iter().position(|&u| u == v).unwrap();
            for id in &order {
                for neighbour in topology.neighbours(*id).filter(|n| n > id) {
                    assert!(position(neighbour) < position(*id), "{name}: {id}");
                }
            }
        }
    }
}
