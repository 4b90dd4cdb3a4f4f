//! The node's store: what a node keeps across a crash, in one redb file in its state directory.
//!
//! redb commits a write transaction durably (its pages, then a checksummed header, each synced)
//! and recovers to the last commit after a crash; this module decides what goes in:
//!
//! - `identity`: the node id and the cluster the file belongs to. A store of another node or
//!   another cluster is refused at open, never used or overwritten.
//! - `entries`: the reliable sets delivered here, by store index (increasing from 0), as the
//!   bytes of the entry a client reads, until retention drops them.
//! - `seen`: the key of every set delivered here, with its store index and when it came. It
//!   outlives its entry: a resend that arrives after a restart is known again (acknowledged,
//!   never handed to a client twice).
//! - `consumers`: per named consumer, the first store index it has not taken.
//! - `outbox`: the reliable sets this node is the source of and that are not settled.
//! - `counters`: the next store index, the entries' bytes, and the output indices reserved
//!   ([`Write::ReserveOutput`]): a restarted node's output continues after them.
//!
//! Every write goes through [`Store::commit`], one transaction for a batch; the [`Writer`]
//! thread batches whatever is waiting (group commit), so that a burst of sets costs one sync.

use cuberoute_protocol::NodeId;
use cuberoute_protocol::delivery::SetKey;
use redb::{Database, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock, mpsc};

const IDENTITY: TableDefinition<&str, &[u8]> = TableDefinition::new("identity");
const COUNTERS: TableDefinition<&str, u64> = TableDefinition::new("counters");
const ENTRIES: TableDefinition<u64, &[u8]> = TableDefinition::new("entries");
/// Set key (source, sequence, send time) -> (store index, delivered at).
const SEEN: TableDefinition<(u64, u64, u64), (u64, u64)> = TableDefinition::new("seen");
const CONSUMERS: TableDefinition<&str, u64> = TableDefinition::new("consumers");
const OUTBOX: TableDefinition<(u64, u64, u64), &[u8]> = TableDefinition::new("outbox");
/// The nodes this node held sealing sessions with (their ids, never a key): after a restart it
/// starts a handshake with each, so that they stop sealing under sessions it forgot.
const SEALING: TableDefinition<&str, &[u8]> = TableDefinition::new("sealing");
const SEALING_PEERS: &str = "peers";

const NODE: &str = "node";
const CLUSTER: &str = "cluster";
const NEXT_INDEX: &str = "next_index";
const ENTRY_BYTES: &str = "entry_bytes";
const OUTPUT_RESERVED: &str = "output_reserved";

/// Whose store a file is: the node and the cluster (for example its topology and its CA's
/// fingerprint).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    pub node: NodeId,
    pub cluster: String,
}

/// How much a store keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retention {
    /// Entries together hold at most this many payload bytes; a set that would pass it is
    /// refused ([`Outcome::Full`]).
    pub max_bytes: u64,
    /// Entries older than this are dropped by [`Write::Prune`].
    pub max_age_us: u64,
    /// Set keys are remembered this long after their delivery (at least as long as a source
    /// may send a set again).
    pub seen_for_us: u64,
}

impl Default for Retention {
    fn default() -> Self {
        Retention {
            max_bytes: 256 << 20,
            max_age_us: 24 * 3_600_000_000,
            seen_for_us: 24 * 3_600_000_000,
        }
    }
}

/// Why a store could not be opened or written.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("store {path}: {message}")]
    Unusable { path: PathBuf, message: String },
    #[error("store {path} belongs to node {theirs}, not to node {ours}")]
    OtherNode {
        path: PathBuf,
        theirs: NodeId,
        ours: NodeId,
    },
    #[error("store {path} belongs to another cluster ({theirs:?}, not {ours:?})")]
    OtherCluster {
        path: PathBuf,
        theirs: String,
        ours: String,
    },
    #[error("store {path} is open in another process (a daemon runs on it)")]
    InUse { path: PathBuf },
    #[error("store {path}: a write failed: {message}")]
    Write { path: PathBuf, message: String },
}

/// One change to the store; a batch of them is one transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Write {
    /// A reliable set delivered here, with the bytes of its entry.
    Deliver {
        set: SetKey,
        entry: Vec<u8>,
        at_us: u64,
    },
    /// `consumer` has taken every entry before `next`.
    Consume { consumer: String, next: u64 },
    /// A reliable set this node sends, to send again after a restart until it settles.
    Keep { set: SetKey, resend: Vec<u8> },
    /// A set of this node's settled (acknowledged, expired or refused): no longer kept.
    Settle { set: SetKey },
    /// Drop entries and set keys older than the retention allows, as of `now_us`.
    Prune { now_us: u64 },
    /// The nodes this node holds sealing sessions with, as their ids (postcard), replacing the
    /// last list.
    SealingPeers { peers: Vec<u8> },
    /// The node's output may have handed out every output index below `up_to` (it never moves
    /// back): after a restart, new entries take indices from there on.
    ReserveOutput { up_to: u64 },
}

