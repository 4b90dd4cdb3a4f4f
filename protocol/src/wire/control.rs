//! The control API: what a client (`cuberoute send`, `recv`, `cluster status`, ...) asks a
//! daemon, and what it answers. One request and one response per QUIC stream, each one frame of
//! the codec of [`super`].

use crate::delivery::mode::Mode;
use crate::delivery::outbox::Settlement;
use crate::routing::request::SendRequest;
use crate::{NodeId, Topology};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The largest payload one send may carry. With the header and the trace a packet stays far
/// below [`super::MAX_FRAME_LEN`].
pub const MAX_PAYLOAD_LEN: usize = 64 * 1024;

/// The most output entries one [`Request::Recv`] returns.
pub const MAX_RECV_BATCH: u32 = 1024;

/// The longest a client may ask the daemon to wait.
pub const MAX_WAIT_MS: u32 = 60_000;

#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub enum Request {
    /// The node's links, buffers and counters.
    Status,
    /// Route a message set ([`SendSet`]) from this node as `request` says: k copies (or, with `split`, k
    /// parts) of `payload` over the k disjoint paths to one destination, or one copy to each
    /// destination of a set (`routing::request` decides how). With `trace` every copy records
    /// its path.
    /// In a delivery `mode` other than plain, the set goes to one destination as the mode's
    /// k pieces, and a reliable set is sent again until acknowledged or `deadline_ms` passed.
    /// Sealed end to end unless `clear` (or the node's `seal = false`).
    Send(SendSet),
    /// Wait until `copies` copies of the set (`src`, `seq`, `sent_at_us`) have been delivered
    /// here (0: all k of a node-to-node set), or `timeout_ms` has passed; answer with the copies
    /// delivered so far. A set is named by its send time too: a sequence id alone may repeat
    /// (after a restart, or when the chaos tooling overwrites it).
    /// Only entries that came `sealed` (or clear) in `mode` count: a clear forgery in another
    /// mode is never taken for the set awaited.
    Await {
        src: NodeId,
        seq: u64,
        sent_at_us: u64,
        copies: u32,
        timeout_ms: u32,
        sealed: bool,
        mode: Mode,
    },
    /// Output entries with an output index of at least `after`, at most `max` of them; if there
    /// are none, wait up to `wait_ms` for one. Entries that came clear are included if `clear`
    /// (by default: if the node itself does not seal).
    Recv {
        after: u64,
        max: u32,
        wait_ms: u32,
        clear: Option<bool>,
    },
    /// How the reliable set (`seq`, `sent_at_us`) sent from this node ended: wait up to
    /// `wait_ms` for it to be acknowledged or to expire.
    Settled {
        seq: u64,
        sent_at_us: u64,
        wait_ms: u32,
    },
    /// Inject a transient fault (the chaos tooling).
    Inject(Fault),
    /// What this node captured as a curious relay ([`Fault::Capture`]): entries with a capture
    /// index of at least `after`, at most `max` of them.
    Captured { after: u64, max: u32 },
    /// The node's notices (what `cuberoute monitor` streams) with a notice index of at least
    /// `after` (beyond the newest: from now on), at most `max` of them; if there are none,
    /// wait up to `wait_ms` for one.
    Notices { after: u64, max: u32, wait_ms: u32 },
    /// Read the configuration file again and apply what may change without a restart (what
    /// SIGHUP does).
    Reload,
    /// Take a revocation list the cluster CA signed (`cuberoute_daemon::keys`): its nodes' links
    /// are refused and their sets dropped from now on, and the node keeps the list.
    Revoke {
        #[serde(with = "serde_bytes")]
        signed: Vec<u8>,
    },
    /// Take reliable sets from this node's store as the named `consumer`: first, if `taken` is
    /// given, every entry before store index `taken` is taken for good (durably, before the
    /// answer); then up to `max` entries from the first not taken, waiting up to `wait_ms` for
    /// one. Answered with [`Response::Output`], whose indices are store indices. Asking again
    /// with the same `taken` is harmless: a consumer only moves forward. Entries that came
    /// clear are handed over if `clear` (by default: if the node itself does not seal), else
    /// passed over: the answer's `next` is past them, and an answer that hands over nothing
    /// but passed over entries moves the consumer's place past them itself (nothing was
    /// handed over, so nothing is lost to a client that dies). They stay in the store for a
    /// consumer that asks for clear entries.
    Consume {
        consumer: String,
        taken: Option<u64>,
        max: u32,
        wait_ms: u32,
        clear: Option<bool>,
    },
    /// The statuses of the nodes this node's process runs (`cuberoute daemon --with-config`;
    /// the node itself among them), in id order from the first above `after`, as many as fit
    /// in one answer ([`Response::Hosted`]). A node alone in its process answers with its own.
    /// One request per process tells a launcher what a request per node would.
    Hosted { after: Option<NodeId> },
    /// How ready the nodes this node's process runs are, in a few bytes whatever their number
    /// ([`Response::HostReadiness`]): what a launcher polls while a node host starts, where
    /// [`Request::Hosted`] would carry every node's whole status each time.
    HostReadiness,
    /// Many sets in one request, up to [`MAX_SETS_PER_REQUEST`], each a [`Request::Send`] from
    /// a node of this node's process (a node host's nodes share one control endpoint): each is
    /// taken or refused on its own, as its own `Send` would be, and answered in the order asked
    /// ([`Response::SentMany`]). What a load generator or a gateway sends when one request per
    /// set would cost the node host more than the sets' hops.
    SendMany(Vec<SendOne>),
    /// Wait for many sets in one request, up to [`MAX_SETS_PER_REQUEST`], each a
    /// [`Request::Await`] at a node of this node's process, until every one of them is
    /// complete or `timeout_ms` has passed; answered with each set's copies so far, in the
    /// order asked ([`Response::CopiesMany`]). The copies come without payloads and paths:
    /// which copies arrived, their hops and their times (a client that wants the payloads
    /// reads them with `Await`, `Recv` or `Consume`), so that an answer stays within a frame.
    AwaitMany {
        sets: Vec<AwaitOne>,
        timeout_ms: u32,
    },
}

