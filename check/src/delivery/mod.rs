//! The delivery layer, every interleaving: sources that send reliable sets to one destination
//! over k paths of a network that loses, duplicates, reorders, delays and replays messages,
//! while any node may crash and restart keeping what its store keeps.
//!
//! What runs is the production code of `cuberoute_protocol::delivery` and `seal`:
//! [`Outbox`] (which sets to keep, when to send each again, when to give up, which
//! acknowledgement settles one), [`Inbox`] (pieces into whole sets, once; which pieces to
//! acknowledge), [`Writing`] (which attempt a set being written is acknowledged for, once
//! durable), [`encode::pieces`]
//! (a payload into its k pieces) and [`ReplayWindow`] (the sealing's replay check). Around them
//! the model carries out what a daemon's ends do with their answers (daemon/src/node/source.rs,
//! destination.rs, stored.rs), one rule each, in the order the daemon keeps:
//!
//! * a source's set is "accepted" once its store's write of it is done; its pieces go out at
//!   once, beside the write; an acknowledgement settles it if it names its shape and comes
//!   from its destination; a settled set is forgotten in the store by a later write;
//! * a destination writes a set that became whole to its store (in order, one write at a
//!   time) and only then hands it to its consumer and acknowledges it; a set its store knew
//!   is acknowledged again and handed to nobody; a piece of a later attempt that comes while
//!   the set is written is acknowledged when the write is done;
//! * a restart forgets everything in memory (inbox, outbox, sessions with their replay
//!   windows, writes not done), keeps the store, and puts the source's unsettled sets back in
//!   its outbox (those past their deadline settle as expired);
//! * sealing: a message is sealed under a session of the sealer's and the receiver's lives (a
//!   handshake is not modelled: a sender seals under a session of the receiver's current life
//!   at once); a receiver opens only under a session of its own life (a restart forgets its
//!   sessions) and only a nonce its [`ReplayWindow`] takes.
//!
//! Time moves only when a timer is due (an outbox's resend or deadline, an inbox's wait), by a
//! tick to the earliest one. A tick while messages are on their way or writes not done is a
//! delay (a fault of its own budget); a network without delays delivers before any timer.
//!
//! Checked in every state reached, [`Delivery::properties`]: no acknowledged set lost, none
//! handed to the consumer twice nor with another payload, no sealed message opened twice, no
//! panic, memory within the limits; once nothing is left to do, every accepted set settled at
//! its source; and while the faults that can foil an attempt (losses, delays, crashes) are fewer
//! than a set's attempts, every accepted set acknowledged.

pub mod mutant;

use crate::run::Trace;
use cuberoute_protocol::NodeId;
use cuberoute_protocol::delivery::{
    Acknowledgeable, Envelope, EnvelopeError, Inbox, InboxLimits, Mode, Outbox, OutboxLimits,
    Piece, Received, SetKey, Settlement, Shape, Writing, encode,
};
use cuberoute_protocol::seal::replay::ReplayWindow;
use mutant::Mutant;
use serde::{Deserialize, Serialize};
use stateright::{Model, Property};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// The wait between two sends of a set, in the model's microseconds.
pub const WAIT_US: u64 = 1_000;

/// The model's clock when it starts (a node's clock is never 0: the inbox takes a set sent at
/// or before a source's "forgotten until", 0 at first, for stale).
pub const START_US: u64 = 1_000_000;

/// The faults a run may inject, each at most this many times.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
pub struct Faults {
    /// A message on its way lost.
    pub losses: u8,
    /// A message on its way delivered twice.
    pub duplicates: u8,
    /// A message sent at any time before sent again by someone who captured it.
    pub replays: u8,
    /// A timer that fires while messages are on their way or writes not done.
    pub delays: u8,
    /// A node killed and restarted.
    pub crashes: u8,
}

/// What a model of the delivery is asked to check.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Params {
    /// Node 0 is the destination, the others sources (2 to 4 nodes).
    pub nodes: usize,
    /// Reliable sets sent, one source after the other (1 to 3).
    pub sets: usize,
    /// k, the disjoint paths between a source and the destination (1 to 3).
    pub paths: usize,
    /// The delivery mode of every set (reliable).
    pub mode: Mode,
    /// How many times a set's life lets its source send it (2 to 4).
    pub attempts: u32,
    pub faults: Faults,
    /// Sealed end to end (the default), or clear.
    pub sealed: bool,
    /// Every node keeps a store (the default), or none.
    pub store: bool,
    pub mutant: Option<Mutant>,
}