/// What became of one write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Durable: a delivered set at this store index, or any other write done.
    Kept {
        index: u64,
    },
    /// A set delivered here before (at this store index, which retention may have dropped
    /// since): acknowledge it again, hand it to nobody.
    AlreadyDelivered {
        index: u64,
    },
    /// The entries are at their byte limit: the set is not kept (not acknowledged either).
    Full,
    Done,
}

/// What a store holds, for status and metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub entries: u64,
    pub entry_bytes: u64,
    pub seen: u64,
    pub outbox: u64,
    pub next_index: u64,
    /// The output indices reserved so far ([`Write::ReserveOutput`]).
    pub output_reserved: u64,
}

pub struct Store {
    db: Database,
    path: PathBuf,
    retention: Retention,
    /// On a simulated disk ([`crate::disk`]): written in line, in the simulation's order.
    simulated: bool,
}

fn key(set: &SetKey) -> (u64, u64, u64) {
    (set.src.0, set.seq, set.sent_at_us)
}

fn set_of((src, seq, sent_at_us): (u64, u64, u64)) -> SetKey {
    SetKey {
        src: NodeId(src),
        seq,
        sent_at_us,
    }
}

impl Store {
    /// Open the store at `path`, creating it for `identity` if there is none. Refuses a file
    /// that is not a store, a store of another node or cluster, and one it cannot write.
    pub fn open(
        path: &Path,
        identity: &Identity,
        retention: Retention,
    ) -> Result<Store, StoreError> {
        let unusable = |message: String| StoreError::Unusable {
            path: path.to_path_buf(),
            message,
        };
        // Whose it is, read without writing a byte: a store refused is left exactly as it was.
        // (One that needs recovery after a crash cannot be read so; it is recovered, which
        // only brings back its last commit, and its identity checked then.)
        inspect(path, identity)?;
        // A simulated disk where `cuberoute sim` made one, else the file.
        let opened = match crate::disk::open(path) {
            Some(disk) => redb::Builder::new().create_with_backend(disk),
            None => Database::create(path),
        };
        let simulated = crate::disk::open(path).is_some();
        let db = opened.map_err(|e| match e {
            redb::DatabaseError::DatabaseAlreadyOpen => StoreError::InUse {
                path: path.to_path_buf(),
            },
            e => unusable(e.to_string()),
        })?;
        let store = Store {
            db,
            path: path.to_path_buf(),
            retention,
            simulated,
        };
        let txn = store
            .db
            .begin_write()
            .map_err(|e| unusable(e.to_string()))?;
        {
            let mut table = txn
                .open_table(IDENTITY)
                .map_err(|e| unusable(e.to_string()))?;
            let node = table
                .get(NODE)
                .map_err(|e| unusable(e.to_string()))?
                .map(|v| v.value().to_vec());
            let cluster = table
                .get(CLUSTER)
                .map_err(|e| unusable(e.to_string()))?
                .map(|v| v.value().to_vec());
            if !is_ours(path, identity, node, cluster)? {
                table
                    .insert(NODE, identity.node.0.to_le_bytes().as_slice())
                    .map_err(|e| unusable(e.to_string()))?;
                table
                    .insert(CLUSTER, identity.cluster.as_bytes())
                    .map_err(|e| unusable(e.to_string()))?;
            }
            // Every table exists from the first open on: a reader never meets a missing one.
            let created = txn
                .open_table(ENTRIES)
                .map(drop)
                .and_then(|()| txn.open_table(SEEN).map(drop))
                .and_then(|()| txn.open_table(CONSUMERS).map(drop))
                .and_then(|()| txn.open_table(OUTBOX).map(drop))
                .and_then(|()| txn.open_table(COUNTERS).map(drop));
            created.map_err(|e| unusable(e.to_string()))?;
        }
        txn.commit().map_err(|e| unusable(e.to_string()))?;
        Ok(store)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the store is on a simulated disk.
    pub fn is_simulated(&self) -> bool {
        self.simulated
    }

    fn write_error(&self, e: impl std::fmt::Display) -> StoreError {
        StoreError::Write {
            path: self.path.clone(),
            message: e.to_string(),
        }
    }

    /// Apply `writes` in one durable transaction: when this returns, every outcome holds
    /// across a crash. An error leaves the store as it was before the batch.
    pub fn commit(&self, writes: &[Write]) -> Result<Vec<Outcome>, StoreError> {
        let e = |e: redb::Error| self.write_error(e);
        let txn = self.db.begin_write().map_err(|x| e(x.into()))?;
        let mut outcomes = Vec::with_capacity(writes.len());
        {
            let mut counters = txn.open_table(COUNTERS).map_err(|x| e(x.into()))?;
            let counter = |t: &redb::Table<&str, u64>, name: &str| -> Result<u64, redb::Error> {
                Ok(t.get(name)?.map(|v| v.value()).unwrap_or(0))
            };
            let mut next_index = counter(&counters, NEXT_INDEX).map_err(e)?;
            let mut entry_bytes = counter(&counters, ENTRY_BYTES).map_err(e)?;
            let mut output_reserved = counter(&counters, OUTPUT_RESERVED).map_err(e)?;
            let mut entries = txn.open_table(ENTRIES).map_err(|x| e(x.into()))?;
            let mut seen = txn.open_table(SEEN).map_err(|x| e(x.into()))?;
            let mut consumers = txn.open_table(CONSUMERS).map_err(|x| e(x.into()))?;
            let mut outbox = txn.open_table(OUTBOX).map_err(|x| e(x.into()))?;
            let mut sealing = txn.open_table(SEALING).map_err(|x| e(x.into()))?;
            for write in writes {
                let outcome = match write {
                    Write::Deliver { set, entry, at_us } => {
                        if let Some(before) = seen.get(key(set)).map_err(|x| e(x.into()))? {
                            Outcome::AlreadyDelivered {
                                index: before.value().0,
                            }
                        } else if entry_bytes + entry.len() as u64 > self.retention.max_bytes {
                            Outcome::Full
                        } else {
                            let index = next_index;
                            next_index += 1;
                            entry_bytes += entry.len() as u64;
                            entries
                                .insert(index, entry.as_slice())
                                .map_err(|x| e(x.into()))?;
                            seen.insert(key(set), (index, *at_us))
                                .map_err(|x| e(x.into()))?;
                            Outcome::Kept { index }
                        }
                    }
                    Write::Consume { consumer, next } => {
                        let before = consumers
                            .get(consumer.as_str())
                            .map_err(|x| e(x.into()))?
                            .map(|v| v.value())
                            .unwrap_or(0);
                        // A consumer only moves forward.
                        consumers
                            .insert(consumer.as_str(), before.max(*next))
                            .map_err(|x| e(x.into()))?;
                        Outcome::Done
                    }
                    Write::Keep { set, resend } => {
                        outbox
                            .insert(key(set), resend.as_slice())
                            .map_err(|x| e(x.into()))?;
                        Outcome::Done
                    }
                    Write::Settle { set } => {
                        outbox.remove(key(set)).map_err(|x| e(x.into()))?;
                        Outcome::Done
                    }
                    Write::Prune { now_us } => {
                        let entry_before = now_us.saturating_sub(self.retention.max_age_us);
                        let seen_before = now_us.saturating_sub(self.retention.seen_for_us);
                        let mut old_entries = Vec::new();
                        let mut forgotten = Vec::new();
                        for row in seen.iter().map_err(|x| e(x.into()))? {
                            let (k, v) = row.map_err(|x| e(x.into()))?;
                            let (index, at_us) = v.value();
                            if at_us < entry_before {
                                old_entries.push(index);
                            }
                            if at_us < seen_before {
                                forgotten.push(k.value());
                            }
                        }
                        for index in old_entries {
                            if let Some(gone) = entries.remove(index).map_err(|x| e(x.into()))? {
                                entry_bytes -= gone.value().len() as u64;
                            }
                        }
                        for k in forgotten {
                            seen.remove(k).map_err(|x| e(x.into()))?;
                        }
                        Outcome::Done
                    }
                    Write::SealingPeers { peers } => {
                        sealing
                            .insert(SEALING_PEERS, peers.as_slice())
                            .map_err(|x| e(x.into()))?;
                        Outcome::Done
                    }
                    Write::ReserveOutput { up_to } => {
                        output_reserved = output_reserved.max(*up_to);
                        Outcome::Done
                    }
                };
                outcomes.push(outcome);
            }
            counters
                .insert(NEXT_INDEX, next_index)
                .map_err(|x| e(x.into()))?;
            counters
                .insert(ENTRY_BYTES, entry_bytes)
                .map_err(|x| e(x.into()))?;
            counters
                .insert(OUTPUT_RESERVED, output_reserved)
                .map_err(|x| e(x.into()))?;
        }
        txn.commit().map_err(|x| e(x.into()))?;
        Ok(outcomes)
    }

    fn read<T>(
        &self,
        f: impl FnOnce(&redb::ReadTransaction) -> Result<T, redb::Error>,
    ) -> Result<T, StoreError> {
        let txn = self
            .db
            .begin_read()
            .map_err(|e| self.write_error(redb::Error::from(e)))?;
        f(&txn).map_err(|e| self.write_error(e))
    }

    /// The last list of sealing peers written ([`Write::SealingPeers`]), empty if none was.
    pub fn sealing_peers(&self) -> Result<Vec<u8>, StoreError> {
        self.read(|txn| match txn.open_table(SEALING) {
            Ok(table) => Ok(table
                .get(SEALING_PEERS)?
                .map(|v| v.value().to_vec())
                .unwrap_or_default()),
            Err(redb::TableError::TableDoesNotExist(_)) => Ok(Vec::new()),
            Err(x) => Err(x.into()),
        })
    }

    /// When `set` was delivered here and at which store index, if it was (within
    /// [`Retention::seen_for_us`]).
    pub fn seen(&self, set: &SetKey) -> Result<Option<(u64, u64)>, StoreError> {
        self.read(|txn| Ok(txn.open_table(SEEN)?.get(key(set))?.map(|v| v.value())))
    }

    /// Up to `max` entries from store index `from` on, in order.
    pub fn entries_from(&self, from: u64, max: usize) -> Result<Vec<(u64, Vec<u8>)>, StoreError> {
        self.read(|txn| {
            let table = txn.open_table(ENTRIES)?;
            let mut out = Vec::new();
            for row in table.range(from..)?.take(max) {
                let (k, v) = row?;
                out.push((k.value(), v.value().to_vec()));
            }
            Ok(out)
        })
    }

    /// The first store index `consumer` has not taken (0 for a consumer never seen).
    pub fn consumer(&self, consumer: &str) -> Result<u64, StoreError> {
        self.read(|txn| {
            Ok(txn
                .open_table(CONSUMERS)?
                .get(consumer)?
                .map(|v| v.value())
                .unwrap_or(0))
        })
    }

    /// The unsettled sets this node sends, in set-key order.
    pub fn outbox(&self) -> Result<Vec<(SetKey, Vec<u8>)>, StoreError> {
        self.read(|txn| {
            let table = txn.open_table(OUTBOX)?;
            let mut out = Vec::new();
            for row in table.iter()? {
                let (k, v) = row?;
                out.push((set_of(k.value()), v.value().to_vec()));
            }
            Ok(out)
        })
    }

    pub fn usage(&self) -> Result<Usage, StoreError> {
        self.read(usage_of)
    }

    /// Whose store the file at `path` is, and what it holds, read without writing: `None` if
    /// there is none yet, or it needs the recovery a writable open does (after a crash).
    /// `daemon --check` uses it, and leaves the file as it found it.
    pub fn check(path: &Path, identity: &Identity) -> Result<Option<Usage>, StoreError> {
        inspect(path, identity)
    }
}

fn usage_of(txn: &redb::ReadTransaction) -> Result<Usage, redb::Error> {
    let counters = txn.open_table(COUNTERS)?;
    let counter = |name: &str| -> Result<u64, redb::Error> {
        Ok(counters.get(name)?.map(|v| v.value()).unwrap_or(0))
    };
    Ok(Usage {
        entries: txn.open_table(ENTRIES)?.len()?,
        entry_bytes: counter(ENTRY_BYTES)?,
        seen: txn.open_table(SEEN)?.len()?,
        outbox: txn.open_table(OUTBOX)?.len()?,
        next_index: counter(NEXT_INDEX)?,
        output_reserved: counter(OUTPUT_RESERVED)?,
    })
}

/// Whether the identity read from a store (`node`, `cluster`) is `identity`: true if it is,
/// false if the store has none yet, the reason if it is another's or half written.
fn is_ours(
    path: &Path,
    identity: &Identity,
    node: Option<Vec<u8>>,
    cluster: Option<Vec<u8>>,
) -> Result<bool, StoreError> {
    let unusable = |message: &str| StoreError::Unusable {
        path: path.to_path_buf(),
        message: message.to_string(),
    };
    match (node, cluster) {
        (None, None) => Ok(false),
        (Some(node), Some(cluster)) => {
            let theirs = <[u8; 8]>::try_from(node.as_slice())
                .map(|b| NodeId(u64::from_le_bytes(b)))
                .map_err(|_| unusable("its node id is not 8 bytes"))?;
            if theirs != identity.node {
                return Err(StoreError::OtherNode {
                    path: path.to_path_buf(),
                    theirs,
                    ours: identity.node,
                });
            }
            if cluster != identity.cluster.as_bytes() {
                return Err(StoreError::OtherCluster {
                    path: path.to_path_buf(),
                    theirs: String::from_utf8_lossy(&cluster).into_owned(),
                    ours: identity.cluster.clone(),
                });
            }
            Ok(true)
        }
        _ => Err(unusable("its identity is half written")),
    }
}

/// Look at the store at `path` read-only: `None` if there is nothing yet (no file, an empty
/// one) or it needs recovery, what it holds if it is `identity`'s; refused if it is another
/// node's or cluster's, not a store, or a redb file of something else.
fn inspect(path: &Path, identity: &Identity) -> Result<Option<Usage>, StoreError> {
    let unusable = |message: String| StoreError::Unusable {
        path: path.to_path_buf(),
        message,
    };
    let opened = match crate::disk::open(path) {
        Some(disk) => {
            if redb::StorageBackend::len(&disk).unwrap_or(0) == 0 {
                return Ok(None);
            }
            redb::Builder::new().open_read_only_with_backend(disk)
        }
        None => match std::fs::metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Ok(m) if m.is_file() && m.len() == 0 => return Ok(None),
            _ => redb::Builder::new().open_read_only(path),
        },
    };
    let db = match opened {
        Ok(db) => db,
        Err(redb::DatabaseError::RepairAborted) => return Ok(None),
        Err(redb::DatabaseError::DatabaseAlreadyOpen) => {
            return Err(StoreError::InUse {
                path: path.to_path_buf(),
            });
        }
        Err(e) => return Err(unusable(format!("not a store ({e})"))),
    };
    let txn = db.begin_read().map_err(|e| unusable(e.to_string()))?;
    let table = match txn.open_table(IDENTITY) {
        Ok(table) => table,
        Err(redb::TableError::TableDoesNotExist(_)) => {
            let tables = txn
                .list_tables()
                .map_err(|e| unusable(e.to_string()))?
                .count();
            if tables > 0 {
                return Err(unusable(format!(
                    "a redb file of something else: {tables} tables and no identity"
                )));
            }
            return Ok(None);
        }
        Err(e) => return Err(unusable(e.to_string())),
    };
    let read = |key| -> Result<Option<Vec<u8>>, StoreError> {
        Ok(table
            .get(key)
            .map_err(|e| unusable(e.to_string()))?
            .map(|v| v.value().to_vec()))
    };
    if !is_ours(path, identity, read(NODE)?, read(CLUSTER)?)? {
        return Ok(None);
    }
    usage_of(&txn)
        .map(Some)
        .map_err(|e| unusable(e.to_string()))
}

