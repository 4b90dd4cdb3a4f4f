//! Generate a cluster directory: the CA, a certificate per node and for clients, the manifest,
//! and one configuration per node.

use crate::launch::certs::ClusterCa;
use crate::launch::layout::{self, ClusterDir};
use crate::launch::phases::Phases;
use anyhow::Context;
use cuberoute_daemon::keys::{self, DirectoryBody, SignedFile};
use cuberoute_daemon::manifest::{Manifest, ManifestNode};
use cuberoute_protocol::seal::keys::SecretKey;
use cuberoute_protocol::{NodeId, Topology};
use std::fs;
use std::net::Ipv4Addr;
use std::path::Path;
use std::time::Duration;

/// Ports every node uses, each on its own address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ports {
    pub link: u16,
    pub control: u16,
    pub metrics: u16,
}

impl Default for Ports {
    fn default() -> Self {
        Ports {
            link: 7000,
            control: 7001,
            metrics: 7002,
        }
    }
}

/// How nodes are addressed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Addressing {
    /// Node `i` (in id order) on loopback address `base + 1 + i`, all on the same ports; its
    /// links and control on the address of node `home[i]` if given (the nodes of one process
    /// share one link endpoint and one control endpoint: `cuberoute_daemon::host`), else on its
    /// own.
    Loopback {
        base: Ipv4Addr,
        ports: Ports,
        home: Vec<u32>,
    },
    /// Containers in a network of their own: one per node, or per group of nodes that one
    /// process runs (`containers`, in node order: the index of each node's container, whose
    /// address is its first node's, and the container's service name; empty: every node its
    /// own). Nodes reach each other by their container's service name (`node-<id>`, or
    /// `host-<id>` for several, Docker's DNS), where the nodes of one container share one
    /// link and one control port; the host reaches node `i`'s container at its fixed address
    /// `subnet + 2 + i` (the network's gateway is `subnet + 1`).
    Docker {
        subnet: Ipv4Addr,
        ports: Ports,
        containers: Vec<(u32, String)>,
    },
    /// Pods of a StatefulSet `name` with a headless Service of the same name in `namespace`:
    /// node `i` is pod `name-(i / per_pod)`, reached by its pod DNS name (a pod of several
    /// nodes runs them as one node host, sharing its ports).
    Kubernetes {
        name: String,
        namespace: String,
        ports: Ports,
        per_pod: u64,
    },
    /// One network namespace per node on a bridge (`cluster up --netns`, [`crate::launch::netns`]):
    /// node `i` binds, and is reached by the others and by clients on the host, at
    /// `subnet + 2 + i` (the bridge, the host's side, is `subnet + 1`).
    Netns { subnet: Ipv4Addr, ports: Ports },
    /// Hosts of a turmoil simulation (`cuberoute sim`), named by their service name
    /// (`node-<id>`, or `host-<id>` for a host of several nodes: `containers`, as for
    /// [`Addressing::Docker`]), for the nodes and the client alike.
    Simulated {
        ports: Ports,
        containers: Vec<(u32, String)>,
    },
    /// One Swarm service per node, or per group of nodes one task runs (`containers`, as for
    /// [`Addressing::Docker`]), over several hosts (`cluster swarm`, [`crate::launch::swarm`]):
    /// nodes reach each other by service name (`node-<id>`, `host-<id>`) on the stack's overlay
    /// network; a client reaches node `i` on the address of its host, `hosts[i]`, at the ports
    /// its container publishes there ([`Published`], by the index of the container's first
    /// node). The client's manifest names each node's link address by service name too: it is
    /// reachable on the overlay only.
    Swarm {
        hosts: Vec<String>,
        ports: Ports,
        published: Published,
        containers: Vec<(u32, String)>,
    },
}

/// The host ports of a node's control and metrics ports when its container publishes them on
/// its host (`cluster swarm`): node `i` (in id order) at `control + i` and `metrics + i`, so
/// that no two nodes on a host take the same port, wherever the placement puts them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Published {
    pub control: u16,
    pub metrics: u16,
}

