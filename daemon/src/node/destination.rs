//! The destination side of the node: a packet that reached this node checked (the end-to-end
//! checksum, a revoked source, the seal) and delivered: a plain copy to the output buffer; an
//! enveloped message to the delivery layer (a piece to the inbox, an acknowledgement of a set of
//! this node's to the outbox), a whole set to the output, or to the store first when it is
//! reliable and the node keeps one (the durable hand-off, `run_written`); a reliable set's
//! acknowledgement sent back through the front door.

use super::{InputJob, Node, Payload};
use crate::env::now_us;
use crate::keeping::Written;
use crate::output::Pushed;
use crate::stats::{Drop, Event, Stats};
use crate::store::Outcome;
use cuberoute_protocol::delivery::{
    Envelope, Failure as DeliveryFailure, Mode, Received, SetKey, Shape,
};
use cuberoute_protocol::seal::session::{OpenError, Opened, Outgoing};
use cuberoute_protocol::wire::control::{Delivery, Happening};
use cuberoute_protocol::wire::message::Message;
use cuberoute_protocol::wire::packet::{DataPacket, is_intact};
use cuberoute_protocol::{NodeId, SendRequest};
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use tokio::sync::mpsc;
use tracing::{debug, warn};

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

/// How a delivery's output entry is held, and what it counts.
#[derive(Clone, Copy, Debug)]
enum Entry {
    /// A plain copy: overwritten when room is needed; its packet is counted delivered.
    Copy,
    /// A whole set of a delivery mode, kept in memory only: `protected` (a reliable set) it is
    /// never overwritten unread, and a ring full of such entries refuses it (the set is not
    /// acknowledged). Its packet and its set are counted delivered.
    Set { protected: bool },
    /// A reliable set the store holds, its entry reserved before the write
    /// ([`crate::output::Output::reserve`]): delivered whatever the ring does with its entry,
    /// which needs no protection; its set is counted (its packet was, when the store took it).
    Stored,
}