// The writer. Group commit: a thread that takes every batch waiting, commits each store's together (one
// transaction, one sync per store) and then answers each batch with its outcomes.
//
// A process has at most [`SHARED_THREADS`] such threads for all its stores
// ([`Writer::shared`]): a node host of 65,536 nodes would otherwise start a thread per node
// that keeps anything, past the machine's 32,768 process ids. A store's batches always go to
// the same thread, in the order they were submitted; two stores on one thread take turns, one
// sync each. [`Writer::start`] gives a store a thread of its own.

/// How long a busy writer waits for more batches before it commits (PostgreSQL's
/// `commit_delay`, taken only when the last commit found company).
const GATHER_WHEN_BUSY: std::time::Duration = std::time::Duration::from_micros(2000);

/// The most writer threads the stores of one process share.
pub const SHARED_THREADS: usize = 4;

/// What a writer did: batches asked for, and the transactions that carried them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriterStats {
    pub batches: u64,
    pub commits: u64,
}

type Answer = Box<dyn FnOnce(Result<Vec<Outcome>, String>) + Send>;

/// One store's batches of a group, with its writer's counts.
type StoreBatches = (
    Arc<Store>,
    Arc<Mutex<WriterStats>>,
    Vec<(Vec<Write>, Answer)>,
);

