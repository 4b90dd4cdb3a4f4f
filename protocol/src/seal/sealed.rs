//! What a sealed message's payload is on the wire, and what its seal binds.
//!
//! Three kinds: a message under a session ([`SealedData`], every copy, piece and
//! acknowledgement), and the two handshake messages that make a session ([`Init`] from the node
//! that wants one, [`Resp`] from the other end). Everything but a ciphertext is clear: relays see
//! who seals to whom under which session, never a payload or a key.

use crate::NodeId;
use serde::{Deserialize, Serialize};

/// The payload of a sealed message.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub enum Sealed {
    Data(SealedData),
    Init(Init),
    Resp(Resp),
}

/// A message sealed under a session. The clear fields are bound by the seal as associated data.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct SealedData {
    /// The node that sealed it: the source, unless a node sealed in another's name.
    pub sealer: NodeId,
    /// The session it was sealed under, as the session's responder named it.
    pub session: u64,
    /// The sealer's message counter in this session: the AEAD nonce, seen once by the receiver.
    pub nonce: u64,
    /// The sealer's clock when it sealed (each resend is sealed anew).
    pub sealed_at_us: u64,
    /// The payload, encrypted, and the 16-byte tag.
    #[serde(with = "serde_bytes")]
    pub ciphertext: Vec<u8>,
}

/// The first handshake message: the initiator's fresh ephemeral public key, sealed by HPKE's
/// authenticated mode from the initiator's static key to the responder's.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Init {
    /// The initiator.
    pub sealer: NodeId,
    /// The initiator's clock when it made this Init, strictly greater than for any Init it made
    /// before in this process: the responder keeps the greatest it took per initiator and takes
    /// no Init at or below it.
    pub ts_us: u64,
    /// HPKE's encapsulated key.
    pub enc: [u8; 32],
    /// The ephemeral public key, sealed (the time bound as associated data), and the tag.
    #[serde(with = "serde_bytes")]
    pub ciphertext: Vec<u8>,
}

/// The answer to an [`Init`]: the session's name and a confirmation, sealed by HPKE's
/// authenticated mode from the responder's static key to the initiator's ephemeral key. The
/// session's keys are exported from that context: only the holder of the ephemeral secret
/// (erased once the answer is taken) and the responder derive them.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Resp {
    /// The responder.
    pub sealer: NodeId,
    /// The `ts_us` of the Init this answers.
    pub init_ts_us: u64,
    /// The session's name, chosen by the responder.
    pub session: u64,
    /// HPKE's encapsulated key.
    pub enc: [u8; 32],
    /// An empty plaintext sealed (the session's name bound): the key confirmation tag.
    #[serde(with = "serde_bytes")]
    pub ciphertext: Vec<u8>,
}

/// The AEAD tag's length (ChaCha20-Poly1305).
pub const TAG_LEN: usize = 16;

/// The bytes a seal adds to a payload, about: the clear fields, the tag, the framing.
pub const SEAL_OVERHEAD: usize = 1 + 10 + 10 + 10 + 10 + 16 + 4;

/// The clear fields of a message its seal binds: what the destination acts on besides the
/// payload.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Bound {
    pub src: NodeId,
    pub dst: NodeId,
    /// The copy's index (its path).
    pub index: u8,
    pub seq: u64,
    pub sent_at_us: u64,
    /// The message's flags (split, enveloped).
    pub flags: u8,
    /// Which send of its set this is (a reliable set's resends count up).
    pub attempt: u32,
}

/// Why a message could not be sealed.
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error)]
pub enum SealError {
    #[error("no public key is known for node {0}")]
    UnknownNode(NodeId),
    #[error("no session with node {0} yet: a handshake makes one")]
    NoSession(NodeId),
}

/// The clear fields of a [`SealedData`], in its order, with the enum's variant first: encoded
/// alone, then the ciphertext's length and bytes, they are the bytes of the whole.
#[derive(Serialize)]
struct DataHeader {
    variant: u32,
    sealer: NodeId,
    session: u64,
    nonce: u64,
    sealed_at_us: u64,
}

/// The most bytes a [`DataHeader`] and the ciphertext's length take.
const HEADER_MAX: usize = 5 + 10 + 10 + 10 + 10 + 10;

impl Sealed {
    /// The bytes of the `Sealed::Data` whose ciphertext is `plaintext` encrypted in place by
    /// `encrypt`, which returns the tag: the payload is copied once, into the encoding itself.
    pub fn encode_data_in_place<E>(
        sealer: NodeId,
        session: u64,
        nonce: u64,
        sealed_at_us: u64,
        plaintext: &[u8],
        encrypt: impl FnOnce(&mut [u8]) -> Result<[u8; TAG_LEN], E>,
    ) -> Result<Vec<u8>, E> {
        let header = DataHeader {
            variant: 0,
            sealer,
            session,
            nonce,
            sealed_at_us,
        };
        let len = plaintext.len() + TAG_LEN;
        let out = Vec::with_capacity(HEADER_MAX + len);
        let out = postcard::to_extend(&header, out).expect("a header always serializes");
        // A byte string's length is a varint of the same encoding as a u64's.
        let mut out = postcard::to_extend(&(len as u64), out).expect("a length serializes");
        let start = out.len();
        out.extend_from_slice(plaintext);
        let tag = encrypt(&mut out[start..])?;
        out.extend_from_slice(&tag);
        Ok(out)
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        postcard::to_allocvec(self).expect("a sealed payload always serializes")
    }

