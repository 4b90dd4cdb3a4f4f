//! A daemon's configuration: a TOML file (`--config node.toml`) whose every key is also a flag,
//! the flag winning. Relative paths in the file are relative to the file.
//!
//! ```toml
//! topology = "eh:2,2"
//! id = 5                          # decimal, 0b binary or dotted a.b.c
//! # id_from_hostname = true       # instead: the trailing -N of the host name (StatefulSets)
//! # nodes_per_pod = 4             # with it: pod N runs nodes 4N to 4N+3 as one node host
//! listen = "127.1.0.6:7000"       # links from neighbours
//! control_listen = "127.1.0.6:7001"
//! metrics_listen = "127.1.0.6:7002"   # optional
//! manifest = "manifest.toml"
//! log_format = "text"             # or "json"
//! log_level = "info"              # a tracing filter; RUST_LOG when this is not set
//!
//! seal = true                     # seal every set end to end (a client's --clear sends one clear)
//! # or, with sealing's times (these are the defaults):
//! # [seal]
//! # on = true
//! # rekey_after = "2m"            # a session seals nothing once this old: keys renewed
//! # erase_after = "3m"            # both ends erase a session's keys once this old
//! # skew = "1s"                   # how far other nodes' clocks may be ahead of this one's
//! # handshake_after = "1h"        # renew by derivation until a chain is this old, then by a
//! #                               # full handshake ("0s": every renewal a full handshake)
//!
//! [tls]
//! ca = "ca.pem"
//! cert = "node.pem"                # `{id}` stands for the node's id: "/certs/node-{id}.pem"
//! key = "node.key"
//!
//! [keys]                          # end-to-end sealing (crate::keys)
//! directory = "keys.bin"          # every node's public key, signed by the cluster CA
//! secret = "seal.key"             # this node's secret key (`{id}` allowed)
//! revoked = "revoked.bin"         # optional: the CA-signed revocation list (kept here)
//!
//! [buffers]                       # optional; these are the defaults
//! input = 1024                    # message sets waiting for input()
//! link = 4096                     # packets per link not yet acknowledged by the neighbour
//! output = 4096                   # delivered copies kept for clients
//! requests = 4096                 # control requests in progress, waiting ones included
//! memory_mib = 64                 # bytes all buffers hold together (crate::budget)
//!
//! [chaos]
//! allow = true                    # whether clients of role chaos may inject faults
//!
//! [liveness]                      # optional; these are the defaults (crate::liveness)
//! interval = "200ms"              # the dialling end of each link probes this often
//! multiplier = 3                  # a neighbour silent this many intervals is taken for dead
//! watch_exits = true              # a neighbour's process on this machine is watched (crate::exits)
//! route_around = true             # sources send around the dead links they know of (crate::down)
//!
//! [store]                         # optional: without it reliable sets are kept in memory only
//! path = "store.redb"             # delivered reliable sets and unsettled sends (crate::store)
//! max_mib = 256                   # entries held together; a set past it is refused, not acked
//! max_age_s = 86400               # entries older than this are dropped, consumed or not
//! seen_for_s = 86400              # how long a delivered set is known again after a restart
//! ```
//!
//! SIGHUP (or a reload request) reads the file again: `log_level`, `log_format`,
//! `buffers.requests` and `chaos.allow` take effect at once ([`RELOADABLE`]); any other change
//! waits for a restart, and a file with a problem changes nothing. A key given as a flag keeps
//! the flag's value.
//!
//! Every problem is a [`ConfigError`] naming the key; the binary exits 2 on it.

use crate::keys::{KeyPaths, Keys};
use crate::liveness;
use crate::manifest::Manifest;
use crate::store::Retention;
use crate::tls::Credentials;
use cuberoute_protocol::seal::session::SessionLimits;
use cuberoute_protocol::{NodeId, Topology};
use serde::Deserialize;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// A configuration problem, with the key it concerns.
#[derive(Debug, thiserror::Error)]
#[error("config key `{key}`: {message}")]
pub struct ConfigError {
    pub key: std::borrow::Cow<'static, str>,
    pub message: String,
}

fn error(
    key: impl Into<std::borrow::Cow<'static, str>>,
    message: impl std::fmt::Display,
) -> ConfigError {
    ConfigError {
        key: key.into(),
        message: message.to_string(),
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, clap::ValueEnum, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

impl LogFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            LogFormat::Text => "text",
            LogFormat::Json => "json",
        }
    }
}

/// The default of `buffers.memory_mib`.
pub const DEFAULT_MEMORY_MIB: usize = 64;
/// The bounds of `buffers.memory_mib`: below 8 MiB a 64 KiB payload's k copies would not fit
/// the links' share; above 64 GiB is a typo.
const MEMORY_MIB_RANGE: std::ops::RangeInclusive<usize> = 8..=65536;

