//! The frame codec: the one place that turns protocol values into bytes and back.
//!
//! A frame is a 4-byte big-endian body length, then the body: one version byte followed by the
//! value in postcard (serde's compact, documented, stable format; docs/protocol.md, "Wire
//! format", says why not bincode). Frames longer than [`MAX_FRAME_LEN`] are refused before any
//! allocation.
//! Decoding never panics: every malformed input is a [`WireError`].

pub mod control;
pub mod link;
pub mod message;
pub mod packet;

use serde::Serialize;
use serde::de::DeserializeOwned;

/// The wire format version this build speaks. 21: many sets in one control request
/// (`Request::SendMany`, `Request::AwaitMany`), and `Accepted` a struct of its own. 20: a node host's readiness in a few bytes
/// (`Request::HostReadiness`). 19: a node host's requests (`Request::Hosted`,
/// `Fault::CrashHosted`, `Fault::RestartHosted`). 18: a hello names its sender's process
/// (`ProcessMark`), for a neighbour on the same machine to see it exit. 17: a link carries its ends' reports of dead and
/// live links (`LinkFrame::Reports`), and a node's status the dead links it routes around. 16: a link going down says why, and a link's
/// status whether liveness suspects its neighbour and why it went down. 15: a recovery Init names the sessions its
/// initiator still holds, and a node's sealing status the answers it sent again. 14: a recovery Init gives its initiator's
/// start, and a node's sealing status the sets it sealed again for a restarted destination. 13: a hello gives the sender's revocation serial,
/// and a link carries a revocation list (`LinkFrame::Revocations`); a consumer asks for clear
/// sets or not; the attempt forgery. 12: sealed payloads under sessions (a message under a
/// session, a handshake's Init and Resp; the attempt bound by the seal), the flood forgery and
/// a node's sealing status. 11: a node's counters give its key agreements
/// (`KeyAgreements`). 10: single-path sends (`SendRequest::single`;
/// a message says it is the one copy of its set, under its flags). 9: the shaping faults (`Fault::Shape`,
/// `Fault::Unshape`) and the shaper's counters in a node's status. 8: a message says which
/// attempt of its set it is; `Settled` answers for a set not yet settled too. 7: a node's configuration gives its niceness.
/// 5: a node's status gives its version, its configuration and the bytes it buffers, and each
/// link's age, frame counts, drops and QUIC's view of its connection. 4: delivery modes (`Send` carries a `Mode` and
/// a deadline, a message says whether its payload is an envelope, `Accepted` gives the bytes on
/// the wire, a `Delivery` its mode and rejected paths, `Settled` asks how a reliable set ended;
/// relay faults `Capture` and `Forge`, `Captured`). 3: one send request for both routing modes
/// (`Send` with a `SendRequest`; `Accepted` names each copy's destination), and one packet type
/// (a route that is a guarded header or a source route). 2: a source-routed copy's checksum
/// covers its route.
pub const VERSION: u8 = 21;

/// The largest body accepted, version byte included.
pub const MAX_FRAME_LEN: usize = 1 << 20;

/// Bytes of the length prefix.
pub const PREFIX_LEN: usize = 4;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("frame of {0} bytes exceeds the maximum of {MAX_FRAME_LEN}")]
    TooLarge(usize),
    #[error("empty frame")]
    Empty,
    #[error("wire version {0} is not supported (this build speaks {VERSION})")]
    Version(u8),
    #[error("malformed frame body: {0}")]
    Malformed(String),
    #[error("trailing {0} bytes after the frame body")]
    Trailing(usize),
}

impl WireError {
    /// A stable snake_case name, for metrics labels.
    pub fn as_str(&self) -> &'static str {
        match self {
            WireError::TooLarge(_) => "frame_too_large",
            WireError::Empty => "frame_empty",
            WireError::Version(_) => "frame_version",
            WireError::Malformed(_) => "frame_malformed",
            WireError::Trailing(_) => "frame_trailing",
        }
    }
}

/// Encode `value` as a whole frame, length prefix included.
pub fn encode_frame<T: Serialize>(value: &T) -> Result<Vec<u8>, WireError> {
    let mut frame = encode_after(&[0; PREFIX_LEN], value)?;
    let body_len = frame.len() - PREFIX_LEN;
    frame[..PREFIX_LEN].copy_from_slice(&(body_len as u32).to_be_bytes());
    Ok(frame)
}

/// Encode `value` as a frame body: the version byte and the value, without a length prefix.
/// A packet travels as such a body inside a [`link::LinkFrame::Data`].
pub fn encode_body<T: Serialize>(value: &T) -> Result<Vec<u8>, WireError> {
    encode_after(&[], value)
}

