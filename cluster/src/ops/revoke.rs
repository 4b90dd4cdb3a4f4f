//! `cuberoute cluster revoke`: take a node out of the cluster for good.
//!
//! The cluster's revocation list (`cuberoute_daemon::keys::Revocations`: a serial and the
//! revoked nodes, signed by the cluster CA) is kept at `DIR/revoked.bin`. Revoking a node reads
//! that list (checked against `DIR/ca.pem`), adds the node with the next serial, signs it with
//! `DIR/ca.key`, writes it whole (then renamed) at `DIR/revoked.bin` and in every node's
//! directory that does not hold a later list already (which a container mounts: a node that
//! misses the push reads it at its next start), and pushes it to every node at once
//! (`Request::Revoke`). The revoked node is pushed too, so that an honest one stops linking and
//! refuses its clients' sets at once; its neighbours refuse it whether it takes the list or not.
//! A node the push misses, and whose directory is not written here (Kubernetes keeps the list
//! on the pod's own volume), is handed the list by its neighbours when its links come up.
//!
//! The CA key is held locked (`flock`) from reading the list to the end of the push, so that
//! two revocations at once make two serials, never two lists with one serial.

use crate::launch::certs::sign_with_pem;
use crate::launch::layout::{self, ClusterDir};
use crate::ops::cluster_client::{ClusterClient, FAN_OUT, SLOT_TIME, fan_out};
use cuberoute_daemon::client::ClientError;
use cuberoute_daemon::keys::{self, KeyError, Revocations, SignedFile};
use cuberoute_daemon::manifest::Manifest;
use cuberoute_protocol::wire::control::{Request, Response};
use cuberoute_protocol::{NodeId, Topology};
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;
use serde::Serialize;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long each node may take to take the list.
pub const PUSH_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a revocation was not made, or the list not read.
#[derive(Debug, thiserror::Error)]
pub enum RevokeError {
    #[error("{0} holds no cluster (no manifest.toml): start one with `cuberoute cluster up`")]
    NoCluster(PathBuf),
    #[error("node {node} is not a node of this cluster ({topology})")]
    UnknownNode { node: NodeId, topology: Topology },
    #[error(
        "node {node} is already revoked (serial {serial} of {}); `cluster revoke --push` pushes the list again to nodes that missed it",
        path.display()
    )]
    AlreadyRevoked {
        node: NodeId,
        serial: u64,
        path: PathBuf,
    },
    #[error("{} holds no revocation list: no node was revoked", .0.display())]
    NoList(PathBuf),
    #[error("cannot read the CA key {}: {message}", path.display())]
    CaKey { path: PathBuf, message: String },
    #[error("cannot read the CA certificate {}: {message}", path.display())]
    CaCert { path: PathBuf, message: String },
    /// `DIR/revoked.bin` is unreadable, not a list, or not signed by this cluster's CA.
    #[error("the cluster's revocation list: {0}")]
    List(KeyError),
    #[error("cannot write {}: {message}", path.display())]
    Write { path: PathBuf, message: String },
    /// The client certificate's role does not allow pushing a list: nothing was written.
    #[error("{0}")]
    Forbidden(String),
    #[error("{0:#}")]
    Other(anyhow::Error),
}

impl RevokeError {
    /// Whether the operator asked for something that cannot be (exit 2), rather than the
    /// cluster directory failing them (exit 1).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            RevokeError::NoCluster(_)
                | RevokeError::UnknownNode { .. }
                | RevokeError::AlreadyRevoked { .. }
                | RevokeError::NoList(_)
        )
    }
}

/// The list that revokes `node` after `current`: the next serial, `node` added. Refused if
/// `node` is revoked already.
pub fn next_list(
    current: &Revocations,
    node: NodeId,
    path: &Path,
) -> Result<Revocations, RevokeError> {
    if current.revoked.contains(&node) {
        return Err(RevokeError::AlreadyRevoked {
            node,
            serial: current.serial,
            path: path.into(),
        });
    }
    let mut next = current.clone();
    next.serial += 1;
    next.revoked.insert(node);
    Ok(next)
}

