//! A client of a whole cluster: its manifest, a control client with a client certificate (the
//! operator's, or the one `--cert` names, checked to be of this cluster), and one cached
//! connection per node. A node whose process the launcher started and saw exit (the run state
//! of a local cluster: `launch::run_state`) is not asked: a request to it fails at once with
//! [`ClientError::Down`] ("node 00.01.1 is down: process exited"), not after a timeout.

use crate::launch::certs::client_credentials;
use crate::launch::layout::ClusterDir;
use crate::launch::run_state::{NodeProcess, Processes, RunState};
use cuberoute_daemon::client::{Client, ClientError, Connection};
use cuberoute_daemon::manifest::Manifest;
use cuberoute_daemon::roles::ClientRole;
use cuberoute_daemon::tls::Identity;
use cuberoute_protocol::NodeId;
use cuberoute_protocol::wire::control::{HostReadiness, NodeStatus, Request, Response};
use futures_util::future::join_all;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Semaphore;

/// How many nodes a fan-out ([`ClusterClient::request_each`], [`ClusterClient::statuses`])
/// asks at a time. Every first request to a node opens a connection, whose handshake costs
/// both ends CPU and answers with a certificate chain to the client's one UDP socket. Asking
/// all 512 nodes of EH(4,4) at once, on 2 cores, only 160 to 480 answered within 2 s: the
/// handshakes queued for CPU, and the socket's receive buffer overflowed (thousands of
/// `UdpRcvbufErrors` per `cluster status`), each dropped datagram a handshake retransmitted a
/// second later. 16 at a time, every node answers, and the whole round takes 2 to 4 s
/// (docs/daemon.md, "Clients of many nodes").
pub const FAN_OUT: usize = 16;
/// A request slower than this gives its fan-out slot to the next node and goes on waiting: it
/// waits for a retransmission or a node that does not answer, not for CPU, and so a cluster
/// of unresponsive nodes costs one slot-time per [`FAN_OUT`] nodes, not one timeout.
pub const SLOT_TIME: Duration = Duration::from_millis(500);

/// A cluster seen from a client: its manifest and a control client with the cluster's client
/// certificate.
#[derive(Clone)]
pub struct ClusterClient {
    pub dir: ClusterDir,
    pub manifest: Manifest,
    pub client: Client,
    /// The role of the client certificate ([`ClientRole::OPERATOR`]: the operator's).
    pub role: ClientRole,
    connections: Arc<Mutex<HashMap<NodeId, Connection>>>,
    /// The run state as last read, with the modification time of its file then.
    run_state: Arc<Mutex<Option<ReadRunState>>>,
    /// When each recorded process (pid, start time) was last seen running.
    seen_running: Arc<Mutex<HashMap<ProcessKey, std::time::Instant>>>,
    /// The processes of the manifest, made once when first asked for.
    processes: Arc<std::sync::OnceLock<ProcessMap>>,
}

/// The nodes of each process (those that share a control address in the manifest), and the
/// process of each node.
pub struct ProcessMap {
    /// Each process's nodes, ascending.
    pub nodes: Vec<Vec<NodeId>>,
    /// Each node's index in `nodes`.
    pub of: HashMap<NodeId, usize>,
}

/// A recorded process: its pid and start time.
type ProcessKey = (u32, Option<u64>);

/// How long a process seen running is taken to run without looking again ([`ClusterClient::known_down`]):
/// a process that exited within it is found so by the request that fails to reach it.
const SEEN_RUNNING_FOR: std::time::Duration = std::time::Duration::from_millis(100);

/// The run state as read (`None`: no run state), and which file it was read from.
type ReadRunState = (FileVersion, Option<RunState>);

/// What tells one version of the run state's file from the next: its modification time, and
/// its inode and length. Each save renames a new file over the old one, so two saves within
/// one tick of the file system's clock (a few ms: two nodes restarted one after the other)
/// have the same time but not the same inode; a cache keyed by the time alone kept the first
/// of them for good, and took a restarted node for exited.
type FileVersion = (std::time::SystemTime, u64, u64);

fn file_version(path: &std::path::Path) -> Option<FileVersion> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    Some((m.modified().ok()?, m.ino(), m.len()))
}

