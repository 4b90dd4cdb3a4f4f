//! A daemon's control response, as a client reads it.
#![no_main]
use cuberoute_protocol::wire::control::Response;
use cuberoute_protocol::wire::{decode_body, decode_frame};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let _ = decode_frame::<Response>(bytes);
    let _ = decode_body::<Response>(bytes);
});
