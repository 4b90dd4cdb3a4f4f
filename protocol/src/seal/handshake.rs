//! The two messages that make a session, built from HPKE (RFC 9180) alone.
//!
//! 1. **Init**, initiator I to responder R: I draws a fresh ephemeral key pair E and seals its
//!    public half to R's static key with HPKE's authenticated mode (`SetupAuthS` from I's static
//!    key), the Init's time bound as associated data, with one flag: whether I lost its sessions
//!    with R (it restarted, or forgot them) and asks R to move to this one at once. Only I's or
//!    R's static secret makes or opens it: R learns that I wants a session and where to answer.
//! 2. **Resp**, R to I: R names the session and seals an empty plaintext with HPKE's
//!    authenticated mode from R's static key **to E**, the session's name bound. The session's
//!    two keys (one per direction) are exported from that context. I opens it with E's secret,
//!    which it then drops (zeroized), and derives the same keys.
//!
//! Why this gives forward secrecy: the Resp context's shared secret is DH(eph, E) || DH(R, E)
//! (RFC 9180, DHKEM with Auth), so deriving the session keys needs the secret of E or of the
//! one-use `eph` inside HPKE, both gone once the handshake is over; the static keys alone, leaked
//! later, give neither. Why it authenticates: the Init opens only with DH(I, R) (I's static key
//! made it), and the Resp's confirmation tag only with DH(R, E) (R's static key made it). What a
//! leaked static key still allows is in docs/security.md.

use super::keys::{NodeKem, PublicKey, SecretKey};
use super::sealed::{Init, Resp, SealError};
use crate::NodeId;
use hpke::aead::ChaCha20Poly1305;
use hpke::kdf::HkdfSha256;
use hpke::{Deserializable, Kem, OpModeR, OpModeS, Serializable};
use rand_chacha::ChaCha20Rng;
use rand_chacha::rand_core::SeedableRng;
use zeroize::Zeroizing;

/// A key of one direction of a session (ChaCha20-Poly1305), zeroized when dropped.
pub type SessionKey = Zeroizing<[u8; 32]>;

/// The keys of a session, one per direction, and the chain key its successor is derived from
/// (`ratchet.rs`).
pub struct SessionKeys {
    /// What the initiator seals with and the responder opens with.
    pub initiator_to_responder: SessionKey,
    /// What the responder seals with and the initiator opens with.
    pub responder_to_initiator: SessionKey,
    /// What the session's successor is derived from.
    pub chain: SessionKey,
}

/// The initiator's ephemeral key pair, kept until its Init is answered or given up; the secret
/// is zeroized when this is dropped (HPKE's private key type does so).
pub struct Ephemeral {
    secret: <NodeKem as Kem>::PrivateKey,
    public: [u8; 32],
}

/// Why a handshake message was refused by its cryptography.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Broken;

fn init_info(initiator: NodeId, responder: NodeId) -> [u8; 32] {
    let mut info = [0; 32];
    info[..16].copy_from_slice(b"cuberoute init 1");
    info[16..24].copy_from_slice(&initiator.0.to_le_bytes());
    info[24..].copy_from_slice(&responder.0.to_le_bytes());
    info
}

fn resp_info(initiator: NodeId, responder: NodeId, init_ts_us: u64, session: u64) -> [u8; 48] {
    let mut info = [0; 48];
    info[..16].copy_from_slice(b"cuberoute resp 1");
    info[16..24].copy_from_slice(&initiator.0.to_le_bytes());
    info[24..32].copy_from_slice(&responder.0.to_le_bytes());
    info[32..40].copy_from_slice(&init_ts_us.to_le_bytes());
    info[40..].copy_from_slice(&session.to_le_bytes());
    info
}

const I_TO_R: &[u8] = b"cuberoute initiator to responder";
const R_TO_I: &[u8] = b"cuberoute responder to initiator";
const CHAIN: &[u8] = b"cuberoute chain";

fn enc_bytes(encapped: &<NodeKem as Kem>::EncappedKey) -> [u8; 32] {
    let mut enc = [0; 32];
    enc.copy_from_slice(&encapped.to_bytes());
    enc
}

