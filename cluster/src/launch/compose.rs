//! A docker compose file for a cluster: one service per node, or per group of nodes that one
//! process runs (`--nodes-per-container`, a node host: `host-<first id>`), from the
//! FROM-scratch image.
//!
//! Every service mounts its node's directory read-only at `/node` (configuration, certificate,
//! key, CA, and the nodes' manifest, which names peers by service: `node-<id>:7000`, resolved by
//! Docker's DNS inside the project's network). Each also has a fixed address in that network,
//! which is how the host reaches it (the client's `DIR/manifest.toml`). The node directories are
//! found at `${CUBEROUTE_DIR:-.}/nodes/<id>`, relative to the compose file: next to a cluster
//! directory's own `compose.yml` nothing needs setting. A container of several nodes mounts
//! each node's directory at `/node/<id>` and runs them as one `cuberoute daemon`, whose nodes
//! share the container's link and control ports and link with each other by a call; its
//! nodes' manifest entries name its address (which is how
//! [`hosting::processes`](crate::launch::hosting::processes) finds them).
//!
//! Every service also mounts a named volume of its own, `store-<first id>`, at
//! `/var/lib/cuberoute`, where its configuration puts the node's store (a store file a node) ([`container_config`]): a container restarted
//! or killed and started again keeps it; `down --volumes` (`cluster down`) removes it. Under
//! `docker stack deploy` the same volume is local to the engine the task runs on.

use crate::launch::generate::{Ports, container_service, docker_ip};
use crate::launch::hosting;
use crate::launch::layout::{NODE_CONFIG, NODE_HOSTED_LIST};
use cuberoute_protocol::{NodeId, Topology};
use serde::Serialize;
use std::collections::BTreeMap;
use std::net::Ipv4Addr;

/// The compose service of every node, and the network.
#[derive(Serialize)]
pub struct ComposeFile {
    pub version: String,
    pub services: BTreeMap<String, Service>,
    pub networks: BTreeMap<String, Network>,
    /// Every node's store volume, `store-<id>`, with the engine's defaults (a local volume).
    pub volumes: BTreeMap<String, Volume>,
}

/// A named volume: nothing set, the engine's default driver.
#[derive(Serialize)]
pub struct Volume {}

#[derive(Serialize)]
pub struct Service {
    pub image: String,
    pub command: Vec<String>,
    pub hostname: String,
    pub environment: BTreeMap<String, String>,
    pub volumes: Vec<String>,
    pub networks: BTreeMap<String, ServiceNetwork>,
    pub healthcheck: Healthcheck,
    /// For `docker compose`.
    pub restart: String,
    /// For `docker stack deploy` (Swarm), which ignores `restart`.
    pub deploy: Deploy,
}

#[derive(Serialize)]
pub struct ServiceNetwork {
    pub ipv4_address: String,
}

#[derive(Serialize)]
pub struct Healthcheck {
    pub test: Vec<String>,
    pub interval: String,
    pub timeout: String,
    pub retries: u32,
    pub start_period: String,
}

impl Healthcheck {
    /// The node's own readiness, `cuberoute status --local`, with its configuration at
    /// `config`, every `interval`.
    pub fn status(config: &str, interval: &str) -> Healthcheck {
        let test = ["CMD", "/cuberoute", "status", "--local", "--config", config];
        Healthcheck {
            test: test.iter().map(|s| s.to_string()).collect(),
            interval: interval.into(),
            timeout: "3s".into(),
            retries: 3,
            start_period: "2s".into(),
        }
    }
}

#[derive(Serialize)]
pub struct Deploy {
    pub restart_policy: RestartPolicy,
}

#[derive(Serialize)]
pub struct RestartPolicy {
    pub condition: String,
}

/// The project's network. No driver is named: docker compose makes a bridge (whose fixed
/// addresses the host reaches), `docker stack deploy` an overlay (where the fixed addresses are
/// ignored and the service names still resolve).
#[derive(Serialize)]
pub struct Network {
    pub ipam: Ipam,
}

#[derive(Serialize)]
pub struct Ipam {
    pub config: Vec<Subnet>,
}

#[derive(Serialize)]
pub struct Subnet {
    pub subnet: String,
}

/// The compose file's name in a cluster directory.
pub const COMPOSE_FILE: &str = "compose.yml";
/// The network every node joins.
pub const NETWORK: &str = "cuberoute";
/// Where a container of one node finds its node directory; a container of several finds each
/// node's at `/node/<id>`.
pub const NODE_MOUNT: &str = "/node";
/// Where each container's own volume is mounted: what its nodes write and keep.
pub const STATE_DIR: &str = "/var/lib/cuberoute";
/// The store of a container's one node, on its volume.
pub const STORE_PATH: &str = "/var/lib/cuberoute/store.redb";

/// The named volume of the container whose first node is `id`: its nodes' stores.
pub fn store_volume(id: NodeId) -> String {
    format!("store-{}", id.0)
}

