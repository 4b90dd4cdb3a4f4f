//! Counters: the one record of what a daemon did. The control API reports them
//! ([`Stats::counters`]) and [`crate::telemetry`] copies them into Prometheus metrics.
//!
//! Every packet the daemon accepted ends in exactly one of: forwarded, delivered, or dropped
//! with a [`Drop`] reason. Nothing is lost silently.

use crate::env;
use crate::journal::Journal;
use cuberoute_protocol::delivery::Failure as DeliveryFailure;
use cuberoute_protocol::seal::session::OpenError;
use cuberoute_protocol::wire::control::Happening;
use cuberoute_protocol::wire::control::{Counters, KeyAgreements};
use cuberoute_protocol::{DropReason, NodeId};
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Why the daemon discarded a packet.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum Drop {
    /// The front door's `hop` refused the packet's route (either routing mode).
    Route(DropReason),
    /// The bytes of a data frame are not a packet.
    Malformed,
    /// At the destination, the end-to-end checksum failed: never handed to a client.
    Checksum,
    /// At the destination, a copy that was already delivered (a resend after a crash).
    Duplicate,
    /// The message buffer of the next link was full.
    LinkBufferFull,
    /// A resent piece of a reliable set whose next link is down: the set's earlier attempt
    /// waits behind that link already (or was dropped there), and a resend is for a way
    /// through now.
    ResendLinkDown,
    /// The link and input buffers held all the bytes `buffers.memory_mib` gives them.
    MemoryBound,
    /// The packet, grown on the way (its trace), no longer fits a link frame.
    FrameTooLarge,
    /// The protocol chose a next hop that is not a neighbour (never expected; counted anyway).
    NoLink,
    /// Still queued when the daemon stopped and the drain time ran out.
    Shutdown,
    /// The output buffer was full of entries no client has read that may not be overwritten.
    OutputFull,
    /// An enveloped message whose payload is not an envelope.
    EnvelopeMalformed,
    /// An acknowledgement for a set this node did not send, or not from the set's destination
    /// in the way the set was sent (a clear acknowledgement of a sealed set).
    AckMisdirected,
    /// End-to-end sealing refused the message: no key for a node, a seal that does not open,
    /// a node sealing in another's name, a replay, no session, a handshake over its limits.
    Seal(OpenError),
    /// A packet of a set that waited for a session with its destination, whose handshake was
    /// given up (no answer after every attempt).
    HandshakeFailed,
    /// A packet of a set that would have waited for a session with its destination, beyond
    /// what may wait for one destination.
    SealWaitFull,
    /// The message's source (or the next hop) was taken out of the cluster.
    Revoked,
    /// The delivery layer gave up a piece or a whole set (misshapen, unrecoverable, expired,
    /// evicted).
    Delivery(DeliveryFailure),
    /// A reliable set whole here that the store refused: its entries are at `store.max_mib`.
    /// Not acknowledged: its source sends it again.
    StoreFull,
    /// A reliable set whole here that the store could not write (the disk failed). Not
    /// acknowledged: its source sends it again.
    StoreFailed,
}

impl Drop {
    pub fn as_str(self) -> &'static str {
        match self {
            Drop::Route(reason) => reason.as_str(),
            Drop::Malformed => "packet_malformed",
            Drop::Checksum => "checksum_failed",
            Drop::Duplicate => "duplicate",
            Drop::LinkBufferFull => "link_buffer_full",
            Drop::ResendLinkDown => "resend_link_down",
            Drop::MemoryBound => "memory_bound",
            Drop::FrameTooLarge => "frame_too_large",
            Drop::NoLink => "no_link",
            Drop::Shutdown => "shutdown",
            Drop::OutputFull => "output_full",
            Drop::EnvelopeMalformed => "envelope_malformed",
            Drop::AckMisdirected => "ack_misdirected",
            Drop::Seal(why) => why.as_str(),
            Drop::HandshakeFailed => "seal_handshake_failed",
            Drop::SealWaitFull => "seal_wait_full",
            Drop::Revoked => "revoked",
            Drop::Delivery(failure) => failure.as_str(),
            Drop::StoreFull => "store_full",
            Drop::StoreFailed => "store_failed",
        }
    }
}

