//! cuberoute-daemon: the process that owns one node of a cluster.
//!
//! It does I/O only; every routing decision comes from `cuberoute-protocol`. The pieces:
//!
//! * [`config`]: the TOML file and flags, checked into a [`config::NodeConfig`]; [`reload`]:
//!   the configuration in force, read again on SIGHUP;
//! * [`manifest`]: where every node of the cluster listens;
//! * [`tls`]: identities in certificates, mutual TLS under the cluster CA; [`roles`]: what a
//!   client certificate's role allows it to ask;
//! * [`node`]: where link bytes and client requests meet the protocol's `input` and `rcv`;
//! * [`link`]: one QUIC connection per neighbour, with its message buffer;
//! * [`output`]: the ring of delivered copies that clients read;
//! * [`control`] and [`client`]: the control API, server and client side; [`accept`]: the
//!   accept loop both endpoints share;
//! * [`stats`] and [`telemetry`]: counters, logs, Prometheus metrics; [`journal`]: the ring of
//!   notices `cuberoute monitor` follows;
//! * [`chaos`]: a node's chaos state (bit flips, and what became of corrupted packets);
//!   [`faults`]: the transient faults a client asks for, carried out; [`relay`]: the capturing
//!   and forging relay, and [`replay`]: its replays sent; [`shaper`]: delay, jitter,
//!   reordering and duplication of the link socket's datagrams, in user space;
//! * [`priority`]: the process's scheduling priority, lowered at start;
//! * [`store`]: what a node keeps across a crash (redb), written in batches by one thread;
//!   [`keeping`]: the node's one seam to it (keep, settle, consume, read back at start);
//!   [`disk`]: the simulated disk `cuberoute sim` puts under it;
//! * [`env`]: the one source of time and randomness; [`net`]: the one seam to the network (real
//!   UDP, or turmoil's simulated network); [`io_counts`]: what wakes the process (datagrams,
//!   system calls, timers), counted where quinn meets the system.

pub mod accept;
pub mod budget;
pub mod chaos;
pub mod client;
pub mod config;
pub mod control;
pub mod delivery;
pub mod disk;
pub mod down;
pub mod env;
pub mod exits;
pub mod faults;
pub mod host;
pub mod io_counts;
pub mod journal;
pub mod keeping;
pub mod keys;
pub mod link;
pub mod liveness;
pub mod logging;
pub mod manifest;
pub mod net;
pub mod node;
pub mod output;
pub mod packed;
pub mod priority;
pub mod quiet;
pub mod relay;
pub mod reload;
pub mod replay;
pub mod roles;
pub mod sealing;
pub mod shaper;
pub mod stats;
pub mod store;
pub mod telemetry;
pub mod tls;
pub mod waiters;

use crate::config::{DaemonArgs, NodeConfig};
use crate::node::Node;
use crate::stats::Drop;
use anyhow::Context;
use std::sync::Arc;
use std::time::Duration;
use tracing::{info, warn};

/// How long a stopping daemon keeps moving queued packets before it counts them as dropped.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(3);

/// Run a node until SIGTERM or SIGINT, then drain and return; reload the configuration (read
/// with `args`) on SIGHUP.
pub async fn run(config: NodeConfig, args: DaemonArgs) -> anyhow::Result<()> {
    lower_priority(config.nice);
    // Taken over before anything else starts (the store is opened first): a SIGTERM during
    // start-up is a clean stop too, never the default action's kill.
    let stop = shutdown_signal()?;
    run_until(config, args, true, stop).await
}

/// Run every node of `configs` in this process ([`host::run`]), until SIGTERM or SIGINT.
pub async fn run_host(configs: Vec<NodeConfig>, args: Vec<DaemonArgs>) -> anyhow::Result<()> {
    host::run(configs, args, control::serve_shared, host::Process::Signals).await
}

/// Run every node of `configs` in this process ([`host::run`]) until `stop` ends, taking no
/// signal: a node host of a simulation (`cuberoute sim --nodes-per-process`).
pub async fn run_host_until(
    configs: Vec<NodeConfig>,
    args: Vec<DaemonArgs>,
    stop: impl Future<Output = anyhow::Result<()>> + Send + 'static,
) -> anyhow::Result<()> {
    let process = host::Process::Simulated(Box::pin(stop));
    host::run(configs, args, control::serve_shared, process).await
}

/// Lower the process's scheduling priority to `nice`, or say why not.
fn lower_priority(nice: i32) {
    if let Err(e) = priority::lower_to(nice) {
        tracing::warn!("cannot lower the process's priority to niceness {nice}: {e}");
    }
}

