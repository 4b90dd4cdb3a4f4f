//! Memory after a burst: once a node has been quiet for a while, the buffers that grew during
//! the burst give back their spare room and the allocator returns its free pages to the system
//! (glibc's `malloc_trim`, which also releases whole free pages inside the heap). Measured on
//! EH(2,2) after 1,024 sets in flight (docs/daemon.md, "Memory after a burst"): the heap's free
//! memory is scattered between live allocations, so glibc keeps it resident until trimmed.
//!
//! An idle node costs nothing here: the task waits for activity, and during a burst it wakes
//! once per [`QUIET`] to see whether the burst is over.

use crate::node::Node;
use std::sync::Arc;
use std::time::Duration;

/// How long without activity counts as quiet.
pub const QUIET: Duration = Duration::from_secs(2);

/// When to give memory back again after the first time, if still quiet: what the daemon
/// frees later (a client's control connection, forgotten 10 s after its client went quiet or
/// drained after it closed) is given back too.
pub const AGAIN_AFTER: Duration = Duration::from_secs(12);

/// Give memory back after each burst, forever.
pub async fn run(node: Arc<Node>) {
    let mut trimmed_at = node.stats().touches();
    loop {
        node.stats().burst().await;
        if node.stats().touches() == trimmed_at {
            continue;
        }
        // Wait for a whole `QUIET` without activity.
        loop {
            let before = node.stats().touches();
            tokio::time::sleep(QUIET).await;
            if node.stats().touches() == before && node.link_queued() == 0 {
                break;
            }
        }
        give_back(&node);
        let before = node.stats().touches();
        tokio::time::sleep(AGAIN_AFTER).await;
        if node.stats().touches() == before {
            give_back(&node);
        }
        trimmed_at = node.stats().touches();
    }
}

/// Shrink the rings to what they hold and return the allocator's free pages, unless another
/// node of this process did in the last [`TRIM_AT_MOST_EVERY`].
pub fn give_back(node: &Node) {
    node.output().shrink_to_fit();
    node.stats().journal.shrink_to_fit();
    let due = trim_due(
        &mut TRIMMED.lock().expect("trim lock"),
        std::time::Instant::now(),
    );
    if due {
        release_free_pages();
    }
}

/// A walk of the heap returns the free pages of every node of the process: the nodes of a node
/// host that go quiet together need one. (Each of Q_14's 8,192 nodes a process trimming its
/// 3 GB heap kept both cores busy in `malloc_trim` for minutes at rest.)
pub const TRIM_AT_MOST_EVERY: Duration = Duration::from_secs(1);

/// When this process last returned its free pages.
static TRIMMED: std::sync::Mutex<Option<std::time::Instant>> = std::sync::Mutex::new(None);

/// Whether a trim at `now` is due after the one at `last` (then `now` is the last).
fn trim_due(last: &mut Option<std::time::Instant>, now: std::time::Instant) -> bool {
    let due = last.is_none_or(|at| now.saturating_duration_since(at) >= TRIM_AT_MOST_EVERY);
    if due {
        *last = Some(now);
    }
    due
}

/// Set up the allocator for a daemon: call before any other thread starts. glibc gives each
/// thread that allocates an arena of its own, a heap kept for the process's life: the store's
/// writer thread, the daemon's one other thread, rarely allocates, and its arena held 40 KiB
/// resident per daemon (docs/notes/2026-11-27-memory-after-a-burst.md). One arena for the
/// process.
/// Elsewhere than glibc, nothing.
pub fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets one of the allocator's parameters, for the calls after it.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

/// Return the allocator's free memory to the system, where the allocator can (glibc).
pub fn release_free_pages() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks and releases the allocator's own free memory.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nodes_of_a_process_going_quiet_together_trim_once() {
        let start = std::time::Instant::now();
        let mut last = None;
        assert!(trim_due(&mut last, start));
        assert!(!trim_due(&mut last, start));
        assert!(!trim_due(&mut last, start + TRIM_AT_MOST_EVERY / 2));
        assert!(trim_due(&mut last, start + TRIM_AT_MOST_EVERY));
        assert_eq!(last, Some(start + TRIM_AT_MOST_EVERY));
    }

    /// Once the allocator is tuned, a new thread allocates from an arena that already exists.
    /// Checked in a process of its own (this test binary again, running only this test): in
    /// this one, other tests' threads come and go, and a new thread takes over an arena an
    /// ended one left.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn a_new_thread_gets_no_arena_of_its_own() {
        const CHILD: &str = "CUBEROUTE_TEST_ALLOCATOR_CHILD";
        let name = "quiet::tests::a_new_thread_gets_no_arena_of_its_own";
        if std::env::var_os(CHILD).is_none() {
            let out = std::process::Command::new(std::env::current_exe().unwrap())
                .args(["--exact", name, "--test-threads=1", "--nocapture"])
                .env(CHILD, "1")
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success() && stdout.contains("1 passed"),
                "{stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            return;
        }
        /// How many arenas glibc has, from malloc_info's report: one `<heap nr=...>` each.
        fn arenas() -> usize {
            let mut text: *mut libc::c_char = std::ptr::null_mut();
            let mut len: libc::size_t = 0;
            // SAFETY: the stream writes into a buffer it allocates; read and freed here.
            unsafe {
                let stream = libc::open_memstream(&mut text, &mut len);
                assert!(!stream.is_null());
                assert_eq!(libc::malloc_info(0, stream), 0);
                libc::fclose(stream);
                let report = std::ffi::CStr::from_ptr(text)
                    .to_string_lossy()
                    .into_owned();
                libc::free(text.cast());
                report.matches("<heap nr=").count()
            }
        }
        tune_allocator();
        let before = arenas();
        let (allocated, ended) = (
            std::sync::Arc::new(std::sync::Barrier::new(2)),
            std::sync::Arc::new(std::sync::Barrier::new(2)),
        );
        let thread = {
            let (allocated, ended) = (allocated.clone(), ended.clone());
            std::thread::spawn(move || {
                let block = std::hint::black_box(vec![1u8; 4096]);
                allocated.wait();
                ended.wait();
                drop(block);
            })
        };
        allocated.wait();
        let during = arenas();
        ended.wait();
        thread.join().unwrap();
        assert_eq!(during, before, "the new thread made an arena");
    }

    /// Memory freed after a burst of allocations is returned: the process's resident set
    /// falls (a burst's worth of small blocks, every other one kept so the free ones are
    /// scattered between live ones, as the heap is after a burst of traffic).
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn free_pages_scattered_through_the_heap_are_returned() {
        fn rss_kib() -> u64 {
            let status = std::fs::read_to_string("/proc/self/status").unwrap();
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
                .unwrap()
        }
        // 64 MiB in blocks of 4 KiB (below the mmap threshold: in the heap), every 64th kept.
        let mut blocks: Vec<Vec<u8>> = (0..16384).map(|i| vec![i as u8; 4000]).collect();
        let kept: Vec<Vec<u8>> = blocks.drain(..).step_by(64).collect();
        drop(blocks);
        let before = rss_kib();
        release_free_pages();
        let after = rss_kib();
        assert!(
            after + 32 * 1024 < before,
            "{before} KiB resident before, {after} KiB after"
        );
        assert_eq!(kept.len(), 256);
    }
}
