//! The length prefix of a frame, and a stream of frames cut by it as the link reader cuts it.
#![no_main]
use cuberoute_protocol::wire::link::LinkFrame;
use cuberoute_protocol::wire::{PREFIX_LEN, body_len, decode_body};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let mut rest = bytes;
    while rest.len() >= PREFIX_LEN {
        let (prefix, tail) = rest.split_at(PREFIX_LEN);
        let Ok(len) = body_len(prefix.try_into().unwrap()) else {
            return;
        };
        if tail.len() < len {
            return;
        }
        let _ = decode_body::<LinkFrame>(&tail[..len]);
        rest = &tail[len..];
    }
});
