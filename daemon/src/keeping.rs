//! What a node keeps across a crash, carried out: the one seam between the node and its
//! [`Store`]. The node asks here, and only here, for a reliable set to be kept (at its
//! destination, before the acknowledgement; at its source, before the client hears "accepted"),
//! settled, consumed or read back after a restart. What goes in which table, and how a batch
//! is committed, is the store's; what the node does once a write is durable is the node's.
//!
//! A delivered set's write is answered on the writer thread and handed to the node's task
//! through a channel ([`Written`]): the set goes to the output buffer and is acknowledged only
//! then. While it is being written, the acknowledgements its resends would earn are held
//! ([`Keeping::holds_ack`]) and the latest attempt is acknowledged once the write is durable.

use crate::config::StoreConfig;
use crate::output::entry_bytes;
use crate::store::{Identity, Outcome, Store, StoreError, Usage, Write, Writer};
use cuberoute_protocol::delivery::{SetKey, Shape, Writing};
use cuberoute_protocol::wire::control::Delivery;
use cuberoute_protocol::{NodeId, Topology};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock};
use tokio::sync::{mpsc, oneshot, watch};
use tracing::{info, warn};

/// Batches one commit takes at most.
const MAX_BATCHES_PER_COMMIT: usize = 1024;

/// A reliable set of this node's as its store keeps it until it settles: what sending it again
/// after a restart takes (the routes are the front door's, computed again from `dst`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeptSet {
    pub dst: NodeId,
    pub envelopes: Vec<serde_bytes::ByteBuf>,
    pub trace: bool,
    pub sealed: bool,
    pub shape: Shape,
    pub deadline_us: u64,
}

/// A delivered reliable set's write, done: the node hands the set over and acknowledges it, or
/// not, as `result` says.
#[derive(Debug)]
pub struct Written {
    pub delivery: Delivery,
    pub shape: Shape,
    pub result: Result<Outcome, String>,
}

/// Whose store a node's is: its id, its topology and its cluster CA (a digest of the CA's
/// first certificate). A store of another cluster is refused even if the node id matches.
pub fn identity(topology: Topology, id: NodeId, ca: &[impl AsRef<[u8]>]) -> Identity {
    let digest = ca
        .first()
        .map(|c| ring::digest::digest(&ring::digest::SHA256, c.as_ref()))
        .map_or(String::from("none"), |d| {
            d.as_ref()[..8].iter().map(|b| format!("{b:02x}")).collect()
        });
    Identity {
        node: id,
        cluster: format!("{topology} ca:{digest}"),
    }
}

pub struct Keeping {
    /// The store and its writer, once there is a store: opened at start where the file (or a
    /// simulated disk) is there, else made by the first write ([`Keeping::for_writing`]).
    opened: OnceLock<Opened>,
    /// Held while the store is being made, so that it is made once.
    making: Mutex<()>,
    /// Where the store is, and whose, to make it.
    config: StoreConfig,
    identity: Identity,
    written: mpsc::UnboundedSender<Written>,
    /// Reliable sets whole here whose write is not durable yet, with the latest attempt that
    /// arrived meanwhile.
    writing: Mutex<Writing>,
    /// The next store index, for consumers waiting for an entry.
    next_index: watch::Sender<u64>,
    /// Batches the store could not write (each logged where it failed).
    failed_writes: Arc<AtomicU64>,
    /// Sets settled and not yet forgotten in the store: they ride along with the next write
    /// that must be durable, or [`Keeping::flush_settled`], rather than cost a sync each.
    settled: Mutex<Vec<SetKey>>,
    /// Woken when settled sets start to wait ([`Keeping::settled_waiting`]).
    settled_waiting: tokio::sync::Notify,
    /// The output indices asked to be reserved in the store ([`Keeping::cover_output`]).
    output_reserved: Arc<AtomicU64>,
}

/// How many output indices one reservation in the store covers beyond the next; a new one is
/// asked for when half of it is used. A crash can only repeat an index if more entries than
/// half of this were added while one reservation was being written.
pub const OUTPUT_BLOCK: u64 = 1 << 16;

