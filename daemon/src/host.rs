//! A node host: several nodes in one process (issue 50). Each node keeps everything of its own
//! (id, keys, certificate, control endpoint, counters, output, store, control address) and runs
//! as [`crate::run_until`] runs it alone; the host adds three things. Its registry ([`Host`],
//! the link's [`LocalPeers`]) says which nodes belong to the process and which of them run, so a
//! link between two of them is a call ([`crate::link::local`]) and
//! a link to any other node is QUIC as always. The nodes that listen for links at one address
//! share one link endpoint there ([`SharedLinks`]). And each node's tasks are its own
//! ([`crate::run_until`] holds them in a `JoinSet`), so one node can stop, or crash, while the
//! others go on; its neighbours here see it stop at once. The control API crashes one node and
//! starts it again ([`Host::crash`], [`Host::restart`]: `Fault::CrashHosted`,
//! `Fault::RestartHosted`, asked of any other node of the process), as the chaos tooling's
//! `crash` does to a node alone by killing its process.
//!
//! What the process has once is shared: the runtime, the binary, the signals (a SIGTERM stops
//! every node, each drained as a process alone would be), the log output (each node's lines
//! carry its id), and the metrics exporter (one per process, at the first node's
//! `metrics_listen`, with every node's series labelled `node`; the others' addresses are not
//! served, and one line at start says so).

use crate::config::{DaemonArgs, NodeConfig};
use crate::link::handoff::Handoffs;
use crate::link::local::{LocalPeer, LocalPeers};
use crate::link::shared::SharedLinks;
use crate::node::Node;
use cuberoute_protocol::NodeId;
use std::collections::{BTreeSet, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, watch};

/// A running node, and what says when it stops.
type Runs = (Arc<Node>, watch::Receiver<bool>);

/// The nodes of one process: which belong to it, and which of them run now.
pub struct Host {
    members: BTreeSet<NodeId>,
    running: Mutex<HashMap<NodeId, Runs>>,
    changes: watch::Sender<u64>,
    /// To the loop of [`run`], which owns the nodes' tasks: crash one, start one again.
    orders: OnceLock<mpsc::UnboundedSender<Order>>,
    /// The link endpoints several nodes here share, by the address they listen on.
    shared: OnceLock<HashMap<SocketAddr, SharedLinks>>,
    /// The control endpoints several nodes here share, by the address they listen on.
    control: OnceLock<HashMap<SocketAddr, quinn::Endpoint>>,
    /// The nodes crashed by request and not started again: not waited for.
    crashed: Mutex<BTreeSet<NodeId>>,
    /// What moves the packets between nodes here by a call.
    handoffs: Arc<Handoffs>,
    /// Whether the process serves metrics (its first node has a `metrics_listen`): every node
    /// publishes its own there.
    metrics: AtomicBool,
}

/// What [`run`]'s loop is asked to do to one of its nodes, and where to say how it went. A
/// crash ends the node at once as a killed process would (`crate::Stop::Crash`: nothing
/// drained, its endpoints closed, its tasks dropped); a restart reads its configuration and
/// store again.
enum Order {
    Crash(NodeId, oneshot::Sender<Result<String, String>>),
    Restart(NodeId, oneshot::Sender<Result<String, String>>),
}

/// How long a node crashed in its process may take to start again: its sockets and its store
/// are let go by the tasks the crash dropped (quinn's endpoint driver, the store's writer)
/// shortly after; until then its start is tried again.
pub const RESTART_WITHIN: Duration = Duration::from_secs(10);

/// A node's place in the registry while it runs: dropped (the node stopped, or its future was
/// dropped), it says so to its neighbours here.
pub struct Running {
    host: Arc<Host>,
    id: NodeId,
    running: watch::Sender<bool>,
}

impl Host {
    /// Whether the process serves metrics: each of its nodes publishes there.
    pub fn serves_metrics(&self) -> bool {
        self.metrics.load(Relaxed)
    }

