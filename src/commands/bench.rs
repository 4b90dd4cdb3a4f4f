//! `cuberoute bench [TOPO...]`: start each cluster, measure it, take it down; and measure the
//! baseline, one raw quinn stream relay hop between two processes, in the same run. The run is
//! the cluster crate's (`bench::run`); this command reads the arguments, shows what the run
//! does as it goes, and prints its figures.

use super::{runtime, usage};
use crate::print::{self, WaitBar};
use cuberoute_cluster::ClusterDir;
use cuberoute_cluster::bench::measure::{self, Pairs};
use cuberoute_cluster::bench::memory_after_quiet;
use cuberoute_cluster::bench::raw_hop;
use cuberoute_cluster::bench::raw_mesh;
use cuberoute_cluster::bench::raw_ring;
use cuberoute_cluster::bench::run::{self, Event, Figures, Options};
use cuberoute_cluster::launch::hosting::NodesPerProcess;
use cuberoute_cluster::launch::run_state::RunState;
use cuberoute_cluster::launch::usage::Idle;
use cuberoute_daemon::tls::Credentials;
use cuberoute_protocol::delivery::Mode;
use cuberoute_protocol::wire::control::MAX_SETS_PER_REQUEST;
use cuberoute_protocol::{NodeId, Topology};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Topologies to measure.
    #[arg(default_values_t = ["eh:2,2".to_string(), "eh:3,3".to_string()])]
    pub topologies: Vec<String>,
    /// Where the clusters are generated (each in a subdirectory).
    #[arg(long, default_value = "bench-clusters")]
    pub dir: PathBuf,
    /// Sequential sends per latency measurement.
    #[arg(long, default_value_t = 300)]
    pub samples: usize,
    /// Length of the saturation run.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub duration: Duration,
    /// Sets in flight during the saturation run.
    #[arg(long, default_value_t = 64)]
    pub concurrency: usize,
    /// Send the saturation sets this many to a request and wait for them so (one request a
    /// process of their sources, one a process of their destinations): what a client that
    /// batches gets from a node host. 1: a request a set. At most 128.
    #[arg(long, default_value_t = 1)]
    pub sets_per_request: usize,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Also measure these delivery modes (comma-separated, e.g. reliable,code:1,secret:1),
    /// each beside plain copies: latency of a farthest pair and saturation sets/s.
    #[arg(long, value_delimiter = ',')]
    pub delivery: Vec<Mode>,
    /// Measure plain copies and every --delivery mode sealed (the default) and clear, beside
    /// each other: what end-to-end sealing costs.
    #[arg(long)]
    pub clear_too: bool,
    /// Send the plain sets of the latency and saturation measurements clear, without the
    /// end-to-end seal: no sealing session to make with each new pair.
    #[arg(long, conflicts_with = "clear_too")]
    pub clear: bool,
    /// The payload of the delivery-mode measurements and of the overload runs, in bytes.
    #[arg(long, default_value_t = 1024)]
    pub payload_bytes: usize,
    /// One JSON object with every figure.
    #[arg(long)]
    pub json: bool,
    /// Run the clusters as containers (docker compose) instead of local processes.
    #[arg(long)]
    pub docker: bool,
    /// How many nodes each process of the clusters runs: N, or `auto` (one process per core);
    /// as `cluster up --nodes-per-process`.
    #[arg(long, value_name = "N|auto", default_value = "1", conflicts_with_all = ["docker", "running"])]
    pub nodes_per_process: NodesPerProcess,
    /// With --docker: how many nodes each container runs, N or `auto`; as `cluster up --docker
    /// --nodes-per-container`.
    #[arg(
        long,
        value_name = "N|auto",
        default_value = "1",
        requires = "docker",
        conflicts_with = "running"
    )]
    pub nodes_per_container: NodesPerProcess,
    /// Measure the cluster already running in this directory instead of starting clusters
    /// (no start-up time, no baseline).
    #[arg(long, conflicts_with = "topologies")]
    pub running: Option<PathBuf>,
    /// Before any traffic, measure the cluster idle for this long (after 10 s of rest): the
    /// CPU all daemons use together, and PSS and RSS per daemon.
    #[arg(long, value_parser = humantime::parse_duration)]
    pub idle: Option<Duration>,
    /// Measure only start-up and the idle cost (needs --idle): no baseline, no traffic.
    #[arg(long, requires = "idle")]
    pub idle_only: bool,
    /// How long the daemons rest after the traffic before their memory is read again (the
    /// memory after quiet) [default: 30s]
    #[arg(long, value_parser = humantime::parse_duration)]
    pub quiet: Option<Duration>,
    /// After the saturation run, offer sets open-loop at these multiples of the saturation
    /// rate (comma-separated, e.g. 1,2,5), each for --duration, and record every daemon's peak
    /// resident memory and what was refused.
    #[arg(long, value_delimiter = ',', value_name = "MULTIPLES")]
    pub overload: Vec<f64>,
    /// After the memory after quiet, saturate again with these numbers of sets in flight
    /// (comma-separated, e.g. 4096,8192), each for --duration: where the throughput stops
    /// growing, and at what latency.
    #[arg(long, value_delimiter = ',', value_name = "SETS")]
    pub sweep: Vec<usize>,
    /// Send every saturation set to this node, each from another drawn at random: what one
    /// destination carries (with --running only).
    #[arg(long, requires = "running", value_name = "NODE")]
    pub to: Option<String>,
    /// Send every saturation set between a random pair, neither of them this node, one of
    /// whose paths passes through it: what it carries as a relay (with --running only).
    #[arg(long, requires = "running", conflicts_with = "to", value_name = "NODE")]
    pub through: Option<String>,
    /// The niceness this process, the load generator, runs at (-20 to 19; below 0 needs root
    /// or CAP_SYS_NICE). The daemons run at 10.
    #[arg(long, default_value_t = measure::LOAD_GENERATOR_NICE, allow_negative_numbers = true)]
    pub load_generator_nice: i32,
}

