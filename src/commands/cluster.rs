//! `cuberoute cluster up | init | status | down | logs`: a whole network as local processes.

use super::{runtime, usage};
use anyhow::Context;
use cuberoute_cluster::generate::{self, MAX_LOCAL_NODES};
use cuberoute_cluster::local::{self, RunState};
use cuberoute_cluster::status::links_up;
use cuberoute_cluster::{Addressing, ClusterClient, ClusterDir, Ports};
use cuberoute_protocol::Topology;
use cuberoute_protocol::wire::control::NodeStatus;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::Write;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

pub const DEFAULT_DIR: &str = "cluster";

#[derive(clap::Args, Debug, Clone)]
pub struct DirArg {
    /// The cluster directory.
    #[arg(long, default_value = DEFAULT_DIR)]
    pub dir: PathBuf,
}

impl DirArg {
    pub fn cluster(&self) -> ClusterDir {
        ClusterDir::new(&self.dir)
    }
}

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Generate a cluster and start one daemon process per node; wait until every link is up.
    Up(UpArgs),
    /// Generate a cluster directory (CA, certificates, manifest, configs) without starting it.
    Init(InitArgs),
    /// Per node: up or down, links up of degree, packet counters.
    Status(StatusArgs),
    /// Stop every daemon of the cluster (SIGTERM, then SIGKILL) and leave no process behind.
    Down(DirArg),
    /// Print one node's log.
    Logs(LogsArgs),
}

#[derive(clap::Args, Debug)]
pub struct InitArgs {
    /// `q:N` or `eh:S,T`.
    pub topology: String,
    #[command(flatten)]
    pub dir: DirArg,
    /// Node i listens on this address + 1 + i (inside 127.0.0.0/8).
    #[arg(long, default_value = "127.1.0.0")]
    pub base_addr: Ipv4Addr,
    /// The link port; control and metrics take the next two.
    #[arg(long, default_value_t = 7000)]
    pub port: u16,
}

#[derive(clap::Args, Debug)]
pub struct UpArgs {
    #[command(flatten)]
    pub init: InitArgs,
    /// Give up waiting for links after this long (default: 30 s plus 100 ms per node).
    #[arg(long, value_parser = humantime::parse_duration)]
    pub timeout: Option<Duration>,
}

#[derive(clap::Args, Debug)]
pub struct StatusArgs {
    #[command(flatten)]
    pub dir: DirArg,
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args, Debug)]
pub struct LogsArgs {
    /// The node whose log to print.
    pub node: String,
    #[command(flatten)]
    pub dir: DirArg,
    /// Keep printing what the node logs.
    #[arg(long, short)]
    pub follow: bool,
}

pub fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Up(args) => up(&args).map(|_| ()),
        Command::Init(args) => {
            let (dir, topology) = init(&args)?;
            println!(
                "cluster {topology} generated in {} ({} nodes); start it with `cuberoute cluster up`",
                dir.display(),
                topology.node_count()
            );
            Ok(())
        }
        Command::Status(args) => status(&args.dir.cluster(), args.json),
        Command::Down(dir) => down(&dir.cluster()),
        Command::Logs(args) => logs(&args),
    }
}

/// Check the arguments and the directory, and generate the cluster.
fn init(args: &InitArgs) -> anyhow::Result<(ClusterDir, Topology)> {
    let topology = super::parse_topology(&args.topology)?;
    if topology.node_count() > MAX_LOCAL_NODES {
        return Err(usage(format!(
            "{topology} has {} nodes; a cluster on one machine has at most {MAX_LOCAL_NODES}",
            topology.node_count()
        )));
    }
    generate::check_loopback(args.base_addr, topology.node_count())
        .map_err(|e| usage(e.to_string()))?;
    if args.port > u16::MAX - 2 {
        return Err(usage(format!(
            "--port {} leaves no room for the control and metrics ports",
            args.port
        )));
    }
    let dir = args.dir.cluster();
    if let Some(state) = RunState::load(&dir)? {
        let alive = state.alive(&dir).len();
        if alive > 0 {
            return Err(usage(format!(
                "a {} cluster is already running in {} ({alive} of {} processes alive); \
                 stop it with `cuberoute cluster down --dir {}`",
                state.topology,
                dir.display(),
                state.processes.len(),
                dir.display()
            )));
        }
    }
    if dir.path().exists() && !dir.is_cluster() && std::fs::read_dir(dir.path())?.next().is_some() {
        return Err(usage(format!(
            "{} exists and is not a cluster directory; choose another --dir",
            dir.display()
        )));
    }
    let ports = Ports {
        link: args.port,
        control: args.port + 1,
        metrics: args.port + 2,
    };
    generate::generate(
        &dir,
        topology,
        &Addressing::Loopback {
            base: args.base_addr,
            ports,
        },
    )?;
    Ok((dir, topology))
}

