//! Memory after a burst: the daemons' PSS and RSS read right after the traffic ends and again
//! after [`QUIET`] with no traffic, the same way as every other memory figure
//! ([`crate::launch::usage::memory`]: `/proc/<pid>/smaps_rollup` and `/proc/<pid>/status`).
//! The daemons give back what a burst made them hold once they have been quiet for a while
//! (docs/daemon.md, "Memory after a burst"); this is what measures it.

use crate::launch::usage::{self, Memory};
use serde::Serialize;
use std::time::Duration;

/// How long the daemons are left quiet before the second reading.
pub const QUIET: Duration = Duration::from_secs(30);

/// The daemons' memory right after a burst and after [`QUIET`] without traffic.
#[derive(Serialize, Clone, Copy, Debug, Default)]
pub struct AfterBurst {
    pub after_burst: Memory,
    pub after_quiet: Memory,
    pub quiet_seconds: f64,
}

/// Read the memory of `pids` now, wait `quiet` (sending nothing), and read it again.
pub fn after_burst(pids: &[u32], quiet: Duration) -> AfterBurst {
    let after_burst = usage::memory(pids);
    std::thread::sleep(quiet);
    AfterBurst {
        after_burst,
        after_quiet: usage::memory(pids),
        quiet_seconds: quiet.as_secs_f64(),
    }
}

/// A Markdown table of each cluster's PSS per daemon after its burst and after the quiet:
/// rows of (topology, daemons, figures).
pub fn table<'a>(rows: impl IntoIterator<Item = (&'a str, u64, &'a AfterBurst)>) -> String {
    let mut rows = rows.into_iter().peekable();
    let quiet = rows
        .peek()
        .map_or(QUIET.as_secs_f64(), |r| r.2.quiet_seconds);
    let mut out = format!(
        "| cluster | daemons | PSS per daemon after the burst, mean / max (MiB) | after {quiet:.0} s of quiet, mean / max (MiB) |\n|---|---|---|---|\n"
    );
    for (topology, daemons, m) in rows {
        let (a, q) = (&m.after_burst.pss_mib, &m.after_quiet.pss_mib);
        out += &format!(
            "| {topology} | {daemons} | {:.2} / {:.2} | {:.2} / {:.2} |\n",
            a.mean, a.max, q.mean, q.max
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launch::usage::Spread;

    #[test]
    fn this_process_is_read_twice_and_the_table_shows_both() {
        let me = std::process::id();
        let m = after_burst(&[me], Duration::ZERO);
        assert_eq!((m.after_burst.processes, m.after_quiet.processes), (1, 1));
        assert!(m.after_burst.pss_mib.mean > 0.0 && m.after_quiet.rss_mib.mean > 0.0);
        let figures = AfterBurst {
            after_burst: Memory {
                pss_mib: Spread {
                    mean: 4.5,
                    max: 5.0,
                },
                ..Memory::default()
            },
            after_quiet: Memory {
                pss_mib: Spread {
                    mean: 1.75,
                    max: 2.0,
                },
                ..Memory::default()
            },
            quiet_seconds: 30.0,
        };
        let table = table([("eh:2,2", 32, &figures)]);
        assert!(table.contains("after 30 s of quiet"), "{table}");
        assert!(
            table.ends_with("| eh:2,2 | 32 | 4.50 / 5.00 | 1.75 / 2.00 |\n"),
            "{table}"
        );
    }
}
