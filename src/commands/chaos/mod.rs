//! `cuberoute chaos ...`: inject transient faults into a running cluster, or run a whole chaos
//! scenario with a report.

pub mod network;

use super::args::{ClientArg, DirArg, Scenario, ppm};
use super::{runtime, usage};
use crate::print;
use cuberoute_cluster::chaos;
use cuberoute_cluster::chaos::scenario::{self, Harness, Progress};
use cuberoute_cluster::chaos::schedule::FaultKind;
use cuberoute_cluster::{ClusterClient, ClusterDir, launch::runner, ops::ready};
use cuberoute_daemon::client::ClientError;
use cuberoute_daemon::manifest::Manifest;
use cuberoute_daemon::roles;
use cuberoute_protocol::wire::control::{Captured, Fault, ForgeWhat, Request, Response};
use cuberoute_protocol::{NodeId, Topology};
use indicatif::{ProgressBar, ProgressStyle};
use network::{NetArgs, PartitionArgs, StudyArgs};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Overwrite the protocol variables of nodes with random values (once, or repeatedly).
    CorruptState(CorruptStateArgs),
    /// Flip random bits in packets queued in nodes' link buffers.
    CorruptBuffers(CorruptBuffersArgs),
    /// Sever a link: both ends refuse it until it is healed.
    Cut(LinkArgs),
    /// Restore a cut link (`--link A-B`), or, without --link, end every network partition.
    Heal(HealArgs),
    /// Kill a node's process or container (SIGKILL: no draining, its buffers are lost).
    Kill(NodeArgs),
    /// Start a killed node's process or container again; returns once it answers.
    Restart(NodeArgs),
    /// A curious relay: the node keeps a copy of every payload it forwards (`--off` stops).
    Capture(RelayArgs),
    /// A Byzantine relay: the node rewrites what `--what` says of every packet it forwards and
    /// recomputes every checksum, so its copies pass every per-hop check (`--off` stops).
    Forge(ForgeArgs),
    /// What a capturing node kept: one line per payload (or JSON lines with `--json`).
    Captured(CapturedArgs),
    /// Traffic, faults on a seeded schedule, and a report of what the protocol did.
    Run(RunArgs),
    /// Loss, delay with jitter, reordering or duplication on links (a cluster with a network
    /// of its own: `cluster up --netns`, or compose containers); `--off` ends them.
    Net(NetArgs),
    /// Split the network: a group of nodes loses the others (both ways, or `--oneway`), until
    /// `chaos heal`.
    Partition(PartitionArgs),
    /// What k disjoint paths buy on a bad network: under no fault, each loss and the delay on
    /// every link, sets over k paths and over one shortest path, plain and reliable; the first
    /// copy's p50, p99, p99.9 and the share lost.
    Study(StudyArgs),
}

#[derive(clap::Args, Debug)]
pub struct HealArgs {
    #[command(flatten)]
    pub dir: ClientArg,
    /// The cut link, as A-B; without it, every network partition ends.
    #[arg(long)]
    pub link: Option<String>,
}

#[derive(clap::Args, Debug)]
pub struct RelayArgs {
    #[command(flatten)]
    pub dir: ClientArg,
    /// The node.
    #[arg(long)]
    pub node: String,
    /// Turn the fault off.
    #[arg(long)]
    pub off: bool,
}

#[derive(clap::Args, Debug)]
pub struct ForgeArgs {
    #[command(flatten)]
    pub relay: RelayArgs,
    /// What to rewrite, any of payload, header, source, replay, attempt (comma-separated), or
    /// all of those; and `flood`: beside each packet forwarded, messages that cannot open
    /// (handshakes with fresh keys, broken tags) on its route. By default the payload.
    #[arg(long, value_name = "WHAT")]
    pub what: Option<String>,
}