/// The most session ids a recovery Init names as still held.
pub const MAX_HELD: usize = 8;

/// What an Init asks besides a session: the flags sealed with the ephemeral key.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct InitFlags {
    /// The initiator holds none of its sessions with the responder made before this
    /// handshake but those `held` names: the responder's others with it are of no use.
    pub recovery: bool,
    /// With `recovery`: when this handshake's first Init was made (the initiator's clock,
    /// µs). Sessions the responder made from this handshake's Inits, of this time or later, are
    /// not older ones.
    pub since_us: u64,
    /// With `recovery`: the initiator restarted at this time (its clock, µs), and what the
    /// responder sealed to it under the older sessions since then did not open there; sent
    /// again under a new session, it would.
    pub lost_since_us: Option<u64>,
    /// With `recovery`: the sessions with the responder the initiator still holds (their
    /// ids, the first `held_len`, newest first). A message under a session it does not hold
    /// may be a relay's, made up: what it holds stays.
    pub held: [u64; MAX_HELD],
    pub held_len: u8,
}

impl InitFlags {
    /// An Init that asks for nothing but a session.
    pub const PLAIN: InitFlags = InitFlags {
        recovery: false,
        since_us: 0,
        lost_since_us: None,
        held: [0; MAX_HELD],
        held_len: 0,
    };

    /// A recovery from `since_us`, asking for what was sealed since `lost_since_us` if given,
    /// keeping the sessions `held` names (the first [`MAX_HELD`]).
    pub fn recovery(since_us: u64, lost_since_us: Option<u64>, held: &[u64]) -> InitFlags {
        let mut flags = InitFlags {
            recovery: true,
            since_us,
            lost_since_us,
            ..InitFlags::PLAIN
        };
        let n = held.len().min(MAX_HELD);
        flags.held[..n].copy_from_slice(&held[..n]);
        flags.held_len = n as u8;
        flags
    }

    /// The sessions the initiator still holds.
    pub fn held(&self) -> &[u64] {
        &self.held[..usize::from(self.held_len).min(MAX_HELD)]
    }

    /// The flags' bytes: a byte of bits (1: recovery, 2: the restart's time, 4: sessions
    /// held), then with recovery its time, then the restart's, then the count of sessions held
    /// and their ids.
    fn to_bytes(self) -> Vec<u8> {
        let lost = self.lost_since_us.filter(|_| self.recovery);
        let held = if self.recovery { self.held() } else { &[] };
        let mut bytes = vec![
            u8::from(self.recovery)
                | (u8::from(lost.is_some()) << 1)
                | (u8::from(!held.is_empty()) << 2),
        ];
        if self.recovery {
            bytes.extend_from_slice(&self.since_us.to_le_bytes());
        }
        if let Some(lost) = lost {
            bytes.extend_from_slice(&lost.to_le_bytes());
        }
        if !held.is_empty() {
            bytes.push(held.len() as u8);
            for id in held {
                bytes.extend_from_slice(&id.to_le_bytes());
            }
        }
        bytes
    }

    fn from_bytes(bytes: &[u8]) -> Option<InitFlags> {
        let (&bits, mut rest) = bytes.split_first()?;
        let mut time = || -> Option<u64> {
            let (head, tail) = rest.split_at_checked(8)?;
            rest = tail;
            Some(u64::from_le_bytes(head.try_into().ok()?))
        };
        if bits == 0 {
            return rest.is_empty().then_some(InitFlags::PLAIN);
        }
        if bits & !7 != 0 || bits & 1 == 0 {
            return None;
        }
        let since = time()?;
        let lost = if bits & 2 != 0 { Some(time()?) } else { None };
        let mut held = Vec::new();
        if bits & 4 != 0 {
            let n = usize::from(*rest.first()?);
            rest = &rest[1..];
            if n == 0 || n > MAX_HELD {
                return None;
            }
            for _ in 0..n {
                let (head, tail) = rest.split_at_checked(8)?;
                rest = tail;
                held.push(u64::from_le_bytes(head.try_into().ok()?));
            }
        }
        rest.is_empty()
            .then(|| InitFlags::recovery(since, lost, &held))
    }
}