    pub fn from_bytes(bytes: &[u8]) -> Option<Sealed> {
        match postcard::take_from_bytes(bytes) {
            Ok((sealed, [])) => Some(sealed),
            _ => None,
        }
    }

    /// Its ciphertext, whatever its kind.
    pub fn ciphertext_mut(&mut self) -> &mut Vec<u8> {
        match self {
            Sealed::Data(d) => &mut d.ciphertext,
            Sealed::Init(i) => &mut i.ciphertext,
            Sealed::Resp(r) => &mut r.ciphertext,
        }
    }

    /// Whether the payload is a handshake message (read from its first byte alone): opening it
    /// may run a key agreement, opening anything else never does.
    pub fn is_handshake(bytes: &[u8]) -> bool {
        matches!(bytes.first(), Some(1 | 2))
    }
}

/// The length of a data seal's associated data: source, destination, index, sequence, send
/// time, flags, attempt, sealer, session, seal time, nonce.
const AAD_LEN: usize = 8 + 8 + 1 + 8 + 8 + 1 + 4 + 8 + 8 + 8 + 8;

/// The associated data of a data seal: the message's bound fields, then the seal's own.
pub(crate) fn associated_data(
    bound: &Bound,
    sealer: NodeId,
    session: u64,
    sealed_at_us: u64,
    nonce: u64,
) -> [u8; AAD_LEN] {
    let mut aad = [0; AAD_LEN];
    let fields: [&[u8]; 11] = [
        &bound.src.0.to_le_bytes(),
        &bound.dst.0.to_le_bytes(),
        &[bound.index],
        &bound.seq.to_le_bytes(),
        &bound.sent_at_us.to_le_bytes(),
        &[bound.flags],
        &bound.attempt.to_le_bytes(),
        &sealer.0.to_le_bytes(),
        &session.to_le_bytes(),
        &sealed_at_us.to_le_bytes(),
        &nonce.to_le_bytes(),
    ];
    let mut at = 0;
    for f in fields {
        aad[at..at + f.len()].copy_from_slice(f);
        at += f.len();
    }
    debug_assert_eq!(at, aad.len());
    aad
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_in_place_gives_the_bytes_of_the_whole() {
        for len in [0, 1, 111, 112, 113, 127, 128, 1024, 16_367, 16_368, 65_536] {
            let plaintext: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
            let encrypt = |text: &mut [u8]| {
                text.iter_mut().for_each(|b| *b ^= 0xa5);
                Ok::<_, ()>([0x3c; TAG_LEN])
            };
            let mut ciphertext: Vec<u8> = plaintext.iter().map(|b| b ^ 0xa5).collect();
            ciphertext.extend_from_slice(&[0x3c; TAG_LEN]);
            let whole = Sealed::Data(SealedData {
                sealer: NodeId(300 + len as u64),
                session: u64::MAX / 3 + len as u64,
                nonce: u64::MAX - len as u64,
                sealed_at_us: 1 << 50,
                ciphertext,
            });
            let Sealed::Data(d) = &whole else {
                unreachable!()
            };
            let in_place = Sealed::encode_data_in_place(
                d.sealer,
                d.session,
                d.nonce,
                d.sealed_at_us,
                &plaintext,
                encrypt,
            )
            .unwrap();
            assert_eq!(in_place, whole.to_bytes(), "{len}");
            assert_eq!(Sealed::from_bytes(&in_place), Some(whole), "{len}");
            assert!(!Sealed::is_handshake(&in_place));
        }
    }

    #[test]
    fn handshakes_are_told_from_their_first_byte() {
        let init = Sealed::Init(Init {
            sealer: NodeId(3),
            ts_us: 5,
            enc: [1; 32],
            ciphertext: vec![2; 48],
        });
        let resp = Sealed::Resp(Resp {
            sealer: NodeId(4),
            init_ts_us: 5,
            session: 9,
            enc: [1; 32],
            ciphertext: vec![2; 16],
        });
        for m in [init, resp] {
            let bytes = m.to_bytes();
            assert!(Sealed::is_handshake(&bytes));
            assert_eq!(Sealed::from_bytes(&bytes), Some(m));
        }
        assert!(!Sealed::is_handshake(&[]));
        assert!(Sealed::from_bytes(&[7, 0]).is_none());
    }
}
