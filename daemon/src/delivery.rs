//! The delivery layer carried out: the node's inbox (destination) and outbox (source of
//! reliable sets), the settlements of its reliable sets, and the timer that sends sets again and
//! gives up on old ones. What to do is decided in `cuberoute_protocol::delivery`; this module
//! holds the state behind locks, tells time and counts.

use crate::env::{self, now_us};
use crate::waiters::{Waiters, Watch};
use cuberoute_protocol::delivery::{
    Acknowledgeable, Inbox, InboxLimits, Outbox, OutboxFull, OutboxLimits, SetKey, Settlement,
    Shape,
};
use cuberoute_protocol::{NodeId, Routes};
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use tokio::sync::Notify;

/// How many settlements a source remembers for `Request::Settled`.
const SETTLEMENTS_KEPT: usize = 65_536;

/// A reliable set as its source sends it again: the same routes and the same pieces.
#[derive(Clone, Debug)]
pub struct Resend {
    pub routes: Routes,
    pub envelopes: Vec<Vec<u8>>,
    pub trace: bool,
    /// Sealed end to end (and so acknowledged only by a sealed acknowledgement).
    pub sealed: bool,
    /// Its pieces' shape, which the acknowledgement names.
    pub shape: Shape,
}

impl Acknowledgeable for Resend {
    fn destination(&self) -> Option<NodeId> {
        self.routes.destinations().first().copied()
    }

    fn shape(&self) -> Shape {
        self.shape
    }

    fn sealed(&self) -> bool {
        self.sealed
    }
}

/// A node's delivery state.
pub struct DeliveryEnds {
    /// Sets that come sealed, and sets that come clear: a clear piece never meets a sealed set.
    sealed_inbox: Mutex<Inbox>,
    clear_inbox: Mutex<Inbox>,
    outbox: Mutex<Outbox<Resend>>,
    settled: Mutex<Settled>,
    /// `Request::Settled` waiters, each woken by its own set's settlement.
    settlement_waiters: Waiters<SetKey>,
    /// Wakes the timer when its next deadline may have moved earlier.
    wake: Notify,
    pub counters: DeliveryCounters,
}

/// What the delivery layer did, beyond the packet counters.
#[derive(Default, Debug)]
pub struct DeliveryCounters {
    /// Sets this node sent in a delivery mode (not plain).
    pub sets_sent: AtomicU64,
    /// Reliable sets sent again.
    pub resends: AtomicU64,
    pub acks_sent: AtomicU64,
    pub acks_received: AtomicU64,
    /// Reliable sets acknowledged, and given up at their deadline.
    pub sets_acked: AtomicU64,
    pub sets_expired: AtomicU64,
    /// Reliable sends refused because the outbox was full.
    pub outbox_refusals: AtomicU64,
    /// Sets whole at this destination and handed to the output.
    pub sets_delivered: AtomicU64,
    /// Pieces or resends of a set already delivered.
    pub duplicate_sets: AtomicU64,
}

impl DeliveryCounters {
    /// Every counter with its name, as `Counters::events` and the metrics show them.
    pub fn named(&self) -> [(&'static str, u64); 9] {
        let get = |c: &AtomicU64| c.load(Relaxed);
        [
            ("delivery_sets_sent", get(&self.sets_sent)),
            ("delivery_resends", get(&self.resends)),
            ("delivery_acks_sent", get(&self.acks_sent)),
            ("delivery_acks_received", get(&self.acks_received)),
            ("delivery_sets_acked", get(&self.sets_acked)),
            ("delivery_sets_expired", get(&self.sets_expired)),
            ("delivery_outbox_refusals", get(&self.outbox_refusals)),
            ("delivery_sets_delivered", get(&self.sets_delivered)),
            ("delivery_duplicate_sets", get(&self.duplicate_sets)),
        ]
    }
}

#[derive(Default)]
struct Settled {
    by_key: HashMap<SetKey, Settlement>,
    order: VecDeque<SetKey>,
}

impl Default for DeliveryEnds {
    fn default() -> DeliveryEnds {
        DeliveryEnds::new(InboxLimits::default(), OutboxLimits::default())
    }
}

impl DeliveryEnds {
    pub fn new(inbox: InboxLimits, outbox: OutboxLimits) -> DeliveryEnds {
        DeliveryEnds {
            sealed_inbox: Mutex::new(Inbox::new(inbox)),
            clear_inbox: Mutex::new(Inbox::new(inbox)),
            outbox: Mutex::new(Outbox::new(outbox)),
            settled: Mutex::new(Settled::default()),
            settlement_waiters: Waiters::default(),
            wake: Notify::new(),
            counters: DeliveryCounters::default(),
        }
    }

