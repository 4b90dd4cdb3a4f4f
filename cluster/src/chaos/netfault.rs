//! Faults of the network itself between real nodes: loss and partitions from the kernel
//! (nftables rules in each node's network namespace), delay, jitter, reordering and duplication
//! from the daemons' own sockets (the kernel here has no netem: [`crate::ops::shaping`]).
//!
//! A cluster has a network of its own when each node has a namespace: `cluster up --netns`
//! ([`crate::launch::netns`]: `/var/run/netns/<name>`) or compose containers
//! (`/proc/<pid>/ns/net`). On loopback processes every link is one perfect interface: network
//! faults are refused there.
//!
//! Every fault acts on what a node sends (egress), so that each datagram meets it once per hop:
//! [`egress`] is the one place that says which node's egress a place touches, for the kernel's
//! rules and the daemons' shaping alike. Each namespace holds one table, `inet cuberoute`, with
//! a chain per kind (`loss`, `part`) that `chaos net --off` and `chaos heal` flush; the
//! namespace's removal (`cluster down`) removes the table with it.

use crate::launch::docker;
use crate::launch::layout::ClusterDir;
use crate::launch::netns;
use crate::launch::run_state::RunState;
use crate::launch::runner;
use crate::ops::cluster_client::ClusterClient;
use crate::ops::shaping::{self, ShapeRule};
use anyhow::Context;
use cuberoute_daemon::manifest::{Manifest, ManifestNode};
use cuberoute_protocol::{NodeId, Topology};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

/// What applies a kernel fault (loss, partition), as reports name it.
pub const KERNEL: &str = "kernel (nftables)";
/// What applies delay, jitter, reordering and duplication on real nodes, as reports name it.
pub const USER_SPACE: &str = "daemon socket (user space)";

/// Where a network fault applies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Place {
    /// Every link, both ways.
    All,
    /// Every link of one node, both ways.
    Node(NodeId),
    /// One link, both ways.
    Link(NodeId, NodeId),
}

impl Place {
    pub fn describe(&self, topology: Topology) -> String {
        match self {
            Place::All => "all links".into(),
            Place::Node(n) => format!("node {}", crate::ops::names::node(topology, *n)),
            Place::Link(a, b) => format!(
                "link {}-{}",
                crate::ops::names::node(topology, *a),
                crate::ops::names::node(topology, *b)
            ),
        }
    }
}

/// Whose datagrams a fault touches at one sender.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Targets {
    /// Those to every other node.
    Nodes,
    /// Those to these nodes.
    Some(BTreeSet<NodeId>),
}

/// For a fault at `place`: each sender whose egress it touches, and to whom. A datagram between
/// two nodes meets the fault once, at its sender.
pub fn egress(topology: Topology, place: &Place) -> BTreeMap<NodeId, Targets> {
    match place {
        Place::All => topology.nodes().map(|n| (n, Targets::Nodes)).collect(),
        Place::Node(n) => topology
            .neighbours(*n)
            .map(|m| (m, Targets::Some(BTreeSet::from([*n]))))
            .chain([(*n, Targets::Nodes)])
            .collect(),
        Place::Link(a, b) => BTreeMap::from([
            (*a, Targets::Some(BTreeSet::from([*b]))),
            (*b, Targets::Some(BTreeSet::from([*a]))),
        ]),
    }
}

/// A partition: the senders and whom they can no longer reach. Both ways unless `oneway`, in
/// which case only `group` loses the others.
pub fn partition_egress(
    topology: Topology,
    group: &BTreeSet<NodeId>,
    oneway: bool,
) -> BTreeMap<NodeId, Targets> {
    let others: BTreeSet<NodeId> = topology.nodes().filter(|n| !group.contains(n)).collect();
    let mut senders: BTreeMap<NodeId, Targets> = group
        .iter()
        .map(|&n| (n, Targets::Some(others.clone())))
        .collect();
    if !oneway {
        senders.extend(others.iter().map(|&n| (n, Targets::Some(group.clone()))));
    }
    senders
}

