//! cuberoute-cluster: everything around a set of daemons. It generates a cluster (the CA, the
//! certificates, the manifest, one configuration per node), starts and stops the daemons as
//! local processes, and watches them through the control API. It makes no routing decision.
//!
//! * [`bench`]: latency, throughput, memory and wake-ups of a running cluster, and the raw-quinn
//!   baseline; [`relay_ring`]: the baseline of a cluster's size, a ring of raw relay processes;
//! * [`capacity`]: how many daemons this machine holds (memory, processes), and why not more;
//! * [`chaos`]: the chaos run: traffic, faults on a seeded schedule, the report;
//! * [`certs`]: the cluster CA and the certificates it issues;
//! * [`layout`]: the files of a cluster directory;
//! * [`generate`]: writing a cluster directory for a topology and an addressing;
//! * [`local`]: local daemon processes: start, stop, signal;
//! * [`netns`]: `cluster up --netns`, a network namespace per node on a bridge: make, remove,
//!   enter;
//! * [`percentiles`]: the one summary of a latency sample;
//! * [`quiet`]: the daemons' memory after a burst and after 30 s of quiet;
//! * [`phases`]: where the time of `cluster up` went, phase by phase;
//! * [`placement`]: which host each node runs on over several hosts, and what a lost host costs;
//! * [`client`]: a client of the whole cluster: requests, statuses, links up;
//! * [`monitor`]: following the nodes' notices (links, deliveries, drops, faults) as one stream;
//! * [`report`]: a run's report as one self-contained HTML page with SVG charts, and its JSON;
//! * [`revoke`]: `cluster revoke`, taking a node out of the cluster with a CA-signed list;
//! * [`traffic`]: sending sets through a cluster and collecting delivery reports;
//! * [`shaping`]: delay, jitter, reordering and duplication of datagrams between real daemons
//!   (the daemons' user-space shaper), set and removed through the control API;
//! * [`sim`]: `cuberoute sim`, a whole cluster of real daemons on turmoil's simulated network;
//! * [`swarm`]: `cluster swarm`, one container per node over the hosts of a Docker Swarm: the
//!   stack file (configs, secrets, placement), its tasks as runners, taking it down;
//! * [`testbed`]: `cuberoute testbed`, a Docker Swarm of several engines on one machine, each
//!   host a network namespace of its own: make, cut and restore a host's link, take down;
//! * [`timeline`]: what a run's report draws: every set and every fault window on one clock;
//! * [`usage`]: CPU time, RSS and PSS of daemon processes, from `/proc`;
//! * [`view`]: `cluster view`, the live page of a cluster (HTTP, server-sent events).

pub mod bench;
pub mod chaos;
pub mod launch;
pub mod ops;

pub use launch::generate::{Addressing, Ports};
pub use launch::layout::ClusterDir;
pub use ops::cluster_client::ClusterClient;
