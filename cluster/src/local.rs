//! A cluster of local processes: one `cuberoute daemon` per node, each in its own process group
//! so that it outlives the command that started it, with its stderr in `DIR/logs/<id>.log`.
//! `DIR/run.toml` records the processes; a process counts as ours only while its command line
//! still names its node's configuration, so a reused pid is never signalled.

use crate::layout::ClusterDir;
use anyhow::Context;
use cuberoute_protocol::{NodeId, Topology};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};
use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What runs a cluster: local processes, or containers of a compose project.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunState {
    pub topology: Topology,
    /// Set when the cluster runs as containers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub docker: Option<crate::docker::DockerRun>,
    #[serde(rename = "process", default)]
    pub processes: Vec<NodeProcess>,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct NodeProcess {
    pub id: NodeId,
    pub pid: u32,
}

impl RunState {
    /// A cluster of containers.
    pub fn docker(topology: Topology, run: crate::docker::DockerRun) -> RunState {
        RunState {
            topology,
            docker: Some(run),
            processes: Vec::new(),
        }
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

    pub fn save(&self, dir: &ClusterDir) -> anyhow::Result<()> {
        let path = dir.run_state();
        fs::write(&path, toml::to_string(self)?)
            .with_context(|| format!("writing {}", path.display()))
    }

    /// The recorded processes that are still running.
    pub fn alive(&self, dir: &ClusterDir) -> Vec<NodeProcess> {
        self.processes
            .iter()
            .copied()
            .filter(|p| is_our_daemon(p.pid, &dir.node_config(p.id)))
            .collect()
    }
}

/// Whether `pid` is a live daemon started with `config`.
pub fn is_our_daemon(pid: u32, config: &Path) -> bool {
    let Ok(cmdline) = fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    if let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) {
        // A zombie has exited; it only waits to be reaped.
        if stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
        {
            return false;
        }
    }
    let config = config.to_string_lossy();
    cmdline
        .split(|b| *b == 0)
        .any(|arg| arg == config.as_bytes())
}

/// Start one daemon per node of the generated cluster in `dir`, with `binary` (the cuberoute
/// executable).
pub fn start(dir: &ClusterDir, topology: Topology, binary: &Path) -> anyhow::Result<RunState> {
    let mut state = RunState {
        topology,
        docker: None,
        processes: Vec::new(),
    };
    for id in topology.nodes() {
        match spawn(dir, binary, id) {
            Ok(pid) => state.processes.push(NodeProcess { id, pid }),
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

/// Start the daemon of node `id` again (after a crash or a kill), and record it.
pub fn restart_node(dir: &ClusterDir, binary: &Path, id: NodeId) -> anyhow::Result<u32> {
    let mut state = RunState::load(dir)?.context("the cluster is not running")?;
    let pid = spawn(dir, binary, id)?;
    state.processes.retain(|p| p.id != id);
    state.processes.push(NodeProcess { id, pid });
    state.save(dir)?;
    Ok(pid)
}

fn spawn(dir: &ClusterDir, binary: &Path, id: NodeId) -> anyhow::Result<u32> {
    use std::os::unix::process::CommandExt;
    let log_path = dir.log(id);
    let log = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .with_context(|| format!("opening {}", log_path.display()))?;
    let child = Command::new(binary)
        .arg("daemon")
        .arg("--config")
        .arg(dir.node_config(id))
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .process_group(0)
        .spawn()
        .with_context(|| format!("starting {} daemon for node {id}", binary.display()))?;
    Ok(child.id())
}

/// What [`stop`] did.
#[derive(Debug, Default)]
pub struct StopReport {
    pub terminated: usize,
    /// Processes that ignored SIGTERM for the whole grace time.
    pub killed: usize,
}

/// Stop every process of the cluster: SIGTERM (each daemon drains), then SIGKILL after `grace`.
pub fn stop(dir: &ClusterDir, grace: Duration) -> anyhow::Result<StopReport> {
    let Some(state) = RunState::load(dir)? else {
        return Ok(StopReport::default());
    };
    let alive = state.alive(dir);
    for p in &alive {
        let _ = kill(Pid::from_raw(p.pid as i32), Signal::SIGTERM);
    }
    let deadline = Instant::now() + grace;
    let mut left = alive.clone();
    while !left.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        left.retain(|p| is_our_daemon(p.pid, &dir.node_config(p.id)));
    }
    for p in &left {
        let _ = kill(Pid::from_raw(p.pid as i32), Signal::SIGKILL);
    }
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline
        && left
            .iter()
            .any(|p| is_our_daemon(p.pid, &dir.node_config(p.id)))
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    let survivors: Vec<NodeId> = left
        .iter()
        .filter(|p| is_our_daemon(p.pid, &dir.node_config(p.id)))
        .map(|p| p.id)
        .collect();
    anyhow::ensure!(
        survivors.is_empty(),
        "processes of nodes {survivors:?} survived SIGKILL"
    );
    fs::remove_file(dir.run_state())
        .with_context(|| format!("removing {}", dir.run_state().display()))?;
    Ok(StopReport {
        terminated: alive.len() - left.len(),
        killed: left.len(),
    })
}

/// Send `signal` to one node's process, if it runs.
pub fn signal_node(dir: &ClusterDir, id: NodeId, signal: Signal) -> anyhow::Result<bool> {
    let state = RunState::load(dir)?.context("the cluster is not running")?;
    let Some(p) = state.alive(dir).into_iter().find(|p| p.id == id) else {
        return Ok(false);
    };
    kill(Pid::from_raw(p.pid as i32), signal)?;
    Ok(true)
}
