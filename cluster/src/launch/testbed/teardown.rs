//! Taking a testbed down, whatever was made of it, by its tag:
//!
//! 1. every engine that answers is emptied: its services (on the manager), then at once on
//!    every engine `swarm leave --force`, every container removed (`rm -f -v`), its volumes and
//!    networks;
//! 2. every engine is stopped (SIGTERM, SIGKILL after 20 s), by its recorded pid and start time,
//!    or by its pidfile if `up` was killed before it recorded it;
//! 3. what is left is killed: any process in a host's namespace (containerd, shims,
//!    fuse-overlayfs, docker-proxy) or naming the testbed's roots on its command line, and any
//!    process in a host's container cgroups (containers whose engine died), then those cgroups
//!    are removed;
//! 4. with a system containerd, its namespaces of the engines are emptied (`ctr` tasks,
//!    containers, snapshots, images, leases, content) and removed;
//! 5. everything still mounted under the roots is unmounted (lazily, deepest first) and the
//!    data and exec roots are deleted;
//! 6. the network: rules, namespaces, veth pairs, bridge ([`net::remove`]); the claim;
//! 7. what is left is looked for; only if nothing is, the state file goes.

use super::engine::{self, Stopped, docker};
use super::{DATA_ROOT, Plan, RUN_ROOT, State, net};
use crate::launch::netns;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// What `down` removed.
#[derive(Clone, Debug, Default)]
pub struct Removed {
    pub tag: String,
    pub services: usize,
    pub containers: usize,
    /// Engines that ended on SIGTERM, and those killed after the grace time.
    pub engines_stopped: usize,
    pub engines_killed: usize,
    /// Processes left in the hosts' namespaces or naming the roots, killed.
    pub strays_killed: usize,
    /// Container processes left in the hosts' cgroups, killed; the cgroups removed.
    pub container_processes_killed: usize,
    pub cgroups: usize,
    pub containerd_namespaces: usize,
    pub mounts: usize,
    /// Roots deleted (each engine's data root and exec root).
    pub roots: usize,
    /// The network's namespaces, links and rules.
    pub network: Vec<String>,
    pub elapsed: Duration,
}

impl Removed {
    /// One line per kind of thing removed.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = vec![format!(
            "engines: {} stopped ({} of them killed after 20 s)",
            self.engines_stopped + self.engines_killed,
            self.engines_killed
        )];
        lines.push(format!(
            "swarm: {} services and {} containers removed, every engine left the swarm",
            self.services, self.containers
        ));
        if self.strays_killed + self.container_processes_killed > 0 {
            lines.push(format!(
                "left behind and killed: {} processes of the engines, {} of containers",
                self.strays_killed, self.container_processes_killed
            ));
        }
        lines.push(format!(
            "{} mounts unmounted, {} roots deleted, {} cgroups and {} containerd namespaces removed",
            self.mounts, self.roots, self.cgroups, self.containerd_namespaces
        ));
        let rules = self
            .network
            .iter()
            .filter(|n| n.contains("iptables"))
            .count();
        let links = self.network.len() - rules;
        lines.push(format!(
            "network: {links} namespaces and links (crh-{t}-*, crtv-{t}-*, crtb-{t}) and {rules} \
             iptables rules",
            t = self.tag
        ));
        lines
    }
}

