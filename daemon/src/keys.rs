//! The keys of end-to-end sealing: the cluster's key directory (every node's public key, bound
//! to its id by the CA's signature), the revocation list (signed likewise), and this node's own
//! secret key. The sealing itself is `cuberoute_protocol::seal`.
//!
//! A revocation list comes from the node's file at start, from a push (`cluster revoke`), or
//! from a neighbour at link up ([`Origin`]); all three go through one check, `Keys::adopt`
//! (pushes and neighbours' lists through [`Keys::take`], which also keeps them): a list is
//! taken only if the CA signed it and it follows the one in force ([`Revocations::follows`]),
//! so the serial in force only rises, whatever comes in whatever order; a list taken is kept
//! in the node's file, which a restart reads back. What a node with no list can and cannot
//! know is in docs/security.md ("Revocation: what a node can know of the newest list").
//!
//! Both signed files have one shape, [`SignedFile`]: what it is, its body (postcard), and the
//! CA's ECDSA P-256 signature over the two. The directory is one file for the whole cluster
//! (40 bytes a node: 80 KiB at 2,048 nodes), shared by every node (hard links in a cluster
//! directory, a mount in compose, a ConfigMap in Kubernetes), so nothing per node grows with
//! the cluster. A node refuses to start if the directory is missing, unreadable, not signed by
//! its CA, for another topology, or binds its id to another key than its own.

use cuberoute_protocol::NodeId;
use cuberoute_protocol::seal::keys::{PublicKey, SecretKey};
use cuberoute_protocol::seal::session::Directory;
use rustls_pki_types::CertificateDer;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex, RwLock};

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

/// A key directory read and checked: every node's public key, in id order.
type Entries = Arc<[(NodeId, PublicKey)]>;

/// The key directories this process holds, by the file each was read from (its device, inode,
/// length and modification time), the CA that checked it and the topology: the nodes of a node
/// host share one (`cluster up` links one `keys.bin` into every node's directory), read, checked
/// and held once rather than once per node (2.5 MB per node at 65,536 nodes). Held weakly: gone
/// with the last node that uses it.
type Held = (
    FileKey,
    Vec<CertificateDer<'static>>,
    String,
    std::sync::Weak<[(NodeId, PublicKey)]>,
);
static DIRECTORIES: Mutex<Vec<Held>> = Mutex::new(Vec::new());

/// What names a file's content without reading it.
type FileKey = (u64, u64, u64, i64, i64);

fn file_key(path: &Path) -> Result<FileKey, KeyError> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).map_err(|e| KeyError::Read {
        path: path.into(),
        message: e.to_string(),
    })?;
    Ok((
        meta.dev(),
        meta.ino(),
        meta.len(),
        meta.mtime(),
        meta.mtime_nsec(),
    ))
}

/// The key directory at `path`, checked against `ca` and `topology`: the one this process
/// already holds from the same file, or read and checked now.
fn shared_directory(
    path: &Path,
    ca: &[CertificateDer<'static>],
    topology: &str,
) -> Result<Entries, KeyError> {
    let key = file_key(path)?;
    let mut held = DIRECTORIES.lock().expect("directories lock");
    held.retain(|(_, _, _, entries)| entries.strong_count() > 0);
    let found = held
        .iter()
        .find(|(k, c, t, _)| *k == key && c == ca && t == topology);
    if let Some(entries) = found.and_then(|(_, _, _, entries)| entries.upgrade()) {
        return Ok(entries);
    }
    let body = verify(ca, DIRECTORY, path, &read(path)?)?;
    let body: DirectoryBody = postcard::from_bytes(&body).map_err(|e| KeyError::Malformed {
        path: path.to_path_buf(),
        what: DIRECTORY,
        message: e.to_string(),
    })?;
    if body.topology != topology {
        return Err(KeyError::OtherTopology {
            path: path.to_path_buf(),
            theirs: body.topology,
            ours: topology.to_string(),
        });
    }
    let mut entries = body.keys;
    entries.sort_by_key(|(id, _)| *id);
    let entries: Entries = entries.into();
    held.push((
        key,
        ca.to_vec(),
        topology.to_string(),
        Arc::downgrade(&entries),
    ));
    Ok(entries)
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
    /// Every node's public key, in id order (shared by the nodes of a process).
    directory: Entries,
    pub secret: SecretKey,
    in_force: RwLock<InForce>,
    /// Whether any node is revoked: the per-packet check is one load while none is.
    any_revoked: AtomicBool,
    ca: Vec<CertificateDer<'static>>,
    revoked_path: Option<PathBuf>,
    /// Held while a list taken is written to `revoked_path`, so that two lists taken at once
    /// leave the later in the file ([`keep`] never overwrites a later one).
    keeping: Mutex<()>,
}

/// The revocation list in force, and the CA-signed bytes it came in (none while no list was
/// taken): what a neighbour is handed, as it was signed.
#[derive(Debug, Default)]
struct InForce {
    list: Revocations,
    signed: Option<Arc<[u8]>>,
}

/// Where a revocation list comes from.
#[derive(Clone, Copy, Debug)]
pub enum Origin<'a> {
    /// The node's own file, read at start.
    File(&'a Path),
    /// A client's `Request::Revoke` (`cluster revoke`).
    Push,
    /// A neighbour, on a link.
    Neighbour(NodeId),
}

impl Origin<'_> {
    /// What errors name as the list's path.
    fn path(&self) -> PathBuf {
        match self {
            Origin::File(path) => path.to_path_buf(),
            Origin::Push => "the pushed list".into(),
            Origin::Neighbour(node) => format!("the list from neighbour {node}").into(),
        }
    }
}

