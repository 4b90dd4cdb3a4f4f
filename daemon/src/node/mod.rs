//! The node: where bytes from links and requests from clients meet the protocol. This file is
//! its core: the [`Node`] itself and its construction, the receive path ([`Node::handle_data`],
//! whole), the one way onto a link (`send_to`), revocations taken and carried out, the status,
//! and what a link needs of its node ([`LinkOwner`]).
//!
//! Every routing decision is the protocol crate's front door: [`Node::send`] asks it for the
//! routes of a client's set (and makes the set's envelopes and deadline), `submit` takes the set
//! and `input` starts it (the paper's `input(M, D)`; all three in [`source`]), and
//! [`Node::handle_data`] runs `rcv` (`hop`) through a [`Process`], which assigns the paper's
//! process variables and never reads them; one path for both routing modes. The node only
//! decodes, checks the end-to-end checksum and the seal at the destination (`destination.rs`),
//! counts, and moves bytes to the link the protocol chose.
//!
//! Beside it: [`source`] (the source side: sets taken, sealed and put on their first hops),
//! `destination.rs` (the destination side: delivery, acknowledgements, the durable hand-off),
//! `handshake.rs` (handshake messages and the sealing timer) and `stored.rs` (what a restart
//! reads back from the store, its retention).

mod destination;
mod handshake;
pub mod source;
mod stored;

use crate::budget::{Budget, Shares};
use crate::chaos::{Chaos, Fate};
use crate::config::{ConfigError, DaemonArgs, NodeConfig};
use crate::delivery::DeliveryEnds;
use crate::down::Down;
use crate::env::{self, Instant, now_us};
use crate::io_counts;
use crate::keeping::Keeping;
use crate::keys::{Adopted, KeyError, Keys, Origin};
use crate::link::{Link, LinkOwner, ListOffered, NotQueued};
use crate::liveness::Liveness;
use crate::output::Output;
use crate::relay::Forwarding;
use crate::reload::Settings;
use crate::sealing::Sealing;
use crate::stats::{Drop, Event, Stats};
use cuberoute_protocol::delivery::{InboxLimits, OutboxLimits};
use cuberoute_protocol::routing::down::{DownLimits, Report, Taken};
use cuberoute_protocol::seal::sealed::Bound;
use cuberoute_protocol::wire::control::{Happening, NodeStatus, Reload, SealingStatus};
use cuberoute_protocol::wire::link::ChaosMark;
use cuberoute_protocol::wire::packet::DataPacket;
use cuberoute_protocol::wire::{decode_body, encode_body};
use cuberoute_protocol::{Action, NodeId, Process, ProcessVars, Routes, Topology};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;
use tracing::{debug, info, warn};

/// A message set waiting in the input buffer: its routes (the front door's, asked when the node
/// took the set: [`Node::send`]) and its payload.
#[derive(Clone, Debug)]
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

/// What a set's messages carry.
#[derive(Clone, Debug)]
pub enum Payload {
    /// The plain mode: the payload on every route (or cut into parts, with `split`).
    Plain(Vec<u8>),
    /// A delivery mode: one envelope per route, in route order.
    Enveloped(Vec<Vec<u8>>),
}