enum Job {
    /// A batch for `store`, at most `max_batches` of which go into one commit.
    Batch {
        store: Arc<Store>,
        stats: Arc<Mutex<WriterStats>>,
        max_batches: usize,
        writes: Vec<Write>,
        answer: Answer,
    },
    /// Said once every job queued before it is committed, answered and let go.
    Flushed(mpsc::SyncSender<()>),
}

/// A store's way to its writer thread.
pub struct Writer {
    store: Arc<Store>,
    jobs: mpsc::Sender<Job>,
    max_batches: usize,
    stats: Arc<Mutex<WriterStats>>,
    /// The thread, if it is this writer's own.
    thread: Option<std::thread::JoinHandle<()>>,
    /// A writer without a thread: each batch is committed when it is submitted (a simulated
    /// disk, whose order must be the simulation's).
    in_line: bool,
    stopped: bool,
}

/// The writer threads the stores of this process share, started as they are first needed.
struct Shared {
    threads: Mutex<Vec<mpsc::Sender<Job>>>,
    next: AtomicUsize,
}

static SHARED: OnceLock<Shared> = OnceLock::new();

impl Writer {
    /// Start a writer thread of the store's own. At most `max_batches` batches go into one
    /// commit.
    pub fn start(store: Arc<Store>, max_batches: usize) -> Writer {
        let (jobs, waiting) = mpsc::channel();
        let thread = spawn(waiting);
        Writer::on(store, jobs, max_batches, Some(thread))
    }

