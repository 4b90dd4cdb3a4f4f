//! The source side of the node: a client's set decided here ([`Node::send`]: its routes, its
//! envelopes in a delivery mode, a reliable set's deadline, whether it is sealed, and the one
//! check of revocation at the source), taken into the input buffer (`submit`) and put
//! on its first hops' links (`input`, the paper's `input(M, D)`), each message sealed to its
//! destination, or the set kept until a session with it is made; the delivery timer's resends
//! of this node's reliable sets, and the settling of those sets in the store.

use super::{InputJob, Node, NotOther, Payload};
use crate::delivery::Resend;
use crate::env::{self, now_us};
use crate::keeping::KeptSet;
use crate::stats::{Drop, Event, Stats};
use cuberoute_protocol::delivery::{
    EncodeError, Envelope, Mode, OutboxFull, Scheme, SetKey, Shape, pieces,
};
use cuberoute_protocol::seal::sealed::{Bound, SEAL_OVERHEAD, SealError};
use cuberoute_protocol::seal::session::OpenError;
use cuberoute_protocol::wire::control::{Accepted, MAX_PAYLOAD_LEN, SendSet};
use cuberoute_protocol::wire::message::Message;
use cuberoute_protocol::wire::packet::{DataPacket, set_checksum};
use cuberoute_protocol::{NodeId, Routes, SendError, SendRequest};
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use tokio::sync::mpsc;
use tracing::{debug, warn};

/// The longest a source keeps a reliable set ([`crate::config::MAX_LIFE`]), in ms.
const MAX_DEADLINE_MS: u32 = crate::config::MAX_LIFE.as_millis() as u32;

