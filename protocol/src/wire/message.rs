//! The message a packet carries through the daemon: the paper's `m_i` with what the destination
//! needs to check and report it.

use crate::{Header, NodeId};
use serde::{Deserialize, Serialize};

/// The payload of one copy (or one part, with `split`) and its end-to-end metadata.
///
/// Routing never reads any of it: every routing decision comes from the [`Header`]. The
/// destination checks [`Message::checksum`] before it hands the message to a client, so a copy
/// whose source, destination, sequence, index or payload was corrupted in flight is counted and
/// dropped, never delivered.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Message {
    /// The sequence id the source's input buffer gave the message set.
    pub seq: u64,
    /// Whether the set is one payload cut into k parts (else k copies of one payload).
    pub split: bool,
    /// The source's wall clock at `input`, in microseconds since the Unix epoch.
    pub sent_at_us: u64,
    /// Hops made so far. Not covered by the checksum: it changes at every hop.
    pub hops: u16,
    /// Every node visited, from the source on, when the sender asked for a trace. Not covered
    /// by the checksum: it grows at every hop.
    pub trace: Option<Vec<NodeId>>,
    /// CRC-32 of (S, D, index, seq, split, sent_at_us, payload).
    pub checksum: u32,
    #[serde(with = "serde_bytes")]
    pub payload: Vec<u8>,
}

impl Message {
    /// A message of the set `seq` from `src`, not yet sealed: [`Message::seal`] sets its checksum
    /// once `input` has given it a header.
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
            sent_at_us,
            hops: 0,
            trace: trace.then(|| vec![src]),
            checksum: 0,
            payload,
        }
    }

    /// Set the checksum for the copy `header` describes.
    pub fn seal(&mut self, header: &Header) {
        self.checksum = self.expected_checksum(header);
    }

    /// The checksum this message should carry under `header`.
    pub fn expected_checksum(&self, header: &Header) -> u32 {
        self.checksum_for(header.src, header.dst, header.index)
    }

    /// The checksum of this message as copy `index` of a set from `src` to `dst`.
    pub fn checksum_for(&self, src: NodeId, dst: NodeId, index: u8) -> u32 {
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(&src.0.to_le_bytes());
        hasher.update(&dst.0.to_le_bytes());
        hasher.update(&[index, self.split as u8]);
        hasher.update(&self.seq.to_le_bytes());
        hasher.update(&self.sent_at_us.to_le_bytes());
        hasher.update(&self.payload);
        hasher.finalize()
    }

    /// Whether the end-to-end checksum holds.
    pub fn is_intact(&self, header: &Header) -> bool {
        self.checksum == self.expected_checksum(header)
    }

    /// Record one more hop, arriving at `at`.
    pub fn record_hop(&mut self, at: NodeId) {
        self.hops = self.hops.saturating_add(1);
        if let Some(trace) = &mut self.trace {
            trace.push(at);
        }
    }
}

/// Cut `payload` into `k` parts for a split send: the first `len % k` parts are one byte longer.
/// Concatenating the parts in index order gives the payload back.
pub fn split_payload(payload: &[u8], k: usize) -> Vec<Vec<u8>> {
    let (base, extra) = (payload.len() / k, payload.len() % k);
    let mut rest = payload;
    (0..k)
        .map(|i| {
            let (part, tail) = rest.split_at(base + usize::from(i < extra));
            rest = tail;
            part.to_vec()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Anchors;

    fn header() -> Header {
        Header {
            src: NodeId(1),
            dst: NodeId(6),
            pd: NodeId(7),
            via: None,
            anchors: Anchors::default(),
            index: 1,
        }
    }

    #[test]
    fn checksum_covers_endpoints_index_and_payload() {
        let h = header();
        let mut m = Message::new(h.src, 9, false, 1234, true, b"hello".to_vec());
        assert!(!m.is_intact(&h) || m.checksum == 0);
        m.seal(&h);
        assert!(m.is_intact(&h));
        assert_eq!(m.trace, Some(vec![NodeId(1)]));
        for changed in [
            Header {
                src: NodeId(2),
                ..h
            },
            Header {
                dst: NodeId(4),
                ..h
            },
            Header { index: 0, ..h },
        ] {
            assert!(!m.is_intact(&changed));
        }
        let mut payload = m.clone();
        payload.payload[0] ^= 1;
        assert!(!payload.is_intact(&h));
        let mut seq = m.clone();
        seq.seq += 1;
        assert!(!seq.is_intact(&h));
        let mut hopped = m.clone();
        hopped.record_hop(NodeId(7));
        assert!(hopped.is_intact(&h));
        assert_eq!(hopped.trace, Some(vec![NodeId(1), NodeId(7)]));
        assert_eq!(hopped.hops, 1);
    }

    #[test]
    fn split_parts_concatenate_back() {
        for len in 0..20 {
            let payload: Vec<u8> = (0..len as u8).collect();
            for k in 1..6 {
                let parts = split_payload(&payload, k);
                assert_eq!(parts.len(), k);
                assert_eq!(parts.concat(), payload);
                let longest = parts.iter().map(Vec::len).max().unwrap();
                let shortest = parts.iter().map(Vec::len).min().unwrap();
                assert!(longest - shortest <= 1);
            }
        }
    }
}
