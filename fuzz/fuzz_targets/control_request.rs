//! A client's control request.
#![no_main]
use cuberoute_protocol::wire::control::Request;
use cuberoute_protocol::wire::{decode_body, decode_frame};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let _ = decode_frame::<Request>(bytes);
    if let Ok(Request::Send { request, .. }) = decode_body::<Request>(bytes) {
        // The daemon asks the front door for routes of whatever a client sends.
        for topology in ["q:3", "eh:2,2", "hhc:2"] {
            let topology = topology.parse().unwrap();
            let _ = request.routes(topology, cuberoute_protocol::NodeId(1));
        }
    }
});
