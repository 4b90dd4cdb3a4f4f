//! What more than one command shows: the progress of a cluster's start and its summary once
//! up (`cluster up`, `demo`, `bench`), a cluster's status table (`cluster status`, `demo`), a
//! cluster taken down (`cluster down`, `demo`), a set's delivery report (`send`, `demo`), a
//! chaos run's report (`chaos run`, `sim`) and a redundancy study's table (`chaos study`,
//! `sim --study`). The commands share these instead of calling each other.

use crate::commands::{runtime, usage};
use cuberoute_cluster::chaos;
use cuberoute_cluster::chaos::redundancy::Cell;
use cuberoute_cluster::launch::phases::Phases;
use cuberoute_cluster::launch::runner;
use cuberoute_cluster::launch::start::{self, Containers, Local, Note};
use cuberoute_cluster::launch::start_cpu::StartCpu;
use cuberoute_cluster::ops::cluster_client::{links_up, revoked};
use cuberoute_cluster::ops::ready::{self, Readiness};
use cuberoute_cluster::ops::traffic::{Destinations, SendReport};
use cuberoute_cluster::ops::up::{self, Up};
use cuberoute_cluster::{ClusterClient, ClusterDir};
use cuberoute_protocol::wire::control::NodeStatus;
use cuberoute_protocol::{NodeId, Topology};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::Write;
use std::time::Duration;

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
    up_banner(up, what)?;
    commands(&up.dir, up.topology, None)
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
    let name = |v| topology.format_node(v);
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

/// The human-readable delivery report.
pub fn write_report(
    out: &mut impl Write,
    topology: Topology,
    report: &SendReport,
    waited: bool,
) -> std::io::Result<()> {
    let name = |v: u64| topology.format_node(cuberoute_protocol::NodeId(v));
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
                    "  copy {}{to}: {hops:>2} hops, {:>7} µs  {path}",
                    copy.index, latency
                )?;
            }
            _ => {
                let to = copy
                    .to
                    .map_or(String::new(), |v| format!(" to {}", name(v)));
                writeln!(out, "  copy {}{to}: NOT delivered", copy.index)?
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
            "  rejected as forged or misshapen: the pieces of paths {:?}",
            report.rejected_paths
        )?;
    }
    match (report.attempts, report.acked) {
        (Some(n), Some(true)) => writeln!(out, "  acknowledged after {n} attempt(s)"),
        (Some(n), _) => writeln!(out, "  NOT acknowledged after {n} attempt(s)"),
        _ => Ok(()),
    }
}

/// The verdict of a `crash-ends` run.
fn print_ends(delivery: &str, e: &cuberoute_cluster::chaos::ends::EndsReport) {
    println!(
        "  {} kills and {} restarts of sources and destinations; delivery {delivery}",
        e.kills, e.restarts
    );
    println!(
        "  sends {}: accepted {}, not accepted {} (source down or killed before it answered; {} of those arrived all the same)",
        e.sends, e.accepted, e.not_accepted, e.taken_not_accepted
    );
    println!(
        "  accepted and taken by a consuming client: {}; accepted_lost {}; acked_lost {} (of {} acknowledged); duplicates_to_client {}; wrong payloads {}",
        e.taken, e.accepted_lost, e.acked_lost, e.acked, e.duplicates_to_client, e.wrong_to_client
    );
    if e.expired + e.unsettled > 0 {
        println!(
            "  reliable sets expired at their source: {}; not known to their source (it restarted): {}",
            e.expired, e.unsettled
        );
    }
    println!(
        "  read from the store on {} nodes, from the output buffer on {}",
        e.nodes_consumed_from_store, e.nodes_read_from_output
    );
    if !e.lost.is_empty() {
        println!(
            "  the sets lost, one by one (the first 20): `ends.lost` in the JSON report (--json, or --report DIR)"
        );
    }
}