impl Default for Published {
    /// 17000 + i and 22000 + i: both below Linux's ephemeral ports (32768 on), and clear of
    /// the nodes' own ports (7000-7002) and of Swarm's (2377, 4789, 7946).
    fn default() -> Self {
        Published {
            control: 17_000,
            metrics: 22_000,
        }
    }
}

impl Published {
    /// The most nodes the two ranges hold without overlapping each other.
    pub fn max_nodes(&self) -> u64 {
        u64::from(self.metrics.abs_diff(self.control))
            .min(u64::from(u16::MAX - self.control.max(self.metrics)) + 1)
    }

    /// The published control and metrics ports of node number `index`.
    pub fn of(&self, index: u64) -> (u16, u16) {
        (self.control + index as u16, self.metrics + index as u16)
    }
}

/// Where one node listens and how it is reached.
struct NodeAddresses {
    /// The address the daemon binds.
    bind: String,
    /// How the other nodes reach it.
    peer_host: String,
    /// How a client on the machine that generated the cluster reaches it.
    client_host: String,
    /// Where its links and its control API listen, and are reached by the other nodes and
    /// clients, if not at `bind` and `peer_host` (an address its process shares:
    /// [`Addressing::Loopback`]).
    home_host: Option<String>,
    /// The control and metrics ports the client uses there, if not the node's own
    /// ([`Published`]).
    published: Option<(u16, u16)>,
}

impl Addressing {
    fn node(&self, index: u64, id: NodeId) -> NodeAddresses {
        match self {
            Addressing::Loopback { base, home, .. } => {
                let at = |index: u64| Ipv4Addr::from(u32::from(*base) + 1 + index as u32);
                let ip = at(index).to_string();
                let home = home.get(index as usize).map(|&h| u64::from(h));
                NodeAddresses {
                    bind: ip.clone(),
                    peer_host: ip.clone(),
                    client_host: ip,
                    home_host: home.filter(|h| *h != index).map(|h| at(h).to_string()),
                    published: None,
                }
            }
            Addressing::Netns { subnet, .. } => {
                let ip = docker_ip(*subnet, index).to_string();
                NodeAddresses {
                    bind: ip.clone(),
                    peer_host: ip.clone(),
                    client_host: ip,
                    home_host: None,
                    published: None,
                }
            }
            Addressing::Docker {
                subnet, containers, ..
            } => {
                let (at, service) = container_of(containers, index, id);
                NodeAddresses {
                    bind: "0.0.0.0".into(),
                    peer_host: service,
                    client_host: docker_ip(*subnet, at).to_string(),
                    home_host: None,
                    published: None,
                }
            }
            Addressing::Simulated { containers, .. } => {
                let (_, service) = container_of(containers, index, id);
                NodeAddresses {
                    bind: "0.0.0.0".into(),
                    peer_host: service.clone(),
                    client_host: service,
                    home_host: None,
                    published: None,
                }
            }
            Addressing::Kubernetes {
                name,
                namespace,
                per_pod,
                ..
            } => {
                let host = pod_dns_name(name, namespace, index / (*per_pod).max(1));
                NodeAddresses {
                    bind: "0.0.0.0".into(),
                    peer_host: host.clone(),
                    client_host: host,
                    home_host: None,
                    published: None,
                }
            }
            Addressing::Swarm {
                hosts,
                published,
                containers,
                ..
            } => {
                let (at, service) = container_of(containers, index, id);
                NodeAddresses {
                    bind: "0.0.0.0".into(),
                    peer_host: service,
                    client_host: hosts[index as usize].clone(),
                    home_host: None,
                    published: Some(published.of(at)),
                }
            }
        }
    }

    pub fn ports(&self) -> Ports {
        match self {
            Addressing::Loopback { ports, .. }
            | Addressing::Docker { ports, .. }
            | Addressing::Netns { ports, .. }
            | Addressing::Kubernetes { ports, .. }
            | Addressing::Swarm { ports, .. }
            | Addressing::Simulated { ports, .. } => *ports,
        }
    }
}

/// Node number `index`'s container in `containers` (its first node's index, its service);
/// its own if the list is empty.
fn container_of(containers: &[(u32, String)], index: u64, id: NodeId) -> (u64, String) {
    containers
        .get(index as usize)
        .map_or((index, service_name(id)), |(at, service)| {
            (u64::from(*at), service.clone())
        })
}

