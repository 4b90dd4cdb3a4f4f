//! The engines: one dockerd per host, started in the host's namespace with a configuration of
//! its own; waiting until each answers; asking one things with a time limit; stopping one by its
//! recorded pid and start time.

use super::{EngineRecord, Plan, State};
use crate::launch::local::interrupt::Catch;
use crate::launch::netns;
use crate::launch::run_state;
use anyhow::Context;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A `docker` command talking to the engine at `socket`.
pub(crate) fn docker(socket: &Path) -> Command {
    let mut command = Command::new("docker");
    command
        .arg("-H")
        .arg(format!("unix://{}", socket.display()));
    command
}

/// Run `command` with its output captured, killing it after `timeout`; its output, whatever
/// its status.
pub(super) fn output(command: &mut Command, timeout: Duration) -> anyhow::Result<Output> {
    let shown = format!("{command:?}");
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("running {shown}"))?;
    let pid = Pid::from_raw(child.id() as i32);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(timeout) {
        Ok(out) => Ok(out?),
        Err(_) => {
            // Not reaped yet (the waiting thread reaps it once it dies): still our child's pid.
            let _ = kill(pid, Signal::SIGKILL);
            anyhow::bail!("{shown} did not end within {} s", timeout.as_secs())
        }
    }
}

/// Run `command` (at most `timeout`); its stdout, or an error with its stderr.
pub(super) fn run(command: &mut Command, timeout: Duration) -> anyhow::Result<String> {
    let shown = format!("{command:?}");
    let out = output(command, timeout)?;
    anyhow::ensure!(
        out.status.success(),
        "{shown} failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The storage driver of the machine's engine (the engines keep it: fuse-overlayfs where the
/// machine's file system takes no overlay).
pub(super) fn machine_storage_driver() -> anyhow::Result<String> {
    let driver = run(
        Command::new("docker").args(["info", "--format", "{{.Driver}}"]),
        Duration::from_secs(30),
    )?;
    let driver = driver.trim().to_string();
    anyhow::ensure!(
        !driver.is_empty(),
        "the machine's engine names no storage driver"
    );
    Ok(driver)
}

/// Host `i`'s directory in the testbed directory: its daemon.json and dockerd.log.
pub(super) fn host_dir(dir: &Path, i: usize) -> PathBuf {
    dir.join(Plan::name(i))
}

/// Host `i`'s daemon.json. Not the machine's /etc/docker/daemon.json: its data-root would
/// conflict with the flag, and its hosts, pools and bridge are the machine's.
pub(super) fn config(plan: &Plan, i: usize, storage_driver: &str) -> serde_json::Value {
    serde_json::json!({
        "storage-driver": storage_driver,
        "bip": plan.bip(i),
        "default-address-pools": [{"base": plan.pool(i), "size": 24}],
        "cgroup-parent": plan.cgroup_parent(i),
        "deprecated-key-path": plan.data_root(i).join("key.json"),
        "shutdown-timeout": 5,
    })
}

/// Spawn host `i`'s engine in its namespace; its pid and start time.
pub(super) fn start(dir: &Path, state: &State, i: usize) -> anyhow::Result<(u32, u64)> {
    use std::os::unix::process::CommandExt;
    let plan = state.plan();
    let host = host_dir(dir, i);
    fs::create_dir_all(&host).with_context(|| format!("making {}", host.display()))?;
    for root in [plan.data_root(i), plan.exec_root(i)] {
        fs::create_dir_all(&root).with_context(|| format!("making {}", root.display()))?;
    }
    let config_path = host.join("daemon.json");
    fs::write(
        &config_path,
        serde_json::to_string_pretty(&config(&plan, i, &state.storage_driver))?,
    )
    .with_context(|| format!("writing {}", config_path.display()))?;
    let config_path = fs::canonicalize(&config_path)?;
    let log_path = host.join("dockerd.log");
    let log =
        fs::File::create(&log_path).with_context(|| format!("writing {}", log_path.display()))?;
    let mut command = netns::in_namespace(&plan.namespace(i), "dockerd");
    command
        .arg("--config-file")
        .arg(&config_path)
        .arg("--data-root")
        .arg(plan.data_root(i))
        .arg("--exec-root")
        .arg(plan.exec_root(i))
        .arg("--pidfile")
        .arg(plan.pidfile(i))
        .arg("-H")
        .arg(format!("unix://{}", plan.socket(i).display()))
        .arg("--containerd-namespace")
        .arg(plan.containerd_namespace(i))
        .arg("--containerd-plugins-namespace")
        .arg(plan.containerd_plugins_namespace(i))
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        // A group of its own: it outlives `up`, and a Ctrl-C at the terminal is not its.
        .process_group(0);
    let child = command
        .spawn()
        .context("starting dockerd (nsenter --net=... dockerd)")?;
    // nsenter enters the namespace and executes dockerd in the same process.
    let pid = child.id();
    let started = run_state::start_time(pid).context("dockerd ended at once")?;
    Ok((pid, started))
}

/// Whether process `pid`, started at `started` (clock ticks after boot), still runs and has
/// not exited.
pub(super) fn process_runs(pid: u32, started: u64) -> bool {
    let process = run_state::NodeProcess {
        id: cuberoute_protocol::NodeId(0),
        pid,
        started: Some(started),
        crashed: false,
    };
    // With a start time recorded, the path is not looked at.
    run_state::is_running(&process, Path::new("/"))
}

/// The last `lines` lines of host `i`'s dockerd.log.
pub(super) fn log_tail(dir: &Path, i: usize, lines: usize) -> String {
    let path = host_dir(dir, i).join("dockerd.log");
    let text = fs::read_to_string(&path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    let tail = all[all.len().saturating_sub(lines)..].join("\n");
    format!("the end of {}:\n{tail}", path.display())
}

/// Wait until every engine of `state` answers on its socket; fail at once if one dies (with
/// its log's end), at the timeout naming those that do not answer, or at an interrupt.
pub(super) fn wait_all_answering(
    dir: &Path,
    state: &State,
    timeout: Duration,
    interrupt: &Catch,
) -> anyhow::Result<()> {
    let plan = state.plan();
    let deadline = Instant::now() + timeout;
    let mut waiting: Vec<usize> = (1..=plan.hosts).collect();
    while !waiting.is_empty() {
        anyhow::ensure!(!interrupt.caught(), "interrupted");
        if let Some(&dead) = waiting.iter().find(|&&i| !state.engine_running(i)) {
            anyhow::bail!(
                "the engine of h{dead} ended while starting; {}",
                log_tail(dir, dead, 15)
            );
        }
        waiting.retain(|&i| info(&plan.socket(i)).is_none());
        if waiting.is_empty() {
            break;
        }
        if Instant::now() > deadline {
            let i = waiting[0];
            anyhow::bail!(
                "the engines of {} did not answer within {} s; {}",
                waiting
                    .iter()
                    .map(|&i| Plan::name(i))
                    .collect::<Vec<_>>()
                    .join(", "),
                timeout.as_secs(),
                log_tail(dir, i, 15)
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    Ok(())
}

/// What an engine says of itself.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Info {
    pub node_id: String,
    pub swarm_state: String,
    pub control_available: bool,
    pub containers_running: u64,
    pub containers: u64,
}

impl Info {
    const FORMAT: &str = "{{.Swarm.NodeID}}\t{{.Swarm.LocalNodeState}}\t\
                          {{.Swarm.ControlAvailable}}\t{{.ContainersRunning}}\t{{.Containers}}";

    fn parse(text: &str) -> Option<Info> {
        let mut fields = text.trim_end_matches('\n').split('\t');
        Some(Info {
            node_id: fields.next()?.to_string(),
            swarm_state: fields.next()?.to_string(),
            control_available: fields.next()? == "true",
            containers_running: fields.next()?.trim().parse().ok()?,
            containers: fields.next()?.trim().parse().ok()?,
        })
    }

    /// `manager` or `worker` within a swarm, else empty.
    pub fn role(&self) -> String {
        match (self.swarm_state.as_str(), self.control_available) {
            ("active", true) => "manager".into(),
            ("active", false) => "worker".into(),
            _ => String::new(),
        }
    }
}

/// What the engine at `socket` says of itself; `None` if it does not answer within 5 s.
pub(super) fn info(socket: &Path) -> Option<Info> {
    if !socket.exists() {
        return None;
    }
    let out = run(
        docker(socket).args(["info", "--format", Info::FORMAT]),
        Duration::from_secs(5),
    )
    .ok()?;
    Info::parse(&out)
}

/// How an engine was stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Stopped {
    /// It was not running.
    Gone,
    /// It ended on SIGTERM.
    Terminated,
    /// It ignored SIGTERM for the grace time, and was killed.
    Killed,
}

/// Stop the engine `pid` that started at `started`: SIGTERM, then SIGKILL after `grace`; wait
/// until it is gone. A pid that another process took over is never signalled.
pub(super) fn stop(pid: u32, started: u64, grace: Duration) -> Stopped {
    if !process_runs(pid, started) {
        return Stopped::Gone;
    }
    let target = Pid::from_raw(pid as i32);
    let _ = kill(target, Signal::SIGTERM);
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if !process_runs(pid, started) {
            return Stopped::Terminated;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    if process_runs(pid, started) {
        let _ = kill(target, Signal::SIGKILL);
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while process_runs(pid, started) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    Stopped::Killed
}

/// The engine of host `i`: the recorded one, or (if `up` was killed before it recorded it) the
/// one whose pidfile names a dockerd of this host's exec root. Its pid and start time.
pub(super) fn engine_process(plan: &Plan, record: &EngineRecord, i: usize) -> Option<(u32, u64)> {
    if let (Some(pid), Some(started)) = (record.pid, record.started) {
        return Some((pid, started));
    }
    let pid: u32 = fs::read_to_string(plan.pidfile(i))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let cmdline = fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let exec_root = plan.exec_root(i);
    let ours = cmdline
        .split(|b| *b == 0)
        .any(|arg| arg == exec_root.as_os_str().as_encoded_bytes());
    ours.then(|| run_state::start_time(pid).map(|s| (pid, s)))
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    #[test]
    fn an_engine_has_a_configuration_of_its_own() {
        let plan = Plan {
            tag: "0a1f".into(),
            block: Ipv4Addr::new(198, 18, 64, 0),
            hosts: 3,
        };
        let config = config(&plan, 2, "fuse-overlayfs");
        assert_eq!(config["storage-driver"], "fuse-overlayfs");
        assert_eq!(config["bip"], "198.18.66.1/24");
        assert_eq!(config["default-address-pools"][0]["base"], "198.18.84.0/22");
        assert_eq!(config["default-address-pools"][0]["size"], 24);
        assert_eq!(config["cgroup-parent"], "cuberoute-tb-0a1f-h2");
        assert_eq!(
            config["deprecated-key-path"],
            "/var/lib/cuberoute-testbed/0a1f/h2/key.json"
        );
        // Nothing the flags set: dockerd refuses a setting given both ways.
        for flag in ["data-root", "exec-root", "pidfile", "hosts"] {
            assert!(config.get(flag).is_none(), "{flag}");
        }
    }

    #[test]
    fn what_an_engine_says_of_itself() {
        let worker = Info::parse("abc\tactive\tfalse\t2\t3\n").unwrap();
        assert_eq!(worker.role(), "worker");
        assert_eq!((worker.containers_running, worker.containers), (2, 3));
        let manager = Info::parse("abc\tactive\ttrue\t0\t0\n").unwrap();
        assert_eq!(manager.role(), "manager");
        let alone = Info::parse("\tinactive\tfalse\t0\t1\n").unwrap();
        assert_eq!((alone.role(), alone.node_id.as_str()), (String::new(), ""));
        assert_eq!(Info::parse("garbage"), None);
    }

    #[test]
    fn a_command_that_does_not_end_is_killed() {
        let started = Instant::now();
        let refused = output(Command::new("sleep").arg("30"), Duration::from_millis(200));
        assert!(refused.is_err());
        assert!(started.elapsed() < Duration::from_secs(5));
        let said = run(Command::new("echo").arg("hi"), Duration::from_secs(5)).unwrap();
        assert_eq!(said, "hi\n");
    }
}
