//! What a study measures of a batch of instances: the mean, standard deviation and maximum of
//! each instance's longest path, and the mean wall time per instance, the whole batch timed at
//! once (a single instance takes well under the clock's resolution on small sizes).

use std::time::Instant;

/// Mean, standard deviation (of the population) and maximum of a list of path lengths; all 0
/// for an empty list.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stats {
    pub mean: f64,
    pub std: f64,
    pub max: usize,
}

impl Stats {
    pub fn of(v: &[usize]) -> Stats {
        let count = v.len().max(1) as f64;
        let mean = v.iter().sum::<usize>() as f64 / count;
        let var = v.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / count;
        Stats {
            mean,
            std: var.sqrt(),
            max: v.iter().copied().max().unwrap_or(0),
        }
    }
}

/// Run `batch` over `count` instances: its result and the mean time per instance in
/// microseconds (0 when `count` is 0).
pub fn timed<T>(count: usize, batch: impl FnOnce() -> T) -> (T, f64) {
    let start = Instant::now();
    let result = batch();
    let us = start.elapsed().as_secs_f64() * 1e6 / count.max(1) as f64;
    (result, us)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_of_a_list() {
        let s = Stats::of(&[2, 4, 4, 4, 5, 5, 7, 9]);
        assert_eq!((s.mean, s.std, s.max), (5.0, 2.0, 9));
        let one = Stats::of(&[3]);
        assert_eq!((one.mean, one.std, one.max), (3.0, 0.0, 3));
    }

    #[test]
    fn stats_of_nothing_are_zero() {
        assert_eq!(
            Stats::of(&[]),
            Stats {
                mean: 0.0,
                std: 0.0,
                max: 0
            }
        );
    }

    #[test]
    fn timed_returns_the_batch_result() {
        let (sum, us) = timed(3, || (1..=3).sum::<u32>());
        assert_eq!(sum, 6);
        assert!(us >= 0.0 && us.is_finite());
        let ((), none) = timed(0, || ());
        assert!(none.is_finite());
    }
}
