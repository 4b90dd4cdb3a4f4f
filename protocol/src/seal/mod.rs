//! End-to-end sealing: what a message's payload looks like to everyone but its two ends.
//!
//! Every node has a static key pair of HPKE's X25519 KEM (RFC 9180), bound to its id by the
//! cluster CA (the daemon's key directory). For a pair of nodes the sender runs HPKE in its
//! authenticated mode once (`SetupAuthS`: only the holder of the sender's private key and the
//! receiver's can derive the result) and exports a 32-byte pair key from the context; every
//! message then costs one ChaCha20-Poly1305 seal under that key with an explicit nonce (a counter
//! per pair), since messages of one pair cross k paths and arrive out of order, which HPKE's own
//! sequence-numbered contexts do not allow. The receiver derives the same key from the
//! encapsulated key the message carries (`SetupAuthR`) and caches it.
//!
//! The seal binds every clear field the destination acts on (source, destination, copy index,
//! sequence id, send time, the message's flags) as associated data, and the sealer's id, the
//! time of sealing and the nonce; the payload (a piece's envelope, with its mode, k, index,
//! length and fingerprints, or a plain copy) is the ciphertext. Coding and secret sharing
//! happen before sealing, so their guarantees never depend on keys. Routing headers stay
//! readable: relays need them.
//!
//! Pure state, like the rest of this crate: the caller passes the time and 32 fresh random bytes
//! whenever a new pair needs them.

pub mod keys;
pub mod pair;
pub mod replay;
pub mod sealed;
