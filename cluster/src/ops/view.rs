//! `cuberoute cluster view`: a live page of the cluster, served on 127.0.0.1. The page (one
//! file, no build step, nothing fetched from elsewhere) draws the topology as `paths --svg`
//! lays it out, and follows server-sent events:
//!
//! * `state`, once a round (every [`ROUND`], or as long as asking every node takes): each
//!   node's status (up or not answering, its counters) and each link's state (up, down, cut,
//!   or unknown when neither end answers) and load (data frames per second over both ends);
//! * `notice`, as the nodes note them ([`crate::ops::monitor`]): links going down and up, faults,
//!   and deliveries with the path each copy took (at most [`DELIVERIES_PER_SECOND`] a second;
//!   the rest are counted in the next `state`).
//!
//! Routes: `/` (the page), `/drawing.json` (the layout), `/state.json` (the latest state),
//! `/events` (the stream).

use crate::ops::cluster_client::ClusterClient;
use crate::ops::monitor::{Watched, follow};
use bytes::Bytes;
use cuberoute_protocol::paths::table::node_to_node_paths;
use cuberoute_protocol::wire::control::{Happening, NodeStatus};
use cuberoute_protocol::{NodeId, Topology};
use futures_util::StreamExt;
use http_body_util::{BodyExt, Full, StreamBody, combinators::BoxBody};
use hyper::body::Frame;
use hyper::{Method, Request, Response, StatusCode};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{broadcast, mpsc};

/// How often the nodes are asked for their status.
pub const ROUND: Duration = Duration::from_secs(1);
/// The most deliveries a second the page is sent.
pub const DELIVERIES_PER_SECOND: u32 = 50;
/// The largest cluster drawn.
pub const MAX_NODES: u64 = 2048;

const PAGE: &str = include_str!("view.html");

/// Where the page draws each node and link: `paths --svg`'s layout.
#[derive(Clone, Debug, Serialize)]
pub struct Drawing {
    pub topology: String,
    pub width: f64,
    pub height: f64,
    pub nodes: Vec<DrawnNode>,
    pub links: Vec<DrawnLink>,
}

#[derive(Clone, Debug, Serialize)]
pub struct DrawnNode {
    pub id: u64,
    pub label: String,
    pub x: f64,
    pub y: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct DrawnLink {
    /// The link's ends, `a < b`.
    pub a: u64,
    pub b: u64,
    /// SVG path data from `a` to `b`.
    pub d: String,
    /// EH's dummy edge (drawn dashed, as `paths --svg` draws it).
    pub dummy: bool,
}

struct View {
    drawing: Bytes,
    /// The latest `state` event, for a page that connects between rounds.
    latest: Mutex<Option<Bytes>>,
    events: broadcast::Sender<Bytes>,
    /// Deliveries not sent to the page (over [`DELIVERIES_PER_SECOND`]) since the last state.
    skipped: Mutex<u64>,
}

/// Serve the view on `listener` until the process ends.
pub async fn serve(
    cluster: ClusterClient,
    drawing: Drawing,
    listener: tokio::net::TcpListener,
) -> anyhow::Result<()> {
    let (events, _) = broadcast::channel(1024);
    let view = Arc::new(View {
        drawing: Bytes::from(serde_json::to_vec(&drawing)?),
        latest: Mutex::new(None),
        events,
        skipped: Mutex::new(0),
    });
    tokio::spawn(poll_states(cluster.clone(), view.clone()));
    tokio::spawn(forward_notices(cluster, view.clone()));
    loop {
        let (stream, _) = listener.accept().await?;
        let view = view.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let view = view.clone();
                async move { Ok::<_, Infallible>(answer(&view, &request)) }
            });
            // A page that goes away ends its connection; nothing to report.
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
        });
    }
}

type Body = BoxBody<Bytes, Infallible>;

