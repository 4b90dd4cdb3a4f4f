//! The accept loops: every incoming connection in its own task, its handshake completed (a
//! failed one counted and logged), then handed to the endpoint's own checks: [`accept_links`]
//! admits a neighbour to its link; the control API's checks are in `crate::control`. On a link
//! endpoint shared by the nodes of one process, the node the dialler named takes the connection
//! (its [`Owner`] is the host).

use crate::link::close;
use crate::link::shared::Handshakes;
use crate::node::Node;
use crate::stats::Event;
use crate::tls;
use cuberoute_protocol::NodeId;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tracing::{debug, warn};

/// Whose an accepted connection is: given the node its dialler named (on an endpoint shared
/// by several nodes) or none (a failed handshake, whose refusal is counted there), the node
/// that takes it, if one runs.
pub trait Owner: Clone + Send + Sync + 'static {
    fn owner(&self, named: Option<NodeId>) -> impl Future<Output = Option<Arc<Node>>> + Send;
    /// The node the connection `named` is for, if the endpoint is shared (else none is asked).
    fn named(&self, connection: &quinn::Connection) -> Option<NodeId>;
}

/// An endpoint of one node: every connection is its.
impl Owner for Arc<Node> {
    async fn owner(&self, _: Option<NodeId>) -> Option<Arc<Node>> {
        Some(self.clone())
    }

    fn named(&self, _: &quinn::Connection) -> Option<NodeId> {
        None
    }
}

/// How long a connection to a node of a shared endpoint waits for that node to run.
pub const WAIT_FOR_NODE: Duration = Duration::from_secs(5);

/// Accept connections on `endpoint` for as long as it is open. A handshake that fails (no
/// certificate, or one not of the cluster CA) counts as `refused`; a completed one goes to
/// `serve` with the node that owns it (a connection to a node of a shared endpoint that does
/// not run is closed). Each connection's task is this loop's: dropped with it (a node crashed
/// inside its process lets go of its connections, its endpoints and its store with its tasks).
/// Each handshake is counted in `handshakes`, if given, while it is in flight.
pub async fn accept_each<O, F, Fut>(
    owner: O,
    endpoint: quinn::Endpoint,
    handshakes: Option<Arc<Handshakes>>,
    refused: Event,
    what: &'static str,
    serve: F,
) where
    O: Owner,
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
        let (owner, serve, handshakes) = (owner.clone(), serve.clone(), handshakes.clone());
        served.spawn(tracing::Instrument::in_current_span(async move {
            let remote = incoming.remote_address();
            let accepting = handshakes.as_deref().map(Handshakes::accepting);
            let handshake = incoming.await;
            drop(accepting);
            match handshake {
                Ok(connection) => {
                    let named = owner.named(&connection);
                    match owner.owner(named).await {
                        Some(node) => serve(node, connection, remote).await,
                        None => {
                            debug!(%remote, ?named, "{what} for a node that does not run here");
                            connection.close(close::REFUSED.into(), b"that node does not run");
                        }
                    }
                }
                Err(e) => {
                    if let Some(node) = owner.owner(None).await {
                        node.stats().event(refused);
                    }
                    warn!(%remote, error = %e, "{what} handshake refused");
                }
            }
        }));
    }
    // The endpoint is closed: its connections end with it.
    while served.join_next().await.is_some() {}
}

/// The accept loop of a link endpoint, a node's own or one its process's nodes share (`owner`,
/// and the `handshakes` it counts): authenticate each connection, check that the peer is a
/// neighbour of the node it is for that should dial it, and hand it to its link.
pub async fn accept_links(
    owner: impl Owner,
    endpoint: quinn::Endpoint,
    handshakes: Option<Arc<Handshakes>>,
) {
    let refused = Event::PeerRefusedTls;
    accept_each(owner, endpoint, handshakes, refused, "link", admit).await
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
