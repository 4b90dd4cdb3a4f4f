//! The node: where bytes from links and requests from clients meet the protocol.
//!
//! Every routing decision is the protocol crate's front door: the control API turns a client's
//! request into its routes, [`Node::input`] starts the set (the paper's `input(M, D)`) and
//! [`Node::handle_data`] runs `rcv` (`hop`) through a [`Process`], which assigns the paper's
//! process variables and never reads them; one path for both routing modes. This module only
//! decodes, checks the end-to-end checksum at the destination, counts, and moves bytes to the
//! link the protocol chose.

use crate::budget::{Budget, Shares};
use crate::chaos::{Chaos, Fate};
use crate::config::{ConfigError, DaemonArgs, NodeConfig};
use crate::delivery::{DeliveryEnds, Resend};
use crate::env::{self, Instant, now_us};
use crate::io_counts;
use crate::keeping::{Keeping, KeptSet, Written};
use crate::keys::Keys;
use crate::link::{Link, LinkOwner, NotQueued};
use crate::output::{Output, Pushed};
use crate::relay::Forwarding;
use crate::reload::Settings;
use crate::stats::{Drop, Event, Side, Stats};
use crate::store::Outcome;
use cuberoute_protocol::delivery::{
    Envelope, Failure as DeliveryFailure, InboxLimits, Mode, OutboxFull, OutboxLimits, Received,
    SetKey, Shape,
};
use cuberoute_protocol::seal::pair::{OpenError, OpenLimits, Opener, Sealer};
use cuberoute_protocol::seal::sealed::{Bound, SealError};
use cuberoute_protocol::wire::control::{Delivery, Happening, NodeStatus, Reload};
use cuberoute_protocol::wire::link::ChaosMark;
use cuberoute_protocol::wire::message::Message;
use cuberoute_protocol::wire::packet::{DataPacket, is_intact, set_checksum};
use cuberoute_protocol::wire::{decode_body, encode_body};
use cuberoute_protocol::{Action, NodeId, Process, ProcessVars, Routes, SendRequest, Topology};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;
use tracing::{debug, info, warn};

/// A message set waiting in the input buffer: its routes (decided by the front door when the
/// control API accepted it) and its payload.
#[derive(Debug)]
pub struct InputJob {
    pub seq: u64,
    /// 1 for a set's first send; more for a reliable set sent again.
    pub attempt: u32,
    pub routes: Routes,
    pub payload: Payload,
    pub trace: bool,
    pub sent_at_us: u64,
    /// What the set holds of the budget until `input` has put it on the links.
    pub held: usize,
    /// Seal every message of the set end to end.
    pub sealed: bool,
}

/// How long a reliable set is kept for resending, and the shape of its pieces (what its
/// destination's acknowledgement must name).
#[derive(Clone, Copy, Debug)]
pub struct Keep {
    pub deadline_us: u64,
    pub shape: Shape,
}

/// What a set's messages carry.
#[derive(Clone, Debug)]
pub enum Payload {
    /// The plain mode: the payload on every route (or cut into parts, with `split`).
    Plain(Vec<u8>),
    /// A delivery mode: one envelope per route, in route order.
    Enveloped(Vec<Vec<u8>>),
}

/// Why a set was not taken.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error(transparent)]
    Draining(#[from] Draining),
    #[error(transparent)]
    OutboxFull(#[from] OutboxFull),
    #[error(
        "the set was sent but its store did not keep it ({0}): it is sent again only while this process lives"
    )]
    NotKept(String),
    #[error(
        "the node's link and input buffers hold {held} of the {limit} bytes they may (3/8 of buffers.memory_mib); this set needs {needed} more: try again later"
    )]
    MemoryBound {
        held: usize,
        limit: usize,
        needed: usize,
    },
}

pub struct Node {
    pub topology: Topology,
    pub id: NodeId,
    /// Random at every start: link sequence numbers are per incarnation.
    pub incarnation: u64,
    started: Instant,
    /// The paper's process and its variables (k, curPhase, posToFlip, the map, ...).
    process: Mutex<Process>,
    /// One per neighbour.
    pub links: BTreeMap<NodeId, Arc<Link>>,
    pub output: Output,
    pub stats: Stats,
    input: mpsc::Sender<InputJob>,
    input_capacity: usize,
    next_seq: AtomicU64,
    draining: AtomicBool,
    latency: metrics::Histogram,
    pub chaos: Chaos,
    /// The delivery layer's inbox and outbox.
    pub delivery: DeliveryEnds,
    /// The bytes every link's message buffer and the input buffer hold together.
    pub budget: Arc<Budget>,
    /// The configuration in force, reloadable.
    pub settings: Settings,
    /// One permit per byte of control requests and answers in progress.
    pub control_bytes: Arc<tokio::sync::Semaphore>,
    pub control_bytes_limit: usize,
    /// The key directory, this node's secret key and the revocation list.
    pub keys: Arc<Keys>,
    /// Whether sets are sealed unless a client asks for one clear (`seal`).
    pub seal: bool,
    sealer: Mutex<Sealer>,
    opener: Mutex<Opener>,
    /// The store: reliable sets kept across a crash (`None`: in memory only).
    pub keeping: Option<Keeping>,
}

