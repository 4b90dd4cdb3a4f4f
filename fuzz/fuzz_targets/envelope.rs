//! An enveloped message's payload at its destination: decoded, checked, and fed with copies of
//! itself at every index to the inbox, which rebuilds or refuses, never panics.
#![no_main]
use cuberoute_protocol::NodeId;
use cuberoute_protocol::delivery::{Envelope, Inbox, InboxLimits, SetKey, is_well_formed, rebuild};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let Ok(Envelope::Piece(piece)) = Envelope::from_bytes(bytes) else {
        return;
    };
    let well_formed = is_well_formed(&piece);
    let mut inbox = Inbox::new(InboxLimits::default());
    let key = SetKey {
        src: NodeId(1),
        seq: 2,
        sent_at_us: 3,
    };
    let k = piece.k.min(16);
    let mut all = Vec::new();
    for index in 0..k {
        let mut p = piece.clone();
        p.index = index;
        if let Some(b) = p.data.first_mut() {
            *b = b.wrapping_add(index);
        }
        let _ = inbox.receive(u64::from(index), key, index, p.clone());
        all.push(p);
    }
    if well_formed {
        let _ = rebuild(piece.mode, usize::from(piece.k), &all);
    }
    let _ = inbox.expire(u64::MAX);
});
