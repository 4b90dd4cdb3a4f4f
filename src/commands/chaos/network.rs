//! `cuberoute chaos net | partition | heal`: faults of the network itself on a cluster whose
//! nodes have a network of their own (`cluster up --netns`, or compose containers). What applies
//! each part is `cuberoute_cluster::chaos::netfault`'s decision; this parses, calls and prints.

use crate::commands::args::{ClientArg, DirArg};
use crate::commands::{parse_node, parse_set, runtime, usage};
use crate::print;
use cuberoute_cluster::chaos::netfault::{self, Chain, Impairment, Network, Place};
use cuberoute_cluster::chaos::redundancy::{self, StudyConfig};
use cuberoute_cluster::chaos::scenario::Runners;
use cuberoute_cluster::{ClusterClient, ClusterDir};
use cuberoute_protocol::wire::control::{Fault, Request, SendSet};
use cuberoute_protocol::{NodeId, Topology};
use std::collections::BTreeSet;
use std::time::Duration;

/// The longest delay or jitter taken: anything longer is a mistake, not a network.
const MAX_DELAY: Duration = Duration::from_secs(10);

#[derive(clap::Args, Debug)]
pub struct NetArgs {
    #[command(flatten)]
    pub dir: ClientArg,
    /// Every link of this node, both ways.
    #[arg(long, conflicts_with_all = ["link", "all", "off"])]
    pub node: Option<String>,
    /// This link (A-B), both ways.
    #[arg(long, conflicts_with_all = ["all", "off"])]
    pub link: Option<String>,
    /// Every link.
    #[arg(long, conflicts_with = "off")]
    pub all: bool,
    /// Drop this share of the datagrams (`5%`), by the kernel.
    #[arg(long, value_parser = percent)]
    pub loss: Option<f64>,
    /// Hold every datagram this long (`10ms`), in the daemons' sockets.
    #[arg(long, value_parser = delay)]
    pub delay: Option<Duration>,
    /// ...give or take up to this much, uniformly (`5ms`).
    #[arg(long, value_parser = delay)]
    pub jitter: Option<Duration>,
    /// Hold back this share of the datagrams so that later ones overtake them.
    #[arg(long, value_parser = percent)]
    pub reorder: Option<f64>,
    /// Send this share of the datagrams twice.
    #[arg(long, value_parser = percent)]
    pub duplicate: Option<f64>,
    /// End every loss, delay, reordering and duplication (partitions stay: `chaos heal`).
    #[arg(long)]
    pub off: bool,
}

/// A partition is the kernel's (nftables), not the daemons': no client certificate is used.
#[derive(clap::Args, Debug)]
pub struct PartitionArgs {
    #[command(flatten)]
    pub dir: DirArg,
    /// Split the network across this id bit: the nodes with it set lose the others.
    #[arg(long, required_unless_present = "nodes", conflicts_with = "nodes")]
    pub bit: Option<u32>,
    /// These nodes (comma-separated) lose the others.
    #[arg(long)]
    pub nodes: Option<String>,
    /// Only what the group sends is dropped; the others still reach it.
    #[arg(long)]
    pub oneway: bool,
}

#[derive(clap::Args, Debug)]
pub struct StudyArgs {
    #[command(flatten)]
    pub dir: ClientArg,
    /// Sets per cell (a condition and a way of sending).
    #[arg(long, default_value_t = 2000)]
    pub sets: usize,
    /// Sets per second.
    #[arg(long, default_value_t = 100.0)]
    pub rate: f64,
    /// How long each set is waited for (a reliable set is kept by its source as long).
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub wait: Duration,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// The losses, each a condition on every link (comma-separated).
    #[arg(long, default_value = "1%,5%", value_delimiter = ',', value_parser = percent)]
    pub losses: Vec<f64>,
    /// The delay condition on every link (`0s`: none)...
    #[arg(long, default_value = "10ms", value_parser = delay)]
    pub delay: Duration,
    /// ...give or take up to this much.
    #[arg(long, default_value = "5ms", value_parser = delay)]
    pub jitter: Duration,
    /// The table as one JSON object.
    #[arg(long)]
    pub json: bool,
}

