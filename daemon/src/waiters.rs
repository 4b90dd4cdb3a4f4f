//! Wake-ups by key: a control request that waits for one thing (the copies of one set, the
//! settlement of one reliable set) is woken by that thing only. A request waiting on a channel
//! that changes at every delivery would wake, and look again, at every delivery of the node:
//! thousands of waiting clients would make each delivery cost thousands of wake-ups.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;
use tokio::sync::futures::Notified;

/// The keys someone waits on, each with the [`Notify`] its waiters share.
pub struct Waiters<K> {
    watched: Mutex<HashMap<K, Arc<Notify>>>,
}

impl<K> Default for Waiters<K> {
    fn default() -> Self {
        Waiters {
            watched: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: Hash + Eq + Clone> Waiters<K> {
    /// Start watching `key`. Take [`Watch::notified`] before looking at the state the key
    /// stands for, then await it: a [`Waiters::wake`] after the look is not missed.
    pub fn watch(&self, key: K) -> Watch<'_, K> {
        let notify = self
            .lock()
            .entry(key.clone())
            .or_insert_with(|| Arc::new(Notify::new()))
            .clone();
        Watch {
            waiters: self,
            key,
            notify,
        }
    }

    /// Wake everyone watching `key` (nobody: one hash lookup).
    pub fn wake(&self, key: &K) {
        if let Some(notify) = self.lock().get(key) {
            notify.notify_waiters();
        }
    }

    /// How many keys are watched.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<K, Arc<Notify>>> {
        self.watched.lock().expect("waiters lock")
    }
}

/// One waiter's interest in a key; dropping the last one forgets the key.
pub struct Watch<'a, K: Hash + Eq + Clone> {
    waiters: &'a Waiters<K>,
    key: K,
    notify: Arc<Notify>,
}

impl<K: Hash + Eq + Clone> Watch<'_, K> {
    /// A future that completes at the next [`Waiters::wake`] of the key, already registered
    /// so that a wake between this call and its first poll counts.
    pub fn notified(&self) -> std::pin::Pin<Box<Notified<'_>>> {
        let mut notified = Box::pin(self.notify.notified());
        notified.as_mut().enable();
        notified
    }
}

impl<K: Hash + Eq + Clone> Drop for Watch<'_, K> {
    fn drop(&mut self) {
        let mut watched = self.waiters.lock();
        // Clones are made and dropped under the lock: the map's and this one are the last.
        if Arc::strong_count(&self.notify) == 2 {
            watched.remove(&self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_wake_reaches_the_watchers_of_its_key_only() {
        let waiters = Waiters::default();
        let one = waiters.watch(1u32);
        let other = waiters.watch(2u32);
        let (n1, n2) = (one.notified(), other.notified());
        waiters.wake(&1);
        tokio::time::timeout(Duration::from_secs(5), n1)
            .await
            .expect("woken");
        assert!(
            tokio::time::timeout(Duration::from_millis(50), n2)
                .await
                .is_err(),
            "key 2 was not woken"
        );
    }

    #[tokio::test]
    async fn a_wake_before_the_first_poll_is_not_missed() {
        let waiters = Waiters::default();
        let watch = waiters.watch("set");
        let notified = watch.notified();
        waiters.wake(&"set");
        tokio::time::timeout(Duration::from_secs(5), notified)
            .await
            .expect("the wake counted");
    }

    #[test]
    fn the_last_watch_dropped_forgets_the_key() {
        let waiters = Waiters::default();
        let a = waiters.watch(7u8);
        let b = waiters.watch(7u8);
        assert_eq!(waiters.len(), 1);
        drop(a);
        assert_eq!(waiters.len(), 1);
        drop(b);
        assert!(waiters.is_empty());
        waiters.wake(&7);
    }
}
