//! Seeing a neighbour's process exit without probing it (issue 48): a neighbour on the same
//! machine names its process in its hello ([`ProcessMark`]), and the link holds a pidfd on it,
//! which the kernel makes readable when that process exits. An idle link then costs nothing to
//! watch, however many daemons share the machine, and a killed neighbour is marked down as soon
//! as the kernel has ended it.
//!
//! A mark is only a hint: it is followed only if it names this machine's boot, this process's
//! pid namespace and a process that started when the mark says (so a later process that reuses
//! the id is never watched in its place). A neighbour whose mark names another process can do no
//! more than take its own link down when that process exits, which it could do by closing it.
//! Containers (compose, Swarm, Kubernetes) have a pid namespace each, and so are not watched:
//! their links rely on probes (`crate::liveness`). Links that watch one process share one
//! pidfd: the nodes of a node host hold thousands of links to the nodes of another process,
//! and each held a descriptor of its own (Q_14 in two processes: 8,192 a process).

use cuberoute_protocol::wire::link::ProcessMark;
use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;
use tokio::io::unix::AsyncFd;

/// This process's mark, read from `/proc` once; `None` where `/proc` does not say, and in a
/// simulation (its hosts share one process).
pub fn own() -> Option<ProcessMark> {
    if turmoil::since_epoch().is_some() {
        return None;
    }
    static OWN: OnceLock<Option<ProcessMark>> = OnceLock::new();
    *OWN.get_or_init(|| {
        let pid = std::process::id();
        Some(ProcessMark {
            boot: boot_id()?,
            pid_namespace: pid_namespace("self")?,
            pid,
            started: started(pid)?,
        })
    })
}

/// Whether a peer's mark names a process this one can watch: the same boot of the same
/// kernel, the same pid namespace, and not this very process.
pub fn same_machine(own: &ProcessMark, peer: &ProcessMark) -> bool {
    own.boot == peer.boot && own.pid_namespace == peer.pid_namespace && own.pid != peer.pid
}

/// What watching a neighbour's process found at its start.
pub enum Watch {
    /// Not on this machine, or not to be found here: nothing to watch.
    Elsewhere,
    /// The process the mark names is gone already.
    Exited,
    /// Readable once the process exits (shared by every link that watches that process).
    Watching(Arc<ExitWatch>),
}

/// A pidfd on a neighbour's process.
pub struct ExitWatch {
    fd: AsyncFd<OwnedFd>,
    pid: u32,
}

/// A watched process: its pid and when it started.
type Watched = (u32, u64);

/// The processes this one watches, each its pidfd while a link holds it.
static WATCHED: Mutex<BTreeMap<Watched, Weak<ExitWatch>>> = Mutex::new(BTreeMap::new());

impl Watch {
    /// How long the watched process has waited for a CPU since it started (`None` unless it
    /// is watched): the run-queue delay of its main thread, which runs the daemon (a tokio
    /// runtime on the current thread), from `/proc/PID/schedstat`. Liveness does not count
    /// that wait as silence (`crate::liveness`): on a machine loaded past its cores, a
    /// neighbour waits its turn, it is not dead. The pidfd holds the process, so the id is
    /// its own until the exit, which ends the link.
    pub fn waited_for_cpu(&self) -> Option<Duration> {
        self.cpu().map(|cpu| cpu.waited)
    }

    /// How long the watched process has run on a CPU since it started, and waited for one
    /// (`None` unless it is watched), from one read of the same line: a neighbour that runs is
    /// neither dead nor hung, whatever its silence (`crate::link`, the silence watch).
    pub fn cpu(&self) -> Option<Cpu> {
        match self {
            Watch::Watching(w) => {
                let text = std::fs::read_to_string(format!("/proc/{}/schedstat", w.pid)).ok()?;
                Some(Cpu {
                    ran: parse_schedstat(&text, 0)?,
                    waited: parse_schedstat(&text, 1)?,
                })
            }
            _ => None,
        }
    }

    /// Whether a thread of the watched process is running, waiting for a CPU or for the disk
    /// now (`false` unless it is watched): alive, and waiting on nothing but its turn. Its main
    /// thread is read first; the others only if that one sleeps (a main thread waiting on a
    /// lock that its store's writer holds in the disk sleeps, and its process is not hung).
    pub fn is_runnable(&self) -> bool {
        match self {
            Watch::Watching(w) => runnable(w.pid).unwrap_or(false) || any_thread_runnable(w.pid),
            _ => false,
        }
    }
}

/// A watched process's time on a CPU, and waiting for one, since it started.
#[derive(Clone, Copy, Debug)]
pub struct Cpu {
    pub ran: Duration,
    pub waited: Duration,
}

