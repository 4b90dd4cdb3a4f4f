//! What daemon processes cost the machine, read from `/proc`: CPU time, resident and
//! proportional set size. Local processes and container processes alike (a container's
//! processes are processes of this machine).

use serde::Serialize;
use std::time::{Duration, Instant};

/// Clock ticks per second of the times in `/proc/<pid>/stat` (`USER_HZ`, 100 on every Linux
/// architecture cuberoute builds for).
const TICKS_PER_SECOND: f64 = 100.0;

/// CPU time a process has used, in seconds: the scheduler's own count of the nanoseconds each
/// of its threads ran (`/proc/<pid>/task/*/schedstat`), or, where the kernel keeps no such
/// count, utime + stime from `/proc/<pid>/stat`. The ticks of `stat` are charged to whichever
/// process runs when the timer fires; a daemon that runs 40 µs at a time is charged unevenly,
/// and all daemons of a saturated cluster together were charged 1.39 cores while `perf stat`
/// counted 1.89 of their task clock.
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    scheduled_seconds(pid).or_else(|| {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        cpu_seconds_of_stat(&stat)
    })
}

/// The sum of the first field of every thread's schedstat (nanoseconds on a CPU).
fn scheduled_seconds(pid: u32) -> Option<f64> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut nanoseconds = 0u64;
    let mut any = false;
    for task in tasks.flatten() {
        let Ok(text) = std::fs::read_to_string(task.path().join("schedstat")) else {
            continue;
        };
        nanoseconds += text.split_whitespace().next()?.parse::<u64>().ok()?;
        any = true;
    }
    any.then(|| nanoseconds as f64 / 1e9)
}

/// How often the scheduler ran the threads of a process, summed over its threads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Runs {
    /// Times a thread was put on a CPU: the third field of `/proc/<pid>/task/*/schedstat`.
    /// Every wake-up of a thread is one; so is every return after a preemption...
    pub runs: u64,
    /// ...which `nonvoluntary_ctxt_switches` of `/proc/<pid>/task/*/status` counts.
    pub preempted: u64,
}

/// The [`Runs`] of `pid` now; `None` where the kernel keeps no schedstat.
pub fn scheduled_runs(pid: u32) -> Option<Runs> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut sum = Runs::default();
    let mut any = false;
    for task in tasks.flatten() {
        let Ok(text) = std::fs::read_to_string(task.path().join("schedstat")) else {
            continue;
        };
        sum.runs += runs_of_schedstat(&text)?;
        if let Ok(status) = std::fs::read_to_string(task.path().join("status")) {
            sum.preempted += preemptions_of_status(&status).unwrap_or(0);
        }
        any = true;
    }
    any.then_some(sum)
}

/// The `nonvoluntary_ctxt_switches` line of a task's status file.
fn preemptions_of_status(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("nonvoluntary_ctxt_switches:"))?
        .trim()
        .parse()
        .ok()
}

/// The third field of a schedstat line: `<ns on cpu> <ns waiting> <timeslices run>`.
fn runs_of_schedstat(line: &str) -> Option<u64> {
    line.split_whitespace().nth(2)?.parse().ok()
}

/// The scheduler runs of `pids` now, to pass to [`runs_since`].
pub fn runs_now(pids: &[u32]) -> Vec<(u32, Runs)> {
    pids.iter()
        .filter_map(|&p| scheduled_runs(p).map(|r| (p, r)))
        .collect()
}

/// The scheduler runs of the processes of `start` since then (those gone are left out).
pub fn runs_since(start: &[(u32, Runs)]) -> Runs {
    let mut sum = Runs::default();
    for &(pid, before) in start {
        if let Some(now) = scheduled_runs(pid) {
            sum.runs += now.runs.saturating_sub(before.runs);
            sum.preempted += now.preempted.saturating_sub(before.preempted);
        }
    }
    sum
}

/// Fields 14 and 15 (utime, stime) of a `/proc/<pid>/stat` line. The command name (field 2)
/// may hold spaces and parentheses, so fields are counted after its closing parenthesis.
pub(crate) fn cpu_seconds_of_stat(stat: &str) -> Option<f64> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    let mut fields = after_name.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some((utime + stime) as f64 / TICKS_PER_SECOND)
}

/// Resident set size of a process, in KiB.
pub fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    kib_field(&status, "VmRSS:")
}

/// Proportional set size of a process, in KiB: its private pages plus its share of every page
/// it shares (the executable's text, mostly), so that a sum over processes is the memory they
/// use together.
pub fn pss_kib(pid: u32) -> Option<u64> {
    let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok()?;
    kib_field(&rollup, "Pss:")
}

