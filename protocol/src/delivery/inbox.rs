//! The destination's side of the delivery modes: collect each set's pieces until they rebuild
//! its payload, hand it over once, and know it again when more pieces or a resend arrive.
//!
//! Pure state: the caller passes the time and carries out what [`Received`] says (put the
//! payload in the output, acknowledge a reliable set, count a failure). Memory is bounded by
//! [`InboxLimits`]; a set pushed out to make room is reported by [`Inbox::expire`], never
//! dropped silently.
//!
//! **Fair shares.** The inbox is shared by every source, and a source may be hostile: a
//! certified node can send as many sets as it likes in its own name, whole or never to be
//! completed. So room is shared out by source, max-min: a source may use all the room nobody
//! else needs, and when the inbox is full (more than `max_sets` sets waiting, or `max_bytes`
//! of their pieces) the set pushed out is the oldest of the source that holds the most
//! (sets or bytes, whichever is over), the source whose set just came in first among equals.
//! A source therefore pushes out another's sets only while that other holds more than it does:
//! one that floods pushes out its own, and a source within its fair share (the limit divided
//! by the sources that hold anything) loses nothing to it. The memory of delivered sets (at
//! most ten times `max_sets`) is shared the same way, and what it forgets to stay within its
//! bound makes only that source's older sets stale (each source has its own "forgotten until"
//! send time, see [`Failure::Stale`]), so a source cannot flush the memory that refuses the
//! copies and resends of another's sets. Sealed, the source is the sealer (authenticated);
//! clear, it is whatever a relay claims, and a relay that spreads made-up sets over many source
//! names gets as many shares (the daemon keeps sealed and clear sets in separate inboxes).
//!
//! **Acknowledgements.** Every message carries the number of its set's send (`attempt`), but
//! the inbox believes no number: with sealing off a relay can rewrite it, to `u32::MAX` or
//! anything. A delivered reliable set is acknowledged for the piece that completed it, then for
//! a piece of another attempt than the one last acknowledged (a resend: its source has not
//! heard), never for late pieces of the attempt last acknowledged; and at most
//! [`MAX_ACKS_PER_SET`] times in all, whatever attempts arrive. A rewritten attempt thus draws
//! at most an acknowledgement of its own (which the source hears like any), and the next
//! genuine resend, of another number, is acknowledged again.

use super::encode::{RebuildError, is_well_formed, rebuild};
use super::envelope::{Piece, SetKey, Shape};
use crate::NodeId;
use std::collections::{BTreeMap, BTreeSet};

/// How much the inbox holds and for how long.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct InboxLimits {
    /// Sets waiting for more pieces.
    pub max_sets: usize,
    /// Bytes of the pieces they hold.
    pub max_bytes: usize,
    /// How long a set may wait for its pieces.
    pub pending_for_us: u64,
    /// How long a delivered set is known again (to refuse its copies and resends as
    /// duplicates, and to acknowledge them again).
    pub remember_for_us: u64,
}

impl Default for InboxLimits {
    fn default() -> InboxLimits {
        InboxLimits {
            max_sets: 4096,
            max_bytes: 64 << 20,
            pending_for_us: 30_000_000,
            remember_for_us: 300_000_000,
        }
    }
}

/// The most acknowledgements one delivered set draws, whatever attempts arrive: more than a
/// source sends while the set is remembered (its waits grow to 3.2 s: about a hundred sends in
/// the 5 minutes of `remember_for_us`), so a genuine resend is not refused one for want of
/// room, and a bound on what rewritten or replayed pieces can draw.
pub const MAX_ACKS_PER_SET: u32 = 128;

/// The memory of delivered sets holds at most this many times `max_sets`.
const REMEMBERED_PER_WAITING: usize = 10;

/// What the destination does with a piece that arrived.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Received {
    /// The set waits for more pieces.
    Pending,
    /// The set is whole, for the first time: hand `payload` to the client. `rejected` names
    /// the paths whose pieces were refused (forged or misshapen); `pieces` is how many
    /// arrived.
    Complete {
        payload: Vec<u8>,
        rejected: Vec<u8>,
        pieces: u8,
    },
    /// The set was delivered before, at `delivered_at_us`: a late piece or a resend (a
    /// reliable set is acknowledged again when this is a resend).
    AlreadyDelivered { delivered_at_us: u64 },
    /// The piece or its whole set cannot be used; counted, never delivered.
    Failed(Failure),
}

/// Why a piece or a set was given up.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub enum Failure {
    /// The piece is not shaped as its mode makes pieces, or came on another path than its
    /// index says.
    Misshapen,
    /// The set's pieces can no longer rebuild a payload its mode vouches for (more paths
    /// forged or lost than the threshold).
    Unrecoverable,
    /// The set waited longer than `pending_for_us`.
    Expired,
    /// The set was pushed out to make room: it was the oldest of the source that held the
    /// most of the inbox (sets or bytes) when the inbox was full.
    Evicted,
    /// The set was sent before what this inbox still remembers of its source's deliveries: it
    /// may have been delivered and forgotten since, so it is refused rather than risk handing
    /// it over twice (a piece that waited out a long outage in a link buffer, or a replay).
    Stale,
}

impl Failure {
    /// The label counters and logs use.
    pub fn as_str(self) -> &'static str {
        match self {
            Failure::Misshapen => "piece_misshapen",
            Failure::Unrecoverable => "set_unrecoverable",
            Failure::Expired => "set_expired",
            Failure::Evicted => "set_evicted",
            Failure::Stale => "set_stale",
        }
    }
}