/// The notice of a delivery to the output buffer.
fn delivered(d: &Delivery) -> Happening {
    Happening::Delivered {
        src: d.src,
        seq: d.seq,
        sent_at_us: d.sent_at_us,
        index: d.index,
        k: d.k,
        hops: d.hops,
        latency_us: d.latency_us,
        path: d.path.clone(),
    }
}

impl Node {
    /// The node and the receiving end of its input buffer (for [`Node::run_input`]).
    pub fn new(
        config: &NodeConfig,
        args: DaemonArgs,
        keeping: Option<Keeping>,
    ) -> (Arc<Node>, mpsc::Receiver<InputJob>) {
        let (input, input_rx) = mpsc::channel(config.buffers.input);
        let shares = Shares::of(config.buffers.memory_bytes);
        let budget = Arc::new(Budget::new(shares.links_and_input));
        let links: BTreeMap<NodeId, Arc<Link>> = config
            .topology
            .neighbours(config.id)
            .map(|n| {
                let addr = config
                    .manifest
                    .node(n)
                    .expect("the configuration checked the manifest lists every neighbour")
                    .addr
                    .clone();
                (
                    n,
                    Arc::new(Link::new(
                        config.id,
                        n,
                        addr,
                        config.buffers.link,
                        budget.clone(),
                    )),
                )
            })
            .collect();
        // A revocation list read at start is in force before any link runs: a revoked
        // neighbour's link is refused from the first moment, and a node that finds itself
        // revoked links with nobody.
        let itself_revoked = config.keys.is_revoked(config.id);
        for (neighbour, link) in &links {
            if itself_revoked || config.keys.is_revoked(*neighbour) {
                link.revoke();
            }
        }
        let node = Node {
            topology: config.topology,
            id: config.id,
            incarnation: env::random(),
            started: Instant::now(),
            process: Mutex::new(Process::new(config.topology, config.id)),
            links,
            output: Output::new(config.buffers.output, shares.output),
            stats: Stats::default(),
            input,
            input_capacity: config.buffers.input,
            // Sequence ids start at random so that sets of different runs are not confused.
            next_seq: AtomicU64::new(u64::from(env::random::<u32>())),
            draining: AtomicBool::new(false),
            latency: metrics::histogram!("cuberoute_delivery_latency_seconds"),
            chaos: Chaos::default(),
            delivery: DeliveryEnds::new(
                InboxLimits {
                    max_bytes: shares.inbox,
                    ..InboxLimits::default()
                },
                OutboxLimits {
                    max_bytes: shares.outbox,
                    ..OutboxLimits::default()
                },
            ),
            budget,
            settings: Settings::new(config, args),
            control_bytes: Arc::new(tokio::sync::Semaphore::new(shares.control)),
            control_bytes_limit: shares.control,
            keys: config.keys.clone(),
            seal: config.seal,
            sealer: Mutex::new(Sealer::new(config.id, config.keys.secret.clone())),
            opener: Mutex::new(Opener::new(
                config.id,
                config.keys.secret.clone(),
                now_us(),
                OpenLimits::default(),
            )),
            keeping,
        };
        (Arc::new(node), input_rx)
    }