#[derive(clap::Args, Debug)]
pub struct CapturedArgs {
    #[command(flatten)]
    pub dir: ClientArg,
    /// The node.
    #[arg(long)]
    pub node: String,
    /// Each captured payload as one JSON object per line (payload in hex).
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args, Debug)]
pub struct Target {
    #[command(flatten)]
    pub dir: ClientArg,
    /// The node.
    #[arg(long, required_unless_present = "all", conflicts_with = "all")]
    pub node: Option<String>,
    /// Every node.
    #[arg(long)]
    pub all: bool,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

#[derive(clap::Args, Debug)]
pub struct CorruptStateArgs {
    #[command(flatten)]
    pub target: Target,
    /// Repeat this often...
    #[arg(long, value_parser = humantime::parse_duration, requires = "for_")]
    pub every: Option<Duration>,
    /// ...for this long.
    #[arg(long = "for", id = "for_", value_parser = humantime::parse_duration)]
    pub for_: Option<Duration>,
}

#[derive(clap::Args, Debug)]
pub struct CorruptBuffersArgs {
    #[command(flatten)]
    pub target: Target,
    /// The share of queued packets to corrupt, 0 to 1.
    #[arg(long, default_value_t = 1.0)]
    pub fraction: f64,
    /// Also corrupt that share of the packets entering link buffers for this long.
    #[arg(long = "for", value_parser = humantime::parse_duration)]
    pub for_: Option<Duration>,
}

#[derive(clap::Args, Debug)]
pub struct LinkArgs {
    #[command(flatten)]
    pub dir: ClientArg,
    /// The link, as A-B.
    #[arg(long)]
    pub link: String,
}

/// `chaos kill` and `chaos restart` act on the node's process or container, not through its
/// control API: no client certificate is used (whoever may signal the processes, or reach the
/// container engine, may).
#[derive(clap::Args, Debug)]
pub struct NodeArgs {
    #[command(flatten)]
    pub dir: DirArg,
    /// The node.
    #[arg(long)]
    pub node: String,
}

#[derive(clap::Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub dir: ClientArg,
    #[command(flatten)]
    pub scenario: Scenario,
    /// The report as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Also write DIR/report.html (charts of every set and every fault window; nothing fetched
    /// from elsewhere) and DIR/report.json.
    #[arg(long, value_name = "DIR")]
    pub report: Option<std::path::PathBuf>,
    /// Exit 1 when the run's verdict is invalid (after printing its report), as a checker does.
    #[arg(long)]
    pub check: bool,
}

fn millis(d: Option<Duration>) -> u32 {
    d.map_or(0, |d| d.as_millis().min(u128::from(u32::MAX)) as u32)
}

fn manifest(dir: &ClusterDir) -> anyhow::Result<Manifest> {
    Manifest::load(&dir.manifest()).map_err(|e| usage(e.to_string()))
}

/// Send `fault(seed)` to each node the target names, with a seed of its own.
fn inject_each(target: &Target, fault: impl Fn(u64) -> Fault) -> anyhow::Result<()> {
    let dir = target.dir.checked()?;
    let topology = manifest(&dir)?.topology;
    let nodes: Vec<NodeId> = match &target.node {
        Some(node) => vec![super::parse_node(topology, node)?],
        None => topology.nodes().collect(),
    };
    let faults: Vec<(NodeId, Fault)> = nodes
        .into_iter()
        .map(|id| (id, fault(target.seed ^ id.0)))
        .collect();
    inject(&dir, &faults)
}

/// Send `fault(node)` to each node; print what each did.
fn inject(dir: &ClusterDir, nodes: &[(NodeId, Fault)]) -> anyhow::Result<()> {
    let runtime = runtime()?;
    let _guard = runtime.enter();
    let client = ClusterClient::open(dir).map_err(|e| usage(format!("{e:#}")))?;
    let topology = client.manifest.topology;
    let mut failed = 0;
    for (node, fault) in nodes {
        match runtime.block_on(client.request(*node, &Request::Inject(fault.clone()))) {
            Ok(Response::Injected(done)) => {
                println!("{}: {done}", crate::print::node(topology, *node))
            }
            Ok(other) => anyhow::bail!("unexpected answer {other:?}"),
            // Beyond the certificate's role: every node refuses alike (chaos is not limited
            // to nodes), so the first refusal is the answer, and nothing was done.
            Err(ClientError::Refused { error, .. }) if roles::is_role_refusal(&error) => {
                client.close();
                anyhow::bail!(error.message);
            }
            Err(e) => {
                failed += 1;
                eprintln!("{}: {e}", crate::print::node(topology, *node));
            }
        }
    }
    client.close();
    anyhow::ensure!(
        failed == 0,
        "{failed} of {} nodes refused or were unreachable",
        nodes.len()
    );
    Ok(())
}

fn parse_link(text: &str, topology: Topology) -> anyhow::Result<(NodeId, NodeId)> {
    let (a, b) = text
        .split_once('-')
        .ok_or_else(|| usage(format!("--link {text:?} is not A-B")))?;
    let (a, b) = (
        super::parse_node(topology, a)?,
        super::parse_node(topology, b)?,
    );
    if !topology.is_adjacent(a, b) {
        return Err(usage(format!(
            "{a} and {b} are not neighbours: there is no link {text}"
        )));
    }
    Ok((a, b))
}

