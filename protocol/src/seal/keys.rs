//! A node's end-to-end key pair: HPKE's DHKEM(X25519, HKDF-SHA256).

use hpke::kem::X25519HkdfSha256;
use hpke::{Deserializable, Kem, Serializable};
use serde::{Deserialize, Serialize};

/// The KEM of every node key.
pub type NodeKem = X25519HkdfSha256;

/// A node's private key.
#[derive(Clone)]
pub struct SecretKey {
    secret: <NodeKem as Kem>::PrivateKey,
    public: PublicKey,
}

/// A node's public key: the 32 bytes of an X25519 point.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
pub struct PublicKey(pub [u8; 32]);

/// Bytes that are not a key.
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error)]
#[error("not an X25519 key: {0} bytes where 32 are needed, or not a valid key")]
pub struct KeyError(pub usize);

impl SecretKey {
    /// The key pair derived from 32 random bytes (HPKE's `DeriveKeyPair`).
    pub fn from_seed(seed: [u8; 32]) -> SecretKey {
        let (secret, public) = NodeKem::derive_keypair(&seed);
        SecretKey::new(secret, &public)
    }

    fn new(
        secret: <NodeKem as Kem>::PrivateKey,
        public: &<NodeKem as Kem>::PublicKey,
    ) -> SecretKey {
        let mut bytes = [0; 32];
        bytes.copy_from_slice(&public.to_bytes());
        SecretKey {
            secret,
            public: PublicKey(bytes),
        }
    }

    /// The key from its 32 bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<SecretKey, KeyError> {
        let secret =
            <NodeKem as Kem>::PrivateKey::from_bytes(bytes).map_err(|_| KeyError(bytes.len()))?;
        let public = NodeKem::sk_to_pk(&secret);
        Ok(SecretKey::new(secret, &public))
    }

    pub fn to_bytes(&self) -> [u8; 32] {
        let mut bytes = [0; 32];
        bytes.copy_from_slice(&self.secret.to_bytes());
        bytes
    }

    pub fn public_key(&self) -> PublicKey {
        self.public
    }

    pub(crate) fn kem_secret(&self) -> &<NodeKem as Kem>::PrivateKey {
        &self.secret
    }

    pub(crate) fn kem_public(&self) -> <NodeKem as Kem>::PublicKey {
        self.public.to_kem().expect("a key pair's own public key")
    }
}

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SecretKey(public {:?})", self.public)
    }
}

impl PublicKey {
    pub fn from_bytes(bytes: &[u8]) -> Result<PublicKey, KeyError> {
        let key: [u8; 32] = bytes.try_into().map_err(|_| KeyError(bytes.len()))?;
        PublicKey(key).to_kem()?;
        Ok(PublicKey(key))
    }

    pub(crate) fn to_kem(self) -> Result<<NodeKem as Kem>::PublicKey, KeyError> {
        <NodeKem as Kem>::PublicKey::from_bytes(&self.0).map_err(|_| KeyError(32))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_pair_round_trips_and_is_a_function_of_its_seed() {
        let a = SecretKey::from_seed([7; 32]);
        let b = SecretKey::from_bytes(&a.to_bytes()).unwrap();
        assert_eq!(a.public_key(), b.public_key());
        assert_eq!(SecretKey::from_seed([7; 32]).public_key(), a.public_key());
        assert_ne!(SecretKey::from_seed([8; 32]).public_key(), a.public_key());
        assert_eq!(PublicKey::from_bytes(&a.public_key().0), Ok(a.public_key()));
        assert_eq!(PublicKey::from_bytes(&[1; 31]), Err(KeyError(31)));
        assert!(SecretKey::from_bytes(&[1; 5]).is_err());
    }
}