    pub fn new(members: impl IntoIterator<Item = NodeId>) -> Arc<Host> {
        Arc::new(Host {
            members: members.into_iter().collect(),
            running: Mutex::new(HashMap::new()),
            changes: watch::channel(0).0,
            orders: OnceLock::new(),
            shared: OnceLock::new(),
            control: OnceLock::new(),
            crashed: Mutex::new(BTreeSet::new()),
            handoffs: Arc::default(),
            metrics: AtomicBool::new(false),
        })
    }

    /// The link endpoint the nodes listening on `listen` share, if several do.
    pub fn shared_links(&self, listen: SocketAddr) -> Option<SharedLinks> {
        self.shared.get()?.get(&listen).cloned()
    }

    /// Whether several nodes here share a control endpoint on `listen` (served by the host's
    /// loop, not by each node).
    pub fn shares_control(&self, listen: SocketAddr) -> bool {
        self.control.get().is_some_and(|c| c.contains_key(&listen))
    }

    /// What says whether node `id` runs, while it does (false once it stopped or crashed).
    pub fn running(&self, id: NodeId) -> Option<watch::Receiver<bool>> {
        let running = self.running.lock().expect("host lock");
        running.get(&id).map(|(_, seen)| seen.clone())
    }

    /// Node `id`, while it runs here.
    pub fn node(&self, id: NodeId) -> Option<Arc<Node>> {
        let running = self.running.lock().expect("host lock");
        running.get(&id).map(|(node, _)| node.clone())
    }

    /// Node `id` once it runs, if it does within `wait` (a member still starting, or starting
    /// again); none at once if it is not hosted here, or crashed (as a killed process answers
    /// no dial).
    pub async fn node_within(&self, id: NodeId, wait: Duration) -> Option<Arc<Node>> {
        let crashed = self.crashed.lock().expect("host lock").contains(&id);
        if !self.members.contains(&id) || crashed {
            return None;
        }
        let _ = tokio::time::timeout(wait, self.started(id)).await;
        self.node(id)
    }

    /// The first node that runs here (by id), if any does.
    pub fn any_node(&self) -> Option<Arc<Node>> {
        let running = self.running.lock().expect("host lock");
        self.members
            .iter()
            .find_map(|id| running.get(id).map(|(node, _)| node.clone()))
    }

    /// Crash node `id` of this process (see [`Order`]); answered once it has ended. Refused if `id` is not hosted here, does not run, or is the
    /// last node that runs here (nothing would be left to start it again).
    pub async fn crash(&self, id: NodeId) -> Result<String, String> {
        self.order(|reply| Order::Crash(id, reply)).await
    }

    /// Start node `id` of this process again after [`Host::crash`]; answered once it runs (or
    /// could not start within [`RESTART_WITHIN`]).
    pub async fn restart(&self, id: NodeId) -> Result<String, String> {
        self.order(|reply| Order::Restart(id, reply)).await
    }

    async fn order(
        &self,
        order: impl FnOnce(oneshot::Sender<Result<String, String>>) -> Order,
    ) -> Result<String, String> {
        let gone = || "this process is stopping".to_string();
        let orders = self
            .orders
            .get()
            .ok_or_else(|| "this process runs its nodes in no host loop".to_string())?;
        let (reply, answer) = oneshot::channel();
        orders.send(order(reply)).map_err(|_| gone())?;
        answer.await.map_err(|_| gone())?
    }

    fn runs(&self, id: NodeId) -> bool {
        self.running.lock().expect("host lock").contains_key(&id)
    }

    /// Until node `id` runs (registered by its start).
    async fn started(&self, id: NodeId) {
        let mut changes = self.changes.subscribe();
        while !self.runs(id) {
            if changes.changed().await.is_err() {
                return;
            }
        }
    }

    /// `node` runs: its neighbours here link with it.
    pub fn register(self: &Arc<Self>, node: Arc<Node>) -> Running {
        let id = node.id();
        let (running, seen) = watch::channel(true);
        self.running
            .lock()
            .expect("host lock")
            .insert(id, (node, seen));
        self.changes.send_modify(|n| *n += 1);
        Running {
            host: self.clone(),
            id,
            running,
        }
    }

    /// How many nodes belong to the process (running or not).
    pub fn size(&self) -> usize {
        self.members.len()
    }

