//! The source's side of reliable delivery: keep each reliable set until its destination
//! acknowledges it or its deadline passes, and say when to send it again.
//!
//! Pure state: the caller passes the time, sends what [`Outbox::poll`] returns, and reports what
//! [`Outbox::settlement`] returns. Memory is bounded by [`OutboxLimits`]: a set that does not fit
//! is refused at [`Outbox::insert`], so the client learns at once.
//!
//! **When a set is sent again.** The first resend waits one retransmission timeout (RTO),
//! estimated from the round trips of the sets acknowledged at their first attempt (RFC 6298's
//! estimator with Karn's rule: a set sent more than once gives no sample, since its
//! acknowledgement cannot be matched to one attempt). Since resent sets give no sample, a
//! sudden slowdown (a loaded machine) would otherwise go unlearnt and every set be sent twice:
//! each first resend doubles the RTO of the sets sent after it, up to 32 times, until a set
//! acknowledged at its first attempt measures the round trip again (Karn's backoff, as TCP
//! keeps it). Each further wait of a set doubles, up to
//! `max_resend_us` and up to a sixteenth of the set's life (its deadline less its first send),
//! so that a set has about twenty attempts however short its deadline: a set whose only live
//! path loses two fifths of its packets then still arrives (the fixed 200 ms doubling to 3.2 s
//! of before gave a 5 s set five attempts, and lost sets under sustained faults; a twelfth was
//! measured to lose one in 75,000 on a loaded machine). The price: a set that cannot arrive is
//! sent about twenty times before its deadline.

use super::envelope::{SetKey, Shape};
use crate::NodeId;
use std::collections::BTreeMap;

/// How much the outbox holds, and how often it sends again.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct OutboxLimits {
    pub max_sets: usize,
    pub max_bytes: usize,
    /// The wait before the first resend until a round trip has been measured.
    pub first_resend_us: u64,
    /// The shortest wait before a resend, however short the round trips.
    pub min_resend_us: u64,
    /// The longest wait between two sends of a set.
    pub max_resend_us: u64,
}

impl Default for OutboxLimits {
    fn default() -> OutboxLimits {
        OutboxLimits {
            max_sets: 4096,
            max_bytes: 64 << 20,
            first_resend_us: 200_000,
            min_resend_us: 20_000,
            max_resend_us: 3_200_000,
        }
    }
}

/// A set's life is spread over at least this many waits: the wait between two sends is at most
/// this share of its life.
const WAITS_PER_LIFE: u64 = 16;

/// The round-trip estimate of RFC 6298, in microseconds.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct RoundTrip {
    pub smoothed_us: u64,
    pub variation_us: u64,
}

impl RoundTrip {
    fn first(sample_us: u64) -> RoundTrip {
        RoundTrip {
            smoothed_us: sample_us,
            variation_us: sample_us / 2,
        }
    }

    fn update(self, sample_us: u64) -> RoundTrip {
        let variation_us = (3 * self.variation_us + self.smoothed_us.abs_diff(sample_us)) / 4;
        let smoothed_us = (7 * self.smoothed_us + sample_us) / 8;
        RoundTrip {
            smoothed_us,
            variation_us,
        }
    }

    /// The retransmission timeout: the smoothed round trip and four times its variation.
    pub fn timeout_us(self) -> u64 {
        self.smoothed_us
            .saturating_add(self.variation_us.saturating_mul(4))
    }
}

/// What the outbox must know of a kept set to believe an acknowledgement of it
/// ([`Outbox::acknowledged`]).
pub trait Acknowledgeable {
    /// The one node whose acknowledgement settles it.
    fn destination(&self) -> Option<NodeId>;
    /// The shape of its pieces, which its destination's acknowledgement names.
    fn shape(&self) -> Shape;
    /// Sealed end to end: only a sealed acknowledgement settles it.
    fn sealed(&self) -> bool;
}

/// How a reliable set ended at its source.
#[derive(Clone, Copy, PartialEq, Eq, Debug, serde::Serialize, serde::Deserialize)]
pub enum Settlement {
    /// The destination acknowledged it after `attempts` sends (the first one included).
    Acked { attempts: u32 },
    /// Its deadline passed unacknowledged after `attempts` sends.
    Expired { attempts: u32 },
}

