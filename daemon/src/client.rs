//! The control API client: what `cuberoute send`, `recv` and `cluster status` use to talk to a
//! daemon. It authenticates with the cluster's client certificate and checks that the daemon's
//! certificate names the node it meant to reach.

use crate::tls::{self, ALPN_CONTROL, Credentials};
use cuberoute_protocol::NodeId;
use cuberoute_protocol::wire::control::{ControlError, Request, Response};
use cuberoute_protocol::wire::{MAX_FRAME_LEN, PREFIX_LEN, WireError, decode_frame, encode_frame};
use std::time::Duration;

/// How long connecting to a daemon may take before it counts as unreachable.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// The receive buffer the client's UDP socket asks for. One client talks to many daemons at
/// once (`cluster status` asks every node), and each handshake answers with a certificate
/// chain: with the default buffer (208 KiB on Linux) a client slowed down by a busy machine
/// dropped hundreds of datagrams per `cluster status` of 512 nodes, each drop a handshake
/// retransmitted about a second later. The kernel caps the request at `net.core.rmem_max`.
pub const RECEIVE_BUFFER: usize = 4 << 20;

/// Why a request got no answer. Each names its node as the caller spelt it (`name`: the
/// topology's notation, or the integer id), and carries its id for matching. Clone: one
/// request that carried many sets fails each of them.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ClientError {
    #[error("node {name} at {addr} is unreachable: {message}")]
    Unreachable {
        node: NodeId,
        name: String,
        addr: String,
        message: String,
    },
    #[error("node {name} refused the request: {error}")]
    Refused {
        node: NodeId,
        name: String,
        error: ControlError,
    },
    #[error("node {name} answered with a malformed response: {error}")]
    Malformed {
        node: NodeId,
        name: String,
        error: WireError,
    },
    #[error("node {name}: the control stream failed: {message}")]
    Stream {
        node: NodeId,
        name: String,
        message: String,
    },
    /// Not asked: the node is known not to run (its launcher saw its process exit).
    #[error("node {name} is down: {why}")]
    Down {
        node: NodeId,
        name: String,
        why: String,
    },
    #[error("cannot open a local QUIC endpoint: {0}")]
    Endpoint(std::sync::Arc<std::io::Error>),
}

/// A local endpoint from which to reach any node's control API.
#[derive(Clone)]
pub struct Client {
    endpoint: quinn::Endpoint,
    config: quinn::ClientConfig,
}

impl Client {
    /// A client with these credentials (the cluster CA and a client certificate).
    pub fn new(credentials: &Credentials) -> Result<Client, ClientError> {
        let endpoint = crate::net::endpoint(
            quinn::EndpointConfig::default(),
            None,
            ([0, 0, 0, 0], 0).into(),
            Some(RECEIVE_BUFFER),
            None,
        )
        .map_err(|e| ClientError::Endpoint(e.into()))?;
        Ok(Client {
            endpoint,
            config: credentials.client_config(ALPN_CONTROL),
        })
    }

    /// Connect to `node`'s control endpoint at `addr` (`host:port`); errors name it by its id.
    pub async fn connect(&self, node: NodeId, addr: &str) -> Result<Connection, ClientError> {
        self.connect_named(node, node.to_string(), addr).await
    }

    /// Connect to `node`, named `name` in errors (the topology's notation, as the caller
    /// prints nodes), at `addr` (`host:port`).
    pub async fn connect_named(
        &self,
        node: NodeId,
        name: String,
        addr: &str,
    ) -> Result<Connection, ClientError> {
        let unreachable = |message: String| ClientError::Unreachable {
            node,
            name: name.clone(),
            addr: addr.to_string(),
            message,
        };
        let socket = crate::net::lookup(addr)
            .await
            .map_err(|e| unreachable(e.to_string()))?;
        let connecting = self
            .endpoint
            .connect_with(self.config.clone(), socket, &tls::node_name(node))
            .map_err(|e| unreachable(e.to_string()))?;
        let connection = tokio::time::timeout(CONNECT_TIMEOUT, connecting)
            .await
            .map_err(|_| unreachable(format!("no answer within {CONNECT_TIMEOUT:?}")))?
            .map_err(|e| unreachable(e.to_string()))?;
        Ok(Connection {
            node,
            name,
            connection,
        })
    }
}

/// A connection to one node's control API.
#[derive(Clone)]
pub struct Connection {
    pub node: NodeId,
    /// How errors name it.
    pub name: String,
    connection: quinn::Connection,
}

impl Connection {
    /// Send one request and read its response. A refusal is [`ClientError::Refused`].
    pub async fn request(&self, request: &Request) -> Result<Response, ClientError> {
        let stream = |e: &dyn std::fmt::Display| ClientError::Stream {
            node: self.node,
            name: self.name.clone(),
            message: e.to_string(),
        };
        let (mut send, mut recv) = self.connection.open_bi().await.map_err(|e| stream(&e))?;
        let frame = encode_frame(request).map_err(|error| ClientError::Malformed {
            node: self.node,
            name: self.name.clone(),
            error,
        })?;
        // A daemon that refuses a request unread (busy) stops this stream: its answer is
        // still there to read.
        let written = match send.write_all(&frame).await {
            Ok(()) => send.finish().map_err(|e| stream(&e)),
            Err(e) => Err(stream(&e)),
        };
        let bytes = recv
            .read_to_end(PREFIX_LEN + MAX_FRAME_LEN)
            .await
            .map_err(|e| stream(&e))?;
        if bytes.is_empty() {
            written?;
        }
        match decode_frame::<Response>(&bytes) {
            Ok(Response::Error(error)) => Err(ClientError::Refused {
                node: self.node,
                name: self.name.clone(),
                error,
            }),
            Ok(response) => Ok(response),
            Err(error) => Err(ClientError::Malformed {
                node: self.node,
                name: self.name.clone(),
                error,
            }),
        }
    }

    pub fn close(&self) {
        self.connection.close(0u32.into(), b"");
    }
}
