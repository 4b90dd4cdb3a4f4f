//! A client of a whole cluster: its manifest, a control client with the cluster's client
//! certificate, and one cached connection per node.

use crate::layout::ClusterDir;
use anyhow::Context;
use cuberoute_daemon::client::{Client, ClientError, Connection};
use cuberoute_daemon::manifest::Manifest;
use cuberoute_daemon::tls::Credentials;
use cuberoute_protocol::NodeId;
use cuberoute_protocol::wire::control::{NodeStatus, Request, Response};
use futures_util::future::join_all;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A cluster seen from a client: its manifest and a control client with the cluster's client
/// certificate.
#[derive(Clone)]
pub struct ClusterClient {
    pub dir: ClusterDir,
    pub manifest: Manifest,
    pub client: Client,
    connections: Arc<Mutex<HashMap<NodeId, Connection>>>,
}

impl ClusterClient {
    /// Open the cluster generated in `dir`. Needs a tokio runtime.
    pub fn open(dir: &ClusterDir) -> anyhow::Result<ClusterClient> {
        anyhow::ensure!(
            dir.is_cluster(),
            "{} holds no cluster (no manifest.toml): start one with `cuberoute cluster up`",
            dir.display()
        );
        let manifest = Manifest::load(&dir.manifest())?;
        let credentials = Credentials::load(&dir.ca_cert(), &dir.client_cert(), &dir.client_key())
            .context("loading the client certificate")?;
        let client = Client::new(&credentials)?;
        Ok(ClusterClient {
            dir: dir.clone(),
            manifest,
            client,
            connections: Arc::default(),
        })
    }

    /// Send `request` to `node`, over a cached connection if there is one. A connection that
    /// failed is replaced once.
    pub async fn request(&self, node: NodeId, request: &Request) -> Result<Response, ClientError> {
        let cached = self
            .connections
            .lock()
            .expect("cache lock")
            .get(&node)
            .cloned();
        if let Some(connection) = cached {
            match connection.request(request).await {
                Err(ClientError::Stream { .. }) => {
                    self.connections.lock().expect("cache lock").remove(&node);
                }
                result => return result,
            }
        }
        let connection = self.connect(node).await?;
        self.connections
            .lock()
            .expect("cache lock")
            .insert(node, connection.clone());
        connection.request(request).await
    }

    /// Close every cached connection.
    pub fn close(&self) {
        for (_, connection) in self.connections.lock().expect("cache lock").drain() {
            connection.close();
        }
    }

    /// Open a new connection to `node`'s control API.
    pub async fn connect(&self, node: NodeId) -> Result<Connection, ClientError> {
        let addr = self
            .manifest
            .node(node)
            .map(|n| n.control.clone())
            .ok_or_else(|| ClientError::Unreachable {
                node,
                addr: "-".into(),
                message: "not in the manifest".into(),
            })?;
        self.client.connect(node, &addr).await
    }

    /// One node's status.
    pub async fn status(&self, node: NodeId) -> Result<NodeStatus, ClientError> {
        match self.request(node, &Request::Status).await? {
            Response::Status(status) => Ok(status),
            other => Err(ClientError::Stream {
                node,
                message: format!("unexpected answer {other:?}"),
            }),
        }
    }

    /// Every node's status (or why it could not be had), in manifest order, each within
    /// `timeout`.
    pub async fn statuses(&self, timeout: Duration) -> Vec<(NodeId, Result<NodeStatus, String>)> {
        let asks = self.manifest.nodes.iter().map(|n| async move {
            let result = match tokio::time::timeout(timeout, self.status(n.id)).await {
                Ok(Ok(status)) => Ok(status),
                Ok(Err(e)) => Err(e.to_string()),
                Err(_) => Err(format!("no answer within {timeout:?}")),
            };
            (n.id, result)
        });
        join_all(asks).await
    }
}

/// Links up over all nodes (each link counted from both ends), and the most there can be.
pub fn links_up(
    statuses: &[(NodeId, Result<NodeStatus, String>)],
    manifest: &Manifest,
) -> (usize, usize) {
    let up = statuses
        .iter()
        .filter_map(|(_, s)| s.as_ref().ok())
        .map(NodeStatus::links_up)
        .sum();
    let total = manifest
        .nodes
        .iter()
        .map(|n| manifest.topology.degree(n.id) as usize)
        .sum();
    (up, total)
}
