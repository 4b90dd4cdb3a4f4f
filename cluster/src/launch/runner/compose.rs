//! The runners of a compose project's nodes: each node's is its container, found by the
//! container's service ([`hosting::processes`]: the nodes one container runs share its control
//! address in the client's manifest). A container of several nodes (`--nodes-per-container`)
//! is a node host: a kill of one of its nodes while others run there crashes that node inside
//! the container ([`in_host`]), recorded as `crashed` in the run state's [`DockerRun`] until it
//! is started there again; the last running node's kill kills the container, and a restart then
//! starts the container, every node of it.

use super::state::Runner;
use crate::launch::docker::{self, Compose, DockerRun};
use crate::launch::generate::container_service;
use crate::launch::hosting;
use crate::launch::in_host;
use crate::launch::layout::ClusterDir;
use crate::launch::run_state::RunState;
use cuberoute_daemon::manifest::Manifest;
use cuberoute_protocol::{NodeId, Topology};
use std::collections::BTreeMap;

/// The nodes of each container of the cluster in `dir`, from its client manifest.
pub fn containers(dir: &ClusterDir) -> anyhow::Result<Vec<Vec<NodeId>>> {
    Ok(hosting::processes(&Manifest::load(&dir.manifest())?))
}

/// The nodes of the container that runs `id`.
fn container_of(dir: &ClusterDir, id: NodeId) -> anyhow::Result<Vec<NodeId>> {
    containers(dir)?
        .into_iter()
        .find(|nodes| nodes.contains(&id))
        .ok_or_else(|| anyhow::anyhow!("node {id} is not in the cluster's manifest"))
}

/// The runner of every node: its container's state, or crashed inside it.
pub fn runners(dir: &ClusterDir, run: &DockerRun) -> anyhow::Result<BTreeMap<NodeId, Runner>> {
    let running = docker::containers(run)?;
    let mut runners = BTreeMap::new();
    for nodes in containers(dir)? {
        let service = container_service(&nodes);
        let container = running.iter().find(|c| c.service == service);
        for &id in &nodes {
            let runner = match container {
                None => Runner::Dead("no container".into()),
                Some(c) if c.state != "running" => Runner::Dead(format!("container {}", c.state)),
                Some(_) if run.crashed.contains(&id) => {
                    Runner::Dead("crashed inside its container".into())
                }
                Some(c) if c.health.is_empty() => Runner::Alive("running".into()),
                Some(c) => Runner::Alive(c.health.clone()),
            };
            runners.insert(id, runner);
        }
    }
    Ok(runners)
}

/// Record which nodes are crashed inside their containers.
fn save(dir: &ClusterDir, topology: Topology, run: DockerRun) -> anyhow::Result<()> {
    RunState::Compose { topology, run }.save(dir)
}

/// Kill node `id`, which runs: alone inside its container while others run there, else its
/// container (SIGKILL).
pub fn kill(
    dir: &ClusterDir,
    topology: Topology,
    mut run: DockerRun,
    id: NodeId,
) -> anyhow::Result<bool> {
    let others = running_with(&run, &container_of(dir, id)?, id);
    if others.is_empty() {
        return kill_container(dir, topology, run, id);
    }
    in_host::crash(dir, id, &others)?;
    run.crashed.push(id);
    run.crashed.sort();
    save(dir, topology, run)?;
    Ok(true)
}

/// Kill the container that runs node `id`, with every node in it (SIGKILL).
pub fn kill_container(
    dir: &ClusterDir,
    topology: Topology,
    run: DockerRun,
    id: NodeId,
) -> anyhow::Result<bool> {
    let nodes = container_of(dir, id)?;
    Compose::detect()?.run(&run, &["kill", "-s", "SIGKILL", &container_service(&nodes)])?;
    forget_crashed(dir, topology, run, &nodes)?;
    Ok(true)
}

/// The nodes of `nodes` (a container's) other than `id` that run in it.
fn running_with(run: &DockerRun, nodes: &[NodeId], id: NodeId) -> Vec<NodeId> {
    nodes
        .iter()
        .copied()
        .filter(|&n| n != id && !run.crashed.contains(&n))
        .collect()
}

/// A container that stopped or starts takes its crashed nodes with it: a start brings every
/// node of it back.
fn forget_crashed(
    dir: &ClusterDir,
    topology: Topology,
    mut run: DockerRun,
    nodes: &[NodeId],
) -> anyhow::Result<()> {
    if run.crashed.iter().any(|n| nodes.contains(n)) {
        run.crashed.retain(|n| !nodes.contains(n));
        save(dir, topology, run)?;
    }
    Ok(())
}

/// Start node `id`, which does not run: inside its container if that runs (it crashed there),
/// else its container, every node of it.
pub fn restart(
    dir: &ClusterDir,
    topology: Topology,
    mut run: DockerRun,
    id: NodeId,
) -> anyhow::Result<()> {
    let nodes = container_of(dir, id)?;
    let service = container_service(&nodes);
    let container_runs = docker::containers(&run)?
        .iter()
        .any(|c| c.service == service && c.state == "running");
    if container_runs {
        in_host::restart(dir, id, &running_with(&run, &nodes, id))?;
        run.crashed.retain(|&n| n != id);
        return save(dir, topology, run);
    }
    Compose::detect()?.run(&run, &["start", &service])?;
    forget_crashed(dir, topology, run, &nodes)
}

/// The compose service whose log is node `id`'s (its container's).
pub fn service_of(dir: &ClusterDir, id: NodeId) -> anyhow::Result<String> {
    Ok(container_service(&container_of(dir, id)?))
}
