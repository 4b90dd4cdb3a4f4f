//! The output buffer: a bounded ring of delivered copies that clients read (`recv`) or wait on
//! (`send --wait`). Reading does not consume; each entry has an increasing output index, and a
//! client asks for the entries from an index on. When the ring is full the oldest entry is
//! overwritten, and that is counted, unless it is a protected entry (a reliable set's) that no
//! client has read yet: then the new entry is refused instead (and a reliable set is not
//! acknowledged, so its source sends it again). An entry counts as read once a `recv` or an
//! `await` returned it.

use crate::packed::PackedRing;
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
    /// The index up to which entries may be read: the next output index, or the first entry
    /// still being written to the store ([`Output::reserve`]), published whenever it moves
    /// (for `recv`, which waits for any entry).
    next: watch::Sender<u64>,
    /// Requests waiting for the copies of one set, woken by that set's copies only.
    set_waiters: Waiters<SetId>,
}

/// Runs of overwritten entries remembered: a run ends at each gap (a restart, a withdrawn
/// entry), so a reader further behind than this many gaps is told of fewer.
const OVERWRITTEN_RUNS: usize = 1024;

/// An output index no entry has: a reliable set kept by the store without an entry in the
/// output (the output refused it, or held it already).
pub const NO_INDEX: u64 = u64::MAX;

struct Ring {
    /// The entries, encoded ([`PackedRing`]), each with what the ring decides by without
    /// decoding it; their output indices increase, with gaps where entries were withdrawn and
    /// across restarts.
    entries: PackedRing<Delivery, Slot>,
    /// The output index of each set's newest copy in `entries`, the first of the chain of its
    /// copies ([`Slot::previous`]): finds a set's copies without a scan, and refuses a second
    /// delivery of one copy. One table and no allocation per set: after a burst, thousands of
    /// small allocations kept among the burst's freed memory kept that memory resident.
    sets: HashMap<SetId, u64>,
    /// Entries being written to the store: readers stop before the first.
    pending: BTreeSet<u64>,
    /// The entries overwritten to make room, as runs of consecutive output indices (first,
    /// count), oldest first, at most [`OVERWRITTEN_RUNS`]: how many entries a reader from some
    /// index on missed, gaps apart.
    overwritten: VecDeque<(u64, u64)>,
    next_index: u64,
    capacity: usize,
    /// What the entries may hold together ([`entry_bytes`]), and what they hold.
    byte_capacity: usize,
    bytes: usize,
}

/// What the ring knows of an entry without decoding it.
struct Slot {
    /// Its output index.
    index: u64,
    /// The output index of the previous copy of the same set, if any (it may have been
    /// overwritten since: then the chain ends).
    previous: Option<u64>,
    /// The copy's index in its set.
    copy: u8,
    sealed: bool,
    /// [`entry_bytes`] of the entry (0 once withdrawn).
    size: u32,
    /// No client has read it.
    unread: bool,
    /// A protected entry no client has read: never overwritten.
    unread_protected: bool,
    /// Being written to the store: read by nobody, never overwritten, until it is confirmed
    /// or withdrawn.
    pending: bool,
    /// The store did not keep it: a gap, never read, that goes with the oldest entries.
    withdrawn: bool,
}

impl Slot {
    /// Whether a client may read it now.
    fn readable(&self) -> bool {
        !(self.pending || self.withdrawn)
    }
}

/// How an entry is held until it goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hold {
    /// Overwritten when room is needed, read or not.
    Plain,
    /// Never overwritten before a client read it: the ring refuses new entries instead.
    Protected,
    /// Being written to the store: its index is taken now, readers stop before it, and it is
    /// never overwritten, until [`Output::confirm`] or [`Output::withdraw`].
    Pending,
}

impl Ring {
    fn oldest_index(&self) -> u64 {
        self.entries.meta(0).map_or(self.next_index, |s| s.index)
    }

