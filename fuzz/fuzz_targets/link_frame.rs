//! A neighbour's link frame: whole (length prefix included) and as a body.
#![no_main]
use cuberoute_protocol::wire::link::LinkFrame;
use cuberoute_protocol::wire::{decode_body, decode_frame, encode_frame};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let _ = decode_frame::<LinkFrame>(bytes);
    if let Ok(frame) = decode_body::<LinkFrame>(bytes) {
        // What decodes encodes again, to the same value.
        if let Ok(again) = encode_frame(&frame) {
            assert_eq!(decode_frame::<LinkFrame>(&again).ok(), Some(frame));
        }
    }
});