/// One of `schedstat`'s three numbers: 0, nanoseconds spent running on a CPU; 1, waiting on a
/// run queue.
fn parse_schedstat(text: &str, field: usize) -> Option<Duration> {
    let ns = text.split_whitespace().nth(field)?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

impl ExitWatch {
    /// Whether the process has exited by now (its pidfd readable), without waiting.
    fn has_exited(&self) -> bool {
        let mut poll = libc::pollfd {
            fd: self.fd.get_ref().as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one pollfd, valid for the call, on a descriptor this watch owns; no wait.
        let ready = unsafe { libc::poll(&mut poll, 1, 0) };
        ready != 0
    }

    /// Returns once the process has exited.
    pub async fn exited(&self) {
        // A pidfd is readable from the process's exit on, and stays so; an error of the poll
        // itself is taken for the same (the fd is the process's).
        let _ = self.fd.readable().await;
    }
}

/// Start watching the process `peer` names, if it runs on this machine (see [`same_machine`]).
/// Needs a tokio runtime with I/O.
pub fn watch(peer: &ProcessMark) -> Watch {
    let Some(own) = own() else {
        return Watch::Elsewhere;
    };
    if !same_machine(&own, peer) {
        return Watch::Elsewhere;
    }
    let mut watched = WATCHED.lock().expect("watched lock");
    if let Some(held) = watched
        .get(&(peer.pid, peer.started))
        .and_then(Weak::upgrade)
    {
        return if held.has_exited() {
            Watch::Exited
        } else {
            Watch::Watching(held)
        };
    }
    let watch = open(peer);
    if let Watch::Watching(held) = &watch {
        watched.retain(|_, w| w.strong_count() > 0);
        watched.insert((peer.pid, peer.started), Arc::downgrade(held));
    }
    watch
}

/// A new pidfd on the process `peer` names, on this machine.
fn open(peer: &ProcessMark) -> Watch {
    let Ok(pid) = libc::pid_t::try_from(peer.pid) else {
        return Watch::Elsewhere;
    };
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return match std::io::Error::last_os_error().raw_os_error() {
            Some(libc::ESRCH) => Watch::Exited,
            // ENOSYS (a kernel before 5.3), EMFILE, EPERM: probes watch the link instead.
            _ => Watch::Elsewhere,
        };
    }
    // SAFETY: the descriptor was just returned to us and is owned by nothing else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd as RawFd) };
    // The pidfd holds the process that had the id when it was opened: if that one started at
    // another time, the one the mark names has exited and its id was taken again.
    match started(peer.pid) {
        Some(started) if started == peer.started => {}
        Some(_) => return Watch::Exited,
        // Gone since the pidfd was opened, or hidden from this process: the pidfd says which.
        None => {}
    }
    // SAFETY: an OwnedFd owned by the AsyncFd keeps its descriptor open, and the same, until
    // the AsyncFd is dropped.
    match unsafe { AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) } {
        Ok(fd) => Watch::Watching(Arc::new(ExitWatch { fd, pid: peer.pid })),
        Err(_) => Watch::Elsewhere,
    }
}

/// The kernel's boot id as 16 bytes (it reads as a UUID).
fn boot_id() -> Option<[u8; 16]> {
    let text = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    parse_boot_id(&text)
}

fn parse_boot_id(text: &str) -> Option<[u8; 16]> {
    let hex: Vec<u8> = text.trim().bytes().filter(|b| *b != b'-').collect();
    if hex.len() != 32 {
        return None;
    }
    let mut out = [0u8; 16];
    for (i, pair) in hex.chunks(2).enumerate() {
        out[i] = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
    }
    Some(out)
}

/// The inode of a process's pid namespace (`/proc/<which>/ns/pid` links to `pid:[N]`).
fn pid_namespace(which: &str) -> Option<u64> {
    let link = std::fs::read_link(format!("/proc/{which}/ns/pid")).ok()?;
    parse_namespace(link.to_str()?)
}

fn parse_namespace(link: &str) -> Option<u64> {
    link.strip_prefix("pid:[")?.strip_suffix(']')?.parse().ok()
}

/// When process `pid` started, in clock ticks after boot (field 22 of `/proc/<pid>/stat`).
fn started(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_started(&stat)
}

fn parse_started(stat: &str) -> Option<u64> {
    stat_field(stat, 22)?.parse().ok()
}

/// Field `n` (from 1) of `/proc/PID/stat`. The command name (field 2) is in parentheses and
/// may hold spaces and parentheses: the fields after it start after the last ')'.
fn stat_field(stat: &str, n: usize) -> Option<&str> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(n.checked_sub(3)?)
}

/// Whether the process's main thread is on a run queue, running or waiting for a CPU (state
/// `R` in `/proc/PID/stat`), or waiting for the disk (`D`). A wait for a CPU is added to
/// `schedstat` only when it ends: a process waiting seconds for its turn on a loaded machine
/// shows neither time run nor time waited until then, only this.
fn runnable(pid: u32) -> Option<bool> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    Some(is_runnable_state(&stat))
}

/// Whether a `stat` line's state is `R` or `D`.
fn is_runnable_state(stat: &str) -> bool {
    matches!(stat_field(stat, 3), Some("R" | "D"))
}

