//! The cluster manifest: where nodes of a cluster listen. A client's manifest lists every node
//! (to reach any node's control endpoint); a daemon's needs only itself and its neighbours (to
//! dial them), and the generator writes each node no more.
//!
//! ```toml
//! topology = "eh:2,2"
//!
//! [[node]]
//! id = 0
//! addr = "127.1.0.1:7000"      # peer links (QUIC)
//! control = "127.1.0.1:7001"   # control API (QUIC)
//! metrics = "127.1.0.1:7002"   # Prometheus, optional
//! ```
//!
//! Addresses are `host:port`; the host may be a name (a compose service, a pod's DNS name),
//! resolved when a link is dialled.

use cuberoute_protocol::{NodeId, Topology};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub topology: Topology,
    #[serde(rename = "node", default)]
    pub nodes: Vec<ManifestNode>,
}

#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestNode {
    pub id: NodeId,
    /// Where the node accepts links from its neighbours.
    pub addr: String,
    /// Where the node accepts control requests from clients.
    pub control: String,
    /// Where the node serves Prometheus metrics, if it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("cannot read manifest {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("manifest {path} is not valid: {message}")]
    Parse { path: String, message: String },
    #[error("manifest lists node {id} twice")]
    Duplicate { id: NodeId },
    #[error("manifest lists node {id}, which is not a node of {topology}")]
    NotInTopology { id: NodeId, topology: Topology },
    #[error("manifest node {id}: address {addr:?} is not host:port")]
    BadAddress { id: NodeId, addr: String },
}

impl Manifest {
    /// Its node count and a digest of its addresses, to tell whether a reload would change it.
    pub fn fingerprint(&self) -> String {
        use std::hash::{Hash, Hasher};
        let mut digest = std::hash::DefaultHasher::new();
        format!("{:?}", self.nodes).hash(&mut digest);
        format!(
            "{} nodes, digest {:016x}",
            self.nodes.len(),
            digest.finish()
        )
    }

    pub fn load(path: &Path) -> Result<Manifest, ManifestError> {
        let text = std::fs::read_to_string(path).map_err(|source| ManifestError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Manifest::parse(&text).map_err(|e| match e {
            ManifestError::Parse { message, .. } => ManifestError::Parse {
                path: path.display().to_string(),
                message,
            },
            other => other,
        })
    }

    /// Parse and check a manifest: ids unique and in the topology, addresses `host:port`.
    pub fn parse(text: &str) -> Result<Manifest, ManifestError> {
        let manifest: Manifest = toml::from_str(text).map_err(|e| ManifestError::Parse {
            path: "<text>".into(),
            message: e.message().to_string(),
        })?;
        manifest.check()?;
        Ok(manifest)
    }

    fn check(&self) -> Result<(), ManifestError> {
        let mut seen = BTreeMap::new();
        for node in &self.nodes {
            if seen.insert(node.id, ()).is_some() {
                return Err(ManifestError::Duplicate { id: node.id });
            }
            if !self.topology.contains(node.id) {
                return Err(ManifestError::NotInTopology {
                    id: node.id,
                    topology: self.topology,
                });
            }
            for addr in [&node.addr, &node.control]
                .into_iter()
                .chain(node.metrics.as_ref())
            {
                if !is_host_port(addr) {
                    return Err(ManifestError::BadAddress {
                        id: node.id,
                        addr: addr.clone(),
                    });
                }
            }
        }
        Ok(())
    }

    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("a manifest always serializes")
    }

    pub fn node(&self, id: NodeId) -> Option<&ManifestNode> {
        self.nodes.iter().find(|n| n.id == id)
    }

    /// The neighbours of `id` (in the topology) that the manifest does not list.
    pub fn missing_neighbours(&self, id: NodeId) -> Vec<NodeId> {
        self.topology
            .neighbours(id)
            .filter(|n| self.node(*n).is_none())
            .collect()
    }
}

fn is_host_port(addr: &str) -> bool {
    match addr.rsplit_once(':') {
        Some((host, port)) => !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p != 0),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"
topology = "q:2"
[[node]]
id = 0
addr = "127.1.0.1:7000"
control = "127.1.0.1:7001"
[[node]]
id = 1
addr = "node-1:7000"
control = "node-1:7001"
metrics = "node-1:7002"
"#;

    #[test]
    fn parses_and_round_trips() {
        let m = Manifest::parse(TEXT).unwrap();
        assert_eq!(m.nodes.len(), 2);
        assert_eq!(m.node(NodeId(1)).unwrap().addr, "node-1:7000");
        assert_eq!(Manifest::parse(&m.to_toml()).unwrap(), m);
        assert_eq!(m.missing_neighbours(NodeId(0)), vec![NodeId(2)]);
        assert_eq!(m.missing_neighbours(NodeId(3)), vec![NodeId(2)]);
    }

    #[test]
    fn refuses_bad_manifests() {
        let dup = TEXT.replace("id = 1", "id = 0");
        assert!(matches!(
            Manifest::parse(&dup),
            Err(ManifestError::Duplicate { .. })
        ));
        let out = TEXT.replace("id = 1", "id = 4");
        assert!(matches!(
            Manifest::parse(&out),
            Err(ManifestError::NotInTopology { .. })
        ));
        let addr = TEXT.replace("node-1:7000", "node-1");
        assert!(matches!(
            Manifest::parse(&addr),
            Err(ManifestError::BadAddress { .. })
        ));
        let topo = TEXT.replace("q:2", "q:99");
        assert!(matches!(
            Manifest::parse(&topo),
            Err(ManifestError::Parse { .. })
        ));
        let key = TEXT.replace("control =", "kontrol =");
        assert!(matches!(
            Manifest::parse(&key),
            Err(ManifestError::Parse { .. })
        ));
    }
}