/// Take down everything of the testbed `state` records in `dir` (see the module doc).
pub(super) fn teardown(dir: &Path, state: &State) -> anyhow::Result<Removed> {
    let started = Instant::now();
    let plan = state.plan();
    if let (Some(owner), _) = netns::claimed_by_other(&plan.tag, &state.claim) {
        anyhow::bail!(
            "tag {} is claimed by another directory ({owner}); nothing removed",
            plan.tag
        );
    }
    let mut removed = Removed {
        tag: plan.tag.clone(),
        ..Removed::default()
    };
    let mut errors: Vec<String> = Vec::new();

    empty_engines(&plan, state, &mut removed);
    stop_engines(&plan, state, &mut removed);
    removed.strays_killed = kill_strays(&plan);
    let (killed, cgroups) = remove_cgroups(&plan);
    removed.container_processes_killed = killed;
    removed.cgroups = cgroups;
    if let Some(address) = &state.containerd {
        match remove_containerd_namespaces(&plan, address) {
            Ok(n) => removed.containerd_namespaces = n,
            Err(e) => errors.push(format!("{e:#}")),
        }
    }
    removed.mounts = unmount_under(&roots(&plan));
    match delete_roots(&plan) {
        Ok(n) => removed.roots = n,
        Err(e) => errors.push(format!("{e:#}")),
    }
    match net::remove(&plan) {
        Ok(network) => removed.network = network,
        Err(e) => errors.push(format!("{e:#}")),
    }
    let _ = fs::remove_file(dir.join("image.tar"));

    let left = leftovers(&plan, state);
    anyhow::ensure!(
        errors.is_empty() && left.is_empty(),
        "the testbed {} is not all gone ({}); {} is kept: `cuberoute testbed down --dir {}` \
         tries again",
        plan.tag,
        errors
            .iter()
            .cloned()
            .chain(left.iter().map(|l| format!("left: {l}")))
            .collect::<Vec<_>>()
            .join("; "),
        super::STATE_FILE,
        dir.display()
    );
    if let (None, claim) = netns::claimed_by_other(&plan.tag, &state.claim) {
        let _ = fs::remove_file(claim);
    }
    let _ = fs::remove_file(dir.join(super::STATE_FILE));
    removed.elapsed = started.elapsed();
    Ok(removed)
}

/// The data and exec roots of every engine.
fn roots(plan: &Plan) -> Vec<PathBuf> {
    vec![plan.data_roots(), plan.run_roots()]
}

