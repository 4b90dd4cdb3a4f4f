//! Pair keys: the sender's [`Sealer`] (one HPKE context per destination, each message one AEAD)
//! and the receiver's [`Opener`] (the same keys derived from what messages carry, cached, with a
//! replay window per pair).

use super::keys::{NodeKem, PublicKey, SecretKey};
use super::replay::ReplayWindow;
use super::sealed::{Bound, SealError, Sealed, TAG_LEN, associated_data};
use crate::NodeId;
use hpke::aead::ChaCha20Poly1305;
use hpke::kdf::HkdfSha256;
use hpke::{Deserializable, Kem, OpModeR, OpModeS, Serializable};
use rand_chacha::ChaCha20Rng;
use rand_chacha::rand_core::SeedableRng;
use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, Nonce, UnboundKey};
use std::collections::HashMap;

/// Where a node finds the public key bound to another node's id.
pub trait Directory {
    fn public_key(&self, node: NodeId) -> Option<PublicKey>;
}

/// HPKE's `info` for the pair (sealer, receiver): the pair's key is theirs alone.
fn info(sealer: NodeId, receiver: NodeId) -> [u8; 32] {
    let mut info = [0; 32];
    info[..16].copy_from_slice(b"cuberoute seal 1");
    info[16..24].copy_from_slice(&sealer.0.to_le_bytes());
    info[24..].copy_from_slice(&receiver.0.to_le_bytes());
    info
}

/// What the pair key is exported as from the HPKE context.
const EXPORT_CONTEXT: &[u8] = b"cuberoute pair key";

fn pair_key(exported: &[u8; 32]) -> LessSafeKey {
    LessSafeKey::new(UnboundKey::new(&CHACHA20_POLY1305, exported).expect("a 32-byte key"))
}

fn nonce(counter: u64) -> Nonce {
    let mut bytes = [0; 12];
    bytes[4..].copy_from_slice(&counter.to_le_bytes());
    Nonce::assume_unique_for_key(bytes)
}

struct SendPair {
    enc: [u8; 32],
    key: LessSafeKey,
    next_nonce: u64,
}

/// The sending side of a node's pairs.
pub struct Sealer {
    me: NodeId,
    secret: SecretKey,
    pairs: HashMap<NodeId, SendPair>,
    key_agreements: u64,
}

impl Sealer {
    pub fn new(me: NodeId, secret: SecretKey) -> Sealer {
        Sealer {
            me,
            secret,
            pairs: HashMap::new(),
            key_agreements: 0,
        }
    }

    /// Seal `plaintext` for `bound.dst`, binding `bound`: the bytes of a [`Sealed`]. The first
    /// message to a destination sets up the pair from `fresh()`, 32 random bytes.
    pub fn seal(
        &mut self,
        directory: &dyn Directory,
        bound: &Bound,
        sealed_at_us: u64,
        plaintext: &[u8],
        fresh: impl FnOnce() -> [u8; 32],
    ) -> Result<Vec<u8>, SealError> {
        let to = bound.dst;
        if !self.pairs.contains_key(&to) {
            let receiver = directory
                .public_key(to)
                .and_then(|k| k.to_kem().ok())
                .ok_or(SealError::UnknownNode(to))?;
            let mode = OpModeS::Auth((self.secret.kem_secret().clone(), self.secret.kem_public()));
            let mut rng = ChaCha20Rng::from_seed(fresh());
            self.key_agreements += 1;
            let (encapped, context) = hpke::setup_sender_with_rng::<
                ChaCha20Poly1305,
                HkdfSha256,
                NodeKem,
            >(&mode, &receiver, &info(self.me, to), &mut rng)
            .map_err(|_| SealError::UnknownNode(to))?;
            let mut exported = [0; 32];
            context
                .export(EXPORT_CONTEXT, &mut exported)
                .expect("32 bytes are within the exporter's limit");
            let mut enc = [0; 32];
            enc.copy_from_slice(&encapped.to_bytes());
            self.pairs.insert(
                to,
                SendPair {
                    enc,
                    key: pair_key(&exported),
                    next_nonce: 0,
                },
            );
        }
        let pair = self.pairs.get_mut(&to).expect("set up above");
        let counter = pair.next_nonce;
        pair.next_nonce += 1;
        let aad = associated_data(bound, self.me, sealed_at_us, counter);
        let sealed = Sealed::encode_in_place(
            self.me,
            pair.enc,
            counter,
            sealed_at_us,
            plaintext,
            |text| {
                let tag =
                    pair.key
                        .seal_in_place_separate_tag(nonce(counter), Aad::from(aad), text)?;
                let mut bytes = [0; TAG_LEN];
                bytes.copy_from_slice(tag.as_ref());
                Ok::<_, ring::error::Unspecified>(bytes)
            },
        );
        Ok(sealed.expect("ChaCha20-Poly1305 seals any length a frame holds"))
    }