/// `list` signed by the CA whose key is `ca_key_pem`: the bytes of its `SignedFile`.
pub fn sign(list: &Revocations, ca_key_pem: &str) -> anyhow::Result<Vec<u8>> {
    let body = list.to_bytes();
    let signature = sign_with_pem(ca_key_pem, &keys::signed_bytes(keys::REVOCATIONS, &body))?;
    Ok(SignedFile {
        what: keys::REVOCATIONS.to_string(),
        body,
        signature,
    }
    .to_bytes())
}

/// The cluster CA's certificate, which every list must be signed by.
pub fn ca_certs(dir: &ClusterDir) -> Result<Vec<CertificateDer<'static>>, RevokeError> {
    let error = |message: String| RevokeError::CaCert {
        path: dir.ca_cert(),
        message,
    };
    let certs = CertificateDer::pem_file_iter(dir.ca_cert())
        .map_err(|e| error(e.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| error(e.to_string()))?;
    if certs.is_empty() {
        return Err(error("no certificate in it".into()));
    }
    Ok(certs)
}

/// The cluster's revocation list and its signed bytes, checked against the CA; the empty list
/// (serial 0) and no bytes if no node was ever revoked.
pub fn read(
    dir: &ClusterDir,
    ca: &[CertificateDer<'static>],
) -> Result<(Revocations, Option<Vec<u8>>), RevokeError> {
    let path = dir.revoked();
    let signed = match std::fs::read(&path) {
        Ok(signed) => signed,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok((Revocations::default(), None));
        }
        Err(e) => {
            return Err(RevokeError::List(KeyError::Read {
                path,
                message: e.to_string(),
            }));
        }
    };
    let list = keys::read_list(ca, &path, &signed).map_err(RevokeError::List)?;
    Ok((list, Some(signed)))
}

/// Write `bytes` at `path` whole, then rename it there: a reader sees the old file or the new,
/// never a part.
fn write_whole(path: &Path, bytes: &[u8]) -> Result<(), RevokeError> {
    let partial = path.with_extension("writing");
    std::fs::write(&partial, bytes)
        .and_then(|()| std::fs::rename(&partial, path))
        .map_err(|e| RevokeError::Write {
            path: path.into(),
            message: e.to_string(),
        })
}

/// Write the signed list of `serial` at `DIR/revoked.bin` first (the cluster's own copy:
/// whatever happens next, the next revocation follows it), then in the directory of every node
/// of `nodes` that has one here, unless its file holds this list or a later one (a node's file
/// is what it reads at its next start, and is never set back: `--push` of a cluster list older
/// than a node's leaves that node's file as it is). The nodes without a directory.
pub fn write(
    dir: &ClusterDir,
    ca: &[CertificateDer<'static>],
    nodes: &[NodeId],
    signed: &[u8],
    serial: u64,
) -> Result<Vec<NodeId>, RevokeError> {
    write_whole(&dir.revoked(), signed)?;
    let mut without = Vec::new();
    for &node in nodes {
        let node_dir = dir.node_dir(node);
        if node_dir.is_dir() {
            keys::keep(ca, &node_dir.join(layout::NODE_REVOKED), signed, serial).map_err(|e| {
                match e {
                    KeyError::Keep { path, message } => RevokeError::Write { path, message },
                    other => RevokeError::List(other),
                }
            })?;
        } else {
            without.push(node);
        }
    }
    Ok(without)
}

/// What a node said to a pushed list.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case", tag = "answer")]
pub enum Taken {
    /// In force there: its serial, and the nodes it newly revoked there.
    Took { serial: u64, newly: Vec<NodeId> },
    /// The node answered and refused it (why).
    Refused { error: String },
    /// No answer (it reads the list at its next start).
    Silent { error: String },
}

/// One node's answer to a push.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Answer {
    pub id: NodeId,
    #[serde(flatten)]
    pub taken: Taken,
}

