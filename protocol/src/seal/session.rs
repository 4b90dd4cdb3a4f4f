//! A node's sessions with other nodes: what it seals under, what it opens with, the handshakes
//! that make them, and when each key is erased.
//!
//! A session is made by a handshake (`handshake.rs`): the node that wants to seal to a peer and
//! has no session sends an Init; the peer answers with a Resp and keeps the session; the
//! initiator keeps it when the Resp opens. An Init not answered in time goes again, the same
//! bytes while younger than the skew: the responder that took it sends its answer again, so a
//! slow answer costs no second key agreement and makes no second session. Either end then seals to the other under it (one key
//! per direction) with a counter nonce, and opens under it with a replay window. The receiver's
//! memory of a session is what makes a message openable at all: a session the receiver
//! forgot (erased with age, pushed out when memory is full, lost in a restart) opens nothing
//! again, so no message is ever taken twice, whatever fills the memory.
//!
//! Times, all from [`SessionLimits`]:
//! - a session seals nothing once `rekey_after` old (2 minutes by default), and the sender renews
//!   it when one it made as initiator and seals under is between a half and three quarters of
//!   that old (a point drawn from the session's id: the sessions a burst made renew apart), one
//!   it answered only at seven eighths (so one end renews, not both). The renewal derives the
//!   session's successor (`ratchet.rs`) and seals under it at once, while the handshake that
//!   began the chain is younger than a point between a half and the whole of `handshake_after`
//!   (an hour) drawn from the chain's id; the receiver derives it
//!   when a message under it opens, and each end erases the parent's chain key as it derives.
//!   Past that point, the renewal is a new handshake;
//! - both ends erase its keys (zeroized) once it is `erase_after` old (3 minutes);
//! - an Init is taken only within `init_max_age` of its time, never from before this node
//!   started (less `skew`), never at or below the greatest time taken from its sender, never from
//!   more than `skew` in the future; a data message sealed more than `skew` in the future is
//!   refused too.
//!
//! A responder does not seal under a session it answered until the initiator has sealed a
//! message under it (its key confirmation, as WireGuard's responder waits for the first data):
//! an Init whose answer was lost, or one of an attempt the initiator no longer waits for, makes
//! a session only the responder holds. Unconfirmed, such a session is kept as long as a
//! confirmed one (until `erase_after`): its initiator may seal its first message under it any
//! time before `rekey_after`, a sender to this node now and then. An Init flagged `recovery`
//! (its initiator restarted, or forgot its sessions) ends the responder's older sessions with
//! that peer: those it initiated, and those it made from Inits older than the recovering
//! handshake's first (another Init of the same handshake may have made the session its
//! initiator holds), but not those the Init names as still held (a message under an unknown
//! session may be a relay's, made up: what it ends is only what the initiator lost). Made
//! within `erase_after` (and the skew) of its initiator's start, by an initiator holding no
//! session with the responder, it carries that start: if it ended a session, the responder may
//! send again under a new session what it sealed since under the older ones (what its caller
//! kept of it), which the restarted initiator could not open.
//!
//! Bounds: at most [`SessionLimits::per_peer`] confirmed sessions per peer (beyond them, the one
//! used longest ago goes) and as many unconfirmed ones as a handshake has attempts (a new one
//! replaces that peer's oldest of its kind: a peer can only push out its own), at most
//! `max_sessions` in all (the oldest goes first). Key agreements run for others are limited per
//! (sealer, path) and in all ([`HandshakeLimits`]); whatever is refused before a key agreement
//! costs a lookup.
//!
//! Pure state, like the rest of this crate: the caller passes the time and fresh random bytes.

use super::handshake::{self, Ephemeral, InitFlags, SessionKeys};
use super::keys::{PublicKey, SecretKey};
use super::limit::{Bucket, Rate};
use super::ratchet;
use super::replay::ReplayWindow;
use super::sealed::{Bound, Init, Resp, SealError, Sealed, SealedData, TAG_LEN, associated_data};
use crate::NodeId;
use chacha20poly1305::aead::AeadInOut;
use chacha20poly1305::{ChaCha20Poly1305, KeyInit};
use std::collections::{BTreeSet, HashMap};

/// Where a node finds the public key bound to another node's id.
pub trait Directory {
    fn public_key(&self, node: NodeId) -> Option<PublicKey>;
}

/// How often key agreements are run for others.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct HandshakeLimits {
    /// Inits opened per (claimed sealer, path index): a relay on one path that forges Inits in a
    /// sealer's name uses up that path's tokens only.
    pub per_path: Rate,
    /// Inits opened in all.
    pub all: Rate,
}

/// How long keys live, and how much a node remembers.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct SessionLimits {
    /// A session seals nothing once this old.
    pub rekey_after_us: u64,
    /// A session is renewed by deriving its successor (`ratchet.rs`: no key agreement, no
    /// message) until the handshake that began its chain is at most this old (a point between
    /// a half and the whole of it: [`SessionLimits::chain_ends_at_us`]); then by a full
    /// handshake, whose fresh ephemeral keys end what a stolen chain key could derive. 0: every
    /// renewal is a full handshake.
    pub handshake_after_us: u64,
    /// A session's keys are erased once this old.
    pub erase_after_us: u64,
    /// How far another node's clock may be ahead of this one's, or behind it at this node's
    /// start.
    pub skew_us: u64,
    /// An Init older than this is refused.
    pub init_max_age_us: u64,
    /// How long a first Init waits for its answer before the next is sent, or the smoothed
    /// round trip and four deviations of the handshakes answered if that is longer; each later
    /// Init of the handshake waits twice as long as the one before, at most [`MAX_BACKOFF`]
    /// times this (or that round trip, if longer) ([`SessionLimits::wait_after_us`]): as
    /// TCP backs off its retransmissions (RFC 6298, 5.5), so that a loaded machine, whose
    /// answers come late, is not sent every handshake again on every path. On a path that
    /// loses most of what it carries a handshake needs several tries, each a round trip both
    /// ways.
    pub handshake_timeout_us: u64,
    /// Inits sent for one handshake before it is given up.
    pub handshake_attempts: u32,
    /// Sessions kept per peer.
    pub per_peer: usize,
    /// Sessions kept in all.
    pub max_sessions: usize,
    pub handshakes: HandshakeLimits,
    /// A node that receives a message under a session it does not know (it restarted, or the
    /// session was pushed out) starts a handshake with the sealer, so that the sealer moves to a
    /// new session; at most once this often per sealer.
    pub recover_after_us: u64,
}

impl Default for SessionLimits {
    fn default() -> SessionLimits {
        SessionLimits {
            rekey_after_us: 120_000_000,
            handshake_after_us: 3_600_000_000,
            erase_after_us: 180_000_000,
            skew_us: 1_000_000,
            init_max_age_us: 30_000_000,
            handshake_timeout_us: 250_000,
            handshake_attempts: 8,
            per_peer: 3,
            max_sessions: 4096,
            handshakes: HandshakeLimits {
                per_path: Rate {
                    burst: 8,
                    every_us: 500_000,
                },
                all: Rate {
                    burst: 512,
                    every_us: 5_000,
                },
            },
            recover_after_us: 5_000_000,
        }
    }
}

/// The round trip a handshake is expected to take by what a node's links measure: their mean
/// round trip `link_rtt_us` for every hop of a path across the cluster and back (its
/// `diameter`: twice a mean distance, about), twice over for the spread. Idle links make it far
/// below the handshake timeout; links waiting for a loaded machine's CPU make it the first wait
/// of a node that measured no handshake of its own ([`Sessions::set_round_trip_hint`]).
pub fn expected_round_trip_us(link_rtt_us: u64, diameter: u32) -> u64 {
    link_rtt_us
        .saturating_mul(u64::from(diameter))
        .saturating_mul(2)
}

impl SessionLimits {
    /// How long the Init of attempt `attempt` (from 1) of a handshake whose first Init waits
    /// `first_us` waits for its answer: twice the last at each attempt after the first, at most
    /// [`MAX_BACKOFF`] times the timeout (or the first, if longer).
    pub fn wait_after_us(&self, first_us: u64, attempt: u32) -> u64 {
        let doublings = attempt.saturating_sub(1).min(16);
        let longest = self.handshake_timeout_us.saturating_mul(MAX_BACKOFF);
        first_us
            .saturating_mul(1 << doublings)
            .min(longest.max(first_us))
    }

    /// How old session `id` is when its renewal starts: between a half and three quarters of
    /// `rekey_after`, at a point drawn from its id (random, and the same at both ends), so that
    /// the sessions a burst made are not renewed in one burst ([`SessionLimits::renewed_by_us`]
    /// is the latest).
    pub fn renew_at_us(&self, id: u64) -> u64 {
        let spread = (self.rekey_after_us / 4).max(1);
        self.rekey_after_us / 2 + id % spread
    }

    /// How long after the handshake that began chain `chain` (the id of the session it made)
    /// its sessions are renewed by derivation: between a half and the whole of
    /// `handshake_after`, at a point drawn from the chain's id, so that the chains a burst of
    /// first contacts began do not all come to their full handshake in one burst; 0 when
    /// `handshake_after` is.
    pub fn chain_ends_at_us(&self, chain: u64) -> u64 {
        let spread = (self.handshake_after_us / 2).max(1);
        self.handshake_after_us / 2 + chain.rotate_left(32) % spread
    }

    /// How old any session is when its initiator has started its renewal: three quarters of
    /// `rekey_after`.
    pub fn renewed_by_us(&self) -> u64 {
        self.rekey_after_us - self.rekey_after_us / 4
    }

    /// How old a session this node answered is when it starts a renewal itself: seven eighths
    /// of `rekey_after`, after its initiator's point, so that one end renews a pair's session,
    /// not both at once (the other end only when the initiator seals nothing to it; as
    /// WireGuard's responder leaves rekeying to the initiator).
    pub fn responder_renews_at_us(&self) -> u64 {
        self.rekey_after_us - self.rekey_after_us / 8
    }

    /// Why these limits cannot work, if they cannot.
    pub fn check(&self) -> Result<(), String> {
        if self.rekey_after_us == 0 {
            return Err("rekey_after must be more than 0".into());
        }
        if self.erase_after_us <= self.rekey_after_us {
            return Err(format!(
                "erase_after ({} s) must be more than rekey_after ({} s): a message sealed just before the rekey must still open",
                self.erase_after_us as f64 / 1e6,
                self.rekey_after_us as f64 / 1e6
            ));
        }
        if self.per_peer < 2 || self.max_sessions < self.per_peer {
            return Err("at least 2 sessions per peer, and as many in all".into());
        }
        if self.handshake_attempts == 0 || self.handshake_timeout_us == 0 {
            return Err("a handshake needs at least one attempt and a timeout".into());
        }
        Ok(())
    }
}

/// The longest an Init waits for its answer, in handshake timeouts (unless the round trip
/// measured is longer).
pub const MAX_BACKOFF: u64 = 32;

/// Why a sealed message was refused.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, thiserror::Error)]
pub enum OpenError {
    #[error("the payload is not a sealed message")]
    Malformed,
    #[error("no public key is known for the sealer, node {0}")]
    UnknownSealer(NodeId),
    #[error("the seal does not open: the message was altered, or not sealed by its sealer")]
    Broken,
    #[error("node {sealer} sealed a message in the name of another node")]
    ForgedSource { sealer: NodeId },
    #[error("the message was taken before, or was made before this node started or too long ago")]
    Replayed,
    #[error(
        "the message was sealed under a session this node does not hold (erased, or before a restart)"
    )]
    NoSession,
    #[error("the message was sealed further in the future than the allowed clock skew")]
    Future,
    #[error("key agreements for this sealer and path, or in all, are at their limit")]
    Limited,
    #[error("the handshake answer names no handshake this node has in flight")]
    Unexpected,
    #[error("a copy of a handshake message taken already (it travels on every path)")]
    Duplicate,
    #[error(
        "a handshake message of an attempt a later one replaced: an Init older than one taken from its sealer, or an answer to an Init of ours older than one answered"
    )]
    Superseded,
    #[error(
        "an Init made before this node started (less the skew): a replay, or an Init its initiator made while this node was down"
    )]
    BeforeStart,
}

impl OpenError {
    /// The label counters use.
    pub fn as_str(self) -> &'static str {
        match self {
            OpenError::Malformed => "seal_malformed",
            OpenError::UnknownSealer(_) => "seal_unknown_node",
            OpenError::Broken => "seal_broken",
            OpenError::ForgedSource { .. } => "forged_source",
            OpenError::Replayed => "replayed",
            OpenError::NoSession => "seal_no_session",
            OpenError::Future => "seal_future",
            OpenError::Limited => "handshake_limited",
            OpenError::Unexpected => "handshake_unexpected",
            OpenError::Duplicate => "handshake_duplicate",
            OpenError::Superseded => "handshake_superseded",
            OpenError::BeforeStart => "handshake_before_start",
        }
    }
}

/// What opening a sealed message gave.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Opened {
    /// A message's plaintext.
    Payload(Vec<u8>),
    /// An Init, taken: send `resp` back to its sealer. With `lost_since_us`, the sealer
    /// restarted then (its clock) and asks for what this node sealed to it under the older
    /// sessions since then, which it could not open: sent again under the new session, it
    /// will.
    Answer {
        resp: Vec<u8>,
        lost_since_us: Option<u64>,
    },
    /// A Resp, taken: the session with this peer is ready.
    Established(NodeId),
}

/// A message sealed, and whether its session is old enough that a new handshake should start
/// ([`Sessions::start`]).
#[derive(Debug)]
pub struct Sealing {
    pub bytes: Vec<u8>,
    pub renew: bool,
}

/// The public key of a handshake message's claimed sealer, which must be its packet's source.
fn sealer_key(
    directory: &dyn Directory,
    bound: &Bound,
    sealer: NodeId,
) -> Result<PublicKey, OpenError> {
    if sealer != bound.src {
        return Err(OpenError::ForgedSource { sealer });
    }
    directory
        .public_key(sealer)
        .ok_or(OpenError::UnknownSealer(sealer))
}

/// A handshake message to send: to whom, its bytes, which attempt of its handshake it is, and
/// whether it renews a session that still seals (which say on which paths it goes:
/// [`Outgoing::paths`]).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Outgoing {
    pub to: NodeId,
    pub bytes: Vec<u8>,
    pub attempt: u32,
    /// An Init made while a session with `to` still seals ([`Sessions::can_seal`]): nothing
    /// waits for this handshake. Never an answer: a responder cannot tell whether its
    /// initiator waits (both ends may have started a handshake at once, and the initiator
    /// seals under neither until one is confirmed), so an answer goes as a first contact's.
    pub renewal: bool,
}

impl Outgoing {
    /// The indices of the `k` paths this message goes on. A first attempt (an Init, or the
    /// answer to one) goes on the first path only: most handshakes are answered so, for a
    /// fraction `1/k` of the packets. Every later attempt goes on every path, so that a dead
    /// node or a relay dropping on one path costs one wait, not the handshake; but a renewal's
    /// Inits go on one path each, in turn: nothing waits for it (the session it renews seals
    /// until long after its last attempt), and a burst of renewals on a loaded cluster whose
    /// answers come late would otherwise send `k` times the Inits it must.
    pub fn paths(&self, k: usize) -> std::ops::Range<usize> {
        if self.renewal && k > 0 {
            let i = self.attempt.saturating_sub(1) as usize % k;
            i..i + 1
        } else if self.attempt <= 1 {
            0..k.min(1)
        } else {
            0..k
        }
    }
}