    /// Put a message set into the input buffer, waiting while it is full (backpressure on
    /// the client). Returns the set's sequence id and send time.
    ///
    /// A reliable set (`keep` given, enveloped) is kept for resending until acknowledged or its
    /// deadline; a full outbox refuses it.
    pub async fn submit(
        &self,
        routes: Routes,
        payload: Payload,
        trace: bool,
        keep: Option<Keep>,
        sealed: bool,
    ) -> Result<(u64, u64), Refusal> {
        if self.is_draining() {
            return Err(Draining.into());
        }
        let held = match &payload {
            Payload::Plain(payload) => payload.len() * routes.k(),
            Payload::Enveloped(envelopes) => envelopes.iter().map(Vec::len).sum(),
        };
        if !self.budget.try_hold(held) {
            return Err(Refusal::MemoryBound {
                held: self.budget.held(),
                limit: self.budget.limit(),
                needed: held,
            });
        }
        // From here the set is the input task's to release, or given back below.
        let give_back = |refusal: Refusal| {
            self.budget.release(held);
            refusal
        };
        let seq = self.next_seq.fetch_add(1, Relaxed);
        let sent_at_us = now_us();
        let mut kept = None;
        if let (Some(keep), Payload::Enveloped(envelopes)) = (keep, &payload) {
            let key = SetKey {
                src: self.id,
                seq,
                sent_at_us,
            };
            let resend = Resend {
                routes: routes.clone(),
                envelopes: envelopes.clone(),
                trace,
                sealed,
                shape: keep.shape,
            };
            self.delivery
                .keep(key, resend, keep.deadline_us)
                .map_err(|full| give_back(full.into()))?;
            // Written before the set goes out; the client hears "accepted" once it is durable.
            if let Some(keeping) = &self.keeping {
                let set = KeptSet {
                    dst: routes.destinations()[0],
                    envelopes: envelopes
                        .iter()
                        .map(|e| serde_bytes::ByteBuf::from(e.clone()))
                        .collect(),
                    trace,
                    sealed,
                    shape: keep.shape,
                    deadline_us: keep.deadline_us,
                };
                kept = Some(keeping.keep(key, &set));
            }
        }
        if matches!(payload, Payload::Enveloped(_)) {
            Stats::count(&self.delivery.counters.sets_sent);
        }
        let job = InputJob {
            seq,
            attempt: 1,
            routes,
            payload,
            trace,
            sent_at_us,
            held,
            sealed,
        };
        self.input
            .send(job)
            .await
            .map_err(|_| give_back(Draining.into()))?;
        Stats::count(&self.stats.sets_accepted);
        // Let the input task put the packets on their links before this request's answer goes
        // out: the answer can wait, the packets are the latency.
        tokio::task::yield_now().await;
        if let Some(kept) = kept
            && let Err(e) = kept.await
        {
            return Err(Refusal::NotKept(e));
        }
        Ok((seq, sent_at_us))
    }

    /// The input task: run `input` for every set in the input buffer, in order.
    pub async fn run_input(self: Arc<Self>, mut jobs: mpsc::Receiver<InputJob>) {
        while let Some(job) = jobs.recv().await {
            self.input(job);
        }
    }

    /// The action `input(M, D)`: the set's first packets, one per route, on the first hops'
    /// links.
    fn input(&self, job: InputJob) {
        self.stats.touch();
        // Its packets now hold their own bytes on the links.
        self.budget.release(job.held);
        let (split, single) = (job.routes.is_split(), job.routes.is_single());
        let message = |part| {
            Message::new(self.id, job.seq, split, job.sent_at_us, job.trace, part)
                .attempt(job.attempt)
                .single(single)
        };
        let messages = match job.payload {
            Payload::Plain(payload) => job
                .routes
                .parts(&payload)
                .into_iter()
                .map(message)
                .collect(),
            Payload::Enveloped(envelopes) => envelopes
                .into_iter()
                .map(|e| message(e).enveloped())
                .collect(),
        };
        let sends = self
            .process
            .lock()
            .expect("process lock")
            .start(&job.routes, messages);
        for (first, mut packet) in sends {
            if job.sealed && !self.seal_message(&mut packet) {
                continue;
            }
            set_checksum(&mut packet);
            debug!(seq = job.seq, index = packet.route.index(), to = %first, "input");
            if self.send_to(first, &packet, None) {
                Stats::count(&self.stats.packets_sent);
            }
        }
    }

    /// The action `rcv(m) from q` for the bytes of one data frame from `from`, for packets of
    /// either routing mode. `mark` is set when the chaos tooling corrupted the packet on its way
    /// here.
    pub fn handle_data(&self, from: NodeId, bytes: &[u8], mark: Option<ChaosMark>) {
        // One more hop since the corruption, if there was one.
        let mark = mark.map(|m| ChaosMark {
            hops: m.hops.saturating_add(1),
            ..m
        });
        let ended = |fate| {
            if let Some(mark) = mark {
                self.chaos.ended(mark, fate);
            }
        };
        let packet = match decode_body::<DataPacket>(bytes) {
            Ok(packet) => packet,
            Err(e) => {
                debug!(%from, error = %e, "undecodable packet");
                self.stats.drop(Drop::Malformed);
                ended(Fate::Dropped);
                return;
            }
        };
        let span = tracing::debug_span!("packet", src = ?packet.route.src(), dst = ?packet.route.dst(),
            index = packet.route.index(), seq = packet.message.seq);
        let _entered = span.enter();
        let action = self.process.lock().expect("process lock").hop(packet, from);
        match action {
            Action::Deliver(mut packet) => {
                packet.message.record_hop(self.id);
                ended(if self.deliver(packet) {
                    Fate::Delivered
                } else {
                    Fate::Dropped
                });
            }
            Action::Forward { to, mut packet } => {
                if packet
                    .route
                    .src()
                    .is_some_and(|src| self.keys.is_revoked(src))
                    || self.keys.is_revoked(to)
                {
                    debug!(%to, "revoked source or next hop");
                    self.stats.drop(Drop::Revoked);
                    ended(Fate::Dropped);
                    return;
                }
                packet.message.record_hop(self.id);
                let seal = |bound: &Bound, plaintext: &[u8]| self.seal(bound, plaintext).ok();
                let forwarding = Forwarding {
                    topology: self.topology,
                    me: self.id,
                    to,
                    seal: &seal,
                };
                if let Some(forgery) = self.chaos.relay.on_forward(&mut packet, &forwarding) {
                    debug!(%to, forgery = forgery.as_str(), "forged");
                }
                debug!(%to, "forward");
                if self.send_to(to, &packet, mark) {
                    Stats::count(&self.stats.packets_forwarded);
                } else {
                    ended(Fate::Dropped);
                }
            }
            Action::Drop { reason, .. } => {
                debug!(%from, reason = reason.as_str(), "drop");
                self.stats.drop(Drop::Route(reason));
                ended(Fate::Dropped);
            }
        }
    }

