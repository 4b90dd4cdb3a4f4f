//! Where the time of a start went (`cluster up`): one clock, cut into consecutive phases, so
//! that the phases add up to the total.

use std::fmt::Write;
use std::time::{Duration, Instant};

/// One phase of a start and how long it took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Phase {
    /// A short, stable name (also the key in JSON): `checks`, `network`, `credentials`,
    /// `files`, `spawn`, `answering`, `links`.
    pub name: &'static str,
    pub took: Duration,
}

/// A clock started once and cut into phases, each from the end of the one before.
#[derive(Clone, Debug)]
pub struct Phases {
    started: Instant,
    last: Instant,
    done: Vec<Phase>,
}

impl Phases {
    /// The clock, started now.
    pub fn start() -> Phases {
        let now = Instant::now();
        Phases {
            started: now,
            last: now,
            done: Vec::new(),
        }
    }

    /// When the clock started.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// End the current phase now, as `name`.
    pub fn end(&mut self, name: &'static str) {
        self.end_at(name, Instant::now());
    }

    /// End the current phase at `at` (seen earlier, say by a wait that goes on), as `name`. An
    /// instant before the end of the phase before makes an empty phase.
    pub fn end_at(&mut self, name: &'static str, at: Instant) {
        let at = at.max(self.last);
        self.done.push(Phase {
            name,
            took: at - self.last,
        });
        self.last = at;
    }

    /// The phases ended so far, in order.
    pub fn list(&self) -> &[Phase] {
        &self.done
    }

    /// From the start to the end of the last phase: the sum of the phases.
    pub fn total(&self) -> Duration {
        self.last - self.started
    }

    /// One line: each phase with its seconds, `credentials 0.21 s, files 0.10 s, ...`.
    pub fn line(&self) -> String {
        let mut line = String::new();
        for (i, phase) in self.done.iter().enumerate() {
            let comma = if i == 0 { "" } else { ", " };
            let _ = write!(
                line,
                "{comma}{} {:.2} s",
                phase.name,
                phase.took.as_secs_f64()
            );
        }
        line
    }

    /// `{"total_s": .., "phases": [{"name": .., "s": ..}, ..]}`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "total_s": self.total().as_secs_f64(),
            "phases": self.done.iter().map(|p| serde_json::json!({
                "name": p.name, "s": p.took.as_secs_f64(),
            })).collect::<Vec<_>>(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_phases_are_consecutive_and_add_up_to_the_total() {
        let mut phases = Phases::start();
        std::thread::sleep(Duration::from_millis(5));
        phases.end("checks");
        let seen = Instant::now();
        std::thread::sleep(Duration::from_millis(5));
        phases.end_at("spawn", seen);
        phases.end("links");
        let names: Vec<_> = phases.list().iter().map(|p| p.name).collect();
        assert_eq!(names, ["checks", "spawn", "links"]);
        let sum: Duration = phases.list().iter().map(|p| p.took).sum();
        assert_eq!(sum, phases.total());
        assert!(phases.list()[0].took >= Duration::from_millis(5));
        assert!(phases.list()[2].took >= Duration::from_millis(5));
        assert!(phases.total() <= phases.started().elapsed());
    }

    #[test]
    fn an_instant_before_the_last_phase_ends_an_empty_one() {
        let mut phases = Phases::start();
        let early = Instant::now();
        std::thread::sleep(Duration::from_millis(2));
        phases.end("checks");
        phases.end_at("answering", early);
        assert_eq!(phases.list()[1].took, Duration::ZERO);
        assert_eq!(phases.total(), phases.list()[0].took);
    }

    #[test]
    fn the_line_and_the_json_name_every_phase() {
        let phases = Phases {
            started: Instant::now(),
            last: Instant::now(),
            done: vec![
                Phase {
                    name: "credentials",
                    took: Duration::from_millis(210),
                },
                Phase {
                    name: "spawn",
                    took: Duration::from_millis(4_004),
                },
            ],
        };
        assert_eq!(phases.line(), "credentials 0.21 s, spawn 4.00 s");
        let json = phases.to_json();
        assert_eq!(json["phases"][1]["name"], "spawn");
        assert_eq!(json["phases"][0]["s"], 0.21);
    }
}