    /// The nodes of this process from the first above `after`, in id order: each with its
    /// node while it runs.
    pub fn nodes_after(&self, after: Option<NodeId>) -> Vec<(NodeId, Option<Arc<Node>>)> {
        use std::ops::Bound::{Excluded, Unbounded};
        let running = self.running.lock().expect("host lock");
        let from = after.map_or(Unbounded, Excluded);
        self.members
            .range((from, Unbounded))
            .map(|id| (*id, running.get(id).map(|(node, _)| node.clone())))
            .collect()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.running.send_replace(false);
        self.host
            .running
            .lock()
            .expect("host lock")
            .remove(&self.id);
        self.host.changes.send_modify(|n| *n += 1);
    }
}

/// A link endpoint shared by the nodes of a process: a connection is the named node's, once
/// it runs (a node of the process that is still starting, or starting again, is waited for, at
/// most [`crate::accept::WAIT_FOR_NODE`]: its neighbours elsewhere dial it as soon as the
/// endpoint answers); a failed handshake is counted by the first node that runs.
impl crate::accept::Owner for Arc<Host> {
    async fn owner(&self, named: Option<NodeId>) -> Option<Arc<Node>> {
        match named {
            Some(id) => self.node_within(id, crate::accept::WAIT_FOR_NODE).await,
            None => self.any_node(),
        }
    }

    fn named(&self, connection: &quinn::Connection) -> Option<NodeId> {
        crate::tls::server_name_of(connection)
    }
}

impl LocalPeers for Host {
    fn holds(&self, id: NodeId) -> bool {
        self.members.contains(&id)
    }

    fn peer(&self, id: NodeId, me: NodeId) -> Option<LocalPeer> {
        let running = self.running.lock().expect("host lock");
        let (node, seen) = running.get(&id)?;
        Some(LocalPeer {
            link: node.link(me)?.clone(),
            owner: node.clone(),
            running: seen.clone(),
        })
    }

    fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    fn handoffs(&self) -> Option<Arc<Handoffs>> {
        Some(self.handoffs.clone())
    }
}

/// Check that `configs` can share a process: one topology and cluster, distinct ids.
pub fn check(configs: &[NodeConfig]) -> Result<(), String> {
    let Some(first) = configs.first() else {
        return Err("a node host needs at least one node".into());
    };
    let mut ids = BTreeSet::new();
    for c in configs {
        if c.topology != first.topology {
            return Err(format!(
                "node {} is of {}, node {} of {}: one process hosts nodes of one topology",
                c.topology.format_node(c.id),
                c.topology,
                first.topology.format_node(first.id),
                first.topology
            ));
        }
        if c.credentials.ca != first.credentials.ca {
            return Err(format!(
                "node {} has another cluster CA than node {}: one process hosts one cluster",
                c.topology.format_node(c.id),
                first.topology.format_node(first.id)
            ));
        }
        if !ids.insert(c.id) {
            return Err(format!(
                "node {} is given twice",
                c.topology.format_node(c.id)
            ));
        }
    }
    Ok(())
}