/// The most sets one [`Request::SendMany`] or [`Request::AwaitMany`] names: an answer to
/// either stays within a frame (a copy without payload or path encodes in at most 75 bytes,
/// and a set has at most 64 copies, one per link of its source: 600 KB at most).
pub const MAX_SETS_PER_REQUEST: usize = 128;

/// One set of a [`Request::SendMany`]: the set `from` is asked to send.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct SendOne {
    pub from: NodeId,
    pub set: SendSet,
}

/// A set a client asks a node to send, as [`Request::Send`] says it.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct SendSet {
    /// The destinations and how the set goes to them (split, single path).
    pub request: SendRequest,
    #[serde(with = "serde_bytes")]
    pub payload: Vec<u8>,
    pub trace: bool,
    pub mode: Mode,
    /// How long a reliable set is sent again for (at most the source's longest life).
    pub deadline_ms: u32,
    /// Clear though the node seals by default.
    pub clear: bool,
}

/// One set a [`Request::AwaitMany`] waits for: what a [`Request::Await`] at `dst` names (the
/// wait is the request's).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct AwaitOne {
    pub dst: NodeId,
    pub src: NodeId,
    pub seq: u64,
    pub sent_at_us: u64,
    /// As [`Request::Await`]'s: 0 for all k of a node-to-node set.
    pub copies: u32,
    pub sealed: bool,
    pub mode: Mode,
}

/// The longest consumer name.
pub const MAX_CONSUMER_LEN: usize = 64;

/// Whether `name` may name a consumer: 1 to [`MAX_CONSUMER_LEN`] letters, digits, `-`, `_`, `.`.
pub fn is_consumer_name(name: &str) -> bool {
    (1..=MAX_CONSUMER_LEN).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// A transient fault a daemon injects into itself on request.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub enum Fault {
    /// Overwrite every mutable protocol variable with random values: once, or every
    /// `every_ms` for `for_ms`.
    CorruptState {
        seed: u64,
        every_ms: u32,
        for_ms: u32,
    },
    /// Flip random bits (header and payload alike) in a share `fraction_ppm` (parts per
    /// million) of the packets queued in the link buffers now (not yet written), and for `for_ms` of every packet
    /// entering one.
    CorruptBuffers {
        seed: u64,
        fraction_ppm: u32,
        for_ms: u32,
    },
    /// Sever the link to `neighbour`: this side refuses it until healed.
    Cut {
        neighbour: NodeId,
    },
    Heal {
        neighbour: NodeId,
    },
    /// A curious relay: while `on`, keep a copy of the payload of every packet this node
    /// forwards (read back with [`Request::Captured`]).
    Capture {
        on: bool,
    },
    /// A Byzantine relay: while `on`, rewrite what `what` says of every packet this node
    /// forwards and recompute its checksum, so that the copy passes every per-hop check.
    Forge {
        on: bool,
        what: ForgeWhat,
    },
    /// Shape the datagrams this node's link socket sends (in user space, in the daemon's
    /// socket): delay, jitter, reordering and duplication, for the destinations the rule names.
    /// Rules accumulate per destination address; a later rule for the same address replaces
    /// the earlier one.
    Shape(ShapeRule),
    /// Remove every shaping rule: datagrams go out untouched again (those already held back go
    /// out when due).
    Unshape,
    /// In a node host (several nodes in one process): crash `node`, another node of this
    /// process, as the crash of its own process would (its tasks dropped at once, nothing
    /// drained; its store keeps what it wrote). Refused for the last node that runs in the
    /// process: that one is crashed with its process.
    CrashHosted {
        node: NodeId,
    },
    /// In a node host: start `node` again after [`Fault::CrashHosted`], from its configuration
    /// file and its store, as the restart of its process would; answered once it runs.
    RestartHosted {
        node: NodeId,
    },
}