impl Node {
    /// Hand a packet that reached its destination to the output buffer if its end-to-end
    /// checksum holds. False, and counted, if it was dropped instead.
    pub(super) fn deliver(&self, packet: DataPacket) -> bool {
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
            match self
                .sealing
                .open(&self.keys, &self.stats, &bound, &message.payload)
            {
                Ok(Opened::Payload(plaintext)) => message.payload = plaintext,
                Ok(Opened::Answer {
                    resp,
                    lost_since_us,
                }) => {
                    Stats::count(&self.stats.packets_delivered);
                    // As a first contact's: whether the initiator waits, only it knows.
                    let answer = Outgoing {
                        to: src,
                        bytes: resp,
                        attempt: message.attempt,
                        renewal: false,
                    };
                    self.send_handshake(answer, Event::HandshakeAnswered);
                    if let Some(since) = lost_since_us {
                        // `src` restarted then: what was sealed to it since, under sessions it
                        // lost, goes again under the new one (which seals at once).
                        for job in self.sealing.lost_since(src, since) {
                            self.input(job);
                        }
                    }
                    return true;
                }
                Ok(Opened::Established(peer)) => {
                    Stats::count(&self.stats.packets_delivered);
                    self.stats.count_event(Event::SessionEstablished);
                    self.session_ready(peer);
                    return true;
                }
                Err(OpenError::Duplicate) => {
                    // A copy of a handshake message taken from another path: nothing is lost.
                    Stats::count(&self.stats.packets_delivered);
                    return true;
                }
                Err(why) => {
                    debug!(%src, reason = why.as_str(), "seal refused");
                    self.stats.drop(Drop::Seal(why));
                    if matches!(why, OpenError::NoSession | OpenError::BeforeStart)
                        && let Some(init) = self.sealing.recover(&self.keys, &self.stats, src)
                    {
                        // This node restarted or forgot the session: the source moves to a new
                        // one when this handshake completes (and makes its Init again if it
                        // was from before this node's start).
                        self.send_handshake(init, Event::HandshakeInitSent);
                    }
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
        match self.push(delivery, Entry::Copy) {
            Pushed::Duplicate => {
                self.stats.drop(Drop::Duplicate);
                false
            }
            Pushed::Refused => {
                self.stats.drop(Drop::OutputFull);
                false
            }
            Pushed::Added { .. } => {
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
                    // Its output index taken now and written with it; readable and
                    // acknowledged once durable (`Node::run_written`).
                    let mut delivery = delivery;
                    match self.output.reserve(&mut delivery) {
                        Pushed::Added {
                            overwritten,
                            unread,
                        } => self.output_grew(overwritten, unread),
                        // In the output already: the store knows it, and says so.
                        Pushed::Duplicate => {}
                        // Every entry that would make room is being written.
                        Pushed::Refused => return self.refused_by_output(set, shape, sealed),
                    }
                    Stats::count(&self.stats.packets_delivered);
                    if let Some(peers) = self.sealing.peers_if_changed() {
                        // Queued first: the writer commits both together, as a rule.
                        keeping.keep_sealing_peers(&peers);
                    }
                    keeping.deliver(delivery, shape, attempt, now);
                    return true;
                }
                let entry = Entry::Set {
                    protected: mode.reliable,
                };
                match self.push(delivery, entry) {
                    Pushed::Added { .. } => {
                        self.acknowledge_if_due(shape, set, attempt, sealed);
                    }
                    Pushed::Duplicate => {
                        Stats::count(&self.stats.packets_delivered);
                        self.acknowledge_if_due(shape, set, attempt, sealed);
                    }
                    Pushed::Refused => return self.refused_by_output(set, shape, sealed),
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

    /// A whole set the output refused: not acknowledged, so its source sends it again, and the
    /// inbox must take it as new then; counted. False: the set was not taken.
    fn refused_by_output(&self, set: SetKey, shape: Shape, sealed: bool) -> bool {
        self.delivery
            .inbox(sealed)
            .lock()
            .expect("inbox lock")
            .forget(&set, shape);
        self.stats.drop(Drop::OutputFull);
        false
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
        let routes = self.around(routes, false);
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
            let reserved = delivery.output_index;
            if !matches!(result, Ok(Outcome::Kept { .. })) {
                self.output.withdraw(reserved);
            }
            let drop = match result {
                Ok(Outcome::Kept { .. }) => {
                    self.push(delivery, Entry::Stored);
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

    /// Put a delivery into the output buffer, held as `entry` says; once it is delivered (added
    /// to the ring, or [`Entry::Stored`] whatever the ring did with it), count it (the entries
    /// it overwrote, its packet, its set), record its latency and note it for `monitor`, in that
    /// order: a reader woken by the notice finds the counters moved. The one way a delivery
    /// reaches the output, for plain copies and for sets of a delivery mode; what the ring did
    /// is the caller's to answer (drop, acknowledge, forget).
    fn push(&self, delivery: Delivery, entry: Entry) -> Pushed {
        let latency_us = delivery.latency_us;
        let notice = delivered(&delivery);
        let protected = matches!(entry, Entry::Set { protected: true });
        let pushed = match entry {
            // Its entry was reserved: readable from now on. One the output refused or held
            // already when the set came, or that it no longer holds, is added as new.
            Entry::Stored if self.output.confirm(delivery.output_index) => Pushed::Added {
                overwritten: 0,
                unread: 0,
            },
            _ => self.output.push(delivery, protected),
        };
        if let Pushed::Added {
            overwritten,
            unread,
        } = pushed
        {
            self.output_grew(overwritten, unread);
        }
        if matches!(pushed, Pushed::Added { .. }) || matches!(entry, Entry::Stored) {
            if !matches!(entry, Entry::Stored) {
                Stats::count(&self.stats.packets_delivered);
            }
            if !matches!(entry, Entry::Copy) {
                Stats::count(&self.delivery.counters.sets_delivered);
            }
            self.latency.record(latency_us as f64 / 1e6);
            self.stats.journal.note(notice);
        }
        pushed
    }

    /// The output took an entry: count the entries that made room for it, and keep the
    /// store's reservation of output indices ahead of the output's next one.
    fn output_grew(&self, overwritten: usize, unread: usize) {
        self.count_overwrite(overwritten, unread);
        if let Some(keeping) = &self.keeping {
            keeping.cover_output(self.output.next_index());
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
}
