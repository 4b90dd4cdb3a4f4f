//! What runs a cluster's nodes, local processes or containers, behind one interface: which
//! runners are alive, stop them all, kill or restart one, show one's log.
//!
//! A cluster is found from its directory: the processes `DIR/run.toml` records (`cluster up`),
//! the compose project it records (`cluster up --docker`), or, with no run.toml, the compose
//! project whose containers mount the directory's node directories (a cluster started by hand
//! with `docker-compose -f DIR/compose.yml up`, [`docker::discover`]), or the Swarm stack it
//! records (`cluster swarm`, [`swarm`]: a node's runner is its task).

pub mod compose;
pub mod state;

pub use state::Runner;

use crate::launch::compose::COMPOSE_FILE;
use crate::launch::docker::{self, Compose};
use crate::launch::layout::ClusterDir;
use crate::launch::local;
use crate::launch::run_state::RunState;
use crate::launch::swarm;
use anyhow::Context;
use cuberoute_protocol::NodeId;
use std::collections::BTreeMap;
use std::time::Duration;

/// A running (or once started) cluster and the state of each node's runner.
#[derive(Clone, Debug)]
pub struct Runners {
    pub state: RunState,
    pub nodes: BTreeMap<NodeId, Runner>,
}

impl Runners {
    pub fn alive(&self) -> usize {
        self.nodes.values().filter(|r| r.is_alive()).count()
    }

    /// For a container cluster: whether every container reports healthy.
    pub fn all_healthy(&self) -> bool {
        self.nodes
            .values()
            .all(|r| r == &Runner::Alive("healthy".into()))
    }
}

/// What runs the cluster in `dir`: the recorded run state, or the compose project found
/// running it. `None` if neither.
pub fn find(dir: &ClusterDir) -> anyhow::Result<Option<RunState>> {
    if let Some(state) = RunState::load(dir)? {
        return Ok(Some(state));
    }
    if !dir.path().join(COMPOSE_FILE).is_file() {
        return Ok(None);
    }
    let Some(run) = docker::discover(dir)? else {
        return Ok(None);
    };
    let manifest = cuberoute_daemon::manifest::Manifest::load(&dir.manifest())?;
    Ok(Some(RunState::Compose {
        topology: manifest.topology,
        run,
    }))
}

/// Why no cluster was found in `dir`, and what to do.
pub fn not_running(dir: &ClusterDir) -> anyhow::Error {
    let d = dir.display();
    if dir.path().join(COMPOSE_FILE).is_file() {
        anyhow::anyhow!(
            "no cluster is running in {d}: no container of a compose project mounts {d}/nodes \
             (start it with `docker-compose -f {d}/compose.yml up -d` or `cuberoute cluster up \
             --docker`; a Swarm stack's tasks are `docker service` and `docker stack` business)"
        )
    } else {
        anyhow::anyhow!(
            "no cluster is running in {d} (nothing recorded in {}): start one with \
             `cuberoute cluster up --dir {d}`",
            dir.run_state().display()
        )
    }
}

/// The runners of the cluster in `dir`, if one was started there (see [`find`]) and not taken
/// down.
pub fn inspect(dir: &ClusterDir) -> anyhow::Result<Option<Runners>> {
    let Some(state) = find(dir)? else {
        return Ok(None);
    };
    let nodes = match &state {
        RunState::Swarm { run, .. } => swarm::runners(dir, run)?,
        RunState::Processes(state) => state
            .processes
            .iter()
            .map(|p| {
                let runner = match state.why_down(dir, p) {
                    None => Runner::Alive(format!("process {}", p.pid)),
                    Some(why) => Runner::Dead(why.into()),
                };
                (p.id, runner)
            })
            .collect(),
        RunState::Compose { run, .. } => compose::runners(dir, run)?,
    };
    Ok(Some(Runners { state, nodes }))
}

/// The host pids of every running daemon (a process, or a container's main process).
pub fn pids(dir: &ClusterDir) -> anyhow::Result<Vec<u32>> {
    let Some(state) = find(dir)? else {
        return Ok(Vec::new());
    };
    match &state {
        RunState::Swarm { run, .. } => swarm::pids(run),
        RunState::Processes(state) => {
            // A node host is recorded once per node: its pid once.
            let mut pids: Vec<u32> = state.alive(dir).iter().map(|p| p.pid).collect();
            pids.sort_unstable();
            pids.dedup();
            Ok(pids)
        }
        RunState::Compose { run, .. } => docker::container_pids(run),
    }
}

