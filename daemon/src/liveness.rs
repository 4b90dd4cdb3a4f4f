//! Link liveness: when a neighbour is taken for dead. One decision, [`Detector::look`], a pure
//! state machine over what the link observes (the datagrams its QUIC connection has received,
//! the time, the round trip, the node's own health); the link (`crate::link`) wakes it on its
//! timer, carries out its probes and closes the connection on its verdict.
//!
//! As BFD (RFC 5880) an interval and a detect multiplier ([`Settings`], `[liveness]` in the
//! node's configuration): the dialling end of a link probes its neighbour every interval (a
//! QUIC packet with an IMMEDIATE_ACK frame, which the neighbour's QUIC answers at once with an
//! acknowledgement: two datagrams, no stream, nothing for the neighbour's daemon to handle);
//! the accepting end hears those probes, and looks every interval and a half. Unlike BFD, any datagram of the connection counts as
//! proof of life, not only a probe's answer: a link busy with data needs no answer to a probe.
//!
//! * An end that heard nothing during an interval (and was itself woken on time) **suspects**
//!   the neighbour, and from then on probes it ten times an interval: one lost probe or
//!   answer is soon refuted, and only a run of losses looks like death (with the default
//!   multiplier of 3 and 5% loss each way, eleven round trips lost in a row, about 1 in 10^11).
//! * It takes the neighbour for **dead** once nothing was heard for the detection time,
//!   `multiplier` intervals, counted from the last look that is known to precede something
//!   heard, and it has been suspected (and probed ten times) for an interval: so a neighbour
//!   that dies is marked down at most the detection time and an interval after its last sign
//!   of life (the prober, with the default multiplier of 3, within the detection time).
//! * Not under overload (Lifeguard's local health multiplier): an end woken late by its own
//!   node judges nothing on that look (what the neighbour sent may wait in its own socket),
//!   and every late wake-up of any link of the node raises the node's [`Health`] score, every
//!   timely one lowers it; the detection time is multiplied by one plus the score (at most
//!   [`MAX_HEALTH`]). It is never shorter than [`ROUND_TRIPS`] smoothed round trips of the
//!   connection either: a machine loaded past saturation has round trips of seconds.
//! * Not for the neighbour's own starvation: where its process runs on this machine, the time
//!   it spent waiting for a CPU ([`Look::neighbour_waited`]) is taken off its silence: a
//!   machine loaded past its cores makes every process wait its turn, and a process that
//!   waits is alive (its death is seen at once, by its exit).
//!
//! A neighbour on the same machine needs no probe to be found dead when its process exits: the
//! link watches that process too ([`crate::exits`], `liveness.watch_exits`).

use crate::env::Instant;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::time::Duration;

/// How often the dialling end probes a link (`liveness.interval`).
pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(200);
/// How many intervals of silence make a neighbour dead (`liveness.multiplier`).
pub const DEFAULT_MULTIPLIER: u32 = 3;
/// The shortest interval: below it a link's probes are its load.
pub const MIN_INTERVAL: Duration = Duration::from_millis(10);
/// The longest interval: an hour.
pub const MAX_INTERVAL: Duration = Duration::from_secs(3600);
/// The largest multiplier.
pub const MAX_MULTIPLIER: u32 = 100;
/// The highest local health score: an overloaded node waits up to this many times longer
/// (plus one) before it takes a neighbour for dead.
pub const MAX_HEALTH: u32 = 8;
/// A look this much later than it was due was held back by the node itself.
pub const LATE: Duration = Duration::from_millis(50);
/// The detection time is at least this many smoothed round trips of the connection.
pub const ROUND_TRIPS: u32 = 8;
/// A suspected neighbour is probed this many times per interval.
pub const SUSPECT_PROBES_PER_INTERVAL: u32 = 10;
/// Even a node late at every look judges once the silence is this many detection times.
pub const SILENT_AT_MOST: u32 = 4;
/// The listening end looks every interval and a half: each of its looks then follows at
/// least one of the prober's probes, whatever their phase and a timer's jitter.
const LISTEN_EVERY_HALVES: u32 = 3;