/// What the passing of time did.
#[derive(Debug, Default)]
pub struct Tick {
    /// Inits to send again.
    pub inits: Vec<Outgoing>,
    /// Peers whose handshake was given up: what waits for a session with them cannot go.
    pub failed: Vec<NodeId>,
    /// Sessions erased with age.
    pub erased: usize,
    /// When to tick next, if anything is due.
    pub next_us: Option<u64>,
}

/// What the sessions did so far.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct SessionCounters {
    /// HPKE sender setups (an Init made, a Resp made).
    pub agreements_sealing: u64,
    /// HPKE receiver setups (an Init or a Resp opened, or tried).
    pub agreements_opening: u64,
    /// Sessions made as initiator and as responder.
    pub initiated: u64,
    pub answered: u64,
    /// Handshakes given up.
    pub failed: u64,
    /// Answers sent again, unchanged, to an Init sent again (no key agreement).
    pub answered_again: u64,
    /// Sessions erased with age, and pushed out by memory.
    pub erased: u64,
    pub evicted: u64,
    /// Sessions renewed by deriving their successor (no key agreement): as sealer, and as
    /// receiver when a message named the successor.
    pub derived_sealing: u64,
    pub derived_opening: u64,
    /// Inits sent again at once because a path came back ([`Sessions::path_back`]).
    pub resent_on_news: u64,
}

struct SendKey {
    aead: ChaCha20Poly1305,
    next_nonce: u64,
}

struct Session {
    id: u64,
    created_us: u64,
    /// When a message was last sealed or opened under it (or it was made): of a peer's sessions
    /// beyond [`SessionLimits::per_peer`], the one used longest ago goes. Not the oldest: the
    /// peer may have moved to a newer session, whose first message came on a shorter path, while
    /// its messages under the older one are still on their way.
    used_us: u64,
    /// Whether the peer holds it too: made by a Resp here, or a message from the peer opened
    /// under it. Only a confirmed session seals.
    confirmed: bool,
    /// The time of the peer's Init it was made from, if this node answered it.
    init_us: Option<u64>,
    /// `None` once the session is past `rekey_after` (erased then).
    send: Option<SendKey>,
    recv: ChaCha20Poly1305,
    window: ReplayWindow,
    /// What its successor is derived from; `None` (erased) once this end derived it.
    chain: Option<Chain>,
    /// When the full handshake that began its chain was made (here), and the id of the
    /// session it made.
    chain_from_us: u64,
    chain_id: u64,
}

struct Chain {
    key: handshake::SessionKey,
    /// The successor's id, known ahead: a message naming an unknown session costs a
    /// comparison, not a derivation.
    next_id: u64,
}

impl Session {
    /// A session named `id`, made at `now_us` from `keys`: by a handshake this node initiated
    /// (`init_us` `None`) or answered (the Init's time), or derived from such a session (its
    /// parent's `init_us` and `chain_from_us`).
    fn new(
        id: u64,
        now_us: u64,
        init_us: Option<u64>,
        keys: SessionKeys,
        confirmed: bool,
        (chain_from_us, chain_id): (u64, u64),
    ) -> Session {
        let SessionKeys {
            initiator_to_responder,
            responder_to_initiator,
            chain,
        } = keys;
        let (send, recv) = match init_us {
            None => (initiator_to_responder, responder_to_initiator),
            Some(_) => (responder_to_initiator, initiator_to_responder),
        };
        Session {
            id,
            created_us: now_us,
            used_us: now_us,
            confirmed,
            init_us,
            send: Some(SendKey {
                aead: aead(&send),
                next_nonce: 0,
            }),
            recv: aead(&recv),
            window: ReplayWindow::default(),
            chain: Some(Chain {
                next_id: ratchet::next_id(&chain),
                key: chain,
            }),
            chain_from_us,
            chain_id,
        }
    }

    /// This session's successor, made at `now_us` (its chain key is the caller's to erase).
    fn successor(&self, chain: &Chain, now_us: u64, confirmed: bool) -> Session {
        let (id, keys) = ratchet::successor(&chain.key);
        Session::new(
            id,
            now_us,
            self.init_us,
            keys,
            confirmed,
            (self.chain_from_us, self.chain_id),
        )
    }

    /// Open `data` under this session, bound to `bound`, at `now_us`: a seal time beyond the
    /// skew, a tag that does not check, a sealer that is not the source and a nonce taken
    /// before are refused.
    fn open(
        &mut self,
        bound: &Bound,
        data: SealedData,
        now_us: u64,
        skew_us: u64,
    ) -> Result<Vec<u8>, OpenError> {
        // Cheap refusals before the AEAD: the seal time is bound, so it cannot be made earlier.
        if data.sealed_at_us > now_us.saturating_add(skew_us) {
            return Err(OpenError::Future);
        }
        let aad = associated_data(
            bound,
            data.sealer,
            data.session,
            data.sealed_at_us,
            data.nonce,
        );
        let mut text = data.ciphertext;
        let Some(len) = text.len().checked_sub(TAG_LEN) else {
            return Err(OpenError::Broken);
        };
        let (body, tag) = text.split_at_mut(len);
        let tag = chacha20poly1305::Tag::try_from(&tag[..]).map_err(|_| OpenError::Broken)?;
        self.recv
            .decrypt_inout_detached(&nonce(data.nonce), &aad, body.into(), &tag)
            .map_err(|_| OpenError::Broken)?;
        text.truncate(len);
        if data.sealer != bound.src {
            return Err(OpenError::ForgedSource {
                sealer: data.sealer,
            });
        }
        if !self.window.accept(data.nonce) {
            return Err(OpenError::Replayed);
        }
        self.used_us = self.used_us.max(now_us);
        Ok(text)
    }
}

/// Answers tried against an Init, per path index.
type Tries = Vec<(u8, u8)>;

struct Pending {
    /// One per Init made, newest last (the last [`SessionLimits::handshake_attempts`]): its
    /// time, its ephemeral key pair (zeroized when dropped), and how many answers were tried
    /// against it per path index. An attempt sends the newest again ([`Sessions::retry`]).
    inits: Vec<(u64, Ephemeral, Tries)>,
    /// The newest Init's bytes.
    bytes: Vec<u8>,
    flags: InitFlags,
    attempt: u32,
    /// The attempt its backoff counts from: 0, or the last sent because a path came back
    /// ([`Sessions::path_back`]).
    ladder_from: u32,
    due_us: u64,
    /// When an Init was last sent.
    sent_us: u64,
    /// When each attempt was sent (the last [`SessionLimits::handshake_attempts`]): an answer
    /// says which attempt's copy it answers, so its round trip is that attempt's, whichever
    /// attempt is in flight (the ambiguity Karn's rule avoids, resolved as TCP's timestamps
    /// do).
    sends: Vec<(u32, u64)>,
}

/// An answer made, kept to be sent again.
struct Answer {
    bytes: Vec<u8>,
    /// When it was last sent, for which attempt of the Init (as its message says), and how
    /// often sent again.
    sent_us: u64,
    attempt: u32,
    again: u32,
}

#[derive(Default)]
struct Peer {
    /// Newest last.
    sessions: Vec<Session>,
    pending: Option<Pending>,
    /// The greatest Init time taken from this peer, and that Init's encapsulated key (its
    /// copies on the other paths are duplicates, not replays).
    greatest_init_us: Option<u64>,
    greatest_init_enc: [u8; 32],
    /// The answer to that Init, for its initiator's next attempts (the same Init again).
    answer: Option<Answer>,
    /// The greatest Init time of ours this peer answered...
    answered_us: Option<u64>,
    /// ...and of ours made for it.
    made_us: Option<u64>,
    /// Key agreement tokens per path index.
    buckets: Vec<(u8, Bucket)>,
    /// When a handshake was last started because this peer sealed under an unknown session.
    recovered_at_us: Option<u64>,
    /// When this peer last started, as its recovery said: an Init of ours made before (less
    /// the skew) it refuses.
    restarted_us: Option<u64>,
}

impl Peer {
    fn is_idle(&mut self, limits: &SessionLimits, now_us: u64) -> bool {
        self.sessions.is_empty()
            && self.pending.is_none()
            && self
                .greatest_init_us
                .is_none_or(|g| now_us.saturating_sub(g) >= limits.init_max_age_us)
            && self
                .recovered_at_us
                .is_none_or(|r| now_us.saturating_sub(r) >= limits.recover_after_us)
            && self
                .buckets
                .iter_mut()
                .all(|(_, b)| b.is_full(limits.handshakes.per_path, now_us))
    }
}

fn aead(key: &[u8; 32]) -> ChaCha20Poly1305 {
    ChaCha20Poly1305::new_from_slice(key).expect("a 32-byte key")
}

fn nonce(counter: u64) -> chacha20poly1305::Nonce {
    let mut bytes = [0; 12];
    bytes[4..].copy_from_slice(&counter.to_le_bytes());
    bytes.into()
}

/// A node's sessions.
pub struct Sessions {
    me: NodeId,
    secret: SecretKey,
    /// This node's clock when it started: Inits made before (less the skew) are refused.
    started_at_us: u64,
    limits: SessionLimits,
    peers: HashMap<NodeId, Peer>,
    /// Every session kept, by (creation, peer, id): the order they are erased in, and pushed
    /// out in when memory is full.
    by_age: BTreeSet<(u64, NodeId, u64)>,
    /// The sessions that still seal, in the same order: when each sending key is erased.
    sealing: BTreeSet<(u64, NodeId, u64)>,
    /// Handshakes in flight, by when the next Init is due (or the handshake given up).
    due: BTreeSet<(u64, NodeId)>,
    all_handshakes: Bucket,
    /// The time of the last Init made: each is made later than the last.
    last_init_us: u64,
    /// The smoothed round trip of handshakes answered (from the sending each answer names),
    /// and its mean deviation (µs): a loaded machine answers late, and Inits sent again sooner
    /// only add messages.
    srtt_us: Option<(u64, u64)>,
    /// The round trip a handshake is expected to take as the node's links see it
    /// ([`Sessions::set_round_trip_hint`]; 0: none): a floor under the first wait, for the
    /// many nodes of a large cluster that make too few handshakes to have measured one.
    hint_us: u64,
    /// When a path last came back ([`Sessions::path_back`]): an answer to an Init sent before
    /// then may have waited out the outage in a queue, and is not a round trip of the path.
    news_us: u64,
    /// When idle peers' records are next dropped.
    prune_at_us: u64,
    counters: SessionCounters,
}

impl Sessions {
    pub fn new(me: NodeId, secret: SecretKey, started_at_us: u64, limits: SessionLimits) -> Self {
        Sessions {
            me,
            secret,
            started_at_us,
            limits,
            peers: HashMap::new(),
            by_age: BTreeSet::new(),
            sealing: BTreeSet::new(),
            due: BTreeSet::new(),
            all_handshakes: Bucket::full(limits.handshakes.all, started_at_us),
            last_init_us: 0,
            srtt_us: None,
            hint_us: 0,
            news_us: 0,
            prune_at_us: started_at_us.saturating_add(limits.init_max_age_us),
            counters: SessionCounters::default(),
        }
    }

    pub fn limits(&self) -> &SessionLimits {
        &self.limits
    }

    /// Whether a set to `to` can be sealed at `now_us` under a session held already, with
    /// `skew` to spare (a set's copies are sealed one after the other).
    pub fn can_seal(&self, to: NodeId, now_us: u64) -> bool {
        let until = now_us.saturating_add(self.limits.skew_us);
        self.peers.get(&to).is_some_and(|p| {
            p.sessions.iter().any(|s| {
                s.confirmed
                    && s.send.is_some()
                    && until < s.created_us.saturating_add(self.limits.rekey_after_us)
            })
        })
    }

    /// Seal `plaintext` for `bound.dst` under the newest session with it that still seals, at
    /// `now_us`, binding `bound`. [`SealError::NoSession`] if there is none: [`Sessions::start`]
    /// makes one.
    pub fn seal(
        &mut self,
        bound: &Bound,
        now_us: u64,
        plaintext: &[u8],
    ) -> Result<Sealing, SealError> {
        let limits = self.limits;
        let rekey_after = limits.rekey_after_us;
        let sealing = |s: &Session| {
            s.confirmed && s.send.is_some() && now_us < s.created_us.saturating_add(rekey_after)
        };
        let peer = self
            .peers
            .get_mut(&bound.dst)
            .ok_or(SealError::NoSession(bound.dst))?;
        let pending = peer.pending.is_some();
        let at = peer
            .sessions
            .iter()
            .rposition(sealing)
            .ok_or(SealError::NoSession(bound.dst))?;
        let due = |s: &Session| {
            let renew_at = match s.init_us {
                None => limits.renew_at_us(s.id),
                Some(_) => limits.responder_renews_at_us(),
            };
            now_us >= s.created_us.saturating_add(renew_at)
        };
        let parent = &mut peer.sessions[at];
        if due(parent)
            && now_us
                < parent
                    .chain_from_us
                    .saturating_add(limits.chain_ends_at_us(parent.chain_id))
            && let Some(chain) = parent.chain.take()
        {
            // Renewed by its successor, derived at once: the parent's chain key goes
            // (zeroized), its message keys with its age.
            let successor = parent.successor(&chain, now_us, true);
            drop(chain);
            self.counters.derived_sealing += 1;
            self.keep(bound.dst, successor);
        }
        let peer = self.peers.get_mut(&bound.dst).expect("found above");
        let session = peer
            .sessions
            .iter_mut()
            .rev()
            .find(|s| sealing(s))
            .expect("found above, or its successor");
        session.used_us = now_us;
        let send = session.send.as_mut().expect("found sealing");
        let counter = send.next_nonce;
        send.next_nonce += 1;
        let aad = associated_data(bound, self.me, session.id, now_us, counter);
        let bytes =
            Sealed::encode_data_in_place(self.me, session.id, counter, now_us, plaintext, |text| {
                let tag = send
                    .aead
                    .encrypt_inout_detached(&nonce(counter), &aad, text.into())?;
                let mut bytes = [0; TAG_LEN];
                bytes.copy_from_slice(&tag);
                Ok::<_, chacha20poly1305::Error>(bytes)
            })
            .expect("ChaCha20-Poly1305 seals any length a frame holds");
        let renew = !pending && due(&*session);
        Ok(Sealing { bytes, renew })
    }

    /// How long the Init of attempt `attempt` waits for its answer: the limits' timeout, or if
    /// longer the smoothed round trip and four deviations of the handshakes answered, or the
    /// links' hint (at most [`MAX_BACKOFF`] times the timeout: one slow answer does not stall
    /// the rest), doubled at each attempt after the first ([`SessionLimits::wait_after_us`]).
    fn wait_after_us(&self, attempt: u32) -> u64 {
        let timeout = self.limits.handshake_timeout_us.max(1);
        let measured = self
            .srtt_us
            .map_or(0, |(srtt, var)| srtt.saturating_add(var.saturating_mul(4)));
        let expected = measured
            .max(self.hint_us)
            .min(timeout.saturating_mul(MAX_BACKOFF));
        self.limits.wait_after_us(timeout.max(expected), attempt)
    }