/// An id a client named that is not another node of the topology.
#[derive(Debug, thiserror::Error)]
pub enum NotOther {
    #[error("{role} {id} is not a node of {topology}")]
    Unknown {
        role: &'static str,
        id: NodeId,
        topology: Topology,
    },
    #[error("{role} {id} is this node itself")]
    Itself { role: &'static str, id: NodeId },
}

/// One node. Its fields are its own: the daemon's other modules ask it through its methods.
pub struct Node {
    topology: Topology,
    id: NodeId,
    /// Random at every start: link sequence numbers are per incarnation.
    incarnation: u64,
    started: Instant,
    /// The paper's process and its variables (k, curPhase, posToFlip, the map, ...).
    process: Mutex<Process>,
    /// One per neighbour.
    links: BTreeMap<NodeId, Arc<Link>>,
    output: Output,
    stats: Stats,
    input: mpsc::Sender<InputJob>,
    input_capacity: usize,
    next_seq: AtomicU64,
    draining: AtomicBool,
    latency: metrics::Histogram,
    chaos: Chaos,
    /// The bound of handshakes in flight on a link endpoint shared with other nodes.
    handshakes: Option<Arc<crate::link::shared::Handshakes>>,
    /// The delivery layer's inbox and outbox.
    delivery: DeliveryEnds,
    /// The bytes every link's message buffer and the input buffer hold together.
    budget: Arc<Budget>,
    /// The configuration in force, reloadable.
    settings: Settings,
    /// One permit per byte of control requests and answers in progress.
    control_bytes: Arc<tokio::sync::Semaphore>,
    control_bytes_limit: usize,
    /// The key directory, this node's secret key and the revocation list.
    keys: Arc<Keys>,
    /// Whether sets are sealed unless a client asks for one clear (`seal`).
    seal: bool,
    /// The sessions sets are sealed under, and the sets waiting for one.
    sealing: Sealing<InputJob>,
    /// The store: reliable sets kept across a crash (`None`: in memory only).
    keeping: Option<Keeping>,
    /// The links' liveness settings and this node's health.
    liveness: Liveness,
    /// The dead links this node knows of, and the routes around them.
    down: Down,
    /// The span its log lines are in (its id), entered where another node's task hands it a
    /// packet ([`crate::link::handoff`]).
    span: tracing::Span,
}

impl Node {
    /// The node and the receiving end of its input buffer (for [`Node::run_input`]).
    /// With `shared`, its links are on a link endpoint shared by several nodes of a process,
    /// whose shaper and bound of handshakes are its too ([`crate::link::shared::SharedLinks`]).
    pub fn new(
        config: &NodeConfig,
        args: DaemonArgs,
        keeping: Option<Keeping>,
        shared: Option<&crate::link::shared::SharedLinks>,
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
                    Arc::new(
                        Link::new(config.id, n, addr, config.buffers.link, budget.clone())
                            .named(config.topology.format_node(n)),
                    ),
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
        let round_trip = handshake_round_trip(config.topology, &links);
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
            chaos: Chaos::with_shaper(shared.map(|s| s.shaper.clone()).unwrap_or_default()),
            handshakes: shared.map(|s| s.handshakes.clone()),
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
            liveness: Liveness::new(config.liveness),
            down: Down::new(
                config.topology,
                config.id,
                DownLimits::default(),
                config.route_around,
            ),
            seal: config.seal,
            sealing: Sealing::new(
                &config.keys,
                config.id,
                now_us(),
                config.sessions,
                round_trip,
            ),
            keeping,
            span: tracing::Span::current(),
        };
        (Arc::new(node), input_rx)
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
                let flood = self.chaos.relay.flood(&packet, now_us());
                debug!(%to, "forward");
                if self.send_to(to, &packet, mark) {
                    Stats::count(&self.stats.packets_forwarded);
                } else {
                    ended(Fate::Dropped);
                }
                for extra in flood {
                    self.send_to(to, &extra, None);
                }
            }
            Action::Drop { reason, .. } => {
                debug!(%from, reason = reason.as_str(), "drop");
                self.stats.drop(Drop::Route(reason));
                ended(Fate::Dropped);
            }
        }
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
    pub(super) fn send_to(&self, to: NodeId, packet: &DataPacket, mark: Option<ChaosMark>) -> bool {
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

    /// Take a signed revocation list, pushed or handed over by a neighbour, as one path:
    /// checked and kept by [`Keys::take`]; each node it newly revokes refused ([`Node::revoked`]);
    /// a newer list passed on to every other neighbour not known to hold it. A refused list is
    /// counted (`revocation_refused`, or `revocation_invalid` if it is malformed or not signed by
    /// the CA) and changes nothing.
    pub fn take_revocations(&self, signed: &[u8], origin: Origin) -> Result<Adopted, KeyError> {
        let from = match origin {
            Origin::Neighbour(from) => Some(from),
            _ => None,
        };
        let adopted = match self.keys.take(signed, origin) {
            Ok(adopted) => adopted,
            Err(e) => {
                let event = if e.is_invalid() {
                    Event::RevocationInvalid
                } else {
                    Event::RevocationRefused
                };
                match from {
                    Some(from) => self.stats.event_about(event, from),
                    None => self.stats.event(event),
                }
                warn!(?origin, error = %e, "revocation list refused");
                return Err(e);
            }
        };
        if let Some(e) = &adopted.not_kept {
            // In force all the same; only a restart would forget it.
            warn!(error = %e, "revocation list not kept");
        }
        if adopted.raised {
            info!(serial = adopted.serial, ?origin, "revocation list taken");
            if let Some(from) = from {
                self.stats.event_about(Event::RevocationLearned, from);
            }
        }
        for &revoked in &adopted.newly {
            self.revoked(revoked);
        }
        if adopted.raised {
            // The neighbour that handed it over holds it: its link knows.
            for (_, link) in self.links.iter().filter(|(n, _)| Some(**n) != from) {
                link.revocations_changed();
            }
        }
        Ok(adopted)
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

    /// The chaos tooling's state corruption: overwrite the paper's process variables and the
    /// input buffer's next sequence id.
    pub fn overwrite_state(&self, vars: ProcessVars, next_seq: u64) {
        self.process.lock().expect("process lock").vars = vars;
        self.next_seq.store(next_seq, Relaxed);
    }

    /// This node.
    pub fn id(&self) -> NodeId {
        self.id
    }

    pub fn topology(&self) -> Topology {
        self.topology
    }

    /// Random at every start.
    pub fn incarnation(&self) -> u64 {
        self.incarnation
    }

    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// The links, one per neighbour, in the order of their ids.
    pub fn links(&self) -> impl ExactSizeIterator<Item = &Arc<Link>> {
        self.links.values()
    }

    /// Hand `reports` to every neighbour but `except`.
    fn pass_on(&self, reports: &[Report], except: Option<NodeId>) {
        for (neighbour, link) in &self.links {
            if Some(*neighbour) != except {
                link.pass_reports(reports);
            }
        }
    }

    /// The dead links this node knows of, and the routes around them.
    pub fn down(&self) -> &Down {
        &self.down
    }

    /// `routes` around the dead links this node knows of, if any is on them (counted), else as
    /// they are. `pieces`: the set is made of `routes.k()` pieces, all of which must travel
    /// (several on one path, if fewer are live).
    pub(super) fn around(&self, routes: Routes, pieces: bool) -> Routes {
        match self.down.around(&routes) {
            Some(around) => {
                self.down.counters.sets_rerouted.fetch_add(1, Relaxed);
                if pieces {
                    around.cycled(routes.k())
                } else {
                    around
                }
            }
            None => routes,
        }
    }

    /// The table of dead links' timer, forever: forget old reports, say again which of this
    /// node's links are still down.
    pub async fn run_down_timer(self: Arc<Self>) {
        loop {
            let (again, after) = self.down.tick();
            self.pass_on(&again, None);
            self.down.wait(after).await;
        }
    }

    /// The link to `neighbour`, if it is one.
    pub fn link(&self, neighbour: NodeId) -> Option<&Arc<Link>> {
        self.links.get(&neighbour)
    }

    /// The output buffer clients read.
    pub fn output(&self) -> &Output {
        &self.output
    }

    pub fn chaos(&self) -> &Chaos {
        &self.chaos
    }

    /// The delivery layer's inbox and outbox, and its settlements and counters.
    pub fn delivery(&self) -> &DeliveryEnds {
        &self.delivery
    }

    /// The bytes the links and the input buffer hold, and their limit.
    pub fn budget(&self) -> &Budget {
        &self.budget
    }

    /// The configuration in force.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The key directory, this node's secret key and the revocation list.
    pub fn keys(&self) -> &Keys {
        &self.keys
    }

    /// Whether sets are sealed unless a client asks for one clear, and entries handed to a
    /// reader unless it asks for clear ones too.
    pub fn seals(&self) -> bool {
        self.seal
    }

    /// The store, if the node keeps one.
    pub fn keeping(&self) -> Option<&Keeping> {
        self.keeping.as_ref()
    }

    /// Whether `id`, which a client named as `role`, is a node of the topology other than
    /// this one.
    pub fn other_node(&self, id: NodeId, role: &'static str) -> Result<(), NotOther> {
        if !self.topology.contains(id) {
            return Err(NotOther::Unknown {
                role,
                id,
                topology: self.topology,
            });
        }
        if id == self.id {
            return Err(NotOther::Itself { role, id });
        }
        Ok(())
    }

    /// Wait until `bytes` of the control share of the memory bound are free, and hold them
    /// (at most all of them: one frame larger than the whole share waits for everything else
    /// to finish).
    pub async fn hold_control_bytes(&self, bytes: usize) -> tokio::sync::OwnedSemaphorePermit {
        let bytes = bytes.min(self.control_bytes_limit).max(1);
        self.control_bytes
            .clone()
            .acquire_many_owned(bytes as u32)
            .await
            .expect("the control bytes are never closed")
    }

    pub fn is_draining(&self) -> bool {
        self.draining.load(Relaxed)
    }

    /// Stop taking new sets (SIGTERM); links keep moving what is queued.
    pub fn start_draining(&self) {
        self.draining.store(true, Relaxed);
    }

    /// Sets waiting in the input buffer, or for a session with their destination.
    pub fn input_queued(&self) -> usize {
        self.input_capacity - self.input.capacity() + self.sealing.waiting()
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
            output_lasts: self.keeping.is_some(),
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
            sealing: self.sealing_status(),
            around: self.down.status(),
        }
    }

    /// This node's part of a process's readiness ([`crate::control`]'s answer to
    /// `Request::HostReadiness`), without building its whole status: its link ends up and
    /// those that may be up (neither end revoked by its own list), the dead links it knows,
    /// its sealing handshakes in flight, and its revocation serial.
    pub fn readiness(&self) -> NodeReadiness {
        let itself = self.keys.is_revoked(self.id);
        let (mut links, mut links_up) = (0, 0);
        for (neighbour, link) in &self.links {
            if !itself && !self.keys.is_revoked(*neighbour) {
                links += 1;
                links_up += u64::from(link.is_up());
            }
        }
        NodeReadiness {
            links_up,
            links,
            dead_links: self.down.faults().links().count() as u64,
            handshakes_in_flight: self.sealing.held().1 as u64,
            revocation_serial: self.keys.serial(),
        }
    }

    /// The sealing sessions now, and what they did.
    pub fn sealing_status(&self) -> SealingStatus {
        let (sessions, in_flight) = self.sealing.held();
        let c = self.sealing.counters();
        let limits = self.sealing.limits();
        SealingStatus {
            sessions: sessions as u64,
            handshakes_in_flight: in_flight as u64,
            waiting_sets: self.sealing.waiting() as u64,
            rekey_after_ms: limits.rekey_after_us / 1000,
            erase_after_ms: limits.erase_after_us / 1000,
            handshake_after_ms: limits.handshake_after_us / 1000,
            initiated: c.initiated,
            answered: c.answered,
            erased: c.erased,
            evicted: c.evicted,
            handshakes_failed: c.failed,
            sets_sealed_again: self.sealing.sealed_again(),
            answers_sent_again: c.answered_again,
            derived_sealing: c.derived_sealing,
            derived_opening: c.derived_opening,
            inits_resent_on_news: c.resent_on_news,
        }
    }
}

