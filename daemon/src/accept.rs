//! The accept loop both endpoints share: every incoming connection in its own task, its
//! handshake completed (a failed one counted and logged), then handed to the endpoint's own
//! checks.

use crate::node::Node;
use crate::stats::Event;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use tracing::warn;

/// Accept connections on `endpoint` for as long as it is open. A handshake that fails (no
/// certificate, or one not of the cluster CA) counts as `refused`; a completed one goes to
/// `serve`.
pub async fn accept_each<F, Fut>(
    node: Arc<Node>,
    endpoint: quinn::Endpoint,
    refused: Event,
    what: &'static str,
    serve: F,
) where
    F: Fn(Arc<Node>, quinn::Connection, SocketAddr) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = ()> + Send,
{
    while let Some(incoming) = endpoint.accept().await {
        let (node, serve) = (node.clone(), serve.clone());
        tokio::spawn(async move {
            let remote = incoming.remote_address();
            match incoming.await {
                Ok(connection) => serve(node, connection, remote).await,
                Err(e) => {
                    node.stats.event(refused);
                    warn!(%remote, error = %e, "{what} handshake refused");
                }
            }
        });
    }
}
