//! `cuberoute testbed`: a Docker Swarm of several engines on one machine. Each host is a network
//! namespace of its own with its own address on a bridge, and runs a Docker engine of its own;
//! the engines form one Swarm. A test loses a host by cutting its link ([`cut`]) and gets it back
//! with [`restore`]. Root only; made with iproute2, iptables, `dockerd` and the `docker` CLI.
//!
//! What a testbed of N hosts (2 to 9) in directory TB makes, every name carrying its tag `T`
//! (four hex digits, claimed with the tags of `cluster up --netns`: [`netns::claim_block`]);
//! `I` is 1..N and host `hI` is the I-th:
//!
//! ```text
//! block       a /18 of 198.18.0.0/15 that no address or route of the machine overlaps
//! crtb-T      the bridge, at block.0.1/18: the machine's side, so the CLI reaches every host
//! crh-T-hI    host I's namespace: lo, eth0 at block.0.(1+I)/24, default route via the bridge
//! crtv-T-hI   the bridge's end of host I's veth pair (eth0 is the other); `cut` sets it down
//! rules       iptables -I FORWARD and -I DOCKER-USER: -i crtb-T -o crtb-T ACCEPT, comment
//!             cuberoute-tb-T (bridged frames pass iptables, where Docker's FORWARD policy drops)
//! dockerd     one engine per host, started in its namespace (nsenter --net; `ip netns exec`
//!             would remount /sys, and dockerd then fails "Devices cgroup isn't mounted"), in a
//!             process group of its own so that it outlives `up`:
//!             --config-file TB/hI/daemon.json, log TB/hI/dockerd.log,
//!             --data-root /var/lib/cuberoute-testbed/T/hI, --exec-root /run/cuberoute-testbed/T/hI
//!             (its socket docker.sock and pidfile docker.pid are there: short paths),
//!             --containerd-namespace cr-T-hI, --containerd-plugins-namespace cr-T-hI-plugins
//! daemon.json the machine's storage driver (`docker info`), bip block.I.1/24, address pools
//!             block.(16+4(I-1)).0/22 in /24s, cgroup-parent cuberoute-tb-T-hI, its own
//!             deprecated-key-path (else every engine shares /etc/docker/key.json)
//! swarm       init on h1 (advertise block.0.2, pool block.56.0/21 in /24s for overlays), the
//!             others join as workers; each node labelled cuberoute.host=hI
//! claim       /run/cuberoute/netns/T: the testbed directory that owns the tag
//! ```
//!
//! The state file TB/testbed.toml records the tag and the block before anything is made, and
//! each engine's pid (with its start time, so a pid taken over later is never signalled) once
//! it is spawned: [`down`] finds everything after an `up` that was killed half way, however the
//! directory is spelled, by the tag. It is idempotent and leaves nothing: see [`teardown`].
//!
//! **Which containerd.** dockerd uses the system's containerd when
//! /run/containerd/containerd.sock exists, and otherwise starts one of its own (root under its
//! data root, state under its exec root, killed with it). Where there is a system containerd,
//! containers and images of an engine live in its namespaces cr-T-hI and cr-T-hI-plugins, and
//! would outlive a dockerd that died: `up` records the address then, and `down` empties and
//! removes those namespaces with `ctr`. Without one (this project's machines: Docker Engine
//! 20.10 from Debian starts its own), each engine's containerd goes with its engine and its
//! data root. Either way the container processes are found by their cgroup (cgroup-parent) and
//! the shims and helpers by their network namespace or command line.
//!
//! For other modules (`cluster swarm`): [`load`] reads a testbed from its directory: its
//! [`Host`]s (name, address, the engine's socket and `-H` string, whether cut) and the
//! manager ([`Testbed::manager`], [`Testbed::manager_endpoint`]).

mod engine;
mod net;
mod swarm;
mod teardown;

pub use teardown::Removed;