impl LinkOwner for Node {
    fn handshakes(&self) -> Option<&crate::link::shared::Handshakes> {
        self.handshakes.as_deref()
    }

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

    fn span(&self) -> tracing::Span {
        self.span.clone()
    }

    fn on_data(&self, from: NodeId, packet: &[u8], mark: Option<ChaosMark>) {
        self.stats.touch();
        self.handle_data(from, packet, mark)
    }

    fn revocation_serial(&self) -> u64 {
        self.keys.serial()
    }

    fn signed_revocations(&self) -> Option<(u64, Arc<[u8]>)> {
        self.keys.signed()
    }

    fn on_revocations(&self, from: NodeId, signed: &[u8]) -> ListOffered {
        match self.take_revocations(signed, Origin::Neighbour(from)) {
            Ok(adopted) => ListOffered::Held(adopted.serial),
            Err(KeyError::Older { got, .. }) => ListOffered::Behind(got),
            Err(KeyError::Forked { serial } | KeyError::Unrevokes { serial, .. }) => {
                ListOffered::Held(serial)
            }
            Err(_) => ListOffered::Invalid,
        }
    }

    fn liveness(&self) -> &Liveness {
        &self.liveness
    }

    fn link_went(&self, neighbour: NodeId, up: bool) {
        if let Some(report) = self.down.own(neighbour, !up) {
            self.pass_on(&[report], None);
        }
        if up {
            self.path_back();
        }
    }

