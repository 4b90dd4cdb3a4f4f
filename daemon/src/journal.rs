//! The notice ring: the last [`CAPACITY`] things this node saw happen (links up and down,
//! deliveries, drops, faults, reloads), numbered from 0, for `cuberoute monitor` and the
//! cluster view to follow. Recording costs a lock and a copy; nobody watching costs nothing
//! more. A reader that falls behind by more than the ring is told how many it missed. The
//! notices are kept encoded ([`PackedRing`]): after a burst the ring is full of deliveries, and
//! encoded they take about a third of what they took as values.

use crate::env;
use crate::packed::PackedRing;
use cuberoute_protocol::wire::control::{Happening, Notice};
use std::sync::Mutex;
use tokio::sync::watch;

/// Notices kept.
pub const CAPACITY: usize = 4096;

pub struct Journal {
    ring: Mutex<PackedRing<Notice, ()>>,
    /// The index the next notice gets.
    next: watch::Sender<u64>,
}

impl Default for Journal {
    fn default() -> Self {
        Journal {
            ring: Mutex::new(PackedRing::default()),
            next: watch::Sender::new(0),
        }
    }
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Journal")
            .field("next", &self.next())
            .finish_non_exhaustive()
    }
}

impl Journal {
    pub fn note(&self, what: Happening) {
        let mut ring = self.ring.lock().expect("journal lock");
        let index = *self.next.borrow();
        if ring.len() == CAPACITY {
            ring.pop_front();
        }
        let notice = Notice {
            index,
            at_ms: env::now_us() / 1000,
            what,
        };
        // A notice is plain data: postcard encodes every value of it.
        ring.push_back(&notice, ()).expect("a notice encodes");
        self.next.send_replace(index + 1);
    }

    /// Give back the room the ring holds beyond its notices (for quiet times).
    pub fn shrink_to_fit(&self) {
        self.ring.lock().expect("journal lock").shrink_to_fit();
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
        let first = (from - oldest) as usize;
        let notices: Vec<Notice> = (first..ring.len())
            .take(max)
            .filter_map(|i| ring.get(i))
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
