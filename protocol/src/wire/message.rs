//! The message a packet carries through the daemon: the paper's `m_i` with what the destination
//! needs to check and report it.

use crate::NodeId;
use crate::seal::sealed::Bound;
use serde::{Deserialize, Serialize};

/// The payload of one copy (or one part, with `split`) and its end-to-end metadata.
///
/// Routing never reads any of it: every routing decision comes from the packet's route. The
/// destination checks [`Message::checksum`] before it hands the message to a client, so a copy
/// whose source, destination, sequence, index or payload was corrupted in flight is counted and
/// dropped, never delivered.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Message {
    /// The sequence id the source's input buffer gave the message set.
    pub seq: u64,
    /// Whether the set is one payload cut into k parts (else k copies of one payload).
    pub split: bool,
    /// Whether the payload is an [`Envelope`](crate::delivery::Envelope) of a delivery mode
    /// (a piece of a set, or an acknowledgement), for the destination's delivery layer rather
    /// than straight for a client.
    pub enveloped: bool,
    /// Whether the payload is sealed end to end ([`crate::seal`]): only the destination reads
    /// it, and only the node named as the source could have sealed it.
    pub sealed: bool,
    /// Whether the set travels as this one copy on one of its pair's k paths
    /// ([`SendRequest::single`](crate::SendRequest)): the destination counts k = 1, whatever
    /// the route's k.
    pub single: bool,
    /// The source's wall clock at `input`, in microseconds since the Unix epoch.
    pub sent_at_us: u64,
    /// Which send of its set this is: 1 for the first, more for a reliable set's resends (for a
    /// handshake message, which of its handshake's Inits). The destination believes no attempt
    /// number: it acknowledges a piece of another attempt than the last it acknowledged, at most
    /// 128 times per set (`delivery/inbox.rs`). A seal binds it.
    pub attempt: u32,
    /// Hops made so far. Not covered by the checksum: it changes at every hop.
    pub hops: u16,
    /// Every node visited, from the source on, when the sender asked for a trace. Not covered
    /// by the checksum: it grows at every hop.
    pub trace: Option<Vec<NodeId>>,
    /// CRC-32 of (S, D, index, seq, split, enveloped, sealed, single, sent_at_us, attempt,
    /// payload).
    pub checksum: u32,
    #[serde(with = "serde_bytes")]
    pub payload: Vec<u8>,
}

impl Message {
    /// A message of the set `seq` from `src`, not yet sealed: [`super::packet::set_checksum`] sets its
    /// checksum once it has a route.
    pub fn new(
        src: NodeId,
        seq: u64,
        split: bool,
        sent_at_us: u64,
        trace: bool,
        payload: Vec<u8>,
    ) -> Message {
        Message {
            seq,
            split,
            enveloped: false,
            sealed: false,
            single: false,
            sent_at_us,
            attempt: 1,
            hops: 0,
            trace: trace.then(|| vec![src]),
            checksum: 0,
            payload,
        }
    }

    /// This message, its payload marked as an envelope of a delivery mode.
    pub fn enveloped(mut self) -> Message {
        self.enveloped = true;
        self
    }

    /// This message, the one copy of a single-path set.
    pub fn single(mut self, single: bool) -> Message {
        self.single = single;
        self
    }

    /// The fields of this message its seal binds, on the path `index` from `src` to `dst`.
    pub fn bound(&self, src: NodeId, dst: NodeId, index: u8) -> Bound {
        Bound {
            src,
            dst,
            index,
            seq: self.seq,
            sent_at_us: self.sent_at_us,
            flags: self.flags(),
            attempt: self.attempt,
        }
    }

    /// Its flags as one byte: split, enveloped, sealed, single.
    pub fn flags(&self) -> u8 {
        self.split as u8
            | (self.enveloped as u8) << 1
            | (self.sealed as u8) << 2
            | (self.single as u8) << 3
    }

    /// This message as attempt `attempt` of its set.
    pub fn attempt(mut self, attempt: u32) -> Message {
        self.attempt = attempt;
        self
    }

    /// The checksum of this message as copy `index` of a set from `src` to `dst`.
    pub fn checksum_for(&self, src: NodeId, dst: NodeId, index: u8) -> u32 {
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(&src.0.to_le_bytes());
        hasher.update(&dst.0.to_le_bytes());
        hasher.update(&[index, self.flags()]);
        hasher.update(&self.seq.to_le_bytes());
        hasher.update(&self.sent_at_us.to_le_bytes());
        hasher.update(&self.attempt.to_le_bytes());
        hasher.update(&self.payload);
        hasher.finalize()
    }

    /// Record one more hop, arriving at `at`.
    pub fn record_hop(&mut self, at: NodeId) {
        self.hops = self.hops.saturating_add(1);
        if let Some(trace) = &mut self.trace {
            trace.push(at);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hop_is_recorded_in_the_count_and_the_trace() {
        let mut m = Message::new(NodeId(1), 9, false, 1234, true, b"hello".to_vec());
        assert_eq!(m.trace, Some(vec![NodeId(1)]));
        m.record_hop(NodeId(7));
        assert_eq!(m.trace, Some(vec![NodeId(1), NodeId(7)]));
        assert_eq!(m.hops, 1);
        let mut untraced = Message::new(NodeId(1), 9, false, 1234, false, vec![]);
        untraced.record_hop(NodeId(7));
        assert_eq!((untraced.trace, untraced.hops), (None, 1));
    }
}