impl ClusterClient {
    /// Open the cluster generated in `dir`. Needs a tokio runtime.
    pub fn open(dir: &ClusterDir) -> anyhow::Result<ClusterClient> {
        anyhow::ensure!(
            dir.is_cluster(),
            "{} holds no cluster (no manifest.toml): start one with `cuberoute cluster up`",
            dir.display()
        );
        let manifest = Manifest::load(&dir.manifest())?;
        let credentials = client_credentials(dir)?;
        let Identity::Client(role) = credentials.identity.clone() else {
            anyhow::bail!(
                "{} is {}'s certificate, not a client's",
                dir.client_credentials()[1].display(),
                credentials.identity
            );
        };
        let client = Client::new(&credentials)?;
        Ok(ClusterClient {
            dir: dir.clone(),
            manifest,
            client,
            role,
            connections: Arc::default(),
            run_state: Arc::default(),
            seen_running: Arc::default(),
            processes: Arc::default(),
        })
    }

    /// Why `node` is known to be down, if it is: the launcher of this local cluster started
    /// its process and it has exited ("process exited"), or crashed the node inside it. `None` when it runs, or when nothing
    /// says (containers, a cluster started elsewhere, no run state). The run state is read
    /// again whenever its file changed (a restart records a new process).
    /// A process seen running within [`SEEN_RUNNING_FOR`] is taken to run still: reading
    /// /proc/PID/stat costs the kernel a pass over the process's threads, and every request
    /// asks (a node host of 2,048 nodes with their stores' writers has over 2,000 threads, and
    /// the checks took half a core of a load of 1,300 sets a second).
    pub fn known_down(&self, node: NodeId) -> Option<String> {
        self.with_processes(|processes| {
            let process = processes.processes.iter().find(|p| p.id == node)?;
            let key = (process.pid, process.started);
            let mut seen = self.seen_running.lock().expect("seen lock");
            let now = std::time::Instant::now();
            if !process.crashed
                && seen
                    .get(&key)
                    .is_some_and(|at| now.duration_since(*at) < SEEN_RUNNING_FOR)
            {
                return None;
            }
            let why = processes.why_down(&self.dir, process);
            match why {
                None => seen.insert(key, now),
                Some(_) => seen.remove(&key),
            };
            why.map(str::to_string)
        })
        .flatten()
    }

    /// `f` of the local processes the run state records, read again whenever its file changed;
    /// `None` when it records none (containers, a cluster started elsewhere, no run state).
    fn with_processes<R>(&self, f: impl FnOnce(&Processes) -> R) -> Option<R> {
        let version = file_version(&self.dir.run_state())?;
        let mut cached = self.run_state.lock().expect("run state lock");
        if cached.as_ref().is_none_or(|(read, _)| *read != version) {
            *cached = Some((version, RunState::load(&self.dir).ok().flatten()));
            // The processes seen running are those of the run state read before: a long-lived
            // client (a chaos run, a bench) would otherwise keep one entry per restart.
            self.seen_running.lock().expect("seen lock").clear();
        }
        match cached.as_ref() {
            Some((_, Some(RunState::Processes(processes)))) => Some(f(processes)),
            _ => None,
        }
    }

    /// Whether this client's certificate may make each of `requests` at each of `nodes`, as
    /// the nodes will decide (`cuberoute_daemon::roles`); the first refusal's one line if not.
    /// A command that asks many nodes checks first, so that a certificate without the role
    /// does nothing anywhere and is told so once.
    pub fn allowed(&self, nodes: &[NodeId], requests: &[Request]) -> Result<(), String> {
        requests.iter().try_for_each(|request| {
            nodes
                .iter()
                .try_for_each(|&node| self.role.allows(node, request))
        })
    }

    /// Send `request` to `node`, over a cached connection if there is one. A connection that
    /// failed is replaced once.
    pub async fn request(&self, node: NodeId, request: &Request) -> Result<Response, ClientError> {
        if let Some(why) = self.known_down(node) {
            return Err(ClientError::Down {
                node,
                name: self.name(node),
                why,
            });
        }
        let cached = self
            .connections
            .lock()
            .expect("cache lock")
            .get(&node)
            .cloned();
        if let Some(connection) = cached {
            match connection.request(request).await {
                Err(ClientError::Stream { .. }) => {
                    self.connections.lock().expect("cache lock").remove(&node);
                }
                result => return result,
            }
        }
        let connection = self.connect(node).await?;
        self.connections
            .lock()
            .expect("cache lock")
            .insert(node, connection.clone());
        connection.request(request).await
    }