/// Things worth counting that are not packet drops.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum Event {
    LinkUp,
    LinkLost,
    /// Liveness heard nothing from a neighbour for an interval (`crate::liveness`)...
    LinkSuspected,
    /// ...and then heard from it: alive after all.
    LinkFoundAlive,
    /// A neighbour liveness took for dead linked again as the same process: it was alive.
    LinkDownFoundAlive,
    /// A link the silence watch would have taken for dead, kept: its neighbour's process ran
    /// on this machine during the silence (`crate::link`).
    LinkSilenceHeld,
    /// A probe sent on a link: an IMMEDIATE_ACK its neighbour's QUIC answers at once (the
    /// liveness detector's, and the silence watch's). Counted apart ([`Stats::probe_sent`]):
    /// the denominator of false downs.
    LinkProbeSent,
    DialFailed,
    /// A peer whose handshake failed: no certificate, or one not signed by the cluster CA.
    PeerRefusedTls,
    /// A peer whose certificate names no node, or a client, on the link endpoint.
    PeerRefusedNotANode,
    /// An authenticated node that is not a neighbour.
    PeerRefusedNotNeighbour,
    /// A neighbour that this node dials dialled it: a knock (it has no connection with us).
    KnockReceived,
    /// This node knocked on a neighbour that should dial it but has not.
    KnockSent,
    /// A knock put off: handshakes were in flight on the link endpoint this node's process's
    /// nodes share, the dialler's perhaps among them.
    KnockDeferred,
    /// A link the chaos tooling has cut.
    PeerRefusedCut,
    /// A neighbour taken out of the cluster (`cluster revoke`).
    PeerRefusedRevoked,
    /// A node taken out of the cluster, as a revocation list said.
    NodeRevoked,
    /// A newer revocation list a neighbour handed over, taken.
    RevocationLearned,
    /// The revocation list in force handed to a neighbour known to hold an older one.
    RevocationHanded,
    /// A revocation list refused for what it says: older than the one in force, another list
    /// with its serial, or one that leaves a revoked node out (pushed or handed over).
    RevocationRefused,
    /// A revocation list refused for what it is: malformed, or not signed by the cluster CA.
    RevocationInvalid,
    /// A hello that names another node or topology than the certificate and configuration.
    HelloMismatch,
    /// A frame on a link that does not decode.
    FrameMalformed,
    /// A peer disconnected for sending too many malformed frames.
    PeerDisconnectedGarbage,
    /// A control connection whose certificate is not a client's.
    ClientRefused,
    /// A control request that does not decode.
    RequestMalformed,
    /// A control request refused because `buffers.requests` were already in progress.
    RequestRefusedBusy,
    /// A control request beyond the role of the client certificate that made it
    /// ([`crate::roles`]), or beyond the node's own certificate (its status only).
    RequestRefusedRole,
    /// A send refused because the link and input buffers were at their memory bound.
    SendRefusedMemoryBound,
    /// The output buffer was full and its oldest entry was overwritten...
    OutputOverwritten,
    /// ...before any client had read it: a copy lost between the network and the client.
    OutputOverwrittenUnread,
    /// Faults injected by the chaos tooling.
    ChaosCorruptState,
    ChaosCorruptBuffers,
    ChaosCut,
    ChaosHeal,
    ChaosCapture,
    ChaosForge,
    ChaosShape,
    ChaosUnshape,
    /// Unsettled reliable sets of this node found in its store at start, sent again.
    StoreResumed,
    /// Sealing's handshakes: an Init sent (a first attempt, or one sent again), a Resp sent
    /// (an Init answered), a session made by an answer that opened here.
    HandshakeInitSent,
    HandshakeInitResent,
    HandshakeAnswered,
    SessionEstablished,
    /// A batch of writes the store could not write (counted by `crate::keeping`).
    StoreWriteFailed,
}

