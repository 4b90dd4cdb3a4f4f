//! The node's end-to-end sealing: its sessions (the protocol's
//! [`Sessions`](cuberoute_protocol::seal::session::Sessions), every decision of which lives
//! there), the sets that wait for a session to be made, and the timer that erases keys and sends
//! handshakes again.
//!
//! A set to seal for a destination with no session waits here while a handshake runs (one
//! round trip); once the answer opens, the sets go on in the order they came. A handshake given
//! up drops what waited for it, counted per packet (`seal_handshake_failed`); so does a set
//! beyond what may wait for one destination (`seal_wait_full`). Every key agreement is counted
//! with the CPU it took (`Stats::key_agreements_around`).
//!
//! The sets sealed in the last [`RECENT_FOR_US`] are kept too (at most [`RECENT_SETS`] and
//! [`RECENT_BYTES`]): a destination that restarted cannot open what was sealed to it under the
//! sessions it lost, and when its recovery handshake asks for what was sealed since its start
//! (`Opened::Answer`'s `lost_since_us`), they go again under the new session.

use crate::env::{self, now_us};
use crate::keys::Keys;
use crate::stats::Stats;
use cuberoute_protocol::NodeId;
use cuberoute_protocol::seal::sealed::{Bound, SealError, Sealed};
use cuberoute_protocol::seal::session::{
    OpenError, Opened, Outgoing, SessionCounters, SessionLimits, Sessions, Tick,
};
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use tokio::sync::Notify;

/// Sets that may wait for one destination's session.
pub const WAIT_PER_PEER: usize = 1024;

/// How long a sealed set is kept to be sent again to a destination that restarted: well over a
/// round trip, so that the recovery handshake its first unopened copy starts finds it.
pub const RECENT_FOR_US: u64 = 2_000_000;
/// At most so many sets, and their payloads' bytes, are kept for that (the oldest go first).
pub const RECENT_SETS: usize = 16_384;
pub const RECENT_BYTES: usize = 8 << 20;

/// A set sealed lately: when, to whom, its payload's bytes, itself.
struct Recent<J> {
    at_us: u64,
    to: Vec<NodeId>,
    bytes: usize,
    job: J,
}

/// The round trip a handshake is expected to take, as the node's links see it (µs; 0: none).
pub type RoundTrip = Box<dyn Fn() -> u64 + Send + Sync>;

/// The sessions of a node, and the jobs `J` waiting for one.
pub struct Sealing<J> {
    sessions: Mutex<Sessions>,
    /// Read before each handshake decision ([`Sessions::set_round_trip_hint`]).
    round_trip: RoundTrip,
    waiting: Mutex<HashMap<NodeId, VecDeque<J>>>,
    /// The sets sealed lately, oldest first, and their bytes.
    recent: Mutex<(VecDeque<Recent<J>>, usize)>,
    /// Woken when a handshake starts: the timer may have to wake earlier.
    wake: Notify,
    /// Woken when a session is made: the list of peers kept in the store may be out of date...
    made: Notify,
    /// ...and set until it is written again.
    peers_dirty: AtomicBool,
    /// Peers of before a restart not yet sent a recovery handshake.
    to_recover: AtomicUsize,
    /// Sets handed back by [`Sealing::lost_since`].
    sealed_again: AtomicU64,
}

/// Key agreements so far, per side: sender setups, receiver setups.
fn agreements(s: &Sessions) -> [u64; 2] {
    let SessionCounters {
        agreements_sealing,
        agreements_opening,
        ..
    } = s.counters();
    [agreements_sealing, agreements_opening]
}

impl<J> Sealing<J> {
    pub fn new(
        keys: &Keys,
        me: NodeId,
        started_us: u64,
        limits: SessionLimits,
        round_trip: RoundTrip,
    ) -> Sealing<J> {
        Sealing {
            sessions: Mutex::new(Sessions::new(me, keys.secret.clone(), started_us, limits)),
            round_trip,
            waiting: Mutex::new(HashMap::new()),
            recent: Mutex::new((VecDeque::new(), 0)),
            wake: Notify::new(),
            made: Notify::new(),
            peers_dirty: AtomicBool::new(false),
            to_recover: AtomicUsize::new(0),
            sealed_again: AtomicU64::new(0),
        }
    }