    /// Close every cached connection.
    pub fn close(&self) {
        for (_, connection) in self.connections.lock().expect("cache lock").drain() {
            connection.close();
        }
    }

    /// Open a new connection to `node`'s control API.
    pub async fn connect(&self, node: NodeId) -> Result<Connection, ClientError> {
        let addr = self
            .manifest
            .node(node)
            .map(|n| n.control.clone())
            .ok_or_else(|| ClientError::Unreachable {
                node,
                name: self.name(node),
                addr: "-".into(),
                message: "not in the manifest".into(),
            })?;
        self.client
            .connect_named(node, self.name(node), &addr)
            .await
    }

    /// `node` as the cluster's commands name it ([`super::names`]).
    pub fn name(&self, node: NodeId) -> String {
        super::names::node(self.manifest.topology, node)
    }

    /// One node's status.
    pub async fn status(&self, node: NodeId) -> Result<NodeStatus, ClientError> {
        match self.request(node, &Request::Status).await? {
            Response::Status(status) => Ok(*status),
            other => Err(ClientError::Stream {
                node,
                name: self.name(node),
                message: format!("unexpected answer {other:?}"),
            }),
        }
    }

    /// Send each request to its node, starting at most [`FAN_OUT`] at a time (see
    /// [`SLOT_TIME`]), each within `timeout` from when it starts; the answers (or why there
    /// was none) in the order asked.
    pub async fn request_each(
        &self,
        requests: Vec<(NodeId, Request)>,
        timeout: Duration,
    ) -> Vec<(NodeId, Result<Response, String>)> {
        let asks = requests.into_iter().map(|(node, request)| async move {
            let answer = tokio::time::timeout(timeout, self.request(node, &request)).await;
            let result = match answer {
                Ok(Ok(response)) => Ok(response),
                Ok(Err(e)) => Err(e.to_string()),
                Err(_) => Err(format!("no answer within {timeout:?}")),
            };
            (node, result)
        });
        fan_out(asks, FAN_OUT, SLOT_TIME).await
    }

    /// The status of each of `nodes` (or why it could not be had), in that order, each within
    /// `timeout`: the nodes that share a process (the run state says which) by one request to
    /// the first of them asked ([`ClusterClient::hosted_statuses`]; a launcher's 2,048
    /// handshakes become one per process), or, should that fail, to the next, up to
    /// [`HOSTED_ASKED`] (if none answers, neither would its nodes one by one: a process of
    /// 65,536 nodes busy starting them, asked so, took 65,536 handshakes it could not finish);
    /// every other node by a request of its own ([`ClusterClient::statuses_each`]).
    pub async fn statuses_of(
        &self,
        nodes: Vec<NodeId>,
        timeout: Duration,
    ) -> Vec<(NodeId, Result<NodeStatus, String>)> {
        let wanted: HashSet<NodeId> = nodes.iter().copied().collect();
        let groups: Vec<Vec<NodeId>> = self
            .hosts()
            .into_iter()
            .map(|host| host.into_iter().filter(|id| wanted.contains(id)).collect())
            .filter(|host: &Vec<NodeId>| !host.is_empty())
            .collect();
        let grouped: HashSet<NodeId> = groups.iter().flatten().copied().collect();
        let alone: Vec<NodeId> = nodes
            .iter()
            .copied()
            .filter(|id| !grouped.contains(id))
            .collect();
        let by_process = groups.into_iter().map(|host| async move {
            let answer = ask_process(&host, |n| self.hosted_statuses(n, timeout)).await;
            match answer {
                Ok((first, (statuses, stopped))) => {
                    let mut found: HashMap<NodeId, NodeStatus> =
                        statuses.into_iter().map(|s| (s.id, s)).collect();
                    let stopped: HashSet<NodeId> = stopped.into_iter().collect();
                    host.into_iter()
                        .map(|id| {
                            let status = found.remove(&id).ok_or_else(|| {
                                if stopped.contains(&id) {
                                    "not running in its process".to_string()
                                } else {
                                    format!("not among the nodes the process of node {first} runs")
                                }
                            });
                            (id, status)
                        })
                        .collect::<Vec<_>>()
                }
                Err(e) => host
                    .into_iter()
                    .map(|id| (id, Err(format!("its process does not answer: {e}"))))
                    .collect(),
            }
        });
        let (grouped, alone) =
            tokio::join!(join_all(by_process), self.statuses_each(alone, timeout));
        let mut found: HashMap<NodeId, Result<NodeStatus, String>> =
            grouped.into_iter().flatten().chain(alone).collect();
        nodes
            .into_iter()
            .map(|id| {
                let status = found.remove(&id).expect("one answer per node asked");
                (id, status)
            })
            .collect()
    }

