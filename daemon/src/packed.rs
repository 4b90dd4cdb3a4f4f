//! A ring of records kept encoded (postcard), back to back in one buffer, each with a small
//! piece of metadata beside it: what the output buffer and the notice ring hold between a
//! burst and the next one. Measured on EH(2,2) after 1,024 sets in flight (docs/daemon.md,
//! "Memory after a burst"): 4,096 output entries as `Delivery` values took about 250 bytes each
//! by heaptrack (the value, its payload's and its path's allocations, the indices), scattered
//! through the heap; encoded, a bench copy takes about 90 bytes and one allocation holds them
//! all.
//!
//! Reading decodes a record (a copy of it); nothing is lost by the encoding. When records
//! leave, the buffers give back what they no longer need: a ring that held large records and
//! then small ones does not keep the large ones' room.

use serde::Serialize;
use serde::de::DeserializeOwned;
use std::collections::VecDeque;
use std::marker::PhantomData;

/// Below this many bytes of spare room a buffer is not shrunk: not worth a copy.
const SHRINK_FLOOR: usize = 64 << 10;

pub struct PackedRing<T, M> {
    /// Every record's encoding, oldest first, back to back.
    bytes: VecDeque<u8>,
    /// The position in the whole stream of bytes ever pushed of `bytes[0]`.
    base: u64,
    /// Each record's start in that stream, and its metadata.
    records: VecDeque<(u64, M)>,
    kind: PhantomData<fn() -> T>,
}

impl<T, M> Default for PackedRing<T, M> {
    fn default() -> Self {
        PackedRing {
            bytes: VecDeque::new(),
            base: 0,
            records: VecDeque::new(),
            kind: PhantomData,
        }
    }
}

/// `postcard::to_extend` writes into anything that extends with bytes.
struct Sink<'a>(&'a mut VecDeque<u8>);

impl Extend<u8> for Sink<'_> {
    fn extend<I: IntoIterator<Item = u8>>(&mut self, bytes: I) {
        self.0.extend(bytes);
    }
}

impl<T: Serialize + DeserializeOwned, M> PackedRing<T, M> {
    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Add `value` as the newest record. An error (a value postcard cannot encode) adds
    /// nothing.
    pub fn push_back(&mut self, value: &T, meta: M) -> Result<(), postcard::Error> {
        let before = self.bytes.len();
        if let Err(e) = postcard::to_extend(value, Sink(&mut self.bytes)) {
            self.bytes.truncate(before);
            return Err(e);
        }
        self.records.push_back((self.base + before as u64, meta));
        Ok(())
    }

    /// Remove the oldest record and return its metadata; the buffers shrink when most of their
    /// room is spare.
    pub fn pop_front(&mut self) -> Option<M> {
        let (_, meta) = self.records.pop_front()?;
        let next = self
            .records
            .front()
            .map_or(self.base + self.bytes.len() as u64, |&(start, _)| start);
        self.bytes.drain(..(next - self.base) as usize);
        self.base = next;
        shrink(&mut self.bytes);
        shrink(&mut self.records);
        Some(meta)
    }

    /// The metadata of record `i` (0 is the oldest).
    pub fn meta(&self, i: usize) -> Option<&M> {
        self.records.get(i).map(|(_, meta)| meta)
    }

    pub fn meta_mut(&mut self, i: usize) -> Option<&mut M> {
        self.records.get_mut(i).map(|(_, meta)| meta)
    }

    /// Every record's metadata, oldest first.
    pub fn metas(&self) -> impl DoubleEndedIterator<Item = &M> + ExactSizeIterator {
        self.records.iter().map(|(_, meta)| meta)
    }

    /// Record `i`, decoded.
    pub fn get(&self, i: usize) -> Option<T> {
        let start = (self.records.get(i)?.0 - self.base) as usize;
        let end = self
            .records
            .get(i + 1)
            .map_or(self.bytes.len(), |&(s, _)| (s - self.base) as usize);
        let (front, back) = self.bytes.as_slices();
        let value = if end <= front.len() {
            postcard::from_bytes(&front[start..end])
        } else if start >= front.len() {
            postcard::from_bytes(&back[start - front.len()..end - front.len()])
        } else {
            postcard::from_bytes(&[&front[start..], &back[..end - front.len()]].concat())
        };
        // Only this ring wrote these bytes, from a value of this type.
        Some(value.expect("a packed record decodes"))
    }

