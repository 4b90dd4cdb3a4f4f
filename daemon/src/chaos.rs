//! Transient faults a daemon injects into itself when the chaos tooling asks (through the
//! authenticated control API), and the record of what became of the packets it corrupted.
//!
//! * [`corrupt_state`] overwrites every mutable protocol variable with random values: the
//!   paper's process variables (k, curPhase, posToFlip, the map, the last header) and the
//!   input buffer's next sequence id. docs/protocol.md lists them. Routing never reads them, so
//!   nothing changes: inherent stabilization.
//! * [`Chaos::corrupt_bytes`] flips bits in an encoded packet, header and payload alike, and
//!   marks it ([`ChaosMark`], outside the packet's bytes) so that the daemons where it ends can
//!   count how many hops and how long it lived after the corruption.
//! * Cut and heal are [`crate::link::Link::cut`] and [`crate::link::Link::heal`].

use crate::node::{Node, now_us};
use crate::stats::Event;
use cuberoute_protocol::wire::control::{ChaosCounters, ControlError, ControlErrorKind, Fault};
use cuberoute_protocol::wire::link::ChaosMark;
use cuberoute_protocol::{Anchors, Header, NodeId, Plan, ProcessVars};
use rand::rngs::StdRng;
use rand::{Rng, RngCore, SeedableRng};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};
use tracing::warn;

/// The names of the variables [`corrupt_state`] overwrites, for reports and docs.
pub const CORRUPTED_VARIABLES: &[&str] = &[
    "k",
    "curPhase",
    "posToFlip",
    "map",
    "last header",
    "next sequence id",
];

/// A node's fault-injection state and counters.
#[derive(Default)]
pub struct Chaos {
    /// While set: until when, and the share (ppm) of packets entering a link buffer to corrupt.
    window: Mutex<Option<Window>>,
    state_corruptions: AtomicU64,
    packets_corrupted: AtomicU64,
    corrupted_dropped: AtomicU64,
    corrupted_delivered: AtomicU64,
    corrupted_again: AtomicU64,
    max_hops_after: AtomicU32,
    max_us_after: AtomicU64,
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
    pub fn counters(&self) -> ChaosCounters {
        ChaosCounters {
            state_corruptions: self.state_corruptions.load(Relaxed),
            packets_corrupted: self.packets_corrupted.load(Relaxed),
            corrupted_dropped: self.corrupted_dropped.load(Relaxed),
            corrupted_delivered: self.corrupted_delivered.load(Relaxed),
            corrupted_again: self.corrupted_again.load(Relaxed),
            max_hops_after: self.max_hops_after.load(Relaxed),
            max_us_after: self.max_us_after.load(Relaxed),
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
    fn open_window(&self, fraction_ppm: u32, for_ms: u32, seed: u64) {
        *self.window.lock().expect("chaos lock") = Some(Window {
            until: Instant::now() + Duration::from_millis(u64::from(for_ms)),
            fraction_ppm,
            rng: StdRng::seed_from_u64(seed),
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

/// Overwrite every mutable protocol variable of `node` with random values.
pub fn corrupt_state(node: &Node, rng: &mut impl RngCore) {
    let random_node = |rng: &mut dyn RngCore| NodeId(rng.next_u64());
    let plans = (0..rng.random_range(0..8))
        .map(|_| Plan {
            first: random_node(rng),
            pd: random_node(rng),
            via: rng.random_bool(0.5).then(|| random_node(rng)),
            anchors: Anchors {
                fa: rng.random(),
                fb: rng.random(),
            },
        })
        .collect();
    let vars = ProcessVars {
        k: rng.random(),
        cur_phase: rng.random(),
        pos_to_flip: rng.random_bool(0.5).then(|| rng.random()),
        map: plans,
        last_header: rng.random_bool(0.9).then(|| Header {
            src: random_node(rng),
            dst: random_node(rng),
            pd: random_node(rng),
            via: rng.random_bool(0.5).then(|| random_node(rng)),
            anchors: Anchors {
                fa: rng.random(),
                fb: rng.random(),
            },
            index: rng.random(),
        }),
    };
    node.overwrite_state(vars, rng.random());
    node.chaos.state_corruptions.fetch_add(1, Relaxed);
    node.stats.event(Event::ChaosCorruptState);
}

/// Carry out a fault the control API received. Returns what was done.
pub fn inject(node: &Arc<Node>, fault: Fault) -> Result<String, ControlError> {
    let bad = |m: String| ControlError::new(ControlErrorKind::BadRequest, m);
    match fault {
        Fault::CorruptState {
            seed,
            every_ms,
            for_ms,
        } => {
            // The schedule is the caller's (reproducible by its seed); the garbage is fresh each
            // time, as a real fault's would be: a sequence id overwritten with the same values
            // in two runs would name two sets alike.
            let mut rng = StdRng::seed_from_u64(seed ^ node.incarnation ^ now_us());
            corrupt_state(node, &mut rng);
            warn!(
                every_ms,
                for_ms, "chaos: protocol variables overwritten with random values"
            );
            if every_ms > 0 && for_ms > 0 {
                let node = node.clone();
                tokio::spawn(async move {
                    let until = tokio::time::Instant::now() + Duration::from_millis(for_ms.into());
                    let mut tick = tokio::time::interval(Duration::from_millis(every_ms.into()));
                    tick.tick().await;
                    while tokio::time::Instant::now() < until {
                        tick.tick().await;
                        corrupt_state(&node, &mut rng);
                    }
                });
            }
            Ok(format!(
                "overwrote {} with random values{}",
                CORRUPTED_VARIABLES.join(", "),
                if every_ms > 0 && for_ms > 0 {
                    format!(", and will every {every_ms} ms for {for_ms} ms")
                } else {
                    String::new()
                }
            ))
        }
        Fault::CorruptBuffers {
            seed,
            fraction_ppm,
            for_ms,
        } => {
            if fraction_ppm > 1_000_000 {
                return Err(bad(format!(
                    "fraction {fraction_ppm} ppm exceeds 1,000,000"
                )));
            }
            let mut rng = StdRng::seed_from_u64(seed);
            let corrupted: usize = node
                .links
                .values()
                .map(|link| link.corrupt_queued(&node.chaos, fraction_ppm, &mut rng))
                .sum();
            if for_ms > 0 {
                node.chaos.open_window(fraction_ppm, for_ms, rng.random());
            }
            node.stats.event(Event::ChaosCorruptBuffers);
            warn!(
                corrupted,
                fraction_ppm, for_ms, "chaos: bits flipped in queued packets"
            );
            Ok(format!(
                "flipped bits in {corrupted} queued packets{}",
                if for_ms > 0 {
                    format!(", and will in {fraction_ppm} ppm of those queued for {for_ms} ms")
                } else {
                    String::new()
                }
            ))
        }
        Fault::Cut { neighbour } | Fault::Heal { neighbour } => {
            let cut = matches!(fault, Fault::Cut { .. });
            let link = node.links.get(&neighbour).ok_or_else(|| {
                bad(format!(
                    "node {neighbour} is not a neighbour of node {}",
                    node.id
                ))
            })?;
            if cut {
                link.cut();
                node.stats.event(Event::ChaosCut);
                warn!(%neighbour, "chaos: link cut");
                Ok(format!("link to {neighbour} cut"))
            } else {
                link.heal();
                node.stats.event(Event::ChaosHeal);
                warn!(%neighbour, "chaos: link healed");
                Ok(format!("link to {neighbour} healed"))
            }
        }
    }
}