    /// The nodes of each process that runs several (`cluster up --nodes-per-process`), as the
    /// run state says; where it records no processes (containers, a cluster started
    /// elsewhere), the nodes that share a control address in the manifest, as a node host's
    /// do (`--nodes-per-container`).
    pub fn hosts(&self) -> Vec<Vec<NodeId>> {
        self.with_processes(|processes| shared_processes(&processes.processes))
            .unwrap_or_else(|| {
                let mut hosts = crate::launch::hosting::processes(&self.manifest);
                hosts.retain(|nodes| nodes.len() > 1);
                hosts
            })
    }

    /// The nodes of each process of the manifest, one node a process or several (a node
    /// host's share a control address), and each node's process: made once.
    pub fn process_of(&self) -> &ProcessMap {
        self.processes.get_or_init(|| {
            let nodes = crate::launch::hosting::processes(&self.manifest);
            let of = nodes
                .iter()
                .enumerate()
                .flat_map(|(p, members)| members.iter().map(move |&n| (n, p)))
                .collect();
            ProcessMap { nodes, of }
        })
    }

    /// The status of each of `nodes` (or why it could not be had), in that order, each within
    /// `timeout`, asked one by one as [`ClusterClient::request_each`] does.
    pub async fn statuses_each(
        &self,
        nodes: Vec<NodeId>,
        timeout: Duration,
    ) -> Vec<(NodeId, Result<NodeStatus, String>)> {
        let requests = nodes
            .into_iter()
            .map(|node| (node, Request::Status))
            .collect();
        self.request_each(requests, timeout)
            .await
            .into_iter()
            .map(|(node, result)| {
                let status = result.and_then(|response| match response {
                    Response::Status(status) => Ok(*status),
                    other => Err(format!("unexpected answer {other:?}")),
                });
                (node, status)
            })
            .collect()
    }

    /// The statuses of the nodes of the process that runs `node` ([`Request::Hosted`], page
    /// after page, each within `timeout`), and the nodes it hosts that do not run now.
    pub async fn hosted_statuses(
        &self,
        node: NodeId,
        timeout: Duration,
    ) -> Result<(Vec<NodeStatus>, Vec<NodeId>), String> {
        let (mut statuses, mut stopped, mut after) = (Vec::new(), Vec::new(), None);
        loop {
            let request = Request::Hosted { after };
            let answer = tokio::time::timeout(timeout, self.request(node, &request)).await;
            match answer {
                Ok(Ok(Response::Hosted {
                    statuses: page,
                    stopped: none_running,
                    next,
                })) => {
                    statuses.extend(page);
                    stopped.extend(none_running);
                    match next {
                        Some(next) if after.is_none_or(|a| a < next) => after = Some(next),
                        Some(_) => return Err("the pages of its process do not advance".into()),
                        None => return Ok((statuses, stopped)),
                    }
                }
                Ok(Ok(other)) => return Err(format!("unexpected answer {other:?}")),
                Ok(Err(e)) => return Err(e.to_string()),
                Err(_) => return Err(format!("no answer within {timeout:?}")),
            }
        }
    }

    /// The readiness of the nodes of the process that runs `node`, summed in a few bytes
    /// ([`Request::HostReadiness`]), within `timeout`.
    pub async fn host_readiness(
        &self,
        node: NodeId,
        timeout: Duration,
    ) -> Result<HostReadiness, String> {
        let answer = tokio::time::timeout(timeout, self.request(node, &Request::HostReadiness));
        match answer.await {
            Ok(Ok(Response::HostReadiness(readiness))) => Ok(readiness),
            Ok(Ok(other)) => Err(format!("unexpected answer {other:?}")),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err(format!("no answer within {timeout:?}")),
        }
    }