impl Params {
    /// Why these cannot be checked, if they cannot.
    pub fn check(&self) -> Result<(), String> {
        if !(2..=4).contains(&self.nodes) {
            return Err(format!(
                "{} nodes: 2 to 4 (one destination and its sources)",
                self.nodes
            ));
        }
        if !(1..=3).contains(&self.sets) {
            return Err(format!("{} sets: 1 to 3", self.sets));
        }
        if !(1..=3).contains(&self.paths) {
            return Err(format!("{} paths: 1 to 3", self.paths));
        }
        if !(2..=4).contains(&self.attempts) {
            return Err(format!("{} attempts: 2 to 4", self.attempts));
        }
        if !self.mode.reliable {
            return Err(format!(
                "mode {}: the model checks reliable sets (reliable, reliable+code:T, ...)",
                self.mode
            ));
        }
        self.mode
            .check(self.paths)
            .map_err(|e| format!("mode {} on {} paths: {e}", self.mode, self.paths))?;
        let f = self.faults;
        for (name, n) in [
            ("losses", f.losses),
            ("duplicates", f.duplicates),
            ("replays", f.replays),
            ("delays", f.delays),
            ("crashes", f.crashes),
        ] {
            if n > 3 {
                return Err(format!("{n} {name}: at most 3"));
            }
        }
        Ok(())
    }
}

/// A session: the lives (restarts) of its sealer and its receiver when it was made.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Serialize, Deserialize)]
pub struct Session {
    pub sealer: u8,
    pub receiver: u8,
}

/// What sealing adds to a message: its session and its nonce there.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Serialize, Deserialize)]
pub struct Seal {
    pub session: Session,
    pub nonce: u64,
}

/// What a message carries, by name: the envelope it stands for is made when it arrives
/// ([`Delivery::envelope`]), so that a state holds no bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Serialize, Deserialize)]
pub enum Body {
    /// Piece `index` of the set the message names (the model's pieces of it).
    Piece { index: u8 },
    /// The acknowledgement of the set the message names, in `shape`.
    Ack { shape: Shape },
}

/// A message on its way: a piece (source to destination) or an acknowledgement (back).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Serialize, Deserialize)]
pub struct Msg {
    pub from: u8,
    pub to: u8,
    /// The path it travels: a piece's index.
    pub path: u8,
    /// The send of its set it belongs to (1 for the first).
    pub attempt: u32,
    /// The set a piece belongs to, or the set an acknowledgement acknowledges.
    pub set: SetKey,
    pub body: Body,
    pub seal: Option<Seal>,
}

/// A node's sessions, in memory only: its life, the next nonce under each session it seals
/// under, the replay window of each it opens under.
#[derive(Clone, Default, PartialEq, Eq, Hash, Debug)]
pub struct Seals {
    pub life: u8,
    nonces: BTreeMap<(u8, Session), u64>,
    /// Shared between states until one changes (a window is 520 bytes).
    windows: BTreeMap<(u8, Session), Arc<ReplayWindow>>,
}

/// Why a sealed message was not opened.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Refused {
    /// Clear, to a node that seals.
    Clear,
    /// Under a session of another life of the receiver: forgotten.
    NoSession,
    /// Its nonce was seen (the replay window said no).
    Replay,
}

/// A reliable set as its source keeps it (in the outbox and in the store): which set, and when
/// its life ends. Its pieces are the model's (the same bytes every time).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Kept {
    pub set: u8,
    pub shape: Shape,
    pub sealed: bool,
    pub deadline_us: u64,
}

/// Node 0 is every set's destination.
impl Acknowledgeable for Kept {
    fn destination(&self) -> Option<NodeId> {
        Some(NodeId(0))
    }

    fn shape(&self) -> Shape {
        self.shape
    }

    fn sealed(&self) -> bool {
        self.sealed
    }
}

/// A source's store's write, queued: done in order, one at a time, lost in a crash.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Op {
    Put(SetKey, Kept),
    Forget(SetKey),
}