    /// A writer on one of the process's shared threads ([`SHARED_THREADS`]), taken in turn.
    pub fn shared(store: Arc<Store>, max_batches: usize) -> Writer {
        let shared = SHARED.get_or_init(|| Shared {
            threads: Mutex::new(Vec::new()),
            next: AtomicUsize::new(0),
        });
        let turn = shared.next.fetch_add(1, Relaxed) % SHARED_THREADS;
        let jobs = {
            let mut threads = shared.threads.lock().expect("writers lock");
            if threads.len() <= turn {
                let (jobs, waiting) = mpsc::channel();
                // The shared threads run as long as the process.
                drop(spawn(waiting));
                threads.push(jobs);
            }
            threads[turn.min(threads.len() - 1)].clone()
        };
        Writer::on(store, jobs, max_batches, None)
    }

    /// A writer that commits each batch when it is submitted, on the caller's thread.
    pub fn in_line(store: Arc<Store>) -> Writer {
        let mut writer = Writer::on(store, mpsc::channel().0, 1, None);
        writer.in_line = true;
        writer
    }

    fn on(
        store: Arc<Store>,
        jobs: mpsc::Sender<Job>,
        max_batches: usize,
        thread: Option<std::thread::JoinHandle<()>>,
    ) -> Writer {
        Writer {
            store,
            jobs,
            max_batches,
            stats: Arc::default(),
            thread,
            in_line: false,
            stopped: false,
        }
    }

