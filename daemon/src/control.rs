//! The control API server: clients with a client certificate open one stream per request. The
//! node's own certificate (its container healthcheck, `cuberoute status --local`) may ask for
//! the status and nothing else.
//! Requests are checked here (ids in the topology, payload size, wait limits) and answered from
//! the node; nothing a client sends can panic the daemon.

use crate::accept::accept_each;
use crate::env::{self, Instant, now_us};
use crate::io_counts;
use crate::node::{Keep, Node, Payload, Refusal};
use crate::output::{ANSWER_BYTES, SetId, entry_bytes};
use crate::stats::Event;
use crate::tls;
use cuberoute_protocol::delivery::{EncodeError, Envelope, Mode, Scheme, SetKey, Shape, pieces};
use cuberoute_protocol::seal::sealed::SEAL_OVERHEAD;
use cuberoute_protocol::wire::control::{
    ControlError, ControlErrorKind, Delivery, MAX_CONSUMER_LEN, MAX_PAYLOAD_LEN, MAX_RECV_BATCH,
    MAX_WAIT_MS, Request, Response, is_consumer_name,
};
use cuberoute_protocol::wire::{MAX_FRAME_LEN, PREFIX_LEN, decode_frame, encode_frame};
use cuberoute_protocol::{NodeId, Routes, SendRequest};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tracing::{debug, warn};

/// Accept control connections for as long as the endpoint is open.
pub async fn serve(node: Arc<Node>, endpoint: quinn::Endpoint) {
    accept_each(
        node,
        endpoint,
        Event::ClientRefused,
        "control",
        serve_client,
    )
    .await
}

/// One client connection: check who it is, then answer each stream.
async fn serve_client(node: Arc<Node>, connection: quinn::Connection, remote: SocketAddr) {
    // A client may ask anything; the node itself (its healthcheck) only for its status.
    let status_only = match tls::peer_identity(&connection) {
        Ok(tls::Identity::Client) => false,
        Ok(tls::Identity::Node(id)) if id == node.id => true,
        other => {
            node.stats.event(Event::ClientRefused);
            warn!(%remote, identity = ?other, "control connection refused: not a client certificate");
            connection.close(3u32.into(), b"a client certificate is required");
            return;
        }
    };
    while let Ok((send, recv)) = connection.accept_bi().await {
        match node.settings.requests.clone().try_acquire_owned() {
            Ok(permit) => {
                tokio::spawn(answer(node.clone(), send, recv, status_only, permit));
            }
            Err(_) => {
                node.stats.event(Event::RequestRefusedBusy);
                tokio::spawn(refuse_busy(node.settings.requests_limit(), send, recv));
            }
        }
    }
    io_counts::PROCESS.control_closed(&connection);
}

/// Answer a request beyond `buffers.requests` without reading it: busy, try again later.
async fn refuse_busy(limit: usize, mut send: quinn::SendStream, recv: quinn::RecvStream) {
    // Dropping the receiving half tells the client to stop sending the request.
    drop(recv);
    let refusal = Response::Error(ControlError::new(
        ControlErrorKind::Busy,
        format!(
            "{limit} control requests are in progress, the most this node takes (buffers.requests): try again later"
        ),
    ));
    if let Ok(frame) = encode_frame(&refusal) {
        let _ = send.write_all(&frame).await;
        let _ = send.finish();
    }
}

