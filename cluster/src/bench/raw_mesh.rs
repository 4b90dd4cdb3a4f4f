//! The baseline of a cluster's own graph: a mesh of raw quinn relays, one process per node of
//! the cluster, holding one connection per real neighbour (the lower id dials, as the links do)
//! with one stream each way, and forwarding every frame to the next node its source route names.
//! The bench process is the mesh's node 0. It injects frames whose routes are tours: random
//! pairs joined end to end and back to node 0, each pair by one of the k disjoint paths the
//! cluster itself would use. It takes them back at the tour's end.
//!
//! A relay does what a link does to the transport and nothing else: no routing decision, no
//! sealing, no buffer kept, no acknowledgement of its own. It writes what it has for a
//! neighbour in one go and, like a link, asks QUIC for an immediate acknowledgement when it
//! writes after [`LONE_AFTER`] of silence on that connection. What the transport, the scheduler
//! and the caches cost per hop when as many processes as the cluster's share the cores and the
//! traffic is spread over the cluster's links: what the cluster costs beyond it is the
//! protocol's.
//!
//! Every tour starts and ends at node 0, so node 0 and its neighbours carry more than their
//! share ([`TOUR_PAIRS`] pairs per tour keeps it to a few percent of the hops).

use crate::bench::raw_hop::{self, RawHop};
use crate::bench::raw_ring::{RawProcesses, dial_until_up};
use crate::launch::layout::ClusterDir;
use crate::launch::usage;
use crate::ops::percentiles::Percentiles;
use anyhow::Context;
use bytes::BytesMut;
use cuberoute_daemon::link::{LONE_AFTER, codec};
use cuberoute_daemon::manifest::Manifest;
use cuberoute_daemon::tls::{ALPN_LINK, Credentials};
use cuberoute_protocol::{NodeId, SendRequest, Topology};
use futures_util::StreamExt;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_util::codec::FramedRead;

/// What a mesh of relays on the cluster's graph cost per frame-hop.
#[derive(Clone, Debug, Serialize)]
pub struct RawMesh {
    /// Processes in the mesh, this one included: the cluster's nodes.
    pub processes: usize,
    /// Random pairs per tour.
    pub pairs_per_tour: usize,
    /// The mean hops of a tour.
    pub hops_per_tour: f64,
    /// The figures of the two-process baseline, for the mesh: a tour's time over its hops one
    /// frame at a time, `window` frames touring, the CPU of every process of the mesh.
    #[serde(flatten)]
    pub hop: RawHop,
    /// Wake-ups of the relays (not this process) per frame-hop they took, one at a time...
    pub wakeups_per_frame_hop_sequential: f64,
    /// ...and with `window` touring.
    pub wakeups_per_frame_hop_pipelined: f64,
}

/// The port every relay of a mesh listens on, at its node's address.
pub const MESH_PORT: u16 = 7901;

/// Random pairs joined into one tour.
pub const TOUR_PAIRS: usize = 8;

/// Distinct tours the frames take in turn.
const TOURS: usize = 256;

/// A frame's body: the index of the node it is going to, the tour's length, the tour (every
/// node after node 0, ending with node 0), then padding up to the frame length.
struct Route;

impl Route {
    const HEADER: usize = 4;

    fn encode(tour: &[NodeId], frame_len: usize) -> Vec<u8> {
        let mut body = Vec::with_capacity((Self::HEADER + 2 * tour.len()).max(frame_len));
        body.extend_from_slice(&0u16.to_be_bytes());
        body.extend_from_slice(&(tour.len() as u16).to_be_bytes());
        for node in tour {
            body.extend_from_slice(&(node.0 as u16).to_be_bytes());
        }
        body.resize(body.len().max(frame_len), 7);
        raw_hop::frame_of(&body)
    }

    /// Where the frame `body`, received by `here`, goes next (and mark it gone there), or
    /// `None` at the tour's end.
    fn advance(body: &mut [u8], here: NodeId) -> anyhow::Result<Option<NodeId>> {
        let field = |body: &[u8], at: usize| -> anyhow::Result<usize> {
            let bytes = body
                .get(at..at + 2)
                .context("a frame shorter than its route")?;
            Ok(usize::from(u16::from_be_bytes([bytes[0], bytes[1]])))
        };
        let (at, len) = (field(body, 0)?, field(body, 2)?);
        let node = |i: usize| field(body, Self::HEADER + 2 * i).map(|id| NodeId(id as u64));
        anyhow::ensure!(
            at < len && node(at)? == here,
            "a frame for another node reached {here}"
        );
        if at + 1 == len {
            return Ok(None);
        }
        let next = node(at + 1)?;
        body[..2].copy_from_slice(&(at as u16 + 1).to_be_bytes());
        Ok(Some(next))
    }