fn kib_field(text: &str, name: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Mean and maximum of a per-process figure.
#[derive(Serialize, Clone, Copy, Debug, Default, PartialEq)]
pub struct Spread {
    pub mean: f64,
    pub max: f64,
}

impl Spread {
    pub fn of(values: &[f64]) -> Spread {
        Spread {
            mean: values.iter().sum::<f64>() / values.len().max(1) as f64,
            max: values.iter().copied().fold(0.0, f64::max),
        }
    }
}

/// Memory of a set of processes, in MiB per process.
#[derive(Serialize, Clone, Copy, Debug, Default)]
pub struct Memory {
    pub processes: usize,
    pub pss_mib: Spread,
    pub rss_mib: Spread,
    /// Sum of the processes' PSS: what they hold together.
    pub pss_mib_total: f64,
}

pub fn memory(pids: &[u32]) -> Memory {
    let mib = |kib: Option<u64>| kib.map(|k| k as f64 / 1024.0);
    let pss: Vec<f64> = pids.iter().filter_map(|&p| mib(pss_kib(p))).collect();
    let rss: Vec<f64> = pids.iter().filter_map(|&p| mib(rss_kib(p))).collect();
    Memory {
        processes: pids.len(),
        pss_mib: Spread::of(&pss),
        rss_mib: Spread::of(&rss),
        pss_mib_total: pss.iter().sum(),
    }
}

/// CPU the processes used together over a window.
#[derive(Serialize, Clone, Copy, Debug, Default)]
pub struct CpuUse {
    pub seconds: f64,
    /// CPU seconds per wall-clock second, all processes together (1.0 = one core busy).
    pub cores: f64,
    /// The same, as a percentage of one core.
    pub percent_of_one_core: f64,
    /// Processes that were running at both ends of the window (the others are left out).
    pub processes: usize,
}

/// CPU used by `pids` from `start` (the CPU times read then) until now.
pub fn cpu_since(start: &[(u32, f64)], started: Instant) -> CpuUse {
    let seconds = started.elapsed().as_secs_f64();
    let mut used = 0.0;
    let mut processes = 0;
    for &(pid, before) in start {
        if let Some(now) = cpu_seconds(pid) {
            used += (now - before).max(0.0);
            processes += 1;
        }
    }
    let cores = used / seconds.max(f64::MIN_POSITIVE);
    CpuUse {
        seconds,
        cores,
        percent_of_one_core: cores * 100.0,
        processes,
    }
}

/// The CPU times of `pids` now, to pass to [`cpu_since`].
pub fn cpu_now(pids: &[u32]) -> Vec<(u32, f64)> {
    pids.iter()
        .filter_map(|&p| cpu_seconds(p).map(|s| (p, s)))
        .collect()
}

/// Idle cost: CPU over `window` while the caller sends nothing, and memory at its end.
#[derive(Serialize, Clone, Copy, Debug, Default)]
pub struct Idle {
    pub cpu: CpuUse,
    pub memory: Memory,
}

pub fn idle(pids: &[u32], window: Duration) -> Idle {
    let start = cpu_now(pids);
    let started = Instant::now();
    std::thread::sleep(window);
    Idle {
        cpu: cpu_since(&start, started),
        memory: memory(pids),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schedstat_line_gives_its_runs() {
        assert_eq!(runs_of_schedstat("123456 7890 42\n"), Some(42));
        assert_eq!(runs_of_schedstat("123456 7890"), None);
        // This process has run at least once, and runs again to read it.
        let me = std::process::id();
        let first = scheduled_runs(me).expect("Linux keeps schedstat");
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert!(scheduled_runs(me).unwrap().runs > first.runs);
        let status = "State:\tS\nvoluntary_ctxt_switches:\t10\nnonvoluntary_ctxt_switches:\t3\n";
        assert_eq!(preemptions_of_status(status), Some(3));
        assert_eq!(preemptions_of_status("State:\tS\n"), None);
    }

    #[test]
    fn stat_fields_are_counted_after_the_command_name() {
        let stat = "4242 (cube (route) x) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 75 0 0 20 0 \
                    2 0 123 456 789";
        assert_eq!(cpu_seconds_of_stat(stat), Some(3.25));
        assert_eq!(cpu_seconds_of_stat("4242 (short) S 1"), None);
        assert_eq!(cpu_seconds_of_stat("no parenthesis"), None);
    }

    #[test]
    fn this_process_has_cpu_time_and_memory() {
        let me = std::process::id();
        // Burn CPU so that the reading is not zero: 50 ms of it by the scheduler's count where
        // the kernel keeps one (wall time alone says nothing on a busy machine), else 50 ms
        // of wall time.
        let before = scheduled_seconds(me);
        let start = Instant::now();
        let mut x = 0u64;
        while start.elapsed() < Duration::from_secs(20)
            && match (before, scheduled_seconds(me)) {
                (Some(b), Some(now)) => now - b < 0.05,
                _ => start.elapsed() < Duration::from_millis(50),
            }
        {
            for _ in 0..10_000 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(1));
            }
        }
        assert!(cpu_seconds(me).is_some_and(|s| s > 0.0));
        if let (Some(b), Some(now)) = (before, scheduled_seconds(me)) {
            assert!(now - b >= 0.05, "{b} -> {now}");
        }
        let memory = memory(&[me]);
        assert_eq!(memory.processes, 1);
        assert!(memory.rss_mib.mean > 0.0 && memory.pss_mib.mean > 0.0);
        assert!(memory.pss_mib.mean <= memory.rss_mib.mean);
        assert_eq!(cpu_seconds(u32::MAX), None, "no such process");
    }

    #[test]
    fn spread_of_nothing_is_zero() {
        assert_eq!(Spread::of(&[]), Spread::default());
        assert_eq!(
            Spread::of(&[1.0, 3.0]),
            Spread {
                mean: 2.0,
                max: 3.0
            }
        );
    }
}
