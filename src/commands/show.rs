//! `cuberoute show node --node N` and `show links --node N` (`--json`: the node's status as one
//! JSON document): what a node runs with and what its links are doing, from its `Status`; and
//! `show route --from S --to D`: the k paths with the state of every hop now
//! (`cuberoute_cluster::ops::route`).

use super::args::{ClientArg, JsonArg, PairArgs};
use super::{runtime, usage};
use anyhow::Context;
use cuberoute_cluster::ops::route;
use cuberoute_protocol::wire::control::{LinkStatus, NodeStatus};
use cuberoute_protocol::{NodeId, Topology};
use std::io::Write;
use std::time::Duration;

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// A node: id, topology, addresses, uptime, versions, configuration, buffers, counters.
    Node(Args),
    /// A node's links: state and since when, QUIC's round-trip time, datagrams and bytes each
    /// way, frames written, received, resent and waiting for acknowledgement, drops by reason.
    Links(Args),
    /// The k paths from one node to another, each hop with its link's state, RTT and queue as
    /// the hop's sender reports it now, and which paths are broken.
    Route(RouteArgs),
}

// `--from` and `--to` of `show route` have no help of their own.
#[derive(clap::Args, Debug)]
#[command(
    mut_arg("from", |a| a.help(None::<&str>)),
    mut_arg("to", |a| a.help(None::<&str>)),
    mut_arg("json", |a| a.help("One JSON document")),
)]
pub struct RouteArgs {
    #[command(flatten)]
    pub dir: ClientArg,
    #[command(flatten)]
    pub pair: PairArgs,
    #[command(flatten)]
    pub output: JsonArg,
}

#[derive(clap::Args, Debug)]
#[command(mut_arg("json", |a| a.help("The node's whole status as one JSON document")))]
pub struct Args {
    #[command(flatten)]
    pub dir: ClientArg,
    /// The node.
    #[arg(long)]
    pub node: String,
    #[command(flatten)]
    pub output: JsonArg,
}

pub fn run(command: Command) -> anyhow::Result<()> {
    let (args, links) = match command {
        Command::Node(args) => (args, false),
        Command::Links(args) => (args, true),
        Command::Route(args) => return route(args),
    };
    let runtime = runtime()?;
    let _guard = runtime.enter();
    let cluster = args.dir.open()?;
    let topology = cluster.manifest.topology;
    let node = super::parse_node(topology, &args.node)?;
    let status = runtime
        .block_on(cluster.status(node))
        .with_context(|| format!("show {}", if links { "links" } else { "node" }))?;
    cluster.close();
    let mut out = std::io::stdout().lock();
    if args.output.json {
        serde_json::to_writer(&mut out, &status)?;
        writeln!(out)?;
    } else if links {
        write_links(&mut out, topology, &status)?;
    } else {
        write_node(&mut out, topology, &status)?;
    }
    Ok(())
}

fn route(args: RouteArgs) -> anyhow::Result<()> {
    let runtime = runtime()?;
    let _guard = runtime.enter();
    let cluster = args.dir.open()?;
    let topology = cluster.manifest.topology;
    let from = super::parse_node(topology, &args.pair.from)?;
    let to = super::parse_node(topology, &args.pair.to)?;
    if from == to {
        return Err(usage("--from and --to are the same node"));
    }
    let route = runtime
        .block_on(route::route(&cluster, from, to, Duration::from_secs(5)))
        .map_err(|e| usage(e.to_string()))?;
    cluster.close();
    let mut out = std::io::stdout().lock();
    if args.output.json {
        serde_json::to_writer(&mut out, &route)?;
        writeln!(out)?;
        return Ok(());
    }
    writeln!(
        out,
        "{} -> {} on {topology} ({}): {} paths, {} intact",
        crate::print::node(topology, from),
        crate::print::node(topology, to),
        route.algorithm,
        route.paths.len(),
        route.intact
    )?;
    for p in &route.paths {
        let mut line = crate::print::node(topology, NodeId(p.nodes[0]));
        for h in &p.hops {
            let rtt = h.rtt_us.map_or(String::new(), |r| format!(" {r}µs"));
            line.push_str(&format!(
                " -[{}{rtt}]-> {}",
                h.state,
                crate::print::node(topology, NodeId(h.to))
            ));
        }
        let verdict = if p.broken { "BROKEN" } else { "ok" };
        writeln!(
            out,
            "  path {} ({}, {verdict}): {line}",
            p.index,
            crate::print::count(p.hops.len() as u64, "hop")
        )?;
    }
    Ok(())
}

