//! What this node knows of dead links, carried out: the protocol's
//! [`DownTable`](cuberoute_protocol::routing::down::DownTable) behind a lock, fed by this node's
//! own links going down and up ([`Down::own`]) and by the reports its neighbours pass on
//! ([`Down::take`]); the routes a source takes around the dead links it knows of
//! ([`Down::around`], asked once per destination and generation of the table, then cached); and
//! the timer that forgets old reports and says again which of this node's links are still down.
//! Which reports are new, and which routes go around, is decided in the protocol crate.

use crate::env::now_us;
use cuberoute_protocol::paths::live::{Faults, Kept};
use cuberoute_protocol::routing::down::{DownLimits, DownTable, Report, Taken};
use cuberoute_protocol::wire::control::AroundStatus;
use cuberoute_protocol::{NodeId, Routes, Topology};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;

/// At most this many destinations' rerouted routes are cached; a full cache starts again.
const CACHED_ROUTES: usize = 4096;
/// The dead links are published to the sources at most this often: a flood of reports (a
/// thousand links taken for dead on 2,048 daemons) costs a copy of them per interval, not per
/// report.
const PUBLISH_EVERY_US: u64 = 50_000;

/// What the table did with reports, for the metrics.
#[derive(Default, Debug)]
pub struct DownCounters {
    pub reports_new: AtomicU64,
    pub reports_known: AtomicU64,
    pub reports_not_a_link: AtomicU64,
    pub reports_full: AtomicU64,
    /// Sets (and resends, and acknowledgements) sent on routes around dead links.
    pub sets_rerouted: AtomicU64,
}

pub struct Down {
    topology: Topology,
    me: NodeId,
    table: Mutex<DownTable>,
    /// The table's generation, as last changed.
    generation: AtomicU64,
    /// When a link was last newly dead (µs; 0: never), as the table last said.
    grew_us: AtomicU64,
    limits: DownLimits,
    /// The dead links as last published for the sources: at a generation, at a time (µs).
    faults: Mutex<(u64, u64, Arc<Faults>)>,
    /// This node's links it took for down, still down, and when that was last said: said again
    /// every [`DownLimits::repeat_us`].
    own_down: Mutex<BTreeMap<NodeId, u64>>,
    last_stamp: AtomicU64,
    routes: Mutex<RouteCache>,
    /// Whether sources route around what is known (`liveness.route_around`); the table is kept
    /// and passed on either way.
    enabled: bool,
    /// Wakes the timer: the table has something to forget or say again.
    wake: Notify,
    pub counters: DownCounters,
}

#[derive(Default)]
struct RouteCache {
    /// The table's generation, and whether the paths the dead links leave whole may move.
    generation: (u64, Kept),
    /// (destination, single, split) -> the routes around, or none needed.
    routes: HashMap<(NodeId, bool, bool), Option<Routes>>,
}

impl Down {
    pub fn new(topology: Topology, me: NodeId, limits: DownLimits, enabled: bool) -> Down {
        Down {
            topology,
            me,
            table: Mutex::new(DownTable::new(topology, limits)),
            generation: AtomicU64::new(0),
            grew_us: AtomicU64::new(0),
            limits,
            faults: Mutex::new((0, 0, Arc::new(Faults::new()))),
            own_down: Mutex::new(BTreeMap::new()),
            last_stamp: AtomicU64::new(0),
            routes: Mutex::new(RouteCache::default()),
            enabled,
            wake: Notify::new(),
            counters: DownCounters::default(),
        }
    }

    /// A stamp larger than any this node gave before: its wall clock, or one more.
    fn stamp(&self) -> u64 {
        let now = now_us();
        let last = self.last_stamp.fetch_max(now, Relaxed);
        if last >= now {
            self.last_stamp.fetch_add(1, Relaxed) + 1
        } else {
            now
        }
    }

    /// This node's link to `neighbour` went down or up: the report to pass to every neighbour,
    /// if any. An up is reported only where a down of the link may be held
    /// ([`DownTable::up_worth_reporting`]).
    pub fn own(&self, neighbour: NodeId, down: bool) -> Option<Report> {
        let said_down = {
            let mut own = self.own_down.lock().expect("down lock");
            if down {
                own.insert(neighbour, now_us());
                true
            } else {
                own.remove(&neighbour).is_some()
            }
        };
        if !down
            && !self
                .table
                .lock()
                .expect("down lock")
                .up_worth_reporting(self.me, neighbour, said_down)
        {
            return None;
        }
        let report = Report {
            reporter: self.me,
            subject: neighbour,
            down,
            stamp: self.stamp(),
        };
        (self.take(report) == Taken::New).then_some(report)
    }

