//! `cluster swarm`: one container per node, or per task of several nodes (`--nodes-per-container`,
//! [`tasks`]: each host's nodes in tasks of up to N, each a node host), spread over the hosts of
//! a Docker Swarm, each service pinned to the host its [`Placement`] gives its nodes.
//!
//! - **Hosts.** The manager's swarm nodes, each labelled `cuberoute.host=hI` (`h1` .. `hN`; a
//!   swarm with no label yet is labelled in hostname order, [`engine::hosts_of`]). A host's
//!   address is its swarm address (`Status.Addr`); its engine's endpoint is known for a
//!   testbed's hosts and for the manager's own host, and for no other host of a real swarm.
//! - **Files.** Each node's files go to its task as Swarm configs and secrets ([`stack`]);
//!   its store is a named local volume on its host. Nothing depends on a filesystem the hosts
//!   share: `docker stack deploy` reads the files on this machine and sends them to the
//!   manager.
//! - **Placement.** Each service's constraint `node.labels.cuberoute.host == hI` pins its task:
//!   a node keeps its id, address, certificate and store on its host whatever Swarm does. The
//!   price: when a host is lost, its tasks are not moved elsewhere; they wait (pending, "no
//!   suitable node") until the host is back, and start there again with their stores.
//! - **Addresses.** Nodes reach each other by service name on the stack's overlay network, in
//!   DNS round robin (no virtual IP: see [`stack`]'s `endpoint_mode`); a client on this machine
//!   reaches node `i`'s control and metrics ports published on its host's address, at 17000 + i
//!   and 22000 + i ([`Published`], [`Addressing::Swarm`]).
//! - **Runners.** A node's runner is its task (from the manager's `stack ps`; a node's task
//!   from the client manifest, [`tasks_of`]); killing one kills its container on its host's
//!   engine, where that engine is known, and Swarm starts a new task by its restart policy
//!   (`any`, after 1 s). A node whose task runs other nodes is crashed alone inside it, and
//!   started there again ([`kill`], [`restart`]).
//! - **Down.** [`down`]: `docker stack rm` (services, secrets, configs, network), every task
//!   container gone on every engine known, then the stack's volumes removed on each; for a host
//!   whose engine is not known, the command to run there.

pub mod engine;
pub mod run;
pub mod stack;

pub use run::{SwarmHost, SwarmRun};

use crate::launch::generate::{self, Addressing, Ports, Published};
use crate::launch::hosting::NodesPerProcess;
use crate::launch::layout::ClusterDir;
use crate::launch::placement::{Placement, PlacementError, PlacementKind};
use crate::launch::runner::state::Runner;
use anyhow::Context;
use cuberoute_protocol::{NodeId, Topology};
use engine::{Engine, STACK_LABEL, SwarmNode, Task};
use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Where a swarm cluster goes: a manager, and the engine endpoints known per host name.
#[derive(Clone, Debug)]
pub struct Target {
    pub manager: Engine,
    /// A testbed's every host (`h1` -> its engine); empty on a real swarm, where only the
    /// manager's own engine is known.
    pub endpoints: BTreeMap<String, String>,
    pub testbed: Option<PathBuf>,
}

/// The swarm's hosts, labelled if none was; each with its endpoint where known. Prints nothing;
/// returns whether it labelled them.
pub fn hosts(target: &Target) -> anyhow::Result<(Vec<SwarmHost>, bool)> {
    let manager_node = target.manager.manager_node()?;
    let nodes = target.manager.swarm_nodes()?;
    let (ordered, to_label) = engine::hosts_of(&nodes).map_err(anyhow::Error::msg)?;
    if to_label {
        for node in &ordered {
            target
                .manager
                .label(&node.id, node.host.as_deref().unwrap_or_default())?;
        }
    }
    let hosts = ordered
        .into_iter()
        .map(|n: SwarmNode| {
            let name = n.host.clone().unwrap_or_default();
            let endpoint = target
                .endpoints
                .get(&name)
                .cloned()
                .or_else(|| (n.id == manager_node).then(|| target.manager.endpoint.clone()));
            SwarmHost {
                name,
                address: n.addr,
                node: n.id,
                hostname: n.hostname,
                endpoint,
            }
        })
        .collect();
    Ok((hosts, to_label))
}

/// The most nodes a swarm cluster takes: the published ports of every node fit below Linux's
/// ephemeral ports.
pub fn max_nodes() -> u64 {
    Published::default().max_nodes()
}

/// What `cluster swarm` deploys.
pub struct Plan {
    pub topology: Topology,
    /// The host (0-based) of each node, in id order.
    pub hosts: Vec<usize>,
    /// The nodes of each task (in id order; [`tasks`]): one each, or several a node host.
    pub containers: Vec<Vec<NodeId>>,
    /// The placement's name.
    pub placement: String,
    pub stack: String,
    pub image: String,
    /// The overlay network's /16.
    pub subnet: Ipv4Addr,
    /// Whether the nodes take fault injection (`chaos.allow`; off unless asked for).
    pub allow_chaos: bool,
    /// The nodes' liveness interval, instead of the one paced by the cluster's links
    /// (`generate::liveness_interval`: its hosts are few, and share one machine on a test bed).
    pub liveness_interval: Option<std::time::Duration>,
}