use crate::launch::local::interrupt::Catch;
use crate::launch::netns;
use crate::launch::swarm::stack::HOST_LABEL;
use anyhow::Context;
use serde::{Deserialize, Serialize};
use std::fs;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The fewest and most hosts of a testbed.
pub const HOSTS: std::ops::RangeInclusive<usize> = 2..=9;
/// Hosts of a testbed unless told otherwise.
pub const DEFAULT_HOSTS: usize = 3;
/// The state file in the testbed directory.
pub const STATE_FILE: &str = "testbed.toml";
/// The port of the swarm's manager.
pub const MANAGER_PORT: u16 = 2377;
/// Where the engines keep their data, per tag and host.
const DATA_ROOT: &str = "/var/lib/cuberoute-testbed";
/// Where the engines keep their state (sockets, pidfiles, containerd's state), per tag and host.
const RUN_ROOT: &str = "/run/cuberoute-testbed";
/// The prefix of a testbed's block: 64 /24s.
const PREFIX: u8 = 18;
/// The system containerd's socket, which dockerd uses when it exists.
const SYSTEM_CONTAINERD: &str = "/run/containerd/containerd.sock";

/// A testbed's names and addresses, from its tag, block and size: pure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Plan {
    pub tag: String,
    pub block: Ipv4Addr,
    pub hosts: usize,
}

impl Plan {
    /// The `k`-th /24 of the block.
    fn net(&self, k: u32) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.block) + (k << 8))
    }

    /// Host `i`'s name (`i` from 1).
    pub fn name(i: usize) -> String {
        format!("h{i}")
    }

    pub fn namespace(&self, i: usize) -> String {
        format!("crh-{}-h{i}", self.tag)
    }

    pub fn bridge(&self) -> String {
        format!("crtb-{}", self.tag)
    }

    /// The bridge's end of host `i`'s veth pair.
    pub fn veth(&self, i: usize) -> String {
        format!("crtv-{}-h{i}", self.tag)
    }

    /// The bridge's address (the machine's side), with the whole block as its prefix.
    pub fn bridge_address(&self) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.block) + 1)
    }

    /// Host `i`'s address (eth0 of its namespace, a /24 with the bridge).
    pub fn address(&self, i: usize) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.block) + 1 + i as u32)
    }

    /// Host `i`'s engine's bridge (`--bip`).
    pub fn bip(&self, i: usize) -> String {
        format!("{}/24", Ipv4Addr::from(u32::from(self.net(i as u32)) + 1))
    }

    /// Host `i`'s engine's pool for local networks (a /22, given out in /24s).
    pub fn pool(&self, i: usize) -> String {
        format!("{}/22", self.net(16 + 4 * (i as u32 - 1)))
    }

    /// The swarm's pool for overlay networks (a /21, given out in /24s).
    pub fn swarm_pool(&self) -> String {
        format!("{}/21", self.net(56))
    }

    /// The comment that marks the iptables rules.
    pub fn comment(&self) -> String {
        format!("cuberoute-tb-{}", self.tag)
    }

    /// The cgroup under which host `i`'s containers run (in every hierarchy).
    pub fn cgroup_parent(&self, i: usize) -> String {
        format!("cuberoute-tb-{}-h{i}", self.tag)
    }

    pub fn containerd_namespace(&self, i: usize) -> String {
        format!("cr-{}-h{i}", self.tag)
    }

    pub fn containerd_plugins_namespace(&self, i: usize) -> String {
        format!("cr-{}-h{i}-plugins", self.tag)
    }

    /// Every engine's data roots are under this.
    pub fn data_roots(&self) -> PathBuf {
        Path::new(DATA_ROOT).join(&self.tag)
    }

    /// Every engine's exec roots are under this.
    pub fn run_roots(&self) -> PathBuf {
        Path::new(RUN_ROOT).join(&self.tag)
    }

    pub fn data_root(&self, i: usize) -> PathBuf {
        self.data_roots().join(Plan::name(i))
    }

    pub fn exec_root(&self, i: usize) -> PathBuf {
        self.run_roots().join(Plan::name(i))
    }

    /// Host `i`'s engine's socket.
    pub fn socket(&self, i: usize) -> PathBuf {
        self.exec_root(i).join("docker.sock")
    }

    pub fn pidfile(&self, i: usize) -> PathBuf {
        self.exec_root(i).join("docker.pid")
    }

    /// Whether `name` (a namespace or a link) is one of this testbed's.
    pub fn owns(&self, name: &str) -> bool {
        let t = &self.tag;
        name == self.bridge()
            || ["crh", "crtv"].iter().any(|kind| {
                name.strip_prefix(&format!("{kind}-{t}-"))
                    .is_some_and(|host| host_index(host).is_some())
            })
    }
}