/// The `containers` of [`Addressing::Docker`] and [`Addressing::Swarm`] for `groups` (the
/// nodes each container runs, every node in one): each node's container's first node's index
/// and its service, in node order.
pub fn containers(topology: Topology, groups: &[Vec<NodeId>]) -> Vec<(u32, String)> {
    let service: std::collections::HashMap<NodeId, String> = groups
        .iter()
        .flat_map(|nodes| {
            let service = container_service(nodes);
            nodes.iter().map(move |id| (*id, service.clone()))
        })
        .collect();
    topology
        .nodes()
        .zip(crate::launch::hosting::homes(topology, groups))
        .map(|(id, home)| (home, service[&id].clone()))
        .collect()
}

/// The compose service (and container host name) of a node.
pub fn service_name(id: NodeId) -> String {
    format!("node-{}", id.0)
}

/// The service name of the container that runs `nodes`: `node-<id>` for a node alone,
/// `host-<lowest id>` for several (a node host, `cluster up --docker --nodes-per-container`).
pub fn container_service(nodes: &[NodeId]) -> String {
    match nodes {
        [one] => service_name(*one),
        _ => format!("host-{}", nodes.iter().min().map_or(0, |id| id.0)),
    }
}

/// The DNS name of pod `index` of StatefulSet `name` behind the headless Service `name`.
pub fn pod_dns_name(name: &str, namespace: &str, index: u64) -> String {
    format!("{name}-{index}.{name}.{namespace}.svc.cluster.local")
}

/// The fixed address of node number `index` in a Docker network or a netns cluster's block.
pub fn docker_ip(subnet: Ipv4Addr, index: u64) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(subnet) + 2 + index as u32)
}

/// Check that `base` leaves room on 127.0.0.0/8 for `nodes` addresses.
pub fn check_loopback(base: Ipv4Addr, nodes: u64) -> anyhow::Result<()> {
    let first = u32::from(base) + 1;
    let last = u32::from(base) as u64 + nodes;
    anyhow::ensure!(
        base.octets()[0] == 127 && last <= u64::from(u32::from(Ipv4Addr::new(127, 255, 255, 254))),
        "base address {base} must leave {nodes} addresses inside 127.0.0.0/8 (first {})",
        Ipv4Addr::from(first)
    );
    Ok(())
}

/// Write a whole cluster into `dir`, replacing any cluster generated there before. Returns
/// the client's manifest (`DIR/manifest.toml`); each node's directory holds the nodes' view of
/// itself and its neighbours.
pub fn generate(
    dir: &ClusterDir,
    topology: Topology,
    addressing: &Addressing,
) -> anyhow::Result<Manifest> {
    generate_with_keys(dir, topology, addressing, None)
}

/// [`generate`], the sealing keys drawn from `key_seed` if there is one (a simulation, which
/// replays its seed: every sealed byte follows from the keys), else from the system.
pub fn generate_with_keys(
    dir: &ClusterDir,
    topology: Topology,
    addressing: &Addressing,
    key_seed: Option<u64>,
) -> anyhow::Result<Manifest> {
    generate_timed(
        dir,
        topology,
        addressing,
        key_seed,
        None,
        &mut Phases::start(),
    )
}