    /// The round trip a handshake is expected to take by what the node's links measure (the
    /// daemon's estimate: its links' round trip times the hops of a path there and back). On a
    /// large loaded cluster most nodes make a handshake or two, too few to have measured one,
    /// and a first wait of the bare timeout sends nearly every Init again, on every path: the
    /// hint keeps the first wait near what the links say a round trip takes. It never shortens
    /// a wait ([`Sessions::wait_after_us`] takes the longest).
    pub fn set_round_trip_hint(&mut self, hint_us: u64) {
        self.hint_us = hint_us;
    }

    /// Start a handshake with `peer` unless one is in flight: the Init to send (its first
    /// attempt). `fresh` is 32 random bytes.
    pub fn start(
        &mut self,
        directory: &dyn Directory,
        peer: NodeId,
        now_us: u64,
        fresh: [u8; 32],
    ) -> Result<Option<Outgoing>, SealError> {
        self.start_with(directory, peer, now_us, InitFlags::PLAIN, fresh)
    }

    /// This node's start, while peers may still seal under sessions made before it (within
    /// `erase_after` and the skew of it).
    fn lost_since(&self, now_us: u64) -> Option<u64> {
        let window = self
            .limits
            .erase_after_us
            .saturating_add(self.limits.skew_us);
        (now_us.saturating_sub(self.started_at_us) < window).then_some(self.started_at_us)
    }

    fn start_with(
        &mut self,
        directory: &dyn Directory,
        peer: NodeId,
        now_us: u64,
        flags: InitFlags,
        fresh: [u8; 32],
    ) -> Result<Option<Outgoing>, SealError> {
        if self.peers.get(&peer).is_some_and(|p| p.pending.is_some()) {
            return Ok(None);
        }
        let renewal = self.can_seal(peer, now_us);
        let (bytes, ts, ephemeral) = self.make_init(directory, peer, now_us, flags, fresh)?;
        let due_us = now_us.saturating_add(self.wait_after_us(1));
        self.peers.entry(peer).or_default().pending = Some(Pending {
            inits: vec![(ts, ephemeral, Vec::new())],
            bytes: bytes.clone(),
            flags,
            attempt: 1,
            ladder_from: 0,
            due_us,
            sent_us: now_us,
            sends: vec![(1, now_us)],
        });
        self.due.insert((due_us, peer));
        Ok(Some(Outgoing {
            to: peer,
            bytes,
            attempt: 1,
            renewal,
        }))
    }

    fn make_init(
        &mut self,
        directory: &dyn Directory,
        peer: NodeId,
        now_us: u64,
        flags: InitFlags,
        fresh: [u8; 32],
    ) -> Result<(Vec<u8>, u64, Ephemeral), SealError> {
        let key = directory
            .public_key(peer)
            .ok_or(SealError::UnknownNode(peer))?;
        let ts = now_us.max(self.last_init_us.saturating_add(1));
        self.counters.agreements_sealing += 1;
        let (init, ephemeral) =
            handshake::init(self.me, &self.secret, peer, key, ts, flags, fresh)?;
        self.last_init_us = ts;
        self.peers.entry(peer).or_default().made_us = Some(ts);
        Ok((Sealed::Init(init).to_bytes(), ts, ephemeral))
    }

    /// Whether an Init made at `ts_us` may go again at `now_us`: younger than half
    /// `init_max_age` (the responder takes it until `init_max_age`), and not from before the
    /// peer's start as its recovery told (less the skew: it refuses those).
    fn init_holds(&self, ts_us: u64, restarted_us: Option<u64>, now_us: u64) -> bool {
        now_us.saturating_sub(ts_us) < self.limits.init_max_age_us / 2
            && restarted_us.is_none_or(|r| ts_us.saturating_add(self.limits.skew_us) >= r)
    }

    /// The next attempt of the handshake with `peer` in flight, due again after its wait: the
    /// newest Init sent again while it holds ([`Sessions::init_holds`]), so that a responder
    /// that took it answers with the answer it made (no key agreement at either end, no second
    /// session); else a new Init.
    fn retry(
        &mut self,
        directory: &dyn Directory,
        peer: NodeId,
        now_us: u64,
        fresh: [u8; 32],
    ) -> Result<Outgoing, SealError> {
        let (flags, newest_us, restarted_us) = self
            .peers
            .get(&peer)
            .and_then(|p| Some((p.pending.as_ref()?, p.restarted_us)))
            .map(|(p, r)| (p.flags, p.inits.last().map_or(0, |i| i.0), r))
            .ok_or(SealError::NoSession(peer))?;
        let made = if self.init_holds(newest_us, restarted_us, now_us) {
            None
        } else {
            Some(self.make_init(directory, peer, now_us, flags, fresh)?)
        };
        let keep = self.limits.handshake_attempts.max(1) as usize;
        let (next, rung) = self.peers[&peer]
            .pending
            .as_ref()
            .map_or((1, 1), |p| (p.attempt + 1, p.attempt + 1 - p.ladder_from));
        let wait = self.wait_after_us(rung.clamp(1, self.limits.handshake_attempts));
        let pending = self
            .peers
            .get_mut(&peer)
            .and_then(|p| p.pending.as_mut())
            .expect("found above");
        self.due.remove(&(pending.due_us, peer));
        pending.attempt = next;
        pending.due_us = now_us.saturating_add(wait);
        pending.sent_us = now_us;
        pending.sends.push((next, now_us));
        if pending.sends.len() > keep {
            pending.sends.remove(0);
        }
        if let Some((bytes, ts, ephemeral)) = made {
            pending.inits.push((ts, ephemeral, Vec::new()));
            pending.bytes = bytes;
            if pending.inits.len() > keep {
                pending.inits.remove(0);
            }
        }
        let attempt = pending.attempt;
        let bytes = pending.bytes.clone();
        self.due.insert((pending.due_us, peer));
        Ok(Outgoing {
            to: peer,
            bytes,
            attempt,
            renewal: self.can_seal(peer, now_us),
        })
    }

    /// A set waiting for the handshake with `peer` was sent again by its source's delivery
    /// layer (its resend was due): another Init now, unless one went within half the
    /// handshake's timeout. On a path that loses most of what it carries, a handshake so gets
    /// as many tries as the set it carries; each counts towards its attempts.
    pub fn hurry(
        &mut self,
        directory: &dyn Directory,
        peer: NodeId,
        now_us: u64,
        fresh: [u8; 32],
    ) -> Result<Option<Outgoing>, SealError> {
        let gap = (self.wait_after_us(1) / 2).max(1);
        match self.peers.get(&peer).and_then(|p| p.pending.as_ref()) {
            Some(p) if now_us.saturating_sub(p.sent_us) >= gap => {
                self.retry(directory, peer, now_us, fresh).map(Some)
            }
            _ => Ok(None),
        }
    }

    /// A link came up, at this node or (as a neighbour's report says) elsewhere: what cut a
    /// handshake off may have healed. Each handshake in flight that waits out a backoff longer
    /// than a first attempt's wait, and sent nothing for that long, goes again now, as its next
    /// attempt (the newest Init while it holds: no key agreement), and its backoff starts
    /// again from the first wait: so a partition's end costs its handshakes a round trip, not
    /// the rest of a wait of up to [`MAX_BACKOFF`] timeouts. Attempts still end a handshake
    /// (one with none left is not sent), so a link that keeps coming up spends them sooner,
    /// never more of them; good news comes only from this node's links and its neighbours'
    /// reports.
    pub fn path_back(
        &mut self,
        directory: &dyn Directory,
        now_us: u64,
        mut fresh: impl FnMut() -> [u8; 32],
    ) -> Vec<Outgoing> {
        self.news_us = now_us;
        if self.due.is_empty() {
            return Vec::new();
        }
        let first = self.wait_after_us(1);
        let attempts = self.limits.handshake_attempts;
        let waiting: Vec<NodeId> = self
            .peers
            .iter_mut()
            .filter_map(|(&peer, p)| {
                let pending = p.pending.as_mut()?;
                let long = pending.due_us.saturating_sub(now_us) > first
                    && now_us.saturating_sub(pending.sent_us) >= first
                    && pending.attempt < attempts;
                long.then(|| {
                    pending.ladder_from = pending.attempt;
                    peer
                })
            })
            .collect();
        let mut out = Vec::with_capacity(waiting.len());
        for peer in waiting {
            // A peer no longer in the directory: its next due gives it up.
            if let Ok(init) = self.retry(directory, peer, now_us, fresh()) {
                self.counters.resent_on_news += 1;
                out.push(init);
            }
        }
        out
    }

    /// A message from `sealer` named a session this node does not hold (or this node restarted
    /// and held sessions with it before): start a handshake flagged `recovery` with it, so that
    /// it ends its older sessions with this node but those this node still holds (the Init
    /// names them: the message may be a relay's, made up), unless this node has a handshake
    /// with it in flight or did this within `recover_after` already. Within `erase_after` (and
    /// the skew) of this node's start, holding no session with the sealer, the Init carries the
    /// start: the sealer may seal again what it sealed to this node since, if the recovery
    /// ended a session.
    pub fn recover(
        &mut self,
        directory: &dyn Directory,
        sealer: NodeId,
        now_us: u64,
        fresh: [u8; 32],
    ) -> Result<Option<Outgoing>, SealError> {
        let recent = self.limits.recover_after_us;
        // A session made lately is no reason to wait: the sealer sealed under another.
        if let Some(peer) = self.peers.get(&sealer)
            && (peer.pending.is_some()
                || peer
                    .recovered_at_us
                    .is_some_and(|r| now_us.saturating_sub(r) < recent))
        {
            return Ok(None);
        }
        // Lately restarted, the sealer may still hold sessions of before: what it sealed under
        // them since then is lost here.
        let held: Vec<u64> = self.peers.get(&sealer).map_or(Vec::new(), |p| {
            p.sessions.iter().rev().map(|s| s.id).collect()
        });
        // A node holding sessions with the sealer made them since its start: the one it lacks
        // it forgot (pushed out, erased), it did not lose the sealer's traffic to a restart,
        // and asks for nothing to be sealed again.
        let lost_since = if held.is_empty() {
            self.lost_since(now_us)
        } else {
            None
        };
        let flags = InitFlags::recovery(now_us, lost_since, &held);
        let out = self.start_with(directory, sealer, now_us, flags, fresh)?;
        self.peers.entry(sealer).or_default().recovered_at_us = Some(now_us);
        Ok(out)
    }

    /// Open the sealed `payload` of a message whose clear fields are `bound`, at `now_us`.
    /// `fresh` gives random bytes if an answer must be made.
    pub fn open(
        &mut self,
        directory: &dyn Directory,
        bound: &Bound,
        now_us: u64,
        payload: &[u8],
        fresh: impl FnOnce() -> [u8; 32],
    ) -> Result<Opened, OpenError> {
        let sealed = Sealed::from_bytes(payload).ok_or(OpenError::Malformed)?;
        if bound.dst != self.me {
            return Err(OpenError::Broken);
        }
        match sealed {
            Sealed::Data(data) => self.open_data(bound, now_us, data).map(Opened::Payload),
            Sealed::Init(init) => self.take_init(directory, bound, now_us, init, fresh),
            Sealed::Resp(resp) => self.take_resp(directory, bound, now_us, resp),
        }
    }

    fn open_data(
        &mut self,
        bound: &Bound,
        now_us: u64,
        data: SealedData,
    ) -> Result<Vec<u8>, OpenError> {
        let (erase_after, skew) = (self.limits.erase_after_us, self.limits.skew_us);
        let alive = |s: &&mut Session| now_us < s.created_us.saturating_add(erase_after);
        let peer = self
            .peers
            .get_mut(&data.sealer)
            .ok_or(OpenError::NoSession)?;
        let sealer = data.sealer;
        if let Some(session) = peer
            .sessions
            .iter_mut()
            .find(|s| s.id == data.session)
            .filter(alive)
        {
            let text = session.open(bound, data, now_us, skew)?;
            if !session.confirmed {
                // The initiator holds it: from now on it seals here too.
                session.confirmed = true;
                self.bound_confirmed(sealer);
            }
            return Ok(text);
        }
        // The successor of a session held, which the sealer derived: derived here too, and
        // kept only if the message opens under it.
        let parent = peer
            .sessions
            .iter_mut()
            .filter(alive)
            .find(|s| s.chain.as_ref().is_some_and(|c| c.next_id == data.session))
            .ok_or(OpenError::NoSession)?;
        let chain = parent.chain.as_ref().expect("found by its chain");
        let mut successor = parent.successor(chain, now_us, true);
        let text = successor.open(bound, data, now_us, skew)?;
        // The sealer held the parent: confirmed, and its chain key goes (zeroized).
        parent.chain = None;
        let confirmed = std::mem::replace(&mut parent.confirmed, true);
        self.counters.derived_opening += 1;
        self.keep(sealer, successor);
        if !confirmed {
            self.bound_confirmed(sealer);
        }
        Ok(text)
    }