/// Push the signed list to each of `nodes` at once ([`FAN_OUT`] at a time), each within
/// `timeout`; the answers in that order.
pub async fn push(
    client: &ClusterClient,
    nodes: &[NodeId],
    signed: &[u8],
    timeout: Duration,
) -> Vec<Answer> {
    let asks = nodes.iter().map(|&node| {
        let request = Request::Revoke {
            signed: signed.to_vec(),
        };
        async move {
            let answer = tokio::time::timeout(timeout, client.request(node, &request)).await;
            let taken = match answer {
                Ok(Ok(Response::Revoked { serial, newly })) => Taken::Took { serial, newly },
                Ok(Ok(other)) => Taken::Refused {
                    error: format!("unexpected answer {other:?}"),
                },
                Ok(Err(ClientError::Refused { error, .. })) => Taken::Refused {
                    error: error.message,
                },
                Ok(Err(e)) => Taken::Silent {
                    error: e.to_string(),
                },
                Err(_) => Taken::Silent {
                    error: format!("no answer within {timeout:?}"),
                },
            };
            Answer { id: node, taken }
        }
    });
    fan_out(asks, FAN_OUT, SLOT_TIME).await
}

/// What `cluster revoke` did.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The node revoked now (none for `--push`).
    pub node: Option<NodeId>,
    pub serial: u64,
    /// Every node the list revokes.
    pub revoked: Vec<NodeId>,
    /// Node directories the list was written into.
    pub files_written: usize,
    /// Nodes of the manifest without a directory here (they learn the list by the push only).
    pub without_directory: Vec<NodeId>,
    /// Each node's answer to the push, in manifest order.
    pub nodes: Vec<Answer>,
    /// From the first request of the push to the last answer.
    pub push_ms: u64,
}

impl Report {
    pub fn took(&self) -> Vec<NodeId> {
        self.filter(|t| matches!(t, Taken::Took { .. }))
    }

    pub fn refused(&self) -> Vec<(NodeId, String)> {
        self.errors(|t| match t {
            Taken::Refused { error } => Some(error),
            _ => None,
        })
    }

    pub fn silent(&self) -> Vec<(NodeId, String)> {
        self.errors(|t| match t {
            Taken::Silent { error } => Some(error),
            _ => None,
        })
    }

    fn filter(&self, keep: impl Fn(&Taken) -> bool) -> Vec<NodeId> {
        self.nodes
            .iter()
            .filter(|a| keep(&a.taken))
            .map(|a| a.id)
            .collect()
    }

    fn errors(&self, error: impl Fn(&Taken) -> Option<&String>) -> Vec<(NodeId, String)> {
        self.nodes
            .iter()
            .filter_map(|a| error(&a.taken).map(|e| (a.id, e.clone())))
            .collect()
    }
}

/// The cluster's manifest, or why `dir` holds no cluster.
fn manifest(dir: &ClusterDir) -> Result<Manifest, RevokeError> {
    if !dir.is_cluster() {
        return Err(RevokeError::NoCluster(dir.path().into()));
    }
    Manifest::load(&dir.manifest()).map_err(|e| RevokeError::Other(e.into()))
}

/// The CA key, read and held locked until the returned lock is dropped.
fn lock_ca_key(
    dir: &ClusterDir,
) -> Result<(nix::fcntl::Flock<std::fs::File>, String), RevokeError> {
    let path = dir.ca_key();
    let error = |message: String| RevokeError::CaKey {
        path: path.clone(),
        message,
    };
    let file = std::fs::File::open(&path).map_err(|e| error(e.to_string()))?;
    let mut lock = nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, e)| error(format!("cannot lock it: {e}")))?;
    let mut pem = String::new();
    lock.read_to_string(&mut pem)
        .map_err(|e| error(e.to_string()))?;
    Ok((lock, pem))
}