/// The index of host `name` (`h1` -> 1), if it is a host's name at all (`h1`..`h9`).
pub fn host_index(name: &str) -> Option<usize> {
    let i: usize = name.strip_prefix('h')?.parse().ok()?;
    (name == Plan::name(i) && (1..=*HOSTS.end()).contains(&i)).then_some(i)
}

/// Refuse a number of hosts outside [`HOSTS`].
pub fn check_hosts(hosts: usize) -> Result<(), String> {
    if HOSTS.contains(&hosts) {
        Ok(())
    } else {
        Err(format!(
            "--hosts {hosts}: a testbed has {} to {} hosts",
            HOSTS.start(),
            HOSTS.end()
        ))
    }
}

/// Refuse unless this process runs as root.
pub fn need_root() -> anyhow::Result<()> {
    anyhow::ensure!(
        nix::unistd::Uid::effective().is_root(),
        "a testbed needs root: it makes network namespaces, a bridge, iptables rules and Docker \
         engines (run cuberoute as root)"
    );
    Ok(())
}

/// What TB/testbed.toml records.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct State {
    pub tag: String,
    pub block: Ipv4Addr,
    pub hosts: usize,
    /// Who owns the tag: the canonical testbed directory, as in the claim file.
    pub claim: String,
    pub image: String,
    pub storage_driver: String,
    /// The system containerd the engines use (its socket), if there was one when they started;
    /// `None`: each engine started its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub containerd: Option<String>,
    /// The boot the engines were started in (/proc/sys/kernel/random/boot_id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot: Option<String>,
    /// One per host, in order.
    #[serde(rename = "host", default)]
    pub engines: Vec<EngineRecord>,
}

/// One host's engine, as recorded.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct EngineRecord {
    pub name: String,
    /// dockerd's pid, once spawned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// Its start time (clock ticks after boot, field 22 of /proc/PID/stat).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<u64>,
    /// Its swarm node id, once joined.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_id: Option<String>,
    /// Whether its link is cut.
    #[serde(default)]
    pub cut: bool,
}

impl State {
    pub fn plan(&self) -> Plan {
        Plan {
            tag: self.tag.clone(),
            block: self.block,
            hosts: self.hosts,
        }
    }

    fn path(dir: &Path) -> PathBuf {
        dir.join(STATE_FILE)
    }

    /// The state in `dir`; `None` if there is none.
    pub fn load(dir: &Path) -> anyhow::Result<Option<State>> {
        let path = State::path(dir);
        let text = match fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        let state: State =
            toml::from_str(&text).with_context(|| format!("{} is not valid", path.display()))?;
        anyhow::ensure!(
            state.tag.len() == 4 && state.tag.bytes().all(|b| b.is_ascii_hexdigit()),
            "{}: the tag {:?} is not four hex digits",
            path.display(),
            state.tag
        );
        anyhow::ensure!(
            state.engines.len() == state.hosts && HOSTS.contains(&state.hosts),
            "{}: {} hosts recorded for a testbed of {}",
            path.display(),
            state.engines.len(),
            state.hosts
        );
        Ok(Some(state))
    }

