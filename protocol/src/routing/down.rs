//! What a node knows of dead links: its own links' verdicts and those its neighbours pass on,
//! as [`Report`]s, kept in a bounded [`DownTable`] that a source reads for
//! [`Routes::around`](super::request::Routes::around).
//!
//! A report says that one end of a link (the reporter) took it for down or up, with a stamp
//! that grows with every report the reporter makes. For each (reporter, subject) only the
//! newest report counts, so a report met again (it floods over every link, and comes back) or an
//! older one overtaken on another way is known and not passed on: each report crosses each link
//! at most once each way. A link is dead while either end's newest report says down. Every entry
//! is forgotten [`DownLimits::keep_us`] after it was last heard (its reporter says a down again
//! every third of that while it holds), so whatever the table holds (a report lost, a reporter
//! that died with its link down, a corrupted entry) is gone within that time: the table is
//! self-stabilizing, and it is only read at the source, to choose routes.
//!
//! Sans-IO: the caller passes the time in.

use crate::NodeId;
use crate::paths::live::{Faults, Kept};
use crate::topology::Topology;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// One end's verdict on one of its links.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Report {
    /// The end that decided.
    pub reporter: NodeId,
    /// The neighbour at the other end.
    pub subject: NodeId,
    pub down: bool,
    /// Grows with every report of the reporter's (its wall clock in microseconds, or more).
    pub stamp: u64,
}

/// How long reports are kept, and how many.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct DownLimits {
    /// Forget an entry this long after it was last heard.
    pub keep_us: u64,
    /// At most this many entries (reports of up included).
    pub max_entries: usize,
    /// The news of dead links has settled when none was newly dead for this long: until then a
    /// source keeps the paths they leave whole ([`DownLimits::kept`]).
    pub settle_us: u64,
}

impl Default for DownLimits {
    fn default() -> Self {
        DownLimits {
            keep_us: 30_000_000,
            max_entries: 4096,
            // A lost host's links are taken for dead by each neighbour on its own clock, within
            // about a detection time (1 to 3 s by default) of one another.
            settle_us: 2_000_000,
        }
    }
}

impl DownLimits {
    /// Whether a source may move the paths the known faults leave whole to reach the max flow
    /// (`Kept::MayMove`), when a link was last newly dead at `grew_us` (`None`: never). Not
    /// while news is coming in: the faults heard of may be a part of one event (a node or a
    /// host lost), and the rest are on nodes the source knows nothing of yet, where a moved
    /// path would take a copy the faults left alone.
    pub fn kept(&self, grew_us: Option<u64>, now_us: u64) -> Kept {
        match grew_us {
            Some(grew) if now_us.saturating_sub(grew) < self.settle_us => Kept::Stay,
            _ => Kept::MayMove,
        }
    }

    /// How often a reporter says again that a link it holds down is down.
    pub fn repeat_us(&self) -> u64 {
        self.keep_us / 3
    }
}

/// What became of a report.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Taken {
    /// Newer than anything known from its reporter about that link: kept, to pass on.
    New,
    /// Known, or older than what is known: not passed on.
    Known,
    /// Not a link of the topology: refused (a malformed report).
    NotALink,
    /// The table is full: refused, counted by the caller.
    Full,
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    down: bool,
    stamp: u64,
    heard_us: u64,
}

/// The newest report per (reporter, subject), bounded.
#[derive(Debug)]
pub struct DownTable {
    topology: Topology,
    limits: DownLimits,
    entries: HashMap<(NodeId, NodeId), Entry>,
    /// The dead links the entries say, kept as each entry changes: a report costs a lookup or
    /// two, not a pass over the table (on 2,048 daemons with a thousand links taken for dead,
    /// rebuilding it at every report took most of the machine).
    faults: Faults,
    /// Grows whenever the set of dead links may have changed.
    generation: u64,
    /// When a link was last newly dead.
    grew_us: Option<u64>,
}

impl DownTable {
    pub fn new(topology: Topology, limits: DownLimits) -> DownTable {
        DownTable {
            topology,
            limits,
            entries: HashMap::new(),
            faults: Faults::new(),
            generation: 0,
            grew_us: None,
        }
    }

    pub fn limits(&self) -> DownLimits {
        self.limits
    }

    /// Take a report heard at `now_us` (from a neighbour, or made here).
    pub fn take(&mut self, report: Report, now_us: u64) -> Taken {
        let Report {
            reporter,
            subject,
            down,
            stamp,
        } = report;
        if !self.topology.contains(reporter)
            || !self.topology.contains(subject)
            || !self.topology.is_adjacent(reporter, subject)
        {
            return Taken::NotALink;
        }
        let key = (reporter, subject);
        match self.entries.get_mut(&key) {
            Some(entry) if entry.stamp >= stamp => return Taken::Known,
            Some(entry) => {
                if entry.down != down {
                    self.generation += 1;
                }
                *entry = Entry {
                    down,
                    stamp,
                    heard_us: now_us,
                };
            }
            None => {
                // Only a full table is looked over for what to forget; the timer forgets
                // the rest ([`DownTable::expire`]).
                if self.entries.len() >= self.limits.max_entries {
                    self.expire(now_us);
                }
                if self.entries.len() >= self.limits.max_entries {
                    return Taken::Full;
                }
                if down {
                    self.generation += 1;
                }
                self.entries.insert(
                    key,
                    Entry {
                        down,
                        stamp,
                        heard_us: now_us,
                    },
                );
            }
        }
        if self.relink(reporter, subject) {
            self.grew_us = Some(now_us);
        }
        Taken::New
    }

