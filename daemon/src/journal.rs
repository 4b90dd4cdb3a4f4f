//! The notice ring: the last [`CAPACITY`] things this node saw happen (links up and down,
//! deliveries, drops, faults, reloads), numbered from 0, for `cuberoute monitor` and the
//! cluster view to follow. Recording costs a lock and a copy; nobody watching costs nothing
//! more. A reader that falls behind by more than the ring is told how many it missed.

use crate::env;
use cuberoute_protocol::wire::control::{Happening, Notice};
use std::collections::VecDeque;
use std::sync::Mutex;
use tokio::sync::watch;

/// Notices kept.
pub const CAPACITY: usize = 4096;

#[derive(Debug)]
pub struct Journal {
    ring: Mutex<VecDeque<Notice>>,
    /// The index the next notice gets.
    next: watch::Sender<u64>,
}

impl Default for Journal {
    fn default() -> Self {
        Journal {
            ring: Mutex::new(VecDeque::with_capacity(64)),
            next: watch::Sender::new(0),
        }
    }
}

impl Journal {
    pub fn note(&self, what: Happening) {
        let mut ring = self.ring.lock().expect("journal lock");
        let index = *self.next.borrow();
        if ring.len() == CAPACITY {
            ring.pop_front();
        }
        ring.push_back(Notice {
            index,
            at_ms: env::now_us() / 1000,
            what,
        });
        self.next.send_replace(index + 1);
    }

    /// The index the next notice will get.
    pub fn next(&self) -> u64 {
        *self.next.borrow()
    }

    /// Follow the index of the next notice.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.next.subscribe()
    }

    /// At most `max` notices from index `after` on, the index to ask for next, and how many
    /// notices from `after` on the ring no longer holds.
    pub fn since(&self, after: u64, max: usize) -> (Vec<Notice>, u64, u64) {
        let ring = self.ring.lock().expect("journal lock");
        let next = *self.next.borrow();
        let after = after.min(next);
        let oldest = next - ring.len() as u64;
        let missed = oldest.saturating_sub(after);
        let from = after.max(oldest);
        let notices: Vec<Notice> = ring
            .iter()
            .skip((from - oldest) as usize)
            .take(max)
            .cloned()
            .collect();
        let next_to_ask = from + notices.len() as u64;
        (notices, next_to_ask, missed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuberoute_protocol::NodeId;

    fn up(n: u64) -> Happening {
        Happening::LinkUp {
            neighbour: NodeId(n),
        }
    }

    #[test]
    fn readers_page_through_and_are_told_what_they_missed() {
        let journal = Journal::default();
        assert_eq!(journal.since(0, 10), (vec![], 0, 0));
        for n in 0..3 {
            journal.note(up(n));
        }
        let (notices, next, missed) = journal.since(1, 1);
        assert_eq!(
            (notices.len(), notices[0].index, next, missed),
            (1, 1, 2, 0)
        );
        assert_eq!(notices[0].what, up(1));
        // Beyond the newest: from now on.
        assert_eq!(journal.since(u64::MAX, 10), (vec![], 3, 0));
        for n in 3..(CAPACITY as u64 + 5) {
            journal.note(up(n));
        }
        let (notices, next, missed) = journal.since(0, 2);
        assert_eq!(missed, 5);
        assert_eq!(notices[0].index, 5);
        assert_eq!(next, 7);
        assert_eq!(journal.next(), CAPACITY as u64 + 5);
    }
}