    /// Give back all spare room (a ring that grew by doubling holds up to twice what it
    /// needs): for quiet times, as the next push may need room again.
    pub fn shrink_to_fit(&mut self) {
        self.bytes.shrink_to_fit();
        self.records.shrink_to_fit();
    }

    /// The heap this ring holds (its buffers' capacity), for tests and accounting.
    pub fn heap_bytes(&self) -> usize {
        self.bytes.capacity() + self.records.capacity() * std::mem::size_of::<(u64, M)>()
    }
}

/// Give back most of a buffer's spare room once it is more than three quarters spare.
fn shrink<X>(buffer: &mut VecDeque<X>) {
    let size = std::mem::size_of::<X>().max(1);
    let spare = (buffer.capacity() - buffer.len()) * size;
    if spare >= SHRINK_FLOOR && buffer.capacity() >= 4 * buffer.len() {
        buffer.shrink_to(2 * buffer.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_come_back_as_pushed_across_the_wrap() {
        let mut ring: PackedRing<(u64, Vec<u8>), u8> = PackedRing::default();
        for i in 0..1000u64 {
            ring.push_back(&(i, vec![i as u8; (i % 7) as usize]), (i % 256) as u8)
                .unwrap();
            if ring.len() > 100 {
                ring.pop_front();
            }
        }
        assert_eq!(ring.len(), 100);
        for (n, i) in (900..1000u64).enumerate() {
            assert_eq!(ring.get(n), Some((i, vec![i as u8; (i % 7) as usize])));
            assert_eq!(ring.meta(n), Some(&((i % 256) as u8)));
        }
        assert_eq!(ring.get(100), None);
        *ring.meta_mut(0).unwrap() = 7;
        assert_eq!(ring.metas().next(), Some(&7));
        while ring.pop_front().is_some() {}
        assert!(ring.is_empty());
        assert_eq!(ring.get(0), None);
    }

    #[test]
    fn the_ring_gives_back_the_room_of_large_records_once_they_are_gone() {
        let mut ring: PackedRing<Vec<u8>, ()> = PackedRing::default();
        for _ in 0..64 {
            ring.push_back(&vec![1; 16 << 10], ()).unwrap();
        }
        let full = ring.heap_bytes();
        assert!(full >= 1 << 20, "{full}");
        // Small records push the large ones out.
        for _ in 0..64 {
            ring.push_back(&vec![2; 16], ()).unwrap();
            ring.pop_front();
        }
        assert_eq!(ring.len(), 64);
        assert!(
            ring.heap_bytes() <= 64 << 10,
            "{} bytes held for 64 small records",
            ring.heap_bytes()
        );
        assert!((0..64).all(|i| ring.get(i) == Some(vec![2; 16])));
        ring.shrink_to_fit();
        assert!(
            ring.heap_bytes() <= 64 * (16 + 1 + 8),
            "{}",
            ring.heap_bytes()
        );
        assert!((0..64).all(|i| ring.get(i) == Some(vec![2; 16])));
    }

    #[test]
    fn an_encoding_takes_far_less_than_the_value_and_its_allocations() {
        // A small value with a path: 8 ids and a 16-byte payload, as a bench copy.
        let value = (
            1u64,
            2u64,
            1_764_000_000_000_000u64,
            vec![3u64; 8],
            vec![4u8; 16],
        );
        let mut ring: PackedRing<_, ()> = PackedRing::default();
        for _ in 0..4096 {
            ring.push_back(&value, ()).unwrap();
        }
        // As a value: the tuple, and its two vectors' room (the allocator's headers left out).
        let as_value = std::mem::size_of_val(&value) + 8 * 8 + 16;
        let per_record = ring.heap_bytes() / 4096;
        assert!(
            2 * per_record < as_value,
            "{per_record} bytes per record, {as_value} as a value"
        );
    }
}
