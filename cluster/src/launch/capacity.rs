//! How many daemons this machine can hold, and why not more: memory and processes. (The
//! addresses a local cluster takes are checked where they are assigned, `generate`; each daemon
//! has its own file-descriptor limit and uses about a dozen.)
//! The limits are read off the machine when a cluster starts; [`check`] is a pure function of
//! those readings, so that its arithmetic is tested.

use std::fmt;

/// The memory one daemon is allowed: its proportional set size stays below this at rest and
/// under load within its buffers' bounds (measured: 4.1 MiB idle; BENCHMARKS.md).
pub const MIB_PER_DAEMON: u64 = 6;
/// The memory one more node takes in a process that runs several (`--nodes-per-process`): its
/// share stays below this at rest (measured: 160 KiB on EH(5,5) in two processes; BENCHMARKS.md).
pub const KIB_PER_HOSTED_NODE: u64 = 256;
/// Memory kept for everything else on the machine (the launcher, the client, the kernel's
/// socket buffers).
pub const MIB_RESERVED: u64 = 1024;
/// Tasks (processes and threads) one daemon may use: its one runtime thread, and a blocking
/// thread tokio starts for name lookups when it dials.
pub const TASKS_PER_DAEMON: u64 = 2;
/// Tasks kept for everything else.
pub const TASKS_RESERVED: u64 = 512;

/// What limits the number of daemons, read off the machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Machine {
    /// `MemAvailable` of `/proc/meminfo`, in MiB.
    pub mem_available_mib: u64,
    /// `kernel.pid_max`, and the tasks that exist now (`/proc/loadavg`).
    pub pid_max: u64,
    pub tasks: u64,
    /// The soft `RLIMIT_NPROC` of this user, if any.
    pub nproc_limit: Option<u64>,
}

impl Machine {
    /// Read this machine's limits. A figure that cannot be read is taken as no limit.
    pub fn read() -> Machine {
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let mem_available_mib = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemAvailable:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map_or(u64::MAX, |kib| kib / 1024);
        let pid_max = std::fs::read_to_string("/proc/sys/kernel/pid_max")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(u64::MAX);
        // The fourth field of /proc/loadavg is "running/total".
        let tasks = std::fs::read_to_string("/proc/loadavg")
            .ok()
            .and_then(|s| {
                let field = s.split_whitespace().nth(3)?.to_string();
                field.split('/').nth(1)?.parse().ok()
            })
            .unwrap_or(0);
        let nproc_limit = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NPROC)
            .ok()
            .map(|(soft, _)| soft)
            .filter(|&soft| soft != nix::sys::resource::RLIM_INFINITY);
        Machine {
            mem_available_mib,
            pid_max,
            tasks,
            nproc_limit,
        }
    }
}

/// The most daemons each resource allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capacity {
    pub by_memory: u64,
    pub by_tasks: u64,
}

/// How many nodes, in how many processes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub nodes: u64,
    pub processes: u64,
}

impl Shape {
    /// A process per node.
    pub fn alone(nodes: u64) -> Shape {
        Shape {
            nodes,
            processes: nodes,
        }
    }

    /// The memory it needs, in MiB: each process as a daemon, each node beyond one a process as
    /// a hosted node.
    pub fn mib(&self) -> u64 {
        let hosted = self.nodes.saturating_sub(self.processes);
        self.processes * MIB_PER_DAEMON + (hosted * KIB_PER_HOSTED_NODE).div_ceil(1024)
    }
}

impl Capacity {
    pub fn of(machine: &Machine) -> Capacity {
        let by_memory = machine.mem_available_mib.saturating_sub(MIB_RESERVED) / MIB_PER_DAEMON;
        let free_pids = machine.pid_max.saturating_sub(machine.tasks).min(
            machine
                .nproc_limit
                .map_or(u64::MAX, |l| l.saturating_sub(machine.tasks)),
        );
        let by_tasks = free_pids.saturating_sub(TASKS_RESERVED) / TASKS_PER_DAEMON;
        Capacity {
            by_memory,
            by_tasks,
        }
    }

    pub fn max(&self) -> u64 {
        self.by_memory.min(self.by_tasks)
    }
}

/// A cluster too large for this machine, with every limit it exceeds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooLarge {
    pub shape: Shape,
    pub machine: Machine,
    pub capacity: Capacity,
}

impl TooLarge {
    fn memory_short(&self) -> bool {
        self.shape.mib() > self.machine.mem_available_mib.saturating_sub(MIB_RESERVED)
    }
}