/// The two halves of the network across id bit `bit`: the nodes with that bit set.
pub fn half(topology: Topology, bit: u32) -> BTreeSet<NodeId> {
    topology.nodes().filter(|n| n.0 >> bit & 1 == 1).collect()
}

/// The links `links` cut: each end loses the other.
pub fn links_egress(links: &[(NodeId, NodeId)]) -> BTreeMap<NodeId, Targets> {
    let mut senders: BTreeMap<NodeId, BTreeSet<NodeId>> = BTreeMap::new();
    for &(a, b) in links {
        senders.entry(a).or_default().insert(b);
        senders.entry(b).or_default().insert(a);
    }
    senders
        .into_iter()
        .map(|(n, to)| (n, Targets::Some(to)))
        .collect()
}

/// What `chaos net` asks of the links at a place: any of loss (kernel), delay with jitter,
/// reordering and duplication (the daemons' sockets).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Impairment {
    /// Shares of the datagrams, 0 to 1.
    pub loss: f64,
    pub reorder: f64,
    pub duplicate: f64,
    pub delay: Duration,
    pub jitter: Duration,
}

/// One part of a fault as applied: what, and by which mechanism.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Applied {
    pub what: String,
    pub mechanism: &'static str,
}

/// Parts per million of a share.
fn ppm(share: f64) -> u32 {
    (share.clamp(0.0, 1.0) * 1e6).round() as u32
}

/// Whole microseconds of a delay, as a shaping rule takes them.
pub fn micros(d: Duration) -> u32 {
    d.as_micros().min(u128::from(u32::MAX)) as u32
}

impl Impairment {
    fn shapes(&self) -> bool {
        !self.delay.is_zero()
            || !self.jitter.is_zero()
            || self.reorder > 0.0
            || self.duplicate > 0.0
    }
}

/// Apply `impairment` at `place`: loss by the kernel, the rest by the daemons' sockets. Says
/// what each part was and what applied it.
pub async fn impair(
    network: &Network,
    client: &ClusterClient,
    place: &Place,
    impairment: &Impairment,
) -> anyhow::Result<Vec<Applied>> {
    let senders = egress(network.topology, place);
    let mut applied = Vec::new();
    if impairment.loss > 0.0 {
        network.add(Chain::Loss, &senders, ppm(impairment.loss))?;
        applied.push(Applied {
            what: format!("loss {}%", impairment.loss * 100.0),
            mechanism: KERNEL,
        });
    }
    if impairment.shapes() {
        // One request per distinct set of targets: every sender to all nodes, or each its own.
        let mut by_targets: BTreeMap<Vec<Ipv4Addr>, Vec<NodeId>> = BTreeMap::new();
        for (&n, targets) in &senders {
            by_targets
                .entry(network.target_addresses(targets))
                .or_default()
                .push(n);
        }
        for (to, nodes) in by_targets {
            let rule = ShapeRule {
                to: to.into_iter().map(IpAddr::V4).collect(),
                delay_us: micros(impairment.delay),
                jitter_us: micros(impairment.jitter),
                reorder_ppm: ppm(impairment.reorder),
                duplicate_ppm: ppm(impairment.duplicate),
            };
            shaping::shape(client, &nodes, rule).await?;
        }
        let mut parts = Vec::new();
        if !impairment.delay.is_zero() || !impairment.jitter.is_zero() {
            parts.push(format!(
                "delay {} ms ± {} ms",
                impairment.delay.as_secs_f64() * 1e3,
                impairment.jitter.as_secs_f64() * 1e3
            ));
        }
        if impairment.reorder > 0.0 {
            parts.push(format!("reorder {}%", impairment.reorder * 100.0));
        }
        if impairment.duplicate > 0.0 {
            parts.push(format!("duplicate {}%", impairment.duplicate * 100.0));
        }
        applied.push(Applied {
            what: parts.join(", "),
            mechanism: USER_SPACE,
        });
    }
    Ok(applied)
}

