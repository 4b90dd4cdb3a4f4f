//! A bench run (`cuberoute bench`): each cluster started in turn under a directory, measured
//! and taken down, with the raw quinn baselines of the same run: one hop between two processes
//! ([`raw_hop`]) first, then for each cluster of local processes a ring and a mesh of its size
//! on its addresses ([`raw_ring`], [`raw_mesh`]). Or a cluster already running measured
//! ([`measure_running`]), or only the idle cost of each ([`idle_only`]).
//!
//! What a run measures is [`measure`]'s; what it found is in [`Figures`], serialised as the
//! bench's JSON. What it does as it goes is told through [`Event`]s, for the
//! caller to show; this module prints nothing.

use crate::bench::measure::{
    self, HopCost, KeyAgreementCost, Load, PairLatency, Pairs, RequestCost, SetCost, Throughput,
    Wakeups,
};
use crate::bench::memory_after_quiet;
use crate::bench::overload::{self, Overload};
use crate::bench::raw_hop::{self, RawHop};
use crate::bench::raw_mesh::{self, RawMesh};
use crate::bench::raw_ring::{self, RawRing};
use crate::launch::capacity;
use crate::launch::docker::DEFAULT_IMAGE;
use crate::launch::generate::{self, Addressing, Ports};
use crate::launch::hosting::NodesPerProcess;
use crate::launch::layout::ClusterDir;
use crate::launch::local::Lifetime;
use crate::launch::owned::OwnedClusters;
use crate::launch::runner;
use crate::launch::start::{self, Containers, Local, Note};
use crate::launch::start_cpu::StartCpu;
use crate::launch::usage::{self, Idle, Memory};
use crate::ops::cluster_client::ClusterClient;
use crate::ops::ready::{self, Progress};
use crate::ops::up;
use anyhow::Context;
use cuberoute_daemon::tls::Credentials;
use cuberoute_protocol::delivery::Mode;
use cuberoute_protocol::{NodeId, Topology};
use serde::Serialize;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

/// What a bench run measures, and where.
#[derive(Clone, Debug)]
pub struct Options {
    /// Where the clusters are generated, each in a subdirectory (and the baseline's).
    pub dir: PathBuf,
    /// Sequential sends per latency measurement.
    pub samples: usize,
    /// The length of each saturation run.
    pub duration: Duration,
    /// Sets in flight during the saturation run.
    pub concurrency: usize,
    pub seed: u64,
    /// Delivery modes measured beside plain copies.
    pub delivery: Vec<Mode>,
    /// Each mode clear as well as sealed.
    pub clear_too: bool,
    /// The plain sets of the latency and saturation measurements clear (no end-to-end seal,
    /// so no sealing session to make with each new pair).
    pub clear: bool,
    /// The payload of the delivery-mode measurements and of the overload runs.
    pub payload_bytes: usize,
    /// The clusters as containers (docker compose) instead of local processes.
    pub docker: bool,
    /// How many nodes each local process runs (a node host), or each container with `docker`.
    pub nodes_per_process: NodesPerProcess,
    /// Before any traffic, the idle cost over this long (after the cluster rested).
    pub idle: Option<Duration>,
    /// How long the daemons rest before their memory after quiet is read (default
    /// [`memory_after_quiet::QUIET`]).
    pub quiet: Option<Duration>,
    /// Open-loop runs at these multiples of the saturation rate.
    pub overload: Vec<f64>,
    /// Saturation runs at these numbers of sets in flight, after the memory.
    pub sweep: Vec<usize>,
    /// Between which pairs the saturation sets go (other than random: a running cluster's
    /// only, `--to` and `--through`).
    pub pairs: Pairs,
    /// How many saturation sets the client sends, and waits for, in one request
    /// ([`Load::sets_per_request`]).
    pub sets_per_request: usize,
}

