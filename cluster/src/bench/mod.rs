//! The benchmarks: what a cluster costs (latency, throughput, CPU and wake-ups per packet-hop,
//! memory, start-up) and the raw quinn baselines it is measured against. Imports the launching
//! and operating rooms below it, never the chaos run.
//!
//! * [`run`]: a bench run: each cluster started, measured and taken down, with the baselines of
//!   the same run; what it found ([`run::Figures`]) and what it does as it goes ([`run::Event`]);
//! * [`measure`]: latency, saturation, the daemons' CPU and wake-ups per packet-hop, what a
//!   set's ends cost apart from its hops;
//! * [`raw_hop`]: the baseline of one hop, a raw quinn stream between two processes;
//! * [`raw_ring`]: the baseline of a cluster's size, a ring of as many raw quinn processes;
//! * [`raw_mesh`]: the baseline of a cluster's graph, a mesh of raw quinn processes on its links;
//! * [`overload`]: open-loop load at a fixed rate, and what the daemons refused and held;
//! * [`memory_after_quiet`]: the daemons' memory after a burst and after 30 s of quiet.

pub mod measure;
pub mod memory_after_quiet;
pub mod overload;
pub mod raw_hop;
pub mod raw_mesh;
pub mod raw_ring;
pub mod run;
