//! What more than one command shows: the progress of a cluster's start and its summary once
//! up (`cluster up`, `demo`), a cluster's status table (`cluster status`, `demo`), a cluster
//! taken down (`cluster down`, `demo`). The commands share these instead of calling each other.

use crate::commands::{runtime, usage};
use cuberoute_cluster::launch::phases::Phases;
use cuberoute_cluster::launch::runner;
use cuberoute_cluster::launch::start::{self, Containers, Local, Note};
use cuberoute_cluster::launch::start_cpu::StartCpu;
use cuberoute_cluster::ops::cluster_client::{links_up, revoked};
use cuberoute_cluster::ops::ready::{self, Readiness};
use cuberoute_cluster::ops::up::{self, Up};
use cuberoute_cluster::{ClusterClient, ClusterDir};
use cuberoute_protocol::wire::control::NodeStatus;
use cuberoute_protocol::{NodeId, Topology};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::Write;
use std::time::Duration;

/// What a start says as it goes ([`Note`]): the network a `--netns` cluster made, the image
/// brought up to date.
pub fn note(note: Note) {
    match note {
        Note::Network { network, took } => println!(
            "network: {} (made in {:.2} s)",
            network.describe(),
            took.as_secs_f64()
        ),
        Note::RefreshingImage => eprintln!(
            "bringing the image {} up to date (cuberoute cluster image)",
            cuberoute_cluster::launch::docker::DEFAULT_IMAGE
        ),
        Note::ImageBuilt(built) => println!(
            "built {} in {:.0} s: {:.1} MB, FROM scratch",
            built.tags.join(" and "),
            built.took.as_secs_f64(),
            built.bytes as f64 / 1e6
        ),
    }
}

/// The progress bar of a readiness wait: link ends up of all, drawn from its first round on.
#[derive(Default)]
pub struct WaitBar(Option<ProgressBar>);

impl WaitBar {
    pub fn round(&mut self, round: &Readiness) {
        let bar = self.0.get_or_insert_with(|| {
            let bar = ProgressBar::new(round.link_ends as u64);
            bar.set_style(
                ProgressStyle::with_template(
                    "{spinner} {msg} {pos}/{len} link ends {wide_bar} {elapsed}",
                )
                .expect("a valid template"),
            );
            bar
        });
        bar.set_position(round.link_ends_up as u64);
        bar.set_message(if round.healthy {
            "linking"
        } else {
            "waiting for health, linking"
        });
    }

    /// The wait is over: cleared if the cluster is ready, else left as it stood.
    pub fn done(self, ready: bool) {
        if let Some(bar) = self.0 {
            if ready {
                bar.finish_and_clear();
            } else {
                bar.abandon();
            }
        }
    }
}

/// Wait, with a progress bar, until the cluster `spawned` is ready ([`up::wait_started`]).
fn wait(spawned: start::Spawned, timeout: Duration) -> anyhow::Result<Up> {
    let mut bar = WaitBar::default();
    let up = runtime()?.block_on(up::wait_started(spawned, timeout, &mut |round| {
        bar.round(round)
    }));
    bar.done(up.is_ok());
    up
}

/// Start the local cluster `local` and wait until every link is up, showing how it goes.
pub fn start_local(local: &Local, timeout: Duration) -> anyhow::Result<Up> {
    wait(start::spawn(local, &mut note)?, timeout)
}

/// Start the cluster of containers `containers` and wait until every container is healthy and
/// every link up, showing how it goes.
pub fn start_containers(containers: &Containers, timeout: Duration) -> anyhow::Result<Up> {
    wait(start::compose(containers, &mut note)?, timeout)
}

/// [`summary`] of a cluster `up` just started, of `what` (processes, containers): with where
/// the start's time went and what it cost the processors, for local processes.
pub fn up_summary(up: &Up, what: &str) -> anyhow::Result<()> {
    summary(
        &up.dir,
        up.topology,
        what,
        up.phases.total(),
        up.cpu.as_ref().map(|cpu| (&up.phases, cpu)),
    )
}

/// Print how to use a cluster that is up.
pub fn summary(
    dir: &ClusterDir,
    topology: Topology,
    what: &str,
    elapsed: Duration,
    phases: Option<(&Phases, &StartCpu)>,
) -> anyhow::Result<()> {
    let manifest = cuberoute_daemon::manifest::Manifest::load(&dir.manifest())?;
    let links: u64 = topology
        .nodes()
        .map(|v| u64::from(topology.degree(v)))
        .sum::<u64>()
        / 2;
    let first = &manifest.nodes[0];
    let last = &manifest.nodes[manifest.nodes.len() - 1];
    let host = |addr: &str| addr.rsplit_once(':').map_or(addr, |(h, _)| h).to_string();
    let port = |addr: &str| addr.rsplit_once(':').map_or("", |(_, p)| p).to_string();
    let d = dir.display();
    let far = topology
        .nodes()
        .max_by_key(|&v| topology.distance(first.id, v))
        .expect("a topology has nodes");
    let name = |v| topology.format_node(v);
    println!(
        "cluster {topology} is up in {:.1} s: {} {what}, {links} links, in {d}",
        elapsed.as_secs_f64(),
        topology.node_count()
    );
    if let Some((phases, cpu)) = phases {
        println!("  phases:  {}", phases.line());
        println!("  cpu:     {}", cpu.line());
    }
    println!(
        "  nodes at {} .. {} (link, control and metrics ports {}, {}, {})",
        host(&first.addr),
        host(&last.addr),
        port(&first.addr),
        port(&first.control),
        first.metrics.as_deref().map(port).unwrap_or_default(),
    );
    println!(
        "  send:    cuberoute send --dir {d} --from {} --to {} --message hello --wait",
        name(first.id),
        name(far)
    );
    println!("  recv:    cuberoute recv --dir {d} --node {}", name(far));
    println!("  status:  cuberoute cluster status --dir {d}");
    println!(
        "  logs:    cuberoute cluster logs --dir {d} {}",
        name(first.id)
    );
    println!("  down:    cuberoute cluster down --dir {d}");
    Ok(())
}

