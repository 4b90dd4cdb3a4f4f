//! The baseline of a cluster's size: a ring of raw quinn relays, one process per node of the
//! cluster, each forwarding every frame it reads from its predecessor to its successor on one
//! stream, with the links' TLS and transport configuration. The bench process is the ring's
//! node 0: it injects frames and takes them back after a lap of as many hops as there are
//! processes. No routing, no acknowledgement of its own, no buffer kept: what the transport
//! and the scheduler cost per hop when as many processes share the cores as the cluster has.

use crate::bench::raw_hop::{self, RawHop};
use crate::launch::layout::ClusterDir;
use crate::launch::usage;
use crate::ops::percentiles::Percentiles;
use anyhow::Context;
use cuberoute_daemon::link::codec;
use cuberoute_daemon::manifest::Manifest;
use cuberoute_daemon::tls::{self, ALPN_LINK, Credentials};
use cuberoute_protocol::NodeId;
use futures_util::StreamExt;
use serde::Serialize;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tokio_util::codec::FramedRead;

/// What a ring of relays cost per frame-hop.
#[derive(Clone, Debug, Serialize)]
pub struct RawRing {
    /// Processes in the ring, this one included: the hops of one lap.
    pub processes: usize,
    /// The figures of the two-process baseline, for the ring: a lap's time over its hops one
    /// frame at a time, `window` frames going round, the CPU of every process of the ring.
    #[serde(flatten)]
    pub hop: RawHop,
    /// Wake-ups of the relays (not this process) per frame-hop they made, one at a time...
    pub wakeups_per_frame_hop_sequential: f64,
    /// ...and with `window` going round.
    pub wakeups_per_frame_hop_pipelined: f64,
}

/// Make this relay end when the bench process `parent` that started it ends, however it ends
/// (killed, interrupted): the kernel sends it SIGKILL then. A relay whose parent is already
/// gone ends at once.
pub fn end_with(parent: u32) -> anyhow::Result<()> {
    nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)?;
    anyhow::ensure!(
        nix::unistd::getppid().as_raw() as u32 == parent,
        "the bench that started this relay ({parent}) is gone"
    );
    Ok(())
}

/// One relay of the ring: accept the predecessor's connection on `listen`, dial `next` (which
/// presents node `next_id`'s certificate) until it answers, and forward every frame. Runs until
/// the process is killed or either connection ends.
pub async fn forward(
    listen: SocketAddr,
    next: SocketAddr,
    next_id: NodeId,
    credentials: Credentials,
) -> anyhow::Result<()> {
    let endpoint = quinn::Endpoint::server(credentials.server_config(ALPN_LINK), listen)?;
    let dial = async {
        let connection = dial_until_up(&endpoint, &credentials, next, next_id).await?;
        let (send, _recv) = connection.open_bi().await?;
        anyhow::Ok((connection, send))
    };
    let accept = async {
        let incoming = endpoint.accept().await.context("endpoint closed")?;
        let connection = incoming.await?;
        let (_send, recv) = connection.accept_bi().await?;
        anyhow::Ok((connection, recv))
    };
    let ((_to, mut send), (_from, recv)) = tokio::try_join!(dial, accept)?;
    let mut frames = FramedRead::new(recv, codec());
    // Either neighbour going away ends the ring: the measurement is over.
    while let Some(Ok(body)) = frames.next().await {
        if send.write_all(&raw_hop::frame_of(&body)).await.is_err() {
            break;
        }
    }
    Ok(())
}