fn answer(view: &View, request: &Request<hyper::body::Incoming>) -> Response<Body> {
    let full = |content_type: &str, bytes: Bytes| {
        Response::builder()
            .header("content-type", content_type)
            .header("cache-control", "no-store")
            .body(Full::new(bytes).boxed())
            .expect("a valid response")
    };
    if request.method() != Method::GET {
        return status(StatusCode::METHOD_NOT_ALLOWED);
    }
    match request.uri().path() {
        "/" => full(
            "text/html; charset=utf-8",
            Bytes::from_static(PAGE.as_bytes()),
        ),
        "/drawing.json" => full("application/json", view.drawing.clone()),
        "/state.json" => match view.latest.lock().expect("view lock").clone() {
            Some(state) => full("application/json", state),
            None => status(StatusCode::SERVICE_UNAVAILABLE),
        },
        "/events" => {
            let first = view
                .latest
                .lock()
                .expect("view lock")
                .clone()
                .map(|state| sse("state", &state));
            let updates = tokio_stream_of(view.events.subscribe());
            let stream = futures_util::stream::iter(first)
                .chain(updates)
                .map(|bytes| Ok(Frame::data(bytes)));
            Response::builder()
                .header("content-type", "text/event-stream")
                .header("cache-control", "no-store")
                .body(BodyExt::boxed(StreamBody::new(stream)))
                .expect("a valid response")
        }
        _ => status(StatusCode::NOT_FOUND),
    }
}

fn status(code: StatusCode) -> Response<Body> {
    Response::builder()
        .status(code)
        .body(Full::new(Bytes::from(code.to_string())).boxed())
        .expect("a valid response")
}

