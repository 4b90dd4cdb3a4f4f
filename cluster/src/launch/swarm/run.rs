//! What `DIR/run.toml` records of a swarm cluster ([`SwarmRun`]): read by the run state
//! (`crate::launch::local`) without the rest of `cluster swarm`.

use super::engine::Engine;
use cuberoute_protocol::NodeId;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// How a swarm cluster was deployed: recorded in `DIR/run.toml` before `docker stack deploy`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct SwarmRun {
    pub stack: String,
    /// The manager's engine endpoint (`docker -H`).
    pub manager: String,
    /// The placement's kind (`paths`, `packed`, `spread`).
    pub placement: String,
    pub image: String,
    /// The image's id, which the services name when the engines known here all hold the
    /// image under it ([`super::image_reference`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_id: Option<String>,
    /// The testbed the swarm is, if it is one (`cuberoute testbed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub testbed: Option<PathBuf>,
    /// The hosts, `h1` first.
    #[serde(rename = "host", default)]
    pub hosts: Vec<SwarmHost>,
    /// Nodes crashed inside a task of several nodes while the others run on (`chaos kill`),
    /// each with the container it crashed in: a new container of the task (a restart by
    /// Swarm) runs it again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub crashed: Vec<CrashedNode>,
}

/// A node crashed inside its task's container ([`SwarmRun::crashed`]).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct CrashedNode {
    pub node: NodeId,
    pub container: String,
}

/// One host of a swarm cluster.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct SwarmHost {
    /// `h1`, `h2`, ...: its `cuberoute.host` label.
    pub name: String,
    /// Its address: where its nodes' ports are published.
    pub address: String,
    /// Its swarm node id.
    pub node: String,
    pub hostname: String,
    /// Its engine's endpoint, if known here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
}

impl SwarmRun {
    pub fn manager(&self) -> Engine {
        Engine::new(&self.manager)
    }

    /// The host a swarm node id is.
    pub(crate) fn host_of_node(&self, node: &str) -> Option<&SwarmHost> {
        self.hosts.iter().find(|h| h.node == node)
    }

    /// A service of the stack (`node-<id>`, `host-<id>`) as Docker names it.
    pub fn service(&self, name: &str) -> String {
        format!("{}_{name}", self.stack)
    }

    /// Whether node `id` crashed inside `container`, which runs.
    pub fn crashed_in(&self, id: NodeId, container: &str) -> bool {
        self.crashed
            .iter()
            .any(|c| c.node == id && c.container == container)
    }

    /// The engines this machine can ask, with their hosts.
    pub(crate) fn known_engines(&self) -> Vec<(&SwarmHost, Engine)> {
        self.hosts
            .iter()
            .filter_map(|h| h.endpoint.as_ref().map(|e| (h, Engine::new(e))))
            .collect()
    }
}