    /// Seal the message of `packet` (a copy or piece of a set of this node's) to its
    /// destination, binding its clear fields. False, and counted, if it cannot be.
    fn seal_message(&self, packet: &mut DataPacket) -> bool {
        let (Some(src), Some(dst)) = (packet.route.src(), packet.route.dst()) else {
            self.stats.drop(Drop::Malformed);
            return false;
        };
        let message = &mut packet.message;
        message.sealed = true;
        let bound = message.bound(src, dst, packet.route.index());
        match self.seal(&bound, &message.payload) {
            Ok(bytes) => {
                message.payload = bytes;
                true
            }
            Err(SealError::UnknownNode(node)) => {
                warn!(%node, "no sealing key for the destination");
                self.stats.drop(Drop::Seal(OpenError::UnknownSealer(node)));
                false
            }
        }
    }

    /// Seal `plaintext` to `bound.dst` in this node's name; the first message to a destination
    /// sets the pair up, a key agreement counted with its CPU time.
    fn seal(&self, bound: &Bound, plaintext: &[u8]) -> Result<Vec<u8>, SealError> {
        let mut sealer = self.sealer.lock().expect("sealer lock");
        let may = !sealer.has_pair(bound.dst);
        self.stats.key_agreements_around(
            Side::Seal,
            &mut *sealer,
            may,
            Sealer::key_agreements,
            |s| s.seal(&*self.keys, bound, now_us(), plaintext, env::random),
        )
    }

    /// Send again a packet this node forwarded before, unchanged, to the neighbour it went to
    /// (a replaying relay of the chaos tooling, `crate::replay`). Not counted as forwarded: the
    /// packet was counted when it was; its second life is the relay's. False, and counted, if it
    /// could not be queued.
    pub fn send_again(&self, to: NodeId, packet: &DataPacket) -> bool {
        self.send_to(to, packet, None)
    }

    /// Encode `packet` onto the link to `to`. False, and counted, if it could not be queued.
    /// A packet the chaos tooling corrupted keeps its `mark`; one it corrupts now gets one.
    fn send_to(&self, to: NodeId, packet: &DataPacket, mark: Option<ChaosMark>) -> bool {
        let Some(link) = self.links.get(&to) else {
            // The protocol only ever picks a neighbour; a broken promise is still counted.
            warn!(%to, "the protocol chose a next hop that is not a neighbour");
            self.stats.drop(Drop::NoLink);
            return false;
        };
        if link.is_revoked() {
            // Nothing is ever written to a revoked neighbour: the packet would wait for good.
            debug!(%to, "next hop revoked");
            self.stats.drop(Drop::Revoked);
            link.count_drop(Drop::Revoked.as_str());
            return false;
        }
        if packet.message.attempt > 1 && !link.is_up() {
            // Resends do not pile up behind a dead neighbour or a cut link.
            debug!(%to, "resend not queued behind a down link");
            self.stats.drop(Drop::ResendLinkDown);
            link.count_drop(Drop::ResendLinkDown.as_str());
            return false;
        }
        let mut bytes = match encode_body(packet) {
            Ok(bytes) => bytes,
            Err(e) => {
                debug!(error = %e, "packet does not encode");
                self.stats.drop(Drop::Malformed);
                return false;
            }
        };
        let carried = self.chaos.maybe_corrupt(&mut bytes, mark);
        match link.enqueue(bytes, carried) {
            Ok(()) => true,
            Err(why) => {
                let drop = match why {
                    NotQueued::Full => Drop::LinkBufferFull,
                    NotQueued::OverBudget => Drop::MemoryBound,
                    NotQueued::TooLarge => Drop::FrameTooLarge,
                };
                debug!(%to, reason = drop.as_str(), "not queued");
                self.stats.drop(drop);
                link.count_drop(drop.as_str());
                if let (Some(fresh), None) = (carried, mark) {
                    // Corrupted here and dropped here: it ends here (the caller ends only
                    // what arrived corrupted).
                    self.chaos.ended(fresh, Fate::Dropped);
                }
                false
            }
        }
    }

