//! What the payload of a message holds when its set travels in a delivery mode: a piece of the
//! payload for one path, or the destination's acknowledgement of a whole set. The source seals
//! it in a message like any payload; relays never look inside.

use super::mode::Mode;
use crate::NodeId;
use serde::{Deserialize, Serialize};

/// A message set's name: its source, the sequence id the source gave it and the source's clock
/// when it took the set. A resend keeps all three, so the destination knows it again.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Serialize, Deserialize)]
pub struct SetKey {
    pub src: NodeId,
    pub seq: u64,
    pub sent_at_us: u64,
}

/// The payload of an enveloped message.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Serialize, Deserialize)]
pub enum Envelope {
    /// The piece of a set that one path carries.
    Piece(Piece),
    /// From the destination to the source of a reliable set: the set is in the destination's
    /// output for good; stop sending it. With the shape the destination rebuilt it in, so that
    /// a set a relay made up under the same name in another mode (possible only clear) does not
    /// settle the true one.
    Ack { set: SetKey, shape: Shape },
}

/// One path's piece of a set: a whole copy, a Reed-Solomon shard or a Shamir share, with what
/// the destination needs to put the payload back together.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Serialize, Deserialize)]
pub struct Piece {
    pub mode: Mode,
    /// How many pieces (paths) the set has.
    pub k: u8,
    /// Which of them this is: the index of the path it was sent on.
    pub index: u8,
    /// The length of the payload the pieces rebuild.
    pub len: u32,
    /// The copy, shard or share (a share starts with its x coordinate).
    #[serde(with = "serde_bytes")]
    pub data: Vec<u8>,
    /// With a forgery-tolerant erasure code only: the SHA-256 of every one of the k shards, so
    /// that the destination can tell a forged shard once more than `forgers` pieces agree on
    /// this list. Empty otherwise.
    pub fingerprints: Vec<[u8; 32]>,
}

/// What a piece says of its set besides its data: the mode, how many pieces, the payload's
/// length. Sealed, it is the source's; clear, a relay may have rewritten it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Serialize, Deserialize)]
pub struct Shape {
    pub mode: Mode,
    pub k: u8,
    pub len: u32,
}

impl Piece {
    pub fn shape(&self) -> Shape {
        Shape {
            mode: self.mode,
            k: self.k,
            len: self.len,
        }
    }
}

/// Bytes that are not an envelope.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum EnvelopeError {
    #[error("not an envelope: {0}")]
    Decode(String),
    #[error("{0} bytes follow the envelope")]
    Trailing(usize),
}

impl Envelope {
    pub fn to_bytes(&self) -> Vec<u8> {
        postcard::to_allocvec(self).expect("an envelope always serializes")
    }

    /// The envelope in `bytes`, which must hold exactly one.
    pub fn from_bytes(bytes: &[u8]) -> Result<Envelope, EnvelopeError> {
        let (envelope, rest) = postcard::take_from_bytes::<Envelope>(bytes)
            .map_err(|e| EnvelopeError::Decode(e.to_string()))?;
        if !rest.is_empty() {
            return Err(EnvelopeError::Trailing(rest.len()));
        }
        Ok(envelope)
    }

    /// The length of [`Envelope::to_bytes`], without building it.
    pub fn encoded_len(&self) -> usize {
        postcard::experimental::serialized_size(self).expect("an envelope always serializes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn piece() -> Piece {
        Piece {
            mode: "byzantine:1+code:1".parse().unwrap(),
            k: 4,
            index: 2,
            len: 5,
            data: b"hello".to_vec(),
            fingerprints: vec![[7; 32]; 4],
        }
    }

    #[test]
    fn envelopes_round_trip_and_know_their_length() {
        let key = SetKey {
            src: NodeId(3),
            seq: 9,
            sent_at_us: 11,
        };
        let ack = Envelope::Ack {
            set: key,
            shape: piece().shape(),
        };
        for envelope in [Envelope::Piece(piece()), ack] {
            let bytes = envelope.to_bytes();
            assert_eq!(bytes.len(), envelope.encoded_len());
            assert_eq!(Envelope::from_bytes(&bytes), Ok(envelope));
        }
    }

    #[test]
    fn trailing_and_truncated_bytes_are_refused() {
        let mut bytes = Envelope::Piece(piece()).to_bytes();
        bytes.push(0);
        assert_eq!(
            Envelope::from_bytes(&bytes),
            Err(EnvelopeError::Trailing(1))
        );
        bytes.truncate(bytes.len() - 10);
        assert!(matches!(
            Envelope::from_bytes(&bytes),
            Err(EnvelopeError::Decode(_))
        ));
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic_the_decoder(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = Envelope::from_bytes(&bytes);
        }
    }
}
