//! Docker engines by their endpoints (`docker -H ENDPOINT ...`): the Swarm manager's view of its
//! nodes and of a stack's tasks, and what one engine holds of a stack (containers, volumes).
//!
//! Every call names its endpoint, so that nothing depends on `DOCKER_HOST` or the current
//! context, and several engines (a testbed's, or a real manager's and a worker's) are asked
//! side by side.

use anyhow::Context;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use super::stack::HOST_LABEL;

/// The label Docker puts on everything a stack deploy makes.
pub const STACK_LABEL: &str = "com.docker.stack.namespace";

/// One Docker engine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Engine {
    pub endpoint: String,
}

impl Engine {
    pub fn new(endpoint: impl Into<String>) -> Engine {
        Engine {
            endpoint: endpoint.into(),
        }
    }

    /// `docker -H ENDPOINT`.
    pub fn command(&self) -> Command {
        let mut command = Command::new("docker");
        command.arg("-H").arg(&self.endpoint);
        command
    }

    fn output(&self, args: &[&str], cwd: Option<&Path>) -> anyhow::Result<Output> {
        let mut command = self.command();
        command.args(args).stdin(Stdio::null());
        if let Some(cwd) = cwd {
            command.current_dir(cwd);
        }
        command
            .output()
            .with_context(|| format!("running docker -H {} {}", self.endpoint, args.join(" ")))
    }

    /// Run `docker -H ENDPOINT ARGS`: its stdout, or an error with its stderr.
    pub fn run(&self, args: &[&str]) -> anyhow::Result<String> {
        self.run_in(args, None)
    }

