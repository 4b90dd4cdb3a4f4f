//! One link to one neighbour: its message buffer, and the QUIC connection that empties it.
//!
//! * Exactly one connection per neighbour pair: the node with the lower id dials, the other
//!   accepts ([`Link::dials`]). A dialler reconnects with exponential backoff and jitter.
//! * On a connection the dialler opens one bidirectional stream, on which each side writes a
//!   [`Hello`]. Data frames then go in batches, one unidirectional stream each, length-delimited
//!   by the codec of `protocol::wire`; the receiver reads the batches in the order they were
//!   opened.
//! * A batch is acknowledged by QUIC's own acknowledgement of all its bytes (its stream's
//!   `stopped()` resolves): no acknowledgement of the link's own crosses the wire. QUIC
//!   acknowledges lazily ([`tls`]), but a lone batch (none written for [`LONE_AFTER`]) asks for
//!   its acknowledgement at once: a frame alone on a quiet link costs two wake-ups, its
//!   receiver's and its sender's, and frames that follow each other closely share
//!   acknowledgements (docs/daemon.md, "Wake-ups"). What QUIC has acknowledged the receiver
//!   reads even if the connection is lost right after: quinn still hands over streams it
//!   received on a closed connection.
//! * The message buffer holds every packet until it is acknowledged, so a packet survives a
//!   lost connection: the next hello says what the neighbour handled, and the rest is sent
//!   again. When the buffer is full, [`Link::enqueue`] refuses and the caller counts the drop.
//! * A peer that sends more than [`MAX_BAD_FRAMES`] malformed frames is disconnected.
//! * Revocation lists spread over the links: each hello gives the serial of the list in force
//!   at its sender, and a side whose list is newer hands it over on the hello stream; a node that
//!   takes a newer list later hands it to every neighbour not known to hold it
//!   ([`Link::revocations_changed`]). Which list goes when is [`Link::revocations_to_hand`]: only
//!   a list newer than any the neighbour is known to hold on this connection, so two nodes with
//!   the same list send none, and each list crosses a connection at most once each way. The
//!   node decides whether to take a list it is handed ([`LinkOwner::on_revocations`]); one that
//!   is malformed or not signed by the CA counts as a malformed frame.
//! * Liveness: the dialler probes every `liveness.interval`, and both ends take the neighbour
//!   for dead after the detection time without a datagram from it ([`crate::liveness`] decides;
//!   [`Link::watch_liveness`] looks when it asks, probes and closes). Besides, a link with
//!   frames written and no acknowledgement for [`SILENT_LINK`] is closed as dead (a live
//!   neighbour's QUIC acknowledges within [`LONE_AFTER`]), whatever the interval.
//! * A restarted neighbour is found at once: the endpoint's stateless-reset key is derived from
//!   the node's key, so the first packet the old connection sends draws a reset from the new
//!   process. The accepting side of a link that stays down [`KNOCK_AFTER`] knocks (dials the
//!   dialler, which refuses the connection, cuts its backoff short and sends on its current
//!   connection, so that a stale one is reset and redialled). A knock from another address
//!   than the current connection's is a neighbour that came back elsewhere (a Swarm task
//!   restarted with a new address, where nothing answers at the old one to reset it): that
//!   connection is closed at once and the next dial goes to the address the knock came from
//!   (authenticated by the knock's handshake, and again by the dial's), not to the name, which
//!   other hosts may still resolve to the old address for a while.

use crate::budget::Budget;
use crate::env::{self, Instant};
use crate::exits::{self, Watch};
use crate::io_counts;
use crate::liveness::{self, Detector, Liveness, Verdict};
use crate::stats::{Event, Stats};
use crate::tls;
use bytes::Bytes;
use cuberoute_protocol::routing::down::Report;
use cuberoute_protocol::wire::control::{LinkStatus, LinkTransport, Redial};
use cuberoute_protocol::wire::link::{ChaosMark, Hello, LinkFrame, Received};
use cuberoute_protocol::wire::{MAX_FRAME_LEN, PREFIX_LEN, decode_body, encode_frame};
use cuberoute_protocol::{NodeId, Topology};
use futures_util::StreamExt;
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Notify, mpsc, watch};
use tokio_util::codec::{FramedRead, LengthDelimitedCodec};
use tracing::{debug, info, warn};

pub mod handoff;
pub mod local;
pub mod shared;

/// Malformed frames tolerated on one connection before the peer is disconnected.
pub const MAX_BAD_FRAMES: u32 = 16;
/// A link whose written frames see no acknowledgement for this long, while nothing at all has
/// come from the neighbour for as long (a probe halfway included), is dead: the neighbour
/// crashed, or the path to it is gone. Well below 3 s, well above a round trip and QUIC's loss
/// recovery on a loaded machine.
pub const SILENT_LINK: Duration = Duration::from_millis(2500);
/// ...or this many of the connection's smoothed round trips, where that is longer. A machine
/// loaded past saturation runs each daemon seldom, and its round trips grow to a second and
/// more: a slow neighbour, which closing the link would only slow down further (every
/// reconnection is a handshake and its buffer written again), not a dead one.
pub const SILENT_ROUND_TRIPS: u32 = 8;
/// A silence watch woken this much after its time was not running itself: it looks again
/// after this long before it judges the neighbour...
pub const LATE_WAKE: Duration = Duration::from_millis(50);
/// ...unless the neighbour has been silent this many limits: a node late at every wake-up
/// still finds a dead neighbour.
pub const SILENT_AT_MOST: u32 = 4;
/// The silence watch probes a silent neighbour this many times (from halfway to its limit, an
/// eighth of it apart); a neighbour on this machine is judged only once as many datagrams
/// left this node since the first (at 5% loss each way, a lone probe and its answer are both
/// lost one time in ten).
pub const SILENCE_PROBES: u32 = 4;
/// The accepting side knocks when its link has been down this long (on an endpoint its
/// process's nodes share, once no handshake is in flight on it: `shared::Handshakes::busy`)...
pub const KNOCK_AFTER: Duration = Duration::from_secs(1);
/// ...and again this often (with jitter) while it stays down.
pub const KNOCK_EVERY: Duration = Duration::from_secs(5);
/// Data frames written in one batch (one stream).
const WRITE_BATCH: usize = 256;
/// Reports of dead and live links per frame on the hello stream.
const REPORTS_PER_FRAME: usize = 1024;
/// Reports waiting for one neighbour at most; more are not queued.
const MAX_PENDING_REPORTS: usize = 8192;
/// The read buffer a batch's stream starts with (frames are mostly far smaller).
const BATCH_READ_BUFFER: usize = 4096;
/// A batch written this long after the link's previous one is lone: it asks its neighbour to
/// acknowledge at once. Otherwise the neighbour acknowledges lazily, after several packets or
/// QUIC's delayed-acknowledgement time (25 ms), whose timer would wake it once more for a
/// lone batch.
pub const LONE_AFTER: Duration = Duration::from_millis(25);
/// How long a new connection may take to open its stream and say hello.
const HELLO_TIMEOUT: Duration = Duration::from_secs(5);
const DIAL_TIMEOUT: Duration = Duration::from_secs(5);
const BACKOFF_MIN: Duration = Duration::from_millis(50);
const BACKOFF_MAX: Duration = Duration::from_secs(2);

/// QUIC application error codes a link closes with.
pub mod close {
    pub const REPLACED: u32 = 1;
    pub const GARBAGE: u32 = 2;
    pub const REFUSED: u32 = 3;
    pub const CUT: u32 = 4;
    pub const SHUTDOWN: u32 = 5;
    /// A knock, answered: this node dials the neighbour.
    pub const KNOCKED: u32 = 6;
    /// The neighbour knocked from another address: this connection went to where it was.
    pub const MOVED: u32 = 7;
    /// Liveness took the neighbour for dead (it hears this only if it was not).
    pub const DEAD: u32 = 8;
}

/// What a link needs of the node it belongs to: who the node is, where to count, and where a
/// neighbour's data frames go.
pub trait LinkOwner: Send + Sync {
    fn id(&self) -> NodeId;
    fn topology(&self) -> Topology;
    /// Random at every start of the process: link sequence numbers are per incarnation.
    fn incarnation(&self) -> u64;
    fn stats(&self) -> &Stats;
    /// The span the node's log lines are in.
    fn span(&self) -> tracing::Span {
        tracing::Span::none()
    }
    /// The bytes of one data frame from neighbour `from`; `mark` is set when the chaos tooling
    /// corrupted the packet on its way here.
    fn on_data(&self, from: NodeId, packet: &[u8], mark: Option<ChaosMark>);
    /// The serial of the revocation list in force here (0: none), for the hello.
    fn revocation_serial(&self) -> u64;
    /// The revocation list in force here as the CA signed it, with its serial, if there is one.
    fn signed_revocations(&self) -> Option<(u64, Arc<[u8]>)>;
    /// A revocation list neighbour `from` handed over: take it if it is newer (and pass it on
    /// to the other neighbours), and say what became of it.
    fn on_revocations(&self, from: NodeId, signed: &[u8]) -> ListOffered;
    /// The liveness settings, and the node's health its links share.
    fn liveness(&self) -> &Liveness;
    /// The link to `neighbour` went up or down: the node reports it to its other neighbours.
    fn link_went(&self, neighbour: NodeId, up: bool);
    /// Reports of dead and live links that neighbour `from` passed on: take the new ones and
    /// pass them on. Whether any was malformed (not about a link of the topology).
    fn on_reports(&self, from: NodeId, reports: Vec<Report>) -> bool;
    /// Every report the node holds, for a neighbour on a new connection.
    fn reports(&self) -> Vec<Report>;
    /// The handshakes its link endpoint has in flight, if it is shared with other nodes
    /// ([`shared::SharedLinks`]): a dial waits for a permit, and a knock for none in flight.
    fn handshakes(&self) -> Option<&shared::Handshakes> {
        None
    }
}

