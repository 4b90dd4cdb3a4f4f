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

impl Sealed {
    pub fn to_bytes(&self) -> Vec<u8> {
        postcard::to_allocvec(self).expect("a sealed payload always serializes")
    }

    pub fn from_bytes(bytes: &[u8]) -> Option<Sealed> {
        match postcard::take_from_bytes(bytes) {
            Ok((sealed, [])) => Some(sealed),
            _ => None,
        }
    }
}

/// The associated data of a seal: the message's bound fields, then the seal's own.
pub(crate) fn associated_data(
    bound: &Bound,
    sealer: NodeId,
    sealed_at_us: u64,
    nonce: u64,
) -> [u8; 62] {
    let mut aad = [0; 62];
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
