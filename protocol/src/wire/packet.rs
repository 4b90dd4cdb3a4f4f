//! What a link data frame carries: a packet of the guarded-action protocol (routed hop by hop
//! from its header by `receive`), or a source-routed packet (its whole route in the header,
//! checked hop by hop by [`crate::routing::source_route::receive_source`]).

use crate::wire::message::Message;
use crate::{NodeId, Packet};
use serde::{Deserialize, Serialize};

#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub enum Carried {
    Protocol(Packet<Message>),
    Source(SourcePacket),
}

/// A source-routed copy: the route from the source (first) to the destination (last), the
/// position of the node it is being sent to, and which copy of how many it is.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct SourcePacket {
    pub route: Vec<NodeId>,
    pub position: u16,
    pub index: u8,
    /// How many copies the set has (one per route).
    pub copies: u8,
    pub message: Message,
}

impl SourcePacket {
    /// The source: the route's first node.
    pub fn src(&self) -> Option<NodeId> {
        self.route.first().copied()
    }

    /// The destination: the route's last node.
    pub fn dst(&self) -> Option<NodeId> {
        self.route.last().copied()
    }

    /// The end-to-end checksum this copy should carry: the message's over (S, D, index,
    /// sequence, split, send time, payload), extended over every node of the route, so that a
    /// route altered on the way is caught at the destination as an altered payload is. `None`
    /// for an empty route.
    pub fn expected_checksum(&self) -> Option<u32> {
        let (src, dst) = (self.src()?, self.dst()?);
        let message = self.message.checksum_for(src, dst, self.index);
        let mut hasher = crc32fast::Hasher::new_with_initial(message);
        for v in &self.route {
            hasher.update(&v.0.to_le_bytes());
        }
        Some(hasher.finalize())
    }

    /// Set the checksum at the source.
    pub fn seal(&mut self) {
        if let Some(checksum) = self.expected_checksum() {
            self.message.checksum = checksum;
        }
    }

    /// Whether the end-to-end checksum holds.
    pub fn is_intact(&self) -> bool {
        self.expected_checksum() == Some(self.message.checksum)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{decode_body, encode_body};

    #[test]
    fn both_kinds_round_trip_and_source_copies_check_their_ends() {
        let message = Message::new(NodeId(0), 7, false, 1, true, b"p".to_vec());
        let mut source = SourcePacket {
            route: vec![NodeId(0), NodeId(1), NodeId(3)],
            position: 1,
            index: 1,
            copies: 2,
            message,
        };
        assert!(!source.is_intact(), "not sealed yet");
        source.seal();
        assert!(source.is_intact());
        let carried = Carried::Source(source.clone());
        assert_eq!(
            decode_body::<Carried>(&encode_body(&carried).unwrap()),
            Ok(carried)
        );
        let mut longer = source.clone();
        longer.route.push(NodeId(7));
        assert!(!longer.is_intact(), "the destination is covered");
        let mut other = source.clone();
        other.index = 0;
        assert!(!other.is_intact(), "the copy index is covered");
        let mut detour = source;
        detour.route[1] = NodeId(2);
        assert!(!detour.is_intact(), "every node of the route is covered");
    }
}
