//! Where a cluster directory keeps what it holds.
//!
//! ```text
//! DIR/manifest.toml          every node's addresses
//! DIR/ca.pem, DIR/ca.key     the cluster CA
//! DIR/keys.bin               every node's sealing public key, signed by the CA (one file,
//!                            hard-linked into every node's directory)
//! DIR/revoked.bin            the CA-signed revocation list, once a node is revoked
//! DIR/client.pem, .key       the operator's client certificate (every role: send, recv,
//!                            status, reload, revoke, chaos)
//! DIR/nodes/<id>/            one self-contained directory per node, mountable read-only:
//!     node.toml, node.pem, node.key, ca.pem, manifest.toml, seal.key, keys.bin
//!     (and revoked.bin)
//! DIR/logs/<id>.log          each local daemon's stderr
//! DIR/run.toml               the processes of a running local cluster
//! ```
//!
//! A client certificate of a role (`cluster client-cert --out CERT`) is laid out as the
//! operator's: `CERT/ca.pem`, `CERT/client.pem`, `CERT/client.key`. A client command given
//! `--cert CERT` reads the cluster's manifest from DIR and its credentials from CERT
//! ([`ClusterDir::with_client`]).

use cuberoute_protocol::NodeId;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug)]
pub struct ClusterDir {
    pub root: PathBuf,
    /// Where the client's credentials are, if not the operator's in `root` (`--cert`).
    client: Option<PathBuf>,
}

/// File names of a client's credentials, in the cluster directory (the operator's) or in a
/// directory of their own (`--cert`).
pub const CLIENT_CA: &str = "ca.pem";
pub const CLIENT_CERT: &str = "client.pem";
pub const CLIENT_KEY: &str = "client.key";

impl ClusterDir {
    pub fn new(root: impl Into<PathBuf>) -> ClusterDir {
        ClusterDir {
            root: root.into(),
            client: None,
        }
    }

    /// The same cluster, reached with the client credentials in `cert` (a directory laid out
    /// as the operator's: `ca.pem`, `client.pem`, `client.key`), or the operator's if `None`.
    pub fn with_client(mut self, cert: Option<PathBuf>) -> ClusterDir {
        self.client = cert;
        self
    }

    /// The directory of the client credentials a client of this cluster uses, if not the
    /// operator's.
    pub fn client_dir(&self) -> Option<&Path> {
        self.client.as_deref()
    }

    /// The CA certificate, client certificate and key a client of this cluster uses: those of
    /// `--cert`, or the operator's.
    pub fn client_credentials(&self) -> [PathBuf; 3] {
        let dir = self.client.as_deref().unwrap_or(&self.root);
        [CLIENT_CA, CLIENT_CERT, CLIENT_KEY].map(|file| dir.join(file))
    }

    pub fn manifest(&self) -> PathBuf {
        self.root.join("manifest.toml")
    }

    /// The key directory.
    pub fn keys(&self) -> PathBuf {
        self.root.join(NODE_KEYS)
    }

    /// The revocation list.
    pub fn revoked(&self) -> PathBuf {
        self.root.join(NODE_REVOKED)
    }

    pub fn ca_cert(&self) -> PathBuf {
        self.root.join(CLIENT_CA)
    }

    pub fn ca_key(&self) -> PathBuf {
        self.root.join("ca.key")
    }

    /// The operator's client certificate (whatever `--cert` says).
    pub fn client_cert(&self) -> PathBuf {
        self.root.join(CLIENT_CERT)
    }

    pub fn client_key(&self) -> PathBuf {
        self.root.join(CLIENT_KEY)
    }

    pub fn nodes(&self) -> PathBuf {
        self.root.join("nodes")
    }

    pub fn node_dir(&self, id: NodeId) -> PathBuf {
        self.nodes().join(id.0.to_string())
    }

    pub fn node_config(&self, id: NodeId) -> PathBuf {
        self.node_dir(id).join(NODE_CONFIG)
    }

    /// The node's certificate, and its key (`Credentials::load` takes them with the CA's).
    pub fn node_cert(&self, id: NodeId) -> PathBuf {
        self.node_dir(id).join(NODE_CERT)
    }

    pub fn node_key(&self, id: NodeId) -> PathBuf {
        self.node_dir(id).join(NODE_KEY)
    }

    pub fn logs(&self) -> PathBuf {
        self.root.join("logs")
    }

    pub fn log(&self, id: NodeId) -> PathBuf {
        self.logs().join(format!("{}.log", id.0))
    }

    /// The last line of node `id`'s log that is not blank, if it has one: why a daemon that
    /// exited at start did (it prints the error last).
    pub fn last_log_line(&self, id: NodeId) -> Option<String> {
        let text = std::fs::read_to_string(self.log(id)).ok()?;
        text.lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(|l| l.trim().to_string())
    }

    pub fn run_state(&self) -> PathBuf {
        self.root.join("run.toml")
    }

    /// Whether the directory holds a generated cluster.
    pub fn is_cluster(&self) -> bool {
        self.manifest().is_file()
    }

    pub fn display(&self) -> std::path::Display<'_> {
        self.root.display()
    }

    pub fn path(&self) -> &Path {
        &self.root
    }
}

/// File names inside a node's directory.
pub const NODE_CONFIG: &str = "node.toml";
pub const NODE_CERT: &str = "node.pem";
pub const NODE_KEY: &str = "node.key";
pub const NODE_CA: &str = "ca.pem";
pub const NODE_MANIFEST: &str = "manifest.toml";
pub const NODE_SEAL_KEY: &str = "seal.key";
pub const NODE_KEYS: &str = "keys.bin";
pub const NODE_REVOKED: &str = "revoked.bin";
/// The node's store: what it keeps across a crash (generated anew with the CA, as it is bound to it).
pub const NODE_STORE: &str = "store.redb";
/// Beside a node host's first node's configuration: its other nodes' configurations, a path
/// a line (`cuberoute daemon --with-configs`).
pub const NODE_HOSTED_LIST: &str = "hosted.txt";
