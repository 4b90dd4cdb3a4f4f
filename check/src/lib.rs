//! cuberoute-check: the protocol's own code model-checked. A model here is a small network whose
//! every step calls the production functions of `cuberoute-protocol` (no copy of them), and
//! stateright explores every interleaving of its steps from every initial configuration it is
//! given, checking properties in every state it reaches. `cuberoute check` runs a model with a
//! budget of states and prints what it explored and every violation with a trace that
//! [`routing::replay`] runs again (a regression test keeps each one).
//!
//! * [`routing`]: the guarded-action protocol on Q_n and EH(s,t) from every corrupted
//!   configuration of bounded buffers: every packet flushed or delivered within the flush
//!   bound B, every genuine copy delivered or dropped only for a full buffer, nothing delivered
//!   that is not a copy of a set, no panic; the longest life measured against B.
//! * [`delivery`]: the delivery layer's outbox, inbox, acknowledgements, resends and replay
//!   checks over a network that loses, duplicates, reorders, delays and replays, with nodes
//!   that crash and restart keeping what their stores keep: no acknowledged set lost, none
//!   handed over twice, no replay opened, every accepted set settled.
//! * [`run`]: running a model within a budget, and the report.
//!
//! docs/verification.md says what is checked, the bounds, what is not, and the figures.

pub mod delivery;
pub mod routing;
pub mod run;

pub use run::{Budget, Report, Violation};