/// Whether any thread of process `pid` is running, waiting for a CPU or for the disk
/// (`/proc/PID/task/TID/stat`).
fn any_thread_runnable(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.flatten().any(|task| {
        std::fs::read_to_string(task.path().join("stat")).is_ok_and(|stat| is_runnable_state(&stat))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_text_is_read() {
        assert_eq!(
            parse_boot_id("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\n"),
            Some([
                0x0f, 0x1e, 0x2d, 0x3c, 0x4b, 0x5a, 0x69, 0x78, 0x87, 0x96, 0xa5, 0xb4, 0xc3, 0xd2,
                0xe1, 0xf0
            ])
        );
        assert_eq!(parse_boot_id("0f1e2d3c"), None);
        assert_eq!(parse_boot_id("zz1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"), None);
        assert_eq!(parse_namespace("pid:[4026531836]"), Some(4026531836));
        assert_eq!(parse_namespace("net:[4026531836]"), None);
        let stat = "42 (a (b) c) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 123456 \
                    1000 10 18446744073709551615";
        assert_eq!(parse_started(stat), Some(123456));
        assert_eq!(parse_started("42 (x) S 1"), None);
        assert_eq!(stat_field(stat, 3), Some("S"));
        assert_eq!(stat_field("42 (a) b) R 1", 3), Some("R"));
        assert_eq!(
            stat_field(stat, 2),
            None,
            "the name is not a field after it"
        );
        assert_eq!(
            parse_schedstat("104225 295813466 1\n", 1),
            Some(Duration::from_nanos(295813466))
        );
        assert_eq!(
            parse_schedstat("104225 295813466 1\n", 0),
            Some(Duration::from_nanos(104225))
        );
        assert_eq!(parse_schedstat("104225", 1), None);
    }

    #[test]
    fn only_a_process_of_this_machine_and_namespace_is_watched() {
        let own = ProcessMark {
            boot: [1; 16],
            pid_namespace: 10,
            pid: 100,
            started: 5,
        };
        assert!(same_machine(&own, &ProcessMark { pid: 101, ..own }));
        assert!(!same_machine(&own, &own), "not this very process");
        assert!(!same_machine(
            &own,
            &ProcessMark {
                boot: [2; 16],
                pid: 101,
                ..own
            }
        ));
        assert!(!same_machine(
            &own,
            &ProcessMark {
                pid_namespace: 11,
                pid: 101,
                ..own
            }
        ));
    }

    /// A process whose main thread sleeps while another thread runs is runnable: a daemon's
    /// main thread waiting on a lock its store's writer holds in the disk is not hung.
    #[test]
    fn a_process_is_runnable_while_any_of_its_threads_runs() {
        let spin = "import threading, time\n\
                    threading.Thread(target=lambda: [0 for _ in iter(int, 1)], daemon=True).start()\n\
                    time.sleep(30)";
        let mut child = std::process::Command::new("python3")
            .args(["-c", spin])
            .spawn()
            .expect("python3 runs (it is on every machine of this project's kind)");
        let pid = child.id();
        let seen = (0..300).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(10));
            runnable(pid) == Some(false) && any_thread_runnable(pid)
        });
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(seen, "the main thread asleep, the other one running");
        assert!(
            !any_thread_runnable(pid),
            "an exited process has no threads"
        );
    }

    #[tokio::test]
    async fn a_child_is_seen_to_exit_and_a_stale_mark_is_refused() {
        let own = own().expect("this machine has /proc");
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let mark = ProcessMark {
            pid: child.id(),
            started: started(child.id()).unwrap(),
            ..own
        };
        // A mark whose start time is not the process's names one that has exited.
        assert!(matches!(
            watch(&ProcessMark {
                started: mark.started + 1,
                ..mark
            }),
            Watch::Exited
        ));
        let watching = watch(&mark);
        // A second link watching the same process shares the first one's pidfd.
        match (&watching, watch(&mark)) {
            (Watch::Watching(first), Watch::Watching(second)) => {
                assert!(Arc::ptr_eq(first, &second), "one pidfd for one process")
            }
            _ => panic!("a child of this process is watched"),
        }
        assert!(
            watching.waited_for_cpu().is_some(),
            "its run-queue wait is read"
        );
        assert!(Watch::Elsewhere.waited_for_cpu().is_none());
        assert!(watching.cpu().is_some(), "its time on a CPU is read");
        assert!(Watch::Elsewhere.cpu().is_none());
        // Runnable while it starts, then asleep in sleep(1).
        let mut asleep = false;
        for _ in 0..200 {
            if !watching.is_runnable() {
                asleep = true;
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert!(asleep, "its state is read");
        assert!(!Watch::Elsewhere.is_runnable());
        let Watch::Watching(w) = watching else {
            panic!("a child of this process is on this machine")
        };
        let exited = w.exited();
        tokio::pin!(exited);
        assert!(
            tokio::time::timeout(std::time::Duration::from_millis(200), exited.as_mut())
                .await
                .is_err(),
            "the child runs"
        );
        child.kill().unwrap();
        // Seen on exit, before the child is reaped.
        tokio::time::timeout(std::time::Duration::from_secs(10), exited)
            .await
            .expect("the exit is seen");
        child.wait().unwrap();
        assert!(matches!(watch(&mark), Watch::Exited));
        // Another boot is elsewhere.
        assert!(matches!(
            watch(&ProcessMark {
                boot: [0; 16],
                ..mark
            }),
            Watch::Elsewhere
        ));
    }
}
