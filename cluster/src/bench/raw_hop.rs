//! The baseline of one hop: a raw quinn stream between two processes, with the same TLS and
//! transport configuration as the links; the bench process sends frames one at a time and then
//! a window of them, and the peer ([`peer`], the hidden `bench-relay-peer` command) echoes each
//! back. What the transport costs per hop with nothing else running.

use crate::launch::usage;
use crate::ops::percentiles::Percentiles;
use cuberoute_daemon::link::codec;
use cuberoute_daemon::tls::{self, ALPN_LINK, Credentials};
use cuberoute_protocol::NodeId;
use futures_util::StreamExt;
use serde::Serialize;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio_util::codec::FramedRead;

/// The peer of the baseline: accept one connection at a time on `listen` and echo every frame of
/// every stream back on that stream. Runs until the process is killed.
pub async fn peer(listen: SocketAddr, credentials: Credentials) -> anyhow::Result<()> {
    let endpoint = quinn::Endpoint::server(credentials.server_config(ALPN_LINK), listen)?;
    while let Some(incoming) = endpoint.accept().await {
        tokio::spawn(async move {
            let Ok(connection) = incoming.await else {
                return;
            };
            while let Ok((mut send, recv)) = connection.accept_bi().await {
                tokio::spawn(async move {
                    let mut frames = FramedRead::new(recv, codec());
                    while let Some(Ok(body)) = frames.next().await {
                        if send.write_all(&frame_of(&body)).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
    }
    Ok(())
}

/// A frame of the link codec: `body` after its length.
pub fn frame_of(body: &[u8]) -> Vec<u8> {
    let mut frame = (body.len() as u32).to_be_bytes().to_vec();
    frame.extend_from_slice(body);
    frame
}

/// The baseline, measured against a [`peer`] at `peer` (which presents node `peer_id`'s
/// certificate): per-hop latency (half a round trip) of `n` frames of `frame_len` bytes sent one
/// at a time, and frame-hops per second with `window` frames in flight for `duration`.
#[derive(Clone, Debug, Serialize)]
pub struct RawHop {
    pub frame_len: usize,
    pub per_hop: Percentiles,
    pub window: usize,
    pub frame_hops_per_second: f64,
    /// CPU of both processes (this one and the peer) per frame-hop, one frame at a time...
    pub cpu_us_per_frame_hop_sequential: f64,
    /// ...and with `window` frames in flight.
    pub cpu_us_per_frame_hop_pipelined: f64,
}

/// `pids`: the processes whose CPU the baseline costs (this one and the peer's).
#[allow(clippy::too_many_arguments)]
pub async fn measure(
    pids: &[u32],
    peer: SocketAddr,
    peer_id: NodeId,
    credentials: &Credentials,
    frame_len: usize,
    n: usize,
    window: usize,
    duration: Duration,
) -> anyhow::Result<RawHop> {
    let endpoint = quinn::Endpoint::client("127.0.0.1:0".parse()?)?;
    let connection = endpoint
        .connect_with(
            credentials.client_config(ALPN_LINK),
            peer,
            &tls::node_name(peer_id),
        )?
        .await?;
    let (mut send, recv) = connection.open_bi().await?;
    let mut frames = FramedRead::new(recv, codec());
    let mut frame = (frame_len as u32).to_be_bytes().to_vec();
    frame.resize(4 + frame_len, 7);

    let cpu_us_per_hop =
        |cpu: usage::CpuUse, hops: u64| cpu.cores * cpu.seconds * 1e6 / hops.max(1) as f64;
    let mut hops = Vec::with_capacity(n);
    let (cpu_before, sequential_started) = (usage::cpu_now(pids), Instant::now());
    for _ in 0..n {
        let sent = Instant::now();
        send.write_all(&frame).await?;
        frames
            .next()
            .await
            .ok_or_else(|| anyhow::anyhow!("relay closed"))??;
        hops.push(sent.elapsed().as_secs_f64() * 1e6 / 2.0);
    }
    let sequential = cpu_us_per_hop(
        usage::cpu_since(&cpu_before, sequential_started),
        2 * n as u64,
    );

    let cpu_before = usage::cpu_now(pids);
    let started = Instant::now();
    let mut echoed = 0u64;
    for _ in 0..window {
        send.write_all(&frame).await?;
    }
    while started.elapsed() < duration {
        frames
            .next()
            .await
            .ok_or_else(|| anyhow::anyhow!("relay closed"))??;
        echoed += 1;
        send.write_all(&frame).await?;
    }
    let seconds = started.elapsed().as_secs_f64();
    let pipelined = cpu_us_per_hop(usage::cpu_since(&cpu_before, started), 2 * echoed);
    connection.close(0u32.into(), b"");
    Ok(RawHop {
        frame_len,
        per_hop: Percentiles::of(hops),
        window,
        cpu_us_per_frame_hop_sequential: sequential,
        cpu_us_per_frame_hop_pipelined: pipelined,
        // Every echoed frame made two hops.
        frame_hops_per_second: 2.0 * echoed as f64 / seconds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_is_its_length_then_its_body() {
        assert_eq!(frame_of(b"abc"), [0, 0, 0, 3, b'a', b'b', b'c']);
        assert_eq!(frame_of(b""), [0, 0, 0, 0]);
    }
}
