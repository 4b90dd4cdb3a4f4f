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
    #[error("cannot keep the revocation list at {path} for the next start: {message}")]
    Keep { path: PathBuf, message: String },
    #[error(
        "the revocation list with serial {serial} differs from the one in force with the same serial"
    )]
    Forked { serial: u64 },
    #[error(
        "the revocation list with serial {serial} leaves out node {node}, which the one in force revokes: a revocation is for good"
    )]
    Unrevokes { serial: u64, node: NodeId },
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

    /// Take a signed revocation list (from a client) if the CA signed it and it follows the one
    /// in force ([`Revocations::follows`]); keep it in the node's file for the next start.
    pub fn revoke(&self, signed: &[u8]) -> Result<Adopted, KeyError> {
        let (serial, newly) = self.adopt(signed, Path::new("the pushed list"))?;
        let not_kept = match &self.revoked_path {
            Some(path) => keep(&self.ca, path, signed, serial).err(),
            None => None,
        };
        Ok(Adopted {
            serial,
            newly,
            not_kept,
        })
    }

    /// Adopt a signed list: its serial, and the nodes it newly revokes.
    fn adopt(&self, signed: &[u8], path: &Path) -> Result<(u64, Vec<NodeId>), KeyError> {
        let list = read_list(&self.ca, path, signed)?;
        let mut current = self.revocations.write().expect("revocations lock");
        list.follows(&current)?;
        let newly = list.revoked.difference(&current.revoked).copied().collect();
        self.any_revoked.store(!list.revoked.is_empty(), Relaxed);
        let serial = list.serial;
        *current = list;
        Ok((serial, newly))
    }
}

/// A revocation list taken: its serial, the nodes it newly revoked, and why it could not be
/// kept in the node's file if it could not (it is in force all the same, until a restart).
#[derive(Debug)]
pub struct Adopted {
    pub serial: u64,
    pub newly: Vec<NodeId>,
    pub not_kept: Option<KeyError>,
}

impl Revocations {
    /// Whether this list may replace `current`: a higher serial that revokes every node
    /// `current` revokes (a revocation is for good), or the same list again (a push repeated).
    pub fn follows(&self, current: &Revocations) -> Result<(), KeyError> {
        if *current == Revocations::default() {
            // No list yet: any list is the first.
            return Ok(());
        }
        if self.serial < current.serial {
            return Err(KeyError::Older {
                got: self.serial,
                have: current.serial,
            });
        }
        if self.serial == current.serial && self.revoked != current.revoked {
            return Err(KeyError::Forked {
                serial: self.serial,
            });
        }
        if let Some(&node) = current.revoked.difference(&self.revoked).next() {
            return Err(KeyError::Unrevokes {
                serial: self.serial,
                node,
            });
        }
        Ok(())
    }
}