/// What became of a revocation list a neighbour handed over.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ListOffered {
    /// Taken, or no newer than the list in force here without being older (the list in force
    /// again, a refused fork): the neighbour holds this serial.
    Held(u64),
    /// Older than the list in force here, and refused: the neighbour holds this serial, and is
    /// handed the newer one.
    Behind(u64),
    /// Malformed, or not signed by the cluster CA: refused, and a malformed frame.
    Invalid,
}

pub struct Link {
    me: NodeId,
    pub neighbour: NodeId,
    /// The neighbour as the log lines name it: in the topology's notation, as the node's own
    /// id is ([`Link::named`]).
    name: String,
    /// The neighbour's link address, from the manifest.
    pub addr: String,
    state: Mutex<LinkState>,
    /// Wakes the writer: new data, or a knock to answer.
    wake: Notify,
    /// Wakes the liveness watch: written frames now wait for an acknowledgement.
    outstanding: Notify,
    /// The neighbour knocked: send on the current connection now (dialler side)...
    knock_ack: AtomicBool,
    /// ...and stop waiting out the dial backoff.
    knocked: Notify,
    up: AtomicBool,
    /// Refused on both sides: cut (until healed), or revoked (for good).
    cut: watch::Sender<bool>,
    revoked: AtomicBool,
    /// Accepted connections, handed over by the endpoint's accept loop.
    incoming: mpsc::Sender<quinn::Connection>,
    incoming_rx: Mutex<Option<mpsc::Receiver<quinn::Connection>>>,
    current: Mutex<Option<quinn::Connection>>,
    /// Where the neighbour knocked from, when that was not where the current connection went:
    /// the next dial goes there (a name may still resolve to the old address for a while).
    moved_to: Mutex<Option<std::net::SocketAddr>>,
    /// The bytes every link's message buffer and the input buffer may hold together.
    budget: Arc<Budget>,
    /// When the link last went up or down.
    changed_at: Mutex<Instant>,
    frames_written: AtomicU64,
    frames_received: AtomicU64,
    frames_resent: AtomicU64,
    /// Packets handed to this process's hand-off loop and not handled yet ([`handoff`]).
    handed: AtomicUsize,
    /// The node stopped and counted what its buffer held ([`Link::take_queued`]): a packet the
    /// hand-off loop gives back is counted as dropped, not queued.
    stopped: AtomicBool,
    /// Packets for this neighbour the node dropped, by reason.
    drops: Mutex<BTreeMap<&'static str, u64>>,
    /// The dialling side's retries: dials failed in a row, the backoff, when the next dial is.
    redial: Mutex<(u32, Duration, Instant)>,
    /// The highest revocation serial the neighbour is known to hold on the current connection:
    /// its hello's, a list it handed over, one handed to it.
    peer_serial: AtomicU64,
    /// The writer looks whether the neighbour is to be handed the revocation list in force.
    hand_over: AtomicBool,
    /// Liveness suspects the neighbour: nothing heard from it for an interval.
    suspected: AtomicBool,
    /// Reports of dead and live links to hand the neighbour on the hello stream.
    reports: Mutex<Vec<Report>>,
    /// Why the link last went down (kept while it is down).
    down_cause: Mutex<Option<String>>,
    /// The neighbour's incarnation when liveness took it for dead: a hello from the same one
    /// later says it was alive after all.
    taken_for_dead: Mutex<Option<u64>>,
}

struct LinkState {
    /// Encoded data frames not yet acknowledged, in sequence order.
    queue: VecDeque<Queued>,
    capacity: usize,
    next_seq: u64,
    /// The last sequence number written on the current connection.
    sent_upto: u64,
    /// The last data frame handled from the neighbour, under its incarnation.
    received: Option<Received>,
    /// When the last batch was written.
    last_batch_at: Option<Instant>,
    /// While the link is up to a node of this process: what hands a packet to it by a call
    /// when the buffer is empty ([`handoff`]).
    local: Option<Arc<handoff::LocalRoute>>,
    /// Since when written frames have waited without any acknowledgement progress; `None`
    /// while every written frame is acknowledged.
    waiting_since: Option<Instant>,
}

impl LinkState {
    /// Drop the frames up to `upto` (acknowledged) and give their bytes back to `budget`.
    /// Whether there were any.
    fn drop_acknowledged(&mut self, upto: u64, budget: &Budget) -> bool {
        let mut any = false;
        while self.queue.front().is_some_and(|q| q.seq <= upto) {
            let acknowledged = self.queue.pop_front().expect("a front");
            budget.release(acknowledged.held);
            any = true;
        }
        if self.queue.is_empty() {
            // A burst grew the queue; an emptied one gives the room back.
            self.queue.shrink_to(QUEUE_KEPT);
        }
        any
    }

    /// Frames written on the current connection and not yet acknowledged.
    fn written_unacknowledged(&self) -> usize {
        self.queue
            .front()
            .map_or(0, |q| (self.sent_upto + 1).saturating_sub(q.seq) as usize)
    }
}

struct Queued {
    seq: u64,
    /// The whole frame, length prefix included.
    frame: Bytes,
    /// What it holds of the budget (its length when queued).
    held: usize,
}

/// The room an empty message buffer keeps for frames (more is given back when it empties).
const QUEUE_KEPT: usize = 64;

/// The most bytes a chaos mark adds to an encoded data frame (an option tag and two varints).
const MARK_MAX_LEN: usize = 1 + 10 + 5;

/// The most bytes a data frame adds to its packet besides a mark: the enum tag, the sequence
/// number and the packet's length (varints), and the length prefix.
const HEADER_MAX_LEN: usize = 1 + 10 + 10 + PREFIX_LEN;

/// Why [`Link::enqueue`] did not queue a packet.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum NotQueued {
    /// The message buffer is full.
    Full,
    /// The buffers hold all the bytes `buffers.memory_mib` allows them.
    OverBudget,
    /// The packet does not fit a frame.
    TooLarge,
}

impl Link {
    /// This link, its neighbour named `name` in its log lines (the topology's notation).
    pub fn named(mut self, name: String) -> Link {
        self.name = name;
        self
    }

    pub fn new(
        me: NodeId,
        neighbour: NodeId,
        addr: String,
        capacity: usize,
        budget: Arc<Budget>,
    ) -> Link {
        let (incoming, incoming_rx) = mpsc::channel(4);
        Link {
            me,
            neighbour,
            name: neighbour.to_string(),
            addr,
            state: Mutex::new(LinkState {
                queue: VecDeque::new(),
                capacity,
                next_seq: 1,
                sent_upto: 0,
                received: None,
                last_batch_at: None,
                waiting_since: None,
                local: None,
            }),
            wake: Notify::new(),
            outstanding: Notify::new(),
            knock_ack: AtomicBool::new(false),
            knocked: Notify::new(),
            up: AtomicBool::new(false),
            cut: watch::channel(false).0,
            revoked: AtomicBool::new(false),
            incoming,
            incoming_rx: Mutex::new(Some(incoming_rx)),
            current: Mutex::new(None),
            moved_to: Mutex::new(None),
            budget,
            changed_at: Mutex::new(Instant::now()),
            frames_written: AtomicU64::new(0),
            frames_received: AtomicU64::new(0),
            frames_resent: AtomicU64::new(0),
            handed: AtomicUsize::new(0),
            stopped: AtomicBool::new(false),
            drops: Mutex::new(BTreeMap::new()),
            redial: Mutex::new((0, BACKOFF_MIN, Instant::now())),
            peer_serial: AtomicU64::new(0),
            hand_over: AtomicBool::new(false),
            suspected: AtomicBool::new(false),
            reports: Mutex::new(Vec::new()),
            down_cause: Mutex::new(None),
            taken_for_dead: Mutex::new(None),
        }
    }

    /// Count a packet for this neighbour that the node dropped (`reason` as the node counts it).
    pub fn count_drop(&self, reason: &'static str) {
        *self
            .drops
            .lock()
            .expect("link lock")
            .entry(reason)
            .or_default() += 1;
    }

    /// The round trip QUIC measures on this link while it is up.
    pub fn rtt(&self) -> Option<Duration> {
        let current = self.current.lock().expect("link lock");
        current.as_ref().filter(|_| self.is_up()).map(|c| c.rtt())
    }