/// End every loss, delay, reordering and duplication (`chaos net --off`); partitions stay.
pub async fn clear(network: &Network, client: &ClusterClient) -> anyhow::Result<()> {
    network.flush(Chain::Loss)?;
    let nodes: Vec<NodeId> = client.manifest.nodes.iter().map(|n| n.id).collect();
    shaping::unshape(client, &nodes).await
}

/// End every network fault: loss, partitions, and the daemons' shaping (an interrupted run).
pub async fn remove_all(network: &Network, client: &ClusterClient) -> anyhow::Result<()> {
    let partitions = network.flush(Chain::Partition);
    clear(network, client).await.and(partitions)
}

/// The kind of kernel rule: each has a chain of its own, flushed on its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chain {
    /// Random loss (`chaos net --loss`).
    Loss,
    /// Everything dropped (`chaos partition`).
    Partition,
}

impl Chain {
    fn name(self) -> &'static str {
        match self {
            Chain::Loss => "loss",
            Chain::Partition => "part",
        }
    }
}

/// The address of every node of `manifest` (the host of its control address): what the daemons'
/// shaping matches datagrams to nodes by.
pub fn node_addresses(manifest: &Manifest) -> Vec<IpAddr> {
    manifest
        .nodes
        .iter()
        .filter_map(|n| node_address(n).ok().map(IpAddr::V4))
        .collect()
}

/// A node's address: the host of its control address.
fn node_address(node: &ManifestNode) -> anyhow::Result<Ipv4Addr> {
    let host = node
        .control
        .rsplit_once(':')
        .map_or(node.control.as_str(), |(h, _)| h);
    host.parse().with_context(|| {
        format!(
            "node {}: control address {} is not IPv4",
            node.id, node.control
        )
    })
}

/// Why a cluster cannot take network faults, as a usage error's text.
pub fn no_network_of_its_own(dir: &ClusterDir) -> String {
    format!(
        "the cluster in {} has no network of its own (its nodes share loopback): network faults \
         need a cluster started with `cuberoute cluster up --netns` (as root) or as compose \
         containers (`cluster up --docker`)",
        dir.display()
    )
}

/// A running cluster's nodes with a network of their own: each one's address and namespace.
pub struct Network {
    pub topology: Topology,
    nodes: BTreeMap<NodeId, NodeNet>,
}

struct NodeNet {
    addr: Ipv4Addr,
    /// The network namespace file to enter.
    namespace: PathBuf,
}

impl Network {
    /// The network of the cluster in `dir`; `Ok(None)` if its nodes have none of their own
    /// (loopback processes), an error if it is not running.
    pub fn open(dir: &ClusterDir) -> anyhow::Result<Option<Network>> {
        let state = runner::find(dir)?.ok_or_else(|| runner::not_running(dir))?;
        let manifest = Manifest::load(&dir.manifest())?;
        let namespaces: BTreeMap<NodeId, PathBuf> = match &state {
            RunState::Compose { run, .. } => docker::node_pids(run)?
                .into_iter()
                .map(|(id, pid)| (id, PathBuf::from(format!("/proc/{pid}/ns/net"))))
                .collect(),
            RunState::Processes(p) if p.netns.is_some() => {
                let mut namespaces = BTreeMap::new();
                for node in &manifest.nodes {
                    if let Some(ns) = netns::node_namespace(dir, node.id)? {
                        namespaces.insert(node.id, PathBuf::from("/var/run/netns").join(ns));
                    }
                }
                namespaces
            }
            RunState::Processes(_) | RunState::Swarm { .. } => return Ok(None),
        };
        let mut nodes = BTreeMap::new();
        for node in &manifest.nodes {
            let addr = node_address(node)?;

            // A node whose container is not running has no namespace now: it takes no rule.
            if let Some(namespace) = namespaces.get(&node.id) {
                nodes.insert(
                    node.id,
                    NodeNet {
                        addr,
                        namespace: namespace.clone(),
                    },
                );
            }
        }
        Ok(Some(Network {
            topology: manifest.topology,
            nodes,
        }))
    }

    /// The address of `node`, if it runs.
    pub fn address(&self, node: NodeId) -> Option<Ipv4Addr> {
        self.nodes.get(&node).map(|n| n.addr)
    }