/// Run a node until `stop` ends, then drain and return; reload on SIGHUP if `hangup_reloads`
/// (a simulated node has no signals; a reload request reloads either).
pub async fn run_until(
    config: NodeConfig,
    args: DaemonArgs,
    hangup_reloads: bool,
    stop: impl Future<Output = anyhow::Result<()>>,
) -> anyhow::Result<()> {
    let stop = async { stop.await.map(|()| Stop::Drain) };
    run_node(config, args, hangup_reloads, stop, None).await
}

/// How a node ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stop {
    /// Refusing new sets, its buffers drained first ([`drain`]): a SIGTERM, a host's stop.
    Drain,
    /// At once, as a killed process would (a node crashed inside its process, [`host`]): its
    /// buffers are lost, its endpoints closed (their connections with them, waited for at most
    /// a second, as a stop does; on a link endpoint shared with other nodes, its connections)
    /// and its tasks dropped, so that its sockets and its store are let go for its restart.
    Crash,
}

/// [`run_until`], as one node of a [`host::Host`] when `host` is given (its links to the
/// host's other nodes are calls). Every task it starts is its own: when this returns, or its
/// future is dropped, they are aborted.
async fn run_node(
    config: NodeConfig,
    args: DaemonArgs,
    hangup_reloads: bool,
    stop: impl Future<Output = anyhow::Result<Stop>>,
    host: Option<Arc<host::Host>>,
) -> anyhow::Result<()> {
    if let Some(addr) = config.metrics_listen {
        telemetry::install_metrics(addr)?;
    }
    let (keeping, written) = match &config.store {
        Some(store) => {
            let identity = keeping::identity(config.topology, config.id, &config.credentials.ca);
            let (keeping, written) = keeping::Keeping::open(store, &identity)
                .context("the store cannot be used: the daemon does not start")?;
            (Some(keeping), Some(written))
        }
        None => (None, None),
    };
    let output_capacity = config.buffers.output;
    let shared = host.as_ref().and_then(|h| h.shared_links(config.listen));
    // A hosted node's series carry its id: its process serves every node's.
    let metrics_label = host.as_ref().map(|_| telemetry::node_label(config.id));
    let (node, input) = telemetry::as_node(metrics_label.as_ref(), || {
        Node::new(&config, args, keeping, shared.as_ref())
    });
    node.resume_from_store(output_capacity).await.map_err(|e| {
        anyhow::anyhow!("the store cannot be read back ({e}): the daemon does not start")
    })?;
    let credentials = &config.credentials;
    let links = match &shared {
        Some(shared) => shared.endpoint.clone(),
        None => credentials
            .endpoint(
                tls::ALPN_LINK,
                config.listen,
                Some(node.chaos().shaper.clone()),
            )
            .with_context(|| format!("cannot listen for links at {}", config.listen))?,
    };
    // A shared endpoint's connections are accepted by its host's loop, and it closes with
    // the process; a node closes its own connections on it.
    let own_links = shared.is_none().then(|| links.clone());
    // Likewise a control endpoint its process's nodes share is served by the host's loop
    // (`control::serve_shared`), which cuts this node's clients off when it stops.
    let shares_control = host
        .as_ref()
        .is_some_and(|h| h.shares_control(config.control_listen));
    let control = if shares_control {
        None
    } else {
        let listen = config.control_listen;
        Some(
            credentials
                .endpoint(tls::ALPN_CONTROL, listen, None)
                .with_context(|| format!("cannot listen for control at {listen}"))?,
        )
    };

    let client = config.credentials.client_config(tls::ALPN_LINK);
    let mut tasks = Tasks::default();
    tasks.spawn(node.clone().run_input(input));
    tasks.spawn(node.clone().run_delivery_timer());
    tasks.spawn(node.clone().run_down_timer());
    tasks.spawn(node.clone().run_seal_timer());
    tasks.spawn(node.clone().run_sealing_peers());
    tasks.spawn(node.clone().recover_sealing_peers());
    if let Some(written) = written {
        tasks.spawn(node.clone().run_written(written));
        tasks.spawn(node.clone().run_store_pruning());
        tasks.spawn(node.clone().run_settled_flush());
    }
    tasks.spawn(replay::run(node.clone()));
    if let Some(links) = &own_links {
        tasks.spawn(accept::accept_links(node.clone(), links.clone(), None));
    }
    if let Some(control) = &control {
        tasks.spawn(control::serve(node.clone(), control.clone(), host.clone()));
    }
    if hangup_reloads {
        tasks.spawn(reload_on_hangup(node.clone()));
    }
    if config.metrics_listen.is_some() || host.as_ref().is_some_and(|h| h.serves_metrics()) {
        let nodes = host.as_ref().map_or(1, |h| h.size());
        let every = telemetry::publish_period(nodes);
        tasks.spawn(telemetry::publish_loop(node.clone(), metrics_label, every));
    }
    if !net::simulated() {
        // Many simulated nodes share one process and one simulated clock: left out there.
        tasks.spawn(quiet::run(node.clone()));
    }
    let _running = host.as_ref().map(|host| host.register(node.clone()));
    for link in node.links() {
        match &host {
            Some(host) if link::local::LocalPeers::holds(&**host, link.neighbour) => {
                let peers: Arc<dyn link::local::LocalPeers> = host.clone();
                tasks.spawn(link.clone().run_local(node.clone(), peers))
            }
            _ => tasks.spawn(
                link.clone()
                    .run(node.clone(), links.clone(), client.clone()),
            ),
        }
    }
    info!(
        topology = %config.topology,
        id = %config.topology.format_node(config.id),
        listen = %config.listen,
        control = %config.control_listen,
        neighbours = node.links().len(),
        "node started"
    );
    let revocations = node.keys().revocations();
    if !revocations.revoked.is_empty() {
        warn!(
            serial = revocations.serial,
            revoked = ?revocations.revoked,
            itself = revocations.revoked.contains(&node.id()),
            "revocation list in force: these nodes' links and sets are refused"
        );
    }

    if stop.await? == Stop::Crash {
        warn!("crashed by request: nothing drained, the endpoints closed");
        close(&node, control.as_ref(), own_links.as_ref(), b"crashed").await;
        return Ok(());
    }
    info!("stopping: draining buffers");
    drain(&node).await;
    let counters = node.stats().counters();
    info!(
        forwarded = counters.packets_forwarded,
        delivered = counters.packets_delivered,
        dropped = counters.dropped_total(),
        "node stopped"
    );
    close(&node, control.as_ref(), own_links.as_ref(), b"shutdown").await;
    Ok(())
}