/// Read one request, handle it and write the response; `_permit` is this request's share
/// of `buffers.requests`, returned when it is answered.
///
/// The request's bytes, and the answer's, are held from the node's control bytes
/// ([`crate::budget::Shares::control`]) while they are in memory: a request waits for its share
/// before it is read (its bytes wait in the client's stream, under QUIC flow control), an
/// answer before it is built.
async fn answer(
    node: Arc<Node>,
    mut send: quinn::SendStream,
    mut recv: quinn::RecvStream,
    status_only: bool,
    _permit: tokio::sync::OwnedSemaphorePermit,
) {
    let mut answer_bytes = None;
    let response = match read_request(&node, &mut recv).await {
        Ok((bytes, _request_bytes)) => match decode_frame::<Request>(&bytes) {
            Ok(request) if status_only && request != Request::Status => {
                node.stats.event(Event::ClientRefused);
                Response::Error(ControlError::new(
                    ControlErrorKind::Forbidden,
                    "a node's own certificate may only ask for its status",
                ))
            }
            Ok(request) => handle(&node, request, &mut answer_bytes).await,
            Err(e) => {
                node.stats.event(Event::RequestMalformed);
                debug!(error = %e, "malformed control request");
                Response::Error(bad(format!("malformed request: {e}")))
            }
        },
        Err(message) => {
            node.stats.event(Event::RequestMalformed);
            Response::Error(bad(message))
        }
    };
    match encode_frame(&response) {
        Ok(frame) => {
            drop(response);
            let _ = send.write_all(&frame).await;
            let _ = send.finish();
        }
        Err(e) => warn!(error = %e, "response does not encode"),
    }
}

/// The bytes of one request frame, and its hold on the control bytes.
async fn read_request(
    node: &Node,
    recv: &mut quinn::RecvStream,
) -> Result<(Vec<u8>, tokio::sync::OwnedSemaphorePermit), String> {
    let mut prefix = [0u8; PREFIX_LEN];
    recv.read_exact(&mut prefix)
        .await
        .map_err(|e| format!("request not read: {e}"))?;
    let len = u32::from_be_bytes(prefix) as usize;
    if len > MAX_FRAME_LEN {
        return Err(format!(
            "malformed request: a frame of {len} bytes exceeds the limit of {MAX_FRAME_LEN}"
        ));
    }
    let held = hold_control_bytes(node, PREFIX_LEN + len).await;
    let rest = recv
        .read_to_end(len)
        .await
        .map_err(|e| format!("request not read: {e}"))?;
    let mut bytes = Vec::with_capacity(PREFIX_LEN + rest.len());
    bytes.extend_from_slice(&prefix);
    bytes.extend_from_slice(&rest);
    Ok((bytes, held))
}

/// Wait until `bytes` of the node's control bytes are free, and hold them (at most all of
/// them: one frame larger than the whole share waits for everything else to finish).
async fn hold_control_bytes(node: &Node, bytes: usize) -> tokio::sync::OwnedSemaphorePermit {
    let bytes = bytes.min(node.control_bytes_limit).max(1);
    node.control_bytes
        .clone()
        .acquire_many_owned(bytes as u32)
        .await
        .expect("the control bytes are never closed")
}

fn too_large(len: usize) -> ControlError {
    ControlError::new(
        ControlErrorKind::PayloadTooLarge,
        format!("payload of {len} bytes exceeds the limit of {MAX_PAYLOAD_LEN}"),
    )
}

fn bad(message: String) -> ControlError {
    ControlError::new(ControlErrorKind::BadRequest, message)
}

/// A node id of the topology other than this node.
fn other_node(node: &Node, id: NodeId, role: &str) -> Result<(), ControlError> {
    if !node.topology.contains(id) {
        return Err(ControlError::new(
            ControlErrorKind::UnknownNode,
            format!("{role} {id} is not a node of {}", node.topology),
        ));
    }
    if id == node.id {
        return Err(ControlError::new(
            ControlErrorKind::UnknownNode,
            format!("{role} {id} is this node itself"),
        ));
    }
    Ok(())
}