/// Buffer limits. See the module documentation.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct BufferLimits {
    pub input: usize,
    pub link: usize,
    pub output: usize,
    /// Control requests in progress at once, over every client connection; one more is
    /// refused as busy.
    pub requests: usize,
    /// What the buffers hold together, in bytes (`buffers.memory_mib`), shared out by
    /// [`crate::budget::Shares`].
    pub memory_bytes: usize,
}

impl Default for BufferLimits {
    fn default() -> Self {
        BufferLimits {
            input: 1024,
            link: 4096,
            output: 4096,
            requests: 4096,
            memory_bytes: DEFAULT_MEMORY_MIB << 20,
        }
    }
}

/// The flags of `cuberoute daemon`: the config file and an override for each of its keys.
#[derive(clap::Args, Debug, Default, Clone)]
pub struct DaemonArgs {
    /// The node's TOML configuration file.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The topology: `q:N`, `eh:S,T`, `hhc:M`, `mc:K,M` or `rdn:BASE,K`.
    #[arg(long)]
    pub topology: Option<String>,
    /// This node's id.
    #[arg(long)]
    pub id: Option<String>,
    /// Take the id from the host name's trailing `-N` (a StatefulSet pod's ordinal).
    #[arg(long, conflicts_with = "id")]
    pub id_from_hostname: bool,
    /// Address for links from neighbours (UDP).
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// Address for the control API (UDP).
    #[arg(long, value_name = "ADDR")]
    pub control_listen: Option<String>,
    /// Address for Prometheus metrics (TCP, HTTP).
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<String>,
    /// The cluster manifest.
    #[arg(long, value_name = "FILE")]
    pub manifest: Option<PathBuf>,
    /// The cluster CA certificate (PEM).
    #[arg(long, value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,
    /// This node's certificate (PEM).
    #[arg(long, value_name = "FILE")]
    pub tls_cert: Option<PathBuf>,
    /// This node's private key (PEM).
    #[arg(long, value_name = "FILE")]
    pub tls_key: Option<PathBuf>,
    /// Whether this node seals the sets it sends end to end (a client may still ask for one
    /// clear set).
    #[arg(long, value_name = "BOOL")]
    pub seal: Option<bool>,
    /// How old a sealing session may get before it seals nothing more and a new one is made
    /// (`seal.rekey_after`, e.g. `2m`).
    #[arg(long, value_name = "DURATION")]
    pub seal_rekey_after: Option<String>,
    /// How old a sealing session gets before both ends erase its keys (`seal.erase_after`).
    #[arg(long, value_name = "DURATION")]
    pub seal_erase_after: Option<String>,
    /// How far other nodes' clocks may be ahead of this one's (`seal.skew`).
    #[arg(long, value_name = "DURATION")]
    pub seal_skew: Option<String>,
    /// How long sessions are renewed by deriving their successor before a full handshake
    /// (`seal.handshake_after`; `0s`: every renewal is a full handshake).
    #[arg(long, value_name = "DURATION")]
    pub seal_handshake_after: Option<String>,
    /// The cluster's key directory (signed by the CA).
    #[arg(long, value_name = "FILE")]
    pub keys_directory: Option<PathBuf>,
    /// This node's secret sealing key.
    #[arg(long, value_name = "FILE")]
    pub keys_secret: Option<PathBuf>,
    /// The cluster's revocation list, kept here (optional).
    #[arg(long, value_name = "FILE")]
    pub keys_revoked: Option<PathBuf>,
    /// Message sets the input buffer holds.
    #[arg(long, value_name = "N")]
    pub input_buffer: Option<usize>,
    /// Packets each link's message buffer holds.
    #[arg(long, value_name = "N")]
    pub link_buffer: Option<usize>,
    /// Delivered copies the output buffer holds.
    #[arg(long, value_name = "N")]
    pub output_buffer: Option<usize>,
    /// Control requests in progress at once (waiting ones included); more are refused as busy.
    #[arg(long, value_name = "N")]
    pub requests_limit: Option<usize>,
    /// MiB all buffers hold together (links and input, output, delivery inbox and outbox).
    #[arg(long, value_name = "MIB")]
    pub memory_mib: Option<usize>,
    /// Log format on stderr.
    #[arg(long, value_enum)]
    pub log_format: Option<LogFormat>,
    /// Log filter, as RUST_LOG takes it (`info`, `warn,cuberoute_daemon=debug`); RUST_LOG when
    /// not given here or in the file, else `info`.
    #[arg(long, value_name = "FILTER")]
    pub log_level: Option<String>,
    /// Whether clients of role chaos may inject faults (the chaos tooling; `daemon::roles`).
    #[arg(long, value_name = "BOOL")]
    pub chaos_allowed: Option<bool>,
    /// The process's niceness, 0 to 19: how much lower than a client's its scheduling priority
    /// is (see docs/daemon.md, "Priority").
    #[arg(long, value_name = "N")]
    pub nice: Option<i32>,
    /// How often the dialling end of each link probes its neighbour (`liveness.interval`, e.g.
    /// `200ms`).
    #[arg(long, value_name = "DURATION")]
    pub liveness_interval: Option<String>,
    /// How many intervals without a datagram from a neighbour make it dead
    /// (`liveness.multiplier`).
    #[arg(long, value_name = "N")]
    pub liveness_multiplier: Option<u32>,
    /// Whether a link to a neighbour on the same machine watches its process exit
    /// (`liveness.watch_exits`; false: probes alone find it gone).
    #[arg(long, value_name = "BOOL")]
    pub watch_exits: Option<bool>,
    /// Whether this node, as a source, sends around the dead links it knows of
    /// (`liveness.route_around`; false: always on the constructed paths, the baseline).
    #[arg(long, value_name = "BOOL")]
    pub route_around: Option<bool>,
    /// The node's store (`store.path`): reliable sets are acknowledged only once written
    /// there, and kept across a restart. `none`: keep them in memory only.
    #[arg(long, value_name = "FILE|none")]
    pub store: Option<PathBuf>,
    /// Check the configuration (the file, the flags, the certificate, key and CA, the manifest)
    /// and exit: 0 and a summary if the daemon would start with it, 2 and the reason if not.
    /// Addresses are not bound (a running daemon holds them).
    #[arg(long)]
    pub check: bool,
    /// Another node this process runs beside this one, from its configuration file (no flag
    /// applies to it): a node host, whose nodes link with each other by a call and with the
    /// rest over QUIC. Given again for each.
    #[arg(long = "with-config", value_name = "FILE")]
    pub with_config: Vec<PathBuf>,
    /// A file naming more nodes this process runs, one configuration file a line (relative to
    /// the list's directory), as `--with-config` each: a process of 65,536 nodes is more than a
    /// command line holds.
    #[arg(long = "with-configs", value_name = "LIST")]
    pub with_configs: Option<PathBuf>,
}