    /// Whether a message to `to` would be sealed with a pair set up already: if not, sealing
    /// it sets one up, a key agreement (unless `to` has no key).
    pub fn has_pair(&self, to: NodeId) -> bool {
        self.pairs.contains_key(&to)
    }

    /// Key agreements run so far: HPKE sender setups, one per destination sealed to.
    pub fn key_agreements(&self) -> u64 {
        self.key_agreements
    }

    /// Destinations this node has a pair with.
    pub fn pairs(&self) -> usize {
        self.pairs.len()
    }
}

/// How much an [`Opener`] remembers, and which messages it takes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct OpenLimits {
    /// Pairs kept (the least recently used is forgotten beyond this).
    pub max_pairs: usize,
    /// A message sealed longer ago than this is refused as a replay.
    pub window_us: u64,
    /// How far a sealer's clock may be behind this node's for a message sealed just before
    /// this node started to be taken.
    pub skew_us: u64,
}

impl Default for OpenLimits {
    fn default() -> OpenLimits {
        OpenLimits {
            max_pairs: 4096,
            window_us: 300_000_000,
            skew_us: 1_000_000,
        }
    }
}

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
    #[error("the message was seen before, sealed before this node started, or sealed too long ago")]
    Replayed,
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
        }
    }
}

struct ReceivePair {
    key: LessSafeKey,
    window: ReplayWindow,
    used: u64,
}

/// The receiving side of a node's pairs.
pub struct Opener {
    me: NodeId,
    secret: SecretKey,
    /// This node's clock when it started: what was sealed before (less the skew) is refused,
    /// since a previous run of this node may have taken it.
    started_at_us: u64,
    limits: OpenLimits,
    pairs: HashMap<(NodeId, [u8; 32]), ReceivePair>,
    uses: u64,
    key_agreements: u64,
}

impl Opener {
    pub fn new(me: NodeId, secret: SecretKey, started_at_us: u64, limits: OpenLimits) -> Opener {
        Opener {
            me,
            secret,
            started_at_us,
            limits,
            pairs: HashMap::new(),
            uses: 0,
            key_agreements: 0,
        }
    }

    /// Open the sealed `payload` of a message whose clear fields are `bound`, at `now_us`:
    /// the plaintext, if the node named as its source sealed exactly this, for this node, once,
    /// within the window.
    pub fn open(
        &mut self,
        directory: &dyn Directory,
        bound: &Bound,
        now_us: u64,
        payload: &[u8],
    ) -> Result<Vec<u8>, OpenError> {
        let sealed = Sealed::from_bytes(payload).ok_or(OpenError::Malformed)?;
        if bound.dst != self.me {
            return Err(OpenError::Broken);
        }
        let sealer_key = directory
            .public_key(sealed.sealer)
            .ok_or(OpenError::UnknownSealer(sealed.sealer))?;
        // Cheap refusals first: an old message costs no key agreement.
        if now_us.saturating_sub(sealed.sealed_at_us) >= self.limits.window_us
            || sealed.sealed_at_us.saturating_add(self.limits.skew_us) < self.started_at_us
        {
            return Err(OpenError::Replayed);
        }
        let id = (sealed.sealer, sealed.enc);
        let aad = associated_data(bound, sealed.sealer, sealed.sealed_at_us, sealed.nonce);
        let mut text = sealed.ciphertext;
        let open = |key: &LessSafeKey, text: &mut Vec<u8>| {
            let len = key
                .open_in_place(nonce(sealed.nonce), Aad::from(aad), text)
                .map_err(|_| OpenError::Broken)?
                .len();
            text.truncate(len);
            Ok::<(), OpenError>(())
        };
        match self.pairs.get(&id) {
            Some(pair) => open(&pair.key, &mut text)?,
            None => {
                self.key_agreements += 1;
                let key = self.derive(sealed.sealer, sealer_key, &sealed.enc)?;
                open(&key, &mut text)?;
                // Authentic: only now is a new pair kept.
                self.keep(id, key);
            }
        }
        self.uses += 1;
        let pair = self.pairs.get_mut(&id).expect("kept above");
        pair.used = self.uses;
        if sealed.sealer != bound.src {
            return Err(OpenError::ForgedSource {
                sealer: sealed.sealer,
            });
        }
        if !pair.window.accept(sealed.nonce) {
            return Err(OpenError::Replayed);
        }
        Ok(text)
    }

