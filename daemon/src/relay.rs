//! The relay faults of the chaos tooling: a curious relay that keeps a copy of every payload it
//! forwards ([`Fault::Capture`](cuberoute_protocol::wire::control::Fault::Capture)), and a
//! Byzantine relay ([`Fault::Forge`](cuberoute_protocol::wire::control::Fault::Forge)) that
//! forges what it forwards in the ways [`ForgeWhat`] names, each time so that the packet passes
//! every check a relay makes and reaches its destination:
//!
//! * **payload** ([`forge_payload`]): every payload byte changed, the checksum recomputed (a
//!   piece of a delivery mode stays well formed, with its own fingerprint made to match);
//! * **header** ([`forge_header`]): the clear fields the destination acts on. A clear piece of
//!   a delivery mode is downgraded to a reliable copy of a forged payload (mode and length
//!   rewritten, k and index kept), which would complete alone if the destination believed the
//!   first piece's shape; a clear copy or copies piece is renamed (another sequence id and send
//!   time: a set its source never sent) and its payload changed; a sealed message, whose inside
//!   the relay cannot read, has its sequence id and send time rewritten, which its seal binds;
//! * **source** ([`forge_source`]): another node claimed as the source, one for which the
//!   packet still passes every check on the rest of its way ([`claimable_source`]). A sealed
//!   message cannot be opened, so the relay seals a payload of its own making with its own key
//!   (it is a certified node, with keys like any) in the claimed node's name;
//! * **replay**: the packet is forwarded unchanged and kept (bounded), and sent again unchanged
//!   to the same next hop [`REPLAY_AFTER`] later (`crate::replay` sends it);
//! * **attempt** ([`forge_attempt`]): the message's attempt number (which send of its set it
//!   is) set to `u32::MAX`, as a relay that would have the destination take every later resend
//!   of a reliable set for an older one and leave it unacknowledged. The destination believes
//!   no attempt number (docs/delivery.md), and a seal binds it;
//! * **flood** ([`RelayFaults::flood`]): not a rewrite: beside each packet it forwards, the relay
//!   sends [`FLOOD_PER_PACKET`] messages on the same route that cannot open at the destination,
//!   in turn a handshake Init in the source's name with a fresh encapsulated key (which costs
//!   a key agreement unless the destination's limits refuse it first), a message under the
//!   forwarded packet's own session with a broken tag (one AEAD), and one under a made-up
//!   session (a lookup).
//!
//! A relay forging several things forges each packet one way, in turn (a way that does not
//! apply to a packet, such as a header forgery of a clear acknowledgement, passes the turn on),
//! so that every way is tried on every kind of traffic. Both faults act only on packets this
//! node forwards, never on those it sends or delivers: they model a relay on a path. What each
//! delivery mode and the seal protect against them is in docs/delivery.md.

use crate::env::Instant;
use cuberoute_protocol::delivery::{Envelope, Mode, Piece, Scheme};
use cuberoute_protocol::seal::sealed::{Bound, Init, Sealed, SealedData};
use cuberoute_protocol::wire::control::{Captured, FLOOD_PER_PACKET, ForgeWhat};
use cuberoute_protocol::wire::packet::{DataPacket, set_checksum};
use cuberoute_protocol::{Action, NodeId, Packet, Route, Topology, flush_bound, hop};
use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::Duration;
use tokio::sync::Notify;

/// The most payload bytes a capturing relay keeps; the oldest captures make room.
pub const CAPTURE_LIMIT_BYTES: usize = 32 << 20;

/// The most payload bytes one answer to `Request::Captured` carries, well under a frame.
pub const ANSWER_LIMIT_BYTES: usize = 512 << 10;

/// The bytes a forging relay XORs into every payload byte. Every forger uses the same mask, so
/// forgers on different paths of a set agree on their forgery: the worst case for a
/// destination that votes.
pub const FORGERY_MASK: u8 = 0x5a;

/// What a header forger XORs into a sequence id (and it adds [`FORGED_SENT_AT_SHIFT_US`] to
/// the send time): the same for every forger, so that forgers agree on the set they make up.
pub const FORGED_SEQ_MASK: u64 = 0x5a5a_5a5a_5a5a_5a5a;
pub const FORGED_SENT_AT_SHIFT_US: u64 = 1;

/// How long after forwarding a packet a replaying relay sends it again.
pub const REPLAY_AFTER: Duration = Duration::from_secs(1);

/// The most packets, and payload bytes, a replaying relay keeps waiting to be sent again; a
/// packet beyond either is not chosen for a replay.
pub const REPLAY_LIMIT: usize = 4096;
pub const REPLAY_LIMIT_BYTES: usize = 8 << 20;

/// The most nodes by id a source forger tries to claim beyond the neighbours of the source, the
/// relay and the destination.
pub const CLAIM_SEARCH: usize = 4096;

/// The mode a header forger downgrades a clear piece to: one copy completes it, and its entry
/// is kept until a client reads it.
pub const DOWNGRADED: Mode = Mode {
    scheme: Scheme::Copies,
    reliable: true,
};

#[derive(Default)]
pub struct RelayFaults {
    capture: AtomicBool,
    forge: AtomicBool,
    forging: Mutex<ForgeWhat>,
    /// Whose turn it is among the ways of forging that are on.
    turn: AtomicU64,
    captures: Mutex<Captures>,
    replays: Mutex<Replays>,
    /// Woken when a packet is kept for a replay.
    replay_kept: Notify,
    pub(crate) captured: AtomicU64,
    pub(crate) forged: AtomicU64,
    pub(crate) forged_payload: AtomicU64,
    pub(crate) forged_header: AtomicU64,
    pub(crate) forged_source: AtomicU64,
    pub(crate) forged_attempt: AtomicU64,
    pub(crate) replayed: AtomicU64,
    pub(crate) flooded: AtomicU64,
    /// Draws the flood's made-up keys and session names.
    flood_draws: AtomicU64,
}

