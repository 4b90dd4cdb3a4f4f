//! The daemon's one source of time and randomness. Everything that reads a clock or draws a
//! random number goes through here, so that a simulation can control both.
//!
//! * [`now_us`]: the wall clock, for send times that two processes compare (latency);
//! * [`Instant`]: tokio's monotonic clock, for timeouts, windows and uptime;
//! * [`random`], [`random_range`], [`rng`]: random values and seeded generators.

use rand::SeedableRng;
use rand::distr::uniform::{SampleRange, SampleUniform};
use rand::distr::{Distribution, StandardUniform};
use rand::rngs::StdRng;
use std::time::{SystemTime, UNIX_EPOCH};

pub use tokio::time::Instant;

/// Microseconds since the Unix epoch by the wall clock: comparable between processes.
pub fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// A random value.
pub fn random<T>() -> T
where
    StandardUniform: Distribution<T>,
{
    rand::random()
}

/// A random value in `range`.
pub fn random_range<T: SampleUniform, R: SampleRange<T>>(range: R) -> T {
    rand::random_range(range)
}

/// A generator seeded from `seed`: the same seed gives the same values.
pub fn rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}
