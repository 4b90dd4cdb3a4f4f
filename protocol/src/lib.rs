//! cuberoute-protocol: the sans-IO, deterministic core of cuberoute.
//!
//! * [`Topology`]: Q_n, EH(s,t), HHC, the metacube and the recursive dual-net: node ids and
//!   their facts;
//! * [`map()`]: the source's construction of k disjoint routes;
//! * [`route`]: the per-hop rule (decidePhase, nextPos);
//! * [`actions`]: the guarded actions `input` and `receive` as pure functions;
//! * [`paths`]: the k paths of a pair, by running those actions;
//! * [`sim`]: a round-based simulator of a whole network, for the stabilization properties;
//! * [`wire`]: the frame codec;
//! * [`source_route`]: the stateless per-hop check of a source route (for sends along `cube` paths);
//! * [`cube`]: the thesis's and seed 001's algorithms on Q_n: node-to-set, fault-tolerant
//!   node-to-set, set-to-set, the bit-constrained container, SPR-Gray;
//! * [`hhc`], [`metacube`], [`dualnet`]: the seed topologies of issue 7 and their papers'
//!   disjoint-path algorithms (HHC-N2S, HHC-iN2S, HHC-S2S, MC-N2N, MC-N2S, RDN N2S);
//! * [`family`]: what those algorithms return and refuse; [`fallback`]: the exact small-instance
//!   solver they fall back to where a paper does not cover a case; [`verify`]: the check every
//!   path system passes before it is returned.
//!
//! No I/O, no clock, no threads: the daemon does those.

// EH ids are written grouped as a_b_c in tests and docs, which is the point of the grouping.
#![cfg_attr(test, allow(clippy::unusual_byte_groupings))]

pub mod actions;
pub mod bfs;
pub mod cube;
pub mod dualnet;
pub mod exchanged;
pub mod fallback;
pub mod family;
pub mod header;
pub mod hhc;
pub mod hypercube;
pub mod map;
pub mod metacube;
pub mod node;
pub mod optimum;
pub mod paths;
pub mod route;
pub mod sim;
pub mod source_route;
pub mod topology;
pub mod tour;
pub mod verify;
pub mod wire;

pub use actions::{Action, DropReason, InputError, Packet, Process, ProcessVars, input, receive};
pub use header::{Anchors, Header};
pub use map::{MapError, Plan, map};
pub use node::{NodeId, ParseNodeError, parse_node_id};
pub use paths::{PathSet, disjoint_paths};
pub use topology::{NodeError, ParseTopologyError, Topology};