    /// The link between `a` and `b` in [`DownTable::faults`] as its entries say: dead while
    /// either end's newest report says down. Whether it is newly dead.
    fn relink(&mut self, a: NodeId, b: NodeId) -> bool {
        if self.says_down(a, b) || self.says_down(b, a) {
            let new = !self.faults.blocks(a, b);
            self.faults.link(a, b);
            new
        } else {
            self.faults.unlink(a, b);
            false
        }
    }

    /// Forget what was last heard more than [`DownLimits::keep_us`] before `now_us`.
    pub fn expire(&mut self, now_us: u64) {
        let keep = self.limits.keep_us;
        let before = self.entries.len();
        let mut lost_down = Vec::new();
        self.entries.retain(|&key, e| {
            let kept = now_us.saturating_sub(e.heard_us) <= keep;
            if !kept && e.down {
                lost_down.push(key);
            }
            kept
        });
        for &(a, b) in &lost_down {
            self.relink(a, b);
        }
        if !lost_down.is_empty() || (before != self.entries.len() && self.entries.is_empty()) {
            self.generation += 1;
        }
    }

    /// A number that changes whenever the dead links may have: routes chosen at one
    /// generation hold until the next.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The dead links: each link whose newest report from either end says down.
    pub fn faults(&self) -> &Faults {
        &self.faults
    }

    /// When a link was last newly dead (`None`: never).
    pub fn grew_us(&self) -> Option<u64> {
        self.grew_us
    }

    /// Whether a source may move the paths the dead links leave whole, at `now_us`
    /// ([`DownLimits::kept`]).
    pub fn kept(&self, now_us: u64) -> Kept {
        self.limits.kept(self.grew_us, now_us)
    }

    /// Whether the newest report of `reporter` on its link to `subject` says down.
    pub fn says_down(&self, reporter: NodeId, subject: NodeId) -> bool {
        self.entries
            .get(&(reporter, subject))
            .is_some_and(|e| e.down)
    }

    /// Whether `me`'s link to `neighbour`, just up, is worth a report of it: only where a
    /// report of it down may be held somewhere, because `me` reported it down (`said_down`) or a
    /// report held here says so (its other end's, or `me`'s own from before a restart). A link
    /// that comes up for the first time, as every link does when a cluster starts, is reported
    /// by nobody: on 1,024 daemons those reports crossed the links 18.8 million times.
    pub fn up_worth_reporting(&self, me: NodeId, neighbour: NodeId, said_down: bool) -> bool {
        said_down || self.says_down(me, neighbour) || self.says_down(neighbour, me)
    }

