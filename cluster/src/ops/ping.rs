//! `cuberoute ping`: small sets from one node to another, one per round, and per path what
//! each copy took, which came first and which were lost; then a summary per path, as `ping`
//! gives one per host.
//!
//! A copy's time is one way: from `input` at the source to its delivery at the destination,
//! both read from the daemons' wall clocks (one machine, or containers of one machine, share
//! one). The paths are the k node-disjoint paths the network took, read from each copy's trace.

use crate::ops::cluster_client::ClusterClient;
use crate::ops::traffic::{SendOptions, SendReport};
use cuberoute_daemon::client::ClientError;
use cuberoute_protocol::{NodeId, SendRequest};
use serde::Serialize;
use std::time::Duration;

/// How `ping` sends.
#[derive(Clone, Copy, Debug)]
pub struct PingOptions {
    pub count: u32,
    /// From the start of one round to the start of the next.
    pub interval: Duration,
    /// How long a round waits for its copies.
    pub wait: Duration,
}

/// One copy of one round.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PathSample {
    /// The path's index among the k.
    pub index: u8,
    pub hops: Option<u32>,
    /// One way, from `input` at the source to delivery; `None`: lost (not there in time).
    pub latency_us: Option<u64>,
}

/// One round: a set of k copies.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Round {
    pub round: u32,
    pub copies: Vec<PathSample>,
    /// The index of the copy that arrived first.
    pub first: Option<u8>,
}

impl Round {
    fn of(round: u32, report: &SendReport) -> Round {
        let copies: Vec<PathSample> = report
            .copies
            .iter()
            .map(|c| PathSample {
                index: c.index,
                hops: c.hops,
                latency_us: c.delivered.then_some(c.latency_us).flatten(),
            })
            .collect();
        let first = copies
            .iter()
            .filter_map(|c| Some((c.latency_us?, c.index)))
            .min()
            .map(|(_, index)| index);
        Round {
            round,
            copies,
            first,
        }
    }
}

/// One path over all rounds.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PathSummary {
    pub index: u8,
    /// The path's length in the last round that delivered on it.
    pub hops: Option<u32>,
    pub sent: u32,
    pub received: u32,
    pub loss_percent: f64,
    /// Rounds in which this path's copy came first.
    pub first: u32,
    pub min_us: Option<u64>,
    pub avg_us: Option<f64>,
    pub max_us: Option<u64>,
    /// The standard deviation, as `ping` prints it (mdev).
    pub mdev_us: Option<f64>,
}

/// Every round, and the summary per path.
#[derive(Clone, Debug, Serialize)]
pub struct PingReport {
    pub from: u64,
    pub to: u64,
    pub k: u32,
    pub rounds: Vec<Round>,
    pub paths: Vec<PathSummary>,
}

/// The summary of each of the `k` paths over `rounds`.
pub fn summarise(k: u32, rounds: &[Round]) -> Vec<PathSummary> {
    (0..k as u8)
        .map(|index| {
            let samples: Vec<&PathSample> = rounds
                .iter()
                .filter_map(|r| r.copies.iter().find(|c| c.index == index))
                .collect();
            let times: Vec<u64> = samples.iter().filter_map(|s| s.latency_us).collect();
            let sent = rounds.len() as u32;
            let received = times.len() as u32;
            let avg =
                (!times.is_empty()).then(|| times.iter().sum::<u64>() as f64 / times.len() as f64);
            let mdev = avg.map(|avg| {
                let mean_square = times.iter().map(|&t| (t as f64) * (t as f64)).sum::<f64>()
                    / times.len() as f64;
                (mean_square - avg * avg).max(0.0).sqrt()
            });
            PathSummary {
                index,
                hops: samples
                    .iter()
                    .rev()
                    .find(|s| s.latency_us.is_some())
                    .and_then(|s| s.hops),
                sent,
                received,
                loss_percent: if sent == 0 {
                    0.0
                } else {
                    100.0 * f64::from(sent - received) / f64::from(sent)
                },
                first: rounds.iter().filter(|r| r.first == Some(index)).count() as u32,
                min_us: times.iter().copied().min(),
                avg_us: avg,
                max_us: times.iter().copied().max(),
                mdev_us: mdev,
            }
        })
        .collect()
}

/// Ping `to` from `from`: `count` rounds, each handed to `each` as it completes.
pub async fn ping(
    client: &ClusterClient,
    from: NodeId,
    to: NodeId,
    options: PingOptions,
    mut each: impl FnMut(&Round),
) -> Result<PingReport, ClientError> {
    let send = SendOptions {
        trace: true,
        wait: Some(options.wait),
        ..SendOptions::default()
    };
    let mut rounds = Vec::new();
    let mut k = 0;
    let mut next = tokio::time::Instant::now();
    for round in 1..=options.count {
        tokio::time::sleep_until(next).await;
        next += options.interval;
        let payload = format!("ping {round}").into_bytes();
        let report = client
            .send(from, SendRequest::to(to), payload, send)
            .await?;
        k = report.k;
        let round = Round::of(round, &report);
        each(&round);
        rounds.push(round);
    }
    Ok(PingReport {
        from: from.0,
        to: to.0,
        k,
        paths: summarise(k, &rounds),
        rounds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(n: u32, times: &[Option<u64>]) -> Round {
        let copies: Vec<PathSample> = times
            .iter()
            .enumerate()
            .map(|(i, &t)| PathSample {
                index: i as u8,
                hops: Some(i as u32 + 1),
                latency_us: t,
            })
            .collect();
        let first = copies
            .iter()
            .filter_map(|c| Some((c.latency_us?, c.index)))
            .min()
            .map(|(_, i)| i);
        Round {
            round: n,
            copies,
            first,
        }
    }

    #[test]
    fn the_summary_is_pings_per_path() {
        let rounds = [
            round(1, &[Some(100), Some(300)]),
            round(2, &[Some(200), None]),
            round(3, &[Some(300), Some(250)]),
        ];
        let s = summarise(2, &rounds);
        assert_eq!(s[0].received, 3);
        assert_eq!(s[0].min_us, Some(100));
        assert_eq!(s[0].max_us, Some(300));
        assert_eq!(s[0].avg_us, Some(200.0));
        // sqrt(mean of squares - square of mean) = sqrt(46666.67 - 40000)
        assert!((s[0].mdev_us.unwrap() - 81.65).abs() < 0.01);
        assert_eq!(s[0].first, 2, "round 3 came first on path 1");
        assert_eq!(s[1].received, 2);
        assert!((s[1].loss_percent - 100.0 / 3.0).abs() < 1e-9);
        assert_eq!(s[1].first, 1);
        assert_eq!(s[1].hops, Some(2));
    }

    #[test]
    fn a_path_that_never_delivered_has_no_times() {
        let s = summarise(2, &[round(1, &[Some(5), None])]);
        assert_eq!(s[1].received, 0);
        assert_eq!(s[1].loss_percent, 100.0);
        assert_eq!((s[1].min_us, s[1].avg_us, s[1].mdev_us), (None, None, None));
    }
}