/// Why a set a client asked for was not sent.
#[derive(Debug, thiserror::Error)]
pub enum NotSent {
    #[error(transparent)]
    NotOther(#[from] NotOther),
    #[error("destination {0} is revoked: it is out of the cluster")]
    DestinationRevoked(NodeId),
    #[error("node {0} is revoked: the others refuse its sets")]
    Revoked(NodeId),
    #[error("payload of {0} bytes exceeds the limit of {MAX_PAYLOAD_LEN}")]
    TooLarge(usize),
    #[error(
        "delivery mode {0} spreads a set over its k paths; a single-path send is one copy on one path: plain or reliable only"
    )]
    SingleSpread(Mode),
    #[error(transparent)]
    NoRoutes(#[from] SendError),
    #[error(
        "delivery mode {0} needs one destination and no --split: the mode spreads the payload over the k paths to that destination itself"
    )]
    NotNodeToNode(Mode),
    #[error(transparent)]
    Pieces(#[from] EncodeError),
    #[error(transparent)]
    Refused(#[from] Refusal),
}

/// How long a reliable set is kept for resending, and the shape of its pieces (what its
/// destination's acknowledgement must name).
#[derive(Clone, Copy, Debug)]
struct Keep {
    deadline_us: u64,
    shape: Shape,
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

/// The daemon is shutting down and takes no new sets.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("the daemon is shutting down")]
pub struct Draining;

impl Node {
    /// Send the set a client asked for: its destinations other nodes, none revoked and this
    /// node not revoked either (the one check of revocation at the source); its routes from
    /// the front door; in a delivery mode its envelopes (one destination, not split) and, for
    /// a reliable set, the deadline it is sent again until; sealed unless the node does not seal
    /// or the client asked for it clear. Then `submit`. The checks go in that order, and
    /// the first that fails is the answer.
    pub async fn send(&self, order: SendSet) -> Result<Accepted, NotSent> {
        let SendSet {
            request,
            payload,
            trace,
            mode,
            deadline_ms,
            clear,
        } = order;
        for &to in &request.to {
            self.other_node(to, "destination")?;
            if self.keys.is_revoked(to) {
                return Err(NotSent::DestinationRevoked(to));
            }
        }
        if self.keys.is_revoked(self.id) {
            return Err(NotSent::Revoked(self.id));
        }
        let sealed = self.seal && !clear;
        if mode.is_plain() && payload.len() > MAX_PAYLOAD_LEN {
            return Err(NotSent::TooLarge(payload.len()));
        }
        if request.single && mode.scheme != Scheme::Copies {
            return Err(NotSent::SingleSpread(mode));
        }
        // Around the dead links this node knows of; a set of pieces keeps its k.
        let routes = self.around(request.routes(self.topology, self.id)?, !mode.is_plain());
        let (k, to) = (routes.k() as u32, routes.destinations());
        let (payload, wire_bytes, keep) = if mode.is_plain() {
            let bytes = routes.parts(&payload).iter().map(Vec::len).sum::<usize>();
            (Payload::Plain(payload), bytes, None)
        } else {
            let (envelopes, shape) = self.enveloped(&request, &routes, mode, &payload)?;
            let bytes = envelopes.iter().map(Vec::len).sum();
            let keep = mode.reliable.then(|| Keep {
                deadline_us: now_us() + 1000 * u64::from(deadline_ms.clamp(1, MAX_DEADLINE_MS)),
                shape,
            });
            (Payload::Enveloped(envelopes), bytes, keep)
        };
        // A seal adds its fields and tag to every message.
        let wire_bytes = wire_bytes
            + if sealed {
                k as usize * SEAL_OVERHEAD
            } else {
                0
            };
        match self.submit(routes, payload, trace, keep, sealed).await {
            Ok((seq, sent_at_us)) => Ok(Accepted {
                seq,
                k,
                sent_at_us,
                to,
                wire_bytes: wire_bytes as u64,
                sealed,
            }),
            Err(refusal) => {
                if matches!(refusal, Refusal::MemoryBound { .. }) {
                    self.stats.event(Event::SendRefusedMemoryBound);
                }
                Err(refusal.into())
            }
        }
    }

    /// The envelopes of a set in a delivery `mode`: one destination, not split, a mode that fits
    /// its k paths and a payload the mode takes.
    fn enveloped(
        &self,
        request: &SendRequest,
        routes: &Routes,
        mode: Mode,
        payload: &[u8],
    ) -> Result<(Vec<Vec<u8>>, Shape), NotSent> {
        if request.split || !request.is_node_to_node(self.topology) {
            return Err(NotSent::NotNodeToNode(mode));
        }
        let pieces = pieces(mode, routes.k(), payload, env::random())?;
        let shape = pieces[0].shape();
        let envelopes = pieces
            .into_iter()
            .map(|p| Envelope::Piece(p).to_bytes())
            .collect();
        Ok((envelopes, shape))
    }

    /// Put a message set into the input buffer, waiting while it is full (backpressure on
    /// the client). Returns the set's sequence id and send time.
    ///
    /// A reliable set (`keep` given, enveloped) is kept for resending until acknowledged or its
    /// deadline; a full outbox refuses it.
    async fn submit(
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
    pub(super) fn input(&self, job: InputJob) {
        self.stats.touch();
        if job.sealed
            && let Some(waits_for) = job
                .routes
                .destinations()
                .into_iter()
                .find(|d| !self.sealing.can_seal(*d))
        {
            self.wait_for_session(waits_for, job);
            return;
        }
        // Its packets now hold their own bytes on the links.
        self.budget.release(job.held);
        // A plain sealed set is kept a while for a destination that restarts (a reliable one
        // is kept by its source's delivery layer until acknowledged).
        let keep = match &job.payload {
            Payload::Plain(payload) if job.sealed => Some((
                payload.len(),
                InputJob {
                    held: 0,
                    ..job.clone()
                },
            )),
            _ => None,
        };
        let mut sealed_any = false;
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
            sealed_any = true;
            set_checksum(&mut packet);
            debug!(seq = job.seq, index = packet.route.index(), to = %first, "input");
            if self.send_to(first, &packet, None) {
                Stats::count(&self.stats.packets_sent);
            }
        }
        if let Some((bytes, kept)) = keep
            && sealed_any
        {
            let mut to = kept.routes.destinations();
            to.dedup();
            self.sealing.sealed(to, bytes, kept);
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
            Err(SealError::NoSession(_)) => {
                // Its session ran out between the set's check and this copy: a handshake is on
                // its way for the next sets.
                self.stats.drop(Drop::Seal(OpenError::NoSession));
                false
            }
        }
    }

    /// Seal `plaintext` to `bound.dst` in this node's name under its session with it. With no
    /// session, or one old enough to renew, a handshake starts.
    pub(super) fn seal(&self, bound: &Bound, plaintext: &[u8]) -> Result<Vec<u8>, SealError> {
        match self.sealing.seal(&self.keys, &self.stats, bound, plaintext) {
            Ok((bytes, renewal)) => {
                if let Some(init) = renewal {
                    self.send_handshake(init, Event::HandshakeInitSent);
                }
                Ok(bytes)
            }
            Err(SealError::NoSession(peer)) => {
                if let Ok(Some(init)) = self.sealing.start(&self.keys, &self.stats, peer) {
                    self.send_handshake(init, Event::HandshakeInitSent);
                }
                Err(SealError::NoSession(peer))
            }
            Err(e) => Err(e),
        }
    }

    /// Keep `job`, a sealed set, until a session with `peer` is made, starting the handshake
    /// that makes it; dropped and counted if too many sets wait for `peer` already.
    fn wait_for_session(&self, peer: NodeId, job: InputJob) {
        let k = job.routes.k() as u64;
        let resend = job.attempt > 1;
        if let Err(job) = self.sealing.wait(peer, job) {
            self.budget.release(job.held);
            self.stats.drop_many(Drop::SealWaitFull, k);
            return;
        }
        match self.sealing.start(&self.keys, &self.stats, peer) {
            Ok(Some(init)) => self.send_handshake(init, Event::HandshakeInitSent),
            Ok(None) => {
                // One is in flight: a resend gives it another try.
                if resend && let Some(init) = self.sealing.hurry(&self.keys, &self.stats, peer) {
                    self.send_handshake(init, Event::HandshakeInitResent);
                }
            }
            Err(e) => {
                warn!(%peer, error = %e, "no session can be made");
                self.give_up_waiting(peer, Drop::Seal(OpenError::UnknownSealer(peer)));
                return;
            }
        }
        // The session may have come while the set was put to wait.
        if self.sealing.can_seal(peer) {
            self.session_ready(peer);
        }
    }

    /// A session with `peer` is ready: the sets that waited for it go.
    pub(super) fn session_ready(&self, peer: NodeId) {
        for job in self.sealing.ready(peer) {
            self.input(job);
        }
    }

    /// No session with `peer` will come: what waited for it is dropped, counted per packet.
    pub(super) fn give_up_waiting(&self, peer: NodeId, drop: Drop) {
        for job in self.sealing.ready(peer) {
            self.budget.release(job.held);
            self.stats.drop_many(drop, job.routes.k() as u64);
        }
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
                    // The set's own routes, or around what is dead now.
                    routes: self.around(resend.routes, true),
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
    pub(super) fn settle_kept(&self, sets: Vec<SetKey>) {
        if let Some(keeping) = &self.keeping {
            keeping.settle(sets);
        }
    }
}