/// The Init from `me` (static key `secret`) to `peer` (static key `peer_key`) made at `ts_us`,
/// and the ephemeral key pair its answer is sealed to. `fresh` is 32 random bytes.
pub fn init(
    me: NodeId,
    secret: &SecretKey,
    peer: NodeId,
    peer_key: PublicKey,
    ts_us: u64,
    flags: InitFlags,
    fresh: [u8; 32],
) -> Result<(Init, Ephemeral), SealError> {
    let receiver = peer_key
        .to_kem()
        .map_err(|_| SealError::UnknownNode(peer))?;
    let mut rng = ChaCha20Rng::from_seed(fresh);
    let (eph_secret, eph_public) = NodeKem::gen_keypair_with_rng(&mut rng);
    let mut public = [0; 32];
    public.copy_from_slice(&eph_public.to_bytes());
    let mode = OpModeS::Auth((secret.kem_secret().clone(), secret.kem_public()));
    let (encapped, mut context) = hpke::setup_sender_with_rng::<
        ChaCha20Poly1305,
        HkdfSha256,
        NodeKem,
    >(&mode, &receiver, &init_info(me, peer), &mut rng)
    .map_err(|_| SealError::UnknownNode(peer))?;
    let mut plaintext = public.to_vec();
    plaintext.extend(flags.to_bytes());
    let ciphertext = context
        .seal(&plaintext, &ts_us.to_le_bytes())
        .expect("at most 114 bytes seal");
    let init = Init {
        sealer: me,
        ts_us,
        enc: enc_bytes(&encapped),
        ciphertext,
    };
    Ok((
        init,
        Ephemeral {
            secret: eph_secret,
            public,
        },
    ))
}

/// The initiator's ephemeral public key and flags from an Init to `me` (static key `secret`),
/// sealed by the node whose static key is `initiator_key`; [`Broken`] if it does not open.
pub fn open_init(
    me: NodeId,
    secret: &SecretKey,
    init: &Init,
    initiator_key: PublicKey,
) -> Result<([u8; 32], InitFlags), Broken> {
    let sender = initiator_key.to_kem().map_err(|_| Broken)?;
    let encapped = <NodeKem as Kem>::EncappedKey::from_bytes(&init.enc).map_err(|_| Broken)?;
    let mut context = hpke::setup_receiver::<ChaCha20Poly1305, HkdfSha256, NodeKem>(
        &OpModeR::Auth(sender),
        secret.kem_secret(),
        &encapped,
        &init_info(init.sealer, me),
    )
    .map_err(|_| Broken)?;
    let plaintext = context
        .open(&init.ciphertext, &init.ts_us.to_le_bytes())
        .map_err(|_| Broken)?;
    if plaintext.len() < 32 {
        return Err(Broken);
    }
    let (public, flags) = plaintext.split_at(32);
    let public: [u8; 32] = public.try_into().map_err(|_| Broken)?;
    // A valid X25519 point, or the answer could not be sealed to it.
    <NodeKem as Kem>::PublicKey::from_bytes(&public).map_err(|_| Broken)?;
    let flags = InitFlags::from_bytes(flags).ok_or(Broken)?;
    Ok((public, flags))
}

/// The Resp from `me` (static key `secret`) to `initiator`'s Init of `init_ts_us`, whose
/// ephemeral public key is `ephemeral`, naming the session `session`; and the session's keys.
/// `fresh` is 32 random bytes.
pub fn respond(
    me: NodeId,
    secret: &SecretKey,
    initiator: NodeId,
    init_ts_us: u64,
    ephemeral: &[u8; 32],
    session: u64,
    fresh: [u8; 32],
) -> Result<(Resp, SessionKeys), Broken> {
    let receiver = <NodeKem as Kem>::PublicKey::from_bytes(ephemeral).map_err(|_| Broken)?;
    let mode = OpModeS::Auth((secret.kem_secret().clone(), secret.kem_public()));
    let mut rng = ChaCha20Rng::from_seed(fresh);
    let (encapped, mut context) =
        hpke::setup_sender_with_rng::<ChaCha20Poly1305, HkdfSha256, NodeKem>(
            &mode,
            &receiver,
            &resp_info(initiator, me, init_ts_us, session),
            &mut rng,
        )
        .map_err(|_| Broken)?;
    let keys = SessionKeys {
        initiator_to_responder: export(|label, out| context.export(label, out), I_TO_R),
        responder_to_initiator: export(|label, out| context.export(label, out), R_TO_I),
        chain: export(|label, out| context.export(label, out), CHAIN),
    };
    let ciphertext = context
        .seal(&[], &session.to_le_bytes())
        .expect("an empty plaintext seals");
    let resp = Resp {
        sealer: me,
        init_ts_us,
        session,
        enc: enc_bytes(&encapped),
        ciphertext,
    };
    Ok((resp, keys))
}