/// A destination's write of a whole set, queued (the attempt to acknowledge when it is done is
/// the production [`Writing`]'s).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Write {
    pub set: SetKey,
    pub shape: Shape,
}

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Source {
    pub seals: Seals,
    pub outbox: Arc<Outbox<Kept>>,
    /// What its store holds: its unsettled sets.
    pub store: BTreeMap<SetKey, Kept>,
    pub writes: Vec<Op>,
}

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Dest {
    pub seals: Seals,
    pub inbox: Arc<Inbox>,
    /// What its store holds: the sets delivered here.
    pub store: BTreeSet<SetKey>,
    pub writes: Vec<Write>,
    /// The sets being written, with the attempt each will be acknowledged for.
    pub writing: Writing,
}

/// How a set ended at its source, as its client was told.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
pub enum Told {
    Acked,
    Expired,
    Refused,
}

/// What broke a property on the way to a state (a state where one broke has no step after).
#[derive(Clone, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
pub enum Broken {
    HandedTwice { set: u8 },
    WrongPayload { set: u8 },
    ReplayOpened { at: u8 },
    Panicked { at: u8 },
}

/// What the properties look at, beside the nodes: what each set's client was told and what
/// the consumer got (a model's ghost state: no node reads it).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Ghost {
    pub accepted: Vec<bool>,
    pub told: Vec<Option<Told>>,
    pub acked: Vec<bool>,
    pub handed: Vec<u8>,
    /// Every sealed message opened: (receiver, sealer, session, nonce).
    pub opened: BTreeSet<(u8, u8, Session, u64)>,
    pub broken: Option<Broken>,
}

/// A state of the model.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct World {
    pub now: u64,
    pub next_set: u8,
    pub dest: Dest,
    pub sources: Vec<Source>,
    /// The messages on their way, sorted (the network delivers them in any order).
    pub net: Vec<Msg>,
    /// Every message sent, sorted, for replays (empty when none may be replayed).
    pub log: Arc<Vec<Msg>>,
    /// The faults still allowed.
    pub left: Faults,
    /// The faults so far that can foil an attempt: losses, delays, crashes.
    pub foiled: u8,
    pub ghost: Ghost,
}

/// A step.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
pub enum Step {
    /// The next set is sent by its source.
    Send {
        set: u8,
    },
    /// The message at `msg` of the network arrives.
    Deliver {
        msg: usize,
    },
    Lose {
        msg: usize,
    },
    Duplicate {
        msg: usize,
    },
    /// The message at `msg` of the log is sent again.
    Replay {
        msg: usize,
    },
    /// `node`'s store finishes its first queued write.
    Write {
        node: u8,
    },
    /// Time moves to the earliest timer due.
    Tick,
    Crash {
        node: u8,
    },
}

/// The model: its parameters and what they make.
pub struct Delivery {
    pub params: Params,
    /// Each set's pieces (its payload is four bytes of its number) and its shape.
    pieces: Vec<Vec<Piece>>,
    outbox_limits: OutboxLimits,
    inbox_limits: InboxLimits,
}

fn payload(set: u8) -> Vec<u8> {
    vec![set + 1; 4]
}

fn insert_sorted<T: Ord>(v: &mut Vec<T>, x: T) {
    let at = v.binary_search(&x).unwrap_or_else(|i| i);
    v.insert(at, x);
}

impl Seals {
    fn seal(&mut self, peer: u8, peer_life: u8) -> Seal {
        let session = Session {
            sealer: self.life,
            receiver: peer_life,
        };
        let nonce = self.nonces.entry((peer, session)).or_insert(0);
        *nonce += 1;
        Seal {
            session,
            nonce: *nonce,
        }
    }

    fn open(&mut self, from: u8, seal: Option<Seal>, check_window: bool) -> Result<Seal, Refused> {
        let seal = seal.ok_or(Refused::Clear)?;
        if seal.session.receiver != self.life {
            return Err(Refused::NoSession);
        }
        let window = self.windows.entry((from, seal.session)).or_default();
        if check_window && !Arc::make_mut(window).accept(seal.nonce) {
            return Err(Refused::Replay);
        }
        Ok(seal)
    }

    /// A restart: the sessions are forgotten (a new life), or under the mutant kept with their
    /// windows forgotten.
    fn restart(&mut self, keep_sessions: bool) {
        if keep_sessions {
            self.windows.clear();
        } else {
            *self = Seals {
                life: self.life + 1,
                ..Seals::default()
            };
        }
    }
}