    /// [`Engine::run`] in the working directory `cwd`.
    pub fn run_in(&self, args: &[&str], cwd: Option<&Path>) -> anyhow::Result<String> {
        let out = self.output(args, cwd)?;
        anyhow::ensure!(
            out.status.success(),
            "docker -H {} {} failed: {}",
            self.endpoint,
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// The words of the output of `args` (ids, names).
    pub fn words(&self, args: &[&str]) -> anyhow::Result<Vec<String>> {
        Ok(self
            .run(args)?
            .split_whitespace()
            .map(str::to_string)
            .collect())
    }

    /// Whether the engine answers, or why not.
    pub fn answers(&self) -> Result<(), String> {
        match self.output(&["version", "--format", "{{.Server.Version}}"], None) {
            Ok(out) if out.status.success() => Ok(()),
            Ok(out) => Err(String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or("no answer")
                .trim()
                .to_string()),
            Err(e) => Err(format!("{e:#}")),
        }
    }

    /// This engine's swarm node id, if it is a manager of an active swarm; an error naming why
    /// not otherwise.
    pub fn manager_node(&self) -> anyhow::Result<String> {
        let info = self.run(&[
            "info",
            "--format",
            "{{.Swarm.LocalNodeState}} {{.Swarm.ControlAvailable}} {{.Swarm.NodeID}}",
        ])?;
        let fields: Vec<&str> = info.split_whitespace().collect();
        match fields.as_slice() {
            ["active", "true", id] => Ok(id.to_string()),
            ["active", "false", _] => anyhow::bail!(
                "the engine at {} is a swarm worker, not a manager: run this against a manager",
                self.endpoint
            ),
            [state, ..] => anyhow::bail!(
                "the engine at {} is in no active swarm (state {state}): `docker swarm init` \
                 on the manager, `docker swarm join` on every other host",
                self.endpoint
            ),
            [] => anyhow::bail!("the engine at {} said nothing of its swarm", self.endpoint),
        }
    }

    /// The swarm's nodes, as this manager sees them.
    pub fn swarm_nodes(&self) -> anyhow::Result<Vec<SwarmNode>> {
        let ids = self.words(&["node", "ls", "-q"])?;
        anyhow::ensure!(
            !ids.is_empty(),
            "the swarm at {} has no node",
            self.endpoint
        );
        let mut args = vec!["node", "inspect"];
        args.extend(ids.iter().map(String::as_str));
        parse_nodes(&self.run(&args)?)
    }

    /// Label swarm node `node` as host `host` (`cuberoute.host=hI`).
    pub fn label(&self, node: &str, host: &str) -> anyhow::Result<()> {
        let label = format!("{HOST_LABEL}={host}");
        self.run(&["node", "update", "--label-add", &label, node])
            .map(drop)
    }

    /// Every task of `stack` the manager still knows (the running ones and their recent
    /// history).
    pub fn tasks(&self, stack: &str) -> anyhow::Result<Vec<Task>> {
        let out = self.output(&["stack", "ps", "-q", "--no-trunc", stack], None)?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            // A stack with no service left (removed, or not deployed yet) has no task.
            if err.contains("Nothing found in stack") {
                return Ok(Vec::new());
            }
            anyhow::bail!(
                "docker -H {} stack ps failed: {}",
                self.endpoint,
                err.trim()
            );
        }
        let ids: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .map(str::to_string)
            .collect();
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut args = vec!["inspect", "--type", "task"];
        args.extend(ids.iter().map(String::as_str));
        let out = self.output(&args, None)?;
        // A task can go between the two calls: inspect prints those it found, and fails.
        parse_tasks(&String::from_utf8_lossy(&out.stdout))
    }

    /// The ids of the containers of `stack` on this engine: running ones, or (`all`) every one.
    pub fn containers(&self, stack: &str, all: bool) -> anyhow::Result<Vec<String>> {
        let filter = format!("label={STACK_LABEL}={stack}");
        let mut args = vec!["ps", "-q", "--no-trunc", "--filter", &filter];
        if all {
            args.push("-a");
        }
        self.words(&args)
    }

    /// The volumes of `stack` on this engine.
    pub fn volumes(&self, stack: &str) -> anyhow::Result<Vec<String>> {
        let filter = format!("label={STACK_LABEL}={stack}");
        self.words(&["volume", "ls", "-q", "--filter", &filter])
    }

    /// The objects of `stack` of one kind (`secret`, `config`, `network`, `service`) on this
    /// (manager) engine.
    pub fn objects(&self, kind: &str, stack: &str) -> anyhow::Result<Vec<String>> {
        let filter = format!("label={STACK_LABEL}={stack}");
        self.words(&[kind, "ls", "-q", "--filter", &filter])
    }

    /// The id (`sha256:...`) of `image` in this engine, if it has it.
    pub fn image_id(&self, image: &str) -> Option<String> {
        let out = self
            .output(&["image", "inspect", "--format", "{{.Id}}", image], None)
            .ok()
            .filter(|o| o.status.success())?;
        Some(String::from_utf8_lossy(&out.stdout).trim().to_string()).filter(|id| !id.is_empty())
    }
}

/// A node of the swarm.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SwarmNode {
    pub id: String,
    pub hostname: String,
    /// The address other hosts (and a client) reach it at.
    pub addr: String,
    /// Its `cuberoute.host` label.
    pub host: Option<String>,
    /// `ready`, `down`, ...
    pub state: String,
    /// `active`, `pause`, `drain`.
    pub availability: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct NodeJson {
    #[serde(rename = "ID")]
    id: String,
    description: NodeDescription,
    spec: NodeSpec,
    status: NodeStatus,
    #[serde(default)]
    manager_status: Option<ManagerStatus>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct NodeDescription {
    hostname: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct NodeSpec {
    #[serde(default)]
    labels: Option<BTreeMap<String, String>>,
    #[serde(default)]
    availability: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct NodeStatus {
    state: String,
    #[serde(default)]
    addr: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ManagerStatus {
    #[serde(default)]
    addr: String,
}

/// The nodes of `docker node inspect`'s JSON.
pub fn parse_nodes(json: &str) -> anyhow::Result<Vec<SwarmNode>> {
    let nodes: Vec<NodeJson> =
        serde_json::from_str(json).context("reading docker node inspect's answer")?;
    Ok(nodes
        .into_iter()
        .map(|n| {
            // A manager may report its own address as 0.0.0.0 (it listens on every address):
            // the address it advertises to the other managers is the one to reach.
            let addr = match n.status.addr.as_str() {
                "" | "0.0.0.0" => n
                    .manager_status
                    .as_ref()
                    .and_then(|m| m.addr.rsplit_once(':').map(|(ip, _)| ip.to_string()))
                    .unwrap_or_default(),
                addr => addr.to_string(),
            };
            SwarmNode {
                id: n.id,
                hostname: n.description.hostname,
                addr,
                host: n
                    .spec
                    .labels
                    .and_then(|mut labels| labels.remove(HOST_LABEL)),
                state: n.status.state,
                availability: n.spec.availability,
            }
        })
        .collect())
}

/// The hosts of a swarm, `h1` .. `hN`, from its nodes' labels: each swarm node (in host order),
/// or, if no node is labelled yet, the labels to give them (in hostname order). An error if
/// only some are labelled, or the labels are not `h1` .. `hN` once each.
pub fn hosts_of(nodes: &[SwarmNode]) -> Result<(Vec<SwarmNode>, bool), String> {
    let labelled = nodes.iter().filter(|n| n.host.is_some()).count();
    if labelled == 0 {
        let mut sorted = nodes.to_vec();
        sorted.sort_by(|a, b| a.hostname.cmp(&b.hostname).then(a.id.cmp(&b.id)));
        for (i, node) in sorted.iter_mut().enumerate() {
            node.host = Some(super::stack::host_name(i));
        }
        return Ok((sorted, true));
    }
    let describe = |n: &SwarmNode| format!("{} ({})", n.hostname, n.id);
    if labelled < nodes.len() {
        let missing: Vec<String> = nodes
            .iter()
            .filter(|n| n.host.is_none())
            .map(describe)
            .collect();
        return Err(format!(
            "some swarm nodes have no {HOST_LABEL} label: {}; label every node \
             (`docker node update --label-add {HOST_LABEL}=hI NODE`, h1 .. h{}) or none",
            missing.join(", "),
            nodes.len()
        ));
    }
    let mut by_host: Vec<Option<SwarmNode>> = vec![None; nodes.len()];
    for node in nodes {
        let label = node.host.as_deref().unwrap_or_default();
        let index = label
            .strip_prefix('h')
            .and_then(|i| i.parse::<usize>().ok())
            .filter(|i| (1..=nodes.len()).contains(i));
        let Some(index) = index else {
            return Err(format!(
                "swarm node {} is labelled {HOST_LABEL}={label}: the {} hosts must be h1 .. h{}",
                describe(node),
                nodes.len(),
                nodes.len()
            ));
        };
        if let Some(other) = &by_host[index - 1] {
            return Err(format!(
                "swarm nodes {} and {} are both labelled {HOST_LABEL}={label}",
                describe(other),
                describe(node)
            ));
        }
        by_host[index - 1] = Some(node.clone());
    }
    Ok((by_host.into_iter().flatten().collect(), false))
}

/// One task of a stack.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Task {
    pub id: String,
    /// The host name its container has: `node-<id>`.
    pub hostname: String,
    /// The swarm node it is (or was) assigned to.
    pub node: String,
    /// `new`, `pending`, `assigned`, `accepted`, `preparing`, `ready`, `starting`, `running`,
    /// `complete`, `shutdown`, `failed`, `rejected`, `remove`, `orphaned`.
    pub state: String,
    pub desired: String,
    /// Why it failed or waits, if it says.
    pub error: String,
    pub container: Option<String>,
    /// When its state last changed (RFC 3339, comparable as text in one swarm).
    pub timestamp: String,
}

impl Task {
    /// Whether Swarm means it to run (it may still be on its way: a task restarted waits out
    /// its restart delay with desired state `ready`).
    pub fn wanted(&self) -> bool {
        matches!(self.desired.as_str(), "running" | "ready")
    }

    /// Whether it runs (Swarm says so once its container's healthcheck has passed).
    pub fn running(&self) -> bool {
        self.wanted() && self.state == "running"
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct TaskJson {
    #[serde(rename = "ID")]
    id: String,
    spec: TaskSpec,
    #[serde(rename = "NodeID", default)]
    node_id: String,
    status: TaskStatus,
    desired_state: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct TaskSpec {
    #[serde(default)]
    container_spec: Option<ContainerSpec>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ContainerSpec {
    #[serde(default)]
    hostname: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct TaskStatus {
    #[serde(default)]
    timestamp: String,
    state: String,
    #[serde(default)]
    message: String,
    #[serde(default)]
    err: String,
    #[serde(default)]
    container_status: Option<ContainerStatus>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ContainerStatus {
    #[serde(rename = "ContainerID", default)]
    container_id: String,
}

/// The tasks of `docker inspect --type task`'s JSON.
pub fn parse_tasks(json: &str) -> anyhow::Result<Vec<Task>> {
    if json.trim().is_empty() {
        return Ok(Vec::new());
    }
    let tasks: Vec<TaskJson> =
        serde_json::from_str(json).context("reading docker inspect's answer on tasks")?;
    Ok(tasks
        .into_iter()
        .map(|t| Task {
            id: t.id,
            hostname: t
                .spec
                .container_spec
                .map(|c| c.hostname)
                .unwrap_or_default(),
            node: t.node_id,
            error: if t.status.err.is_empty() {
                t.status.message.clone()
            } else {
                t.status.err
            },
            state: t.status.state,
            desired: t.desired_state,
            container: t
                .status
                .container_status
                .map(|c| c.container_id)
                .filter(|c| !c.is_empty()),
            timestamp: t.status.timestamp,
        })
        .collect())
}

/// Per service host name (`node-<id>`), the task that speaks for it: the one Swarm means to
/// run, else the latest.
pub fn current_tasks(tasks: Vec<Task>) -> BTreeMap<String, Task> {
    let mut current: BTreeMap<String, Task> = BTreeMap::new();
    for task in tasks {
        let better = match current.get(&task.hostname) {
            None => true,
            Some(held) => (task.wanted(), &task.timestamp) > (held.wanted(), &held.timestamp),
        };
        if better {
            current.insert(task.hostname.clone(), task);
        }
    }
    current
}

#[cfg(test)]
mod tests {
    use super::*;

    const NODES: &str = r#"[
      {"ID": "m1", "Description": {"Hostname": "beta"}, "Spec": {"Labels": {}, "Role": "manager",
       "Availability": "active"}, "Status": {"State": "ready", "Addr": "0.0.0.0"},
       "ManagerStatus": {"Leader": true, "Reachability": "reachable", "Addr": "198.18.0.2:2377"}},
      {"ID": "w1", "Description": {"Hostname": "alpha"}, "Spec": {"Availability": "active"},
       "Status": {"State": "ready", "Addr": "198.18.0.3"}},
      {"ID": "w2", "Description": {"Hostname": "gamma"}, "Spec": {"Labels": null,
       "Availability": "active"}, "Status": {"State": "down", "Addr": "198.18.0.4"}}
    ]"#;

    #[test]
    fn unlabelled_nodes_are_given_hosts_in_hostname_order() {
        let nodes = parse_nodes(NODES).unwrap();
        assert_eq!(nodes[0].addr, "198.18.0.2", "a manager's 0.0.0.0");
        assert_eq!(nodes[2].state, "down");
        let (hosts, to_label) = hosts_of(&nodes).unwrap();
        assert!(to_label);
        let names: Vec<(&str, &str)> = hosts
            .iter()
            .map(|h| (h.hostname.as_str(), h.host.as_deref().unwrap()))
            .collect();
        assert_eq!(names, [("alpha", "h1"), ("beta", "h2"), ("gamma", "h3")]);
    }

    #[test]
    fn labelled_nodes_are_taken_in_host_order_and_bad_labels_refused() {
        let mut nodes = parse_nodes(NODES).unwrap();
        for (node, label) in nodes.iter_mut().zip(["h2", "h3", "h1"]) {
            node.host = Some(label.into());
        }
        let (hosts, to_label) = hosts_of(&nodes).unwrap();
        assert!(!to_label);
        let ids: Vec<&str> = hosts.iter().map(|h| h.id.as_str()).collect();
        assert_eq!(ids, ["w2", "m1", "w1"]);
        let mut twice = nodes.clone();
        twice[2].host = Some("h2".into());
        assert!(hosts_of(&twice).unwrap_err().contains("both labelled"));
        let mut beyond = nodes.clone();
        beyond[2].host = Some("h4".into());
        assert!(hosts_of(&beyond).unwrap_err().contains("h1 .. h3"));
        let mut some = nodes;
        some[1].host = None;
        assert!(hosts_of(&some).unwrap_err().contains("alpha (w1)"));
    }

    #[test]
    fn the_task_swarm_means_to_run_speaks_for_its_node() {
        let json = r#"[
          {"ID": "t1", "Spec": {"ContainerSpec": {"Hostname": "node-3"}}, "NodeID": "w1",
           "Status": {"Timestamp": "2026-01-01T00:00:01Z", "State": "failed", "Err": "task: non-zero exit (137)",
           "ContainerStatus": {"ContainerID": "c1", "ExitCode": 137}}, "DesiredState": "shutdown"},
          {"ID": "t2", "Spec": {"ContainerSpec": {"Hostname": "node-3"}}, "NodeID": "w1",
           "Status": {"Timestamp": "2026-01-01T00:00:00Z", "State": "starting", "Message": "starting",
           "ContainerStatus": {"ContainerID": "c2"}}, "DesiredState": "running"},
          {"ID": "t3", "Spec": {"ContainerSpec": {"Hostname": "node-4"}},
           "Status": {"Timestamp": "2026-01-01T00:00:02Z", "State": "pending",
           "Err": "no suitable node (scheduling constraints not satisfied on 3 nodes)"},
           "DesiredState": "running"}
        ]"#;
        let current = current_tasks(parse_tasks(json).unwrap());
        assert_eq!(current.len(), 2);
        assert_eq!(current["node-3"].id, "t2");
        assert_eq!(current["node-3"].container.as_deref(), Some("c2"));
        assert_eq!(current["node-4"].container, None);
        assert!(current["node-4"].error.contains("no suitable node"));
        assert!(parse_tasks("").unwrap().is_empty());
    }
}