    fn sessions(&self) -> std::sync::MutexGuard<'_, Sessions> {
        self.sessions.lock().expect("sessions lock")
    }

    /// The sessions, for a decision that may send an Init: told first what the links say a
    /// round trip takes.
    fn sessions_for_handshakes(&self) -> std::sync::MutexGuard<'_, Sessions> {
        let hint = (self.round_trip)();
        let mut sessions = self.sessions();
        sessions.set_round_trip_hint(hint);
        sessions
    }

    /// Whether a message to `to` can be sealed now.
    pub fn can_seal(&self, to: NodeId) -> bool {
        self.sessions().can_seal(to, now_us())
    }

    /// Seal `plaintext` for `bound.dst`; if its session is old enough, the Init of its renewal
    /// too.
    pub fn seal(
        &self,
        keys: &Keys,
        stats: &Stats,
        bound: &Bound,
        plaintext: &[u8],
    ) -> Result<(Vec<u8>, Option<Outgoing>), SealError> {
        let now = now_us();
        let sealing = self.sessions().seal(bound, now, plaintext)?;
        let renewal = if sealing.renew {
            self.start(keys, stats, bound.dst)?
        } else {
            None
        };
        Ok((sealing.bytes, renewal))
    }

    /// Start a handshake with `peer` unless one is in flight: the Init to send.
    pub fn start(
        &self,
        keys: &Keys,
        stats: &Stats,
        peer: NodeId,
    ) -> Result<Option<Outgoing>, SealError> {
        let mut sessions = self.sessions_for_handshakes();
        let out = stats.key_agreements_around(&mut *sessions, true, agreements, |s| {
            s.start(keys, peer, now_us(), env::random())
        });
        drop(sessions);
        if matches!(out, Ok(Some(_))) {
            self.wake.notify_one();
        }
        out
    }

    /// A set waiting for a session with `peer` was sent again by the delivery layer: another
    /// Init of the handshake in flight, if it is time for one.
    pub fn hurry(&self, keys: &Keys, stats: &Stats, peer: NodeId) -> Option<Outgoing> {
        let mut sessions = self.sessions_for_handshakes();
        let out = stats.key_agreements_around(&mut *sessions, true, agreements, |s| {
            s.hurry(keys, peer, now_us(), env::random())
        });
        drop(sessions);
        out.ok().flatten()
    }

    /// A path may have come back (a link up here, or a neighbour's report of one): the Inits
    /// of the handshakes waiting out a long backoff, to send now ([`Sessions::path_back`]).
    pub fn path_back(&self, keys: &Keys, stats: &Stats) -> Vec<Outgoing> {
        let mut sessions = self.sessions_for_handshakes();
        let may = sessions.handshakes_in_flight() > 0;
        let out = stats.key_agreements_around(&mut *sessions, may, agreements, |s| {
            s.path_back(keys, now_us(), env::random)
        });
        drop(sessions);
        if !out.is_empty() {
            self.wake.notify_one();
        }
        out
    }

    /// `sealer` sealed under a session this node does not hold: the Init that moves it to a
    /// new one, if this is the time for one.
    pub fn recover(&self, keys: &Keys, stats: &Stats, sealer: NodeId) -> Option<Outgoing> {
        let mut sessions = self.sessions_for_handshakes();
        let out = stats.key_agreements_around(&mut *sessions, true, agreements, |s| {
            s.recover(keys, sealer, now_us(), env::random())
        });
        drop(sessions);
        let out = out.ok().flatten();
        if out.is_some() {
            self.wake.notify_one();
        }
        out
    }

    /// Open a sealed payload; what a handshake message gave, or the plaintext.
    pub fn open(
        &self,
        keys: &Keys,
        stats: &Stats,
        bound: &Bound,
        payload: &[u8],
    ) -> Result<Opened, OpenError> {
        let may = Sealed::is_handshake(payload);
        let mut sessions = self.sessions();
        let opened = stats.key_agreements_around(&mut *sessions, may, agreements, |s| {
            s.open(keys, bound, now_us(), payload, env::random)
        });
        drop(sessions);
        if matches!(opened, Ok(Opened::Answer { .. } | Opened::Established(_))) {
            // A new session: the timer erases it in time.
            self.wake.notify_one();
            self.peers_dirty.store(true, Relaxed);
            self.made.notify_one();
        }
        opened
    }

    /// Keep `job` until a session with `peer` is ready; given back if too many wait already.
    pub fn wait(&self, peer: NodeId, job: J) -> Result<(), J> {
        let mut waiting = self.waiting.lock().expect("waiting lock");
        let queue = waiting.entry(peer).or_default();
        if queue.len() >= WAIT_PER_PEER {
            return Err(job);
        }
        queue.push_back(job);
        Ok(())
    }

    /// The jobs that waited for a session with `peer`, in the order they came.
    pub fn ready(&self, peer: NodeId) -> VecDeque<J> {
        self.waiting
            .lock()
            .expect("waiting lock")
            .remove(&peer)
            .unwrap_or_default()
    }

    /// `job`, a set of `bytes` just sealed to the destinations `to`, is kept for a while in
    /// case one of them restarted ([`Sealing::lost_since`]).
    pub fn sealed(&self, to: Vec<NodeId>, bytes: usize, job: J) {
        let now = now_us();
        let mut recent = self.recent.lock().expect("recent lock");
        let (sets, held) = &mut *recent;
        sets.push_back(Recent {
            at_us: now,
            to,
            bytes,
            job,
        });
        *held += bytes;
        while let Some(oldest) = sets.front()
            && (now.saturating_sub(oldest.at_us) > RECENT_FOR_US
                || sets.len() > RECENT_SETS
                || *held > RECENT_BYTES)
        {
            *held -= oldest.bytes;
            sets.pop_front();
        }
    }

    /// The sets kept that were sealed to `peer` at or after `since_us` (this node's clock),
    /// oldest first: `peer` restarted then and opened none of them. Taken: they are not kept
    /// any more.
    pub fn lost_since(&self, peer: NodeId, since_us: u64) -> Vec<J> {
        let mut recent = self.recent.lock().expect("recent lock");
        let (sets, held) = &mut *recent;
        let mut lost = Vec::new();
        let mut kept = VecDeque::with_capacity(sets.len());
        for set in sets.drain(..) {
            if set.at_us >= since_us && set.to.contains(&peer) {
                *held -= set.bytes;
                lost.push(set.job);
            } else {
                kept.push_back(set);
            }
        }
        *sets = kept;
        self.sealed_again.fetch_add(lost.len() as u64, Relaxed);
        lost
    }

    /// Sets handed back to be sealed again so far.
    pub fn sealed_again(&self) -> u64 {
        self.sealed_again.load(Relaxed)
    }

    /// Jobs waiting for a session.
    pub fn waiting(&self) -> usize {
        self.waiting
            .lock()
            .expect("waiting lock")
            .values()
            .map(VecDeque::len)
            .sum()
    }

    /// Sessions held, and handshakes in flight (those a restart has still to start included).
    pub fn held(&self) -> (usize, usize) {
        let sessions = self.sessions();
        (
            sessions.len(),
            sessions.handshakes_in_flight() + self.to_recover.load(Relaxed),
        )
    }

    /// `n` peers of before a restart are to be sent a recovery handshake...
    pub fn to_recover(&self, n: usize) {
        self.to_recover.store(n, Relaxed);
    }

    /// ...and one of them was (or needed none).
    pub fn recovered_one(&self) {
        let _ = self
            .to_recover
            .fetch_update(Relaxed, Relaxed, |n| n.checked_sub(1));
    }

    /// The peers a session is held with.
    pub fn peers(&self) -> Vec<NodeId> {
        self.sessions().peers()
    }

    /// The peers a session is held with, if a session was made since they were last taken.
    pub fn peers_if_changed(&self) -> Option<Vec<NodeId>> {
        self.peers_dirty.swap(false, Relaxed).then(|| self.peers())
    }

    /// Until a session is made (an idle node never wakes for it).
    pub async fn session_made(&self) {
        self.made.notified().await;
    }

    pub fn limits(&self) -> SessionLimits {
        *self.sessions().limits()
    }

    pub fn counters(&self) -> SessionCounters {
        self.sessions().counters()
    }

    /// Erase what is due, send again the Inits due: the tick.
    pub fn tick(&self, keys: &Keys, stats: &Stats) -> Tick {
        let mut sessions = self.sessions_for_handshakes();
        let may = sessions.handshakes_in_flight() > 0;
        stats.key_agreements_around(&mut *sessions, may, agreements, |s| {
            s.tick(keys, now_us(), env::random)
        })
    }

    /// Wait until `next_us` (wall clock, µs) or until a handshake starts.
    pub async fn sleep(&self, next_us: Option<u64>) {
        env::sleep_until_or(&self.wake, next_us).await;
    }
}