#[derive(Default)]
struct Captures {
    entries: VecDeque<Captured>,
    bytes: usize,
    next_index: u64,
}

/// Packets kept for a replay, in the order they are due.
#[derive(Default)]
struct Replays {
    queue: VecDeque<Replay>,
    bytes: usize,
}

struct Replay {
    due: Instant,
    to: NodeId,
    packet: DataPacket,
}

/// One way of forging a packet.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Forgery {
    Payload,
    Header,
    Source,
    Replay,
    Attempt,
}

impl Forgery {
    /// In the order of [`ForgeWhat::NAMES`].
    pub const ALL: [Forgery; 5] = [
        Forgery::Payload,
        Forgery::Header,
        Forgery::Source,
        Forgery::Replay,
        Forgery::Attempt,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Forgery::Payload => "payload",
            Forgery::Header => "header",
            Forgery::Source => "source",
            Forgery::Replay => "replay",
            Forgery::Attempt => "attempt",
        }
    }

    fn is_on(self, what: ForgeWhat) -> bool {
        match self {
            Forgery::Payload => what.payload,
            Forgery::Header => what.header,
            Forgery::Source => what.source,
            Forgery::Replay => what.replay,
            Forgery::Attempt => what.attempt,
        }
    }
}

/// Seals a plaintext for a message's bound fields with the relay's own key: the bytes of a
/// [`Sealed`], or `None` if it cannot (no key for the destination).
pub type SealOwn<'a> = &'a dyn Fn(&Bound, &[u8]) -> Option<Vec<u8>>;

/// What a forging relay uses of its node besides the packet: where the packet goes next, and
/// the node's own sealing key.
pub struct Forwarding<'a> {
    pub topology: Topology,
    /// This node, the relay.
    pub me: NodeId,
    /// The next hop the protocol chose.
    pub to: NodeId,
    /// Seal a plaintext with this node's own key.
    pub seal: SealOwn<'a>,
}

impl RelayFaults {
    pub fn set_capture(&self, on: bool) {
        self.capture.store(on, Relaxed);
    }

    pub fn set_forge(&self, on: bool, what: ForgeWhat) {
        *self.forging.lock().expect("forge lock") = what;
        self.forge.store(on, Relaxed);
    }

    /// Apply the relay faults that are on to a packet this node is about to forward as `hop`
    /// says: capture its payload as it arrived, then forge it one of the ways that are on, in
    /// turn. Returns how it was forged, if it was.
    pub fn on_forward(&self, packet: &mut DataPacket, hop: &Forwarding) -> Option<Forgery> {
        if self.capture.load(Relaxed) {
            self.keep(packet);
        }
        if !self.forge.load(Relaxed) {
            return None;
        }
        let what = *self.forging.lock().expect("forge lock");
        let on: Vec<Forgery> = Forgery::ALL.into_iter().filter(|f| f.is_on(what)).collect();
        if on.is_empty() {
            return None;
        }
        let first = self.turn.fetch_add(1, Relaxed) as usize;
        let forgery = (0..on.len())
            .map(|i| on[(first + i) % on.len()])
            .find(|&f| self.apply(f, packet, hop))?;
        let counter = match forgery {
            Forgery::Payload => &self.forged_payload,
            Forgery::Header => &self.forged_header,
            Forgery::Source => &self.forged_source,
            Forgery::Attempt => &self.forged_attempt,
            // Counted when it is sent again.
            Forgery::Replay => return Some(forgery),
        };
        counter.fetch_add(1, Relaxed);
        self.forged.fetch_add(1, Relaxed);
        Some(forgery)
    }

    /// Forge `packet` as `forgery` says; false if that way does not apply to it (it is then
    /// unchanged).
    fn apply(&self, forgery: Forgery, packet: &mut DataPacket, hop: &Forwarding) -> bool {
        match forgery {
            Forgery::Payload => forge_payload(packet),
            Forgery::Header => forge_header(packet),
            Forgery::Source => forge_source(packet, hop),
            Forgery::Replay => self.keep_for_replay(hop.to, packet),
            Forgery::Attempt => forge_attempt(packet),
        }
    }

    /// The messages a flooding relay sends beside `packet`, on its route, to the same next hop
    /// (none unless the flood is on): see the module documentation. `now_us` is the relay's
    /// clock (an Init's time, so that it passes the destination's cheap checks).
    pub fn flood(&self, packet: &DataPacket, now_us: u64) -> Vec<DataPacket> {
        if !self.forge.load(Relaxed) || !self.forging.lock().expect("forge lock").flood {
            return Vec::new();
        }
        let Some(src) = packet.route.src() else {
            return Vec::new();
        };
        let session = match Sealed::from_bytes(&packet.message.payload) {
            Some(Sealed::Data(d)) if packet.message.sealed => Some((d.sealer, d.session)),
            _ => None,
        };
        let mut out = Vec::with_capacity(FLOOD_PER_PACKET);
        for i in 0..FLOOD_PER_PACKET {
            let draw = self.flood_draws.fetch_add(1, Relaxed);
            // Distinct bytes per message: a splitmix64 step of the draw.
            let mut z = draw.wrapping_add(0x9e37_79b9_7f4a_7c15);
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            let noise = z ^ (z >> 31);
            let sealed = match (i % 3, session) {
                (0, _) => Sealed::Init(Init {
                    sealer: src,
                    ts_us: now_us + i as u64,
                    enc: {
                        let mut enc = [0u8; 32];
                        for (j, chunk) in enc.chunks_mut(8).enumerate() {
                            chunk.copy_from_slice(&noise.rotate_left(j as u32 * 8).to_le_bytes());
                        }
                        enc
                    },
                    ciphertext: noise.to_le_bytes().repeat(6),
                }),
                (1, Some((sealer, session))) => Sealed::Data(SealedData {
                    sealer,
                    session,
                    nonce: noise,
                    sealed_at_us: now_us,
                    ciphertext: masked(
                        &packet.message.payload[..packet.message.payload.len().min(64)],
                    )
                    .into_iter()
                    .chain([0x5a; 16])
                    .collect(),
                }),
                _ => Sealed::Data(SealedData {
                    sealer: src,
                    session: noise,
                    nonce: 0,
                    sealed_at_us: now_us,
                    ciphertext: vec![0x5a; 32],
                }),
            };
            let mut extra = packet.clone();
            extra.message.sealed = true;
            extra.message.payload = sealed.to_bytes();
            set_checksum(&mut extra);
            out.push(extra);
        }
        self.flooded.fetch_add(out.len() as u64, Relaxed);
        out
    }