    /// The hops of a tour that came back, and of those the relays took (every hop not into
    /// node 0).
    fn hops(body: &[u8]) -> (usize, usize) {
        let len = usize::from(u16::from_be_bytes([body[2], body[3]]));
        let into_0 = body[Self::HEADER..Self::HEADER + 2 * len]
            .chunks(2)
            .filter(|id| id == &[0, 0])
            .count();
        (len, len - into_0)
    }
}

/// `count` tours of `pairs` random pairs each, from node 0 back to node 0, every pair by one
/// of its k disjoint paths picked at random: the nodes after node 0.
fn tours(
    topology: Topology,
    count: usize,
    pairs: usize,
    seed: u64,
) -> anyhow::Result<Vec<Vec<NodeId>>> {
    let mut rng = StdRng::seed_from_u64(seed ^ 0x6d65_7368);
    let n = topology.node_count();
    (0..count)
        .map(|_| {
            let mut stops = vec![NodeId(0)];
            for stop in 1..pairs {
                let last = *stops.last().expect("starts with node 0");
                // Not where the frame is, and the last stop not node 0 itself.
                let next = loop {
                    let next = NodeId((last.0 + rng.random_range(1..n)) % n);
                    if stop + 1 < pairs || next != NodeId(0) {
                        break next;
                    }
                };
                stops.push(next);
            }
            stops.push(NodeId(0));
            let mut tour = Vec::new();
            for pair in stops.windows(2) {
                let paths = SendRequest::to(pair[1])
                    .route_system(topology, pair[0])
                    .with_context(|| format!("the paths from {} to {}", pair[0], pair[1]))?
                    .paths;
                let path = &paths[rng.random_range(0..paths.len())];
                tour.extend_from_slice(&path[1..]);
            }
            Ok(tour)
        })
        .collect()
}

/// One node's place in the mesh: its neighbours' addresses, from the cluster's manifest.
pub struct Place {
    pub topology: Topology,
    pub node: NodeId,
    pub listen: SocketAddr,
    pub neighbours: Vec<(NodeId, SocketAddr)>,
}

impl Place {
    /// `node`'s place in the cluster of `dir`.
    pub fn of(dir: &ClusterDir, node: NodeId) -> anyhow::Result<Place> {
        Place::in_manifest(&Manifest::load(&dir.manifest())?, node)
    }

    pub fn in_manifest(manifest: &Manifest, node: NodeId) -> anyhow::Result<Place> {
        anyhow::ensure!(
            manifest.topology.node_count() <= 1 << 16,
            "a mesh's routes hold node ids of 16 bits"
        );
        let address = |id: NodeId| -> anyhow::Result<SocketAddr> {
            let entry = manifest
                .nodes
                .iter()
                .find(|n| n.id == id)
                .with_context(|| format!("node {id} is not in the manifest"))?;
            let link: SocketAddr = entry.addr.parse().with_context(|| {
                format!(
                    "node {id}: a mesh needs IP link addresses, not {}",
                    entry.addr
                )
            })?;
            Ok(SocketAddr::new(link.ip(), MESH_PORT))
        };
        let neighbours = manifest
            .topology
            .neighbours(node)
            .map(|v| Ok((v, address(v)?)))
            .collect::<anyhow::Result<_>>()?;
        Ok(Place {
            topology: manifest.topology,
            node,
            listen: address(node)?,
            neighbours,
        })
    }
}

/// A neighbour's stream into this node, and the queue of frames to write to it.
struct Neighbour {
    id: NodeId,
    recv: quinn::RecvStream,
    send: quinn::SendStream,
    connection: quinn::Connection,
}