/// Close a node's endpoints, saying `why`, and give its links a second to be drained. On a
/// link endpoint shared with other nodes (`links` none), the node's own connections are
/// closed, and the endpoint stays for the others; on a shared control endpoint (`control`
/// none), the host's loop closes the node's connections as it stops.
async fn close(
    node: &Node,
    control: Option<&quinn::Endpoint>,
    links: Option<&quinn::Endpoint>,
    why: &[u8],
) {
    if let Some(control) = control {
        control.close(link::close::SHUTDOWN.into(), why);
    }
    match links {
        Some(links) => {
            links.close(link::close::SHUTDOWN.into(), why);
            let _ = tokio::time::timeout(Duration::from_secs(1), links.wait_idle()).await;
        }
        None => {
            for link in node.links() {
                if let Some(connection) = link.connection() {
                    connection.close(link::close::SHUTDOWN.into(), why);
                }
            }
        }
    }
}

/// A node's tasks, each in the span it was started in, aborted when this is dropped.
#[derive(Default)]
struct Tasks(tokio::task::JoinSet<()>);

impl Tasks {
    fn spawn<T: Send + 'static>(&mut self, task: impl Future<Output = T> + Send + 'static) {
        use tracing::Instrument;
        self.0.spawn(
            async move {
                task.await;
            }
            .in_current_span(),
        );
    }
}

/// Reload the configuration on every SIGHUP ([`Node::reload`] logs what it did).
async fn reload_on_hangup(node: Arc<Node>) -> anyhow::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut hangup = signal(SignalKind::hangup())?;
    while hangup.recv().await.is_some() {
        let _ = node.reload();
    }
    Ok(())
}

/// SIGTERM or SIGINT, handled from the moment this returns.
fn shutdown_signal() -> anyhow::Result<impl Future<Output = anyhow::Result<()>>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        Ok(())
    })
}

/// Refuse new sets, give the links [`DRAIN_TIMEOUT`] to empty their buffers, and count what is
/// left as dropped.
async fn drain(node: &Arc<Node>) {
    node.start_draining();
    let deadline = env::Instant::now() + DRAIN_TIMEOUT;
    while (node.input_queued() > 0 || node.link_queued() > 0) && env::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let left: usize = node.links().map(|l| l.take_queued()).sum();
    node.stats().drop_many(Drop::Shutdown, left as u64);
}