impl Delivery {
    /// The model of `params` (checked first with [`Params::check`]).
    pub fn new(params: Params) -> Delivery {
        let pieces = (0..params.sets as u8)
            .map(|set| {
                encode::pieces(params.mode, params.paths, &payload(set), [set; 32])
                    .expect("a checked mode encodes four bytes")
            })
            .collect();
        let sets = params.sets;
        let attempts = u64::from(params.attempts);
        Delivery {
            outbox_limits: OutboxLimits {
                max_sets: sets,
                max_bytes: 1 << 20,
                first_resend_us: WAIT_US,
                min_resend_us: WAIT_US,
                max_resend_us: WAIT_US,
            },
            inbox_limits: InboxLimits {
                max_sets: sets,
                max_bytes: 1 << 20,
                pending_for_us: attempts * WAIT_US,
                // Beyond the model's horizon, as five minutes are beyond a set's life.
                remember_for_us: 1_000 * WAIT_US,
            },
            params,
            pieces,
        }
    }

    fn mutant(&self, m: Mutant) -> bool {
        self.params.mutant == Some(m)
    }

    fn source_of(&self, set: u8) -> u8 {
        1 + set % (self.params.nodes as u8 - 1)
    }

    fn shape(&self, set: u8) -> Shape {
        self.pieces[set as usize][0].shape()
    }

    fn bytes(&self, set: u8) -> usize {
        self.pieces[set as usize].iter().map(|p| p.data.len()).sum()
    }

    /// The set a key names (its sequence number), if it is one of the model's.
    fn set_of(&self, key: &SetKey) -> Option<u8> {
        (key.seq < self.params.sets as u64).then_some(key.seq as u8)
    }

    fn empty(&self) -> World {
        let sets = self.params.sets;
        World {
            now: START_US,
            next_set: 0,
            dest: Dest {
                seals: Seals::default(),
                inbox: Arc::new(Inbox::new(self.inbox_limits)),
                store: BTreeSet::new(),
                writes: Vec::new(),
                writing: Writing::default(),
            },
            sources: (1..self.params.nodes)
                .map(|_| Source {
                    seals: Seals::default(),
                    outbox: Arc::new(Outbox::new(self.outbox_limits)),
                    store: BTreeMap::new(),
                    writes: Vec::new(),
                })
                .collect(),
            net: Vec::new(),
            log: Arc::new(Vec::new()),
            left: self.params.faults,
            foiled: 0,
            ghost: Ghost {
                accepted: vec![false; sets],
                told: vec![None; sets],
                acked: vec![false; sets],
                handed: vec![0; sets],
                opened: BTreeSet::new(),
                broken: None,
            },
        }
    }

    fn life(&self, w: &World, node: u8) -> u8 {
        if node == 0 {
            w.dest.seals.life
        } else {
            w.sources[node as usize - 1].seals.life
        }
    }

    /// Put `msg` on its way (sealed by `from` if the model seals).
    fn send(&self, w: &mut World, mut msg: Msg) {
        if self.params.sealed {
            let peer_life = self.life(w, msg.to);
            let seals = if msg.from == 0 {
                &mut w.dest.seals
            } else {
                &mut w.sources[msg.from as usize - 1].seals
            };
            msg.seal = Some(seals.seal(msg.to, peer_life));
        }
        if self.params.faults.replays > 0 {
            if let Err(at) = w.log.binary_search(&msg) {
                Arc::make_mut(&mut w.log).insert(at, msg);
            }
        }
        insert_sorted(&mut w.net, msg);
    }

    /// The pieces of `set` (named `key`), its `attempt`-th send.
    fn send_pieces(&self, w: &mut World, key: SetKey, set: u8, attempt: u32) {
        let src = self.source_of(set);
        for piece in &self.pieces[set as usize] {
            let msg = Msg {
                from: src,
                to: 0,
                path: piece.index,
                attempt,
                set: key,
                body: Body::Piece { index: piece.index },
                seal: None,
            };
            self.send(w, msg);
        }
    }