/// The ids a docker listing command prints, one per line (none if it fails).
fn ids(socket: &Path, args: &[&str]) -> Vec<String> {
    engine::run(docker(socket).args(args), Duration::from_secs(30))
        .map(|out| out.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

/// Empty every engine that answers: services, swarm, containers, volumes, networks.
fn empty_engines(plan: &Plan, state: &State, removed: &mut Removed) {
    let answering: Vec<usize> = (1..=plan.hosts)
        .filter(|&i| {
            engine::engine_process(plan, &state.engines[i - 1], i)
                .is_some_and(|(pid, started)| engine::process_runs(pid, started))
                && engine::info(&plan.socket(i)).is_some()
        })
        .collect();
    if answering.contains(&1) {
        let services = ids(&plan.socket(1), &["service", "ls", "-q"]);
        if !services.is_empty() {
            let _ = engine::run(
                docker(&plan.socket(1))
                    .args(["service", "rm"])
                    .args(&services),
                Duration::from_secs(60),
            );
        }
        removed.services = services.len();
    }
    removed.containers = std::thread::scope(|s| {
        let emptied: Vec<_> = answering
            .iter()
            .map(|&i| {
                s.spawn(move || {
                    let socket = plan.socket(i);
                    let limit = Duration::from_secs(60);
                    // Leave first: no task is scheduled here again once the node has left.
                    let _ = engine::run(docker(&socket).args(["swarm", "leave", "--force"]), limit);
                    let containers = ids(&socket, &["ps", "-aq"]);
                    if !containers.is_empty() {
                        let _ = engine::run(
                            docker(&socket).args(["rm", "-f", "-v"]).args(&containers),
                            limit,
                        );
                    }
                    let volumes = ids(&socket, &["volume", "ls", "-q"]);
                    if !volumes.is_empty() {
                        let _ = engine::run(
                            docker(&socket).args(["volume", "rm", "-f"]).args(&volumes),
                            limit,
                        );
                    }
                    let _ = engine::run(docker(&socket).args(["network", "prune", "-f"]), limit);
                    containers.len()
                })
            })
            .collect();
        emptied.into_iter().map(|h| h.join().unwrap_or(0)).sum()
    });
}

/// Stop every engine at once (SIGTERM, SIGKILL after 20 s).
fn stop_engines(plan: &Plan, state: &State, removed: &mut Removed) {
    let outcomes: Vec<Stopped> = std::thread::scope(|s| {
        let stops: Vec<_> = (1..=plan.hosts)
            .filter_map(|i| engine::engine_process(plan, &state.engines[i - 1], i))
            .map(|(pid, started)| {
                s.spawn(move || engine::stop(pid, started, Duration::from_secs(20)))
            })
            .collect();
        stops
            .into_iter()
            .map(|h| h.join().unwrap_or(Stopped::Gone))
            .collect()
    });
    removed.engines_stopped = outcomes
        .iter()
        .filter(|o| **o == Stopped::Terminated)
        .count();
    removed.engines_killed = outcomes.iter().filter(|o| **o == Stopped::Killed).count();
}

/// The processes of the engines' programs (dockerd, containerd and its shims, fuse-overlayfs,
/// docker-proxy, runc) whose command line names one of the testbed's roots.
fn naming_roots(plan: &Plan) -> Vec<i32> {
    let marks: Vec<String> = roots(plan)
        .iter()
        .map(|r| format!("{}/", r.display()))
        .collect();
    let own = std::process::id() as i32;
    netns::names("/proc")
        .iter()
        .filter_map(|p| p.parse::<i32>().ok())
        .filter(|&pid| pid != own)
        .filter(|pid| {
            let cmdline = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ") + " ";
            let zombie = fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| {
                    s.rsplit_once(')')
                        .map(|(_, r)| r.trim_start().starts_with('Z'))
                })
                .unwrap_or(true);
            // Only the engines' programs: never a shell that merely names a root.
            let comm = fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            let engines = ["docker", "containerd", "fuse-overlayfs", "runc"]
                .iter()
                .any(|p| comm.starts_with(p));
            !zombie
                && engines
                && marks.iter().any(|m| {
                    cmdline.contains(m.as_str())
                        || cmdline.contains(&format!("{} ", &m[..m.len() - 1]))
                })
        })
        .collect()
}

/// The namespaces of the testbed's hosts.
fn namespaces(plan: &Plan) -> Vec<String> {
    (1..=plan.hosts).map(|i| plan.namespace(i)).collect()
}

/// The socket a containerd shim (runc v2) made for itself, from its command line
/// (`-namespace NS -id ID -address CONTAINERD`): /run/containerd/s/ and the SHA-256 of
/// CONTAINERD/NS/ID, as containerd 1.5+ names it. A shim that is killed leaves it behind.
fn shim_socket(cmdline: &[&str]) -> Option<PathBuf> {
    let value = |flag: &str| -> Option<&str> {
        let at = cmdline.iter().position(|a| *a == flag)?;
        cmdline.get(at + 1).copied()
    };
    let key = format!(
        "{}/{}/{}",
        value("-address")?.trim_start_matches("unix://"),
        value("-namespace")?,
        value("-id")?
    );
    let digest = ring::digest::digest(&ring::digest::SHA256, key.as_bytes());
    let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    Some(Path::new("/run/containerd/s").join(hex))
}

/// The sockets of the shims among `pids`.
fn shim_sockets(pids: &[i32]) -> Vec<PathBuf> {
    pids.iter()
        .filter(|pid| {
            fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|c| c.starts_with("containerd-shim"))
        })
        .filter_map(|pid| {
            let cmdline = fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let text = String::from_utf8_lossy(&cmdline).into_owned();
            shim_socket(&text.split('\0').collect::<Vec<_>>())
        })
        .collect()
}