/// The session's keys from the Resp to `me` answering the Init whose ephemeral key pair is
/// `ephemeral`, sealed by the node whose static key is `responder_key`; [`Broken`] if it does
/// not open.
pub fn open_resp(
    me: NodeId,
    ephemeral: &Ephemeral,
    resp: &Resp,
    responder_key: PublicKey,
) -> Result<SessionKeys, Broken> {
    let sender = responder_key.to_kem().map_err(|_| Broken)?;
    let encapped = <NodeKem as Kem>::EncappedKey::from_bytes(&resp.enc).map_err(|_| Broken)?;
    let mut context = hpke::setup_receiver::<ChaCha20Poly1305, HkdfSha256, NodeKem>(
        &OpModeR::Auth(sender),
        &ephemeral.secret,
        &encapped,
        &resp_info(me, resp.sealer, resp.init_ts_us, resp.session),
    )
    .map_err(|_| Broken)?;
    context
        .open(&resp.ciphertext, &resp.session.to_le_bytes())
        .map_err(|_| Broken)?;
    Ok(SessionKeys {
        initiator_to_responder: export(|label, out| context.export(label, out), I_TO_R),
        responder_to_initiator: export(|label, out| context.export(label, out), R_TO_I),
        chain: export(|label, out| context.export(label, out), CHAIN),
    })
}

fn export<E>(export: impl Fn(&[u8], &mut [u8]) -> Result<(), E>, label: &[u8]) -> SessionKey {
    let mut key = Zeroizing::new([0; 32]);
    if export(label, &mut key[..]).is_err() {
        unreachable!("32 bytes are within HPKE's exporter limit");
    }
    key
}

