//! The keys of end-to-end sealing: the cluster's key directory (every node's public key, bound
//! to its id by the CA's signature), the revocation list (signed likewise), and this node's own
//! secret key. The sealing itself is `cuberoute_protocol::seal`.
//!
//! Both signed files have one shape, [`SignedFile`]: what it is, its body (postcard), and the
//! CA's ECDSA P-256 signature over the two. The directory is one file for the whole cluster
//! (40 bytes a node: 80 KiB at 2,048 nodes), shared by every node (hard links in a cluster
//! directory, a mount in compose, a ConfigMap in Kubernetes), so nothing per node grows with
//! the cluster. A node refuses to start if the directory is missing, unreadable, not signed by
//! its CA, for another topology, or binds its id to another key than its own.

use cuberoute_protocol::NodeId;
use cuberoute_protocol::seal::keys::{PublicKey, SecretKey};
use cuberoute_protocol::seal::pair::Directory;
use rustls_pki_types::CertificateDer;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::RwLock;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// What a key directory's [`SignedFile`] says it is.
pub const DIRECTORY: &str = "cuberoute key directory 1";
/// What a revocation list's [`SignedFile`] says it is.
pub const REVOCATIONS: &str = "cuberoute revocations 1";

/// A file the cluster CA signed.
#[derive(Serialize, Deserialize)]
pub struct SignedFile {
    pub what: String,
    #[serde(with = "serde_bytes")]
    pub body: Vec<u8>,
    /// ECDSA P-256 with SHA-256 (ASN.1) over [`signed_bytes`] of `what` and `body`.
    #[serde(with = "serde_bytes")]
    pub signature: Vec<u8>,
}

/// What the CA signs: the file's kind, a zero byte, its body.
pub fn signed_bytes(what: &str, body: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(what.len() + 1 + body.len());
    bytes.extend_from_slice(what.as_bytes());
    bytes.push(0);
    bytes.extend_from_slice(body);
    bytes
}

/// The body of a key directory.
#[derive(Serialize, Deserialize, Debug, PartialEq, Eq)]
pub struct DirectoryBody {
    pub topology: String,
    /// Every node's public key, by id, in id order.
    pub keys: Vec<(NodeId, PublicKey)>,
}

/// The body of a revocation list: the nodes taken out of the cluster. A list with a higher
/// serial replaces one with a lower.
#[derive(Serialize, Deserialize, PartialEq, Eq, Clone, Default)]
pub struct Revocations {
    pub serial: u64,
    pub revoked: BTreeSet<NodeId>,
}

impl SignedFile {
    pub fn to_bytes(&self) -> Vec<u8> {
        postcard::to_allocvec(self).expect("a signed file serializes")
    }
}

impl DirectoryBody {
    pub fn to_bytes(&self) -> Vec<u8> {
        postcard::to_allocvec(self).expect("a directory serializes")
    }
}

impl Revocations {
    pub fn to_bytes(&self) -> Vec<u8> {
        postcard::to_allocvec(self).expect("a revocation list serializes")
    }
}

/// Why keys could not be used.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("cannot read {path}: {message}")]
    Read { path: PathBuf, message: String },
    #[error("{path} is not a {what}: {message}")]
    Malformed {
        path: PathBuf,
        what: &'static str,
        message: String,
    },
    #[error("{path} is not signed by this cluster's CA")]
    NotSigned { path: PathBuf },
    #[error("{path} is the key directory of {theirs}; this node is of {ours}")]
    OtherTopology {
        path: PathBuf,
        theirs: String,
        ours: String,
    },
    #[error("{path} binds no key to node {id}")]
    NotListed { path: PathBuf, id: NodeId },
    #[error("{path} is not the key the directory binds to node {id}")]
    Mismatch { path: PathBuf, id: NodeId },
    #[error(
        "a revocation list with serial {got} does not replace the one in force (serial {have})"
    )]
    Older { got: u64, have: u64 },
}

/// Check the CA's signature of a signed file of kind `what`; its body if it holds.
pub fn verify(
    ca: &[CertificateDer<'static>],
    what: &'static str,
    path: &Path,
    bytes: &[u8],
) -> Result<Vec<u8>, KeyError> {
    let malformed = |message: String| KeyError::Malformed {
        path: path.into(),
        what,
        message,
    };
    let file: SignedFile = postcard::from_bytes(bytes).map_err(|e| malformed(e.to_string()))?;
    if file.what != what {
        return Err(malformed(format!("it says it is a {:?}", file.what)));
    }
    let message = signed_bytes(&file.what, &file.body);
    let signed_by_ca = ca.iter().any(|cert| {
        x509_parser::parse_x509_certificate(cert).is_ok_and(|(_, cert)| {
            let key = &cert.tbs_certificate.subject_pki.subject_public_key.data;
            ring::signature::UnparsedPublicKey::new(
                &ring::signature::ECDSA_P256_SHA256_ASN1,
                key.as_ref(),
            )
            .verify(&message, &file.signature)
            .is_ok()
        })
    });
    if !signed_by_ca {
        return Err(KeyError::NotSigned { path: path.into() });
    }
    Ok(file.body)
}

fn read(path: &Path) -> Result<Vec<u8>, KeyError> {
    std::fs::read(path).map_err(|e| KeyError::Read {
        path: path.into(),
        message: e.to_string(),
    })
}

impl std::fmt::Debug for Revocations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Revocations")
            .field("serial", &self.serial)
            .field("revoked", &self.revoked)
            .finish()
    }
}