impl Keys {
    /// Load and check the keys of node `id` of `topology`.
    pub fn load(
        paths: &KeyPaths,
        ca: &[CertificateDer<'static>],
        topology: &str,
        id: NodeId,
    ) -> Result<Keys, KeyError> {
        let directory = shared_directory(&paths.directory, ca, topology)?;
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
            in_force: RwLock::new(InForce::default()),
            any_revoked: AtomicBool::new(false),
            ca: ca.to_vec(),
            revoked_path: paths.revoked.clone(),
            keeping: Mutex::new(()),
        };
        if let Some(path) = &paths.revoked
            && path.exists()
        {
            keys.adopt(&read(path)?, Origin::File(path))?;
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
        self.any_revoked.load(Relaxed) && self.lock_read().list.revoked.contains(&node)
    }

    /// The revocation list in force.
    pub fn revocations(&self) -> Revocations {
        self.lock_read().list.clone()
    }

    /// The serial of the revocation list in force (0: none).
    pub fn serial(&self) -> u64 {
        self.lock_read().list.serial
    }

    /// The revocation list in force as the CA signed it, with its serial; `None` while no list
    /// was taken.
    pub fn signed(&self) -> Option<(u64, Arc<[u8]>)> {
        let in_force = self.lock_read();
        in_force
            .signed
            .clone()
            .map(|signed| (in_force.list.serial, signed))
    }

    fn lock_read(&self) -> std::sync::RwLockReadGuard<'_, InForce> {
        self.in_force.read().expect("revocations lock")
    }

    /// Take a signed revocation list, pushed or handed over by a neighbour, if the CA signed it
    /// and it follows the one in force ([`Revocations::follows`]); keep a newer one in the
    /// node's file for the next start (a push is kept even when it is the list in force: it
    /// writes a removed file again).
    pub fn take(&self, signed: &[u8], origin: Origin) -> Result<Adopted, KeyError> {
        let adopted = self.adopt(signed, origin)?;
        let not_kept = match &self.revoked_path {
            Some(path) if adopted.raised || matches!(origin, Origin::Push) => {
                let _keeping = self.keeping.lock().expect("keeping lock");
                keep(&self.ca, path, signed, adopted.serial).err()
            }
            _ => None,
        };
        Ok(Adopted {
            not_kept,
            ..adopted
        })
    }

