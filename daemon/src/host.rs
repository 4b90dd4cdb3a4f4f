//! A node host: several nodes in one process (issue 50). Each node keeps everything of its own
//! (id, keys, certificate, endpoints, counters, output, store, control address) and runs as
//! [`crate::run_until`] runs it alone; the host adds two things. Its registry ([`Host`], the
//! link's [`LocalPeers`]) says which nodes belong to the process and which of them run, so a
//! link between two of them is a call ([`crate::link::local`]) and
//! a link to any other node is QUIC as always. And each node's tasks are its own
//! ([`crate::run_until`] holds them in a `JoinSet`), so one node can stop, or be crashed by
//! dropping its future, while the others go on; its neighbours here see it stop at once.
//!
//! What the process has once is shared: the runtime, the binary, the signals (a SIGTERM stops
//! every node, each drained as a process alone would be), the log output (each node's lines
//! carry its id), and the metrics exporter (one per process: only the first node's
//! `metrics_listen` is served, with that node's counters; the others' are not, and a warning
//! says so).

use crate::config::{DaemonArgs, NodeConfig};
use crate::link::local::{LocalPeer, LocalPeers};
use crate::node::Node;
use cuberoute_protocol::NodeId;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

/// A running node, and what says when it stops.
type Runs = (Arc<Node>, watch::Receiver<bool>);

/// The nodes of one process: which belong to it, and which of them run now.
pub struct Host {
    members: BTreeSet<NodeId>,
    running: Mutex<HashMap<NodeId, Runs>>,
    changes: watch::Sender<u64>,
}

/// A node's place in the registry while it runs: dropped (the node stopped, or its future was
/// dropped), it says so to its neighbours here.
pub struct Running {
    host: Arc<Host>,
    id: NodeId,
    running: watch::Sender<bool>,
}

impl Host {
    pub fn new(members: impl IntoIterator<Item = NodeId>) -> Arc<Host> {
        Arc::new(Host {
            members: members.into_iter().collect(),
            running: Mutex::new(HashMap::new()),
            changes: watch::channel(0).0,
        })
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
/// return; reload them all on SIGHUP. The first error of a node's start stops them all.
pub async fn run(configs: Vec<NodeConfig>, args: Vec<DaemonArgs>) -> anyhow::Result<()> {
    check(&configs).map_err(|e| anyhow::anyhow!(e))?;
    crate::lower_priority(configs[0].nice);
    // Each node holds a few files (its sockets, its store): thousands of nodes need the
    // process's whole allowance, not the soft limit a shell starts it with.
    match raise_open_files() {
        Ok(limit) if limit < configs.len() as u64 * FILES_PER_NODE => tracing::warn!(
            limit,
            nodes = configs.len(),
            "the open-files limit may be too low for this many nodes ({FILES_PER_NODE} each)"
        ),
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "cannot raise the open-files limit"),
    }
    let host = Host::new(configs.iter().map(|c| c.id));
    let stop = crate::shutdown_signal()?;
    let (stopping, stopped) = watch::channel(false);
    let mut nodes = tokio::task::JoinSet::new();
    for (i, (mut config, args)) in configs.into_iter().zip(args).enumerate() {
        if i > 0
            && let Some(addr) = config.metrics_listen.take()
        {
            tracing::warn!(
                node = %config.topology.format_node(config.id),
                %addr,
                "metrics_listen not served: a node host serves one exporter, its first node's"
            );
        }
        let mut stopped = stopped.clone();
        let host = host.clone();
        let span = tracing::info_span!("node", id = %config.topology.format_node(config.id));
        nodes.spawn(tracing::Instrument::instrument(
            async move {
                let stop = async move {
                    let _ = stopped.wait_for(|s| *s).await;
                    Ok(())
                };
                crate::run_node(config, args, true, stop, Some(host)).await
            },
            span,
        ));
    }
    let first_error = tokio::select! {
        r = stop => r.err(),
        Some(ended) = nodes.join_next() => Some(match ended {
            Ok(Ok(())) => anyhow::anyhow!("a node stopped on its own"),
            Ok(Err(e)) => e,
            Err(e) => anyhow::anyhow!("a node's task failed: {e}"),
        }),
    };
    stopping.send_replace(true);
    while let Some(ended) = nodes.join_next().await {
        if let Ok(Err(e)) = ended {
            tracing::warn!(error = %e, "a node stopped with an error");
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Open files one hosted node holds: its link socket, its control socket and its store's file
/// (measured: 2,572 in a process of 1,024 EH(5,5) nodes).
pub const FILES_PER_NODE: u64 = 3;

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