/// A set as the inbox keeps it: its name and the shape its pieces claim. Pieces that claim
/// another mode, k or length are another set here: with sealing off a relay can rewrite them,
/// and the set it makes up never mixes with the true one (nor stops it: see docs/delivery.md).
type Key = (SetKey, Shape);

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
struct PendingSet {
    /// Its place in the order of arrival.
    ticket: u64,
    first_us: u64,
    pieces: BTreeMap<u8, Piece>,
    /// Paths that brought two different pieces or a piece of another shape: one of them is
    /// forged, so none of theirs is used.
    conflicted: BTreeSet<u8>,
    bytes: usize,
}

/// A set delivered here, remembered for a while.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
struct Delivered {
    /// Its place in the order of deliveries.
    ticket: u64,
    at_us: u64,
    /// The attempt the last acknowledgement was for (meaningful once `acks` > 0).
    last_acked: u32,
    /// Acknowledgements drawn so far.
    acks: u32,
}

/// What one source holds of the inbox.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, Debug)]
struct Holding {
    pending: usize,
    bytes: usize,
    delivered: usize,
}

/// Which share of the inbox a count is.
#[derive(Clone, Copy)]
enum Share {
    Pending,
    Bytes,
    Delivered,
}

/// The sources by what they hold of one share, to find the largest holder.
type Ranking = BTreeSet<(usize, NodeId)>;

/// The destination's delivery state. Clone, compared and hashed by value (a model checker
/// keeps it in its states: check/).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Inbox {
    limits: InboxLimits,
    pending: BTreeMap<Key, PendingSet>,
    /// Pending sets by arrival, oldest first, and the same per source.
    arrivals: BTreeMap<u64, Key>,
    arrivals_by_source: BTreeSet<(NodeId, u64)>,
    bytes: usize,
    delivered: BTreeMap<Key, Delivered>,
    /// Delivered sets by delivery, oldest first, and the same per source.
    deliveries: BTreeMap<u64, Key>,
    deliveries_by_source: BTreeSet<(NodeId, u64)>,
    next_ticket: u64,
    /// What each source holds (sources that hold nothing are not here), and the sources
    /// ranked by each share.
    holdings: BTreeMap<NodeId, Holding>,
    by_pending: Ranking,
    by_bytes: Ranking,
    by_delivered: Ranking,
    /// Per source, the latest send time of a set of its forgotten to keep the memory of
    /// deliveries within its bound: its sets sent until then may have been delivered and
    /// forgotten. Dropped once the send time is older than `remember_for_us` (the age rule
    /// then refuses those sets anyway), and kept to the memory's bound: beyond it, the entry
    /// with the earliest time is folded into `forgot_all_until_us`.
    forgot_until_us: BTreeMap<NodeId, u64>,
    forgot_order: BTreeSet<(u64, NodeId)>,
    /// Sets of every source sent until then may have been delivered and forgotten.
    forgot_all_until_us: u64,
    /// Sets given up since the last [`Inbox::expire`].
    given_up: Vec<(SetKey, Failure)>,
}

impl Inbox {
    pub fn new(limits: InboxLimits) -> Inbox {
        Inbox {
            limits,
            pending: BTreeMap::new(),
            arrivals: BTreeMap::new(),
            arrivals_by_source: BTreeSet::new(),
            bytes: 0,
            delivered: BTreeMap::new(),
            deliveries: BTreeMap::new(),
            deliveries_by_source: BTreeSet::new(),
            next_ticket: 0,
            holdings: BTreeMap::new(),
            by_pending: Ranking::new(),
            by_bytes: Ranking::new(),
            by_delivered: Ranking::new(),
            forgot_until_us: BTreeMap::new(),
            forgot_order: BTreeSet::new(),
            forgot_all_until_us: 0,
            given_up: Vec::new(),
        }
    }

    /// Sets waiting for pieces.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Bytes of the pieces they hold.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Delivered sets remembered.
    pub fn remembered(&self) -> usize {
        self.delivered.len()
    }