/// The events broadcast from now on; a page too slow to keep up skips what it missed.
fn tokio_stream_of(
    receiver: broadcast::Receiver<Bytes>,
) -> impl futures_util::Stream<Item = Bytes> + Send {
    futures_util::stream::unfold(receiver, |mut receiver| async move {
        loop {
            match receiver.recv().await {
                Ok(bytes) => return Some((bytes, receiver)),
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    })
}

/// One server-sent event.
fn sse(event: &str, data: &[u8]) -> Bytes {
    let mut bytes = Vec::with_capacity(data.len() + event.len() + 16);
    bytes.extend_from_slice(b"event: ");
    bytes.extend_from_slice(event.as_bytes());
    bytes.extend_from_slice(b"\ndata: ");
    bytes.extend_from_slice(data);
    bytes.extend_from_slice(b"\n\n");
    Bytes::from(bytes)
}

/// Data frames each directed link `(from, to)` has written, and when they were counted.
type Written = BTreeMap<(u64, u64), u64>;
type Counted = (Instant, Written);

/// Ask every node for its status once a round, and publish the state.
async fn poll_states(cluster: ClusterClient, view: Arc<View>) {
    let mut previous: Option<Counted> = None;
    loop {
        let started = Instant::now();
        let statuses = cluster.statuses(ROUND * 2).await;
        let skipped = std::mem::take(&mut *view.skipped.lock().expect("view lock"));
        let (state, written) = state(
            cluster.manifest.topology,
            &statuses,
            previous.as_ref(),
            skipped,
        );
        previous = Some((started, written));
        let bytes = Bytes::from(state.to_string());
        *view.latest.lock().expect("view lock") = Some(bytes.clone());
        let _ = view.events.send(sse("state", &bytes));
        tokio::time::sleep(ROUND.saturating_sub(started.elapsed())).await;
    }
}

/// The `state` event of one round, and each directed link's frames written so far (for the
/// next round's rates).
fn state(
    topology: Topology,
    statuses: &[(NodeId, Result<NodeStatus, String>)],
    previous: Option<&Counted>,
    skipped: u64,
) -> (Value, Written) {
    let by_id: HashMap<u64, &NodeStatus> = statuses
        .iter()
        .filter_map(|(id, s)| s.as_ref().ok().map(|s| (id.0, s)))
        .collect();
    let mut written = BTreeMap::new();
    let mut ends: BTreeMap<(u64, u64), Vec<(bool, bool)>> = BTreeMap::new();
    for status in by_id.values() {
        for link in &status.links {
            let (a, b) = (status.id.0, link.neighbour.0);
            written.insert((a, b), link.frames_written);
            ends.entry((a.min(b), a.max(b)))
                .or_default()
                .push((link.up, link.cut));
        }
    }
    let seconds = previous.map(|(at, _)| at.elapsed().as_secs_f64().max(1e-3));
    let rate = |a: u64, b: u64| -> f64 {
        let (Some(seconds), Some((_, before))) = (seconds, previous) else {
            return 0.0;
        };
        let delta = |x, y| {
            let now = written.get(&(x, y)).copied().unwrap_or(0);
            now.saturating_sub(before.get(&(x, y)).copied().unwrap_or(now))
        };
        (delta(a, b) + delta(b, a)) as f64 / seconds
    };
    let mut links = Vec::new();
    let (mut up, mut cut, mut down) = (0, 0, 0);
    for a in topology.nodes() {
        for b in topology.neighbours(a).filter(|&b| b > a) {
            let seen = ends.get(&(a.0, b.0)).map_or(&[][..], Vec::as_slice);
            let state = if seen.iter().any(|&(_, cut)| cut) {
                cut += 1;
                "cut"
            } else if seen.is_empty() {
                "unknown"
            } else if seen.len() == 2 && seen.iter().all(|&(up, _)| up) {
                up += 1;
                "up"
            } else {
                down += 1;
                "down"
            };
            links.push(json!({
                "a": a.0, "b": b.0, "state": state,
                "rate": (rate(a.0, b.0) * 10.0).round() / 10.0,
            }));
        }
    }
    let nodes: Vec<Value> = statuses
        .iter()
        .map(|(id, status)| match status {
            Ok(s) => {
                let c = &s.counters;
                json!({
                    "id": id.0, "up": true, "uptime_ms": s.uptime_ms,
                    "links_up": s.links_up(), "degree": s.links.len(),
                    "sets_accepted": c.sets_accepted, "packets_sent": c.packets_sent,
                    "packets_forwarded": c.packets_forwarded,
                    "packets_delivered": c.packets_delivered,
                    "dropped": c.dropped_total(), "drops": c.dropped,
                    "input_queued": s.input_queued, "output_len": s.output_len,
                    "link_queued": s.links.iter().map(|l| l.queued).sum::<u64>(),
                    "buffered_bytes": s.buffered_bytes,
                })
            }
            Err(e) => json!({"id": id.0, "up": false, "error": e}),
        })
        .collect();
    let nodes_up = by_id.len();
    let state = json!({
        "topology": topology.to_string(),
        "nodes_up": nodes_up, "node_count": statuses.len(),
        "links_up": up, "links_cut": cut, "links_down": down,
        "deliveries_skipped": skipped,
        "nodes": nodes, "links": links,
    });
    (state, written)
}

/// Follow every node's notices and pass on to the page those it draws.
async fn forward_notices(cluster: ClusterClient, view: Arc<View>) {
    let topology = cluster.manifest.topology;
    let nodes: Vec<NodeId> = cluster.manifest.nodes.iter().map(|n| n.id).collect();
    let (tx, mut rx) = mpsc::channel(4096);
    tokio::spawn(async move { follow(&cluster, &nodes, tx).await });
    let mut paths: HashMap<(NodeId, NodeId), Vec<Vec<NodeId>>> = HashMap::new();
    let (mut second, mut sent_this_second) = (Instant::now(), 0u32);
    while let Some((node, watched)) = rx.recv().await {
        // A node that stops answering (killed, cut off) and answers again (restarted).
        let notice = match watched {
            Watched::Notice(notice) => notice,
            Watched::Unreachable(why) => {
                let event = json!({"kind": "unreachable", "node": node.0, "why": why});
                let _ = view
                    .events
                    .send(sse("notice", event.to_string().as_bytes()));
                continue;
            }
            Watched::Back => {
                let event = json!({"kind": "back", "node": node.0});
                let _ = view
                    .events
                    .send(sse("notice", event.to_string().as_bytes()));
                continue;
            }
            Watched::Missed(_) | Watched::Following => continue,
        };
        let event = match notice.what {
            Happening::LinkUp { neighbour } | Happening::LinkDown { neighbour, .. } => json!({
                "kind": if matches!(notice.what, Happening::LinkUp { .. }) { "link_up" } else { "link_down" },
                "node": node.0, "neighbour": neighbour.0,
            }),
            Happening::Fault { fault } => json!({"kind": "fault", "node": node.0, "fault": fault}),
            // A node revoked, as each node takes the list that revokes it.
            Happening::Event { name, neighbour } if name == "node_revoked" => json!({
                "kind": "event", "node": node.0, "name": name,
                "neighbour": neighbour.map(|n| n.0),
            }),
            Happening::Delivered {
                src,
                seq,
                index,
                k,
                latency_us,
                path,
                ..
            } => {
                if second.elapsed() >= Duration::from_secs(1) {
                    (second, sent_this_second) = (Instant::now(), 0);
                }
                if sent_this_second >= DELIVERIES_PER_SECOND {
                    *view.skipped.lock().expect("view lock") += 1;
                    continue;
                }
                sent_this_second += 1;
                // An untraced copy took the path the algorithm table constructs (every
                // delivered copy does: tests/cluster.rs).
                let path = path.or_else(|| {
                    paths
                        .entry((src, node))
                        .or_insert_with(|| node_to_node_paths(topology, src, node))
                        .get(usize::from(index))
                        .cloned()
                });
                json!({
                    "kind": "delivered", "node": node.0, "src": src.0, "seq": seq,
                    "index": index, "k": k, "latency_us": latency_us,
                    "path": path.map(|p| p.iter().map(|n| n.0).collect::<Vec<_>>()),
                })
            }
            _ => continue,
        };
        let _ = view
            .events
            .send(sse("notice", event.to_string().as_bytes()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuberoute_protocol::wire::control::{Counters, LinkStatus};

    fn node(topology: Topology, id: u64, cut: Option<u64>, written: u64) -> NodeStatus {
        let links = topology
            .neighbours(NodeId(id))
            .map(|n| LinkStatus {
                neighbour: n,
                up: Some(n.0) != cut,
                cut: Some(n.0) == cut,
                queued: 0,
                written_unacknowledged: 0,
                since_ms: 0,
                frames_written: written,
                frames_received: 0,
                frames_resent: 0,
                drops: BTreeMap::new(),
                transport: None,
                dials: id < n.0,
                redial: None,
                suspected: false,
                down: None,
            })
            .collect();
        NodeStatus {
            id: NodeId(id),
            topology,
            pid: 1,
            incarnation: 1,
            uptime_ms: 1,
            links,
            input_queued: 0,
            output_len: 0,
            output_lasts: false,
            counters: Counters::default(),
            chaos: Default::default(),
            version: String::new(),
            wire_version: 0,
            config: Default::default(),
            buffered_bytes: 0,
            revoked: Vec::new(),
            revocation_serial: 0,
            io: Default::default(),
            sealing: Default::default(),
            around: Default::default(),
        }
    }

    #[test]
    fn links_are_up_cut_down_or_unknown_as_their_ends_say() {
        let q2: Topology = "q:2".parse().unwrap();
        // Node 0 cut its link to 1; node 3 does not answer.
        let statuses = vec![
            (NodeId(0), Ok(node(q2, 0, Some(1), 10))),
            (NodeId(1), Ok(node(q2, 1, None, 10))),
            (NodeId(2), Ok(node(q2, 2, None, 10))),
            (NodeId(3), Err("no answer".to_string())),
        ];
        let (first, written) = state(q2, &statuses, None, 0);
        let link = |a: u64, b: u64| {
            first["links"]
                .as_array()
                .unwrap()
                .iter()
                .find(|l| l["a"] == a && l["b"] == b)
                .unwrap()["state"]
                .clone()
        };
        assert_eq!(link(0, 1), "cut");
        assert_eq!(link(0, 2), "up");
        // One end answers and says up, the other is silent: not up.
        assert_eq!(link(1, 3), "down");
        assert_eq!(link(2, 3), "down");
        assert_eq!(
            (first["nodes_up"].clone(), first["links_up"].clone()),
            (3.into(), 1.into())
        );
        assert_eq!(first["nodes"][3]["up"], false);
        assert_eq!(written[&(0, 2)], 10);
        // A round later, 20 frames more each way on 0-2.
        let later = vec![
            (NodeId(0), Ok(node(q2, 0, Some(1), 30))),
            (NodeId(2), Ok(node(q2, 2, None, 30))),
        ];
        let earlier = (Instant::now() - Duration::from_secs(2), written);
        let (second, _) = state(q2, &later, Some(&earlier), 3);
        let rate = second["links"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["a"] == 0 && l["b"] == 2)
            .unwrap()["rate"]
            .as_f64()
            .unwrap();
        assert!((19.0..=20.1).contains(&rate), "{rate}");
        assert_eq!(second["deliveries_skipped"], 3);
    }

    #[test]
    fn events_are_server_sent_event_frames() {
        assert_eq!(&sse("state", b"{}")[..], b"event: state\ndata: {}\n\n");
    }
}