/// `cluster status`. Exits 1 if any node is down.
pub fn status(dir: &ClusterDir, json: bool) -> anyhow::Result<()> {
    let runtime = runtime()?;
    let _guard = runtime.enter();
    let cluster = ClusterClient::open(dir).map_err(|e| usage(format!("{e:#}")))?;
    let round = runtime.block_on(ready::check(&cluster))?;
    let (statuses, runners) = (round.statuses, round.runners);
    let runner_note = |id: NodeId| -> String {
        match &runners {
            Some(r) => r
                .nodes
                .get(&id)
                .map_or("not started".into(), |r| r.describe().to_string()),
            None => "cluster not running".into(),
        }
    };
    let topology = cluster.manifest.topology;
    let down = statuses.iter().filter(|(_, s)| s.is_err()).count();
    let mut out = std::io::stdout().lock();
    if json {
        let nodes: Vec<serde_json::Value> = statuses
            .iter()
            .map(|(id, s)| match s {
                Ok(s) => serde_json::json!({
                    "id": id.0, "up": true, "pid": s.pid, "uptime_ms": s.uptime_ms,
                    "links_up": s.links_up(), "degree": s.links.len(),
                    "input_queued": s.input_queued, "output_len": s.output_len,
                    "link_queued": s.links.iter().map(|l| l.queued).sum::<u64>(),
                    "runner": runner_note(*id), "counters": s.counters, "chaos": s.chaos,
                    "chaos_allowed": s.config.chaos_allowed,
                    "revocation_serial": s.revocation_serial,
                }),
                Err(e) => serde_json::json!({
                    "id": id.0, "up": false, "error": e, "runner": runner_note(*id),
                }),
            })
            .collect();
        let (up, total) = links_up(&statuses, &cluster.manifest);
        serde_json::to_writer(
            &mut out,
            &serde_json::json!({
                "topology": topology.to_string(), "nodes_up": statuses.len() - down,
                "nodes": nodes, "link_ends_up": up, "link_ends": total,
                "revoked": revoked(&statuses),
            }),
        )?;
        writeln!(out)?;
    } else {
        write_status_table(&mut out, topology, &statuses, runner_note)?;
        let revoked = revoked(&statuses);
        if !revoked.is_empty() {
            let names: Vec<String> = revoked.iter().map(|&n| topology.format_node(n)).collect();
            writeln!(
                out,
                "revoked: {} (their links are refused for good; see `cuberoute cluster revoke --list`)",
                names.join(", ")
            )?;
        }
    }
    cluster.close();
    if down > 0 {
        anyhow::bail!("{down} of {} nodes are down", statuses.len());
    }
    Ok(())
}

pub fn write_status_table(
    out: &mut impl Write,
    topology: Topology,
    statuses: &[(NodeId, Result<NodeStatus, String>)],
    runner_note: impl Fn(NodeId) -> String,
) -> std::io::Result<()> {
    let width = topology.format_node(NodeId(0)).len().max(4);
    writeln!(
        out,
        "{:<width$}  {:<5}  {:>5}  {:>9}  {:>9}  {:>9}  {:>7}  chaos",
        "node", "state", "links", "sent", "forwarded", "delivered", "dropped"
    )?;
    let mut totals = [0u64; 4];
    for (id, s) in statuses {
        let name = topology.format_node(*id);
        match s {
            Ok(s) => {
                let c = &s.counters;
                let row = [
                    c.packets_sent,
                    c.packets_forwarded,
                    c.packets_delivered,
                    c.dropped_total(),
                ];
                for (t, v) in totals.iter_mut().zip(row) {
                    *t += v;
                }
                writeln!(
                    out,
                    "{name:<width$}  {:<5}  {:>5}  {:>9}  {:>9}  {:>9}  {:>7}  {}",
                    "up",
                    format!("{}/{}", s.links_up(), s.links.len()),
                    row[0],
                    row[1],
                    row[2],
                    row[3],
                    // Whether the node takes fault injection (`chaos.allow`).
                    if s.config.chaos_allowed {
                        "allowed"
                    } else {
                        "refused"
                    }
                )?;
            }
            Err(e) => writeln!(out, "{name:<width$}  down   ({}; {e})", runner_note(*id))?,
        }
    }
    let up = statuses.iter().filter(|(_, s)| s.is_ok()).count();
    let chaos = statuses
        .iter()
        .filter(|(_, s)| s.as_ref().is_ok_and(|s| s.config.chaos_allowed))
        .count();
    writeln!(
        out,
        "{:<width$}  {up}/{} up   {:>9}  {:>9}  {:>9}  {:>7}  {chaos}/{up} allowed",
        "all",
        statuses.len(),
        totals[0],
        totals[1],
        totals[2],
        totals[3]
    )
}

/// `cluster down`.
pub fn down(dir: &ClusterDir, keep_volumes: bool) -> anyhow::Result<()> {
    println!("{}", runner::stop_keeping(dir, keep_volumes)?);
    Ok(())
}
