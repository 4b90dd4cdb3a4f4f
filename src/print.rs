//! What more than one command shows: the progress of a cluster's start and its summary once
//! up (`cluster up`, `demo`, `bench`), a cluster's status table (`cluster status`, `demo`), a
//! cluster taken down (`cluster down`, `demo`), a set's delivery report (`send`, `demo`), a
//! chaos run's report (`chaos run`, `sim`) and a redundancy study's table (`chaos study`,
//! `sim --study`). The commands share these instead of calling each other.

use crate::commands::{runtime, usage};
use cuberoute_cluster::chaos;
use cuberoute_cluster::chaos::redundancy::Cell;
use cuberoute_cluster::launch::hosting::NodesPerProcess;
use cuberoute_cluster::launch::phases::Phases;
use cuberoute_cluster::launch::runner;
use cuberoute_cluster::launch::start::{self, Containers, Local, Note};
use cuberoute_cluster::launch::start_cpu::StartCpu;
use cuberoute_cluster::ops::cluster_client::{links_up, revoked};
use cuberoute_cluster::ops::ready::{self, Progress};
use cuberoute_cluster::ops::traffic::{Destinations, SendReport};
use cuberoute_cluster::ops::up::{self, Up};
use cuberoute_cluster::{ClusterClient, ClusterDir};
use cuberoute_protocol::wire::control::NodeStatus;
use cuberoute_protocol::{NodeId, Topology};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::Write;
use std::time::Duration;

pub use cuberoute_cluster::ops::names::{name_nodes_numerically, node};

/// Path (and copy) indices as every command numbers them, from 1: `1, 3`.
pub fn path_numbers(indices: &[u8]) -> String {
    let numbers: Vec<String> = indices
        .iter()
        .map(|i| (u32::from(*i) + 1).to_string())
        .collect();
    numbers.join(", ")
}

/// `n` and its noun, singular for one: `1 hop`, `2 hops` (the noun's plural takes an s).
pub fn count(n: impl Into<u64>, noun: &str) -> String {
    match n.into() {
        1 => format!("1 {noun}"),
        n => format!("{n} {noun}s"),
    }
}

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
    pub fn round(&mut self, round: &Progress) {
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
    up_banner(up, what)?;
    commands(&up.dir, up.topology, None)
}

/// What a cluster's nodes run in, for [`up_summary`]: `runners` (each one node), or the nodes
/// with up to N a `runner` (`--nodes-per-process`, `--nodes-per-container`).
pub fn hosted(per: NodesPerProcess, runner: &str, runners: &str) -> String {
    match per {
        NodesPerProcess::Count(1) => runners.to_string(),
        NodesPerProcess::Count(n) => format!("nodes, up to {n} per {runner}"),
        NodesPerProcess::Auto => format!("nodes, a {runner} per core"),
    }
}

/// What came up ([`summary`]), without the commands to use it.
pub fn up_banner(up: &Up, what: &str) -> anyhow::Result<()> {
    summary(
        &up.dir,
        up.topology,
        what,
        up.phases.total(),
        up.cpu.as_ref().map(|cpu| (&up.phases, cpu)),
    )
}

/// Print what came up: the cluster, its phases and its nodes' addresses.
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
    Ok(())
}