    /// Keep a copy of `packet`, about to go to `to`, to send again [`REPLAY_AFTER`] from now;
    /// false if the replays kept are at their bound, or it is a handshake message.
    fn keep_for_replay(&self, to: NodeId, packet: &DataPacket) -> bool {
        if packet.message.sealed && Sealed::is_handshake(&packet.message.payload) {
            // Sets only (see `forge_payload`); a handshake's copy sent again is a copy the
            // destination took already (the seal's unit tests replay each).
            return false;
        }
        let mut replays = self.replays.lock().expect("replay lock");
        let bytes = packet.message.payload.len();
        if replays.queue.len() >= REPLAY_LIMIT || replays.bytes + bytes > REPLAY_LIMIT_BYTES {
            return false;
        }
        replays.bytes += bytes;
        replays.queue.push_back(Replay {
            due: Instant::now() + REPLAY_AFTER,
            to,
            packet: packet.clone(),
        });
        drop(replays);
        self.replay_kept.notify_one();
        true
    }

    /// The replays due at `now` (each with the next hop it goes to), taken out, and when the
    /// next one is due.
    pub fn due_replays(&self, now: Instant) -> (Vec<(NodeId, DataPacket)>, Option<Instant>) {
        let mut replays = self.replays.lock().expect("replay lock");
        let mut due = Vec::new();
        while replays.queue.front().is_some_and(|r| r.due <= now) {
            let r = replays.queue.pop_front().expect("just seen");
            replays.bytes -= r.packet.message.payload.len();
            due.push((r.to, r.packet));
        }
        (due, replays.queue.front().map(|r| r.due))
    }

    /// Resolves once a packet was kept for a replay since the last time it resolved.
    pub async fn replay_kept(&self) {
        self.replay_kept.notified().await;
    }

    /// Count a packet sent again.
    pub fn replayed(&self) {
        self.replayed.fetch_add(1, Relaxed);
    }

    fn keep(&self, packet: &DataPacket) {
        let (Some(src), Some(dst)) = (packet.route.src(), packet.route.dst()) else {
            return;
        };
        let message = &packet.message;
        let mut captures = self.captures.lock().expect("capture lock");
        let capture_index = captures.next_index;
        captures.next_index += 1;
        captures.bytes += message.payload.len();
        captures.entries.push_back(Captured {
            capture_index,
            src,
            dst,
            seq: message.seq,
            sent_at_us: message.sent_at_us,
            index: packet.route.index(),
            payload: message.payload.clone(),
        });
        while captures.bytes > CAPTURE_LIMIT_BYTES {
            let Some(old) = captures.entries.pop_front() else {
                break;
            };
            captures.bytes -= old.payload.len();
        }
        self.captured.fetch_add(1, Relaxed);
    }

    /// Up to `max` captures with a capture index of at least `after`, together at most
    /// [`ANSWER_LIMIT_BYTES`] of payload (but at least one), and the index to ask for next.
    pub fn since(&self, after: u64, max: usize) -> (Vec<Captured>, u64) {
        let captures = self.captures.lock().expect("capture lock");
        let oldest = captures.next_index - captures.entries.len() as u64;
        let start = after
            .saturating_sub(oldest)
            .min(captures.entries.len() as u64) as usize;
        let mut bytes = 0;
        let entries: Vec<Captured> = captures
            .entries
            .range(start..)
            .take(max)
            .take_while(|c| {
                bytes += c.payload.len();
                bytes <= ANSWER_LIMIT_BYTES || bytes == c.payload.len()
            })
            .cloned()
            .collect();
        let next = entries
            .last()
            .map_or(after.clamp(oldest, captures.next_index), |c| {
                c.capture_index + 1
            });
        (entries, next)
    }
}

/// Rewrite the payload of `packet` as a forging relay does and recompute its checksum, so that
/// the checksum holds for the forged payload. A plain copy has every byte changed, a sealed
/// message its ciphertext. A piece of a delivery mode stays a well-formed piece: its data is
/// changed and, where the piece carries the fingerprints of the set's shards, its own
/// fingerprint is made to match, so that only the agreement of the true pieces can tell it.
/// False for a clear acknowledgement or a handshake message, which pass unchanged.
pub fn forge_payload(packet: &mut DataPacket) -> bool {
    let message = &mut packet.message;
    if message.sealed && Sealed::is_handshake(&message.payload) {
        // A handshake travels on every path and is taken from the first copy that opens: a
        // forged copy is refused like a flooded one (the unit tests of the seal rewrite every
        // byte of each). The forgeries here are of sets.
        return false;
    }
    if message.sealed {
        // The relay cannot read a sealed payload: it rewrites the ciphertext.
        if let Some(mut sealed) = Sealed::from_bytes(&message.payload) {
            mask(sealed.ciphertext_mut());
            message.payload = sealed.to_bytes();
        } else {
            mask(&mut message.payload);
        }
    } else if message.enveloped {
        match Envelope::from_bytes(&message.payload) {
            Ok(Envelope::Piece(mut piece)) => {
                mask(&mut piece.data);
                let own = usize::from(piece.index);
                if let Some(fingerprint) = piece.fingerprints.get_mut(own) {
                    let digest = ring::digest::digest(&ring::digest::SHA256, &piece.data);
                    fingerprint.copy_from_slice(digest.as_ref());
                }
                message.payload = Envelope::Piece(piece).to_bytes();
            }
            Ok(Envelope::Ack { .. }) | Err(_) => return false,
        }
    } else {
        mask(&mut message.payload);
    }
    set_checksum(packet);
    true
}