/// SIGKILL what is left of the engines: processes in a host's namespace or naming the roots
/// (and remove the sockets of the shims among them).
fn kill_strays(plan: &Plan) -> usize {
    let mut strays = netns::pids_in_namespaces(&namespaces(plan));
    strays.extend(naming_roots(plan));
    let sockets = shim_sockets(&strays);
    let mut killed = netns::kill_in_namespaces(&namespaces(plan), Duration::from_secs(5));
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut seen = std::collections::BTreeSet::new();
    loop {
        let pids = naming_roots(plan);
        if pids.is_empty() || Instant::now() > deadline {
            break;
        }
        for pid in pids {
            if kill(Pid::from_raw(pid), Signal::SIGKILL).is_ok() {
                seen.insert(pid);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    killed += seen.len();
    for socket in sockets {
        let _ = fs::remove_file(socket);
    }
    killed
}

/// Every cgroup directory of the testbed's containers: in each hierarchy (cgroup v1's
/// controllers, v2's root), the hosts' cgroup parents and everything under them, deepest first.
fn cgroup_dirs(plan: &Plan) -> Vec<PathBuf> {
    let root = Path::new("/sys/fs/cgroup");
    let mut hierarchies = vec![root.to_path_buf()];
    hierarchies.extend(netns::names("/sys/fs/cgroup").iter().map(|h| root.join(h)));
    let mut dirs = Vec::new();
    for hierarchy in hierarchies {
        for i in 1..=plan.hosts {
            let parent = hierarchy.join(plan.cgroup_parent(i));
            if parent.is_dir() {
                walk(&parent, &mut dirs);
            }
        }
    }
    dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
    dirs
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    out.push(dir.to_path_buf());
    if let Ok(entries) = fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                walk(&entry.path(), out);
            }
        }
    }
}