impl DaemonArgs {
    /// The other nodes' configuration files: each `--with-config`, then each line of
    /// `--with-configs` (blank lines skipped); an error names the list that cannot be read.
    pub fn hosted_configs(&self) -> Result<Vec<PathBuf>, String> {
        let mut paths = self.with_config.clone();
        if let Some(list) = &self.with_configs {
            let text = std::fs::read_to_string(list)
                .map_err(|e| format!("--with-configs {}: {e}", list.display()))?;
            let base = list.parent().map(Path::to_path_buf).unwrap_or_default();
            paths.extend(
                text.lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .map(|l| base.join(l)),
            );
        }
        Ok(paths)
    }
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    topology: Option<String>,
    id: Option<toml::Value>,
    #[serde(default)]
    id_from_hostname: bool,
    nodes_per_pod: Option<u64>,
    listen: Option<String>,
    control_listen: Option<String>,
    metrics_listen: Option<String>,
    manifest: Option<PathBuf>,
    log_format: Option<LogFormat>,
    log_level: Option<String>,
    nice: Option<i32>,
    /// `seal = BOOL`, or a `[seal]` table (see [`seal_config`]).
    seal: Option<toml::Value>,
    #[serde(default)]
    tls: FileTls,
    #[serde(default)]
    keys: FileKeys,
    #[serde(default)]
    chaos: FileChaos,
    #[serde(default)]
    buffers: FileBuffers,
    #[serde(default)]
    store: FileStore,
    #[serde(default)]
    liveness: FileLiveness,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileLiveness {
    interval: Option<String>,
    multiplier: Option<i64>,
    watch_exits: Option<bool>,
    route_around: Option<bool>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileTls {
    ca: Option<PathBuf>,
    cert: Option<PathBuf>,
    key: Option<PathBuf>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileKeys {
    directory: Option<PathBuf>,
    secret: Option<PathBuf>,
    revoked: Option<PathBuf>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileStore {
    path: Option<PathBuf>,
    max_mib: Option<u64>,
    max_age_s: Option<u64>,
    seen_for_s: Option<u64>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileChaos {
    allow: Option<bool>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileBuffers {
    input: Option<usize>,
    link: Option<usize>,
    output: Option<usize>,
    requests: Option<usize>,
    memory_mib: Option<usize>,
}

/// The id in the host name's trailing `-N`, as a StatefulSet names its pods (`cuberoute-3`).
fn id_from_hostname() -> Result<String, String> {
    let name = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .ok_or("the host name cannot be read")?;
    let name = name.trim();
    name.rsplit_once('-')
        .map(|(_, n)| n)
        .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        .map(str::to_string)
        .ok_or_else(|| format!("host name {name:?} does not end in -N"))
}

/// A checked configuration: everything a daemon needs, loaded and consistent.
#[derive(Debug, Clone)]
pub struct NodeConfig {
    pub topology: Topology,
    pub id: NodeId,
    pub listen: SocketAddr,
    pub control_listen: SocketAddr,
    pub metrics_listen: Option<SocketAddr>,
    pub manifest: Manifest,
    pub credentials: Credentials,
    /// Whether this node seals what it sends.
    pub seal: bool,
    /// Sealing's sessions: how long their keys live.
    pub sessions: SessionLimits,
    /// Where its keys are, and the keys, loaded and checked.
    pub key_paths: KeyPaths,
    pub keys: Arc<Keys>,
    pub buffers: BufferLimits,
    pub log_format: LogFormat,
    pub log_level: String,
    pub chaos_allowed: bool,
    /// The niceness the process lowers itself to at start (0: as started).
    pub nice: i32,
    /// Where reliable sets are kept across a crash, and how much of them; `None`: in memory.
    pub store: Option<StoreConfig>,
    /// How links find a dead neighbour.
    pub liveness: liveness::Settings,
    /// Whether sources send around the dead links they know of (`liveness.route_around`).
    pub route_around: bool,
    /// The nodes of its pod, itself first, when its configuration runs several nodes a pod
    /// (`nodes_per_pod` with `id_from_hostname`: pod N runs nodes N * per to N * per + per - 1,
    /// as many as the topology has): the daemon runs them all as one node host.
    pub pod: Option<Vec<NodeId>>,
}

/// The node's store, as configured (opened by the daemon at start, and by `--check`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreConfig {
    pub path: PathBuf,
    pub retention: Retention,
}

/// The settings a reload applies without a restart.
pub const RELOADABLE: [&str; 4] = ["log_level", "log_format", "buffers.requests", "chaos.allow"];

impl NodeConfig {
    /// Every setting as `(key, value)`, for a reload to compare and an operator to read.
    pub fn settings(&self) -> Vec<(&'static str, String)> {
        let b = &self.buffers;
        vec![
            ("topology", self.topology.to_string()),
            ("id", self.id.to_string()),
            ("listen", self.listen.to_string()),
            ("control_listen", self.control_listen.to_string()),
            (
                "metrics_listen",
                self.metrics_listen
                    .map_or("off".to_string(), |a| a.to_string()),
            ),
            ("manifest", self.manifest.fingerprint()),
            ("tls", format!("digest {:016x}", self.credentials.digest)),
            ("seal", self.seal.to_string()),
            (
                "seal.rekey_after",
                humantime::format_duration(Duration::from_micros(self.sessions.rekey_after_us))
                    .to_string(),
            ),
            (
                "seal.erase_after",
                humantime::format_duration(Duration::from_micros(self.sessions.erase_after_us))
                    .to_string(),
            ),
            (
                "seal.skew",
                humantime::format_duration(Duration::from_micros(self.sessions.skew_us))
                    .to_string(),
            ),
            (
                "seal.handshake_after",
                humantime::format_duration(Duration::from_micros(self.sessions.handshake_after_us))
                    .to_string(),
            ),
            (
                "keys",
                format!(
                    "{} nodes in {}",
                    self.keys.len(),
                    self.key_paths.directory.display()
                ),
            ),
            ("log_level", self.log_level.clone()),
            ("log_format", self.log_format.as_str().to_string()),
            ("buffers.input", b.input.to_string()),
            ("buffers.link", b.link.to_string()),
            ("buffers.output", b.output.to_string()),
            ("buffers.requests", b.requests.to_string()),
            ("buffers.memory_mib", (b.memory_bytes >> 20).to_string()),
            ("chaos.allow", self.chaos_allowed.to_string()),
            ("nice", self.nice.to_string()),
            (
                "liveness.interval",
                humantime::format_duration(self.liveness.interval).to_string(),
            ),
            ("liveness.multiplier", self.liveness.multiplier.to_string()),
            (
                "liveness.watch_exits",
                self.liveness.watch_exits.to_string(),
            ),
            ("liveness.route_around", self.route_around.to_string()),
            (
                "store",
                self.store
                    .as_ref()
                    .map_or("none (in memory)".to_string(), |s| {
                        format!(
                            "{} ({} MiB, entries {} s, keys {} s)",
                            s.path.display(),
                            s.retention.max_bytes >> 20,
                            s.retention.max_age_us / 1_000_000,
                            s.retention.seen_for_us / 1_000_000
                        )
                    }),
            ),
        ]
    }
}

/// The key a TOML error at byte `at` of `text` is about, as `table.key` (the table from the
/// last `[table]` header before it), and its line (from 1).
fn key_at(text: &str, at: usize) -> (String, usize) {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let this_line = text.lines().nth(line - 1).unwrap_or_default();
    let key = this_line
        .split('=')
        .next()
        .unwrap_or_default()
        .trim()
        .trim_matches(['[', ']'])
        .trim();
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let table = text[..line_start]
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('[') && l.ends_with(']'))
        .map(|l| l.trim_matches(['[', ']']).trim());
    let key = match (table, key.is_empty()) {
        (_, true) => "config".to_string(),
        (Some(table), false) if !this_line.trim_start().starts_with('[') => {
            format!("{table}.{key}")
        }
        _ => key.to_string(),
    };
    (key, line)
}

impl NodeConfig {
    /// Read the file (if any), apply the flags, and check the result.
    pub fn resolve(args: &DaemonArgs) -> Result<NodeConfig, ConfigError> {
        let (file, base) = match &args.config {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| error("config", format!("cannot read {}: {e}", path.display())))?;
                let file: FileConfig = toml::from_str(&text).map_err(|e| {
                    let (key, at) =
                        e.span()
                            .map_or(("config".to_string(), String::new()), |span| {
                                let (key, line) = key_at(&text, span.start);
                                (key, format!(" line {line}"))
                            });
                    error(
                        key,
                        format!("{}{at} is not valid: {}", path.display(), e.message()),
                    )
                })?;
                (
                    file,
                    path.parent().map(Path::to_path_buf).unwrap_or_default(),
                )
            }
            None => (FileConfig::default(), PathBuf::new()),
        };
        let relative = |p: PathBuf| if p.is_relative() { base.join(p) } else { p };
        let from_file_id = file.id.map(|v| match v {
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::String(s) => s,
            other => other.to_string(),
        });

        let topology_text = args
            .topology
            .clone()
            .or(file.topology)
            .ok_or_else(|| error("topology", "missing"))?;
        let topology: Topology = topology_text.parse().map_err(|e| error("topology", e))?;
        let from_hostname = args.id_from_hostname || (args.id.is_none() && file.id_from_hostname);
        let pod_nodes = match file.nodes_per_pod {
            Some(0) => return Err(error("nodes_per_pod", "must be at least 1")),
            // One node of a pod's, named by its id (`--id`): the daemon resolves each so.
            Some(_) if !from_hostname && args.id.is_some() => 1,
            Some(n) if !from_hostname => {
                return Err(error(
                    "nodes_per_pod",
                    format!("{n} nodes a pod needs id_from_hostname (the pod's ordinal)"),
                ));
            }
            Some(n) => n,
            None => 1,
        };
        let id_text = if from_hostname {
            // Pod N of a StatefulSet whose pods run `nodes_per_pod` nodes each: its first.
            let ordinal = id_from_hostname().map_err(|e| error("id_from_hostname", e))?;
            match (ordinal.parse::<u64>(), pod_nodes) {
                (Ok(n), per) if per > 1 => n
                    .checked_mul(per)
                    .map(|first| first.to_string())
                    .ok_or_else(|| error("nodes_per_pod", "the pod's first node overflows"))?,
                _ => ordinal,
            }
        } else {
            args.id
                .clone()
                .or(from_file_id)
                .ok_or_else(|| error("id", "missing"))?
        };
        let id = topology.parse_node(&id_text).map_err(|e| error("id", e))?;

        let socket = |key, value: Option<String>| -> Result<Option<SocketAddr>, ConfigError> {
            value
                .map(|v| {
                    v.parse()
                        .map_err(|_| error(key, format!("{v:?} is not an ip:port address")))
                })
                .transpose()
        };
        let listen = socket("listen", args.listen.clone().or(file.listen))?
            .ok_or_else(|| error("listen", "missing"))?;
        let control_listen = socket(
            "control_listen",
            args.control_listen.clone().or(file.control_listen),
        )?
        .ok_or_else(|| error("control_listen", "missing"))?;
        let metrics_listen = socket(
            "metrics_listen",
            args.metrics_listen.clone().or(file.metrics_listen),
        )?;
        if listen == control_listen || Some(listen) == metrics_listen {
            return Err(error("control_listen", "must differ from `listen`"));
        }

        let manifest_path = args
            .manifest
            .clone()
            .or(file.manifest.map(relative))
            .ok_or_else(|| error("manifest", "missing"))?;
        let manifest = Manifest::load(&manifest_path).map_err(|e| error("manifest", e))?;
        if manifest.topology != topology {
            return Err(error(
                "manifest",
                format!(
                    "{} is for {}, this node is configured for {topology}",
                    manifest_path.display(),
                    manifest.topology
                ),
            ));
        }
        let missing = manifest.missing_neighbours(id);
        if !missing.is_empty() {
            let list: Vec<String> = missing.iter().map(|n| topology.format_node(*n)).collect();
            return Err(error(
                "manifest",
                format!(
                    "{} misses neighbour(s) {} of node {}",
                    manifest_path.display(),
                    list.join(", "),
                    topology.format_node(id)
                ),
            ));
        }

        let tls_path = |key: &'static str, flag: &Option<PathBuf>, file: Option<PathBuf>| {
            flag.clone()
                .or(file.map(relative))
                .ok_or_else(|| error(key, "missing"))
        };
        // `{id}` in a path stands for this node's id: one file per node, one config for all.
        let with_id =
            |p: PathBuf| PathBuf::from(p.to_string_lossy().replace("{id}", &id.0.to_string()));
        let ca = tls_path("tls.ca", &args.tls_ca, file.tls.ca)?;
        let cert = with_id(tls_path("tls.cert", &args.tls_cert, file.tls.cert)?);
        let key = with_id(tls_path("tls.key", &args.tls_key, file.tls.key)?);
        let credentials = Credentials::load(&ca, &cert, &key).map_err(|e| {
            use crate::tls::TlsError::*;
            let key_name = match &e {
                BadCa { .. } => "tls.ca",
                Read { path, .. } | Empty { path, .. } if *path == ca => "tls.ca",
                Read { path, .. } if *path == key => "tls.key",
                _ => "tls.cert",
            };
            error(key_name, e)
        })?;
        if credentials.identity != crate::tls::Identity::Node(id) {
            return Err(error(
                "tls.cert",
                format!(
                    "{} names {}, not node {}",
                    cert.display(),
                    credentials.identity,
                    id
                ),
            ));
        }

        let key_paths = KeyPaths {
            directory: tls_path("keys.directory", &args.keys_directory, file.keys.directory)?,
            secret: with_id(tls_path(
                "keys.secret",
                &args.keys_secret,
                file.keys.secret,
            )?),
            revoked: args
                .keys_revoked
                .clone()
                .or(file.keys.revoked.map(relative))
                .map(with_id),
        };
        let keys =
            Keys::load(&key_paths, &credentials.ca, &topology.to_string(), id).map_err(|e| {
                use crate::keys::KeyError::*;
                let key_name = match &e {
                    Read { path, .. } | Malformed { path, .. } if *path == key_paths.secret => {
                        "keys.secret"
                    }
                    Mismatch { .. } => "keys.secret",
                    Read { path, .. } | Malformed { path, .. } | NotSigned { path }
                        if Some(path) == key_paths.revoked.as_ref() =>
                    {
                        "keys.revoked"
                    }
                    _ => "keys.directory",
                };
                error(key_name, e)
            })?;

        let defaults = BufferLimits::default();
        let limit =
            |key: &'static str, flag: Option<usize>, file: Option<usize>, default| match flag
                .or(file)
                .unwrap_or(default)
            {
                0 => Err(error(key, "must be at least 1")),
                n if n > 1 << 20 => Err(error(key, "must be at most 1048576")),
                n => Ok(n),
            };
        let buffers = BufferLimits {
            input: limit(
                "buffers.input",
                args.input_buffer,
                file.buffers.input,
                defaults.input,
            )?,
            link: limit(
                "buffers.link",
                args.link_buffer,
                file.buffers.link,
                defaults.link,
            )?,
            output: limit(
                "buffers.output",
                args.output_buffer,
                file.buffers.output,
                defaults.output,
            )?,
            requests: limit(
                "buffers.requests",
                args.requests_limit,
                file.buffers.requests,
                defaults.requests,
            )?,
            memory_bytes: match args.memory_mib.or(file.buffers.memory_mib) {
                None => defaults.memory_bytes,
                Some(mib) if MEMORY_MIB_RANGE.contains(&mib) => mib << 20,
                Some(mib) => {
                    return Err(error(
                        "buffers.memory_mib",
                        format!(
                            "{mib} MiB: must be from {} to {}",
                            MEMORY_MIB_RANGE.start(),
                            MEMORY_MIB_RANGE.end()
                        ),
                    ));
                }
            },
        };

        let log_level = args
            .log_level
            .clone()
            .or(file.log_level)
            .or_else(|| std::env::var("RUST_LOG").ok().filter(|l| !l.is_empty()))
            .unwrap_or_else(|| "info".to_string());
        parse_log_level(&log_level).map_err(|e| error("log_level", e))?;
        let nice = match args.nice.or(file.nice).unwrap_or(0) {
            n if NICE_RANGE.contains(&n) => n,
            n => {
                return Err(error(
                    "nice",
                    format!(
                        "{n}: must be from {} to {} (a daemon only lowers its own priority)",
                        NICE_RANGE.start(),
                        NICE_RANGE.end()
                    ),
                ));
            }
        };

        let store = store_config(args.store.clone(), file.store, &relative, &with_id)?;
        let (seal, sessions) = seal_config(args, file.seal)?;
        let route_around = args
            .route_around
            .or(file.liveness.route_around)
            .unwrap_or(true);
        let liveness = liveness_config(args, file.liveness)?;

        let pod = (pod_nodes > 1).then(|| {
            (id.0..topology.node_count().min(id.0 + pod_nodes))
                .map(NodeId)
                .collect()
        });
        Ok(NodeConfig {
            pod,
            topology,
            id,
            listen,
            control_listen,
            metrics_listen,
            manifest,
            credentials,
            seal,
            sessions,
            key_paths,
            keys: Arc::new(keys),
            buffers,
            log_format: args.log_format.or(file.log_format).unwrap_or_default(),
            log_level,
            chaos_allowed: args.chaos_allowed.or(file.chaos.allow).unwrap_or(true),
            nice,
            store,
            liveness,
            route_around,
        })
    }
}

/// The `[liveness]` table and its flags, checked: an interval of 0 (a detection time of 0) or a
/// multiplier below 1 is refused.
fn liveness_config(
    args: &DaemonArgs,
    file: FileLiveness,
) -> Result<liveness::Settings, ConfigError> {
    let defaults = liveness::Settings::default();
    let interval = match args.liveness_interval.clone().or(file.interval) {
        None => defaults.interval,
        Some(text) => humantime::parse_duration(&text).map_err(|e| {
            error(
                "liveness.interval",
                format!("{text:?} is not a duration: {e}"),
            )
        })?,
    };
    let multiplier = match args.liveness_multiplier.map(i64::from).or(file.multiplier) {
        None => defaults.multiplier,
        Some(n) => u32::try_from(n).map_err(|_| {
            error(
                "liveness.multiplier",
                format!("{n}: must be from 1 to {}", liveness::MAX_MULTIPLIER),
            )
        })?,
    };
    let settings = liveness::Settings {
        interval,
        multiplier,
        watch_exits: args
            .watch_exits
            .or(file.watch_exits)
            .unwrap_or(defaults.watch_exits),
    };
    settings.check().map_err(|(key, why)| error(key, why))?;
    Ok(settings)
}

/// The most a store may hold: 1 TiB.
const STORE_MAX_MIB: u64 = 1 << 20;
/// The shortest memory of delivered sets: the longest a source keeps a reliable set.
const SEEN_AT_LEAST_S: u64 = MAX_LIFE.as_secs();
/// The longest a source keeps a reliable set (its life: `send --life`), and so the shortest
/// time every store remembers a set delivered to it (`store.seen_for_s`), so that no resend
/// of a set is taken twice.
pub const MAX_LIFE: Duration = Duration::from_secs(600);
/// The longest retention: ten years.
const STORE_MAX_SECONDS: u64 = 10 * 366 * 86_400;

/// The `[store]` table and the `--store` flag, checked (not opened: a running daemon holds it).
fn store_config(
    flag: Option<PathBuf>,
    file: FileStore,
    relative: &dyn Fn(PathBuf) -> PathBuf,
    with_id: &dyn Fn(PathBuf) -> PathBuf,
) -> Result<Option<StoreConfig>, ConfigError> {
    let path = match flag {
        Some(p) if p.as_os_str() == "none" => return Ok(None),
        Some(p) => p,
        None => match file.path {
            Some(p) => relative(p),
            None => return Ok(None),
        },
    };
    if path.as_os_str().is_empty() {
        return Err(error("store.path", "is empty"));
    }
    let defaults = Retention::default();
    let seconds = |key: &'static str, value: Option<u64>, default_us: u64| match value {
        None => Ok(default_us),
        Some(0) => Err(error(key, "must be at least 1")),
        Some(s) if s > STORE_MAX_SECONDS => Err(error(
            key,
            format!("{s} s: must be at most {STORE_MAX_SECONDS} (ten years)"),
        )),
        Some(s) => Ok(s * 1_000_000),
    };
    let max_bytes = match file.max_mib {
        None => defaults.max_bytes,
        Some(mib) if (1..=STORE_MAX_MIB).contains(&mib) => mib << 20,
        Some(mib) => {
            return Err(error(
                "store.max_mib",
                format!("{mib} MiB: must be from 1 to {STORE_MAX_MIB}"),
            ));
        }
    };
    let seen_for_us = seconds("store.seen_for_s", file.seen_for_s, defaults.seen_for_us)?;
    if seen_for_us < SEEN_AT_LEAST_S * 1_000_000 {
        return Err(error(
            "store.seen_for_s",
            format!(
                "{} s: must be at least {SEEN_AT_LEAST_S} (a source keeps a reliable set that long at most, and a resend must be known again)",
                seen_for_us / 1_000_000
            ),
        ));
    }
    Ok(Some(StoreConfig {
        path: with_id(path),
        retention: Retention {
            max_bytes,
            max_age_us: seconds("store.max_age_s", file.max_age_s, defaults.max_age_us)?,
            seen_for_us,
        },
    }))
}