    /// Every node's status (or why it could not be had), in manifest order, each within
    /// `timeout`.
    pub async fn statuses(&self, timeout: Duration) -> Vec<(NodeId, Result<NodeStatus, String>)> {
        let nodes: Vec<NodeId> = self.manifest.nodes.iter().map(|n| n.id).collect();
        self.statuses_of(nodes, timeout).await
    }
}

/// How many nodes of a process are asked for what it answers for all of them, one after the
/// other (the first may have been crashed inside it), before it is taken for silent.
pub const HOSTED_ASKED: usize = 3;

/// `ask` of the first of `host`'s nodes that answers, of the first [`HOSTED_ASKED`]: the node
/// asked and its answer, or the last one's error.
pub async fn ask_process<T, F, Fut>(host: &[NodeId], ask: F) -> Result<(NodeId, T), String>
where
    F: Fn(NodeId) -> Fut,
    Fut: std::future::Future<Output = Result<T, String>>,
{
    let mut last = Err("no node to ask".to_string());
    for &node in host.iter().take(HOSTED_ASKED) {
        last = ask(node).await.map(|answer| (node, answer));
        if last.is_ok() {
            break;
        }
    }
    last
}

/// Whether the client certificate of `dir` (the operator's, or --cert's) may make each of
/// `requests` at each of `nodes`, before any client is opened ([`ClusterClient::allowed`]):
/// `Ok(Err(line))` with the refusal's one line if not.
pub fn allowed(
    dir: &ClusterDir,
    nodes: &[NodeId],
    requests: &[Request],
) -> anyhow::Result<Result<(), String>> {
    let role = match client_credentials(dir)?.identity {
        Identity::Client(role) => role,
        Identity::Node(id) => anyhow::bail!(
            "{} is node {id}'s certificate, not a client's",
            dir.client_credentials()[1].display()
        ),
    };
    Ok(requests.iter().try_for_each(|request| {
        nodes
            .iter()
            .try_for_each(|&node| role.allows(node, request))
    }))
}

/// The nodes of each process that runs several, in the order `processes` names them.
fn shared_processes(processes: &[NodeProcess]) -> Vec<Vec<NodeId>> {
    let mut groups = crate::launch::run_state::by_process(processes);
    groups.retain(|nodes| nodes.len() > 1);
    groups
}

/// Run `tasks`, each started only when one of `slots` is free, and holding it until it ends or
/// has run for `slot_time`; their outputs in order. A task is polled first when its slot is
/// taken, so a timeout inside it counts from then.
pub async fn fan_out<F: Future>(
    tasks: impl IntoIterator<Item = F>,
    slots: usize,
    slot_time: Duration,
) -> Vec<F::Output> {
    let slots = Semaphore::new(slots);
    let runs = tasks.into_iter().map(|task| {
        let slots = &slots;
        async move {
            let slot = slots
                .acquire()
                .await
                .expect("the semaphore is never closed");
            tokio::pin!(task);
            tokio::select! {
                output = &mut task => output,
                () = tokio::time::sleep(slot_time) => {
                    drop(slot);
                    task.await
                }
            }
        }
    });
    join_all(runs).await
}

/// The nodes taken out of the cluster, as the latest revocation list any node that answered
/// holds says: their links are refused for good, and no wait expects them up.
pub fn revoked(statuses: &[(NodeId, Result<NodeStatus, String>)]) -> BTreeSet<NodeId> {
    statuses
        .iter()
        .filter_map(|(_, s)| s.as_ref().ok())
        .max_by_key(|s| s.revocation_serial)
        .map(|s| s.revoked.iter().copied().collect())
        .unwrap_or_default()
}

/// Whether the link between `a` and `b` may be up: neither end is revoked.
pub(crate) fn may_be_up(a: NodeId, b: NodeId, revoked: &BTreeSet<NodeId>) -> bool {
    !revoked.contains(&a) && !revoked.contains(&b)
}

/// `status`'s links that are up, of those that may be (not to or of a revoked node).
pub fn links_up_of(status: &NodeStatus, revoked: &BTreeSet<NodeId>) -> (usize, usize) {
    let may: Vec<_> = status
        .links
        .iter()
        .filter(|l| may_be_up(status.id, l.neighbour, revoked))
        .collect();
    (may.iter().filter(|l| l.up).count(), may.len())
}