/// Answer `request`. An answer that carries payloads holds its bytes in `answer_bytes` before
/// it is built, until it is written.
async fn handle(
    node: &Arc<Node>,
    request: Request,
    answer_bytes: &mut Option<tokio::sync::OwnedSemaphorePermit>,
) -> Response {
    match request {
        Request::Inject(fault) => match crate::faults::inject(node, fault) {
            Ok(done) => Response::Injected(done),
            Err(e) => Response::Error(e),
        },
        Request::Status => Response::Status(Box::new(node.status())),
        Request::Captured { after, max } => {
            let max = max.clamp(1, MAX_RECV_BATCH) as usize;
            *answer_bytes = Some(hold_control_bytes(node, MAX_FRAME_LEN).await);
            let (entries, next) = node.chaos.relay.since(after, max);
            Response::Captured { entries, next }
        }
        Request::Send {
            request,
            payload,
            trace,
            mode,
            deadline_ms,
            clear,
        } => {
            for &to in &request.to {
                if let Err(e) = other_node(node, to, "destination") {
                    return Response::Error(e);
                }
                if node.keys.is_revoked(to) {
                    return Response::Error(ControlError::new(
                        ControlErrorKind::UnknownNode,
                        format!("destination {to} is revoked: it is out of the cluster"),
                    ));
                }
            }
            if node.keys.is_revoked(node.id) {
                return Response::Error(ControlError::new(
                    ControlErrorKind::Forbidden,
                    format!("node {} is revoked: the others refuse its sets", node.id),
                ));
            }
            let sealed = node.seal && !clear;
            if mode.is_plain() && payload.len() > MAX_PAYLOAD_LEN {
                return Response::Error(too_large(payload.len()));
            }
            if request.single && mode.scheme != Scheme::Copies {
                return Response::Error(bad(format!(
                    "delivery mode {mode} spreads a set over its k paths; a single-path send is one copy on one path: plain or reliable only"
                )));
            }
            let routes = match request.routes(node.topology, node.id) {
                Ok(routes) => routes,
                Err(e) => return Response::Error(bad(e.to_string())),
            };
            let (k, to) = (routes.k() as u32, routes.destinations());
            let (payload, wire_bytes, keep) = if mode.is_plain() {
                let bytes = routes.parts(&payload).iter().map(Vec::len).sum::<usize>();
                (Payload::Plain(payload), bytes, None)
            } else {
                match enveloped(node, &request, &routes, mode, &payload) {
                    Ok((envelopes, shape)) => {
                        let bytes = envelopes.iter().map(Vec::len).sum();
                        let keep = mode.reliable.then(|| Keep {
                            deadline_us: now_us()
                                + 1000 * u64::from(deadline_ms.clamp(1, MAX_DEADLINE_MS)),
                            shape,
                        });
                        (Payload::Enveloped(envelopes), bytes, keep)
                    }
                    Err(e) => return Response::Error(e),
                }
            };
            // A seal adds its fields and tag to every message.
            let wire_bytes = wire_bytes
                + if sealed {
                    k as usize * SEAL_OVERHEAD
                } else {
                    0
                };
            match node.submit(routes, payload, trace, keep, sealed).await {
                Ok((seq, sent_at_us)) => Response::Accepted {
                    seq,
                    k,
                    sent_at_us,
                    to,
                    wire_bytes: wire_bytes as u64,
                    sealed,
                },
                Err(Refusal::Draining(e)) => Response::Error(ControlError::new(
                    ControlErrorKind::ShuttingDown,
                    e.to_string(),
                )),
                Err(Refusal::OutboxFull(e)) => {
                    Response::Error(ControlError::new(ControlErrorKind::Busy, e.to_string()))
                }
                Err(e @ Refusal::NotKept(_)) => {
                    Response::Error(ControlError::new(ControlErrorKind::Store, e.to_string()))
                }
                Err(e @ Refusal::MemoryBound { .. }) => {
                    node.stats.event(Event::SendRefusedMemoryBound);
                    Response::Error(ControlError::new(ControlErrorKind::Busy, e.to_string()))
                }
            }
        }
        Request::Settled {
            seq,
            sent_at_us,
            wait_ms,
        } => {
            let key = SetKey {
                src: node.id,
                seq,
                sent_at_us,
            };
            let deadline = Instant::now() + wait_limit(wait_ms);
            let watch = node.delivery.watch_settlement(key);
            loop {
                let settling = watch.notified();
                let settled = node.delivery.settlement(&key);
                if settled.is_some() || tokio::time::timeout_at(deadline, settling).await.is_err() {
                    return Response::Settled(settled);
                }
            }
        }
        Request::Await {
            src,
            seq,
            sent_at_us,
            copies,
            timeout_ms,
            sealed,
            mode,
        } => {
            if let Err(e) = other_node(node, src, "source") {
                return Response::Error(e);
            }
            let k = if copies > 0 {
                copies as usize
            } else {
                node.topology.local_connectivity(src, node.id) as usize
            };
            let deadline = Instant::now() + wait_limit(timeout_ms);
            let set = SetId {
                src,
                seq,
                sent_at_us,
                sealed,
                mode,
            };
            // Woken by this set's copies only: a waiting client costs nothing per delivery
            // that does not concern it.
            let watch = node.output.watch_set(set);
            loop {
                let next_copy = watch.notified();
                if node.output.copy_count(set) >= k
                    || tokio::time::timeout_at(deadline, next_copy).await.is_err()
                {
                    let bytes = node.output.copies_bytes(set);
                    *answer_bytes = Some(hold_control_bytes(node, bytes).await);
                    return Response::Copies(node.output.copies(set));
                }
            }
        }
        Request::Recv {
            after,
            max,
            wait_ms,
            clear,
        } => {
            let max = max.clamp(1, MAX_RECV_BATCH) as usize;
            let clear = clear.unwrap_or(!node.seal);
            let deadline = Instant::now() + wait_limit(wait_ms);
            let mut changes = node.output.subscribe();
            // Wait for an entry at `after` or later (the channel holds the next output index),
            // then hold the answer's bytes and build it.
            wait_past(&mut changes, after, deadline).await;
            *answer_bytes = Some(hold_control_bytes(node, ANSWER_BYTES).await);
            let (entries, next) = node.output.since(after, max, clear);
            Response::Output { entries, next }
        }
        Request::Notices {
            after,
            max,
            wait_ms,
        } => {
            let max = max.clamp(1, MAX_RECV_BATCH) as usize;
            let journal = &node.stats.journal;
            let deadline = Instant::now() + wait_limit(wait_ms);
            let mut changes = journal.subscribe();
            let after = after.min(*changes.borrow_and_update());
            while *changes.borrow_and_update() <= after
                && tokio::time::timeout_at(deadline, changes.changed())
                    .await
                    .is_ok()
            {}
            *answer_bytes = Some(hold_control_bytes(node, ANSWER_BYTES).await);
            let (notices, next, missed) = journal.since(after, max);
            Response::Notices {
                notices,
                next,
                missed,
            }
        }
        Request::Revoke { signed } => match node.keys.revoke(&signed) {
            Ok(adopted) => {
                if let Some(e) = &adopted.not_kept {
                    // In force all the same; only a restart would forget it.
                    warn!(error = %e, "revocation list not kept");
                }
                for &revoked in &adopted.newly {
                    node.revoked(revoked);
                }
                Response::Revoked {
                    serial: adopted.serial,
                    newly: adopted.newly,
                }
            }
            Err(e) => Response::Error(ControlError::new(
                ControlErrorKind::BadRequest,
                e.to_string(),
            )),
        },
        Request::Consume {
            consumer,
            taken,
            max,
            wait_ms,
        } => consume(node, &consumer, taken, max, wait_ms, answer_bytes).await,
        Request::Reload => match node.reload() {
            Ok(reload) => Response::Reloaded(reload),
            Err(e) => Response::Error(ControlError::new(
                ControlErrorKind::BadConfig,
                format!("configuration not reloaded, nothing changed: {e}"),
            )),
        },
    }
}