impl Event {
    pub fn as_str(self) -> &'static str {
        match self {
            Event::LinkUp => "link_up",
            Event::LinkLost => "link_lost",
            Event::LinkSuspected => "link_suspected",
            Event::LinkFoundAlive => "link_found_alive",
            Event::LinkDownFoundAlive => "link_down_found_alive",
            Event::LinkSilenceHeld => "link_silence_held",
            Event::LinkProbeSent => "link_probe_sent",
            Event::DialFailed => "dial_failed",
            Event::PeerRefusedTls => "peer_refused_tls",
            Event::PeerRefusedNotANode => "peer_refused_not_a_node",
            Event::PeerRefusedNotNeighbour => "peer_refused_not_neighbour",
            Event::KnockReceived => "knock_received",
            Event::KnockSent => "knock_sent",
            Event::KnockDeferred => "knock_deferred",
            Event::PeerRefusedCut => "peer_refused_cut",
            Event::PeerRefusedRevoked => "peer_refused_revoked",
            Event::NodeRevoked => "node_revoked",
            Event::RevocationLearned => "revocation_learned",
            Event::RevocationHanded => "revocation_handed",
            Event::RevocationRefused => "revocation_refused",
            Event::RevocationInvalid => "revocation_invalid",
            Event::HelloMismatch => "hello_mismatch",
            Event::FrameMalformed => "frame_malformed",
            Event::PeerDisconnectedGarbage => "peer_disconnected_garbage",
            Event::ClientRefused => "client_refused",
            Event::RequestMalformed => "request_malformed",
            Event::RequestRefusedBusy => "request_refused_busy",
            Event::RequestRefusedRole => "request_refused_role",
            Event::SendRefusedMemoryBound => "send_refused_memory_bound",
            Event::OutputOverwritten => "output_overwritten",
            Event::OutputOverwrittenUnread => "output_overwritten_unread",
            Event::ChaosCorruptState => "chaos_corrupt_state",
            Event::ChaosCorruptBuffers => "chaos_corrupt_buffers",
            Event::ChaosCut => "chaos_cut",
            Event::ChaosHeal => "chaos_heal",
            Event::ChaosCapture => "chaos_capture",
            Event::ChaosForge => "chaos_forge",
            Event::ChaosShape => "chaos_shape",
            Event::ChaosUnshape => "chaos_unshape",
            Event::StoreResumed => "store_resumed",
            Event::HandshakeInitSent => "handshake_init_sent",
            Event::HandshakeInitResent => "handshake_init_resent",
            Event::HandshakeAnswered => "handshake_answered",
            Event::SessionEstablished => "session_established",
            Event::StoreWriteFailed => "store_write_failed",
        }
    }
}

#[derive(Default, Debug)]
pub struct Stats {
    pub sets_accepted: AtomicU64,
    pub packets_sent: AtomicU64,
    pub packets_forwarded: AtomicU64,
    pub packets_delivered: AtomicU64,
    drops: Mutex<BTreeMap<Drop, u64>>,
    events: Mutex<BTreeMap<Event, u64>>,
    /// Something happened that may change a counter or a gauge: wakes the metrics publisher,
    /// which otherwise sleeps (an idle daemon costs no wake-ups).
    activity: tokio::sync::Notify,
    /// The same, for the task that gives memory back after a burst (`crate::quiet`), and how
    /// many times activity was noted.
    burst: tokio::sync::Notify,
    touches: AtomicU64,
    key_agreements: [AtomicU64; 2],
    key_agreement_cpu_ns: AtomicU64,
    /// Probes sent on links: counted without a wake-up of the metrics publisher, so that an
    /// idle node's probes cost nothing more; published with the node's other counters.
    probes_sent: AtomicU64,
    /// Every drop and event counted here is noted there too, with what else is worth
    /// following (deliveries, faults, reloads).
    pub journal: Journal,
}

impl Stats {
    pub fn drop(&self, reason: Drop) {
        self.drop_many(reason, 1);
    }

    pub fn drop_many(&self, reason: Drop, n: u64) {
        if n > 0 {
            self.touch();
            *self
                .drops
                .lock()
                .expect("stats lock")
                .entry(reason)
                .or_default() += n;
            self.journal.note(Happening::Dropped {
                reason: reason.as_str().to_string(),
                count: n,
            });
        }
    }

    pub fn event(&self, event: Event) {
        self.count_event(event);
        self.journal.note(Happening::Event {
            name: event.as_str().to_string(),
            neighbour: None,
        });
    }

    /// An event that concerns one neighbour: a link that went up or down is noted as such.
    pub fn event_about(&self, event: Event, neighbour: NodeId) {
        self.count_event(event);
        self.journal.note(match event {
            Event::LinkUp => Happening::LinkUp { neighbour },
            Event::LinkLost => Happening::LinkDown {
                neighbour,
                why: String::new(),
            },
            _ => Happening::Event {
                name: event.as_str().to_string(),
                neighbour: Some(neighbour),
            },
        });
    }