    fn derive(
        &self,
        sealer: NodeId,
        sealer_key: PublicKey,
        enc: &[u8; 32],
    ) -> Result<LessSafeKey, OpenError> {
        let sealer_kem = sealer_key.to_kem().map_err(|_| OpenError::Broken)?;
        let encapped =
            <NodeKem as Kem>::EncappedKey::from_bytes(enc).map_err(|_| OpenError::Broken)?;
        let context = hpke::setup_receiver::<ChaCha20Poly1305, HkdfSha256, NodeKem>(
            &OpModeR::Auth(sealer_kem),
            self.secret.kem_secret(),
            &encapped,
            &info(sealer, self.me),
        )
        .map_err(|_| OpenError::Broken)?;
        let mut exported = [0; 32];
        context
            .export(EXPORT_CONTEXT, &mut exported)
            .expect("32 bytes are within the exporter's limit");
        Ok(pair_key(&exported))
    }

    fn keep(&mut self, id: (NodeId, [u8; 32]), key: LessSafeKey) {
        if self.pairs.len() >= self.limits.max_pairs
            && let Some(oldest) = self
                .pairs
                .iter()
                .min_by_key(|(_, p)| p.used)
                .map(|(id, _)| *id)
        {
            self.pairs.remove(&oldest);
        }
        self.pairs.insert(
            id,
            ReceivePair {
                key,
                window: ReplayWindow::default(),
                used: 0,
            },
        );
    }

    /// Whether opening `payload` surely needs no key agreement: it names a pair kept here, or
    /// its header does not even parse. If not, opening it derives the pair's key first, unless
    /// a cheaper check refuses it before.
    pub fn has_pair_for(&self, payload: &[u8]) -> bool {
        Sealed::pair_of(payload).is_none_or(|id| self.pairs.contains_key(&id))
    }

    /// Key agreements run so far: HPKE receiver setups, for each sealer's pair not kept here
    /// (again for a pair forgotten), whether the message then opened or not.
    pub fn key_agreements(&self) -> u64 {
        self.key_agreements
    }