    /// Write the state whole or not at all (a temporary file renamed over the old one).
    pub fn save(&self, dir: &Path) -> anyhow::Result<()> {
        let path = State::path(dir);
        let partial = path.with_extension("toml.partial");
        fs::write(&partial, toml::to_string(self)?)
            .and_then(|()| fs::rename(&partial, &path))
            .with_context(|| format!("writing {}", path.display()))
    }

    /// Whether the engine of host `i` (from 1) still runs: its recorded pid exists, has not
    /// exited, and started at the recorded time, in this boot.
    pub fn engine_running(&self, i: usize) -> bool {
        let e = &self.engines[i - 1];
        let (Some(pid), Some(started)) = (e.pid, e.started) else {
            return false;
        };
        self.boot == boot_id() && engine::process_runs(pid, started)
    }
}

/// This boot's id, if the kernel tells it.
fn boot_id() -> Option<String> {
    fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|id| id.trim().to_string())
}

/// There is no testbed in this directory.
#[derive(Debug, thiserror::Error)]
#[error(
    "no testbed in {0} (no {STATE_FILE}): `cuberoute testbed up --dir {0}` makes one",
    STATE_FILE = STATE_FILE
)]
pub struct NoTestbed(pub String);

/// A testbed, as [`load`] reads it from its directory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Testbed {
    pub dir: PathBuf,
    pub tag: String,
    /// The block of 198.18.0.0/15 it holds, a /18.
    pub block: Ipv4Addr,
    /// The image loaded into every engine.
    pub image: String,
    /// h1..hN; h1 is the swarm's manager.
    pub hosts: Vec<Host>,
}

/// One host of a testbed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Host {
    /// `h1`..`hN`.
    pub name: String,
    /// Its address, reachable from the machine and from the other hosts (while not cut).
    pub address: Ipv4Addr,
    /// Its network namespace (/var/run/netns/NAME).
    pub namespace: String,
    /// Its engine's socket.
    pub socket: PathBuf,
    /// Whether its link is cut ([`cut`]).
    pub cut: bool,
}

impl Host {
    /// The engine's address for `docker -H`: `unix:///run/cuberoute-testbed/T/hI/docker.sock`.
    pub fn docker_host(&self) -> String {
        format!("unix://{}", self.socket.display())
    }

    /// A `docker` command talking to this host's engine; add its arguments.
    pub fn docker(&self) -> Command {
        engine::docker(&self.socket)
    }
}

impl Testbed {
    /// The swarm's manager (h1).
    pub fn manager(&self) -> &Host {
        &self.hosts[0]
    }

    /// Where the swarm's manager listens: `ADDRESS:2377`.
    pub fn manager_endpoint(&self) -> String {
        format!("{}:{MANAGER_PORT}", self.manager().address)
    }

    /// The host called `name`, if there is one.
    pub fn host(&self, name: &str) -> Option<&Host> {
        self.hosts.iter().find(|h| h.name == name)
    }

    fn of(dir: &Path, state: &State) -> Testbed {
        let plan = state.plan();
        Testbed {
            dir: dir.to_path_buf(),
            tag: state.tag.clone(),
            block: state.block,
            image: state.image.clone(),
            hosts: (1..=state.hosts)
                .map(|i| Host {
                    name: Plan::name(i),
                    address: plan.address(i),
                    namespace: plan.namespace(i),
                    socket: plan.socket(i),
                    cut: state.engines[i - 1].cut,
                })
                .collect(),
        }
    }
}

/// The testbed in `dir`; a [`NoTestbed`] error if there is none.
pub fn load(dir: &Path) -> anyhow::Result<Testbed> {
    let state = State::load(dir)?.ok_or_else(|| NoTestbed(dir.display().to_string()))?;
    Ok(Testbed::of(dir, &state))
}

/// What `up` is asked for.
#[derive(Clone, Debug)]
pub struct UpOptions {
    pub dir: PathBuf,
    pub hosts: usize,
    pub image: String,
}