/// Run every node of `configs` in this process until SIGTERM or SIGINT, then drain each and
/// return; reload them all on SIGHUP. The first error of a node's start stops them all; a
/// node crashed by request ([`Host::crash`]) does not, and one started again
/// ([`Host::restart`]) that fails is told to the one who asked.
/// `serve_control` serves each control endpoint its nodes share (`crate::control::serve_shared`,
/// given by `crate::run_host`: the control API's room knows the host, not the other way).
/// `process` says how it stops: by its signals (`Process::Signals`: SIGTERM or SIGINT stops,
/// SIGHUP reloads, its priority lowered), or a future of the caller's with no signal at all
/// (`Process::Simulated`: a node host of `cuberoute sim`, whose reloads come by request).
pub async fn run<S, F>(
    configs: Vec<NodeConfig>,
    args: Vec<DaemonArgs>,
    serve_control: S,
    process: Process,
) -> anyhow::Result<()>
where
    S: Fn(Arc<Host>, quinn::Endpoint) -> F,
    F: std::future::Future<Output = ()> + Send + 'static,
{
    check(&configs).map_err(|e| anyhow::anyhow!(e))?;
    let signals = matches!(process, Process::Signals);
    if signals {
        crate::lower_priority(configs[0].nice);
    }
    // A node that keeps sets holds its store's file: thousands of nodes need the process's
    // whole allowance, not the soft limit a shell starts it with.
    match raise_open_files() {
        Ok(limit) if limit < stored(&configs) * FILES_PER_NODE => tracing::warn!(
            limit,
            nodes = configs.len(),
            "the open-files limit may be too low for this many nodes ({FILES_PER_NODE} each)"
        ),
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "cannot raise the open-files limit"),
    }
    let host = Host::new(configs.iter().map(|c| c.id));
    tracing::info!(
        "{} nodes in this process: {}",
        configs.len(),
        configs
            .iter()
            .map(|c| c.id.to_string())
            .collect::<Vec<_>>()
            .join(" ")
    );
    let (orders, mut ordered) = mpsc::unbounded_channel();
    host.orders.set(orders).ok();
    let listening = configs.iter().map(|c| (c.listen, &c.credentials));
    let shared = SharedLinks::make(listening).map_err(|e| anyhow::anyhow!(e))?;
    let mut accepting = tokio::task::JoinSet::new();
    for links in shared.values() {
        accepting.spawn(crate::accept::accept_links(
            host.clone(),
            links.endpoint.clone(),
            Some(links.handshakes.clone()),
        ));
    }
    host.shared.set(shared).ok();
    let listening = configs.iter().map(|c| (c.control_listen, &c.credentials));
    let mut control = HashMap::new();
    for (listen, members) in crate::link::shared::shared_addresses(listening) {
        let endpoint = crate::tls::Credentials::shared_endpoint(
            &members,
            crate::tls::ALPN_CONTROL,
            listen,
            None,
        )
        .map_err(|e| {
            anyhow::anyhow!(
                "cannot listen for the control of {} nodes at {listen}: {e}",
                members.len()
            )
        })?;
        accepting.spawn(serve_control(host.clone(), endpoint.clone()));
        control.insert(listen, endpoint);
    }
    host.control.set(control).ok();
    let stop: std::pin::Pin<Box<dyn std::future::Future<Output = anyhow::Result<()>> + Send>> =
        match process {
            Process::Signals => Box::pin(crate::shutdown_signal()?),
            Process::Simulated(until) => until,
        };
    tokio::pin!(stop);
    let (stopping, stopped) = watch::channel(false);
    let mut nodes = Nodes {
        hangup_reloads: signals,
        host: host.clone(),
        tasks: tokio::task::JoinSet::new(),
        of_task: HashMap::new(),
        running: HashMap::new(),
        crashing: HashMap::new(),
        args: HashMap::new(),
        stopped,
    };
    host.metrics
        .store(configs[0].metrics_listen.is_some(), Relaxed);
    let unserved = configs[1..]
        .iter()
        .filter(|c| c.metrics_listen.is_some())
        .count();
    if unserved > 0 {
        tracing::info!(
            nodes = unserved,
            "metrics_listen not served but the first node's: a node host serves one exporter, \
             with every node's metrics (labelled node)"
        );
    }
    for (i, (mut config, args)) in configs.into_iter().zip(args).enumerate() {
        if i > 0 {
            config.metrics_listen = None;
        }
        nodes.args.insert(config.id, args.clone());
        nodes.start(config, args, Start::First);
    }
    let first_error = loop {
        tokio::select! {
            r = &mut stop => break r.err(),
            Some(order) = ordered.recv() => nodes.carry_out(order),
            Some(ended) = nodes.tasks.join_next_with_id() => {
                if let Some(e) = nodes.ended(ended) {
                    break Some(e);
                }
            }
        }
    };
    stopping.send_replace(true);
    while let Some(ended) = nodes.tasks.join_next().await {
        if let Ok(Err(e)) = ended {
            tracing::warn!(error = %e, "a node stopped with an error");
        }
    }
    // Every node closed its connections: the shared endpoints go, as a node's own would.
    let links = host.shared.get().into_iter().flat_map(HashMap::values);
    let control = host.control.get().into_iter().flat_map(HashMap::values);
    for endpoint in links.map(|l| &l.endpoint).chain(control) {
        endpoint.close(crate::link::close::SHUTDOWN.into(), b"shutdown");
        let _ = tokio::time::timeout(Duration::from_secs(1), endpoint.wait_idle()).await;
    }
    accepting.abort_all();
    match first_error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// How a node's task was started: with the process (its failure stops the process), or again