/// [`generate_with_keys`], ending two phases of `phases`: `credentials` (the CA, every
/// certificate and key, the signed key directory, all in memory) and `files` (all of it
/// written).
pub fn generate_timed(
    dir: &ClusterDir,
    topology: Topology,
    addressing: &Addressing,
    key_seed: Option<u64>,
    probing: Option<u32>,
    phases: &mut Phases,
) -> anyhow::Result<Manifest> {
    let ports = addressing.ports();
    let pacing = Pacing::of(probing.unwrap_or_else(|| link_count(topology)));
    let nodes: Vec<(NodeId, NodeAddresses)> = topology
        .nodes()
        .enumerate()
        .map(|(i, id)| (id, addressing.node(i as u64, id)))
        .collect();
    let manifest = |host: fn(&NodeAddresses) -> &String| Manifest {
        topology,
        nodes: nodes
            .iter()
            .map(|(id, a)| ManifestNode {
                id: *id,
                addr: format!("{}:{}", a.home_host.as_ref().unwrap_or(host(a)), ports.link),
                control: format!(
                    "{}:{}",
                    a.home_host.as_ref().unwrap_or(host(a)),
                    ports.control
                ),
                metrics: Some(format!("{}:{}", host(a), ports.metrics)),
            })
            .collect(),
    };
    let mut client_manifest = manifest(|a| &a.client_host);
    // Published ports: the client reaches control and metrics there; links stay the nodes'.
    for (node, (_, a)) in client_manifest.nodes.iter_mut().zip(&nodes) {
        if let Some((control, metrics)) = a.published {
            node.addr = format!("{}:{}", a.peer_host, ports.link);
            node.control = format!("{}:{control}", a.client_host);
            node.metrics = Some(format!("{}:{metrics}", a.client_host));
        }
    }
    let peers = manifest(|a| &a.peer_host);
    let peers: std::collections::BTreeMap<NodeId, ManifestNode> =
        peers.nodes.into_iter().map(|n| (n.id, n)).collect();
    // A node's own manifest names only itself and its neighbours: all it dials or is, and a
    // few hundred bytes to parse at start rather than the whole cluster (200 KiB per node at
    // 2,048 nodes, 457 MB written in all).
    let node_manifest = |id: NodeId| {
        Manifest {
            topology,
            nodes: std::iter::once(id)
                .chain(topology.neighbours(id))
                .filter_map(|n| peers.get(&n).cloned())
                .collect(),
        }
        .to_toml()
    };
    let ca = ClusterCa::generate(&topology.to_string())?;
    let client = ca.issue_client()?;
    let (secrets, key_directory) = seal_keys(&ca, topology, key_seed);
    let pems = on_every_core(&nodes, |(id, _)| ca.issue_node(*id))
        .into_iter()
        .collect::<Result<Vec<_>, _>>()?;
    phases.end("credentials");

    if dir.nodes().exists() {
        fs::remove_dir_all(dir.nodes())
            .with_context(|| format!("clearing {}", dir.nodes().display()))?;
    }
    fs::create_dir_all(dir.nodes())?;
    fs::create_dir_all(dir.logs())?;
    write(&dir.manifest(), &client_manifest.to_toml())?;
    write(&dir.ca_cert(), &ca.cert_pem())?;
    write_secret(&dir.ca_key(), &ca.key_pem())?;
    write(&dir.client_cert(), &client.cert)?;
    write_secret(&dir.client_key(), &client.key)?;
    fs::write(dir.keys(), key_directory)
        .with_context(|| format!("writing {}", dir.keys().display()))?;
    let _ = fs::remove_file(dir.revoked());

    let each: Vec<_> = nodes.iter().zip(&secrets).zip(&pems).collect();
    on_every_core(&each, |(((id, addresses), secret), pem)| {
        let node_dir = dir.node_dir(*id);
        fs::create_dir_all(&node_dir)?;
        write(&node_dir.join(layout::NODE_CERT), &pem.cert)?;
        write_secret(&node_dir.join(layout::NODE_KEY), &pem.key)?;
        share(&dir.ca_cert(), &node_dir.join(layout::NODE_CA))?;
        write(&node_dir.join(layout::NODE_MANIFEST), &node_manifest(*id))?;
        write_secret_bytes(&node_dir.join(layout::NODE_SEAL_KEY), &secret.to_bytes())?;
        share(&dir.keys(), &node_dir.join(layout::NODE_KEYS))?;
        write(
            &node_dir.join(layout::NODE_CONFIG),
            &node_config(topology, *id, addresses, ports, pacing),
        )
    })
    .into_iter()
    .collect::<anyhow::Result<Vec<()>>>()?;
    phases.end("files");
    Ok(client_manifest)
}

/// `f` of each item, in order, computed on as many threads as the machine has cores: a
/// cluster's thousands of certificates and files are each made alone.
fn on_every_core<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let chunk = items.len().div_ceil(cores).max(1);
    std::thread::scope(|scope| {
        let f = &f;
        let runs: Vec<_> = items
            .chunks(chunk)
            .map(|part| scope.spawn(move || part.iter().map(f).collect::<Vec<R>>()))
            .collect();
        runs.into_iter()
            .flat_map(|run| run.join().expect("a generating thread panicked"))
            .collect()
    })
}