/// One relay of a ring baseline (internal: `cuberoute bench` starts them).
#[derive(clap::Args, Debug)]
pub struct RelayRingArgs {
    #[arg(long)]
    pub listen: SocketAddr,
    #[arg(long)]
    pub next: SocketAddr,
    #[arg(long)]
    pub next_id: u64,
    #[arg(long, default_value_t = 0)]
    pub nice: i32,
    /// The bench process that started this relay: the relay ends with it.
    #[arg(long)]
    pub parent: u32,
    #[arg(long)]
    pub ca: PathBuf,
    #[arg(long)]
    pub cert: PathBuf,
    #[arg(long)]
    pub key: PathBuf,
}

/// One relay of a mesh baseline (internal: `cuberoute bench` starts them).
#[derive(clap::Args, Debug)]
pub struct RelayMeshArgs {
    /// The cluster whose graph, addresses and certificates the mesh takes.
    #[arg(long)]
    pub cluster: PathBuf,
    #[arg(long)]
    pub node: u64,
    #[arg(long, default_value_t = 0)]
    pub nice: i32,
    /// The bench process that started this relay: the relay ends with it.
    #[arg(long)]
    pub parent: u32,
}

/// The baseline's peer process (internal: `cuberoute bench` starts it).
#[derive(clap::Args, Debug)]
pub struct RelayPeerArgs {
    #[arg(long)]
    pub listen: SocketAddr,
    /// The bench process that started this peer: the peer ends with it.
    #[arg(long)]
    pub parent: u32,
    #[arg(long)]
    pub ca: PathBuf,
    #[arg(long)]
    pub cert: PathBuf,
    #[arg(long)]
    pub key: PathBuf,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    if !(-20..=19).contains(&args.load_generator_nice) {
        return Err(usage(format!(
            "--load-generator-nice {}: a niceness is -20 to 19",
            args.load_generator_nice
        )));
    }
    // Before any runtime starts its threads: they take this thread's priority.
    if let (_, Some(why)) = measure::prioritize_load_generator(args.load_generator_nice) {
        eprintln!("warning: {why}");
    }
    let topologies = args
        .topologies
        .iter()
        .map(|t| super::parse_topology(t))
        .collect::<anyhow::Result<Vec<Topology>>>()?;
    if args.samples == 0 || args.concurrency == 0 || args.sweep.contains(&0) {
        return Err(usage(
            "--samples, --concurrency and every --sweep must be at least 1",
        ));
    }
    if !(1..=MAX_SETS_PER_REQUEST).contains(&args.sets_per_request) {
        return Err(usage(format!(
            "--sets-per-request {}: 1 to {MAX_SETS_PER_REQUEST} sets in one request",
            args.sets_per_request
        )));
    }
    if let Some(bad) = args
        .overload
        .iter()
        .find(|m| !(m.is_finite() && **m > 0.0 && **m <= 100.0))
    {
        return Err(usage(format!(
            "--overload {bad}: each multiple of the saturation rate must be above 0 and at most 100"
        )));
    }
    let options = Options {
        dir: args.dir.clone(),
        samples: args.samples,
        duration: args.duration,
        concurrency: args.concurrency,
        seed: args.seed,
        delivery: args.delivery.clone(),
        clear_too: args.clear_too,
        clear: args.clear,
        payload_bytes: args.payload_bytes,
        docker: args.docker,
        nodes_per_process: if args.docker {
            args.nodes_per_container
        } else {
            args.nodes_per_process
        },
        idle: args.idle,
        quiet: args.quiet,
        overload: args.overload.clone(),
        sweep: args.sweep.clone(),
        pairs: Pairs::Random,
        sets_per_request: args.sets_per_request,
    };
    let mut shown = Shown::default();
    let mut events = |event: Event| shown.event(event);
    if let Some(dir) = &args.running {
        let dir = ClusterDir::new(dir);
        let state = RunState::load(&dir)?
            .ok_or_else(|| usage(format!("no cluster is running in {}", dir.display())))?;
        let topology = state.topology();
        let node = |spelled: &str| super::parse_node(topology, spelled);
        let pairs = match (&args.to, &args.through) {
            (Some(to), _) => Pairs::To(node(to)?),
            (None, Some(through)) => Pairs::Through(node(through)?),
            (None, None) => Pairs::Random,
        };
        pairs.check(topology, args.seed).map_err(usage)?;
        let options = Options { pairs, ..options };
        runtime()?.block_on(cuberoute_cluster::ops::up::wait_running(&dir, None))?;
        if args.idle_only {
            let window = args.idle.expect("clap requires --idle");
            let idle = run::measure_idle(&dir, window, &mut events)?;
            let topology = state.topology();
            if args.json {
                println!("{}", serde_json::to_string(&idle)?);
            } else {
                print_idle(&topology.to_string(), topology.node_count(), 0.0, &idle);
            }
            return Ok(());
        }
        let figures = run::measure_running(
            &options,
            state.topology(),
            &dir,
            Duration::ZERO,
            &mut events,
        )?;
        println!("{}", serde_json::to_string(&figures)?);
        return Ok(());
    }
    if args.idle_only {
        let window = args.idle.expect("clap requires --idle");
        let all = run::idle_only(&options, &topologies, window, &mut events)?;
        if args.json {
            println!("{}", serde_json::to_string(&all)?);
        } else {
            for f in &all {
                print_idle(&f.topology, f.nodes, f.startup_seconds, &f.idle);
            }
        }
        return Ok(());
    }
    let figures = run::clusters(&options, &topologies, &mut events)?;
    if args.json {
        println!("{}", serde_json::to_string(&figures)?);
    } else {
        print_table(&figures);
        print_scaling(&figures);
        print_sweep(&figures);
        print_completion_parts(&figures);
    }
    Ok(())
}

