//! What runs a cluster, as `DIR/run.toml` records it: one [`RunState`] per backend (local
//! processes, a compose project, a Swarm stack), written before anything is started and read by
//! everything that acts on a running cluster ([`runner`](crate::launch::runner) and the rest).
//!
//! For local processes it records each one's pid and the time it started (read from /proc
//! right after it was spawned), and the boot they belong to. A recorded process counts as
//! running only while a process with its pid exists, has not exited, and started at the
//! recorded time ([`is_running`]): so a pid that another program took over is never signalled,
//! and how the cluster directory is spelled (relative, absolute, through a symlink) does not
//! matter. (Records without a start time, written by earlier versions, are matched by the
//! daemon's canonical `--config` path instead.)
//!
//! The file's form is the same for every backend (`topology`, `boot`, a table `[netns]`,
//! `[docker]` or `[swarm]`, the `[[process]]` list): [`RunState`] is read from it and written
//! to it through that one record.

use crate::launch::docker::DockerRun;
use crate::launch::layout::ClusterDir;
use crate::launch::netns::NetnsRun;
use crate::launch::swarm::run::SwarmRun;
use anyhow::Context;
use cuberoute_protocol::{NodeId, Topology};
use serde::{Deserialize, Serialize};
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// What runs a cluster, by backend.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(from = "Record", into = "Record")]
pub enum RunState {
    /// Local processes (`cluster up`), each in a network namespace of its own with `--netns`.
    Processes(Processes),
    /// The containers of a compose project (`cluster up --docker`, or one found running the
    /// directory's nodes).
    Compose { topology: Topology, run: DockerRun },
    /// A Swarm stack over several hosts (`cluster swarm`): a node's runner is its task.
    Swarm { topology: Topology, run: SwarmRun },
}

/// A cluster of local processes.
#[derive(Clone, Debug, PartialEq)]
pub struct Processes {
    pub topology: Topology,
    /// The boot the processes were started in (/proc/sys/kernel/random/boot_id): after a
    /// reboot, none of them runs.
    pub boot: Option<String>,
    /// Set when every node runs in a network namespace of its own (`cluster up --netns`).
    pub netns: Option<NetnsRun>,
    pub processes: Vec<NodeProcess>,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct NodeProcess {
    pub id: NodeId,
    pub pid: u32,
    /// When the process started, in clock ticks after boot (field 22 of /proc/PID/stat). With
    /// the pid and the boot it names the process: one that gets the same pid later starts later.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<u64>,
    /// The node was crashed inside its process, which runs on with its other nodes (a node
    /// host, `local::kill_node`): the node is down while the process runs.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub crashed: bool,
}

/// `DIR/run.toml` as written: one table per backend, the one in use set.
#[derive(Clone, Serialize, Deserialize)]
struct Record {
    topology: Topology,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    boot: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    docker: Option<DockerRun>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    netns: Option<NetnsRun>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    swarm: Option<SwarmRun>,
    #[serde(rename = "process", default)]
    processes: Vec<NodeProcess>,
}

impl From<Record> for RunState {
    /// A Swarm stack if the record names one, else a compose project, else processes.
    fn from(r: Record) -> RunState {
        match (r.swarm, r.docker) {
            (Some(run), _) => RunState::Swarm {
                topology: r.topology,
                run,
            },
            (None, Some(run)) => RunState::Compose {
                topology: r.topology,
                run,
            },
            (None, None) => RunState::Processes(Processes {
                topology: r.topology,
                boot: r.boot,
                netns: r.netns,
                processes: r.processes,
            }),
        }
    }
}

impl From<RunState> for Record {
    fn from(state: RunState) -> Record {
        let empty = |topology| Record {
            topology,
            boot: None,
            docker: None,
            netns: None,
            swarm: None,
            processes: Vec::new(),
        };
        match state {
            RunState::Processes(p) => Record {
                boot: p.boot,
                netns: p.netns,
                processes: p.processes,
                ..empty(p.topology)
            },
            RunState::Compose { topology, run } => Record {
                docker: Some(run),
                ..empty(topology)
            },
            RunState::Swarm { topology, run } => Record {
                swarm: Some(run),
                ..empty(topology)
            },
        }
    }
}

impl RunState {
    pub fn topology(&self) -> Topology {
        match self {
            RunState::Processes(p) => p.topology,
            RunState::Compose { topology, .. } | RunState::Swarm { topology, .. } => *topology,
        }
    }