impl Settlement {
    pub fn attempts(self) -> u32 {
        match self {
            Settlement::Acked { attempts } | Settlement::Expired { attempts } => attempts,
        }
    }
}

/// The outbox is full: the set was not taken.
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error)]
#[error(
    "the source keeps {sets} unacknowledged reliable sets ({bytes} bytes), its limit; try again once some are acknowledged"
)]
pub struct OutboxFull {
    pub sets: usize,
    pub bytes: usize,
}

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
struct Entry<T> {
    item: T,
    bytes: usize,
    attempts: u32,
    /// When the set was first sent: its round trip, if it is acknowledged at once.
    first_us: u64,
    next_us: u64,
    backoff_us: u64,
    /// The longest wait between two of its sends.
    max_backoff_us: u64,
    deadline_us: u64,
}

/// The source's unacknowledged reliable sets; `T` is what the caller sends again. Clone,
/// compared and hashed by value when `T` is (a model checker keeps it in its states: check/).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Outbox<T> {
    limits: OutboxLimits,
    entries: BTreeMap<SetKey, Entry<T>>,
    bytes: usize,
    round_trip: Option<RoundTrip>,
    /// First resends since the last round-trip sample: the RTO is doubled this many times
    /// (up to [`MAX_BACKOFF_DOUBLINGS`]).
    timeouts: u32,
}

/// The most the RTO is doubled for first resends without a sample in between: 32 times.
const MAX_BACKOFF_DOUBLINGS: u32 = 5;

impl<T> Outbox<T> {
    pub fn new(limits: OutboxLimits) -> Outbox<T> {
        Outbox {
            limits,
            entries: BTreeMap::new(),
            bytes: 0,
            round_trip: None,
            timeouts: 0,
        }
    }

    /// The round trip measured so far, if any set was acknowledged at its first attempt.
    pub fn round_trip(&self) -> Option<RoundTrip> {
        self.round_trip
    }

    /// The wait before a set's first resend now.
    pub fn resend_timeout_us(&self) -> u64 {
        let base = self
            .round_trip
            .map_or(self.limits.first_resend_us, RoundTrip::timeout_us)
            .max(self.limits.min_resend_us);
        (base << self.timeouts.min(MAX_BACKOFF_DOUBLINGS)).min(self.limits.max_resend_us)
    }

    /// Keep `item`, the set `key` of `bytes` bytes just sent for the first time, until it is
    /// acknowledged or `deadline_us` passes.
    pub fn insert(
        &mut self,
        now_us: u64,
        key: SetKey,
        item: T,
        bytes: usize,
        deadline_us: u64,
    ) -> Result<(), OutboxFull> {
        if self.entries.len() >= self.limits.max_sets || self.bytes + bytes > self.limits.max_bytes
        {
            return Err(OutboxFull {
                sets: self.entries.len(),
                bytes: self.bytes,
            });
        }
        let max_backoff_us = (deadline_us.saturating_sub(now_us) / WAITS_PER_LIFE)
            .clamp(self.limits.min_resend_us, self.limits.max_resend_us);
        let backoff_us = self.resend_timeout_us().min(max_backoff_us);
        if let Some(old) = self.entries.insert(
            key,
            Entry {
                item,
                bytes,
                attempts: 1,
                first_us: now_us,
                next_us: now_us.saturating_add(backoff_us),
                backoff_us,
                max_backoff_us,
                deadline_us,
            },
        ) {
            self.bytes -= old.bytes;
        }
        self.bytes += bytes;
        Ok(())
    }

    /// What is kept for `key`, if it is.
    pub fn get(&self, key: &SetKey) -> Option<&T> {
        self.entries.get(key).map(|e| &e.item)
    }

