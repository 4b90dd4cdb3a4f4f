//! The relay faults of the chaos tooling: a curious relay that keeps a copy of every payload it
//! forwards ([`Fault::Capture`](cuberoute_protocol::wire::control::Fault::Capture)), and a
//! Byzantine relay that rewrites every payload it forwards and recomputes the checksum so that
//! the copy passes every check a relay or the destination makes
//! ([`Fault::Forge`](cuberoute_protocol::wire::control::Fault::Forge)).
//!
//! Both act only on packets this node forwards, never on those it sends or delivers: they model
//! a relay on a path. What each delivery mode protects against them is in docs/delivery.md.

use cuberoute_protocol::delivery::Envelope;
use cuberoute_protocol::seal::sealed::Sealed;
use cuberoute_protocol::wire::control::{Captured, ForgeWhat};
use cuberoute_protocol::wire::packet::{DataPacket, set_checksum};
use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

/// The most payload bytes a capturing relay keeps; the oldest captures make room.
pub const CAPTURE_LIMIT_BYTES: usize = 32 << 20;

/// The most payload bytes one answer to `Request::Captured` carries, well under a frame.
pub const ANSWER_LIMIT_BYTES: usize = 512 << 10;

/// The bytes a forging relay XORs into every payload byte. Every forger uses the same mask, so
/// forgers on different paths of a set agree on their forgery: the worst case for a
/// destination that votes.
pub const FORGERY_MASK: u8 = 0x5a;

#[derive(Default)]
pub struct RelayFaults {
    capture: AtomicBool,
    forge: AtomicBool,
    forging: Mutex<ForgeWhat>,
    captures: Mutex<Captures>,
    pub(crate) captured: AtomicU64,
    pub(crate) forged: AtomicU64,
}

#[derive(Default)]
struct Captures {
    entries: VecDeque<Captured>,
    bytes: usize,
    next_index: u64,
}

impl RelayFaults {
    pub fn set_capture(&self, on: bool) {
        self.capture.store(on, Relaxed);
    }

    pub fn set_forge(&self, on: bool, what: ForgeWhat) {
        *self.forging.lock().expect("forge lock") = what;
        self.forge.store(on, Relaxed);
    }

    /// Apply the relay faults that are on to a packet this node is about to forward: capture
    /// its payload as it arrived, then forge it. Returns whether the packet was rewritten.
    pub fn on_forward(&self, packet: &mut DataPacket) -> bool {
        if self.capture.load(Relaxed) {
            self.keep(packet);
        }
        if !self.forge.load(Relaxed) {
            return false;
        }
        let what = *self.forging.lock().expect("forge lock");
        if !what.payload {
            return false;
        }
        forge(packet);
        self.forged.fetch_add(1, Relaxed);
        true
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

/// Rewrite the payload of `packet` as a forging relay does and seal it again, so that its
/// end-to-end checksum holds for the forged payload. A plain copy has every byte changed. A
/// piece of a delivery mode stays a well-formed piece: its data is changed and, where the piece
/// carries the fingerprints of the set's shards, its own fingerprint is made to match, so that
/// only the agreement of the true pieces can tell it. Acknowledgements pass unchanged.
pub fn forge(packet: &mut DataPacket) {
    let message = &mut packet.message;
    if message.sealed {
        // The relay cannot read a sealed payload: it rewrites the ciphertext.
        if let Some(mut sealed) = Sealed::from_bytes(&message.payload) {
            mask(&mut sealed.ciphertext);
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
            Ok(Envelope::Ack(_)) | Err(_) => return,
        }
    } else {
        mask(&mut message.payload);
    }
    set_checksum(packet);
}

fn mask(bytes: &mut [u8]) {
    for byte in bytes {
        *byte ^= FORGERY_MASK;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuberoute_protocol::wire::message::Message;
    use cuberoute_protocol::wire::packet::is_intact;
    use cuberoute_protocol::{NodeId, SendRequest, Topology};

    fn packet(payload: &[u8]) -> DataPacket {
        let topology: Topology = "q:3".parse().unwrap();
        let routes = SendRequest::to(NodeId(7))
            .routes(topology, NodeId(0))
            .unwrap();
        let message = Message::new(NodeId(0), 1, false, 5, false, payload.to_vec());
        let mut process = cuberoute_protocol::Process::new(topology, NodeId(0));
        let (_, mut packet) = process
            .start(&routes, vec![message.clone(), message.clone(), message])
            .into_iter()
            .next()
            .unwrap();
        set_checksum(&mut packet);
        packet
    }

    #[test]
    fn a_forged_packet_passes_the_checksum_with_another_payload() {
        let faults = RelayFaults::default();
        let mut p = packet(b"pay me 10");
        assert!(!faults.on_forward(&mut p));
        faults.set_forge(true, ForgeWhat::PAYLOAD);
        assert!(faults.on_forward(&mut p));
        assert_ne!(p.message.payload, b"pay me 10");
        assert!(is_intact(&p));
        assert_eq!(faults.forged.load(Relaxed), 1);
    }

    #[test]
    fn a_forged_piece_stays_well_formed_with_its_own_fingerprint_matching() {
        use cuberoute_protocol::delivery::{is_well_formed, pieces};
        let mode = "byzantine:1+code:1".parse().unwrap();
        let piece = pieces(mode, 3, b"a coded payload", [0; 32])
            .unwrap()
            .remove(1);
        let mut p = packet(b"");
        p.message = p.message.clone().enveloped();
        p.message.payload = Envelope::Piece(piece.clone()).to_bytes();
        forge(&mut p);
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

    #[test]
    fn captures_are_kept_in_order_and_read_from_an_index() {
        let faults = RelayFaults::default();
        faults.set_capture(true);
        for i in 0..5u8 {
            faults.on_forward(&mut packet(&[i; 4]));
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
        faults.on_forward(&mut packet(b"x"));
        assert_eq!(faults.captured.load(Relaxed), 5);
    }

    #[test]
    fn captures_stay_under_their_byte_limit() {
        let faults = RelayFaults::default();
        faults.set_capture(true);
        let big = vec![1u8; CAPTURE_LIMIT_BYTES / 3 + 1];
        for _ in 0..4 {
            faults.on_forward(&mut packet(&big));
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
            faults.on_forward(&mut packet(&[7u8; 64 << 10]));
        }
        let (entries, next) = faults.since(0, 1024);
        assert_eq!(entries.len(), ANSWER_LIMIT_BYTES / (64 << 10));
        assert_eq!(next, entries.len() as u64);
    }
}
