//! The node: where bytes from links and requests from clients meet the protocol.
//!
//! Every routing decision is the protocol crate's front door: the control API turns a client's
//! request into its routes, [`Node::input`] starts the set (the paper's `input(M, D)`) and
//! [`Node::handle_data`] runs `rcv` (`hop`) through a [`Process`], which assigns the paper's
//! process variables and never reads them; one path for both routing modes. This module only
//! decodes, checks the end-to-end checksum at the destination, counts, and moves bytes to the
//! link the protocol chose.

use crate::chaos::{Chaos, Fate};
use crate::config::NodeConfig;
use crate::env::{self, Instant, now_us};
use crate::link::{Link, LinkOwner};
use crate::output::{Output, Pushed};
use crate::stats::{Drop, Event, Stats};
use cuberoute_protocol::wire::control::{Delivery, LinkStatus, NodeStatus};
use cuberoute_protocol::wire::link::ChaosMark;
use cuberoute_protocol::wire::message::Message;
use cuberoute_protocol::wire::packet::{DataPacket, is_intact, seal};
use cuberoute_protocol::wire::{decode_body, encode_body};
use cuberoute_protocol::{Action, NodeId, Process, ProcessVars, Routes, Topology};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;
use tracing::{debug, warn};

/// A message set waiting in the input buffer: its routes (decided by the front door when the
/// control API accepted it) and its payload.
#[derive(Debug)]
pub struct InputJob {
    pub seq: u64,
    pub routes: Routes,
    pub payload: Vec<u8>,
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

    /// Put a message set into the input buffer, waiting while it is full (backpressure on
    /// the client). Returns the set's sequence id and send time.
    pub async fn submit(
        &self,
        routes: Routes,
        payload: Vec<u8>,
        trace: bool,
    ) -> Result<(u64, u64), Draining> {
        if self.is_draining() {
            return Err(Draining);
        }
        let seq = self.next_seq.fetch_add(1, Relaxed);
        let sent_at_us = now_us();
        let job = InputJob {
            seq,
            routes,
            payload,
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

    /// The action `input(M, D)`: the set's first packets, one per route, on the first hops'
    /// links.
    fn input(&self, job: InputJob) {
        let split = job.routes.is_split();
        let messages = job
            .routes
            .parts(&job.payload)
            .into_iter()
            .map(|part| Message::new(self.id, job.seq, split, job.sent_at_us, job.trace, part))
            .collect();
        let sends = self
            .process
            .lock()
            .expect("process lock")
            .start(&job.routes, messages);
        for (first, mut packet) in sends {
            seal(&mut packet);
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
                packet.message.record_hop(self.id);
                if self.chaos.relay.on_forward(&mut packet) {
                    debug!(%to, "forged");
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

    /// Encode `packet` onto the link to `to`. False, and counted, if it could not be queued.
    /// A packet the chaos tooling corrupted keeps its `mark`; one it corrupts now gets one.
    fn send_to(&self, to: NodeId, packet: &DataPacket, mark: Option<ChaosMark>) -> bool {
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
        let k = packet.route.copies(self.topology);
        let message = packet.message;
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
