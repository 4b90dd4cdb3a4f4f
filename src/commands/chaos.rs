//! `cuberoute chaos ...`: inject transient faults into a running cluster, or run a whole chaos
//! scenario with a report.

use super::args::{ClientArg, DirArg};
use super::network::{self, NetArgs, PartitionArgs, StudyArgs};
use super::{runtime, usage};
use cuberoute_cluster::chaos;
use cuberoute_cluster::chaos::scenario::{self, Harness, Progress, RunConfig};
use cuberoute_cluster::chaos::schedule::FaultKind;
use cuberoute_cluster::{ClusterClient, ClusterDir, launch::runner, ops::ready};
use cuberoute_daemon::client::ClientError;
use cuberoute_daemon::manifest::Manifest;
use cuberoute_daemon::roles;
use cuberoute_protocol::delivery::{Mode, Scheme};
use cuberoute_protocol::wire::control::MAX_PAYLOAD_LEN;
use cuberoute_protocol::wire::control::{Captured, Fault, ForgeWhat, Request, Response};
use cuberoute_protocol::{NodeId, Topology};
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::BTreeSet;
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
}

/// The traffic and faults of a chaos run, on real daemons (`chaos run`) or simulated ones
/// (`sim`).
#[derive(clap::Args, Debug)]
pub struct Scenario {
    /// How long the faults last (the fault-free phase before and the phase after take a third
    /// of it each, at least 2 s).
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub duration: Duration,
    /// Message sets per second.
    #[arg(long)]
    pub rate: f64,
    /// Which faults: state, buffers, crash, cut, capture, forge, loss, delay, partition
    /// (comma-separated; the last three on `cuberoute sim` or a cluster with a network of its
    /// own: `--netns` or compose). crash and cut share a budget of k-1; capture and forge act
    /// on --relays relays; partition splits the network in two halves.
    /// crash-ends (alone): sources and destinations killed and restarted at random while
    /// consuming clients take what arrives; --wait is each reliable set's deadline.
    /// host: one host of a `cluster swarm` on a test bed cut off (which one: the seed), every
    /// set checked against what the placement promised.
    #[arg(long, value_delimiter = ',')]
    pub faults: Vec<FaultKind>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// For `buffers`: the share of packets corrupted.
    #[arg(long, default_value_t = 0.05)]
    pub fraction: f64,
    /// For `state`: how often every node's variables are overwritten.
    #[arg(long, default_value = "10ms", value_parser = humantime::parse_duration)]
    pub state_every: Duration,
    /// How long each set is waited for.
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
    pub wait: Duration,
    /// The delivery mode of every set: plain, reliable, code:T, secret:T, byzantine:T,
    /// byzantine:T+code:C, or reliable+ any of them.
    #[arg(long, default_value = "plain")]
    pub delivery: Mode,
    /// For `capture` and `forge`: how many relays (by default the mode's threshold T, or 1).
    /// Traffic runs between the other nodes, so a relay is on at most one path of a set.
    #[arg(long)]
    pub relays: Option<usize>,
    /// Pad every payload with random bytes up to this many bytes.
    #[arg(long, default_value_t = 0)]
    pub payload_bytes: usize,
    /// For `loss`: the share of datagrams dropped on every link (0.02, or 2%).
    #[arg(long, default_value = "2%", value_parser = share)]
    pub loss: f64,
    /// For `delay`: how long every datagram is held on every link.
    #[arg(long, default_value = "10ms", value_parser = humantime::parse_duration)]
    pub delay: Duration,
    /// For `delay`: give or take up to this much.
    #[arg(long, default_value = "5ms", value_parser = humantime::parse_duration)]
    pub jitter: Duration,
    /// For `forge`: what the forging relays rewrite, any of payload, header, source, replay,
    /// attempt (comma-separated), or all of those; `flood` adds messages that cannot open.
    #[arg(long, default_value = "all", value_name = "WHAT")]
    pub forge: String,
    /// Send every set clear, without the end-to-end seal (the keyless control).
    #[arg(long)]
    pub clear: bool,
}

