//! The chaos run: traffic through a cluster while faults are injected on a seeded schedule, and
//! what the protocol did, judged and reported; on real processes and containers, or on a whole
//! cluster simulated in this process. Imports the launching and operating rooms below it, never
//! the benchmarks.
//!
//! * [`around`]: routing around crashes and cuts, judged: when every live node knew, and the
//!   sets before, until then and after, against the max flow of the live graph;
//! * [`run`]: running: three phases, the faults of the schedule injected and undone, step by
//!   step;
//! * [`load`]: the run's traffic, sets between random pairs on one schedule from its start to
//!   its end, the pairs and the judging following the phase;
//! * [`judge`]: judging: what each set became, what else reached the clients (the sweep of
//!   every output), what relays captured, leaked and forged, what a lost host cost;
//! * [`report`]: reporting: the totals a run's report gives, and its timeline;
//! * [`scenario`]: what a run is given (`RunConfig`), its live progress, and the `Harness` it
//!   acts through (processes and containers, or the simulation);
//! * [`schedule`]: the fault schedule, a pure function of the seed: which nodes crash, which
//!   links are cut, which relays capture or forge, the partition;
//! * [`netfault`]: the faults of the network itself on real nodes (nftables loss and
//!   partitions, the daemons' shaper for delay);
//! * [`ends`]: `--faults crash-ends`: the ends of sets killed and restarted, and what reached
//!   their clients;
//! * [`redundancy`]: `chaos study`, sets over k paths against one under loss and delay;
//! * [`sim`]: `cuberoute sim`, a whole cluster of real daemons on turmoil's simulated network;
//! * [`timeline`]: what a run's report page draws: every set and every fault window on one
//!   clock;
//! * [`page`]: a run's report as one self-contained HTML page with SVG charts, and its JSON.

pub mod around;
pub mod ends;
pub mod judge;
pub mod load;
pub mod netfault;
pub mod page;
pub mod redundancy;
pub mod report;
pub mod run;
pub mod scenario;
pub mod schedule;
pub mod sim;
pub mod timeline;
pub mod verdict;