/// Print the commands that use a cluster that is up: a send from its first node to `pair`'s
/// other end (by default the farthest from it), and the rest.
pub fn commands(
    dir: &ClusterDir,
    topology: Topology,
    pair: Option<(NodeId, NodeId)>,
) -> anyhow::Result<()> {
    let manifest = cuberoute_daemon::manifest::Manifest::load(&dir.manifest())?;
    let first = manifest.nodes[0].id;
    let (from, far) = pair.unwrap_or_else(|| {
        let far = topology
            .nodes()
            .max_by_key(|&v| topology.distance(first, v))
            .expect("a topology has nodes");
        (first, far)
    });
    let name = |v| node(topology, v);
    let d = dir.display();
    println!(
        "  send:    cuberoute send --dir {d} --from {} --to {} --message hello --wait",
        name(from),
        name(far)
    );
    println!("  recv:    cuberoute recv --dir {d} --node {}", name(far));
    println!("  status:  cuberoute cluster status --dir {d}");
    println!(
        "  logs:    cuberoute cluster logs --dir {d} --node {}",
        name(from)
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
                    "revocation_serial": s.revocation_serial, "around": s.around,
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
            let names: Vec<String> = revoked.iter().map(|&n| node(topology, n)).collect();
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
    let width = node(topology, NodeId(0)).len().max(4);
    writeln!(
        out,
        "{:<width$}  {:<5}  {:>5}  {:>9}  {:>9}  {:>9}  {:>7}  chaos",
        "node", "state", "links", "sent", "forwarded", "delivered", "dropped"
    )?;
    let mut totals = [0u64; 4];
    for (id, s) in statuses {
        let name = node(topology, *id);
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

/// The human-readable delivery report.
pub fn write_report(
    out: &mut impl Write,
    topology: Topology,
    report: &SendReport,
    waited: bool,
) -> std::io::Result<()> {
    let name = |v: u64| node(topology, cuberoute_protocol::NodeId(v));
    let to = match &report.to {
        Destinations::One(v) => name(*v),
        Destinations::Many(vs) => vs.iter().map(|&v| name(v)).collect::<Vec<_>>().join(","),
    };
    if !report.mode.is_plain() {
        return write_mode_report(out, report, waited, &name(report.from), &to);
    }
    if !waited {
        return writeln!(
            out,
            "set {} from {} to {} accepted: {} packets on {} disjoint paths",
            report.seq,
            name(report.from),
            to,
            report.k,
            report.k
        );
    }
    writeln!(
        out,
        "set {} from {} to {}: {} of {} copies delivered",
        report.seq,
        name(report.from),
        to,
        report.copies_delivered(),
        report.k
    )?;
    for copy in &report.copies {
        match (&copy.path, copy.hops, copy.latency_us) {
            (path, Some(hops), Some(latency)) => {
                let path = path.as_ref().map_or(String::new(), |p| {
                    p.iter().map(|&v| name(v)).collect::<Vec<_>>().join(" ")
                });
                let to = copy
                    .to
                    .map_or(String::new(), |v| format!(" to {}", name(v)));
                writeln!(
                    out,
                    "  copy {}/{}{to}: {:>7}, {:>7} µs  {path}",
                    u32::from(copy.index) + 1,
                    report.k,
                    count(hops, "hop"),
                    latency
                )?;
            }
            _ => {
                let to = copy
                    .to
                    .map_or(String::new(), |v| format!(" to {}", name(v)));
                writeln!(
                    out,
                    "  copy {}/{}{to}: NOT delivered",
                    u32::from(copy.index) + 1,
                    report.k
                )?
            }
        }
    }
    Ok(())
}

/// The report of a set in a delivery mode: one payload, rebuilt from the k pieces.
fn write_mode_report(
    out: &mut impl Write,
    report: &SendReport,
    waited: bool,
    from: &str,
    to: &str,
) -> std::io::Result<()> {
    let head = format!(
        "set {} from {from} to {to} ({}): {} pieces on {} disjoint paths, {} bytes on the wire for {} of payload ({} as plain copies)",
        report.seq,
        report.mode,
        report.k,
        report.k,
        report.wire_bytes,
        report.payload_bytes,
        report.payload_bytes * u64::from(report.k),
    );
    writeln!(out, "{head}")?;
    if !waited {
        return Ok(());
    }
    match report.deliveries.first() {
        Some(d) => writeln!(
            out,
            "  delivered once, whole: {} µs, completed by the piece on path {}",
            d.latency_us, d.index
        )?,
        None => writeln!(out, "  NOT delivered")?,
    }
    if !report.rejected_paths.is_empty() {
        writeln!(
            out,
            "  rejected as forged or misshapen: the pieces of paths {}",
            path_numbers(&report.rejected_paths)
        )?;
    }
    match (report.attempts, report.acked) {
        (Some(n), Some(true)) => writeln!(out, "  acknowledged after {}", count(n, "attempt")),
        (Some(n), _) => writeln!(out, "  NOT acknowledged after {}", count(n, "attempt")),
        _ => Ok(()),
    }
}

/// The verdict of a `crash-ends` run.
fn write_ends(
    out: &mut impl Write,
    delivery: &str,
    e: &cuberoute_cluster::chaos::ends::EndsReport,
) -> std::io::Result<()> {
    writeln!(
        out,
        "  {} kills and {} restarts of sources and destinations; delivery {delivery}",
        e.kills, e.restarts
    )?;
    writeln!(
        out,
        "  sends {}: accepted {}, not accepted {} (source down or killed before it answered; {} of those arrived all the same)",
        e.sends, e.accepted, e.not_accepted, e.taken_not_accepted
    )?;
    writeln!(
        out,
        "  accepted and taken by a consuming client: {}; accepted_lost {}; acked_lost {} (of {} acknowledged); duplicates_to_client {}; wrong payloads {}",
        e.taken, e.accepted_lost, e.acked_lost, e.acked, e.duplicates_to_client, e.wrong_to_client
    )?;
    if e.expired + e.unsettled > 0 {
        writeln!(
            out,
            "  reliable sets expired at their source: {}; not known to their source (it restarted): {}",
            e.expired, e.unsettled
        )?;
    }
    writeln!(
        out,
        "  read from the store on {} nodes, from the output buffer on {}",
        e.nodes_consumed_from_store, e.nodes_read_from_output
    )?;
    if !e.lost.is_empty() {
        writeln!(
            out,
            "  the sets lost, one by one (the first 20): `ends.lost` in the JSON report (--json, or --report DIR)"
        )?;
    }
    Ok(())
}

/// A chaos run's report as text: a summary of at most 30 lines whatever the run held (each kind
/// of fault on one line; the lists are in the JSON report).
pub fn print_report(r: &chaos::report::Report) {
    let mut out = Vec::new();
    write_chaos_report(&mut out, r).expect("writing to memory");
    print!("{}", String::from_utf8_lossy(&out));
}

fn write_chaos_report(out: &mut impl Write, r: &chaos::report::Report) -> std::io::Result<()> {
    let pct = |a: u64, b: u64| {
        if b == 0 {
            100.0
        } else {
            100.0 * a as f64 / b as f64
        }
    };
    let faults: Vec<&str> = r.faults.iter().map(|f| f.name()).collect();
    // Nodes in the topology's notation, as the fault windows name them.
    let topology = r.topology.parse::<Topology>().ok();
    let name = |n: u64| topology.map_or(n.to_string(), |t| node(t, NodeId(n)));
    writeln!(
        out,
        "chaos run on {} (seed {}), faults: {}; delivery {}",
        r.topology,
        r.seed,
        faults.join(", "),
        r.delivery
    )?;
    writeln!(out, "{}", r.verdict.line())?;
    if !r.verdict.allowed.is_empty() {
        writeln!(out, "  allowed: {}", r.verdict.allowed.join("; "))?;
    }
    if let Some(e) = &r.ends {
        return write_ends(out, &r.delivery, e);
    }
    writeln!(
        out,
        "  message sets sent: {}; copies delivered {} of {} ({:.2}%)",
        r.sets_sent,
        r.copies_delivered,
        r.copies_expected,
        pct(r.copies_delivered, r.copies_expected)
    )?;
    let whole = &r.sent_per_second[..r.sent_per_second.len().saturating_sub(1)];
    if let (Some(least), Some(most)) = (whole.iter().min(), whole.iter().max()) {
        writeln!(
            out,
            "  sent on schedule: {least} to {most} sets in each whole second, faults included; the latest went {:.1} ms late (in its latency)",
            r.latest_send_ms
        )?;
    }
    writeln!(
        out,
        "  sets with at least one copy: {} ({:.2}%); sets lost: {}; corrupted copies handed to a client: {}",
        r.sets_with_a_copy,
        pct(r.sets_with_a_copy, r.sets_sent),
        r.sets_lost,
        r.corrupted_delivered_to_client
    )?;
    // One line for each kind of fault, however many windows it had.
    let mut kinds: Vec<(&str, f64, f64, Vec<&str>, &str)> = Vec::new();
    for w in &r.fault_windows {
        match kinds.iter_mut().find(|k| k.0 == w.what) {
            Some(k) => {
                k.1 = k.1.min(w.start_ms);
                k.2 = k.2.max(w.end_ms);
                k.3.push(&w.place);
            }
            None => kinds.push((&w.what, w.start_ms, w.end_ms, vec![&w.place], &w.mechanism)),
        }
    }
    for (what, start_ms, end_ms, places, mechanism) in kinds {
        writeln!(
            out,
            "  fault {:>6.1} s to {:>6.1} s: {what} on {} ({mechanism})",
            start_ms / 1e3,
            end_ms / 1e3,
            places.join(", ")
        )?;
    }
    if let Some(h) = &r.host_loss {
        writeln!(
            out,
            "  host {} lost ({} nodes): of {} sets between the other hosts' nodes, {} had a path \
             avoiding it and {} of them kept a copy{} ({} below the placement's promise); {} had \
             none, {} got a copy all the same{}",
            h.host,
            h.nodes.len(),
            h.sets_between_others,
            h.promised_a_copy,
            h.kept_a_copy,
            if h.copies_promised > 0 {
                format!(
                    "; the placement promised {} copies on such paths and {} arrived on paths \
                     avoiding it (those around its dead links included)",
                    h.copies_promised, h.copies_kept
                )
            } else {
                String::new()
            },
            h.below_promise,
            h.promised_none,
            h.got_one_anyway,
            if h.sets_to_lost_host > 0 {
                format!(
                    "; sets to its nodes: {} sent, {} arrived",
                    h.sets_to_lost_host, h.delivered_to_lost_host
                )
            } else {
                String::new()
            }
        )?;
    }
    let l = &r.latency_us;
    let phases = [
        ("fault-free", &r.phases.fault_free, &l.fault_free),
        ("with faults", &r.phases.with_faults, &l.with_faults),
        ("after", &r.phases.after_faults, &l.after_faults),
    ];
    for (name, p, latency) in phases {
        writeln!(
            out,
            "  {name:<12} {:>6} sets, copies {:>6}/{:<6} ({:.2}%), sets with a copy {:.2}%, single-path baseline {:.2}%, path mismatches {}; latency per copy p50 {:.1} ms p99 {:.1} ms",
            p.sets_sent,
            p.copies_delivered,
            p.copies_expected,
            pct(p.copies_delivered, p.copies_expected),
            pct(p.sets_with_a_copy, p.sets_sent),
            pct(p.single_path_delivered, p.sets_sent),
            p.path_mismatches,
            latency.p50_us / 1e3,
            latency.p99_us / 1e3
        )?;
    }
    let rec = &r.recovery;
    if r.state_corruptions > 0 || rec.packets_corrupted > 0 {
        let state = if r.state_corruptions > 0 {
            format!(
                "protocol variables overwritten {} times; ",
                r.state_corruptions
            )
        } else {
            String::new()
        };
        let packets = if rec.packets_corrupted > 0 {
            format!(
                "corrupted packets: {} ({} dropped, {} delivered intact, {} corrupted again), gone within {} (bound B = {}) and {:.1} ms",
                rec.packets_corrupted,
                rec.corrupted_dropped,
                rec.corrupted_delivered,
                rec.corrupted_again,
                count(rec.max_hops, "hop"),
                rec.bound_hops,
                rec.max_ms
            )
        } else {
            String::new()
        };
        writeln!(out, "  {state}{packets}")?;
    }
    // The faults' places are on their lines above; when the cluster was whole again.
    let killed_or_cut = !r.crashed.is_empty() || !r.cut.is_empty();
    if killed_or_cut || r.partition_bit.is_some() || r.loss_rate > 0.0 {
        let partition = r.partition_bit.map_or(String::new(), |bit| {
            format!(
                "partitioned on id bit {bit} ({} between the halves); ",
                count(r.partitioned_links, "link")
            )
        });
        let since = if killed_or_cut {
            "the restart"
        } else {
            "the repair"
        };
        let rejoin = r.rejoin_ms.map_or("NOT within 60 s".to_string(), |ms| {
            format!("{ms:.0} ms after {since}")
        });
        // Ready as `cluster/src/ops/ready.rs` judges it: every link up and known up by every
        // node, no sealing handshake in flight.
        writeln!(
            out,
            "  {partition}ready again (every link up and known up, no handshake in flight) {rejoin}"
        )?;
    }
    if r.delivery != "plain" || r.forged_delivered_to_client > 0 || r.duplicates_to_client > 0 {
        let reliable = if r.delivery.starts_with("reliable") {
            let o = &r.reliable;
            format!(
                "; reliable sets: {} acknowledged, {} expired at the source ({} of them delivered all the same), {} refused at once, {} unsettled",
                o.acked, o.expired, o.expired_but_delivered, o.refused, o.unsettled
            )
        } else {
            String::new()
        };
        writeln!(
            out,
            "  delivery {}: duplicates to a client {}, forged payloads to a client {}, {:.0} wire bytes per set for {:.0} of payload, attempts mean {:.2} max {} ({} settled){reliable}",
            r.delivery,
            r.duplicates_to_client,
            r.forged_delivered_to_client,
            r.wire_bytes_per_set,
            r.payload_bytes_per_set,
            r.attempts.mean,
            r.attempts.max,
            r.attempts.settled,
        )?;
    }
    if !r.lost.is_empty() || !r.unsettled.is_empty() {
        writeln!(
            out,
            "  the sets lost and unsettled, one by one (the first 100 of each): `lost` and `unsettled` in the JSON report (--json, or --report DIR)"
        )?;
    }
    if !r.relays.is_empty() {
        let f = &r.forgeries;
        let forgeries = if f.payload + f.header + f.source + f.attempt + f.replayed > 0 {
            format!(
                "; forgeries: {} payloads, {} headers, {} sources, {} attempts rewritten, {} packets replayed",
                f.payload, f.header, f.source, f.attempt, f.replayed
            )
        } else {
            String::new()
        };
        writeln!(
            out,
            "  relays {}: {} payloads captured, {} of them holding their payload or an 8-byte run of it{forgeries}",
            listed(&r.relays, |&n| name(n)),
            r.captured,
            r.leaked
        )?;
    }
    let w = &r.sweep;
    writeln!(
        out,
        "  outputs swept at the end: {} entries; beyond the sets awaited {} of sets never sent, {} with another payload, {} duplicates; {} in another mode or sealing (never taken for the run's sets); {} overwritten unread{}",
        w.entries,
        w.unknown_sets,
        w.other_payloads,
        w.duplicates,
        w.not_taken,
        w.missed,
        if w.nodes_unread > 0 {
            format!(", {} nodes not read", w.nodes_unread)
        } else {
            String::new()
        }
    )?;
    let drops: Vec<String> = r
        .drops
        .iter()
        .map(|(why, n)| format!("{why} {n}"))
        .collect();
    writeln!(
        out,
        "  drops: {}; output entries overwritten before a client read them: {}{}",
        if drops.is_empty() {
            "none".to_string()
        } else {
            drops.join(", ")
        },
        r.output_overwritten,
        r.kernel_dropped.map_or(String::new(), |n| format!(
            "; datagrams the kernel's rules dropped: {n}"
        ))
    )?;
    Ok(())
}

/// Node ids, or links as `a-b`, as a list in words.
fn listed<T>(items: &[T], show: impl Fn(&T) -> String) -> String {
    if items.is_empty() {
        "none".to_string()
    } else {
        items.iter().map(show).collect::<Vec<_>>().join(", ")
    }
}

/// The study's table, one line per cell.
pub fn print_study(cells: &[Cell]) {
    println!(
        "{:<22} {:<12} {:<9} {:>6} {:>8} {:>9} {:>9} {:>9}",
        "condition", "paths", "delivery", "sets", "lost", "p50 ms", "p99 ms", "p99.9 ms"
    );
    for c in cells {
        println!(
            "{:<22} {:<12} {:<9} {:>6} {:>7.2}% {:>9.2} {:>9.2} {:>9.2}",
            c.condition,
            c.paths,
            if c.reliable { "reliable" } else { "plain" },
            c.sets,
            c.lost_share * 100.0,
            c.p50_ms,
            c.p99_ms,
            c.p999_ms
        );
    }
}

#[cfg(test)]
mod tests {
    use cuberoute_cluster::chaos::report::{LostSet, Report};
    use cuberoute_cluster::chaos::scenario::Phase;
    use cuberoute_cluster::chaos::timeline::FaultWindow;

    /// A report with every line the text can have: every kind of fault, nine crashed nodes,
    /// relays, a lost host, reliable sets lost, allowances.
    fn everything() -> Report {
        let window = |what: &str, place: String| FaultWindow {
            start_ms: 2000.0,
            end_ms: 9000.0,
            what: what.into(),
            place,
            mechanism: "process kill".into(),
        };
        let mut r = Report {
            topology: "q:10".into(),
            delivery: "reliable".into(),
            crashed: (0..9).collect(),
            cut: vec![(20, 21)],
            relays: vec![30, 31],
            partition_bit: Some(3),
            loss_rate: 0.02,
            kernel_dropped: Some(5),
            duplicates_to_client: 1,
            host_loss: Some(Default::default()),
            sent_per_second: vec![40; 20],
            state_corruptions: 7,
            ..Report::default()
        };
        r.recovery.packets_corrupted = 3;
        r.forgeries.payload = 2;
        r.verdict.allowed = (0..5).map(|i| format!("allowance {i}")).collect();
        r.host_loss.as_mut().unwrap().sets_to_lost_host = 2;
        let lost = LostSet {
            phase: Phase::WithFaults,
            from: 1,
            to: 2,
            seq: 3,
            sent_at_us: 4,
            outcome: "expired".into(),
            attempts: Some(2),
        };
        r.lost = vec![lost.clone(); 150];
        r.unsettled = vec![lost; 150];
        r.fault_windows = (0..9)
            .map(|n| window("crash", format!("node {n}")))
            .chain(
                [
                    "state every 10 ms",
                    "buffers 5%",
                    "cut",
                    "partition",
                    "loss 2%",
                    "delay 10 ms ± 5 ms",
                    "capture",
                    "capture",
                    "forge",
                    "forge",
                    "host lost",
                ]
                .into_iter()
                .map(|what| window(what, "somewhere".into())),
            )
            .collect();
        r
    }

    #[test]
    fn a_chaos_report_in_text_is_a_summary_of_at_most_30_lines_whatever_it_holds() {
        let mut out = Vec::new();
        super::write_chaos_report(&mut out, &everything()).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines = text.lines().count();
        assert!(lines <= 30, "{lines} lines:\n{text}");
        // Each kind of fault on one line, its places together.
        assert_eq!(text.matches(": crash on").count(), 1, "{text}");
        assert!(text.contains("crash on node 0, node 1,"), "{text}");
        // No set is listed one by one, no Rust debug name shows.
        assert!(
            !text.contains("LostSet") && !text.contains("WithFaults"),
            "{text}"
        );
        assert!(
            text.lines().nth(1).unwrap().starts_with("verdict: "),
            "{text}"
        );
    }

    #[test]
    fn one_is_singular_and_every_other_count_plural() {
        assert_eq!(super::count(1u32, "hop"), "1 hop");
        assert_eq!(super::count(0u32, "hop"), "0 hops");
        assert_eq!(super::count(3u64, "round"), "3 rounds");
    }
}
