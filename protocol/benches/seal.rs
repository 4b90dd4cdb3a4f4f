//! End-to-end sealing's cost per message: the seal at the source and the opening at the
//! destination under a session (what every message pays), and the handshake that makes a
//! session (paid once per pair of nodes every two minutes), beside two baselines measured in the
//! same run: a plain copy of the payload, and ring's ChaCha20-Poly1305 over the same bytes (the
//! AEAD sealing used per message before sessions, whose keys ring does not zeroize).

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use cuberoute_protocol::NodeId;
use cuberoute_protocol::seal::keys::{PublicKey, SecretKey};
use cuberoute_protocol::seal::sealed::Bound;
use cuberoute_protocol::seal::session::{Directory, Opened, SessionLimits, Sessions};
use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, Nonce, UnboundKey};
use std::hint::black_box;

struct Two([PublicKey; 2]);

impl Directory for Two {
    fn public_key(&self, node: NodeId) -> Option<PublicKey> {
        self.0.get(node.0 as usize).copied()
    }
}

fn secret(i: u8) -> SecretKey {
    SecretKey::from_seed([i + 1; 32])
}

fn bound(src: u64, dst: u64, seq: u64) -> Bound {
    Bound {
        src: NodeId(src),
        dst: NodeId(dst),
        index: 0,
        seq,
        sent_at_us: 1,
        flags: 2,
        attempt: 1,
    }
}

const NOW: u64 = 1_000_000;

fn node(i: u8) -> Sessions {
    Sessions::new(
        NodeId(u64::from(i)),
        secret(i),
        NOW,
        SessionLimits::default(),
    )
}

/// Nodes 0 and 1 with a session between them.
fn pair(dir: &Two) -> (Sessions, Sessions) {
    let (mut a, mut b) = (node(0), node(1));
    let init = a.start(dir, NodeId(1), NOW, [1; 32]).unwrap().unwrap();
    let Ok(Opened::Answer { resp, .. }) =
        b.open(dir, &bound(0, 1, 0), NOW, &init.bytes, || [2; 32])
    else {
        panic!("answered")
    };
    a.open(dir, &bound(1, 0, 0), NOW, &resp, || [3; 32])
        .unwrap();
    (a, b)
}

fn seal(c: &mut Criterion) {
    let dir = Two([secret(0).public_key(), secret(1).public_key()]);
    for len in [1024usize, 64 * 1024] {
        let payload = vec![0x42; len];
        let mut group = c.benchmark_group(format!("seal/{len}B"));
        group.throughput(Throughput::Bytes(len as u64));
        group.bench_with_input(
            BenchmarkId::new("copy (baseline)", len),
            &payload,
            |b, p| b.iter(|| black_box(p).to_vec()),
        );
        let ring_key =
            LessSafeKey::new(UnboundKey::new(&CHACHA20_POLY1305, &[7; 32]).expect("a key"));
        let mut counter = 0u64;
        group.bench_with_input(
            BenchmarkId::new("ring AEAD seal (baseline)", len),
            &payload,
            |b, p| {
                b.iter(|| {
                    counter += 1;
                    let mut nonce = [0; 12];
                    nonce[4..].copy_from_slice(&counter.to_le_bytes());
                    let mut text = black_box(p).to_vec();
                    ring_key
                        .seal_in_place_append_tag(
                            Nonce::assume_unique_for_key(nonce),
                            Aad::from([0u8; 70]),
                            &mut text,
                        )
                        .unwrap();
                    text
                })
            },
        );
        let (mut a, _) = pair(&dir);
        let mut seq = 0;
        group.bench_with_input(BenchmarkId::new("seal", len), &payload, |b, p| {
            b.iter(|| {
                seq += 1;
                a.seal(&bound(0, 1, seq), NOW, black_box(p)).unwrap()
            })
        });
        // Open a stream of distinct messages of one session (each nonce once).
        let (mut a, b0) = pair(&dir);
        let sealed: Vec<Vec<u8>> = (0..4096)
            .map(|n| a.seal(&bound(0, 1, n), NOW, &payload).unwrap().bytes)
            .collect();
        let mut b = Some(b0);
        let mut n = 0;
        group.bench_with_input(BenchmarkId::new("open", len), &sealed, |bench, sealed| {
            bench.iter(|| {
                if n > 0 && n % sealed.len() == 0 {
                    // Every nonce is taken once per receiver: start over with a receiver of the
                    // same session (`pair` draws the same bytes every time, so the same keys).
                    b = Some(pair(&dir).1);
                }
                let i = n % sealed.len();
                n += 1;
                b.as_mut()
                    .unwrap()
                    .open(
                        &dir,
                        &bound(0, 1, i as u64),
                        NOW,
                        black_box(&sealed[i]),
                        || [0; 32],
                    )
                    .unwrap()
            })
        });
        group.finish();
    }
    // A node derives its own key pair once, at its start: each iteration takes a copy of it,
    // so that what is timed is the handshake alone.
    let mut setup = c.benchmark_group("handshake");
    setup.bench_function("initiator makes its Init (key pair, HPKE AuthEncap)", |b| {
        b.iter(|| node(0).start(&dir, NodeId(1), NOW, [1; 32]).unwrap())
    });
    let init = node(0)
        .start(&dir, NodeId(1), NOW, [1; 32])
        .unwrap()
        .unwrap();
    setup.bench_function(
        "responder opens it and answers (AuthDecap, AuthEncap)",
        |b| {
            b.iter(|| {
                node(1)
                    .open(&dir, &bound(0, 1, 0), NOW, black_box(&init.bytes), || {
                        [2; 32]
                    })
                    .unwrap()
            })
        },
    );
    let Ok(Opened::Answer { resp, .. }) =
        node(1).open(&dir, &bound(0, 1, 0), NOW, &init.bytes, || [2; 32])
    else {
        panic!()
    };
    setup.bench_function("initiator opens the answer (AuthDecap)", |b| {
        b.iter_batched(
            || {
                let mut a = node(0);
                a.start(&dir, NodeId(1), NOW, [1; 32]).unwrap();
                a
            },
            |mut a| {
                a.open(&dir, &bound(1, 0, 0), NOW, black_box(&resp), || [3; 32])
                    .unwrap()
            },
            criterion::BatchSize::SmallInput,
        )
    });
    // A renewal by derivation: a successor's id, message keys and chain key from its parent's
    // chain key (four HMAC-SHA256 expansions and one extraction), beside the full handshake's
    // steps above.
    setup.bench_function("either end derives a successor (HKDF-SHA256)", |b| {
        b.iter(|| cuberoute_protocol::seal::ratchet::successor(black_box(&[7; 32])))
    });
    setup.finish();
}

criterion_group!(benches, seal);
criterion_main!(benches);