/// What a run does as it goes, in order, for the caller to show.
pub enum Event<'a> {
    /// What a cluster's start says (the image it built).
    Start(Note<'a>),
    /// A round of a cluster's readiness wait...
    Round(&'a Progress),
    /// ...and the end of the wait (`true`: the cluster is ready).
    Waited(bool),
    /// A cluster is up, in `startup`, with the CPU its start took (local processes).
    Up {
        topology: Topology,
        startup: Duration,
        cpu: Option<&'a StartCpu>,
    },
    /// A cluster the run started was taken down: what was done.
    Stopped(&'a str),
    /// The baseline of one hop between two processes, measured.
    Baseline(&'a RawHop),
    /// A cluster's idle cost, measured.
    Idle(&'a Idle),
    /// One saturation run of the sweep, at `concurrency` sets in flight.
    Swept {
        concurrency: usize,
        point: &'a SweepPoint,
    },
    /// One open-loop run at `multiple` of the saturation rate, `rate` sets per second.
    Overload {
        topology: Topology,
        multiple: f64,
        rate: f64,
        run: &'a Overload,
    },
    /// A delivery mode, sealed or `clear`, measured.
    Mode {
        topology: Topology,
        mode: Mode,
        clear: bool,
        farthest: &'a PairLatency,
        saturation: &'a Throughput,
    },
    /// The ring of raw processes of a cluster's size, measured.
    Ring(Topology, &'a RawRing),
    /// The mesh of raw processes on a cluster's links, measured.
    Mesh(Topology, &'a RawMesh),
    /// The raw ring and mesh, a process per node, were not run: why.
    NoRelays(Topology, &'a str),
    /// A cluster measured, its baselines included.
    Measured(&'a ClusterFigures),
}

#[derive(Serialize)]
pub struct ClusterFigures {
    pub topology: String,
    pub nodes: u64,
    /// The niceness the load generator (this process) ran at.
    pub load_generator_nice: i32,
    pub startup_seconds: f64,
    /// The CPU the start took (local processes started by this command only).
    pub startup_cpu: Option<StartCpu>,
    pub farthest: PairLatency,
    pub adjacent: PairLatency,
    pub saturation: Throughput,
    /// Daemon CPU per packet-hop: the farthest pair's sequential sets (one in flight)...
    pub cpu_sequential: HopCost,
    /// ...the adjacent pair's sequential sets, for the split below...
    pub cpu_sequential_adjacent: HopCost,
    /// ...and the two split by a line: what a set costs, and what each packet-hop adds. The line
    /// holds only where a hop costs the same in both pairs' sets: on 32 daemons it does; from
    /// 128 up the farthest pair's hops cost more each than the adjacent pair's (k long copies
    /// keep more processes running at once), and the set's share comes out at or below zero
    /// (docs/notes/2026-11-28-base-point-table.md, "The scaling table again, and one set at a
    /// time split").
    pub cpu_sequential_split: Option<SetCost>,
    /// ...and the farthest pair's sets less their client's two control requests, whose cost
    /// is measured apart in the same run: what a set costs that a raw relay's frame does not.
    /// (`null` if the set whose wait is asked for again never arrived.)
    pub cpu_sequential_requests: Option<RequestCost>,
    /// ...and the saturation run (`--concurrency` in flight)...
    pub cpu_saturation: HopCost,
    /// ...of which the sealing's key agreements: the pairs of nodes its random pairs met for
    /// the first time (on large clusters, nearly every set's).
    pub key_agreements_saturation: KeyAgreementCost,
    /// What woke the daemons per packet-hop: the farthest pair's sequential sets...
    pub wakeups_sequential: Wakeups,
    /// ...and the saturation run.
    pub wakeups_saturation: Wakeups,
    /// The saturation run's wake-ups per packet-hop (`wakeups_saturation` has what made them).
    pub wakeups_per_packet_hop: f64,
    /// With `--overload`: the saturation run with the overload runs' payload...
    pub overload_reference: Option<Throughput>,
    /// ...and one open-loop run per multiple of its rate.
    pub overload: Vec<Overload>,
    /// With `--sweep`: a saturation run per number of sets in flight, after the memory.
    pub saturation_sweep: Vec<SweepPoint>,
    pub rss_kib_mean: f64,
    pub rss_kib_max: u64,
    /// PSS and RSS per daemon after the traffic.
    pub memory: Memory,
    /// PSS and RSS per daemon right after the traffic and after 30 s without traffic.
    pub memory_after_quiet: memory_after_quiet::AfterBurst,
    /// With `--idle`: the cost of the cluster before any traffic.
    pub idle: Option<Idle>,
    /// Marginal latency of one hop, from a line through every copy of both pairs.
    pub hop_slope_us: Option<f64>,
    /// What input at the source and delivery cost, from the same line.
    pub hop_fixed_us: Option<f64>,
    /// Plain copies and each `--delivery` mode, with `--payload-bytes` payloads.
    pub modes: Vec<ModeFigures>,
    /// The baseline of this size: a ring of as many raw relay processes (local clusters only).
    pub relay_ring: Option<RawRing>,
    /// The baseline of this graph: a mesh of raw relays on the cluster's links, with as many
    /// frames touring as the saturation run has packets in flight (local clusters only).
    pub relay_mesh: Option<RawMesh>,
}

/// One run of `--sweep`: the saturation at one number of sets in flight, and its cost.
#[derive(Serialize, Debug)]
pub struct SweepPoint {
    pub saturation: Throughput,
    pub cpu: HopCost,
    pub wakeups: Wakeups,
    pub key_agreements: KeyAgreementCost,
}

/// One delivery mode on one cluster.
#[derive(Serialize)]
pub struct ModeFigures {
    pub mode: String,
    /// Whether the sets went sealed end to end.
    pub sealed: bool,
    pub payload_bytes: usize,
    /// Sequential sets between the farthest pair, until complete at the destination.
    pub farthest: PairLatency,
    pub saturation: Throughput,
}

/// `--idle-only`: start-up and idle cost, nothing else.
#[derive(Serialize)]
pub struct IdleFigures {
    pub topology: String,
    pub nodes: u64,
    pub startup_seconds: f64,
    pub idle: Idle,
}

#[derive(Serialize)]
pub struct Figures {
    pub baseline: RawHop,
    pub clusters: Vec<ClusterFigures>,
}

/// Where a cluster's nodes listen: node i at 127.5.0.0 + 1 + i.
const BASE: Ipv4Addr = Ipv4Addr::new(127, 5, 0, 0);

/// The async runtime of the measurements: two worker threads, as the CLI's client commands
/// use.
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?)
}

/// Measure the baseline of one hop, then each of `topologies` in turn (started under the
/// options' directory, measured, taken down, then its ring and mesh).
pub fn clusters(
    options: &Options,
    topologies: &[Topology],
    events: &mut dyn FnMut(Event),
) -> anyhow::Result<Figures> {
    std::fs::create_dir_all(&options.dir)?;
    let owned = OwnedClusters::watch();
    let baseline = baseline(options)?;
    events(Event::Baseline(&baseline));
    let mut clusters = Vec::new();
    for &topology in topologies {
        let figures = measure(options, topology, &owned, events)?;
        events(Event::Measured(&figures));
        clusters.push(figures);
    }
    Ok(Figures { baseline, clusters })
}

/// Start `topology`, measure it, take it down; then measure the raw ring and mesh of its size
/// on its addresses (local processes only).
fn measure(
    options: &Options,
    topology: Topology,
    owned: &OwnedClusters,
    events: &mut dyn FnMut(Event),
) -> anyhow::Result<ClusterFigures> {
    let (dir, startup, startup_cpu) = start(options, topology, owned, events)?;
    let result = measure_running(options, topology, &dir, startup, events);
    events(Event::Stopped(&owned.stop(&dir)?));
    let mut figures = result?;
    figures.startup_cpu = startup_cpu;
    if options.docker {
        return Ok(figures);
    }
    // The raw baselines run a process per node: beyond what the machine holds (a cluster of
    // node hosts may be larger), they are left out rather than let the kernel's OOM killer in.
    let alone = capacity::Shape::alone(topology.node_count());
    if let Err(e) = capacity::check(alone, capacity::Machine::read()) {
        let why = format!("the raw relays, a process per node, are not run: {e}");
        events(Event::NoRelays(topology, &why));
        return Ok(figures);
    }
    let ring = runtime()?.block_on(raw_ring::run_on(
        &dir,
        &std::env::current_exe()?,
        generate::CLUSTER_NICE,
        RELAY_FRAME_LEN,
        options.samples * 40,
        options.concurrency,
        options.duration,
    ))?;
    events(Event::Ring(topology, &ring));
    figures.relay_ring = Some(ring);
    let mesh = runtime()?.block_on(raw_mesh::run_on(
        &dir,
        &std::env::current_exe()?,
        generate::CLUSTER_NICE,
        RELAY_FRAME_LEN,
        options.samples * 40,
        options.concurrency * figures.farthest.k as usize,
        options.duration,
        options.seed,
    ))?;
    events(Event::Mesh(topology, &mesh));
    figures.relay_mesh = Some(mesh);
    Ok(figures)
}

/// The size of a link data frame carrying a 64-byte payload without a trace: what the relay
/// baselines send.
const RELAY_FRAME_LEN: usize = 120;

/// Start `topology` in its own directory under the options' directory, its daemons ending with
/// this process; returns it, the start-up time and, for local processes, the CPU the start
/// took.
fn start(
    options: &Options,
    topology: Topology,
    owned: &OwnedClusters,
    events: &mut dyn FnMut(Event),
) -> anyhow::Result<(ClusterDir, Duration, Option<StartCpu>)> {
    let name = topology.to_string().replace([':', ','], "-");
    let dir = ClusterDir::new(options.dir.join(name));
    let timeout = ready::default_timeout(topology.node_count());
    let up = owned.start(&dir, || {
        let spawned = if options.docker {
            let containers = Containers {
                topology,
                dir: dir.clone(),
                subnet: Ipv4Addr::new(10, 205, 0, 0),
                image: DEFAULT_IMAGE.into(),
                nodes_per_container: options.nodes_per_process,
            };
            start::compose(&containers, &mut |note| events(Event::Start(note)))?
        } else {
            // Killed outright, the bench takes its local daemons with it all the same.
            let local = Local {
                lifetime: Lifetime::WithLauncher,
                nodes_per_process: options.nodes_per_process,
                ..Local::loopback(topology, dir.clone(), BASE)
            };
            start::spawn(&local, &mut |note| events(Event::Start(note)))?
        };
        let up = runtime()?.block_on(up::wait_started(spawned, timeout, &mut |round| {
            events(Event::Round(round))
        }));
        events(Event::Waited(up.is_ok()));
        up
    })?;
    let startup = up.phases.total();
    events(Event::Up {
        topology,
        startup,
        cpu: up.cpu.as_ref(),
    });
    Ok((dir, startup, up.cpu))
}

/// How long a cluster this command started rests before its idle cost is measured: the
/// readiness wait's control connections are gone by then (their idle timeout).
const SETTLE: Duration = cuberoute_daemon::tls::CONTROL_IDLE_TIMEOUT;

/// The idle cost of the cluster running in `dir` over `window`.
pub fn measure_idle(
    dir: &ClusterDir,
    window: Duration,
    events: &mut dyn FnMut(Event),
) -> anyhow::Result<Idle> {
    let pids = runner::pids(dir)?;
    let idle = usage::idle(&pids, window);
    events(Event::Idle(&idle));
    Ok(idle)
}

/// `--idle-only`: start each of `topologies` under the options' directory, let it rest, measure
/// its idle cost over `window`, take it down; nothing else.
pub fn idle_only(
    options: &Options,
    topologies: &[Topology],
    window: Duration,
    events: &mut dyn FnMut(Event),
) -> anyhow::Result<Vec<IdleFigures>> {
    std::fs::create_dir_all(&options.dir)?;
    let owned = OwnedClusters::watch();
    let mut all = Vec::new();
    for &topology in topologies {
        let (dir, startup, _) = start(options, topology, &owned, events)?;
        std::thread::sleep(SETTLE);
        let idle = measure_idle(&dir, window, events);
        events(Event::Stopped(&owned.stop(&dir)?));
        all.push(IdleFigures {
            topology: topology.to_string(),
            nodes: topology.node_count(),
            startup_seconds: startup.as_secs_f64(),
            idle: idle?,
        });
    }
    Ok(all)
}

/// `--sweep`: saturate the cluster in `dir` with each number of sets in flight in turn, on a
/// client of its own (the main one is closed before the memory is read).
fn sweep(
    options: &Options,
    dir: &ClusterDir,
    pids: &[u32],
    runtime: &tokio::runtime::Runtime,
    events: &mut dyn FnMut(Event),
) -> anyhow::Result<Vec<SweepPoint>> {
    if options.sweep.is_empty() {
        return Ok(Vec::new());
    }
    let client = ClusterClient::open(dir)?;
    let mut points = Vec::new();
    for (run, &concurrency) in (1..).zip(&options.sweep) {
        // Pairs of their own: the main run's would find their sealing keys agreed already.
        let seed = options.seed.wrapping_add(run);
        let (saturation, cost) = runtime.block_on(measure::saturate_costed(
            &client,
            pids,
            options.duration,
            concurrency,
            seed,
            Load::default(),
        ));
        let point = SweepPoint {
            saturation,
            cpu: cost.cpu,
            wakeups: cost.wakeups,
            key_agreements: cost.key_agreements,
        };
        events(Event::Swept {
            concurrency,
            point: &point,
        });
        points.push(point);
    }
    client.close();
    Ok(points)
}

/// Measure the cluster of `topology` running in `dir`, which took `startup` to start (zero:
/// started elsewhere, and it is not let rest before an idle measurement).
pub fn measure_running(
    options: &Options,
    topology: Topology,
    dir: &ClusterDir,
    startup: Duration,
    events: &mut dyn FnMut(Event),
) -> anyhow::Result<ClusterFigures> {
    let idle = options
        .idle
        .map(|w| {
            if startup > Duration::ZERO {
                std::thread::sleep(SETTLE);
            }
            measure_idle(dir, w, events)
        })
        .transpose()?;
    let runtime = runtime()?;
    let _guard = runtime.enter();
    let client = ClusterClient::open(dir)?;
    let src = NodeId(0);
    let far = topology
        .nodes()
        .max_by_key(|&v| (topology.distance(src, v), v))
        .expect("nodes");
    let near = topology.neighbours(src).last().expect("a neighbour");
    let pids = runner::pids(dir)?;
    let (
        farthest,
        cost_sequential,
        adjacent,
        cost_adjacent,
        cpu_per_request,
        saturation,
        cost_saturation,
    ) = runtime.block_on(async {
        // Warm up: connections, and every daemon's first packets. Reading every node's
        // counters opens the control connection to each; their handshakes and path MTU
        // probes are over before the first window.
        let plain = Load {
            clear: options.clear,
            pairs: options.pairs,
            sets_per_request: options.sets_per_request,
            ..Load::default()
        };
        measure::pair_latency(&client, src, far, 20, plain).await?;
        measure::pair_latency(&client, src, near, 20, plain).await?;
        measure::cluster_counts(&client).await;
        tokio::time::sleep(Duration::from_secs(2)).await;
        let (farthest, cpu_sequential) = measure::window_cost(&client, &pids, async {
            measure::pair_latency(&client, src, far, options.samples, plain).await
        })
        .await;
        let (adjacent, cost_adjacent) = measure::window_cost(&client, &pids, async {
            measure::pair_latency(&client, src, near, options.samples, plain).await
        })
        .await;
        let cpu_per_request =
            measure::cpu_per_request(&client, &pids, (src, far), options.samples).await?;
        let (saturation, cost_saturation) = measure::saturate_costed(
            &client,
            &pids,
            options.duration,
            options.concurrency,
            options.seed,
            plain,
        )
        .await;
        anyhow::Ok((
            farthest?,
            cpu_sequential,
            adjacent?,
            cost_adjacent,
            cpu_per_request,
            saturation,
            cost_saturation,
        ))
    })?;
    let mut overloads = Vec::new();
    let overload_load = Load {
        mode: Mode::PLAIN,
        payload_bytes: options.payload_bytes,
        clear: false,
        pairs: options.pairs,
        // Open-loop sets go one a request; their reference rate is measured so too.
        sets_per_request: 1,
    };
    // The saturation rate of the overload runs' own payload: what they offer multiples of.
    let overload_reference = (!options.overload.is_empty()).then(|| {
        runtime.block_on(measure::saturate(
            &client,
            options.duration,
            options.concurrency,
            options.seed,
            overload_load,
        ))
    });
    for &multiple in &options.overload {
        let reference = overload_reference.as_ref().expect("with --overload");
        let rate = multiple * reference.sets_per_second;
        let run = runtime.block_on(overload::overload(
            &client,
            &pids,
            multiple,
            rate,
            options.duration,
            options.seed,
            overload_load,
        ));
        events(Event::Overload {
            topology,
            multiple,
            rate,
            run: &run,
        });
        overloads.push(run);
    }
    let mut modes = Vec::new();
    if !options.delivery.is_empty() || options.clear_too {
        let plain = std::iter::once(Mode::PLAIN);
        // Clear first: the baseline before what it is the baseline of, as everywhere here.
        let ways: &[bool] = if options.clear_too {
            &[true, false]
        } else {
            &[false]
        };
        let loads = plain
            .chain(options.delivery.iter().copied())
            .flat_map(|mode| ways.iter().map(move |&clear| (mode, clear)));
        for (mode, clear) in loads {
            let load = Load {
                mode,
                payload_bytes: options.payload_bytes,
                clear,
                pairs: options.pairs,
                sets_per_request: options.sets_per_request,
            };
            let (farthest, saturation) = runtime.block_on(async {
                measure::pair_latency(&client, src, far, 20, load).await?;
                let farthest =
                    measure::pair_latency(&client, src, far, options.samples, load).await?;
                let saturation = measure::saturate(
                    &client,
                    options.duration,
                    options.concurrency,
                    options.seed,
                    load,
                )
                .await;
                anyhow::Ok((farthest, saturation))
            })?;
            events(Event::Mode {
                topology,
                mode,
                clear,
                farthest: &farthest,
                saturation: &saturation,
            });
            modes.push(ModeFigures {
                mode: mode.to_string(),
                sealed: !clear,
                payload_bytes: options.payload_bytes,
                farthest,
                saturation,
            });
        }
    }
    client.close();
    let memory = usage::memory(&runner::pids(dir)?);
    let memory_after_quiet = memory_after_quiet::after_burst(
        &runner::pids(dir)?,
        options.quiet.unwrap_or(memory_after_quiet::QUIET),
    );
    let saturation_sweep = sweep(options, dir, &pids, &runtime, events)?;
    let all_copies: Vec<(u32, f64)> = farthest
        .copies
        .iter()
        .chain(&adjacent.copies)
        .copied()
        .collect();
    let slope = measure::hop_slope(&all_copies);
    Ok(ClusterFigures {
        load_generator_nice: cuberoute_daemon::priority::current()?,
        hop_slope_us: slope.map(|s| s.0),
        hop_fixed_us: slope.map(|s| s.1),
        topology: topology.to_string(),
        nodes: topology.node_count(),
        startup_seconds: startup.as_secs_f64(),
        startup_cpu: None,
        farthest,
        adjacent,
        saturation,
        cpu_sequential: cost_sequential.cpu,
        cpu_sequential_adjacent: cost_adjacent.cpu,
        cpu_sequential_split: SetCost::between(
            (&cost_sequential.cpu, options.samples),
            (&cost_adjacent.cpu, options.samples),
        ),
        cpu_sequential_requests: cpu_per_request.map(|per_request| {
            RequestCost::of((&cost_sequential.cpu, options.samples), per_request)
        }),
        cpu_saturation: cost_saturation.cpu,
        key_agreements_saturation: cost_saturation.key_agreements,
        wakeups_sequential: cost_sequential.wakeups,
        wakeups_saturation: cost_saturation.wakeups,
        wakeups_per_packet_hop: cost_saturation.wakeups.wakeups_per_packet_hop,
        overload: overloads,
        overload_reference,
        saturation_sweep,
        rss_kib_mean: memory.rss_mib.mean * 1024.0,
        rss_kib_max: (memory.rss_mib.max * 1024.0) as u64,
        memory,
        memory_after_quiet,
        idle,
        modes,
        relay_ring: None,
        relay_mesh: None,
    })
}

/// Start a relay peer process with node 1's certificate of a generated Q_1 cluster, and
/// measure against it with node 0's.
fn baseline(options: &Options) -> anyhow::Result<RawHop> {
    let dir = ClusterDir::new(options.dir.join("baseline"));
    generate::generate(
        &dir,
        "q:1".parse().expect("valid"),
        &Addressing::Loopback {
            base: Ipv4Addr::new(127, 5, 255, 0),
            ports: Ports::default(),
            home: Vec::new(),
        },
    )?;
    let listen: SocketAddr = "127.5.255.2:7000".parse()?;
    let node = |id: u64, file| dir.node_dir(NodeId(id)).join(file);
    let mut peer = Command::new(std::env::current_exe()?)
        .args(["bench-relay-peer", "--listen", &listen.to_string()])
        .args(["--parent", &std::process::id().to_string()])
        .arg("--ca")
        .arg(dir.ca_cert())
        .arg("--cert")
        .arg(node(1, "node.pem"))
        .arg("--key")
        .arg(node(1, "node.key"))
        .stdin(Stdio::null())
        .spawn()
        .context("starting the relay peer")?;
    let credentials =
        Credentials::load(&dir.ca_cert(), &node(0, "node.pem"), &node(0, "node.key"))?;
    std::thread::sleep(Duration::from_millis(300));
    let frame_len = RELAY_FRAME_LEN;
    let pids = [std::process::id(), peer.id()];
    let result = runtime()?.block_on(raw_hop::measure(
        &pids,
        listen,
        NodeId(1),
        &credentials,
        frame_len,
        options.samples * 4,
        options.concurrency,
        options.duration,
    ));
    let _ = peer.kill();
    let _ = peer.wait();
    result
}
