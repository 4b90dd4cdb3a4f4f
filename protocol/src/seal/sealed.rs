//! What a sealed message's payload is on the wire, and what its seal binds.

use crate::NodeId;
use serde::{Deserialize, Serialize};

/// The payload of a sealed message. Everything here but the ciphertext is clear, and bound by
/// the seal as associated data.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Sealed {
    /// The node that sealed it: the source, unless a node sealed in another's name.
    pub sealer: NodeId,
    /// The HPKE encapsulated key of the sealer's pair context with the destination.
    pub enc: [u8; 32],
    /// The pair's message counter: the AEAD nonce, seen once by the destination.
    pub nonce: u64,
    /// The sealer's clock when it sealed (each resend is sealed anew).
    pub sealed_at_us: u64,
    /// The payload, encrypted, and the 16-byte tag.
    #[serde(with = "serde_bytes")]
    pub ciphertext: Vec<u8>,
}

/// The AEAD tag's length (ChaCha20-Poly1305).
pub const TAG_LEN: usize = 16;

/// The bytes a seal adds to a payload, about: the clear fields, the tag, the framing.
pub const SEAL_OVERHEAD: usize = 8 + 32 + 10 + 10 + 16 + 4;

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
}

/// What a seal was refused for.
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error)]
pub enum SealError {
    #[error("no public key is known for node {0}")]
    UnknownNode(NodeId),
}

/// The clear fields of a [`Sealed`], in its order: encoded alone, then the ciphertext's length
/// and bytes, they are the bytes of the whole.
#[derive(Serialize)]
struct Header {
    sealer: NodeId,
    enc: [u8; 32],
    nonce: u64,
    sealed_at_us: u64,
}

/// The most bytes a [`Header`] and the ciphertext's length take.
const HEADER_MAX: usize = 10 + 32 + 10 + 10 + 10;

impl Sealed {
    /// The bytes of the `Sealed` whose ciphertext is `plaintext` encrypted in place by
    /// `encrypt`, which returns the tag: the payload is copied once, into the encoding itself.
    pub fn encode_in_place<E>(
        sealer: NodeId,
        enc: [u8; 32],
        nonce: u64,
        sealed_at_us: u64,
        plaintext: &[u8],
        encrypt: impl FnOnce(&mut [u8]) -> Result<[u8; TAG_LEN], E>,
    ) -> Result<Vec<u8>, E> {
        let header = Header {
            sealer,
            enc,
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

    /// The pair a sealed payload belongs to, its sealer and encapsulated key, read from the
    /// clear header alone (the ciphertext is not copied): what an opener keeps a pair under.
    pub fn pair_of(bytes: &[u8]) -> Option<(NodeId, [u8; 32])> {
        postcard::take_from_bytes::<(NodeId, [u8; 32])>(bytes)
            .ok()
            .map(|(pair, _)| pair)
    }
}

/// The length of a seal's associated data: source, destination, index, sequence, send time,
/// flags, sealer, seal time, nonce.
const AAD_LEN: usize = 8 + 8 + 1 + 8 + 8 + 1 + 8 + 8 + 8;

/// The associated data of a seal: the message's bound fields, then the seal's own.
pub(crate) fn associated_data(
    bound: &Bound,
    sealer: NodeId,
    sealed_at_us: u64,
    nonce: u64,
) -> [u8; AAD_LEN] {
    let mut aad = [0; AAD_LEN];
    let fields: [&[u8]; 9] = [
        &bound.src.0.to_le_bytes(),
        &bound.dst.0.to_le_bytes(),
        &[bound.index],
        &bound.seq.to_le_bytes(),
        &bound.sent_at_us.to_le_bytes(),
        &[bound.flags],
        &sealer.0.to_le_bytes(),
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
            let whole = Sealed {
                sealer: NodeId(300 + len as u64),
                enc: [9; 32],
                nonce: u64::MAX - len as u64,
                sealed_at_us: 1 << 50,
                ciphertext,
            };
            let in_place = Sealed::encode_in_place(
                whole.sealer,
                whole.enc,
                whole.nonce,
                whole.sealed_at_us,
                &plaintext,
                encrypt,
            )
            .unwrap();
            assert_eq!(in_place, whole.to_bytes(), "{len}");
            assert_eq!(Sealed::from_bytes(&in_place), Some(whole), "{len}");
        }
    }
}