/// How a node's link socket treats the datagrams it sends to some destinations
/// ([`Fault::Shape`]).
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
pub struct ShapeRule {
    /// The destination addresses the rule applies to; empty: every destination.
    pub to: Vec<std::net::IpAddr>,
    /// Every datagram is held back this long ...
    pub delay_us: u32,
    /// ... plus or minus a uniform draw of at most this much (never less than no delay).
    pub jitter_us: u32,
    /// A share (parts per million) of the datagrams is held back a further max(delay, 1 ms),
    /// so that later ones overtake it.
    pub reorder_ppm: u32,
    /// A share (parts per million) of the datagrams is sent twice.
    pub duplicate_ppm: u32,
}

impl ShapeRule {
    /// The longest a rule may hold a datagram back (delay plus jitter).
    pub const MAX_DELAY_US: u32 = 10_000_000;

    /// Why the rule cannot be applied, if it cannot.
    pub fn check(&self) -> Result<(), String> {
        for (what, ppm) in [
            ("reorder", self.reorder_ppm),
            ("duplicate", self.duplicate_ppm),
        ] {
            if ppm > 1_000_000 {
                return Err(format!("{what} {ppm} ppm exceeds 1,000,000"));
            }
        }
        if u64::from(self.delay_us) + u64::from(self.jitter_us) > u64::from(Self::MAX_DELAY_US) {
            return Err(format!(
                "delay {} µs + jitter {} µs exceeds {} s",
                self.delay_us,
                self.jitter_us,
                Self::MAX_DELAY_US / 1_000_000
            ));
        }
        Ok(())
    }
}

impl std::fmt::Display for ShapeRule {
    /// As the answer to a shape request says it: `delay 20 ms ± 5 ms, reorder 1%, duplicate
    /// 0.5%`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = |us: u32| {
            if us % 1000 == 0 {
                format!("{} ms", us / 1000)
            } else {
                format!("{:.3} ms", f64::from(us) / 1000.0)
            }
        };
        let share = |ppm: u32| format!("{}%", f64::from(ppm) / 10_000.0);
        write!(
            f,
            "delay {} ± {}, reorder {}, duplicate {}",
            ms(self.delay_us),
            ms(self.jitter_us),
            share(self.reorder_ppm),
            share(self.duplicate_ppm)
        )
    }
}

/// What a forging relay rewrites (any combination).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
pub struct ForgeWhat {
    /// The payload bytes (for a coded piece also its own fingerprint).
    pub payload: bool,
    /// The clear fields the destination acts on (sequence id, send time) and, for a clear
    /// piece of a delivery mode, its mode and length: downgraded to a reliable copy.
    pub header: bool,
    /// The source: the relay claims another node as the source (a sealed message is sealed
    /// again with the relay's own key, over a payload of its making).
    pub source: bool,
    /// Messages it forwarded, sent again unchanged a second later.
    pub replay: bool,
    /// The attempt number (which send of its set a message is): set to the largest, as a
    /// relay that would stop a reliable set's later resends from being acknowledged.
    pub attempt: bool,
    /// Besides each packet it forwards, [`FLOOD_PER_PACKET`] sealed messages on the same route
    /// that cannot open: handshakes in the source's name with fresh encapsulated keys, and
    /// messages under the packet's session or made-up ones with broken tags. Not part of `all`
    /// (it adds traffic rather than rewriting it): asked for by name.
    pub flood: bool,
}

/// How many messages a flooding relay sends beside each packet it forwards.
pub const FLOOD_PER_PACKET: usize = 16;

impl ForgeWhat {
    pub const PAYLOAD: ForgeWhat = ForgeWhat {
        payload: true,
        header: false,
        source: false,
        replay: false,
        attempt: false,
        flood: false,
    };
    /// Every way of rewriting what is forwarded (not `flood`, which adds to it).
    pub const ALL: ForgeWhat = ForgeWhat {
        payload: true,
        header: true,
        source: true,
        replay: true,
        attempt: true,
        flood: false,
    };
    pub const NAMES: [&'static str; 6] =
        ["payload", "header", "source", "replay", "attempt", "flood"];

    /// From names such as `payload,header`; the unknown name if one is.
    pub fn parse(names: &str) -> Result<ForgeWhat, String> {
        let mut what = ForgeWhat::default();
        for name in names.split(',').map(str::trim) {
            match name {
                "payload" => what.payload = true,
                "header" => what.header = true,
                "source" => what.source = true,
                "replay" => what.replay = true,
                "attempt" => what.attempt = true,
                "flood" => what.flood = true,
                "all" => {
                    what = ForgeWhat {
                        flood: what.flood,
                        ..ForgeWhat::ALL
                    }
                }
                other => {
                    return Err(format!(
                        "{other:?} is not something to forge: {} or all",
                        ForgeWhat::NAMES.join(", ")
                    ));
                }
            }
        }
        Ok(what)
    }

    pub fn is_empty(self) -> bool {
        self == ForgeWhat::default()
    }
}

impl std::fmt::Display for ForgeWhat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let on = [
            self.payload,
            self.header,
            self.source,
            self.replay,
            self.attempt,
            self.flood,
        ];
        let names: Vec<&str> = ForgeWhat::NAMES
            .iter()
            .zip(on)
            .filter(|(_, on)| *on)
            .map(|(n, _)| *n)
            .collect();
        f.write_str(&names.join(","))
    }
}

