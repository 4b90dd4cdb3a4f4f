//! Routing: what the nodes of a network do with a message, on top of [`crate::paths`] (which
//! says which paths exist) and below [`crate::wire`] (which says how it is written).
//!
//! * [`header`]: the header every message of the guarded-action protocol carries;
//! * [`actions`]: the guarded actions `input` and `receive` as pure functions, the checks and
//!   drop reasons, the paper's process variables, the flush bound B;
//! * [`source_route`]: the source-routed sends (a request meets its algorithm in the table of
//!   [`crate::paths::table`]) and the per-hop check of a source route;
//! * [`sim`]: a round-based simulator of a whole network, the stage for the stabilization tests.

pub mod actions;
pub mod header;
pub mod sim;
pub mod source_route;