    /// Every running node's address.
    pub fn addresses(&self) -> Vec<Ipv4Addr> {
        self.nodes.values().map(|n| n.addr).collect()
    }

    /// The addresses `targets` names.
    pub fn target_addresses(&self, targets: &Targets) -> Vec<Ipv4Addr> {
        match targets {
            Targets::Nodes => self.addresses(),
            Targets::Some(nodes) => nodes.iter().filter_map(|n| self.address(*n)).collect(),
        }
    }

    /// Add to `chain` of each sender a rule dropping its datagrams to its targets, all of them
    /// (`drop_ppm` = 1,000,000) or at random that share.
    pub fn add(
        &self,
        chain: Chain,
        senders: &BTreeMap<NodeId, Targets>,
        drop_ppm: u32,
    ) -> anyhow::Result<()> {
        let random = if drop_ppm >= 1_000_000 {
            String::new()
        } else {
            format!("numgen random mod 1000000 < {drop_ppm} ")
        };
        let scripts = senders
            .iter()
            .filter(|(n, _)| self.nodes.contains_key(n))
            .map(|(&n, targets)| {
                let to = match targets {
                    Targets::Nodes => "@nodes".to_string(),
                    Targets::Some(set) => {
                        let addrs: Vec<String> = set
                            .iter()
                            .filter_map(|m| self.address(*m))
                            .map(|a| a.to_string())
                            .collect();
                        if addrs.is_empty() {
                            return (n, String::new());
                        }
                        format!("{{ {} }}", addrs.join(", "))
                    }
                };
                let rule = format!(
                    "add rule inet cuberoute {} ip daddr {to} {random}counter drop\n",
                    chain.name()
                );
                (n, self.table() + &rule)
            })
            .filter(|(_, script)| !script.is_empty())
            .collect();
        self.run_each(scripts)
    }

    /// Remove every rule of `chain` (of every running node).
    pub fn flush(&self, chain: Chain) -> anyhow::Result<()> {
        let scripts = self
            .nodes
            .keys()
            .map(|&n| {
                let flush = format!("flush chain inet cuberoute {}\n", chain.name());
                (n, self.table() + &flush)
            })
            .collect();
        self.run_each(scripts)
    }

    /// Datagrams the kernel's rules of `chain` dropped, over every running node.
    pub fn dropped(&self, chain: Chain) -> anyhow::Result<u64> {
        let nodes: Vec<NodeId> = self.nodes.keys().copied().collect();
        let counts = self.each(&nodes, |n| {
            let out = nft(&self.nodes[&n].namespace)
                .args(["list", "chain", "inet", "cuberoute", chain.name()])
                .output()?;
            // No table yet: nothing dropped.
            Ok(if out.status.success() {
                String::from_utf8_lossy(&out.stdout)
                    .split("packets ")
                    .skip(1)
                    .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
                    .sum::<u64>()
            } else {
                0
            })
        })?;
        Ok(counts.into_iter().sum())
    }

    /// The table, its set of node addresses and its chains (created if missing: `add` leaves
    /// what exists as it is).
    fn table(&self) -> String {
        let addrs: Vec<String> = self.addresses().iter().map(|a| a.to_string()).collect();
        format!(
            "add table inet cuberoute\n\
             add set inet cuberoute nodes {{ type ipv4_addr; }}\n\
             add element inet cuberoute nodes {{ {} }}\n\
             add chain inet cuberoute loss\n\
             add chain inet cuberoute part\n\
             add chain inet cuberoute output {{ type filter hook output priority 0; policy accept; }}\n\
             flush chain inet cuberoute output\n\
             add rule inet cuberoute output jump part\n\
             add rule inet cuberoute output jump loss\n",
            addrs.join(", ")
        )
    }

    /// Run each node's script in its namespace.
    fn run_each(&self, scripts: Vec<(NodeId, String)>) -> anyhow::Result<()> {
        let nodes: Vec<NodeId> = scripts.iter().map(|(n, _)| *n).collect();
        let scripts: BTreeMap<NodeId, String> = scripts.into_iter().collect();
        self.each(&nodes, |n| apply(&self.nodes[&n].namespace, &scripts[&n]))
            .map(drop)
    }