    /// Hand a packet that reached its destination to the output buffer if its end-to-end
    /// checksum holds. False, and counted, if it was dropped instead.
    fn deliver(&self, packet: DataPacket) -> bool {
        if !is_intact(&packet) {
            debug!("checksum failed");
            self.stats.drop(Drop::Checksum);
            return false;
        }
        let (Some(src), index) = (packet.route.src(), packet.route.index()) else {
            // An intact packet has a route with its ends; counted anyway.
            self.stats.drop(Drop::Malformed);
            return false;
        };
        // A single-path set is one copy, whatever its route's k.
        let k = if packet.message.single {
            1
        } else {
            packet.route.copies(self.topology)
        };
        if self.keys.is_revoked(src) {
            debug!(%src, "source revoked");
            self.stats.drop(Drop::Revoked);
            return false;
        }
        let mut message = packet.message;
        if message.sealed {
            let bound = message.bound(src, self.id, index);
            let opened = {
                let mut opener = self.opener.lock().expect("opener lock");
                let may = !opener.has_pair_for(&message.payload);
                self.stats.key_agreements_around(
                    Side::Open,
                    &mut *opener,
                    may,
                    Opener::key_agreements,
                    |o| o.open(&*self.keys, &bound, now_us(), &message.payload),
                )
            };
            match opened {
                Ok(plaintext) => message.payload = plaintext,
                Err(why) => {
                    debug!(%src, reason = why.as_str(), "seal refused");
                    self.stats.drop(Drop::Seal(why));
                    return false;
                }
            }
        }
        if message.enveloped {
            return self.deliver_enveloped(src, index, k, message);
        }
        let sent_at_us = message.sent_at_us;
        let latency_us = now_us().saturating_sub(sent_at_us);
        let delivery = Delivery {
            output_index: 0,
            src,
            dst: self.id,
            seq: message.seq,
            sent_at_us,
            index,
            k,
            split: message.split,
            hops: u32::from(message.hops),
            path: message.trace,
            latency_us,
            mode: Mode::PLAIN,
            rejected_paths: Vec::new(),
            sealed: message.sealed,
            payload: message.payload,
        };
        let notice = delivered(&delivery);
        match self.output.push(delivery, false) {
            Pushed::Duplicate => {
                self.stats.drop(Drop::Duplicate);
                false
            }
            Pushed::Refused => {
                self.stats.drop(Drop::OutputFull);
                false
            }
            Pushed::Added {
                overwritten,
                unread,
            } => {
                self.count_overwrite(overwritten, unread);
                Stats::count(&self.stats.packets_delivered);
                self.latency.record(latency_us as f64 / 1e6);
                self.stats.journal.note(notice);
                debug!(latency_us, "deliver");
                true
            }
        }
    }

