//! The control API server: clients with a client certificate open one stream per request, and
//! each request is answered only if the certificate's role allows it ([`crate::roles`]; a
//! refusal is counted `request_refused_role` and names the role needed). The node's own
//! certificate (its container healthcheck, `cuberoute status --local`) may ask for the status
//! and nothing else.
//! Requests are read and checked here (frame size, wait and batch limits, a source's id), mapped
//! to the node's calls and their results back to responses; what sending a set decides (its
//! destinations, routes, envelopes, deadline, sealing, revocation) is the node's
//! ([`Node::send`]). Nothing a client sends can panic the daemon.

mod many;

use crate::accept::accept_each;
use crate::env::Instant;
use crate::host::Host;
use crate::io_counts;
use crate::keys::Origin;
use crate::node::Node;
use crate::node::source::{NotSent, Refusal};
use crate::output::{ANSWER_BYTES, SetId};
use crate::roles::ClientRole;
use crate::stats::Event;
use crate::tls;
use cuberoute_protocol::NodeId;
use cuberoute_protocol::delivery::{EncodeError, SetKey};
use cuberoute_protocol::wire::control::{
    AwaitOne, ControlError, ControlErrorKind, Fault, HOST_READINESS_NAMED, HostReadiness,
    MAX_CONSUMER_LEN, MAX_RECV_BATCH, MAX_WAIT_MS, Request, Response, is_consumer_name,
};
use cuberoute_protocol::wire::{MAX_FRAME_LEN, PREFIX_LEN, decode_frame, encode_frame};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tracing::{debug, warn};

/// Accept control connections for as long as the endpoint is open.
pub async fn serve(node: Arc<Node>, endpoint: quinn::Endpoint, host: Option<Arc<Host>>) {
    accept_each(
        node,
        endpoint,
        None,
        Event::ClientRefused,
        "control",
        move |node, connection, remote| serve_client(node, connection, remote, host.clone()),
    )
    .await
}

/// The accept loop of a control endpoint the nodes of a process share ([`Host::shares_control`]):
/// each connection is the node its client named, served until it ends or that node stops (a
/// node crashed inside its process cuts its clients off, as a killed process would).
pub async fn serve_shared(host: Arc<Host>, endpoint: quinn::Endpoint) {
    let owner = host.clone();
    accept_each(
        owner,
        endpoint,
        None,
        Event::ClientRefused,
        "control",
        move |node, connection, remote| {
            let host = host.clone();
            async move {
                let Some(mut running) = host.running(node.id()) else {
                    connection.close(STOPPED.into(), b"that node does not run");
                    return;
                };
                let serving = serve_client(node, connection.clone(), remote, Some(host));
                tokio::select! {
                    () = serving => {}
                    _ = running.wait_for(|runs| !*runs) => {
                        connection.close(STOPPED.into(), b"the node stopped");
                    }
                }
            }
        },
    )
    .await
}

/// The code a shared control endpoint closes a connection with when its node stops.
const STOPPED: u32 = 4;

/// What a control connection may ask for.
#[derive(Clone, Debug)]
enum Access {
    /// A client: what its role allows.
    Client(ClientRole),
    /// The node's own certificate (its healthcheck): its status only.
    StatusOnly,
}

impl Access {
    /// Whether `request` may be made of node `at`; if not, the one line saying why.
    fn allows(&self, at: NodeId, request: &Request) -> Result<(), String> {
        match self {
            Access::Client(role) => role.allows(at, request),
            Access::StatusOnly if *request == Request::Status => Ok(()),
            Access::StatusOnly => {
                Err("a node's own certificate may only ask for its status".into())
            }
        }
    }
}