/// Every node's sealing key pair, in node order, and the key directory that binds their public
/// keys to their ids, signed by the CA (what `DIR/keys.bin` holds).
fn seal_keys(
    ca: &ClusterCa,
    topology: Topology,
    key_seed: Option<u64>,
) -> (Vec<SecretKey>, Vec<u8>) {
    let mut seeded = key_seed.map(cuberoute_daemon::env::rng);
    let secrets: Vec<SecretKey> = topology
        .nodes()
        .map(|_| {
            SecretKey::from_seed(match seeded.as_mut() {
                Some(rng) => rand::Rng::random(rng),
                None => rand::random(),
            })
        })
        .collect();
    let body = DirectoryBody {
        topology: topology.to_string(),
        keys: topology
            .nodes()
            .zip(&secrets)
            .map(|(id, secret)| (id, secret.public_key()))
            .collect(),
    }
    .to_bytes();
    let signature = ca.sign(&keys::signed_bytes(keys::DIRECTORY, &body));
    let file = SignedFile {
        what: keys::DIRECTORY.to_string(),
        body,
        signature,
    };
    (secrets, file.to_bytes())
}

/// Put the shared file `from` at `to` too: a hard link (no copy per node however large the
/// cluster), or a copy where links do not work.
fn share(from: &Path, to: &Path) -> anyhow::Result<()> {
    let _ = fs::remove_file(to);
    fs::hard_link(from, to)
        .or_else(|_| fs::copy(from, to).map(|_| ()))
        .with_context(|| format!("writing {}", to.display()))
}

/// The niceness of a generated node: a cluster on one machine runs its daemons below the
/// clients, commands and load generators beside them.
pub const CLUSTER_NICE: i32 = 10;

/// One node's configuration; paths are relative to its own directory.
fn node_config(
    topology: Topology,
    id: NodeId,
    addresses: &NodeAddresses,
    ports: Ports,
    pacing: Pacing,
) -> String {
    let bind = &addresses.bind;
    let home = addresses.home_host.as_ref().unwrap_or(bind);
    format!(
        r#"# cuberoute node {id} of {topology}, generated by `cuberoute cluster`.
topology = "{topology}"
id = {id}
listen = "{home}:{link}"
control_listen = "{home}:{control}"
metrics_listen = "{bind}:{metrics}"
manifest = "{manifest}"
log_format = "text"
# Below the clients that share the machine's cores (docs/daemon.md, "Priority").
nice = {nice}
# Every set sealed end to end (docs/security.md).
seal = true

[tls]
ca = "{ca}"
cert = "{cert}"
key = "{key}"

[keys]
directory = "{keys}"
secret = "{seal_key}"
revoked = "{revoked}"

# Every daemon of the cluster shares this machine, and every link's probes wake both ends: the
# interval is paced for {links} links (docs/daemon.md, "Links"; the daemon's own default is {default_ms}ms).
[liveness]
interval = "{interval_ms}ms"

# Reliable sets are acknowledged once written here, and kept across a restart (docs/delivery.md).
[store]
path = "{store}"
"#,
        link = ports.link,
        control = ports.control,
        metrics = ports.metrics,
        manifest = layout::NODE_MANIFEST,
        nice = CLUSTER_NICE,
        ca = layout::NODE_CA,
        cert = layout::NODE_CERT,
        key = layout::NODE_KEY,
        keys = layout::NODE_KEYS,
        seal_key = layout::NODE_SEAL_KEY,
        revoked = layout::NODE_REVOKED,
        store = layout::NODE_STORE,
        links = pacing.links,
        interval_ms = pacing.interval.as_millis(),
        default_ms = cuberoute_daemon::liveness::DEFAULT_INTERVAL.as_millis(),
    )
}

/// Probe round trips a second that all the links of a generated cluster may make together:
/// its daemons share one machine, and each round trip wakes the prober twice (its timer, the
/// answer) and the listener once. Measured (docs/notes/2026-12-03-link-liveness.md, a debug
/// binary): 290 to 460 µs of CPU per round trip on 128 and 1,024 daemons; EH(4,5)'s 1,024 idle
/// daemons paced to 25 a second took 1.16% of one core, within its idle budget of 2%.
pub const CLUSTER_PROBES_PER_SECOND: u32 = 25;