    /// Keep a reliable set until `deadline_us`; refused when the outbox is full.
    pub fn keep(&self, key: SetKey, resend: Resend, deadline_us: u64) -> Result<(), OutboxFull> {
        let bytes = resend.envelopes.iter().map(Vec::len).sum();
        let kept = self.outbox.lock().expect("outbox lock").insert(
            now_us(),
            key,
            resend,
            bytes,
            deadline_us,
        );
        match kept {
            Ok(()) => self.wake.notify_one(),
            Err(_) => {
                self.counters.outbox_refusals.fetch_add(1, Relaxed);
            }
        }
        kept
    }

    /// The inbox of sealed sets, or of clear ones.
    pub fn inbox(&self, sealed: bool) -> &Mutex<Inbox> {
        if sealed {
            &self.sealed_inbox
        } else {
            &self.clear_inbox
        }
    }

    /// An acknowledgement of `key` came from `from`, sealed or not: settle the set if it is
    /// kept, `from` is its destination, and the acknowledgement came sealed if the set went
    /// sealed. False otherwise (a duplicate acknowledgement, one after the deadline, or one a
    /// relay made up).
    pub fn acknowledged(&self, key: &SetKey, shape: Shape, from: NodeId, sealed: bool) -> bool {
        self.counters.acks_received.fetch_add(1, Relaxed);
        let settlement = self.outbox.lock().expect("outbox lock").acknowledged(
            now_us(),
            key,
            shape,
            from,
            sealed,
        );
        match settlement {
            Some(s) => {
                self.counters.sets_acked.fetch_add(1, Relaxed);
                self.settle(*key, s);
                true
            }
            None => false,
        }
    }

    fn settle(&self, key: SetKey, settlement: Settlement) {
        let mut settled = self.settled.lock().expect("settled lock");
        if settled.by_key.insert(key, settlement).is_none() {
            settled.order.push_back(key);
        }
        while settled.order.len() > SETTLEMENTS_KEPT {
            let old = settled.order.pop_front().expect("longer than the limit");
            settled.by_key.remove(&old);
        }
        drop(settled);
        self.settlement_waiters.wake(&key);
    }

    /// How the reliable set `key` ended, if it has.
    pub fn settlement(&self, key: &SetKey) -> Option<Settlement> {
        self.settled
            .lock()
            .expect("settled lock")
            .by_key
            .get(key)
            .copied()
    }

    /// Wake-ups when the reliable set `key` settles, and at no other settlement.
    pub fn watch_settlement(&self, key: SetKey) -> Watch<'_, SetKey> {
        self.settlement_waiters.watch(key)
    }

    /// Unacknowledged reliable sets kept, and their bytes.
    pub fn outbox_load(&self) -> (usize, usize) {
        let outbox = self.outbox.lock().expect("outbox lock");
        (outbox.len(), outbox.bytes())
    }

    /// Sets waiting for pieces here, and their bytes.
    pub fn inbox_load(&self) -> (usize, usize) {
        let sealed = self.sealed_inbox.lock().expect("inbox lock");
        let clear = self.clear_inbox.lock().expect("inbox lock");
        (
            sealed.pending() + clear.pending(),
            sealed.bytes() + clear.bytes(),
        )
    }

    /// One round of the timer at `now`: the sets to send again (cloned out of the lock), and
    /// the sets given up (at the source: expired; at the destination: expired or evicted).
    pub fn tick(&self, now: u64) -> Tick {
        let mut outbox = self.outbox.lock().expect("outbox lock");
        let resends: Vec<(SetKey, u32, Resend)> = outbox
            .poll(now)
            .into_iter()
            .map(|(key, attempt, resend)| (key, attempt, resend.clone()))
            .collect();
        let expired = outbox.settlement(now);
        let next_outbox = outbox.next_wakeup();
        drop(outbox);
        for &(key, settlement) in &expired {
            self.counters.sets_expired.fetch_add(1, Relaxed);
            self.settle(key, settlement);
        }
        self.counters
            .resends
            .fetch_add(resends.len() as u64, Relaxed);
        let mut given_up = Vec::new();
        let mut next_us = next_outbox;
        for inbox in [&self.sealed_inbox, &self.clear_inbox] {
            let mut inbox = inbox.lock().expect("inbox lock");
            given_up.extend(inbox.expire(now));
            next_us = [next_us, inbox.next_wakeup()].into_iter().flatten().min();
        }
        Tick {
            resends,
            expired: expired.into_iter().map(|(key, _)| key).collect(),
            given_up,
            next_us,
        }
    }