/// The longest `seal.rekey_after`, `seal.erase_after` and `seal.handshake_after`: a day.
const SEAL_MAX: Duration = Duration::from_secs(86_400);
/// The longest `seal.skew`: a minute.
const SKEW_MAX: Duration = Duration::from_secs(60);

/// Whether the node seals, and its sessions' times: `seal = BOOL` and the `--seal` flag, or a
/// `[seal]` table (`on`, `rekey_after`, `erase_after`, `skew`, `handshake_after`) and their
/// flags.
fn seal_config(
    args: &DaemonArgs,
    file: Option<toml::Value>,
) -> Result<(bool, SessionLimits), ConfigError> {
    let mut on = None;
    let mut times: [Option<String>; 4] = [None, None, None, None];
    const KEYS: [&str; 4] = [
        "seal.rekey_after",
        "seal.erase_after",
        "seal.skew",
        "seal.handshake_after",
    ];
    match file {
        None => {}
        Some(toml::Value::Boolean(b)) => on = Some(b),
        Some(toml::Value::Table(table)) => {
            for (key, value) in table {
                let at = match key.as_str() {
                    "on" => {
                        on = Some(
                            value
                                .as_bool()
                                .ok_or_else(|| error("seal.on", "must be true or false"))?,
                        );
                        continue;
                    }
                    "rekey_after" => 0,
                    "erase_after" => 1,
                    "skew" => 2,
                    "handshake_after" => 3,
                    _ => {
                        return Err(error(
                            "seal",
                            format!(
                                "unknown key `seal.{key}` (known: on, rekey_after, erase_after, skew, handshake_after)"
                            ),
                        ));
                    }
                };
                times[at] = Some(
                    value
                        .as_str()
                        .ok_or_else(|| error(KEYS[at], "must be a duration such as \"2m\""))?
                        .to_string(),
                );
            }
        }
        Some(_) => {
            return Err(error("seal", "must be true, false or a [seal] table"));
        }
    }
    let flags = [
        &args.seal_rekey_after,
        &args.seal_erase_after,
        &args.seal_skew,
        &args.seal_handshake_after,
    ];
    let defaults = SessionLimits::default();
    let default_us = [
        defaults.rekey_after_us,
        defaults.erase_after_us,
        defaults.skew_us,
        defaults.handshake_after_us,
    ];
    let mut us = [0u64; 4];
    for at in 0..4 {
        us[at] = match flags[at].clone().or(times[at].take()) {
            None => default_us[at],
            Some(text) => {
                let d = humantime::parse_duration(&text)
                    .map_err(|e| error(KEYS[at], format!("{text:?} is not a duration: {e}")))?;
                let max = if at == 2 { SKEW_MAX } else { SEAL_MAX };
                if d > max {
                    return Err(error(
                        KEYS[at],
                        format!(
                            "{text}: must be at most {}",
                            humantime::format_duration(max)
                        ),
                    ));
                }
                if at < 2 && d < Duration::from_secs(1) {
                    return Err(error(KEYS[at], format!("{text}: must be at least 1s")));
                }
                d.as_micros() as u64
            }
        };
    }
    let sessions = SessionLimits {
        rekey_after_us: us[0],
        erase_after_us: us[1],
        skew_us: us[2],
        handshake_after_us: us[3],
        ..defaults
    };
    sessions.check().map_err(|e| error("seal.erase_after", e))?;
    Ok((args.seal.or(on).unwrap_or(true), sessions))
}

