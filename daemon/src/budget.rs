//! The bytes a daemon's buffers may hold together (`buffers.memory_mib`), so that no load makes
//! a daemon grow without bound: what does not fit is refused at the edge (a send is answered
//! busy) or dropped and counted inside the network (a packet to relay), never queued.
//!
//! One [`Budget`] covers the message buffers of every link and the input buffer; the control
//! requests and answers in progress, the output buffer and the delivery layer's inbox and
//! outbox have byte limits of their own, carved from the same setting ([`Shares`]).

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// How `buffers.memory_mib` is shared out.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Shares {
    /// Every link's message buffer and the input buffer, together: three eighths.
    pub links_and_input: usize,
    /// Control requests being read or handled and answers being written: one eighth.
    pub control: usize,
    /// The output buffer's entries: one quarter.
    pub output: usize,
    /// The delivery layer's inbox (pieces of sets being rebuilt): one eighth...
    pub inbox: usize,
    /// ...and its outbox (reliable sets kept for resending): one eighth.
    pub outbox: usize,
}

impl Shares {
    pub fn of(total_bytes: usize) -> Shares {
        Shares {
            links_and_input: total_bytes / 8 * 3,
            control: total_bytes / 8,
            output: total_bytes / 4,
            inbox: total_bytes / 8,
            outbox: total_bytes / 8,
        }
    }
}

/// A count of bytes held, with a limit.
#[derive(Debug)]
pub struct Budget {
    held: AtomicUsize,
    limit: usize,
}

impl Budget {
    pub fn new(limit: usize) -> Budget {
        Budget {
            held: AtomicUsize::new(0),
            limit,
        }
    }

    /// Hold `bytes` more if they fit under the limit.
    #[must_use]
    pub fn try_hold(&self, bytes: usize) -> bool {
        self.held
            .fetch_update(Relaxed, Relaxed, |held| {
                held.checked_add(bytes).filter(|&total| total <= self.limit)
            })
            .is_ok()
    }

    /// Give back `bytes` held before.
    pub fn release(&self, bytes: usize) {
        let before = self.held.fetch_sub(bytes, Relaxed);
        debug_assert!(before >= bytes, "released more than held");
    }

    pub fn held(&self) -> usize {
        self.held.load(Relaxed)
    }

    pub fn limit(&self) -> usize {
        self.limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_up_to_the_limit_and_gets_bytes_back() {
        let budget = Budget::new(100);
        assert!(budget.try_hold(60));
        assert!(!budget.try_hold(41), "61 + 40 > 100");
        assert!(budget.try_hold(40));
        assert_eq!(budget.held(), 100);
        budget.release(60);
        assert!(budget.try_hold(60));
        assert!(!budget.try_hold(usize::MAX), "no overflow");
    }

    #[test]
    fn shares_add_up_to_at_most_the_whole() {
        let s = Shares::of(64 << 20);
        assert_eq!(
            s.links_and_input + s.control + s.output + s.inbox + s.outbox,
            64 << 20
        );
        assert_eq!(s.links_and_input, 24 << 20);
        assert_eq!(s.control, 8 << 20);
    }
}