    /// Whether the nodes run in containers (compose or Swarm).
    pub fn in_containers(&self) -> bool {
        !matches!(self, RunState::Processes(_))
    }

    /// The recorded processes that are still running (none for containers).
    pub fn alive(&self, dir: &ClusterDir) -> Vec<NodeProcess> {
        match self {
            RunState::Processes(p) => p.alive(dir),
            _ => Vec::new(),
        }
    }

    pub fn load(dir: &ClusterDir) -> anyhow::Result<Option<RunState>> {
        let path = dir.run_state();
        if !path.exists() {
            return Ok(None);
        }
        let text =
            fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        let state =
            toml::from_str(&text).with_context(|| format!("{} is not valid", path.display()))?;
        Ok(Some(state))
    }

    /// Write the run state whole or not at all (a temporary file renamed over the old one).
    pub fn save(&self, dir: &ClusterDir) -> anyhow::Result<()> {
        let path = dir.run_state();
        let partial = path.with_extension("toml.partial");
        fs::write(&partial, toml::to_string(self)?)
            .and_then(|()| fs::rename(&partial, &path))
            .with_context(|| format!("writing {}", path.display()))
    }
}

impl Processes {
    /// Processes of `topology` about to be started in this boot, in the namespaces of
    /// `netns` if it is given; none recorded yet.
    pub fn new(topology: Topology, netns: Option<NetnsRun>) -> Processes {
        Processes {
            topology,
            boot: boot_id(),
            netns,
            processes: Vec::new(),
        }
    }

    /// The recorded processes that are still running.
    pub fn alive(&self, dir: &ClusterDir) -> Vec<NodeProcess> {
        self.processes
            .iter()
            .copied()
            .filter(|p| self.is_running(dir, p))
            .collect()
    }

    /// Whether node `p` runs: its process does, and it was not crashed inside it.
    pub fn node_runs(&self, dir: &ClusterDir, p: &NodeProcess) -> bool {
        self.why_down(dir, p).is_none()
    }

    /// Why node `p` does not run, if it does not: its process exited, or it was crashed inside
    /// its process.
    pub fn why_down(&self, dir: &ClusterDir, p: &NodeProcess) -> Option<&'static str> {
        if !self.is_running(dir, p) {
            Some("process exited")
        } else if p.crashed {
            Some("crashed inside its process")
        } else {
            None
        }
    }

    /// Whether the recorded process `p` still runs (see the module doc).
    pub fn is_running(&self, dir: &ClusterDir, p: &NodeProcess) -> bool {
        if self.boot.is_some() && self.boot != boot_id() {
            return false;
        }
        is_running(p, &dir.node_config(p.id))
    }
}

/// This boot's id, if the kernel tells it.
pub(crate) fn boot_id() -> Option<String> {
    fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|id| id.trim().to_string())
}

/// The state letter and the start time (clock ticks after boot) of a process, from
/// /proc/PID/stat; `None` if there is no such process.
fn stat(pid: u32) -> Option<(char, u64)> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split at the last ')'.
    let mut fields = text.rsplit_once(')')?.1.split_whitespace();
    let state = fields.next()?.chars().next()?;
    // The state is field 3 and the start time field 22.
    let started = fields.nth(18)?.parse().ok()?;
    Some((state, started))
}

/// How many threads process `pid` has left (0 if it is gone).
fn threads(pid: u32) -> usize {
    fs::read_dir(format!("/proc/{pid}/task")).map_or(0, |tasks| tasks.count())
}