    /// An intact enveloped message that reached this node: an acknowledgement for a reliable
    /// set of ours, or a piece for the inbox. True if the delivery layer took it.
    fn deliver_enveloped(&self, src: NodeId, index: u8, k: u32, message: Message) -> bool {
        let envelope = match Envelope::from_bytes(&message.payload) {
            Ok(envelope) => envelope,
            Err(e) => {
                debug!(error = %e, "undecodable envelope");
                self.stats.drop(Drop::EnvelopeMalformed);
                return false;
            }
        };
        let set = SetKey {
            src,
            seq: message.seq,
            sent_at_us: message.sent_at_us,
        };
        let piece = match envelope {
            Envelope::Ack { set: acked, shape } => {
                if acked.src != self.id {
                    self.stats.drop(Drop::AckMisdirected);
                    return false;
                }
                Stats::count(&self.stats.packets_delivered);
                if self
                    .delivery
                    .acknowledged(&acked, shape, src, message.sealed)
                {
                    debug!(seq = acked.seq, "acknowledged");
                    self.settle_kept(vec![acked]);
                }
                return true;
            }
            Envelope::Piece(piece) => piece,
        };
        if u32::from(piece.k) != k {
            self.stats.drop(Drop::Delivery(DeliveryFailure::Misshapen));
            return false;
        }
        let mode = piece.mode;
        let shape = piece.shape();
        let attempt = message.attempt;
        let sealed = message.sealed;
        let now = now_us();
        let received = self
            .delivery
            .inbox(sealed)
            .lock()
            .expect("inbox lock")
            .receive(now, set, index, piece);
        // A piece the inbox took is delivered (to the delivery layer); a refused one, or one
        // whose whole set the output refused, is dropped: one counter per packet either way.
        match received {
            Received::Pending => {
                Stats::count(&self.stats.packets_delivered);
                self.delivery.wake();
                true
            }
            Received::Complete {
                payload, rejected, ..
            } => {
                let latency_us = now.saturating_sub(set.sent_at_us);
                let delivery = Delivery {
                    output_index: 0,
                    src,
                    dst: self.id,
                    seq: set.seq,
                    sent_at_us: set.sent_at_us,
                    index,
                    k,
                    split: false,
                    hops: u32::from(message.hops),
                    path: message.trace,
                    latency_us,
                    mode,
                    rejected_paths: rejected,
                    sealed: message.sealed,
                    payload,
                };
                if mode.reliable
                    && let Some(keeping) = &self.keeping
                {
                    // Into the output and acknowledged once durable (`Node::run_written`).
                    Stats::count(&self.stats.packets_delivered);
                    keeping.deliver(delivery, shape, attempt, now);
                    return true;
                }
                let notice = delivered(&delivery);
                match self.output.push(delivery, mode.reliable) {
                    Pushed::Added {
                        overwritten,
                        unread,
                    } => {
                        self.count_overwrite(overwritten, unread);
                        Stats::count(&self.stats.packets_delivered);
                        Stats::count(&self.delivery.counters.sets_delivered);
                        self.latency.record(latency_us as f64 / 1e6);
                        self.stats.journal.note(notice);
                        self.acknowledge_if_due(shape, set, attempt, sealed);
                    }
                    Pushed::Duplicate => {
                        Stats::count(&self.stats.packets_delivered);
                        self.acknowledge_if_due(shape, set, attempt, sealed);
                    }
                    Pushed::Refused => {
                        // Not acknowledged: the source sends it again, and the inbox must take
                        // it as new then.
                        self.delivery
                            .inbox(sealed)
                            .lock()
                            .expect("inbox lock")
                            .forget(&set, shape);
                        self.stats.drop(Drop::OutputFull);
                        return false;
                    }
                }
                true
            }
            Received::AlreadyDelivered { .. } => {
                Stats::count(&self.stats.packets_delivered);
                Stats::count(&self.delivery.counters.duplicate_sets);
                // A piece of a later attempt is a resend: the acknowledgement was lost, or is
                // on its way.
                self.acknowledge_if_due(shape, set, attempt, sealed);
                true
            }
            Received::Failed(failure) => {
                debug!(reason = failure.as_str(), "set piece refused");
                self.stats.drop(Drop::Delivery(failure));
                false
            }
        }
    }

    /// Acknowledge a delivered reliable `set` once per attempt of it that reaches this node
    /// (the inbox decides).
    fn acknowledge_if_due(&self, shape: Shape, set: SetKey, attempt: u32, sealed: bool) {
        if shape.mode.reliable
            && !self
                .keeping
                .as_ref()
                .is_some_and(|k| k.holds_ack(&set, shape, attempt))
            && self
                .delivery
                .inbox(sealed)
                .lock()
                .expect("inbox lock")
                .acknowledge(&set, shape, attempt)
        {
            self.acknowledge(set, shape, sealed);
        }
    }

    /// Tell the source of the reliable `set` that it is in the output for good: an
    /// acknowledgement set, enveloped, over the front door's paths back to the source (not
    /// reliable itself: a lost one makes the source send again, and this node acknowledge
    /// again).
    fn acknowledge(&self, set: SetKey, shape: Shape, sealed: bool) {
        let routes = match SendRequest::to(set.src).routes(self.topology, self.id) {
            Ok(routes) => routes,
            Err(e) => {
                warn!(error = %e, src = %set.src, "no route back for an acknowledgement");
                return;
            }
        };
        let ack = Envelope::Ack { set, shape }.to_bytes();
        let payload = Payload::Enveloped(vec![ack; routes.k()]);
        let job = InputJob {
            seq: self.next_seq.fetch_add(1, Relaxed),
            attempt: 1,
            routes,
            payload,
            trace: false,
            sent_at_us: now_us(),
            held: 0,
            sealed,
        };
        Stats::count(&self.delivery.counters.acks_sent);
        self.input(job);
    }

    /// The delivery timer, forever: send reliable sets again when due, settle those past their
    /// deadline, give up on sets that wait too long for their pieces.
    pub async fn run_delivery_timer(self: Arc<Self>) {
        let mut next_us = None;
        loop {
            self.delivery.sleep(next_us).await;
            let tick = self.delivery.tick(now_us());
            for (key, attempt, resend) in tick.resends {
                debug!(seq = key.seq, attempt, "resend");
                self.input(InputJob {
                    seq: key.seq,
                    attempt,
                    routes: resend.routes,
                    payload: Payload::Enveloped(resend.envelopes),
                    trace: resend.trace,
                    sent_at_us: key.sent_at_us,
                    held: 0,
                    sealed: resend.sealed,
                });
            }
            self.settle_kept(tick.expired);
            for (key, failure) in tick.given_up {
                debug!(seq = key.seq, src = %key.src, reason = failure.as_str(), "set given up");
                self.stats.drop(Drop::Delivery(failure));
            }
            next_us = tick.next_us;
        }
    }