    /// The link to `neighbour` went down, and why: counted as `link_lost`, noted as a link down.
    pub fn link_down(&self, neighbour: NodeId, why: String) {
        self.count_event(Event::LinkLost);
        self.journal.note(Happening::LinkDown { neighbour, why });
    }

    /// A fault the chaos tooling injected: counted under `event`, noted as `done` says.
    pub fn fault(&self, event: Event, done: &str) {
        self.count_event(event);
        self.journal.note(Happening::Fault {
            fault: done.to_string(),
        });
    }

    /// Count `event` without noting it (its caller notes what happened).
    pub fn count_event(&self, event: Event) {
        self.touch();
        *self
            .events
            .lock()
            .expect("stats lock")
            .entry(event)
            .or_default() += 1;
    }

    /// A link sent a probe ([`Event::LinkProbeSent`]): counted, nothing woken, nothing noted.
    pub fn probe_sent(&self) {
        self.probes_sent.fetch_add(1, Relaxed);
    }

    /// Note activity (a set, a frame, a request) for the metrics publisher.
    pub fn touch(&self) {
        self.activity.notify_one();
        self.burst.notify_one();
        self.touches.fetch_add(1, Relaxed);
    }

    /// Wait for activity noted since the last wait.
    pub async fn activity(&self) {
        self.activity.notified().await
    }

    /// Wait for activity noted since the last wait, for `crate::quiet` (its own waiter: the
    /// metrics publisher keeps its own wake-ups).
    pub async fn burst(&self) {
        self.burst.notified().await
    }

    /// How many times activity was noted so far.
    pub fn touches(&self) -> u64 {
        self.touches.load(Relaxed)
    }

    pub fn count(counter: &AtomicU64) {
        counter.fetch_add(1, Relaxed);
    }

    /// Run `work` on `end` (the sessions) and count the key agreements it ran, as `end`'s own
    /// `count` of them moved (sender setups, receiver setups), with the CPU time they took.
    /// `may`: whether one may run; only then is the thread's CPU time read (a system call).
    pub fn key_agreements_around<E, T>(
        &self,
        end: &mut E,
        may: bool,
        count: impl Fn(&E) -> [u64; 2],
        work: impl FnOnce(&mut E) -> T,
    ) -> T {
        let (before, started) = (count(end), Self::cpu_if(may));
        let done = work(end);
        let after = count(end);
        self.key_agreements_ran([after[0] - before[0], after[1] - before[1]], started);
        done
    }

    /// Count `ran` key agreements (sender setups, receiver setups), with the thread's CPU time
    /// since `started` (if read).
    fn key_agreements_ran(&self, ran: [u64; 2], started: Option<u64>) {
        if ran == [0, 0] {
            return;
        }
        for (side, n) in ran.into_iter().enumerate() {
            self.key_agreements[side].fetch_add(n, Relaxed);
        }
        if let Some(started) = started {
            let took = env::thread_cpu_ns().saturating_sub(started);
            self.key_agreement_cpu_ns.fetch_add(took, Relaxed);
        }
    }

    /// The thread's CPU time now if `may` (a key agreement may follow).
    fn cpu_if(may: bool) -> Option<u64> {
        may.then(env::thread_cpu_ns)
    }

    pub fn key_agreements(&self) -> KeyAgreements {
        KeyAgreements {
            to_seal: self.key_agreements[0].load(Relaxed),
            to_open: self.key_agreements[1].load(Relaxed),
            cpu_us: self.key_agreement_cpu_ns.load(Relaxed) / 1_000,
        }
    }

    pub fn drops(&self) -> BTreeMap<Drop, u64> {
        self.drops.lock().expect("stats lock").clone()
    }

    pub fn events(&self) -> BTreeMap<Event, u64> {
        let mut events = self.events.lock().expect("stats lock").clone();
        let probes = self.probes_sent.load(Relaxed);
        if probes > 0 {
            events.insert(Event::LinkProbeSent, probes);
        }
        events
    }