/// The most store entries one [`Keeping::take`] looks at, handed over or passed over.
pub const SCAN_LIMIT: usize = 16 * 1024;

/// Settled sets held back at most this many before they are written on their own.
const SETTLED_HELD: usize = 1024;

/// A store opened, and the writer that commits to it.
struct Opened {
    store: Arc<Store>,
    writer: Writer,
}

impl Opened {
    fn open(config: &StoreConfig, identity: &Identity) -> Result<Opened, StoreError> {
        let store = Arc::new(Store::open(&config.path, identity, config.retention)?);
        let writer = if store.is_simulated() {
            Writer::in_line(store.clone())
        } else {
            Writer::shared(store.clone(), MAX_BATCHES_PER_COMMIT)
        };
        Ok(Opened { store, writer })
    }
}

impl Keeping {
    /// The store `config` names for `identity`: opened, with its writer started, if it is
    /// there (a store a node kept before, recovered and checked now); if it is not, only
    /// checked to be makeable, and made by the node's first write. Most nodes of a cluster
    /// never keep a set (relays do not), and making a store cost a daemon's start a tenth to
    /// a fifth of its CPU (docs/notes/2026-11-28-store-made-on-first-use.md). The receiver
    /// gets every delivered set's write once it is done.
    pub fn open(
        config: &StoreConfig,
        identity: &Identity,
    ) -> Result<(Keeping, mpsc::UnboundedReceiver<Written>), StoreError> {
        let opened = OnceLock::new();
        let mut next = 0;
        if config.path.exists() || crate::disk::open(&config.path).is_some() {
            let store = Opened::open(config, identity)?;
            next = store.store.usage()?.next_index;
            let _ = opened.set(store);
        } else {
            makeable(&config.path)?;
        }
        let (written, receiver) = mpsc::unbounded_channel();
        let keeping = Keeping {
            opened,
            making: Mutex::new(()),
            config: config.clone(),
            identity: identity.clone(),
            written,
            writing: Mutex::new(Writing::default()),
            next_index: watch::channel(next).0,
            failed_writes: Arc::default(),
            settled: Mutex::default(),
            settled_waiting: tokio::sync::Notify::new(),
            output_reserved: Arc::default(),
        };
        Ok((keeping, receiver))
    }

    /// The store to read, if it is made.
    fn store(&self) -> Option<&Store> {
        self.opened.get().map(|o| &*o.store)
    }

    /// The store to write to, made now if it is not yet (once: a few hundred microseconds and
    /// three syncs, on the caller's thread). A store that cannot be made fails this write, and
    /// the next write tries again.
    fn for_writing(&self) -> Result<&Opened, String> {
        if let Some(opened) = self.opened.get() {
            return Ok(opened);
        }
        let _making = self.making.lock().expect("making lock");
        if let Some(opened) = self.opened.get() {
            return Ok(opened);
        }
        let opened = Opened::open(&self.config, &self.identity).map_err(|e| {
            warn!(error = %e, "the store could not be made");
            e.to_string()
        })?;
        info!(path = %self.config.path.display(), "store made for the first set kept");
        Ok(self.opened.get_or_init(|| opened))
    }

    /// Queue `writes` on the writer, making the store first if need be; `answer` gets the
    /// result (the reason the store could not be made, if it could not).
    fn submit(
        &self,
        writes: Vec<Write>,
        answer: impl FnOnce(Result<Vec<Outcome>, String>) + Send + 'static,
    ) {
        match self.for_writing() {
            Ok(opened) => opened.writer.submit(writes, answer),
            Err(e) => answer(Err(e)),
        }
    }

    pub fn usage(&self) -> Result<Usage, StoreError> {
        self.store().map_or(Ok(Usage::default()), Store::usage)
    }

