//! The delivery layer: what the source and the destination of a message set do beyond routing,
//! so that a set arrives once, whole, unread and unforged as its [`Mode`] promises. Relays never
//! look at it. Pure logic: time and random bytes are passed in.
//!
//! - [`mode`]: the mode of a set (scheme and reliability), checked against k;
//! - [`envelope`]: what an enveloped message carries, a [`Piece`] or an acknowledgement;
//! - [`encode`]: a payload into its k pieces and back ([`pieces`], [`rebuild`]);
//! - [`inbox`]: the destination, collecting pieces until a set is whole, once;
//! - [`outbox`]: the source, keeping reliable sets until acknowledged and timing resends;
//! - [`writing`]: the destination's sets being written to its store, acknowledged once durable.

pub mod encode;
pub mod envelope;
pub mod inbox;
pub mod mode;
pub mod outbox;
pub mod writing;

pub use encode::{
    EncodeError, MAX_CODED_PAYLOAD, MAX_PIECE_LEN, RebuildError, Rebuilt, is_well_formed,
    max_payload, pieces, rebuild, wire_bytes,
};
pub use envelope::{Envelope, EnvelopeError, Piece, SetKey, Shape};
pub use inbox::{Failure, Inbox, InboxLimits, Received};
pub use mode::{Mode, ModeError, Scheme};
pub use outbox::{Acknowledgeable, Outbox, OutboxFull, OutboxLimits, RoundTrip, Settlement};
pub use writing::Writing;