/// Revoke `node` (`Some`), or push the list in force again (`None`): see the module's doc.
pub async fn revoke(dir: &ClusterDir, node: Option<NodeId>) -> Result<Report, RevokeError> {
    let manifest = manifest(dir)?;
    let topology = manifest.topology;
    if let Some(node) = node
        && manifest.node(node).is_none()
    {
        return Err(RevokeError::UnknownNode { node, topology });
    }
    let ca = ca_certs(dir)?;
    // A certificate whose role may not push the list writes none either (every node would
    // read it at its next start).
    let nodes: Vec<NodeId> = manifest.nodes.iter().map(|n| n.id).collect();
    let pushing = Request::Revoke { signed: Vec::new() };
    if let Err(line) =
        crate::ops::cluster_client::allowed(dir, &nodes, &[pushing]).map_err(RevokeError::Other)?
    {
        return Err(RevokeError::Forbidden(line));
    }
    // Refused before the CA key is touched: an operator's slip is not the directory's fault.
    let (current, _) = read(dir, &ca)?;
    match node {
        Some(node) => drop(next_list(&current, node, &dir.revoked())?),
        None if current.serial == 0 => return Err(RevokeError::NoList(dir.revoked())),
        None => {}
    }
    let (_lock, ca_key) = lock_ca_key(dir)?;
    // Again under the lock: another revocation may have come first.
    let (current, in_force) = read(dir, &ca)?;
    let (list, signed) = match node {
        Some(node) => {
            let list = next_list(&current, node, &dir.revoked())?;
            let signed = sign(&list, &ca_key).map_err(|e| RevokeError::CaKey {
                path: dir.ca_key(),
                message: format!("{e:#}"),
            })?;
            (list, signed)
        }
        None => (
            current,
            in_force.ok_or_else(|| RevokeError::NoList(dir.revoked()))?,
        ),
    };
    let without_directory = write(dir, &ca, &nodes, &signed, list.serial)?;
    let client = ClusterClient::open(dir).map_err(RevokeError::Other)?;
    let started = Instant::now();
    let answers = push(&client, &nodes, &signed, PUSH_TIMEOUT).await;
    let push_ms = started.elapsed().as_millis() as u64;
    client.close();
    Ok(Report {
        node,
        serial: list.serial,
        revoked: list.revoked.into_iter().collect(),
        files_written: nodes.len() - without_directory.len(),
        without_directory,
        nodes: answers,
        push_ms,
    })
}

/// The cluster's revocation list and the one in force at each node.
#[derive(Clone, Debug, Serialize)]
pub struct Listing {
    pub serial: u64,
    pub revoked: Vec<NodeId>,
    /// Each node's serial in force, or why it did not answer, in manifest order.
    pub nodes: Vec<InForce>,
}