    /// Wait until `next_us` (wall clock, µs) or until woken.
    pub async fn sleep(&self, next_us: Option<u64>) {
        env::sleep_until_or(&self.wake, next_us).await;
    }

    /// Wake the timer: a set may be waiting in the inbox with an earlier deadline.
    pub fn wake(&self) {
        self.wake.notify_one();
    }
}

/// What one timer round found to do.
pub struct Tick {
    /// Each set due again, with the number of this attempt.
    pub resends: Vec<(SetKey, u32, Resend)>,
    /// Reliable sets of this node's that expired at their deadline (settled).
    pub expired: Vec<SetKey>,
    pub given_up: Vec<(SetKey, cuberoute_protocol::delivery::Failure)>,
    pub next_us: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuberoute_protocol::{NodeId, SendRequest, Topology};

    fn resend() -> Resend {
        let topology: Topology = "q:3".parse().unwrap();
        Resend {
            routes: SendRequest::to(NodeId(7))
                .routes(topology, NodeId(0))
                .unwrap(),
            envelopes: vec![vec![1; 10]; 3],
            trace: false,
            sealed: true,
            shape: shape(),
        }
    }

    fn shape() -> Shape {
        Shape {
            mode: "reliable".parse().unwrap(),
            k: 3,
            len: 10,
        }
    }

    fn key(seq: u64) -> SetKey {
        SetKey {
            src: NodeId(0),
            seq,
            sent_at_us: 5,
        }
    }

    #[test]
    fn a_kept_set_is_resent_then_settled_once() {
        let ends = DeliveryEnds::new(
            InboxLimits::default(),
            OutboxLimits {
                first_resend_us: 1000,
                min_resend_us: 1000,
                ..OutboxLimits::default()
            },
        );
        let now = now_us();
        ends.keep(key(1), resend(), now + 60_000_000).unwrap();
        ends.keep(key(2), resend(), now).unwrap();
        assert_eq!(ends.outbox_load(), (2, 60));
        // `keep` reads the clock itself: on a loaded machine more than the first resend's
        // 1 ms may pass before it does, so the tick is timed from after both were kept.
        let kept = now_us();
        let tick = ends.tick(kept + 2000);
        assert_eq!(tick.resends.len(), 1);
        assert_eq!(
            ends.settlement(&key(2)),
            Some(Settlement::Expired { attempts: 1 })
        );
        assert!(
            !ends.acknowledged(&key(1), shape(), NodeId(3), true),
            "not from the destination"
        );
        assert!(
            !ends.acknowledged(&key(1), shape(), NodeId(7), false),
            "a clear acknowledgement of a sealed set"
        );
        let other = Shape {
            mode: "reliable+byzantine:1".parse().unwrap(),
            ..shape()
        };
        assert!(
            !ends.acknowledged(&key(1), other, NodeId(7), true),
            "the acknowledgement of a set in another shape"
        );
        assert!(ends.acknowledged(&key(1), shape(), NodeId(7), true));
        assert!(
            !ends.acknowledged(&key(1), shape(), NodeId(7), true),
            "a second ack settles nothing"
        );
        assert_eq!(
            ends.settlement(&key(1)),
            Some(Settlement::Acked { attempts: 2 })
        );
        assert_eq!(ends.outbox_load(), (0, 0));
        assert_eq!(ends.counters.acks_received.load(Relaxed), 5);
        assert_eq!(ends.counters.sets_expired.load(Relaxed), 1);
    }

    #[test]
    fn a_full_outbox_refuses_and_counts() {
        let ends = DeliveryEnds::new(
            InboxLimits::default(),
            OutboxLimits {
                max_sets: 1,
                ..OutboxLimits::default()
            },
        );
        ends.keep(key(1), resend(), u64::MAX).unwrap();
        assert!(ends.keep(key(2), resend(), u64::MAX).is_err());
        assert_eq!(ends.counters.outbox_refusals.load(Relaxed), 1);
    }
}