    /// Take the piece that arrived on path `path` for `set` at `now_us`.
    pub fn receive(&mut self, now_us: u64, set: SetKey, path: u8, piece: Piece) -> Received {
        let shape = piece.shape();
        let key = (set, shape);
        if let Some(delivered) = self.delivered.get(&key) {
            return Received::AlreadyDelivered {
                delivered_at_us: delivered.at_us,
            };
        }
        if self.is_stale(now_us, &set) {
            return Received::Failed(Failure::Stale);
        }
        if piece.index != path || !is_well_formed(&piece) {
            return Received::Failed(Failure::Misshapen);
        }
        let Shape { mode, k, .. } = shape;
        let Some(entry) = self.pending.get_mut(&key) else {
            // The set's first piece: whole alone (a copy of a reliable set), or kept waiting.
            return match rebuild_counting(mode, usize::from(k), &[&piece], 0) {
                Ok((payload, rejected)) => self.complete(now_us, key, payload, rejected, 1),
                Err(RebuildError::NotYet { .. }) => {
                    self.start(now_us, key, piece);
                    self.trim(now_us, set.src);
                    Received::Pending
                }
                Err(RebuildError::Impossible(_)) => Received::Failed(Failure::Unrecoverable),
            };
        };
        let index = piece.index;
        if entry.conflicted.contains(&index) {
            return Received::Pending;
        }
        let (added, removed) = match entry.pieces.get(&index) {
            Some(known) if *known == piece => return Received::Pending,
            Some(_) => {
                let old = entry.pieces.remove(&index).expect("just seen");
                entry.conflicted.insert(index);
                (0, old.data.len())
            }
            None => {
                let len = piece.data.len();
                entry.pieces.insert(index, piece);
                (len, 0)
            }
        };
        entry.bytes = entry.bytes + added - removed;
        let pieces: Vec<&Piece> = entry.pieces.values().collect();
        let outcome = rebuild_counting(mode, usize::from(k), &pieces, entry.conflicted.len()).map(
            |(payload, mut rejected)| {
                rejected.extend(entry.conflicted.iter().copied());
                rejected.sort_unstable();
                rejected.dedup();
                let arrived = (entry.pieces.len() + entry.conflicted.len()) as u8;
                (payload, rejected, arrived)
            },
        );
        self.hold(set.src, Share::Bytes, added, true);
        self.hold(set.src, Share::Bytes, removed, false);
        match outcome {
            Ok((payload, rejected, arrived)) => {
                self.remove_pending(&key);
                self.complete(now_us, key, payload, rejected, arrived)
            }
            Err(RebuildError::NotYet { .. }) => {
                self.trim(now_us, set.src);
                Received::Pending
            }
            Err(RebuildError::Impossible(_)) => {
                self.remove_pending(&key);
                Received::Failed(Failure::Unrecoverable)
            }
        }
    }

    /// Keep `piece` as the first of the set `key`, waiting for more.
    fn start(&mut self, now_us: u64, key: Key, piece: Piece) {
        let ticket = self.ticket();
        let src = key.0.src;
        let bytes = piece.data.len();
        self.pending.insert(
            key,
            PendingSet {
                ticket,
                first_us: now_us,
                pieces: BTreeMap::from([(piece.index, piece)]),
                conflicted: BTreeSet::new(),
                bytes,
            },
        );
        self.arrivals.insert(ticket, key);
        self.arrivals_by_source.insert((src, ticket));
        self.hold(src, Share::Pending, 1, true);
        self.hold(src, Share::Bytes, bytes, true);
    }

    /// The set `key` is whole at `now_us`: remember it delivered, and hand over its payload.
    fn complete(
        &mut self,
        now_us: u64,
        key: Key,
        payload: Vec<u8>,
        rejected: Vec<u8>,
        pieces: u8,
    ) -> Received {
        let ticket = self.ticket();
        let src = key.0.src;
        self.delivered.insert(
            key,
            Delivered {
                ticket,
                at_us: now_us,
                last_acked: 0,
                acks: 0,
            },
        );
        self.deliveries.insert(ticket, key);
        self.deliveries_by_source.insert((src, ticket));
        self.hold(src, Share::Delivered, 1, true);
        self.trim(now_us, src);
        Received::Complete {
            payload,
            rejected,
            pieces,
        }
    }

    fn ticket(&mut self) -> u64 {
        self.next_ticket += 1;
        self.next_ticket
    }

    /// Whether `set` was sent before what this inbox remembers: a set delivered is remembered
    /// `remember_for_us` from its delivery, which comes after its send, so a set sent less
    /// than that ago is remembered if it was delivered, unless the memory's bound forgot it
    /// (or one of its source's sent later).
    /// (The send time is the source's clock: a source whose clock is ahead or behind by S
    /// shifts this window by S, for its own sets only.)
    fn is_stale(&self, now_us: u64, set: &SetKey) -> bool {
        let forgot_until = self
            .forgot_until_us
            .get(&set.src)
            .copied()
            .unwrap_or(0)
            .max(self.forgot_all_until_us);
        set.sent_at_us <= forgot_until
            || now_us.saturating_sub(set.sent_at_us) >= self.limits.remember_for_us
    }

    /// When [`Inbox::expire`] may next give up a waiting set.
    pub fn next_wakeup(&self) -> Option<u64> {
        self.arrivals.values().next().map(|key| {
            self.pending[key]
                .first_us
                .saturating_add(self.limits.pending_for_us)
        })
    }

    /// Whether a delivered reliable `set` is to be acknowledged for the piece of `attempt` that
    /// just arrived: yes for the piece that completed it and for a piece of another attempt
    /// than the one last acknowledged (a resend: the source has not heard), no for late pieces
    /// of the attempt last acknowledged, and no once the set drew [`MAX_ACKS_PER_SET`]. No
    /// attempt number is believed (a relay can rewrite a clear one): one rewritten to
    /// `u32::MAX` draws one acknowledgement, and the next genuine resend another. A set not
    /// delivered here is not acknowledged.
    pub fn acknowledge(&mut self, set: &SetKey, shape: Shape, attempt: u32) -> bool {
        match self.delivered.get_mut(&(*set, shape)) {
            Some(delivered)
                if delivered.acks < MAX_ACKS_PER_SET
                    && (delivered.acks == 0 || attempt != delivered.last_acked) =>
            {
                delivered.acks += 1;
                delivered.last_acked = attempt;
                true
            }
            _ => false,
        }
    }

    /// Forget that `set` was delivered (the output refused it): its next piece or resend starts
    /// it again.
    pub fn forget(&mut self, set: &SetKey, shape: Shape) {
        self.remove_delivered(&(*set, shape));
    }