    fn on_reports(&self, from: NodeId, reports: Vec<Report>) -> bool {
        let mut malformed = false;
        let mut new = Vec::new();
        let mut refuted = Vec::new();
        for report in reports {
            match self.down.take(report) {
                Taken::New => {
                    new.push(report);
                    // This node's own report from before a restart, of a link it holds up.
                    if self.down.refutes(&report)
                        && self.link(report.subject).is_some_and(|l| l.is_up())
                    {
                        refuted.push(report.subject);
                    }
                }
                Taken::NotALink => malformed = true,
                Taken::Known | Taken::Full => {}
            }
        }
        self.pass_on(&new, Some(from));
        if new.iter().any(|r| !r.down) {
            self.path_back();
        }
        for neighbour in refuted {
            self.link_went(neighbour, true);
        }
        malformed
    }

    fn reports(&self) -> Vec<Report> {
        self.down.reports()
    }
}

/// What the node's links say a sealing handshake's round trip takes: their mean round trip, as
/// QUIC measures it on each link up, made a handshake's by the protocol
/// ([`expected_round_trip_us`](cuberoute_protocol::seal::session::expected_round_trip_us)).
fn handshake_round_trip(
    topology: Topology,
    links: &BTreeMap<NodeId, Arc<Link>>,
) -> crate::sealing::RoundTrip {
    let links: Vec<Arc<Link>> = links.values().cloned().collect();
    let diameter = topology.diameter();
    Box::new(move || {
        let (sum, n) = links
            .iter()
            .filter_map(|l| l.rtt())
            .fold((0u64, 0u64), |(sum, n), rtt| {
                (sum.saturating_add(rtt.as_micros() as u64), n + 1)
            });
        cuberoute_protocol::seal::session::expected_round_trip_us(sum / n.max(1), diameter)
    })
}

/// What [`Node::readiness`] says.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct NodeReadiness {
    pub links_up: u64,
    pub links: u64,
    pub dead_links: u64,
    pub handshakes_in_flight: u64,
    pub revocation_serial: u64,
}

impl NodeReadiness {
    /// Every link that may be up is, no dead link is known and no handshake is in flight.
    pub fn is_ready(&self) -> bool {
        self.links_up == self.links && self.dead_links == 0 && self.handshakes_in_flight == 0
    }
}