#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub enum Response {
    /// Boxed: a status is several times larger than any other answer.
    Status(Box<NodeStatus>),
    /// The set was taken ([`Accepted`]).
    Accepted(Accepted),
    /// How a reliable set ended, if it has (None: still unacknowledged, or not known here).
    Settled(Option<Settlement>),
    /// The copies of one set delivered here, in index order.
    Copies(Vec<Delivery>),
    /// Output entries, the output index to ask for next, and how many entries from the index
    /// asked for on were overwritten before any client read them (since the node started;
    /// always 0 from a store, which overwrites nothing). Output indices have gaps (a restart, a
    /// set the store did not keep): only this says what a reader missed.
    Output {
        entries: Vec<Delivery>,
        next: u64,
        overwritten: u64,
    },
    /// The fault was injected; what it did.
    Injected(String),
    /// Captured payloads, and the capture index to ask for next.
    Captured {
        entries: Vec<Captured>,
        next: u64,
    },
    /// Notices, the notice index to ask for next, and how many notices between `after` and
    /// the first returned were overwritten before they were asked for.
    Notices {
        notices: Vec<Notice>,
        next: u64,
        missed: u64,
    },
    Reloaded(Reload),
    /// The revocation list is in force here: its serial, and the nodes it revoked that were not
    /// revoked before.
    Revoked {
        serial: u64,
        newly: Vec<NodeId>,
    },
    Error(ControlError),
    /// The answer to [`Request::Hosted`]: the statuses of the process's running nodes in this
    /// page, the nodes of the page's range it hosts that do not run now, and the id to ask
    /// after next (none: this was the last page).
    Hosted {
        statuses: Vec<NodeStatus>,
        stopped: Vec<NodeId>,
        next: Option<NodeId>,
    },
    /// The answer to [`Request::HostReadiness`].
    HostReadiness(HostReadiness),
    /// The answer to [`Request::SendMany`]: each set taken, or why not, in the order asked.
    SentMany(Vec<Result<Accepted, ControlError>>),
    /// The answer to [`Request::AwaitMany`]: each set's copies delivered so far (without
    /// payloads and paths), or why it could not be awaited, in the order asked.
    CopiesMany(Vec<Result<Vec<Delivery>, ControlError>>),
}

/// A set a node took: it is in the input buffer under sequence id `seq`, and travels as `k`
/// packets, copy `i` to `to[i]`.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Accepted {
    pub seq: u64,
    pub k: u32,
    /// The source's clock when it took the set: with the source and `seq`, the set's name.
    pub sent_at_us: u64,
    /// The set's destinations, one per route.
    pub to: Vec<NodeId>,
    /// The bytes of the k messages' payloads on the wire (the copies, or the mode's
    /// envelopes, seals included), one attempt.
    pub wire_bytes: u64,
    /// Whether its messages are sealed end to end.
    pub sealed: bool,
}

/// The readiness of the nodes of one process, summed ([`Request::HostReadiness`]). Each node
/// counts its links by its own revocation list; the list of the highest serial among them is
/// given, so that the asker can count the link ends there may be.
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
pub struct HostReadiness {
    /// Nodes running, and those the process hosts that do not run now (crashed, stopped).
    pub running: u32,
    pub stopped: Vec<NodeId>,
    /// Link ends up, and those that may be up (neither end revoked), over the running nodes.
    pub link_ends_up: u64,
    pub link_ends: u64,
    /// Sealing handshakes in flight, and dead links known, summed over the running nodes.
    pub handshakes_in_flight: u64,
    pub dead_links_known: u64,
    /// The highest revocation serial among the running nodes, and its list.
    pub revocation_serial: u64,
    pub revoked: Vec<NodeId>,
    /// How many running nodes are not ready (a link that may be up is not, a dead link known or
    /// a handshake in flight), and the first [`HOST_READINESS_NAMED`] of them.
    pub not_ready: u32,
    pub not_ready_first: Vec<NodeId>,
}

/// How many nodes that are not ready a [`HostReadiness`] names.
pub const HOST_READINESS_NAMED: usize = 32;

/// Something a node saw happen, as `cuberoute monitor` shows it.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Notice {
    /// Position in the node's notice ring, increasing from 0.
    pub index: u64,
    /// When, in milliseconds since the Unix epoch by the node's clock.
    pub at_ms: u64,
    pub what: Happening,
}