/// after a crash by request (its failure is told to the one who asked).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Start {
    First,
    Again,
}

/// How a node host's process stops ([`run`]).
pub enum Process {
    /// On SIGTERM or SIGINT; SIGHUP reloads every node.
    Signals,
    /// When this future ends; no signal is taken.
    Simulated(std::pin::Pin<Box<dyn std::future::Future<Output = anyhow::Result<()>> + Send>>),
}

/// The nodes' tasks of [`run`], and which node each runs.
struct Nodes {
    /// Whether each node reloads on SIGHUP.
    hangup_reloads: bool,
    host: Arc<Host>,
    tasks: tokio::task::JoinSet<anyhow::Result<()>>,
    of_task: HashMap<tokio::task::Id, (NodeId, Start)>,
    /// Each node that runs or starts: its task, and what crashes it.
    running: HashMap<NodeId, (tokio::task::Id, watch::Sender<bool>)>,
    /// The nodes crashed by request whose tasks have not ended yet, and who waits for that.
    crashing: HashMap<tokio::task::Id, (NodeId, oneshot::Sender<Result<String, String>>)>,
    /// Each node's flags, to start it again.
    args: HashMap<NodeId, DaemonArgs>,
    stopped: watch::Receiver<bool>,
}

impl Nodes {
    fn start(&mut self, config: NodeConfig, args: DaemonArgs, start: Start) {
        let id = config.id;
        let host = self.host.clone();
        let stopped = self.stopped.clone();
        let hangup_reloads = self.hangup_reloads;
        let (crash, crashed) = watch::channel(false);
        let span = tracing::info_span!("node", id = %config.topology.format_node(id));
        // Stopped with the process (drained), or crashed alone.
        let until = move |mut stopped: watch::Receiver<bool>,
                          mut crashed: watch::Receiver<bool>| async move {
            tokio::select! {
                _ = stopped.wait_for(|s| *s) => Ok(crate::Stop::Drain),
                _ = crashed.wait_for(|c| *c) => Ok(crate::Stop::Crash),
            }
        };
        let task = async move {
            if start == Start::First {
                let until = until(stopped, crashed);
                return crate::run_node(config, args, hangup_reloads, until, Some(host)).await;
            }
            // Started again: the crash's sockets and store may not be let go yet. The first
            // try takes the configuration `restart` read; later ones read it again.
            let deadline = crate::env::Instant::now() + RESTART_WITHIN;
            let mut read = Some(config);
            loop {
                if *crashed.borrow() {
                    return Ok(());
                }
                let config = match read.take() {
                    Some(config) => Ok(config),
                    None => NodeConfig::resolve(&args),
                };
                let result = match config {
                    Ok(mut config) => {
                        // The process's one exporter stays where it was.
                        config.metrics_listen = None;
                        let until = until(stopped.clone(), crashed.clone());
                        let args = args.clone();
                        crate::run_node(config, args, hangup_reloads, until, Some(host.clone()))
                            .await
                    }
                    Err(e) => Err(e.into()),
                };
                match result {
                    Err(e) if crate::env::Instant::now() < deadline => {
                        tracing::debug!(error = %e, "not started again yet; trying again");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                    result => return result,
                }
            }
        };
        let handle = self
            .tasks
            .spawn(tracing::Instrument::instrument(task, span));
        self.of_task.insert(handle.id(), (id, start));
        self.running.insert(id, (handle.id(), crash));
    }

    fn carry_out(&mut self, order: Order) {
        match order {
            Order::Crash(id, reply) => match self.crash(id) {
                Ok(task) => {
                    self.crashing.insert(task, (id, reply));
                }
                Err(e) => {
                    let _ = reply.send(Err(e));
                }
            },
            Order::Restart(id, reply) => match self.restart(id) {
                Err(e) => {
                    let _ = reply.send(Err(e));
                }
                Ok(()) => {
                    let host = self.host.clone();
                    tokio::spawn(async move {
                        let answer = match tokio::time::timeout(
                            RESTART_WITHIN + Duration::from_secs(2),
                            host.started(id),
                        )
                        .await
                        {
                            Ok(()) => Ok(format!("node {id} started again in its process")),
                            Err(_) => Err(format!(
                                "node {id} did not start again within {RESTART_WITHIN:?} (see the process's log)"
                            )),
                        };
                        let _ = reply.send(answer);
                    });
                }
            },
        }
    }

    /// Crash node `id`: its task is told to end at once; the task's id.
    fn crash(&mut self, id: NodeId) -> Result<tokio::task::Id, String> {
        if !self.host.members.contains(&id) {
            return Err(format!("node {id} is not hosted by this process"));
        }
        if !self.running.contains_key(&id) {
            return Err(format!("node {id} does not run in this process"));
        }
        if self.running.len() == 1 {
            return Err(format!(
                "node {id} is the last that runs in this process: crash the process instead"
            ));
        }
        let (task, crash) = self.running.remove(&id).expect("checked above");
        self.host.crashed.lock().expect("host lock").insert(id);
        crash.send_replace(true);
        Ok(task)
    }

    fn restart(&mut self, id: NodeId) -> Result<(), String> {
        if !self.host.members.contains(&id) {
            return Err(format!("node {id} is not hosted by this process"));
        }
        if self.running.contains_key(&id) {
            return Err(format!("node {id} runs in this process: crash it first"));
        }
        if self.crashing.values().any(|(n, _)| *n == id) {
            return Err(format!("node {id} is still crashing"));
        }
        let args = self
            .args
            .get(&id)
            .expect("every member has its flags")
            .clone();
        // Read again, as a process started again would; one that no longer reads is refused.
        let config = NodeConfig::resolve(&args).map_err(|e| e.to_string())?;
        tracing::info!(node = %id, "starting again by request");
        self.host.crashed.lock().expect("host lock").remove(&id);
        self.start(config, args, Start::Again);
        Ok(())
    }

    /// A node's task ended: the error that stops the process, if it is one.
    fn ended(
        &mut self,
        ended: Result<(tokio::task::Id, anyhow::Result<()>), tokio::task::JoinError>,
    ) -> Option<anyhow::Error> {
        let (task, result) = match ended {
            Ok((task, result)) => (task, Ok(result)),
            Err(e) => (e.id(), Err(e)),
        };
        let (id, start) = self.of_task.remove(&task)?;
        if let Some((_, reply)) = self.crashing.remove(&task) {
            let _ = reply.send(Ok(format!(
                "node {id} crashed in its process (nothing drained, its endpoints closed)"
            )));
            return None;
        }
        self.running.remove(&id);
        let error = match result {
            Ok(Ok(())) => anyhow::anyhow!("a node stopped on its own"),
            Ok(Err(e)) => e,
            Err(e) => anyhow::anyhow!("a node's task failed: {e}"),
        };
        match start {
            Start::First => Some(error),
            Start::Again => {
                tracing::warn!(node = %id, error = %error, "a node started again stopped");
                None
            }
        }
    }
}

/// Open files one hosted node holds at most: its store, once it has kept a set (a store is made
/// on its first write). Its links and its control API are on the endpoints its process's nodes
/// share, and the pidfd its links to the nodes of another process on this machine watch is one
/// for all (`crate::exits`). Measured at rest: 15 files in a process of 2,048 Q_12 nodes; 4,109
/// when each node had its own control socket and its links a pidfd each.
pub const FILES_PER_NODE: u64 = 1;

/// The nodes of `configs` that keep reliable sets in a store (each its file once it keeps one).
fn stored(configs: &[NodeConfig]) -> u64 {
    configs.iter().filter(|c| c.store.is_some()).count() as u64
}

/// Raise this process's soft limit of open files to its hard limit; the limit now.
pub fn raise_open_files() -> std::io::Result<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit read and write the one struct given, ours.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    if limit.rlim_cur < limit.rlim_max {
        limit.rlim_cur = limit.rlim_max;
        // SAFETY: as above.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(limit.rlim_cur)
}