/// Where a node's keys are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyPaths {
    pub directory: PathBuf,
    pub secret: PathBuf,
    /// The revocation list, if the cluster has one (a missing file is an empty list).
    pub revoked: Option<PathBuf>,
}

/// A node's keys, loaded and checked.
#[derive(Debug)]
pub struct Keys {
    /// Every node's public key, in id order.
    directory: Vec<(NodeId, PublicKey)>,
    pub secret: SecretKey,
    revocations: RwLock<Revocations>,
    /// Whether any node is revoked: the per-packet check is one load while none is.
    any_revoked: AtomicBool,
    ca: Vec<CertificateDer<'static>>,
    revoked_path: Option<PathBuf>,
}

impl Keys {
    /// Load and check the keys of node `id` of `topology`.
    pub fn load(
        paths: &KeyPaths,
        ca: &[CertificateDer<'static>],
        topology: &str,
        id: NodeId,
    ) -> Result<Keys, KeyError> {
        let body = verify(ca, DIRECTORY, &paths.directory, &read(&paths.directory)?)?;
        let body: DirectoryBody = postcard::from_bytes(&body).map_err(|e| KeyError::Malformed {
            path: paths.directory.clone(),
            what: DIRECTORY,
            message: e.to_string(),
        })?;
        if body.topology != topology {
            return Err(KeyError::OtherTopology {
                path: paths.directory.clone(),
                theirs: body.topology,
                ours: topology.to_string(),
            });
        }
        let mut directory = body.keys;
        directory.sort_by_key(|(id, _)| *id);
        let mine = lookup(&directory, id).ok_or(KeyError::NotListed {
            path: paths.directory.clone(),
            id,
        })?;
        let secret =
            SecretKey::from_bytes(&read(&paths.secret)?).map_err(|e| KeyError::Malformed {
                path: paths.secret.clone(),
                what: "node secret key",
                message: e.to_string(),
            })?;
        if secret.public_key() != mine {
            return Err(KeyError::Mismatch {
                path: paths.secret.clone(),
                id,
            });
        }
        let keys = Keys {
            directory,
            secret,
            revocations: RwLock::new(Revocations::default()),
            any_revoked: AtomicBool::new(false),
            ca: ca.to_vec(),
            revoked_path: paths.revoked.clone(),
        };
        if let Some(path) = &paths.revoked
            && path.exists()
        {
            keys.adopt(&read(path)?, path)?;
        }
        Ok(keys)
    }

    /// Nodes in the directory.
    pub fn len(&self) -> usize {
        self.directory.len()
    }

    pub fn is_empty(&self) -> bool {
        self.directory.is_empty()
    }

    /// Whether `node` was taken out of the cluster.
    pub fn is_revoked(&self, node: NodeId) -> bool {
        self.any_revoked.load(Relaxed)
            && self
                .revocations
                .read()
                .expect("revocations lock")
                .revoked
                .contains(&node)
    }

    /// The revocation list in force.
    pub fn revocations(&self) -> Revocations {
        self.revocations.read().expect("revocations lock").clone()
    }

    /// Take a signed revocation list (from the file or a client) if the CA signed it and it is
    /// newer than the one in force; keep it in the node's file. The nodes it newly revokes.
    pub fn revoke(&self, signed: &[u8]) -> Result<Vec<NodeId>, KeyError> {
        let path = self
            .revoked_path
            .clone()
            .unwrap_or_else(|| PathBuf::from("(request)"));
        let newly = self.adopt(signed, &path)?;
        if let Some(path) = &self.revoked_path {
            // Kept for the next start; written whole and then renamed, never torn.
            let partial = path.with_extension("partial");
            std::fs::write(&partial, signed)
                .and_then(|()| std::fs::rename(&partial, path))
                .map_err(|e| KeyError::Read {
                    path: path.clone(),
                    message: format!("cannot keep the revocation list: {e}"),
                })?;
        }
        Ok(newly)
    }

    fn adopt(&self, signed: &[u8], path: &Path) -> Result<Vec<NodeId>, KeyError> {
        let body = verify(&self.ca, REVOCATIONS, path, signed)?;
        let list: Revocations = postcard::from_bytes(&body).map_err(|e| KeyError::Malformed {
            path: path.into(),
            what: REVOCATIONS,
            message: e.to_string(),
        })?;
        let mut current = self.revocations.write().expect("revocations lock");
        if list.serial < current.serial {
            return Err(KeyError::Older {
                got: list.serial,
                have: current.serial,
            });
        }
        let newly = list.revoked.difference(&current.revoked).copied().collect();
        self.any_revoked.store(!list.revoked.is_empty(), Relaxed);
        *current = list;
        Ok(newly)
    }
}

fn lookup(directory: &[(NodeId, PublicKey)], node: NodeId) -> Option<PublicKey> {
    directory
        .binary_search_by_key(&node, |(id, _)| *id)
        .ok()
        .map(|i| directory[i].1)
}

impl Directory for Keys {
    fn public_key(&self, node: NodeId) -> Option<PublicKey> {
        lookup(&self.directory, node)
    }
}