    /// Pairs kept.
    pub fn pairs(&self) -> usize {
        self.pairs.len()
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
            (0..4)
                .map(|i| (NodeId(i), secret(i).public_key()))
                .collect(),
        )
    }

    fn bound(src: u64, dst: u64, seq: u64) -> Bound {
        Bound {
            src: NodeId(src),
            dst: NodeId(dst),
            index: 1,
            seq,
            sent_at_us: 1_000,
            flags: 2,
        }
    }

    const NOW: u64 = 10_000_000;

    fn opener(id: u64) -> Opener {
        Opener::new(
            NodeId(id),
            secret(id),
            NOW - 1_000_000,
            OpenLimits::default(),
        )
    }

    #[test]
    fn only_the_destination_opens_only_what_the_source_sealed_once() {
        let dir = keys();
        let mut alice = Sealer::new(NodeId(0), secret(0));
        let mut bob = opener(1);
        let b = bound(0, 1, 7);
        let sealed = alice
            .seal(&dir, &b, NOW, b"pay 10 to carol", || [9; 32])
            .unwrap();
        assert!(
            !sealed
                .windows(8)
                .any(|w| b"pay 10 to carol".windows(8).any(|p| p == w)),
            "nothing of the payload in the clear"
        );
        assert_eq!(
            bob.open(&dir, &b, NOW, &sealed).unwrap(),
            b"pay 10 to carol"
        );
        assert_eq!(bob.open(&dir, &b, NOW, &sealed), Err(OpenError::Replayed));
        // Every bound field is checked: a relay that rewrites one breaks the seal.
        for changed in [
            Bound { seq: 8, ..b },
            Bound { index: 2, ..b },
            Bound {
                sent_at_us: 1_001,
                ..b
            },
            Bound { flags: 0, ..b },
            Bound {
                src: NodeId(2),
                ..b
            },
        ] {
            let again = alice.seal(&dir, &b, NOW, b"x", || [9; 32]).unwrap();
            assert_eq!(
                bob.open(&dir, &changed, NOW, &again),
                Err(OpenError::Broken)
            );
        }
        // So does a flipped byte anywhere in the sealed payload.
        let again = alice.seal(&dir, &b, NOW, b"payload", || [9; 32]).unwrap();
        for at in 0..again.len() {
            let mut bytes = again.clone();
            bytes[at] ^= 0x10;
            assert!(bob.open(&dir, &b, NOW, &bytes).is_err(), "byte {at}");
        }
        assert_eq!(bob.open(&dir, &b, NOW, &again).unwrap(), b"payload");
        // Another node cannot open it.
        let mut carol = opener(2);
        let fresh = alice.seal(&dir, &b, NOW, b"x", || [9; 32]).unwrap();
        assert_eq!(carol.open(&dir, &b, NOW, &fresh), Err(OpenError::Broken));
        assert_eq!(
            carol.open(
                &dir,
                &Bound {
                    dst: NodeId(2),
                    ..b
                },
                NOW,
                &fresh
            ),
            Err(OpenError::Broken)
        );
        assert_eq!(alice.pairs(), 1);
        assert_eq!(bob.pairs(), 1);
    }

    #[test]
    fn both_ends_say_beforehand_whether_a_message_sets_its_pair_up() {
        let dir = keys();
        let mut alice = Sealer::new(NodeId(0), secret(0));
        let mut bob = opener(1);
        let b = bound(0, 1, 7);
        assert!(!alice.has_pair(NodeId(1)));
        let first = alice.seal(&dir, &b, NOW, b"one", || [9; 32]).unwrap();
        assert!(alice.has_pair(NodeId(1)) && !alice.has_pair(NodeId(2)));
        assert_eq!(
            Sealed::pair_of(&first),
            Sealed::from_bytes(&first).map(|s| (s.sealer, s.enc))
        );
        assert!(!bob.has_pair_for(&first));
        assert_eq!((alice.key_agreements(), bob.key_agreements()), (1, 0));
        bob.open(&dir, &b, NOW, &first).unwrap();
        assert_eq!(bob.key_agreements(), 1);
        let second = alice
            .seal(&dir, &bound(0, 1, 8), NOW, b"two", || [9; 32])
            .unwrap();
        assert!(bob.has_pair_for(&second));
        // Another sender's first message, and bytes that are no sealed message (refused
        // before any key agreement).
        let mut carol = Sealer::new(NodeId(2), secret(2));
        let hers = carol
            .seal(&dir, &bound(2, 1, 1), NOW, b"three", || [3; 32])
            .unwrap();
        assert!(!bob.has_pair_for(&hers));
        assert!(bob.has_pair_for(&[0xff; 3]));
        // Only a key agreement that ran is counted: the second message of a pair is none, and
        // a message too old is refused before any.
        bob.open(&dir, &bound(0, 1, 8), NOW, &second).unwrap();
        assert_eq!(
            bob.open(&dir, &bound(2, 1, 1), NOW + 3_600_000_000, &hers),
            Err(OpenError::Replayed)
        );
        assert_eq!((alice.key_agreements(), bob.key_agreements()), (1, 1));
        bob.open(&dir, &bound(2, 1, 1), NOW, &hers).unwrap();
        assert_eq!((carol.key_agreements(), bob.key_agreements()), (1, 2));
    }

    #[test]
    fn a_node_that_seals_in_another_name_is_caught() {
        let dir = keys();
        // Node 2 holds its own keys and claims to be node 0.
        let mut mallory = Sealer::new(NodeId(2), secret(2));
        let mut bob = opener(1);
        let claimed = bound(0, 1, 7);
        let sealed = mallory.seal(&dir, &claimed, NOW, b"x", || [3; 32]).unwrap();
        assert_eq!(
            bob.open(&dir, &claimed, NOW, &sealed),
            Err(OpenError::ForgedSource { sealer: NodeId(2) })
        );
        // Rewriting the sealer to the claimed source: the seal no longer opens.
        let mut forged = Sealed::from_bytes(&sealed).unwrap();
        forged.sealer = NodeId(0);
        assert_eq!(
            bob.open(&dir, &claimed, NOW, &forged.to_bytes()),
            Err(OpenError::Broken)
        );
        // A node the directory does not know.
        forged.sealer = NodeId(99);
        assert_eq!(
            bob.open(&dir, &claimed, NOW, &forged.to_bytes()),
            Err(OpenError::UnknownSealer(NodeId(99)))
        );
        assert_eq!(
            bob.open(&dir, &claimed, NOW, b"junk"),
            Err(OpenError::Malformed)
        );
    }

    #[test]
    fn old_messages_and_those_sealed_before_the_start_are_replays() {
        let dir = keys();
        let mut alice = Sealer::new(NodeId(0), secret(0));
        let b = bound(0, 1, 7);
        let limits = OpenLimits::default();
        // Sealed before the receiver started (beyond the skew): refused...
        let before = alice.seal(&dir, &b, NOW - 1_000_000 - limits.skew_us - 1, b"x", || {
            [1; 32]
        });
        assert_eq!(
            opener(1).open(&dir, &b, NOW, &before.unwrap()),
            Err(OpenError::Replayed)
        );
        // ...within the skew: taken.
        let within = alice.seal(&dir, &b, NOW - 1_000_000 - limits.skew_us, b"x", || [1; 32]);
        assert!(opener(1).open(&dir, &b, NOW, &within.unwrap()).is_ok());
        // Sealed longer ago than the window: refused.
        let mut bob = Opener::new(NodeId(1), secret(1), 0, limits);
        let old = alice.seal(&dir, &b, NOW, b"x", || [1; 32]).unwrap();
        assert!(bob.open(&dir, &b, NOW + limits.window_us - 1, &old).is_ok());
        let old = alice.seal(&dir, &b, NOW, b"x", || [1; 32]).unwrap();
        assert_eq!(
            bob.open(&dir, &b, NOW + limits.window_us, &old),
            Err(OpenError::Replayed)
        );
    }

    #[test]
    fn pairs_are_bounded_and_a_forgotten_pair_is_derived_again() {
        let dir = keys();
        let limits = OpenLimits {
            max_pairs: 2,
            ..OpenLimits::default()
        };
        let mut bob = Opener::new(NodeId(1), secret(1), 0, limits);
        let mut senders: Vec<Sealer> = [0, 2, 3].map(|i| Sealer::new(NodeId(i), secret(i))).into();
        for round in 0..3 {
            for s in &mut senders {
                let b = bound(s.me.0, 1, round);
                let sealed = s.seal(&dir, &b, NOW, b"x", || [5; 32]).unwrap();
                assert_eq!(bob.open(&dir, &b, NOW, &sealed).unwrap(), b"x");
                assert!(bob.pairs() <= 2);
            }
        }
        // A new incarnation of a sender (a fresh pair) is a pair of its own.
        let mut reborn = Sealer::new(NodeId(0), secret(0));
        let b = bound(0, 1, 0);
        let sealed = reborn.seal(&dir, &b, NOW, b"y", || [6; 32]).unwrap();
        assert_eq!(bob.open(&dir, &b, NOW, &sealed).unwrap(), b"y");
    }
}