impl fmt::Display for TooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (shape, m, c) = (self.shape, &self.machine, &self.capacity);
        let n = shape.processes;
        if shape.nodes == shape.processes {
            write!(
                f,
                "{n} daemons do not fit on this machine (at most {}):",
                c.max()
            )?;
        } else {
            write!(
                f,
                "{} nodes in {n} processes do not fit on this machine:",
                shape.nodes
            )?;
        }
        let mut reasons = Vec::new();
        if self.memory_short() {
            let needs = if shape.nodes == shape.processes {
                format!("{n} x {MIB_PER_DAEMON} MiB needs {} MiB", shape.mib())
            } else {
                format!(
                    "{n} x {MIB_PER_DAEMON} MiB and {} hosted nodes x {KIB_PER_HOSTED_NODE} KiB need {} MiB",
                    shape.nodes - n,
                    shape.mib()
                )
            };
            reasons.push(format!(
                "memory: {needs}, {} MiB are available ({} MiB kept back)",
                m.mem_available_mib, MIB_RESERVED
            ));
        }
        if n > c.by_tasks {
            let limit = match m.nproc_limit {
                Some(l) => format!("pid_max {}, RLIMIT_NPROC {l}", m.pid_max),
                None => format!("pid_max {}", m.pid_max),
            };
            reasons.push(format!(
                "processes: {n} x {TASKS_PER_DAEMON} tasks needs {}, {} exist now ({limit}, {TASKS_RESERVED} kept back)",
                n * TASKS_PER_DAEMON,
                m.tasks
            ));
        }
        write!(f, " {}", reasons.join("; "))
    }
}

impl std::error::Error for TooLarge {}

/// Whether `shape` fits on `machine`.
pub fn check(shape: Shape, machine: Machine) -> Result<(), TooLarge> {
    let capacity = Capacity::of(&machine);
    let too_large = TooLarge {
        shape,
        machine,
        capacity,
    };
    if shape.processes <= capacity.by_tasks && !too_large.memory_short() {
        Ok(())
    } else {
        Err(too_large)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine(mem_available_mib: u64) -> Machine {
        Machine {
            mem_available_mib,
            pid_max: 32768,
            tasks: 300,
            nproc_limit: None,
        }
    }

    #[test]
    fn this_machine_shape_holds_2048_daemons_and_not_4096() {
        // 2 cores, 24 GiB: about 23 GiB available.
        let m = machine(23 * 1024);
        assert_eq!(Capacity::of(&m).by_memory, (23 * 1024 - 1024) / 6);
        assert!(check(Shape::alone(2048), m).is_ok());
        let err = check(Shape::alone(4096), m).unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("4096 daemons do not fit"), "{text}");
        assert!(
            text.contains("memory: 4096 x 6 MiB needs 24576 MiB"),
            "{text}"
        );
        assert!(!text.contains("processes"), "{text}");
    }

    #[test]
    fn nodes_hosted_several_to_a_process_cost_their_share_not_a_daemon_each() {
        let m = machine(23 * 1024);
        let q16 = Shape {
            nodes: 65536,
            processes: 10,
        };
        assert_eq!(q16.mib(), 60 + (65526 * 256_u64).div_ceil(1024));
        assert!(check(q16, m).is_ok());
        let q17 = Shape {
            nodes: 131072,
            processes: 20,
        };
        let text = check(q17, m).unwrap_err().to_string();
        assert!(
            text.starts_with("131072 nodes in 20 processes do not fit"),
            "{text}"
        );
        assert!(text.contains("131052 hosted nodes x 256 KiB"), "{text}");
    }

    #[test]
    fn every_exceeded_limit_is_named_with_its_numbers() {
        let m = Machine {
            mem_available_mib: 2048,
            pid_max: 4096,
            tasks: 1000,
            nproc_limit: Some(2000),
        };
        let c = Capacity::of(&m);
        assert_eq!(c.by_memory, 1024 / 6);
        // RLIMIT_NPROC leaves 1,000 tasks, 512 of them kept back: 244 daemons.
        assert_eq!(c.by_tasks, (2000 - 1000 - 512) / 2);
        let text = check(Shape::alone(500), m).unwrap_err().to_string();
        assert!(text.contains("memory:"), "{text}");
        assert!(text.contains("RLIMIT_NPROC 2000"), "{text}");
        assert!(text.contains("(at most 170)"), "{text}");
    }

    #[test]
    fn a_machine_that_cannot_be_read_is_no_limit() {
        let m = Machine {
            mem_available_mib: u64::MAX,
            pid_max: u64::MAX,
            tasks: 0,
            nproc_limit: None,
        };
        assert!(check(Shape::alone(1 << 40), m).is_ok());
    }

    #[test]
    fn reading_this_machine_gives_figures() {
        let m = Machine::read();
        assert!(
            m.mem_available_mib > 0 && m.pid_max > 0 && m.tasks > 0,
            "{m:?}"
        );
    }
}
