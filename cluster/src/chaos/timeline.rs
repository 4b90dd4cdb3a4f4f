//! What a run's report draws: every set of the run and every fault window, on one clock (ms from
//! the run's start). `chaos run` and `sim` fill it; [`crate::chaos::page`] draws it.

use serde::{Deserialize, Serialize};

/// One run, as the report page shows it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Timeline {
    /// What ran, for the page's title: the topology, the faults, the delivery mode.
    pub title: String,
    /// From the first set sent to the end of the run, in ms.
    pub duration_ms: f64,
    /// The most copies (paths) any set travelled as: the x axis of "copies lost per path".
    pub max_k: u32,
    pub sets: Vec<SetPoint>,
    pub windows: Vec<FaultWindow>,
}

/// How a set ended, as its client saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Every copy arrived (plain), or the set was delivered (a delivery mode).
    Delivered,
    /// At least one copy arrived, but not all (plain only).
    Partial,
    /// Nothing arrived.
    Lost,
    /// The source could not be asked, or refused the set.
    Failed,
}

impl Outcome {
    pub const ALL: [Outcome; 4] = [
        Outcome::Delivered,
        Outcome::Partial,
        Outcome::Lost,
        Outcome::Failed,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Outcome::Delivered => "delivered",
            Outcome::Partial => "partial",
            Outcome::Lost => "lost",
            Outcome::Failed => "failed",
        }
    }
}

/// One set: when it was sent, when its first and last copy arrived, and which copies did not.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SetPoint {
    pub sent_ms: f64,
    /// Latency of the first copy (or of the set, in a delivery mode), if one arrived.
    pub first_ms: Option<f64>,
    /// Latency of the last copy that arrived (equal to `first_ms` for a single entry).
    pub last_ms: Option<f64>,
    pub outcome: Outcome,
    /// How many copies (paths) the set travelled as.
    pub k: u32,
    /// The path indices (0..k) whose copy did not arrive (plain sets only).
    pub paths_lost: Vec<u32>,
}

/// A fault in force from `start_ms` to `end_ms`: what it was, where, and what applied it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FaultWindow {
    pub start_ms: f64,
    pub end_ms: f64,
    /// The fault: `crash`, `cut`, `loss 5%`, `delay 10ms±5ms`, `partition`, ...
    pub what: String,
    /// The nodes or links it touched: `node 5`, `link 3-7`, `all links`, `bit 2 (16 links)`.
    pub place: String,
    /// What applied it: `process kill`, `kernel (nftables)`, `daemon socket (user space)`,
    /// `simulated network`, `control API`, ...
    pub mechanism: String,
}

/// The fault windows of a run as they open and close, on the run's clock.
#[derive(Debug, Default)]
pub struct Windows {
    windows: Vec<FaultWindow>,
}

/// A window still open: the one [`Windows::close`] takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Opened(usize);

impl Windows {
    pub fn open(&mut self, at_ms: f64, what: String, place: String, mechanism: &str) -> Opened {
        self.windows.push(FaultWindow {
            start_ms: at_ms,
            end_ms: f64::NAN,
            what,
            place,
            mechanism: mechanism.to_string(),
        });
        Opened(self.windows.len() - 1)
    }

    pub fn close(&mut self, window: Opened, at_ms: f64) {
        if let Some(w) = self.windows.get_mut(window.0) {
            w.end_ms = at_ms;
        }
    }

    /// Every window, those still open closed at `end_ms`.
    pub fn finish(mut self, end_ms: f64) -> Vec<FaultWindow> {
        for w in &mut self.windows {
            if w.end_ms.is_nan() {
                w.end_ms = end_ms;
            }
        }
        self.windows
    }
}