impl StudyArgs {
    /// The study's conditions and sending, or why these values make none.
    pub fn config(&self) -> anyhow::Result<StudyConfig> {
        if !(self.rate > 0.0 && self.rate <= 10_000.0) {
            return Err(usage(format!(
                "--rate {} must be above 0 and at most 10000",
                self.rate
            )));
        }
        if self.sets == 0 || self.sets > 1_000_000 {
            return Err(usage("--sets must be from 1 to 1,000,000"));
        }
        Ok(StudyConfig {
            conditions: redundancy::conditions(&self.losses, self.delay, self.jitter),
            sets: self.sets,
            rate: self.rate,
            wait: self.wait,
            seed: self.seed,
        })
    }
}

pub fn study(args: &StudyArgs) -> anyhow::Result<()> {
    let dir = args.dir.checked()?;
    let config = args.config()?;
    let runners = Runners::open(&dir).map_err(|e| usage(format!("{e:#}")))?;
    if runners.network.is_none() {
        return Err(usage(netfault::no_network_of_its_own(&dir)));
    }
    let runtime = runtime()?;
    let _guard = runtime.enter();
    let client = ClusterClient::open(&dir).map_err(|e| usage(format!("{e:#}")))?;
    // The study sends from every node and shapes their sockets: role chaos, checked first.
    let nodes: Vec<NodeId> = client.manifest.nodes.iter().map(|n| n.id).collect();
    let any_send = Request::Send(SendSet {
        request: cuberoute_protocol::SendRequest::to(nodes[nodes.len() - 1]),
        payload: Vec::new(),
        trace: false,
        mode: Default::default(),
        deadline_ms: 0,
        clear: false,
    });
    client
        .allowed(&nodes, &[Request::Inject(Fault::Unshape), any_send])
        .map_err(|line| anyhow::anyhow!(line))?;
    let cells = runtime.block_on(redundancy::run(&client, &runners, &config));
    client.close();
    let cells = cells?;
    if args.json {
        println!(
            "{}",
            serde_json::json!({"topology": client.manifest.topology.to_string(), "cells": cells})
        );
    } else {
        print::print_study(&cells);
    }
    Ok(())
}

/// `5%`, `5` or `0.5%`: a share from 0 to 100 percent.
fn percent(text: &str) -> Result<f64, String> {
    let number = text.trim().trim_end_matches('%');
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a percentage (write 5% or 0.5)"))?;
    if !(0.0..=100.0).contains(&value) {
        return Err(format!("{text:?} is not between 0% and 100%"));
    }
    Ok(value / 100.0)
}

/// A delay or jitter: a duration of at most [`MAX_DELAY`].
fn delay(text: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(text.trim()).map_err(|e| format!("{text:?}: {e}"))?;
    if d > MAX_DELAY {
        return Err(format!(
            "{text:?} is longer than {}: not a network's delay",
            humantime::format_duration(MAX_DELAY)
        ));
    }
    Ok(d)
}

/// The network of the cluster in `dir`, or a usage error if it has none of its own.
fn network(dir: &ClusterDir) -> anyhow::Result<Network> {
    Network::open(dir)
        .map_err(|e| usage(format!("{e:#}")))?
        .ok_or_else(|| usage(netfault::no_network_of_its_own(dir)))
}

fn parse_link(topology: Topology, text: &str) -> anyhow::Result<(NodeId, NodeId)> {
    let (a, b) = text
        .split_once('-')
        .ok_or_else(|| usage(format!("--link {text:?} is not A-B")))?;
    let (a, b) = (parse_node(topology, a)?, parse_node(topology, b)?);
    if !topology.is_adjacent(a, b) {
        return Err(usage(format!(
            "{a} and {b} are not neighbours: there is no link {text}"
        )));
    }
    Ok((a, b))
}

