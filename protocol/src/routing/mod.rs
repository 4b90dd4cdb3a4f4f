//! Routing: what the nodes of a network do with a message, on top of [`crate::paths`] (which
//! says which paths exist) and below [`crate::wire`] (which says how it is written). One front
//! door for both routing modes:
//!
//! * [`request`]: at the source, one [`request::SendRequest`] (one destination or a set; split,
//!   avoid, constraint) becomes the set's [`request::Routes`] (which routing mode, which
//!   algorithm: decided here only) and its first packets ([`request::Routes::start`]);
//! * [`hop`]: at every node, [`hop::hop`] turns (node, packet, sender) into deliver, forward or
//!   drop, with one [`reason::DropReason`] and one flush bound ([`hop::flush_bound`]);
//! * [`packet`]: the one packet type, its route a guarded [`header::Header`] or a source route;
//! * [`guarded`], [`source`]: the checks of each mode, called by [`hop::hop`];
//! * [`process`]: the paper's process variables, assigned and never read;
//! * [`sim`]: a round-based simulator of a whole network, the stage for the stabilization tests.

pub mod down;
pub mod guarded;
pub mod header;
pub mod hop;
pub mod packet;
pub mod process;
pub mod reason;
pub mod request;
pub mod sim;
pub mod source;