/// What a bench run does as it goes, on stderr: a progress bar while a cluster starts, and a
/// line for each figure as it is measured.
#[derive(Default)]
struct Shown {
    bar: WaitBar,
}

impl Shown {
    fn event(&mut self, event: Event) {
        match event {
            Event::Start(note) => print::note(note),
            Event::Round(round) => self.bar.round(round),
            Event::Waited(ready) => std::mem::take(&mut self.bar).done(ready),
            Event::Up {
                topology,
                startup,
                cpu: None,
            } => eprintln!("{topology}: up in {:.1} s", startup.as_secs_f64()),
            Event::Up {
                topology,
                startup,
                cpu: Some(cpu),
            } => eprintln!(
                "{topology}: up in {:.1} s; {}",
                startup.as_secs_f64(),
                cpu.line()
            ),
            Event::Stopped(what) => eprintln!("{what}"),
            Event::Baseline(baseline) => eprintln!(
                "baseline: raw quinn relay hop p50 {:.0} µs, {:.0} frame-hops/s",
                baseline.per_hop.p50_us, baseline.frame_hops_per_second
            ),
            Event::Idle(idle) => eprintln!(
                "idle {:.0} s: {} daemons use {:.1}% of one core together; PSS mean {:.1} MiB, RSS mean {:.1} MiB",
                idle.cpu.seconds,
                idle.cpu.processes,
                idle.cpu.percent_of_one_core,
                idle.memory.pss_mib.mean,
                idle.memory.rss_mib.mean
            ),
            Event::Swept { concurrency, point } => eprintln!(
                "{} sets in flight: {:.0} packet-hops/s at {:.1} µs each, {} sets completed, {} not within the wait",
                concurrency,
                point.saturation.packet_hops_per_second,
                point.cpu.cpu_us_per_packet_hop,
                point.saturation.sets_completed,
                point.saturation.sets_incomplete
            ),
            Event::Overload {
                topology,
                multiple,
                rate,
                run,
            } => eprintln!(
                "{topology} overload {multiple}x ({rate:.0} sets/s): peak RSS per daemon max {:.1} MiB, median {:.1} MiB; {} of {} offered complete, {} incomplete, refused {:?}, drops {:?}, events {:?}",
                run.peak_rss_mib_max,
                run.peak_rss_mib_median,
                run.sets_completed,
                run.sets_offered,
                run.sets_incomplete,
                run.refused,
                run.drops,
                run.events
            ),
            Event::Mode {
                topology,
                mode,
                clear,
                farthest,
                saturation,
            } => {
                let sealing = if clear { "clear" } else { "sealed" };
                eprintln!(
                    "{topology} {mode} {sealing}: p50 {:.0} µs p99 {:.0} µs, {:.0} sets/s",
                    farthest.set.p50_us, farthest.set.p99_us, saturation.sets_per_second
                );
            }
            Event::Ring(topology, ring) => eprintln!(
                "{topology}: ring of {} raw relays: hop p50 {:.0} µs, CPU per frame-hop {:.1} µs one at a time, {:.1} µs with {} going round; {:.2} / {:.2} wake-ups per frame-hop",
                ring.processes,
                ring.hop.per_hop.p50_us,
                ring.hop.cpu_us_per_frame_hop_sequential,
                ring.hop.cpu_us_per_frame_hop_pipelined,
                ring.hop.window,
                ring.wakeups_per_frame_hop_sequential,
                ring.wakeups_per_frame_hop_pipelined
            ),
            Event::Mesh(topology, mesh) => eprintln!(
                "{topology}: mesh of {} raw relays on its links: hop p50 {:.0} µs, CPU per frame-hop {:.1} µs one at a time, {:.1} µs with {} touring, {:.0} frame-hops/s; {:.2} / {:.2} wake-ups per frame-hop",
                mesh.processes,
                mesh.hop.per_hop.p50_us,
                mesh.hop.cpu_us_per_frame_hop_sequential,
                mesh.hop.cpu_us_per_frame_hop_pipelined,
                mesh.hop.window,
                mesh.hop.frame_hops_per_second,
                mesh.wakeups_per_frame_hop_sequential,
                mesh.wakeups_per_frame_hop_pipelined
            ),
            Event::NoRelays(topology, why) => eprintln!("{topology}: {why}"),
            Event::Measured(figures) => eprintln!(
                "{}: up in {:.1} s, farthest p50 {:.0} µs, {:.0} packet-hops/s",
                figures.topology,
                figures.startup_seconds,
                figures.farthest.set.p50_us,
                figures.saturation.packet_hops_per_second
            ),
        }
    }
}

