//! mesh's connection encryption as kOps has it: every connection encrypted (the secret as the
//! password, empty when none), a fresh X25519 key per connection, the session key
//! SHA-256(HSalsa20(X25519(ours, theirs), 0) ‖ password), each frame a NaCl secretbox under a
//! counter nonce whose first byte says which side dialled.

use anyhow::{anyhow, Result};
use crypto_secretbox::aead::generic_array::GenericArray;
use crypto_secretbox::aead::{AeadInPlace as _, KeyInit as _};
use crypto_secretbox::XSalsa20Poly1305;
use sha2::{Digest as _, Sha256};

/// The secretbox's tag, ahead of each frame's ciphertext.
pub(crate) const TAG_LEN: usize = 16;

/// One side's key for one connection.
pub(crate) struct EphemeralKey {
    secret: [u8; 32],
    pub(crate) public: [u8; 32],
}

impl EphemeralKey {
    /// A fresh key.
    pub(crate) fn generate() -> Result<Self> {
        let mut secret = [0u8; 32];
        getrandom::fill(&mut secret).map_err(|err| anyhow!("no randomness for a key: {err}"))?;
        Ok(Self::from_secret(secret))
    }

    pub(crate) fn from_secret(secret: [u8; 32]) -> Self {
        let public = x25519_dalek::x25519(secret, x25519_dalek::X25519_BASEPOINT_BYTES);
        Self { secret, public }
    }

    /// mesh's session key with the peer's public key and the password.
    pub(crate) fn session_key(&self, their_public: &[u8; 32], password: &[u8]) -> [u8; 32] {
        let shared = x25519_dalek::x25519(self.secret, *their_public);
        let precomputed = salsa20::hsalsa::<salsa20::cipher::consts::U10>(
            GenericArray::from_slice(&shared),
            &GenericArray::default(),
        );
        let mut hash = Sha256::new();
        hash.update(precomputed);
        hash.update(password);
        hash.finalize().into()
    }
}

/// One direction of an encrypted connection: its key, its nonce polarity and counter.
pub(crate) struct SecretBox {
    cipher: XSalsa20Poly1305,
    first_byte: u8,
    counter: u64,
}

impl SecretBox {
    /// The sending half: `dialled` when this side opened the connection.
    pub(crate) fn sender(key: &[u8; 32], dialled: bool) -> Self {
        Self::new(key, dialled)
    }

    /// The receiving half: the peer's polarity.
    pub(crate) fn receiver(key: &[u8; 32], dialled: bool) -> Self {
        Self::new(key, !dialled)
    }

    fn new(key: &[u8; 32], dialler_polarity: bool) -> Self {
        Self {
            cipher: XSalsa20Poly1305::new(GenericArray::from_slice(key)),
            first_byte: if dialler_polarity { 0xc0 } else { 0x40 },
            counter: 0,
        }
    }

    fn next_nonce(&mut self) -> [u8; 24] {
        let mut nonce = [0u8; 24];
        nonce[0] = self.first_byte;
        nonce[16..].copy_from_slice(&self.counter.to_be_bytes());
        self.counter += 1;
        nonce
    }

    /// `plain` sealed: tag, then ciphertext.
    pub(crate) fn seal(&mut self, plain: &[u8]) -> Result<Vec<u8>> {
        let nonce = self.next_nonce();
        let mut body = plain.to_vec();
        let tag = self
            .cipher
            .encrypt_in_place_detached(GenericArray::from_slice(&nonce), &[], &mut body)
            .map_err(|_| anyhow!("sealing a frame"))?;
        let mut sealed = Vec::with_capacity(TAG_LEN + body.len());
        sealed.extend_from_slice(&tag);
        sealed.extend_from_slice(&body);
        Ok(sealed)
    }

    /// The plain text of a sealed frame; an error when it does not open (another password).
    pub(crate) fn open(&mut self, sealed: &[u8]) -> Result<Vec<u8>> {
        let nonce = self.next_nonce();
        if sealed.len() < TAG_LEN {
            return Err(anyhow!("an encrypted frame shorter than its tag"));
        }
        let (tag, body) = sealed.split_at(TAG_LEN);
        let mut plain = body.to_vec();
        self.cipher
            .decrypt_in_place_detached(
                GenericArray::from_slice(&nonce),
                &[],
                &mut plain,
                GenericArray::from_slice(tag),
            )
            .map_err(|_| anyhow!("a frame that does not decrypt (another gossip secret?)"))?;
        Ok(plain)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gossip::wire::hex;

    fn keys() -> (EphemeralKey, EphemeralKey) {
        let sk1: [u8; 32] = std::array::from_fn(|i| i as u8 + 1);
        let sk2: [u8; 32] = std::array::from_fn(|i| i as u8 + 0x80);
        (
            EphemeralKey::from_secret(sk1),
            EphemeralKey::from_secret(sk2),
        )
    }

    #[test]
    fn public_keys_and_session_keys_match_meshs_vectors() {
        let (one, two) = keys();
        assert_eq!(
            one.public.to_vec(),
            hex("07a37cbc142093c8b755dc1b10e86cb426374ad16aa853ed0bdfc0b2b86d1c7c")
        );
        assert_eq!(
            two.public.to_vec(),
            hex("493e82fc74464a59268817623d2053c5eb8e2cc4a988b4fee179ec6b010d531d")
        );
        for (password, key, sealed) in [
            (
                "",
                "5da87dfa446edf04d154053fb4c706826ff67ef256466cce9d757d36c89f5b78",
                "300cb0407ef5d49d3dca94c74efd29b4b0",
            ),
            (
                "s3cret-kops",
                "4fa7fad5cb07469a97730065cca615f6a0cdf4ae7bf853a8cb54e21842d6991e",
                "532a8bf18d29525f24ccf2fbc2f871956f",
            ),
        ] {
            let session = one.session_key(&two.public, password.as_bytes());
            assert_eq!(session.to_vec(), hex(key), "{password:?}");
            assert_eq!(two.session_key(&one.public, password.as_bytes()), session);
            // The dialler's first frame: a heartbeat.
            let mut sender = SecretBox::sender(&session, true);
            assert_eq!(sender.seal(&[0]).unwrap(), hex(sealed), "{password:?}");
            let mut receiver = SecretBox::receiver(&session, false);
            assert_eq!(receiver.open(&hex(sealed)).unwrap(), [0]);
        }
    }

    #[test]
    fn counters_advance_and_another_password_does_not_open() {
        let (one, two) = keys();
        let ours = one.session_key(&two.public, b"a");
        let theirs = two.session_key(&one.public, b"b");
        let mut sender = SecretBox::sender(&ours, false);
        let first = sender.seal(b"x").unwrap();
        let second = sender.seal(b"x").unwrap();
        assert_ne!(first, second, "each frame its own nonce");
        let mut right = SecretBox::receiver(&ours, true);
        assert_eq!(right.open(&first).unwrap(), b"x");
        assert_eq!(right.open(&second).unwrap(), b"x");
        let mut wrong = SecretBox::receiver(&theirs, true);
        assert!(wrong.open(&first).is_err());
        assert!(SecretBox::receiver(&ours, true).open(&[0; 3]).is_err());
    }
}
