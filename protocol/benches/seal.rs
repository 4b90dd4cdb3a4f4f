//! End-to-end sealing's cost per message: the seal at the source and the opening at the
//! destination once the pair's key is cached (what every message pays), and setting a pair up
//! (the HPKE encapsulation or decapsulation, paid once per pair and run of a node), beside a
//! plain copy of the payload.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use cuberoute_protocol::NodeId;
use cuberoute_protocol::seal::keys::{PublicKey, SecretKey};
use cuberoute_protocol::seal::pair::{Directory, OpenLimits, Opener, Sealer};
use cuberoute_protocol::seal::sealed::Bound;
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

fn bound(seq: u64) -> Bound {
    Bound {
        src: NodeId(0),
        dst: NodeId(1),
        index: 0,
        seq,
        sent_at_us: 1,
        flags: 2,
    }
}

fn seal(c: &mut Criterion) {
    let dir = Two([secret(0).public_key(), secret(1).public_key()]);
    let limits = OpenLimits {
        window_us: u64::MAX,
        ..OpenLimits::default()
    };
    for len in [1024usize, 64 * 1024] {
        let payload = vec![0x42; len];
        let mut group = c.benchmark_group(format!("seal/{len}B"));
        group.throughput(Throughput::Bytes(len as u64));
        group.bench_with_input(
            BenchmarkId::new("copy (baseline)", len),
            &payload,
            |b, p| b.iter(|| black_box(p).to_vec()),
        );
        let mut sealer = Sealer::new(NodeId(0), secret(0));
        let mut seq = 0;
        group.bench_with_input(BenchmarkId::new("seal", len), &payload, |b, p| {
            b.iter(|| {
                seq += 1;
                sealer
                    .seal(&dir, &bound(seq), 10, black_box(p), || [9; 32])
                    .unwrap()
            })
        });
        // Open a stream of distinct messages of one pair (each nonce once).
        let mut sealer = Sealer::new(NodeId(0), secret(0));
        let sealed: Vec<Vec<u8>> = (0..4096)
            .map(|n| {
                sealer
                    .seal(&dir, &bound(n), 10, &payload, || [9; 32])
                    .unwrap()
            })
            .collect();
        let mut opener = Opener::new(NodeId(1), secret(1), 0, limits);
        let mut n = 0;
        group.bench_with_input(BenchmarkId::new("open", len), &sealed, |b, sealed| {
            b.iter(|| {
                if n % sealed.len() == 0 {
                    // Every nonce is taken once per opener: start over with a fresh one.
                    opener = Opener::new(NodeId(1), secret(1), 0, limits);
                }
                let i = n % sealed.len();
                n += 1;
                opener
                    .open(&dir, &bound(i as u64), 20, black_box(&sealed[i]))
                    .unwrap()
            })
        });
        group.finish();
    }
    // A node derives its own key pair once, at its start: each iteration takes a copy of it,
    // so that what is timed is the pair's setup alone.
    let (sender_key, receiver_key) = (secret(0), secret(1));
    let mut setup = c.benchmark_group("pair setup");
    setup.bench_function("sender (HPKE AuthEncap)", |b| {
        b.iter(|| {
            let mut sealer = Sealer::new(NodeId(0), sender_key.clone());
            sealer.seal(&dir, &bound(1), 10, b"x", || [9; 32]).unwrap()
        })
    });
    let first = Sealer::new(NodeId(0), secret(0))
        .seal(&dir, &bound(1), 10, b"x", || [9; 32])
        .unwrap();
    setup.bench_function("receiver (HPKE AuthDecap)", |b| {
        b.iter(|| {
            let mut opener = Opener::new(NodeId(1), receiver_key.clone(), 0, limits);
            opener.open(&dir, &bound(1), 20, black_box(&first)).unwrap()
        })
    });
    setup.finish();
}

criterion_group!(benches, seal);
criterion_main!(benches);
