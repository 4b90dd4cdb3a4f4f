//! The stack file of `cluster swarm` (`DIR/stack.yml`, for `docker stack deploy`): one service
//! per node, pinned to its host, its files shipped as Swarm configs and secrets.
//!
//! Nothing in it names a path of the machine that deploys it but the files `docker stack
//! deploy` reads there and sends to the manager (relative to the stack file): no service
//! mounts a directory of any host, so that the hosts need no shared filesystem. Per node:
//!
//! - configs (public): its configuration (`node-<id>.toml`, [`task_config`]), its manifest
//!   (`node-<id>.manifest.toml`), its certificate (`node-<id>.pem`); and, one for the whole
//!   stack, the CA certificate (`ca.pem`) and the CA-signed key directory (`keys.bin`). Each is
//!   mounted in `/node`, where the configuration expects it;
//! - secrets (private): its TLS key (`node-<id>.key`) and its sealing key
//!   (`node-<id>.seal.key`), in `/run/secrets` (a tmpfs), mode 0400;
//! - a named local volume, `store-<id>` (Docker names it `<stack>_store-<id>`), at
//!   `/var/lib/cuberoute`: its store and a revocation list pushed to it, kept across a restart
//!   of its task on its host.
//!
//! Docker prefixes every config, secret, volume and network with the stack's name, and labels
//! them `com.docker.stack.namespace=<stack>`, which is how `cluster down` finds them.

use crate::launch::compose::{
    Healthcheck, Ipam, NETWORK, NODE_MOUNT as NODE_DIR, STATE_DIR, Subnet, node_mount, store_path,
    store_volume,
};
use crate::launch::generate::{Ports, Published, container_service};
use crate::launch::layout;
use cuberoute_protocol::{NodeId, Topology};
use serde::Serialize;
use std::collections::BTreeMap;
use std::net::Ipv4Addr;

/// The stack file's name in a cluster directory.
pub const STACK_FILE: &str = "stack.yml";
/// Where Docker puts a task's secrets.
pub const SECRETS_DIR: &str = "/run/secrets";
/// The label on every swarm node that names its host (`h1`, `h2`, ...): the services'
/// placement constraints match it.
pub const HOST_LABEL: &str = "cuberoute.host";

/// The name of host number `index` (0-based): `h1`, `h2`, ...
pub fn host_name(index: usize) -> String {
    format!("h{}", index + 1)
}

/// The placement constraint that pins a service to host number `index`.
pub fn constraint(index: usize) -> String {
    format!("node.labels.{HOST_LABEL} == {}", host_name(index))
}

/// What the stack file is made of.
pub struct StackSpec<'a> {
    pub topology: Topology,
    pub image: &'a str,
    /// The host (0-based) of each node, in id order.
    pub hosts: &'a [usize],
    /// The nodes of each task (in id order), every node in one, each task's nodes on one host.
    pub containers: &'a [Vec<NodeId>],
    pub ports: Ports,
    pub published: Published,
    /// The overlay network's /16.
    pub subnet: Ipv4Addr,
}

#[derive(Serialize)]
pub struct StackFile {
    pub version: String,
    pub services: BTreeMap<String, Service>,
    pub networks: BTreeMap<String, Network>,
    pub volumes: BTreeMap<String, Volume>,
    pub configs: BTreeMap<String, FileObject>,
    pub secrets: BTreeMap<String, FileObject>,
}

#[derive(Serialize)]
pub struct Service {
    pub image: String,
    pub command: Vec<String>,
    pub hostname: String,
    pub environment: BTreeMap<String, String>,
    pub configs: Vec<FileMount>,
    pub secrets: Vec<FileMount>,
    pub volumes: Vec<VolumeMount>,
    pub networks: Vec<String>,
    pub ports: Vec<Port>,
    pub healthcheck: Healthcheck,
    pub stop_grace_period: String,
    pub deploy: Deploy,
}

/// A config or secret in a task: `target` is a path for a config, a name in `/run/secrets`
/// for a secret.
#[derive(Serialize)]
pub struct FileMount {
    pub source: String,
    pub target: String,
    pub mode: u32,
}