fn write_node(out: &mut impl Write, t: Topology, s: &NodeStatus) -> std::io::Result<()> {
    let c = &s.config;
    let up = s.links.iter().filter(|l| l.up).count();
    writeln!(
        out,
        "node {} of {}",
        crate::print::node(t, s.id),
        s.topology
    )?;
    writeln!(
        out,
        "  version {} (wire {}), pid {}, up {}, incarnation {:016x}",
        s.version,
        s.wire_version,
        s.pid,
        duration(s.uptime_ms),
        s.incarnation
    )?;
    writeln!(
        out,
        "  listen {}, control {}, metrics {}",
        c.listen,
        c.control_listen,
        c.metrics_listen.as_deref().unwrap_or("off"),
    )?;
    writeln!(
        out,
        "  log level {}, format {}; fault injection {}; niceness {}",
        c.log_level,
        c.log_format,
        if c.chaos_allowed {
            "allowed"
        } else {
            "refused (chaos.allow = false)"
        },
        c.nice
    )?;
    writeln!(
        out,
        "  buffers: input {} of {} sets, output {} of {} copies, links up to {} packets each, {} requests, {} MiB in all ({} KiB held by links and input)",
        s.input_queued,
        c.input_buffer,
        s.output_len,
        c.output_buffer,
        c.link_buffer,
        c.requests,
        c.memory_mib,
        s.buffered_bytes / 1024
    )?;
    writeln!(out, "  links: {up} of {} up", s.links.len())?;
    if s.revoked.is_empty() {
        writeln!(out, "  revoked: none")?;
    } else {
        let revoked: Vec<String> = s
            .revoked
            .iter()
            .map(|&n| crate::print::node(t, n))
            .collect();
        writeln!(
            out,
            "  revoked: {} (revocation list serial {}){}",
            revoked.join(", "),
            s.revocation_serial,
            if s.revoked.contains(&s.id) {
                "; this node is revoked itself: it links with nobody and sends nothing"
            } else {
                ""
            }
        )?;
    }
    let z = &s.sealing;
    writeln!(
        out,
        "  sealing: {} sessions held, {} handshakes in flight, {} sets waiting for one; sessions seal for {} s, keys erased at {} s, renewed by derivation for {} s; made {} as initiator, {} as responder, {} derived sealing, {} opening; erased {}, pushed out {}, handshakes given up {}, answers sent again {}, Inits sent again as a path came back {}; sets sealed again for a restarted destination {}",
        z.sessions,
        z.handshakes_in_flight,
        z.waiting_sets,
        z.rekey_after_ms / 1000,
        z.erase_after_ms / 1000,
        z.handshake_after_ms / 1000,
        z.initiated,
        z.answered,
        z.derived_sealing,
        z.derived_opening,
        z.erased,
        z.evicted,
        z.handshakes_failed,
        z.answers_sent_again,
        z.inits_resent_on_news,
        z.sets_sealed_again
    )?;
    let a = &s.around;
    let dead: Vec<String> = a
        .dead_links
        .iter()
        .map(|&(x, y)| format!("{}-{}", crate::print::node(t, x), crate::print::node(t, y)))
        .collect();
    writeln!(
        out,
        "  routing around: {} dead links known{}; {} reports held, {} new, {} met again, {} about no link, {} refused (table full); {} sets sent around them",
        dead.len(),
        if dead.is_empty() {
            String::new()
        } else {
            format!(" ({})", dead.join(", "))
        },
        a.reports_held,
        a.reports_new,
        a.reports_known,
        a.reports_not_a_link,
        a.reports_full,
        a.sets_rerouted
    )?;
    let k = &s.counters;
    writeln!(
        out,
        "  sets accepted {}, packets sent {}, forwarded {}, delivered {}, dropped {}",
        k.sets_accepted,
        k.packets_sent,
        k.packets_forwarded,
        k.packets_delivered,
        k.dropped_total()
    )?;
    for (what, map) in [("drops", &k.dropped), ("events", &k.events)] {
        if !map.is_empty() {
            let items: Vec<String> = map.iter().map(|(r, n)| format!("{r} {n}")).collect();
            writeln!(out, "  {what}: {}", items.join(", "))?;
        }
    }
    Ok(())
}