/// `cluster up`: generate, start, wait for every link, print a summary. Returns the time from
/// start to all links up.
pub fn up(args: &UpArgs) -> anyhow::Result<Duration> {
    let (dir, topology, elapsed) = start(args)?;
    let manifest = cuberoute_daemon::manifest::Manifest::load(&dir.manifest())?;
    let links: u64 = topology
        .nodes()
        .map(|v| u64::from(topology.degree(v)))
        .sum::<u64>()
        / 2;
    let first = &manifest.nodes[0];
    let last = &manifest.nodes[manifest.nodes.len() - 1];
    let d = dir.display();
    let far = topology
        .nodes()
        .max_by_key(|&v| topology.distance(first.id, v))
        .expect("a topology has nodes");
    println!(
        "cluster {topology} is up in {:.1} s: {} nodes, {links} links, in {d}",
        elapsed.as_secs_f64(),
        topology.node_count()
    );
    println!(
        "  nodes listen on {} .. {} (link, control and metrics ports {}, {}, {})",
        host(&first.addr),
        host(&last.addr),
        port(&first.addr),
        port(&first.control),
        first.metrics.as_deref().map(port).unwrap_or("-"),
    );
    println!(
        "  send:    cuberoute send --dir {d} --from {} --to {} --message hello --wait",
        topology.format_node(first.id),
        topology.format_node(far)
    );
    println!(
        "  recv:    cuberoute recv --dir {d} --node {}",
        topology.format_node(far)
    );
    println!("  status:  cuberoute cluster status --dir {d}");
    println!(
        "  logs:    cuberoute cluster logs --dir {d} {}",
        topology.format_node(first.id)
    );
    println!("  down:    cuberoute cluster down --dir {d}");
    Ok(elapsed)
}

/// Generate and start the cluster, and wait until every link is up. Returns the time that took.
pub fn start(args: &UpArgs) -> anyhow::Result<(ClusterDir, Topology, Duration)> {
    let started = Instant::now();
    let (dir, topology) = init(&args.init)?;
    let binary = std::env::current_exe().context("locating the cuberoute binary")?;
    local::start(&dir, topology, &binary)?;
    let timeout = args.timeout.unwrap_or(
        Duration::from_secs(30) + Duration::from_millis(100) * topology.node_count() as u32,
    );
    runtime()?.block_on(wait_linked(&dir, started, timeout))?;
    Ok((dir, topology, started.elapsed()))
}

fn host(addr: &str) -> &str {
    addr.rsplit_once(':').map_or(addr, |(h, _)| h)
}

fn port(addr: &str) -> &str {
    addr.rsplit_once(':').map_or("", |(_, p)| p)
}

