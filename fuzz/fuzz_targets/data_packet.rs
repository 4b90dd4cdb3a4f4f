//! The packet inside a neighbour's data frame.
#![no_main]
use cuberoute_protocol::wire::packet::{DataPacket, expected_checksum, is_intact};
use cuberoute_protocol::wire::{decode_body, encode_body};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    if let Ok(packet) = decode_body::<DataPacket>(bytes) {
        let _ = expected_checksum(&packet);
        let _ = is_intact(&packet);
        if let Ok(again) = encode_body(&packet) {
            assert_eq!(decode_body::<DataPacket>(&again).ok(), Some(packet));
        }
    }
});