/// The nodes of each process `processes` records (a node host is recorded once per node: one
/// pid and start time), in the order they first appear.
pub fn by_process(processes: &[NodeProcess]) -> Vec<Vec<NodeId>> {
    let mut keys: Vec<(u32, Option<u64>)> = Vec::new();
    let mut groups: Vec<Vec<NodeId>> = Vec::new();
    for p in processes {
        let key = (p.pid, p.started);
        match keys.iter().position(|k| *k == key) {
            Some(i) => groups[i].push(p.id),
            None => {
                keys.push(key);
                groups.push(vec![p.id]);
            }
        }
    }
    groups
}

/// When process `pid` started (clock ticks after boot), if it exists.
pub fn start_time(pid: u32) -> Option<u64> {
    stat(pid).map(|(_, started)| started)
}

/// The `--config` argument of process `pid`, resolved against its working directory and
/// canonicalised.
fn config_of(pid: u32) -> Option<PathBuf> {
    let cmdline = fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let mut args = cmdline.split(|b| *b == 0).map(std::ffi::OsStr::from_bytes);
    let config = loop {
        let arg = args.next()?;
        if arg == "--config" {
            break PathBuf::from(args.next()?);
        }
        if let Some(value) = arg.as_bytes().strip_prefix(b"--config=") {
            break PathBuf::from(std::ffi::OsStr::from_bytes(value));
        }
    };
    let config = if config.is_relative() {
        Path::new(&format!("/proc/{pid}/cwd")).join(config)
    } else {
        config
    };
    fs::canonicalize(config).ok()
}

