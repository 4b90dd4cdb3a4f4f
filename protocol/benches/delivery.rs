//! The delivery layer's cost at the ends of a path set: cutting a payload into its k pieces at
//! the source, and rebuilding it from the fewest pieces that suffice at the destination, for
//! every mode, beside plain copies; and the destination's inbox taking a reliable set's piece
//! (whole at once) and acknowledging it, its memory of delivered sets full.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use cuberoute_protocol::NodeId;
use cuberoute_protocol::delivery::{Inbox, InboxLimits, Mode, SetKey, pieces, rebuild};
use std::hint::black_box;

const MODES: [(&str, usize); 6] = [
    ("plain", 4),
    ("code:1", 4),
    ("secret:1", 4),
    ("byzantine:1", 4),
    ("code:3", 8),
    ("byzantine:2+code:2", 8),
];

fn delivery(c: &mut Criterion) {
    for len in [1024usize, 16 * 1024] {
        let payload: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
        let mut encode = c.benchmark_group(format!("encode/{len}B"));
        encode.throughput(Throughput::Bytes(len as u64));
        for (m, k) in MODES {
            let mode: Mode = m.parse().unwrap();
            encode.bench_with_input(BenchmarkId::new(m, k), &payload, |b, p| {
                b.iter(|| pieces(mode, k, black_box(p), [7; 32]).unwrap())
            });
        }
        encode.finish();
        let mut decode = c.benchmark_group(format!("rebuild/{len}B"));
        decode.throughput(Throughput::Bytes(len as u64));
        for (m, k) in MODES {
            let mode: Mode = m.parse().unwrap();
            let all = pieces(mode, k, &payload, [7; 32]).unwrap();
            // The last pieces: a code has to use its parity.
            let needed =
                &all[k - mode
                    .pieces_needed(k)
                    .max(if m.starts_with("byz") { k - 1 } else { 0 })..];
            decode.bench_with_input(BenchmarkId::new(m, k), &needed, |b, p| {
                b.iter(|| rebuild(mode, k, black_box(p)).unwrap())
            });
        }
        decode.finish();
    }
}

/// A reliable set's first piece into an inbox whose memory of delivered sets is at its bound
/// (40,960 sets of 16 sources with the default limits: each new one forgets the oldest), then
/// its acknowledgement: what a busy destination does per reliable set.
fn inbox(c: &mut Criterion) {
    let mode: Mode = "reliable".parse().unwrap();
    let piece = pieces(mode, 4, &[7; 64], [7; 32]).unwrap().remove(0);
    let shape = piece.shape();
    let key = |i: u64| SetKey {
        src: NodeId(i % 16 + 1),
        seq: i,
        sent_at_us: 1_000_000 + i,
    };
    let mut inbox = Inbox::new(InboxLimits::default());
    let full = 10 * InboxLimits::default().max_sets as u64;
    for i in 0..full {
        inbox.receive(2_000_000, key(i), 0, piece.clone());
    }
    assert_eq!(inbox.remembered() as u64, full);
    let mut next = full;
    c.bench_function("inbox/receive+acknowledge", |b| {
        b.iter(|| {
            let set = key(next);
            next += 1;
            inbox.receive(2_000_000, set, 0, piece.clone());
            black_box(inbox.acknowledge(&set, shape, 1))
        })
    });
}

criterion_group!(benches, delivery, inbox);
criterion_main!(benches);