pub fn net(args: &NetArgs) -> anyhow::Result<()> {
    let dir = args.dir.checked()?;
    let shaping = [args.loss, args.reorder, args.duplicate]
        .iter()
        .any(Option::is_some)
        || args.delay.is_some()
        || args.jitter.is_some();
    if args.off && shaping {
        return Err(usage("--off takes no fault: it ends them all"));
    }
    if !args.off && !shaping {
        return Err(usage(
            "say what to do: --loss, --delay [--jitter], --reorder, --duplicate, or --off",
        ));
    }
    if args.jitter.is_some() && args.delay.is_none() {
        return Err(usage("--jitter needs --delay"));
    }
    if !args.off && args.node.is_none() && args.link.is_none() && !args.all {
        return Err(usage("say where: --node N, --link A-B or --all"));
    }
    let network = network(&dir)?;
    let topology = network.topology;
    let runtime = runtime()?;
    let _guard = runtime.enter();
    let client = ClusterClient::open(&dir).map_err(|e| usage(format!("{e:#}")))?;
    // Delay, jitter, reordering and duplication are the daemons' (role chaos), and so is
    // ending them; loss is the kernel's, whoever may change its rules.
    let in_daemons = args.off
        || args.delay.is_some()
        || args.jitter.is_some()
        || args.reorder.is_some()
        || args.duplicate.is_some();
    if in_daemons {
        let nodes: Vec<NodeId> = client.manifest.nodes.iter().map(|n| n.id).collect();
        client
            .allowed(&nodes, &[Request::Inject(Fault::Unshape)])
            .map_err(|line| anyhow::anyhow!(line))?;
    }
    if args.off {
        runtime.block_on(netfault::clear(&network, &client))?;
        client.close();
        println!("network: no loss, delay, reordering or duplication on any link");
        return Ok(());
    }
    let place = match (&args.node, &args.link) {
        (Some(node), _) => Place::Node(parse_node(topology, node)?),
        (_, Some(link)) => {
            let (a, b) = parse_link(topology, link)?;
            Place::Link(a, b)
        }
        _ => Place::All,
    };
    let impairment = Impairment {
        loss: args.loss.unwrap_or(0.0),
        reorder: args.reorder.unwrap_or(0.0),
        duplicate: args.duplicate.unwrap_or(0.0),
        delay: args.delay.unwrap_or_default(),
        jitter: args.jitter.unwrap_or_default(),
    };
    let applied = runtime.block_on(netfault::impair(&network, &client, &place, &impairment))?;
    client.close();
    for part in applied {
        println!(
            "{}: {} by {}",
            place.describe(topology),
            part.what,
            part.mechanism
        );
    }
    Ok(())
}

pub fn partition(args: &PartitionArgs) -> anyhow::Result<()> {
    let dir = args.dir.cluster();
    let network = network(&dir)?;
    let topology = network.topology;
    let (group, named): (BTreeSet<NodeId>, String) = match (&args.nodes, args.bit) {
        (Some(text), _) => {
            let group: BTreeSet<NodeId> =
                parse_set(topology, text, "--nodes")?.into_iter().collect();
            let n = group.len();
            (group, format!("{n} nodes"))
        }
        (None, Some(bit)) => {
            let group = netfault::half(topology, bit);
            (group, format!("the nodes with id bit {bit} set"))
        }
        (None, None) => return Err(usage("say which: --bit B or --nodes A,B,...")),
    };
    if group.is_empty() || group.len() as u64 == topology.node_count() {
        return Err(usage(format!(
            "{named} are {} of the {} nodes: a partition needs nodes on both sides",
            group.len(),
            topology.node_count()
        )));
    }
    let senders = netfault::partition_egress(topology, &group, args.oneway);
    network.add(Chain::Partition, &senders, 1_000_000)?;
    println!(
        "partition: {named} ({} of {}) {} the others, by {}",
        group.len(),
        topology.node_count(),
        if args.oneway {
            "can no longer reach"
        } else {
            "cut off from"
        },
        netfault::KERNEL
    );
    Ok(())
}

/// `chaos heal` without a link: every partition ends.
pub fn heal_partitions(dir: &ClusterDir) -> anyhow::Result<()> {
    network(dir)?.flush(Chain::Partition)?;
    println!("partition: none (every node reaches every neighbour again)");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_are_shares_from_0_to_100() {
        assert_eq!(percent("5%"), Ok(0.05));
        assert_eq!(percent("0.5"), Ok(0.005));
        assert_eq!(percent("100%"), Ok(1.0));
        assert!(percent("101%").is_err());
        assert!(percent("-1%").is_err());
        assert!(percent("five").is_err());
    }

    #[test]
    fn delays_longer_than_ten_seconds_are_refused() {
        assert_eq!(delay("10ms"), Ok(Duration::from_millis(10)));
        assert!(delay("11s").is_err());
        assert!(delay("-5ms").is_err());
    }
}
