//! A node's handling of a neighbour's data frame, as the daemon does it (daemon/src/node/:
//! `handle_data` in mod.rs, `deliver` in destination.rs): decode the packet, run the front
//! door's `hop` through a process, then at the destination check the checksum and hand an
//! envelope to the inbox; on a forward, record the hop and encode the packet into a link frame
//! again (where a frame that grew past the limit must be refused, not panic).
#![no_main]
use cuberoute_protocol::delivery::{Envelope, Inbox, InboxLimits, SetKey};
use cuberoute_protocol::wire::link::LinkFrame;
use cuberoute_protocol::wire::packet::{DataPacket, is_intact};
use cuberoute_protocol::wire::{decode_body, encode_body, encode_frame};
use cuberoute_protocol::{Action, NodeId, Process, Topology};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: (u8, u8, &[u8])| {
    let (which, from, bytes) = input;
    let topology: Topology = ["q:3", "eh:1,2", "hhc:1", "q:5"][usize::from(which % 4)]
        .parse()
        .unwrap();
    let me = NodeId(u64::from(which / 4) % topology.node_count());
    let from = NodeId(u64::from(from) % topology.node_count());
    let Ok(packet) = decode_body::<DataPacket>(bytes) else {
        return;
    };
    let mut process = Process::new(topology, me);
    match process.hop(packet, from) {
        Action::Deliver(mut packet) => {
            packet.message.record_hop(me);
            if !is_intact(&packet) || !packet.message.enveloped {
                return;
            }
            let (Some(src), index) = (packet.route.src(), packet.route.index()) else {
                return;
            };
            if let Ok(Envelope::Piece(piece)) = Envelope::from_bytes(&packet.message.payload) {
                let set = SetKey {
                    src,
                    seq: packet.message.seq,
                    sent_at_us: packet.message.sent_at_us,
                };
                let _ = Inbox::new(InboxLimits::default()).receive(0, set, index, piece);
            }
        }
        Action::Forward { mut packet, .. } => {
            packet.message.record_hop(me);
            if let Ok(body) = encode_body(&packet) {
                let _ = encode_frame(&LinkFrame::Data {
                    seq: 1,
                    packet: body,
                    mark: None,
                });
            }
        }
        Action::Drop { .. } => {}
    }
});