    /// Give up the sets that waited longer than `pending_for_us`, forget delivered sets older
    /// than `remember_for_us`, and report every set given up since the last call.
    pub fn expire(&mut self, now_us: u64) -> Vec<(SetKey, Failure)> {
        while let Some((_, &key)) = self.arrivals.first_key_value() {
            if now_us.saturating_sub(self.pending[&key].first_us) < self.limits.pending_for_us {
                break;
            }
            self.remove_pending(&key);
            self.given_up.push((key.0, Failure::Expired));
        }
        while let Some((_, &key)) = self.deliveries.first_key_value() {
            if now_us.saturating_sub(self.delivered[&key].at_us) < self.limits.remember_for_us {
                break;
            }
            self.remove_delivered(&key);
        }
        // A source's "forgotten until" older than the memory is covered by the age rule.
        while let Some(&(until, src)) = self.forgot_order.first() {
            if now_us.saturating_sub(until) < self.limits.remember_for_us {
                break;
            }
            self.forgot_order.remove(&(until, src));
            self.forgot_until_us.remove(&src);
        }
        std::mem::take(&mut self.given_up)
    }

    /// Add (or take away) `n` of `share` to what `src` holds, keeping the rankings and the
    /// totals right, and forgetting a source that holds nothing.
    fn hold(&mut self, src: NodeId, share: Share, n: usize, add: bool) {
        if n == 0 {
            return;
        }
        let holding = self.holdings.entry(src).or_default();
        let (count, ranking) = match share {
            Share::Pending => (&mut holding.pending, &mut self.by_pending),
            Share::Bytes => (&mut holding.bytes, &mut self.by_bytes),
            Share::Delivered => (&mut holding.delivered, &mut self.by_delivered),
        };
        let before = *count;
        *count = if add { before + n } else { before - n };
        if before > 0 {
            ranking.remove(&(before, src));
        }
        if *count > 0 {
            ranking.insert((*count, src));
        }
        if matches!(share, Share::Bytes) {
            self.bytes = if add { self.bytes + n } else { self.bytes - n };
        }
        if *holding == Holding::default() {
            self.holdings.remove(&src);
        }
    }

    fn remove_pending(&mut self, key: &Key) {
        if let Some(p) = self.pending.remove(key) {
            let src = key.0.src;
            self.arrivals.remove(&p.ticket);
            self.arrivals_by_source.remove(&(src, p.ticket));
            self.hold(src, Share::Pending, 1, false);
            self.hold(src, Share::Bytes, p.bytes, false);
        }
    }

    fn remove_delivered(&mut self, key: &Key) {
        if let Some(d) = self.delivered.remove(key) {
            let src = key.0.src;
            self.deliveries.remove(&d.ticket);
            self.deliveries_by_source.remove(&(src, d.ticket));
            self.hold(src, Share::Delivered, 1, false);
        }
    }

    /// The source to take room from when a share is over its limit, after a set of `arrived`
    /// came in: `arrived` itself if it holds at least as much as any other, else the source
    /// that holds the most.
    fn victim(&self, share: Share, arrived: NodeId) -> Option<NodeId> {
        let (ranking, held): (&Ranking, fn(&Holding) -> usize) = match share {
            Share::Pending => (&self.by_pending, |h| h.pending),
            Share::Bytes => (&self.by_bytes, |h| h.bytes),
            Share::Delivered => (&self.by_delivered, |h| h.delivered),
        };
        let &(most, largest) = ranking.last()?;
        let own = self.holdings.get(&arrived).map_or(0, held);
        Some(if own >= most { arrived } else { largest })
    }

    /// The oldest entry of `src` in a per-source order.
    fn oldest_of(order: &BTreeSet<(NodeId, u64)>, src: NodeId) -> Option<u64> {
        order
            .range((src, 0)..=(src, u64::MAX))
            .next()
            .map(|&(_, ticket)| ticket)
    }

    /// Keep within the limits after a set of `arrived` came in, taking room from the largest
    /// holder of each share that is over (see the module doc): push out its oldest pending
    /// sets while more than `max_sets` sets or `max_bytes` bytes wait, and forget its oldest
    /// deliveries while more than ten times `max_sets` are remembered.
    fn trim(&mut self, _now_us: u64, arrived: NodeId) {
        loop {
            let share = if self.pending.len() > self.limits.max_sets {
                Share::Pending
            } else if self.bytes > self.limits.max_bytes {
                Share::Bytes
            } else {
                break;
            };
            let Some(ticket) = self
                .victim(share, arrived)
                .and_then(|src| Self::oldest_of(&self.arrivals_by_source, src))
            else {
                break;
            };
            let key = self.arrivals[&ticket];
            self.remove_pending(&key);
            self.given_up.push((key.0, Failure::Evicted));
        }
        while self.delivered.len() > REMEMBERED_PER_WAITING * self.limits.max_sets {
            let Some(ticket) = self
                .victim(Share::Delivered, arrived)
                .and_then(|src| Self::oldest_of(&self.deliveries_by_source, src))
            else {
                break;
            };
            let key = self.deliveries[&ticket];
            self.remove_delivered(&key);
            self.forgot(key.0.src, key.0.sent_at_us);
        }
    }

