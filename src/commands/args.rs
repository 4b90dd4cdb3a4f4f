//! The argument blocks more than one command takes, each flattened into a command's own `Args`
//! (`#[command(flatten)]`): the cluster directory ([`DirArg`]), the cluster and the client
//! certificate of a client command ([`ClientArg`]), a pair of nodes ([`PairArgs`]), JSON
//! output ([`JsonArg`]), and the traffic and faults of a chaos run ([`Scenario`]: `chaos run`
//! and `sim`). One definition of each flag: its spelling, its type and its parsing.
//!
//! Where a command words a flag's help its own way, it keeps its wording with
//! `#[command(mut_arg("json", |a| a.help("...")))]` on its `Args` (the help of each command is
//! as it was before these blocks were shared). This is the one module of `commands/` that the
//! commands share besides `mod.rs`.

use super::usage;
use cuberoute_cluster::chaos::scenario::RunConfig;
use cuberoute_cluster::chaos::schedule::FaultKind;
use cuberoute_cluster::{ClusterClient, ClusterDir};
use cuberoute_protocol::delivery::{Mode, Scheme};
use cuberoute_protocol::wire::control::{ForgeWhat, MAX_PAYLOAD_LEN};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

pub const DEFAULT_DIR: &str = "cuberoute-cluster";

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

/// The cluster a client command talks to, and the client certificate it talks with.
#[derive(clap::Args, Debug, Clone)]
pub struct ClientArg {
    #[command(flatten)]
    pub dir: DirArg,
    /// The client certificate: a directory holding ca.pem, client.pem and client.key, as
    /// `cuberoute cluster client-cert --out` writes one; the nodes answer what its role allows.
    /// Default: the cluster's operator certificate in --dir (every role).
    #[arg(long, value_name = "CERT_DIR")]
    pub cert: Option<PathBuf>,
}

impl ClientArg {
    /// The cluster, reached with --cert's credentials (unchecked: see [`ClientArg::checked`]).
    pub fn cluster(&self) -> ClusterDir {
        self.dir.cluster().with_client(self.cert.clone())
    }

    /// The cluster, once --cert is known to hold a client certificate of it (a usage error
    /// otherwise: missing, incomplete, or of another cluster).
    pub fn checked(&self) -> anyhow::Result<ClusterDir> {
        let dir = self.cluster();
        if dir.client_dir().is_some() {
            cuberoute_cluster::launch::certs::client_credentials(&dir)
                .map_err(|e| usage(format!("{e:#}")))?;
        }
        Ok(dir)
    }

    /// A client of the cluster (needs a tokio runtime); no cluster there or an unusable --cert
    /// is a usage error.
    pub fn open(&self) -> anyhow::Result<ClusterClient> {
        ClusterClient::open(&self.cluster()).map_err(|e| usage(format!("{e:#}")))
    }
}

/// A source and a destination: `--from` and `--to`.
#[derive(clap::Args, Debug, Clone)]
pub struct PairArgs {
    /// The source node.
    #[arg(long)]
    pub from: String,
    /// The destination node.
    #[arg(long)]
    pub to: String,
}

/// `--json`: the output as JSON instead of text.
#[derive(clap::Args, Debug, Clone, Copy)]
pub struct JsonArg {
    /// One JSON object per line.
    #[arg(long)]
    pub json: bool,
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
    /// consuming clients take what arrives; --life is each reliable set's.
    /// host: one host of a `cluster swarm` on a test bed cut off, or one process of a cluster of
    /// node hosts (`cluster up --nodes-per-process`) killed and started again (which one: the
    /// seed), every set checked against what the placement promised.
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
    /// How long each plain set is waited for (a reliable one: its --life).
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
    pub wait: Duration,
    /// How long the source keeps each reliable set, sending it again until acknowledged; the
    /// run waits for it as long [default: 2m; at most 10m]
    #[arg(long, value_parser = humantime::parse_duration)]
    pub life: Option<Duration>,
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
        if self.life.is_some() && !self.delivery.reliable {
            return Err(usage(format!(
                "--life is how long the source keeps a reliable set; --delivery {} is not reliable",
                self.delivery
            )));
        }
        let life = super::life(self.life)?;
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
            life,
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

pub fn ppm(fraction: f64) -> anyhow::Result<u32> {
    if !(0.0..=1.0).contains(&fraction) {
        return Err(usage(format!(
            "--fraction {fraction} is not between 0 and 1"
        )));
    }
    Ok((fraction * 1e6).round() as u32)
}
