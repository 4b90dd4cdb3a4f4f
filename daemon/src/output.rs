//! The output buffer: a bounded ring of delivered copies that clients read (`recv`) or wait on
//! (`send --wait`). Reading does not consume; each entry has an increasing output index, and a
//! client asks for the entries from an index on. When the ring is full the oldest entry is
//! overwritten, and that is counted, unless it is a protected entry (a reliable set's) that no
//! client has read yet: then the new entry is refused instead (and a reliable set is not
//! acknowledged, so its source sends it again). An entry counts as read once a `recv` or an
//! `await` returned it.

use crate::waiters::{Waiters, Watch};
use cuberoute_protocol::NodeId;
use cuberoute_protocol::delivery::Mode;
use cuberoute_protocol::wire::control::Delivery;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::Mutex;
use tokio::sync::watch;

/// A message set as clients ask for it: its name (source, sequence id, send time), whether it
/// came sealed, and its mode. A clear entry, or one in another mode, is never taken for a
/// sealed set (with sealing off, a relay can make up a set in any name and any mode).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct SetId {
    pub src: NodeId,
    pub seq: u64,
    pub sent_at_us: u64,
    pub sealed: bool,
    pub mode: Mode,
}

pub struct Output {
    ring: Mutex<Ring>,
    /// The next output index, published whenever an entry is added (for `recv`, which waits
    /// for any entry).
    next: watch::Sender<u64>,
    /// Requests waiting for the copies of one set, woken by that set's copies only.
    set_waiters: Waiters<SetId>,
}

struct Ring {
    entries: VecDeque<Delivery>,
    /// The output indices of each set's copies in `entries`: finds a set's copies without a
    /// scan, and refuses a second delivery of one copy.
    sets: HashMap<SetId, Vec<u64>>,
    next_index: u64,
    capacity: usize,
    /// What the entries may hold together ([`entry_bytes`]), and what they hold.
    byte_capacity: usize,
    bytes: usize,
    /// Output indices of protected entries no client has read.
    unread_protected: BTreeSet<u64>,
    /// Output indices of every entry no client has read.
    unread: BTreeSet<u64>,
}

impl Ring {
    fn oldest_index(&self) -> u64 {
        self.next_index - self.entries.len() as u64
    }

    fn get(&self, output_index: u64) -> Option<&Delivery> {
        self.entries
            .get(output_index.checked_sub(self.oldest_index())? as usize)
    }

    fn has_copy(&self, set: SetId, index: u8) -> bool {
        self.sets.get(&set).is_some_and(|indices| {
            indices
                .iter()
                .any(|&i| self.get(i).is_some_and(|d| d.index == index))
        })
    }
}

/// The most an answer to `recv` carries ([`entry_bytes`]), well under a frame.
pub const ANSWER_BYTES: usize = 512 << 10;

/// What an entry counts for against the output's byte capacity: its payload and path, and
/// about what the rest of an entry and its indices take.
pub fn entry_bytes(d: &Delivery) -> usize {
    const OVERHEAD: usize = 192;
    d.payload.len() + d.path.as_ref().map_or(0, |p| p.len() * 8) + OVERHEAD
}

/// What [`Output::push`] did.
#[derive(Debug, PartialEq, Eq)]
pub enum Pushed {
    /// Added; `overwritten` oldest entries made room, `unread` of them no client had read
    /// (copies lost between the network and the client).
    Added { overwritten: usize, unread: usize },
    /// This copy is already in the buffer.
    Duplicate,
    /// The buffer is full and an oldest entry that would have to make room is protected and
    /// unread: nothing was added.
    Refused,
}

fn set_id(d: &Delivery) -> SetId {
    SetId {
        src: d.src,
        seq: d.seq,
        sent_at_us: d.sent_at_us,
        sealed: d.sealed,
        mode: d.mode,
    }
}

impl Output {
    /// An output buffer of at most `capacity` entries holding at most `byte_capacity` bytes.
    pub fn new(capacity: usize, byte_capacity: usize) -> Output {
        Output {
            ring: Mutex::new(Ring {
                entries: VecDeque::with_capacity(capacity.min(1 << 16)),
                sets: HashMap::new(),
                next_index: 0,
                capacity,
                byte_capacity,
                bytes: 0,
                unread_protected: BTreeSet::new(),
                unread: BTreeSet::new(),
            }),
            next: watch::channel(0).0,
            set_waiters: Waiters::default(),
        }
    }