fn write_links(out: &mut impl Write, t: Topology, s: &NodeStatus) -> std::io::Result<()> {
    writeln!(
        out,
        "{:<12} {:<8} {:>9} {:>8} {:>10} {:>10} {:>9} {:>9} {:>7} {:>7} {:>7}  drops",
        "neighbour",
        "state",
        "since",
        "rtt µs",
        "dgrams out",
        "dgrams in",
        "frames out",
        "frames in",
        "resent",
        "queued",
        "unacked"
    )?;
    let itself = s.revoked.contains(&s.id);
    for l in &s.links {
        let transport = l.transport.as_ref();
        let revoked = itself || s.revoked.contains(&l.neighbour);
        let drops: Vec<String> = l.drops.iter().map(|(r, n)| format!("{r} {n}")).collect();
        writeln!(
            out,
            "{:<12} {:<8} {:>9} {:>8} {:>10} {:>10} {:>9} {:>9} {:>7} {:>7} {:>7}  {}{}",
            crate::print::node(t, l.neighbour),
            state(l, revoked),
            duration(l.since_ms),
            transport.map_or("-".into(), |t| t.rtt_us.to_string()),
            transport.map_or("-".into(), |t| t.datagrams_sent.to_string()),
            transport.map_or("-".into(), |t| t.datagrams_received.to_string()),
            l.frames_written,
            l.frames_received,
            l.frames_resent,
            l.queued,
            l.written_unacknowledged,
            if drops.is_empty() {
                "-".to_string()
            } else {
                drops.join(", ")
            },
            l.redial.as_ref().map_or(String::new(), |r| format!(
                "; {} dial(s) failed, next in {} (backoff {})",
                r.failures,
                duration(r.next_in_ms),
                duration(r.backoff_ms)
            )) + &l
                .down
                .as_ref()
                .map_or(String::new(), |why| format!("; down: {why}"))
        )?;
    }
    Ok(())
}

/// `up` (`suspect` while liveness heard nothing from the neighbour for an interval), `cut`,
/// `revoked` (refused for good: either end is revoked), `down` (it was up, and went down: the
/// line ends with why), or, while it never came up, `dialling` (this side dials) or `waiting`
/// (for the neighbour to dial).
fn state(l: &LinkStatus, revoked: bool) -> &'static str {
    match (l.cut, l.up, l.dials) {
        (true, _, _) if revoked => "revoked",
        (true, _, _) => "cut",
        (false, true, _) if l.suspected => "suspect",
        (false, true, _) => "up",
        (false, false, _) if l.down.is_some() => "down",
        (false, false, true) => "dialling",
        (false, false, false) => "waiting",
    }
}

/// `1h02m`, `3m04s`, `5.2s`, `120ms`.
fn duration(ms: u64) -> String {
    match ms {
        ms if ms < 1_000 => format!("{ms}ms"),
        ms if ms < 60_000 => format!("{:.1}s", ms as f64 / 1000.0),
        ms if ms < 3_600_000 => format!("{}m{:02}s", ms / 60_000, ms / 1000 % 60),
        ms => format!("{}h{:02}m", ms / 3_600_000, ms / 60_000 % 60),
    }
}