    fn take_init(
        &mut self,
        directory: &dyn Directory,
        bound: &Bound,
        now_us: u64,
        init: Init,
        fresh: impl FnOnce() -> [u8; 32],
    ) -> Result<Opened, OpenError> {
        let key = sealer_key(directory, bound, init.sealer)?;
        let limits = self.limits;
        if init.ts_us > now_us.saturating_add(limits.skew_us) {
            return Err(OpenError::Future);
        }
        if now_us.saturating_sub(init.ts_us) >= limits.init_max_age_us {
            return Err(OpenError::Replayed);
        }
        if init.ts_us.saturating_add(limits.skew_us) < self.started_at_us {
            // This node has no memory of the Inits it took before: a replay, or an Init made
            // while it was down (its caller recovers with the sealer, whose next is new).
            return Err(OpenError::BeforeStart);
        }
        let peer = self.peers.entry(init.sealer).or_default();
        if let Some(greatest) = peer.greatest_init_us
            && init.ts_us <= greatest
        {
            if init.ts_us != greatest || init.enc != peer.greatest_init_enc {
                // Within `init_max_age` (checked above): an earlier attempt, late.
                return Err(OpenError::Superseded);
            }
            // A copy from another path, or the initiator's next attempt (its answer was lost
            // or late): for another attempt than the one last answered (its copies on the
            // other paths say the same), once a retry's gap has passed since, the answer
            // again, unchanged, at most as often as a handshake has attempts. Its bytes are
            // public; a replayed Init earns a copy of them, no key agreement.
            let gap = (self.wait_after_us(1) / 2).max(1);
            let attempts = self.limits.handshake_attempts;
            let peer = self.peers.get_mut(&init.sealer).expect("entered above");
            return match peer.answer.as_mut() {
                Some(answer)
                    if bound.attempt != answer.attempt
                        && now_us.saturating_sub(answer.sent_us) >= gap
                        && answer.again + 1 < attempts =>
                {
                    answer.sent_us = now_us;
                    answer.attempt = bound.attempt;
                    answer.again += 1;
                    self.counters.answered_again += 1;
                    Ok(Opened::Answer {
                        resp: answer.bytes.clone(),
                        lost_since_us: None,
                    })
                }
                _ => Err(OpenError::Duplicate),
            };
        }
        // The limits, both checked before either token is taken.
        let bucket = match peer.buckets.iter().position(|(i, _)| *i == bound.index) {
            Some(at) => &mut peer.buckets[at].1,
            None => {
                peer.buckets.push((
                    bound.index,
                    Bucket::full(limits.handshakes.per_path, now_us),
                ));
                &mut peer.buckets.last_mut().expect("pushed").1
            }
        };
        if !bucket.has(limits.handshakes.per_path, now_us)
            || !self.all_handshakes.has(limits.handshakes.all, now_us)
        {
            return Err(OpenError::Limited);
        }
        bucket.take(limits.handshakes.per_path, now_us);
        self.all_handshakes.take(limits.handshakes.all, now_us);
        self.counters.agreements_opening += 1;
        let (ephemeral, flags) = handshake::open_init(self.me, &self.secret, &init, key)
            .map_err(|_| OpenError::Broken)?;
        peer.greatest_init_us = Some(init.ts_us);
        peer.greatest_init_enc = init.enc;
        let fresh = fresh();
        let mut id = u64::from_le_bytes(fresh[..8].try_into().expect("8 bytes"));
        while peer.sessions.iter().any(|s| s.id == id) {
            id = id.wrapping_add(1);
        }
        self.counters.agreements_sealing += 1;
        let (resp, keys) = handshake::respond(
            self.me,
            &self.secret,
            init.sealer,
            init.ts_us,
            &ephemeral,
            id,
            fresh,
        )
        .map_err(|_| OpenError::Broken)?;
        self.counters.answered += 1;
        let mut ended = 0;
        if flags.recovery {
            // Its initiator lost the sessions made before this handshake but those it names:
            // the others are of no use. Those made from this handshake's other Inits it may
            // hold.
            let old: Vec<_> = self.peers[&init.sealer]
                .sessions
                .iter()
                .filter(|s| {
                    s.init_us.is_none_or(|t| t < flags.since_us) && !flags.held().contains(&s.id)
                })
                .map(|s| (s.created_us, init.sealer, s.id))
                .collect();
            ended = old.len();
            for key in old {
                self.by_age.remove(&key);
                self.forget(key);
            }
        }
        self.keep(
            init.sealer,
            Session::new(id, now_us, Some(init.ts_us), keys, false, (now_us, id)),
        );
        let resp = Sealed::Resp(resp).to_bytes();
        let peer = self.peers.entry(init.sealer).or_default();
        peer.answer = Some(Answer {
            bytes: resp.clone(),
            sent_us: now_us,
            attempt: bound.attempt,
            again: 0,
        });
        if let Some(started) = flags.lost_since_us.filter(|_| flags.recovery) {
            // It restarted: an Init of ours in flight made before, it refuses. A new one goes
            // at once (the timer's next tick).
            peer.restarted_us = Some(started);
            let stale = peer.pending.as_ref().and_then(|p| {
                let newest = p.inits.last().map_or(0, |i| i.0);
                (newest.saturating_add(self.limits.skew_us) < started).then_some(p.due_us)
            });
            if let Some(due) = stale {
                self.due.remove(&(due, init.sealer));
                self.due.insert((now_us, init.sealer));
                let pending = self
                    .peers
                    .get_mut(&init.sealer)
                    .and_then(|p| p.pending.as_mut());
                pending.expect("found above").due_us = now_us;
            }
        }
        Ok(Opened::Answer {
            resp,
            // Nothing sealed under a session it holds was lost.
            lost_since_us: flags.lost_since_us.filter(|_| flags.recovery && ended > 0),
        })
    }

    fn take_resp(
        &mut self,
        directory: &dyn Directory,
        bound: &Bound,
        now_us: u64,
        resp: Resp,
    ) -> Result<Opened, OpenError> {
        let key = sealer_key(directory, bound, resp.sealer)?;
        let max_age = self.limits.init_max_age_us;
        let peer = self.peers.get_mut(&resp.sealer);
        // An answer to an Init answered already: a copy from another path if it names the
        // session that answer made, else a replay.
        let seen = |p: &Peer| {
            if p.answered_us == Some(resp.init_ts_us)
                && p.sessions.iter().any(|s| s.id == resp.session)
            {
                OpenError::Duplicate
            } else if now_us.saturating_sub(resp.init_ts_us) >= max_age
                && p.answered_us.is_some_and(|a| resp.init_ts_us <= a)
            {
                OpenError::Replayed
            } else if p.answered_us.is_some() && p.made_us.is_some_and(|m| resp.init_ts_us <= m) {
                // An Init of ours, lately, of a handshake another attempt's answer completed.
                OpenError::Superseded
            } else {
                OpenError::Unexpected
            }
        };
        let Some(peer) = peer else {
            return Err(OpenError::Unexpected);
        };
        let Some(pending) = peer.pending.as_mut() else {
            return Err(seen(peer));
        };
        let Some((_, ephemeral, tried)) = pending
            .inits
            .iter_mut()
            .find(|(ts, _, _)| *ts == resp.init_ts_us)
        else {
            return Err(seen(peer));
        };
        // A relay on the answer's path could send many made-up answers: two tries per Init and
        // path index, so that it uses up its own path's and the true answer opens from another;
        // a relay claiming other indices, at most 16 of them (32 key agreements an Init).
        let tried = match tried.iter().position(|(i, _)| *i == bound.index) {
            Some(at) => &mut tried[at].1,
            None if tried.len() >= 16 => return Err(OpenError::Limited),
            None => {
                tried.push((bound.index, 0));
                &mut tried.last_mut().expect("pushed").1
            }
        };
        if *tried >= 2 {
            return Err(OpenError::Limited);
        }
        *tried += 1;
        self.counters.agreements_opening += 1;
        let keys =
            handshake::open_resp(self.me, ephemeral, &resp, key).map_err(|_| OpenError::Broken)?;
        let pending = peer.pending.take().expect("found above");
        peer.answered_us = Some(resp.init_ts_us.max(peer.answered_us.unwrap_or(0)));
        if let Some(&(_, sent_us)) = pending.sends.iter().find(|(a, _)| *a == bound.attempt)
            && sent_us >= self.news_us
        {
            // The answer's message carries the attempt of the Init's copy it answers: the round
            // trip of that sending. (Timed from the first sending, a handshake with a node that
            // was down would count the whole outage; taken only at a first attempt, the round
            // trips of a loaded network, where most handshakes are sent again, go unmeasured
            // and every retry comes early.) A relay rewriting the attempt moves the estimate
            // within the limits' wait and 16 times the handshake's timeout. An Init sent before
            // a path came back may have waited out the outage in a queue: not sampled.
            let sample = now_us.saturating_sub(sent_us);
            self.srtt_us = Some(match self.srtt_us {
                None => (sample, sample / 2),
                Some((srtt, var)) => (
                    srtt - srtt / 8 + sample / 8,
                    var - var / 4 + srtt.abs_diff(sample) / 4,
                ),
            });
        }
        self.due.remove(&(pending.due_us, resp.sealer));
        // The ephemeral secrets go with `pending`, zeroized.
        drop(pending);
        self.counters.initiated += 1;
        self.keep(
            resp.sealer,
            Session::new(
                resp.session,
                now_us,
                None,
                keys,
                true,
                (now_us, resp.session),
            ),
        );
        Ok(Opened::Established(resp.sealer))
    }

    /// Keep a new session with `peer`, pushing out that peer's oldest of its kind (confirmed or
    /// not) beyond `per_peer` and the oldest of all beyond `max_sessions`.
    fn keep(&mut self, peer: NodeId, session: Session) {
        let entry = self.peers.entry(peer).or_default();
        // Same name from the same peer: the new one replaces it.
        if let Some(old) = entry.sessions.iter().find(|s| s.id == session.id) {
            let key = (old.created_us, peer, old.id);
            self.by_age.remove(&key);
            self.forget(key);
        }
        let confirmed = session.confirmed;
        let oldest_of_kind = {
            let entry = self.peers.entry(peer).or_default();
            let of_kind: Vec<_> = entry
                .sessions
                .iter()
                .filter(|s| s.confirmed == confirmed)
                .map(|s| (s.created_us, peer, s.id))
                .collect();
            let least_used = entry
                .sessions
                .iter()
                .filter(|s| s.confirmed == confirmed)
                .min_by_key(|s| (s.used_us, s.created_us))
                .map(|s| (s.created_us, peer, s.id));
            // Unconfirmed: one per Init of a handshake the initiator may still finish.
            let cap = if confirmed {
                self.limits.per_peer
            } else {
                self.limits
                    .per_peer
                    .max(self.limits.handshake_attempts as usize)
            };
            (of_kind.len() >= cap).then_some(least_used).flatten()
        };
        if let Some(oldest) = oldest_of_kind {
            self.by_age.remove(&oldest);
            self.forget(oldest);
            self.counters.evicted += 1;
        }
        while self.by_age.len() >= self.limits.max_sessions {
            let Some(oldest) = self.by_age.pop_first() else {
                break;
            };
            self.forget(oldest);
            self.counters.evicted += 1;
        }
        let key = (session.created_us, peer, session.id);
        self.by_age.insert(key);
        self.sealing.insert(key);
        self.peers.entry(peer).or_default().sessions.push(session);
    }

    /// A session of `peer` was confirmed: the oldest confirmed one goes beyond `per_peer`.
    fn bound_confirmed(&mut self, peer: NodeId) {
        let Some(entry) = self.peers.get(&peer) else {
            return;
        };
        let confirmed: Vec<_> = entry.sessions.iter().filter(|s| s.confirmed).collect();
        if confirmed.len() > self.limits.per_peer {
            let oldest = confirmed
                .iter()
                .min_by_key(|s| (s.used_us, s.created_us))
                .map(|s| (s.created_us, peer, s.id))
                .expect("more than per_peer");
            self.by_age.remove(&oldest);
            self.forget(oldest);
            self.counters.evicted += 1;
        }
    }

    /// Drop the session `key` names (its keys zeroized as they drop); the caller takes it out
    /// of `by_age`.
    fn forget(&mut self, key: (u64, NodeId, u64)) {
        self.sealing.remove(&key);
        if let Some(peer) = self.peers.get_mut(&key.1) {
            peer.sessions.retain(|s| s.id != key.2);
        }
    }

    /// What is due at `now_us`: sending keys past `rekey_after` and sessions past `erase_after`
    /// erased, Inits sent again or handshakes given up, idle peers' records dropped. `fresh`
    /// gives random bytes for each Init made.
    pub fn tick(
        &mut self,
        directory: &dyn Directory,
        now_us: u64,
        mut fresh: impl FnMut() -> [u8; 32],
    ) -> Tick {
        let mut tick = Tick::default();
        let (rekey_after, erase_after) = (self.limits.rekey_after_us, self.limits.erase_after_us);
        while let Some(&key) = self.sealing.first()
            && key.0.saturating_add(rekey_after) <= now_us
        {
            self.sealing.pop_first();
            if let Some(s) = self
                .peers
                .get_mut(&key.1)
                .and_then(|p| p.sessions.iter_mut().find(|s| s.id == key.2))
            {
                s.send = None;
            }
        }
        while let Some(&key) = self.by_age.first()
            && key.0.saturating_add(erase_after) <= now_us
        {
            self.by_age.pop_first();
            self.forget(key);
            tick.erased += 1;
        }
        self.counters.erased += tick.erased as u64;
        while let Some(&(due, peer)) = self.due.first()
            && due <= now_us
        {
            self.due.pop_first();
            let attempts = self.limits.handshake_attempts;
            let Some(pending) = self.peers.get_mut(&peer).and_then(|p| p.pending.as_mut()) else {
                continue;
            };
            if pending.attempt >= attempts {
                self.peers.get_mut(&peer).expect("found").pending = None;
                self.counters.failed += 1;
                tick.failed.push(peer);
                continue;
            }
            match self.retry(directory, peer, now_us, fresh()) {
                Ok(out) => tick.inits.push(out),
                Err(_) => {
                    self.peers.get_mut(&peer).expect("found").pending = None;
                    self.counters.failed += 1;
                    tick.failed.push(peer);
                }
            }
        }
        if now_us >= self.prune_at_us {
            let limits = self.limits;
            self.peers.retain(|_, p| !p.is_idle(&limits, now_us));
            self.prune_at_us = now_us.saturating_add(limits.init_max_age_us);
        }
        tick.next_us = [
            self.sealing
                .first()
                .map(|k| k.0.saturating_add(rekey_after)),
            self.by_age.first().map(|k| k.0.saturating_add(erase_after)),
            self.due.first().map(|d| d.0),
            (!self.peers.is_empty()).then_some(self.prune_at_us),
        ]
        .into_iter()
        .flatten()
        .min();
        tick
    }

    pub fn counters(&self) -> SessionCounters {
        self.counters
    }

    /// Sessions kept, and peers with a handshake in flight.
    pub fn len(&self) -> usize {
        self.by_age.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_age.is_empty()
    }

    pub fn handshakes_in_flight(&self) -> usize {
        self.due.len()
    }