    /// Queue `writes` as one batch; `answer` gets their outcomes once they are durable, or
    /// why the commit failed (nothing of the batch was written then).
    pub fn submit(
        &self,
        writes: Vec<Write>,
        answer: impl FnOnce(Result<Vec<Outcome>, String>) + Send + 'static,
    ) {
        if self.in_line {
            answer(self.store.commit(&writes).map_err(|e| e.to_string()));
            return;
        }
        let job = Job::Batch {
            store: self.store.clone(),
            stats: self.stats.clone(),
            max_batches: self.max_batches,
            writes,
            answer: Box::new(answer),
        };
        if let Err(mpsc::SendError(Job::Batch { answer, .. })) = self.jobs.send(job) {
            answer(Err("the store writer has stopped".into()));
        }
    }

    /// Stop after every batch queued so far is committed and answered.
    pub fn stop(mut self) -> WriterStats {
        self.stop_and_wait()
    }

    /// Wait until the thread has committed, answered and let go of every batch of this
    /// store queued so far (it holds the store no longer); end the thread if it is ours.
    fn stop_and_wait(&mut self) -> WriterStats {
        if !self.stopped && !self.in_line {
            self.stopped = true;
            let (flushed, done) = mpsc::sync_channel(1);
            if self.jobs.send(Job::Flushed(flushed)).is_ok() {
                let _ = done.recv();
            }
            if let Some(thread) = self.thread.take() {
                drop(std::mem::replace(&mut self.jobs, mpsc::channel().0));
                let _ = thread.join();
            }
        }
        *self.stats.lock().expect("stats lock")
    }
}

/// A writer dropped finishes what is queued, and its store is closed when the drop returns
/// (once the node's other holders of it let go).
impl Drop for Writer {
    fn drop(&mut self) {
        self.stop_and_wait();
    }
}

fn spawn(waiting: mpsc::Receiver<Job>) -> std::thread::JoinHandle<()> {
    std::thread::Builder::new()
        .name("store-writer".into())
        .spawn(move || write_all(waiting))
        .expect("spawn the store writer")
}

/// The writer thread: take the first job and, while the last commit found company (busy: the
/// disk, not the processor, bounds the writes), what else comes within [`GATHER_WHEN_BUSY`];
/// commit each store's batches of the group together; answer them in order.
fn write_all(waiting: mpsc::Receiver<Job>) {
    let mut busy = false;
    while let Ok(first) = waiting.recv() {
        let max_batches = match &first {
            Job::Batch { max_batches, .. } => (*max_batches).max(1),
            Job::Flushed(_) => 1,
        };
        let mut group = vec![first];
        let gather_until = std::time::Instant::now() + GATHER_WHEN_BUSY;
        while group.len() < max_batches {
            let next = if busy {
                let left = gather_until.saturating_duration_since(std::time::Instant::now());
                waiting.recv_timeout(left).ok()
            } else {
                waiting.try_recv().ok()
            };
            match next {
                Some(job) => group.push(job),
                None => break,
            }
        }
        let mut flushed = Vec::new();
        // Each store's batches, in the order the first of each came.
        let mut stores: Vec<StoreBatches> = Vec::new();
        for job in group {
            match job {
                Job::Flushed(done) => flushed.push(done),
                Job::Batch {
                    store,
                    stats,
                    writes,
                    answer,
                    ..
                } => match stores.iter_mut().find(|(s, ..)| Arc::ptr_eq(s, &store)) {
                    Some((.., batches)) => batches.push((writes, answer)),
                    None => stores.push((store, stats, vec![(writes, answer)])),
                },
            }
        }
        busy = stores.iter().any(|(.., batches)| batches.len() > 1);
        for (store, stats, batches) in stores {
            commit(&store, &stats, batches);
        }
        for done in flushed {
            let _ = done.send(());
        }
    }
}