fn print_idle(topology: &str, nodes: u64, startup_seconds: f64, idle: &Idle) {
    let (cpu, m) = (&idle.cpu, &idle.memory);
    println!(
        "{topology} ({nodes} processes): all links up in {startup_seconds:.2} s; idle over {:.0} s: \
         {:.2}% of one core together ({} processes); PSS per daemon mean {:.2} MiB, max {:.2} MiB \
         (total {:.0} MiB); RSS mean {:.2} MiB, max {:.2} MiB",
        cpu.seconds,
        cpu.percent_of_one_core,
        cpu.processes,
        m.pss_mib.mean,
        m.pss_mib.max,
        m.pss_mib_total,
        m.rss_mib.mean,
        m.rss_mib.max
    );
}

pub fn relay_ring(args: RelayRingArgs) -> anyhow::Result<()> {
    raw_ring::end_with(args.parent)?;
    cuberoute_daemon::priority::lower_to(args.nice)?;
    let credentials = Credentials::load(&args.ca, &args.cert, &args.key)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(raw_ring::forward(
        args.listen,
        args.next,
        NodeId(args.next_id),
        credentials,
    ))
}

pub fn relay_mesh(args: RelayMeshArgs) -> anyhow::Result<()> {
    raw_ring::end_with(args.parent)?;
    cuberoute_daemon::priority::lower_to(args.nice)?;
    let dir = ClusterDir::new(&args.cluster);
    let node = NodeId(args.node);
    let credentials = Credentials::load(&dir.ca_cert(), &dir.node_cert(node), &dir.node_key(node))?;
    let place = raw_mesh::Place::of(&dir, node)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(raw_mesh::forward(place, credentials))
}