    /// `src`'s sets sent until `sent_at_us` may have been delivered and forgotten. The record is
    /// bounded like the memory of deliveries: beyond it, the earliest is folded into the
    /// record of every source.
    fn forgot(&mut self, src: NodeId, sent_at_us: u64) {
        let until = self.forgot_until_us.entry(src).or_insert(0);
        if *until >= sent_at_us {
            return;
        }
        self.forgot_order.remove(&(*until, src));
        *until = sent_at_us;
        self.forgot_order.insert((sent_at_us, src));
        while self.forgot_until_us.len() > REMEMBERED_PER_WAITING * self.limits.max_sets.max(1) {
            let Some((until, src)) = self.forgot_order.pop_first() else {
                break;
            };
            self.forgot_until_us.remove(&src);
            self.forgot_all_until_us = self.forgot_all_until_us.max(until);
        }
    }
}

/// [`rebuild`] for a set with `conflicted` paths besides `pieces`: nothing more will come
/// from those paths that could be believed, so once every path has answered, waiting is over.
fn rebuild_counting(
    mode: super::mode::Mode,
    k: usize,
    pieces: &[&Piece],
    conflicted: usize,
) -> Result<(Vec<u8>, Vec<u8>), RebuildError> {
    match rebuild(mode, k, pieces) {
        Ok(rebuilt) => Ok((rebuilt.payload, rebuilt.rejected)),
        Err(RebuildError::NotYet { .. }) if pieces.len() + conflicted >= k => Err(
            RebuildError::Impossible("every path has answered and the pieces do not decide"),
        ),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delivery::encode::pieces;
    use crate::delivery::mode::Mode;
    use proptest::prelude::*;

    fn key(seq: u64) -> SetKey {
        SetKey {
            src: NodeId(4),
            seq,
            sent_at_us: 1,
        }
    }

    fn set(mode: &str, k: usize, payload: &[u8]) -> (Mode, Vec<Piece>) {
        let mode: Mode = mode.parse().unwrap();
        (mode, pieces(mode, k, payload, [3; 32]).unwrap())
    }

    #[test]
    fn a_set_completes_once_and_is_known_again() {
        let mut inbox = Inbox::new(InboxLimits::default());
        let (_, all) = set("code:2", 4, b"twelve bytes");
        assert_eq!(
            inbox.receive(0, key(1), 3, all[3].clone()),
            Received::Pending
        );
        assert_eq!(
            inbox.receive(0, key(1), 3, all[3].clone()),
            Received::Pending
        );
        assert_eq!(
            inbox.receive(1, key(1), 0, all[0].clone()),
            Received::Complete {
                payload: b"twelve bytes".to_vec(),
                rejected: vec![],
                pieces: 2
            }
        );
        assert_eq!((inbox.pending(), inbox.bytes()), (0, 0));
        for p in &all {
            assert_eq!(
                inbox.receive(2, key(1), p.index, p.clone()),
                Received::AlreadyDelivered { delivered_at_us: 1 }
            );
        }
        inbox.forget(&key(1), all[0].shape());
        assert_eq!(
            inbox.receive(3, key(1), 1, all[1].clone()),
            Received::Pending
        );
    }

    #[test]
    fn a_set_older_than_the_memory_of_deliveries_is_refused() {
        let limits = InboxLimits {
            max_sets: 1,
            max_bytes: 1 << 20,
            pending_for_us: 100,
            remember_for_us: 1000,
        };
        let mut inbox = Inbox::new(limits);
        let (_, all) = set("reliable", 3, b"x");
        let sent = |seq, sent_at_us| SetKey {
            src: NodeId(4),
            seq,
            sent_at_us,
        };
        // Delivered at 10, remembered until 1010: a resend then is known again.
        assert!(matches!(
            inbox.receive(10, sent(1, 5), 0, all[0].clone()),
            Received::Complete { .. }
        ));
        assert!(matches!(
            inbox.receive(1004, sent(1, 5), 1, all[1].clone()),
            Received::AlreadyDelivered { .. }
        ));
        // After that it is forgotten; sent 1000 ago, it is refused rather than delivered twice.
        inbox.expire(1011);
        assert_eq!(
            inbox.receive(1011, sent(1, 5), 1, all[1].clone()),
            Received::Failed(Failure::Stale)
        );
        // The memory's bound (10 sets here) forgets the oldest deliveries: sets sent until the
        // latest of those are refused too, sets sent later are not.
        for seq in 2..=12 {
            assert!(matches!(
                inbox.receive(1100, sent(seq, 1000 + seq), 0, all[0].clone()),
                Received::Complete { .. }
            ));
        }
        assert_eq!(
            inbox.receive(1100, sent(2, 1002), 2, all[2].clone()),
            Received::Failed(Failure::Stale),
            "forgotten by the bound"
        );
        assert_eq!(
            inbox.receive(1100, sent(20, 1001), 0, all[0].clone()),
            Received::Failed(Failure::Stale),
            "sent before a forgotten set: may have been delivered"
        );
        assert!(matches!(
            inbox.receive(1100, sent(3, 1003), 1, all[1].clone()),
            Received::AlreadyDelivered { .. }
        ));
        assert!(matches!(
            inbox.receive(1100, sent(21, 1050), 0, all[0].clone()),
            Received::Complete { .. }
        ));
    }

    #[test]
    fn each_attempt_of_a_delivered_set_is_acknowledged_once_in_a_row() {
        let mut inbox = Inbox::new(InboxLimits::default());
        let (_, all) = set("reliable", 3, b"once");
        let shape = all[0].shape();
        assert!(!inbox.acknowledge(&key(1), shape, 1), "not delivered yet");
        assert!(matches!(
            inbox.receive(0, key(1), 0, all[0].clone()),
            Received::Complete { .. }
        ));
        assert!(inbox.acknowledge(&key(1), shape, 1), "the completing piece");
        assert!(
            !inbox.acknowledge(&key(1), shape, 1),
            "a late piece of attempt 1"
        );
        assert!(
            inbox.acknowledge(&key(1), shape, 3),
            "a resend: the source has not heard"
        );
        assert!(!inbox.acknowledge(&key(1), shape, 3));
        // No number is believed: a piece of attempt 2 now is another attempt than the last
        // one acknowledged (a late piece, or a resend after the source restarted and counts
        // from 1 again), acknowledged once.
        assert!(inbox.acknowledge(&key(1), shape, 2));
        assert!(!inbox.acknowledge(&key(1), shape, 2));
        assert!(
            !inbox.acknowledge(&key(2), shape, 5),
            "another set, never delivered"
        );
    }

    /// A relay that rewrites `attempt` (clear, it can) to the largest number, on the piece that
    /// completes the set or on a later one, draws one acknowledgement of its own; the source's
    /// later resends are acknowledged all the same.
    #[test]
    fn a_forged_huge_attempt_does_not_stop_later_resends_from_being_acknowledged() {
        for forged_completes in [false, true] {
            let mut inbox = Inbox::new(InboxLimits::default());
            let (_, all) = set("reliable", 3, b"resent");
            let shape = all[0].shape();
            assert!(matches!(
                inbox.receive(0, key(1), 0, all[0].clone()),
                Received::Complete { .. }
            ));
            if !forged_completes {
                assert!(
                    inbox.acknowledge(&key(1), shape, 1),
                    "attempt 1 completes it"
                );
            }
            assert!(inbox.acknowledge(&key(1), shape, u32::MAX), "forged");
            assert!(
                !inbox.acknowledge(&key(1), shape, u32::MAX),
                "its late pieces draw none"
            );
            for resend in 2..=5 {
                assert!(
                    inbox.acknowledge(&key(1), shape, resend),
                    "genuine resend {resend} after a forged u32::MAX"
                );
                assert!(!inbox.acknowledge(&key(1), shape, resend));
            }
        }
    }

    /// Attempts, most of them few and repeated (late pieces), some anything a relay makes up.
    fn attempts() -> impl Strategy<Value = u32> {
        prop_oneof![1u32..5, any::<u32>()]
    }

    proptest! {
        /// Whatever attempts arrive for a delivered set, in any order, it draws at most
        /// MAX_ACKS_PER_SET acknowledgements, and a piece of the attempt last acknowledged
        /// (a late piece) draws none.
        #[test]
        fn acknowledgements_per_set_are_bounded_whatever_attempts_arrive(
            arrivals in proptest::collection::vec(attempts(), 0..1000),
        ) {
            let mut inbox = Inbox::new(InboxLimits::default());
            let (_, all) = set("reliable", 3, b"bounded");
            let shape = all[0].shape();
            let complete = matches!(
                inbox.receive(0, key(1), 0, all[0].clone()),
                Received::Complete { .. }
            );
            prop_assert!(complete);
            let mut acks = 0u32;
            let mut last = None;
            for attempt in arrivals {
                if inbox.acknowledge(&key(1), shape, attempt) {
                    prop_assert_ne!(last, Some(attempt), "a late piece of the attempt acknowledged");
                    acks += 1;
                    last = Some(attempt);
                }
            }
            prop_assert!(acks <= MAX_ACKS_PER_SET, "{} acknowledgements", acks);
        }

        /// Whatever a relay rewrote before (any attempts, short of the bound), the source's
        /// next resends are acknowledged: each one whose number is not the last acknowledged,
        /// so of two resends in a row at least one.
        #[test]
        fn a_relay_rewriting_attempts_cannot_stop_the_next_resends(
            forged in proptest::collection::vec(attempts(), 0..(MAX_ACKS_PER_SET as usize - 2)),
            completing in attempts(),
            next in 2u32..1000,
        ) {
            let mut inbox = Inbox::new(InboxLimits::default());
            let (_, all) = set("reliable", 3, b"resent");
            let shape = all[0].shape();
            let complete = matches!(
                inbox.receive(0, key(1), 0, all[0].clone()),
                Received::Complete { .. }
            );
            prop_assert!(complete);
            let mut last = None;
            for attempt in std::iter::once(completing).chain(forged) {
                if inbox.acknowledge(&key(1), shape, attempt) {
                    last = Some(attempt);
                }
            }
            let first = inbox.acknowledge(&key(1), shape, next);
            prop_assert!(first || last == Some(next), "resend {} after {:?}", next, last);
            prop_assert!(
                inbox.acknowledge(&key(1), shape, next + 1),
                "resend {} after {}", next + 1, next
            );
        }
    }

    fn from(src: u64, seq: u64, sent_at_us: u64) -> SetKey {
        SetKey {
            src: NodeId(src),
            seq,
            sent_at_us,
        }
    }

    /// A certified source that sends many sets whose pieces never complete fills the inbox; it
    /// pushes out its own sets, never another source's, which completes.
    #[test]
    fn a_source_flooding_the_inbox_pushes_out_only_its_own_sets() {
        let limits = InboxLimits {
            max_sets: 4,
            max_bytes: 1 << 20,
            pending_for_us: 1000,
            remember_for_us: 10_000,
        };
        let mut inbox = Inbox::new(limits);
        let (_, all) = set("code:1", 3, b"half a set");
        let honest = from(9, 1, 5);
        assert_eq!(
            inbox.receive(5, honest, 0, all[0].clone()),
            Received::Pending
        );
        for seq in 0..20 {
            assert_eq!(
                inbox.receive(10 + seq, from(4, seq, 10 + seq), 0, all[0].clone()),
                Received::Pending
            );
            assert!(inbox.pending() <= limits.max_sets);
        }
        let given_up = inbox.expire(50);
        assert_eq!(given_up.len(), 17, "{given_up:?}");
        assert!(
            given_up
                .iter()
                .all(|(set, why)| set.src == NodeId(4) && *why == Failure::Evicted),
            "{given_up:?}"
        );
        assert_eq!(
            given_up.first(),
            Some(&(from(4, 0, 10), Failure::Evicted)),
            "the flooder's oldest first"
        );
        assert!(matches!(
            inbox.receive(60, honest, 1, all[1].clone()),
            Received::Complete { .. }
        ));

        // The same with bytes: big pieces of one source push out its own, not a small set of
        // another's.
        let limits = InboxLimits {
            max_bytes: 3000,
            ..limits
        };
        let mut inbox = Inbox::new(limits);
        let (_, big) = set("code:1", 3, &[7; 2000]);
        assert_eq!(
            inbox.receive(5, honest, 0, all[0].clone()),
            Received::Pending
        );
        for seq in 0..10 {
            inbox.receive(10 + seq, from(4, seq, 10 + seq), 0, big[0].clone());
            assert!(inbox.bytes() <= limits.max_bytes);
        }
        assert!(inbox.expire(50).iter().all(|(set, _)| set.src == NodeId(4)));
        assert!(matches!(
            inbox.receive(60, honest, 1, all[1].clone()),
            Received::Complete { .. }
        ));
    }

    proptest! {
        /// A source that holds at most half of the inbox (sets and bytes) never loses a set to
        /// another, whatever that other sends and in whatever order; the inbox stays within its
        /// limits all along.
        #[test]
        fn a_source_within_its_share_never_loses_a_set_to_another(
            arrivals in proptest::collection::vec((any::<bool>(), 1usize..400), 0..200),
        ) {
            let limits = InboxLimits {
                max_sets: 8,
                max_bytes: 1000,
                pending_for_us: 1 << 40,
                remember_for_us: 1 << 41,
            };
            let mut inbox = Inbox::new(limits);
            let mut honest_sets = 0;
            for (seq, (honest, size)) in (1..).zip(arrivals) {
                // The honest source: at most 3 sets of at most 150 bytes a piece.
                let (src, size) = if honest && honest_sets < 3 {
                    honest_sets += 1;
                    (9, size.min(300))
                } else {
                    (4, size)
                };
                let (_, pieces) = set("code:1", 3, &vec![seq as u8; size]);
                inbox.receive(seq, from(src, seq, seq), 0, pieces[0].clone());
                prop_assert!(inbox.pending() <= limits.max_sets);
                prop_assert!(inbox.bytes() <= limits.max_bytes);
                for (set, why) in inbox.expire(seq) {
                    prop_assert_eq!(set.src, NodeId(4), "{:?}", why);
                }
            }
        }
    }

    /// A source that completes many sets cannot flush the memory of another's deliveries: the
    /// other's set is known again (its resend acknowledged, not refused as stale), and the
    /// other's later sets are taken, even when the flooder's sets claim a send time far ahead.
    #[test]
    fn a_source_cannot_flush_the_memory_of_another_sources_deliveries() {
        let limits = InboxLimits {
            max_sets: 1,
            max_bytes: 1 << 20,
            pending_for_us: 100,
            remember_for_us: 1_000_000,
        };
        let mut inbox = Inbox::new(limits);
        let (_, all) = set("reliable", 3, b"x");
        let shape = all[0].shape();
        assert!(matches!(
            inbox.receive(100, from(9, 1, 100), 0, all[0].clone()),
            Received::Complete { .. }
        ));
        assert!(inbox.acknowledge(&from(9, 1, 100), shape, 1));
        for seq in 0..30 {
            assert!(matches!(
                inbox.receive(
                    200 + seq,
                    from(4, seq, u64::MAX / 2 + seq),
                    0,
                    all[0].clone()
                ),
                Received::Complete { .. }
            ));
            assert!(inbox.remembered() <= 10 * limits.max_sets);
        }
        assert_eq!(
            inbox.receive(300, from(9, 1, 100), 1, all[1].clone()),
            Received::AlreadyDelivered {
                delivered_at_us: 100
            },
            "the other source's set is still known"
        );
        assert!(
            inbox.acknowledge(&from(9, 1, 100), shape, 2),
            "and its resend acknowledged"
        );
        assert!(matches!(
            inbox.receive(300, from(9, 2, 250), 0, all[0].clone()),
            Received::Complete { .. }
        ));
        // The flooder's forgotten sets, and any it sent before them, are refused as stale.
        assert_eq!(
            inbox.receive(300, from(4, 0, u64::MAX / 2), 1, all[1].clone()),
            Received::Failed(Failure::Stale)
        );
        assert_eq!(
            inbox.receive(300, from(4, 99, 290), 0, all[0].clone()),
            Received::Failed(Failure::Stale)
        );
    }

    /// What the inbox keeps of forgotten sends is bounded like its memory of deliveries, and
    /// dropped once the age rule covers it.
    #[test]
    fn the_record_of_forgotten_sends_is_bounded() {
        let limits = InboxLimits {
            max_sets: 1,
            max_bytes: 1 << 20,
            pending_for_us: 100,
            remember_for_us: 1_000_000,
        };
        let mut inbox = Inbox::new(limits);
        let (_, all) = set("reliable", 3, b"x");
        // Sources 1..=40, each with two sets; 10 remembered in all.
        for round in 0..2 {
            for src in 1..=40 {
                let sent = 1000 * round + src;
                inbox.receive(sent, from(src, round, sent), 0, all[0].clone());
                assert!(inbox.remembered() <= 10);
                assert!(inbox.forgot_until_us.len() <= 10);
                assert_eq!(inbox.forgot_until_us.len(), inbox.forgot_order.len());
            }
        }
        assert!(inbox.forgot_all_until_us > 0, "some were folded");
        inbox.expire(10_000_000);
        assert!(inbox.forgot_until_us.is_empty() && inbox.forgot_order.is_empty());
        assert_eq!(inbox.remembered(), 0);
        assert!(inbox.holdings.is_empty());
        assert!(inbox.by_pending.is_empty() && inbox.by_bytes.is_empty());
        assert!(inbox.by_delivered.is_empty());
    }

    #[test]
    fn a_piece_on_the_wrong_path_or_misshapen_is_refused() {
        let mut inbox = Inbox::new(InboxLimits::default());
        let (_, all) = set("secret:1", 3, b"hush");
        assert_eq!(
            inbox.receive(0, key(1), 1, all[0].clone()),
            Received::Failed(Failure::Misshapen)
        );
        let mut short = all[0].clone();
        short.data.pop();
        assert_eq!(
            inbox.receive(0, key(1), 0, short),
            Received::Failed(Failure::Misshapen)
        );
        assert_eq!(inbox.pending(), 0);
    }

    #[test]
    fn a_path_that_brings_two_pieces_is_not_believed() {
        let mut inbox = Inbox::new(InboxLimits::default());
        let (_, all) = set("byzantine:1", 4, b"vote");
        let mut forged = all[0].clone();
        forged.data = b"VOTE".to_vec();
        assert_eq!(
            inbox.receive(0, key(1), 0, all[0].clone()),
            Received::Pending
        );
        assert_eq!(inbox.receive(0, key(1), 0, forged), Received::Pending);
        assert_eq!(
            inbox.receive(0, key(1), 1, all[1].clone()),
            Received::Pending
        );
        assert_eq!(
            inbox.receive(0, key(1), 2, all[2].clone()),
            Received::Complete {
                payload: b"vote".to_vec(),
                rejected: vec![0],
                pieces: 3
            }
        );
    }

    #[test]
    fn a_set_that_can_no_longer_agree_fails_and_is_never_delivered() {
        let mut inbox = Inbox::new(InboxLimits::default());
        let (_, all) = set("byzantine:1", 3, b"abc");
        let mut a = all[0].clone();
        a.data = b"xxx".to_vec();
        let mut b = all[1].clone();
        b.data = b"yyy".to_vec();
        assert_eq!(inbox.receive(0, key(1), 0, a), Received::Pending);
        assert_eq!(inbox.receive(0, key(1), 1, b), Received::Pending);
        assert_eq!(
            inbox.receive(0, key(1), 2, all[2].clone()),
            Received::Failed(Failure::Unrecoverable)
        );
        assert_eq!(inbox.pending(), 0);
    }

    #[test]
    fn waiting_sets_expire_and_overflow_is_reported() {
        let limits = InboxLimits {
            max_sets: 2,
            max_bytes: 1 << 20,
            pending_for_us: 100,
            remember_for_us: 1000,
        };
        let mut inbox = Inbox::new(limits);
        let (_, all) = set("code:1", 3, b"payload");
        for seq in 1..=3 {
            assert_eq!(
                inbox.receive(seq, key(seq), 0, all[0].clone()),
                Received::Pending
            );
        }
        assert_eq!(inbox.pending(), 2);
        assert_eq!(
            inbox.next_wakeup(),
            Some(102),
            "key 1 was pushed out already"
        );
        assert_eq!(inbox.expire(50), vec![(key(1), Failure::Evicted)]);
        assert_eq!(inbox.expire(102), vec![(key(2), Failure::Expired)]);
        assert_eq!(inbox.pending(), 1);
        // Completing key 3, then forgetting it after `remember_for_us`.
        assert!(matches!(
            inbox.receive(103, key(3), 1, all[1].clone()),
            Received::Complete { .. }
        ));
        assert_eq!(
            inbox.receive(104, key(3), 2, all[2].clone()),
            Received::AlreadyDelivered {
                delivered_at_us: 103
            }
        );
        assert!(inbox.expire(1104).is_empty());
        assert_eq!(
            inbox.receive(1105, key(3), 2, all[2].clone()),
            Received::Failed(Failure::Stale),
            "forgotten, and sent longer ago than deliveries are remembered"
        );
    }
}
