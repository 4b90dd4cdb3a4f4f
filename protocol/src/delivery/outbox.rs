//! The source's side of reliable delivery: keep each reliable set until its destination
//! acknowledges it or its deadline passes, and say when to send it again.
//!
//! Pure state: the caller passes the time, sends what [`Outbox::poll`] returns, and reports what
//! [`Outbox::settlement`] returns. Memory is bounded by [`OutboxLimits`]: a set that does not fit
//! is refused at [`Outbox::insert`], so the client learns at once.

use super::envelope::SetKey;
use std::collections::BTreeMap;

/// How much the outbox holds, and how often it sends again.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct OutboxLimits {
    pub max_sets: usize,
    pub max_bytes: usize,
    /// The wait before the first resend; it doubles after each one...
    pub first_resend_us: u64,
    /// ...up to this.
    pub max_resend_us: u64,
}

impl Default for OutboxLimits {
    fn default() -> OutboxLimits {
        OutboxLimits {
            max_sets: 4096,
            max_bytes: 64 << 20,
            first_resend_us: 200_000,
            max_resend_us: 3_200_000,
        }
    }
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

struct Entry<T> {
    item: T,
    bytes: usize,
    attempts: u32,
    next_us: u64,
    backoff_us: u64,
    deadline_us: u64,
}

/// The source's unacknowledged reliable sets; `T` is what the caller sends again.
pub struct Outbox<T> {
    limits: OutboxLimits,
    entries: BTreeMap<SetKey, Entry<T>>,
    bytes: usize,
}

impl<T> Outbox<T> {
    pub fn new(limits: OutboxLimits) -> Outbox<T> {
        Outbox {
            limits,
            entries: BTreeMap::new(),
            bytes: 0,
        }
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
        let backoff_us = self.limits.first_resend_us;
        if let Some(old) = self.entries.insert(
            key,
            Entry {
                item,
                bytes,
                attempts: 1,
                next_us: now_us.saturating_add(backoff_us),
                backoff_us,
                deadline_us,
            },
        ) {
            self.bytes -= old.bytes;
        }
        self.bytes += bytes;
        Ok(())
    }

    /// The destination acknowledged `key`. None if it is not (or no longer) kept.
    pub fn ack(&mut self, key: &SetKey) -> Option<Settlement> {
        let entry = self.entries.remove(key)?;
        self.bytes -= entry.bytes;
        Some(Settlement::Acked {
            attempts: entry.attempts,
        })
    }

    /// The sets due to be sent again at `now_us`, each counted as one more attempt, with the
    /// next resend after twice the wait (up to `max_resend_us`).
    pub fn poll(&mut self, now_us: u64) -> Vec<(SetKey, &T)> {
        let max = self.limits.max_resend_us;
        let mut due = Vec::new();
        for (key, entry) in self.entries.iter_mut() {
            if entry.next_us <= now_us && now_us < entry.deadline_us {
                entry.attempts += 1;
                entry.backoff_us = entry.backoff_us.saturating_mul(2).min(max);
                entry.next_us = now_us.saturating_add(entry.backoff_us);
                due.push(*key);
            }
        }
        due.into_iter()
            .map(|key| (key, &self.entries[&key].item))
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
            max_resend_us: 400,
        }
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
            out.ack(&key(1)),
            Some(Settlement::Acked {
                attempts: 1 + sent_at.len() as u32
            })
        );
        assert_eq!(out.ack(&key(1)), None);
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
        assert_eq!(out.ack(&key(1)), None, "an expired set is settled once");
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
        out.ack(&key(1));
        out.insert(0, key(4), (), 0, 1000).unwrap();
        assert_eq!(out.len(), 3);
    }
}