/// The liveness interval of a generated cluster's nodes: the daemon's default, or longer where
/// the cluster's links would probe more than [`CLUSTER_PROBES_PER_SECOND`] times a second
/// together, rounded up to 100 ms.
pub fn liveness_interval(topology: Topology) -> Duration {
    Pacing::of(link_count(topology)).interval
}

/// How a generated cluster's links probe: how many of them do (a link between two nodes of
/// one process is a call and does not), and at what interval each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pacing {
    pub links: u32,
    pub interval: Duration,
}

impl Pacing {
    /// `links` probing links, paced as [`liveness_interval`] says (at most the daemon's longest
    /// interval).
    pub fn of(links: u32) -> Pacing {
        let spread = Duration::from_secs(1) * links / CLUSTER_PROBES_PER_SECOND;
        let tenths = spread.as_millis().div_ceil(100) as u32;
        let interval = cuberoute_daemon::liveness::DEFAULT_INTERVAL
            .max(Duration::from_millis(100) * tenths)
            .min(cuberoute_daemon::liveness::MAX_INTERVAL);
        Pacing { links, interval }
    }
}

/// Write `interval` as the liveness interval of every node's configuration that [`generate`]
/// wrote (`cluster up --liveness-interval`): it replaces the table's first line.
pub fn set_liveness_interval(
    dir: &ClusterDir,
    topology: Topology,
    interval: Duration,
) -> anyhow::Result<()> {
    let line = format!("interval = \"{}ms\"", interval.as_millis());
    edit_liveness_table(dir, topology, |rest| {
        let end = rest.find('\n').unwrap_or(rest.len());
        format!("{line}{}", &rest[end..])
    })
}

/// Add `line` to the `[liveness]` table of every node's configuration that [`generate`] wrote.
pub fn set_liveness(dir: &ClusterDir, topology: Topology, line: &str) -> anyhow::Result<()> {
    edit_liveness_table(dir, topology, |rest| format!("{line}\n{rest}"))
}

/// Rewrite what follows the `[liveness]` header of every node's configuration with `edit`.
fn edit_liveness_table(
    dir: &ClusterDir,
    topology: Topology,
    edit: impl Fn(&str) -> String,
) -> anyhow::Result<()> {
    for id in topology.nodes() {
        let path = dir.node_config(id);
        let text =
            fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        let Some(at) = text.find(LIVENESS_TABLE) else {
            anyhow::bail!("{} has no [liveness] table", path.display());
        };
        let start = at + LIVENESS_TABLE.len();
        write(
            &path,
            &format!("{}{}", &text[..start], edit(&text[start..])),
        )?;
    }
    Ok(())
}

/// Where the interval of the `[liveness]` table begins in a configuration [`node_config`] wrote.
const LIVENESS_TABLE: &str = "[liveness]\n";

/// The links of `topology`: one per neighbour pair.
fn link_count(topology: Topology) -> u32 {
    let ends: usize = topology
        .nodes()
        .map(|n| topology.neighbours(n).count())
        .sum();
    (ends / 2) as u32
}

/// Where the `[store]` table begins in a configuration [`node_config`] wrote.
const STORE_TABLE: &str = "\n# Reliable sets are acknowledged once written here";

/// Take the store out of every node's configuration that [`generate`] wrote: reliable sets are
/// kept in memory only (`cluster up --no-store`).
pub fn drop_store(dir: &ClusterDir, topology: Topology) -> anyhow::Result<()> {
    for id in topology.nodes() {
        let path = dir.node_config(id);
        let text =
            fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        let Some(at) = text.find(STORE_TABLE) else {
            anyhow::bail!(
                "{} has no [store] table where one was written",
                path.display()
            );
        };
        write(&path, &text[..at + 1])?;
    }
    Ok(())
}

/// Why `cluster client-cert` wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum ClientCertError {
    /// The user's to fix (exit 2).
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Other(#[from] anyhow::Error),
}