/// Check what can be checked before anything is written: the image on every engine known, the
/// hosts' addresses. Then generate the cluster in `dir` for the swarm and write its stack file.
/// Volumes of an earlier deployment of the same stack are removed on the engines known (their
/// stores belong to another CA, which a node refuses). Returns the run to record.
pub fn prepare(
    dir: &ClusterDir,
    target: &Target,
    hosts: Vec<SwarmHost>,
    plan: &Plan,
) -> anyhow::Result<SwarmRun> {
    let mut run = SwarmRun {
        stack: plan.stack.clone(),
        manager: target.manager.endpoint.clone(),
        placement: plan.placement.clone(),
        image: plan.image.clone(),
        image_id: None,
        testbed: target.testbed.clone(),
        hosts,
        crashed: Vec::new(),
    };
    for host in &run.hosts {
        anyhow::ensure!(
            !host.address.is_empty(),
            "swarm node {} ({}) reports no address",
            host.hostname,
            host.node
        );
    }
    run.image_id = image_reference(&run, &plan.image)?;
    for (host, engine) in run.known_engines() {
        let old = engine.volumes(&plan.stack)?;
        if !old.is_empty() {
            let mut args = vec!["volume", "rm"];
            args.extend(old.iter().map(String::as_str));
            engine.run(&args).with_context(|| {
                format!(
                    "an earlier stack {} left volumes on {} that are still in use: `cuberoute \
                     cluster down --dir {}` first",
                    plan.stack,
                    host.name,
                    dir.display()
                )
            })?;
        }
    }
    let topology = plan.topology;
    let of = &plan.hosts;
    anyhow::ensure!(
        of.len() as u64 == topology.node_count() && of.iter().all(|h| *h < run.hosts.len()),
        "a placement of {} nodes over {} hosts is needed",
        topology.node_count(),
        run.hosts.len()
    );
    let ports = Ports::default();
    let published = Published::default();
    let addressing = Addressing::Swarm {
        hosts: of.iter().map(|h| run.hosts[*h].address.clone()).collect(),
        ports,
        published,
        containers: generate::containers(topology, &plan.containers),
    };
    generate::generate(dir, topology, &addressing)?;
    if let Some(interval) = plan.liveness_interval {
        generate::set_liveness_interval(dir, topology, interval)?;
    }
    for nodes in &plan.containers {
        let hosted = nodes.len() > 1;
        for &id in nodes {
            let path = dir.node_config(id);
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("reading {}", path.display()))?;
            std::fs::write(
                &path,
                stack::task_config(&text, id, hosted, plan.allow_chaos)?,
            )
            .with_context(|| format!("writing {}", path.display()))?;
        }
        if hosted {
            let list = dir
                .node_dir(nodes[0])
                .join(crate::launch::layout::NODE_HOSTED_LIST);
            std::fs::write(&list, crate::launch::compose::hosted_list(nodes))
                .with_context(|| format!("writing {}", list.display()))?;
        }
    }
    let file = dir.path().join(stack::STACK_FILE);
    let text = stack::stack_file(&stack::StackSpec {
        topology,
        image: run.image_id.as_deref().unwrap_or(&plan.image),
        hosts: of,
        containers: &plan.containers,
        ports,
        published,
        subnet: plan.subnet,
    });
    std::fs::write(&file, text).with_context(|| format!("writing {}", file.display()))?;
    Ok(run)
}