/// Check a signed revocation list (`path` names where it came from) and read its body.
pub fn read_list(
    ca: &[CertificateDer<'static>],
    path: &Path,
    signed: &[u8],
) -> Result<Revocations, KeyError> {
    let body = verify(ca, REVOCATIONS, path, signed)?;
    postcard::from_bytes(&body).map_err(|e| KeyError::Malformed {
        path: path.into(),
        what: REVOCATIONS,
        message: e.to_string(),
    })
}

/// Keep the signed list of `serial` at `path`, written whole and then renamed (never torn),
/// unless the file already holds this list or a later one: `cuberoute cluster revoke` writes
/// every node's file before it pushes the list (so that a node whose directory is mounted
/// read-only, in a container, has it too), and a late push of an older list must not
/// overwrite a newer file.
pub fn keep(
    ca: &[CertificateDer<'static>],
    path: &Path,
    signed: &[u8],
    serial: u64,
) -> Result<(), KeyError> {
    if let Ok(there) = std::fs::read(path)
        && read_list(ca, path, &there).is_ok_and(|there| there.serial >= serial)
    {
        return Ok(());
    }
    let partial = path.with_extension("partial");
    std::fs::write(&partial, signed)
        .and_then(|()| std::fs::rename(&partial, path))
        .map_err(|e| KeyError::Keep {
            path: path.into(),
            message: e.to_string(),
        })
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

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};

    /// A CA: its certificate and the key that signs lists.
    struct Ca {
        cert: CertificateDer<'static>,
        key: KeyPair,
    }

    fn ca() -> Ca {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        let cert = params.self_signed(&key).unwrap().der().clone();
        Ca { cert, key }
    }

    fn sign(ca: &Ca, what: &str, body: Vec<u8>) -> Vec<u8> {
        use ring::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair};
        let rng = ring::rand::SystemRandom::new();
        let key = EcdsaKeyPair::from_pkcs8(
            &ECDSA_P256_SHA256_ASN1_SIGNING,
            &ca.key.serialize_der(),
            &rng,
        )
        .unwrap();
        let signature = key
            .sign(&rng, &signed_bytes(what, &body))
            .unwrap()
            .as_ref()
            .to_vec();
        SignedFile {
            what: what.to_string(),
            body,
            signature,
        }
        .to_bytes()
    }

    fn list(serial: u64, revoked: &[u64]) -> Revocations {
        Revocations {
            serial,
            revoked: revoked.iter().map(|&v| NodeId(v)).collect(),
        }
    }

    fn signed(ca: &Ca, serial: u64, revoked: &[u64]) -> Vec<u8> {
        sign(ca, REVOCATIONS, list(serial, revoked).to_bytes())
    }

    /// Keys with an empty directory: what a revocation needs of them.
    fn keys(ca: &Ca, revoked_path: Option<PathBuf>) -> Keys {
        Keys {
            directory: Vec::new(),
            secret: SecretKey::from_seed([7; 32]),
            revocations: RwLock::new(Revocations::default()),
            any_revoked: AtomicBool::new(false),
            ca: vec![ca.cert.clone()],
            revoked_path,
        }
    }

    #[test]
    fn a_list_reads_back_only_when_this_ca_signed_it_as_a_revocation_list() {
        let (ours, theirs) = (ca(), ca());
        let path = Path::new("revoked.bin");
        let cas = [ours.cert.clone()];
        let good = signed(&ours, 3, &[5, 9]);
        assert_eq!(read_list(&cas, path, &good).unwrap(), list(3, &[5, 9]));
        let other = signed(&theirs, 3, &[5, 9]);
        assert!(matches!(
            read_list(&cas, path, &other),
            Err(KeyError::NotSigned { .. })
        ));
        // The same body and signature, one revoked node fewer: the signature no longer holds.
        let mut file: SignedFile = postcard::from_bytes(&good).unwrap();
        file.body = list(3, &[5]).to_bytes();
        assert!(matches!(
            read_list(&cas, path, &file.to_bytes()),
            Err(KeyError::NotSigned { .. })
        ));
        // Signed by the CA, but as a key directory.
        let directory = sign(&ours, DIRECTORY, list(3, &[5]).to_bytes());
        assert!(matches!(
            read_list(&cas, path, &directory),
            Err(KeyError::Malformed { .. })
        ));
        assert!(matches!(
            read_list(&cas, path, b"garbage"),
            Err(KeyError::Malformed { .. })
        ));
    }

    #[test]
    fn a_list_follows_only_an_older_one_it_contains_or_itself() {
        let none = Revocations::default();
        let one = list(1, &[4]);
        assert!(one.follows(&none).is_ok());
        assert!(list(2, &[4, 6]).follows(&one).is_ok());
        assert!(one.follows(&one).is_ok(), "a push repeated");
        assert!(matches!(
            one.follows(&list(2, &[4, 6])),
            Err(KeyError::Older { got: 1, have: 2 })
        ));
        assert!(matches!(
            list(1, &[6]).follows(&one),
            Err(KeyError::Forked { serial: 1 })
        ));
        assert!(matches!(
            list(3, &[6]).follows(&list(2, &[4, 6])),
            Err(KeyError::Unrevokes {
                serial: 3,
                node: NodeId(4)
            })
        ));
    }

    #[test]
    fn a_node_adopts_newer_lists_keeps_them_and_names_whom_they_newly_revoke() {
        let ca = ca();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("revoked.bin");
        let keys = keys(&ca, Some(path.clone()));
        assert!(!keys.is_revoked(NodeId(4)));

        let first = signed(&ca, 1, &[4]);
        let adopted = keys.revoke(&first).unwrap();
        assert_eq!((adopted.serial, adopted.newly), (1, vec![NodeId(4)]));
        assert!(adopted.not_kept.is_none());
        assert!(keys.is_revoked(NodeId(4)) && !keys.is_revoked(NodeId(6)));
        assert_eq!(std::fs::read(&path).unwrap(), first);

        // The same list again: nothing new, nothing rewritten.
        let again = keys.revoke(&signed(&ca, 1, &[4])).unwrap();
        assert_eq!((again.serial, again.newly), (1, vec![]));
        assert_eq!(std::fs::read(&path).unwrap(), first);

        let second = signed(&ca, 2, &[4, 6]);
        assert_eq!(keys.revoke(&second).unwrap().newly, vec![NodeId(6)]);
        assert_eq!(std::fs::read(&path).unwrap(), second);
        assert_eq!(keys.revocations(), list(2, &[4, 6]));

        // Refused lists change nothing.
        for refused in [
            signed(&ca, 1, &[4]),
            signed(&ca, 3, &[6]),
            signed(&ca, 2, &[4, 7]),
            signed(&self::ca(), 9, &[4, 6, 7]),
        ] {
            assert!(keys.revoke(&refused).is_err());
        }
        assert_eq!(keys.revocations(), list(2, &[4, 6]));
        assert_eq!(std::fs::read(&path).unwrap(), second);
    }

    #[test]
    fn a_list_in_force_but_not_kept_says_why() {
        let ca = ca();
        let dir = tempfile::tempdir().unwrap();
        let keys = keys(&ca, Some(dir.path().join("gone").join("revoked.bin")));
        let adopted = keys.revoke(&signed(&ca, 1, &[4])).unwrap();
        assert_eq!(adopted.newly, vec![NodeId(4)]);
        assert!(matches!(adopted.not_kept, Some(KeyError::Keep { .. })));
        assert!(keys.is_revoked(NodeId(4)), "in force all the same");
    }

    #[test]
    fn keeping_never_overwrites_a_later_list_and_replaces_an_older_or_broken_file() {
        let ca = ca();
        let cas = [ca.cert.clone()];
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("revoked.bin");
        let (one, two) = (signed(&ca, 1, &[4]), signed(&ca, 2, &[4, 6]));
        keep(&cas, &path, &two, 2).unwrap();
        keep(&cas, &path, &one, 1).unwrap();
        assert_eq!(
            std::fs::read(&path).unwrap(),
            two,
            "a late push of serial 1"
        );
        // The same serial, signed again (ECDSA signatures differ): the file stays.
        keep(&cas, &path, &signed(&ca, 2, &[4, 6]), 2).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), two);
        let three = signed(&ca, 3, &[4, 6, 8]);
        keep(&cas, &path, &three, 3).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), three);
        std::fs::write(&path, b"torn").unwrap();
        keep(&cas, &path, &one, 1).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), one);
        assert!(!path.with_extension("partial").exists());
    }
}
