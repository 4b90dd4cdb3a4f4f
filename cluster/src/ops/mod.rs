//! Operating: the operator's client of a running cluster, and what it asks the nodes through
//! the control API. Imports only the launching room below it.
//!
//! * [`cluster_client`]: a client of the whole cluster: requests, statuses, links up;
//! * [`ready`]: the one readiness wait: every node answering, every link up;
//! * [`up`]: the end of a start, its readiness wait, and the wait on a running cluster;
//! * [`traffic`]: sending sets through a cluster and collecting delivery reports;
//! * [`open_loop`]: sending on a schedule whatever the cluster does, each set's latency from
//!   when it was due;
//! * [`ping`]: `ping`, rounds of small traced sets, and each path's one-way time;
//! * [`route`]: `show route`, a pair's k paths and each hop's link state;
//! * [`monitor`]: following the nodes' notices (links, deliveries, drops, faults) as one stream;
//! * [`view`]: `cluster view`, the live page of a cluster (HTTP, server-sent events);
//! * [`revoke`]: `cluster revoke`, taking a node out of the cluster with a CA-signed list;
//! * [`shaping`]: delay, jitter, reordering and duplication of datagrams between real daemons,
//!   set and removed through the control API;
//! * [`percentiles`]: the one summary of a latency sample, which the chaos runs and the
//!   benchmarks share.

pub mod cluster_client;
pub mod monitor;
pub mod names;
pub mod open_loop;
pub mod percentiles;
pub mod ping;
pub mod ready;
pub mod revoke;
pub mod route;
pub mod shaping;
pub mod traffic;
pub mod up;
pub mod view;