pub fn relay_peer(args: RelayPeerArgs) -> anyhow::Result<()> {
    raw_ring::end_with(args.parent)?;
    let credentials = Credentials::load(&args.ca, &args.cert, &args.key)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(raw_hop::peer(args.listen, credentials))
}

/// One Markdown row per cluster: the scaling table of BENCHMARKS.md.
fn print_scaling(f: &Figures) {
    let b = &f.baseline;
    // Memory at rest when the idle cost was measured, else after the traffic.
    let when = match f.clusters.first() {
        Some(c) if c.idle.is_none() => "after traffic",
        _ => "idle",
    };
    println!(
        "\n| cluster | daemons | up in | idle CPU (% of one core, all daemons) | PSS / RSS per daemon, {when} (MiB) | farthest pair: d, p50 / p99 (µs) | 2 x d x relay hop (µs) | saturation packet-hops/s | CPU per packet-hop: 1 in flight / {} in flight (µs) |",
        f.clusters.first().map_or(0, |c| c.saturation.concurrency)
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for c in &f.clusters {
        let idle = c.idle.as_ref().map_or("-".to_string(), |i| {
            format!("{:.2}", i.cpu.percent_of_one_core)
        });
        let memory = c.idle.as_ref().map_or(&c.memory, |i| &i.memory);
        println!(
            "| {} | {} | {:.1} s | {} | {:.2} / {:.1} | {}, {:.0} / {:.0} | {:.0} | {:.0} | {:.1} / {:.1} |",
            c.topology,
            c.nodes,
            c.startup_seconds,
            idle,
            memory.pss_mib.mean,
            memory.rss_mib.mean,
            c.farthest.distance,
            c.farthest.set.p50_us,
            c.farthest.set.p99_us,
            2.0 * f64::from(c.farthest.distance) * b.per_hop.p50_us,
            c.saturation.packet_hops_per_second,
            c.cpu_sequential.cpu_us_per_packet_hop,
            c.cpu_saturation.cpu_us_per_packet_hop
        );
    }
    println!(
        "\nraw relay in the same run: hop p50 {:.0} µs; CPU per frame-hop {:.1} µs one at a time, {:.2} µs with {} in flight",
        b.per_hop.p50_us,
        b.cpu_us_per_frame_hop_sequential,
        b.cpu_us_per_frame_hop_pipelined,
        b.window
    );
    print_memory_after_quiet(f);
    println!(
        "\nAgainst a ring of as many raw relay processes, run after the cluster in the same run:\n"
    );
    println!(
        "| cluster | daemons | ring hop p50 (µs) | CPU per hop, one at a time: cluster / ring (µs) | one at a time, the cluster besides its client's requests (µs per hop; per request) | CPU per hop at saturation: cluster / ring (µs) | wake-ups per hop, one at a time: cluster / ring | wake-ups per hop at saturation: cluster / ring | farthest pair p50 / two-core bound (µs) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for c in &f.clusters {
        let Some(r) = &c.relay_ring else { continue };
        // k x d hop-handlings at the ring's CPU per frame-hop, over two cores.
        let bound = f64::from(c.farthest.k)
            * f64::from(c.farthest.distance)
            * r.hop.cpu_us_per_frame_hop_sequential
            / 2.0;
        println!(
            "| {} | {} | {:.0} | {:.1} / {:.1} | {} | {:.1} / {:.1} | {:.2} / {:.2} | {:.2} / {:.2} | {:.0} / {:.0} |",
            c.topology,
            c.nodes,
            r.hop.per_hop.p50_us,
            c.cpu_sequential.cpu_us_per_packet_hop,
            r.hop.cpu_us_per_frame_hop_sequential,
            c.cpu_sequential_requests
                .map_or("-".to_string(), |q| format!(
                    "{:.1}; {:.0}",
                    q.cpu_us_per_packet_hop_besides, q.cpu_us_per_request
                )),
            c.cpu_saturation.cpu_us_per_packet_hop,
            r.hop.cpu_us_per_frame_hop_pipelined,
            c.wakeups_sequential.wakeups_per_packet_hop,
            r.wakeups_per_frame_hop_sequential,
            c.wakeups_saturation.wakeups_per_packet_hop,
            r.wakeups_per_frame_hop_pipelined,
            c.farthest.set.p50_us,
            bound
        );
    }
    println!(
        "\nAgainst a mesh of as many raw relay processes on the cluster's own links, with as many frames touring as the saturation run had packets in flight:\n"
    );
    println!(
        "| cluster | daemons | mesh hop p50 (µs) | CPU per hop, one at a time: cluster / mesh (µs) | CPU per hop at saturation: cluster / mesh (µs) | hops/s at saturation: cluster / mesh | wake-ups per hop at saturation: cluster / mesh |"
    );
    println!("|---|---|---|---|---|---|---|");
    for c in &f.clusters {
        let Some(m) = &c.relay_mesh else { continue };
        println!(
            "| {} | {} | {:.0} | {:.1} / {:.1} | {:.1} / {:.1} | {:.0} / {:.0} | {:.2} / {:.2} |",
            c.topology,
            c.nodes,
            m.hop.per_hop.p50_us,
            c.cpu_sequential.cpu_us_per_packet_hop,
            m.hop.cpu_us_per_frame_hop_sequential,
            c.cpu_saturation.cpu_us_per_packet_hop,
            m.hop.cpu_us_per_frame_hop_pipelined,
            c.saturation.packet_hops_per_second,
            m.hop.frame_hops_per_second,
            c.wakeups_saturation.wakeups_per_packet_hop,
            m.wakeups_per_frame_hop_pipelined
        );
    }
    println!("\nWhat wakes the daemons, per packet-hop, one set at a time / at saturation:\n");
    println!(
        "| cluster | daemons | wake-ups | of which preempted | datagrams sent | send calls | receive calls | timers expired (QUIC + link) | keep-alives (PINGs) | QUIC ACK frames on links | link ends lost, frames resent |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for c in &f.clusters {
        let (q, s) = (&c.wakeups_sequential, &c.wakeups_saturation);
        println!(
            "| {} | {} | {:.2} / {:.2} | {:.2} / {:.2} | {:.2} / {:.2} | {:.2} / {:.2} | {:.2} / {:.2} | {:.2} + {:.2} / {:.2} + {:.2} | {:.3} / {:.3} | {:.2} / {:.2} | {}, {} / {}, {} |",
            c.topology,
            c.nodes,
            q.wakeups_per_packet_hop,
            s.wakeups_per_packet_hop,
            q.preempted_per_packet_hop,
            s.preempted_per_packet_hop,
            q.datagrams_sent_per_packet_hop,
            s.datagrams_sent_per_packet_hop,
            q.send_calls_per_packet_hop,
            s.send_calls_per_packet_hop,
            q.receive_calls_per_packet_hop,
            s.receive_calls_per_packet_hop,
            q.quic_timers_per_packet_hop,
            q.link_timers_per_packet_hop,
            s.quic_timers_per_packet_hop,
            s.link_timers_per_packet_hop,
            q.keepalives_per_packet_hop,
            s.keepalives_per_packet_hop,
            q.link_ack_frames_per_packet_hop,
            s.link_ack_frames_per_packet_hop,
            q.links_lost,
            q.frames_resent,
            s.links_lost,
            s.frames_resent,
        );
    }
}

/// With `--sweep`: throughput against sets in flight, the main saturation run first.
fn print_sweep(f: &Figures) {
    if f.clusters.iter().all(|c| c.saturation_sweep.is_empty()) {
        return;
    }
    println!(
        "\nSets in flight against throughput (a set completes when every copy arrived within the bench's wait):\n"
    );
    println!(
        "| cluster | sets in flight | packet-hops/s | CPU per packet-hop (µs) | of it key agreements: setups, share of CPU | CPU per packet-hop besides them (µs) | wake-ups per packet-hop | datagrams sent per packet-hop | completed: p50 / p99 (ms) | sets completed / not within the wait | link ends lost |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for c in &f.clusters {
        let main = (
            &c.saturation,
            &c.cpu_saturation,
            &c.wakeups_saturation,
            &c.key_agreements_saturation,
        );
        let swept = c
            .saturation_sweep
            .iter()
            .map(|p| (&p.saturation, &p.cpu, &p.wakeups, &p.key_agreements));
        for (s, cpu, w, k) in std::iter::once(main).chain(swept) {
            println!(
                "| {} | {} | {:.0} | {:.1} | {}, {:.0}% | {:.1} | {:.2} | {:.2} | {:.0} / {:.0} | {} / {} | {} |",
                c.topology,
                s.concurrency,
                s.packet_hops_per_second,
                cpu.cpu_us_per_packet_hop,
                k.to_seal + k.to_open,
                k.share_of_cpu * 100.0,
                k.cpu_us_per_packet_hop_besides,
                w.wakeups_per_packet_hop,
                w.datagrams_sent_per_packet_hop,
                s.completion.p50_us / 1000.0,
                s.completion.p99_us / 1000.0,
                s.sets_completed,
                s.sets_incomplete,
                w.links_lost
            );
        }
    }
}

/// The daemons' memory after the burst and after the quiet, one row per cluster.
fn print_memory_after_quiet(f: &Figures) {
    let rows = f.clusters.iter();
    let rows = rows.map(|c| (c.topology.as_str(), c.nodes, &c.memory_after_quiet));
    println!("\n{}", memory_after_quiet::table(rows));
}

/// Where a completed saturation set's time went, one line per cluster.
fn print_completion_parts(f: &Figures) {
    let ms = |q: &cuberoute_cluster::ops::percentiles::Percentiles| {
        format!(
            "{:.1} / {:.1} / {:.1}",
            q.p50_us / 1e3,
            q.p99_us / 1e3,
            q.p999_us / 1e3
        )
    };
    for c in &f.clusters {
        if let Some(p) = &c.saturation.completion_parts {
            println!(
                "{}: a completed saturation set, p50 / p99 / p99.9 (ms): to the source {}; the copies' travel {}; to the answer {}",
                c.topology,
                ms(&p.front_door),
                ms(&p.travel),
                ms(&p.answered)
            );
        }
    }
}

fn print_table(f: &Figures) {
    let b = &f.baseline;
    println!(
        "baseline (raw quinn stream relay hop, 2 processes): p50 {:.0} µs, p99 {:.0} µs per hop; {:.0} frame-hops/s",
        b.per_hop.p50_us, b.per_hop.p99_us, b.frame_hops_per_second
    );
    for c in &f.clusters {
        println!(
            "\n{} ({} nodes): all links up in {:.2} s",
            c.topology, c.nodes, c.startup_seconds
        );
        if let Some(cpu) = &c.startup_cpu {
            println!("  start-up CPU: {}", cpu.line());
        }
        for (what, p) in [("farthest", &c.farthest), ("adjacent", &c.adjacent)] {
            println!(
                "  {what:<8} {} -> {} (d {}, k {}): set p50 {:.0} µs p99 {:.0} µs; per hop p50 {:.0} µs ({:.2}x baseline)",
                p.from,
                p.to,
                p.distance,
                p.k,
                p.set.p50_us,
                p.set.p99_us,
                p.per_hop.p50_us,
                p.per_hop.p50_us / b.per_hop.p50_us
            );
        }
        if let (Some(slope), Some(fixed)) = (c.hop_slope_us, c.hop_fixed_us) {
            println!(
                "  one more hop costs {slope:.0} µs ({:.2}x baseline); input and delivery {fixed:.0} µs",
                slope / b.per_hop.p50_us
            );
        }
        let s = &c.saturation;
        println!(
            "  saturation ({} in flight, {} a request, {:.1} s): {:.0} sets/s, {:.0} packet-hops/s ({} incomplete, {} dropped)",
            s.concurrency,
            s.sets_per_request,
            s.seconds,
            s.sets_per_second,
            s.packet_hops_per_second,
            s.sets_incomplete,
            s.packets_dropped
        );
        println!(
            "  daemon CPU per packet-hop: {:.1} µs one set at a time ({:.1} µs raw relay), {:.1} µs at {} in flight ({:.1} µs raw relay at {})",
            c.cpu_sequential.cpu_us_per_packet_hop,
            b.cpu_us_per_frame_hop_sequential,
            c.cpu_saturation.cpu_us_per_packet_hop,
            s.concurrency,
            b.cpu_us_per_frame_hop_pipelined,
            b.window
        );
        if let Some(split) = c.cpu_sequential_split {
            println!(
                "  one set at a time, the daemons' CPU is {:.0} µs a set plus {:.1} µs a packet-hop (a line through the farthest and adjacent pairs)",
                split.cpu_us_per_set, split.cpu_us_per_packet_hop
            );
        }
        if let Some(r) = c.cpu_sequential_requests {
            println!(
                "  one set at a time, the client's {} control requests per set cost {:.0} µs each; besides them {:.1} µs a packet-hop",
                r.requests_per_set, r.cpu_us_per_request, r.cpu_us_per_packet_hop_besides
            );
        }
        let w = &c.wakeups_saturation;
        println!(
            "  daemon wake-ups per packet-hop: {:.2} one set at a time, {:.2} at {} in flight (per packet-hop there: {:.2} datagrams sent, {:.2} receive calls, {:.2} timers expired, {:.3} keep-alives)",
            c.wakeups_sequential.wakeups_per_packet_hop,
            w.wakeups_per_packet_hop,
            s.concurrency,
            w.datagrams_sent_per_packet_hop,
            w.receive_calls_per_packet_hop,
            w.timer_wakeups_per_packet_hop,
            w.keepalives_per_packet_hop
        );
        for o in &c.overload {
            println!(
                "  overload {}x ({:.0} sets/s offered, {} sets): {} complete, {} incomplete, refused {:?}, {} errors, {} held back by the client; drops {:?}; peak RSS per daemon max {:.1} MiB, median {:.1} MiB; {:.1} MiB max after",
                o.multiple,
                o.offered_per_second,
                o.sets_offered,
                o.sets_completed,
                o.sets_incomplete,
                o.refused,
                o.errors,
                o.sets_held_back_by_client,
                o.drops,
                o.peak_rss_mib_max,
                o.peak_rss_mib_median,
                o.after_rss_mib_max
            );
        }
        if let Some(idle) = &c.idle {
            print!("  ");
            print_idle(&c.topology, c.nodes, c.startup_seconds, idle);
        }
        println!(
            "  after traffic, per daemon: PSS mean {:.1} MiB, max {:.1} MiB; RSS mean {:.1} MiB, max {:.1} MiB",
            c.memory.pss_mib.mean,
            c.memory.pss_mib.max,
            c.memory.rss_mib.mean,
            c.memory.rss_mib.max
        );
        for m in &c.modes {
            println!(
                "  {:<24} {:<6} {} B: set p50 {:>6.0} µs p99 {:>6.0} µs; {:>6.0} sets/s ({} incomplete)",
                m.mode,
                if m.sealed { "sealed" } else { "clear" },
                m.payload_bytes,
                m.farthest.set.p50_us,
                m.farthest.set.p99_us,
                m.saturation.sets_per_second,
                m.saturation.sets_incomplete
            );
        }
    }
}