/// A deployment's liveness settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    pub interval: Duration,
    pub multiplier: u32,
    /// Whether a link to a neighbour on the same machine also watches its process exit
    /// (`liveness.watch_exits`, [`crate::exits`]).
    pub watch_exits: bool,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            interval: DEFAULT_INTERVAL,
            multiplier: DEFAULT_MULTIPLIER,
            watch_exits: true,
        }
    }
}

impl Settings {
    /// Silence that makes a neighbour dead on a healthy node: `multiplier` intervals.
    pub fn detection_time(&self) -> Duration {
        self.interval.saturating_mul(self.multiplier)
    }

    /// Why these settings cannot run, naming the key.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if self.interval.is_zero() {
            return Err((
                "liveness.interval",
                "0: a detection time of 0 takes every neighbour for dead".into(),
            ));
        }
        if self.interval < MIN_INTERVAL || self.interval > MAX_INTERVAL {
            return Err((
                "liveness.interval",
                format!(
                    "{}: must be from {} to {}",
                    humantime::format_duration(self.interval),
                    humantime::format_duration(MIN_INTERVAL),
                    humantime::format_duration(MAX_INTERVAL)
                ),
            ));
        }
        if !(1..=MAX_MULTIPLIER).contains(&self.multiplier) {
            return Err((
                "liveness.multiplier",
                format!("{}: must be from 1 to {MAX_MULTIPLIER}", self.multiplier),
            ));
        }
        Ok(())
    }
}

/// The node's own health, shared by its links (Lifeguard's local health multiplier): a score
/// from 0 (every look on time) to [`MAX_HEALTH`], raised by each look its node woke late, lowered
/// by each on time.
#[derive(Default, Debug)]
pub struct Health {
    score: AtomicU32,
}

impl Health {
    /// A look woke `late` (or not).
    pub fn woke(&self, late: bool) {
        let _ = self.score.fetch_update(Relaxed, Relaxed, |s| {
            Some(if late {
                (s + 1).min(MAX_HEALTH)
            } else {
                s.saturating_sub(1)
            })
        });
    }

    pub fn score(&self) -> u32 {
        self.score.load(Relaxed)
    }
}

/// What a node's links share: the settings and the node's health.
#[derive(Default, Debug)]
pub struct Liveness {
    pub settings: Settings,
    pub health: Health,
}

impl Liveness {
    pub fn new(settings: Settings) -> Liveness {
        Liveness {
            settings,
            health: Health::default(),
        }
    }
}

/// What a link sees when it looks.
#[derive(Clone, Copy, Debug)]
pub struct Look {
    pub now: Instant,
    /// When the look was due: a look much later was held back by the node itself.
    pub due: Instant,
    /// Datagrams received on the connection so far.
    pub received: u64,
    /// The connection's smoothed round trip.
    pub rtt: Duration,
    /// The node's health score ([`Health::score`]).
    pub health: u32,
    /// How long the neighbour's process has waited for a CPU since it started, where it runs
    /// on this machine ([`crate::exits::Watch::waited_for_cpu`]): silence it spent waiting
    /// in the machine's run queues is not counted against it.
    pub neighbour_waited: Option<Duration>,
    /// Whether the neighbour's process, on this machine, is running or waiting for a CPU or
    /// the disk now ([`crate::exits::Watch::is_runnable`]): the kernel adds a wait for a CPU
    /// to `neighbour_waited` only once it ends, so a neighbour waiting seconds for its turn
    /// shows it only here. It is not taken for dead while so.
    pub neighbour_runnable: bool,
}

/// What the detector concluded at a look.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing new: alive, or still suspected.
    Same,
    /// Nothing heard for an interval: suspected from now on.
    Suspected,
    /// Heard from while suspected: alive after all.
    FoundAlive,
    /// Taken for dead, and why.
    Down(String),
}

/// What the link does after a look.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    pub verdict: Verdict,
    /// Send a probe now.
    pub probe: bool,
    /// Look again then.
    pub next: Instant,
}

/// One end of one connection's liveness.
#[derive(Clone, Debug)]
pub struct Detector {
    settings: Settings,
    /// This end probes every interval (the dialler); the other only while it suspects.
    prober: bool,
    /// Datagrams received at the last look.
    received: u64,
    last_look: Instant,
    /// The neighbour is known to have been alive at this time (the look before the one that
    /// saw a datagram had come).
    alive_at: Instant,
    /// Since when the neighbour is suspected.
    suspected_since: Option<Instant>,
    /// The neighbour's wait for a CPU ([`Look::neighbour_waited`]) at the last look, and at
    /// `alive_at`.
    waited_at_last_look: Option<Duration>,
    waited_at_alive: Option<Duration>,
}