/// `prefix`, the version byte and `value`, in a vector allocated once at its final length:
/// postcard extends a vector as it goes, a reallocation and a copy at each doubling, which one
/// set at a time was about 2% of a daemon's CPU (docs/notes/2026-11-28-intel-xeon.md). Refused
/// as [`WireError::TooLarge`] before the allocation.
fn encode_after<T: Serialize>(prefix: &[u8], value: &T) -> Result<Vec<u8>, WireError> {
    let malformed = |e: postcard::Error| WireError::Malformed(e.to_string());
    let body_len = 1 + postcard::experimental::serialized_size(value).map_err(malformed)?;
    if body_len > MAX_FRAME_LEN {
        return Err(WireError::TooLarge(body_len));
    }
    let mut out = Vec::with_capacity(prefix.len() + body_len);
    out.extend_from_slice(prefix);
    out.push(VERSION);
    postcard::to_extend(value, out).map_err(malformed)
}

/// The body length announced by a length prefix, checked against [`MAX_FRAME_LEN`].
pub fn body_len(prefix: [u8; PREFIX_LEN]) -> Result<usize, WireError> {
    let len = u32::from_be_bytes(prefix) as usize;
    match len {
        0 => Err(WireError::Empty),
        len if len > MAX_FRAME_LEN => Err(WireError::TooLarge(len)),
        len => Ok(len),
    }
}

/// Decode a frame body (version byte and value, without the length prefix).
pub fn decode_body<T: DeserializeOwned>(body: &[u8]) -> Result<T, WireError> {
    let (&version, rest) = body.split_first().ok_or(WireError::Empty)?;
    if version != VERSION {
        return Err(WireError::Version(version));
    }
    let (value, trailing) =
        postcard::take_from_bytes(rest).map_err(|e| WireError::Malformed(e.to_string()))?;
    if !trailing.is_empty() {
        return Err(WireError::Trailing(trailing.len()));
    }
    Ok(value)
}

/// Decode one whole frame, length prefix included.
pub fn decode_frame<T: DeserializeOwned>(frame: &[u8]) -> Result<T, WireError> {
    if frame.len() < PREFIX_LEN {
        return Err(WireError::Empty);
    }
    let (prefix, body) = frame.split_at(PREFIX_LEN);
    let len = body_len(prefix.try_into().expect("prefix has PREFIX_LEN bytes"))?;
    if body.len() != len {
        return Err(WireError::Malformed(format!(
            "length prefix says {len} bytes, {} follow",
            body.len()
        )));
    }
    decode_body(body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Anchors, Header, NodeId};
    use proptest::prelude::*;

    fn header() -> Header {
        Header {
            src: NodeId(5),
            dst: NodeId(1 << 62),
            pd: NodeId(7),
            via: Some(NodeId(9)),
            anchors: Anchors { fa: 3, fb: 1 },
            index: 2,
        }
    }

    #[test]
    fn round_trips() {
        let frame = encode_frame(&header()).unwrap();
        assert_eq!(decode_frame::<Header>(&frame), Ok(header()));
    }

    #[test]
    fn refuses_wrong_version_and_sizes() {
        let mut frame = encode_frame(&header()).unwrap();
        let other = VERSION.wrapping_add(1);
        frame[PREFIX_LEN] = other;
        assert_eq!(
            decode_frame::<Header>(&frame),
            Err(WireError::Version(other))
        );
        assert_eq!(body_len([0, 0, 0, 0]), Err(WireError::Empty));
        assert_eq!(
            body_len([0, 0x20, 0, 0]),
            Err(WireError::TooLarge(0x20_0000))
        );
        let mut frame = encode_frame(&header()).unwrap();
        frame.push(0);
        assert!(matches!(
            decode_frame::<Header>(&frame),
            Err(WireError::Malformed(_))
        ));
    }

    #[test]
    fn a_frame_is_allocated_once_at_its_length_and_is_postcard_after_its_head() {
        // Longer than any step postcard's growing vector would stop at exactly.
        let payload = vec![7u8; 3000];
        let frame = encode_frame(&payload).unwrap();
        let body = encode_body(&payload).unwrap();
        assert_eq!(frame.capacity(), frame.len());
        assert_eq!(body.capacity(), body.len());
        assert_eq!(&frame[PREFIX_LEN..], &body[..]);
        assert_eq!(body[0], VERSION);
        assert_eq!(body[1..], postcard::to_allocvec(&payload).unwrap()[..]);
        assert_eq!(decode_frame::<Vec<u8>>(&frame), Ok(payload));
    }

    #[test]
    fn a_value_beyond_a_frame_is_refused_by_both_encoders() {
        let just_fits = vec![0u8; MAX_FRAME_LEN - 1 - 3];
        assert_eq!(encode_body(&just_fits).unwrap().len(), MAX_FRAME_LEN);
        let over = vec![0u8; MAX_FRAME_LEN - 3];
        assert_eq!(
            encode_body(&over),
            Err(WireError::TooLarge(MAX_FRAME_LEN + 1))
        );
        assert_eq!(
            encode_frame(&over),
            Err(WireError::TooLarge(MAX_FRAME_LEN + 1))
        );
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = decode_frame::<Header>(&bytes);
            let _ = decode_body::<Header>(&bytes);
            let _ = decode_body::<link::LinkFrame>(&bytes);
            let _ = decode_body::<packet::DataPacket>(&bytes);
        }
    }
}
