//! The node: where bytes from links and requests from clients meet the protocol.
//!
//! Every routing decision is the protocol crate's: [`Node::input`] runs `input` (the paper's
//! `input(M, D)`) and [`Node::handle_data`] runs `rcv` through a [`Process`], which assigns the
//! paper's process variables and never reads them. This module only decodes, checks the
//! end-to-end checksum at the destination, counts, and moves bytes to the link the protocol
//! chose.

use crate::chaos::{Chaos, Fate};
use crate::config::NodeConfig;
use crate::env::{self, Instant, now_us};
use crate::link::{Link, LinkOwner};
use crate::output::{Output, Pushed};
use crate::stats::{Drop, Event, Stats};
use cuberoute_protocol::routing::source_route::{self, Hop};
use cuberoute_protocol::wire::control::{Delivery, LinkStatus, NodeStatus};
use cuberoute_protocol::wire::link::ChaosMark;
use cuberoute_protocol::wire::message::{Message, split_payload};
use cuberoute_protocol::wire::packet::{Carried, SourcePacket};
use cuberoute_protocol::wire::{decode_body, encode_body};
use cuberoute_protocol::{Action, NodeId, Process, ProcessVars, Topology};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;
use tracing::{debug, warn};

/// How a set travels.
#[derive(Debug, Clone)]
pub enum Routing {
    /// The guarded-action protocol: k copies to `to`, routed hop by hop from their headers.
    Protocol { to: NodeId },
    /// Source routing: one copy along each route (computed by `source_route::routes`).
    Source { routes: Vec<Vec<NodeId>> },
}

/// A message set waiting in the input buffer.
#[derive(Debug)]
pub struct InputJob {
    pub seq: u64,
    pub routing: Routing,
    pub payload: Vec<u8>,
    pub split: bool,
    pub trace: bool,
    pub sent_at_us: u64,
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
}