    /// What `show links` reports of this link.
    pub fn status(&self) -> LinkStatus {
        let (queued, written_unacknowledged) = {
            let state = self.lock();
            (state.queue.len(), state.written_unacknowledged())
        };
        let transport = self
            .current
            .lock()
            .expect("link lock")
            .as_ref()
            .filter(|_| self.is_up())
            .map(|c| {
                let stats = c.stats();
                LinkTransport {
                    rtt_us: c.rtt().as_micros() as u64,
                    datagrams_sent: stats.udp_tx.datagrams,
                    bytes_sent: stats.udp_tx.bytes,
                    datagrams_received: stats.udp_rx.datagrams,
                    bytes_received: stats.udp_rx.bytes,
                    packets_lost: stats.path.lost_packets,
                }
            });
        let redial = (self.dials() && !self.is_up() && !self.is_cut()).then(|| {
            let (failures, backoff, next) = *self.redial.lock().expect("link lock");
            Redial {
                failures,
                backoff_ms: backoff.as_millis() as u64,
                next_in_ms: next.saturating_duration_since(Instant::now()).as_millis() as u64,
            }
        });
        LinkStatus {
            dials: self.dials(),
            redial,
            suspected: self.is_up() && self.suspected.load(Relaxed),
            down: if self.is_up() {
                None
            } else {
                self.down_cause.lock().expect("link lock").clone()
            },
            neighbour: self.neighbour,
            up: self.is_up(),
            cut: self.is_cut(),
            queued: queued as u64,
            written_unacknowledged: written_unacknowledged as u64,
            since_ms: self
                .changed_at
                .lock()
                .expect("link lock")
                .elapsed()
                .as_millis() as u64,
            frames_written: self.frames_written.load(Relaxed),
            frames_received: self.frames_received.load(Relaxed),
            frames_resent: self.frames_resent.load(Relaxed),
            drops: self
                .drops
                .lock()
                .expect("link lock")
                .iter()
                .map(|(k, v)| (k.to_string(), *v))
                .collect(),
            transport,
        }
    }

    fn changed(&self) {
        *self.changed_at.lock().expect("link lock") = Instant::now();
    }

    /// The rule that makes one connection per pair: the lower id dials.
    pub fn dials(&self) -> bool {
        self.me < self.neighbour
    }

    pub fn is_up(&self) -> bool {
        self.up.load(Relaxed)
    }

    pub fn is_cut(&self) -> bool {
        *self.cut.borrow()
    }

