//! The destination's side of the delivery modes: collect each set's pieces until they rebuild
//! its payload, hand it over once, and know it again when more pieces or a resend arrive.
//!
//! Pure state: the caller passes the time and carries out what [`Received`] says (put the
//! payload in the output, acknowledge a reliable set, count a failure). Memory is bounded by
//! [`InboxLimits`]; a set pushed out to make room is reported by [`Inbox::expire`], never
//! dropped silently.

use super::encode::{RebuildError, is_well_formed, rebuild};
use super::envelope::{Piece, SetKey, Shape};
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

/// How much the inbox holds and for how long.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
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
    /// The set was pushed out to make room for newer ones.
    Evicted,
    /// The set was sent before what this inbox still remembers of its deliveries: it may have
    /// been delivered and forgotten since, so it is refused rather than risk handing it over
    /// twice (a piece that waited out a long outage in a link buffer, or a replay).
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

struct PendingSet {
    first_us: u64,
    pieces: BTreeMap<u8, Piece>,
    /// Paths that brought two different pieces or a piece of another shape: one of them is
    /// forged, so none of theirs is used.
    conflicted: BTreeSet<u8>,
    bytes: usize,
}

/// A set delivered here, remembered for a while.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Delivered {
    at_us: u64,
    /// The latest attempt of the set acknowledged (0: none yet).
    acknowledged: u32,
}

/// The destination's delivery state.
pub struct Inbox {
    limits: InboxLimits,
    pending: HashMap<Key, PendingSet>,
    /// Pending sets by arrival, oldest first (entries of sets gone since are skipped).
    arrivals: VecDeque<(u64, Key)>,
    bytes: usize,
    delivered: HashMap<Key, Delivered>,
    deliveries: VecDeque<(u64, Key)>,
    /// The latest send time of a set forgotten to keep the memory of deliveries within its
    /// bound: sets sent until then may have been delivered and forgotten.
    forgot_sent_until_us: u64,
    /// Sets given up since the last [`Inbox::expire`].
    given_up: Vec<(SetKey, Failure)>,
}