pub fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::CorruptState(args) => {
            let (every_ms, for_ms) = (millis(args.every), millis(args.for_));
            inject_each(&args.target, |seed| Fault::CorruptState {
                seed,
                every_ms,
                for_ms,
            })
        }
        Command::CorruptBuffers(args) => {
            let (fraction_ppm, for_ms) = (ppm(args.fraction)?, millis(args.for_));
            inject_each(&args.target, |seed| Fault::CorruptBuffers {
                seed,
                fraction_ppm,
                for_ms,
            })
        }
        Command::Cut(args) => {
            let dir = args.dir.checked()?;
            let (a, b) = parse_link(&args.link, manifest(&dir)?.topology)?;
            inject(
                &dir,
                &[
                    (a, Fault::Cut { neighbour: b }),
                    (b, Fault::Cut { neighbour: a }),
                ],
            )
        }
        Command::Heal(args) => {
            let dir = args.dir.checked()?;
            let Some(link) = &args.link else {
                manifest(&dir)?;
                return network::heal_partitions(&dir);
            };
            let (a, b) = parse_link(link, manifest(&dir)?.topology)?;
            inject(
                &dir,
                &[
                    (a, Fault::Heal { neighbour: b }),
                    (b, Fault::Heal { neighbour: a }),
                ],
            )
        }
        Command::Kill(args) => {
            let dir = args.dir.cluster();
            let topology = manifest(&dir)?.topology;
            let id = super::parse_node(topology, &args.node)?;
            if runner::kill(&dir, id).map_err(|e| usage(e.to_string()))? {
                println!("node {} killed", crate::print::node(topology, id));
                Ok(())
            } else {
                Err(usage(format!(
                    "node {} is not running",
                    crate::print::node(topology, id)
                )))
            }
        }
        Command::Restart(args) => {
            let dir = args.dir.cluster();
            let topology = manifest(&dir)?.topology;
            let id = super::parse_node(topology, &args.node)?;
            if runner::restart(&dir, id).map_err(|e| usage(e.to_string()))? {
                runtime()?.block_on(ready::restarted(&dir, id))?;
                println!("node {} restarted", crate::print::node(topology, id));
                Ok(())
            } else {
                Err(usage(format!(
                    "node {} is running; kill it first",
                    crate::print::node(topology, id)
                )))
            }
        }
        Command::Capture(args) => relay_fault(&args, Fault::Capture { on: !args.off }),
        Command::Forge(args) => {
            let what = match &args.what {
                Some(what) => ForgeWhat::parse(what).map_err(|e| usage(format!("--what: {e}")))?,
                None => ForgeWhat::PAYLOAD,
            };
            relay_fault(
                &args.relay,
                Fault::Forge {
                    on: !args.relay.off,
                    what,
                },
            )
        }
        Command::Captured(args) => captured(&args),
        Command::Run(args) => chaos_run(&args),
        Command::Net(args) => {
            manifest(&args.dir.checked()?)?;
            network::net(&args)
        }
        Command::Partition(args) => {
            manifest(&args.dir.cluster())?;
            network::partition(&args)
        }
        Command::Study(args) => {
            manifest(&args.dir.checked()?)?;
            network::study(&args)
        }
    }
}

fn relay_fault(args: &RelayArgs, fault: Fault) -> anyhow::Result<()> {
    let dir = args.dir.checked()?;
    let id = super::parse_node(manifest(&dir)?.topology, &args.node)?;
    inject(&dir, &[(id, fault)])
}

/// Print every payload a capturing node kept, oldest first.
fn captured(args: &CapturedArgs) -> anyhow::Result<()> {
    let dir = args.dir.checked()?;
    let topology = manifest(&dir)?.topology;
    let id = super::parse_node(topology, &args.node)?;
    let runtime = runtime()?;
    let _guard = runtime.enter();
    let client = ClusterClient::open(&dir).map_err(|e| usage(format!("{e:#}")))?;
    let captures = runtime.block_on(chaos::judge::captured_by(&client, id));
    client.close();
    for c in captures? {
        if args.json {
            println!("{}", serde_json::to_string(&CapturedLine::from(&c))?);
        } else {
            println!(
                "#{} set {}->{} seq {} path {}: {} bytes {}",
                c.capture_index,
                crate::print::node(topology, c.src),
                crate::print::node(topology, c.dst),
                c.seq,
                c.index,
                c.payload.len(),
                hex_preview(&c.payload)
            );
        }
    }
    Ok(())
}

