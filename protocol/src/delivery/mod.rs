//! The delivery layer: what the source and the destination of a message set do beyond routing,
//! so that a set arrives once, whole, unread and unforged as its [`Mode`] promises. Relays never
//! look at it. Pure logic: time and random bytes are passed in.

pub mod mode;

pub use mode::{Mode, ModeError, Scheme};