/// Stop the whole cluster and leave nothing behind (a `--netns` cluster's network included).
/// Returns what was done, for the user.
pub fn stop(dir: &ClusterDir) -> anyhow::Result<String> {
    stop_keeping(dir, false)
}

/// [`stop`]; with `keep_volumes`, the containers' store volumes are kept.
pub fn stop_keeping(dir: &ClusterDir, keep_volumes: bool) -> anyhow::Result<String> {
    let Some(state) = find(dir)? else {
        return Ok(format!("no cluster is running in {}", dir.display()));
    };
    match &state {
        RunState::Swarm { run, .. } => {
            let report = swarm::down(run, keep_volumes)?;
            std::fs::remove_file(dir.run_state())
                .with_context(|| format!("removing {}", dir.run_state().display()))?;
            Ok(format!("cluster in {} stopped: {report}", dir.display()))
        }
        RunState::Processes(_) => {
            let report = local::stop(dir, Duration::from_secs(5))?;
            let before = match report.gone_before {
                0 => String::new(),
                n => format!(" ({n} had exited before)"),
            };
            let network = match &report.network {
                Some(network) => format!("; removed {network}"),
                None => String::new(),
            };
            Ok(format!(
                "cluster in {} stopped: {} processes exited on SIGTERM, {} killed{before}{network}",
                dir.display(),
                report.terminated,
                report.killed
            ))
        }
        RunState::Compose { run, .. } => {
            let n = docker::containers(run)?.len();
            let mut args = vec!["down", "--remove-orphans", "--timeout", "5"];
            if !keep_volumes {
                args.push("--volumes");
            }
            Compose::detect()?.run(run, &args)?;
            if dir.run_state().exists() {
                std::fs::remove_file(dir.run_state())?;
            }
            Ok(format!(
                "cluster in {} stopped: {n} containers and the project network removed{}",
                dir.display(),
                if keep_volumes { "; volumes kept" } else { "" }
            ))
        }
    }
}

/// Kill one node's runner at once (SIGKILL: nothing drains). False if it was not running.
pub fn kill(dir: &ClusterDir, id: NodeId) -> anyhow::Result<bool> {
    let runners = inspect(dir)?.ok_or_else(|| not_running(dir))?;
    if !runners.nodes.get(&id).is_some_and(Runner::is_alive) {
        return Ok(false);
    }
    match &runners.state {
        RunState::Swarm { topology, run } => swarm::kill(dir, *topology, run.clone(), id),
        RunState::Processes(_) => local::kill_node(dir, id, Duration::from_secs(5)),
        RunState::Compose { topology, run } => compose::kill(dir, *topology, run.clone(), id),
    }
}

/// Start a killed node's runner again. False if it is running.
pub fn restart(dir: &ClusterDir, id: NodeId) -> anyhow::Result<bool> {
    let runners = inspect(dir)?.ok_or_else(|| not_running(dir))?;
    if runners.nodes.get(&id).is_some_and(Runner::is_alive) {
        return Ok(false);
    }
    match &runners.state {
        RunState::Swarm { topology, run } => {
            return swarm::restart(dir, *topology, run.clone(), id);
        }
        RunState::Processes(_) => {
            local::restart_node(dir, &std::env::current_exe()?, id)?;
        }
        RunState::Compose { topology, run } => {
            compose::restart(dir, *topology, run.clone(), id)?;
        }
    }
    Ok(true)
}

/// Print one node's log to stdout (following it with `follow`).
pub fn logs(dir: &ClusterDir, id: NodeId, follow: bool) -> anyhow::Result<()> {
    match find(dir)? {
        Some(RunState::Swarm { run, .. }) => return swarm::logs(dir, &run, id, follow),
        Some(RunState::Compose { run, .. }) => {
            let service = compose::service_of(dir, id)?;
            let mut args = vec!["logs", "--no-color"];
            if follow {
                args.push("--follow");
            }
            args.push(&service);
            return Compose::detect()?.run_inherit(&run, &args);
        }
        Some(RunState::Processes(_)) | None => {}
    }
    let path = dir.log(id);
    let mut file = std::fs::File::open(&path)
        .map_err(|e| anyhow::anyhow!("no log for node {id} at {}: {e}", path.display()))?;
    let mut out = std::io::stdout().lock();
    loop {
        std::io::copy(&mut file, &mut out)?;
        if !follow {
            return Ok(());
        }
        std::io::Write::flush(&mut out)?;
        std::thread::sleep(Duration::from_millis(200));
    }
}
