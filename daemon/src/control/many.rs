//! Many sets in one control request ([`Request::SendMany`], [`Request::AwaitMany`]): each set
//! is handled at its node of this process as a request of its own would be there, all of them
//! at once, and answered in the order asked. A node host's nodes share one control endpoint, so
//! one request reaches all of them; a node alone in its process takes only its own sets.
//!
//! [`Request::SendMany`]: cuberoute_protocol::wire::control::Request::SendMany
//! [`Request::AwaitMany`]: cuberoute_protocol::wire::control::Request::AwaitMany

use super::{bad, not_sent, wait_for_set, wait_limit};
use crate::env::Instant;
use crate::host::Host;
use crate::node::Node;
use cuberoute_protocol::NodeId;
use cuberoute_protocol::wire::control::{
    AwaitOne, ControlError, ControlErrorKind, MAX_SETS_PER_REQUEST, Response, SendOne,
};
use futures_util::future::join_all;
use std::sync::Arc;

/// What one copy of an answer to [`Request::AwaitMany`] is held at in the node's control
/// bytes: its encoding without payload or path is at most 75 bytes.
///
/// [`Request::AwaitMany`]: cuberoute_protocol::wire::control::Request::AwaitMany
const COPY_BYTES: usize = 80;

/// Send each set from its node of this process, as [`Node::send`] would for a request of its
/// own: the answers (taken, or why not) in the order asked.
pub(super) async fn send(node: &Arc<Node>, host: Option<&Host>, sets: Vec<SendOne>) -> Response {
    if let Err(e) = within_limit(sets.len()) {
        return Response::Error(e);
    }
    let sends = sets.into_iter().map(|one| async move {
        let source = of_this_process(node, host, one.from, "source")?;
        source.send(one.set).await.map_err(not_sent)
    });
    Response::SentMany(join_all(sends).await)
}

/// Wait at each set's destination, a node of this process, until every set is complete or
/// `timeout_ms` has passed: each set's copies so far, without payloads and paths, in the order
/// asked. The answer's bytes are held in `answer_bytes` before it is built.
pub(super) async fn wait(
    node: &Arc<Node>,
    host: Option<&Host>,
    sets: Vec<AwaitOne>,
    timeout_ms: u32,
    answer_bytes: &mut Option<tokio::sync::OwnedSemaphorePermit>,
) -> Response {
    if let Err(e) = within_limit(sets.len()) {
        return Response::Error(e);
    }
    let deadline = Instant::now() + wait_limit(timeout_ms);
    let waits = sets.into_iter().map(|one| async move {
        let at = of_this_process(node, host, one.dst, "destination")?;
        let set = wait_for_set(&at, one, deadline).await?;
        Ok((at, set))
    });
    let waited: Vec<Result<_, ControlError>> = join_all(waits).await;
    let copies: usize = waited
        .iter()
        .flatten()
        .map(|(at, set)| at.output().copy_count(*set))
        .sum();
    *answer_bytes = Some(node.hold_control_bytes(copies * COPY_BYTES).await);
    let answers = waited
        .into_iter()
        .map(|waited| {
            waited.map(|(at, set)| {
                let mut copies = at.output().copies(set);
                for copy in &mut copies {
                    copy.payload = Vec::new();
                    copy.path = None;
                }
                copies
            })
        })
        .collect();
    Response::CopiesMany(answers)
}

/// The sets of one request are at most [`MAX_SETS_PER_REQUEST`].
fn within_limit(sets: usize) -> Result<(), ControlError> {
    if sets > MAX_SETS_PER_REQUEST {
        return Err(bad(format!(
            "{sets} sets in one request; at most {MAX_SETS_PER_REQUEST}"
        )));
    }
    Ok(())
}

/// Node `id` if this process runs it: the node asked, or another node of its node host.
fn of_this_process(
    node: &Arc<Node>,
    host: Option<&Host>,
    id: NodeId,
    role: &str,
) -> Result<Arc<Node>, ControlError> {
    if id == node.id() {
        return Ok(node.clone());
    }
    host.and_then(|host| host.node(id)).ok_or_else(|| {
        ControlError::new(
            ControlErrorKind::UnknownNode,
            format!(
                "{role} {id} does not run in the process of node {}: a request names sets of the nodes of one process",
                node.id()
            ),
        )
    })
}
