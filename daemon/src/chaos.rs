//! A node's chaos state: the window in which packets entering a link buffer are corrupted, the
//! bit flips themselves, and the record of what became of the packets it corrupted.
//!
//! [`Chaos::corrupt_bytes`] flips bits in an encoded packet, header and payload alike, and marks
//! it ([`ChaosMark`], outside the packet's bytes) so that the daemons where it ends can count how
//! many hops and how long it lived after the corruption. The faults a client asks for (state
//! corruption, buffer corruption, cut and heal, capture and forge) are carried out by
//! `crate::faults`; the relay faults live in `crate::relay`.

use crate::env::{self, Instant, now_us};
use crate::relay::RelayFaults;
use crate::shaper::Shaper;
use cuberoute_protocol::wire::control::ChaosCounters;
use cuberoute_protocol::wire::link::ChaosMark;
use rand::Rng;
use rand::rngs::StdRng;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A node's fault-injection state and counters.
#[derive(Default)]
pub struct Chaos {
    /// While set: until when, and the share (ppm) of packets entering a link buffer to corrupt.
    window: Mutex<Option<Window>>,
    pub(crate) state_corruptions: AtomicU64,
    packets_corrupted: AtomicU64,
    corrupted_dropped: AtomicU64,
    corrupted_delivered: AtomicU64,
    corrupted_again: AtomicU64,
    max_hops_after: AtomicU32,
    max_us_after: AtomicU64,
    /// The relay faults: capture and forge.
    pub relay: RelayFaults,
    /// The rules the link socket shapes its datagrams by (delay, jitter, reordering,
    /// duplication), and what it did.
    pub shaper: Arc<Shaper>,
}

struct Window {
    until: Instant,
    fraction_ppm: u32,
    rng: StdRng,
}

/// What became of a corrupted packet where it ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    Dropped,
    Delivered,
}

impl Chaos {
    /// No fault in force, the link socket shaped by `shaper`.
    pub fn with_shaper(shaper: Arc<Shaper>) -> Chaos {
        Chaos {
            shaper,
            ..Chaos::default()
        }
    }

    pub fn counters(&self) -> ChaosCounters {
        ChaosCounters {
            state_corruptions: self.state_corruptions.load(Relaxed),
            packets_corrupted: self.packets_corrupted.load(Relaxed),
            corrupted_dropped: self.corrupted_dropped.load(Relaxed),
            corrupted_delivered: self.corrupted_delivered.load(Relaxed),
            corrupted_again: self.corrupted_again.load(Relaxed),
            max_hops_after: self.max_hops_after.load(Relaxed),
            max_us_after: self.max_us_after.load(Relaxed),
            captured: self.relay.captured.load(Relaxed),
            forged: self.relay.forged.load(Relaxed),
            forged_payload: self.relay.forged_payload.load(Relaxed),
            forged_header: self.relay.forged_header.load(Relaxed),
            forged_source: self.relay.forged_source.load(Relaxed),
            forged_attempt: self.relay.forged_attempt.load(Relaxed),
            replayed: self.relay.replayed.load(Relaxed),
            flooded: self.relay.flooded.load(Relaxed),
            shaper: self.shaper.counters(),
        }
    }

    /// Record that a corrupted packet, marked `mark` on arrival here, ended here.
    pub fn ended(&self, mark: ChaosMark, fate: Fate) {
        match fate {
            Fate::Dropped => self.corrupted_dropped.fetch_add(1, Relaxed),
            Fate::Delivered => self.corrupted_delivered.fetch_add(1, Relaxed),
        };
        self.max_hops_after.fetch_max(u32::from(mark.hops), Relaxed);
        self.max_us_after
            .fetch_max(now_us().saturating_sub(mark.corrupted_at_us), Relaxed);
    }

    /// Open a window of `for_ms` during which a share `fraction_ppm` of the packets entering
    /// link buffers is corrupted.
    pub fn open_window(&self, fraction_ppm: u32, for_ms: u32, seed: u64) {
        *self.window.lock().expect("chaos lock") = Some(Window {
            until: Instant::now() + Duration::from_millis(u64::from(for_ms)),
            fraction_ppm,
            rng: env::rng(seed),
        });
    }

    /// While a window is open, maybe corrupt `packet` (an encoded packet about to be queued,
    /// carrying `mark` if it was corrupted before). Returns the mark it carries on.
    pub fn maybe_corrupt(&self, packet: &mut [u8], mark: Option<ChaosMark>) -> Option<ChaosMark> {
        let fresh = self.try_corrupt(packet);
        if fresh.is_some() && mark.is_some() {
            self.corrupted_again.fetch_add(1, Relaxed);
        }
        fresh.or(mark)
    }

    fn try_corrupt(&self, packet: &mut [u8]) -> Option<ChaosMark> {
        let mut window = self.window.lock().expect("chaos lock");
        let w = window.as_mut()?;
        if Instant::now() >= w.until {
            *window = None;
            return None;
        }
        if w.rng.random_range(0..1_000_000) >= w.fraction_ppm {
            return None;
        }
        Some(self.corrupt_bytes(packet, &mut w.rng, false))
    }

    /// Flip one to four random bits of `packet`, count it (as corrupted once more if it
    /// carried a mark already), and return its new mark.
    pub fn corrupt_bytes(&self, packet: &mut [u8], rng: &mut impl Rng, again: bool) -> ChaosMark {
        if again {
            self.corrupted_again.fetch_add(1, Relaxed);
        }
        if !packet.is_empty() {
            for _ in 0..rng.random_range(1..=4) {
                let bit = rng.random_range(0..packet.len() * 8);
                packet[bit / 8] ^= 1 << (bit % 8);
            }
        }
        self.packets_corrupted.fetch_add(1, Relaxed);
        ChaosMark {
            corrupted_at_us: now_us(),
            hops: 0,
        }
    }
}