/// The list in force at one node: its serial, or why the node did not answer.
#[derive(Clone, Debug, Serialize)]
pub struct InForce {
    pub id: NodeId,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub serial: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Listing {
    /// Nodes whose list in force is older than the cluster's.
    pub fn behind(&self) -> Vec<(NodeId, u64)> {
        self.nodes
            .iter()
            .filter_map(|n| match n.serial {
                Some(serial) if serial < self.serial => Some((n.id, serial)),
                _ => None,
            })
            .collect()
    }

    pub fn silent(&self) -> Vec<(NodeId, String)> {
        self.nodes
            .iter()
            .filter_map(|n| n.error.clone().map(|e| (n.id, e)))
            .collect()
    }
}

/// `cluster revoke --list`: the cluster's list, and every node's serial in force.
pub async fn list(dir: &ClusterDir, timeout: Duration) -> Result<Listing, RevokeError> {
    manifest(dir)?;
    let ca = ca_certs(dir)?;
    let (list, _) = read(dir, &ca)?;
    let client = ClusterClient::open(dir).map_err(RevokeError::Other)?;
    let statuses = client.statuses(timeout).await;
    client.close();
    Ok(Listing {
        serial: list.serial,
        revoked: list.revoked.into_iter().collect(),
        nodes: statuses
            .into_iter()
            .map(|(id, status)| match status {
                Ok(status) => InForce {
                    id,
                    serial: Some(status.revocation_serial),
                    error: None,
                },
                Err(e) => InForce {
                    id,
                    serial: None,
                    error: Some(e),
                },
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launch::certs::ClusterCa;

    fn list(serial: u64, revoked: &[u64]) -> Revocations {
        Revocations {
            serial,
            revoked: revoked.iter().map(|&v| NodeId(v)).collect(),
        }
    }

    #[test]
    fn each_revocation_adds_its_node_with_the_next_serial_and_a_node_is_revoked_once() {
        let path = Path::new("revoked.bin");
        let first = next_list(&Revocations::default(), NodeId(5), path).unwrap();
        assert_eq!(first, list(1, &[5]));
        let second = next_list(&first, NodeId(2), path).unwrap();
        assert_eq!(second, list(2, &[2, 5]));
        assert!(second.follows(&first).is_ok());
        assert!(matches!(
            next_list(&second, NodeId(5), path),
            Err(RevokeError::AlreadyRevoked {
                node: NodeId(5),
                serial: 2,
                ..
            })
        ));
    }

    /// What `cluster revoke` signs with `DIR/ca.key` the daemons read with `DIR/ca.pem`; another
    /// cluster's CA signs nothing they take.
    #[test]
    fn a_list_signed_with_the_ca_key_in_pem_reads_back_with_the_ca_certificate() {
        let (ours, theirs) = (
            ClusterCa::generate("q:3").unwrap(),
            ClusterCa::generate("q:3").unwrap(),
        );
        let cert =
            |ca: &ClusterCa| CertificateDer::from_pem_slice(ca.cert_pem().as_bytes()).unwrap();
        let signed = sign(&list(1, &[3]), &ours.key_pem()).unwrap();
        let path = Path::new("revoked.bin");
        assert_eq!(
            keys::read_list(&[cert(&ours)], path, &signed).unwrap(),
            list(1, &[3])
        );
        assert!(matches!(
            keys::read_list(&[cert(&theirs)], path, &signed),
            Err(KeyError::NotSigned { .. })
        ));
        assert!(sign(&list(1, &[3]), "not a key").is_err());
    }

    #[test]
    fn the_list_goes_to_the_cluster_first_then_to_every_node_directory_there_is() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = ClusterDir::new(tmp.path());
        let ca = ClusterCa::generate("q:3").unwrap();
        let certs = [CertificateDer::from_pem_slice(ca.cert_pem().as_bytes()).unwrap()];
        for id in [0, 1, 3] {
            std::fs::create_dir_all(dir.node_dir(NodeId(id))).unwrap();
        }
        // Node 3's file holds a later list than the one written now (the cluster's own list
        // was set back): it stays.
        let later = sign(&list(2, &[5, 6]), &ca.key_pem()).unwrap();
        let node_3 = dir.node_dir(NodeId(3)).join(layout::NODE_REVOKED);
        std::fs::write(&node_3, &later).unwrap();
        let signed = sign(&list(1, &[5]), &ca.key_pem()).unwrap();
        let nodes = [NodeId(0), NodeId(1), NodeId(2), NodeId(3)];
        let without = write(&dir, &certs, &nodes, &signed, 1).unwrap();
        assert_eq!(without, vec![NodeId(2)]);
        assert_eq!(std::fs::read(dir.revoked()).unwrap(), signed);
        for id in [0, 1] {
            let file = dir.node_dir(NodeId(id)).join(layout::NODE_REVOKED);
            assert_eq!(std::fs::read(file).unwrap(), signed);
        }
        assert_eq!(std::fs::read(&node_3).unwrap(), later);
        let leftovers: Vec<_> = std::fs::read_dir(dir.node_dir(NodeId(0)))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(leftovers, vec![layout::NODE_REVOKED]);
    }

    #[test]
    fn the_cluster_list_reads_as_empty_when_missing_and_fails_when_foreign() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = ClusterDir::new(tmp.path());
        let ca = ClusterCa::generate("q:3").unwrap();
        std::fs::write(dir.ca_cert(), ca.cert_pem()).unwrap();
        let certs = ca_certs(&dir).unwrap();
        let (empty, bytes) = read(&dir, &certs).unwrap();
        assert_eq!((empty, bytes), (Revocations::default(), None));
        let signed = sign(&list(4, &[1, 2]), &ca.key_pem()).unwrap();
        std::fs::write(dir.revoked(), &signed).unwrap();
        assert_eq!(
            read(&dir, &certs).unwrap(),
            (list(4, &[1, 2]), Some(signed))
        );
        let other = ClusterCa::generate("q:3").unwrap();
        std::fs::write(
            dir.revoked(),
            sign(&list(5, &[1]), &other.key_pem()).unwrap(),
        )
        .unwrap();
        let err = read(&dir, &certs).unwrap_err();
        assert!(matches!(err, RevokeError::List(KeyError::NotSigned { .. })));
        assert!(!err.is_usage());
    }
}
