//! A sealed payload at its destination, opened by the node's sessions as `daemon/src/sealing.rs`
//! opens it: the input as the payload itself (a message under a session, an Init, a Resp, or
//! bytes that are none), and a true message of a held session with the input XORed into it.
//! Must hold: no panic; only the true message opens, unchanged, and only once.
#![no_main]
use cuberoute_protocol::NodeId;
use cuberoute_protocol::seal::keys::{PublicKey, SecretKey};
use cuberoute_protocol::seal::sealed::Bound;
use cuberoute_protocol::seal::session::{Directory, OpenError, Opened, SessionLimits, Sessions};
use libfuzzer_sys::fuzz_target;

struct Keys([PublicKey; 3]);

impl Directory for Keys {
    fn public_key(&self, node: NodeId) -> Option<PublicKey> {
        self.0.get(node.0 as usize).copied()
    }
}

const NOW: u64 = 1_000_000_000;

fn secret(i: u8) -> SecretKey {
    SecretKey::from_seed([i + 1; 32])
}

fn bound(src: u64, dst: u64) -> Bound {
    Bound {
        src: NodeId(src),
        dst: NodeId(dst),
        index: 0,
        seq: 9,
        sent_at_us: NOW,
        flags: 4,
        attempt: 1,
    }
}

fuzz_target!(|input: &[u8]| {
    let dir = Keys([secret(0).public_key(), secret(1).public_key(), secret(2).public_key()]);
    let node = |i: u8| Sessions::new(NodeId(u64::from(i)), secret(i), NOW, SessionLimits::default());
    let (mut a, mut b) = (node(0), node(1));
    let init = a.start(&dir, NodeId(1), NOW, [3; 32]).unwrap().unwrap();
    let Ok(Opened::Answer { resp, .. }) = b.open(&dir, &bound(0, 1), NOW, &init.bytes, || [4; 32]) else {
        panic!("a true Init is answered");
    };
    assert_eq!(
        a.open(&dir, &bound(1, 0), NOW, &resp, || [5; 32]),
        Ok(Opened::Established(NodeId(1)))
    );
    // The input itself, from each claimed source, and as an answer to a handshake in flight.
    for src in [0, 2] {
        match b.open(&dir, &bound(src, 1), NOW, input, || [6; 32]) {
            Ok(Opened::Payload(_)) => panic!("made-up bytes opened"),
            _ => {}
        }
    }
    let _ = node(2).start(&dir, NodeId(1), NOW, [7; 32]);
    let _ = a.open(&dir, &bound(1, 0), NOW, input, || [8; 32]);
    // A true message with the input XORed into it.
    let sealed = a.seal(&bound(0, 1), NOW, b"the payload").unwrap().bytes;
    let mut changed = sealed.clone();
    for (i, x) in input.iter().enumerate() {
        let at = i % changed.len();
        changed[at] ^= x;
    }
    let opened = b.open(&dir, &bound(0, 1), NOW, &changed, || [9; 32]);
    if changed == sealed {
        assert_eq!(opened, Ok(Opened::Payload(b"the payload".to_vec())));
        assert_eq!(
            b.open(&dir, &bound(0, 1), NOW, &sealed, || [9; 32]),
            Err(OpenError::Replayed)
        );
    } else {
        assert!(!matches!(opened, Ok(Opened::Payload(_))), "{opened:?}");
        assert_eq!(
            b.open(&dir, &bound(0, 1), NOW, &sealed, || [9; 32]),
            Ok(Opened::Payload(b"the payload".to_vec()))
        );
    }
});
