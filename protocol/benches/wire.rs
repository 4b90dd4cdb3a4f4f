//! What a relay's encoding of a packet costs: the packet as a frame body, then that body in a
//! link's data frame, each in one vector of its final length (`encode_body`, `encode_frame`),
//! beside the same bytes made the way postcard makes them on its own, in a vector grown as it
//! goes (the baseline, measured in the same run).

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use cuberoute_protocol::wire::link::LinkFrame;
use cuberoute_protocol::wire::message::Message;
use cuberoute_protocol::wire::packet::DataPacket;
use cuberoute_protocol::wire::{PREFIX_LEN, VERSION, encode_body, encode_frame};
use cuberoute_protocol::{NodeId, Process, SendRequest, Topology};
use serde::Serialize;
use std::hint::black_box;

/// The first copy of a set from node 0 to the farthest node of `topology`, as it leaves the
/// source: a message of `payload` bytes (a sealed 64-byte payload is 104).
fn packet(topology: Topology, payload: usize) -> DataPacket {
    let dst = NodeId(topology.node_count() - 1);
    let routes = SendRequest::to(dst).routes(topology, NodeId(0)).unwrap();
    let message = Message::new(NodeId(0), 1, false, 5, false, vec![7; payload]);
    let copies = vec![message; routes.k()];
    Process::new(topology, NodeId(0))
        .start(&routes, copies)
        .remove(0)
        .1
}

/// The baseline: the body and the frame as postcard's own `to_extend` makes them.
fn grown<T: Serialize>(head: &[u8], value: &T) -> Vec<u8> {
    let mut out = head.to_vec();
    out.push(VERSION);
    postcard::to_extend(value, out).unwrap()
}

fn forward(packet: &DataPacket, sized: bool) -> Vec<u8> {
    let body = if sized {
        encode_body(packet).unwrap()
    } else {
        grown(&[], packet)
    };
    let frame = LinkFrame::Data {
        seq: 1 << 20,
        packet: body,
        mark: None,
    };
    if sized {
        encode_frame(&frame).unwrap()
    } else {
        grown(&[0; PREFIX_LEN], &frame)
    }
}

fn wire(c: &mut Criterion) {
    let mut group = c.benchmark_group("forward_encoding");
    for (topology, payload) in [("eh:2,2", 104), ("eh:5,5", 104), ("q:11", 1024)] {
        let topology: Topology = topology.parse().unwrap();
        let packet = packet(topology, payload);
        assert_eq!(
            forward(&packet, true)[PREFIX_LEN..],
            forward(&packet, false)[PREFIX_LEN..]
        );
        let at = format!("{topology}/{payload}B");
        group.bench_with_input(BenchmarkId::new("grown", &at), &packet, |b, p| {
            b.iter(|| forward(black_box(p), false))
        });
        group.bench_with_input(BenchmarkId::new("sized", &at), &packet, |b, p| {
            b.iter(|| forward(black_box(p), true))
        });
    }
    group.finish();
}

criterion_group!(benches, wire);
criterion_main!(benches);