impl Ephemeral {
    /// The public half, as the Init carries it.
    pub fn public(&self) -> [u8; 32] {
        self.public
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(id: u8) -> SecretKey {
        SecretKey::from_seed([id + 1; 32])
    }

    const PLAIN: InitFlags = InitFlags::PLAIN;

    #[test]
    fn flags_read_back_and_nothing_else_reads() {
        for flags in [
            PLAIN,
            InitFlags::recovery(5, None, &[]),
            InitFlags::recovery(u64::MAX, Some(u64::MAX - 1), &[]),
            InitFlags::recovery(5, None, &[7]),
            InitFlags::recovery(5, Some(3), &[1, 2, 3, 4, 5, 6, 7, 8]),
        ] {
            assert_eq!(InitFlags::from_bytes(&flags.to_bytes()), Some(flags));
        }
        // More than fit: the first are named.
        let many = InitFlags::recovery(5, None, &[9; 12]);
        assert_eq!(many.held(), &[9; MAX_HELD]);
        let held_none = [5, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        let mut held_nine = vec![5, 0, 0, 0, 0, 0, 0, 0, 0, 9];
        held_nine.extend([0; 72]);
        for bad in [
            &[][..],
            &[4],
            &[2, 0, 0, 0, 0, 0, 0, 0, 0],
            &[3, 1, 0, 0, 0, 0, 0, 0, 0],
            &[1, 0],
            &[0, 0],
            &[8, 0, 0, 0, 0, 0, 0, 0, 0],
            &[5, 0, 0, 0, 0, 0, 0, 0, 0],
            &[5, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0],
            &held_none,
            &held_nine,
        ] {
            assert_eq!(InitFlags::from_bytes(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn both_ends_derive_the_same_keys_and_nobody_else_does() {
        let (i, r) = (NodeId(0), NodeId(1));
        let (init, eph) =
            super::init(i, &secret(0), r, secret(1).public_key(), 77, PLAIN, [5; 32]).unwrap();
        assert_eq!(init.sealer, i);
        let (e, flags) = open_init(r, &secret(1), &init, secret(0).public_key()).unwrap();
        assert_eq!((e, flags), (eph.public(), PLAIN));
        let (recovery, _) = super::init(
            i,
            &secret(0),
            r,
            secret(1).public_key(),
            78,
            InitFlags::recovery(75, Some(70), &[4]),
            [5; 32],
        )
        .unwrap();
        assert_eq!(
            open_init(r, &secret(1), &recovery, secret(0).public_key()).map(|(_, f)| f),
            Ok(InitFlags::recovery(75, Some(70), &[4]))
        );
        let (resp, keys) = respond(r, &secret(1), i, 77, &e, 42, [6; 32]).unwrap();
        let mine = open_resp(i, &eph, &resp, secret(1).public_key()).unwrap();
        assert_eq!(*mine.initiator_to_responder, *keys.initiator_to_responder);
        assert_eq!(*mine.responder_to_initiator, *keys.responder_to_initiator);
        assert_ne!(*keys.initiator_to_responder, *keys.responder_to_initiator);
        assert_eq!(*mine.chain, *keys.chain);
        assert_ne!(*keys.chain, *keys.initiator_to_responder);
        assert_ne!(*keys.chain, *keys.responder_to_initiator);

        // Another node's static key opens neither message.
        assert_eq!(
            open_init(r, &secret(2), &init, secret(0).public_key()),
            Err(Broken)
        );
        assert!(open_init(r, &secret(1), &init, secret(2).public_key()).is_err());
        assert!(open_resp(i, &eph, &resp, secret(2).public_key()).is_err());
        // Every clear field is bound: the time, the session, whom it answers.
        for changed in [
            Init {
                ts_us: 78,
                ..init.clone()
            },
            Init {
                sealer: NodeId(2),
                ..init.clone()
            },
        ] {
            assert!(open_init(r, &secret(1), &changed, secret(0).public_key()).is_err());
        }
        for changed in [
            Resp {
                session: 43,
                ..resp.clone()
            },
            Resp {
                init_ts_us: 78,
                ..resp.clone()
            },
        ] {
            assert!(open_resp(i, &eph, &changed, secret(1).public_key()).is_err());
        }
        // A Resp opens only with the ephemeral secret it was sealed to.
        let (_, other) =
            super::init(i, &secret(0), r, secret(1).public_key(), 79, PLAIN, [7; 32]).unwrap();
        assert!(open_resp(i, &other, &resp, secret(1).public_key()).is_err());
    }

    /// The static keys of both ends and every byte of the handshake do not give the session's
    /// keys: the responder's static key opens the Init (learning only the ephemeral public key),
    /// and answering it again makes other keys; the Resp needs the ephemeral secret.
    #[test]
    fn the_static_keys_and_the_handshake_bytes_do_not_give_the_session() {
        let (i, r) = (NodeId(0), NodeId(1));
        let (init, eph) =
            super::init(i, &secret(0), r, secret(1).public_key(), 77, PLAIN, [5; 32]).unwrap();
        let (e, _) = open_init(r, &secret(1), &init, secret(0).public_key()).unwrap();
        let (resp, keys) = respond(r, &secret(1), i, 77, &e, 42, [6; 32]).unwrap();
        drop(eph);
        // An attacker holding both static secrets answers the captured Init itself: other keys.
        let (_, again) = respond(r, &secret(1), i, 77, &e, 42, [9; 32]).unwrap();
        assert_ne!(*again.initiator_to_responder, *keys.initiator_to_responder);
        // Nor can it open the captured Resp with a static key in place of the ephemeral one.
        let pretend = Ephemeral {
            secret: secret(0).kem_secret().clone(),
            public: secret(0).public_key().0,
        };
        assert!(open_resp(i, &pretend, &resp, secret(1).public_key()).is_err());
    }
}
