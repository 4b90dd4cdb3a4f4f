//! Group commit: a thread that takes every batch waiting, commits each store's together (one
//! transaction, one sync per store) and then answers each batch with its outcomes.
//!
//! A process has at most [`SHARED_THREADS`] such threads for all its stores
//! ([`Writer::shared`]): a node host of 65,536 nodes would otherwise start a thread per node
//! that keeps anything, past the machine's 32,768 process ids. A store's batches always go to
//! the same thread, in the order they were submitted; two stores on one thread take turns, one
//! sync each. [`Writer::start`] gives a store a thread of its own.

use super::{Outcome, Store, Write};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock, mpsc};

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
    use super::super::tests::{deliver, me};
    use super::super::{Outcome, Retention, Store};
    use super::*;

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