    /// Whether `report`, taken new, is this node's own from before a restart that says a link
    /// down which this node holds up: to be answered by a report of it up.
    pub fn refutes(&self, report: &Report) -> bool {
        report.reporter == self.me
            && report.down
            && !self
                .own_down
                .lock()
                .expect("down lock")
                .contains_key(&report.subject)
    }

    /// A report from a neighbour (or made here): what became of it, counted.
    pub fn take(&self, report: Report) -> Taken {
        let taken = {
            let mut table = self.table.lock().expect("down lock");
            let taken = table.take(report, now_us());
            self.refresh(&table);
            taken
        };
        let counter = match taken {
            Taken::New => &self.counters.reports_new,
            Taken::Known => &self.counters.reports_known,
            Taken::NotALink => &self.counters.reports_not_a_link,
            Taken::Full => &self.counters.reports_full,
        };
        counter.fetch_add(1, Relaxed);
        if taken == Taken::New {
            self.wake.notify_one();
        }
        taken
    }

    /// Note the table's generation: its dead links are published when next asked for.
    fn refresh(&self, table: &DownTable) {
        self.generation.store(table.generation(), Relaxed);
        self.grew_us.store(table.grew_us().unwrap_or(0), Relaxed);
    }

    /// The dead links known (and their generation): published again if the table's generation
    /// moved, unless they were within [`PUBLISH_EVERY_US`].
    fn published(&self) -> (u64, Arc<Faults>) {
        let generation = self.generation.load(Relaxed);
        let now = now_us();
        {
            let faults = self.faults.lock().expect("down lock");
            if faults.0 == generation || now.saturating_sub(faults.1) < PUBLISH_EVERY_US {
                return (faults.0, faults.2.clone());
            }
        }
        let (generation, fresh) = {
            let table = self.table.lock().expect("down lock");
            (table.generation(), Arc::new(table.faults().clone()))
        };
        let mut faults = self.faults.lock().expect("down lock");
        *faults = (generation, now, fresh.clone());
        (generation, fresh)
    }

    /// Every report held: what a neighbour is handed on a new connection.
    pub fn reports(&self) -> Vec<Report> {
        self.table.lock().expect("down lock").reports()
    }

    /// The dead links known now (within [`PUBLISH_EVERY_US`]).
    pub fn faults(&self) -> Arc<Faults> {
        self.published().1
    }

    /// `routes` around the dead links known now: the protocol's
    /// [`Routes::around`](cuberoute_protocol::Routes::around), the paths they leave whole kept
    /// while the news settles ([`DownLimits::kept`]), asked once per destination, generation
    /// and settling; unchanged when nothing is dead on them.
    pub fn around(&self, routes: &Routes) -> Option<Routes> {
        if !self.enabled {
            return None;
        }
        let (generation, faults) = self.published();
        if faults.is_empty() {
            return None;
        }
        let grew = Some(self.grew_us.load(Relaxed)).filter(|&us| us > 0);
        let generation = (generation, self.limits.kept(grew, now_us()));
        let dst = *routes.destinations().first()?;
        let key = (dst, routes.is_single(), routes.is_split());
        {
            let mut cache = self.routes.lock().expect("down lock");
            if cache.generation != generation || cache.routes.len() >= CACHED_ROUTES {
                cache.generation = generation;
                cache.routes.clear();
            }
            if let Some(cached) = cache.routes.get(&key) {
                return cached.clone();
            }
        }
        let around = routes.around(self.topology, &faults, generation.1);
        let mut cache = self.routes.lock().expect("down lock");
        if cache.generation == generation {
            cache.routes.insert(key, around.clone());
        }
        around
    }

