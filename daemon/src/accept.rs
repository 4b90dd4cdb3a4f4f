//! The accept loops: every incoming connection in its own task, its handshake completed (a
//! failed one counted and logged), then handed to the endpoint's own checks: [`accept_links`]
//! admits a neighbour to its link; the control API's checks are in `crate::control`.

use crate::link::close;
use crate::node::Node;
use crate::stats::Event;
use crate::tls;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use tracing::warn;

/// Accept connections on `endpoint` for as long as it is open. A handshake that fails (no
/// certificate, or one not of the cluster CA) counts as `refused`; a completed one goes to
/// `serve`. Each connection's task is this loop's: dropped with it (a node crashed inside its
/// process lets go of its connections, its endpoints and its store with its tasks).
pub async fn accept_each<F, Fut>(
    node: Arc<Node>,
    endpoint: quinn::Endpoint,
    refused: Event,
    what: &'static str,
    serve: F,
) where
    F: Fn(Arc<Node>, quinn::Connection, SocketAddr) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let mut served = tokio::task::JoinSet::new();
    loop {
        let incoming = tokio::select! {
            incoming = endpoint.accept() => match incoming {
                Some(incoming) => incoming,
                None => break,
            },
            Some(_) = served.join_next(), if !served.is_empty() => continue,
        };
        let (node, serve) = (node.clone(), serve.clone());
        served.spawn(tracing::Instrument::in_current_span(async move {
            let remote = incoming.remote_address();
            match incoming.await {
                Ok(connection) => serve(node, connection, remote).await,
                Err(e) => {
                    node.stats().event(refused);
                    warn!(%remote, error = %e, "{what} handshake refused");
                }
            }
        }));
    }
    // The endpoint is closed: its connections end with it.
    while served.join_next().await.is_some() {}
}

/// The endpoint's accept loop for links: authenticate each connection, check that the peer is
/// a neighbour that should dial us, and hand it to its link.
pub async fn accept_links(node: Arc<Node>, endpoint: quinn::Endpoint) {
    accept_each(node, endpoint, Event::PeerRefusedTls, "link", admit).await
}

/// Admit an authenticated connection to its link, or refuse it, counted and logged.
async fn admit(node: Arc<Node>, connection: quinn::Connection, remote: std::net::SocketAddr) {
    let refuse = |event, why: &str| {
        node.stats().event(event);
        warn!(%remote, why, "link refused");
        connection.close(close::REFUSED.into(), why.as_bytes());
    };
    let peer = match tls::peer_identity(&connection) {
        Ok(tls::Identity::Node(peer)) => peer,
        Ok(tls::Identity::Client(_)) => {
            return refuse(
                Event::PeerRefusedNotANode,
                "a client certificate on the link port",
            );
        }
        Err(e) => return refuse(Event::PeerRefusedNotANode, &e.to_string()),
    };
    let Some(link) = node.link(peer) else {
        return refuse(
            Event::PeerRefusedNotNeighbour,
            &format!("node {peer} is not a neighbour"),
        );
    };
    if link.is_revoked() {
        return refuse(
            Event::PeerRefusedRevoked,
            &format!("node {peer} is revoked"),
        );
    }
    if link.dials() {
        // The rule says this node dials: the neighbour knocks because it has no connection.
        node.stats().event(Event::KnockReceived);
        connection.close(close::KNOCKED.into(), b"knock: this node dials");
        link.knock(remote);
        return;
    }
    if link.is_cut() {
        return refuse(Event::PeerRefusedCut, "the link is cut");
    }
    link.offer(connection);
}