    /// The envelope `msg` carries, as a receiver reads it: made as its sender makes it and
    /// decoded from its bytes.
    fn envelope(&self, msg: &Msg) -> Result<Envelope, EnvelopeError> {
        let envelope = match msg.body {
            Body::Piece { index } => {
                let set = self.set_of(&msg.set).expect("the model's sets only");
                Envelope::Piece(self.pieces[set as usize][index as usize].clone())
            }
            Body::Ack { shape } => Envelope::Ack {
                set: msg.set,
                shape,
            },
        };
        Envelope::from_bytes(&envelope.to_bytes())
    }

    /// Tell the client of `set` how it ended (the first word stays: a set settled again after
    /// a restart from a store that had not yet forgotten it is told nothing new).
    fn settle(&self, w: &mut World, node: u8, key: SetKey, told: Told) {
        if let Some(set) = self.set_of(&key) {
            let slot = &mut w.ghost.told[set as usize];
            if slot.is_none() || told == Told::Acked {
                *slot = Some(told);
            }
            if told == Told::Acked {
                w.ghost.acked[set as usize] = true;
            }
        }
        if self.params.store {
            w.sources[node as usize - 1].writes.push(Op::Forget(key));
        }
    }

    /// Open `msg` at `at` if the model seals; the ghost notes what was opened, and a sealed
    /// message opened twice breaks "not from a replay".
    fn open(&self, w: &mut World, at: u8, msg: &Msg) -> bool {
        if !self.params.sealed {
            return true;
        }
        let check_window = !self.mutant(Mutant::NoReplayWindow);
        let seals = if at == 0 {
            &mut w.dest.seals
        } else {
            &mut w.sources[at as usize - 1].seals
        };
        match seals.open(msg.from, msg.seal, check_window) {
            Ok(seal) => {
                if !w
                    .ghost
                    .opened
                    .insert((at, msg.from, seal.session, seal.nonce))
                {
                    w.ghost.broken = Some(Broken::ReplayOpened { at });
                }
                true
            }
            Err(_) => false,
        }
    }