    /// The destination acknowledged `key` at `now_us`. None if it is not (or no longer) kept.
    /// A set acknowledged at its first attempt is a round-trip sample.
    pub fn ack(&mut self, now_us: u64, key: &SetKey) -> Option<Settlement> {
        let entry = self.entries.remove(key)?;
        self.bytes -= entry.bytes;
        if entry.attempts == 1 {
            let sample_us = now_us.saturating_sub(entry.first_us);
            self.round_trip = Some(match self.round_trip {
                None => RoundTrip::first(sample_us),
                Some(estimate) => estimate.update(sample_us),
            });
            self.timeouts = 0;
        }
        Some(Settlement::Acked {
            attempts: entry.attempts,
        })
    }

    /// An acknowledgement of `key` naming `shape` came from `from`, sealed or not, at `now_us`:
    /// the set settles if it is kept here and the acknowledgement is one its destination makes
    /// ([`Acknowledgeable`]: from its destination, naming its shape, and sealed if the set was;
    /// with sealing off anyone can make a clear one). None otherwise, and nothing changes.
    pub fn acknowledged(
        &mut self,
        now_us: u64,
        key: &SetKey,
        shape: Shape,
        from: NodeId,
        sealed: bool,
    ) -> Option<Settlement>
    where
        T: Acknowledgeable,
    {
        let genuine = self.get(key).is_some_and(|kept| {
            kept.destination() == Some(from) && (sealed || !kept.sealed()) && kept.shape() == shape
        });
        if genuine { self.ack(now_us, key) } else { None }
    }

    /// The sets due to be sent again at `now_us`, each with its attempt number (the first send
    /// is attempt 1), with the next resend after twice the wait (up to the set's longest wait).
    pub fn poll(&mut self, now_us: u64) -> Vec<(SetKey, u32, &T)> {
        let mut due = Vec::new();
        for (key, entry) in self.entries.iter_mut() {
            if entry.next_us <= now_us && now_us < entry.deadline_us {
                if entry.attempts == 1 {
                    self.timeouts = self.timeouts.saturating_add(1);
                }
                entry.attempts += 1;
                entry.backoff_us = entry.backoff_us.saturating_mul(2).min(entry.max_backoff_us);
                entry.next_us = now_us.saturating_add(entry.backoff_us);
                due.push((*key, entry.attempts));
            }
        }
        due.into_iter()
            .map(|(key, attempt)| (key, attempt, &self.entries[&key].item))
            .collect()
    }

    /// The sets whose deadline passed at `now_us`, given up.
    pub fn settlement(&mut self, now_us: u64) -> Vec<(SetKey, Settlement)> {
        let expired: Vec<SetKey> = self
            .entries
            .iter()
            .filter(|(_, e)| e.deadline_us <= now_us)
            .map(|(key, _)| *key)
            .collect();
        expired
            .into_iter()
            .map(|key| {
                let entry = self.entries.remove(&key).expect("just listed");
                self.bytes -= entry.bytes;
                (
                    key,
                    Settlement::Expired {
                        attempts: entry.attempts,
                    },
                )
            })
            .collect()
    }

