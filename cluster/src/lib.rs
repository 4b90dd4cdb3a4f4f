//! cuberoute-cluster: everything around a set of daemons. It generates a cluster (the CA, the
//! certificates, the manifest, one configuration per node), starts and stops the daemons on
//! every backend, talks to them through the control API, runs chaos and benchmarks against
//! them. It makes no routing decision.
//!
//! Four rooms, one folder each; imports go one way, from the top down, and never between the
//! two rooms on top (`cluster/tests/rooms.rs` checks it):
//!
//! ```text
//!   chaos/  the chaos run, its judging, report,      bench/  latency, throughput, CPU and
//!           simulation and report page                       memory; raw quinn baselines
//!                        \                               /
//!   ops/    the operator's client of a running cluster: statuses, readiness, traffic, ping,
//!           route, monitor, view, revocation, shaping
//!                                     |
//!   launch/ starting and stopping daemons on every backend: certificates, the cluster
//!           directory, processes, namespaces, compose, Kubernetes, Swarm, testbed, runners
//! ```
//!
//! * [`launch`]: what a cluster starts from and what runs it;
//! * [`ops`]: the client of a running cluster and what it asks the nodes;
//! * [`chaos`]: the chaos run and everything only it uses;
//! * [`bench`](mod@bench): the benchmarks and their raw quinn baselines.
//!
//! Each room's `mod.rs` lists its modules. The root re-exports the names most callers want:
//! [`ClusterDir`], [`Addressing`], [`Ports`] and [`ClusterClient`].

pub mod launch;
pub mod ops;

pub mod bench;
pub mod chaos;

pub use launch::generate::{Addressing, Ports};
pub use launch::layout::ClusterDir;
pub use ops::cluster_client::ClusterClient;