/// Kill every process in the testbed's container cgroups, then remove those cgroups. How many
/// processes were signalled, and how many cgroups removed.
fn remove_cgroups(plan: &Plan) -> (usize, usize) {
    let pids = || -> Vec<i32> {
        let mut pids: Vec<i32> = cgroup_dirs(plan)
            .iter()
            .flat_map(|d| {
                fs::read_to_string(d.join("cgroup.procs"))
                    .unwrap_or_default()
                    .split_whitespace()
                    .filter_map(|p| p.parse().ok())
                    .collect::<Vec<i32>>()
            })
            .collect();
        pids.sort_unstable();
        pids.dedup();
        pids
    };
    let mut killed = std::collections::BTreeSet::new();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left = pids();
        if left.is_empty() || Instant::now() > deadline {
            break;
        }
        for pid in left {
            if kill(Pid::from_raw(pid), Signal::SIGKILL).is_ok() {
                killed.insert(pid);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut cgroups = 0;
    // A cgroup whose last task has just died may be busy for a moment.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        for d in cgroup_dirs(plan) {
            if fs::remove_dir(&d).is_ok() {
                cgroups += 1;
            }
        }
        if cgroup_dirs(plan).is_empty() || Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    (killed.len(), cgroups)
}

/// `ctr -a ADDRESS -n NAMESPACE ARGS`; its stdout, or an error.
fn ctr(address: &str, namespace: &str, args: &[&str]) -> anyhow::Result<String> {
    engine::run(
        Command::new("ctr")
            .args(["-a", address, "-n", namespace])
            .args(args),
        Duration::from_secs(60),
    )
}

/// Empty and remove the namespaces of the engines in the system containerd at `address`; how
/// many were removed.
fn remove_containerd_namespaces(plan: &Plan, address: &str) -> anyhow::Result<usize> {
    if !Path::new(address).exists() {
        return Ok(0);
    }
    let listed = ctr(address, "default", &["namespaces", "ls", "-q"])?;
    let ours: Vec<String> = (1..=plan.hosts)
        .flat_map(|i| {
            [
                plan.containerd_namespace(i),
                plan.containerd_plugins_namespace(i),
            ]
        })
        .filter(|ns| listed.split_whitespace().any(|l| l == ns))
        .collect();
    let list = |ns: &str, what: &[&str]| -> Vec<String> {
        ctr(address, ns, what)
            .map(|o| o.split_whitespace().map(str::to_string).collect())
            .unwrap_or_default()
    };
    for ns in &ours {
        for task in list(ns, &["tasks", "ls", "-q"]) {
            let _ = ctr(address, ns, &["tasks", "kill", "-s", "SIGKILL", &task]);
            let _ = ctr(address, ns, &["tasks", "rm", "-f", &task]);
        }
        for container in list(ns, &["containers", "ls", "-q"]) {
            let _ = ctr(address, ns, &["containers", "rm", &container]);
        }
        // Snapshots: children before parents, so again while any goes.
        loop {
            let keys: Vec<String> = ctr(address, ns, &["snapshots", "ls"])
                .unwrap_or_default()
                .lines()
                .skip(1)
                .filter_map(|l| l.split_whitespace().next().map(str::to_string))
                .collect();
            let gone = keys
                .iter()
                .filter(|k| ctr(address, ns, &["snapshots", "rm", k]).is_ok())
                .count();
            if keys.is_empty() || gone == 0 {
                break;
            }
        }
        for (kind, rm) in [("images", "rm"), ("leases", "rm"), ("content", "rm")] {
            let items = list(ns, &[kind, "ls", "-q"]);
            if !items.is_empty() {
                let mut args = vec![kind, rm];
                args.extend(items.iter().map(String::as_str));
                let _ = ctr(address, ns, &args);
            }
        }
    }
    let mut gone = 0;
    let mut left = Vec::new();
    for ns in &ours {
        match ctr(address, "default", &["namespaces", "rm", ns]) {
            Ok(_) => gone += 1,
            Err(e) => left.push(format!("{ns} ({e})")),
        }
    }
    anyhow::ensure!(
        left.is_empty(),
        "containerd namespaces left in {address}: {}",
        left.join(", ")
    );
    Ok(gone)
}

/// The mount points of this mount namespace (/proc/self/mountinfo's fifth field, unescaped).
fn mount_points(mountinfo: &str) -> Vec<PathBuf> {
    mountinfo
        .lines()
        .filter_map(|line| line.split(' ').nth(4))
        .map(|escaped| PathBuf::from(unescape(escaped)))
        .collect()
}

/// Undo mountinfo's octal escapes (`\040` for a space, ...).
fn unescape(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| bytes[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match octal {
            Some(d) => {
                out.push(d.iter().fold(0u8, |n, c| n.wrapping_mul(8) + (c - b'0')));
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Mount points at or under one of `roots`, deepest first.
fn mounted_under(mountinfo: &str, roots: &[PathBuf]) -> Vec<PathBuf> {
    let mut points: Vec<PathBuf> = mount_points(mountinfo)
        .into_iter()
        .filter(|p| roots.iter().any(|r| p.starts_with(r)))
        .collect();
    points.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    points.dedup();
    points
}

fn mounts_under(roots: &[PathBuf]) -> Vec<PathBuf> {
    mounted_under(
        &fs::read_to_string("/proc/self/mountinfo").unwrap_or_default(),
        roots,
    )
}

/// Unmount (lazily) everything mounted under `roots`, deepest first; again while any is left
/// (a mount may be stacked). How many unmounts succeeded.
fn unmount_under(roots: &[PathBuf]) -> usize {
    use std::os::unix::ffi::OsStrExt;
    let mut unmounted = 0;
    for _ in 0..5 {
        let points = mounts_under(roots);
        if points.is_empty() {
            break;
        }
        for point in points {
            let Ok(path) = std::ffi::CString::new(point.as_os_str().as_bytes()) else {
                continue;
            };
            // SAFETY: a valid C string; umount2 only reads it.
            if unsafe { nix::libc::umount2(path.as_ptr(), nix::libc::MNT_DETACH) } == 0 {
                unmounted += 1;
            }
        }
    }
    unmounted
}

/// Delete the engines' data and exec roots (never while anything is mounted under them), and
/// their parents once empty. How many engine roots were there.
fn delete_roots(plan: &Plan) -> anyhow::Result<usize> {
    let roots = roots(plan);
    let mounted = mounts_under(&roots);
    anyhow::ensure!(
        mounted.is_empty(),
        "still mounted, so not deleted: {}",
        mounted
            .iter()
            .take(5)
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let mut count = 0;
    for root in &roots {
        count += netns::names(&root.display().to_string()).len();
        match fs::remove_dir_all(root) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => anyhow::bail!("deleting {}: {e}", root.display()),
        }
    }
    for parent in [DATA_ROOT, RUN_ROOT] {
        let _ = fs::remove_dir(parent);
    }
    Ok(count)
}

/// What is left of the testbed on the machine.
fn leftovers(plan: &Plan, state: &State) -> Vec<String> {
    let mut left = Vec::new();
    for i in 1..=plan.hosts {
        if let Some((pid, started)) = engine::engine_process(plan, &state.engines[i - 1], i)
            && engine::process_runs(pid, started)
        {
            left.push(format!("the engine of h{i} (pid {pid})"));
        }
    }
    left.extend(
        naming_roots(plan)
            .iter()
            .map(|pid| format!("process {pid}")),
    );
    left.extend(
        netns::pids_in_namespaces(&namespaces(plan))
            .iter()
            .map(|pid| format!("process {pid} in a host's namespace")),
    );
    left.extend(cgroup_dirs(plan).iter().map(|d| d.display().to_string()));
    left.extend(
        mounts_under(&roots(plan))
            .iter()
            .map(|p| format!("mount {}", p.display())),
    );
    left.extend(
        roots(plan)
            .iter()
            .filter(|r| r.exists())
            .map(|r| r.display().to_string()),
    );
    left
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mounts_under_the_roots_are_found_deepest_first() {
        let mountinfo = "\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
40 22 0:40 / /var/lib/cuberoute-testbed/0a1f/h1 rw shared:2 - ext4 /dev/vda rw
41 40 0:41 / /var/lib/cuberoute-testbed/0a1f/h1/fuse-overlayfs/abc/merged rw - fuse.fuse-overlayfs fuse-overlayfs rw
42 22 0:4 net:[4026532] /run/cuberoute-testbed/0a1f/h1/netns/1-x rw - nsfs nsfs rw
43 22 0:42 / /var/lib/cuberoute-testbed/0a1f0/h1 rw - ext4 /dev/vda rw
44 22 0:43 / /run/cuberoute-testbed/0a1f/h2/with\\040space rw - tmpfs tmpfs rw
45 22 0:44 / /var/lib/docker rw - ext4 /dev/vda rw
";
        let plan = Plan {
            tag: "0a1f".into(),
            block: std::net::Ipv4Addr::new(198, 18, 64, 0),
            hosts: 2,
        };
        let found = mounted_under(mountinfo, &roots(&plan));
        assert_eq!(
            found,
            [
                "/var/lib/cuberoute-testbed/0a1f/h1/fuse-overlayfs/abc/merged",
                "/run/cuberoute-testbed/0a1f/h1/netns/1-x",
                "/var/lib/cuberoute-testbed/0a1f/h1",
                "/run/cuberoute-testbed/0a1f/h2/with space",
            ]
            .map(PathBuf::from)
        );
    }

    #[test]
    fn a_shims_socket_is_named_by_its_command_line() {
        // As containerd 1.6 named it for a shim of an engine of a testbed (seen on the machine).
        let cmdline = "/usr/bin/containerd-shim-runc-v2 -namespace cr-b5cb-h2 -id \
                       72c13534b81e8113fc10a4134673b951b0f8884781c15a09063bb5861fce0a31 -address \
                       /run/cuberoute-testbed/b5cb/h2/containerd/containerd.sock";
        let words: Vec<&str> = cmdline.split_whitespace().collect();
        assert_eq!(
            shim_socket(&words).unwrap(),
            Path::new(
                "/run/containerd/s/8ba9b193bcbe22916f287a8fae5fe01f4493cb96267932df178e38fb57222068"
            )
        );
        assert_eq!(shim_socket(&["containerd-shim-runc-v2", "-id", "x"]), None);
    }

    #[test]
    fn what_down_removed_is_said_in_a_few_lines() {
        let removed = Removed {
            tag: "0a1f".into(),
            engines_stopped: 3,
            network: vec![
                "iptables rule in FORWARD".into(),
                "crh-0a1f-h1".into(),
                "crtb-0a1f".into(),
            ],
            ..Removed::default()
        };
        let lines = removed.lines().join("\n");
        assert!(
            lines.contains("engines: 3 stopped (0 of them killed"),
            "{lines}"
        );
        assert!(lines.contains("2 namespaces and links"), "{lines}");
        assert!(lines.contains("1 iptables rules"), "{lines}");
    }
}