    /// The destination took `msg`.
    fn at_destination(&self, w: &mut World, msg: Msg) {
        if !self.open(w, 0, &msg) {
            return;
        }
        let Ok(Envelope::Piece(piece)) = self.envelope(&msg) else {
            return;
        };
        let Some(set) = self.set_of(&msg.set) else {
            return;
        };
        let shape = piece.shape();
        let now = w.now;
        let inbox = Arc::make_mut(&mut w.dest.inbox);
        let received = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            inbox.receive(now, msg.set, msg.path, piece)
        }));
        match received {
            Err(_) => w.ghost.broken = Some(Broken::Panicked { at: 0 }),
            Ok(Received::Complete { payload: p, .. }) => {
                if p != payload(set) {
                    w.ghost.broken = Some(Broken::WrongPayload { set });
                }
                if self.params.store {
                    w.dest.writes.push(Write {
                        set: msg.set,
                        shape,
                    });
                    w.dest.writing.begin(msg.set, shape, msg.attempt);
                    if self.mutant(Mutant::AckBeforeWrite) {
                        self.acknowledge(w, msg.set, shape, msg.attempt);
                    }
                } else {
                    self.hand(w, set);
                    self.acknowledge_if_due(w, msg.set, shape, msg.attempt);
                }
            }
            Ok(Received::AlreadyDelivered { .. }) => {
                self.acknowledge_if_due(w, msg.set, shape, msg.attempt);
            }
            Ok(Received::Pending | Received::Failed(_)) => {}
        }
    }

    /// As a daemon's `acknowledge_if_due`: unless the set's write holds its acknowledgement
    /// (then the write's end acknowledges the greatest attempt that came), acknowledge it.
    fn acknowledge_if_due(&self, w: &mut World, key: SetKey, shape: Shape, attempt: u32) {
        if !w.dest.writing.hold(&key, shape, attempt) {
            self.acknowledge(w, key, shape, attempt);
        }
    }

    /// Acknowledge `key` for `attempt` if the inbox says it is due, on every path back.
    fn acknowledge(&self, w: &mut World, key: SetKey, shape: Shape, attempt: u32) {
        if !Arc::make_mut(&mut w.dest.inbox).acknowledge(&key, shape, attempt) {
            return;
        }
        let to = key.src.0 as u8;
        for path in 0..self.params.paths as u8 {
            let msg = Msg {
                from: 0,
                to,
                path,
                attempt: 1,
                set: key,
                body: Body::Ack { shape },
                seal: None,
            };
            self.send(w, msg);
        }
    }

    fn hand(&self, w: &mut World, set: u8) {
        let handed = &mut w.ghost.handed[set as usize];
        *handed += 1;
        if *handed > 1 {
            w.ghost.broken = Some(Broken::HandedTwice { set });
        }
    }

    /// Source `node` took `msg`.
    fn at_source(&self, w: &mut World, node: u8, msg: Msg) {
        if !self.open(w, node, &msg) {
            return;
        }
        let Ok(Envelope::Ack { set: key, shape }) = self.envelope(&msg) else {
            return;
        };
        let now = w.now;
        let outbox = Arc::make_mut(&mut w.sources[node as usize - 1].outbox);
        let from = NodeId(u64::from(msg.from));
        if let Some(Settlement::Acked { .. }) =
            outbox.acknowledged(now, &key, shape, from, msg.seal.is_some())
        {
            self.settle(w, node, key, Told::Acked);
        }
    }

    /// The earliest timer due, if any.
    fn next_timer(&self, w: &World) -> Option<u64> {
        w.sources
            .iter()
            .filter_map(|s| s.outbox.next_wakeup())
            .chain(w.dest.inbox.next_wakeup())
            .min()
    }

    /// Whether messages are on their way or writes not done.
    fn busy(w: &World) -> bool {
        !w.net.is_empty()
            || !w.dest.writes.is_empty()
            || w.sources.iter().any(|s| !s.writes.is_empty())
    }

    /// Nothing left to do but faults.
    pub fn is_quiet(&self, w: &World) -> bool {
        w.next_set as usize == self.params.sets && !Self::busy(w) && self.next_timer(w).is_none()
    }

    fn tick(&self, w: &mut World, at: u64) {
        w.now = w.now.max(at);
        let now = w.now;
        for node in 1..self.params.nodes as u8 {
            let outbox = Arc::make_mut(&mut w.sources[node as usize - 1].outbox);
            let settled = outbox.settlement(now);
            let due: Vec<(SetKey, u32, Kept)> = outbox
                .poll(now)
                .into_iter()
                .map(|(key, attempt, kept)| (key, attempt, *kept))
                .collect();
            for (key, settlement) in settled {
                if let Settlement::Expired { .. } = settlement {
                    self.settle(w, node, key, Told::Expired);
                }
            }
            if !self.mutant(Mutant::NoResend) {
                for (key, attempt, kept) in due {
                    self.send_pieces(w, key, kept.set, attempt);
                }
            }
        }
        Arc::make_mut(&mut w.dest.inbox).expire(now);
    }

    fn crash(&self, w: &mut World, node: u8) {
        let keep_sessions = self.mutant(Mutant::WindowForgottenAtRestart);
        if node == 0 {
            let d = &mut w.dest;
            d.seals.restart(keep_sessions);
            d.inbox = Arc::new(Inbox::new(self.inbox_limits));
            d.writes.clear();
            d.writing = Writing::default();
            if !self.params.store {
                d.store.clear();
            }
            return;
        }
        let now = w.now;
        let s = &mut w.sources[node as usize - 1];
        s.seals.restart(keep_sessions);
        s.outbox = Arc::new(Outbox::new(self.outbox_limits));
        s.writes.clear();
        if self.mutant(Mutant::NotResumed) {
            return;
        }
        let kept: Vec<(SetKey, Kept)> = s.store.iter().map(|(k, v)| (*k, *v)).collect();
        for (key, kept) in kept {
            if kept.deadline_us <= now {
                self.settle(w, node, key, Told::Expired);
                continue;
            }
            let bytes = self.bytes(kept.set);
            let outbox = Arc::make_mut(&mut w.sources[node as usize - 1].outbox);
            // One that does not fit is left in the store, as a daemon leaves it.
            let _ = outbox.insert(now, key, kept, bytes, kept.deadline_us);
        }
    }

    fn write(&self, w: &mut World, node: u8) {
        if node == 0 {
            if w.dest.writes.is_empty() {
                return;
            }
            let write = w.dest.writes.remove(0);
            let attempt = w.dest.writing.finish(&write.set, write.shape);
            let known = w.dest.store.contains(&write.set);
            if known && !self.mutant(Mutant::StoreNotConsulted) {
                // Delivered before a restart: acknowledged again, handed to nobody.
            } else {
                w.dest.store.insert(write.set);
                if let Some(set) = self.set_of(&write.set) {
                    self.hand(w, set);
                }
            }
            self.acknowledge_if_due(w, write.set, write.shape, attempt);
            return;
        }
        let s = &mut w.sources[node as usize - 1];
        if s.writes.is_empty() {
            return;
        }
        match s.writes.remove(0) {
            Op::Put(key, kept) => {
                s.store.insert(key, kept);
                w.ghost.accepted[kept.set as usize] = true;
            }
            Op::Forget(key) => {
                s.store.remove(&key);
            }
        }
    }

    /// Drop from the state what no step can use again, so that states which differ only there
    /// are one: the log once no replay is left, and the ghost's note of a message opened once
    /// no copy of it is on its way or in the log (it cannot come again to be opened twice).
    fn forget_what_cannot_return(w: &mut World) {
        if w.left.replays == 0 && !w.log.is_empty() {
            w.log = Arc::new(Vec::new());
        }
        if w.ghost.opened.is_empty() {
            return;
        }
        let returning: BTreeSet<(u8, u8, Session, u64)> = w
            .net
            .iter()
            .chain(w.log.iter())
            .filter_map(|m| m.seal.map(|s| (m.to, m.from, s.session, s.nonce)))
            .collect();
        w.ghost.opened.retain(|note| returning.contains(note));
    }

    /// The memory a node may hold is within its limits.
    fn bounded(&self, w: &World) -> bool {
        let sets = self.params.sets;
        w.dest.inbox.pending() <= self.inbox_limits.max_sets
            && w.dest.inbox.remembered() <= 10 * self.inbox_limits.max_sets
            && w.dest.writes.len() <= sets * self.params.attempts as usize * 2
            && w.sources
                .iter()
                .all(|s| s.outbox.len() <= self.outbox_limits.max_sets && s.store.len() <= sets)
    }
}