    /// The position in `entries` of the first entry with an output index of at least `index`.
    fn first_from(&self, index: u64) -> usize {
        let (mut low, mut high) = (0, self.entries.len());
        while low < high {
            let middle = (low + high) / 2;
            if self.entries.meta(middle).is_some_and(|s| s.index < index) {
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        low
    }

    /// The position in `entries` of the entry with this output index.
    fn position(&self, output_index: u64) -> Option<usize> {
        let i = self.first_from(output_index);
        (self.entries.meta(i)?.index == output_index).then_some(i)
    }

    fn slot(&self, output_index: u64) -> Option<&Slot> {
        self.entries.meta(self.position(output_index)?)
    }

    fn get(&self, output_index: u64) -> Option<Delivery> {
        self.entries.get(self.position(output_index)?)
    }

    fn note_overwritten(&mut self, index: u64) {
        match self.overwritten.back_mut() {
            Some((first, count)) if *first + *count == index => *count += 1,
            _ => {
                self.overwritten.push_back((index, 1));
                if self.overwritten.len() > OVERWRITTEN_RUNS {
                    self.overwritten.pop_front();
                }
            }
        }
    }

    /// How many entries with an output index of at least `after` were overwritten.
    fn overwritten_from(&self, after: u64) -> u64 {
        self.overwritten
            .iter()
            .rev()
            .take_while(|&&(first, count)| first + count > after)
            .map(|&(first, count)| first + count - first.max(after))
            .sum()
    }

    /// The index up to which clients may read.
    fn readable_until(&self) -> u64 {
        self.pending.first().copied().unwrap_or(self.next_index)
    }

    /// The entry counts as read from now on.
    fn mark_read(&mut self, output_index: u64) {
        if let Some(slot) = self
            .position(output_index)
            .and_then(|i| self.entries.meta_mut(i))
        {
            slot.unread = false;
            slot.unread_protected = false;
        }
    }

    /// The output indices of the copies of `set` in the ring, newest first, pending ones
    /// included.
    fn copies(&self, set: SetId) -> impl Iterator<Item = (u64, &Slot)> {
        let mut next = self.sets.get(&set).copied();
        std::iter::from_fn(move || {
            let i = next?;
            let slot = self.slot(i)?;
            next = slot.previous;
            Some((i, slot))
        })
    }

    /// The readable copies of `set`, newest first.
    fn readable_copies(&self, set: SetId) -> impl Iterator<Item = (u64, &Slot)> {
        self.copies(set).filter(|(_, s)| s.readable())
    }

    fn has_copy(&self, set: SetId, index: u8) -> bool {
        self.copies(set)
            .any(|(_, s)| s.copy == index && !s.withdrawn)
    }

    /// Add `delivery` under the output index `index` (past every entry's), making room by the
    /// oldest entries as the capacities require.
    fn add(&mut self, delivery: &mut Delivery, hold: Hold, index: u64) -> Pushed {
        let set = set_id(delivery);
        if self.has_copy(set, delivery.index) {
            return Pushed::Duplicate;
        }
        // The oldest entries that must make room, unless one of them may not.
        let size = entry_bytes(delivery);
        let (mut making_room, mut freed) = (0, 0);
        for oldest in self.entries.metas() {
            if !(self.entries.len() - making_room >= self.capacity
                || self.bytes - freed + size > self.byte_capacity)
            {
                break;
            }
            if oldest.unread_protected || oldest.pending {
                return Pushed::Refused;
            }
            freed += oldest.size as usize;
            making_room += 1;
        }
        let mut lost_unread = 0;
        for _ in 0..making_room {
            let old_set = self.entries.get(0).map(|d| set_id(&d));
            let old = self.entries.pop_front().expect("counted above");
            self.bytes -= old.size as usize;
            if !old.withdrawn {
                self.note_overwritten(old.index);
            }
            lost_unread += usize::from(old.unread);
            // The oldest copy of its set: the set is gone if it was also the newest.
            if let Some(old_set) = old_set
                && self.sets.get(&old_set) == Some(&old.index)
            {
                self.sets.remove(&old_set);
            }
        }
        delivery.output_index = index;
        let slot = Slot {
            index,
            previous: self.sets.get(&set).copied(),
            copy: delivery.index,
            sealed: delivery.sealed,
            // An entry is at most a frame (1 MiB) and its path.
            size: u32::try_from(size).expect("an entry of less than 4 GiB"),
            unread: true,
            unread_protected: hold == Hold::Protected,
            pending: hold == Hold::Pending,
            withdrawn: false,
        };
        // A `Delivery` is plain data: postcard encodes every value of it.
        self.entries
            .push_back(delivery, slot)
            .expect("a delivery encodes");
        self.bytes += size;
        self.next_index = self.next_index.max(index + 1);
        self.sets.insert(set, index);
        if hold == Hold::Pending {
            self.pending.insert(index);
        }
        Pushed::Added {
            overwritten: making_room,
            unread: lost_unread,
        }
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
    /// unread, or being written: nothing was added.
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
                entries: PackedRing::default(),
                sets: HashMap::new(),
                pending: BTreeSet::new(),
                overwritten: VecDeque::new(),
                next_index: 0,
                capacity,
                byte_capacity,
                bytes: 0,
            }),
            next: watch::channel(0).0,
            set_waiters: Waiters::default(),
        }
    }

    /// Add a delivered copy under the next output index. A `protected` entry is never
    /// overwritten before a client has read it.
    pub fn push(&self, mut delivery: Delivery, protected: bool) -> Pushed {
        let hold = if protected {
            Hold::Protected
        } else {
            Hold::Plain
        };
        self.add(&mut delivery, hold)
    }

    /// Take the next output index for a reliable set about to be written to the store, into
    /// `delivery.output_index` (the store keeps the entry with it): the entry is in the ring
    /// from now on, read by nobody and never overwritten, and clients read no entry after it,
    /// until it is [`Output::confirm`]ed or [`Output::withdraw`]n. So an index is never
    /// handed out twice, nor passed before its entry can be read, and a restart brings the
    /// entry back under the same index. Unless added, `delivery.output_index` is [`NO_INDEX`].
    pub fn reserve(&self, delivery: &mut Delivery) -> Pushed {
        let pushed = self.add(delivery, Hold::Pending);
        if !matches!(pushed, Pushed::Added { .. }) {
            delivery.output_index = NO_INDEX;
        }
        pushed
    }

    fn add(&self, delivery: &mut Delivery, hold: Hold) -> Pushed {
        let mut ring = self.ring.lock().expect("output lock");
        let index = ring.next_index;
        let pushed = ring.add(delivery, hold, index);
        let readable = ring.readable_until();
        drop(ring);
        if matches!(pushed, Pushed::Added { .. }) && hold != Hold::Pending {
            self.next.send_replace(readable);
            self.set_waiters.wake(&set_id(delivery));
        }
        pushed
    }

    /// The store kept the entry reserved at `output_index`: clients read it from now on.
    /// False if no entry waits there.
    pub fn confirm(&self, output_index: u64) -> bool {
        self.settle(output_index, true)
    }

    /// The store did not keep the entry reserved at `output_index`: it is a gap from now on.
    pub fn withdraw(&self, output_index: u64) -> bool {
        self.settle(output_index, false)
    }

    fn settle(&self, output_index: u64, kept: bool) -> bool {
        let mut ring = self.ring.lock().expect("output lock");
        if !ring.pending.remove(&output_index) {
            return false;
        }
        let set = ring.get(output_index).map(|d| set_id(&d));
        let Some(position) = ring.position(output_index) else {
            return false;
        };
        let slot = ring.entries.meta_mut(position).expect("found above");
        slot.pending = false;
        let previous = slot.previous;
        if !kept {
            slot.withdrawn = true;
            slot.unread = false;
            let size = std::mem::take(&mut slot.size) as usize;
            ring.bytes -= size;
            if let Some(set) = set
                && ring.sets.get(&set) == Some(&output_index)
            {
                match previous {
                    Some(p) => ring.sets.insert(set, p),
                    None => ring.sets.remove(&set),
                };
            }
        }
        let readable = ring.readable_until();
        drop(ring);
        self.next.send_replace(readable);
        if kept && let Some(set) = set {
            self.set_waiters.wake(&set);
        }
        true
    }

    /// At start, before any other entry: `kept`, the entries a restarted node keeps, each under
    /// its own output index (one without, or repeating another's, under a new one after them
    /// all); new entries continue from `next` on, or after the last of them.
    pub fn refill(&self, mut kept: Vec<Delivery>, next: u64) {
        kept.sort_by_key(|d| d.output_index);
        let mut ring = self.ring.lock().expect("output lock");
        let mut fresh = Vec::new();
        for mut d in kept {
            if d.output_index == NO_INDEX || d.output_index < ring.next_index {
                fresh.push(d);
                continue;
            }
            let index = d.output_index;
            ring.add(&mut d, Hold::Plain, index);
        }
        ring.next_index = ring.next_index.max(next);
        for mut d in fresh {
            let index = ring.next_index;
            ring.add(&mut d, Hold::Plain, index);
        }
        let readable = ring.readable_until();
        drop(ring);
        self.next.send_replace(readable);
    }

    /// The output index the next entry gets.
    pub fn next_index(&self) -> u64 {
        self.ring.lock().expect("output lock").next_index
    }

    pub fn len(&self) -> usize {
        self.ring.lock().expect("output lock").entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Give back the room the buffer holds beyond its entries (for quiet times: every entry
    /// stays as it is, read or not).
    pub fn shrink_to_fit(&self) {
        let mut ring = self.ring.lock().expect("output lock");
        ring.entries.shrink_to_fit();
        ring.sets.shrink_to_fit();
    }

    /// The copies of the set `set` delivered so far, in index order, now read.
    pub fn copies(&self, set: SetId) -> Vec<Delivery> {
        let mut ring = self.ring.lock().expect("output lock");
        let indices: Vec<u64> = ring.readable_copies(set).map(|(i, _)| i).collect();
        let mut copies: Vec<Delivery> = indices.into_iter().filter_map(|i| ring.get(i)).collect();
        copies.sort_by_key(|d| d.index);
        for d in &copies {
            ring.mark_read(d.output_index);
        }
        copies
    }

    /// What the copies of the set (`src`, `seq`, `sent_at_us`) delivered so far take
    /// ([`entry_bytes`]): about what an answer carrying them takes.
    pub fn copies_bytes(&self, set: SetId) -> usize {
        let ring = self.ring.lock().expect("output lock");
        ring.readable_copies(set)
            .map(|(_, s)| s.size as usize)
            .sum()
    }

    /// How many copies of the set `set` were delivered so far.
    pub fn copy_count(&self, set: SetId) -> usize {
        let ring = self.ring.lock().expect("output lock");
        ring.readable_copies(set).count()
    }

    /// Up to `max` entries with an output index of at least `after`, taking at most
    /// [`ANSWER_BYTES`] ([`entry_bytes`]; one entry however large), now read, and the index to
    /// ask for next. Entries that came clear are skipped unless `clear`; reading stops before
    /// an entry being written to the store.
    pub fn since(&self, after: u64, max: usize, clear: bool) -> (Vec<Delivery>, u64) {
        let (entries, next, _) = self.read(after, max, clear);
        (entries, next)
    }

    /// [`Output::since`], and how many entries from `after` on were overwritten before they
    /// could be read (since this daemon started): a reader that goes on from the index
    /// returned is told only of those overwritten since.
    pub fn read(&self, after: u64, max: usize, clear: bool) -> (Vec<Delivery>, u64, u64) {
        let mut ring = self.ring.lock().expect("output lock");
        let start = ring.first_from(after);
        let (mut bytes, mut last_seen, mut chosen) = (0, None, Vec::new());
        for (i, slot) in ring.entries.metas().enumerate().skip(start) {
            if chosen.len() == max || slot.pending {
                break;
            }
            last_seen = Some(slot.index);
            if slot.withdrawn || !(clear || slot.sealed) {
                continue;
            }
            let first = bytes == 0;
            bytes += slot.size as usize;
            if !(first || bytes <= ANSWER_BYTES) {
                break;
            }
            chosen.push(i);
        }
        let entries: Vec<Delivery> = chosen
            .into_iter()
            .filter_map(|i| ring.entries.get(i))
            .collect();
        // With nothing to return, an index from the future (a cursor of another run of a
        // daemon without a store) falls back to the present; entries skipped as clear or as
        // gaps are passed.
        let next = match entries.last() {
            Some(d) => d.output_index + 1,
            None => last_seen.map_or_else(
                || after.clamp(ring.oldest_index(), ring.readable_until()),
                |i| i + 1,
            ),
        };
        for d in &entries {
            ring.mark_read(d.output_index);
        }
        (entries, next, ring.overwritten_from(after))
    }

    /// Wake-ups at each new copy of the set (`src`, `seq`, `sent_at_us`), and of no other.
    pub fn watch_set(&self, set: SetId) -> Watch<'_, SetId> {
        self.set_waiters.watch(set)
    }

    /// A receiver that changes whenever entries become readable, holding the index up to
    /// which they are.
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

        fn heap_bytes(&self) -> usize {
            self.ring.lock().unwrap().entries.heap_bytes()
        }
    }

    #[test]
    fn entries_are_kept_encoded_and_large_ones_give_their_room_back_when_overwritten() {
        let out = Output::new(64, usize::MAX);
        let mut big = delivery(0, 0);
        big.payload = vec![7; 16 << 10];
        big.path = Some(vec![NodeId(1), NodeId(3), NodeId(2)]);
        for seq in 0..64 {
            out.push_plain(Delivery { seq, ..big.clone() });
        }
        assert!(out.heap_bytes() >= 1 << 20);
        // Read once, and again: reading does not consume, and nothing is lost by the encoding.
        for _ in 0..2 {
            let (entries, next) = out.since(0, 100, false);
            assert_eq!((entries.len(), next), (31, 31), "512 KiB per answer");
            assert!(entries.iter().enumerate().all(|(i, d)| *d
                == Delivery {
                    output_index: i as u64,
                    seq: i as u64,
                    ..big.clone()
                }));
        }
        // Small copies overwrite the large ones: the room they took is given back, and an
        // unread small copy reads as it was pushed.
        for seq in 100..164 {
            out.push_plain(delivery(seq, 1));
        }
        assert!(out.heap_bytes() <= 64 << 10, "{}", out.heap_bytes());
        let copies = out.copies(set(163));
        assert_eq!(
            copies,
            vec![Delivery {
                output_index: 127,
                ..delivery(163, 1)
            }]
        );
        assert_eq!(out.copies_bytes(set(163)), entry_bytes(&copies[0]));
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
        assert_eq!((out.copy_count(set(1)), out.copy_count(set(2))), (1, 2));
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
    async fn a_reserved_entry_is_read_by_nobody_and_nothing_after_it_until_it_is_confirmed() {
        let out = Output::new(8, usize::MAX);
        let mut rx = out.subscribe();
        out.push_plain(delivery(1, 0));
        let mut stored = delivery(2, 0);
        stored.mode.reliable = true;
        let stored_set = set_id(&stored);
        assert!(matches!(out.reserve(&mut stored), Pushed::Added { .. }));
        assert_eq!(stored.output_index, 1, "its index is taken now");
        out.push_plain(delivery(3, 0));
        assert_eq!(out.next_index(), 3);
        // A reader stops before it, and waits there.
        let (entries, next) = out.since(0, 10, false);
        assert_eq!((entries.len(), next), (1, 1));
        assert_eq!(out.since(1, 10, false), (vec![], 1));
        assert_eq!(
            *rx.borrow_and_update(),
            1,
            "readable up to the reserved entry"
        );
        assert_eq!(out.copy_count(stored_set), 0);
        // A second copy of the set is refused while it is written.
        assert_eq!(out.reserve(&mut stored.clone()), Pushed::Duplicate);
        // Kept: read under the index it was given, and the one after it too.
        assert!(out.confirm(1));
        assert!(!out.confirm(1), "once");
        assert_eq!(*rx.borrow_and_update(), 3);
        let (entries, next) = out.since(1, 10, false);
        let indices: Vec<(u64, u64)> = entries.iter().map(|d| (d.output_index, d.seq)).collect();
        assert_eq!((indices, next), (vec![(1, 2), (2, 3)], 3));
        assert_eq!(out.copy_count(stored_set), 1);
        // Not kept: a gap, passed by readers, and the set may come again.
        let mut refused = delivery(4, 0);
        refused.mode.reliable = true;
        out.reserve(&mut refused);
        assert_eq!(refused.output_index, 3);
        out.push_plain(delivery(5, 0));
        assert!(out.withdraw(3));
        let (entries, next) = out.since(3, 10, false);
        let indices: Vec<u64> = entries.iter().map(|d| d.output_index).collect();
        assert_eq!((indices, next), (vec![4], 5));
        assert_eq!(out.since(4, 10, false).1, 5);
        assert!(matches!(out.reserve(&mut refused), Pushed::Added { .. }));
        assert_eq!(refused.output_index, 5);
    }

    #[test]
    fn a_reserved_entry_is_never_overwritten() {
        let out = Output::new(2, usize::MAX);
        let mut stored = delivery(1, 0);
        out.reserve(&mut stored);
        out.push_plain(delivery(2, 0));
        assert_eq!(out.push_plain(delivery(3, 0)), Pushed::Refused);
        assert_eq!(out.reserve(&mut delivery(3, 0)), Pushed::Refused);
        out.confirm(stored.output_index);
        assert!(matches!(
            out.push_plain(delivery(3, 0)),
            Pushed::Added { overwritten: 1, .. }
        ));
        // A withdrawn entry goes first, and counts as no unread entry lost.
        let mut gone = delivery(4, 0);
        out.reserve(&mut gone);
        out.withdraw(gone.output_index);
        out.push_plain(delivery(5, 0));
        assert_eq!(
            out.push_plain(delivery(6, 0)),
            Pushed::Added {
                overwritten: 1,
                unread: 0
            }
        );
        let seqs: Vec<u64> = out.since(0, 10, false).0.iter().map(|d| d.seq).collect();
        assert_eq!(seqs, vec![5, 6]);
    }

    #[test]
    fn a_refilled_output_keeps_each_entry_under_its_index_and_continues_after_them() {
        let out = Output::new(8, usize::MAX);
        let kept = |seq: u64, output_index: u64| Delivery {
            output_index,
            ..delivery(seq, 0)
        };
        // As a store gives them back: in store order, which the reservations may not be in;
        // one of a store from before indices were kept (0 again), and one without any.
        out.refill(
            vec![
                kept(10, 40),
                kept(11, 0),
                kept(12, 7),
                kept(13, 0),
                kept(14, NO_INDEX),
            ],
            100,
        );
        let (entries, next) = out.since(0, 10, false);
        let got: Vec<(u64, u64)> = entries.iter().map(|d| (d.output_index, d.seq)).collect();
        assert_eq!(got.len(), 5);
        assert_eq!(&got[..3], &[(0, 11), (7, 12), (40, 10)]);
        let mut fresh: Vec<u64> = got[3..].iter().map(|&(i, _)| i).collect();
        fresh.sort_unstable();
        assert_eq!(fresh, vec![100, 101], "new indices after the reservation");
        assert_eq!(next, 102);
        // A reader's cursor from before the restart means the same entries.
        let (entries, _) = out.since(8, 10, false);
        assert_eq!(entries[0].seq, 10);
        assert_eq!(out.since(41, 10, false).0.len(), 2);
        out.push_plain(delivery(20, 0));
        assert_eq!(out.since(102, 10, false).0[0].output_index, 102);
    }

    #[test]
    fn a_reader_is_told_how_many_entries_it_missed_whatever_the_gaps() {
        let out = Output::new(3, usize::MAX);
        // Kept entries at 0 and 5, new ones from 10 on.
        out.refill(
            vec![
                Delivery {
                    output_index: 0,
                    ..delivery(0, 0)
                },
                Delivery {
                    output_index: 5,
                    ..delivery(5, 0)
                },
            ],
            10,
        );
        let mut gone = delivery(10, 0);
        out.reserve(&mut gone);
        out.withdraw(gone.output_index);
        for seq in 11..16 {
            out.push_plain(delivery(seq, 0));
        }
        // 0, 5, the gap at 10 (withdrawn, not an entry) and 11, 12 went to make room.
        let (entries, next, missed) = out.read(0, 10, false);
        let indices: Vec<u64> = entries.iter().map(|d| d.output_index).collect();
        assert_eq!((indices, next, missed), (vec![13, 14, 15], 16, 4));
        assert_eq!(out.read(6, 10, false).2, 2);
        assert_eq!(out.read(12, 10, false).2, 1);
        assert_eq!(
            out.read(16, 10, false).2,
            0,
            "nothing missed from the next index on"
        );
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