    /// Forget in the store the sets of this node's that settled.
    fn settle_kept(&self, sets: Vec<SetKey>) {
        if let Some(keeping) = &self.keeping {
            keeping.settle(sets);
        }
    }

    /// The store's answers for delivered reliable sets, forever: a set durable for the first
    /// time goes to the output buffer and is acknowledged; one delivered before (a resend after
    /// a restart) is acknowledged and handed to nobody; one the store refused is forgotten by
    /// the inbox (its source sends it again) and counted.
    pub async fn run_written(self: Arc<Self>, mut written: mpsc::UnboundedReceiver<Written>) {
        let Some(keeping) = &self.keeping else {
            return;
        };
        while let Some(Written {
            delivery,
            shape,
            result,
        }) = written.recv().await
        {
            let set = SetKey {
                src: delivery.src,
                seq: delivery.seq,
                sent_at_us: delivery.sent_at_us,
            };
            let sealed = delivery.sealed;
            let attempt = keeping.finish(&set, shape);
            let drop = match result {
                Ok(Outcome::Kept { .. }) => {
                    let latency_us = delivery.latency_us;
                    let notice = delivered(&delivery);
                    // The store holds it: the output entry need not be protected.
                    if let Pushed::Added {
                        overwritten,
                        unread,
                    } = self.output.push(delivery, false)
                    {
                        self.count_overwrite(overwritten, unread);
                    }
                    Stats::count(&self.delivery.counters.sets_delivered);
                    self.latency.record(latency_us as f64 / 1e6);
                    self.stats.journal.note(notice);
                    self.acknowledge_if_due(shape, set, attempt, sealed);
                    continue;
                }
                Ok(Outcome::AlreadyDelivered { .. }) => {
                    Stats::count(&self.delivery.counters.duplicate_sets);
                    self.acknowledge_if_due(shape, set, attempt, sealed);
                    continue;
                }
                Ok(Outcome::Full) => Drop::StoreFull,
                Ok(Outcome::Done) => Drop::StoreFailed,
                Err(e) => {
                    warn!(error = %e, seq = set.seq, src = %set.src, "a delivered set was not kept: not acknowledged");
                    Drop::StoreFailed
                }
            };
            self.delivery
                .inbox(sealed)
                .lock()
                .expect("inbox lock")
                .forget(&set, shape);
            self.stats.drop(drop);
        }
    }

    /// At start, from the store: the latest kept sets back in the output buffer (up to
    /// `output` of them), and this node's unsettled sets back in the outbox, to be sent again
    /// with their own set keys (those past their deadline settle as expired).
    pub fn resume_from_store(&self, output: usize) -> Result<(), String> {
        let Some(keeping) = &self.keeping else {
            return Ok(());
        };
        let next = keeping.usage().map_err(|e| e.to_string())?.next_index;
        for delivery in keeping.entries(next.saturating_sub(output as u64), output)? {
            self.output.push(delivery, false);
        }
        let now = now_us();
        let mut settled = Vec::new();
        for (key, kept) in keeping.unsettled()? {
            if kept.deadline_us <= now {
                Stats::count(&self.delivery.counters.sets_expired);
                settled.push(key);
                continue;
            }
            // A set of one piece where the pair has more paths was sent single-path.
            let single = kept.shape.k == 1 && kept.envelopes.len() == 1;
            let routes = SendRequest {
                single,
                ..SendRequest::to(kept.dst)
            }
            .routes(self.topology, self.id)
            .map_err(|e| format!("kept set {} to {}: {e}", key.seq, kept.dst))?;
            let resend = Resend {
                routes,
                envelopes: kept.envelopes.into_iter().map(|e| e.into_vec()).collect(),
                trace: kept.trace,
                sealed: kept.sealed,
                shape: kept.shape,
            };
            match self.delivery.keep(key, resend, kept.deadline_us) {
                Ok(()) => self.stats.event(Event::StoreResumed),
                Err(e) => {
                    warn!(seq = key.seq, error = %e, "a kept set does not fit the outbox: left in the store")
                }
            }
        }
        self.settle_kept(settled);
        Ok(())
    }

    /// Drop what the store's retention no longer keeps, every minute.
    pub async fn run_store_pruning(self: Arc<Self>) {
        let Some(keeping) = &self.keeping else {
            return;
        };
        loop {
            keeping.prune(now_us());
            tokio::time::sleep(std::time::Duration::from_secs(60)).await;
        }
    }