/// The id under which every engine known here holds `image`, for the services to name: a
/// task's engine does not try to pull an image named by its id, where it tries a name's
/// registry first, whatever it holds (each try took 10 s on hosts without a resolver that
/// answers, one task after another). Hosts loaded with `docker save | docker load` hold the
/// same id. `None` (the name is used, and pulled) for an image of a registry (its name starts
/// with a registry's host: `registry.example:5000/cuberoute:1`), and when the manager's engine
/// does not hold it. An error if an engine known lacks it, or holds another image under the
/// name.
fn image_reference(run: &SwarmRun, image: &str) -> anyhow::Result<Option<String>> {
    if from_registry(image) {
        return Ok(None);
    }
    let engines = run.known_engines();
    let ids: Vec<(&SwarmHost, Option<String>)> = engines
        .iter()
        .map(|(h, e)| (*h, e.image_id(image)))
        .collect();
    let missing: Vec<String> = ids
        .iter()
        .filter(|(_, id)| id.is_none())
        .map(|(h, _)| format!("{} ({})", h.name, h.address))
        .collect();
    if missing.len() == ids.len() && !engines.is_empty() && run.testbed.is_none() {
        // Not even the manager holds it: a registry's image, pulled by each host.
        return Ok(None);
    }
    anyhow::ensure!(
        missing.is_empty(),
        "the image {image} is not on host {}: load it there (`docker save {image} | ssh HOST \
         docker load`, or push it to a registry every host pulls from)",
        missing.join(", "),
    );
    let distinct: std::collections::BTreeSet<&str> =
        ids.iter().filter_map(|(_, id)| id.as_deref()).collect();
    anyhow::ensure!(
        distinct.len() <= 1,
        "the hosts hold different images named {image}: {}; load the same one on every host",
        ids.iter()
            .map(|(h, id)| format!("{} {}", h.name, id.as_deref().unwrap_or("-")))
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(distinct.into_iter().next().map(str::to_string))
}

/// Whether `image` names a registry's host (`host.domain/...`, `host:port/...`,
/// `localhost/...`), which every host pulls it from.
pub fn from_registry(image: &str) -> bool {
    image.split_once('/').is_some_and(|(first, _)| {
        first.contains('.') || first.contains(':') || first == "localhost"
    })
}

/// `docker -H MANAGER stack deploy -c DIR/stack.yml --resolve-image never STACK`, from `dir`
/// (the stack file names its configs' and secrets' files relative to it). No registry is asked
/// for the image: every host has it, or its tasks say they do not.
pub fn deploy(dir: &ClusterDir, run: &SwarmRun) -> anyhow::Result<()> {
    let absolute = std::path::absolute(dir.path())?;
    run.manager()
        .run_in(
            &[
                "stack",
                "deploy",
                "-c",
                stack::STACK_FILE,
                "--resolve-image",
                "never",
                &run.stack,
            ],
            Some(&absolute),
        )
        .map(drop)
}

/// The nodes of each task of the cluster in `dir` (in id order), from its client manifest: the
/// nodes of a task of several share its published control port
/// ([`hosting::processes`](crate::launch::hosting::processes)).
pub fn tasks_of(dir: &ClusterDir) -> anyhow::Result<Vec<Vec<NodeId>>> {
    let manifest = cuberoute_daemon::manifest::Manifest::load(&dir.manifest())?;
    Ok(crate::launch::hosting::processes(&manifest))
}

/// The nodes of the task that runs node `id`, and its service (`node-<id>`, `host-<first>`).
fn task_of(dir: &ClusterDir, id: NodeId) -> anyhow::Result<(Vec<NodeId>, String)> {
    let nodes = tasks_of(dir)?
        .into_iter()
        .find(|nodes| nodes.contains(&id))
        .ok_or_else(|| anyhow::anyhow!("node {id} is not in the cluster's manifest"))?;
    let service = generate::container_service(&nodes);
    Ok((nodes, service))
}

/// Each node's runner: its task, from the manager; a node crashed inside a task that runs on is
/// dead until it is started there again.
pub fn runners(dir: &ClusterDir, run: &SwarmRun) -> anyhow::Result<BTreeMap<NodeId, Runner>> {
    let tasks = engine::current_tasks(run.manager().tasks(&run.stack)?);
    Ok(runners_of(&tasks_of(dir)?, run, &tasks))
}

/// [`runners`] of the nodes of `groups` (each a task's), from the manager's `tasks`.
fn runners_of(
    groups: &[Vec<NodeId>],
    run: &SwarmRun,
    tasks: &BTreeMap<String, Task>,
) -> BTreeMap<NodeId, Runner> {
    let mut runners = BTreeMap::new();
    for nodes in groups {
        let task = tasks.get(&generate::container_service(nodes));
        for &id in nodes {
            let runner = match task {
                None => Runner::Starting("no task yet".into()),
                Some(task) if task.running() && crashed_in(run, id, task) => {
                    Runner::Dead("crashed inside its task".into())
                }
                Some(task) => runner_of(run, task),
            };
            runners.insert(id, runner);
        }
    }
    runners
}

fn crashed_in(run: &SwarmRun, id: NodeId, task: &Task) -> bool {
    task.container
        .as_deref()
        .is_some_and(|c| run.crashed_in(id, c))
}

fn runner_of(run: &SwarmRun, task: &Task) -> Runner {
    let on = run
        .host_of_node(&task.node)
        .map_or(String::new(), |h| format!(" on {}", h.name));
    let error = if task.error.is_empty() || task.state == "running" {
        String::new()
    } else {
        format!(": {}", task.error)
    };
    // Swarm reports a task running once its container's healthcheck has passed. Any other
    // task is on its way: one that ended is replaced (restart policy `any`), one whose host is
    // gone waits for it. None is dead while its service exists.
    if task.running() {
        Runner::Alive("healthy".into())
    } else if task.wanted() {
        Runner::Starting(format!("task {}{on}{error}", task.state))
    } else {
        Runner::Starting(format!("task {}{on}{error}, to be replaced", task.state))
    }
}

/// What the manager says of the tasks of `nodes`: one line each.
pub fn explain(dir: &ClusterDir, run: &SwarmRun, nodes: &[NodeId]) -> Vec<String> {
    let (Ok(tasks), Ok(groups)) = (run.manager().tasks(&run.stack), tasks_of(dir)) else {
        return Vec::new();
    };
    let tasks = engine::current_tasks(tasks);
    let runners = runners_of(&groups, run, &tasks);
    nodes
        .iter()
        .map(|id| {
            let group = groups.iter().find(|g| g.contains(id));
            let task = group.and_then(|g| tasks.get(&generate::container_service(g)));
            match (task, runners.get(id)) {
                (Some(_), Some(runner)) => format!("node {id}: {}", runner.describe()),
                _ => format!("node {id}: no task"),
            }
        })
        .collect()
}

/// The running task of service `name` (`node-<id>`, `host-<id>`): its container and the
/// engine it runs on.
fn running_container<'a>(
    run: &'a SwarmRun,
    name: &str,
) -> anyhow::Result<Option<(String, &'a SwarmHost)>> {
    let tasks = engine::current_tasks(run.manager().tasks(&run.stack)?);
    let Some(task) = tasks.get(name) else {
        return Ok(None);
    };
    if !task.running() {
        return Ok(None);
    }
    let container = task
        .container
        .clone()
        .with_context(|| format!("task {} of {name} names no container", task.id))?;
    let host = run.host_of_node(&task.node).with_context(|| {
        format!(
            "{name} runs on swarm node {}, not a host of the cluster",
            task.node
        )
    })?;
    Ok(Some((container, host)))
}