pub(crate) async fn dial_until_up(
    endpoint: &quinn::Endpoint,
    credentials: &Credentials,
    to: SocketAddr,
    id: NodeId,
) -> anyhow::Result<quinn::Connection> {
    let started = Instant::now();
    loop {
        let connecting = endpoint.connect_with(
            credentials.client_config(ALPN_LINK),
            to,
            &tls::node_name(id),
        )?;
        match connecting.await {
            Ok(connection) => return Ok(connection),
            Err(e) if started.elapsed() > Duration::from_secs(60) => {
                return Err(e).context(format!("the ring's next relay at {to} never answered"));
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

/// How to measure a ring.
pub struct RingRun<'a> {
    /// The relays' processes (this one is added for CPU).
    pub relays: &'a [u32],
    /// Where this process, the ring's node 0, accepts the last relay's connection...
    pub listen: SocketAddr,
    /// ...and where the first relay (node 1) is.
    pub first: SocketAddr,
    pub credentials: &'a Credentials,
    pub frame_len: usize,
    /// At least this many frame-hops one at a time.
    pub sequential_hops: usize,
    pub window: usize,
    pub duration: Duration,
}

/// Measure the ring of `run.relays.len() + 1` processes.
pub async fn measure(run: RingRun<'_>) -> anyhow::Result<RawRing> {
    let processes = run.relays.len() + 1;
    let endpoint = quinn::Endpoint::server(run.credentials.server_config(ALPN_LINK), run.listen)?;
    let to_first = dial_until_up(&endpoint, run.credentials, run.first, NodeId(1)).await?;
    let (mut send, _) = to_first.open_bi().await?;
    let mut frame = (run.frame_len as u32).to_be_bytes().to_vec();
    frame.resize(4 + run.frame_len, 7);
    // The first lap opens the last relay's stream to us.
    send.write_all(&frame).await?;
    let incoming = tokio::time::timeout(Duration::from_secs(120), endpoint.accept())
        .await
        .context("no lap came back within 120 s")?
        .context("endpoint closed")?;
    let from_last = incoming.await?;
    let (_, recv) = from_last.accept_bi().await?;
    let mut frames = FramedRead::new(recv, codec());
    let mut lap = async || -> anyhow::Result<()> {
        frames
            .next()
            .await
            .ok_or_else(|| anyhow::anyhow!("the ring closed"))??;
        Ok(())
    };
    lap().await?;
    for _ in 0..3 {
        send.write_all(&frame).await?;
        lap().await?;
    }

    let mut pids = run.relays.to_vec();
    pids.push(std::process::id());
    let per_hop_cpu =
        |cpu: usage::CpuUse, hops: usize| cpu.cores * cpu.seconds * 1e6 / hops.max(1) as f64;
    let relay_hops = |laps: usize| laps * run.relays.len();

    let laps = run.sequential_hops.div_ceil(processes).max(3);
    let (cpu_before, runs_before) = (usage::cpu_now(&pids), usage::runs_now(run.relays));
    let started = Instant::now();
    let mut per_hop = Vec::with_capacity(laps);
    for _ in 0..laps {
        let sent = Instant::now();
        send.write_all(&frame).await?;
        lap().await?;
        per_hop.push(sent.elapsed().as_secs_f64() * 1e6 / processes as f64);
    }
    let cpu_sequential = per_hop_cpu(usage::cpu_since(&cpu_before, started), laps * processes);
    let wakeups_sequential =
        usage::runs_since(&runs_before).runs as f64 / relay_hops(laps).max(1) as f64;

    let (cpu_before, runs_before) = (usage::cpu_now(&pids), usage::runs_now(run.relays));
    let started = Instant::now();
    for _ in 0..run.window {
        send.write_all(&frame).await?;
    }
    let mut back = 0;
    while started.elapsed() < run.duration {
        lap().await?;
        back += 1;
        send.write_all(&frame).await?;
    }
    let seconds = started.elapsed().as_secs_f64();
    let cpu_pipelined = per_hop_cpu(usage::cpu_since(&cpu_before, started), back * processes);
    let wakeups_pipelined =
        usage::runs_since(&runs_before).runs as f64 / relay_hops(back).max(1) as f64;
    to_first.close(0u32.into(), b"");
    Ok(RawRing {
        processes,
        hop: RawHop {
            frame_len: run.frame_len,
            per_hop: Percentiles::of(per_hop),
            window: run.window,
            frame_hops_per_second: (back * processes) as f64 / seconds,
            cpu_us_per_frame_hop_sequential: cpu_sequential,
            cpu_us_per_frame_hop_pipelined: cpu_pipelined,
        },
        wakeups_per_frame_hop_sequential: wakeups_sequential,
        wakeups_per_frame_hop_pipelined: wakeups_pipelined,
    })
}

/// The port every relay of a ring listens on, at its node's address.
pub const RING_PORT: u16 = 7900;

/// The ring's relay processes; killed and reaped when dropped, however the measurement ended.
pub(crate) struct RawProcesses(pub(crate) Vec<Child>);

impl Drop for RawProcesses {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
        }
        for child in &mut self.0 {
            let _ = child.wait();
        }
    }
}

/// Run a ring as large as the cluster of `dir`, on its nodes' addresses (port [`RING_PORT`])
/// with its nodes' certificates: the cluster must be down. `exe` is this program, whose hidden
/// `bench-relay-ring` command is one relay. The relays run at the daemons' niceness, `nice`.
pub async fn run_on(
    dir: &ClusterDir,
    exe: &Path,
    nice: i32,
    frame_len: usize,
    sequential_hops: usize,
    window: usize,
    duration: Duration,
) -> anyhow::Result<RawRing> {
    let manifest = Manifest::load(&dir.manifest())?;
    let mut addresses = Vec::with_capacity(manifest.nodes.len());
    for node in &manifest.nodes {
        let link: SocketAddr = node.addr.parse().with_context(|| {
            format!(
                "node {}: a ring needs IP link addresses, not {}",
                node.id, node.addr
            )
        })?;
        addresses.push((node.id, SocketAddr::new(link.ip(), RING_PORT)));
    }
    addresses.sort();
    anyhow::ensure!(addresses.len() >= 2, "a ring needs at least two nodes");
    let mut relays = RawProcesses(Vec::with_capacity(addresses.len() - 1));
    for (i, &(id, listen)) in addresses.iter().enumerate().skip(1) {
        let (next_id, next) = addresses[(i + 1) % addresses.len()];
        let child = Command::new(exe)
            .arg("bench-relay-ring")
            .args(["--listen", &listen.to_string()])
            .args(["--next", &next.to_string()])
            .args(["--next-id", &next_id.0.to_string()])
            .args(["--nice", &nice.to_string()])
            .args(["--parent", &std::process::id().to_string()])
            .arg("--ca")
            .arg(dir.ca_cert())
            .arg("--cert")
            .arg(dir.node_cert(id))
            .arg("--key")
            .arg(dir.node_key(id))
            .stdin(Stdio::null())
            .spawn()
            .context("starting a relay of the ring")?;
        relays.0.push(child);
    }
    let pids: Vec<u32> = relays.0.iter().map(Child::id).collect();
    let (first_id, listen) = addresses[0];
    let credentials = Credentials::load(
        &dir.ca_cert(),
        &dir.node_cert(first_id),
        &dir.node_key(first_id),
    )?;
    let result = measure(RingRun {
        relays: &pids,
        listen,
        first: addresses[1].1,
        credentials: &credentials,
        frame_len,
        sequential_hops,
        window,
        duration,
    })
    .await;
    drop(relays);
    result
}