/// Issue a client certificate of `role` with the CA of the cluster in `dir`, and write it into
/// `out` as the operator's credentials are laid out in `dir` (`ca.pem`, `client.pem`,
/// `client.key`, the key readable by its owner only), so that `--cert OUT` uses it. Refuses a
/// directory that holds client credentials already (the cluster directory itself among them:
/// the operator's certificate is never overwritten). Returns the three files.
pub fn write_client_cert(
    dir: &crate::ClusterDir,
    role: &cuberoute_daemon::roles::ClientRole,
    out: &std::path::Path,
) -> Result<[std::path::PathBuf; 3], ClientCertError> {
    use crate::launch::layout::{CLIENT_CA, CLIENT_CERT, CLIENT_KEY};
    use anyhow::Context;
    let usage = |m: String| ClientCertError::Usage(m);
    if !dir.is_cluster() {
        return Err(usage(format!(
            "{} holds no cluster (no manifest.toml): start one with `cuberoute cluster up`",
            dir.display()
        )));
    }
    let (ca_cert, ca_key) = (dir.ca_cert(), dir.ca_key());
    for file in [&ca_cert, &ca_key] {
        if !file.is_file() {
            return Err(usage(format!(
                "{} is missing: only the directory that holds the cluster's CA issues its certificates",
                file.display()
            )));
        }
    }
    let files = [CLIENT_CA, CLIENT_CERT, CLIENT_KEY].map(|f| out.join(f));
    if out.exists() && !out.is_dir() {
        return Err(usage(format!("--out {} is not a directory", out.display())));
    }
    if let Some(held) = files[1..].iter().find(|f| f.exists()) {
        return Err(usage(format!(
            "--out {}: {} exists already; choose another directory (a certificate is never overwritten)",
            out.display(),
            held.display()
        )));
    }
    let read = |path: &std::path::Path| {
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
    };
    let ca_pem = read(&ca_cert)?;
    let ca = crate::launch::certs::LoadedCa::from_pem(&ca_pem, &read(&ca_key)?).map_err(|e| {
        anyhow::anyhow!(
            "the cluster's CA ({}) does not load: {e}",
            ca_cert.display()
        )
    })?;
    let pem = ca
        .issue_role(role)
        .map_err(|e| anyhow::anyhow!("issuing the certificate: {e}"))?;
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    write(&files[0], &ca_pem)?;
    write(&files[1], &pem.cert)?;
    write_secret(&files[2], &pem.key)?;
    // What a client will check of it: signed by the cluster's CA, naming the role.
    let credentials = crate::launch::certs::client_credentials(
        &dir.clone().with_client(Some(out.to_path_buf())),
    )?;
    if credentials.identity != cuberoute_daemon::tls::Identity::Client(role.clone()) {
        return Err(anyhow::anyhow!(
            "the certificate written names {}, not {role}",
            credentials.identity
        )
        .into());
    }
    Ok(files)
}

pub(crate) fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// Write a private key readable by its owner only.
pub(crate) fn write_secret(path: &Path, text: &str) -> anyhow::Result<()> {
    write_secret_bytes(path, text.as_bytes())
}

