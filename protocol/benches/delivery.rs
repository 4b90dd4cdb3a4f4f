//! The delivery layer's cost at the ends of a path set: cutting a payload into its k pieces at
//! the source, and rebuilding it from the fewest pieces that suffice at the destination, for
//! every mode, beside plain copies.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use cuberoute_protocol::delivery::{Mode, pieces, rebuild};
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

criterion_group!(benches, delivery);
criterion_main!(benches);