impl Node {
    /// The node and the receiving end of its input buffer (for [`Node::run_input`]).
    pub fn new(config: &NodeConfig) -> (Arc<Node>, mpsc::Receiver<InputJob>) {
        let (input, input_rx) = mpsc::channel(config.buffers.input);
        let links = config
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
                    Arc::new(Link::new(config.id, n, addr, config.buffers.link)),
                )
            })
            .collect();
        let node = Node {
            topology: config.topology,
            id: config.id,
            incarnation: env::random(),
            started: Instant::now(),
            process: Mutex::new(Process::new(config.topology, config.id)),
            links,
            output: Output::new(config.buffers.output),
            stats: Stats::default(),
            input,
            input_capacity: config.buffers.input,
            // Sequence ids start at random so that sets of different runs are not confused.
            next_seq: AtomicU64::new(u64::from(env::random::<u32>())),
            draining: AtomicBool::new(false),
            latency: metrics::histogram!("cuberoute_delivery_latency_seconds"),
            chaos: Chaos::default(),
        };
        (Arc::new(node), input_rx)
    }

    /// k(me, to): how many copies a set to `to` travels as.
    pub fn k(&self, to: NodeId) -> u32 {
        self.topology.local_connectivity(self.id, to)
    }

    /// Put a message set into the input buffer, waiting while it is full (backpressure on
    /// the client). Returns the set's sequence id and send time.
    pub async fn submit(
        &self,
        routing: Routing,
        payload: Vec<u8>,
        split: bool,
        trace: bool,
    ) -> Result<(u64, u64), Draining> {
        if self.is_draining() {
            return Err(Draining);
        }
        let seq = self.next_seq.fetch_add(1, Relaxed);
        let sent_at_us = now_us();
        let job = InputJob {
            seq,
            routing,
            payload,
            split,
            trace,
            sent_at_us,
        };
        self.input.send(job).await.map_err(|_| Draining)?;
        Stats::count(&self.stats.sets_accepted);
        // Let the input task put the packets on their links before this request's answer goes
        // out: the answer can wait, the packets are the latency.
        tokio::task::yield_now().await;
        Ok((seq, sent_at_us))
    }

    /// The input task: run `input` for every set in the input buffer, in order.
    pub async fn run_input(self: Arc<Self>, mut jobs: mpsc::Receiver<InputJob>) {
        while let Some(job) = jobs.recv().await {
            self.input(job);
        }
    }

    /// Turn a set into packets on the first hops' links.
    fn input(&self, job: InputJob) {
        match job.routing.clone() {
            Routing::Protocol { to } => self.input_protocol(to, job),
            Routing::Source { routes } => self.input_source(routes, job),
        }
    }

    /// The guarded action `input(M, D)`: k packets, one per path.
    fn input_protocol(&self, to: NodeId, job: InputJob) {
        let k = self.k(to) as usize;
        let payloads = if job.split {
            split_payload(&job.payload, k)
        } else {
            vec![job.payload; k]
        };
        let messages = payloads
            .into_iter()
            .map(|p| Message::new(self.id, job.seq, job.split, job.sent_at_us, job.trace, p))
            .collect();
        let sends = match self
            .process
            .lock()
            .expect("process lock")
            .input(to, messages)
        {
            Ok(sends) => sends,
            Err(e) => {
                // The control API checked the destination, so this is a bug; count it anyway.
                warn!(%to, error = %e, "input refused a set the control API accepted");
                self.stats.drop_many(Drop::Malformed, k as u64);
                return;
            }
        };
        for (first, mut packet) in sends {
            packet.message.seal(&packet.header);
            debug!(seq = job.seq, index = packet.header.index, to = %first, "input");
            if self.send_to(first, &Carried::Protocol(packet), None) {
                Stats::count(&self.stats.packets_sent);
            }
        }
    }

    /// A source-routed set: copy `i` along route `i`, the whole route in its header.
    fn input_source(&self, routes: Vec<Vec<NodeId>>, job: InputJob) {
        let copies = routes.len() as u8;
        let payloads = if job.split {
            split_payload(&job.payload, routes.len())
        } else {
            vec![job.payload.clone(); routes.len()]
        };
        for (index, (route, payload)) in routes.into_iter().zip(payloads).enumerate() {
            let Some(&first) = route.get(1) else {
                warn!(?route, "a source route with fewer than two nodes");
                self.stats.drop(Drop::Malformed);
                continue;
            };
            let message = Message::new(
                self.id,
                job.seq,
                job.split,
                job.sent_at_us,
                job.trace,
                payload,
            );
            let mut packet = SourcePacket {
                route,
                position: 1,
                index: index as u8,
                copies,
                message,
            };
            packet.seal();
            debug!(seq = job.seq, index, to = %first, "input (source-routed)");
            if self.send_to(first, &Carried::Source(packet), None) {
                Stats::count(&self.stats.packets_sent);
            }
        }
    }

    /// The guarded action `rcv(m) from q` for the bytes of one data frame from `from`. `mark`
    /// is set when the chaos tooling corrupted the packet on its way here.
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
        let packet = match decode_body::<Carried>(bytes) {
            Ok(Carried::Protocol(packet)) => packet,
            Ok(Carried::Source(packet)) => return self.handle_source(from, packet, mark),
            Err(e) => {
                debug!(%from, error = %e, "undecodable packet");
                self.stats.drop(Drop::Malformed);
                ended(Fate::Dropped);
                return;
            }
        };
        let h = packet.header;
        let span = tracing::debug_span!("packet", src = %h.src, dst = %h.dst, index = h.index,
            seq = packet.message.seq);
        let _entered = span.enter();
        let action = self
            .process
            .lock()
            .expect("process lock")
            .receive(packet, from);
        match action {
            Action::Deliver(mut packet) => {
                packet.message.record_hop(self.id);
                let (header, message) = (packet.header, packet.message);
                let delivered = self.deliver(
                    message.is_intact(&header),
                    header.src,
                    header.dst,
                    header.index,
                    self.topology.local_connectivity(header.src, header.dst),
                    message,
                );
                ended(if delivered {
                    Fate::Delivered
                } else {
                    Fate::Dropped
                });
            }
            Action::Forward { to, mut packet } => {
                packet.message.record_hop(self.id);
                debug!(%to, "forward");
                if self.send_to(to, &Carried::Protocol(packet), mark) {
                    Stats::count(&self.stats.packets_forwarded);
                } else {
                    ended(Fate::Dropped);
                }
            }
            Action::Drop { reason, .. } => {
                debug!(%from, reason = reason.as_str(), "drop");
                self.stats.drop(Drop::Protocol(reason));
                ended(Fate::Dropped);
            }
        }
    }

    /// `rcv` for a source-routed packet: the checks of `source_route::receive_source`, then
    /// forward along the route or deliver.
    fn handle_source(&self, from: NodeId, mut packet: SourcePacket, mark: Option<ChaosMark>) {
        let ended = |fate| {
            if let Some(mark) = mark {
                self.chaos.ended(mark, fate);
            }
        };
        let position = usize::from(packet.position);
        match source_route::receive_source(self.topology, self.id, from, &packet.route, position) {
            Ok(Hop::Forward(next)) => {
                packet.position += 1;
                packet.message.record_hop(self.id);
                debug!(%next, position, "forward (source-routed)");
                if self.send_to(next, &Carried::Source(packet), mark) {
                    Stats::count(&self.stats.packets_forwarded);
                } else {
                    ended(Fate::Dropped);
                }
            }
            Ok(Hop::Deliver) => {
                packet.message.record_hop(self.id);
                let intact = packet.is_intact();
                let (index, copies) = (packet.index, u32::from(packet.copies));
                let delivered = match packet.src() {
                    Some(src) => self.deliver(intact, src, self.id, index, copies, packet.message),
                    None => false,
                };
                ended(if delivered {
                    Fate::Delivered
                } else {
                    Fate::Dropped
                });
            }
            Err(reason) => {
                debug!(%from, reason = reason.as_str(), "drop (source-routed)");
                self.stats.drop(Drop::Source(reason.as_str()));
                ended(Fate::Dropped);
            }
        }
    }

    /// Encode `packet` onto the link to `to`. False, and counted, if it could not be queued.
    /// A packet the chaos tooling corrupted keeps its `mark`; one it corrupts now gets one.
    fn send_to(&self, to: NodeId, packet: &Carried, mark: Option<ChaosMark>) -> bool {
        let mut bytes = match encode_body(packet) {
            Ok(bytes) => bytes,
            Err(e) => {
                debug!(error = %e, "packet does not encode");
                self.stats.drop(Drop::Malformed);
                return false;
            }
        };
        let mark = self.chaos.maybe_corrupt(&mut bytes, mark);
        let Some(link) = self.links.get(&to) else {
            // The protocol only ever picks a neighbour; a broken promise is still counted.
            warn!(%to, "the protocol chose a next hop that is not a neighbour");
            self.stats.drop(Drop::NoLink);
            return false;
        };
        if link.enqueue(bytes, mark) {
            true
        } else {
            debug!(%to, "link buffer full");
            self.stats.drop(Drop::LinkBufferFull);
            false
        }
    }

    /// Hand copy `index` (of `k`) of a set from `src` to the output buffer if its end-to-end
    /// checksum held (`intact`). False, and counted, if it was dropped instead.
    fn deliver(
        &self,
        intact: bool,
        src: NodeId,
        dst: NodeId,
        index: u8,
        k: u32,
        message: Message,
    ) -> bool {
        if !intact {
            debug!("checksum failed");
            self.stats.drop(Drop::Checksum);
            return false;
        }
        let sent_at_us = message.sent_at_us;
        let latency_us = now_us().saturating_sub(sent_at_us);
        let delivery = Delivery {
            output_index: 0,
            src,
            dst,
            seq: message.seq,
            sent_at_us,
            index,
            k,
            split: message.split,
            hops: u32::from(message.hops),
            path: message.trace,
            latency_us,
            payload: message.payload,
        };
        match self.output.push(delivery) {
            Pushed::Duplicate => {
                self.stats.drop(Drop::Duplicate);
                false
            }
            Pushed::Added { overwrote } => {
                if overwrote {
                    self.stats.event(Event::OutputOverwritten);
                }
                Stats::count(&self.stats.packets_delivered);
                self.latency.record(latency_us as f64 / 1e6);
                debug!(latency_us, "deliver");
                true
            }
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

    pub fn status(&self) -> NodeStatus {
        NodeStatus {
            id: self.id,
            topology: self.topology,
            pid: std::process::id(),
            incarnation: self.incarnation,
            uptime_ms: self.started.elapsed().as_millis() as u64,
            links: self
                .links
                .values()
                .map(|l| LinkStatus {
                    neighbour: l.neighbour,
                    up: l.is_up(),
                    cut: l.is_cut(),
                    queued: l.queued() as u64,
                })
                .collect(),
            input_queued: self.input_queued() as u64,
            output_len: self.output.len() as u64,
            counters: self.stats.counters(),
            chaos: self.chaos.counters(),
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
        self.handle_data(from, packet, mark)
    }
}

/// The daemon is shutting down and takes no new sets.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("the daemon is shutting down")]
pub struct Draining;