/// `Request::Consume`: record what `consumer` took, then answer the entries from the first it
/// has not taken, waiting up to `wait_ms` for one.
async fn consume(
    node: &Arc<Node>,
    consumer: &str,
    taken: Option<u64>,
    max: u32,
    wait_ms: u32,
    answer_bytes: &mut Option<tokio::sync::OwnedSemaphorePermit>,
) -> Response {
    let store_error =
        |message: String| Response::Error(ControlError::new(ControlErrorKind::Store, message));
    let Some(keeping) = &node.keeping else {
        return store_error(format!(
            "node {} keeps no store (its configuration has no [store]): its reliable sets are in its output buffer only (recv without --consume)",
            node.id
        ));
    };
    if !is_consumer_name(consumer) {
        return Response::Error(bad(format!(
            "consumer {consumer:?}: 1 to {MAX_CONSUMER_LEN} letters, digits, '-', '_' or '.'"
        )));
    }
    let max = max.clamp(1, MAX_RECV_BATCH) as usize;
    let deadline = Instant::now() + wait_limit(wait_ms);
    let mut changes = keeping.subscribe();
    // A consumer cannot have taken what is not there yet: a place past the store's next index
    // would skip every set still to come.
    let next_index = *changes.borrow();
    if let Some(taken) = taken.filter(|&t| t > next_index) {
        return Response::Error(bad(format!(
            "taken {taken} is past the store's next index {next_index}: a consumer takes only what it was given"
        )));
    }
    let from = match keeping.consume(consumer, taken).await {
        Ok(from) => from,
        Err(e) => return store_error(format!("the consumer's place was not kept: {e}")),
    };
    wait_past(&mut changes, from, deadline).await;
    *answer_bytes = Some(hold_control_bytes(node, ANSWER_BYTES).await);
    let mut bytes = 0;
    match keeping.entries(from, max) {
        Ok(entries) => {
            let entries: Vec<Delivery> = entries
                .into_iter()
                .take_while(|d| {
                    let first = bytes == 0;
                    bytes += entry_bytes(d);
                    first || bytes <= ANSWER_BYTES
                })
                .collect();
            let next = entries.last().map_or(from, |d| d.output_index + 1);
            Response::Output { entries, next }
        }
        Err(e) => store_error(e),
    }
}