    /// Add a delivered copy; its `output_index` is assigned here. A `protected` entry is never
    /// overwritten before a client has read it.
    pub fn push(&self, mut delivery: Delivery, protected: bool) -> Pushed {
        let mut ring = self.ring.lock().expect("output lock");
        let set = set_id(&delivery);
        if ring.has_copy(set, delivery.index) {
            return Pushed::Duplicate;
        }
        // The oldest entries that must make room, unless one of them may not.
        let size = entry_bytes(&delivery);
        let (mut making_room, mut freed) = (0, 0);
        while making_room < ring.entries.len()
            && (ring.entries.len() - making_room >= ring.capacity
                || ring.bytes - freed + size > ring.byte_capacity)
        {
            let oldest = &ring.entries[making_room];
            if ring.unread_protected.contains(&oldest.output_index) {
                return Pushed::Refused;
            }
            freed += entry_bytes(oldest);
            making_room += 1;
        }
        let mut lost_unread = 0;
        for _ in 0..making_room {
            let old = ring.entries.pop_front().expect("counted above");
            ring.bytes -= entry_bytes(&old);
            lost_unread += usize::from(ring.unread.remove(&old.output_index));
            let old_set = set_id(&old);
            if let Some(indices) = ring.sets.get_mut(&old_set) {
                indices.retain(|&i| i != old.output_index);
                if indices.is_empty() {
                    ring.sets.remove(&old_set);
                }
            }
        }
        ring.bytes += size;
        delivery.output_index = ring.next_index;
        ring.next_index += 1;
        if protected {
            ring.unread_protected.insert(delivery.output_index);
        }
        let index = delivery.output_index;
        ring.unread.insert(index);
        ring.sets
            .entry(set)
            .or_default()
            .push(delivery.output_index);
        ring.entries.push_back(delivery);
        let next = ring.next_index;
        drop(ring);
        self.next.send_replace(next);
        self.set_waiters.wake(&set);
        Pushed::Added {
            overwritten: making_room,
            unread: lost_unread,
        }
    }

    pub fn len(&self) -> usize {
        self.ring.lock().expect("output lock").entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The copies of the set `set` delivered so far, in index order, now read.
    pub fn copies(&self, set: SetId) -> Vec<Delivery> {
        let mut ring = self.ring.lock().expect("output lock");
        let mut copies: Vec<Delivery> = ring
            .sets
            .get(&set)
            .into_iter()
            .flatten()
            .filter_map(|&i| ring.get(i).cloned())
            .collect();
        copies.sort_by_key(|d| d.index);
        for d in &copies {
            ring.unread_protected.remove(&d.output_index);
            ring.unread.remove(&d.output_index);
        }
        copies
    }

    /// What the copies of the set (`src`, `seq`, `sent_at_us`) delivered so far take
    /// ([`entry_bytes`]): about what an answer carrying them takes.
    pub fn copies_bytes(&self, set: SetId) -> usize {
        let ring = self.ring.lock().expect("output lock");
        ring.sets
            .get(&set)
            .into_iter()
            .flatten()
            .filter_map(|&i| ring.get(i))
            .map(entry_bytes)
            .sum()
    }

    /// How many copies of the set `set` were delivered so far.
    pub fn copy_count(&self, set: SetId) -> usize {
        let ring = self.ring.lock().expect("output lock");
        ring.sets.get(&set).map_or(0, Vec::len)
    }

    /// Up to `max` entries with an output index of at least `after`, taking at most
    /// [`ANSWER_BYTES`] ([`entry_bytes`]; one entry however large), now read, and the index to
    /// ask for next.
    /// Entries that came clear are skipped unless `clear`.
    pub fn since(&self, after: u64, max: usize, clear: bool) -> (Vec<Delivery>, u64) {
        let mut ring = self.ring.lock().expect("output lock");
        let oldest = ring.oldest_index();
        let start = after.saturating_sub(oldest).min(ring.entries.len() as u64) as usize;
        let mut bytes = 0;
        let mut last_seen = None;
        let entries: Vec<Delivery> = ring
            .entries
            .range(start..)
            .inspect(|d| last_seen = Some(d.output_index))
            .filter(|d| clear || d.sealed)
            .take(max)
            .take_while(|d| {
                let first = bytes == 0;
                bytes += entry_bytes(d);
                first || bytes <= ANSWER_BYTES
            })
            .cloned()
            .collect();
        // With nothing to return, an index from the future (a cursor of an earlier run of the
        // daemon) falls back to the present; entries skipped as clear are passed.
        let next = match entries.last() {
            Some(d) => d.output_index + 1,
            None => last_seen.map_or(after.clamp(oldest, ring.next_index), |i| i + 1),
        };
        for d in &entries {
            ring.unread_protected.remove(&d.output_index);
            ring.unread.remove(&d.output_index);
        }
        (entries, next)
    }

    /// Wake-ups at each new copy of the set (`src`, `seq`, `sent_at_us`), and of no other.
    pub fn watch_set(&self, set: SetId) -> Watch<'_, SetId> {
        self.set_waiters.watch(set)
    }