    /// Adopt a signed list: its serial, the nodes it newly revokes, and whether the serial in
    /// force rose. A neighbour's list is looked at before its signature is checked: one that is
    /// older than the list in force is refused, and the list in force again changes nothing,
    /// without trusting it, so a neighbour cannot make the node check a signature for a list
    /// that would not change anything. A pushed list, or a file, is always checked first.
    fn adopt(&self, signed: &[u8], origin: Origin) -> Result<Adopted, KeyError> {
        let path = origin.path();
        let taken = |serial, newly, raised| Adopted {
            serial,
            newly,
            raised,
            not_kept: None,
        };
        let list = if let Origin::Neighbour(_) = origin {
            let offered = read_list_unchecked(&path, signed)?;
            let current = self.lock_read();
            if offered.serial < current.list.serial {
                return Err(KeyError::Older {
                    got: offered.serial,
                    have: current.list.serial,
                });
            }
            if offered == current.list {
                return Ok(taken(offered.serial, Vec::new(), false));
            }
            drop(current);
            verify(&self.ca, REVOCATIONS, &path, signed)?;
            offered
        } else {
            read_list(&self.ca, &path, signed)?
        };
        let mut current = self.in_force.write().expect("revocations lock");
        list.follows(&current.list)?;
        let newly = list
            .revoked
            .difference(&current.list.revoked)
            .copied()
            .collect();
        let raised = list.serial > current.list.serial;
        self.any_revoked.store(!list.revoked.is_empty(), Relaxed);
        let serial = list.serial;
        if raised || current.signed.is_none() {
            *current = InForce {
                list,
                signed: Some(signed.into()),
            };
        }
        Ok(taken(serial, newly, raised))
    }
}

/// A revocation list taken: its serial, the nodes it newly revoked, whether it raised the
/// serial in force (a newer list, not the one in force again), and why it could not be kept in
/// the node's file if it could not (it is in force all the same, until a restart).
#[derive(Debug)]
pub struct Adopted {
    pub serial: u64,
    pub newly: Vec<NodeId>,
    pub raised: bool,
    pub not_kept: Option<KeyError>,
}

impl KeyError {
    /// Whether a list was refused for what it is (malformed, or not signed by the CA), rather
    /// than for what it says (older than the list in force, a fork, an un-revocation).
    pub fn is_invalid(&self) -> bool {
        matches!(
            self,
            KeyError::Malformed { .. } | KeyError::NotSigned { .. } | KeyError::Read { .. }
        )
    }
}

