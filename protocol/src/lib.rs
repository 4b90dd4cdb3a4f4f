//! cuberoute-protocol: the sans-IO, deterministic core of cuberoute, in six layers, each a
//! folder that imports only the layers below it (`tests/layers.rs` checks it):
//!
//! 1. [`topology`]: node ids, the five families (Q_n, EH(s,t), HHC, the metacube, the recursive
//!    dual-net) behind [`Topology`], and their facts: neighbours, distance, connectivity;
//! 2. [`paths`]: the disjoint-path algorithms behind one interface ([`paths::PathSystem`],
//!    [`paths::PathError`]) and one table ([`paths::table`]): the guarded-action protocol's
//!    construction on Q_n and EH (the source's [`map()`], the per-hop rule decidePhase and
//!    nextPos, the walk of the k paths), the Q_n algorithms of the Bossard thesis and of Bossard
//!    and Kaneko, and the seed families' algorithms;
//! 3. [`routing`]: what the nodes do with a message, one front door for both routing modes: a
//!    request becomes its routes and first packets at the source, [`hop()`] decides at every
//!    node; the header, the paper's process variables, and a round-based simulator;
//! 4. [`delivery`]: the source's and the destination's side of a delivery mode (reliable,
//!    erasure-coded, secret-shared, forgery-tolerant), above routing and blind to it;
//! 5. [`seal`]: end-to-end sealing, HPKE pair keys bound to node ids, so that only a message's
//!    destination reads it and only its source could have sent it;
//! 6. [`wire`]: the frame codec and what travels in frames.
//!
//! No I/O, no clock, no threads: the daemon does those.

// EH ids are written grouped as a_b_c in tests and docs, which is the point of the grouping.
#![cfg_attr(test, allow(clippy::unusual_byte_groupings))]

pub mod delivery;
pub mod paths;
pub mod routing;
pub mod seal;
pub mod topology;
pub mod wire;

pub use paths::guarded::disjoint_paths;
pub use paths::guarded::map::{MapError, Plan, map};
pub use paths::guarded::route::Anchors;
pub use paths::system::PathSet;
pub use routing::header::Header;
pub use routing::hop::{Action, DropReason, flush_bound, hop};
pub use routing::packet::{Packet, Route, RouteKind, SourceRoute};
pub use routing::process::{Process, ProcessVars};
pub use routing::request::{Routes, SendError, SendRequest};
pub use topology::node::{NodeId, ParseNodeError, parse_node_id};
pub use topology::{NodeError, ParseTopologyError, Topology};