/// Where node `id`'s store is inside its container: [`STORE_PATH`] alone, a file of its own on
/// the container's volume when the container runs several nodes (`hosted`).
pub fn store_path(id: NodeId, hosted: bool) -> String {
    if hosted {
        format!("{STATE_DIR}/store-{}.redb", id.0)
    } else {
        STORE_PATH.to_string()
    }
}

/// Where node `id`'s directory is mounted in its container.
pub fn node_mount(id: NodeId, hosted: bool) -> String {
    if hosted {
        format!("{NODE_MOUNT}/{}", id.0)
    } else {
        NODE_MOUNT.to_string()
    }
}

/// The compose file of `topology` in the /16 network `subnet`: a service for each of
/// `containers` (each the nodes one container runs, in id order), at the address of its first
/// node in node order.
pub fn compose_file(
    topology: Topology,
    subnet: Ipv4Addr,
    ports: Ports,
    image: &str,
    containers: &[Vec<NodeId>],
) -> String {
    let home: BTreeMap<NodeId, u32> = topology
        .nodes()
        .zip(hosting::homes(topology, containers))
        .collect();
    let services = containers
        .iter()
        .map(|nodes| {
            let at = u64::from(home[&nodes[0]]);
            (
                container_service(nodes),
                service(nodes, docker_ip(subnet, at), image),
            )
        })
        .collect();
    let volumes = containers
        .iter()
        .map(|nodes| (store_volume(nodes[0]), Volume {}))
        .collect();
    let file = ComposeFile {
        version: "3.8".into(),
        services,
        volumes,
        networks: BTreeMap::from([(
            NETWORK.to_string(),
            Network {
                ipam: Ipam {
                    config: vec![Subnet {
                        subnet: format!("{subnet}/16"),
                    }],
                },
            },
        )]),
    };
    let yaml = serde_yaml_ng::to_string(&file).expect("a compose file serializes");
    let hosted = match containers.iter().map(Vec::len).max() {
        Some(most) if most > 1 => format!(
            "# {} containers of up to {most} nodes each (`host-<first id>`: one process, its \
             nodes sharing its ports).\n",
            containers.len()
        ),
        _ => String::new(),
    };
    format!(
        "# cuberoute: {topology}, {} nodes, generated by `cuberoute cluster compose`.\n{hosted}\
         # Nodes use ports {} (links), {} (control) and {} (metrics) on their container's address.\n{yaml}",
        topology.node_count(),
        ports.link,
        ports.control,
        ports.metrics
    )
}

/// A node's generated configuration (paths relative to its directory) as its container runs
/// it: the store on the container's volume, at `store` ([`store_path`]), since the node
/// directory is mounted read-only. Nothing else changes: the revocation list stays in the node
/// directory, where `cluster revoke` writes it on the host and the container reads it at its
/// next start.
pub fn container_config(text: &str, store: &str) -> String {
    let line = format!("path = \"{store}\"  # on the container's own volume (compose.yml)");
    let mut out = Vec::new();
    let (mut in_store, mut store_seen, mut done) = (false, false, false);
    for l in text.lines() {
        let trimmed = l.trim_start();
        if trimmed.starts_with('[') {
            if in_store && !done {
                // A [store] table without a path: give it one.
                out.push(line.clone());
                done = true;
            }
            in_store = trimmed.split('#').next().map(str::trim) == Some("[store]");
            store_seen |= in_store;
        } else if in_store
            && !done
            && trimmed
                .strip_prefix("path")
                .is_some_and(|rest| rest.trim_start().starts_with('='))
        {
            out.push(line.clone());
            done = true;
            continue;
        }
        out.push(l.to_string());
    }
    if in_store && !done {
        out.push(line.clone());
    } else if !store_seen {
        out.push(String::new());
        out.push("[store]".into());
        out.push(line);
    }
    out.join("\n") + "\n"
}

/// The service of the container that runs `nodes` (in id order) at `address`: a node alone as
/// `daemon --config /node/node.toml`; several as one node host, the first's configuration
/// and the others' in its list (`--with-configs`, [`NODE_HOSTED_LIST`]), each node's directory
/// mounted apart (a container holds its own nodes' keys, no other's).
fn service(nodes: &[NodeId], address: Ipv4Addr, image: &str) -> Service {
    let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let hosted = nodes.len() > 1;
    let first = nodes[0];
    let config = format!("{}/{NODE_CONFIG}", node_mount(first, hosted));
    let mut command = strings(&["daemon", "--config", &config]);
    if hosted {
        command.extend([
            "--with-configs".to_string(),
            format!("{}/{NODE_HOSTED_LIST}", node_mount(first, hosted)),
        ]);
    }
    let mut volumes: Vec<String> = nodes
        .iter()
        .map(|id| {
            format!(
                "${{CUBEROUTE_DIR:-.}}/nodes/{}:{}:ro",
                id.0,
                node_mount(*id, hosted)
            )
        })
        .collect();
    volumes.push(format!("{}:{STATE_DIR}", store_volume(first)));
    Service {
        image: image.to_string(),
        command,
        hostname: container_service(nodes),
        environment: BTreeMap::from([("RUST_LOG".into(), "${RUST_LOG:-info}".into())]),
        volumes,
        networks: BTreeMap::from([(
            NETWORK.to_string(),
            ServiceNetwork {
                ipv4_address: address.to_string(),
            },
        )]),
        healthcheck: Healthcheck::status(&config, "2s"),
        restart: "unless-stopped".into(),
        deploy: Deploy {
            restart_policy: RestartPolicy {
                condition: "any".into(),
            },
        },
    }
}

