//! Sending on a schedule, whatever the cluster does (an open loop, as wrk2 sends): the n-th
//! set is due at `start + n / rate`. A sender that fell behind (a stalled runtime, a fault
//! being injected beside it) sends every set already due at once rather than skipping them,
//! and each set keeps its due time, so that its latency is measured from when it should have
//! gone ([`Due::late`]) and a stall shows in the latencies instead of hiding in fewer sets
//! (coordinated omission).
//!
//! The clock is tokio's: the real one, or a simulation's (`cuberoute sim`).

use std::time::Duration;
use tokio::time::Instant;

/// The schedule of a stream of sets, and how many went in each second of it.
#[derive(Debug)]
pub struct OpenLoop {
    start: Instant,
    interval: Duration,
    next: u64,
    per_second: Vec<u64>,
}

/// A set's place in the schedule.
#[derive(Clone, Copy, Debug)]
pub struct Due {
    /// Its number in the stream, from 0.
    pub n: u64,
    /// When it was due.
    pub at: Instant,
}

impl Due {
    /// How late it is now against its due time.
    pub fn late(&self) -> Duration {
        Instant::now().saturating_duration_since(self.at)
    }

    /// [`late`](Self::late) in µs: what a latency measured from the send adds to count from
    /// when it was due.
    pub fn late_us(&self) -> u64 {
        self.late().as_micros() as u64
    }
}

impl OpenLoop {
    /// `rate` sets per second from `start`. A rate that is not above zero sends one set a
    /// thousand seconds.
    pub fn new(start: Instant, rate: f64) -> OpenLoop {
        let rate = if rate > 1e-3 { rate } else { 1e-3 };
        OpenLoop {
            start,
            interval: Duration::from_secs_f64(1.0 / rate),
            next: 0,
            per_second: Vec::new(),
        }
    }

    /// When the next set is due.
    pub fn next_due(&self) -> Instant {
        self.start + self.interval.mul_f64(self.next as f64)
    }

    /// Wait until the next set is due (not at all if it already is), and count it sent now.
    pub async fn next(&mut self) -> Due {
        self.wait().await;
        self.take()
    }

    /// Wait until the next set is due, not counting it yet: a sender that may stop checks
    /// then, and [`take`](Self::take)s it only if it sends it.
    pub async fn wait(&self) {
        tokio::time::sleep_until(self.next_due()).await;
    }

    /// Count the next set sent now, due or not.
    pub fn take(&mut self) -> Due {
        let due = Due {
            n: self.next,
            at: self.next_due(),
        };
        self.next += 1;
        let second = Instant::now()
            .saturating_duration_since(self.start)
            .as_secs() as usize;
        if self.per_second.len() <= second {
            self.per_second.resize(second + 1, 0);
        }
        self.per_second[second] += 1;
        due
    }

    /// Sets sent so far.
    pub fn sent(&self) -> u64 {
        self.next
    }

    /// How many sets went in each whole second from the start, by when they were sent (not
    /// when they were due): what the cluster was actually offered. The last entry is the
    /// second the stream ended in, usually a part of one.
    pub fn sent_per_second(&self) -> &[u64] {
        &self.per_second
    }
}

/// The seconds of `per_second` whose count is off `rate` by more than `share` of it, leaving
/// out the last (a part of a second): each as (second, count).
pub fn off_rate(per_second: &[u64], rate: f64, share: f64) -> Vec<(usize, u64)> {
    let whole = per_second.len().saturating_sub(1);
    per_second[..whole]
        .iter()
        .enumerate()
        .filter(|&(_, &n)| (n as f64 - rate).abs() > share * rate)
        .map(|(s, &n)| (s, n))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn sets_go_on_schedule_and_a_stall_is_caught_up_with_each_set_late() {
        let start = Instant::now();
        let mut stream = OpenLoop::new(start, 10.0);
        let mut lates = Vec::new();
        for _ in 0..10 {
            lates.push(stream.next().await.late());
        }
        assert!(lates.iter().all(|l| l.is_zero()));
        // The sender stalls for 350 ms: the sets due meanwhile go at once, each as late as it
        // is, and none is skipped.
        tokio::time::sleep(Duration::from_millis(350)).await;
        let mut caught_up = Vec::new();
        for _ in 0..4 {
            let due = stream.next().await;
            caught_up.push((due.n, due.late().as_millis()));
        }
        assert_eq!(caught_up, vec![(10, 250), (11, 150), (12, 50), (13, 0)]);
        assert_eq!(stream.sent(), 14);
        assert_eq!(stream.sent_per_second(), &[10, 4]);
    }

    #[test]
    fn seconds_off_the_rate_are_found_and_the_last_part_second_is_not_judged() {
        assert_eq!(off_rate(&[10, 9, 11, 3], 10.0, 0.1), vec![]);
        assert_eq!(
            off_rate(&[10, 8, 12, 10, 1], 10.0, 0.1),
            vec![(1, 8), (2, 12)]
        );
        assert_eq!(off_rate(&[], 10.0, 0.1), vec![]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_rate_of_zero_is_taken_as_the_slowest_rate() {
        let mut stream = OpenLoop::new(Instant::now(), 0.0);
        stream.next().await;
        assert_eq!(
            stream.next_due().saturating_duration_since(Instant::now()),
            Duration::from_secs(1000)
        );
    }
}