/// Poll every node until all links are up, with a progress bar. Fails if a process dies or
/// the time runs out, naming the nodes.
async fn wait_linked(dir: &ClusterDir, started: Instant, timeout: Duration) -> anyhow::Result<()> {
    let cluster = ClusterClient::open(dir)?;
    let (_, total) = links_up(&[], &cluster.manifest);
    let bar = ProgressBar::new(total as u64);
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} linking {pos}/{len} link ends {wide_bar} {elapsed}",
        )
        .expect("a valid template"),
    );
    loop {
        let statuses = cluster.statuses(Duration::from_secs(2)).await;
        let (up, total) = links_up(&statuses, &cluster.manifest);
        bar.set_position(up as u64);
        if up == total {
            bar.finish_and_clear();
            return Ok(());
        }
        let state = RunState::load(dir)?.context("run.toml vanished")?;
        let alive = state.alive(dir);
        if alive.len() < state.processes.len() {
            bar.abandon();
            let dead: Vec<String> = state
                .processes
                .iter()
                .filter(|p| !alive.iter().any(|a| a.id == p.id))
                .map(|p| format!("{} (log: {})", p.id, dir.log(p.id).display()))
                .collect();
            let _ = local::stop(dir, Duration::from_secs(5));
            anyhow::bail!(
                "daemon processes exited: {}; the cluster was stopped",
                dead.join(", ")
            );
        }
        if started.elapsed() > timeout {
            bar.abandon();
            let missing: Vec<String> = statuses
                .iter()
                .filter(|(_, s)| s.as_ref().map_or(true, |s| s.links_up() < s.links.len()))
                .map(|(id, _)| id.to_string())
                .collect();
            anyhow::bail!(
                "not every link came up within {timeout:?} ({up}/{total} link ends); nodes still \
                 linking: {}. The cluster is left running: see `cuberoute cluster status --dir {}`",
                missing.join(", "),
                dir.display()
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// `cluster status`. Exits 1 if any node is down.
pub fn status(dir: &ClusterDir, json: bool) -> anyhow::Result<()> {
    let runtime = runtime()?;
    let _guard = runtime.enter();
    let cluster = ClusterClient::open(dir).map_err(|e| usage(format!("{e:#}")))?;
    let statuses = runtime.block_on(cluster.statuses(Duration::from_secs(2)));
    let state = RunState::load(dir)?;
    let alive = state.as_ref().map(|s| s.alive(dir)).unwrap_or_default();
    let process_note = |id| match &state {
        Some(state) if state.processes.iter().any(|p| p.id == id) => {
            if alive.iter().any(|p| p.id == id) {
                "process running"
            } else {
                "process exited"
            }
        }
        _ => "no local process",
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
                    "counters": s.counters,
                }),
                Err(e) => serde_json::json!({
                    "id": id.0, "up": false, "error": e, "process": process_note(*id),
                }),
            })
            .collect();
        let (up, total) = links_up(&statuses, &cluster.manifest);
        serde_json::to_writer(
            &mut out,
            &serde_json::json!({
                "topology": topology.to_string(), "nodes_up": statuses.len() - down,
                "nodes": nodes, "link_ends_up": up, "link_ends": total,
            }),
        )?;
        writeln!(out)?;
    } else {
        write_status_table(&mut out, topology, &statuses, process_note)?;
    }
    if down > 0 {
        anyhow::bail!("{down} of {} nodes are down", statuses.len());
    }
    Ok(())
}

pub fn write_status_table(
    out: &mut impl Write,
    topology: Topology,
    statuses: &[(cuberoute_protocol::NodeId, Result<NodeStatus, String>)],
    process_note: impl Fn(cuberoute_protocol::NodeId) -> &'static str,
) -> std::io::Result<()> {
    let width = topology
        .format_node(cuberoute_protocol::NodeId(0))
        .len()
        .max(4);
    writeln!(
        out,
        "{:<width$}  {:<5}  {:>5}  {:>9}  {:>9}  {:>9}  {:>7}",
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
                    "{name:<width$}  {:<5}  {:>5}  {:>9}  {:>9}  {:>9}  {:>7}",
                    "up",
                    format!("{}/{}", s.links_up(), s.links.len()),
                    row[0],
                    row[1],
                    row[2],
                    row[3]
                )?;
            }
            Err(e) => writeln!(out, "{name:<width$}  down   ({}; {e})", process_note(*id))?,
        }
    }
    let up = statuses.iter().filter(|(_, s)| s.is_ok()).count();
    writeln!(
        out,
        "{:<width$}  {up}/{} up   {:>9}  {:>9}  {:>9}  {:>7}",
        "all",
        statuses.len(),
        totals[0],
        totals[1],
        totals[2],
        totals[3]
    )
}

/// `cluster down`.
pub fn down(dir: &ClusterDir) -> anyhow::Result<()> {
    if RunState::load(dir)?.is_none() {
        println!("no cluster is running in {}", dir.display());
        return Ok(());
    }
    let report = local::stop(dir, Duration::from_secs(5))?;
    println!(
        "cluster in {} stopped: {} processes exited on SIGTERM, {} killed",
        dir.display(),
        report.terminated,
        report.killed
    );
    Ok(())
}

fn logs(args: &LogsArgs) -> anyhow::Result<()> {
    let dir = args.dir.cluster();
    let cluster_manifest = cuberoute_daemon::manifest::Manifest::load(&dir.manifest())
        .map_err(|e| usage(e.to_string()))?;
    let id = super::parse_node(cluster_manifest.topology, &args.node)?;
    let path = dir.log(id);
    let mut file = std::fs::File::open(&path)
        .map_err(|e| usage(format!("no log for node {id} at {}: {e}", path.display())))?;
    let mut out = std::io::stdout().lock();
    loop {
        std::io::copy(&mut file, &mut out)?;
        if !args.follow {
            return Ok(());
        }
        out.flush()?;
        std::thread::sleep(Duration::from_millis(200));
    }
}