impl Scenario {
    /// The run's configuration, or why these values make none (a usage error).
    pub fn config(&self) -> anyhow::Result<RunConfig> {
        if !(self.rate > 0.0 && self.rate <= 10_000.0) {
            return Err(usage(format!(
                "--rate {} must be above 0 and at most 10000",
                self.rate
            )));
        }
        if self.duration < Duration::from_millis(100) || self.duration > Duration::from_secs(3600) {
            return Err(usage("--duration must be from 100ms to 1h"));
        }
        if self.payload_bytes > MAX_PAYLOAD_LEN {
            return Err(usage(format!(
                "--payload-bytes {} exceeds {MAX_PAYLOAD_LEN}",
                self.payload_bytes
            )));
        }
        if !(self.loss > 0.0 && self.loss < 1.0) {
            return Err(usage(format!(
                "--loss {} must be above 0 and below 1 (100%)",
                self.loss
            )));
        }
        if self.delay > Duration::from_secs(10) || self.jitter > Duration::from_secs(10) {
            return Err(usage("--delay and --jitter are at most 10s"));
        }
        let side = (self.duration / 3).max(Duration::from_secs(2));
        Ok(RunConfig {
            fault_free: side,
            with_faults: self.duration,
            after_faults: side,
            rate: self.rate,
            faults: self.faults.iter().copied().collect::<BTreeSet<_>>(),
            seed: self.seed,
            state_every: self.state_every,
            buffer_fraction_ppm: ppm(self.fraction)?,
            wait: self.wait,
            mode: self.delivery,
            relays: self.relays.unwrap_or(match self.delivery.scheme {
                Scheme::Secret { threshold: t } | Scheme::Byzantine { forgers: t, .. } => {
                    usize::from(t)
                }
                Scheme::Code { .. } | Scheme::Copies => 1,
            }),
            payload_bytes: self.payload_bytes,
            loss_rate: self.loss,
            delay: self.delay,
            jitter: self.jitter,
            forge: ForgeWhat::parse(&self.forge).map_err(|e| usage(format!("--forge: {e}")))?,
            clear: self.clear,
        })
    }
}

/// A share: `0.02` or `2%`.
fn share(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let value = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|v| v / 100.0),
        None => t.parse::<f64>(),
    };
    value.map_err(|_| format!("{text:?} is not a share (write 0.02 or 2%)"))
}

fn ppm(fraction: f64) -> anyhow::Result<u32> {
    if !(0.0..=1.0).contains(&fraction) {
        return Err(usage(format!(
            "--fraction {fraction} is not between 0 and 1"
        )));
    }
    Ok((fraction * 1e6).round() as u32)
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
            Ok(Response::Injected(done)) => println!("{}: {done}", topology.format_node(*node)),
            Ok(other) => anyhow::bail!("unexpected answer {other:?}"),
            // Beyond the certificate's role: every node refuses alike (chaos is not limited
            // to nodes), so the first refusal is the answer, and nothing was done.
            Err(ClientError::Refused { error, .. }) if roles::is_role_refusal(&error) => {
                client.close();
                anyhow::bail!(error.message);
            }
            Err(e) => {
                failed += 1;
                eprintln!("{}: {e}", topology.format_node(*node));
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
                println!("node {} killed", topology.format_node(id));
                Ok(())
            } else {
                Err(usage(format!(
                    "node {} is not running",
                    topology.format_node(id)
                )))
            }
        }
        Command::Restart(args) => {
            let dir = args.dir.cluster();
            let topology = manifest(&dir)?.topology;
            let id = super::parse_node(topology, &args.node)?;
            if runner::restart(&dir, id).map_err(|e| usage(e.to_string()))? {
                runtime()?.block_on(ready::restarted(&dir, id))?;
                println!("node {} restarted", topology.format_node(id));
                Ok(())
            } else {
                Err(usage(format!(
                    "node {} is running; kill it first",
                    topology.format_node(id)
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
                topology.format_node(c.src),
                topology.format_node(c.dst),
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
        print_report(&report);
    }
    Ok(())
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
    for l in &e.lost {
        println!(
            "  lost: {} -> {} seq {} ({})",
            l.from,
            l.to,
            l.seq,
            l.settled.as_deref().unwrap_or("source could not tell")
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
    println!(
        "chaos run on {} (seed {}), faults {:?}",
        r.topology, r.seed, r.faults
    );
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
            "  crashed {:?}, cut {:?}; every link up again {}",
            r.crashed,
            r.cut,
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
    for lost in &r.lost {
        println!(
            "  lost: {:?} {} -> {} seq {} sent at {} µs: {}{}",
            lost.phase,
            lost.from,
            lost.to,
            lost.seq,
            lost.sent_at_us,
            lost.outcome,
            lost.attempts
                .map_or(String::new(), |a| format!(" after {a} attempts"))
        );
    }
    if !r.relays.is_empty() {
        println!(
            "  relays {:?}: {} payloads captured, {} of them holding their payload or an 8-byte run of it",
            r.relays, r.captured, r.leaked
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
    println!(
        "  drops: {:?}; output entries overwritten before a client read them: {}",
        r.drops, r.output_overwritten
    );
}