#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub enum Happening {
    LinkUp {
        neighbour: NodeId,
    },
    LinkDown {
        neighbour: NodeId,
        /// Why: the neighbour taken for dead (liveness), the connection closed or lost, ...
        why: String,
    },
    /// A copy (or, in a delivery mode, a whole set) handed to this node's output buffer.
    Delivered {
        src: NodeId,
        seq: u64,
        sent_at_us: u64,
        index: u8,
        k: u32,
        hops: u32,
        latency_us: u64,
        /// The copy's path, when the send asked for a trace.
        path: Option<Vec<NodeId>>,
    },
    /// Packets dropped, with the reason they are counted under.
    Dropped {
        reason: String,
        count: u64,
    },
    /// A fault the chaos tooling injected here, as the answer to the request said it.
    Fault {
        fault: String,
    },
    /// Any other counted event (see [`Counters::events`]), with the neighbour it concerns.
    Event {
        name: String,
        neighbour: Option<NodeId>,
    },
    /// The configuration was read again (SIGHUP or a reload request).
    Reloaded {
        changed: Vec<String>,
    },
}

/// What a reload did.
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
pub struct Reload {
    /// Settings now in force, as `key: old -> new`.
    pub changed: Vec<String>,
    /// Settings changed in the file that only a restart applies, as `key: running -> in file`.
    pub needs_restart: Vec<String>,
}

/// One copy (or part) handed to the destination's output buffer.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Delivery {
    /// Position in the destination's output buffer, increasing from 0.
    pub output_index: u64,
    pub src: NodeId,
    pub dst: NodeId,
    pub seq: u64,
    /// When the source's `input` took the set: with `src` and `seq`, the set's name.
    pub sent_at_us: u64,
    pub index: u8,
    /// How many copies (or parts) the set has.
    pub k: u32,
    pub split: bool,
    pub hops: u32,
    /// Every node from source to destination inclusive, when the send asked for a trace (in a
    /// delivery mode: the path of the piece that completed the set).
    pub path: Option<Vec<NodeId>>,
    /// The set's delivery mode. Plain: this entry is one copy. Otherwise it is the whole set's
    /// payload, rebuilt from its pieces, with `index` the path of the piece that completed it.
    pub mode: Mode,
    /// The paths whose pieces the destination rejected (forged or misshapen).
    pub rejected_paths: Vec<u8>,
    /// Whether it came sealed: read by no relay, and sent by the node it names as its source.
    pub sealed: bool,
    /// From `input` at the source to delivery here, by the two nodes' wall clocks.
    pub latency_us: u64,
    #[serde(with = "serde_bytes")]
    pub payload: Vec<u8>,
}

/// The payload of one packet a capturing relay forwarded, as it was on the wire (for a
/// delivery mode: the envelope with the piece this path carried).
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Captured {
    /// Position in the node's capture buffer, increasing from 0.
    pub capture_index: u64,
    pub src: NodeId,
    pub dst: NodeId,
    pub seq: u64,
    pub sent_at_us: u64,
    /// The path (copy) index of the packet.
    pub index: u8,
    #[serde(with = "serde_bytes")]
    pub payload: Vec<u8>,
}

/// A refused request.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize, thiserror::Error)]
#[error("{message}")]
pub struct ControlError {
    pub kind: ControlErrorKind,
    pub message: String,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub enum ControlErrorKind {
    /// The request is malformed or its values are out of range.
    BadRequest,
    /// A node id that is not in the topology, or is this node where another is needed.
    UnknownNode,
    PayloadTooLarge,
    /// The daemon is draining for shutdown and takes no new work.
    ShuttingDown,
    /// The daemon keeps as much as it may (the outbox of unacknowledged reliable sets): try
    /// again later.
    Busy,
    /// This certificate may not make this request, or the node's configuration forbids it.
    Forbidden,
    /// The configuration file a reload read has a problem; nothing changed.
    BadConfig,
    /// The node's store refused or failed (none configured, full, a disk error).
    Store,
}

impl ControlError {
    pub fn new(kind: ControlErrorKind, message: impl Into<String>) -> ControlError {
        ControlError {
            kind,
            message: message.into(),
        }
    }
}

/// What `cluster status` shows of one node.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct NodeStatus {
    pub id: NodeId,
    pub topology: Topology,
    pub pid: u32,
    pub incarnation: u64,
    pub uptime_ms: u64,
    pub links: Vec<LinkStatus>,
    /// Message sets waiting in the input buffer.
    pub input_queued: u64,
    /// Entries in the output buffer.
    pub output_len: u64,
    /// Whether the output's indices last across restarts (the node keeps a store): an index
    /// a reader had before a restart names the same entry after it.
    pub output_lasts: bool,
    pub counters: Counters,
    pub chaos: ChaosCounters,
    /// The daemon's version (the crate's), and the wire version it speaks.
    pub version: String,
    pub wire_version: u8,
    pub config: ConfigStatus,
    /// Bytes the link and input buffers hold now, of their share of `buffers.memory_mib`.
    pub buffered_bytes: u64,
    /// The nodes taken out of the cluster, as the revocation list in force here says, and
    /// that list's serial.
    pub revoked: Vec<NodeId>,
    pub revocation_serial: u64,
    /// What the process's QUIC endpoints and timers did since it started.
    pub io: IoCounters,
    /// End-to-end sealing's sessions.
    pub sealing: SealingStatus,
    /// The dead links this node knows of and routes around.
    pub around: AroundStatus,
}