/// How long each stage of `up` took.
#[derive(Clone, Debug, Default)]
pub struct UpTimes {
    pub network: Duration,
    pub engines: Duration,
    pub image: Duration,
    pub swarm: Duration,
    pub total: Duration,
}

/// How long an engine has to answer after it is spawned.
const ENGINE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the swarm has to show every node Ready.
const SWARM_TIMEOUT: Duration = Duration::from_secs(60);

/// Make a testbed ([`UpOptions`]): the network, the engines, the image in each, the swarm.
/// `progress` is told each stage as it ends. On an error or an interrupt (SIGINT, SIGTERM
/// caught by `interrupt`) everything made is removed, and the state file with it.
pub fn up(
    options: &UpOptions,
    interrupt: &Catch,
    progress: &mut dyn FnMut(String),
) -> anyhow::Result<(Testbed, UpTimes)> {
    let started = Instant::now();
    check_hosts(options.hosts).map_err(anyhow::Error::msg)?;
    need_root()?;
    let dir = &options.dir;
    fs::create_dir_all(dir).with_context(|| format!("making {}", dir.display()))?;
    if let Some(state) = State::load(dir)? {
        anyhow::bail!(
            "a testbed (tag {}) is already in {}: `cuberoute testbed down --dir {}` first",
            state.tag,
            dir.display(),
            dir.display()
        );
    }
    crate::launch::docker::available()
        .map_err(|e| anyhow::anyhow!("the machine's Docker engine is not available: {e}"))?;
    anyhow::ensure!(
        crate::launch::docker::image_exists(&options.image),
        "there is no image {} on this machine: build it with `cuberoute cluster image`",
        options.image
    );
    let storage_driver = engine::machine_storage_driver()?;
    let claimed = netns::claim_block(dir, PREFIX)?;
    let mut state = State {
        tag: claimed.tag.clone(),
        block: claimed.block,
        hosts: options.hosts,
        claim: claimed.claim.clone(),
        image: options.image.clone(),
        storage_driver,
        containerd: Path::new(SYSTEM_CONTAINERD)
            .exists()
            .then(|| SYSTEM_CONTAINERD.to_string()),
        boot: boot_id(),
        engines: (1..=options.hosts)
            .map(|i| EngineRecord {
                name: Plan::name(i),
                ..EngineRecord::default()
            })
            .collect(),
    };
    let mut times = UpTimes::default();
    let made = state
        .save(dir)
        .and_then(|()| make(dir, &mut state, claimed, interrupt, progress, &mut times));
    if let Err(e) = made {
        let why = if interrupt.caught() {
            "interrupted".to_string()
        } else {
            format!("{e:#}")
        };
        return match teardown::teardown(dir, &state) {
            Ok(removed) => Err(e.context(format!(
                "the testbed was not made; what was made of it was removed in {:.1} s",
                removed.elapsed.as_secs_f64()
            ))),
            Err(r) => Err(anyhow::anyhow!(
                "{why}; removing what was made failed too ({r:#}): \
                 `cuberoute testbed down --dir {}` tries again",
                dir.display()
            )),
        };
    }
    times.total = started.elapsed();
    Ok((Testbed::of(dir, &state), times))
}