/// Whether `p` is running: its pid exists and has not exited, and it started at the recorded
/// time (or, for a record without one, runs with `config`, however either path is spelled).
pub fn is_running(p: &NodeProcess, config: &Path) -> bool {
    let Some((state, started)) = stat(p.pid) else {
        return false;
    };
    // A zombie (or a dead task) has exited and only waits to be reaped, unless it is the leader
    // of threads still exiting: a leader killed with its threads turns zombie first, while the
    // others still hold the process's files (its store's lock) and sockets (its ports).
    if matches!(state, 'Z' | 'X' | 'x') {
        return threads(p.pid) > 1;
    }
    match p.started {
        Some(recorded) => recorded == started,
        None => config_of(p.pid).is_some_and(|c| fs::canonicalize(config).is_ok_and(|d| c == d)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;
    use std::time::{Duration, Instant};

    /// A stand-in daemon: `sh` whose command line holds `--config CONFIG` (relative to `cwd`).
    fn stand_in(cwd: &Path, config: &str) -> std::process::Child {
        Command::new("sh")
            .args(["-c", "sleep 30; :", "daemon", "--config", config])
            .current_dir(cwd)
            .spawn()
            .unwrap()
    }

    #[test]
    fn a_process_is_known_by_its_start_time_and_its_config_however_spelled() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("c");
        for id in [0, 1] {
            let node = ClusterDir::new(&root).node_dir(NodeId(id));
            fs::create_dir_all(&node).unwrap();
            fs::write(node.join("node.toml"), "").unwrap();
        }
        std::os::unix::fs::symlink(&root, tmp.path().join("link")).unwrap();
        let mut child = stand_in(tmp.path(), "c/nodes/0/node.toml");
        let pid = child.id();
        let started = start_time(pid).unwrap();
        let recorded = NodeProcess {
            id: NodeId(0),
            pid,
            started: Some(started),
            crashed: false,
        };
        let unrecorded = NodeProcess {
            started: None,
            ..recorded
        };
        let t = tmp.path().display();
        let spellings = [
            format!("{t}/c"),
            format!("{t}/./c"),
            format!("{t}/c/"),
            format!("{t}/c/../c"),
            format!("{t}/link"),
        ];
        // `sh` may not have exec'd yet: its command line is the test's until it has.
        let deadline = Instant::now() + Duration::from_secs(5);
        while config_of(pid).is_none_or(|c| !c.ends_with("c/nodes/0/node.toml")) {
            assert!(Instant::now() < deadline, "sh never started");
            std::thread::sleep(Duration::from_millis(10));
        }
        for spelling in &spellings {
            let dir = ClusterDir::new(spelling);
            assert!(
                is_running(&recorded, &dir.node_config(NodeId(0))),
                "{spelling}"
            );
            assert!(
                is_running(&unrecorded, &dir.node_config(NodeId(0))),
                "{spelling}"
            );
            // Without a start time, another node's config is another process.
            assert!(
                !is_running(&unrecorded, &dir.node_config(NodeId(1))),
                "{spelling}"
            );
        }
        // A pid that started at another time is another program's.
        let reused = NodeProcess {
            started: Some(started + 1),
            ..recorded
        };
        assert!(!is_running(&reused, &root.join("nodes/0/node.toml")));
        // A record from another boot runs no more.
        let state = Processes {
            topology: "q:1".parse().unwrap(),
            boot: Some("another boot".into()),
            netns: None,
            processes: vec![recorded],
        };
        assert!(state.alive(&ClusterDir::new(&root)).is_empty());
        let this_boot = Processes {
            boot: boot_id(),
            ..state
        };
        assert_eq!(
            this_boot.alive(&ClusterDir::new(&spellings[4])),
            vec![recorded]
        );
        // Exited (a zombie until reaped), then gone.
        child.kill().unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while is_running(&recorded, &root.join("nodes/0/node.toml")) {
            assert!(
                Instant::now() < deadline,
                "a killed process still counts as running"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        child.wait().unwrap();
        assert!(!is_running(&recorded, &root.join("nodes/0/node.toml")));
        assert!(!is_running(&unrecorded, &root.join("nodes/0/node.toml")));
    }

    /// A leader that has exited while its threads still run (as when a daemon is killed and its
    /// threads are slower to go) still runs: its threads hold its files and ports.
    #[test]
    fn a_leader_whose_threads_still_exit_still_runs() {
        let tmp = tempfile::tempdir().unwrap();
        let config = tmp.path().join("node.toml");
        fs::write(&config, "").unwrap();
        // The leader ends with exit(2) (not exit_group), its thread sleeps 1 s longer.
        let mut child = Command::new("python3")
            .args([
                "-c",
                "import ctypes, threading, time\n\
                 threading.Thread(target=time.sleep, args=(1.0,)).start()\n\
                 ctypes.CDLL(None).syscall(60, 0)",
            ])
            .spawn()
            .expect("python3 runs");
        let pid = child.id();
        let recorded = NodeProcess {
            id: NodeId(0),
            pid,
            started: start_time(pid),
            crashed: false,
        };
        let deadline = Instant::now() + Duration::from_secs(5);
        while stat(pid).is_some_and(|(state, _)| state != 'Z') {
            assert!(Instant::now() < deadline, "the leader did not exit");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(threads(pid), 2, "the leader exited, its thread did not");
        assert!(is_running(&recorded, &config));
        while is_running(&recorded, &config) {
            assert!(Instant::now() < deadline, "gone threads still count");
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(threads(pid), 1);
        child.wait().unwrap();
    }

    /// A run state written before `--netns` existed still loads; one with a network keeps it.
    #[test]
    fn run_states_with_and_without_a_network_load() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = ClusterDir::new(tmp.path());
        fs::write(
            dir.run_state(),
            "topology = \"q:1\"\n\n[[process]]\nid = 0\npid = 7\nstarted = 9\n",
        )
        .unwrap();
        let Some(RunState::Processes(old)) = RunState::load(&dir).unwrap() else {
            panic!("processes")
        };
        assert_eq!((old.netns.clone(), old.processes.len()), (None, 1));
        RunState::Processes(Processes {
            netns: Some(net()),
            ..old
        })
        .save(&dir)
        .unwrap();
        let Some(RunState::Processes(back)) = RunState::load(&dir).unwrap() else {
            panic!("processes")
        };
        assert_eq!(back.netns, Some(net()));
    }

    fn net() -> NetnsRun {
        NetnsRun {
            tag: "0a1f".into(),
            block: std::net::Ipv4Addr::new(198, 18, 16, 0),
            prefix: 20,
            nodes: 2,
            claim: "/c".into(),
        }
    }

    /// `run.toml` for each backend is what it was when the run state was one record of
    /// optional tables, and reads back as the same backend.
    #[test]
    fn each_backend_is_written_as_before_and_read_back() {
        let processes = RunState::Processes(Processes {
            topology: "q:1".parse().unwrap(),
            boot: Some("b00t".into()),
            netns: Some(net()),
            processes: vec![
                NodeProcess {
                    id: NodeId(3),
                    pid: 77,
                    started: Some(9),
                    crashed: false,
                },
                NodeProcess {
                    id: NodeId(1),
                    pid: 5,
                    started: None,
                    crashed: false,
                },
            ],
        });
        let compose = RunState::Compose {
            topology: "eh:1,1".parse().unwrap(),
            run: DockerRun {
                project: "proj".into(),
                compose_file: "/x/compose.yml".into(),
                subnet: std::net::Ipv4Addr::new(10, 200, 0, 0),
                crashed: Vec::new(),
            },
        };
        let swarm = RunState::Swarm {
            topology: "q:2".parse().unwrap(),
            run: SwarmRun {
                stack: "st".into(),
                manager: "unix:///m".into(),
                placement: "paths".into(),
                image: "img".into(),
                image_id: Some("sha".into()),
                testbed: Some("/tb".into()),
                hosts: vec![crate::launch::swarm::run::SwarmHost {
                    name: "h1".into(),
                    address: "198.18.0.2".into(),
                    node: "abc".into(),
                    hostname: "h1".into(),
                    endpoint: None,
                }],
                crashed: Vec::new(),
            },
        };
        // As the record of optional tables wrote them.
        let written = [
            "topology = \"q:1\"\nboot = \"b00t\"\n\n[netns]\ntag = \"0a1f\"\nblock = \"198.18.16.0\"\n\
             prefix = 20\nnodes = 2\nclaim = \"/c\"\n\n[[process]]\nid = 3\npid = 77\nstarted = 9\n\n\
             [[process]]\nid = 1\npid = 5\n",
            "topology = \"eh:1,1\"\nprocess = []\n\n[docker]\nproject = \"proj\"\n\
             compose_file = \"/x/compose.yml\"\nsubnet = \"10.200.0.0\"\n",
            "topology = \"q:2\"\nprocess = []\n\n[swarm]\nstack = \"st\"\nmanager = \"unix:///m\"\n\
             placement = \"paths\"\nimage = \"img\"\nimage_id = \"sha\"\ntestbed = \"/tb\"\n\n\
             [[swarm.host]]\nname = \"h1\"\naddress = \"198.18.0.2\"\nnode = \"abc\"\nhostname = \"h1\"\n",
        ];
        let tmp = tempfile::tempdir().unwrap();
        let dir = ClusterDir::new(tmp.path());
        for (state, text) in [processes, compose, swarm].into_iter().zip(written) {
            assert_eq!(toml::to_string(&state).unwrap(), text);
            state.save(&dir).unwrap();
            assert_eq!(RunState::load(&dir).unwrap(), Some(state));
        }
    }

    #[test]
    fn the_start_time_is_field_22_of_stat() {
        let own = std::process::id();
        let text = fs::read_to_string(format!("/proc/{own}/stat")).unwrap();
        let fields: Vec<&str> = text
            .rsplit_once(')')
            .unwrap()
            .1
            .split_whitespace()
            .collect();
        assert_eq!(
            stat(own).map(|(_, started)| started),
            Some(fields[19].parse().unwrap())
        );
        assert_eq!(stat(u32::MAX), None);
    }
}