/// The dead links a node knows of (its own links' verdicts and its neighbours' reports), and
/// what it did with the reports.
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
pub struct AroundStatus {
    /// Each dead link once, lower end first.
    pub dead_links: Vec<(NodeId, NodeId)>,
    /// Reports held (of links down and up).
    pub reports_held: u64,
    /// Reports new here (and passed on), met again, about no link, refused for a full table.
    pub reports_new: u64,
    pub reports_known: u64,
    pub reports_not_a_link: u64,
    pub reports_full: u64,
    /// Sets, resends and acknowledgements of this node's sent on routes around dead links.
    pub sets_rerouted: u64,
}

/// A node's sealing sessions now, and what they did since it started.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
pub struct SealingStatus {
    /// Sessions held (keys in memory), handshakes in flight, sets waiting for a session.
    pub sessions: u64,
    pub handshakes_in_flight: u64,
    pub waiting_sets: u64,
    /// How long a session seals, and when its keys are erased, in ms (`[seal]`).
    pub rekey_after_ms: u64,
    pub erase_after_ms: u64,
    /// How long sessions are renewed by derivation before a full handshake (`[seal]`), in ms.
    pub handshake_after_ms: u64,
    /// Sessions made as initiator and as responder, erased with age, pushed out by memory;
    /// handshakes given up.
    pub initiated: u64,
    pub answered: u64,
    pub erased: u64,
    pub evicted: u64,
    pub handshakes_failed: u64,
    /// Sets sealed again under a new session because their destination restarted after they
    /// were sealed and asked for them (its recovery handshake).
    pub sets_sealed_again: u64,
    /// Answers sent again, unchanged, to an initiator's next attempt of a handshake answered
    /// already (no key agreement, no second session).
    pub answers_sent_again: u64,
    /// Sessions renewed by deriving their successor (no key agreement): as sealer, and as
    /// receiver of a message under the successor.
    pub derived_sealing: u64,
    pub derived_opening: u64,
    /// Inits sent again at once because a path came back (a link up, or a neighbour's report
    /// of one), not at the end of their backoff.
    pub inits_resent_on_news: u64,
}

/// What a daemon's process did on the network and on its timers since it started: the causes
/// of its wake-ups, which `cuberoute bench` divides by the packet-hops of a window.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
pub struct IoCounters {
    /// UDP datagrams sent (a GSO batch counts each of its datagrams)...
    pub datagrams_sent: u64,
    /// ...and the send calls that carried them.
    pub send_calls: u64,
    /// UDP datagrams received (a GRO batch counts each)...
    pub datagrams_received: u64,
    /// ...and the receive calls that returned any.
    pub receive_calls: u64,
    /// QUIC's connection timers that expired: delayed acknowledgements, loss probes,
    /// keep-alives, idle and close timeouts.
    pub quic_timers_fired: u64,
    /// The links' own timers that expired: a lazy acknowledgement, the silence watch, knocks
    /// and redials.
    pub link_timers_fired: u64,
    /// QUIC PING frames sent on the current link and control connections: keep-alives, and
    /// loss probes with nothing else to carry.
    pub pings_sent: u64,
    /// QUIC ACK frames sent on the current link connections, alone or with data.
    pub link_ack_frames_sent: u64,
}

/// What the chaos tooling did to a node, and what became of the packets it corrupted.
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
pub struct ChaosCounters {
    /// Times the protocol variables were overwritten.
    pub state_corruptions: u64,
    /// Packets this node corrupted.
    pub packets_corrupted: u64,
    /// Corrupted packets that ended here: dropped (by any reason) ...
    pub corrupted_dropped: u64,
    /// ... or delivered (intact enough to pass the checksum) ...
    pub corrupted_delivered: u64,
    /// ... or were corrupted once more here (and are then followed from this corruption).
    pub corrupted_again: u64,
    /// The most hops a corrupted packet that ended here made after its corruption.
    pub max_hops_after: u32,
    /// The longest a corrupted packet that ended here lived after its corruption, in µs.
    pub max_us_after: u64,
    /// Payloads this node kept as a curious relay.
    pub captured: u64,
    /// Packets this node rewrote as a Byzantine relay (payload, header, source or attempt)...
    pub forged: u64,
    /// ... of which, by what it rewrote: the payload ...
    pub forged_payload: u64,
    /// ... the clear fields (and a clear piece's mode) ...
    pub forged_header: u64,
    /// ... or the source, claiming another node's ...
    pub forged_source: u64,
    /// ... or the attempt number, set to the largest.
    pub forged_attempt: u64,
    /// Packets it forwarded and sent again later, unchanged (a replay).
    pub replayed: u64,
    /// Messages a flooding relay sent beside what it forwarded.
    pub flooded: u64,
    /// What the shaper of its link socket did ([`Fault::Shape`]).
    pub shaper: ShaperCounters,
}

