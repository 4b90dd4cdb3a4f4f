//! What a link data frame carries: a packet of the front door ([`crate::routing::packet`]),
//! guarded or source-routed, with its [`Message`], and the one end-to-end checksum of both.

use crate::routing::packet::{Packet, Route};
use crate::wire::message::Message;

/// A packet as the daemon carries it.
pub type DataPacket = Packet<Message>;

/// The end-to-end checksum `packet` should carry: the message's over (S, D, index, sequence,
/// split, send time, payload), for a source route extended over every node of the route and
/// the set's number of copies, so
/// that a route altered on the way is caught at the destination as an altered payload is.
/// `None` for a source route with no nodes.
pub fn expected_checksum(packet: &DataPacket) -> Option<u32> {
    let (src, dst) = (packet.route.src()?, packet.route.dst()?);
    let message = packet.message.checksum_for(src, dst, packet.route.index());
    Some(match &packet.route {
        Route::Guarded(_) => message,
        Route::Source(r) => {
            let mut hasher = crc32fast::Hasher::new_with_initial(message);
            for v in &r.path {
                hasher.update(&v.0.to_le_bytes());
            }
            hasher.update(&[r.copies]);
            hasher.finalize()
        }
    })
}

/// Set the checksum at the source.
pub fn set_checksum(packet: &mut DataPacket) {
    if let Some(checksum) = expected_checksum(packet) {
        packet.message.checksum = checksum;
    }
}

/// Whether the end-to-end checksum holds.
pub fn is_intact(packet: &DataPacket) -> bool {
    expected_checksum(packet) == Some(packet.message.checksum)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NodeId;
    use crate::paths::guarded::route::Anchors;
    use crate::routing::header::Header;
    use crate::routing::packet::SourceRoute;
    use crate::wire::{decode_body, encode_body};

    fn guarded() -> DataPacket {
        let header = Header {
            src: NodeId(1),
            dst: NodeId(6),
            pd: NodeId(7),
            via: None,
            anchors: Anchors::default(),
            index: 1,
        };
        Packet {
            route: Route::Guarded(header),
            message: Message::new(NodeId(1), 9, false, 1234, true, b"hello".to_vec()),
        }
    }

    fn source() -> DataPacket {
        Packet {
            route: Route::Source(SourceRoute {
                path: vec![NodeId(0), NodeId(1), NodeId(3)],
                position: 1,
                index: 1,
                copies: 2,
            }),
            message: Message::new(NodeId(0), 7, false, 1, true, b"p".to_vec()),
        }
    }

    fn header(p: &mut DataPacket) -> &mut Header {
        match &mut p.route {
            Route::Guarded(h) => h,
            Route::Source(_) => unreachable!(),
        }
    }

    fn path(p: &mut DataPacket) -> &mut SourceRoute {
        match &mut p.route {
            Route::Source(r) => r,
            Route::Guarded(_) => unreachable!(),
        }
    }

    #[test]
    fn the_checksum_covers_endpoints_index_and_payload_not_the_hops() {
        let mut p = guarded();
        assert!(!is_intact(&p) || p.message.checksum == 0);
        set_checksum(&mut p);
        assert!(is_intact(&p));
        let changes: [fn(&mut DataPacket); 6] = [
            |p| header(p).src = NodeId(2),
            |p| header(p).dst = NodeId(4),
            |p| header(p).index = 0,
            |p| p.message.payload[0] ^= 1,
            |p| p.message.seq += 1,
            |p| p.message.split = true,
        ];
        for change in changes {
            let mut changed = p.clone();
            change(&mut changed);
            assert!(!is_intact(&changed));
        }
        let mut hopped = p.clone();
        hopped.message.record_hop(NodeId(7));
        assert!(is_intact(&hopped), "hops and the trace are not covered");
    }

    #[test]
    fn a_source_routed_copy_covers_its_whole_route() {
        let mut p = source();
        assert!(!is_intact(&p), "not sealed yet");
        set_checksum(&mut p);
        assert!(is_intact(&p));
        let bytes = encode_body(&p).unwrap();
        assert_eq!(decode_body::<DataPacket>(&bytes), Ok(p.clone()));
        let changes: [fn(&mut DataPacket); 3] = [
            |p| path(p).path.push(NodeId(7)),
            |p| path(p).index = 0,
            |p| path(p).path[1] = NodeId(2),
        ];
        for change in changes {
            let mut changed = p.clone();
            change(&mut changed);
            assert!(!is_intact(&changed));
        }
        let mut moved = p.clone();
        path(&mut moved).position += 1;
        assert!(is_intact(&moved), "the position moves on at every hop");
    }
}
