//! `cuberoute cluster ...`: a whole network as local processes or as containers.
//!
//! * `up`, `init`: [`up`] (local processes) and [`docker`] (`up --docker`, `compose`, `image`);
//! * `k8s`: [`k8s`]; `placement`: [`placement`]; `swarm`: [`swarm`];
//! * `status`, `down`, `logs`: here, the same for both kinds of cluster;
//! * `reload`, `revoke`, `view`: [`reload`], [`revoke`], [`view`];
//! * `client-cert`: [`client_cert`], a client certificate of a role.

pub mod client_cert;
pub mod docker;
pub mod k8s;
pub mod placement;
pub mod reload;
pub mod revoke;
pub mod swarm;
pub mod up;
pub mod view;

use super::args::{ClientArg, DirArg};
use super::{runtime, usage};
use cuberoute_cluster::launch::phases::Phases;
use cuberoute_cluster::launch::run_state::RunState;
use cuberoute_cluster::launch::runner;
use cuberoute_cluster::launch::start_cpu::StartCpu;
use cuberoute_cluster::ops::cluster_client::{links_up, revoked};
use cuberoute_cluster::ops::ready::{self, NotReady};
use cuberoute_cluster::{ClusterClient, ClusterDir};
use cuberoute_protocol::wire::control::NodeStatus;
use cuberoute_protocol::{NodeId, Topology};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::Write;
use std::time::{Duration, Instant};

pub use up::{InitArgs, UpArgs};

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Generate a cluster and start it (local processes, or containers with --docker); wait
    /// until every node is up and every link is up.
    Up(UpArgs),
    /// Generate a cluster directory (CA, certificates, manifest, configs) without starting it.
    Init(InitArgs),
    /// Generate a cluster for containers and write its docker compose file.
    Compose(docker::ComposeArgs),
    /// Build the static binary and the FROM-scratch image cuberoute:<version> and cuberoute:local.
    Image,
    /// Write Kubernetes manifests: a StatefulSet with a headless Service.
    K8s(k8s::Args),
    /// Which host each node would run on over several hosts, and what losing one host costs
    /// (pairs cut off by an end, pairs that keep a path, paths kept), per placement.
    Placement(placement::Args),
    /// Deploy one container per node over the hosts of a Docker Swarm (a testbed's, or a real
    /// one's through its manager), each pinned to its host by the placement; wait until every
    /// task runs and every link is up.
    Swarm(swarm::Args),
    /// Per node: up or down, links up of degree, packet counters.
    Status(StatusArgs),
    /// Stop every node of the cluster and leave no process, container or network behind.
    Down(DownArgs),
    /// Print one node's log.
    Logs(LogsArgs),
    /// Every node (or those named) reads its configuration file again, as on SIGHUP: applies
    /// what may change without a restart, and says what changed and what needs a restart.
    Reload(reload::Args),
    /// Take a node out of the cluster for good: a new revocation list signed by the cluster's
    /// CA, written into every node's directory and pushed to every node, which refuse the
    /// node's links and sets from then on (--list: what is revoked, and where it is in force).
    Revoke(revoke::Args),
    /// Serve a live view of the cluster in the browser on 127.0.0.1: the topology, each link's
    /// state and load, each node's counters, the paths of sets as they are delivered.
    View(view::Args),
    /// Issue a client certificate of a role, signed by the cluster's CA, into a directory of
    /// its own that `--cert` then names: read (status, show, recv, monitor, view), send (also
    /// send, recv --consume and ping; --as limits it to some nodes), operate (also reload and
    /// revoke) or chaos (also every chaos request). The operator's certificate has every role.
    ClientCert(client_cert::Args),
}

#[derive(clap::Args, Debug)]
pub struct StatusArgs {
    #[command(flatten)]
    pub dir: ClientArg,
    #[arg(long)]
    pub json: bool,
    /// First wait until the cluster is ready (every node answering, every link up, every
    /// container healthy), as `cluster up` does; fail if it is not within --timeout.
    #[arg(long)]
    pub wait: bool,
    /// How long --wait waits (default: 30 s plus 100 ms per node).
    #[arg(long, requires = "wait", value_parser = humantime::parse_duration)]
    pub timeout: Option<Duration>,
}

#[derive(clap::Args, Debug)]
pub struct DownArgs {
    #[command(flatten)]
    pub dir: DirArg,
    /// Keep the containers' store volumes (compose and Swarm).
    #[arg(long)]
    pub keep_volumes: bool,
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
        Command::Up(args) if args.netns && args.docker.docker => Err(usage(
            "--netns does not combine with --docker: compose gives every container a network \
             namespace of its own already",
        )),
        Command::Up(args) if args.docker.docker => docker::up(&args).map(|_| ()),
        Command::Up(args) => up::up(&args).map(|_| ()),
        Command::Init(args) => up::init_command(&args),
        Command::Compose(args) => docker::compose(&args),
        Command::Image => docker::image(),
        Command::K8s(args) => k8s::run(&args),
        Command::Placement(args) => placement::run(&args),
        Command::Status(args) if args.wait => {
            let dir = args.dir.checked()?;
            wait_running(&dir, args.timeout)?;
            status(&dir, args.json)
        }
        Command::Status(args) => status(&args.dir.checked()?, args.json),
        Command::Swarm(args) => swarm::run(&args),
        Command::Down(args) => down(&args.dir.cluster(), args.keep_volumes),
        Command::Logs(args) => logs(&args),
        Command::Reload(args) => reload::run(&args),
        Command::Revoke(args) => revoke::run(&args),
        Command::View(args) => view::run(&args),
        Command::ClientCert(args) => client_cert::run(&args),
    }
}

