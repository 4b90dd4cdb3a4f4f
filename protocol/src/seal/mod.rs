//! End-to-end sealing: what a message's payload looks like to everyone but its two ends.
//!
//! Every node has a static key pair of HPKE's X25519 KEM (RFC 9180), bound to its id by the
//! cluster CA (the daemon's key directory). Two nodes seal to each other under a **session**
//! that a handshake of two messages makes (`handshake.rs`): the initiator's Init carries a fresh
//! ephemeral public key, sealed by HPKE's authenticated mode between the static keys; the
//! responder's Resp is sealed by HPKE's authenticated mode from its static key to that
//! ephemeral key, and the session's two keys (one per direction) are exported from it. Each
//! message then costs one ChaCha20-Poly1305 seal under its direction's key with an explicit
//! nonce (a counter per session and direction), since messages cross k paths and arrive out of
//! order, which HPKE's own sequence-numbered contexts do not allow.
//!
//! Sessions are renewed at least every 2 minutes and erased (zeroized) at both ends within 3
//! (`session.rs`, [`session::SessionLimits`]); the ephemeral secret is dropped once its answer
//! opens. So a static key leaked later opens nothing sealed before: forward secrecy. A renewal
//! derives the session's successor from a chain key by HKDF (`ratchet.rs`), at each end on its
//! own, with no message and no key agreement, and erases the chain key it came from; every 30
//! to 60 minutes (`handshake_after`) it is a full handshake instead, whose fresh ephemeral keys end
//! what a chain key stolen from memory could derive. A receiver
//! opens a message only under a session it holds, once (a replay window per session): a session
//! forgotten for any reason (age, memory, a restart) opens nothing again.
//!
//! The seal binds every clear field the destination acts on (source, destination, copy index,
//! sequence id, send time, the message's flags, the attempt) as associated data, and the
//! sealer's id, the session, the time of sealing and the nonce; the payload (a piece's envelope,
//! with its mode, k, index, length and fingerprints, or a plain copy) is the ciphertext. Coding
//! and secret sharing happen before sealing, so their guarantees never depend on keys. Routing
//! headers stay readable: relays need them.
//!
//! Pure state, like the rest of this crate: the caller passes the time and fresh random bytes
//! whenever a handshake needs them.

pub mod handshake;
pub mod keys;
pub mod limit;
pub mod ratchet;
pub mod replay;
pub mod sealed;
pub mod session;