/// Record `run` (its crashed nodes) in `dir`'s run state, forgetting crashes in containers
/// that no longer run.
fn save(dir: &ClusterDir, topology: Topology, mut run: SwarmRun) -> anyhow::Result<()> {
    let tasks = engine::current_tasks(run.manager().tasks(&run.stack)?);
    let running: Vec<&str> = tasks
        .values()
        .filter(|t| t.running())
        .filter_map(|t| t.container.as_deref())
        .collect();
    run.crashed
        .retain(|c| running.contains(&c.container.as_str()));
    crate::launch::run_state::RunState::Swarm { topology, run }.save(dir)
}

/// Kill node `id`: alone inside its task's container while other nodes run there (a node
/// host's crash of one node, [`in_host`](crate::launch::in_host): fault injection, which the
/// nodes take only with `cluster swarm --allow-chaos`), else its container on its host
/// (SIGKILL), waiting until its engine sees it stopped; Swarm then starts a new task for it
/// (restart policy `any`). False if it was not running; an error if its host's engine is not
/// known here (with the command to run there).
pub fn kill(
    dir: &ClusterDir,
    topology: Topology,
    mut run: SwarmRun,
    id: NodeId,
) -> anyhow::Result<bool> {
    let (nodes, service) = task_of(dir, id)?;
    let Some((container, host)) = running_container(&run, &service)? else {
        return Ok(false);
    };
    let others = running_with(&run, &nodes, &container, id);
    if !others.is_empty() {
        crate::launch::in_host::crash(dir, id, &others).with_context(|| {
            format!(
                "crashing node {id} alone inside task {service}, which runs {} other nodes \
                 (the nodes take it with `cluster swarm --allow-chaos`)",
                others.len()
            )
        })?;
        run.crashed.push(run::CrashedNode {
            node: id,
            container,
        });
        save(dir, topology, run)?;
        return Ok(true);
    }
    let Some(endpoint) = &host.endpoint else {
        anyhow::bail!(
            "node {id} runs on {} ({}), whose engine is not known here: run `docker kill -s \
             KILL {container}` there",
            host.name,
            host.address
        );
    };
    let engine = Engine::new(endpoint);
    engine.run(&["kill", "-s", "KILL", &container])?;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let running = engine
            .run(&["inspect", "--format", "{{.State.Running}}", &container])
            .map(|s| s.trim() == "true")
            .unwrap_or(false);
        if !running {
            if !run.crashed.is_empty() {
                save(dir, topology, run)?;
            }
            return Ok(true);
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "node {id}'s container {container} still runs 10 s after SIGKILL"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The nodes of `nodes` (a task's) other than `id` that run in its `container`.
fn running_with(run: &SwarmRun, nodes: &[NodeId], container: &str, id: NodeId) -> Vec<NodeId> {
    nodes
        .iter()
        .copied()
        .filter(|&n| n != id && !run.crashed_in(n, container))
        .collect()
}

/// Start node `id` again. False if it runs. A node crashed inside a task that runs on is started
/// there again; a task on its way (Swarm restarts a killed one by itself) is left to it; a
/// node with no task meant to run gets one (`docker service update --force`).
pub fn restart(
    dir: &ClusterDir,
    topology: Topology,
    mut run: SwarmRun,
    id: NodeId,
) -> anyhow::Result<bool> {
    let (nodes, service) = task_of(dir, id)?;
    let tasks = engine::current_tasks(run.manager().tasks(&run.stack)?);
    match tasks.get(&service) {
        Some(task) if task.running() && crashed_in(&run, id, task) => {
            let container = task.container.clone().unwrap_or_default();
            let others = running_with(&run, &nodes, &container, id);
            crate::launch::in_host::restart(dir, id, &others)?;
            run.crashed
                .retain(|c| !(c.node == id && c.container == container));
            save(dir, topology, run)?;
            Ok(true)
        }
        Some(task) if task.running() => Ok(false),
        Some(task) if task.wanted() => Ok(true),
        _ => {
            run.manager().run(&[
                "service",
                "update",
                "--force",
                "--detach",
                &run.service(&service),
            ])?;
            Ok(true)
        }
    }
}

/// Node `id`'s log, from the manager (`docker service logs`, every task's of its service), on
/// our stdout.
pub fn logs(dir: &ClusterDir, run: &SwarmRun, id: NodeId, follow: bool) -> anyhow::Result<()> {
    let service = run.service(&task_of(dir, id)?.1);
    let mut args = vec!["service", "logs", "--raw"];
    if follow {
        args.push("--follow");
    }
    args.push(&service);
    // The daemon logs to its stderr, which `docker service logs` keeps apart: both to our
    // stdout, as `docker compose logs` prints them.
    let status = run
        .manager()
        .command()
        .args(&args)
        .stderr(std::process::Stdio::from(std::io::stdout()))
        .status()?;
    anyhow::ensure!(status.success(), "docker service logs {service} failed");
    Ok(())
}

/// The pids (in the engines' pid namespace) of the running containers on every engine known:
/// this machine's pids when the engines run here (a testbed).
pub fn pids(run: &SwarmRun) -> anyhow::Result<Vec<u32>> {
    let mut pids = Vec::new();
    for (_, engine) in run.known_engines() {
        let ids = engine.containers(&run.stack, false)?;
        if ids.is_empty() {
            continue;
        }
        let mut args = vec!["inspect", "--format", "{{.State.Pid}}"];
        args.extend(ids.iter().map(String::as_str));
        pids.extend(
            engine
                .run(&args)?
                .split_whitespace()
                .filter_map(|p| p.parse::<u32>().ok())
                .filter(|&p| p != 0),
        );
    }
    Ok(pids)
}

/// How long [`down`] waits for the stack's containers to go and its network to be removed.
const DOWN_WAIT: Duration = Duration::from_secs(60);

/// Take the stack down and leave nothing of it: `docker stack rm`; every task container gone
/// on every engine known; the stack's volumes removed on each (unless `keep_volumes`); its
/// secrets, configs and network gone from the manager. Returns what was removed, and the
/// command to run on each host whose engine is not known here.
pub fn down(run: &SwarmRun, keep_volumes: bool) -> anyhow::Result<String> {
    let manager = run.manager();
    let count = |kind: &str| manager.objects(kind, &run.stack).map(|v| v.len());
    let (services, secrets, configs, networks) = (
        count("service")?,
        count("secret")?,
        count("config")?,
        count("network")?,
    );
    manager.run(&["stack", "rm", &run.stack])?;
    let started = Instant::now();
    let engines = run.known_engines();
    let mut containers = 0;
    for (host, engine) in &engines {
        // The stack's containers on this engine, the stopped ones too; Swarm removes them.
        loop {
            let left = engine.containers(&run.stack, true)?;
            if left.is_empty() {
                break;
            }
            if started.elapsed() > DOWN_WAIT {
                anyhow::bail!(
                    "{} containers of stack {} are still on {} {:?} after `docker stack rm`; \
                     `cuberoute cluster down` again tries again",
                    left.len(),
                    run.stack,
                    host.name,
                    DOWN_WAIT
                );
            }
            containers = containers.max(left.len());
            std::thread::sleep(Duration::from_millis(250));
        }
    }
    // The network goes once its last endpoint has; `stack rm` may have found it still in use.
    loop {
        let left = manager.objects("network", &run.stack)?;
        if left.is_empty() {
            break;
        }
        let mut args = vec!["network", "rm"];
        args.extend(left.iter().map(String::as_str));
        let _ = manager.run(&args);
        if started.elapsed() > DOWN_WAIT {
            anyhow::bail!(
                "the network of stack {} is still there {DOWN_WAIT:?} after `docker stack rm`",
                run.stack
            );
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    for kind in ["secret", "config", "service"] {
        let left = manager.objects(kind, &run.stack)?;
        anyhow::ensure!(
            left.is_empty(),
            "{} {kind}s of stack {} are still on the manager after `docker stack rm`",
            left.len(),
            run.stack
        );
    }
    let mut volumes = Vec::new();
    if !keep_volumes {
        for (host, engine) in &engines {
            let names = engine.volumes(&run.stack)?;
            if !names.is_empty() {
                let mut args = vec!["volume", "rm"];
                args.extend(names.iter().map(String::as_str));
                engine.run(&args)?;
            }
            volumes.push(format!("{} on {}", names.len(), host.name));
        }
    }
    let mut report = format!(
        "stack {} removed in {:.1} s: {services} services, {secrets} secrets, {configs} \
         configs, {networks} network{}",
        run.stack,
        started.elapsed().as_secs_f64(),
        if networks == 1 { "" } else { "s" }
    );
    if !engines.is_empty() {
        let names: Vec<&str> = engines.iter().map(|(h, _)| h.name.as_str()).collect();
        report += &format!("; no container left on {}", names.join(", "));
    }
    if keep_volumes {
        report += "; volumes kept";
    } else if !volumes.is_empty() {
        report += &format!("; volumes removed: {}", volumes.join(", "));
    }
    let unknown: Vec<&SwarmHost> = run.hosts.iter().filter(|h| h.endpoint.is_none()).collect();
    if !unknown.is_empty() && !keep_volumes {
        report += &format!(
            "\nthe engines of {} are not known here: remove the stack's volumes on each of \
             them once its containers are gone:",
            unknown
                .iter()
                .map(|h| format!("{} ({})", h.name, h.hostname))
                .collect::<Vec<_>>()
                .join(", ")
        );
        for host in unknown {
            report += &format!(
                "\n  on {} ({}): docker volume rm $(docker volume ls -q --filter \
                 label={STACK_LABEL}={})",
                host.name, host.address, run.stack
            );
        }
    }
    Ok(report)
}

/// A default stack name for a cluster directory: stable, distinct for distinct paths, and
/// short enough that Docker's names built on it (`<stack>_node-<id>.manifest.toml`, at most 64
/// characters) fit.
pub fn stack_name(dir: &ClusterDir) -> String {
    crate::launch::docker::project_name(dir)
}

/// Why `name` is not a stack name this tool can use, if it is not.
pub fn check_stack_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= MAX_STACK_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        && name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric());
    if ok {
        Ok(())
    } else {
        Err(format!(
            "stack name `{name}`: 1 to {MAX_STACK_NAME} letters, digits, `-` and `_`, starting \
             with a letter or digit"
        ))
    }
}

/// The longest stack name: Docker names a config `<stack>_node-<id>.manifest.toml`, at most 64
/// characters, and ids here reach 5 digits.
pub const MAX_STACK_NAME: usize = 64 - "_node-99999.manifest.toml".len();

/// The host (0-based) of each node of `topology`, in id order, over `hosts` hosts: by
/// `kind`, or all on the one host a swarm of one host has.
pub fn place(
    topology: Topology,
    hosts: usize,
    kind: PlacementKind,
) -> Result<Vec<usize>, PlacementError> {
    if hosts == 1 {
        return Ok(vec![0; topology.node_count() as usize]);
    }
    let placement = Placement::new(topology, hosts, kind)?;
    Ok(topology.nodes().map(|v| placement.host_of(v)).collect())
}

/// The nodes of each task (`cluster swarm --nodes-per-container`), each in id order: a task a
/// node by default; with N, each host's nodes (`of`: the host of each node, in id order) in
/// tasks of at most N, in id order; with auto, one task a host. The tasks of a host are a part
/// of what its loss costs (the placement chose the hosts), so no placement is searched within
/// one. An error (for the user) when N is 0 or more than the nodes.
pub fn tasks(
    topology: Topology,
    of: &[usize],
    per: NodesPerProcess,
) -> Result<Vec<Vec<NodeId>>, String> {
    let n = topology.node_count() as usize;
    let per = match per {
        NodesPerProcess::Count(0) => {
            return Err("the nodes a task runs must be at least 1 (or auto)".into());
        }
        NodesPerProcess::Count(per) if per > n => {
            return Err(format!("{per} nodes a task: {topology} has only {n} nodes"));
        }
        NodesPerProcess::Count(per) => per,
        NodesPerProcess::Auto => n,
    };
    let hosts = of.iter().max().map_or(0, |h| h + 1);
    let mut on: Vec<Vec<NodeId>> = vec![Vec::new(); hosts];
    for (id, host) in topology.nodes().zip(of) {
        on[*host].push(id);
    }
    let mut tasks: Vec<Vec<NodeId>> = on
        .iter()
        .flat_map(|nodes| nodes.chunks(per).map(<[NodeId]>::to_vec))
        .collect();
    tasks.sort();
    Ok(tasks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launch::run_state::RunState;

    #[test]
    fn a_registry_image_is_named_and_a_local_one_by_id() {
        for pulled in [
            "registry.example/cuberoute:1",
            "registry.example:5000/team/cuberoute:1",
            "localhost:5000/cuberoute",
            "localhost/cuberoute",
        ] {
            assert!(from_registry(pulled), "{pulled}");
        }
        for local in [
            "cuberoute:latest",
            "cuberoute",
            "team/cuberoute:1",
            "sha256:0123",
        ] {
            assert!(!from_registry(local), "{local}");
        }
    }

    #[test]
    fn the_default_stack_name_is_a_valid_one() {
        let dir = ClusterDir::new("/tmp/a-very-long-directory-name-for-a-cluster-of-containers");
        let name = stack_name(&dir);
        assert_eq!(check_stack_name(&name), Ok(()), "{name}");
        assert!(check_stack_name("_x").is_err());
        assert!(check_stack_name("a.b").is_err());
        assert!(check_stack_name(&"a".repeat(MAX_STACK_NAME + 1)).is_err());
    }

    #[test]
    fn a_run_state_with_a_swarm_loads_back() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = ClusterDir::new(tmp.path());
        let run = SwarmRun {
            stack: "s".into(),
            manager: "unix:///tb/h1/docker.sock".into(),
            placement: "paths".into(),
            image: "cuberoute:latest".into(),
            image_id: Some("sha256:0123".into()),
            testbed: Some("/tb".into()),
            hosts: vec![
                SwarmHost {
                    name: "h1".into(),
                    address: "198.18.0.2".into(),
                    node: "abc".into(),
                    hostname: "h1".into(),
                    endpoint: Some("unix:///tb/h1/docker.sock".into()),
                },
                SwarmHost {
                    name: "h2".into(),
                    address: "198.18.0.3".into(),
                    node: "def".into(),
                    hostname: "h2".into(),
                    endpoint: None,
                },
            ],
            crashed: vec![run::CrashedNode {
                node: NodeId(3),
                container: "c0ffee".into(),
            }],
        };
        let state = RunState::Swarm {
            topology: "q:2".parse().unwrap(),
            run,
        };
        state.save(&dir).unwrap();
        assert_eq!(RunState::load(&dir).unwrap(), Some(state));
    }

    /// The client reaches node i on its host's address at 17000 + i and 22000 + i; the nodes
    /// reach each other by service name.
    #[test]
    fn the_client_manifest_names_the_published_ports_on_each_host() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = ClusterDir::new(tmp.path());
        let topology: Topology = "q:2".parse().unwrap();
        let addressing = Addressing::Swarm {
            hosts: ["198.18.0.2", "198.18.0.3", "198.18.0.2", "198.18.0.3"]
                .map(String::from)
                .to_vec(),
            ports: Ports::default(),
            published: Published::default(),
            containers: Vec::new(),
        };
        let manifest = generate::generate(&dir, topology, &addressing).unwrap();
        let three = manifest.node(NodeId(3)).unwrap();
        assert_eq!(three.control, "198.18.0.3:17003");
        assert_eq!(three.metrics.as_deref(), Some("198.18.0.3:22003"));
        assert_eq!(three.addr, "node-3:7000");
        let own = cuberoute_daemon::manifest::Manifest::load(
            &dir.node_dir(NodeId(1))
                .join(crate::launch::layout::NODE_MANIFEST),
        )
        .unwrap();
        assert_eq!(own.node(NodeId(3)).unwrap().addr, "node-3:7000");
        assert_eq!(own.node(NodeId(3)).unwrap().control, "node-3:7001");
        assert_eq!(max_nodes(), 5_000);
    }

    /// `--nodes-per-container`: each host's nodes in tasks of up to N (auto: one a host),
    /// every node in one task, a task's nodes on one host; 0 and more than the nodes refused.
    #[test]
    fn tasks_split_each_hosts_nodes() {
        let topology: Topology = "eh:1,2".parse().unwrap();
        let of = place(topology, 2, PlacementKind::Paths).unwrap();
        let check = |per: NodesPerProcess| {
            let tasks = tasks(topology, &of, per).unwrap();
            let mut all: Vec<NodeId> = tasks.iter().flatten().copied().collect();
            all.sort();
            assert_eq!(all, topology.nodes().collect::<Vec<_>>(), "{per:?}");
            for task in &tasks {
                let host = of[task[0].0 as usize];
                assert!(task.iter().all(|v| of[v.0 as usize] == host), "{task:?}");
                assert!(task.windows(2).all(|w| w[0] < w[1]), "{task:?}");
            }
            tasks
        };
        let sizes = |tasks: Vec<Vec<NodeId>>| {
            let mut sizes: Vec<usize> = tasks.iter().map(Vec::len).collect();
            sizes.sort();
            sizes
        };
        assert_eq!(sizes(check(NodesPerProcess::Count(1))), vec![1; 16]);
        assert_eq!(sizes(check(NodesPerProcess::Count(4))), vec![4; 4]);
        assert_eq!(
            sizes(check(NodesPerProcess::Count(3))),
            vec![2, 2, 3, 3, 3, 3]
        );
        assert_eq!(sizes(check(NodesPerProcess::Auto)), vec![8, 8]);
        assert_eq!(sizes(check(NodesPerProcess::Count(16))), vec![8, 8]);
        let refused = |per| tasks(topology, &of, per).unwrap_err();
        assert!(refused(NodesPerProcess::Count(0)).contains("at least 1"));
        assert_eq!(
            refused(NodesPerProcess::Count(17)),
            "17 nodes a task: eh:1,2 has only 16 nodes"
        );
    }

    /// A task of several nodes: one service `host-<first>` on its nodes' host, running them as
    /// one daemon from its first node's list; each node's configs in `/node/<id>` and its keys
    /// as secrets named by node (a task holds its own nodes' keys, no other's); the CA and the
    /// key directory once; one store volume, one pair of published ports, its first node's.
    /// The client's manifest gives the nodes of a task its published control port, which is
    /// how the runners find the task back.
    #[test]
    fn a_task_of_several_nodes_runs_them_as_one_daemon() {
        let topology: Topology = "eh:1,2".parse().unwrap();
        let of = place(topology, 2, PlacementKind::Paths).unwrap();
        let groups = tasks(topology, &of, NodesPerProcess::Count(4)).unwrap();
        let text = stack::stack_file(&stack::StackSpec {
            topology,
            image: "cuberoute:latest",
            hosts: &of,
            containers: &groups,
            ports: Ports::default(),
            published: Published::default(),
            subnet: Ipv4Addr::new(10, 210, 0, 0),
        });
        let yaml: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).unwrap();
        let services = yaml["services"].as_mapping().unwrap();
        assert_eq!(services.len(), 4, "{text}");
        let targets = |list: &serde_yaml_ng::Value| -> Vec<String> {
            let mut t: Vec<String> = list
                .as_sequence()
                .unwrap()
                .iter()
                .map(|m| m["target"].as_str().unwrap().to_string())
                .collect();
            t.sort();
            t
        };
        let mut published = std::collections::BTreeSet::new();
        for nodes in &groups {
            let first = nodes[0].0;
            let name = generate::container_service(nodes);
            assert_eq!(name, format!("host-{first}"));
            let service = &yaml["services"][name.as_str()];
            let command: Vec<&str> = service["command"]
                .as_sequence()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap())
                .collect();
            let config = format!("/node/{first}/node.toml");
            let list = format!("/node/{first}/hosted.txt");
            assert_eq!(
                command,
                ["daemon", "--config", &config, "--with-configs", &list]
            );
            let mut configs = vec![
                "/node/ca.pem".to_string(),
                "/node/keys.bin".to_string(),
                list.clone(),
            ];
            let mut secrets = Vec::new();
            for id in nodes {
                for file in ["node.toml", "manifest.toml", "node.pem"] {
                    configs.push(format!("/node/{}/{file}", id.0));
                }
                secrets.push(format!("node-{}.key", id.0));
                secrets.push(format!("node-{}.seal.key", id.0));
            }
            configs.sort();
            secrets.sort();
            assert_eq!(targets(&service["configs"]), configs);
            assert_eq!(targets(&service["secrets"]), secrets);
            assert_eq!(
                yaml["configs"][format!("node-{first}.hosted").as_str()]["file"],
                format!("nodes/{first}/hosted.txt")
            );
            assert_eq!(service["volumes"][0]["source"], format!("store-{first}"));
            assert_eq!(
                service["deploy"]["placement"]["constraints"][0],
                stack::constraint(of[first as usize])
            );
            assert_eq!(service["ports"][0]["published"], 17_000 + first);
            for port in service["ports"].as_sequence().unwrap() {
                assert!(published.insert(port["published"].as_u64().unwrap()));
            }
        }
        assert_eq!(yaml["volumes"].as_mapping().unwrap().len(), 4);

        // Each node's task configuration: its own secrets, store and revocation list, the
        // task's CA and key directory.
        let tmp = tempfile::tempdir().unwrap();
        let dir = ClusterDir::new(tmp.path());
        let addressing = Addressing::Swarm {
            hosts: of.iter().map(|h| format!("198.18.0.{}", h + 2)).collect(),
            ports: Ports::default(),
            published: Published::default(),
            containers: generate::containers(topology, &groups),
        };
        let manifest = generate::generate(&dir, topology, &addressing).unwrap();
        let five = NodeId(5);
        let task = groups.iter().find(|g| g.contains(&five)).unwrap();
        let generated = std::fs::read_to_string(dir.node_config(five)).unwrap();
        let table: toml::Table = stack::task_config(&generated, five, true, false)
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(
            table["tls"]["key"].as_str(),
            Some("/run/secrets/node-5.key")
        );
        assert_eq!(
            table["keys"]["secret"].as_str(),
            Some("/run/secrets/node-5.seal.key")
        );
        assert_eq!(
            table["store"]["path"].as_str(),
            Some("/var/lib/cuberoute/store-5.redb")
        );
        assert_eq!(
            table["keys"]["revoked"].as_str(),
            Some("/var/lib/cuberoute/revoked-5.bin")
        );
        assert_eq!(table["tls"]["ca"].as_str(), Some("/node/ca.pem"));
        assert_eq!(table["keys"]["directory"].as_str(), Some("/node/keys.bin"));
        assert_eq!(table["tls"]["cert"].as_str(), Some("node.pem"));
        // Peers dial the task by its service; the client reaches it on its host's address at
        // its first node's published ports.
        let first = task[0];
        let host = format!("198.18.0.{}", of[five.0 as usize] + 2);
        let entry = manifest.node(five).unwrap();
        assert_eq!(entry.addr, format!("host-{}:7000", first.0));
        assert_eq!(entry.control, format!("{host}:{}", 17_000 + first.0));
        let own = cuberoute_daemon::manifest::Manifest::load(
            &dir.node_dir(five)
                .join(crate::launch::layout::NODE_MANIFEST),
        )
        .unwrap();
        assert_eq!(
            own.node(five).unwrap().addr,
            format!("host-{}:7000", first.0)
        );
        let mut found = tasks_of(&dir).unwrap();
        let mut expected = groups.clone();
        found.sort();
        expected.sort();
        assert_eq!(found, expected);
    }
}