/// Rewrite the clear fields of `packet` that the destination acts on, and recompute its
/// checksum:
/// * a clear piece of a delivery mode other than copies: downgraded to a [`DOWNGRADED`] copy
///   whose data is a forged payload (its data masked; the length adjusted, k and index kept, so
///   that it is well formed for the path it travels);
/// * a clear copy, or a clear piece of copies: another sequence id and send time (a set its
///   source never sent) and its payload masked;
/// * a sealed message: another sequence id and send time, which its seal binds.
///
/// False for a clear acknowledgement or a handshake message, which pass unchanged.
pub fn forge_header(packet: &mut DataPacket) -> bool {
    let message = &mut packet.message;
    if message.sealed && Sealed::is_handshake(&message.payload) {
        // See `forge_payload`: sets only.
        return false;
    }
    let rename = |seq: &mut u64, sent_at_us: &mut u64| {
        *seq ^= FORGED_SEQ_MASK;
        *sent_at_us = sent_at_us.wrapping_add(FORGED_SENT_AT_SHIFT_US);
    };
    if message.sealed {
        rename(&mut message.seq, &mut message.sent_at_us);
    } else if message.enveloped {
        let Ok(Envelope::Piece(piece)) = Envelope::from_bytes(&message.payload) else {
            return false;
        };
        let piece = if piece.mode.scheme == Scheme::Copies {
            // Nothing weaker to turn it into: a made-up set of the source's.
            rename(&mut message.seq, &mut message.sent_at_us);
            Piece {
                data: masked(&piece.data),
                ..piece
            }
        } else {
            downgrade(piece)
        };
        message.payload = Envelope::Piece(piece).to_bytes();
    } else {
        rename(&mut message.seq, &mut message.sent_at_us);
        mask(&mut message.payload);
    }
    set_checksum(packet);
    true
}

/// `piece` as a [`DOWNGRADED`] copy of a forged payload (its data masked), of the same k and
/// index: one such piece completes a set alone.
pub fn downgrade(piece: Piece) -> Piece {
    let data = masked(&piece.data);
    Piece {
        mode: DOWNGRADED,
        k: piece.k,
        index: piece.index,
        len: data.len() as u32,
        data,
        fingerprints: Vec::new(),
    }
}

/// Set the attempt number of `packet` to `u32::MAX` and recompute its checksum. False, and
/// `packet` unchanged, if it is already.
pub fn forge_attempt(packet: &mut DataPacket) -> bool {
    if packet.message.attempt == u32::MAX {
        return false;
    }
    packet.message.attempt = u32::MAX;
    set_checksum(packet);
    true
}

/// Claim another node as the source of `packet` and recompute its checksum: the first node
/// [`claimable_source`] finds. A sealed message gets a payload of the relay's making, sealed
/// with the relay's own key in the claimed node's name (the relay cannot open the true one).
/// False, and `packet` unchanged, if no node can be claimed or the relay cannot seal.
pub fn forge_source(packet: &mut DataPacket, hop: &Forwarding) -> bool {
    let Some(dst) = packet.route.dst() else {
        return false;
    };
    let Some(claimed) = claimable_source(hop.topology, hop.me, hop.to, &packet.route) else {
        return false;
    };
    let message = &mut packet.message;
    if message.sealed {
        let index = packet.route.index();
        let text = format!("made up by relay {}", hop.me).into_bytes();
        let plaintext = if message.enveloped {
            Envelope::Piece(Piece {
                mode: DOWNGRADED,
                k: packet.route.copies(hop.topology).min(255) as u8,
                index,
                len: text.len() as u32,
                data: text,
                fingerprints: Vec::new(),
            })
            .to_bytes()
        } else {
            text
        };
        let bound = message.bound(claimed, dst, index);
        let Some(sealed) = (hop.seal)(&bound, &plaintext) else {
            return false;
        };
        message.payload = sealed;
    }
    set_source(&mut packet.route, claimed);
    set_checksum(packet);
    true
}

/// Another node that a relay at `me`, about to send `route` (advanced past `me`) to `to`, can
/// claim as its source: with it the packet still passes every check of every node on the rest
/// of its way (walked with [`hop`], the rule every node applies: a guarded header's source
/// takes part in its index and budget checks, a source route's first node is checked only by
/// the second) and reaches the destination as a set of as many copies. The true source's
/// neighbours are tried first, then the relay's, then the destination's, then the first
/// [`CLAIM_SEARCH`] nodes by id; `None` if none passes (on every pair of Q_3, Q_4, EH(1,2)
/// and EH(2,2), at every relay of every path, one does: the unit tests walk them all).
pub fn claimable_source(
    topology: Topology,
    me: NodeId,
    to: NodeId,
    route: &Route,
) -> Option<NodeId> {
    let (src, dst) = (route.src()?, route.dst()?);
    let copies = route.copies(topology);
    topology
        .neighbours(src)
        .chain(topology.neighbours(me))
        .chain(topology.neighbours(dst))
        .chain(topology.nodes().take(CLAIM_SEARCH))
        .filter(|&c| c != src && c != dst && c != me)
        .find(|&c| {
            let mut claimed = route.clone();
            set_source(&mut claimed, c);
            claimed.copies(topology) == copies && reaches(topology, me, to, claimed, dst)
        })
}