impl Model for Delivery {
    type State = World;
    type Action = Step;

    fn init_states(&self) -> Vec<World> {
        vec![self.empty()]
    }

    fn actions(&self, w: &World, steps: &mut Vec<Step>) {
        if w.ghost.broken.is_some() {
            return;
        }
        if (w.next_set as usize) < self.params.sets {
            steps.push(Step::Send { set: w.next_set });
        }
        for (i, msg) in w.net.iter().enumerate() {
            // Two equal messages: either is the same step.
            if i > 0 && w.net[i - 1] == *msg {
                continue;
            }
            steps.push(Step::Deliver { msg: i });
            if w.left.losses > 0 {
                steps.push(Step::Lose { msg: i });
            }
            if w.left.duplicates > 0 {
                steps.push(Step::Duplicate { msg: i });
            }
        }
        if w.left.replays > 0 {
            for i in 0..w.log.len() {
                steps.push(Step::Replay { msg: i });
            }
        }
        if !w.dest.writes.is_empty() {
            steps.push(Step::Write { node: 0 });
        }
        for (i, s) in w.sources.iter().enumerate() {
            if !s.writes.is_empty() {
                steps.push(Step::Write { node: i as u8 + 1 });
            }
        }
        if self.next_timer(w).is_some() && (!Self::busy(w) || w.left.delays > 0) {
            steps.push(Step::Tick);
        }
        if w.left.crashes > 0 {
            for node in 0..self.params.nodes as u8 {
                steps.push(Step::Crash { node });
            }
        }
    }