/// Connect `place` to every neighbour: dial those with a higher id, accept the others (a
/// dialler says who it is in its stream's first two bytes).
async fn connect(place: &Place, credentials: &Credentials) -> anyhow::Result<Vec<Neighbour>> {
    let endpoint = quinn::Endpoint::server(credentials.server_config(ALPN_LINK), place.listen)?;
    let higher: Vec<_> = place
        .neighbours
        .iter()
        .filter(|(v, _)| *v > place.node)
        .collect();
    let lower = place.neighbours.len() - higher.len();
    let dials = futures_util::future::try_join_all(higher.iter().map(|&&(id, at)| {
        let endpoint = &endpoint;
        async move {
            let connection = dial_until_up(endpoint, credentials, at, id).await?;
            let (mut send, recv) = connection.open_bi().await?;
            send.write_all(&(place.node.0 as u16).to_be_bytes()).await?;
            anyhow::Ok(Neighbour {
                id,
                recv,
                send,
                connection,
            })
        }
    }));
    let accepts = async {
        let mut accepted = Vec::with_capacity(lower);
        while accepted.len() < lower {
            let incoming = endpoint.accept().await.context("endpoint closed")?;
            let connection = incoming.await?;
            let (send, mut recv) = connection.accept_bi().await?;
            let mut id = [0u8; 2];
            recv.read_exact(&mut id).await?;
            let id = NodeId(u64::from(u16::from_be_bytes(id)));
            anyhow::ensure!(
                place.neighbours.iter().any(|(v, _)| *v == id),
                "{id} is not a neighbour of {}",
                place.node
            );
            accepted.push(Neighbour {
                id,
                recv,
                send,
                connection,
            });
        }
        anyhow::Ok(accepted)
    };
    let (mut all, accepted) = tokio::try_join!(dials, accepts)?;
    all.extend(accepted);
    Ok(all)
}

/// Write every frame queued for one neighbour, all that is queued in one go; after
/// [`LONE_AFTER`] without a write, ask for the acknowledgement at once, as a link does.
async fn write_frames(
    connection: quinn::Connection,
    mut send: quinn::SendStream,
    mut queue: mpsc::UnboundedReceiver<Vec<u8>>,
) -> anyhow::Result<()> {
    let mut last: Option<Instant> = None;
    let mut batch = Vec::new();
    while let Some(frame) = queue.recv().await {
        batch.clear();
        batch.extend_from_slice(&frame);
        while let Ok(more) = queue.try_recv() {
            batch.extend_from_slice(&more);
        }
        send.write_all(&batch).await?;
        if last.is_none_or(|at| at.elapsed() >= LONE_AFTER) {
            connection.request_immediate_ack();
        }
        last = Some(Instant::now());
    }
    Ok(())
}

/// Run `place`'s relay: forward every frame to the next node of its route; a frame at its
/// tour's end goes to `arrivals` (node 0 only). Returns the queues that inject frames towards
/// each neighbour, by id, once every connection is up; the relaying goes on in tasks of the
/// current runtime until a connection ends, when the task returned ends.
async fn start(
    place: &Place,
    credentials: &Credentials,
    arrivals: Option<mpsc::UnboundedSender<BytesMut>>,
) -> anyhow::Result<(Queues, tokio::task::JoinHandle<anyhow::Result<()>>)> {
    let neighbours = connect(place, credentials).await?;
    let mut queues = Vec::with_capacity(neighbours.len());
    let mut streams = Vec::with_capacity(neighbours.len());
    for n in neighbours {
        let (queue, queued) = mpsc::unbounded_channel();
        tokio::spawn(write_frames(n.connection.clone(), n.send, queued));
        queues.push((n.id, queue));
        streams.push(FramedRead::new(n.recv, codec()));
    }
    let forward = queues.clone();
    let here = place.node;
    let relaying = tokio::spawn(async move {
        let mut frames = futures_util::stream::select_all(streams);
        // A connection that ends ends the relay: the measurement is over.
        while let Some(Ok(mut body)) = frames.next().await {
            let Some(next) = Route::advance(&mut body, here)? else {
                let arrivals = arrivals
                    .as_ref()
                    .with_context(|| format!("a tour ended at {here}, not at node 0"))?;
                if arrivals.send(body).is_err() {
                    return Ok(());
                }
                continue;
            };
            let (_, queue) = forward
                .iter()
                .find(|(id, _)| *id == next)
                .with_context(|| format!("{next} is not a neighbour of {here}"))?;
            if queue.send(raw_hop::frame_of(&body)).is_err() {
                return Ok(());
            }
        }
        anyhow::Ok(())
    });
    Ok((queues, relaying))
}