#[derive(serde::Serialize)]
struct CapturedLine {
    capture_index: u64,
    src: u64,
    dst: u64,
    seq: u64,
    sent_at_us: u64,
    index: u8,
    payload_hex: String,
}

impl From<&Captured> for CapturedLine {
    fn from(c: &Captured) -> CapturedLine {
        CapturedLine {
            capture_index: c.capture_index,
            src: c.src.0,
            dst: c.dst.0,
            seq: c.seq,
            sent_at_us: c.sent_at_us,
            index: c.index,
            payload_hex: c.payload.iter().map(|b| format!("{b:02x}")).collect(),
        }
    }
}

/// The first bytes of a payload in hex, with an ellipsis when there are more.
fn hex_preview(bytes: &[u8]) -> String {
    let head: String = bytes.iter().take(16).map(|b| format!("{b:02x}")).collect();
    if bytes.len() > 16 { head + "..." } else { head }
}

fn chaos_run(args: &RunArgs) -> anyhow::Result<()> {
    let dir = args.dir.checked()?;
    manifest(&dir)?;
    if args.scenario.faults.is_empty() {
        return Err(usage(
            "--faults is required: state, buffers, crash, cut, capture, forge (comma-separated), or crash-ends alone",
        ));
    }
    if let Some(fault) = args.scenario.faults.iter().find(|f| f.is_of_the_network()) {
        let has_network = cuberoute_cluster::chaos::netfault::Network::open(&dir)
            .map_err(|e| usage(format!("{e:#}")))?
            .is_some();
        if !has_network {
            return Err(usage(scenario::needs_network(*fault).to_string()));
        }
    }
    if args.scenario.faults.contains(&FaultKind::Host) {
        scenario::Runners::open(&dir)
            .and_then(|runners| runners.hosts())
            .map_err(|e| usage(format!("{e:#}")))?;
    }
    let config = args.scenario.config()?;
    let progress = Arc::new(Mutex::new(Progress::default()));
    let total = config.fault_free + config.with_faults + config.after_faults;
    let bar = ProgressBar::new(total.as_secs());
    bar.set_style(
        ProgressStyle::with_template("{spinner} chaos {elapsed}/{len}s {wide_bar} {msg}")
            .expect("a valid template"),
    );
    let runtime = runtime()?;
    let _guard = runtime.enter();
    let report = runtime.block_on(async {
        let watcher = {
            let (bar, progress) = (bar.clone(), progress.clone());
            tokio::spawn(async move {
                let started = std::time::Instant::now();
                loop {
                    let p = progress.lock().expect("progress").clone();
                    bar.set_position(started.elapsed().as_secs());
                    bar.set_message(format!(
                        "{:?}: {} sets sent, {} done, {} copies delivered",
                        p.phase.unwrap_or(scenario::Phase::FaultFree),
                        p.sets_sent,
                        p.sets_done,
                        p.copies_delivered
                    ));
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            })
        };
        let report = tokio::select! {
            report = chaos::run::run(&dir, &config, progress) => report,
            signal = interrupted() => {
                // What the run did to the network must not outlive it.
                let removed = match cuberoute_cluster::chaos::netfault::Network::open(&dir) {
                    Ok(Some(network)) => match ClusterClient::open(&dir) {
                        Ok(client) => {
                            let done = cuberoute_cluster::chaos::netfault::remove_all(&network, &client).await;
                            client.close();
                            done
                        }
                        Err(e) => Err(e),
                    },
                    Ok(None) => Ok(()),
                    Err(e) => Err(e),
                };
                let removed = match removed {
                    Ok(()) => "every network fault it applied was removed".to_string(),
                    Err(e) => format!("removing its network faults failed: {e:#}"),
                };
                Err(anyhow::anyhow!("interrupted by {signal}: {removed}"))
            }
        };
        watcher.abort();
        report
    })?;
    bar.finish_and_clear();
    if let Some(out) = &args.report {
        let page = cuberoute_cluster::chaos::page::write(
            out,
            &report.timeline,
            &serde_json::to_value(&report)?,
        )?;
        eprintln!("report: {}", page.display());
    }
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print::print_report(&report);
    }
    super::check_verdict(&report.verdict, args.check)
}

/// SIGINT or SIGTERM, by name.
async fn interrupted() -> &'static str {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = int.recv() => "SIGINT",
        _ = term.recv() => "SIGTERM",
    }
}
