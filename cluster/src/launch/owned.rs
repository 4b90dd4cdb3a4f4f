//! Clusters a command starts for its own use and takes down before it ends (`cuberoute bench`).
//! An interrupt (SIGINT, SIGTERM) while one runs stops it, then ends the process with status
//! 130: without this, the daemons, each in a process group of its own so that a terminal's
//! Ctrl-C does not reach them, outlived the bench that started them.
//!
//! A start and a stop each hold the lock on the cluster in hand, so an interrupt waits for
//! them: a start interrupted stops what it started itself ([`crate::launch::local::start`]), and
//! one that completed leaves a cluster whose every process is recorded.

use crate::launch::layout::ClusterDir;
use crate::launch::local::interrupt::Catch;
use crate::launch::runner;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// The exit status after an interrupt, as a shell gives a process that SIGINT ended.
pub const INTERRUPTED_STATUS: i32 = 130;

/// How often the watcher looks for an interrupt.
const POLL: Duration = Duration::from_millis(50);

/// The watch over the clusters a command owns; dropping it ends the watch.
pub struct OwnedClusters {
    current: Arc<Mutex<Option<ClusterDir>>>,
    done: Arc<AtomicBool>,
    catch: Arc<Catch>,
}

impl OwnedClusters {
    /// Catch SIGINT and SIGTERM from now on, and watch for them on a thread of its own.
    pub fn watch() -> OwnedClusters {
        let owned = OwnedClusters {
            current: Arc::new(Mutex::new(None)),
            done: Arc::new(AtomicBool::new(false)),
            catch: Arc::new(Catch::install()),
        };
        let (current, done, catch) = (
            owned.current.clone(),
            owned.done.clone(),
            owned.catch.clone(),
        );
        std::thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                if catch.caught() {
                    let current = lock(&current);
                    if done.load(Ordering::SeqCst) {
                        return;
                    }
                    match current.as_ref().map(|dir| (dir, runner::stop(dir))) {
                        Some((_, Ok(stopped))) => eprintln!("interrupted: {stopped}"),
                        Some((dir, Err(e))) => eprintln!(
                            "interrupted; stopping the cluster failed ({e:#}): `cuberoute cluster down --dir {}` tries again",
                            dir.display()
                        ),
                        None => eprintln!("interrupted"),
                    }
                    std::process::exit(INTERRUPTED_STATUS);
                }
                std::thread::sleep(POLL);
            }
        });
        owned
    }

    /// Start a cluster in `dir` with `start`, which stops what it started if it fails or is
    /// interrupted; once it is up, an interrupt stops it.
    pub fn start<T>(
        &self,
        dir: &ClusterDir,
        start: impl FnOnce() -> anyhow::Result<T>,
    ) -> anyhow::Result<T> {
        let mut current = lock(&self.current);
        let started = start();
        if started.is_ok() {
            *current = Some(dir.clone());
        }
        started
    }

    /// Stop the cluster in `dir` ([`runner::stop`]); what was done, for the user.
    pub fn stop(&self, dir: &ClusterDir) -> anyhow::Result<String> {
        let mut current = lock(&self.current);
        let stopped = runner::stop(dir);
        if stopped.is_ok() {
            *current = None;
        }
        stopped
    }
}

impl Drop for OwnedClusters {
    /// An interrupt being handled is let finish (it ends the process); then the watch ends.
    fn drop(&mut self) {
        let _current = lock(&self.current);
        self.done.store(true, Ordering::SeqCst);
    }
}

/// The lock, even after a thread panicked holding it: the cluster's directory is still right.
fn lock(current: &Mutex<Option<ClusterDir>>) -> MutexGuard<'_, Option<ClusterDir>> {
    current.lock().unwrap_or_else(|e| e.into_inner())
}