/// The queues of frames to write to each neighbour, by id.
type Queues = Vec<(NodeId, mpsc::UnboundedSender<Vec<u8>>)>;

/// One relay of the mesh, at `place`: runs until the process is killed or a connection ends;
/// a frame it cannot forward is an error (the bench sees the relay's message on its stderr).
pub async fn forward(place: Place, credentials: Credentials) -> anyhow::Result<()> {
    let (_queues, relaying) = start(&place, &credentials, None).await?;
    relaying.await?
}

/// How to measure a mesh.
pub struct MeshRun<'a> {
    /// The relays' processes (this one is added for CPU).
    pub relays: &'a [u32],
    /// Node 0's place: this process.
    pub place: Place,
    pub credentials: &'a Credentials,
    pub frame_len: usize,
    /// At least this many frame-hops one at a time.
    pub sequential_hops: usize,
    pub window: usize,
    pub duration: Duration,
    pub seed: u64,
}

/// Measure the mesh of `run.relays.len() + 1` processes.
pub async fn measure(run: MeshRun<'_>) -> anyhow::Result<RawMesh> {
    let processes = run.relays.len() + 1;
    let tours = tours(run.place.topology, TOURS, TOUR_PAIRS, run.seed)?;
    let frames: Vec<(NodeId, Vec<u8>)> = tours
        .iter()
        .map(|tour| (tour[0], Route::encode(tour, run.frame_len)))
        .collect();
    let (arrived, mut arrivals) = mpsc::unbounded_channel();
    let (queues, _relaying) = tokio::time::timeout(
        Duration::from_secs(120),
        start(&run.place, run.credentials, Some(arrived)),
    )
    .await
    .context("node 0 of the mesh was not connected within 120 s")??;
    let send = |i: usize| -> anyhow::Result<()> {
        let (first, frame) = &frames[i % frames.len()];
        let (_, queue) = queues
            .iter()
            .find(|(id, _)| id == first)
            .context("a tour that does not start at a neighbour of node 0")?;
        queue
            .send(frame.clone())
            .map_err(|_| anyhow::anyhow!("the mesh closed"))
    };
    // A tour that came back: its hops, and those the relays took.
    let mut back = async || -> anyhow::Result<(usize, usize)> {
        let body = tokio::time::timeout(Duration::from_secs(120), arrivals.recv())
            .await
            .context("no tour came back within 120 s")?
            .context("the mesh closed")?;
        Ok(Route::hops(&body))
    };
    // Every relay has its connections once each tour came back.
    for i in 0..frames.len() {
        send(i)?;
        back().await?;
    }

    let mut pids = run.relays.to_vec();
    pids.push(std::process::id());
    let per_hop_cpu =
        |cpu: usage::CpuUse, hops: usize| cpu.cores * cpu.seconds * 1e6 / hops.max(1) as f64;

    let (cpu_before, runs_before) = (usage::cpu_now(&pids), usage::runs_now(run.relays));
    let started = Instant::now();
    let (mut hops, mut relayed, mut per_hop) = (0, 0, Vec::new());
    let mut i = 0;
    while hops < run.sequential_hops || per_hop.len() < 3 {
        let sent = Instant::now();
        send(i)?;
        let (h, r) = back().await?;
        per_hop.push(sent.elapsed().as_secs_f64() * 1e6 / h as f64);
        (hops, relayed, i) = (hops + h, relayed + r, i + 1);
    }
    let cpu_sequential = per_hop_cpu(usage::cpu_since(&cpu_before, started), hops);
    let wakeups_sequential = usage::runs_since(&runs_before).runs as f64 / relayed.max(1) as f64;

    let (cpu_before, runs_before) = (usage::cpu_now(&pids), usage::runs_now(run.relays));
    let started = Instant::now();
    for _ in 0..run.window {
        send(i)?;
        i += 1;
    }
    let (mut hops, mut relayed) = (0, 0);
    while started.elapsed() < run.duration {
        let (h, r) = back().await?;
        (hops, relayed) = (hops + h, relayed + r);
        send(i)?;
        i += 1;
    }
    let seconds = started.elapsed().as_secs_f64();
    let cpu_pipelined = per_hop_cpu(usage::cpu_since(&cpu_before, started), hops);
    let wakeups_pipelined = usage::runs_since(&runs_before).runs as f64 / relayed.max(1) as f64;
    let hops_per_tour = tours.iter().map(Vec::len).sum::<usize>() as f64 / tours.len() as f64;
    Ok(RawMesh {
        processes,
        pairs_per_tour: TOUR_PAIRS,
        hops_per_tour,
        hop: RawHop {
            frame_len: frames[0].1.len() - 4,
            per_hop: Percentiles::of(per_hop),
            window: run.window,
            frame_hops_per_second: hops as f64 / seconds,
            cpu_us_per_frame_hop_sequential: cpu_sequential,
            cpu_us_per_frame_hop_pipelined: cpu_pipelined,
        },
        wakeups_per_frame_hop_sequential: wakeups_sequential,
        wakeups_per_frame_hop_pipelined: wakeups_pipelined,
    })
}