/// The longest a source keeps a reliable set: 10 minutes.
const MAX_DEADLINE_MS: u32 = 600_000;

/// The envelopes of a set in a delivery `mode`: one destination, not split, a mode that fits
/// its k paths and a payload the mode takes.
fn enveloped(
    node: &Node,
    request: &SendRequest,
    routes: &Routes,
    mode: Mode,
    payload: &[u8],
) -> Result<(Vec<Vec<u8>>, Shape), ControlError> {
    if request.split || !request.is_node_to_node(node.topology) {
        return Err(bad(format!(
            "delivery mode {mode} needs one destination and no --split: the mode spreads the payload over the k paths to that destination itself"
        )));
    }
    let pieces = pieces(mode, routes.k(), payload, env::random()).map_err(|e| match e {
        EncodeError::TooLarge { .. } => {
            ControlError::new(ControlErrorKind::PayloadTooLarge, e.to_string())
        }
        e => bad(e.to_string()),
    })?;
    let shape = pieces[0].shape();
    let envelopes = pieces
        .into_iter()
        .map(|p| Envelope::Piece(p).to_bytes())
        .collect();
    Ok((envelopes, shape))
}

/// Wait until the index `changes` holds (the next one to be written) is past `index`, or until
/// `deadline`.
async fn wait_past(changes: &mut tokio::sync::watch::Receiver<u64>, index: u64, deadline: Instant) {
    while *changes.borrow_and_update() <= index
        && tokio::time::timeout_at(deadline, changes.changed())
            .await
            .is_ok()
    {}
}

fn wait_limit(ms: u32) -> Duration {
    Duration::from_millis(u64::from(ms.min(MAX_WAIT_MS)))
}
