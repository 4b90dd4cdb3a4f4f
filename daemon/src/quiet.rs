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
    let mut trimmed_at = node.stats.touches();
    loop {
        node.stats.burst().await;
        if node.stats.touches() == trimmed_at {
            continue;
        }
        // Wait for a whole `QUIET` without activity.
        loop {
            let before = node.stats.touches();
            tokio::time::sleep(QUIET).await;
            if node.stats.touches() == before && node.link_queued() == 0 {
                break;
            }
        }
        give_back(&node);
        let before = node.stats.touches();
        tokio::time::sleep(AGAIN_AFTER).await;
        if node.stats.touches() == before {
            give_back(&node);
        }
        trimmed_at = node.stats.touches();
    }
}

/// Shrink the rings to what they hold and return the allocator's free pages.
pub fn give_back(node: &Node) {
    node.output.shrink_to_fit();
    node.stats.journal.shrink_to_fit();
    release_free_pages();
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