    /// Packets in the message buffer.
    /// Packets queued for the neighbour and not handled yet: in the buffer, or with the
    /// hand-off loop.
    pub fn queued(&self) -> usize {
        self.lock().queue.len() + self.handed.load(Relaxed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LinkState> {
        self.state.lock().expect("link lock")
    }

    /// Queue an encoded packet for the neighbour, or say why not: the message buffer is full,
    /// or the packet with its link header no longer fits a frame (a neighbour may send a
    /// packet of nearly a frame's length whose trace then grows here).
    /// While the link is up to a node of this process and the buffer is empty, the packet goes
    /// to the process's hand-off loop instead ([`handoff`]).
    pub fn enqueue(&self, packet: Vec<u8>, mark: Option<ChaosMark>) -> Result<(), NotQueued> {
        let state = self.lock();
        if state.queue.is_empty()
            && packet.len() + MARK_MAX_LEN + HEADER_MAX_LEN <= MAX_FRAME_LEN
            && let Some(route) = state.local.clone()
        {
            drop(state);
            if !self.budget.try_hold(packet.len()) {
                return Err(NotQueued::OverBudget);
            }
            self.handed.fetch_add(1, Relaxed);
            self.frames_written.fetch_add(1, Relaxed);
            let handoffs = route.handoffs.clone();
            handoffs.push(route, packet, mark);
            return Ok(());
        }
        self.enqueue_buffered(state, packet, mark)
    }

    /// Queue an encoded packet in the message buffer, under its lock `state`, or say why not.
    fn enqueue_buffered(
        &self,
        mut state: std::sync::MutexGuard<'_, LinkState>,
        packet: Vec<u8>,
        mark: Option<ChaosMark>,
    ) -> Result<(), NotQueued> {
        if state.queue.len() >= state.capacity {
            return Err(NotQueued::Full);
        }
        let seq = state.next_seq;
        let Ok(frame) = encode_frame(&LinkFrame::Data { seq, packet, mark }) else {
            return Err(NotQueued::TooLarge);
        };
        let held = frame.len();
        if !self.budget.try_hold(held) {
            return Err(NotQueued::OverBudget);
        }
        state.next_seq += 1;
        state.queue.push_back(Queued {
            seq,
            frame: Bytes::from(frame),
            held,
        });
        drop(state);
        self.wake.notify_one();
        Ok(())
    }

    /// The chaos tooling's buffer corruption: flip bits in a share `fraction_ppm` of the packets
    /// in the message buffer waiting to be sent (each then carries a mark). Returns how many.
    /// Frames already written and waiting only for their acknowledgement are left alone: the
    /// neighbour has the uncorrupted copy, and a corrupted one would never be sent (it would
    /// leave the buffer with the acknowledgement), so its corruption would never end.
    pub fn corrupt_queued(
        &self,
        chaos: &crate::chaos::Chaos,
        fraction_ppm: u32,
        rng: &mut impl rand::Rng,
    ) -> usize {
        let mut state = self.lock();
        let sent_upto = state.sent_upto;
        let mut corrupted = 0;
        for queued in state.queue.iter_mut().filter(|q| q.seq > sent_upto) {
            if rng.random_range(0..1_000_000) >= fraction_ppm {
                continue;
            }
            // A mark adds at most a few bytes; a frame within them of the limit is left alone.
            if queued.frame.len() + MARK_MAX_LEN > PREFIX_LEN + MAX_FRAME_LEN {
                continue;
            }
            let Ok(LinkFrame::Data {
                seq,
                mut packet,
                mark: before,
            }) = decode_body::<LinkFrame>(&queued.frame[PREFIX_LEN..])
            else {
                continue;
            };
            let mark = chaos.corrupt_bytes(&mut packet, rng, before.is_some());
            let frame = LinkFrame::Data {
                seq,
                packet,
                mark: Some(mark),
            };
            let Ok(encoded) = encode_frame(&frame) else {
                continue;
            };
            queued.frame = Bytes::from(encoded);
            corrupted += 1;
        }
        corrupted
    }

    /// Packets still queued when the daemon stops: they are counted as dropped.
    pub fn take_queued(&self) -> usize {
        self.stopped.store(true, Relaxed);
        let mut state = self.lock();
        let n = state.queue.len();
        for queued in state.queue.drain(..) {
            self.budget.release(queued.held);
        }
        n
    }

    /// Sever the link: close the connection, and refuse it on both sides until [`Link::heal`].
    pub fn cut(&self) {
        self.cut.send_replace(true);
        if let Some(connection) = self.current.lock().expect("link lock").take() {
            connection.close(close::CUT.into(), b"cut");
        }
    }

    /// End a cut; a revoked neighbour's link stays refused.
    pub fn heal(&self) {
        self.cut.send_replace(self.is_revoked());
    }

    /// The neighbour was taken out of the cluster: close the link and refuse it for good.
    pub fn revoke(&self) {
        self.revoked.store(true, Relaxed);
        self.cut();
    }

    pub fn is_revoked(&self) -> bool {
        self.revoked.load(Relaxed)
    }

    /// The node took a newer revocation list: hand it to the neighbour if it is not known to
    /// hold it (now if the link is up, else after the next hello).
    pub fn revocations_changed(&self) {
        self.hand_over.store(true, Relaxed);
        self.wake.notify_one();
    }

    /// Hand the neighbour these reports of dead and live links, if the link is up (a link that
    /// comes up is handed every report the node holds).
    pub fn pass_reports(&self, reports: &[Report]) {
        if !self.is_up() || reports.is_empty() {
            return;
        }
        {
            let mut pending = self.reports.lock().expect("link lock");
            if pending.len() + reports.len() > MAX_PENDING_REPORTS {
                // The neighbour is far behind: it gets the newest; what it missed it hears
                // again when the reporters say it again, or on its next connection.
                return;
            }
            pending.extend_from_slice(reports);
        }
        self.wake.notify_one();
    }

    /// The revocation list to hand the neighbour now, of the one in force here (`mine`): it, if
    /// it is newer than any the neighbour is known to hold on this connection. The neighbour
    /// is known to hold it from then on: a list crosses a connection at most once each way.
    fn revocations_to_hand(&self, mine: Option<(u64, Arc<[u8]>)>) -> Option<Arc<[u8]>> {
        let (serial, signed) = mine?;
        (self.peer_serial.fetch_max(serial, Relaxed) < serial).then_some(signed)
    }

    /// Note what became of a list the neighbour handed over; whether it was malformed.
    fn on_list_offered(&self, offered: ListOffered) -> bool {
        match offered {
            ListOffered::Held(serial) => {
                self.peer_serial.fetch_max(serial, Relaxed);
                false
            }
            ListOffered::Behind(serial) => {
                self.peer_serial.fetch_max(serial, Relaxed);
                self.revocations_changed();
                false
            }
            ListOffered::Invalid => true,
        }
    }

    /// The link's connection, while it has one.
    pub fn connection(&self) -> Option<quinn::Connection> {
        self.current.lock().expect("link lock").clone()
    }

    /// The neighbour, which this node dials, dialled us from `from`: it has no connection with
    /// us (it restarted, or lost ours). Send on the current connection at once, so that a stale
    /// one draws a reset and is redialled, and cut the dial backoff short. If the current
    /// connection goes to another address, nothing there will reset it (the neighbour came back
    /// elsewhere): it is closed now, and the dial that follows goes to `from`.
    pub fn knock(&self, from: std::net::SocketAddr) {
        let current = self.current.lock().expect("link lock").clone();
        if let Some(connection) = current
            && connection.close_reason().is_none()
            && !same_address(connection.remote_address(), from)
        {
            info!(
                neighbour = %self.name,
                was = %connection.remote_address(),
                now = %from,
                "the neighbour knocked from another address: redialling"
            );
            *self.moved_to.lock().expect("link lock") = Some(from);
            connection.close(close::MOVED.into(), b"the neighbour is elsewhere");
        }
        self.knock_ack.store(true, Relaxed);
        self.wake.notify_one();
        self.knocked.notify_one();
    }

    /// Hand an accepted, authenticated connection from the neighbour to this link.
    pub fn offer(&self, connection: quinn::Connection) {
        if let Err(e) = self.incoming.try_send(connection) {
            let connection = match e {
                mpsc::error::TrySendError::Full(c) | mpsc::error::TrySendError::Closed(c) => c,
            };
            connection.close(close::REFUSED.into(), b"busy");
        }
    }

    /// Run the link for as long as the daemon runs: dial or accept, serve, repeat.
    pub async fn run(
        self: Arc<Self>,
        node: Arc<dyn LinkOwner>,
        endpoint: quinn::Endpoint,
        client: quinn::ClientConfig,
    ) {
        if self.dials() {
            self.dial_loop(&*node, &endpoint, &client).await
        } else {
            self.accept_loop(&*node, &endpoint, &client).await
        }
    }

    async fn dial_loop(
        &self,
        node: &dyn LinkOwner,
        endpoint: &quinn::Endpoint,
        client: &quinn::ClientConfig,
    ) {
        let mut backoff = BACKOFF_MIN;
        let mut failures = 0;
        let mut cut = self.cut.subscribe();
        loop {
            // Wait while the link is cut.
            let _ = cut.wait_for(|cut| !cut).await;
            match self.dial(node, endpoint, client).await {
                Ok(connection) => {
                    failures = 0;
                    let started = Instant::now();
                    self.serve(node, connection).await;
                    if started.elapsed() > Duration::from_secs(1) {
                        backoff = BACKOFF_MIN;
                    }
                }
                Err(e) => {
                    failures += 1;
                    node.stats().event_about(Event::DialFailed, self.neighbour);
                    debug!(neighbour = %self.name, error = %e, "dial failed");
                }
            }
            let wait = backoff.mul_f64(env::random_range(0.5..1.5));
            *self.redial.lock().expect("link lock") = (failures, backoff, Instant::now() + wait);
            tokio::select! {
                () = tokio::time::sleep(wait) => io_counts::link_timer_fired(),
                // The neighbour is up and waiting for us: dial now.
                () = self.knocked.notified() => backoff = BACKOFF_MIN,
            }
            backoff = (backoff * 2).min(BACKOFF_MAX);
        }
    }

    async fn dial(
        &self,
        node: &dyn LinkOwner,
        endpoint: &quinn::Endpoint,
        client: &quinn::ClientConfig,
    ) -> anyhow::Result<quinn::Connection> {
        let _permit = match node.handshakes() {
            Some(handshakes) => Some(handshakes.dial().await?),
            None => None,
        };
        let moved_to = self.moved_to.lock().expect("link lock").take();
        let addr = match moved_to {
            Some(addr) => addr,
            None => crate::net::lookup(&self.addr)
                .await
                .map_err(|e| anyhow::anyhow!("{}: {e}", self.addr))?,
        };
        let connecting =
            endpoint.connect_with(client.clone(), addr, &tls::node_name(self.neighbour))?;
        Ok(tokio::time::timeout(DIAL_TIMEOUT, connecting).await??)
    }

    async fn accept_loop(
        &self,
        node: &dyn LinkOwner,
        endpoint: &quinn::Endpoint,
        client: &quinn::ClientConfig,
    ) {
        let Some(mut incoming) = self.incoming_rx.lock().expect("link lock").take() else {
            return;
        };
        let mut next = self
            .await_dialler(node, &mut incoming, endpoint, client)
            .await;
        while let Some(connection) = next.take() {
            tokio::select! {
                () = self.serve(node, connection.clone()) => {
                    next = self.await_dialler(node, &mut incoming, endpoint, client).await;
                }
                newer = incoming.recv() => {
                    // The neighbour reconnected (it restarted, or lost the old connection
                    // first): the newer connection wins.
                    connection.close(close::REPLACED.into(), b"replaced");
                    next = newer;
                }
            }
        }
    }

    /// Wait for the neighbour to dial; knock after [`KNOCK_AFTER`], and every [`KNOCK_EVERY`]
    /// after that, while it does not (and the link is not cut).
    async fn await_dialler(
        &self,
        node: &dyn LinkOwner,
        incoming: &mut mpsc::Receiver<quinn::Connection>,
        endpoint: &quinn::Endpoint,
        client: &quinn::ClientConfig,
    ) -> Option<quinn::Connection> {
        let mut wait = KNOCK_AFTER;
        loop {
            tokio::select! {
                connection = incoming.recv() => return connection,
                () = tokio::time::sleep(wait) => io_counts::link_timer_fired(),
            }
            wait = KNOCK_EVERY.mul_f64(env::random_range(0.75..1.25));
            if node.handshakes().is_some_and(shared::Handshakes::busy) {
                // The dialler may be among those waiting their turn: no knock in the queue.
                node.stats().event(Event::KnockDeferred);
                wait = KNOCK_AFTER;
                continue;
            }
            if !self.is_cut() {
                node.stats().event(Event::KnockSent);
                // The dialler refuses the knock; whether it got through does not matter, and
                // a connection from the dialler meanwhile ends it.
                let knock = async {
                    if let Ok(connection) = self.dial(node, endpoint, client).await {
                        connection.close(0u32.into(), b"knock");
                    }
                };
                tokio::select! {
                    connection = incoming.recv() => return connection,
                    () = knock => {}
                }
            }
        }
    }

    /// Serve one connection until it fails.
    async fn serve(&self, node: &dyn LinkOwner, connection: quinn::Connection) {
        *self.current.lock().expect("link lock") = Some(connection.clone());
        if self.is_cut() {
            // Cut (or revoked: the neighbour's list taken from another link) while this
            // connection was being made: `cut` closed whatever was current before.
            connection.close(close::CUT.into(), b"cut");
            return;
        }
        let result = self.exchange(node, &connection).await;
        self.went_down(node, &result);
        connection.close(0u32.into(), b"");
    }

    /// The link is up, with the neighbour's `incarnation`: the node hears so, and the neighbour
    /// is handed every report the node holds.
    fn went_up(&self, node: &dyn LinkOwner, incarnation: u64) {
        if self.taken_for_dead.lock().expect("link lock").take() == Some(incarnation) {
            // Liveness took this very process for dead: it was alive after all.
            node.stats()
                .event_about(Event::LinkDownFoundAlive, self.neighbour);
            warn!(neighbour = %self.name, "a neighbour taken for dead was alive: the same process linked again");
        }
        *self.reports.lock().expect("link lock") = node.reports();
        self.up.store(true, Relaxed);
        self.changed();
        node.stats().event_about(Event::LinkUp, self.neighbour);
        node.link_went(self.neighbour, true);
        info!(neighbour = %self.name, "link up");
    }

    /// Serving the link ended with `result`: if it was up, it is down, and why.
    fn went_down(&self, node: &dyn LinkOwner, result: &anyhow::Result<()>) {
        if self.up.swap(false, Relaxed) {
            self.changed();
            self.suspected.store(false, Relaxed);
            let why = display_result(result);
            *self.down_cause.lock().expect("link lock") = Some(why.clone());
            node.stats().link_down(self.neighbour, why.clone());
            self.reports.lock().expect("link lock").clear();
            node.link_went(self.neighbour, false);
            info!(neighbour = %self.name, reason = %why, "link down");
        } else {
            debug!(neighbour = %self.name, reason = %display_result(result), "connection failed before hello");
        }
    }

    async fn exchange(
        &self,
        node: &dyn LinkOwner,
        connection: &quinn::Connection,
    ) -> anyhow::Result<()> {
        let (mut send, recv) = if self.dials() {
            connection.open_bi().await?
        } else {
            tokio::time::timeout(HELLO_TIMEOUT, connection.accept_bi()).await??
        };
        let hello = Hello {
            node: node.id(),
            topology: node.topology(),
            incarnation: node.incarnation(),
            received: self.lock().received,
            revocation_serial: node.revocation_serial(),
            process: exits::own(),
        };
        send.write_all(&encode_frame(&LinkFrame::Hello(hello))?)
            .await?;
        let mut frames = FramedRead::new(recv, codec());
        let first = tokio::time::timeout(HELLO_TIMEOUT, frames.next())
            .await?
            .ok_or_else(|| anyhow::anyhow!("stream ended before hello"))??;
        let peer = match decode_body::<LinkFrame>(&first) {
            Ok(LinkFrame::Hello(hello))
                if hello.node == self.neighbour && hello.topology == node.topology() =>
            {
                hello
            }
            other => {
                node.stats().event(Event::HelloMismatch);
                warn!(neighbour = %self.name, frame = ?other, "bad hello");
                connection.close(close::REFUSED.into(), b"bad hello");
                anyhow::bail!("bad hello");
            }
        };
        self.on_hello(node.incarnation(), &peer);
        let exit = match peer.process {
            Some(mark) if node.liveness().settings.watch_exits => exits::watch(&mark),
            _ => Watch::Elsewhere,
        };
        self.went_up(node, peer.incarnation);
        let (acks, written) = mpsc::unbounded_channel();
        // Whichever side ends first closes the connection, which ends the other: the batches
        // reader only after it has drained what QUIC acknowledged.
        let batches = async {
            let result = self.read_batches(node, connection, peer.incarnation).await;
            connection.close(0u32.into(), b"");
            result
        };
        let others = async {
            let result = tokio::select! {
                r = self.read_frames(node, frames, connection) => r,
                r = self.write_frames(node, connection, &mut send, acks) => r,
                r = self.await_acks(written) => r,
                r = self.watch_silence(node.stats(), connection, &exit) => r,
                r = self.watch_liveness(node, connection, peer.incarnation, &exit) => r,
                r = watch_exit(&exit) => r,
            };
            connection.close(0u32.into(), b"");
            result
        };
        let (batches, others) = tokio::join!(batches, others);
        others.and(batches)
    }

    /// Apply what the neighbour says it has: drop acknowledged frames, resend the rest; and
    /// start counting afresh if the neighbour is a new incarnation. The writer then looks
    /// whether the neighbour's revocation list is older than this node's.
    fn on_hello(&self, my_incarnation: u64, hello: &Hello) {
        self.peer_serial.store(hello.revocation_serial, Relaxed);
        self.hand_over.store(true, Relaxed);
        let mut state = self.lock();
        let upto = match hello.received {
            // A neighbour cannot have handled a frame that was never written.
            Some(r) if r.incarnation == my_incarnation => r.upto.min(state.sent_upto),
            _ => 0,
        };
        state.drop_acknowledged(upto, &self.budget);
        let written_before = state.sent_upto;
        state.sent_upto = state
            .queue
            .front()
            .map_or(state.next_seq - 1, |q| q.seq - 1);
        // Written on an earlier connection, not acknowledged: written again on this one.
        self.frames_resent
            .fetch_add(written_before.saturating_sub(state.sent_upto), Relaxed);
        if state.received.map(|r| r.incarnation) != Some(hello.incarnation) {
            state.received = Some(Received {
                incarnation: hello.incarnation,
                upto: 0,
            });
        }
        state.waiting_since = None;
    }

    /// Fail when written frames have waited [`silence_limit`] for an acknowledgement and no
    /// datagram has come from the neighbour for as long. Halfway, the link asks the neighbour
    /// for an acknowledgement at once (a probe: what waits may not have left this node, and a
    /// neighbour with nothing to acknowledge says nothing). A node woken late was not running
    /// itself, and what the neighbour sent may still wait in its own socket: it judges only
    /// after a wake-up on time ([`LATE_WAKE`]), or after [`SILENT_AT_MOST`] limits. Sleeps while
    /// nothing is outstanding, and stops its timer when an acknowledgement makes progress:
    /// neither an idle link nor an acknowledged one costs a wake-up.
    async fn watch_silence(
        &self,
        node_stats: &Stats,
        connection: &quinn::Connection,
        process: &Watch,
    ) -> anyhow::Result<()> {
        let mut heard = Heard::now(connection);
        // Probes asked in this silence, and the datagrams sent before the first.
        let (mut probes, mut sent_before) = (0u32, 0u64);
        let mut woke_late = false;
        // On this machine, the silence the neighbour spent waiting for a CPU is not held
        // against it (`crate::liveness`), and a neighbour that ran is not taken for dead.
        let (mut waited_since, mut ran_since) = (SinceSilent::default(), SinceSilent::default());
        loop {
            let changed = self.outstanding.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let Some(since) = self.lock().waiting_since else {
                (probes, woke_late) = (0, false);
                changed.await;
                continue;
            };
            let now = Instant::now();
            if heard.update(connection, now) {
                probes = 0;
            }
            let limit = silence_limit(connection.rtt());
            let silent_since = since.max(heard.at);
            let cpu = process.cpu();
            let starved = waited_since
                .grew(silent_since, cpu.map(|c| c.waited), now)
                .map_or(Duration::ZERO, |(waited, _)| waited);
            let ran = ran_since.grew(silent_since, cpu.map(|c| c.ran), now);
            // A neighbour watched on this machine is judged only once half a limit of the
            // silence was watched: a first look after the deadline (this node was late) knows
            // nothing of what the neighbour did.
            let watched_from = ran.map(|(_, from)| from + limit / 2);
            let deadline = (silent_since + limit + starved).max(watched_from.unwrap_or(now));
            let silent_for = now.saturating_duration_since(silent_since);
            if now >= deadline
                && (!woke_late || silent_for.saturating_sub(starved) >= limit * SILENT_AT_MOST)
            {
                let sent = connection
                    .stats()
                    .udp_tx
                    .datagrams
                    .saturating_sub(sent_before);
                if let Some((ran, _)) = ran
                    && (!ran.is_zero() || process.is_runnable() || sent < SILENCE_PROBES.into())
                {
                    // Alive (its exit would have ended the link) and not hung: it ran, or
                    // waits for a CPU now (a wait is counted in `schedstat` only once it
                    // ends); or this node's probes did not all leave it (QUIC's congestion
                    // window, full under loss, holds them until its backed-off loss probe),
                    // so that the neighbour, asleep, was sent nothing. The silence is the
                    // machine's or the network's, or a partition, which the probes judge. It
                    // starts again.
                    node_stats.event_about(Event::LinkSilenceHeld, self.neighbour);
                    debug!(
                        neighbour = %self.name,
                        silent_ms = silent_for.as_millis() as u64,
                        ran_us = ran.as_micros() as u64,
                        sent,
                        "silent, but alive on this machine: the link is kept"
                    );
                    heard.at = now;
                    (probes, woke_late) = (0, false);
                    continue;
                }
                let waiting = self.lock().written_unacknowledged();
                anyhow::bail!(
                    "no acknowledgement with {waiting} frames written, and nothing heard from \
                     the neighbour for {} ms, {}{}",
                    silent_for.as_millis(),
                    match probes {
                        1 => "a probe included".to_string(),
                        n => format!("{n} probes included"),
                    },
                    match starved.as_millis() {
                        0 => String::new(),
                        ms => format!(" ({ms} ms of it waiting for a CPU)"),
                    }
                );
            }
            // Halfway, and every eighth of the limit after: a probe, up to [`SILENCE_PROBES`].
            let next_probe = silent_since + limit / 2 + limit / 8 * probes;
            if now >= next_probe && probes < SILENCE_PROBES {
                if probes == 0 {
                    sent_before = connection.stats().udp_tx.datagrams;
                }
                connection.request_immediate_ack();
                node_stats.probe_sent();
                probes += 1;
            }
            let next_probe = silent_since + limit / 2 + limit / 8 * probes;
            let wake_at = match (probes < SILENCE_PROBES, woke_late) {
                (true, _) => next_probe.min(deadline),
                (false, false) => deadline,
                (false, true) => deadline.max(now + LATE_WAKE),
            };
            tokio::select! {
                () = tokio::time::sleep_until(wake_at) => {
                    io_counts::link_timer_fired();
                    woke_late = Instant::now().saturating_duration_since(wake_at) > LATE_WAKE;
                }
                // Acknowledged (or newly outstanding): look again.
                () = changed => {}
            }
        }
    }

    /// Look at the connection when the liveness detector asks ([`crate::liveness`]), send its
    /// probes (an IMMEDIATE_ACK frame: the neighbour's QUIC acknowledges at once), count its
    /// suspicions, and fail when it takes the neighbour for dead. Every look tells the node's
    /// health whether the node woke it on time.
    async fn watch_liveness(
        &self,
        node: &dyn LinkOwner,
        connection: &quinn::Connection,
        peer_incarnation: u64,
        process: &Watch,
    ) -> anyhow::Result<()> {
        let liveness = node.liveness();
        let received = || connection.stats().udp_rx.datagrams;
        let mut detector =
            Detector::new(liveness.settings, self.dials(), Instant::now(), received());
        let mut due = detector.first();
        let mut last_received = received();
        loop {
            tokio::time::sleep_until(due).await;
            io_counts::link_timer_fired();
            let now = Instant::now();
            liveness
                .health
                .woke(now.saturating_duration_since(due) > liveness::LATE);
            // Whether the neighbour's process runs matters only to a look that heard nothing:
            // its threads are read then, not at every look.
            let count = received();
            let heard = std::mem::replace(&mut last_received, count) != count;
            let step = detector.look(liveness::Look {
                now,
                due,
                received: count,
                rtt: connection.rtt(),
                health: liveness.health.score(),
                neighbour_waited: process.waited_for_cpu(),
                neighbour_runnable: !heard && process.is_runnable(),
            });
            match step.verdict {
                Verdict::Same => {}
                Verdict::Suspected => {
                    self.suspected.store(true, Relaxed);
                    node.stats()
                        .event_about(Event::LinkSuspected, self.neighbour);
                    debug!(neighbour = %self.name, "neighbour suspected");
                }
                Verdict::FoundAlive => {
                    self.suspected.store(false, Relaxed);
                    node.stats()
                        .event_about(Event::LinkFoundAlive, self.neighbour);
                    debug!(neighbour = %self.name, "suspected neighbour heard from");
                }
                Verdict::Down(why) => {
                    *self.taken_for_dead.lock().expect("link lock") = Some(peer_incarnation);
                    connection.close(close::DEAD.into(), b"taken for dead");
                    anyhow::bail!("{why}");
                }
            }
            if step.probe {
                connection.request_immediate_ack();
                node.stats().probe_sent();
            }
            due = step.next;
        }
    }

    /// Read the hello stream after the hello: a knock's acknowledgement, and revocation lists.
    async fn read_frames(
        &self,
        node: &dyn LinkOwner,
        mut frames: FramedRead<quinn::RecvStream, LengthDelimitedCodec>,
        connection: &quinn::Connection,
    ) -> anyhow::Result<()> {
        let mut bad = 0;
        while let Some(body) = frames.next().await {
            match decode_body::<LinkFrame>(&body?) {
                Ok(LinkFrame::Ack { upto }) => self.on_ack(upto),
                Ok(LinkFrame::Revocations { signed }) => {
                    if self.on_list_offered(node.on_revocations(self.neighbour, &signed)) {
                        self.malformed(node, &mut bad, connection)?;
                    }
                }
                Ok(LinkFrame::Reports(reports)) => {
                    if node.on_reports(self.neighbour, reports) {
                        self.malformed(node, &mut bad, connection)?;
                    }
                }
                _ => self.malformed(node, &mut bad, connection)?,
            }
        }
        anyhow::bail!("stream ended")
    }

    /// Read the neighbour's batches of data frames, one stream after the other in the order
    /// they were opened, and hand each frame to the node. Once the connection is gone this
    /// still reads every batch quinn received whole (and so acknowledged), then ends.
    async fn read_batches(
        &self,
        node: &dyn LinkOwner,
        connection: &quinn::Connection,
        peer_incarnation: u64,
    ) -> anyhow::Result<()> {
        let mut bad = 0;
        loop {
            let stream = connection.accept_uni().await?;
            let mut frames = FramedRead::with_capacity(stream, codec(), BATCH_READ_BUFFER);
            while let Some(body) = frames.next().await {
                match body.map(|body| decode_body::<LinkFrame>(&body)) {
                    Ok(Ok(LinkFrame::Data { seq, packet, mark })) => {
                        self.frames_received.fetch_add(1, Relaxed);
                        node.on_data(self.neighbour, &packet, mark);
                        self.on_data(peer_incarnation, seq);
                    }
                    // A batch cut short by the lost connection.
                    Err(e) if connection.close_reason().is_some() => return Err(e.into()),
                    Ok(_) | Err(_) => self.malformed(node, &mut bad, connection)?,
                }
            }
        }
    }

    /// Count a malformed frame; past [`MAX_BAD_FRAMES`] on one connection, disconnect the peer.
    fn malformed(
        &self,
        node: &dyn LinkOwner,
        bad: &mut u32,
        connection: &quinn::Connection,
    ) -> anyhow::Result<()> {
        *bad += 1;
        node.stats().event(Event::FrameMalformed);
        debug!(neighbour = %self.name, bad, "malformed frame");
        if *bad > MAX_BAD_FRAMES {
            node.stats().event(Event::PeerDisconnectedGarbage);
            warn!(neighbour = %self.name, "disconnecting a peer that sends garbage");
            connection.close(close::GARBAGE.into(), b"garbage");
            anyhow::bail!("peer sent {bad} malformed frames");
        }
        Ok(())
    }

    /// Record that data frame `seq` of the neighbour's `incarnation` was handled: the next hello
    /// says so.
    fn on_data(&self, incarnation: u64, seq: u64) {
        self.lock().received = Some(Received {
            incarnation,
            upto: seq,
        });
    }

    fn on_ack(&self, upto: u64) {
        let mut state = self.lock();
        let upto = upto.min(state.sent_upto);
        if state.drop_acknowledged(upto, &self.budget) {
            state.waiting_since = (state.written_unacknowledged() > 0).then(Instant::now);
            // The silence watch's deadline moved, or there is none: its timer goes.
            self.outstanding.notify_one();
        }
    }

    /// Write each batch of data frames on a stream of its own, finished, and pass the batch's
    /// acknowledgement (and its last sequence number) on to [`Link::await_acks`]. A knock is
    /// answered, and the revocation list handed over, on the hello stream.
    async fn write_frames(
        &self,
        node: &dyn LinkOwner,
        connection: &quinn::Connection,
        hello_stream: &mut quinn::SendStream,
        acks: mpsc::UnboundedSender<(BatchAcknowledged, u64)>,
    ) -> anyhow::Result<()> {
        loop {
            let notified = self.wake.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let handed = self.hand_over.swap(false, Relaxed)
                && self.hand_revocations(node, hello_stream).await?;
            let handed = self.hand_reports(hello_stream).await? || handed;
            let work = self.take_work(Instant::now())?;
            if let Some(nudge) = &work.knock_answer {
                hello_stream.write_all(nudge).await?;
            }
            match work.batch {
                Some(Batch {
                    mut frames,
                    upto,
                    lone,
                }) => {
                    let mut stream = connection.open_uni().await?;
                    stream.write_all_chunks(&mut frames).await?;
                    stream.finish()?;
                    if lone {
                        // In the packet that carries the batch's end.
                        connection.request_immediate_ack();
                    }
                    let acknowledged: BatchAcknowledged = Box::pin(stream.stopped());
                    acks.send((acknowledged, upto))
                        .map_err(|_| anyhow::anyhow!("the acknowledgement watch is gone"))?;
                }
                None if work.knock_answer.is_none() && !handed => notified.await,
                None => {}
            }
        }
    }

    /// Hand the neighbour the revocation list in force here if it is newer than any it is known
    /// to hold; whether one was written.
    async fn hand_revocations(
        &self,
        node: &dyn LinkOwner,
        hello_stream: &mut quinn::SendStream,
    ) -> anyhow::Result<bool> {
        let Some(signed) = self.revocations_to_hand(node.signed_revocations()) else {
            return Ok(false);
        };
        let frame = LinkFrame::Revocations {
            signed: signed.to_vec(),
        };
        match encode_frame(&frame) {
            Ok(frame) => {
                hello_stream.write_all(&frame).await?;
                node.stats()
                    .event_about(Event::RevocationHanded, self.neighbour);
                debug!(neighbour = %self.name, "revocation list handed over");
                Ok(true)
            }
            Err(e) => {
                // Not a frame: this list goes by push and by file only.
                warn!(neighbour = %self.name, error = %e, "revocation list too large to hand over");
                Ok(false)
            }
        }
    }

    /// Hand the neighbour the reports waiting for it, in frames of at most
    /// [`REPORTS_PER_FRAME`]; whether any was written.
    async fn hand_reports(&self, hello_stream: &mut quinn::SendStream) -> anyhow::Result<bool> {
        let reports = std::mem::take(&mut *self.reports.lock().expect("link lock"));
        for chunk in reports.chunks(REPORTS_PER_FRAME) {
            hello_stream
                .write_all(&encode_frame(&LinkFrame::Reports(chunk.to_vec()))?)
                .await?;
        }
        Ok(!reports.is_empty())
    }

    /// Take each batch as acknowledged once QUIC has acknowledged all of it, in the order the
    /// batches were written (a later batch acknowledged first waits for the earlier ones).
    async fn await_acks(
        &self,
        mut written: mpsc::UnboundedReceiver<(BatchAcknowledged, u64)>,
    ) -> anyhow::Result<()> {
        while let Some((acknowledged, upto)) = written.recv().await {
            match acknowledged.await? {
                None => self.on_ack(upto),
                Some(code) => anyhow::bail!("the neighbour refused a batch (code {code})"),
            }
        }
        anyhow::bail!("the writer is gone")
    }

    /// The frames to write next: unsent data (at most [`WRITE_BATCH`], with the last sequence
    /// number among them, lone or not at `now`), and the answer to a knock when one came.
    fn take_work(&self, now: Instant) -> anyhow::Result<Work> {
        let mut state = self.lock();
        // Sequence numbers in the queue are consecutive.
        let first_unsent = state
            .queue
            .front()
            .map_or(0, |q| (state.sent_upto + 1).saturating_sub(q.seq) as usize);
        let frames: Vec<Bytes> = state
            .queue
            .range(first_unsent.min(state.queue.len())..)
            .take(WRITE_BATCH)
            .map(|q| q.frame.clone())
            .collect();
        let batch = (!frames.is_empty()).then(|| {
            state.sent_upto += frames.len() as u64;
            self.frames_written.fetch_add(frames.len() as u64, Relaxed);
            if state.waiting_since.is_none() {
                state.waiting_since = Some(now);
                self.outstanding.notify_one();
            }
            let lone = state
                .last_batch_at
                .is_none_or(|last| now.saturating_duration_since(last) >= LONE_AFTER);
            state.last_batch_at = Some(now);
            Batch {
                frames,
                upto: state.sent_upto,
                lone,
            }
        });
        let knock_answer = match (self.knock_ack.swap(false, Relaxed), state.received) {
            (true, Some(received)) => Some(encode_frame(&LinkFrame::Ack {
                upto: received.upto,
            })?),
            _ => None,
        };
        Ok(Work {
            batch,
            knock_answer,
        })
    }
}

/// How long written frames may wait for an acknowledgement, with nothing heard from the
/// neighbour, before the link is taken for dead: [`SILENT_LINK`], or [`SILENT_ROUND_TRIPS`] of
/// the connection's smoothed round trip `rtt` where that is longer.
pub fn silence_limit(rtt: Duration) -> Duration {
    SILENT_LINK.max(rtt.saturating_mul(SILENT_ROUND_TRIPS))
}

/// How much one of a neighbour's process counts (its time waiting for a CPU, or running on one)
/// grew during a silence: the silence's start, the count at its first look, and when that was.
#[derive(Default)]
struct SinceSilent(Option<(Instant, Duration, Instant)>);

impl SinceSilent {
    /// How much `count` (read at `now`) grew since the silence that began at `since` was first
    /// looked at, and when that was (0 at that look); `None` when the count is not known.
    fn grew(
        &mut self,
        since: Instant,
        count: Option<Duration>,
        now: Instant,
    ) -> Option<(Duration, Instant)> {
        let count = count?;
        match self.0 {
            Some((at, then, first)) if at == since => Some((count.saturating_sub(then), first)),
            _ => {
                self.0 = Some((since, count, now));
                Some((Duration::ZERO, now))
            }
        }
    }
}

/// When a datagram of the connection was last seen to have arrived: its received count, as
/// the silence watch last read it, and when that count last moved.
struct Heard {
    datagrams: u64,
    at: Instant,
}

impl Heard {
    fn now(connection: &quinn::Connection) -> Heard {
        Heard {
            datagrams: connection.stats().udp_rx.datagrams,
            at: Instant::now(),
        }
    }

    /// Whether a datagram came since the last look.
    fn update(&mut self, connection: &quinn::Connection, now: Instant) -> bool {
        let datagrams = connection.stats().udp_rx.datagrams;
        let moved = datagrams != self.datagrams;
        if moved {
            *self = Heard { datagrams, at: now };
        }
        moved
    }
}

/// Data frames to write on a stream of their own.
struct Batch {
    frames: Vec<Bytes>,
    /// The sequence number of the last.
    upto: u64,
    /// None was written for [`LONE_AFTER`]: ask for the acknowledgement at once.
    lone: bool,
}

/// Resolves when QUIC has acknowledged every byte of a batch's finished stream (`None`), or
/// the neighbour stopped it (its code).
type BatchAcknowledged = std::pin::Pin<
    Box<
        dyn std::future::Future<Output = Result<Option<quinn::VarInt>, quinn::StoppedError>> + Send,
    >,
>;

/// What the writer has to do.
struct Work {
    batch: Option<Batch>,
    /// An acknowledgement of what was handled, sent when the neighbour knocked: whatever is
    /// sent makes a stale connection draw a reset.
    knock_answer: Option<Vec<u8>>,
}

/// Whether two socket addresses are one (an IPv4 address and its IPv4-mapped IPv6 form alike).
/// Fail once the neighbour's process, on this machine, has exited ([`crate::exits`]); never
/// for a neighbour elsewhere.
async fn watch_exit(exit: &Watch) -> anyhow::Result<()> {
    match exit {
        Watch::Elsewhere => std::future::pending().await,
        Watch::Exited => {}
        Watch::Watching(process) => process.exited().await,
    }
    anyhow::bail!("the neighbour's process exited (seen on this machine)")
}

fn same_address(a: std::net::SocketAddr, b: std::net::SocketAddr) -> bool {
    a.port() == b.port() && a.ip().to_canonical() == b.ip().to_canonical()
}

/// The link codec: a 4-byte big-endian length, then a body of at most [`MAX_FRAME_LEN`]
/// bytes, exactly as `protocol::wire` frames them.
pub fn codec() -> LengthDelimitedCodec {
    LengthDelimitedCodec::builder()
        .length_field_length(PREFIX_LEN)
        .big_endian()
        .max_frame_length(MAX_FRAME_LEN)
        .new_codec()
}

fn display_result(result: &anyhow::Result<()>) -> String {
    match result {
        Ok(()) => "closed".into(),
        Err(e) => format!("{e:#}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuberoute_protocol::wire::decode_frame;

    #[test]
    fn a_link_is_given_eight_round_trips_where_they_are_longer_than_the_silent_link_time() {
        assert_eq!(silence_limit(Duration::ZERO), SILENT_LINK);
        assert_eq!(silence_limit(Duration::from_millis(10)), SILENT_LINK);
        assert_eq!(silence_limit(Duration::from_millis(312)), SILENT_LINK);
        assert_eq!(
            silence_limit(Duration::from_millis(313)),
            Duration::from_millis(2504)
        );
        assert_eq!(
            silence_limit(Duration::from_secs(2)),
            Duration::from_secs(16)
        );
        assert_eq!(silence_limit(Duration::MAX), Duration::MAX);
    }

    /// What a neighbour's process did during a silence counts from the silence's first look,
    /// and a new silence (it was heard from) starts counting afresh.
    #[test]
    fn a_neighbours_cpu_counts_from_the_silence_they_belong_to() {
        let ms = Duration::from_millis;
        let (first, second) = (Instant::now(), Instant::now() + ms(10));
        let at = |n| first + ms(n);
        let mut ran = SinceSilent::default();
        // First looked at 50 ms into the silence: counted from then.
        assert_eq!(
            ran.grew(first, Some(ms(100)), at(50)),
            Some((Duration::ZERO, at(50))),
            "first look"
        );
        assert_eq!(
            ran.grew(first, Some(ms(100)), at(60)),
            Some((Duration::ZERO, at(50))),
            "did not run"
        );
        assert_eq!(
            ran.grew(first, Some(ms(103)), at(70)),
            Some((ms(3), at(50)))
        );
        assert_eq!(
            ran.grew(second, Some(ms(110)), at(80)),
            Some((Duration::ZERO, at(80))),
            "heard: afresh"
        );
        assert_eq!(
            ran.grew(second, Some(ms(111)), at(90)),
            Some((ms(1), at(80)))
        );
        // Not on this machine: nothing is known.
        let mut elsewhere = SinceSilent::default();
        assert_eq!(elsewhere.grew(first, None, at(0)), None);
        assert_eq!(elsewhere.grew(first, None, at(10)), None);
    }

    const ME: u64 = 77;

    /// A knock from the address the link's connection goes to is the same neighbour there; from
    /// another, it has moved (an IPv4 address in IPv6 form is the same address).
    #[test]
    fn an_address_and_its_mapped_form_are_one() {
        let v4: std::net::SocketAddr = "10.210.0.5:7000".parse().unwrap();
        let mapped: std::net::SocketAddr = "[::ffff:10.210.0.5]:7000".parse().unwrap();
        assert!(same_address(v4, mapped));
        assert!(same_address(v4, v4));
        assert!(!same_address(v4, "10.210.0.9:7000".parse().unwrap()));
        assert!(!same_address(v4, "10.210.0.5:7001".parse().unwrap()));
    }

    fn link(capacity: usize) -> Link {
        Link::new(
            NodeId(0),
            NodeId(1),
            "127.0.0.1:1".into(),
            capacity,
            Arc::new(Budget::new(usize::MAX)),
        )
    }

    /// The sequence numbers of the data frames `take_work` hands out as a batch (checking the
    /// batch's last), and a knock answer's `upto`.
    fn work(link: &Link) -> (Vec<u64>, Option<u64>) {
        let work = link.take_work(Instant::now()).unwrap();
        let mut seqs = Vec::new();
        if let Some(Batch { frames, upto, .. }) = work.batch {
            for frame in frames {
                match decode_frame::<LinkFrame>(&frame).unwrap() {
                    LinkFrame::Data { seq, .. } => seqs.push(seq),
                    other => panic!("{other:?} in a batch"),
                }
            }
            assert_eq!(seqs.last(), Some(&upto), "a batch ends at its last frame");
        }
        let knock = work
            .knock_answer
            .map(|frame| match decode_frame(&frame).unwrap() {
                LinkFrame::Ack { upto } => upto,
                other => panic!("{other:?} answers a knock"),
            });
        (seqs, knock)
    }

    fn hello(incarnation: u64, received: Option<(u64, u64)>) -> Hello {
        Hello {
            node: NodeId(1),
            topology: "q:2".parse().unwrap(),
            incarnation,
            received: received.map(|(incarnation, upto)| Received { incarnation, upto }),
            revocation_serial: 0,
            process: None,
        }
    }

    #[test]
    fn the_budget_bounds_the_bytes_queued_and_acknowledgements_give_them_back() {
        let budget = Arc::new(Budget::new(1000));
        let link = Link::new(
            NodeId(0),
            NodeId(1),
            "127.0.0.1:1".into(),
            4096,
            budget.clone(),
        );
        let mut queued = 0;
        while link.enqueue(vec![0; 100], None).is_ok() {
            queued += 1;
        }
        assert_eq!(link.enqueue(vec![0; 100], None), Err(NotQueued::OverBudget));
        assert!(queued >= 5, "{queued} packets of 100 bytes in 1000");
        assert!(budget.held() <= 1000 && budget.held() > 900);
        let (seqs, _) = work(&link);
        link.on_ack(*seqs.last().unwrap());
        assert_eq!(budget.held(), 0);
        assert!(link.enqueue(vec![0; 100], None).is_ok());
        assert_eq!(link.take_queued(), 1);
        assert_eq!(budget.held(), 0);
    }

    #[test]
    fn a_packet_that_no_longer_fits_a_frame_is_refused_not_a_panic() {
        let link = link(4);
        let packet = vec![7u8; MAX_FRAME_LEN - 2];
        assert_eq!(link.enqueue(packet, None), Err(NotQueued::TooLarge));
        assert_eq!(link.queued(), 0);
        assert!(link.enqueue(vec![1], None).is_ok(), "the link still works");
    }

    #[test]
    fn a_full_buffer_refuses() {
        let link = link(2);
        assert!(link.enqueue(vec![1], None).is_ok());
        assert!(link.enqueue(vec![2], None).is_ok());
        assert_eq!(link.enqueue(vec![3], None), Err(NotQueued::Full));
        assert_eq!(link.queued(), 2);
        assert_eq!(link.take_queued(), 2);
        assert!(link.enqueue(vec![3], None).is_ok());
    }

    #[test]
    fn frames_are_written_once_and_kept_until_acknowledged() {
        let link = link(10);
        for i in 0..3 {
            link.enqueue(vec![i], None).unwrap();
        }
        assert_eq!(work(&link), (vec![1, 2, 3], None));
        assert_eq!(work(&link), (vec![], None));
        link.on_ack(2);
        assert_eq!(link.queued(), 1);
        // An acknowledgement of frames never written is clamped to what was written.
        link.enqueue(vec![4], None).unwrap();
        link.on_ack(99);
        assert_eq!(link.queued(), 1);
        assert_eq!(work(&link), (vec![4], None));
        link.on_ack(4);
        assert_eq!(link.queued(), 0);
    }

    #[test]
    fn a_new_connection_resends_what_the_neighbour_did_not_handle() {
        let link = link(10);
        for i in 0..5 {
            link.enqueue(vec![i], None).unwrap();
        }
        assert_eq!(work(&link).0, vec![1, 2, 3, 4, 5]);
        // The connection breaks; the neighbour's hello says it handled up to 3.
        link.on_hello(ME, &hello(9, Some((ME, 3))));
        assert_eq!(link.queued(), 2);
        assert_eq!(work(&link).0, vec![4, 5]);
        // A restarted neighbour knows nothing of us: everything unacknowledged goes again.
        link.on_hello(ME, &hello(10, None));
        assert_eq!(work(&link).0, vec![4, 5]);
        // A hello about another incarnation of ours counts for nothing either.
        link.on_hello(ME, &hello(10, Some((ME + 1, 5))));
        assert_eq!(work(&link).0, vec![4, 5]);
    }

    #[test]
    fn buffer_corruption_touches_only_frames_not_yet_written() {
        let link = link(10);
        for i in 0..4 {
            link.enqueue(vec![i; 8], None).unwrap();
        }
        // Frames 1 and 2 are written and wait for their acknowledgement; 3 and 4 wait to go.
        link.lock().sent_upto = 2;
        let chaos = crate::chaos::Chaos::default();
        let mut rng = env::rng(1);
        assert_eq!(link.corrupt_queued(&chaos, 1_000_000, &mut rng), 2);
        let marked: Vec<(u64, bool)> = link
            .lock()
            .queue
            .iter()
            .map(|q| match decode_frame::<LinkFrame>(&q.frame).unwrap() {
                LinkFrame::Data { seq, mark, .. } => (seq, mark.is_some()),
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(marked, [(1, false), (2, false), (3, true), (4, true)]);
    }

    #[test]
    fn an_emptied_queue_gives_back_what_a_burst_grew() {
        let link = link(10_000);
        for i in 0..5_000u32 {
            link.enqueue(i.to_be_bytes().to_vec(), None).unwrap();
        }
        assert!(link.lock().queue.capacity() >= 5_000);
        link.lock().sent_upto = 5_000;
        link.on_ack(4_999);
        assert!(link.lock().queue.capacity() >= 1, "one frame still waits");
        link.on_ack(5_000);
        let state = link.lock();
        assert!(state.queue.is_empty());
        assert!(
            state.queue.capacity() <= QUEUE_KEPT,
            "{}",
            state.queue.capacity()
        );
    }

    #[test]
    fn a_batch_is_at_most_write_batch_frames() {
        let link = link(1000);
        for i in 0..WRITE_BATCH + 10 {
            link.enqueue(vec![i as u8], None).unwrap();
        }
        let (first, _) = work(&link);
        assert_eq!(first.len(), WRITE_BATCH);
        assert_eq!(
            work(&link).0,
            (WRITE_BATCH as u64 + 1..=WRITE_BATCH as u64 + 10).collect::<Vec<_>>()
        );
        assert_eq!(work(&link), (vec![], None));
    }

    #[test]
    fn a_batch_after_a_quiet_while_is_lone() {
        let link = link(10);
        let t0 = Instant::now();
        let lone_at = |at: Instant| {
            link.enqueue(vec![1], None).unwrap();
            link.take_work(at).unwrap().batch.unwrap().lone
        };
        assert!(lone_at(t0), "the first batch");
        assert!(!lone_at(t0 + Duration::from_millis(1)), "close behind");
        assert!(
            !lone_at(t0 + Duration::from_millis(20)),
            "close behind the last"
        );
        assert!(lone_at(t0 + Duration::from_millis(20) + LONE_AFTER));
    }

    /// The list in force, as `signed_revocations` gives it.
    fn list(serial: u64) -> Option<(u64, Arc<[u8]>)> {
        Some((serial, vec![serial as u8; 3].into()))
    }

    /// Which revocation list a link hands its neighbour: none to one that holds the same (a
    /// start of the whole cluster sends none), the newer one to one behind, once per
    /// connection, and never back to the neighbour that handed it over.
    #[test]
    fn a_newer_revocation_list_is_handed_once_per_connection_to_a_neighbour_behind() {
        let link = link(10);
        let mut behind = hello(9, None);
        behind.revocation_serial = 2;
        link.on_hello(ME, &behind);
        assert!(
            link.hand_over.load(Relaxed),
            "the writer looks after a hello"
        );
        assert_eq!(link.revocations_to_hand(None), None, "no list here");
        assert_eq!(link.revocations_to_hand(list(2)), None, "the same serial");
        assert_eq!(link.revocations_to_hand(list(1)), None, "an older one");
        assert_eq!(link.revocations_to_hand(list(3)), list(3).map(|l| l.1));
        assert_eq!(link.revocations_to_hand(list(3)), None, "once");
        // A newer list taken later goes too, once.
        link.revocations_changed();
        assert!(link.hand_over.load(Relaxed));
        assert!(link.revocations_to_hand(list(4)).is_some());
        assert_eq!(link.revocations_to_hand(list(4)), None);
        // A new connection: what its hello says is what the neighbour holds.
        link.on_hello(ME, &hello(10, None));
        assert!(
            link.revocations_to_hand(list(4)).is_some(),
            "restarted with none"
        );

        // A list the neighbour handed over, taken here: not handed back.
        link.on_hello(ME, &hello(11, None));
        assert!(!link.on_list_offered(ListOffered::Held(5)));
        assert_eq!(link.revocations_to_hand(list(5)), None);
        // An older one refused here: the neighbour is behind, and handed ours, once.
        link.on_hello(ME, &hello(12, None));
        link.hand_over.store(false, Relaxed);
        assert!(!link.on_list_offered(ListOffered::Behind(1)));
        assert!(link.hand_over.load(Relaxed));
        assert!(link.revocations_to_hand(list(5)).is_some());
        assert!(!link.on_list_offered(ListOffered::Behind(1)));
        assert_eq!(link.revocations_to_hand(list(5)), None, "not again");
        // A malformed or badly signed one is a malformed frame, and says nothing of the
        // neighbour's serial.
        link.on_hello(ME, &hello(13, None));
        assert!(link.on_list_offered(ListOffered::Invalid));
        assert!(link.revocations_to_hand(list(5)).is_some());
    }

    #[test]
    fn handled_frames_are_reported_by_hello_and_to_a_knock() {
        let link = link(10);
        link.on_hello(ME, &hello(9, None));
        for seq in 1..=5 {
            link.on_data(9, seq);
        }
        // No acknowledgement of the link's own goes out: QUIC's acknowledges the batches.
        assert_eq!(work(&link), (vec![], None));
        // A knock is answered with what was handled, alone or beside data.
        link.knock("127.0.0.1:9".parse().unwrap());
        assert_eq!(work(&link), (vec![], Some(5)));
        assert_eq!(work(&link), (vec![], None), "one answer per knock");
        link.enqueue(vec![1], None).unwrap();
        link.knock("127.0.0.1:9".parse().unwrap());
        assert_eq!(work(&link), (vec![1], Some(5)));
        // Our hello after a reconnection reports the last frame handled.
        assert_eq!(
            link.lock().received,
            Some(Received {
                incarnation: 9,
                upto: 5
            })
        );
        // A restarted neighbour's frames are counted afresh.
        link.on_hello(ME, &hello(11, None));
        assert_eq!(link.lock().received.unwrap().upto, 0);
    }
}
