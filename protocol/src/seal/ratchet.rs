//! A session's successor, derived from it without a key agreement.
//!
//! Every session carries a **chain key** besides its two message keys: the handshake exports it
//! from the same HPKE context (`handshake.rs`), and each successor's chain key, id and message
//! keys are HKDF-SHA256 (ring) expansions of its parent's chain key under distinct labels. Both
//! ends holding a session can so derive the same successor, each on its own, with no message and
//! no key agreement: the sealer when its session is due for renewal, the receiver when a message
//! names the successor's id (computed ahead, so that an unknown id costs a comparison).
//!
//! What it keeps and what it gives up:
//! - HKDF is one-way: a successor's keys, stolen, give neither its parent's chain key nor its
//!   message keys. Each end erases a parent's chain key when it derives the successor, and the
//!   parent's message keys with its age, as any session's: so a successor leaked later opens
//!   nothing sealed under its parents (forward secrecy, as with a full handshake).
//! - A chain key stolen from memory gives every later successor, until the next full handshake
//!   ([`super::session::SessionLimits::handshake_after_us`]): no healing after a compromise
//!   before then. A full handshake's ephemeral keys heal it.

use super::handshake::{SessionKey, SessionKeys};
use ring::hkdf::{HKDF_SHA256, KeyType, Prk, Salt};
use zeroize::Zeroizing;

const SALT: &[u8] = b"cuberoute successor 1";
const CHAIN: &[u8] = b"chain";
const ID: &[u8] = b"id";
const I_TO_R: &[u8] = b"initiator to responder";
const R_TO_I: &[u8] = b"responder to initiator";

struct Len(usize);

impl KeyType for Len {
    fn len(&self) -> usize {
        self.0
    }
}

fn prk(chain: &[u8; 32]) -> Prk {
    Salt::new(HKDF_SHA256, SALT).extract(chain)
}

fn expand(prk: &Prk, label: &[u8], out: &mut [u8]) {
    prk.expand(&[label], Len(out.len()))
        .and_then(|okm| okm.fill(out))
        .expect("32 bytes are within HKDF-SHA256's output limit");
}

fn key(prk: &Prk, label: &[u8]) -> SessionKey {
    let mut key = Zeroizing::new([0; 32]);
    expand(prk, label, &mut key[..]);
    key
}

/// The id the successor of the session whose chain key is `chain` will have.
pub fn next_id(chain: &[u8; 32]) -> u64 {
    let mut id = [0; 8];
    expand(&prk(chain), ID, &mut id);
    u64::from_le_bytes(id)
}

/// The successor of the session whose chain key is `chain`: its id, its message keys and its
/// own chain key. The caller erases `chain` (zeroized) once it keeps the successor.
pub fn successor(chain: &[u8; 32]) -> (u64, SessionKeys) {
    let prk = prk(chain);
    let mut id = [0; 8];
    expand(&prk, ID, &mut id);
    let keys = SessionKeys {
        initiator_to_responder: key(&prk, I_TO_R),
        responder_to_initiator: key(&prk, R_TO_I),
        chain: key(&prk, CHAIN),
    };
    (u64::from_le_bytes(id), keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_successor_is_the_same_at_both_ends_and_differs_from_its_parent_in_every_key() {
        let chain = [7; 32];
        let (id, keys) = successor(&chain);
        let (again, same) = successor(&chain);
        assert_eq!(id, again);
        assert_eq!(id, next_id(&chain));
        assert_eq!(*keys.initiator_to_responder, *same.initiator_to_responder);
        assert_eq!(*keys.chain, *same.chain);
        let all = [
            chain,
            *keys.initiator_to_responder,
            *keys.responder_to_initiator,
            *keys.chain,
        ];
        for (i, a) in all.iter().enumerate() {
            for b in &all[i + 1..] {
                assert_ne!(a, b, "each key is its own");
            }
        }
        // And the next one again differs: a chain, not a cycle.
        let (id2, next) = successor(&keys.chain);
        assert_ne!(id2, id);
        assert_ne!(*next.chain, *keys.chain);
        assert_ne!(successor(&[8; 32]).0, id, "another chain, another id");
    }
}