    /// The peers this node holds a session with.
    pub fn peers(&self) -> Vec<NodeId> {
        let mut peers: Vec<NodeId> = self
            .peers
            .iter()
            .filter(|(_, p)| !p.sessions.is_empty())
            .map(|(id, _)| *id)
            .collect();
        peers.sort();
        peers
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    struct Keys(BTreeMap<NodeId, PublicKey>);

    impl Directory for Keys {
        fn public_key(&self, node: NodeId) -> Option<PublicKey> {
            self.0.get(&node).copied()
        }
    }

    fn secret(id: u64) -> SecretKey {
        SecretKey::from_seed([id as u8 + 1; 32])
    }

    fn keys() -> Keys {
        Keys(
            (0..8)
                .map(|i| (NodeId(i), secret(i).public_key()))
                .collect(),
        )
    }

    const START: u64 = 1_000_000_000;

    fn node(id: u64) -> Sessions {
        Sessions::new(NodeId(id), secret(id), START, SessionLimits::default())
    }

    /// A node that renews every session by a full handshake.
    fn full_handshakes(id: u64) -> Sessions {
        let limits = SessionLimits {
            handshake_after_us: 0,
            ..SessionLimits::default()
        };
        Sessions::new(NodeId(id), secret(id), START, limits)
    }

    fn bound(src: u64, dst: u64, seq: u64) -> Bound {
        Bound {
            src: NodeId(src),
            dst: NodeId(dst),
            index: 0,
            seq,
            sent_at_us: START,
            flags: 4,
            attempt: 1,
        }
    }

    fn on_path(src: u64, dst: u64, index: u8) -> Bound {
        Bound {
            index,
            ..bound(src, dst, 0)
        }
    }

    /// Random bytes that differ at every call.
    fn fresh() -> impl FnMut() -> [u8; 32] {
        let mut n = 0u8;
        move || {
            n = n.wrapping_add(1);
            [n; 32]
        }
    }

    /// A handshake from `a` to `b` at `now`, carried whole: both hold the session after it.
    fn handshake(a: &mut Sessions, b: &mut Sessions, now: u64) {
        let dir = keys();
        let (ia, ib) = (a.me.0, b.me.0);
        let init = a
            .start(&dir, b.me, now, [ia as u8 ^ 0x33; 32])
            .unwrap()
            .unwrap();
        let Opened::Answer { resp, .. } = b
            .open(&dir, &bound(ia, ib, 0), now, &init.bytes, || {
                [ib as u8 ^ 0x44; 32]
            })
            .unwrap()
        else {
            panic!("an Init is answered")
        };
        assert_eq!(
            a.open(&dir, &bound(ib, ia, 0), now, &resp, || unreachable!()),
            Ok(Opened::Established(b.me))
        );
    }

    fn seal(a: &mut Sessions, b: &Bound, now: u64, text: &[u8]) -> Vec<u8> {
        a.seal(b, now, text).unwrap().bytes
    }

    #[test]
    fn a_first_attempt_goes_on_one_path_and_every_later_one_on_all() {
        let dir = keys();
        let (mut a, mut b) = (node(0), node(1));
        let init = a.start(&dir, NodeId(1), START, [1; 32]).unwrap().unwrap();
        assert_eq!((init.attempt, init.paths(4)), (1, 0..1));
        let Opened::Answer { resp, .. } = b
            .open(&dir, &bound(0, 1, 0), START, &init.bytes, || [2; 32])
            .unwrap()
        else {
            panic!("an Init is answered")
        };
        let answer = Outgoing {
            to: NodeId(0),
            bytes: resp,
            attempt: 1,
            renewal: false,
        };
        assert_eq!(answer.paths(4), 0..1, "the answer to a first attempt");
        let gap = SessionLimits::default().handshake_timeout_us;
        let again = a
            .hurry(&dir, NodeId(1), START + gap, [3; 32])
            .unwrap()
            .unwrap();
        assert_eq!((again.attempt, again.paths(4)), (2, 0..4));
        assert_eq!(again.paths(1), 0..1, "a single path is every path");
        assert_eq!(again.paths(0), 0..0);
    }

    /// A renewal (a handshake started while a session still seals) is not waited for: its
    /// Inits go on one path each, in turn, so that a dead node on one path costs a renewal one
    /// attempt, and late answers on a loaded cluster do not multiply its Inits by `k`. Once the
    /// session it renews stops sealing, the attempts go on every path again. Its answers go as
    /// a first contact's (the daemon sends every answer so): a responder cannot tell whether
    /// its initiator waits.
    #[test]
    fn a_renewal_goes_on_one_path_per_attempt_in_turn() {
        let dir = keys();
        let limits = SessionLimits::default();
        let (mut a, mut b) = (full_handshakes(0), full_handshakes(1));
        handshake(&mut a, &mut b, START);
        let id = a.peers[&NodeId(1)].sessions[0].id;
        let at = START + limits.renew_at_us(id);
        let sealed = a.seal(&bound(0, 1, 1), at, b"x").unwrap();
        assert!(sealed.renew);
        // Its first message under the session confirms it at the responder.
        assert!(
            b.open(&dir, &bound(0, 1, 1), at, &sealed.bytes, || [0; 32])
                .is_ok()
        );
        let init = a.start(&dir, NodeId(1), at, [1; 32]).unwrap().unwrap();
        assert!(init.renewal);
        assert_eq!((init.attempt, init.paths(4)), (1, 0..1));
        assert!(matches!(
            b.open(&dir, &bound(0, 1, 0), at, &init.bytes, || [2; 32]),
            Ok(Opened::Answer { .. })
        ));
        let gap = limits.handshake_timeout_us;
        let mut now = at;
        for attempt in 2..=6 {
            now += gap;
            let again = a.hurry(&dir, NodeId(1), now, [3; 32]).unwrap().unwrap();
            let path = (attempt as usize - 1) % 4;
            assert_eq!((again.attempt, again.renewal), (attempt, true));
            assert_eq!(again.paths(4), path..path + 1, "attempt {attempt}");
            assert_eq!(again.paths(1), 0..1, "a single path is every path");
        }
        // The session it renews no longer seals: what waits for the handshake now does.
        let rekeyed = START + limits.rekey_after_us;
        assert!(!a.can_seal(NodeId(1), rekeyed));
        let late = a.hurry(&dir, NodeId(1), rekeyed, [4; 32]).unwrap().unwrap();
        assert!(!late.renewal);
        assert_eq!((late.attempt, late.paths(4)), (7, 0..4));
        // A first contact is no renewal.
        let first = node(2)
            .start(&dir, NodeId(3), START, [5; 32])
            .unwrap()
            .unwrap();
        assert!(!first.renewal);
    }

    /// A peer moved to a new session: its first message under it came first (on a shorter
    /// path), its last ones under the session it left are still on their way. Beyond
    /// `per_peer` sessions, the one used longest ago goes, not the oldest (which was the one
    /// the peer sealed under until then: its late messages were refused `NoSession`).
    #[test]
    fn the_session_a_peer_just_left_still_opens_its_late_messages() {
        let dir = keys();
        let (mut a, mut b) = (node(0), node(1));
        assert_eq!(SessionLimits::default().per_peer, 3);
        // b's session first (the oldest at a), then two of a's.
        handshake(&mut b, &mut a, START);
        let m1 = seal(&mut b, &bound(1, 0, 1), START + 1, b"m1");
        assert!(
            a.open(&dir, &bound(1, 0, 1), START + 1, &m1, || [0; 32])
                .is_ok()
        );
        handshake(&mut a, &mut b, START + 10);
        handshake(&mut a, &mut b, START + 20);
        // b still seals under its own session (a's are not confirmed at b).
        let late1 = seal(&mut b, &bound(1, 0, 2), START + 30, b"late1");
        let late2 = seal(&mut b, &bound(1, 0, 3), START + 31, b"late2");
        assert!(
            a.open(&dir, &bound(1, 0, 2), START + 35, &late1, || [0; 32])
                .is_ok()
        );
        // b moves to a new session; its first message overtakes `late2`.
        handshake(&mut b, &mut a, START + 40);
        let new = seal(&mut b, &bound(1, 0, 4), START + 41, b"new");
        assert_eq!(
            a.open(&dir, &bound(1, 0, 4), START + 42, &new, || [0; 32]),
            Ok(Opened::Payload(b"new".to_vec()))
        );
        assert_eq!(
            a.open(&dir, &bound(1, 0, 3), START + 43, &late2, || [0; 32]),
            Ok(Opened::Payload(b"late2".to_vec()))
        );
        assert!(a.counters().evicted >= 1, "one of a's unused sessions went");
    }

    #[test]
    fn a_handshake_makes_a_session_both_ends_seal_under_once() {
        let dir = keys();
        let (mut a, mut b) = (node(0), node(1));
        let b01 = bound(0, 1, 7);
        assert_eq!(
            a.seal(&b01, START, b"x").err(),
            Some(SealError::NoSession(NodeId(1)))
        );
        assert!(!a.can_seal(NodeId(1), START));
        let init = a.start(&dir, NodeId(1), START, [1; 32]).unwrap().unwrap();
        assert_eq!(init.attempt, 1);
        // A handshake in flight is not started twice.
        assert_eq!(a.start(&dir, NodeId(1), START, [2; 32]), Ok(None));
        let Ok(Opened::Answer { resp, .. }) =
            b.open(&dir, &bound(0, 1, 0), START, &init.bytes, || [3; 32])
        else {
            panic!()
        };
        // The Init taken again (its copy on another path, or a relay's replay): refused.
        assert_eq!(
            b.open(&dir, &bound(0, 1, 0), START, &init.bytes, || [3; 32]),
            Err(OpenError::Duplicate)
        );
        assert_eq!(
            a.open(&dir, &bound(1, 0, 0), START, &resp, || unreachable!()),
            Ok(Opened::Established(NodeId(1)))
        );
        assert_eq!(
            a.open(&dir, &bound(1, 0, 0), START, &resp, || unreachable!()),
            Err(OpenError::Duplicate)
        );
        // An older Init of the same node: refused. Within `init_max_age` it cannot be told
        // from an earlier attempt of its handshake arriving late, and is counted so.
        let mut a_again = node(0);
        let older = a_again
            .start(&dir, NodeId(1), START - 1, [4; 32])
            .unwrap()
            .unwrap();
        assert_eq!(
            b.open(&dir, &bound(0, 1, 0), START, &older.bytes, || [3; 32]),
            Err(OpenError::Superseded)
        );
        // The initiator seals at once; the responder once the initiator used the session.
        assert!(a.can_seal(NodeId(1), START) && !b.can_seal(NodeId(0), START));

        let sealed = seal(&mut a, &b01, START, b"pay 10 to carol");
        assert!(
            !sealed
                .windows(8)
                .any(|w| b"pay 10 to carol".windows(8).any(|p| p == w)),
            "nothing of the payload in the clear"
        );
        assert_eq!(
            b.open(&dir, &b01, START, &sealed, || unreachable!()),
            Ok(Opened::Payload(b"pay 10 to carol".to_vec()))
        );
        assert_eq!(
            b.open(&dir, &b01, START, &sealed, || unreachable!()),
            Err(OpenError::Replayed)
        );
        // The other way, under the same session, now confirmed.
        assert!(b.can_seal(NodeId(0), START));
        let b10 = bound(1, 0, 8);
        let back = seal(&mut b, &b10, START, b"ack");
        assert_eq!(
            a.open(&dir, &b10, START, &back, || unreachable!()),
            Ok(Opened::Payload(b"ack".to_vec()))
        );
        // Every bound field is checked, the attempt included.
        for changed in [
            Bound { seq: 8, ..b01 },
            Bound { index: 2, ..b01 },
            Bound {
                sent_at_us: 1,
                ..b01
            },
            Bound { flags: 0, ..b01 },
            Bound {
                attempt: u32::MAX,
                ..b01
            },
        ] {
            let again = seal(&mut a, &b01, START, b"x");
            assert_eq!(
                b.open(&dir, &changed, START, &again, || unreachable!()),
                Err(OpenError::Broken),
                "{changed:?}"
            );
        }
        let again = seal(&mut a, &b01, START, b"payload");
        for at in 0..again.len() {
            let mut bytes = again.clone();
            bytes[at] ^= 0x10;
            assert!(
                b.open(&dir, &b01, START, &bytes, || [0; 32]).is_err(),
                "byte {at}"
            );
        }
        assert_eq!(
            b.open(&dir, &b01, START, &again, || unreachable!()),
            Ok(Opened::Payload(b"payload".to_vec()))
        );
        // Another node holds no session: nothing opens there.
        let mut c = node(2);
        let fresh_one = seal(&mut a, &b01, START, b"x");
        assert_eq!(
            c.open(
                &dir,
                &Bound {
                    dst: NodeId(2),
                    ..b01
                },
                START,
                &fresh_one,
                || [0; 32]
            ),
            Err(OpenError::NoSession)
        );
        assert_eq!(
            c.open(&dir, &b01, START, &fresh_one, || [0; 32]),
            Err(OpenError::Broken),
            "not for this node"
        );
        let counters = a.counters();
        assert_eq!(
            (
                counters.agreements_sealing,
                counters.agreements_opening,
                counters.initiated
            ),
            (1, 1, 1)
        );
        let counters = b.counters();
        assert_eq!(
            (
                counters.agreements_sealing,
                counters.agreements_opening,
                counters.answered
            ),
            (1, 1, 1)
        );
    }

    #[test]
    fn a_node_that_seals_in_another_name_is_caught() {
        let dir = keys();
        let (mut mallory, mut b) = (node(2), node(1));
        handshake(&mut mallory, &mut b, START);
        let claimed = bound(0, 1, 7);
        let sealed = seal(&mut mallory, &claimed, START, b"x");
        assert_eq!(
            b.open(&dir, &claimed, START, &sealed, || unreachable!()),
            Err(OpenError::ForgedSource { sealer: NodeId(2) })
        );
        // Rewriting the sealer to the claimed source: no such session of node 0.
        let Some(Sealed::Data(mut data)) = Sealed::from_bytes(&sealed) else {
            panic!()
        };
        data.sealer = NodeId(0);
        assert_eq!(
            b.open(
                &dir,
                &claimed,
                START,
                &Sealed::Data(data).to_bytes(),
                || [0; 32]
            ),
            Err(OpenError::NoSession)
        );
        // An Init in another's name, and one from a node the directory does not know.
        let init = mallory
            .start(&dir, NodeId(3), START, [9; 32])
            .unwrap()
            .unwrap();
        let mut d = node(3);
        assert_eq!(
            d.open(&dir, &bound(0, 3, 0), START, &init.bytes, || [0; 32]),
            Err(OpenError::ForgedSource { sealer: NodeId(2) })
        );
        let Some(Sealed::Init(mut unknown)) = Sealed::from_bytes(&init.bytes) else {
            panic!()
        };
        unknown.sealer = NodeId(99);
        assert_eq!(
            d.open(
                &dir,
                &bound(99, 3, 0),
                START,
                &Sealed::Init(unknown).to_bytes(),
                || [0; 32]
            ),
            Err(OpenError::UnknownSealer(NodeId(99)))
        );
        assert_eq!(
            d.open(&dir, &bound(0, 3, 0), START, b"junk", || [0; 32]),
            Err(OpenError::Malformed)
        );
    }

    /// The audit's first attack: a certified node fills the receiver's memory with sessions of
    /// its own, then a relay replays a captured message. Pushed out or not, the captured
    /// message's session opens it at most once.
    #[test]
    fn filling_the_memory_never_opens_a_message_twice() {
        let dir = keys();
        let limits = SessionLimits {
            max_sessions: 12,
            handshakes: HandshakeLimits {
                per_path: Rate {
                    burst: u32::MAX,
                    every_us: 1,
                },
                all: Rate {
                    burst: u32::MAX,
                    every_us: 1,
                },
            },
            ..SessionLimits::default()
        };
        let mut b = Sessions::new(NodeId(1), secret(1), START, limits);
        let mut a = node(0);
        handshake(&mut a, &mut b, START);
        let captured = seal(&mut a, &bound(0, 1, 1), START, b"once");
        assert_eq!(
            b.open(&dir, &bound(0, 1, 1), START, &captured, || unreachable!()),
            Ok(Opened::Payload(b"once".to_vec()))
        );
        // One attacker makes many sessions in its own name: it pushes out only its own.
        let mut mallory = node(2);
        for i in 0..100 {
            let mut m = Sessions::new(NodeId(2), secret(2), START, SessionLimits::default());
            m.last_init_us = START + i;
            handshake(&mut m, &mut b, START + 1 + i);
            // Its unconfirmed sessions: at most one per attempt of a handshake.
            assert!(b.peers[&NodeId(2)].sessions.len() <= limits.handshake_attempts as usize);
            assert_eq!(
                b.open(&dir, &bound(0, 1, 1), START + 1 + i, &captured, || [0; 32]),
                Err(OpenError::Replayed)
            );
        }
        assert!(b.can_seal(NodeId(0), START + 200));
        // Many attackers push it out: then it opens nothing, never the captured message again.
        for id in 3..8 {
            let mut m = node(id);
            handshake(&mut m, &mut b, START + 200);
            handshake(&mut m, &mut b, START + 201);
        }
        handshake(&mut mallory, &mut b, START + 300);
        assert!(b.len() <= limits.max_sessions);
        assert!(
            !b.can_seal(NodeId(0), START + 300),
            "node 0's session was pushed out"
        );
        assert_eq!(
            b.open(&dir, &bound(0, 1, 1), START + 300, &captured, || [0; 32]),
            Err(OpenError::NoSession)
        );
        assert!(b.counters().evicted > 0);
    }

    /// A relay that makes up messages under sessions the destination does not hold draws a
    /// recovery handshake (once per `recover_after`): it names the sessions the destination
    /// holds, and the sealer keeps sealing under them; nothing is asked to be sealed again.
    #[test]
    fn a_recovery_drawn_by_a_made_up_message_ends_no_session_held() {
        let dir = keys();
        let (mut a, mut b) = (node(0), node(1));
        let now = START + 10_000_000;
        handshake(&mut a, &mut b, now);
        let held = seal(&mut a, &bound(0, 1, 0), now + 1, b"confirms");
        b.open(&dir, &bound(0, 1, 0), now + 2, &held, || unreachable!())
            .unwrap();
        // `b` started lately: a recovery Init carries its start.
        let init = b
            .recover(&dir, NodeId(0), now + 3, [7; 32])
            .unwrap()
            .unwrap();
        let Ok(Opened::Answer {
            resp,
            lost_since_us,
            ..
        }) = a.open(&dir, &bound(1, 0, 0), now + 4, &init.bytes, || [8; 32])
        else {
            panic!("answered")
        };
        assert_eq!(lost_since_us, None, "nothing was lost");
        // `a` still seals under the session both hold, and `b` opens it.
        let m = seal(&mut a, &bound(0, 1, 1), now + 5, b"still");
        assert_eq!(
            b.open(&dir, &bound(0, 1, 1), now + 6, &m, || unreachable!()),
            Ok(Opened::Payload(b"still".to_vec()))
        );
        assert_eq!(
            b.open(&dir, &bound(0, 1, 0), now + 7, &resp, || unreachable!()),
            Ok(Opened::Established(NodeId(0)))
        );
        // A restart forgets: the next recovery names nothing, ends the old session, and asks
        // for what was sealed since the start.
        let restart = now + 1_000_000;
        let mut b = Sessions::new(NodeId(1), secret(1), restart, SessionLimits::default());
        let init = b
            .recover(&dir, NodeId(0), restart, [9; 32])
            .unwrap()
            .unwrap();
        let Ok(Opened::Answer { lost_since_us, .. }) =
            a.open(&dir, &bound(1, 0, 0), restart + 1, &init.bytes, || [10; 32])
        else {
            panic!("answered")
        };
        assert_eq!(lost_since_us, Some(restart));
        assert!(!a.can_seal(NodeId(1), restart + 2));
    }

    /// An Init made while its responder was down goes again as it was, and the restarted
    /// responder refuses it (`BeforeStart`) and recovers with its initiator (the daemon does on
    /// that refusal): the recovery tells the initiator the start, and its next Init, due at
    /// once, is a new one, which opens.
    #[test]
    fn an_init_made_while_its_responder_was_down_is_made_again_when_it_recovers() {
        let dir = keys();
        let mut a = node(0);
        let first = a.start(&dir, NodeId(1), START, [1; 32]).unwrap().unwrap();
        let restart = START + 3_000_000;
        let mut b = Sessions::new(NodeId(1), secret(1), restart, SessionLimits::default());
        let retry = a
            .hurry(&dir, NodeId(1), restart + 1, [2; 32])
            .unwrap()
            .unwrap();
        assert_eq!(retry.bytes, first.bytes);
        assert_eq!(
            b.open(&dir, &bound(0, 1, 0), restart + 2, &retry.bytes, || [3; 32]),
            Err(OpenError::BeforeStart)
        );
        let recovery = b
            .recover(&dir, NodeId(0), restart + 3, [4; 32])
            .unwrap()
            .unwrap();
        let Ok(Opened::Answer { .. }) =
            a.open(&dir, &bound(1, 0, 0), restart + 4, &recovery.bytes, || {
                [5; 32]
            })
        else {
            panic!("answered")
        };
        let tick = a.tick(&dir, restart + 4, fresh());
        let [renewed] = &tick.inits[..] else {
            panic!("{tick:?}")
        };
        assert_ne!(renewed.bytes, first.bytes);
        assert!(matches!(
            b.open(&dir, &bound(0, 1, 1), restart + 5, &renewed.bytes, || [6;
                32]),
            Ok(Opened::Answer { .. })
        ));
    }

    /// The audit's second attack: a message taken, the receiver restarted, the message sent
    /// again. A restarted node holds no session: nothing sealed before opens. And an Init made
    /// before the restart is refused, so a replayed handshake makes no session either.
    #[test]
    fn a_restarted_receiver_opens_nothing_sealed_before() {
        let dir = keys();
        let (mut a, mut b) = (node(0), node(1));
        handshake(&mut a, &mut b, START);
        let init = a
            .start(&dir, NodeId(1), START + 10, [7; 32])
            .unwrap()
            .unwrap();
        let m = seal(&mut a, &bound(0, 1, 1), START + 10, b"once");
        assert!(
            b.open(&dir, &bound(0, 1, 1), START + 10, &m, || [0; 32])
                .is_ok()
        );
        // Restarted 0.19 s later (as the audit did).
        let later = START + 10 + 190_000;
        let mut restarted = Sessions::new(NodeId(1), secret(1), later, SessionLimits::default());
        assert_eq!(
            restarted.open(&dir, &bound(0, 1, 1), later, &m, || [0; 32]),
            Err(OpenError::NoSession)
        );
        // An Init within the skew of the start is taken (its answer reaches only its maker)...
        let mut beyond = Sessions::new(
            NodeId(1),
            secret(1),
            START + 10 + SessionLimits::default().skew_us + 1,
            SessionLimits::default(),
        );
        assert_eq!(
            beyond.open(
                &dir,
                &bound(0, 1, 0),
                later + 2_000_000,
                &init.bytes,
                || [0; 32]
            ),
            Err(OpenError::BeforeStart),
            "an Init made before the start, beyond the skew"
        );
        // The receiver starts a handshake back, once, so that the sealer moves on...
        let back = restarted
            .recover(&dir, NodeId(0), later, [8; 32])
            .unwrap()
            .unwrap();
        assert_eq!(
            restarted.recover(&dir, NodeId(0), later + 1, [8; 32]),
            Ok(None)
        );
        // ...and asks for what was sealed to it since it started.
        let Ok(Opened::Answer { lost_since_us, .. }) =
            a.open(&dir, &bound(1, 0, 0), later + 5, &back.bytes, || [9; 32])
        else {
            panic!("the recovery Init is answered");
        };
        assert_eq!(lost_since_us, Some(later));
        // Long after its start, a node that lost a session asks for nothing again: what was
        // sealed to it went to a node that held its sessions.
        let limits = SessionLimits::default();
        let much_later = later + limits.erase_after_us + limits.skew_us;
        let mut c = node(2);
        let init = restarted
            .recover(&dir, NodeId(2), much_later, [10; 32])
            .unwrap()
            .unwrap();
        let Ok(Opened::Answer { lost_since_us, .. }) =
            c.open(&dir, &bound(1, 2, 0), much_later, &init.bytes, || [11; 32])
        else {
            panic!("the recovery Init is answered");
        };
        assert_eq!(lost_since_us, None);
    }

    /// A restarted node's recovery sent again (its first Init's answer slow): within the skew
    /// the same Init, which the responder answers with the same answer, making nothing new;
    /// after it a new Init, which makes a second session at the responder without ending the
    /// first, the one the initiator took. The sessions of before the restart end.
    #[test]
    fn the_inits_of_one_recovery_do_not_end_each_others_sessions() {
        let dir = keys();
        let (mut a, mut b) = (node(0), node(1));
        handshake(&mut b, &mut a, START);
        assert!(b.can_seal(NodeId(0), START));
        // `a` restarts, and recovers when `b`'s first message does not open.
        let later = START + 1_000_000;
        let mut a = Sessions::new(NodeId(0), secret(0), later, SessionLimits::default());
        let first = a.recover(&dir, NodeId(1), later, [1; 32]).unwrap().unwrap();
        let limits = SessionLimits::default();
        let gap = limits.handshake_timeout_us;
        let second = a
            .hurry(&dir, NodeId(1), later + gap, [2; 32])
            .unwrap()
            .unwrap();
        assert_eq!((second.attempt, &second.bytes), (2, &first.bytes));
        let third = a
            .hurry(&dir, NodeId(1), later + limits.init_max_age_us / 2, [3; 32])
            .unwrap()
            .unwrap();
        assert_eq!(third.attempt, 3);
        assert_ne!(
            third.bytes, first.bytes,
            "half as old as a responder takes: a new Init"
        );
        let agreements = |s: &Sessions| {
            let c = s.counters();
            c.agreements_sealing + c.agreements_opening
        };
        // Each Init's copies carry its attempt, as the daemon sends them.
        let answer = |b: &mut Sessions, init: &Outgoing, now, r| {
            let copy = Bound {
                attempt: init.attempt,
                ..bound(0, 1, 0)
            };
            b.open(&dir, &copy, now, &init.bytes, || [r; 32])
        };
        let t = later + limits.init_max_age_us / 2 + 1;
        let Ok(Opened::Answer {
            resp,
            lost_since_us,
            ..
        }) = answer(&mut b, &first, t, 4)
        else {
            panic!("a recovery is answered");
        };
        assert_eq!(lost_since_us, Some(later), "it asks for what it lost");
        // The session of before the restart no longer seals; the new one, until `a` uses it,
        // not yet either.
        assert!(!b.can_seal(NodeId(0), t));
        // A copy of the first from another path, then the second attempt: before a retry's
        // gap nothing, after it the answer again, as it was, for no key agreement.
        let before = agreements(&b);
        assert_eq!(answer(&mut b, &first, t + 1, 5), Err(OpenError::Duplicate));
        assert_eq!(answer(&mut b, &second, t + 1, 5), Err(OpenError::Duplicate));
        assert_eq!(
            answer(&mut b, &second, t + gap / 2, 5),
            Ok(Opened::Answer {
                resp: resp.clone(),
                lost_since_us: None
            })
        );
        assert_eq!(agreements(&b), before);
        assert_eq!(b.counters().answered_again, 1);
        assert_eq!(b.peers[&NodeId(0)].sessions.len(), 1);
        let Ok(Opened::Answer { lost_since_us, .. }) = answer(&mut b, &third, t + gap, 6) else {
            panic!("a new Init is answered");
        };
        assert_eq!(lost_since_us, None, "the first Init's answer asked already");
        assert_eq!(b.peers[&NodeId(0)].sessions.len(), 2);
        // `a` takes the first answer (twice: the second is a copy) and seals under it: `b`
        // opens it.
        let now = t + gap + 1;
        assert_eq!(
            a.open(&dir, &bound(1, 0, 0), now, &resp, || unreachable!()),
            Ok(Opened::Established(NodeId(1)))
        );
        assert_eq!(
            a.open(&dir, &bound(1, 0, 1), now, &resp, || unreachable!()),
            Err(OpenError::Duplicate)
        );
        let m = seal(&mut a, &bound(0, 1, 5), now + 1, b"after");
        assert_eq!(
            b.open(&dir, &bound(0, 1, 5), now + 2, &m, || unreachable!()),
            Ok(Opened::Payload(b"after".to_vec()))
        );
        assert!(b.can_seal(NodeId(0), now + 3));
    }

    /// Handshakes answered slowly (a loaded machine) make the next ones wait longer before
    /// their Init goes again: a retry that comes before the answer only adds key agreements.
    #[test]
    fn the_wait_for_an_answer_follows_the_round_trips_measured() {
        let dir = keys();
        let (mut a, mut b) = (node(0), node(1));
        let timeout = SessionLimits::default().handshake_timeout_us;
        let init = a.start(&dir, NodeId(1), START, [1; 32]).unwrap().unwrap();
        let Ok(Opened::Answer { resp, .. }) =
            b.open(&dir, &bound(0, 1, 0), START, &init.bytes, || [2; 32])
        else {
            panic!("answered");
        };
        // Answered after 1 s, at its first Init.
        let slow = 1_000_000;
        assert_eq!(
            a.open(&dir, &bound(1, 0, 0), START + slow, &resp, || [3; 32]),
            Ok(Opened::Established(NodeId(1)))
        );
        let now = START + slow + 1;
        assert!(a.start(&dir, NodeId(2), now, [4; 32]).unwrap().is_some());
        let at_timeout = a.tick(&dir, now + timeout + 1, || [5; 32]);
        assert!(at_timeout.inits.is_empty(), "no retry at the fixed timeout");
        // The first sample sets the deviation to half of it: the wait is the smoothed round
        // trip and four deviations, 3 times the sample.
        let before = a.tick(&dir, now + 3 * slow - 1, || [6; 32]);
        assert!(before.inits.is_empty(), "{before:?}");
        let after = a.tick(&dir, now + 3 * slow, || [6; 32]);
        assert_eq!(
            after.inits.len(),
            1,
            "a retry after the round trip and its deviations"
        );
    }

    /// An answer says which attempt's copy it answers: a handshake sent again is timed from
    /// that sending, not from the first (a node down for a while would count its outage) and
    /// not left unmeasured (on a loaded network most handshakes are sent again).
    #[test]
    fn an_answer_is_timed_from_the_sending_it_answers() {
        let dir = keys();
        let (mut a, mut b) = (node(0), node(1));
        let timeout = SessionLimits::default().handshake_timeout_us;
        let init = a.start(&dir, NodeId(1), START, [1; 32]).unwrap().unwrap();
        // The first copy is lost; the second goes after the timeout.
        let retry = a.tick(&dir, START + timeout, || [2; 32]);
        assert_eq!(retry.inits.len(), 1);
        let second = &retry.inits[0];
        assert_eq!((second.attempt, &second.bytes), (2, &init.bytes));
        let copy = Bound {
            attempt: 2,
            ..bound(0, 1, 0)
        };
        let Ok(Opened::Answer { resp, .. }) =
            b.open(&dir, &copy, START + timeout, &second.bytes, || [3; 32])
        else {
            panic!("answered");
        };
        // Answered 1 s after the second sending, its message naming attempt 2.
        let slow = 1_000_000;
        let answered = Bound {
            attempt: 2,
            ..bound(1, 0, 0)
        };
        assert_eq!(
            a.open(&dir, &answered, START + timeout + slow, &resp, || [4; 32]),
            Ok(Opened::Established(NodeId(1)))
        );
        // The sample is 1 s (not 1 s and the timeout): the next wait is 3 s.
        let now = START + timeout + slow + 1;
        assert!(a.start(&dir, NodeId(2), now, [5; 32]).unwrap().is_some());
        assert!(
            a.tick(&dir, now + 3 * slow - 1, || [6; 32])
                .inits
                .is_empty()
        );
        assert_eq!(a.tick(&dir, now + 3 * slow, || [6; 32]).inits.len(), 1);
    }

    #[test]
    fn times_in_the_future_beyond_the_skew_are_refused() {
        let dir = keys();
        let (mut a, mut b) = (node(0), node(1));
        handshake(&mut a, &mut b, START);
        let skew = SessionLimits::default().skew_us;
        let ahead = seal(&mut a, &bound(0, 1, 1), START + skew + 1, b"x");
        assert_eq!(
            b.open(&dir, &bound(0, 1, 1), START, &ahead, || [0; 32]),
            Err(OpenError::Future)
        );
        let within = seal(&mut a, &bound(0, 1, 2), START + skew, b"x");
        assert!(
            b.open(&dir, &bound(0, 1, 2), START, &within, || [0; 32])
                .is_ok()
        );
        let mut c = node(2);
        let init = c
            .start(&dir, NodeId(1), START + skew + 1, [4; 32])
            .unwrap()
            .unwrap();
        assert_eq!(
            b.open(&dir, &bound(2, 1, 0), START, &init.bytes, || [0; 32]),
            Err(OpenError::Future)
        );
        // Too old.
        let old = node(2)
            .start(&dir, NodeId(3), START, [4; 32])
            .unwrap()
            .unwrap();
        let mut d = node(3);
        let age = SessionLimits::default().init_max_age_us;
        assert_eq!(
            d.open(&dir, &bound(2, 3, 0), START + age, &old.bytes, || [0; 32]),
            Err(OpenError::Replayed)
        );
    }

    /// An initiator that seals nothing for a while after its handshake (a sender to the
    /// responder now and then) may seal its first message under the session any time before
    /// `rekey_after`: the responder keeps the session, unconfirmed, until then. (It erased it
    /// at `init_max_age`, and the message drew a recovery handshake.)
    #[test]
    fn an_unconfirmed_session_waits_for_its_first_message_until_rekey_after() {
        let dir = keys();
        let (mut a, mut b) = (node(0), node(1));
        let limits = SessionLimits::default();
        handshake(&mut a, &mut b, START);
        let late = START + limits.rekey_after_us - 1;
        for s in [&mut a, &mut b] {
            assert_eq!(s.tick(&dir, late, fresh()).erased, 0);
        }
        let m = seal(&mut a, &bound(0, 1, 1), late, b"late first");
        assert_eq!(
            b.open(&dir, &bound(0, 1, 1), late + 1, &m, || [0; 32]),
            Ok(Opened::Payload(b"late first".to_vec()))
        );
    }

    #[test]
    fn sessions_are_renewed_then_erased_at_both_ends() {
        let dir = keys();
        let (mut a, mut b) = (full_handshakes(0), full_handshakes(1));
        let limits = SessionLimits::default();
        handshake(&mut a, &mut b, START);
        let early = a.seal(&bound(0, 1, 1), START + 1, b"x").unwrap();
        assert!(!early.renew);
        assert!(
            b.open(&dir, &bound(0, 1, 1), START + 1, &early.bytes, || [0; 32])
                .is_ok()
        );
        let id = a.peers[&NodeId(1)].sessions[0].id;
        let at = limits.renew_at_us(id);
        assert!(limits.rekey_after_us / 2 <= at && at < limits.renewed_by_us());
        let before = a.seal(&bound(0, 1, 2), START + at - 1, b"x").unwrap();
        assert!(!before.renew, "not yet");
        assert!(
            b.open(&dir, &bound(0, 1, 2), START + at - 1, &before.bytes, || [0;
                32])
                .is_ok()
        );
        let renew = a.seal(&bound(0, 1, 3), START + at, b"x").unwrap();
        assert!(renew.renew, "its point: start a new handshake");
        assert!(
            b.open(&dir, &bound(0, 1, 3), START + at, &renew.bytes, || [0; 32])
                .is_ok()
        );
        // The responder, confirmed, renews later: not at its initiator's point, nor at three
        // quarters, but at seven eighths.
        let mut reply = |n: u64, at: u64| b.seal(&bound(1, 0, n), START + at, b"y").unwrap();
        assert!(!reply(1, at).renew && !reply(2, limits.renewed_by_us()).renew);
        let answered_late = reply(3, limits.responder_renews_at_us());
        assert!(
            answered_late.renew,
            "seven eighths: the responder starts one"
        );
        let when = START + limits.responder_renews_at_us();
        assert!(
            a.open(&dir, &bound(1, 0, 3), when, &answered_late.bytes, || [0;
                32])
                .is_ok()
        );
        let last = START + limits.rekey_after_us - 1;
        let late = seal(&mut a, &bound(0, 1, 3), last, b"late");
        // Past rekey_after nothing seals under it, at either end, and its sending keys go.
        let rekeyed = START + limits.rekey_after_us;
        assert!(!a.can_seal(NodeId(1), rekeyed) && !b.can_seal(NodeId(0), rekeyed));
        assert_eq!(
            a.seal(&bound(0, 1, 4), rekeyed, b"x").err(),
            Some(SealError::NoSession(NodeId(1)))
        );
        let tick = a.tick(&dir, rekeyed, fresh());
        assert!(
            tick.next_us
                .is_some_and(|t| t <= START + limits.erase_after_us)
        );
        assert!(a.peers[&NodeId(1)].sessions[0].send.is_none());
        // What was sealed before still opens until erase_after...
        assert_eq!(
            b.open(
                &dir,
                &bound(0, 1, 3),
                START + limits.erase_after_us - 1,
                &late,
                || [0; 32]
            ),
            Ok(Opened::Payload(b"late".to_vec()))
        );
        // ...and nothing after, even before a tick ran.
        let m = seal(&mut b, &bound(1, 0, 9), last, b"y");
        let erased = START + limits.erase_after_us;
        assert_eq!(
            a.open(&dir, &bound(1, 0, 9), erased, &m, || [0; 32]),
            Err(OpenError::NoSession)
        );
        for s in [&mut a, &mut b] {
            let tick = s.tick(&dir, erased, fresh());
            assert_eq!(tick.erased, 1);
            assert!(s.is_empty());
            assert_eq!(s.counters().erased, 1);
        }
        // Once idle, the peers' records go too, and nothing is due any more.
        let pruned = erased + limits.init_max_age_us;
        for s in [&mut a, &mut b] {
            let tick = s.tick(&dir, pruned, fresh());
            assert!(s.peers.is_empty(), "{:?}", tick.next_us);
            assert_eq!(s.tick(&dir, pruned, fresh()).next_us, None);
        }
    }

    /// Within `handshake_after` of its chain's handshake, a session due for renewal is renewed
    /// by its successor: derived by the sealer at once, by the receiver when a message names
    /// it, with no key agreement and no message of its own; the parent's chain key is erased at
    /// both ends, what was sealed under the parent still opens until it is erased. Past
    /// `handshake_after`, the renewal is a full handshake again.
    #[test]
    fn a_session_is_renewed_by_its_successor_without_a_key_agreement() {
        let dir = keys();
        let limits = SessionLimits::default();
        let (mut a, mut b) = (node(0), node(1));
        handshake(&mut a, &mut b, START);
        let agreements = |s: &Sessions| {
            let c = s.counters();
            c.agreements_sealing + c.agreements_opening
        };
        let before = (agreements(&a), agreements(&b));
        let parent = a.peers[&NodeId(1)].sessions[0].id;
        let old = seal(&mut a, &bound(0, 1, 1), START + 1, b"old");
        let at = START + limits.renew_at_us(parent);
        let renewed = a.seal(&bound(0, 1, 2), at, b"new").unwrap();
        assert!(!renewed.renew, "derived: no handshake to start");
        let sessions = &a.peers[&NodeId(1)].sessions;
        assert_eq!(sessions.len(), 2);
        assert!(
            sessions[0].chain.is_none(),
            "the parent's chain key is erased"
        );
        let successor = sessions[1].id;
        assert_ne!(successor, parent);
        assert_eq!(a.counters().derived_sealing, 1);
        assert_eq!(
            b.open(&dir, &bound(0, 1, 2), at, &renewed.bytes, || unreachable!()),
            Ok(Opened::Payload(b"new".to_vec()))
        );
        let held = &b.peers[&NodeId(0)].sessions;
        assert_eq!(
            held.iter().map(|s| s.id).collect::<Vec<_>>(),
            [parent, successor]
        );
        assert!(held[0].chain.is_none() && held[1].chain.is_some());
        assert_eq!(b.counters().derived_opening, 1);
        assert_eq!(
            b.open(&dir, &bound(0, 1, 2), at, &renewed.bytes, || unreachable!()),
            Err(OpenError::Replayed),
            "taken once under the successor too"
        );
        // The responder seals under the successor now; the parent's messages still open.
        let reply = b.seal(&bound(1, 0, 1), at, b"reply").unwrap();
        assert!(!reply.renew);
        assert_eq!(
            a.open(&dir, &bound(1, 0, 1), at, &reply.bytes, || unreachable!()),
            Ok(Opened::Payload(b"reply".to_vec()))
        );
        assert_eq!(
            b.open(&dir, &bound(0, 1, 1), at, &old, || unreachable!()),
            Ok(Opened::Payload(b"old".to_vec()))
        );
        assert_eq!((agreements(&a), agreements(&b)), before, "no key agreement");
        // Generation after generation, until the chain's handshake is `handshake_after` old.
        let mut now;
        let mut seq = 3;
        loop {
            let newest = a.peers[&NodeId(1)].sessions.last().unwrap();
            now = newest.created_us + limits.renew_at_us(newest.id);
            let sealed = a.seal(&bound(0, 1, seq), now, b"x").unwrap();
            assert!(
                b.open(
                    &dir,
                    &bound(0, 1, seq),
                    now,
                    &sealed.bytes,
                    || unreachable!()
                )
                .is_ok()
            );
            seq += 1;
            if sealed.renew {
                break;
            }
            assert!(now < START + limits.chain_ends_at_us(parent));
            b.tick(&dir, now, fresh());
            a.tick(&dir, now, fresh());
        }
        let ends = limits.chain_ends_at_us(parent);
        assert!(limits.handshake_after_us / 2 <= ends && ends <= limits.handshake_after_us);
        assert!(now >= START + ends, "then a full handshake");
        assert_eq!((agreements(&a), agreements(&b)), before);
        assert!(a.counters().derived_sealing >= 5);
        assert!(a.len() <= limits.per_peer && b.len() <= limits.per_peer);
    }

    /// A message naming a successor's id but not sealed under its keys opens nothing and
    /// derives nothing: the parent keeps its chain key, and the true successor opens after.
    #[test]
    fn a_made_up_message_under_a_successor_id_derives_nothing() {
        let dir = keys();
        let limits = SessionLimits::default();
        let (mut a, mut b) = (node(0), node(1));
        handshake(&mut a, &mut b, START);
        let first = seal(&mut a, &bound(0, 1, 1), START, b"x");
        assert!(
            b.open(&dir, &bound(0, 1, 1), START, &first, || [0; 32])
                .is_ok()
        );
        let parent = &b.peers[&NodeId(0)].sessions[0];
        let next = parent.chain.as_ref().unwrap().next_id;
        let at = START + limits.renew_at_us(parent.id);
        let forged = made_up_data(0, next, at, 7);
        assert_eq!(
            b.open(&dir, &bound(0, 1, 2), at, &forged, || unreachable!()),
            Err(OpenError::Broken)
        );
        assert_eq!(b.len(), 1);
        assert!(b.peers[&NodeId(0)].sessions[0].chain.is_some());
        assert_eq!(b.counters().derived_opening, 0);
        // Another sealer naming that id holds no such parent.
        let other = made_up_data(2, next, at, 7);
        assert_eq!(
            b.open(&dir, &bound(2, 1, 2), at, &other, || unreachable!()),
            Err(OpenError::NoSession)
        );
        let true_one = seal(&mut a, &bound(0, 1, 2), at, b"y");
        assert_eq!(
            b.open(&dir, &bound(0, 1, 2), at, &true_one, || unreachable!()),
            Ok(Opened::Payload(b"y".to_vec()))
        );
    }

    #[test]
    fn an_unanswered_handshake_is_sent_again_then_given_up() {
        let dir = keys();
        let mut a = node(0);
        let limits = SessionLimits::default();
        a.start(&dir, NodeId(1), START, [1; 32]).unwrap().unwrap();
        let mut now = START;
        let mut sent = vec![];
        loop {
            let tick = a.tick(&dir, now, fresh());
            sent.extend(tick.inits.iter().map(|o| (o.attempt, now - START)));
            if !tick.failed.is_empty() {
                assert_eq!(tick.failed, vec![NodeId(1)]);
                break;
            }
            now = tick.next_us.expect("a handshake in flight is due");
        }
        let t = limits.handshake_timeout_us;
        assert_eq!(
            sent,
            // Each waits twice the last, at most 32 times the first (RFC 6298's backoff).
            vec![
                (2, t),
                (3, 3 * t),
                (4, 7 * t),
                (5, 15 * t),
                (6, 31 * t),
                (7, 63 * t),
                (8, 95 * t)
            ]
        );
        assert_eq!(now - START, 127 * t);
        assert_eq!(a.counters().failed, 1);
        assert_eq!(a.handshakes_in_flight(), 0);
        // A late answer to any of them is one to nothing in flight.
        let mut b = node(1);
        let init = a.start(&dir, NodeId(1), now, [2; 32]).unwrap().unwrap();
        let Ok(Opened::Answer { resp, .. }) =
            b.open(&dir, &bound(0, 1, 0), now, &init.bytes, || [3; 32])
        else {
            panic!()
        };
        let mut a2 = Sessions::new(NodeId(0), secret(0), now, limits);
        assert_eq!(
            a2.open(&dir, &bound(1, 0, 0), now, &resp, || [0; 32]),
            Err(OpenError::Unexpected)
        );
    }

    /// A handshake cut off (a partition) waits out its backoff; when a path comes back, it goes
    /// again at once and its backoff starts again from the first wait, so the healed path
    /// costs it a round trip. Only handshakes in a long wait go; attempts still end it.
    #[test]
    fn a_path_back_sends_a_waiting_handshake_again_at_once() {
        let dir = keys();
        let mut a = node(0);
        let t = SessionLimits::default().handshake_timeout_us;
        a.start(&dir, NodeId(1), START, [1; 32]).unwrap().unwrap();
        // In its first wait: nothing to hurry.
        assert!(a.path_back(&dir, START + t / 2, fresh()).is_empty());
        // Unanswered until the sixth Init, which waits 32 timeouts.
        let mut now = START;
        loop {
            let tick = a.tick(&dir, now, fresh());
            now = tick.next_us.unwrap();
            if tick.inits.iter().any(|o| o.attempt == 6) {
                break;
            }
        }
        assert_eq!(
            now,
            START + 63 * t,
            "the sixth attempt, sent at 31 timeouts, waits 32"
        );
        // Its path comes back 2 timeouts later: the seventh goes now, and waits one timeout.
        let back = START + 33 * t;
        let sent = a.path_back(&dir, back, fresh());
        assert_eq!(sent.len(), 1);
        assert_eq!((sent[0].to, sent[0].attempt), (NodeId(1), 7));
        assert_eq!(a.counters().resent_on_news, 1);
        assert_eq!(a.tick(&dir, back, fresh()).next_us, Some(back + t));
        // More good news at once sends nothing: it is in its first wait again.
        assert!(a.path_back(&dir, back + t / 2, fresh()).is_empty());
        // Answered, it makes a session.
        let mut b = node(1);
        let init = &sent[0];
        let Ok(Opened::Answer { resp, .. }) =
            b.open(&dir, &bound(0, 1, 0), back, &init.bytes, || [3; 32])
        else {
            panic!("the Init opens")
        };
        assert!(matches!(
            a.open(&dir, &bound(1, 0, 0), back + 1, &resp, || [0; 32]),
            Ok(Opened::Established(_))
        ));
        assert!(a.can_seal(NodeId(1), back + 1));
        assert_eq!(a.handshakes_in_flight(), 0);
    }

    /// A node that has measured no handshake waits for its first answer as long as its links
    /// say a round trip takes, not the bare timeout; the hint never shortens a wait, and is
    /// bounded like a measured round trip.
    #[test]
    fn the_links_round_trip_hint_sets_the_first_wait_of_a_node_that_measured_none() {
        let dir = keys();
        let t = SessionLimits::default().handshake_timeout_us;
        let first_due = |hint_us: u64| {
            let mut a = node(0);
            a.set_round_trip_hint(hint_us);
            a.start(&dir, NodeId(1), START, [1; 32]).unwrap().unwrap();
            a.tick(&dir, START, fresh()).next_us.unwrap() - START
        };
        assert_eq!(first_due(0), t);
        assert_eq!(
            first_due(t / 10),
            t,
            "shorter than the timeout: the timeout"
        );
        assert_eq!(first_due(6 * t), 6 * t);
        assert_eq!(first_due(1000 * t), MAX_BACKOFF * t, "bounded");
        // The second attempt waits twice the first.
        let mut a = node(0);
        a.set_round_trip_hint(6 * t);
        a.start(&dir, NodeId(1), START, [1; 32]).unwrap().unwrap();
        let tick = a.tick(&dir, START + 6 * t, fresh());
        assert_eq!(tick.inits.len(), 1);
        assert_eq!(tick.next_us, Some(START + 18 * t));
        // Once a round trip is measured, the longer of it and the hint.
        let measured_then = |hint_us: u64| {
            let mut a = node(0);
            let init = a.start(&dir, NodeId(1), START, [1; 32]).unwrap().unwrap();
            let mut b = node(1);
            let Ok(Opened::Answer { resp, .. }) =
                b.open(&dir, &bound(0, 1, 0), START, &init.bytes, || [3; 32])
            else {
                panic!("the Init opens")
            };
            let answered = START + t / 2;
            assert!(matches!(
                a.open(&dir, &bound(1, 0, 0), answered, &resp, || [0; 32]),
                Ok(Opened::Established(_))
            ));
            a.set_round_trip_hint(hint_us);
            a.start(&dir, NodeId(2), answered, [1; 32])
                .unwrap()
                .unwrap();
            a.tick(&dir, answered, fresh()).next_us.unwrap() - answered
        };
        let measured = measured_then(0);
        assert!(
            measured > t,
            "a round trip of half the timeout, and its deviation"
        );
        assert_eq!(measured_then(measured / 2), measured);
        assert_eq!(measured_then(measured + t), measured + t);
    }

    /// Good news never gives a handshake more attempts: one at its last is not sent again, and
    /// is given up at its due.
    #[test]
    fn a_path_back_never_adds_attempts() {
        let dir = keys();
        let mut a = node(0);
        let limits = SessionLimits::default();
        let step = limits.handshake_timeout_us / 2;
        a.start(&dir, NodeId(1), START, [1; 32]).unwrap().unwrap();
        // Good news every half timeout, the timer run as often.
        let (mut inits, mut news_sent, mut now) = (1, 0, START);
        loop {
            now += step;
            let tick = a.tick(&dir, now, fresh());
            inits += tick.inits.len();
            if !tick.failed.is_empty() {
                break;
            }
            news_sent += a.path_back(&dir, now, fresh()).len();
        }
        assert!(news_sent > 0, "some went on news");
        inits += news_sent;
        assert_eq!(inits as u32, limits.handshake_attempts);
        assert_eq!(a.counters().failed, 1);
    }

    #[test]
    fn a_resend_hurries_a_handshake_in_flight() {
        let dir = keys();
        let mut a = node(0);
        let t = SessionLimits::default().handshake_timeout_us;
        assert_eq!(
            a.hurry(&dir, NodeId(1), START, [1; 32]),
            Ok(None),
            "none in flight"
        );
        a.start(&dir, NodeId(1), START, [1; 32]).unwrap().unwrap();
        assert_eq!(
            a.hurry(&dir, NodeId(1), START + t / 2 - 1, [2; 32]),
            Ok(None)
        );
        let hurried = a
            .hurry(&dir, NodeId(1), START + t / 2, [2; 32])
            .unwrap()
            .unwrap();
        assert_eq!(hurried.attempt, 2);
        // The timer's next Init waits from the hurried one, and any answer opens.
        let tick = a.tick(&dir, START + t, fresh());
        assert!(tick.inits.is_empty(), "{tick:?}");
        let mut b = node(1);
        let Ok(Opened::Answer { resp, .. }) =
            b.open(&dir, &bound(0, 1, 0), START + t, &hurried.bytes, || [3; 32])
        else {
            panic!()
        };
        assert_eq!(
            a.open(&dir, &bound(1, 0, 0), START + t, &resp, || [4; 32]),
            Ok(Opened::Established(NodeId(1)))
        );
    }

    /// The audit's fourth attack: messages that make the receiver run a key agreement before
    /// any tag is checked. Data under unknown sessions costs a lookup; Inits are limited per
    /// (sealer, path) and in all, and counted.
    #[test]
    fn key_agreements_for_others_are_limited_per_sealer_and_path() {
        let dir = keys();
        let mut b = node(1);
        let limits = SessionLimits::default();
        let garbage = |ts: u64, sealer: u64| {
            Sealed::Init(Init {
                sealer: NodeId(sealer),
                ts_us: ts,
                enc: [9; 32],
                ciphertext: vec![1; 48],
            })
            .to_bytes()
        };
        let mut refused = BTreeMap::<OpenError, u32>::new();
        for i in 0..100 {
            let e = b
                .open(
                    &dir,
                    &bound(0, 1, 0),
                    START + i,
                    &garbage(START + i, 0),
                    || [0; 32],
                )
                .unwrap_err();
            *refused.entry(e).or_default() += 1;
        }
        let burst = limits.handshakes.per_path.burst;
        assert_eq!(refused[&OpenError::Broken], burst);
        assert_eq!(refused[&OpenError::Limited], 100 - burst);
        assert_eq!(b.counters().agreements_opening, u64::from(burst));
        // Another path of the same sealer, and another sealer, have their own tokens: a relay
        // on one path cannot stop a handshake sent on all of them.
        let other_path = Bound {
            index: 1,
            ..bound(0, 1, 0)
        };
        assert_eq!(
            b.open(
                &dir,
                &other_path,
                START + 200,
                &garbage(START + 200, 0),
                || [0; 32]
            ),
            Err(OpenError::Broken)
        );
        let mut a = node(0);
        let init = a
            .start(&dir, NodeId(1), START + 300, [5; 32])
            .unwrap()
            .unwrap();
        assert!(matches!(
            b.open(&dir, &other_path, START + 300, &init.bytes, || [6; 32]),
            Ok(Opened::Answer { .. })
        ));
        // Data naming sessions that do not exist: refused without a key agreement.
        let before = b.counters();
        for s in 0..100 {
            let data = made_up_data(3, s, START, 0);
            assert_eq!(
                b.open(&dir, &bound(3, 1, 0), START + 400, &data, || [0; 32]),
                Err(OpenError::NoSession)
            );
        }
        assert_eq!(b.counters(), before);
        // The limit in all: many sealers, each within its own tokens.
        let mut limited = Sessions::new(
            NodeId(1),
            secret(1),
            START,
            SessionLimits {
                handshakes: HandshakeLimits {
                    all: Rate {
                        burst: 5,
                        every_us: 1_000_000,
                    },
                    ..limits.handshakes
                },
                ..limits
            },
        );
        let results: Vec<_> = (0..8)
            .map(|s| {
                let b = Bound {
                    index: s as u8,
                    ..bound(2, 1, 0)
                };
                limited.open(&dir, &b, START, &garbage(START + s, 2), || [0; 32])
            })
            .collect();
        assert_eq!(
            results
                .iter()
                .filter(|r| **r == Err(OpenError::Broken))
                .count(),
            5
        );
        assert_eq!(
            results
                .iter()
                .filter(|r| **r == Err(OpenError::Limited))
                .count(),
            3
        );
    }

    /// An answer to `init` in its responder's name that no key made: it names the Init's time.
    /// A data message in `sealer`'s name under `session`, sealed at `at`, whose ciphertext
    /// and tag are 40 bytes of `byte`: no key seals it.
    fn made_up_data(sealer: u64, session: u64, at: u64, byte: u8) -> Vec<u8> {
        Sealed::Data(SealedData {
            sealer: NodeId(sealer),
            session,
            nonce: 0,
            sealed_at_us: at,
            ciphertext: vec![byte; 40],
        })
        .to_bytes()
    }

    fn made_up_answer(init: &Outgoing) -> Vec<u8> {
        let Some(Sealed::Init(sent)) = Sealed::from_bytes(&init.bytes) else {
            panic!("an Init")
        };
        Sealed::Resp(Resp {
            sealer: init.to,
            init_ts_us: sent.ts_us,
            session: 5,
            enc: [9; 32],
            ciphertext: vec![0; 16],
        })
        .to_bytes()
    }

    #[test]
    fn a_made_up_answer_costs_at_most_two_agreements_per_init() {
        let dir = keys();
        let mut a = node(0);
        let init = a.start(&dir, NodeId(1), START, [1; 32]).unwrap().unwrap();
        let fake = made_up_answer(&init);
        let results: Vec<_> = (0..5)
            .map(|_| a.open(&dir, &bound(1, 0, 0), START, &fake, || [0; 32]))
            .collect();
        assert_eq!(
            results,
            [
                Err(OpenError::Broken),
                Err(OpenError::Broken),
                Err(OpenError::Limited),
                Err(OpenError::Limited),
                Err(OpenError::Limited)
            ]
        );
        assert_eq!(a.counters().agreements_opening, 2);
        // Those were one path's tries: the true answer opens from another.
        let mut b = node(1);
        let Ok(Opened::Answer { resp, .. }) =
            b.open(&dir, &on_path(0, 1, 1), START, &init.bytes, || [2; 32])
        else {
            panic!("answered")
        };
        assert_eq!(
            a.open(&dir, &bound(1, 0, 0), START, &resp, || [0; 32]),
            Err(OpenError::Limited)
        );
        assert_eq!(
            a.open(&dir, &on_path(1, 0, 1), START, &resp, || [0; 32]),
            Ok(Opened::Established(NodeId(1)))
        );
        // Claimed indices are bounded too: 16 of them, 32 agreements an Init.
        let init = a.start(&dir, NodeId(2), START, [3; 32]).unwrap().unwrap();
        let fake = made_up_answer(&init);
        let before = a.counters().agreements_opening;
        for index in 0..=255u8 {
            for _ in 0..3 {
                let _ = a.open(&dir, &on_path(2, 0, index), START, &fake, || [0; 32]);
            }
        }
        assert_eq!(a.counters().agreements_opening - before, 32);
    }

    /// An Init replayed (or its copies on every path, or its initiator's attempts) draws the
    /// answer it had, a retry's gap apart and at most `handshake_attempts - 1` times: no key
    /// agreement, no session.
    #[test]
    fn a_replayed_init_earns_a_bounded_number_of_copies_of_its_answer() {
        let dir = keys();
        let (mut a, mut b) = (node(0), node(1));
        let limits = SessionLimits::default();
        let init = a.start(&dir, NodeId(1), START, [1; 32]).unwrap().unwrap();
        let Ok(Opened::Answer { resp, .. }) =
            b.open(&dir, &bound(0, 1, 0), START, &init.bytes, || [2; 32])
        else {
            panic!("answered")
        };
        let agreements = b.counters().agreements_opening + b.counters().agreements_sealing;
        let gap = limits.handshake_timeout_us / 2;
        // The same attempt, as its copies on the other paths say: nothing again.
        for step in 1..=10u64 {
            let now = START + step * gap;
            assert_eq!(
                b.open(&dir, &bound(0, 1, 0), now, &init.bytes, || unreachable!()),
                Err(OpenError::Duplicate)
            );
        }
        // Other attempts (the initiator's, or a relay's rewrites): a retry's gap apart, and
        // at most `handshake_attempts - 1` times.
        let mut again = 0;
        for step in 1..=100u64 {
            let now = START + 10 * gap + step * gap / 3;
            let copy = Bound {
                attempt: 1 + step as u32,
                ..bound(0, 1, 0)
            };
            match b.open(&dir, &copy, now, &init.bytes, || unreachable!()) {
                Ok(Opened::Answer {
                    resp: r,
                    lost_since_us,
                    ..
                }) => {
                    assert_eq!((&r, lost_since_us), (&resp, None));
                    again += 1;
                }
                Err(OpenError::Duplicate) => {}
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(again, limits.handshake_attempts - 1);
        assert_eq!(b.counters().answered_again, u64::from(again));
        assert_eq!(
            b.counters().agreements_opening + b.counters().agreements_sealing,
            agreements
        );
        assert_eq!(b.peers[&NodeId(0)].sessions.len(), 1);
    }

    #[test]
    fn bad_limits_are_refused() {
        let ok = SessionLimits::default();
        assert_eq!(ok.check(), Ok(()));
        for bad in [
            SessionLimits {
                rekey_after_us: 0,
                ..ok
            },
            SessionLimits {
                erase_after_us: ok.rekey_after_us,
                ..ok
            },
            SessionLimits { per_peer: 1, ..ok },
            SessionLimits {
                handshake_attempts: 0,
                ..ok
            },
        ] {
            assert!(bad.check().is_err(), "{bad:?}");
        }
    }

    proptest::proptest! {
        /// Whatever a network does to the messages of a session (duplicates, reorders, drops,
        /// and a restart of the receiver at any point), the receiver takes each at most once.
        #[test]
        fn no_message_is_taken_twice(
            order in proptest::collection::vec((0usize..40, proptest::bool::ANY), 1..200),
            restart_at in 0usize..200,
        ) {
            let dir = keys();
            let (mut a, mut b) = (node(0), node(1));
            handshake(&mut a, &mut b, START);
            let sent: Vec<Vec<u8>> = (0..40)
                .map(|i| seal(&mut a, &bound(0, 1, i), START, &i.to_le_bytes()))
                .collect();
            let mut taken = std::collections::BTreeSet::new();
            for (step, (i, _dup)) in order.into_iter().enumerate() {
                if step == restart_at {
                    b = Sessions::new(NodeId(1), secret(1), START + 1, SessionLimits::default());
                }
                if let Ok(Opened::Payload(p)) =
                    b.open(&dir, &bound(0, 1, i as u64), START + 2, &sent[i], || [0; 32])
                {
                    proptest::prop_assert_eq!(p, (i as u64).to_le_bytes().to_vec());
                    proptest::prop_assert!(taken.insert(i), "message {} taken twice", i);
                }
            }
        }
    }
}