pub fn print_report(r: &chaos::report::Report) {
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
    let name = |n: u64| topology.map_or(n.to_string(), |t| t.format_node(NodeId(n)));
    println!(
        "chaos run on {} (seed {}), faults: {}; delivery {}",
        r.topology,
        r.seed,
        faults.join(", "),
        r.delivery
    );
    println!("{}", r.verdict.line());
    for allowed in &r.verdict.allowed {
        println!("  allowed: {allowed}");
    }
    if let Some(e) = &r.ends {
        print_ends(&r.delivery, e);
        return;
    }
    println!(
        "  message sets sent: {}; copies delivered {} of {} ({:.2}%)",
        r.sets_sent,
        r.copies_delivered,
        r.copies_expected,
        pct(r.copies_delivered, r.copies_expected)
    );
    let whole = &r.sent_per_second[..r.sent_per_second.len().saturating_sub(1)];
    if let (Some(least), Some(most)) = (whole.iter().min(), whole.iter().max()) {
        println!(
            "  sent on schedule: {least} to {most} sets in each whole second, faults included; the latest went {:.1} ms late (in its latency)",
            r.latest_send_ms
        );
    }
    println!(
        "  sets with at least one copy: {} ({:.2}%); sets lost: {}; corrupted copies handed to a client: {}",
        r.sets_with_a_copy,
        pct(r.sets_with_a_copy, r.sets_sent),
        r.sets_lost,
        r.corrupted_delivered_to_client
    );
    for w in &r.fault_windows {
        println!(
            "  fault {:>8.1} s to {:>8.1} s: {} on {} ({})",
            w.start_ms / 1e3,
            w.end_ms / 1e3,
            w.what,
            w.place,
            w.mechanism
        );
    }
    if let Some(dropped) = r.kernel_dropped {
        println!("  datagrams the kernel's rules dropped: {dropped}");
    }
    if let Some(h) = &r.host_loss {
        println!(
            "  host {} lost ({} nodes): of {} sets between the other hosts' nodes, {} had a path \
             avoiding it and {} of them kept a copy{} ({} below the placement's promise); {} had \
             none, {} got a copy all the same",
            h.host,
            h.nodes.len(),
            h.sets_between_others,
            h.promised_a_copy,
            h.kept_a_copy,
            if h.copies_promised > 0 {
                format!(
                    "; {} of the {} copies on such paths arrived",
                    h.copies_kept, h.copies_promised
                )
            } else {
                String::new()
            },
            h.below_promise,
            h.promised_none,
            h.got_one_anyway
        );
        if h.sets_to_lost_host > 0 {
            println!(
                "  sets to the lost host's nodes: {} sent, {} arrived",
                h.sets_to_lost_host, h.delivered_to_lost_host
            );
        }
    }
    let phases = [
        ("fault-free", &r.phases.fault_free),
        ("with faults", &r.phases.with_faults),
        ("after", &r.phases.after_faults),
    ];
    for (name, p) in phases {
        println!(
            "  {name:<12} {:>6} sets, copies {:>6}/{:<6} ({:.2}%), sets with a copy {:.2}%, single-path baseline {:.2}%, path mismatches {}",
            p.sets_sent,
            p.copies_delivered,
            p.copies_expected,
            pct(p.copies_delivered, p.copies_expected),
            pct(p.sets_with_a_copy, p.sets_sent),
            pct(p.single_path_delivered, p.sets_sent),
            p.path_mismatches
        );
    }
    let l = &r.latency_us;
    println!(
        "  latency per copy: fault-free p50 {:.0} µs p99 {:.0} µs; with faults p50 {:.0} µs p99 {:.0} µs; after p50 {:.0} µs p99 {:.0} µs",
        l.fault_free.p50_us,
        l.fault_free.p99_us,
        l.with_faults.p50_us,
        l.with_faults.p99_us,
        l.after_faults.p50_us,
        l.after_faults.p99_us
    );
    if r.state_corruptions > 0 {
        println!(
            "  protocol variables overwritten {} times",
            r.state_corruptions
        );
    }
    let rec = &r.recovery;
    if rec.packets_corrupted > 0 {
        println!(
            "  corrupted packets: {} ({} dropped, {} delivered intact, {} corrupted again); gone within {} hops (bound B = {}) and {:.1} ms",
            rec.packets_corrupted,
            rec.corrupted_dropped,
            rec.corrupted_delivered,
            rec.corrupted_again,
            rec.max_hops,
            rec.bound_hops,
            rec.max_ms
        );
    }
    if !r.crashed.is_empty() || !r.cut.is_empty() {
        println!(
            "  crashed: {}; cut: {}; every link up again {}",
            listed(&r.crashed, |&n| name(n)),
            listed(&r.cut, |&(a, b)| format!("{}-{}", name(a), name(b))),
            r.rejoin_ms
                .map_or("NOT within 60 s".to_string(), |ms| format!(
                    "{ms:.0} ms after the restart"
                ))
        );
    }
    if r.partition_bit.is_some() || r.loss_rate > 0.0 {
        let partition = r.partition_bit.map_or(String::new(), |bit| {
            format!(
                "partitioned on id bit {bit} ({} links between the halves); ",
                r.partitioned_links
            )
        });
        let loss = if r.loss_rate > 0.0 {
            format!("{:.1}% of datagrams lost; ", r.loss_rate * 100.0)
        } else {
            String::new()
        };
        // With crashes or cuts too, the line above says when the links came back.
        let rejoin = if r.crashed.is_empty() && r.cut.is_empty() {
            r.rejoin_ms
                .map_or("every link up again NOT within 60 s".to_string(), |ms| {
                    format!("every link up again {ms:.0} ms after the repair")
                })
        } else {
            String::new()
        };
        println!("  {partition}{loss}{rejoin}");
    }
    if r.delivery != "plain" || r.forged_delivered_to_client > 0 || r.duplicates_to_client > 0 {
        println!(
            "  delivery {}: duplicates to a client {}, forged payloads to a client {}, {:.0} wire bytes per set for {:.0} of payload, attempts mean {:.2} max {} ({} settled), {} expired at the source",
            r.delivery,
            r.duplicates_to_client,
            r.forged_delivered_to_client,
            r.wire_bytes_per_set,
            r.payload_bytes_per_set,
            r.attempts.mean,
            r.attempts.max,
            r.attempts.settled,
            r.sets_expired_at_source
        );
    }
    if r.delivery.starts_with("reliable") {
        let o = &r.reliable;
        println!(
            "  reliable sets: {} acknowledged, {} expired at the source ({} of them delivered all the same), {} refused at once, {} unsettled",
            o.acked, o.expired, o.expired_but_delivered, o.refused, o.unsettled
        );
    }
    if !r.lost.is_empty() || !r.unsettled.is_empty() {
        println!(
            "  the sets lost and unsettled, one by one (the first 100 of each): `lost` and `unsettled` in the JSON report (--json, or --report DIR)"
        );
    }
    if !r.relays.is_empty() {
        println!(
            "  relays {}: {} payloads captured, {} of them holding their payload or an 8-byte run of it",
            listed(&r.relays, |&n| name(n)),
            r.captured,
            r.leaked
        );
        let f = &r.forgeries;
        if f.payload + f.header + f.source + f.attempt + f.replayed > 0 {
            println!(
                "  forgeries: {} payloads, {} headers, {} sources, {} attempts rewritten, {} packets replayed",
                f.payload, f.header, f.source, f.attempt, f.replayed
            );
        }
    }
    let w = &r.sweep;
    println!(
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
    );
    let drops: Vec<String> = r
        .drops
        .iter()
        .map(|(why, n)| format!("{why} {n}"))
        .collect();
    println!(
        "  drops: {}; output entries overwritten before a client read them: {}",
        if drops.is_empty() {
            "none".to_string()
        } else {
            drops.join(", ")
        },
        r.output_overwritten
    );
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
    #[test]
    fn one_is_singular_and_every_other_count_plural() {
        assert_eq!(super::count(1u32, "hop"), "1 hop");
        assert_eq!(super::count(0u32, "hop"), "0 hops");
        assert_eq!(super::count(3u64, "round"), "3 rounds");
    }
}