impl Inbox {
    pub fn new(limits: InboxLimits) -> Inbox {
        Inbox {
            limits,
            pending: HashMap::new(),
            arrivals: VecDeque::new(),
            bytes: 0,
            delivered: HashMap::new(),
            deliveries: VecDeque::new(),
            forgot_sent_until_us: 0,
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
        let entry = self.pending.entry(key).or_insert_with(|| {
            self.arrivals.push_back((now_us, key));
            PendingSet {
                first_us: now_us,
                pieces: BTreeMap::new(),
                conflicted: BTreeSet::new(),
                bytes: 0,
            }
        });
        let index = piece.index;
        if entry.conflicted.contains(&index) {
            return Received::Pending;
        }
        match entry.pieces.get(&index) {
            Some(known) if *known == piece => return Received::Pending,
            Some(_) => {
                let old = entry.pieces.remove(&index).expect("just seen");
                entry.bytes -= old.data.len();
                self.bytes -= old.data.len();
                entry.conflicted.insert(index);
            }
            None => {
                entry.bytes += piece.data.len();
                self.bytes += piece.data.len();
                entry.pieces.insert(index, piece);
            }
        }
        let Shape { mode, k, .. } = shape;
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
        match outcome {
            Ok((payload, rejected, arrived)) => {
                self.remove_pending(&key);
                self.delivered.insert(
                    key,
                    Delivered {
                        at_us: now_us,
                        acknowledged: 0,
                    },
                );
                self.deliveries.push_back((now_us, key));
                self.trim(now_us);
                Received::Complete {
                    payload,
                    rejected,
                    pieces: arrived,
                }
            }
            Err(RebuildError::NotYet { .. }) => {
                self.trim(now_us);
                Received::Pending
            }
            Err(RebuildError::Impossible(_)) => {
                self.remove_pending(&key);
                Received::Failed(Failure::Unrecoverable)
            }
        }
    }

    /// Whether `set` was sent before what this inbox remembers: a set delivered is remembered
    /// `remember_for_us` from its delivery, which comes after its send, so a set sent less
    /// than that ago is remembered if it was delivered, unless the memory's bound forgot it.
    /// (The send time is the source's clock: a source whose clock is ahead or behind by S
    /// shifts this window by S.)
    fn is_stale(&self, now_us: u64, set: &SetKey) -> bool {
        set.sent_at_us <= self.forgot_sent_until_us
            || now_us.saturating_sub(set.sent_at_us) >= self.limits.remember_for_us
    }

    /// When [`Inbox::expire`] may next give up a waiting set.
    pub fn next_wakeup(&self) -> Option<u64> {
        self.arrivals
            .front()
            .map(|&(at, _)| at.saturating_add(self.limits.pending_for_us))
    }

    /// Whether a delivered reliable `set` is to be acknowledged for the piece of `attempt` that
    /// just arrived: yes for the piece that completed it and for the first piece of every later
    /// attempt (a resend: the source has not heard), no for late pieces of an attempt already
    /// acknowledged. A set not delivered here is not acknowledged.
    pub fn acknowledge(&mut self, set: &SetKey, shape: Shape, attempt: u32) -> bool {
        match self.delivered.get_mut(&(*set, shape)) {
            Some(delivered) if attempt > delivered.acknowledged => {
                delivered.acknowledged = attempt;
                true
            }
            _ => false,
        }
    }

    /// Forget that `set` was delivered (the output refused it): its next piece or resend starts
    /// it again.
    pub fn forget(&mut self, set: &SetKey, shape: Shape) {
        self.delivered.remove(&(*set, shape));
    }

    /// Give up the sets that waited longer than `pending_for_us`, forget delivered sets older
    /// than `remember_for_us`, and report every set given up since the last call.
    pub fn expire(&mut self, now_us: u64) -> Vec<(SetKey, Failure)> {
        while let Some(&(at, key)) = self.arrivals.front() {
            if now_us.saturating_sub(at) < self.limits.pending_for_us {
                break;
            }
            self.arrivals.pop_front();
            if self.pending.get(&key).is_some_and(|p| p.first_us == at) {
                self.remove_pending(&key);
                self.given_up.push((key.0, Failure::Expired));
            }
        }
        while let Some(&(at, key)) = self.deliveries.front() {
            if now_us.saturating_sub(at) < self.limits.remember_for_us {
                break;
            }
            self.deliveries.pop_front();
            if self.delivered.get(&key).is_some_and(|d| d.at_us == at) {
                self.delivered.remove(&key);
            }
        }
        std::mem::take(&mut self.given_up)
    }

    fn remove_pending(&mut self, key: &Key) {
        if let Some(p) = self.pending.remove(key) {
            self.bytes -= p.bytes;
        }
    }

    /// Keep within the limits: push out the oldest pending sets, and the oldest remembered
    /// deliveries beyond ten times `max_sets`.
    fn trim(&mut self, _now_us: u64) {
        while self.pending.len() > self.limits.max_sets || self.bytes > self.limits.max_bytes {
            let Some((at, key)) = self.arrivals.pop_front() else {
                break;
            };
            if self.pending.get(&key).is_some_and(|p| p.first_us == at) {
                self.remove_pending(&key);
                self.given_up.push((key.0, Failure::Evicted));
            }
        }
        while self.delivered.len() > 10 * self.limits.max_sets {
            let Some((at, key)) = self.deliveries.pop_front() else {
                break;
            };
            if self.delivered.get(&key).is_some_and(|d| d.at_us == at) {
                self.delivered.remove(&key);
                self.forgot_sent_until_us = self.forgot_sent_until_us.max(key.0.sent_at_us);
            }
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
    use crate::NodeId;
    use crate::delivery::encode::pieces;
    use crate::delivery::mode::Mode;

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
    fn each_attempt_of_a_delivered_set_is_acknowledged_once() {
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
        assert!(
            !inbox.acknowledge(&key(1), shape, 2),
            "a late piece of an older attempt"
        );
        assert!(
            !inbox.acknowledge(&key(2), shape, 5),
            "another set, never delivered"
        );
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