impl Detector {
    /// A detector for a connection just made at `now`, which has received `received`
    /// datagrams; `prober` for the end that probes every interval.
    pub fn new(settings: Settings, prober: bool, now: Instant, received: u64) -> Detector {
        Detector {
            settings,
            prober,
            received,
            last_look: now,
            alive_at: now,
            suspected_since: None,
            waited_at_last_look: None,
            waited_at_alive: None,
        }
    }

    /// When to look first.
    pub fn first(&self) -> Instant {
        self.last_look + self.every()
    }

    /// How often a neighbour not suspected is looked at: every interval by the prober, every
    /// interval and a half by the listener.
    fn every(&self) -> Duration {
        if self.prober {
            self.settings.interval
        } else {
            self.settings.interval * LISTEN_EVERY_HALVES / 2
        }
    }

    pub fn is_suspected(&self) -> bool {
        self.suspected_since.is_some()
    }

    /// The silence that makes the neighbour dead now: `multiplier` intervals, times one plus
    /// the node's health score, and at least [`ROUND_TRIPS`] round trips.
    pub fn limit(&self, rtt: Duration, health: u32) -> Duration {
        let health = health.min(MAX_HEALTH);
        self.settings
            .detection_time()
            .saturating_mul(1 + health)
            .max(rtt.saturating_mul(ROUND_TRIPS))
    }