/// The niceness a daemon may take: lowering its own priority needs no privilege.
pub const NICE_RANGE: std::ops::RangeInclusive<i32> = 0..=19;

/// Check a log level (an `EnvFilter` directive such as `info` or `warn,cuberoute_daemon=debug`).
pub fn parse_log_level(level: &str) -> Result<tracing_subscriber::EnvFilter, String> {
    tracing_subscriber::EnvFilter::try_new(level)
        .map_err(|e| format!("{level:?} is not a log filter: {e}"))
}

#[cfg(test)]
mod key_tests {
    use super::key_at;

    #[test]
    fn a_file_error_names_its_key_and_line() {
        let text = "id = 1\n[liveness]\ninterval = \"1s\"\n\n[store]\npath = \"s\"\nbogus = 1\n";
        let at = text.find("bogus").unwrap();
        assert_eq!(key_at(text, at), ("store.bogus".to_string(), 7));
        assert_eq!(key_at(text, 0), ("id".to_string(), 1));
        let header = text.find("[store]").unwrap();
        assert_eq!(key_at(text, header), ("store".to_string(), 5));
        assert_eq!(key_at(text, text.len()).0, "config");
    }
}

#[cfg(test)]
mod hosted_tests {
    use super::DaemonArgs;
    use std::path::PathBuf;

    #[test]
    fn a_list_names_more_configurations_relative_to_itself() {
        let dir = tempfile::tempdir().unwrap();
        let list = dir.path().join("hosted.txt");
        std::fs::write(&list, "a/node.toml\n\n  /abs/node.toml  \n").unwrap();
        let args = DaemonArgs {
            with_config: vec![PathBuf::from("first.toml")],
            with_configs: Some(list),
            ..DaemonArgs::default()
        };
        assert_eq!(
            args.hosted_configs().unwrap(),
            vec![
                PathBuf::from("first.toml"),
                dir.path().join("a/node.toml"),
                PathBuf::from("/abs/node.toml"),
            ]
        );
        let missing = DaemonArgs {
            with_configs: Some(dir.path().join("none.txt")),
            ..DaemonArgs::default()
        };
        let e = missing.hosted_configs().unwrap_err();
        assert!(
            e.starts_with("--with-configs ") && e.contains("none.txt"),
            "{e}"
        );
    }
}