#[derive(Serialize)]
pub struct VolumeMount {
    #[serde(rename = "type")]
    pub kind: String,
    pub source: String,
    pub target: String,
}

/// A port published on the task's own host (`mode: host`), not through the routing mesh.
#[derive(Serialize)]
pub struct Port {
    pub target: u16,
    pub published: u16,
    pub protocol: String,
    pub mode: String,
}

#[derive(Serialize)]
pub struct Deploy {
    pub mode: String,
    pub replicas: u32,
    pub endpoint_mode: String,
    pub placement: Placement,
    pub restart_policy: RestartPolicy,
}

#[derive(Serialize)]
pub struct Placement {
    pub constraints: Vec<String>,
}

#[derive(Serialize)]
pub struct RestartPolicy {
    pub condition: String,
    pub delay: String,
}

#[derive(Serialize)]
pub struct Network {
    pub driver: String,
    pub attachable: bool,
    pub ipam: Ipam,
}

#[derive(Serialize)]
pub struct Volume {}

/// A config or secret made from a file of the deploying machine (relative to the stack file).
#[derive(Serialize)]
pub struct FileObject {
    pub file: String,
}

/// The shared configs.
const CA_CONFIG: &str = "ca.pem";
const KEYS_CONFIG: &str = "keys.bin";

/// One config or secret of a task: (its name in the stack, its file in the cluster directory,
/// its target in the task).
type Shipped = (String, String, String);

/// The name in `/run/secrets` of node `id`'s TLS key and of its sealing key: the generated
/// names for a node alone in its task, named by node for a task of several.
fn secret_targets(id: NodeId, hosted: bool) -> (String, String) {
    if hosted {
        (
            format!("node-{}.key", id.0),
            format!("node-{}.seal.key", id.0),
        )
    } else {
        (layout::NODE_KEY.into(), layout::NODE_SEAL_KEY.into())
    }
}

/// The configs and secrets of the task that runs `nodes` (in id order): each node's
/// configuration, manifest and certificate in its directory ([`node_mount`]: `/node` for a
/// node alone, `/node/<id>` for several), its keys as secrets; the CA certificate and the key
/// directory once, in `/node`; and a task of several its first node's list of the others
/// ([`layout::NODE_HOSTED_LIST`]).
fn task_files(nodes: &[NodeId]) -> (Vec<Shipped>, Vec<Shipped>) {
    let hosted = nodes.len() > 1;
    let (mut configs, mut secrets) = (Vec::new(), Vec::new());
    for &id in nodes {
        let n = id.0;
        let file = |name: &str| format!("nodes/{n}/{name}");
        let in_node = |name: &str| format!("{}/{name}", node_mount(id, hosted));
        configs.extend([
            (
                format!("node-{n}.toml"),
                file(layout::NODE_CONFIG),
                in_node(layout::NODE_CONFIG),
            ),
            (
                format!("node-{n}.manifest.toml"),
                file(layout::NODE_MANIFEST),
                in_node(layout::NODE_MANIFEST),
            ),
            (
                format!("node-{n}.pem"),
                file(layout::NODE_CERT),
                in_node(layout::NODE_CERT),
            ),
        ]);
        let (key, seal) = secret_targets(id, hosted);
        secrets.extend([
            (format!("node-{n}.key"), file(layout::NODE_KEY), key),
            (
                format!("node-{n}.seal.key"),
                file(layout::NODE_SEAL_KEY),
                seal,
            ),
        ]);
    }
    let in_task = |name: &str| format!("{NODE_DIR}/{name}");
    configs.extend([
        (CA_CONFIG.into(), CA_CONFIG.into(), in_task(layout::NODE_CA)),
        (
            KEYS_CONFIG.into(),
            layout::NODE_KEYS.into(),
            in_task(layout::NODE_KEYS),
        ),
    ]);
    if hosted {
        let first = nodes[0];
        configs.push((
            format!("node-{}.hosted", first.0),
            format!("nodes/{}/{}", first.0, layout::NODE_HOSTED_LIST),
            format!("{}/{}", node_mount(first, true), layout::NODE_HOSTED_LIST),
        ));
    }
    (configs, secrets)
}