impl Revocations {
    /// Whether this list may replace `current`: a higher serial that revokes every node
    /// `current` revokes (a revocation is for good), or the same list again (a push repeated).
    /// A node that holds no list holds the empty list of serial 0, which every list the CA signs
    /// (serial 1 and up) follows: there is no exception for a first list.
    pub fn follows(&self, current: &Revocations) -> Result<(), KeyError> {
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
    list_body(path, &body)
}

/// Read a signed revocation list's body without checking the signature: only to refuse it, or
/// to find it changes nothing.
fn read_list_unchecked(path: &Path, signed: &[u8]) -> Result<Revocations, KeyError> {
    let malformed = |message: String| KeyError::Malformed {
        path: path.into(),
        what: REVOCATIONS,
        message,
    };
    let file: SignedFile = postcard::from_bytes(signed).map_err(|e| malformed(e.to_string()))?;
    if file.what != REVOCATIONS {
        return Err(malformed(format!("it says it is a {:?}", file.what)));
    }
    list_body(path, &file.body)
}

fn list_body(path: &Path, body: &[u8]) -> Result<Revocations, KeyError> {
    postcard::from_bytes(body).map_err(|e| KeyError::Malformed {
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
            directory: Arc::new([]),
            secret: SecretKey::from_seed([7; 32]),
            in_force: RwLock::new(InForce::default()),
            any_revoked: AtomicBool::new(false),
            ca: vec![ca.cert.clone()],
            revoked_path,
            keeping: Mutex::new(()),
        }
    }

    #[test]
    fn the_nodes_of_a_process_share_one_directory_read_from_one_file_and_a_new_file_is_read_again()
    {
        let ca = ca();
        let dir = tempfile::tempdir().unwrap();
        let secrets: Vec<SecretKey> = (0..4u8).map(|i| SecretKey::from_seed([i; 32])).collect();
        let directory = |topology: &str| DirectoryBody {
            topology: topology.to_string(),
            keys: (0..4)
                .map(|i| (NodeId(i), secrets[i as usize].public_key()))
                .collect(),
        };
        let file = dir.path().join("keys.bin");
        std::fs::write(&file, sign(&ca, DIRECTORY, directory("q:2").to_bytes())).unwrap();
        let load = |id: u64, topology: &str| {
            let secret = dir.path().join(format!("seal{id}.key"));
            std::fs::write(&secret, secrets[id as usize].to_bytes()).unwrap();
            let paths = KeyPaths {
                directory: file.clone(),
                secret,
                revoked: None,
            };
            Keys::load(&paths, std::slice::from_ref(&ca.cert), topology, NodeId(id))
        };
        let (a, b) = (load(0, "q:2").unwrap(), load(3, "q:2").unwrap());
        assert!(Arc::ptr_eq(&a.directory, &b.directory));
        assert_eq!(a.len(), 4);
        // Another topology is checked, not taken from what is held.
        assert!(matches!(
            load(1, "q:3"),
            Err(KeyError::OtherTopology { .. })
        ));
        // A file written anew (here: longer) is read anew.
        let mut longer = directory("q:2");
        longer.keys.push((NodeId(9), secrets[0].public_key()));
        std::fs::write(&file, sign(&ca, DIRECTORY, longer.to_bytes())).unwrap();
        let c = load(1, "q:2").unwrap();
        assert!(!Arc::ptr_eq(&a.directory, &c.directory));
        assert_eq!(c.len(), 5);
        // Gone with the last node that held it.
        let weak = Arc::downgrade(&a.directory);
        drop((a, b));
        assert!(weak.upgrade().is_none());
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

    impl Keys {
        fn take_pushed(&self, signed: &[u8]) -> Result<Adopted, KeyError> {
            self.take(signed, Origin::Push)
        }
    }

    #[test]
    fn a_list_follows_only_an_older_one_it_contains_or_itself() {
        let none = Revocations::default();
        let one = list(1, &[4]);
        assert!(one.follows(&none).is_ok());
        assert!(none.follows(&none).is_ok());
        // Serial 0 is the floor of a node with no list, not a list the CA signs.
        assert!(matches!(
            list(0, &[4]).follows(&none),
            Err(KeyError::Forked { serial: 0 })
        ));
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

        assert!(keys.signed().is_none());
        let first = signed(&ca, 1, &[4]);
        let adopted = keys.take_pushed(&first).unwrap();
        assert_eq!(
            (adopted.serial, adopted.newly, adopted.raised),
            (1, vec![NodeId(4)], true)
        );
        assert!(adopted.not_kept.is_none());
        assert_eq!(keys.signed(), Some((1, first.as_slice().into())));
        assert!(keys.is_revoked(NodeId(4)) && !keys.is_revoked(NodeId(6)));
        assert_eq!(std::fs::read(&path).unwrap(), first);

        // The same list again: nothing new, nothing rewritten.
        let again = keys.take_pushed(&signed(&ca, 1, &[4])).unwrap();
        assert_eq!(
            (again.serial, again.newly, again.raised),
            (1, vec![], false)
        );
        assert_eq!(std::fs::read(&path).unwrap(), first);
        assert_eq!(keys.signed(), Some((1, first.as_slice().into())));

        let second = signed(&ca, 2, &[4, 6]);
        assert_eq!(keys.take_pushed(&second).unwrap().newly, vec![NodeId(6)]);
        assert_eq!(std::fs::read(&path).unwrap(), second);
        assert_eq!(keys.revocations(), list(2, &[4, 6]));

        // Refused lists change nothing.
        for refused in [
            signed(&ca, 1, &[4]),
            signed(&ca, 3, &[6]),
            signed(&ca, 2, &[4, 7]),
            signed(&self::ca(), 9, &[4, 6, 7]),
        ] {
            assert!(keys.take_pushed(&refused).is_err());
        }
        assert_eq!(keys.revocations(), list(2, &[4, 6]));
        assert_eq!(std::fs::read(&path).unwrap(), second);
        assert_eq!(keys.signed(), Some((2, second.as_slice().into())));
    }

    /// What a node does with the lists its neighbours hand it: it takes the newest, in whatever
    /// order they come (a newer list after an older, never an older after a newer), keeps it
    /// for its next start, and a node that started with none refuses an older push afterwards.
    #[test]
    fn a_node_with_no_list_takes_the_newest_its_neighbours_hand_it_and_keeps_it() {
        let ca = ca();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("revoked.bin");
        let keys = keys(&ca, Some(path.clone()));
        let (one, two, three) = (
            signed(&ca, 1, &[4]),
            signed(&ca, 2, &[4, 6]),
            signed(&ca, 3, &[4, 6, 9]),
        );
        let from = |node| Origin::Neighbour(NodeId(node));
        let taken = keys.take(&two, from(1)).unwrap();
        assert_eq!((taken.serial, taken.raised), (2, true));
        assert_eq!(taken.newly, vec![NodeId(4), NodeId(6)]);
        assert_eq!(
            std::fs::read(&path).unwrap(),
            two,
            "kept for the next start"
        );
        // An older list handed by another neighbour is refused.
        assert!(matches!(
            keys.take(&one, from(2)),
            Err(KeyError::Older { got: 1, have: 2 })
        ));
        // The list in force again, from a third: nothing new, nothing refused.
        let again = keys.take(&two, from(3)).unwrap();
        assert_eq!(
            (again.serial, again.raised, again.newly),
            (2, false, vec![])
        );
        // A newer one follows.
        let taken = keys.take(&three, from(2)).unwrap();
        assert_eq!((taken.serial, taken.newly), (3, vec![NodeId(9)]));
        // The pushed list that is older than the one a neighbour handed over is refused.
        assert!(matches!(
            keys.take_pushed(&two),
            Err(KeyError::Older { got: 2, have: 3 })
        ));
        assert_eq!(keys.revocations(), list(3, &[4, 6, 9]));
        assert_eq!(std::fs::read(&path).unwrap(), three);

        // Restarted: the file is its floor.
        let restarted = keys_read_back(&ca, &path);
        assert_eq!(restarted.revocations(), list(3, &[4, 6, 9]));
        assert!(restarted.take(&two, from(1)).is_err());
    }

    /// Keys whose revocation list is read from `path`, as [`Keys::load`] reads it.
    fn keys_read_back(ca: &Ca, path: &Path) -> Keys {
        let keys = keys(ca, Some(path.to_path_buf()));
        keys.adopt(&std::fs::read(path).unwrap(), Origin::File(path))
            .unwrap();
        keys
    }

    /// A neighbour's list is read from the network: malformed or not signed by the CA, it is
    /// refused for what it is and changes nothing; one no newer than the list in force is
    /// refused, or changes nothing, without its signature being checked.
    #[test]
    fn a_neighbours_list_is_checked_and_one_that_changes_nothing_costs_no_check() {
        let (ours, theirs) = (ca(), ca());
        let keys = keys(&ours, None);
        let from = Origin::Neighbour(NodeId(5));
        for bad in [
            b"garbage".to_vec(),
            Vec::new(),
            signed(&theirs, 7, &[4]),
            sign(&ours, DIRECTORY, list(7, &[4]).to_bytes()),
            sign(&ours, REVOCATIONS, b"\xff\xff".to_vec()),
        ] {
            let refused = keys.take(&bad, from).unwrap_err();
            assert!(refused.is_invalid(), "{refused}");
        }
        assert_eq!(keys.revocations(), Revocations::default());
        let two = signed(&ours, 2, &[4, 6]);
        assert!(keys.take(&two, from).unwrap().raised);
        // Older, or the list in force, signed by another CA: no signature is checked, and
        // nothing is taken.
        let older = keys.take(&signed(&theirs, 1, &[4]), from).unwrap_err();
        assert!(matches!(older, KeyError::Older { got: 1, have: 2 }));
        assert!(!older.is_invalid());
        let same = keys.take(&signed(&theirs, 2, &[4, 6]), from).unwrap();
        assert!(!same.raised && same.newly.is_empty());
        assert_eq!(keys.signed(), Some((2, two.as_slice().into())));
        // Newer but not signed by our CA: refused for what it is.
        let forged = keys
            .take(&signed(&theirs, 3, &[4, 6, 8]), from)
            .unwrap_err();
        assert!(matches!(forged, KeyError::NotSigned { .. }), "{forged}");
        assert!(forged.to_string().contains("the list from neighbour 5"));
        // A fork (the serial in force, other nodes) is checked, and refused.
        assert!(matches!(
            keys.take(&signed(&ours, 2, &[4, 7]), from),
            Err(KeyError::Forked { serial: 2 })
        ));
        assert!(matches!(
            keys.take(&signed(&ours, 3, &[6]), from),
            Err(KeyError::Unrevokes { serial: 3, .. })
        ));
        assert_eq!(keys.revocations(), list(2, &[4, 6]));
    }

    #[test]
    fn a_list_in_force_but_not_kept_says_why() {
        let ca = ca();
        let dir = tempfile::tempdir().unwrap();
        let keys = keys(&ca, Some(dir.path().join("gone").join("revoked.bin")));
        let adopted = keys.take_pushed(&signed(&ca, 1, &[4])).unwrap();
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