/// The stages of `up`, each stopping at an interrupt.
fn make(
    dir: &Path,
    state: &mut State,
    claimed: netns::Claimed,
    interrupt: &Catch,
    progress: &mut dyn FnMut(String),
    times: &mut UpTimes,
) -> anyhow::Result<()> {
    let plan = state.plan();
    let stage = Instant::now();
    net::make(&plan, claimed)?;
    times.network = stage.elapsed();
    progress(format!(
        "network: {} hosts {} .. {} on bridge {} ({}/{PREFIX}), tag {} (made in {:.2} s)",
        plan.hosts,
        plan.address(1),
        plan.address(plan.hosts),
        plan.bridge(),
        plan.block,
        plan.tag,
        times.network.as_secs_f64()
    ));
    interrupted(interrupt)?;

    let stage = Instant::now();
    for i in 1..=plan.hosts {
        interrupted(interrupt)?;
        let (pid, started) = engine::start(dir, state, i)?;
        let record = &mut state.engines[i - 1];
        record.pid = Some(pid);
        record.started = Some(started);
        state.save(dir)?;
    }
    engine::wait_all_answering(dir, state, ENGINE_TIMEOUT, interrupt)?;
    times.engines = stage.elapsed();
    progress(format!(
        "engines: {} answering, storage driver {}, {} (in {:.1} s)",
        plan.hosts,
        state.storage_driver,
        match &state.containerd {
            Some(address) => format!("containerd {address}"),
            None => "each with a containerd of its own".into(),
        },
        times.engines.as_secs_f64()
    ));
    interrupted(interrupt)?;

    let stage = Instant::now();
    swarm::load_image(dir, state)?;
    times.image = stage.elapsed();
    progress(format!(
        "image: {} loaded into {} engines (in {:.1} s)",
        state.image,
        plan.hosts,
        times.image.as_secs_f64()
    ));
    interrupted(interrupt)?;

    let stage = Instant::now();
    let ids = swarm::form(state, interrupt)?;
    for (record, id) in state.engines.iter_mut().zip(ids) {
        record.node_id = Some(id);
    }
    state.save(dir)?;
    swarm::wait_ready(state, SWARM_TIMEOUT, interrupt)?;
    times.swarm = stage.elapsed();
    progress(format!(
        "swarm: {} nodes Ready, manager h1 at {}:{MANAGER_PORT}, nodes labelled {HOST_LABEL}=hI \
         (in {:.1} s)",
        plan.hosts,
        plan.address(1),
        times.swarm.as_secs_f64()
    ));
    Ok(())
}

fn interrupted(interrupt: &Catch) -> anyhow::Result<()> {
    anyhow::ensure!(!interrupt.caught(), "interrupted");
    Ok(())
}

/// Take the testbed in `dir` down ([`teardown`]): `None` if there is none.
pub fn down(dir: &Path) -> anyhow::Result<Option<Removed>> {
    let Some(state) = State::load(dir)? else {
        return Ok(None);
    };
    need_root()?;
    teardown::teardown(dir, &state).map(Some)
}

/// Cut host `name`'s link (its veth's end on the bridge goes down): the others and the machine
/// no longer reach it, nor it them; its engine runs on. Recorded in the state.
pub fn cut(dir: &Path, name: &str) -> anyhow::Result<Host> {
    set_link(dir, name, true)
}

/// Bring host `name`'s link up again.
pub fn restore(dir: &Path, name: &str) -> anyhow::Result<Host> {
    set_link(dir, name, false)
}

fn set_link(dir: &Path, name: &str, cut: bool) -> anyhow::Result<Host> {
    let mut state = State::load(dir)?.ok_or_else(|| NoTestbed(dir.display().to_string()))?;
    let i = host_index(name)
        .filter(|&i| i <= state.hosts)
        .ok_or_else(|| UnknownHost {
            name: name.to_string(),
            hosts: state.hosts,
        })?;
    need_root()?;
    net::set_link(&state.plan(), i, !cut)?;
    state.engines[i - 1].cut = cut;
    state.save(dir)?;
    Ok(Testbed::of(dir, &state).hosts[i - 1].clone())
}

/// A host name that is not one of the testbed's.
#[derive(Debug, thiserror::Error)]
#[error("{name:?} is not a host of this testbed: its hosts are h1 .. h{hosts}")]
pub struct UnknownHost {
    pub name: String,
    pub hosts: usize,
}