    /// A snapshot for the control API.
    pub fn counters(&self) -> Counters {
        Counters {
            sets_accepted: self.sets_accepted.load(Relaxed),
            packets_sent: self.packets_sent.load(Relaxed),
            packets_forwarded: self.packets_forwarded.load(Relaxed),
            packets_delivered: self.packets_delivered.load(Relaxed),
            dropped: self
                .drops()
                .into_iter()
                .map(|(k, v)| (k.as_str().to_string(), v))
                .collect(),
            events: self
                .events()
                .into_iter()
                .map(|(k, v)| (k.as_str().to_string(), v))
                .collect(),
            key_agreements: self.key_agreements(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drop_labels_are_distinct() {
        let mut labels: Vec<&str> = DropReason::ALL
            .iter()
            .map(|r| Drop::Route(*r).as_str())
            .chain(
                [
                    Drop::Malformed,
                    Drop::Checksum,
                    Drop::Duplicate,
                    Drop::LinkBufferFull,
                    Drop::ResendLinkDown,
                    Drop::MemoryBound,
                    Drop::FrameTooLarge,
                    Drop::NoLink,
                    Drop::Shutdown,
                    Drop::OutputFull,
                    Drop::EnvelopeMalformed,
                    Drop::AckMisdirected,
                    Drop::Delivery(DeliveryFailure::Misshapen),
                    Drop::Delivery(DeliveryFailure::Unrecoverable),
                    Drop::Delivery(DeliveryFailure::Expired),
                    Drop::Delivery(DeliveryFailure::Evicted),
                    Drop::Delivery(DeliveryFailure::Stale),
                    Drop::Seal(OpenError::Malformed),
                    Drop::Seal(OpenError::UnknownSealer(NodeId(1))),
                    Drop::Seal(OpenError::Broken),
                    Drop::Seal(OpenError::ForgedSource { sealer: NodeId(1) }),
                    Drop::Seal(OpenError::Replayed),
                    Drop::Seal(OpenError::NoSession),
                    Drop::Seal(OpenError::Future),
                    Drop::Seal(OpenError::Limited),
                    Drop::Seal(OpenError::Unexpected),
                    Drop::Seal(OpenError::Duplicate),
                    Drop::HandshakeFailed,
                    Drop::SealWaitFull,
                    Drop::Revoked,
                    Drop::StoreFull,
                    Drop::StoreFailed,
                ]
                .map(Drop::as_str),
            )
            .collect();
        let n = labels.len();
        labels.sort();
        labels.dedup();
        assert_eq!(labels.len(), n);
    }

    #[test]
    fn counters_snapshot_names_reasons() {
        let stats = Stats::default();
        stats.drop(Drop::Checksum);
        stats.drop_many(Drop::Route(DropReason::OverBudget), 3);
        stats.event(Event::LinkUp);
        Stats::count(&stats.packets_forwarded);
        let c = stats.counters();
        assert_eq!(c.dropped["checksum_failed"], 1);
        assert_eq!(c.dropped["over_budget"], 3);
        assert_eq!(c.dropped_total(), 4);
        assert_eq!(c.events["link_up"], 1);
        assert_eq!(c.packets_forwarded, 1);
    }

    #[test]
    fn probes_are_counted_as_an_event_without_a_wake_up() {
        let stats = Stats::default();
        assert!(!stats.counters().events.contains_key("link_probe_sent"));
        let touched = stats.touches();
        for _ in 0..3 {
            stats.probe_sent();
        }
        assert_eq!(stats.touches(), touched, "a probe wakes nothing");
        assert_eq!(stats.counters().events["link_probe_sent"], 3);
        assert_eq!(stats.events()[&Event::LinkProbeSent], 3);
    }

    #[test]
    fn key_agreements_are_counted_with_their_cpu_only_when_they_ran() {
        let stats = Stats::default();
        let busy = || {
            std::hint::black_box(
                (0..2_000_000u64).fold(0u64, |a, i| a.wrapping_mul(31).wrapping_add(i)),
            );
        };
        // One may have run, and none did.
        let started = Stats::cpu_if(true);
        busy();
        stats.key_agreements_ran([0, 0], started);
        assert_eq!(stats.key_agreements(), KeyAgreements::default());
        assert_eq!(Stats::cpu_if(false), None);
        for ran in [[1, 0], [0, 1]] {
            let started = Stats::cpu_if(true);
            busy();
            stats.key_agreements_ran(ran, started);
        }
        let k = stats.counters().key_agreements;
        assert_eq!((k.to_seal, k.to_open), (1, 1));
        assert!(k.cpu_us > 0, "two million steps take some CPU: {k:?}");
    }
}