    /// `f` for each of `nodes`, a few at a time (each starts a process); the first error, named
    /// by its node.
    fn each<T: Send>(
        &self,
        nodes: &[NodeId],
        f: impl Fn(NodeId) -> anyhow::Result<T> + Sync,
    ) -> anyhow::Result<Vec<T>> {
        const AT_ONCE: usize = 8;
        let mut all = Vec::with_capacity(nodes.len());
        for batch in nodes.chunks(AT_ONCE) {
            let results: Vec<anyhow::Result<T>> = std::thread::scope(|scope| {
                let handles: Vec<_> = batch
                    .iter()
                    .map(|&n| {
                        let f = &f;
                        scope.spawn(move || {
                            f(n).with_context(|| {
                                format!("node {}", crate::ops::names::node(self.topology, n))
                            })
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().expect("a thread running nft panicked"))
                    .collect()
            });
            for r in results {
                all.push(r?);
            }
        }
        Ok(all)
    }
}

/// `nft` inside the network namespace `namespace`.
fn nft(namespace: &std::path::Path) -> Command {
    let mut command = Command::new("nsenter");
    command
        .arg(format!("--net={}", namespace.display()))
        .arg("nft");
    command
}

/// Run an nft script in a namespace.
fn apply(namespace: &std::path::Path, script: &str) -> anyhow::Result<()> {
    let mut child = nft(namespace)
        .args(["-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("starting nsenter nft (util-linux and nftables are needed)")?;
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(script.as_bytes())?;
    let out = child.wait_with_output()?;
    anyhow::ensure!(
        out.status.success(),
        "nft in {}: {}",
        namespace.display(),
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eh22() -> Topology {
        "eh:2,2".parse().unwrap()
    }

    #[test]
    fn every_link_meets_a_fault_at_all_links_once_each_way() {
        let t = eh22();
        let senders = egress(t, &Place::All);
        assert_eq!(senders.len() as u64, t.node_count());
        assert!(senders.values().all(|s| *s == Targets::Nodes));
    }

    #[test]
    fn a_node_fault_touches_its_links_both_ways_and_no_other() {
        let t = eh22();
        let n = t.nodes().nth(5).unwrap();
        let senders = egress(t, &Place::Node(n));
        assert_eq!(senders[&n], Targets::Nodes);
        for m in t.neighbours(n) {
            assert_eq!(senders[&m], Targets::Some(BTreeSet::from([n])));
        }
        assert_eq!(senders.len(), 1 + t.neighbours(n).count());
    }

    #[test]
    fn a_link_fault_touches_its_two_ends() {
        let t = eh22();
        let a = t.nodes().next().unwrap();
        let b = t.neighbours(a).next().unwrap();
        let senders = egress(t, &Place::Link(a, b));
        assert_eq!(senders.len(), 2);
        assert_eq!(senders[&a], Targets::Some(BTreeSet::from([b])));
    }

    #[test]
    fn a_partition_both_ways_cuts_every_pair_across_and_oneway_only_one_side() {
        let t = eh22();
        let group = half(t, 0);
        assert!(!group.is_empty() && (group.len() as u64) < t.node_count());
        let both = partition_egress(t, &group, false);
        assert_eq!(both.len() as u64, t.node_count());
        for (n, targets) in &both {
            let Targets::Some(to) = targets else {
                panic!("a partition names its targets")
            };
            assert!(to.iter().all(|m| group.contains(m) != group.contains(n)));
        }
        let oneway = partition_egress(t, &group, true);
        assert!(oneway.keys().all(|n| group.contains(n)));
    }

    #[test]
    fn cut_links_lose_each_other() {
        let (a, b, c) = (NodeId(0), NodeId(1), NodeId(2));
        let senders = links_egress(&[(a, b), (a, c)]);
        assert_eq!(senders[&a], Targets::Some(BTreeSet::from([b, c])));
        assert_eq!(senders[&c], Targets::Some(BTreeSet::from([a])));
    }
}