/// The shaper of a node's link socket: the rules in force and what became of the datagrams it
/// touched. Every datagram a rule matched was sent (at once, or held back and then sent) or is
/// counted in `dropped`.
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
pub struct ShaperCounters {
    /// Rules in force: one per destination address, and one for every other destination.
    pub rules: u64,
    /// Datagrams held back (delayed, by any delay above zero) ...
    pub delayed: u64,
    /// ... of which held back further so that later ones overtake them.
    pub reordered: u64,
    /// Extra copies sent.
    pub duplicated: u64,
    /// Datagrams held back now.
    pub queued: u64,
    /// Datagrams the shaper dropped, by reason: `queue_full` (its queue holds its bound),
    /// `would_block` (the socket's send buffer was full when the datagram was due),
    /// `send_error` (the socket refused it).
    pub dropped: BTreeMap<String, u64>,
}

impl NodeStatus {
    pub fn links_up(&self) -> usize {
        self.links.iter().filter(|l| l.up).count()
    }
}

#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct LinkStatus {
    pub neighbour: NodeId,
    pub up: bool,
    /// Cut by the chaos tooling: both sides refuse the link until it is healed.
    pub cut: bool,
    /// Packets in the link's message buffer: not yet acknowledged by the neighbour.
    pub queued: u64,
    /// Of those, written on the current connection and waiting for the acknowledgement.
    pub written_unacknowledged: u64,
    /// Since the link last went up or down (since the start, if it never went up).
    pub since_ms: u64,
    /// Data frames written, received, and written again on a new connection (those the
    /// neighbour had not acknowledged), since the start.
    pub frames_written: u64,
    pub frames_received: u64,
    pub frames_resent: u64,
    /// Packets for this neighbour the node dropped, by reason (`link_buffer_full`,
    /// `memory_bound`, `frame_too_large`).
    pub drops: BTreeMap<String, u64>,
    /// The current connection as QUIC sees it, while the link is up.
    pub transport: Option<LinkTransport>,
    /// Whether this side dials the link (the other waits for it, and knocks when it waits too
    /// long).
    pub dials: bool,
    /// While this side dials, the link is not up and not cut: how its redialling stands.
    pub redial: Option<Redial>,
    /// Up, but liveness heard nothing from the neighbour for an interval.
    pub suspected: bool,
    /// Down after it was up: why it went down (the neighbour taken for dead, ...).
    pub down: Option<String>,
}

/// A dialling side's retries: dials that failed in a row, the backoff (doubling from 50 ms to
/// 2 s, with jitter) and the time left before the next dial.
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
pub struct Redial {
    pub failures: u32,
    pub backoff_ms: u64,
    pub next_in_ms: u64,
}

/// A link's connection as QUIC sees it.
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
pub struct LinkTransport {
    /// QUIC's estimate of the round-trip time.
    pub rtt_us: u64,
    pub datagrams_sent: u64,
    pub bytes_sent: u64,
    pub datagrams_received: u64,
    pub bytes_received: u64,
    /// Packets QUIC declared lost (and sent again).
    pub packets_lost: u64,
}

/// The configuration a daemon runs with.
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
pub struct ConfigStatus {
    pub listen: String,
    pub control_listen: String,
    pub metrics_listen: Option<String>,
    pub log_format: String,
    /// The log filter (`log_level`, or `RUST_LOG` when set).
    pub log_level: String,
    /// Whether clients may inject faults (`chaos.allow`).
    pub chaos_allowed: bool,
    pub input_buffer: u64,
    pub link_buffer: u64,
    pub output_buffer: u64,
    pub requests: u64,
    pub memory_mib: u64,
    /// The niceness the process lowered itself to at start (`nice`; 0: as started).
    pub nice: i32,
    /// Whether the node seals the sets it sends (`seal`).
    pub seal: bool,
}

/// Counters since the process started.
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
pub struct Counters {
    /// Message sets accepted into the input buffer.
    pub sets_accepted: u64,
    /// Packets sent by `input` (k per set).
    pub packets_sent: u64,
    pub packets_forwarded: u64,
    pub packets_delivered: u64,
    /// Packets dropped, by reason (see docs/protocol.md).
    pub dropped: BTreeMap<String, u64>,
    /// Events that are not packet drops, by kind: links up and lost, peers and clients refused,
    /// malformed frames, output entries overwritten.
    pub events: BTreeMap<String, u64>,
    /// The end-to-end sealing's key agreements, each the first message of a pair of nodes at
    /// one of its ends.
    pub key_agreements: KeyAgreements,
}