    /// Forget old reports; the reports of this node's links still down that are due to be said
    /// again, made again, to pass on. Then how long until this is due again (`None`: nothing
    /// is held, and only a new report starts the timer again).
    pub fn tick(&self) -> (Vec<Report>, Option<Duration>) {
        let now = now_us();
        let limits = {
            let mut table = self.table.lock().expect("down lock");
            table.expire(now);
            self.refresh(&table);
            table.limits()
        };
        let due: Vec<NodeId> = self
            .own_down
            .lock()
            .expect("down lock")
            .iter()
            .filter(|(_, said)| now.saturating_sub(**said) >= limits.repeat_us())
            .map(|(n, _)| *n)
            .collect();
        let again = due
            .into_iter()
            .filter_map(|neighbour| self.own(neighbour, true))
            .collect();
        let held = !self.table.lock().expect("down lock").is_empty();
        (
            again,
            held.then(|| Duration::from_micros(limits.repeat_us() / 2)),
        )
    }

    /// Wait until the table needs a tick: `after` (if something is held), else a new report.
    pub async fn wait(&self, after: Option<Duration>) {
        match after {
            Some(after) => tokio::time::sleep(after).await,
            None => self.wake.notified().await,
        }
    }

    /// What [`AroundStatus`] says of this node.
    pub fn status(&self) -> AroundStatus {
        let c = &self.counters;
        AroundStatus {
            dead_links: self.faults().links().collect(),
            reports_held: self.held() as u64,
            reports_new: c.reports_new.load(Relaxed),
            reports_known: c.reports_known.load(Relaxed),
            reports_not_a_link: c.reports_not_a_link.load(Relaxed),
            reports_full: c.reports_full.load(Relaxed),
            sets_rerouted: c.sets_rerouted.load(Relaxed),
        }
    }

    /// How many entries the table holds.
    pub fn held(&self) -> usize {
        self.table.lock().expect("down lock").len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn down(me: u64) -> Down {
        Down::new(
            "q:3".parse().unwrap(),
            NodeId(me),
            DownLimits::default(),
            true,
        )
    }

    #[test]
    fn links_up_at_a_start_are_not_reported_and_a_down_is_followed_by_its_up() {
        let d = down(0);
        assert_eq!(
            d.own(NodeId(1), false),
            None,
            "first up: nobody holds a down"
        );
        let gone = d.own(NodeId(1), true).expect("a down is reported");
        assert!(gone.down);
        let back = d.own(NodeId(1), false).expect("its up follows");
        assert!(!back.down && back.stamp > gone.stamp);
        // The other end's down held here: this end's up is reported too.
        let d = down(0);
        d.take(Report {
            reporter: NodeId(2),
            subject: NodeId(0),
            down: true,
            stamp: 1,
        });
        assert!(d.own(NodeId(2), false).is_some());
    }

    #[test]
    fn a_down_of_this_node_from_before_a_restart_is_refuted_only_while_not_held_down() {
        let old = Report {
            reporter: NodeId(0),
            subject: NodeId(4),
            down: true,
            stamp: 1,
        };
        let d = down(0);
        assert_eq!(d.take(old), Taken::New);
        assert!(d.refutes(&old), "this process never took 0-4 down");
        let up = d.own(NodeId(4), false).expect("the refutation");
        assert!(!up.down && up.stamp > old.stamp);
        assert!(d.own(NodeId(4), true).is_some());
        assert!(!d.refutes(&old), "held down now");
        assert!(
            !d.refutes(&Report {
                reporter: NodeId(4),
                subject: NodeId(0),
                ..old
            }),
            "another node's report"
        );
    }

    #[test]
    fn the_dead_links_reach_the_sources_within_the_publishing_interval() {
        let d = down(0);
        let report = |reporter, subject| Report {
            reporter: NodeId(reporter),
            subject: NodeId(subject),
            down: true,
            stamp: 1,
        };
        assert!(d.faults().is_empty());
        // Nothing published lately: the first report is seen at once.
        d.take(report(2, 3));
        assert!(d.faults().blocks(NodeId(2), NodeId(3)));
        // More within the interval are seen once it has passed, together.
        d.take(report(4, 5));
        d.take(report(6, 7));
        std::thread::sleep(Duration::from_micros(PUBLISH_EVERY_US));
        let faults = d.faults();
        assert!(faults.blocks(NodeId(4), NodeId(5)) && faults.blocks(NodeId(6), NodeId(7)));
        assert_eq!(d.status().dead_links.len(), 3);
    }
}