/// One client connection: check who it is, then answer each stream.
async fn serve_client(
    node: Arc<Node>,
    connection: quinn::Connection,
    remote: SocketAddr,
    host: Option<Arc<Host>>,
) {
    // A client may ask what its role allows; the node itself (its healthcheck) only for its
    // status.
    let access = match tls::peer_identity(&connection) {
        Ok(tls::Identity::Client(role)) => Access::Client(role),
        Ok(tls::Identity::Node(id)) if id == node.id() => Access::StatusOnly,
        other => {
            node.stats().event(Event::ClientRefused);
            warn!(%remote, identity = ?other, "control connection refused: not a client certificate");
            connection.close(3u32.into(), b"a client certificate is required");
            return;
        }
    };
    // Each request's task is this connection's, dropped with it (and with the node's tasks).
    let mut answering = tokio::task::JoinSet::new();
    loop {
        let (send, recv) = tokio::select! {
            accepted = connection.accept_bi() => match accepted {
                Ok(streams) => streams,
                Err(_) => break,
            },
            Some(_) = answering.join_next(), if !answering.is_empty() => continue,
        };
        match node.settings().requests.clone().try_acquire_owned() {
            Ok(permit) => {
                answering.spawn(tracing::Instrument::in_current_span(answer(
                    node.clone(),
                    host.clone(),
                    send,
                    recv,
                    access.clone(),
                    permit,
                )));
            }
            Err(_) => {
                node.stats().event(Event::RequestRefusedBusy);
                answering.spawn(refuse_busy(node.settings().requests_limit(), send, recv));
            }
        }
    }
    io_counts::PROCESS.control_closed(&connection);
    // Requests under way are carried out to their end, as a closed connection does not undo
    // them.
    while answering.join_next().await.is_some() {}
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
    host: Option<Arc<Host>>,
    mut send: quinn::SendStream,
    mut recv: quinn::RecvStream,
    access: Access,
    _permit: tokio::sync::OwnedSemaphorePermit,
) {
    let mut answer_bytes = None;
    let response = match read_request(&node, &mut recv).await {
        Ok((bytes, _request_bytes)) => match decode_frame::<Request>(&bytes) {
            Ok(request) => match access.allows(node.id(), &request) {
                Ok(()) => handle(&node, host.as_deref(), request, &mut answer_bytes).await,
                Err(why) => {
                    node.stats().event(Event::RequestRefusedRole);
                    debug!(?access, why, "control request refused");
                    Response::Error(ControlError::new(ControlErrorKind::Forbidden, why))
                }
            },
            Err(e) => {
                node.stats().event(Event::RequestMalformed);
                debug!(error = %e, "malformed control request");
                Response::Error(bad(format!("malformed request: {e}")))
            }
        },
        Err(message) => {
            node.stats().event(Event::RequestMalformed);
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
    let held = node.hold_control_bytes(PREFIX_LEN + len).await;
    let rest = recv
        .read_to_end(len)
        .await
        .map_err(|e| format!("request not read: {e}"))?;
    let mut bytes = Vec::with_capacity(PREFIX_LEN + rest.len());
    bytes.extend_from_slice(&prefix);
    bytes.extend_from_slice(&rest);
    Ok((bytes, held))
}

fn bad(message: String) -> ControlError {
    ControlError::new(ControlErrorKind::BadRequest, message)
}

/// A node id of the topology other than this node.
fn other_node(node: &Node, id: NodeId, role: &'static str) -> Result<(), ControlError> {
    node.other_node(id, role)
        .map_err(|e| ControlError::new(ControlErrorKind::UnknownNode, e.to_string()))
}

/// Why a set was not sent, as the client is told.
fn not_sent(refused: NotSent) -> ControlError {
    let kind = match &refused {
        NotSent::NotOther(_) | NotSent::DestinationRevoked(_) => ControlErrorKind::UnknownNode,
        NotSent::Revoked(_) => ControlErrorKind::Forbidden,
        NotSent::TooLarge(_) | NotSent::Pieces(EncodeError::TooLarge { .. }) => {
            ControlErrorKind::PayloadTooLarge
        }
        NotSent::SingleSpread(_)
        | NotSent::NoRoutes(_)
        | NotSent::NotNodeToNode(_)
        | NotSent::Pieces(_) => ControlErrorKind::BadRequest,
        NotSent::Refused(Refusal::Draining(_)) => ControlErrorKind::ShuttingDown,
        NotSent::Refused(Refusal::OutboxFull(_) | Refusal::MemoryBound { .. }) => {
            ControlErrorKind::Busy
        }
        NotSent::Refused(Refusal::NotKept(_)) => ControlErrorKind::Store,
    };
    ControlError::new(kind, refused.to_string())
}

/// The most bytes of statuses one answer to [`Request::Hosted`] carries, well under a frame.
const HOSTED_ANSWER_BYTES: usize = MAX_FRAME_LEN / 2;

/// The statuses of the nodes of this process (`host`, or the node alone) from the first
/// above `after`, as many as [`HOSTED_ANSWER_BYTES`] holds (at least one).
fn hosted(node: &Arc<Node>, host: Option<&Host>, after: Option<NodeId>) -> Response {
    let nodes = match host {
        Some(host) => host.nodes_after(after),
        None if after.is_none_or(|a| a < node.id()) => vec![(node.id(), Some(node.clone()))],
        None => Vec::new(),
    };
    let (mut statuses, mut stopped, mut bytes) = (Vec::new(), Vec::new(), 0);
    for (i, (id, running)) in nodes.iter().enumerate() {
        if let Some(running) = running {
            let status = running.status();
            bytes += postcard::to_allocvec(&status).map_or(HOSTED_ANSWER_BYTES, |b| b.len());
            if bytes > HOSTED_ANSWER_BYTES && !statuses.is_empty() {
                let next = Some(nodes[i - 1].0);
                return Response::Hosted {
                    statuses,
                    stopped,
                    next,
                };
            }
            statuses.push(status);
        } else {
            stopped.push(*id);
        }
    }
    Response::Hosted {
        statuses,
        stopped,
        next: None,
    }
}

/// The readiness of the nodes of this process (`host`, or the node alone), summed in a few
/// bytes ([`HostReadiness`]).
fn host_readiness(node: &Arc<Node>, host: Option<&Host>) -> HostReadiness {
    let nodes = match host {
        Some(host) => host.nodes_after(None),
        None => vec![(node.id(), Some(node.clone()))],
    };
    let mut answer = HostReadiness::default();
    let mut newest: Option<&Arc<Node>> = None;
    for (id, running) in &nodes {
        let Some(running) = running else {
            answer.stopped.push(*id);
            continue;
        };
        let r = running.readiness();
        answer.running += 1;
        answer.link_ends_up += r.links_up;
        answer.link_ends += r.links;
        answer.handshakes_in_flight += r.handshakes_in_flight;
        answer.dead_links_known += r.dead_links;
        if newest.is_none() || r.revocation_serial > answer.revocation_serial {
            answer.revocation_serial = r.revocation_serial;
            newest = Some(running);
        }
        if !r.is_ready() {
            answer.not_ready += 1;
            if answer.not_ready_first.len() < HOST_READINESS_NAMED {
                answer.not_ready_first.push(*id);
            }
        }
    }
    if let Some(newest) = newest.filter(|_| answer.revocation_serial > 0) {
        answer.revoked = newest.keys().revocations().revoked.into_iter().collect();
    }
    answer
}

/// Answer `request`. An answer that carries payloads holds its bytes in `answer_bytes` before
/// it is built, until it is written.
async fn handle(
    node: &Arc<Node>,
    host: Option<&Host>,
    request: Request,
    answer_bytes: &mut Option<tokio::sync::OwnedSemaphorePermit>,
) -> Response {
    match request {
        Request::Inject(fault @ (Fault::CrashHosted { .. } | Fault::RestartHosted { .. })) => {
            match crate::faults::in_host(node, host, fault).await {
                Ok(done) => Response::Injected(done),
                Err(e) => Response::Error(e),
            }
        }
        Request::Inject(fault) => match crate::faults::inject(node, fault) {
            Ok(done) => Response::Injected(done),
            Err(e) => Response::Error(e),
        },
        Request::Status => Response::Status(Box::new(node.status())),
        Request::Hosted { after } => {
            *answer_bytes = Some(node.hold_control_bytes(MAX_FRAME_LEN).await);
            hosted(node, host, after)
        }
        Request::HostReadiness => Response::HostReadiness(host_readiness(node, host)),
        Request::Captured { after, max } => {
            let max = max.clamp(1, MAX_RECV_BATCH) as usize;
            *answer_bytes = Some(node.hold_control_bytes(MAX_FRAME_LEN).await);
            let (entries, next) = node.chaos().relay.since(after, max);
            Response::Captured { entries, next }
        }
        Request::Send(set) => match node.send(set).await {
            Ok(taken) => Response::Accepted(taken),
            Err(e) => Response::Error(not_sent(e)),
        },
        Request::Settled {
            seq,
            sent_at_us,
            wait_ms,
        } => {
            let key = SetKey {
                src: node.id(),
                seq,
                sent_at_us,
            };
            let deadline = Instant::now() + wait_limit(wait_ms);
            let watch = node.delivery().watch_settlement(key);
            loop {
                let settling = watch.notified();
                let settled = node.delivery().settlement(&key);
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
            let one = AwaitOne {
                dst: node.id(),
                src,
                seq,
                sent_at_us,
                copies,
                sealed,
                mode,
            };
            let deadline = Instant::now() + wait_limit(timeout_ms);
            match wait_for_set(node, one, deadline).await {
                Ok(set) => {
                    let bytes = node.output().copies_bytes(set);
                    *answer_bytes = Some(node.hold_control_bytes(bytes).await);
                    Response::Copies(node.output().copies(set))
                }
                Err(e) => Response::Error(e),
            }
        }
        Request::SendMany(sets) => many::send(node, host, sets).await,
        Request::AwaitMany { sets, timeout_ms } => {
            many::wait(node, host, sets, timeout_ms, answer_bytes).await
        }
        Request::Recv {
            after,
            max,
            wait_ms,
            clear,
        } => {
            let max = max.clamp(1, MAX_RECV_BATCH) as usize;
            let clear = clear.unwrap_or(!node.seals());
            let deadline = Instant::now() + wait_limit(wait_ms);
            let mut changes = node.output().subscribe();
            // Wait for an entry at `after` or later (the channel holds the next output index),
            // then hold the answer's bytes and build it.
            wait_past(&mut changes, after, deadline).await;
            *answer_bytes = Some(node.hold_control_bytes(ANSWER_BYTES).await);
            let (entries, next, overwritten) = node.output().read(after, max, clear);
            Response::Output {
                entries,
                next,
                overwritten,
            }
        }
        Request::Notices {
            after,
            max,
            wait_ms,
        } => {
            let max = max.clamp(1, MAX_RECV_BATCH) as usize;
            let journal = &node.stats().journal;
            let deadline = Instant::now() + wait_limit(wait_ms);
            let mut changes = journal.subscribe();
            let after = after.min(*changes.borrow_and_update());
            while *changes.borrow_and_update() <= after
                && tokio::time::timeout_at(deadline, changes.changed())
                    .await
                    .is_ok()
            {}
            *answer_bytes = Some(node.hold_control_bytes(ANSWER_BYTES).await);
            let (notices, next, missed) = journal.since(after, max);
            Response::Notices {
                notices,
                next,
                missed,
            }
        }
        Request::Revoke { signed } => match node.take_revocations(&signed, Origin::Push) {
            Ok(adopted) => Response::Revoked {
                serial: adopted.serial,
                newly: adopted.newly,
            },
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
            clear,
        } => {
            let clear = clear.unwrap_or(!node.seals());
            consume(node, &consumer, taken, max, wait_ms, clear, answer_bytes).await
        }
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
/// has not taken, waiting up to `wait_ms` for one. Entries that came clear are passed over
/// unless `clear`: when all an answer looked at was passed over, the consumer's place moves past
/// it here (nothing was handed over, so a client that dies loses nothing), and the wait goes on
/// for an entry it asked for.
async fn consume(
    node: &Arc<Node>,
    consumer: &str,
    taken: Option<u64>,
    max: u32,
    wait_ms: u32,
    clear: bool,
    answer_bytes: &mut Option<tokio::sync::OwnedSemaphorePermit>,
) -> Response {
    let store_error =
        |message: String| Response::Error(ControlError::new(ControlErrorKind::Store, message));
    let Some(keeping) = node.keeping() else {
        return store_error(format!(
            "node {} keeps no store (its configuration has no [store]): its reliable sets are in its output buffer only (recv without --consume)",
            node.id()
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
    let mut from = match keeping.consume(consumer, taken).await {
        Ok(from) => from,
        Err(e) => return store_error(format!("the consumer's place was not kept: {e}")),
    };
    loop {
        wait_past(&mut changes, from, deadline).await;
        *answer_bytes = Some(node.hold_control_bytes(ANSWER_BYTES).await);
        let (entries, next) = match keeping.take(from, max, clear, ANSWER_BYTES) {
            Ok(taken) => taken,
            Err(e) => return store_error(e),
        };
        if !entries.is_empty() || next == from {
            return Response::Output {
                entries,
                next,
                overwritten: 0,
            };
        }
        // Only entries this consumer did not ask for: it passes over them for good.
        *answer_bytes = None;
        from = match keeping.consume(consumer, Some(next)).await {
            Ok(from) => from,
            Err(e) => return store_error(format!("the consumer's place was not kept: {e}")),
        };
    }
}

/// Wait at `node` (the set's destination, `one.dst`) until the set's copies `one` asks for
/// (0: all k of a node-to-node set) have been delivered, or until `deadline`: the set's name
/// in the output, or why it cannot be awaited here.
async fn wait_for_set(
    node: &Node,
    one: AwaitOne,
    deadline: Instant,
) -> Result<SetId, ControlError> {
    other_node(node, one.src, "source")?;
    let k = if one.copies > 0 {
        one.copies as usize
    } else {
        node.topology().local_connectivity(one.src, node.id()) as usize
    };
    let set = SetId {
        src: one.src,
        seq: one.seq,
        sent_at_us: one.sent_at_us,
        sealed: one.sealed,
        mode: one.mode,
    };
    // Woken by this set's copies only: a waiting client costs nothing per delivery that does
    // not concern it.
    let watch = node.output().watch_set(set);
    loop {
        let next_copy = watch.notified();
        if node.output().copy_count(set) >= k
            || tokio::time::timeout_at(deadline, next_copy).await.is_err()
        {
            return Ok(set);
        }
    }
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