    /// Write the reliable set `delivery` (whole here at `now_us`, in `shape`, by a piece of
    /// `attempt`); [`Written`] says when it is durable.
    pub fn deliver(&self, delivery: Delivery, shape: Shape, attempt: u32, now_us: u64) {
        let set = SetKey {
            src: delivery.src,
            seq: delivery.seq,
            sent_at_us: delivery.sent_at_us,
        };
        self.writing
            .lock()
            .expect("writing lock")
            .begin(set, shape, attempt);
        let entry = postcard::to_allocvec(&delivery).expect("a delivery encodes");
        self.flush_settled();
        let written = self.written.clone();
        let next_index = self.next_index.clone();
        let failed = self.failed_writes.clone();
        self.submit(
            vec![Write::Deliver {
                set,
                entry,
                at_us: now_us,
            }],
            move |result| {
                let result = result.map(|mut outcomes| outcomes.remove(0));
                if result.is_err() {
                    failed.fetch_add(1, Relaxed);
                }
                if let Ok(Outcome::Kept { index }) = result {
                    next_index.send_if_modified(|next| {
                        let moved = index + 1 > *next;
                        *next = (*next).max(index + 1);
                        moved
                    });
                }
                // The node's task is gone only when the process ends.
                let _ = written.send(Written {
                    delivery,
                    shape,
                    result,
                });
            },
        );
    }

    /// Whether the acknowledgement a piece of `attempt` of `set` earns waits for the set's
    /// write (it does while the set is being written; the latest attempt is remembered).
    pub fn holds_ack(&self, set: &SetKey, shape: Shape, attempt: u32) -> bool {
        self.writing
            .lock()
            .expect("writing lock")
            .hold(set, shape, attempt)
    }

    /// The set's write is done: the latest attempt that arrived while it was written.
    pub fn finish(&self, set: &SetKey, shape: Shape) -> u32 {
        self.writing
            .lock()
            .expect("writing lock")
            .finish(set, shape)
    }

    /// Keep the reliable set `set` this node sends until it settles: queued now (ahead of
    /// its settlement, which can only come later), answered once durable.
    pub fn keep(
        &self,
        set: SetKey,
        kept: &KeptSet,
    ) -> impl Future<Output = Result<(), String>> + use<> {
        let resend = postcard::to_allocvec(kept).expect("a kept set encodes");
        self.flush_settled();
        let done = self.commit(vec![Write::Keep { set, resend }]);
        async move { done.await.map(|_| ()) }
    }

    /// Forget sets of this node's that settled (acknowledged, expired, refused). Not waited
    /// for: a set settled but still in the store is only sent again after a restart, and its
    /// destination knows it.
    pub fn settle(&self, sets: Vec<SetKey>) {
        if sets.is_empty() {
            return;
        }
        let (first, full) = {
            let mut settled = self.settled.lock().expect("settled lock");
            let first = settled.is_empty();
            settled.extend(sets);
            (first, settled.len() >= SETTLED_HELD)
        };
        if full {
            self.flush_settled();
        } else if first {
            self.settled_waiting.notify_one();
        }
    }

    /// Until settled sets wait to be forgotten in the store (an idle node never wakes).
    pub async fn settled_waiting(&self) {
        self.settled_waiting.notified().await;
    }

    /// Queue the settled sets held back: the writer takes them into the same commit as the
    /// batch queued right after (group commit), or alone when nothing else is waiting.
    pub fn flush_settled(&self) {
        let sets = std::mem::take(&mut *self.settled.lock().expect("settled lock"));
        if sets.is_empty() {
            return;
        }
        let writes = sets.into_iter().map(|set| Write::Settle { set }).collect();
        self.submit_logged(writes, "settled sets not forgotten in the store");
    }

    /// Keep the nodes this node holds sealing sessions with, making the store if it is not
    /// made yet (not waited for: a list lost in a crash only leaves those nodes to find out
    /// later, with a set lost, that their sessions are gone).
    pub fn keep_sealing_peers(&self, peers: &[NodeId]) {
        let ids: Vec<u64> = peers.iter().map(|p| p.0).collect();
        let peers = postcard::to_allocvec(&ids).expect("ids encode");
        let failed = self.failed_writes.clone();
        self.submit(vec![Write::SealingPeers { peers }], move |result| {
            if let Err(e) = result {
                warn!(error = %e, "sealing peers not kept");
                failed.fetch_add(1, Relaxed);
            }
        });
    }