/// One host as `status` sees it.
#[derive(Clone, Debug, Serialize)]
pub struct HostStatus {
    #[serde(flatten)]
    pub host: Host,
    pub docker_host: String,
    /// The engine's pid, if one was recorded.
    pub pid: Option<u32>,
    /// Whether that process still runs.
    pub engine_running: bool,
    /// Whether the engine answers on its socket.
    pub answers: bool,
    /// The engine's own view: `active`, `inactive`, `pending`, `error`, `locked` (empty if it
    /// does not answer).
    pub swarm_state: String,
    /// `manager` or `worker` (empty outside a swarm).
    pub role: String,
    /// The node as the manager sees it: `ready`, `down`, `unknown`, `disconnected` (empty if the
    /// manager does not answer or does not know it).
    pub node_status: String,
    /// Containers running, and in all.
    pub containers_running: u64,
    pub containers: u64,
}

/// The testbed in `dir` and the status of each host.
pub fn status(dir: &Path) -> anyhow::Result<(Testbed, Vec<HostStatus>)> {
    let state = State::load(dir)?.ok_or_else(|| NoTestbed(dir.display().to_string()))?;
    let testbed = Testbed::of(dir, &state);
    let seen = swarm::manager_view(&testbed);
    let statuses = std::thread::scope(|s| {
        let handles: Vec<_> = testbed
            .hosts
            .iter()
            .enumerate()
            .map(|(k, host)| {
                let (state, seen) = (&state, &seen);
                s.spawn(move || {
                    let info = engine::info(&host.socket);
                    let node_id = info
                        .as_ref()
                        .map(|i| i.node_id.clone())
                        .filter(|id| !id.is_empty())
                        .or_else(|| state.engines[k].node_id.clone());
                    let node_status = node_id
                        .and_then(|id| seen.iter().find(|n| n.id == id))
                        .map(|n| n.status.to_lowercase())
                        .unwrap_or_default();
                    HostStatus {
                        host: host.clone(),
                        docker_host: host.docker_host(),
                        pid: state.engines[k].pid,
                        engine_running: state.engine_running(k + 1),
                        answers: info.is_some(),
                        swarm_state: info
                            .as_ref()
                            .map(|i| i.swarm_state.clone())
                            .unwrap_or_default(),
                        role: info.as_ref().map(|i| i.role()).unwrap_or_default(),
                        node_status,
                        containers_running: info.as_ref().map_or(0, |i| i.containers_running),
                        containers: info.as_ref().map_or(0, |i| i.containers),
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a status thread"))
            .collect()
    });
    Ok((testbed, statuses))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> Plan {
        Plan {
            tag: "0a1f".into(),
            block: Ipv4Addr::new(198, 18, 64, 0),
            hosts: 9,
        }
    }

    #[test]
    fn the_address_plan_keeps_every_network_apart() {
        let p = plan();
        assert_eq!(p.bridge_address(), Ipv4Addr::new(198, 18, 64, 1));
        assert_eq!(p.address(1), Ipv4Addr::new(198, 18, 64, 2));
        assert_eq!(p.address(9), Ipv4Addr::new(198, 18, 64, 10));
        assert_eq!(p.bip(1), "198.18.65.1/24");
        assert_eq!(p.bip(9), "198.18.73.1/24");
        assert_eq!(p.pool(1), "198.18.80.0/22");
        assert_eq!(p.pool(9), "198.18.112.0/22");
        assert_eq!(p.swarm_pool(), "198.18.120.0/21");
        // Every network inside the block, none overlapping another.
        let mut spans: Vec<(u32, u32, String)> =
            vec![(u32::from(p.block), u32::from(p.block) + 255, "link".into())];
        let span = |text: &str| {
            let (a, len) = text.split_once('/').unwrap();
            let len: u32 = len.parse().unwrap();
            let start = u32::from(a.parse::<Ipv4Addr>().unwrap()) & (u32::MAX << (32 - len));
            (start, start + (1 << (32 - len)) - 1, text.to_string())
        };
        for i in 1..=9 {
            spans.push(span(&p.bip(i)));
            spans.push(span(&p.pool(i)));
        }
        spans.push(span(&p.swarm_pool()));
        spans.sort();
        let block_end = u32::from(p.block) + (1 << (32 - PREFIX)) - 1;
        for w in spans.windows(2) {
            assert!(w[0].1 < w[1].0, "{} overlaps {}", w[0].2, w[1].2);
        }
        assert!(spans.last().unwrap().1 <= block_end);
    }

    #[test]
    fn names_fit_and_are_owned() {
        let p = plan();
        assert_eq!(p.namespace(3), "crh-0a1f-h3");
        assert_eq!(p.bridge(), "crtb-0a1f");
        assert_eq!(p.veth(9), "crtv-0a1f-h9");
        assert_eq!(p.comment(), "cuberoute-tb-0a1f");
        assert_eq!(p.containerd_namespace(2), "cr-0a1f-h2");
        assert_eq!(p.containerd_plugins_namespace(2), "cr-0a1f-h2-plugins");
        assert_eq!(
            p.socket(2),
            Path::new("/run/cuberoute-testbed/0a1f/h2/docker.sock")
        );
        assert_eq!(
            p.data_root(2),
            Path::new("/var/lib/cuberoute-testbed/0a1f/h2")
        );
        for name in [p.bridge(), p.veth(9), p.namespace(9)] {
            assert!(name.len() <= 15, "{name}");
            assert!(p.owns(&name), "{name}");
        }
        for other in [
            "crtb-0a1f0",
            "crtv-0a1f-h",
            "crtv-0a1f-h10",
            "crh-0a1e-h1",
            "crb-0a1f",
            "cr-0a1f-1",
            "eth0",
        ] {
            assert!(!p.owns(other), "{other}");
        }
    }

    #[test]
    fn host_names_are_h1_to_h9() {
        assert_eq!(host_index("h1"), Some(1));
        assert_eq!(host_index("h9"), Some(9));
        for bad in ["h0", "h10", "h01", "H1", "1", "h", "h-1", "h+1", ""] {
            assert_eq!(host_index(bad), None, "{bad}");
        }
        assert!(check_hosts(2).is_ok() && check_hosts(9).is_ok());
        for bad in [0, 1, 10] {
            assert!(check_hosts(bad).unwrap_err().contains("2 to 9"));
        }
    }

    #[test]
    fn the_state_file_round_trips() {
        let tmp = tempfile::tempdir().unwrap();
        let mut state = State {
            tag: "0a1f".into(),
            block: Ipv4Addr::new(198, 18, 64, 0),
            hosts: 2,
            claim: "/tmp/tb".into(),
            image: "cuberoute:local".into(),
            storage_driver: "fuse-overlayfs".into(),
            containerd: None,
            boot: Some("b".into()),
            engines: vec![
                EngineRecord {
                    name: "h1".into(),
                    pid: Some(12),
                    started: Some(34),
                    node_id: Some("abc".into()),
                    cut: false,
                },
                EngineRecord {
                    name: "h2".into(),
                    cut: true,
                    ..EngineRecord::default()
                },
            ],
        };
        assert_eq!(State::load(tmp.path()).unwrap(), None);
        state.save(tmp.path()).unwrap();
        assert_eq!(State::load(tmp.path()).unwrap().unwrap(), state);
        let testbed = load(tmp.path()).unwrap();
        assert_eq!(testbed.manager_endpoint(), "198.18.64.2:2377");
        assert_eq!(
            testbed.host("h2").unwrap().docker_host(),
            "unix:///run/cuberoute-testbed/0a1f/h2/docker.sock"
        );
        assert!(testbed.host("h2").unwrap().cut);
        assert_eq!(testbed.host("h3"), None);
        // A state whose hosts do not match its count is refused, not half read.
        state.hosts = 3;
        state.save(tmp.path()).unwrap();
        assert!(State::load(tmp.path()).is_err());
        let none = load(&tmp.path().join("nothing")).unwrap_err();
        assert!(none.downcast_ref::<NoTestbed>().is_some(), "{none}");
    }
}