fn write_secret_bytes(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let _ = fs::remove_file(path);
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    file.write_all(bytes)
        .with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seal_keys_of(key_seed: Option<u64>) -> Vec<Vec<u8>> {
        let tmp = tempfile::tempdir().unwrap();
        let dir = ClusterDir::new(tmp.path());
        let topology: Topology = "q:2".parse().unwrap();
        let addressing = Addressing::Simulated {
            ports: Ports::default(),
            containers: Vec::new(),
        };
        generate_with_keys(&dir, topology, &addressing, key_seed).unwrap();
        topology
            .nodes()
            .map(|id| fs::read(dir.node_dir(id).join(layout::NODE_SEAL_KEY)).unwrap())
            .collect()
    }

    /// A simulation replays its seed only if every sealed byte does: the same key seed gives
    /// the same keys (regression: keys from the system made one run in six of a seed differ).
    #[test]
    fn seeded_sealing_keys_replay_and_system_ones_do_not() {
        let seeded = seal_keys_of(Some(7));
        assert_eq!(seeded, seal_keys_of(Some(7)));
        assert_ne!(seeded, seal_keys_of(Some(8)));
        assert_ne!(seal_keys_of(None), seal_keys_of(None));
        let distinct: std::collections::BTreeSet<_> = seeded.iter().collect();
        assert_eq!(distinct.len(), seeded.len(), "every node its own key");
    }

    /// A generated node keeps a store; `--no-store` takes exactly that table out, and what is
    /// left still configures a daemon.
    #[test]
    fn a_generated_clusters_probes_are_paced_by_its_links() {
        let interval = |t: &str| liveness_interval(t.parse().unwrap());
        // The smallest clusters probe at the daemon's default...
        assert_eq!(interval("q:1"), Duration::from_millis(200));
        assert_eq!(interval("q:2"), Duration::from_millis(200));
        // (Q_3's 12 links: 480 ms, rounded up.)
        assert_eq!(interval("q:3"), Duration::from_millis(500));
        // ...large ones no more than CLUSTER_PROBES_PER_SECOND times a second in all.
        let t: Topology = "eh:4,5".parse().unwrap();
        assert_eq!(link_count(t), 2816);
        let each = interval("eh:4,5");
        assert!(2816.0 / each.as_secs_f64() <= f64::from(CLUSTER_PROBES_PER_SECOND));
        assert!(each.as_millis() % 100 == 0);
        // And the daemon takes what is written.
        let tmp = tempfile::tempdir().unwrap();
        let dir = ClusterDir::new(tmp.path());
        let t: Topology = "q:2".parse().unwrap();
        let addressing = Addressing::Simulated {
            ports: Ports::default(),
            containers: Vec::new(),
        };
        generate(&dir, t, &addressing).unwrap();
        let text = fs::read_to_string(dir.node_config(NodeId(1))).unwrap();
        assert!(text.contains("[liveness]\ninterval = \"200ms\""), "{text}");
        let config =
            cuberoute_daemon::config::NodeConfig::resolve(&cuberoute_daemon::config::DaemonArgs {
                config: Some(dir.node_config(NodeId(1))),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(config.liveness.interval, interval("q:2"));
        // `cluster up --liveness-interval` writes its own.
        set_liveness_interval(&dir, t, Duration::from_secs(2)).unwrap();
        let config =
            cuberoute_daemon::config::NodeConfig::resolve(&cuberoute_daemon::config::DaemonArgs {
                config: Some(dir.node_config(NodeId(3))),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(config.liveness.interval, Duration::from_secs(2));
        assert!(config.route_around, "sources route around by default");
        // `cluster up --no-route-around` turns that off, and keeps the interval.
        set_liveness(&dir, t, "route_around = false").unwrap();
        let config =
            cuberoute_daemon::config::NodeConfig::resolve(&cuberoute_daemon::config::DaemonArgs {
                config: Some(dir.node_config(NodeId(3))),
                ..Default::default()
            })
            .unwrap();
        assert!(!config.route_around);
        assert_eq!(config.liveness.interval, Duration::from_secs(2));
    }

    #[test]
    fn a_cluster_without_a_store_keeps_everything_else() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = ClusterDir::new(tmp.path());
        let topology: Topology = "q:2".parse().unwrap();
        let addressing = Addressing::Loopback {
            base: std::net::Ipv4Addr::new(127, 9, 9, 0),
            ports: Ports::default(),
            home: Vec::new(),
        };
        generate(&dir, topology, &addressing).unwrap();
        let with = fs::read_to_string(dir.node_config(NodeId(1))).unwrap();
        assert!(with.contains("[store]\npath = \"store.redb\""), "{with}");
        drop_store(&dir, topology).unwrap();
        let without = fs::read_to_string(dir.node_config(NodeId(1))).unwrap();
        assert!(!without.contains("[store]"), "{without}");
        assert!(with.starts_with(&without) && without.contains("[keys]"));
        let args = cuberoute_daemon::config::DaemonArgs {
            config: Some(dir.node_config(NodeId(1))),
            ..Default::default()
        };
        let config = cuberoute_daemon::config::NodeConfig::resolve(&args).unwrap();
        assert_eq!(config.store, None);
        assert!(
            drop_store(&dir, topology).is_err(),
            "no table to take out twice"
        );
    }
}