/// Whether a packet on `route`, sent by `from` to `at`, is delivered at `dst` by the hop rule.
fn reaches(
    topology: Topology,
    mut from: NodeId,
    mut at: NodeId,
    route: Route,
    dst: NodeId,
) -> bool {
    let bound = flush_bound(topology, route.kind()) + 1;
    let mut packet = Packet { route, message: () };
    for _ in 0..=bound {
        match hop(topology, at, packet, from) {
            Action::Deliver(_) => return at == dst,
            Action::Forward { to, packet: next } => {
                (from, at, packet) = (at, to, next);
            }
            Action::Drop { .. } => return false,
        }
    }
    false
}

fn set_source(route: &mut Route, src: NodeId) {
    match route {
        Route::Guarded(header) => header.src = src,
        Route::Source(r) => {
            if let Some(first) = r.path.first_mut() {
                *first = src;
            }
        }
    }
}

fn mask(bytes: &mut [u8]) {
    for byte in bytes {
        *byte ^= FORGERY_MASK;
    }
}

fn masked(bytes: &[u8]) -> Vec<u8> {
    let mut bytes = bytes.to_vec();
    mask(&mut bytes);
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuberoute_protocol::delivery::{
        Inbox, InboxLimits, Received, SetKey, Shape, is_well_formed, pieces,
    };
    use cuberoute_protocol::seal::keys::{PublicKey, SecretKey};
    use cuberoute_protocol::seal::session::{
        Directory, OpenError, Opened, SessionLimits, Sessions,
    };
    use cuberoute_protocol::wire::message::Message;
    use cuberoute_protocol::wire::packet::is_intact;
    use cuberoute_protocol::{Process, SendRequest};
    use std::collections::BTreeMap;

    const NOW: u64 = 10_000_000;

    struct Keys(BTreeMap<NodeId, PublicKey>);

    impl Directory for Keys {
        fn public_key(&self, node: NodeId) -> Option<PublicKey> {
            self.0.get(&node).copied()
        }
    }

    fn secret(id: NodeId) -> SecretKey {
        SecretKey::from_seed([id.0 as u8 + 1; 32])
    }

    fn keys(topology: Topology) -> Keys {
        Keys(
            topology
                .nodes()
                .map(|v| (v, secret(v).public_key()))
                .collect(),
        )
    }

    fn no_seal(_: &Bound, _: &[u8]) -> Option<Vec<u8>> {
        None
    }

    /// Copy `index` of a set from `src` to `dst` carrying `message`, as each relay on its path
    /// holds it after its hop: (the packet, the relay, the next hop), from the first relay on.
    fn at_relays(
        topology: Topology,
        (src, dst): (u64, u64),
        index: usize,
        message: Message,
    ) -> Vec<(DataPacket, NodeId, NodeId)> {
        let (src, dst) = (NodeId(src), NodeId(dst));
        let routes = SendRequest::to(dst).routes(topology, src).unwrap();
        let copies = vec![message; routes.k()];
        let (first, mut packet) = Process::new(topology, src)
            .start(&routes, copies)
            .into_iter()
            .nth(index)
            .unwrap();
        set_checksum(&mut packet);
        let mut relays = Vec::new();
        let (mut from, mut at) = (src, first);
        while at != dst {
            let Action::Forward { to, packet: next } = hop(topology, at, packet, from) else {
                panic!("a true packet is forwarded");
            };
            relays.push((next.clone(), at, to));
            (from, at, packet) = (at, to, next);
        }
        relays
    }

    /// The packet delivered at the destination when `relay` sends `packet` on to `to`.
    fn deliver(topology: Topology, packet: DataPacket, relay: NodeId, to: NodeId) -> DataPacket {
        let (mut from, mut at, mut packet) = (relay, to, packet);
        loop {
            match hop(topology, at, packet, from) {
                Action::Deliver(p) => {
                    assert_eq!(Some(at), p.route.dst());
                    return p;
                }
                Action::Forward { to, packet: next } => (from, at, packet) = (at, to, next),
                Action::Drop { reason, .. } => panic!("dropped at {at}: {reason:?}"),
            }
        }
    }

    fn copy(payload: &[u8]) -> Message {
        Message::new(NodeId(0), 1, false, 5, false, payload.to_vec())
    }

    fn q3() -> Topology {
        "q:3".parse().unwrap()
    }

    fn packet(payload: &[u8]) -> DataPacket {
        at_relays(q3(), (0, 7), 0, copy(payload)).remove(0).0
    }

    /// A clear acknowledgement (of set 3 of node 7) at the first relay of its path.
    fn clear_ack_at_relay() -> DataPacket {
        let ack = Envelope::Ack {
            set: SetKey {
                src: NodeId(7),
                seq: 3,
                sent_at_us: 4,
            },
            shape: Shape {
                mode: "reliable".parse().unwrap(),
                k: 3,
                len: 1,
            },
        };
        at_relays(q3(), (0, 7), 0, copy(&ack.to_bytes()).enveloped())
            .remove(0)
            .0
    }

    /// Every node's sessions, made between two nodes when one first seals to the other.
    struct World {
        dir: Keys,
        nodes: Mutex<BTreeMap<NodeId, Sessions>>,
    }

    impl World {
        fn new(topology: Topology) -> World {
            World {
                dir: keys(topology),
                nodes: Mutex::new(
                    topology
                        .nodes()
                        .map(|v| (v, Sessions::new(v, secret(v), 0, SessionLimits::default())))
                        .collect(),
                ),
            }
        }

        /// Seal `plaintext` for `bound` in `sealer`'s name, as its daemon does (a handshake
        /// with the destination first, carried whole, if they have no session).
        fn seal(&self, sealer: NodeId, bound: &Bound, plaintext: &[u8]) -> Vec<u8> {
            let mut nodes = self.nodes.lock().unwrap();
            let dst = bound.dst;
            if !nodes[&sealer].can_seal(dst, NOW) {
                let init = nodes
                    .get_mut(&sealer)
                    .unwrap()
                    .start(&self.dir, dst, NOW, [2; 32]);
                let init = init.unwrap().unwrap();
                let at = |src: NodeId, dst: NodeId| Bound { src, dst, ..*bound };
                let Ok(Opened::Answer { resp, .. }) = nodes.get_mut(&dst).unwrap().open(
                    &self.dir,
                    &at(sealer, dst),
                    NOW,
                    &init.bytes,
                    || [3; 32],
                ) else {
                    panic!("answered")
                };
                let established = nodes.get_mut(&sealer).unwrap().open(
                    &self.dir,
                    &at(dst, sealer),
                    NOW,
                    &resp,
                    || [4; 32],
                );
                assert_eq!(established, Ok(Opened::Established(dst)));
            }
            nodes
                .get_mut(&sealer)
                .unwrap()
                .seal(bound, NOW, plaintext)
                .unwrap()
                .bytes
        }

        /// Seal the message of a packet at its source, as the daemon does.
        fn seal_at_source(&self, packet: &mut DataPacket) {
            let (src, dst) = (packet.route.src().unwrap(), packet.route.dst().unwrap());
            let message = &mut packet.message;
            message.sealed = true;
            let bound = message.bound(src, dst, packet.route.index());
            message.payload = self.seal(src, &bound, &message.payload);
            set_checksum(packet);
        }

        /// Open a delivered packet's seal at its destination, as the daemon does.
        fn open(&self, packet: &DataPacket) -> Result<Vec<u8>, OpenError> {
            let dst = packet.route.dst().unwrap();
            let bound =
                packet
                    .message
                    .bound(packet.route.src().unwrap(), dst, packet.route.index());
            let mut nodes = self.nodes.lock().unwrap();
            match nodes.get_mut(&dst).unwrap().open(
                &self.dir,
                &bound,
                NOW,
                &packet.message.payload,
                || [5; 32],
            )? {
                Opened::Payload(p) => Ok(p),
                other => panic!("not a message: {other:?}"),
            }
        }
    }

    /// The relay `relay` of Q_3 forwarding to `to`, sealing with `seal`.
    fn forwarding<'a>(relay: NodeId, to: NodeId, seal: SealOwn<'a>) -> Forwarding<'a> {
        Forwarding {
            topology: q3(),
            me: relay,
            to,
            seal,
        }
    }

    #[test]
    fn a_forged_packet_passes_the_checksum_with_another_payload() {
        let faults = RelayFaults::default();
        let (mut p, relay, to) = at_relays(q3(), (0, 7), 0, copy(b"pay me 10")).remove(0);
        let hop = forwarding(relay, to, &no_seal);
        assert_eq!(faults.on_forward(&mut p, &hop), None);
        faults.set_forge(true, ForgeWhat::PAYLOAD);
        assert_eq!(faults.on_forward(&mut p, &hop), Some(Forgery::Payload));
        assert_ne!(p.message.payload, b"pay me 10");
        assert!(is_intact(&p));
        assert_eq!(faults.forged.load(Relaxed), 1);
        assert_eq!(faults.forged_payload.load(Relaxed), 1);
        let delivered = deliver(q3(), p, relay, to);
        assert_eq!(delivered.message.payload, masked(b"pay me 10"));
    }

    #[test]
    fn a_forged_piece_stays_well_formed_with_its_own_fingerprint_matching() {
        let mode = "byzantine:1+code:1".parse().unwrap();
        let piece = pieces(mode, 3, b"a coded payload", [0; 32])
            .unwrap()
            .remove(1);
        let mut p = packet(b"");
        p.message = p.message.clone().enveloped();
        p.message.payload = Envelope::Piece(piece.clone()).to_bytes();
        assert!(forge_payload(&mut p));
        assert!(is_intact(&p));
        let Ok(Envelope::Piece(forged)) = Envelope::from_bytes(&p.message.payload) else {
            panic!("still a piece");
        };
        assert!(is_well_formed(&forged));
        assert_ne!(forged.data, piece.data);
        let digest = ring::digest::digest(&ring::digest::SHA256, &forged.data);
        assert_eq!(&forged.fingerprints[1][..], digest.as_ref());
        assert_eq!(forged.fingerprints[0], piece.fingerprints[0]);
    }

    /// The header forgery of a clear piece: a reliable copy of a forged payload, well formed
    /// for its path, that completes a set of another shape alone at the destination; the true
    /// set, from the true pieces, completes beside it with the true payload.
    #[test]
    fn a_header_forgery_downgrades_a_clear_piece_to_a_copy_that_completes_alone() {
        let mode: Mode = "byzantine:1".parse().unwrap();
        let payload = b"pay 10 to alice";
        let true_pieces = pieces(mode, 3, payload, [0; 32]).unwrap();
        let enveloped = |piece: &Piece| {
            let mut m = copy(&Envelope::Piece(piece.clone()).to_bytes()).enveloped();
            m.seq = 9;
            m
        };
        let (mut p, relay, to) = at_relays(q3(), (0, 7), 1, enveloped(&true_pieces[1])).remove(0);
        assert!(forge_header(&mut p));
        assert!(is_intact(&p));
        let delivered = deliver(q3(), p, relay, to);
        assert_eq!(
            (delivered.message.seq, delivered.message.sent_at_us),
            (9, 5)
        );
        let Ok(Envelope::Piece(forged)) = Envelope::from_bytes(&delivered.message.payload) else {
            panic!("still a piece");
        };
        assert_eq!(forged.mode, DOWNGRADED);
        assert_eq!((forged.k, forged.index), (3, 1));
        assert_eq!(forged.len as usize, forged.data.len());
        assert_eq!(forged.data, masked(payload));
        assert!(is_well_formed(&forged));
        let set = SetKey {
            src: NodeId(0),
            seq: 9,
            sent_at_us: 5,
        };
        let mut inbox = Inbox::new(InboxLimits::default());
        let Received::Complete {
            payload: made_up, ..
        } = inbox.receive(NOW, set, 1, forged)
        else {
            panic!("one downgraded piece completes a set alone");
        };
        assert_eq!(made_up, masked(payload));
        assert_eq!(
            inbox.receive(NOW, set, 0, true_pieces[0].clone()),
            Received::Pending
        );
        let Received::Complete {
            payload: true_one, ..
        } = inbox.receive(NOW, set, 2, true_pieces[2].clone())
        else {
            panic!("the true set completes beside it");
        };
        assert_eq!(true_one, payload);
    }

    #[test]
    fn a_header_forgery_renames_a_clear_copy_and_breaks_a_seal() {
        let (mut p, relay, to) = at_relays(q3(), (0, 7), 2, copy(b"pay 10")).remove(0);
        let mut sealed = p.clone();
        assert!(forge_header(&mut p));
        assert!(is_intact(&p));
        assert_eq!(p.message.seq, 1 ^ FORGED_SEQ_MASK);
        assert_eq!(p.message.sent_at_us, 5 + FORGED_SENT_AT_SHIFT_US);
        assert_eq!(p.message.payload, masked(b"pay 10"));

        let world = World::new(q3());
        world.seal_at_source(&mut sealed);
        let true_one = sealed.clone();
        assert!(forge_header(&mut sealed));
        let delivered = deliver(q3(), sealed, relay, to);
        assert!(is_intact(&delivered), "the checksum holds");
        assert_eq!(world.open(&delivered), Err(OpenError::Broken));
        assert_eq!(
            world.open(&deliver(q3(), true_one, relay, to)).unwrap(),
            b"pay 10"
        );

        // A clear acknowledgement passes the payload and header forgers unchanged.
        let mut a = clear_ack_at_relay();
        let before = a.clone();
        assert!(!forge_header(&mut a));
        assert!(!forge_payload(&mut a));
        assert_eq!(a, before);
    }

    /// On every pair of Q_3, Q_4, EH(1,2) and EH(2,2), every path, every relay on it: another
    /// node can be claimed as the source of a guarded packet, and the packet still arrives,
    /// intact, from that node.
    #[test]
    fn a_source_forgery_claims_another_node_and_still_arrives() {
        for topology in ["q:3", "q:4", "eh:1,2", "eh:2,2"] {
            let topology: Topology = topology.parse().unwrap();
            for (src, dst) in topology
                .nodes()
                .flat_map(|s| topology.nodes().map(move |d| (s.0, d.0)))
                .filter(|(s, d)| s != d)
            {
                let k = topology.local_connectivity(NodeId(src), NodeId(dst)) as usize;
                for index in 0..k {
                    for (mut p, relay, to) in at_relays(topology, (src, dst), index, copy(b"x")) {
                        let hop = Forwarding {
                            topology,
                            me: relay,
                            to,
                            seal: &no_seal,
                        };
                        assert!(
                            forge_source(&mut p, &hop),
                            "{topology} {src}->{dst} #{index} at {relay}"
                        );
                        let claimed = p.route.src().unwrap();
                        assert!(![src, dst, relay.0].contains(&claimed.0));
                        assert!(is_intact(&p));
                        let delivered = deliver(topology, p, relay, to);
                        assert_eq!(delivered.route.src(), Some(claimed));
                        assert_eq!(delivered.message.payload, b"x");
                    }
                }
            }
        }
    }

    /// On a source-routed family (HHC), the route's first node is claimed: no later hop checks
    /// it, the checksum is recomputed over the new route.
    #[test]
    fn a_source_forgery_rewrites_a_source_route() {
        let hhc: Topology = "hhc:2".parse().unwrap();
        for (src, dst) in [(0, 63), (5, 40), (17, 2)] {
            for (mut p, relay, to) in at_relays(hhc, (src, dst), 0, copy(b"y")) {
                assert!(matches!(p.route, Route::Source(_)));
                let hop = Forwarding {
                    topology: hhc,
                    me: relay,
                    to,
                    seal: &no_seal,
                };
                assert!(forge_source(&mut p, &hop));
                let claimed = p.route.src().unwrap();
                assert_ne!(claimed, NodeId(src));
                assert!(is_intact(&p));
                assert_eq!(deliver(hhc, p, relay, to).route.src(), Some(claimed));
            }
        }
    }

    /// A sealed message cannot be opened by the relay: it seals one of its own making with its
    /// own key, in the claimed node's name, and the destination names the relay as the forger.
    #[test]
    fn a_sealed_source_forgery_is_sealed_by_the_relay_and_caught() {
        let world = World::new(q3());
        for enveloped in [false, true] {
            let mut message = copy(b"pay 10");
            if enveloped {
                message = message.enveloped();
            }
            let (mut p, relay, to) = at_relays(q3(), (0, 7), 1, message).remove(0);
            world.seal_at_source(&mut p);
            let seal = |bound: &Bound, plaintext: &[u8]| Some(world.seal(relay, bound, plaintext));
            let hop = forwarding(relay, to, &seal);
            assert!(forge_source(&mut p, &hop));
            assert_ne!(p.route.src(), Some(NodeId(0)));
            let delivered = deliver(q3(), p, relay, to);
            assert!(is_intact(&delivered));
            assert_eq!(
                world.open(&delivered),
                Err(OpenError::ForgedSource { sealer: relay })
            );
        }
        // Without a session to seal with, the packet is left alone.
        let (mut p, relay, to) = at_relays(q3(), (0, 7), 1, copy(b"z")).remove(0);
        world.seal_at_source(&mut p);
        let before = p.clone();
        assert!(!forge_source(&mut p, &forwarding(relay, to, &no_seal)));
        assert_eq!(p, before);
    }

    #[test]
    fn a_replay_is_the_packet_unchanged_a_second_later_and_bounded() {
        let faults = RelayFaults::default();
        faults.set_forge(
            true,
            ForgeWhat {
                replay: true,
                ..ForgeWhat::default()
            },
        );
        let (mut p, relay, to) = at_relays(q3(), (0, 7), 0, copy(b"again")).remove(0);
        let before = p.clone();
        let hop = forwarding(relay, to, &no_seal);
        let now = Instant::now();
        assert_eq!(faults.on_forward(&mut p, &hop), Some(Forgery::Replay));
        assert_eq!(p, before, "forwarded unchanged");
        let (due, next) = faults.due_replays(now);
        assert!(due.is_empty());
        let next = next.expect("one kept");
        assert!(next >= now + REPLAY_AFTER);
        let (due, next) = faults.due_replays(next);
        assert_eq!(due, vec![(to, before.clone())]);
        assert_eq!(next, None);
        assert_eq!(faults.forged.load(Relaxed), 0, "a replay rewrites nothing");
        faults.replayed();
        assert_eq!(faults.replayed.load(Relaxed), 1);
        // Bounded: beyond REPLAY_LIMIT packets waiting, none is chosen.
        for _ in 0..REPLAY_LIMIT {
            assert_eq!(
                faults.on_forward(&mut before.clone(), &hop),
                Some(Forgery::Replay)
            );
        }
        assert_eq!(faults.on_forward(&mut before.clone(), &hop), None);
    }

    #[test]
    fn an_attempt_forgery_sets_the_largest_and_passes_the_checksum() {
        let (mut p, _, _) = at_relays(q3(), (0, 7), 0, copy(b"again")).remove(0);
        assert_eq!(p.message.attempt, 1);
        assert!(forge_attempt(&mut p));
        assert_eq!(p.message.attempt, u32::MAX);
        assert!(is_intact(&p), "the checksum was recomputed");
        assert!(!forge_attempt(&mut p), "already the largest");
    }

    #[test]
    fn several_forgeries_take_turns() {
        let faults = RelayFaults::default();
        faults.set_forge(true, ForgeWhat::ALL);
        let (p, relay, to) = at_relays(q3(), (0, 7), 0, copy(b"turns")).remove(0);
        let hop = forwarding(relay, to, &no_seal);
        let done: Vec<_> = (0..10)
            .map(|_| faults.on_forward(&mut p.clone(), &hop))
            .collect();
        assert_eq!(
            done,
            [Forgery::ALL, Forgery::ALL]
                .concat()
                .into_iter()
                .map(Some)
                .collect::<Vec<_>>()
        );
        assert_eq!(faults.forged.load(Relaxed), 8);
        for counter in [
            &faults.forged_payload,
            &faults.forged_header,
            &faults.forged_source,
            &faults.forged_attempt,
        ] {
            assert_eq!(counter.load(Relaxed), 2);
        }
        // A way that does not apply passes its turn on: a clear acknowledgement is neither
        // payload- nor header-forged, so its source is.
        let mut a = clear_ack_at_relay();
        assert_eq!(faults.on_forward(&mut a, &hop), Some(Forgery::Source));
    }

    /// `on_forward` at the first relay of a packet, with no key to seal with.
    fn on_forward_plain(faults: &RelayFaults, p: &mut DataPacket) -> Option<Forgery> {
        faults.on_forward(p, &forwarding(NodeId(1), NodeId(3), &no_seal))
    }

    #[test]
    fn captures_are_kept_in_order_and_read_from_an_index() {
        let faults = RelayFaults::default();
        faults.set_capture(true);
        for i in 0..5u8 {
            on_forward_plain(&faults, &mut packet(&[i; 4]));
        }
        let (entries, next) = faults.since(0, 2);
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[1].payload, vec![1; 4]);
        assert_eq!(next, 2);
        let (entries, next) = faults.since(next, 10);
        assert_eq!(entries.len(), 3);
        assert_eq!(next, 5);
        assert_eq!(faults.since(99, 10), (vec![], 5));
        faults.set_capture(false);
        on_forward_plain(&faults, &mut packet(b"x"));
        assert_eq!(faults.captured.load(Relaxed), 5);
    }

    #[test]
    fn captures_stay_under_their_byte_limit() {
        let faults = RelayFaults::default();
        faults.set_capture(true);
        let big = vec![1u8; CAPTURE_LIMIT_BYTES / 3 + 1];
        for _ in 0..4 {
            on_forward_plain(&faults, &mut packet(&big));
        }
        // Two are kept; each answer carries one, as each is over the answer limit.
        let (entries, next) = faults.since(0, 100);
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].capture_index, 2);
        assert_eq!(next, 3);
        let (entries, next) = faults.since(next, 100);
        assert_eq!((entries.len(), next), (1, 4));
    }

    #[test]
    fn an_answer_stays_under_its_byte_limit() {
        let faults = RelayFaults::default();
        faults.set_capture(true);
        for _ in 0..40 {
            on_forward_plain(&faults, &mut packet(&[7u8; 64 << 10]));
        }
        let (entries, next) = faults.since(0, 1024);
        assert_eq!(entries.len(), ANSWER_LIMIT_BYTES / (64 << 10));
        assert_eq!(next, entries.len() as u64);
    }
}