    /// Look at the connection, and say what follows.
    pub fn look(&mut self, look: Look) -> Step {
        let heard = look.received != self.received;
        let late = look.now.saturating_duration_since(look.due) > LATE;
        if heard {
            // Something came after the last look was taken: the neighbour was alive then.
            if self.last_look > self.alive_at {
                self.alive_at = self.last_look;
                self.waited_at_alive = self.waited_at_last_look;
            }
            self.received = look.received;
        }
        self.last_look = look.now;
        if self.waited_at_alive.is_none() {
            self.waited_at_alive = look.neighbour_waited;
        }
        self.waited_at_last_look = look.neighbour_waited;
        // A neighbour on this machine that waited for a CPU could not answer meanwhile: an
        // overloaded machine starves its processes, it does not kill them (its exit is seen
        // at once, `crate::exits`). Only the silence it could have broken counts.
        let starved = match (look.neighbour_waited, self.waited_at_alive) {
            (Some(now), Some(then)) => now.saturating_sub(then),
            _ => Duration::ZERO,
        };
        let silent_for = look.now.saturating_duration_since(self.alive_at);
        let silent = silent_for.saturating_sub(starved);
        let limit = self.limit(look.rtt, look.health);
        // A neighbour is taken for dead only after an interval of suspicion, ten probes of its
        // own (a listener's first silent look may already be a detection time after its last
        // sign of life), unless this node is so late that it never gets to suspect.
        let suspected_for = self.suspected_since.map_or(Duration::ZERO, |since| {
            look.now.saturating_duration_since(since)
        });
        let verdict = if heard {
            if self.suspected_since.take().is_some() {
                Verdict::FoundAlive
            } else {
                Verdict::Same
            }
        } else if !look.neighbour_runnable
            && (silent >= limit * SILENT_AT_MOST
                || (!late && silent >= limit && suspected_for >= self.settings.interval))
        {
            Verdict::Down(format!(
                "nothing heard from the neighbour for {} ms{} (detection time {} ms: {} x {} ms{})",
                silent_for.as_millis(),
                match starved.as_millis() {
                    0 => String::new(),
                    ms => format!(", {ms} ms of it waiting for a CPU"),
                },
                limit.as_millis(),
                self.settings.multiplier,
                self.settings.interval.as_millis(),
                match look.health {
                    0 => String::new(),
                    h => format!(", x {} for this node's own delays", 1 + h.min(MAX_HEALTH)),
                }
            ))
        } else if self.suspected_since.is_none() && !late {
            self.suspected_since = Some(look.now);
            Verdict::Suspected
        } else {
            Verdict::Same
        };
        let every = if self.is_suspected() {
            self.settings.interval / SUSPECT_PROBES_PER_INTERVAL
        } else {
            self.every()
        };
        Step {
            probe: !matches!(verdict, Verdict::Down(_)) && (self.prober || self.is_suspected()),
            verdict,
            next: look.now + every,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const I: Duration = Duration::from_millis(300);

    fn settings() -> Settings {
        Settings {
            interval: I,
            multiplier: 3,
            watch_exits: true,
        }
    }

    /// A look on time at `at`, with `received` datagrams so far.
    fn look(at: Instant, received: u64) -> Look {
        Look {
            now: at,
            due: at,
            received,
            rtt: Duration::from_millis(1),
            health: 0,
            neighbour_waited: None,
            neighbour_runnable: false,
        }
    }

    /// Drive `d` from `start`, looking when it asks, with the datagram count `received(t)`,
    /// until it says down or `until` passes; when it said down.
    fn run(
        d: &mut Detector,
        start: Instant,
        until: Duration,
        received: impl Fn(Instant) -> u64,
    ) -> (Option<Instant>, Vec<Verdict>) {
        let mut at = d.first();
        let mut seen = Vec::new();
        while at < start + until {
            let step = d.look(look(at, received(at)));
            if step.verdict != Verdict::Same {
                seen.push(step.verdict.clone());
            }
            if matches!(step.verdict, Verdict::Down(_)) {
                return (Some(at), seen);
            }
            at = step.next;
        }
        (None, seen)
    }

    #[test]
    fn a_neighbour_answering_every_probe_is_never_suspected() {
        let start = Instant::now();
        let mut d = Detector::new(settings(), true, start, 0);
        // Every look finds one more datagram (the answer to the previous probe).
        let (down, seen) = run(&mut d, start, Duration::from_secs(60), |t| {
            (t - start).as_millis() as u64 / 300
        });
        assert_eq!(down, None);
        assert!(seen.is_empty(), "{seen:?}");
    }

    #[test]
    fn a_dead_neighbour_is_down_within_the_detection_time_of_its_last_sign_of_life() {
        for died_ms in [1000, 1050, 1150, 1299, 1301, 2222] {
            let start = Instant::now();
            let died = start + Duration::from_millis(died_ms);
            let mut d = Detector::new(settings(), true, start, 0);
            // An answer right after each probe, until the neighbour died.
            let (down, seen) = run(&mut d, start, Duration::from_secs(60), |t| {
                (t.min(died) - start).as_millis() as u64 / 300
            });
            let down = down.expect("taken for dead");
            let took = down - died;
            assert!(
                took <= settings().detection_time() + I / 10,
                "died at {died_ms} ms, down {took:?} later"
            );
            assert!(took >= I, "died at {died_ms} ms, down {took:?} later");
            assert_eq!(seen[0], Verdict::Suspected, "{seen:?}");
            assert_eq!(seen.len(), 2, "{seen:?}");
        }
    }

    #[test]
    fn a_suspected_neighbour_is_probed_ten_times_an_interval_and_found_alive_when_heard() {
        let start = Instant::now();
        let mut d = Detector::new(settings(), false, start, 0);
        // The listener heard nothing for an interval: suspects, and probes.
        let step = d.look(look(start + I, 0));
        assert_eq!(step.verdict, Verdict::Suspected);
        assert!(step.probe);
        assert_eq!(step.next, start + I + I / 10);
        // Heard: alive after all, and back to listening every interval.
        let step = d.look(look(step.next, 1));
        assert_eq!(step.verdict, Verdict::FoundAlive);
        assert!(!step.probe, "a listener does not probe a live neighbour");
        assert_eq!(step.next, start + I + I / 10 + I * 3 / 2);
        assert!(!d.is_suspected());
    }

    #[test]
    fn a_listener_hearing_probes_neither_probes_nor_suspects() {
        let start = Instant::now();
        let mut d = Detector::new(settings(), false, start, 0);
        for n in 1..100u64 {
            let step = d.look(look(start + I * n as u32, n));
            assert_eq!(step.verdict, Verdict::Same);
            assert!(!step.probe);
        }
    }

    #[test]
    fn a_listener_takes_a_dead_prober_for_dead_within_the_detection_time_and_an_interval() {
        for died_ms in [1000, 1050, 1150, 1299, 1301, 2222] {
            let start = Instant::now();
            let died = start + Duration::from_millis(died_ms);
            let mut d = Detector::new(settings(), false, start, 0);
            // The prober's probes arrive every interval, until it died.
            let (down, seen) = run(&mut d, start, Duration::from_secs(60), |t| {
                (t.min(died) - start).as_millis() as u64 / 300
            });
            let took = down.expect("taken for dead") - died;
            assert!(
                took <= settings().detection_time() + I,
                "died at {died_ms} ms, down {took:?} later"
            );
            assert_eq!(seen[0], Verdict::Suspected, "{seen:?}");
        }
    }

    /// A neighbour on this machine, alive, that waits in the run queues of an overloaded
    /// machine (all but `ran` of each second) is not taken for dead however long it is
    /// silent, as long as the silence it could have broken stays under the detection time; one
    /// that does not wait (it hangs, or is partitioned off) is taken for dead as before; and a
    /// neighbour elsewhere (no wait known) as before.
    #[test]
    fn a_neighbour_starved_of_cpu_on_this_machine_is_not_taken_for_dead() {
        let start = Instant::now();
        // Heard from until 1 s, then silent for a minute.
        let heard =
            |t: Instant| (t.min(start + Duration::from_secs(1)) - start).as_millis() as u64 / 300;
        let drive = |waited: &dyn Fn(Instant) -> Option<Duration>| {
            let mut d = Detector::new(settings(), true, start, 0);
            let mut at = d.first();
            while at < start + Duration::from_secs(60) {
                let step = d.look(Look {
                    neighbour_waited: waited(at),
                    ..look(at, heard(at))
                });
                if let Verdict::Down(why) = step.verdict {
                    return Some((at - start, why));
                }
                at = step.next;
            }
            None
        };
        // Waiting 99% of the time since a large wait before: 0.6 s of silence it could have
        // broken after a minute; never down.
        let starved = |t: Instant| Some(Duration::from_secs(100) + (t - start).mul_f64(0.99));
        assert_eq!(drive(&starved), None);
        // Waiting half the time: down once its own silence reaches the detection time (0.9 s),
        // 1.8 s after its last sign of life (0.6 s), and the verdict says how long it waited.
        let half = |t: Instant| Some(Duration::from_secs(100) + (t - start) / 2);
        let (at, why) = drive(&half).expect("down");
        assert_eq!(at, Duration::from_millis(2400));
        assert!(why.contains("of it waiting for a CPU"), "{why}");
        // Waiting for a CPU at every look (a wait the kernel counts only once it ends): never.
        let mut d = Detector::new(settings(), true, start, 0);
        let mut at = d.first();
        while at < start + Duration::from_secs(60) {
            let step = d.look(Look {
                neighbour_runnable: true,
                ..look(at, heard(at))
            });
            assert!(!matches!(step.verdict, Verdict::Down(_)), "{step:?}");
            at = step.next;
        }
        // ...and once it is not, as below.
        assert!(matches!(
            d.look(look(at, heard(at))).verdict,
            Verdict::Down(_)
        ));
        // Not waiting at all (sleeping: partitioned off, or hung), or elsewhere: as before.
        for waited in [
            &(|_| Some(Duration::from_secs(100))) as &dyn Fn(Instant) -> Option<Duration>,
            &|_| None,
        ] {
            let (at, why) = drive(waited).expect("down");
            assert_eq!(at, Duration::from_millis(1500));
            assert!(!why.contains("CPU"), "{why}");
        }
    }

    #[test]
    fn a_late_look_judges_nothing_until_four_detection_times() {
        let start = Instant::now();
        let mut d = Detector::new(settings(), true, start, 0);
        let late = |at: Instant| Look {
            due: at - Duration::from_millis(200),
            ..look(at, 0)
        };
        // Silent for two detection times, but every look late: no suspicion, no verdict.
        let step = d.look(late(start + I * 6));
        assert_eq!(step.verdict, Verdict::Same);
        assert!(!d.is_suspected());
        // Four detection times: judged all the same.
        let step = d.look(late(start + I * 12));
        assert!(matches!(step.verdict, Verdict::Down(_)), "{step:?}");
    }

    #[test]
    fn an_overloaded_node_and_a_slow_connection_wait_longer() {
        let d = Detector::new(settings(), true, Instant::now(), 0);
        let rtt = Duration::from_millis(1);
        assert_eq!(d.limit(rtt, 0), I * 3);
        assert_eq!(d.limit(rtt, 2), I * 9);
        assert_eq!(d.limit(rtt, 100), I * 3 * (MAX_HEALTH + 1));
        assert_eq!(d.limit(Duration::from_secs(1), 0), Duration::from_secs(8));
        // With a health score of 2 a silence of one detection time is no verdict.
        let start = Instant::now();
        let mut d = Detector::new(settings(), true, start, 0);
        let mut at = d.first();
        while at < start + I * 8 {
            let step = d.look(Look {
                health: 2,
                ..look(at, 0)
            });
            assert!(
                !matches!(step.verdict, Verdict::Down(_)),
                "at {:?}",
                at - start
            );
            at = step.next;
        }
    }

    #[test]
    fn health_rises_with_late_wake_ups_and_falls_with_timely_ones() {
        let h = Health::default();
        for _ in 0..20 {
            h.woke(true);
        }
        assert_eq!(h.score(), MAX_HEALTH);
        h.woke(false);
        assert_eq!(h.score(), MAX_HEALTH - 1);
        for _ in 0..20 {
            h.woke(false);
        }
        assert_eq!(h.score(), 0);
    }

    /// A deterministic 5% loss from `seed` (splitmix64): true when a packet is lost.
    fn losses(mut state: u64) -> impl FnMut() -> bool {
        move || {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            (z ^ (z >> 31)) % 100 < 5
        }
    }

    #[test]
    fn five_percent_loss_each_way_makes_no_false_down_in_a_million_probes() {
        // Each probe and each answer lost with 5%.
        let mut lost = losses(48);
        let start = Instant::now();
        let mut d = Detector::new(settings(), true, start, 0);
        let (mut at, mut received, mut probe) = (d.first(), 0u64, true);
        let (mut suspected, mut found_alive) = (0, 0);
        for _ in 0..1_000_000 {
            // The probe sent at the previous look, and its answer, each lost 5% of the time.
            if probe && !lost() && !lost() {
                received += 1;
            }
            let step = d.look(look(at, received));
            match step.verdict {
                Verdict::Down(why) => panic!("a false down: {why}"),
                Verdict::Suspected => suspected += 1,
                Verdict::FoundAlive => found_alive += 1,
                Verdict::Same => {}
            }
            (at, probe) = (step.next, step.probe);
        }
        assert!(suspected > 10_000, "{suspected} suspicions");
        assert!(found_alive >= suspected - 1);
    }

    #[test]
    fn a_listener_with_five_percent_loss_each_way_makes_no_false_down_in_a_million_looks() {
        let mut lost = losses(49);
        let start = Instant::now();
        let mut d = Detector::new(settings(), false, start, 0);
        let (mut at, mut received, mut probed) = (d.first(), 0u64, false);
        // The prober's probes: one every interval, from 100 ms on, each lost 5% of the time.
        let mut next_probe = start + Duration::from_millis(100);
        let mut suspected = 0;
        for _ in 0..1_000_000 {
            while next_probe <= at {
                if !lost() {
                    received += 1;
                }
                next_probe += I;
            }
            // The listener's own probe at its last look, and its answer.
            if probed && !lost() && !lost() {
                received += 1;
            }
            let step = d.look(look(at, received));
            match step.verdict {
                Verdict::Down(why) => panic!("a false down: {why}"),
                Verdict::Suspected => suspected += 1,
                _ => {}
            }
            (at, probed) = (step.next, step.probe);
        }
        assert!(suspected > 1_000, "{suspected} suspicions");
    }

    #[test]
    fn bad_settings_name_their_key() {
        let bad = |interval_ms, multiplier| {
            Settings {
                interval: Duration::from_millis(interval_ms),
                multiplier,
                watch_exits: true,
            }
            .check()
            .unwrap_err()
            .0
        };
        assert_eq!(bad(0, 3), "liveness.interval");
        assert_eq!(bad(1, 3), "liveness.interval");
        assert_eq!(bad(300, 0), "liveness.multiplier");
        assert_eq!(bad(300, 101), "liveness.multiplier");
        assert!(Settings::default().check().is_ok());
    }
}
