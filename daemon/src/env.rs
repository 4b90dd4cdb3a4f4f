//! The daemon's one source of time and randomness. Everything that reads a clock or draws a
//! random number goes through here, so that a simulation can control both.
//!
//! * [`now_us`]: the wall clock, for send times that two processes compare (latency);
//! * [`Instant`]: tokio's monotonic clock, for timeouts, windows and uptime;
//! * [`random`], [`random_range`], [`rng`]: random values and seeded generators;
//! * [`thread_cpu_ns`]: the CPU time of the calling thread, to measure what a computation cost
//!   (no decision reads it).
//!
//! Inside a turmoil simulation ([`crate::net::simulated`]) the wall clock is the simulation's
//! and the random values come from one generator seeded by [`seed_simulation`]: a run is a
//! function of its seed.

use rand::SeedableRng;
use rand::distr::uniform::{SampleRange, SampleUniform};
use rand::distr::{Distribution, StandardUniform};
use rand::rngs::StdRng;
use std::cell::RefCell;
use std::time::{SystemTime, UNIX_EPOCH};

pub use tokio::time::Instant;

thread_local! {
    /// The simulation's generator: a simulation runs every host on one thread.
    static SIMULATED: RefCell<Option<StdRng>> = const { RefCell::new(None) };
}

/// Draw every random value on this thread from a generator seeded with `seed` (a simulation),
/// or from the system's again (`None`).
pub fn seed_simulation(seed: Option<u64>) {
    SIMULATED.with(|g| *g.borrow_mut() = seed.map(StdRng::seed_from_u64));
}

/// Microseconds since the Unix epoch by the wall clock (in a simulation, the simulation's):
/// comparable between processes.
pub fn now_us() -> u64 {
    if let Some(since) = turmoil::since_epoch() {
        return since.as_micros() as u64;
    }
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// How long the simulation has run, in its time; `None` outside one. What a simulation's log
/// lines are stamped with (no decision reads it).
pub fn simulated_elapsed() -> Option<std::time::Duration> {
    turmoil::sim_elapsed()
}

/// Wait until `next_us` (wall clock, µs, as [`now_us`]) or until `wake` is notified, whichever
/// comes first; with no `next_us`, until notified. The timers of delivery and sealing.
pub async fn sleep_until_or(wake: &tokio::sync::Notify, next_us: Option<u64>) {
    let woken = wake.notified();
    match next_us {
        Some(at) => {
            let wait = std::time::Duration::from_micros(at.saturating_sub(now_us()));
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = woken => {}
            }
        }
        None => woken.await,
    }
}

/// A random value.
pub fn random<T>() -> T
where
    StandardUniform: Distribution<T>,
{
    SIMULATED.with(|g| match g.borrow_mut().as_mut() {
        Some(rng) => rand::Rng::random(rng),
        None => rand::random(),
    })
}

/// A random value in `range`.
pub fn random_range<T: SampleUniform, R: SampleRange<T>>(range: R) -> T {
    SIMULATED.with(|g| match g.borrow_mut().as_mut() {
        Some(rng) => rand::Rng::random_range(rng, range),
        None => rand::random_range(range),
    })
}

/// A generator seeded from `seed`: the same seed gives the same values.
pub fn rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}

/// The CPU time the calling thread has used, in ns (`CLOCK_THREAD_CPUTIME_ID`; 0 if the
/// system cannot tell). A measurement of this process's own work, simulated or not.
pub fn thread_cpu_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec for the call to write.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) } != 0 {
        return 0;
    }
    (t.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(t.tv_nsec as u64)
}
