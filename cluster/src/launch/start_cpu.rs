//! What a start cost the machine's processors (`cluster up`): the CPU time the new daemons
//! used from their exec until the cluster was up, and the launcher's own over the start. Their
//! sum over the cores is the least wall time the start could have taken on this machine: when
//! the wall time is close to it, the start waited for nothing but CPU, and only a cheaper
//! daemon start (or more cores) makes it faster.

use crate::launch::usage::{cpu_now, cpu_seconds_of_stat};
use serde::Serialize;
use std::time::Duration;

/// The launcher's CPU time when a start began, to measure its share of the start.
#[derive(Clone, Copy, Debug)]
pub struct LauncherMark(f64);

impl LauncherMark {
    /// This process's CPU time now, its exited threads' included: `/proc/self/stat`, not the
    /// scheduler's count per thread ([`crate::launch::usage::cpu_seconds`]), which loses a thread's time when it
    /// exits (a launcher's threads come and go: the generation's, a test harness's), so that a
    /// later reading could be less than an earlier one.
    pub fn now() -> LauncherMark {
        let stat = std::fs::read_to_string("/proc/self/stat").ok();
        LauncherMark(stat.as_deref().and_then(cpu_seconds_of_stat).unwrap_or(0.0))
    }
}

/// The CPU a start took.
#[derive(Serialize, Clone, Copy, Debug, PartialEq)]
pub struct StartCpu {
    /// CPU seconds of the daemons since their exec, read when the cluster was up.
    pub daemons_seconds: f64,
    /// How many daemons could be read (a daemon that exited is not).
    pub daemons: usize,
    /// CPU seconds of the launcher itself from the mark to now (its readiness checks
    /// included).
    pub launcher_seconds: f64,
    /// The processors this process may run on.
    pub cores: usize,
}

impl StartCpu {
    /// Read the daemons `pids` and the launcher since `mark`, now.
    pub fn measure(pids: &[u32], mark: LauncherMark) -> StartCpu {
        let read = cpu_now(pids);
        let launcher = LauncherMark::now();
        StartCpu {
            daemons_seconds: read.iter().map(|&(_, seconds)| seconds).sum(),
            daemons: read.len(),
            launcher_seconds: (launcher.0 - mark.0).max(0.0),
            cores: std::thread::available_parallelism().map_or(1, usize::from),
        }
    }

    /// The least wall time this CPU takes on these cores.
    pub fn floor(&self) -> Duration {
        let seconds = (self.daemons_seconds + self.launcher_seconds) / self.cores.max(1) as f64;
        Duration::from_secs_f64(seconds)
    }

    /// One line: `the daemons 28.3 CPU-s (13.8 ms each), the launcher 2.1: at least 15.2 s on 2 cores`.
    pub fn line(&self) -> String {
        let each_ms = self.daemons_seconds * 1e3 / self.daemons.max(1) as f64;
        format!(
            "the daemons {:.1} CPU-s ({each_ms:.1} ms each), the launcher {:.1}: at least {:.1} s on {} cores",
            self.daemons_seconds,
            self.launcher_seconds,
            self.floor().as_secs_f64(),
            self.cores
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_floor_is_the_cpu_over_the_cores() {
        let cpu = StartCpu {
            daemons_seconds: 28.0,
            daemons: 2048,
            launcher_seconds: 2.0,
            cores: 2,
        };
        assert_eq!(cpu.floor(), Duration::from_secs(15));
        assert_eq!(
            cpu.line(),
            "the daemons 28.0 CPU-s (13.7 ms each), the launcher 2.0: at least 15.0 s on 2 cores"
        );
    }

    #[test]
    fn this_process_and_its_children_are_read() {
        let mark = LauncherMark::now();
        let mut child = std::process::Command::new("sh")
            .args([
                "-c",
                "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; sleep 5",
            ])
            .spawn()
            .expect("sh runs");
        std::thread::sleep(Duration::from_millis(300));
        // The kernel counts CPU time in clock ticks (10 ms): spin until one is counted here (a
        // fixed 2,000,000 additions fell under a tick on a loaded machine), for at most 5 s.
        let spinning = std::time::Instant::now();
        let cpu = loop {
            let mut spin = 0u64;
            for i in 0..2_000_000u64 {
                spin = spin.wrapping_add(std::hint::black_box(i));
            }
            std::hint::black_box(spin);
            let cpu = StartCpu::measure(&[child.id(), u32::MAX], mark);
            if cpu.launcher_seconds > 0.0 || spinning.elapsed() > Duration::from_secs(5) {
                break cpu;
            }
        };
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(cpu.daemons, 1, "the missing pid is not counted");
        assert!(cpu.daemons_seconds > 0.0, "{cpu:?}");
        assert!(cpu.launcher_seconds > 0.0, "{cpu:?}");
        assert!(cpu.cores >= 1);
    }
}