/// Links up over all nodes (each link counted from both ends), and the most there can be: every
/// link but those of revoked nodes.
pub fn links_up(
    statuses: &[(NodeId, Result<NodeStatus, String>)],
    manifest: &Manifest,
) -> (usize, usize) {
    let revoked = revoked(statuses);
    let up = statuses
        .iter()
        .filter_map(|(_, s)| s.as_ref().ok())
        .map(|s| links_up_of(s, &revoked).0)
        .sum();
    (up, link_ends_may_be_up(manifest, &revoked))
}

/// The link ends of `manifest`'s nodes that may be up: every link's two but those of a node
/// `revoked` names.
pub fn link_ends_may_be_up(manifest: &Manifest, revoked: &BTreeSet<NodeId>) -> usize {
    let topology = manifest.topology;
    manifest
        .nodes
        .iter()
        .map(|n| {
            topology
                .neighbours(n.id)
                .filter(|&m| may_be_up(n.id, m, revoked))
                .count()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_that_share_a_process_are_asked_together_and_a_process_per_node_alone() {
        let process = |id: u64, pid: u32| NodeProcess {
            id: NodeId(id),
            pid,
            started: Some(1),
            crashed: false,
        };
        let processes = [
            process(7, 30),
            process(3, 10),
            process(6, 30),
            process(1, 20),
            process(2, 10),
        ];
        let ids = |v: &[u64]| v.iter().map(|&i| NodeId(i)).collect::<Vec<_>>();
        assert_eq!(
            shared_processes(&processes),
            vec![ids(&[7, 6]), ids(&[3, 2])]
        );
        assert!(shared_processes(&processes[3..4]).is_empty());
    }

    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

    /// Tasks that count how many run at once, each taking `length(i)`.
    async fn run(n: usize, length: impl Fn(usize) -> Duration) -> (Vec<(usize, Duration)>, usize) {
        let (running, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let started = tokio::time::Instant::now();
        let tasks = (0..n).map(|i| {
            let (running, most, length) = (&running, &most, length(i));
            async move {
                let now = running.fetch_add(1, SeqCst) + 1;
                most.fetch_max(now, SeqCst);
                tokio::time::sleep(length).await;
                running.fetch_sub(1, SeqCst);
                (i, started.elapsed())
            }
        });
        let done = fan_out(tasks, FAN_OUT, SLOT_TIME).await;
        (done, most.load(SeqCst))
    }

    #[test]
    fn a_file_saved_again_within_one_tick_is_another_version() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.toml");
        std::fs::write(&path, "first = 1").unwrap();
        let first = file_version(&path).unwrap();
        // Saved again as the run state is (a new file renamed over it), as long and with the
        // same modification time, as two saves within one tick of the clock have.
        let partial = dir.path().join("run.toml.partial");
        std::fs::write(&partial, "again = 2").unwrap();
        std::fs::File::options()
            .write(true)
            .open(&partial)
            .unwrap()
            .set_modified(first.0)
            .unwrap();
        std::fs::rename(&partial, &path).unwrap();
        let again = file_version(&path).unwrap();
        assert_eq!((again.0, again.2), (first.0, first.2));
        assert_ne!(again, first);
        assert_eq!(file_version(&dir.path().join("none")), None);
    }

    #[tokio::test(start_paused = true)]
    async fn at_most_fan_out_tasks_run_at_once_and_the_outputs_keep_their_order() {
        let (done, most) = run(100, |_| Duration::from_millis(10)).await;
        assert_eq!(most, FAN_OUT);
        assert!(done.iter().enumerate().all(|(i, (j, _))| i == *j));
        // 100 tasks of 10 ms, 16 at a time: 7 waves.
        assert_eq!(done[99].1, Duration::from_millis(70));
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_task_gives_its_slot_up() {
        // 32 nodes that never answer in time, then 32 that answer at once.
        let hung = Duration::from_secs(10);
        let (done, most) = run(64, |i| if i < 32 { hung } else { Duration::ZERO }).await;
        // Every fast task ended within two slot times, not after the hung ones.
        for (_, at) in &done[32..] {
            assert!(*at <= 2 * SLOT_TIME, "{at:?}");
        }
        assert!(
            most > FAN_OUT,
            "the hung tasks kept running beside the others"
        );
    }
}