    /// Forget in the store the settled sets no other write took along, a second after they
    /// began to wait (a node that settles nothing never wakes for it).
    pub async fn run_settled_flush(self: Arc<Self>) {
        let Some(keeping) = &self.keeping else {
            return;
        };
        loop {
            keeping.settled_waiting().await;
            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            keeping.flush_settled();
        }
    }

    /// `node` was taken out of the cluster: refuse its link for good (if it is a neighbour),
    /// as its sets and the packets it relayed are refused from now on; what waits on that
    /// link is dropped (`revoked`). If `node` is this node, it links with nobody from now on.
    pub fn revoked(&self, node: NodeId) {
        warn!(%node, "node revoked: its links and sets are refused");
        self.stats.event(Event::NodeRevoked);
        let links: Vec<&Arc<Link>> = if node == self.id {
            self.links.values().collect()
        } else {
            self.links.get(&node).into_iter().collect()
        };
        for link in links {
            link.revoke();
            let dropped = link.take_queued() as u64;
            self.stats.drop_many(Drop::Revoked, dropped);
            for _ in 0..dropped {
                link.count_drop(Drop::Revoked.as_str());
            }
        }
    }

    /// Count an output entry that made room for a new one, and whether a client had read it.
    fn count_overwrite(&self, overwritten: usize, unread: usize) {
        for _ in 0..overwritten {
            self.stats.event(Event::OutputOverwritten);
        }
        for _ in 0..unread {
            self.stats.event(Event::OutputOverwrittenUnread);
        }
    }

    /// The chaos tooling's state corruption: overwrite the paper's process variables and the
    /// input buffer's next sequence id.
    pub fn overwrite_state(&self, vars: ProcessVars, next_seq: u64) {
        self.process.lock().expect("process lock").vars = vars;
        self.next_seq.store(next_seq, Relaxed);
    }

    pub fn is_draining(&self) -> bool {
        self.draining.load(Relaxed)
    }

    /// Stop taking new sets (SIGTERM); links keep moving what is queued.
    pub fn start_draining(&self) {
        self.draining.store(true, Relaxed);
    }

    /// Sets waiting in the input buffer.
    pub fn input_queued(&self) -> usize {
        self.input_capacity - self.input.capacity()
    }

    /// Packets not yet acknowledged, over all links.
    pub fn link_queued(&self) -> usize {
        self.links.values().map(|l| l.queued()).sum()
    }

    /// Read the configuration again (SIGHUP, a reload request), apply what may change now, and
    /// note and log what changed.
    pub fn reload(&self) -> Result<Reload, ConfigError> {
        match self.settings.reload() {
            Ok(reload) => {
                info!(changed = ?reload.changed, needs_restart = ?reload.needs_restart, "configuration reloaded");
                self.stats.journal.note(Happening::Reloaded {
                    changed: reload.changed.clone(),
                });
                Ok(reload)
            }
            Err(e) => {
                warn!(error = %e, "configuration not reloaded: nothing changed");
                Err(e)
            }
        }
    }

    pub fn status(&self) -> NodeStatus {
        let revocations = self.keys.revocations();
        NodeStatus {
            id: self.id,
            topology: self.topology,
            pid: std::process::id(),
            incarnation: self.incarnation,
            uptime_ms: self.started.elapsed().as_millis() as u64,
            links: self.links.values().map(|l| l.status()).collect(),
            input_queued: self.input_queued() as u64,
            output_len: self.output.len() as u64,
            counters: {
                let mut counters = self.stats.counters();
                for (name, n) in self.delivery.counters.named() {
                    if n > 0 {
                        counters.events.insert(name.to_string(), n);
                    }
                }
                if let Some(failed) = self.keeping.as_ref().map(Keeping::failed_writes)
                    && failed > 0
                {
                    counters
                        .events
                        .insert(Event::StoreWriteFailed.as_str().to_string(), failed);
                }
                counters
            },
            chaos: self.chaos.counters(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            wire_version: cuberoute_protocol::wire::VERSION,
            config: self.settings.status(),
            buffered_bytes: self.budget.held() as u64,
            revoked: revocations.revoked.into_iter().collect(),
            revocation_serial: revocations.serial,
            io: io_counts::PROCESS.snapshot(
                &self
                    .links
                    .values()
                    .filter_map(|l| l.connection())
                    .collect::<Vec<_>>(),
            ),
        }
    }
}

impl LinkOwner for Node {
    fn id(&self) -> NodeId {
        self.id
    }

    fn topology(&self) -> Topology {
        self.topology
    }

    fn incarnation(&self) -> u64 {
        self.incarnation
    }

    fn stats(&self) -> &Stats {
        &self.stats
    }

    fn on_data(&self, from: NodeId, packet: &[u8], mark: Option<ChaosMark>) {
        self.stats.touch();
        self.handle_data(from, packet, mark)
    }
}

/// The daemon is shutting down and takes no new sets.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("the daemon is shutting down")]
pub struct Draining;