/// The list a node host's container reads its other nodes' configurations from
/// ([`NODE_HOSTED_LIST`], in its first node's directory): their paths inside the container.
pub fn hosted_list(nodes: &[NodeId]) -> String {
    nodes[1..]
        .iter()
        .map(|id| format!("{}/{NODE_CONFIG}\n", node_mount(*id, true)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_service_per_node_with_fixed_addresses() {
        let topology: Topology = "q:2".parse().unwrap();
        let each: Vec<Vec<NodeId>> = topology.nodes().map(|id| vec![id]).collect();
        let text = compose_file(
            topology,
            Ipv4Addr::new(10, 200, 0, 0),
            Ports::default(),
            "img",
            &each,
        );
        let yaml: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).unwrap();
        let services = yaml["services"].as_mapping().unwrap();
        assert_eq!(services.len(), 4);
        let node3 = &yaml["services"]["node-3"];
        assert_eq!(node3["networks"]["cuberoute"]["ipv4_address"], "10.200.0.5");
        assert_eq!(node3["volumes"][0], "${CUBEROUTE_DIR:-.}/nodes/3:/node:ro");
        assert_eq!(node3["volumes"][1], "store-3:/var/lib/cuberoute");
        let volumes = yaml["volumes"].as_mapping().unwrap();
        assert_eq!(volumes.len(), 4);
        assert!(yaml["volumes"]["store-3"].is_mapping());
        assert_eq!(node3["healthcheck"]["test"][1], "/cuberoute");
        assert_eq!(
            yaml["networks"]["cuberoute"]["ipam"]["config"][0]["subnet"],
            "10.200.0.0/16"
        );
    }

    fn store_path(text: &str) -> Option<String> {
        let table: toml::Table = text.parse().unwrap();
        Some(table.get("store")?.get("path")?.as_str()?.to_string())
    }

    /// The configuration `cluster compose` writes for a node keeps its store on the container's
    /// volume, and everything else (the revocation list in the node directory) as generated.
    #[test]
    fn the_container_config_keeps_the_store_on_the_volume() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = crate::launch::layout::ClusterDir::new(tmp.path());
        let topology: Topology = "q:2".parse().unwrap();
        let addressing = crate::launch::generate::Addressing::Docker {
            subnet: Ipv4Addr::new(10, 200, 0, 0),
            ports: Ports::default(),
            containers: Vec::new(),
        };
        crate::launch::generate::generate(&dir, topology, &addressing).unwrap();
        let file = dir
            .node_dir(NodeId(1))
            .join(crate::launch::layout::NODE_CONFIG);
        let generated = std::fs::read_to_string(file).unwrap();
        let text = container_config(&generated, STORE_PATH);
        assert_eq!(store_path(&text).as_deref(), Some(STORE_PATH), "{text}");
        assert_eq!(container_config(&text, STORE_PATH), text, "twice is once");
        let (before, after): (toml::Table, toml::Table) =
            (generated.parse().unwrap(), text.parse().unwrap());
        assert_eq!(after["keys"], before["keys"]);
        assert_eq!(after["keys"]["revoked"].as_str(), Some("revoked.bin"));
        assert_eq!(after.len(), before.len());
    }

    #[test]
    fn a_config_without_a_store_path_gets_one() {
        for text in [
            "id = 1\n",
            "id = 1\n[store]\nmax_mib = 8\n",
            "[store] # kept\nmax_mib = 8\n[tls]\nca = \"ca.pem\"\n",
            "[tls]\npath = \"not the store's\"\n",
        ] {
            let out = container_config(text, STORE_PATH);
            assert_eq!(store_path(&out).as_deref(), Some(STORE_PATH), "{out}");
        }
        let out = container_config("[store]\nmax_mib = 8\n[tls]\npath = \"x\"\n", STORE_PATH);
        let table: toml::Table = out.parse().unwrap();
        assert_eq!(table["tls"]["path"].as_str(), Some("x"));
        assert_eq!(table["store"]["max_mib"].as_integer(), Some(8));
    }
}