    /// The nodes this node held sealing sessions with when it last kept them.
    pub fn sealing_peers(&self) -> Result<Vec<NodeId>, String> {
        let Some(store) = self.store() else {
            return Ok(Vec::new());
        };
        let bytes = store.sealing_peers().map_err(|e| e.to_string())?;
        if bytes.is_empty() {
            return Ok(Vec::new());
        }
        postcard::from_bytes::<Vec<u64>>(&bytes)
            .map(|ids| ids.into_iter().map(NodeId).collect())
            .map_err(|e| format!("the store's sealing peers do not decode: {e}"))
    }

    /// Drop what retention no longer keeps, as of `now_us`.
    pub fn prune(&self, now_us: u64) {
        self.submit_logged(vec![Write::Prune { now_us }], "store not pruned");
    }

    /// Batches the store could not write since the start.
    pub fn failed_writes(&self) -> u64 {
        self.failed_writes.load(Relaxed)
    }

    /// Queue housekeeping `writes` (forgetting, pruning) on the store if it is made: one not
    /// made yet holds nothing to forget or prune, and is not made for it.
    fn submit_logged(&self, writes: Vec<Write>, what: &'static str) {
        let Some(opened) = self.opened.get() else {
            return;
        };
        let failed = self.failed_writes.clone();
        opened.writer.submit(writes, move |result| {
            if let Err(e) = result {
                warn!(error = %e, "{what}");
                failed.fetch_add(1, Relaxed);
            }
        });
    }

    /// Record that `consumer` took every entry before `taken` (durably), and return the first
    /// store index it has not taken.
    pub async fn consume(&self, consumer: &str, taken: Option<u64>) -> Result<u64, String> {
        if let Some(next) = taken {
            self.commit(vec![Write::Consume {
                consumer: consumer.to_string(),
                next,
            }])
            .await?;
        }
        self.store()
            .map_or(Ok(0), |store| store.consumer(consumer))
            .map_err(|e| e.to_string())
    }

    /// At start: the latest `max` entries kept, each with the output index it had, and the
    /// first output index never handed out (the store's reservation, made durable now for a
    /// block of indices ahead: [`Keeping::cover_output`]). A node whose store is not made yet
    /// has nothing to give back, and starts its output at 0.
    pub async fn resume_output(&self, max: usize) -> Result<(Vec<Delivery>, u64), String> {
        let Some(store) = self.store() else {
            return Ok((Vec::new(), 0));
        };
        let usage = store.usage().map_err(|e| e.to_string())?;
        let rows = store
            .entries_from(usage.next_index.saturating_sub(max as u64), max)
            .map_err(|e| e.to_string())?;
        let kept = rows
            .into_iter()
            .map(|(index, bytes)| decode_entry(index, &bytes))
            .collect::<Result<Vec<Delivery>, String>>()?;
        // Entries written before indices were kept carry 0: the output gives them new ones.
        let next = kept
            .iter()
            .map(|d| d.output_index)
            .filter(|&i| i != crate::output::NO_INDEX)
            .map(|i| i + 1)
            .fold(usage.output_reserved, u64::max);
        let up_to = next + OUTPUT_BLOCK;
        self.output_reserved.store(up_to, Relaxed);
        self.commit(vec![Write::ReserveOutput { up_to }]).await?;
        Ok((kept, next))
    }

    /// The output's next index is `next`: keep the store's reservation half a block ahead of
    /// it or more, making the store if need be (not waited for; a failure is logged and
    /// counted, and the next entry asks again).
    pub fn cover_output(&self, next: u64) {
        let reserved = self.output_reserved.load(Relaxed);
        if next + OUTPUT_BLOCK / 2 <= reserved {
            return;
        }
        let up_to = next + OUTPUT_BLOCK;
        if self
            .output_reserved
            .compare_exchange(reserved, up_to, Relaxed, Relaxed)
            .is_err()
        {
            return;
        }
        let (asked, failed) = (self.output_reserved.clone(), self.failed_writes.clone());
        self.submit(vec![Write::ReserveOutput { up_to }], move |result| {
            if let Err(e) = result {
                warn!(error = %e, "output indices not reserved");
                failed.fetch_add(1, Relaxed);
                let _ = asked.compare_exchange(up_to, reserved, Relaxed, Relaxed);
            }
        });
    }

