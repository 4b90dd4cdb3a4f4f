//! The simulated disk under a store: its bytes in memory, of which a crash keeps only what was
//! synced. Only `cuberoute sim` makes them ([`simulate`], keyed by the store's path), and then
//! [`crate::store::Store::open`] opens that disk instead of a file; a daemon on a real machine
//! never meets one.
//!
//! redb syncs at each commit; a simulated crash ([`crash`]) throws away every write since the
//! last sync, and cuts off the crashed process's handle so that nothing it does afterwards
//! (closing the database as its tasks are dropped) reaches the disk: what the next start reads
//! is what a real disk would hold after a power cut, less torn pages (a write here is whole or
//! absent).

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};

static DISKS: LazyLock<Mutex<BTreeMap<PathBuf, Arc<Mutex<Image>>>>> = LazyLock::new(Mutex::default);

#[derive(Debug, Default)]
struct Image {
    synced: Vec<u8>,
    written: Vec<u8>,
    /// Bumped at each crash: a handle of an earlier generation writes nowhere.
    generation: u64,
    syncs: u64,
}

/// Make the store at `path` a simulated disk, empty.
pub fn simulate(path: &Path) {
    DISKS
        .lock()
        .expect("disks lock")
        .insert(path.to_path_buf(), Arc::default());
}

/// Forget every simulated disk (the end of a simulation).
pub fn forget_all() {
    DISKS.lock().expect("disks lock").clear();
}

/// The process holding the disk at `path` crashed: what was not synced is gone, and its handle
/// writes nowhere from now on.
pub fn crash(path: &Path) {
    if let Some(image) = DISKS.lock().expect("disks lock").get(path) {
        let mut image = image.lock().expect("image lock");
        image.written = image.synced.clone();
        image.generation += 1;
    }
}

/// Bytes synced on the disk at `path`, and how many syncs it saw (for tests and reports).
pub fn synced(path: &Path) -> Option<(usize, u64)> {
    let disks = DISKS.lock().expect("disks lock");
    let image = disks.get(path)?.lock().expect("image lock");
    Some((image.synced.len(), image.syncs))
}

/// A handle on the simulated disk at `path`, if there is one.
pub fn open(path: &Path) -> Option<SimulatedDisk> {
    let image = DISKS.lock().expect("disks lock").get(path)?.clone();
    let generation = image.lock().expect("image lock").generation;
    Some(SimulatedDisk { image, generation })
}

/// One process's handle on a simulated disk: redb's storage backend.
#[derive(Debug)]
pub struct SimulatedDisk {
    image: Arc<Mutex<Image>>,
    generation: u64,
}

impl SimulatedDisk {
    /// The image, if this handle is still the live one.
    fn live(&self) -> Option<std::sync::MutexGuard<'_, Image>> {
        let image = self.image.lock().expect("image lock");
        (image.generation == self.generation).then_some(image)
    }
}

fn gone() -> io::Error {
    io::Error::other("the simulated process crashed")
}

impl redb::StorageBackend for SimulatedDisk {
    fn len(&self) -> io::Result<u64> {
        Ok(self.live().ok_or_else(gone)?.written.len() as u64)
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> io::Result<()> {
        let image = self.live().ok_or_else(gone)?;
        let start = offset as usize;
        let bytes = image
            .written
            .get(start..start + out.len())
            .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "read past the end"))?;
        out.copy_from_slice(bytes);
        Ok(())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.live()
            .ok_or_else(gone)?
            .written
            .resize(len as usize, 0);
        Ok(())
    }

    fn sync_data(&self) -> io::Result<()> {
        let mut image = self.live().ok_or_else(gone)?;
        image.synced = image.written.clone();
        image.syncs += 1;
        Ok(())
    }

    fn write(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        let mut image = self.live().ok_or_else(gone)?;
        let start = offset as usize;
        if image.written.len() < start + data.len() {
            image.written.resize(start + data.len(), 0);
        }
        image.written[start..start + data.len()].copy_from_slice(data);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use redb::StorageBackend;

    #[test]
    fn a_crash_keeps_what_was_synced_and_cuts_off_the_old_handle() {
        let path = Path::new("/simulated/disk-test");
        simulate(path);
        let old = open(path).unwrap();
        old.write(0, b"kept").unwrap();
        old.sync_data().unwrap();
        old.write(4, b" lost").unwrap();
        assert_eq!(old.len().unwrap(), 9);
        crash(path);
        assert!(
            old.write(0, b"late").is_err(),
            "a crashed process writes nowhere"
        );
        let new = open(path).unwrap();
        let mut bytes = vec![0; new.len().unwrap() as usize];
        new.read(0, &mut bytes).unwrap();
        assert_eq!(bytes, b"kept");
        assert_eq!(synced(path), Some((4, 1)));
        assert!(open(Path::new("/simulated/none")).is_none());
    }
}