/// Refuse to generate over a cluster that runs, or over a directory that is not a cluster's.
fn ensure_free(dir: &ClusterDir) -> anyhow::Result<()> {
    // A Swarm stack stays recorded until `cluster down`, whether its tasks run or wait.
    if let Some(RunState::Swarm { topology, run }) = RunState::load(dir)? {
        return Err(usage(format!(
            "the Swarm stack {} ({}) is deployed from {}; take it down with `cuberoute cluster              down --dir {}`",
            run.stack,
            topology,
            dir.display(),
            dir.display()
        )));
    }
    if let Some(runners) = runner::inspect(dir)?
        && runners.alive() > 0
    {
        return Err(usage(format!(
            "a {} cluster is already running in {} ({} of {} {} alive); \
             stop it with `cuberoute cluster down --dir {}`",
            runners.state.topology(),
            dir.display(),
            runners.alive(),
            runners.nodes.len(),
            match runners.state {
                RunState::Processes(_) => "processes",
                RunState::Compose { .. } => "containers",
                RunState::Swarm { .. } => "Swarm tasks",
            },
            dir.display()
        )));
    }
    // What a cluster whose processes all ended left (a --netns cluster's network) goes first.
    cuberoute_cluster::launch::local::clear_stale(dir)?;
    if dir.path().exists() && !dir.is_cluster() && std::fs::read_dir(dir.path())?.next().is_some() {
        return Err(usage(format!(
            "{} exists and is not a cluster directory; choose another --dir",
            dir.display()
        )));
    }
    Ok(())
}

/// Check that a topology fits on this machine (memory, processes), or say why not.
fn check_size(topology: Topology) -> anyhow::Result<()> {
    use cuberoute_cluster::launch::capacity::{Machine, check};
    check(topology.node_count(), Machine::read()).map_err(|e| usage(format!("{topology}: {e}")))
}

/// [`ready::wait_ready`] with a progress bar, `timeout` counted from `started`. A cluster
/// with a node that died while starting is stopped; one that is late is left running. Returns
/// when a round of the wait first found every node answering.
async fn wait_ready(
    dir: &ClusterDir,
    started: Instant,
    timeout: Duration,
) -> anyhow::Result<Instant> {
    let cluster = ClusterClient::open(dir)?;
    let (_, total) = links_up(&[], &cluster.manifest);
    let bar = ProgressBar::new(total as u64);
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg} {pos}/{len} link ends {wide_bar} {elapsed}")
            .expect("a valid template"),
    );
    let mut answering = None;
    let waited = ready::wait_ready(
        &cluster,
        timeout.saturating_sub(started.elapsed()),
        &mut |round| {
            if answering.is_none() && round.answering() == round.nodes() {
                answering = Some(Instant::now());
            }
            bar.set_position(round.link_ends_up as u64);
            bar.set_message(if round.healthy {
                "linking"
            } else {
                "waiting for health, linking"
            });
        },
    )
    .await;
    cluster.close();
    match waited {
        Ok(_) => {
            bar.finish_and_clear();
            Ok(answering.unwrap_or_else(Instant::now))
        }
        Err(NotReady::Dead(dead)) => {
            bar.abandon();
            let _ = runner::stop(dir);
            // The first dead node's last words say why (an address in use, a bad file).
            let why = dead
                .iter()
                .find_map(|(id, _)| Some((*id, dir.last_log_line(*id)?)))
                .map(|(id, line)| format!("; node {} said: {line}", id.0))
                .unwrap_or_default();
            anyhow::bail!(
                "{}{why}; the cluster was stopped (see the logs in {})",
                NotReady::Dead(dead),
                dir.logs().display()
            )
        }
        Err(e) => {
            bar.abandon();
            anyhow::bail!(
                "{e}. It is left running: see `cuberoute cluster status --dir {}`",
                dir.display()
            )
        }
    }
}

/// [`ready::wait_ready`] on a cluster that was already running (for `timeout`, by default
/// [`ready::default_timeout`]): fails, naming what is not ready, and leaves it as it is.
pub fn wait_running(dir: &ClusterDir, timeout: Option<Duration>) -> anyhow::Result<()> {
    let runtime = runtime()?;
    let _guard = runtime.enter();
    let cluster = ClusterClient::open(dir).map_err(|e| usage(format!("{e:#}")))?;
    let timeout =
        timeout.unwrap_or_else(|| ready::default_timeout(cluster.manifest.topology.node_count()));
    let waited = runtime.block_on(ready::wait_ready(&cluster, timeout, &mut |_| {}));
    cluster.close();
    waited.map(|_| ()).map_err(|e| {
        anyhow::anyhow!(
            "{e} (the cluster in {}); see `cuberoute cluster status --dir {}`",
            dir.display(),
            dir.display()
        )
    })
}

/// Print how to use a cluster that is up.
fn print_summary(
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

fn logs(args: &LogsArgs) -> anyhow::Result<()> {
    let dir = args.dir.cluster();
    let manifest = cuberoute_daemon::manifest::Manifest::load(&dir.manifest())
        .map_err(|e| usage(e.to_string()))?;
    let id = super::parse_node(manifest.topology, &args.node)?;
    runner::logs(&dir, id, args.follow).map_err(|e| usage(e.to_string()))
}