/// Run a mesh on the graph of the cluster of `dir`, on its nodes' addresses (port
/// [`MESH_PORT`]) with its nodes' certificates: the cluster must be down. `exe` is this
/// program, whose hidden `bench-relay-mesh` command is one relay. The relays run at the
/// daemons' niceness, `nice`. `window` frames tour at saturation.
#[allow(clippy::too_many_arguments)]
pub async fn run_on(
    dir: &ClusterDir,
    exe: &Path,
    nice: i32,
    frame_len: usize,
    sequential_hops: usize,
    window: usize,
    duration: Duration,
    seed: u64,
) -> anyhow::Result<RawMesh> {
    let manifest = Manifest::load(&dir.manifest())?;
    let mut relays = RawProcesses(Vec::with_capacity(manifest.nodes.len()));
    for node in manifest.nodes.iter().filter(|n| n.id != NodeId(0)) {
        let child = Command::new(exe)
            .arg("bench-relay-mesh")
            .arg("--cluster")
            .arg(&dir.root)
            .args(["--node", &node.id.0.to_string()])
            .args(["--nice", &nice.to_string()])
            .args(["--parent", &std::process::id().to_string()])
            .stdin(Stdio::null())
            .spawn()
            .context("starting a relay of the mesh")?;
        relays.0.push(child);
    }
    let pids: Vec<u32> = relays.0.iter().map(std::process::Child::id).collect();
    let credentials = Credentials::load(
        &dir.ca_cert(),
        &dir.node_cert(NodeId(0)),
        &dir.node_key(NodeId(0)),
    )?;
    let result = measure(MeshRun {
        relays: &pids,
        place: Place::in_manifest(&manifest, NodeId(0))?,
        credentials: &credentials,
        frame_len,
        sequential_hops,
        window,
        duration,
        seed,
    })
    .await;
    drop(relays);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_follows_its_tour_and_ends_at_node_0() {
        let tour = [NodeId(1), NodeId(3), NodeId(2), NodeId(0)];
        let frame = Route::encode(&tour, 64);
        let mut body = frame[4..].to_vec();
        assert_eq!(body.len(), 64);
        let mut here = NodeId(1);
        let mut visited = vec![here];
        while let Some(next) = Route::advance(&mut body, here).unwrap() {
            here = next;
            visited.push(here);
        }
        assert_eq!(visited, tour);
    }

    #[test]
    fn a_frame_at_the_wrong_node_or_cut_short_is_an_error() {
        let frame = Route::encode(&[NodeId(1), NodeId(0)], 0);
        let mut body = frame[4..].to_vec();
        assert!(Route::advance(&mut body, NodeId(2)).is_err());
        assert!(Route::advance(&mut body[..5], NodeId(1)).is_err());
    }

    #[test]
    fn tours_are_walks_on_the_graph_from_and_to_node_0() {
        let topology: Topology = "eh:2,2".parse().unwrap();
        for tour in tours(topology, 20, TOUR_PAIRS, 1).unwrap() {
            assert_eq!(tour.last(), Some(&NodeId(0)));
            let mut from = NodeId(0);
            for &v in &tour {
                assert!(topology.is_adjacent(from, v), "{from} -> {v}");
                from = v;
            }
        }
    }
}