    /// Up to `max` entries from store index `from` on, their output index their store index.
    pub fn entries(&self, from: u64, max: usize) -> Result<Vec<Delivery>, String> {
        let Some(store) = self.store() else {
            return Ok(Vec::new());
        };
        let rows = store.entries_from(from, max).map_err(|e| e.to_string())?;
        rows.into_iter()
            .map(|(index, bytes)| {
                decode_entry(index, &bytes).map(|d| Delivery {
                    output_index: index,
                    ..d
                })
            })
            .collect()
    }

    /// What a consumer is handed from store index `from` on: up to `max` entries, together at
    /// most `max_bytes` ([`entry_bytes`]; one entry however large), the entries that came
    /// clear passed over unless `clear`; and the index after the last entry looked at, past
    /// the entries passed over. At most [`SCAN_LIMIT`] entries are looked at: an answer may
    /// hand over nothing and still move on.
    pub fn take(
        &self,
        from: u64,
        max: usize,
        clear: bool,
        max_bytes: usize,
    ) -> Result<(Vec<Delivery>, u64), String> {
        let mut taken: Vec<Delivery> = Vec::new();
        let mut next = from;
        let mut bytes = 0;
        let mut looked = 0;
        while looked < SCAN_LIMIT {
            let rows = self.entries(next, max.min(SCAN_LIMIT - looked))?;
            if rows.is_empty() {
                break;
            }
            looked += rows.len();
            for d in rows {
                if !clear && !d.sealed {
                    next = d.output_index + 1;
                    continue;
                }
                let size = entry_bytes(&d);
                if taken.len() >= max || (!taken.is_empty() && bytes + size > max_bytes) {
                    return Ok((taken, next));
                }
                bytes += size;
                next = d.output_index + 1;
                taken.push(d);
            }
        }
        Ok((taken, next))
    }

    /// The next store index, changing whenever a set is kept.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.next_index.subscribe()
    }

    /// The unsettled sets this node sends, as its store kept them.
    pub fn unsettled(&self) -> Result<Vec<(SetKey, KeptSet)>, String> {
        let Some(store) = self.store() else {
            return Ok(Vec::new());
        };
        let rows = store.outbox().map_err(|e| e.to_string())?;
        rows.into_iter()
            .map(|(set, bytes)| {
                postcard::from_bytes::<KeptSet>(&bytes)
                    .map(|kept| (set, kept))
                    .map_err(|e| format!("kept set {} does not decode: {e}", set.seq))
            })
            .collect()
    }

    /// Queue `writes` now; the future answers once they are durable.
    fn commit(
        &self,
        writes: Vec<Write>,
    ) -> impl Future<Output = Result<Vec<Outcome>, String>> + use<> {
        let (answer, answered) = oneshot::channel();
        let failed = self.failed_writes.clone();
        self.submit(writes, move |result| {
            if result.is_err() {
                failed.fetch_add(1, Relaxed);
            }
            let _ = answer.send(result);
        });
        async move {
            answered
                .await
                .unwrap_or_else(|_| Err("the store writer has stopped".into()))
        }
    }
}

/// The delivery a store entry holds (at store index `index`), as it was written.
fn decode_entry(index: u64, bytes: &[u8]) -> Result<Delivery, String> {
    postcard::from_bytes::<Delivery>(bytes)
        .map_err(|e| format!("store entry {index} does not decode: {e}"))
}