    fn next_state(&self, w: &World, step: Step) -> Option<World> {
        let mut next = w.clone();
        let n = &mut next;
        match step {
            Step::Send { set } => {
                let src = self.source_of(set);
                let key = SetKey {
                    src: NodeId(u64::from(src)),
                    seq: u64::from(set),
                    sent_at_us: n.now,
                };
                let deadline_us = n.now + u64::from(self.params.attempts) * WAIT_US - WAIT_US / 2;
                let kept = Kept {
                    set,
                    shape: self.shape(set),
                    sealed: self.params.sealed,
                    deadline_us,
                };
                let bytes = self.bytes(set);
                let now = n.now;
                let s = &mut n.sources[src as usize - 1];
                n.next_set += 1;
                if Arc::make_mut(&mut s.outbox)
                    .insert(now, key, kept, bytes, deadline_us)
                    .is_err()
                {
                    n.ghost.told[set as usize] = Some(Told::Refused);
                    return Some(next);
                }
                if self.params.store {
                    s.writes.push(Op::Put(key, kept));
                    if self.mutant(Mutant::AcceptBeforeWrite) {
                        n.ghost.accepted[set as usize] = true;
                    }
                } else {
                    n.ghost.accepted[set as usize] = true;
                }
                self.send_pieces(n, key, set, 1);
            }
            Step::Deliver { msg } => {
                let msg = n.net.remove(msg);
                if msg.to == 0 {
                    self.at_destination(n, msg);
                } else {
                    self.at_source(n, msg.to, msg);
                }
            }
            Step::Lose { msg } => {
                n.net.remove(msg);
                n.left.losses -= 1;
                n.foiled += 1;
            }
            Step::Duplicate { msg } => {
                let copy = n.net[msg];
                insert_sorted(&mut n.net, copy);
                n.left.duplicates -= 1;
            }
            Step::Replay { msg } => {
                let copy = n.log[msg];
                insert_sorted(&mut n.net, copy);
                n.left.replays -= 1;
            }
            Step::Write { node } => self.write(n, node),
            Step::Tick => {
                let at = self.next_timer(n)?;
                if Self::busy(n) {
                    n.left.delays -= 1;
                    n.foiled += 1;
                }
                self.tick(n, at);
            }
            Step::Crash { node } => {
                n.left.crashes -= 1;
                n.foiled += 1;
                self.crash(n, node);
            }
        }
        Self::forget_what_cannot_return(n);
        Some(next)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("acknowledged is kept", |_, w: &World| {
                w.ghost
                    .acked
                    .iter()
                    .zip(&w.ghost.handed)
                    .all(|(&acked, &handed)| !acked || handed > 0)
            }),
            Property::always("handed once", |_, w: &World| {
                !matches!(w.ghost.broken, Some(Broken::HandedTwice { .. }))
            }),
            Property::always("payload intact", |_, w: &World| {
                !matches!(w.ghost.broken, Some(Broken::WrongPayload { .. }))
            }),
            Property::always("not from a replay", |_, w: &World| {
                !matches!(w.ghost.broken, Some(Broken::ReplayOpened { .. }))
            }),
            Property::always("no panic", |_, w: &World| {
                !matches!(w.ghost.broken, Some(Broken::Panicked { .. }))
            }),
            Property::always("memory bounded", |m: &Delivery, w: &World| m.bounded(w)),
            Property::always("settled at the end", |m: &Delivery, w: &World| {
                !m.is_quiet(w)
                    || w.ghost
                        .accepted
                        .iter()
                        .zip(&w.ghost.told)
                        .all(|(&accepted, told)| !accepted || told.is_some())
            }),
            Property::always("delivered while faults allow", |m: &Delivery, w: &World| {
                !m.is_quiet(w)
                    || u32::from(w.foiled) >= m.params.attempts
                    || w.ghost
                        .accepted
                        .iter()
                        .zip(&w.ghost.acked)
                        .all(|(&accepted, &acked)| !accepted || acked)
            }),
            Property::sometimes("every set acknowledged", |_, w: &World| {
                w.ghost.acked.iter().all(|&a| a)
            }),
        ]
    }
}

/// What a trace of this model replays from: its parameters and the steps (it starts empty).
pub type DeliveryTrace = Trace<Params, (), Step>;

/// Replay `trace`: the properties broken on the way, by name, with the state they broke in.
pub fn replay(trace: &DeliveryTrace) -> Result<Vec<(String, World)>, String> {
    trace.params.check()?;
    let model = Delivery::new(trace.params.clone());
    let start = model.empty();
    crate::run::replay_steps(&model, start, &trace.steps)
}

impl crate::run::Checked for Delivery {
    type Params = Params;
    type Initial = ();

    fn name(&self) -> &'static str {
        "delivery"
    }

    fn params(&self) -> &Params {
        &self.params
    }

    fn initial(&self, _: &World) {}

    fn figures(&self) -> serde_json::Value {
        serde_json::json!({
            "wait_us": WAIT_US,
            "deadline_us": u64::from(self.params.attempts) * WAIT_US - WAIT_US / 2,
            "pieces_needed": self.params.mode.pieces_needed(self.params.paths),
        })
    }
}