    /// When [`Outbox::poll`] or [`Outbox::settlement`] next has something to do.
    pub fn next_wakeup(&self) -> Option<u64> {
        self.entries
            .values()
            .map(|e| e.next_us.min(e.deadline_us))
            .min()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NodeId;

    fn key(seq: u64) -> SetKey {
        SetKey {
            src: NodeId(1),
            seq,
            sent_at_us: 10,
        }
    }

    fn limits() -> OutboxLimits {
        OutboxLimits {
            max_sets: 3,
            max_bytes: 100,
            first_resend_us: 100,
            min_resend_us: 10,
            max_resend_us: 400,
        }
    }

    /// A set to node 9, sealed, of one shape.
    #[derive(Debug)]
    struct ToNine;

    const SHAPE: Shape = Shape {
        mode: super::super::mode::Mode {
            scheme: super::super::mode::Scheme::Copies,
            reliable: true,
        },
        k: 2,
        len: 4,
    };

    impl Acknowledgeable for ToNine {
        fn destination(&self) -> Option<NodeId> {
            Some(NodeId(9))
        }
        fn shape(&self) -> Shape {
            SHAPE
        }
        fn sealed(&self) -> bool {
            true
        }
    }

    /// Only its destination's sealed acknowledgement naming its shape settles a set; any other
    /// changes nothing.
    #[test]
    fn only_the_destinations_acknowledgement_settles() {
        let mut out = Outbox::new(limits());
        out.insert(0, key(1), ToNine, 10, 10_000).unwrap();
        let other = Shape { len: 5, ..SHAPE };
        assert_eq!(out.acknowledged(5, &key(1), SHAPE, NodeId(8), true), None);
        assert_eq!(out.acknowledged(5, &key(1), SHAPE, NodeId(9), false), None);
        assert_eq!(out.acknowledged(5, &key(1), other, NodeId(9), true), None);
        assert_eq!(out.acknowledged(5, &key(2), SHAPE, NodeId(9), true), None);
        assert_eq!(out.len(), 1);
        assert_eq!(
            out.acknowledged(5, &key(1), SHAPE, NodeId(9), true),
            Some(Settlement::Acked { attempts: 1 })
        );
        assert!(out.is_empty());
        assert_eq!(out.acknowledged(6, &key(1), SHAPE, NodeId(9), true), None);
    }

    #[test]
    fn resends_back_off_until_acknowledged() {
        let mut out = Outbox::new(limits());
        out.insert(0, key(1), "a", 10, 10_000).unwrap();
        assert_eq!(out.next_wakeup(), Some(100));
        assert!(out.poll(99).is_empty());
        let mut sent_at = vec![];
        for now in (0..2000).step_by(10) {
            if !out.poll(now).is_empty() {
                sent_at.push(now);
            }
        }
        // Waits of 100, 200, 400, 400, ...
        assert_eq!(sent_at[..5], [100, 300, 700, 1100, 1500]);
        assert_eq!(
            out.ack(2000, &key(1)),
            Some(Settlement::Acked {
                attempts: 1 + sent_at.len() as u32
            })
        );
        assert_eq!(out.ack(2000, &key(1)), None);
        assert_eq!(out.round_trip(), None, "a resent set is no sample (Karn)");
        assert_eq!((out.len(), out.bytes()), (0, 0));
    }

    #[test]
    fn sets_expire_at_their_deadline_and_are_not_sent_after_it() {
        let mut out = Outbox::new(limits());
        out.insert(0, key(1), (), 10, 250).unwrap();
        out.insert(0, key(2), (), 10, 10_000).unwrap();
        assert_eq!(out.poll(100).len(), 2);
        assert!(out.settlement(249).is_empty());
        assert_eq!(out.poll(300).len(), 1, "key 1 is past its deadline");
        assert_eq!(
            out.settlement(300),
            vec![(key(1), Settlement::Expired { attempts: 2 })]
        );
        assert_eq!(
            out.ack(300, &key(1)),
            None,
            "an expired set is settled once"
        );
        assert_eq!((out.len(), out.bytes()), (1, 10));
    }

    #[test]
    fn a_full_outbox_refuses_by_count_and_by_bytes() {
        let mut out = Outbox::new(limits());
        out.insert(0, key(1), (), 90, 1000).unwrap();
        assert_eq!(
            out.insert(0, key(2), (), 11, 1000),
            Err(OutboxFull { sets: 1, bytes: 90 })
        );
        out.insert(0, key(2), (), 5, 1000).unwrap();
        out.insert(0, key(3), (), 5, 1000).unwrap();
        assert!(out.insert(0, key(4), (), 0, 1000).is_err());
        out.ack(0, &key(1));
        out.insert(0, key(4), (), 0, 1000).unwrap();
        assert_eq!(out.len(), 3);
    }

    #[test]
    fn the_first_resend_waits_for_the_measured_round_trip() {
        let mut out = Outbox::new(OutboxLimits::default());
        assert_eq!(out.resend_timeout_us(), 200_000, "nothing measured yet");
        // Sets acknowledged at once after 4 ms: RTO = 4 + 4 x 2 = 12 ms, under the floor.
        out.insert(0, key(1), (), 1, 60_000_000).unwrap();
        out.ack(4_000, &key(1));
        assert_eq!(
            out.round_trip(),
            Some(RoundTrip {
                smoothed_us: 4_000,
                variation_us: 2_000
            })
        );
        assert_eq!(out.resend_timeout_us(), 20_000, "the floor");
        // A slower round trip moves the estimate by an eighth, its variation by a quarter.
        out.insert(10_000, key(2), (), 1, 60_000_000).unwrap();
        out.ack(110_000, &key(2));
        let rt = out.round_trip().unwrap();
        assert_eq!((rt.smoothed_us, rt.variation_us), (16_000, 25_500));
        assert_eq!(out.resend_timeout_us(), 118_000);
        out.insert(200_000, key(3), (), 1, 60_000_000).unwrap();
        assert!(out.poll(200_000 + 117_999).is_empty());
        assert_eq!(out.poll(200_000 + 118_000).len(), 1);
        // That first resend doubles the RTO of the sets sent after it (no sample came)...
        assert_eq!(out.resend_timeout_us(), 236_000);
        out.insert(400_000, key(4), (), 1, 60_000_000).unwrap();
        assert!(
            out.poll(400_000 + 235_999)
                .iter()
                .all(|(k, ..)| *k != key(4))
        );
        assert_eq!(out.poll(400_000 + 236_000)[0].0, key(4));
        assert_eq!(out.resend_timeout_us(), 472_000);
        // ...and a set acknowledged at its first attempt brings it back to the estimate.
        out.insert(700_000, key(5), (), 1, 60_000_000).unwrap();
        out.ack(716_000, &key(5));
        assert_eq!(out.resend_timeout_us(), 16_000 + 4 * 19_125);
    }

    #[test]
    fn a_slowdown_does_not_send_every_set_twice() {
        // Round trips of 10 ms, then the machine slows down to 300 ms: the RTO doubles at each
        // first resend until the sets sent after it wait long enough.
        let mut out = Outbox::new(OutboxLimits::default());
        for n in 0..20 {
            out.insert(n * 1000, key(n), (), 1, u64::MAX).unwrap();
            out.ack(n * 1000 + 10_000, &key(n));
        }
        let mut resent_first = 0;
        let mut now = 1_000_000;
        for n in 100..200 {
            out.insert(now, key(n), (), 1, u64::MAX).unwrap();
            now += 10_000;
            for (k, attempt, _) in out.poll(now) {
                if attempt == 2 && k.seq >= 100 {
                    resent_first += 1;
                }
            }
            // Acknowledged 300 ms after being sent, if still kept.
            if n >= 130 {
                out.ack(now, &key(n - 30));
            }
        }
        assert!(resent_first < 40, "{resent_first} of 100 sent twice");
    }

    #[test]
    fn a_short_deadline_still_gets_about_twenty_attempts() {
        // Nothing measured: the first wait is 200 ms, and no wait is longer than 5 s / 16.
        let mut out = Outbox::new(OutboxLimits::default());
        out.insert(0, key(1), (), 1, 5_000_000).unwrap();
        let mut attempts = vec![0];
        for now in (0..5_000_000).step_by(500) {
            for (_, attempt, _) in out.poll(now) {
                assert_eq!(attempt as usize, attempts.len() + 1);
                attempts.push(now);
            }
        }
        let waits: Vec<u64> = attempts.windows(2).map(|w| w[1] - w[0]).collect();
        assert_eq!(waits[..3], [200_000, 312_500, 312_500]);
        assert!(waits.iter().all(|&w| w <= 312_500));
        assert!(attempts.len() >= 16, "{attempts:?}");
        // With 5 ms round trips measured (the RTO at its 20 ms floor), more still.
        let mut out = Outbox::new(OutboxLimits::default());
        out.insert(0, key(9), (), 1, 60_000_000).unwrap();
        out.ack(5_000, &key(9));
        out.insert(0, key(1), (), 1, 5_000_000).unwrap();
        let mut sends = 1;
        for now in (0..5_000_000).step_by(1_000) {
            sends += out.poll(now).len();
        }
        assert!(sends >= 19, "{sends}");
    }
}