/// Key agreements of the sealing since the process started: an HPKE setup for each
/// destination this node seals to, and for each sealer's pair it opens (again, if it had
/// forgotten the pair). What they cost is measured around each, on the thread that did it.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
pub struct KeyAgreements {
    /// Pairs set up to seal (the sender's setup)...
    pub to_seal: u64,
    /// ...and to open (the receiver's), whether the message then opened or not.
    pub to_open: u64,
    /// The CPU time they took, in µs.
    pub cpu_us: u64,
}

impl Counters {
    pub fn dropped_total(&self) -> u64 {
        self.dropped.values().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{MAX_FRAME_LEN, decode_body, decode_frame, encode_frame};
    use proptest::prelude::*;

    #[test]
    fn requests_and_responses_round_trip() {
        let request = Request::Send(SendSet {
            request: SendRequest {
                split: true,
                ..SendRequest::to(NodeId(3))
            },
            payload: b"hi".to_vec(),
            trace: true,
            mode: "reliable+code:1".parse().unwrap(),
            deadline_ms: 5000,
            clear: true,
        });
        let frame = encode_frame(&request).unwrap();
        assert_eq!(decode_frame::<Request>(&frame), Ok(request));
        let response = Response::Error(ControlError::new(ControlErrorKind::UnknownNode, "no"));
        let frame = encode_frame(&response).unwrap();
        assert_eq!(decode_frame::<Response>(&frame), Ok(response));
    }

    #[test]
    fn many_sets_round_trip() {
        let one = SendOne {
            from: NodeId(7),
            set: SendSet {
                request: SendRequest::to(NodeId(3)),
                payload: b"hi".to_vec(),
                trace: false,
                mode: Mode::default(),
                deadline_ms: 5000,
                clear: true,
            },
        };
        let request = Request::SendMany(vec![
            one.clone(),
            SendOne {
                from: NodeId(8),
                ..one
            },
        ]);
        let frame = encode_frame(&request).unwrap();
        assert_eq!(decode_frame::<Request>(&frame), Ok(request));
        let request = Request::AwaitMany {
            sets: vec![AwaitOne {
                dst: NodeId(3),
                src: NodeId(7),
                seq: 9,
                sent_at_us: 1,
                copies: 0,
                sealed: false,
                mode: Mode::default(),
            }],
            timeout_ms: 100,
        };
        let frame = encode_frame(&request).unwrap();
        assert_eq!(decode_frame::<Request>(&frame), Ok(request));
        let response = Response::SentMany(vec![
            Ok(Accepted {
                seq: 1,
                k: 2,
                sent_at_us: 3,
                to: vec![NodeId(3), NodeId(3)],
                wire_bytes: 4,
                sealed: false,
            }),
            Err(ControlError::new(ControlErrorKind::Busy, "full")),
        ]);
        let frame = encode_frame(&response).unwrap();
        assert_eq!(decode_frame::<Response>(&frame), Ok(response));
    }

    /// The largest answer to [`Request::AwaitMany`]: every set of a full request with 64
    /// copies, each with every field at its widest, fits in a frame.
    #[test]
    fn the_widest_answer_to_many_awaits_fits_a_frame() {
        let copy = Delivery {
            output_index: u64::MAX,
            src: NodeId(u64::MAX),
            dst: NodeId(u64::MAX),
            seq: u64::MAX,
            sent_at_us: u64::MAX,
            index: 63,
            k: 64,
            split: true,
            hops: u32::MAX,
            path: None,
            mode: "reliable+secret:63".parse().unwrap(),
            rejected_paths: Vec::new(),
            sealed: true,
            latency_us: u64::MAX,
            payload: Vec::new(),
        };
        let set = Ok(vec![copy; 64]);
        let answer = Response::CopiesMany(vec![set; MAX_SETS_PER_REQUEST]);
        let frame = encode_frame(&answer).unwrap();
        assert!(
            frame.len() <= MAX_FRAME_LEN * 5 / 8,
            "{} bytes",
            frame.len()
        );
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic_the_request_decoder(
            bytes in proptest::collection::vec(any::<u8>(), 0..256)
        ) {
            let _ = decode_frame::<Request>(&bytes);
            let _ = decode_body::<Request>(&bytes);
        }

        #[test]
        fn a_valid_request_with_bytes_flipped_never_panics(
            flips in proptest::collection::vec((any::<prop::sample::Index>(), 0u8..8), 1..8)
        ) {
            let mut frame = encode_frame(&Request::Recv { after: 5, max: 10, wait_ms: 100, clear: None }).unwrap();
            for (at, bit) in flips {
                let i = at.index(frame.len());
                frame[i] ^= 1 << bit;
            }
            let _ = decode_frame::<Request>(&frame);
        }
    }
}