    /// A receiver that changes whenever an entry is added.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.next.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(seq: u64) -> SetId {
        SetId {
            src: NodeId(1),
            seq,
            sent_at_us: 77,
            sealed: true,
            mode: Mode::PLAIN,
        }
    }

    fn delivery(seq: u64, index: u8) -> Delivery {
        Delivery {
            output_index: 0,
            src: NodeId(1),
            dst: NodeId(2),
            seq,
            sent_at_us: 77,
            index,
            k: 2,
            split: false,
            hops: 1,
            path: None,
            latency_us: 5,
            mode: Default::default(),
            rejected_paths: vec![],
            sealed: true,
            payload: vec![seq as u8],
        }
    }

    impl Output {
        fn push_plain(&self, d: Delivery) -> Pushed {
            self.push(d, false)
        }
    }

    #[test]
    fn an_unread_protected_entry_is_never_overwritten() {
        let out = Output::new(2, usize::MAX);
        assert_eq!(
            out.push(delivery(1, 0), true),
            Pushed::Added {
                overwritten: 0,
                unread: 0
            }
        );
        out.push_plain(delivery(2, 0));
        assert_eq!(out.push_plain(delivery(3, 0)), Pushed::Refused);
        assert_eq!(out.push(delivery(3, 0), true), Pushed::Refused);
        // Read by a client: now it may go.
        assert_eq!(out.copies(set(1)).len(), 1);
        assert_eq!(
            out.push(delivery(3, 0), true),
            Pushed::Added {
                overwritten: 1,
                unread: 0
            }
        );
        assert_eq!(
            out.push_plain(delivery(4, 0)),
            Pushed::Added {
                overwritten: 1,
                unread: 1
            }
        );
        // Entry 2 (seq 3) is protected and unread: the ring refuses until `recv` reads it.
        assert_eq!(out.push_plain(delivery(5, 0)), Pushed::Refused);
        let (entries, _) = out.since(0, 10, false);
        assert_eq!(entries.len(), 2);
        assert_eq!(
            out.push_plain(delivery(5, 0)),
            Pushed::Added {
                overwritten: 1,
                unread: 0
            }
        );
    }

    #[test]
    fn ring_keeps_the_newest_and_refuses_duplicates() {
        let out = Output::new(3, usize::MAX);
        assert_eq!(
            out.push_plain(delivery(1, 0)),
            Pushed::Added {
                overwritten: 0,
                unread: 0
            }
        );
        assert_eq!(out.push_plain(delivery(1, 0)), Pushed::Duplicate);
        out.push_plain(delivery(1, 1));
        out.push_plain(delivery(2, 0));
        assert_eq!(
            out.push_plain(delivery(2, 1)),
            Pushed::Added {
                overwritten: 1,
                unread: 1
            }
        );
        assert_eq!(out.len(), 3);
        // (1, 0) was overwritten, so it is no longer a duplicate.
        assert_eq!(
            out.push_plain(delivery(1, 0)),
            Pushed::Added {
                overwritten: 1,
                unread: 1
            }
        );
        assert_eq!(out.copies(set(2)).len(), 2);
        assert_eq!(out.copies(set(1)).len(), 1);
        let (entries, next) = out.since(0, 10, false);
        let indices: Vec<u64> = entries.iter().map(|d| d.output_index).collect();
        assert_eq!(indices, vec![2, 3, 4]);
        assert_eq!(next, 5);
        let (entries, next) = out.since(3, 1, false);
        assert_eq!(entries[0].output_index, 3);
        assert_eq!(next, 4);
        let (entries, next) = out.since(5, 10, false);
        assert!(entries.is_empty());
        assert_eq!(next, 5);
        let (entries, next) = out.since(99, 10, false);
        assert!(entries.is_empty());
        assert_eq!(next, 5);
    }

    #[test]
    fn a_repeated_sequence_id_with_another_send_time_is_another_set() {
        let out = Output::new(8, usize::MAX);
        out.push_plain(delivery(5, 0));
        let mut again = delivery(5, 0);
        again.sent_at_us = 99;
        assert_eq!(
            out.push_plain(again),
            Pushed::Added {
                overwritten: 0,
                unread: 0
            }
        );
        assert_eq!(out.copy_count(set(5)), 1);
        assert_eq!(
            out.copy_count(SetId {
                sent_at_us: 99,
                ..set(5)
            }),
            1
        );
        // A clear entry of the same name is another set: no duplicate, not taken for it.
        let mut clear = delivery(5, 0);
        clear.sealed = false;
        assert!(matches!(out.push_plain(clear), Pushed::Added { .. }));
        assert_eq!(out.copy_count(set(5)), 1);
        let (shown, _) = out.since(0, 10, false);
        assert!(shown.iter().all(|d| d.sealed), "sealed only by default");
        let (shown, next) = out.since(0, 10, true);
        assert_eq!((shown.len(), next), (3, 3));
        assert_eq!(
            out.since(2, 10, false),
            (vec![], 3),
            "a clear entry is passed over"
        );
    }

    #[test]
    fn the_byte_capacity_makes_room_by_the_oldest_entries_or_refuses() {
        let mut big = delivery(1, 0);
        big.payload = vec![0; 1000];
        let one = entry_bytes(&big);
        let out = Output::new(100, 3 * one);
        for seq in 1..=3 {
            let mut d = big.clone();
            d.seq = seq;
            out.push_plain(d);
        }
        // A payload of two entries' bytes pushes the two oldest out.
        let mut double = big.clone();
        double.seq = 4;
        double.payload = vec![0; 1000 + one];
        assert_eq!(
            out.push_plain(double),
            Pushed::Added {
                overwritten: 2,
                unread: 2
            }
        );
        assert_eq!(out.len(), 2);
        // A protected unread entry among those that would have to go: nothing goes.
        let out = Output::new(100, 2 * one);
        let mut first = big.clone();
        first.seq = 10;
        out.push(first, true);
        let mut second = big.clone();
        second.seq = 11;
        out.push_plain(second);
        let mut third = big.clone();
        third.seq = 12;
        assert_eq!(out.push_plain(third), Pushed::Refused);
        assert_eq!(out.len(), 2);
    }

    #[tokio::test]
    async fn a_set_watcher_is_woken_by_its_own_set_only() {
        let out = Output::new(64, usize::MAX);
        let watch = out.watch_set(set(9));
        let next_copy = watch.notified();
        for seq in 0..8 {
            out.push_plain(delivery(seq, 0));
        }
        assert!(
            tokio::time::timeout(std::time::Duration::from_millis(50), next_copy)
                .await
                .is_err(),
            "eight deliveries of other sets did not wake it"
        );
        let next_copy = watch.notified();
        out.push_plain(delivery(9, 1));
        tokio::time::timeout(std::time::Duration::from_secs(5), next_copy)
            .await
            .expect("its own copy woke it");
    }

    #[tokio::test]
    async fn subscribers_see_new_entries() {
        let out = Output::new(4, usize::MAX);
        let mut rx = out.subscribe();
        out.push_plain(delivery(1, 0));
        rx.changed().await.unwrap();
        assert_eq!(*rx.borrow(), 1);
    }
}