/// Commit `batches` of `store` in one transaction and answer each.
fn commit(store: &Store, stats: &Mutex<WriterStats>, batches: Vec<(Vec<Write>, Answer)>) {
    {
        let mut stats = stats.lock().expect("stats lock");
        stats.batches += batches.len() as u64;
        stats.commits += 1;
    }
    let writes: Vec<Write> = batches
        .iter()
        .flat_map(|(writes, _)| writes.iter().cloned())
        .collect();
    match store.commit(&writes) {
        Ok(outcomes) => {
            let mut rest = outcomes.into_iter();
            for (writes, answer) in batches {
                let mine = rest.by_ref().take(writes.len()).collect();
                answer(Ok(mine));
            }
        }
        Err(e) => {
            let message = e.to_string();
            for (_, answer) in batches {
                answer(Err(message.clone()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn me() -> Identity {
        Identity {
            node: NodeId(5),
            cluster: "eh:2,2 ca:ab12".into(),
        }
    }

    fn set(seq: u64) -> SetKey {
        SetKey {
            src: NodeId(3),
            seq,
            sent_at_us: 1_000 + seq,
        }
    }

    fn deliver(seq: u64, bytes: usize, at_us: u64) -> Write {
        Write::Deliver {
            set: set(seq),
            entry: vec![seq as u8; bytes],
            at_us,
        }
    }

    #[test]
    fn what_was_committed_is_there_after_a_reopen_and_a_set_is_kept_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.redb");
        {
            let store = Store::open(&path, &me(), Retention::default()).unwrap();
            let out = store
                .commit(&[deliver(1, 10, 50), deliver(2, 20, 60), deliver(1, 10, 70)])
                .unwrap();
            assert_eq!(
                out,
                [
                    Outcome::Kept { index: 0 },
                    Outcome::Kept { index: 1 },
                    Outcome::AlreadyDelivered { index: 0 }
                ]
            );
            store
                .commit(&[
                    Write::Consume {
                        consumer: "app".into(),
                        next: 1,
                    },
                    Write::Keep {
                        set: set(9),
                        resend: vec![9; 4],
                    },
                ])
                .unwrap();
        }
        let store = Store::open(&path, &me(), Retention::default()).unwrap();
        assert_eq!(store.seen(&set(2)).unwrap(), Some((1, 60)));
        assert_eq!(
            store.commit(&[deliver(2, 20, 80)]).unwrap(),
            [Outcome::AlreadyDelivered { index: 1 }],
            "a resend after a restart is known again"
        );
        assert_eq!(store.consumer("app").unwrap(), 1);
        assert_eq!(store.consumer("other").unwrap(), 0);
        let entries = store.entries_from(1, 10).unwrap();
        assert_eq!(entries, [(1, vec![2u8; 20])]);
        assert_eq!(store.outbox().unwrap(), [(set(9), vec![9u8; 4])]);
        store.commit(&[Write::Settle { set: set(9) }]).unwrap();
        assert!(store.outbox().unwrap().is_empty());
        let usage = store.usage().unwrap();
        assert_eq!(
            (usage.entries, usage.entry_bytes, usage.next_index),
            (2, 30, 2)
        );
        // A consumer never moves back.
        store
            .commit(&[Write::Consume {
                consumer: "app".into(),
                next: 0,
            }])
            .unwrap();
        assert_eq!(store.consumer("app").unwrap(), 1);
    }

    #[test]
    fn a_store_of_another_node_or_cluster_or_not_a_store_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.redb");
        drop(Store::open(&path, &me(), Retention::default()).unwrap());
        let other_node = Identity {
            node: NodeId(6),
            ..me()
        };
        let e = Store::open(&path, &other_node, Retention::default())
            .err()
            .unwrap();
        assert!(
            matches!(
                e,
                StoreError::OtherNode {
                    theirs: NodeId(5),
                    ..
                }
            ),
            "{e}"
        );
        let other_cluster = Identity {
            cluster: "q:4 ca:ff".into(),
            ..me()
        };
        let e = Store::open(&path, &other_cluster, Retention::default())
            .err()
            .unwrap();
        assert!(matches!(e, StoreError::OtherCluster { .. }), "{e}");
        assert!(e.to_string().contains("another cluster"));

        let junk = dir.path().join("junk.redb");
        std::fs::write(&junk, vec![0x5a; 8192]).unwrap();
        let e = Store::open(&junk, &me(), Retention::default())
            .err()
            .unwrap();
        assert!(matches!(e, StoreError::Unusable { .. }), "{e}");
        assert_eq!(
            std::fs::read(&junk).unwrap(),
            vec![0x5a; 8192],
            "left as it was"
        );

        let missing_dir = dir.path().join("no").join("store.redb");
        let e = Store::open(&missing_dir, &me(), Retention::default())
            .err()
            .unwrap();
        assert!(e.to_string().contains("no/store.redb"), "{e}");
    }

    #[test]
    fn a_full_store_refuses_and_retention_frees_it() {
        let dir = tempfile::tempdir().unwrap();
        let retention = Retention {
            max_bytes: 100,
            max_age_us: 1_000,
            seen_for_us: 5_000,
        };
        let store = Store::open(&dir.path().join("s.redb"), &me(), retention).unwrap();
        let out = store
            .commit(&[deliver(1, 60, 0), deliver(2, 60, 10), deliver(3, 40, 20)])
            .unwrap();
        assert_eq!(
            out,
            [
                Outcome::Kept { index: 0 },
                Outcome::Full,
                Outcome::Kept { index: 1 }
            ]
        );
        assert_eq!(
            store.seen(&set(2)).unwrap(),
            None,
            "a refused set is not seen"
        );
        // At 1,015 the first set's entry is older than 1,000 µs; its key is still seen.
        store.commit(&[Write::Prune { now_us: 1_015 }]).unwrap();
        assert_eq!(store.usage().unwrap().entry_bytes, 40);
        assert_eq!(
            store.commit(&[deliver(2, 60, 1_020)]).unwrap(),
            [Outcome::Kept { index: 2 }]
        );
        assert_eq!(
            store.commit(&[deliver(1, 60, 1_030)]).unwrap(),
            [Outcome::AlreadyDelivered { index: 0 }]
        );
        store.commit(&[Write::Prune { now_us: 6_000 }]).unwrap();
        assert_eq!(
            store.seen(&set(1)).unwrap(),
            None,
            "forgotten after seen_for_us"
        );
        assert_eq!(store.usage().unwrap().entries, 0);
    }

    #[test]
    fn the_writer_commits_waiting_batches_together_and_answers_each_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let store =
            Arc::new(Store::open(&dir.path().join("s.redb"), &me(), Retention::default()).unwrap());
        let writer = Writer::start(store.clone(), 64);
        let (tx, rx) = mpsc::channel();
        // The first batch is committed alone, and its answer holds the writer until every
        // other batch is queued: those 199 then wait together, and go in ceil(199 / 64) = 4
        // commits.
        let (release, held) = mpsc::channel::<()>();
        let (entered, answering) = mpsc::channel::<()>();
        let first = tx.clone();
        writer.submit(vec![deliver(0, 8, 0)], move |out| {
            entered.send(()).unwrap();
            held.recv().unwrap();
            first.send((0, out)).unwrap();
        });
        answering.recv().unwrap();
        for seq in 1..200u64 {
            let tx = tx.clone();
            writer.submit(
                vec![deliver(seq, 8, seq), deliver(seq, 8, seq)],
                move |out| {
                    tx.send((seq, out)).unwrap();
                },
            );
        }
        release.send(()).unwrap();
        drop(tx);
        let stats = writer.stop();
        let answers: Vec<_> = rx.iter().collect();
        let order: Vec<u64> = answers.iter().map(|(seq, _)| *seq).collect();
        assert_eq!(order, (0..200).collect::<Vec<_>>(), "answered in order");
        assert_eq!(
            answers[0].1.as_deref().unwrap(),
            [Outcome::Kept { index: 0 }]
        );
        for (seq, out) in &answers[1..] {
            let out = out.as_deref().unwrap();
            assert_eq!(out[0], Outcome::Kept { index: *seq }, "{seq}");
            assert_eq!(out[1], Outcome::AlreadyDelivered { index: *seq }, "{seq}");
        }
        assert_eq!(
            stats,
            WriterStats {
                batches: 200,
                commits: 5
            }
        );
        assert_eq!(store.usage().unwrap().entries, 200);
    }

    /// Stores on the shared threads are each committed on their own, and a writer stopped
    /// lets go of its store: it opens again at once.
    #[test]
    fn stores_share_the_process_writer_threads_and_are_let_go_when_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let path = |i: usize| dir.path().join(format!("s{i}.redb"));
        let stores: Vec<Arc<Store>> = (0..SHARED_THREADS + 2)
            .map(|i| Arc::new(Store::open(&path(i), &me(), Retention::default()).unwrap()))
            .collect();
        let writers: Vec<Writer> = stores
            .iter()
            .map(|s| Writer::shared(s.clone(), 64))
            .collect();
        let (tx, rx) = mpsc::channel();
        for (i, writer) in writers.iter().enumerate() {
            for seq in 0..10u64 {
                let tx = tx.clone();
                writer.submit(vec![deliver(seq, 8, seq)], move |out| {
                    tx.send((i, seq, out)).unwrap();
                });
            }
        }
        drop(tx);
        for (writer, store) in writers.into_iter().zip(&stores) {
            let stats = writer.stop();
            assert_eq!(stats.batches, 10);
            assert!(stats.commits >= 1 && stats.commits <= 10);
            assert_eq!(store.usage().unwrap().entries, 10);
        }
        let answers: Vec<_> = rx.iter().collect();
        assert_eq!(answers.len(), 10 * stores.len());
        for i in 0..stores.len() {
            let mine: Vec<u64> = answers.iter().filter(|a| a.0 == i).map(|a| a.1).collect();
            assert_eq!(
                mine,
                (0..10).collect::<Vec<_>>(),
                "store {i} answered in order"
            );
        }
        assert!(
            answers
                .iter()
                .all(|a| matches!(a.2.as_deref(), Ok([Outcome::Kept { .. }])))
        );
        drop(stores);
        for i in 0..SHARED_THREADS + 2 {
            Store::open(&path(i), &me(), Retention::default()).expect("let go, so it opens");
        }
    }
}