/// The stack file of `spec`.
pub fn stack_file(spec: &StackSpec) -> String {
    let topology = spec.topology;
    let mut file = StackFile {
        version: "3.8".into(),
        services: BTreeMap::new(),
        networks: BTreeMap::from([(
            NETWORK.to_string(),
            Network {
                driver: "overlay".into(),
                // Attachable: a container started by hand on any host (`docker run --network
                // <stack>_cuberoute`) can join the nodes' network, to look or to send.
                attachable: true,
                ipam: Ipam {
                    config: vec![Subnet {
                        subnet: format!("{}/16", spec.subnet),
                    }],
                },
            },
        )]),
        volumes: BTreeMap::new(),
        configs: BTreeMap::new(),
        secrets: BTreeMap::new(),
    };
    let index: BTreeMap<NodeId, usize> =
        topology.nodes().enumerate().map(|(i, v)| (v, i)).collect();
    for nodes in spec.containers {
        let (configs, secrets) = task_files(nodes);
        let hosted = nodes.len() > 1;
        let first = nodes[0];
        let home = index[&first];
        let mount = |objects: &[Shipped], mode| {
            objects
                .iter()
                .map(|(name, _, target)| FileMount {
                    source: name.clone(),
                    target: target.clone(),
                    mode,
                })
                .collect()
        };
        let config = format!("{}/{}", node_mount(first, hosted), layout::NODE_CONFIG);
        let mut command = strings(&["daemon", "--config", &config]);
        if hosted {
            command.extend([
                "--with-configs".to_string(),
                format!("{}/{}", node_mount(first, true), layout::NODE_HOSTED_LIST),
            ]);
        }
        let service = Service {
            image: spec.image.to_string(),
            command,
            hostname: container_service(nodes),
            environment: BTreeMap::from([("RUST_LOG".into(), "${RUST_LOG:-info}".into())]),
            configs: mount(&configs, 0o444),
            secrets: mount(&secrets, 0o400),
            volumes: vec![VolumeMount {
                kind: "volume".into(),
                source: store_volume(first),
                target: STATE_DIR.into(),
            }],
            networks: vec![NETWORK.into()],
            ports: {
                let (control, metrics) = spec.published.of(home as u64);
                vec![
                    // The control API is QUIC: UDP.
                    Port {
                        target: spec.ports.control,
                        published: control,
                        protocol: "udp".into(),
                        mode: "host".into(),
                    },
                    // Prometheus: HTTP.
                    Port {
                        target: spec.ports.metrics,
                        published: metrics,
                        protocol: "tcp".into(),
                        mode: "host".into(),
                    },
                ]
            },
            healthcheck: Healthcheck::status(&config, "3s"),
            stop_grace_period: "5s".into(),
            deploy: Deploy {
                mode: "replicated".into(),
                replicas: 1,
                // DNS round robin: a node's name resolves to its task's own address, with no
                // virtual IP in front. Behind a VIP (IPVS), a UDP flow keeps its entry to the
                // old task after the task is restarted with a new address, and a link dialled
                // again from the same socket (a node dials from its link port) reaches nothing
                // until the entry expires. Measured on a 3-host testbed, a node killed: every
                // link up again 5.4-10.7 s after with dnsrr, 4.1-24.2 s with a VIP, and the
                // first links 9.6-11.9 s after the deploy with dnsrr, 25-30 s with a VIP
                // (deploy/README.md, "Docker Swarm").
                endpoint_mode: "dnsrr".into(),
                placement: Placement {
                    constraints: vec![constraint(spec.hosts[home])],
                },
                restart_policy: RestartPolicy {
                    condition: "any".into(),
                    delay: "1s".into(),
                },
            },
        };
        file.services.insert(container_service(nodes), service);
        file.volumes.insert(store_volume(first), Volume {});
        for (name, path, _) in configs {
            file.configs.insert(name, FileObject { file: path });
        }
        for (name, path, _) in secrets {
            file.secrets.insert(name, FileObject { file: path });
        }
    }
    let yaml = serde_yaml_ng::to_string(&file).expect("a stack file serializes");
    let tasks = match spec.containers.iter().map(Vec::len).max() {
        Some(most) if most > 1 => format!(
            "# {} tasks of up to {most} nodes each (`host-<first id>`: one process, its nodes \
             sharing its ports, its configs in /node/<id>).\n",
            spec.containers.len()
        ),
        _ => String::new(),
    };
    format!(
        "# cuberoute: {topology}, {} nodes over {} hosts, generated by `cuberoute cluster swarm`.\n{tasks}\
         # Deploy: docker stack deploy -c stack.yml --resolve-image never <stack> (from this directory).\n\
         # Nodes use ports {} (links, on the overlay), {} (control, published on the host at {} + i) \
         and {} (metrics, at {} + i; a task of several nodes at its first node's i).\n{yaml}",
        topology.node_count(),
        spec.hosts.iter().max().map_or(0, |h| h + 1),
        spec.ports.link,
        spec.ports.control,
        spec.published.control,
        spec.ports.metrics,
        spec.published.metrics,
    )
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// Node `id`'s generated configuration as its task runs it (`hosted`: with other nodes): the
/// private keys from the task's secrets ([`secret_targets`]), the store and the revocation list
/// on the task's volume, a file each when the task runs several nodes (a pushed list is kept
/// there: its configs are read-only); the CA certificate and the key directory in `/node`, where
/// the task has them once; every other path stays relative to the node's own directory, where
/// its configs are. Fault injection is refused (`chaos.allow = false`) unless `allow_chaos`
/// (`cluster swarm --allow-chaos`): these are real hosts.
pub fn task_config(
    text: &str,
    id: NodeId,
    hosted: bool,
    allow_chaos: bool,
) -> anyhow::Result<String> {
    let mut table: toml::Table = text.parse()?;
    let mut set = |section: &str, key: &str, value: String| {
        let entry = table
            .entry(section)
            .or_insert_with(|| toml::Value::Table(Default::default()));
        if let toml::Value::Table(t) = entry {
            t.insert(key.into(), toml::Value::String(value));
        }
    };
    let (key, seal) = secret_targets(id, hosted);
    set("tls", "key", format!("{SECRETS_DIR}/{key}"));
    set("keys", "secret", format!("{SECRETS_DIR}/{seal}"));
    let revoked = if hosted {
        format!("revoked-{}.bin", id.0)
    } else {
        layout::NODE_REVOKED.to_string()
    };
    set("keys", "revoked", format!("{STATE_DIR}/{revoked}"));
    set("store", "path", store_path(id, hosted));
    if hosted {
        set("tls", "ca", format!("{NODE_DIR}/{}", layout::NODE_CA));
        set(
            "keys",
            "directory",
            format!("{NODE_DIR}/{}", layout::NODE_KEYS),
        );
    }
    if let toml::Value::Table(chaos) = table
        .entry("chaos")
        .or_insert_with(|| toml::Value::Table(Default::default()))
    {
        chaos.insert("allow".into(), toml::Value::Boolean(allow_chaos));
    }
    let dir = node_mount(id, hosted);
    Ok(format!(
        "# A cuberoute node as a Swarm task, generated by `cuberoute cluster swarm`: its configs \
         in {dir}, its keys in {SECRETS_DIR}, its store on its task's volume at {STATE_DIR}.\n{}",
        toml::to_string(&table)?
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launch::placement::{Placement as Hosts, PlacementKind};
    use std::collections::BTreeSet;

    fn spec_yaml(
        topology: &str,
        hosts: usize,
        kind: PlacementKind,
    ) -> (Hosts, serde_yaml_ng::Value) {
        let topology: Topology = topology.parse().unwrap();
        let placement = Hosts::new(topology, hosts, kind).unwrap();
        let of: Vec<usize> = topology.nodes().map(|v| placement.host_of(v)).collect();
        let each: Vec<Vec<NodeId>> = topology.nodes().map(|v| vec![v]).collect();
        let text = stack_file(&StackSpec {
            topology,
            image: "cuberoute:latest",
            hosts: &of,
            containers: &each,
            ports: Ports::default(),
            published: Published::default(),
            subnet: Ipv4Addr::new(10, 210, 0, 0),
        });
        (placement, serde_yaml_ng::from_str(&text).unwrap())
    }

    /// Every node ships its own configs and secrets, plus the two the stack shares; every
    /// object a service names is defined from a file of the cluster directory.
    #[test]
    fn every_node_has_its_configs_and_secrets() {
        let (_, yaml) = spec_yaml("eh:1,2", 3, PlacementKind::Paths);
        let services = yaml["services"].as_mapping().unwrap();
        assert_eq!(services.len(), 16);
        let configs = yaml["configs"].as_mapping().unwrap();
        let secrets = yaml["secrets"].as_mapping().unwrap();
        assert_eq!(configs.len(), 16 * 3 + 2);
        assert_eq!(secrets.len(), 16 * 2);
        let node5 = &yaml["services"]["node-5"];
        let targets = |list: &serde_yaml_ng::Value| -> BTreeSet<String> {
            list.as_sequence()
                .unwrap()
                .iter()
                .map(|m| m["target"].as_str().unwrap().to_string())
                .collect()
        };
        assert_eq!(
            targets(&node5["configs"]),
            BTreeSet::from(
                [
                    "/node/node.toml",
                    "/node/manifest.toml",
                    "/node/node.pem",
                    "/node/ca.pem",
                    "/node/keys.bin"
                ]
                .map(String::from)
            )
        );
        assert_eq!(
            targets(&node5["secrets"]),
            BTreeSet::from(["node.key", "seal.key"].map(String::from))
        );
        assert_eq!(yaml["secrets"]["node-5.key"]["file"], "nodes/5/node.key");
        assert_eq!(yaml["configs"]["node-5.toml"]["file"], "nodes/5/node.toml");
        assert_eq!(yaml["configs"]["keys.bin"]["file"], "keys.bin");
        for service in services.values() {
            for (list, objects) in [("configs", configs), ("secrets", secrets)] {
                for mount in service[list].as_sequence().unwrap() {
                    let source = mount["source"].as_str().unwrap();
                    assert!(objects.contains_key(source), "{source} is not defined");
                }
            }
            for mount in service["secrets"].as_sequence().unwrap() {
                assert_eq!(mount["mode"], 0o400);
            }
        }
        // A private key is never a config.
        for (name, object) in configs {
            let file = object["file"].as_str().unwrap();
            assert!(!file.ends_with(".key"), "{name:?} ships {file} as a config");
        }
    }

    /// Each service is pinned to the host its placement says, by the host's label.
    #[test]
    fn constraints_match_the_placement() {
        for kind in PlacementKind::ALL {
            let (placement, yaml) = spec_yaml("eh:2,2", 3, kind);
            for id in placement.topology.nodes() {
                let service = &yaml["services"][crate::launch::generate::service_name(id).as_str()];
                let constraints = service["deploy"]["placement"]["constraints"]
                    .as_sequence()
                    .unwrap();
                assert_eq!(constraints.len(), 1);
                assert_eq!(
                    constraints[0].as_str().unwrap(),
                    format!(
                        "node.labels.cuberoute.host == h{}",
                        placement.host_of(id) + 1
                    )
                );
                assert_eq!(service["deploy"]["replicas"], 1);
                assert_eq!(service["deploy"]["endpoint_mode"], "dnsrr");
            }
        }
    }

    /// No two services publish the same port (so that any placement fits on any host), each in
    /// host mode, and the client's manifest names the same ports.
    #[test]
    fn published_ports_are_unique() {
        let (_, yaml) = spec_yaml("eh:2,2", 3, PlacementKind::Paths);
        let mut seen = BTreeSet::new();
        for service in yaml["services"].as_mapping().unwrap().values() {
            for port in service["ports"].as_sequence().unwrap() {
                assert_eq!(port["mode"], "host");
                let published = port["published"].as_u64().unwrap();
                assert!(seen.insert(published), "{published} published twice");
                assert!(published < 32_768, "{published} is an ephemeral port");
            }
        }
        assert_eq!(seen.len(), 64);
        assert_eq!(yaml["services"]["node-0"]["ports"][0]["published"], 17_000);
        assert_eq!(yaml["services"]["node-0"]["ports"][0]["protocol"], "udp");
        assert_eq!(yaml["services"]["node-31"]["ports"][1]["published"], 22_031);
    }

    /// Only named volumes: no service mounts a path of a host, and each node has its own store.
    #[test]
    fn no_bind_mount_of_a_host_path() {
        let (_, yaml) = spec_yaml("eh:1,1", 2, PlacementKind::Packed);
        let volumes = yaml["volumes"].as_mapping().unwrap();
        assert_eq!(volumes.len(), 8);
        for (name, service) in yaml["services"].as_mapping().unwrap() {
            let mounts = service["volumes"].as_sequence().unwrap();
            assert_eq!(mounts.len(), 1, "{name:?}");
            assert_eq!(mounts[0]["type"], "volume");
            let source = mounts[0]["source"].as_str().unwrap();
            assert!(
                !source.contains('/') && !source.starts_with('.'),
                "{source}"
            );
            assert!(volumes.contains_key(source));
            assert_eq!(mounts[0]["target"], "/var/lib/cuberoute");
        }
        assert_eq!(yaml["networks"]["cuberoute"]["driver"], "overlay");
        assert_eq!(yaml["networks"]["cuberoute"]["attachable"], true);
    }

    /// A task's configuration reads its keys from its secrets and keeps its store and a pushed
    /// revocation list on its volume; everything else as generated.
    #[test]
    fn the_task_config_points_at_secrets_and_the_volume() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = crate::launch::layout::ClusterDir::new(tmp.path());
        let topology: Topology = "q:2".parse().unwrap();
        let addressing = crate::launch::generate::Addressing::Swarm {
            hosts: vec!["198.18.0.2".into(); 4],
            ports: Ports::default(),
            published: Published::default(),
            containers: Vec::new(),
        };
        crate::launch::generate::generate(&dir, topology, &addressing).unwrap();
        let generated = std::fs::read_to_string(dir.node_config(NodeId(1))).unwrap();
        let text = task_config(&generated, NodeId(1), false, false).unwrap();
        let table: toml::Table = text.parse().unwrap();
        // Real hosts: no fault injection unless asked for.
        assert_eq!(table["chaos"]["allow"].as_bool(), Some(false));
        let allowed: toml::Table = task_config(&generated, NodeId(1), false, true)
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(allowed["chaos"]["allow"].as_bool(), Some(true));
        assert_eq!(table["tls"]["key"].as_str(), Some("/run/secrets/node.key"));
        assert_eq!(table["tls"]["cert"].as_str(), Some("node.pem"));
        assert_eq!(
            table["keys"]["secret"].as_str(),
            Some("/run/secrets/seal.key")
        );
        assert_eq!(
            table["keys"]["revoked"].as_str(),
            Some("/var/lib/cuberoute/revoked.bin")
        );
        assert_eq!(
            table["store"]["path"].as_str(),
            Some(crate::launch::compose::STORE_PATH)
        );
        assert_eq!(table["listen"].as_str(), Some("0.0.0.0:7000"));
        assert_eq!(
            task_config(&text, NodeId(1), false, false).unwrap(),
            text,
            "twice is once"
        );
        // Every other path stays relative to /node, where the configs are.
        for (section, key) in [("tls", "ca"), ("tls", "cert"), ("keys", "directory")] {
            let path = table[section][key].as_str().unwrap();
            assert!(!path.starts_with('/'), "{section}.{key} = {path}");
        }
        assert_eq!(table["manifest"].as_str(), Some("manifest.toml"));
    }
}
