//! Where a cluster directory keeps what it holds.
//!
//! ```text
//! DIR/manifest.toml          every node's addresses
//! DIR/ca.pem, DIR/ca.key     the cluster CA
//! DIR/keys.bin               every node's sealing public key, signed by the CA (one file,
//!                            hard-linked into every node's directory)
//! DIR/revoked.bin            the CA-signed revocation list, once a node is revoked
//! DIR/client.pem, .key       the client certificate (send, recv, status)
//! DIR/nodes/<id>/            one self-contained directory per node, mountable read-only:
//!     node.toml, node.pem, node.key, ca.pem, manifest.toml, seal.key, keys.bin
//!     (and revoked.bin)
//! DIR/logs/<id>.log          each local daemon's stderr
//! DIR/run.toml               the processes of a running local cluster
//! ```

use cuberoute_protocol::NodeId;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug)]
pub struct ClusterDir {
    pub root: PathBuf,
}

impl ClusterDir {
    pub fn new(root: impl Into<PathBuf>) -> ClusterDir {
        ClusterDir { root: root.into() }
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
        self.root.join("ca.pem")
    }

    pub fn ca_key(&self) -> PathBuf {
        self.root.join("ca.key")
    }

    pub fn client_cert(&self) -> PathBuf {
        self.root.join("client.pem")
    }

    pub fn client_key(&self) -> PathBuf {
        self.root.join("client.key")
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