    /// Every report held, newest per (reporter, subject): what a neighbour is handed on a new
    /// connection.
    pub fn reports(&self) -> Vec<Report> {
        let mut reports: Vec<Report> = self
            .entries
            .iter()
            .map(|(&(reporter, subject), e)| Report {
                reporter,
                subject,
                down: e.down,
                stamp: e.stamp,
            })
            .collect();
        reports.sort_by_key(|r| (r.reporter, r.subject));
        reports
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(reporter: u64, subject: u64, down: bool, stamp: u64) -> Report {
        Report {
            reporter: NodeId(reporter),
            subject: NodeId(subject),
            down,
            stamp,
        }
    }

    fn table() -> DownTable {
        DownTable::new("q:3".parse().unwrap(), DownLimits::default())
    }

    #[test]
    fn a_link_up_is_reported_only_where_a_down_may_be_held() {
        let mut t = table();
        let (me, n) = (NodeId(0), NodeId(1));
        // At a start nobody holds anything: not worth a report.
        assert!(!t.up_worth_reporting(me, n, false));
        // This node said it down: its up must follow.
        assert!(t.up_worth_reporting(me, n, true));
        // The other end's down is held here, or this node's own from before a restart.
        assert_eq!(t.take(report(1, 0, true, 5), 10), Taken::New);
        assert!(t.up_worth_reporting(me, n, false));
        let mut t = table();
        assert_eq!(t.take(report(0, 1, true, 5), 10), Taken::New);
        assert!(t.up_worth_reporting(me, n, false));
        // An up held is nothing to answer; another link's down neither.
        let mut t = table();
        t.take(report(0, 1, false, 5), 10);
        t.take(report(0, 2, true, 5), 10);
        assert!(!t.up_worth_reporting(me, n, false));
    }

    #[test]
    fn the_newest_report_per_end_counts_and_a_link_is_dead_while_either_end_says_so() {
        let mut t = table();
        assert_eq!(t.take(report(0, 1, true, 10), 0), Taken::New);
        assert_eq!(t.take(report(0, 1, true, 10), 1), Taken::Known, "met again");
        assert_eq!(t.take(report(0, 1, false, 9), 1), Taken::Known, "overtaken");
        assert!(t.faults().blocks(NodeId(1), NodeId(0)));
        assert_eq!(t.take(report(1, 0, true, 3), 2), Taken::New);
        let g = t.generation();
        assert_eq!(t.take(report(0, 1, false, 11), 3), Taken::New);
        assert!(t.generation() > g);
        assert!(
            t.faults().blocks(NodeId(0), NodeId(1)),
            "the other end still says down"
        );
        assert_eq!(t.take(report(1, 0, false, 4), 4), Taken::New);
        assert!(t.faults().is_empty());
    }

    #[test]
    fn paths_whole_may_move_only_once_no_link_was_newly_dead_for_the_settling_time() {
        let mut t = table();
        let settle = t.limits().settle_us;
        assert_eq!(t.kept(0), Kept::MayMove, "nothing heard");
        t.take(report(0, 1, true, 1), 1_000);
        assert_eq!(t.kept(1_000 + settle - 1), Kept::Stay);
        assert_eq!(t.kept(1_000 + settle), Kept::MayMove);
        // Its other end says so too, and it is said again: no news.
        t.take(report(1, 0, true, 1), 5_000);
        t.take(report(0, 1, true, 2), 6_000);
        assert_eq!(t.kept(1_000 + settle), Kept::MayMove);
        // A link back up is no news of the dead; another link down is.
        t.take(report(0, 1, false, 3), 7_000);
        t.take(report(1, 0, false, 2), 7_000);
        assert_eq!(t.kept(1_000 + settle), Kept::MayMove);
        t.take(report(2, 3, true, 1), 8_000);
        assert_eq!(t.kept(8_000 + settle / 2), Kept::Stay);
        assert_eq!(t.grew_us(), Some(8_000));
    }

    #[test]
    fn reports_on_no_link_are_refused() {
        let mut t = table();
        assert_eq!(t.take(report(0, 3, true, 1), 0), Taken::NotALink);
        assert_eq!(t.take(report(0, 8, true, 1), 0), Taken::NotALink);
        assert_eq!(t.take(report(9, 1, true, 1), 0), Taken::NotALink);
        assert!(t.is_empty());
    }

    #[test]
    fn entries_are_forgotten_when_not_heard_again_and_the_table_is_bounded() {
        let limits = DownLimits {
            keep_us: 100,
            max_entries: 2,
            settle_us: 10,
        };
        let mut t = DownTable::new("q:3".parse().unwrap(), limits);
        assert_eq!(t.take(report(0, 1, true, 1), 0), Taken::New);
        assert_eq!(t.take(report(0, 2, true, 1), 50), Taken::New);
        assert_eq!(t.take(report(0, 4, true, 1), 60), Taken::Full);
        // Said again before it is forgotten: kept.
        assert_eq!(t.take(report(0, 1, true, 2), 90), Taken::New);
        t.expire(151);
        assert_eq!(t.len(), 1);
        assert!(t.faults().blocks(NodeId(0), NodeId(1)));
        let g = t.generation();
        t.expire(191);
        assert!(t.is_empty() && t.faults().is_empty());
        assert!(t.generation() > g);
        assert_eq!(t.take(report(0, 4, true, 1), 200), Taken::New);
    }

    #[test]
    fn any_corrupted_table_is_forgotten_within_the_keeping_time() {
        let limits = DownLimits::default();
        let t3: Topology = "q:3".parse().unwrap();
        let mut t = DownTable::new(t3, limits);
        // Whatever was in it, with stamps from anywhere (the far future included).
        for v in t3.nodes() {
            for w in t3.neighbours(v) {
                t.take(report(v.0, w.0, true, u64::MAX - v.0), 5);
            }
        }
        assert!(!t.faults().is_empty());
        t.expire(5 + limits.keep_us + 1);
        assert!(t.faults().is_empty());
        // And the truth is taken again.
        assert_eq!(
            t.take(report(0, 1, false, 1), 5 + limits.keep_us + 2),
            Taken::New
        );
    }

    proptest::proptest! {
        /// The dead links kept as reports come and go are those a pass over the table finds:
        /// each link whose newest report from either end says down.
        #[test]
        fn the_dead_links_kept_are_those_the_entries_say(
            ops in proptest::collection::vec((0u64..8, 0u32..3, proptest::bool::ANY, 0u64..40, 0u64..20), 1..200),
        ) {
            let t3: Topology = "q:3".parse().unwrap();
            let mut t = DownTable::new(t3, DownLimits { keep_us: 30, max_entries: 12, settle_us: 5 });
            let mut now = 0;
            for (v, dim, down, stamp, step) in ops {
                now += step;
                let w = v ^ (1 << dim);
                if step == 0 {
                    t.expire(now);
                } else {
                    t.take(report(v, w, down, stamp), now);
                }
                let mut rebuilt = Faults::new();
                for (&(a, b), e) in &t.entries {
                    if e.down {
                        rebuilt.link(a, b);
                    }
                }
                proptest::prop_assert_eq!(t.faults(), &rebuilt);
            }
        }
    }
}