/// Whether a store can be made at `path`, where there is none: its directory is there, and this
/// process may write in it.
fn makeable(path: &Path) -> Result<(), StoreError> {
    let unusable = |message: &str| StoreError::Unusable {
        path: path.to_path_buf(),
        message: message.into(),
    };
    let dir = match path.parent() {
        Some(dir) if dir.as_os_str().is_empty() => Path::new("."),
        Some(dir) => dir,
        None => return Err(unusable("it names no file")),
    };
    if !dir.is_dir() {
        return Err(unusable(
            "its directory does not exist (or is not a directory)",
        ));
    }
    let name = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes())
        .map_err(|_| unusable("its directory's name holds a NUL byte"))?;
    // SAFETY: `name` is a NUL-terminated string that lives across the call.
    if unsafe { libc::access(name.as_ptr(), libc::W_OK) } != 0 {
        let e = std::io::Error::last_os_error();
        return Err(unusable(&format!("its directory cannot be written: {e}")));
    }
    Ok(())
}

/// What `daemon --check` says of the store `config` names: opened and checked for `identity`,
/// or in use by a running daemon (then not opened).
pub fn check(config: &StoreConfig, identity: &Identity) -> Result<String, StoreError> {
    match Store::check(&config.path, identity) {
        Ok(None) if !config.path.exists() => {
            // None yet: the daemon will make one, if its directory is there to hold it.
            makeable(&config.path).map(|()| {
                format!(
                    "{}: none yet (made by the first set the node keeps)",
                    config.path.display()
                )
            })
        }
        Ok(None) => Ok(format!(
            "{}: to be recovered at start (a crash left it open); whose it is is checked then",
            config.path.display()
        )),
        Ok(Some(usage)) => Ok(format!(
            "{}: {} entries ({} bytes), {} sets known, {} unsettled sends",
            config.path.display(),
            usage.entries,
            usage.entry_bytes,
            usage.seen,
            usage.outbox
        )),
        Err(StoreError::InUse { .. }) => Ok(format!(
            "{}: in use by a running daemon (not checked)",
            config.path.display()
        )),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Retention;

    fn config(dir: &std::path::Path) -> StoreConfig {
        StoreConfig {
            path: dir.join("store.redb"),
            retention: Retention::default(),
        }
    }

    fn me() -> Identity {
        identity("q:3".parse().unwrap(), NodeId(2), &[b"ca".as_slice()])
    }

    fn delivery(seq: u64) -> Delivery {
        Delivery {
            output_index: 0,
            src: NodeId(1),
            dst: NodeId(2),
            seq,
            sent_at_us: 9,
            index: 0,
            k: 3,
            split: false,
            hops: 2,
            path: None,
            latency_us: 4,
            mode: "reliable".parse().unwrap(),
            rejected_paths: vec![],
            sealed: true,
            payload: vec![seq as u8; 3],
        }
    }

    fn shape() -> Shape {
        Shape {
            mode: "reliable".parse().unwrap(),
            k: 3,
            len: 3,
        }
    }

    #[test]
    fn the_identity_names_the_cluster_ca() {
        let a = identity("q:3".parse().unwrap(), NodeId(2), &[b"ca one".as_slice()]);
        let b = identity("q:3".parse().unwrap(), NodeId(2), &[b"ca two".as_slice()]);
        assert_ne!(a.cluster, b.cluster);
        assert!(a.cluster.starts_with("q:3 ca:"), "{}", a.cluster);
    }

    #[tokio::test]
    async fn the_output_resumes_with_each_entry_under_its_index_and_new_ones_past_the_reservation()
    {
        let dir = tempfile::tempdir().unwrap();
        {
            let (keeping, mut written) = Keeping::open(&config(dir.path()), &me()).unwrap();
            assert_eq!(
                keeping.resume_output(8).await.unwrap(),
                (vec![], 0),
                "no store yet: nothing, and none is made"
            );
            assert!(!dir.path().join("store.redb").exists());
            // Two sets, written in the other order than their indices were taken.
            for (seq, output_index) in [(1, 12), (2, 11)] {
                let d = Delivery {
                    output_index,
                    ..delivery(seq)
                };
                keeping.deliver(d, shape(), 1, 100);
                assert!(written.recv().await.unwrap().result.is_ok());
            }
            // The output went on with plain copies: the reservation follows it.
            keeping.cover_output(20);
            keeping.flush_settled();
            keeping.commit(vec![]).await.unwrap();
            assert_eq!(keeping.usage().unwrap().output_reserved, 20 + OUTPUT_BLOCK);
            keeping.cover_output(20 + OUTPUT_BLOCK / 4);
            keeping.commit(vec![]).await.unwrap();
            assert_eq!(
                keeping.usage().unwrap().output_reserved,
                20 + OUTPUT_BLOCK,
                "half a block ahead or more: not asked again"
            );
        }
        let (keeping, _written) = Keeping::open(&config(dir.path()), &me()).unwrap();
        let (kept, next) = keeping.resume_output(8).await.unwrap();
        let got: Vec<(u64, u64)> = kept.iter().map(|d| (d.seq, d.output_index)).collect();
        assert_eq!(got, vec![(1, 12), (2, 11)], "as written, in store order");
        assert_eq!(
            next,
            20 + OUTPUT_BLOCK,
            "after every index the last run may have used"
        );
        assert_eq!(
            keeping.usage().unwrap().output_reserved,
            20 + 2 * OUTPUT_BLOCK,
            "a block ahead, durable before the output takes any"
        );
        // Consumers still count in store indices.
        let taken: Vec<u64> = keeping
            .entries(0, 8)
            .unwrap()
            .iter()
            .map(|d| d.output_index)
            .collect();
        assert_eq!(taken, vec![0, 1]);
    }

    #[tokio::test]
    async fn a_set_is_written_then_known_again_after_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let set = SetKey {
            src: NodeId(1),
            seq: 7,
            sent_at_us: 9,
        };
        {
            let (keeping, mut written) = Keeping::open(&config(dir.path()), &me()).unwrap();
            keeping.deliver(delivery(7), shape(), 1, 100);
            assert!(keeping.holds_ack(&set, shape(), 3), "held while writing");
            let done = written.recv().await.unwrap();
            assert_eq!(done.result, Ok(Outcome::Kept { index: 0 }));
            assert_eq!(keeping.finish(&set, shape()), 3, "the latest attempt");
            assert!(!keeping.holds_ack(&set, shape(), 4), "durable: not held");
            assert_eq!(*keeping.subscribe().borrow(), 1);
            let kept = KeptSet {
                dst: NodeId(5),
                envelopes: vec![serde_bytes::ByteBuf::from(vec![1, 2])],
                trace: false,
                sealed: true,
                shape: shape(),
                deadline_us: 77,
            };
            keeping.keep(set, &kept).await.unwrap();
            assert_eq!(keeping.unsettled().unwrap(), vec![(set, kept)]);
        }
        let (keeping, mut written) = Keeping::open(&config(dir.path()), &me()).unwrap();
        assert_eq!(*keeping.subscribe().borrow(), 1, "the next index survives");
        keeping.deliver(delivery(7), shape(), 2, 200);
        let again = written.recv().await.unwrap();
        assert_eq!(again.result, Ok(Outcome::AlreadyDelivered { index: 0 }));
        let entries = keeping.entries(0, 10).unwrap();
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].payload, vec![7; 3]);
        assert_eq!(keeping.consume("c", None).await.unwrap(), 0);
        assert_eq!(keeping.consume("c", Some(1)).await.unwrap(), 1);
        assert_eq!(
            keeping.consume("c", Some(0)).await.unwrap(),
            1,
            "only forward"
        );
        assert_eq!(keeping.unsettled().unwrap().len(), 1);
    }

    /// A consumer that does not ask for clear entries is handed the sealed ones only, and its
    /// answer's next index is past the clear ones it passed over; one that asks gets them all.
    #[tokio::test]
    async fn take_passes_over_clear_entries_unless_asked() {
        let dir = tempfile::tempdir().unwrap();
        let (keeping, mut written) = Keeping::open(&config(dir.path()), &me()).unwrap();
        // Store indices 0..6: sealed, clear, clear, sealed, clear, clear.
        for seq in 0..6u64 {
            let sealed = seq % 3 == 0;
            keeping.deliver(
                Delivery {
                    sealed,
                    ..delivery(seq)
                },
                shape(),
                1,
                100 + seq,
            );
            written.recv().await.unwrap().result.unwrap();
        }
        let seqs = |entries: &[Delivery]| entries.iter().map(|d| d.seq).collect::<Vec<_>>();
        let (entries, next) = keeping.take(0, 10, false, usize::MAX).unwrap();
        assert_eq!(
            (seqs(&entries), next),
            (vec![0, 3], 6),
            "past the clear ones"
        );
        let (entries, next) = keeping.take(0, 1, false, usize::MAX).unwrap();
        assert_eq!(
            (seqs(&entries), next),
            (vec![0], 3),
            "up to max, and past the clear ones that follow"
        );
        let (entries, next) = keeping.take(1, 1, false, usize::MAX).unwrap();
        assert_eq!((seqs(&entries), next), (vec![3], 6), "two passed over");
        let (entries, next) = keeping.take(4, 10, false, usize::MAX).unwrap();
        assert_eq!(
            (seqs(&entries), next),
            (vec![], 6),
            "nothing handed, yet past"
        );
        let (entries, next) = keeping.take(6, 10, false, usize::MAX).unwrap();
        assert_eq!((seqs(&entries), next), (vec![], 6), "the end");
        let (entries, next) = keeping.take(0, 10, true, usize::MAX).unwrap();
        assert_eq!(
            (seqs(&entries), next),
            ((0..6).collect(), 6),
            "asked for clear"
        );
        let (entries, next) = keeping.take(0, 10, true, 1).unwrap();
        assert_eq!(
            (seqs(&entries), next),
            (vec![0], 1),
            "one at least, within bytes"
        );
    }

    #[tokio::test]
    async fn a_store_is_made_by_the_first_write_and_not_before() {
        let dir = tempfile::tempdir().unwrap();
        let path = config(dir.path()).path;
        let (keeping, _written) = Keeping::open(&config(dir.path()), &me()).unwrap();
        assert!(
            !path.exists() && keeping.opened.get().is_none(),
            "nothing kept, no store"
        );
        assert_eq!(keeping.usage().unwrap(), Usage::default());
        assert!(keeping.entries(0, 10).unwrap().is_empty());
        assert!(keeping.unsettled().unwrap().is_empty());
        assert_eq!(keeping.consume("c", None).await.unwrap(), 0);
        assert!(!path.exists(), "reads make no store");
        assert_eq!(keeping.consume("c", Some(0)).await.unwrap(), 0);
        assert!(
            path.is_file() && keeping.opened.get().is_some(),
            "a write makes it"
        );
        drop(keeping);
        assert!(
            check(&config(dir.path()), &me())
                .unwrap()
                .contains("0 entries")
        );
    }

    #[test]
    fn a_store_that_cannot_be_made_is_refused_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let missing = config(&dir.path().join("missing"));
        let e = Keeping::open(&missing, &me()).err().expect("refused");
        assert!(e.to_string().contains("does not exist"), "{e}");
        let file = dir.path().join("a file");
        std::fs::write(&file, "x").unwrap();
        assert!(Keeping::open(&config(&file), &me()).is_err());
    }

    #[tokio::test]
    async fn check_names_a_store_of_another_node() {
        let dir = tempfile::tempdir().unwrap();
        let (keeping, _written) = Keeping::open(&config(dir.path()), &me()).unwrap();
        keeping.consume("c", Some(0)).await.unwrap();
        drop(keeping);
        let other = identity("q:3".parse().unwrap(), NodeId(3), &[b"ca".as_slice()]);
        let e = check(&config(dir.path()), &other).unwrap_err();
        assert!(e.to_string().contains("node 2"), "{e}");
        assert!(
            check(&config(dir.path()), &me())
                .unwrap()
                .contains("0 entries")
        );
    }
}
