//! Values sealed at rest: signing secrets and custom header values are stored
//! as `enc:v1:<key id>:<base64(nonce || ciphertext)>`, encrypted with
//! XChaCha20-Poly1305 under a key from `secrets.keys`. The associated data
//! names the row and column a value belongs to (`endpoint:<id>:secret`), so a
//! ciphertext pasted into another row or column does not open. A value
//! without the prefix is plaintext, written before keys were configured, and
//! reads as itself until the start-up walk has sealed every such value
//! (`store::sealing::reseal`); from then on a plaintext value is an error, not a
//! secret. Pure: no I/O, keys come from the caller.

use std::borrow::Cow;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};

/// What every sealed value starts with.
pub const PREFIX: &str = "enc:v1:";
/// Longest key id: it is repeated in every sealed value.
pub const MAX_KEY_ID_LEN: usize = 32;
const NONCE_LEN: usize = 24;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SealError {
    /// The value names a key that is not configured (retired too early, or
    /// a process with another `secrets.keys`).
    #[error("sealed under key id `{0}`, which is not in secrets.keys")]
    UnknownKey(String),
    /// Tampered with, cut from another row or column, or not an envelope.
    #[error("sealed value does not open under key id `{0}` (altered, or moved from another row)")]
    Corrupt(String),
    #[error("value starts with `enc:v1:` but is not a sealed value")]
    Malformed,
    /// Not sealed, once every stored value has been: written around hookd
    /// (or by a process without `secrets.keys`), so not trusted as a secret.
    #[error("a plaintext value where an encrypted one belongs (secrets.keys is set and every stored value was encrypted); set the value again through the API")]
    Plaintext,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("key ids must be 1 to 32 of A-Z a-z 0-9 . _ -, got `{0}`")]
    BadId(String),
    #[error("key id `{0}` appears twice")]
    DuplicateId(String),
    #[error("key `{0}` must be the base64 of 32 bytes")]
    BadKey(String),
}

/// The configured keys: the first seals, every one opens. Empty: values are
/// stored as given. `Debug` shows the key ids only.
#[derive(Clone, Default)]
pub struct Keyring {
    keys: Vec<(String, XChaCha20Poly1305)>,
    /// Set once the start-up walk left no plaintext value (shared by the
    /// clones of this ring).
    plaintext_refused: Arc<AtomicBool>,
}

impl Keyring {
    /// Keys as `(id, base64 of 32 bytes)`, the sealing key first.
    pub fn new<'a>(keys: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<Self, KeyError> {
        let mut ring = Vec::new();
        for (id, encoded) in keys {
            if !valid_key_id(id) {
                return Err(KeyError::BadId(id.to_string()));
            }
            if ring.iter().any(|(known, _)| known == id) {
                return Err(KeyError::DuplicateId(id.to_string()));
            }
            let cipher = STANDARD
                .decode(encoded.trim())
                .ok()
                // 256-bit keys only: the cipher refuses any other length.
                .and_then(|b| XChaCha20Poly1305::new_from_slice(&b).ok())
                .ok_or_else(|| KeyError::BadKey(id.to_string()))?;
            ring.push((id.to_string(), cipher));
        }
        Ok(Self {
            keys: ring,
            plaintext_refused: Default::default(),
        })
    }

    /// Whether values are sealed at all.
    pub fn is_enabled(&self) -> bool {
        !self.keys.is_empty()
    }

    /// The id of the key that seals, if any.
    pub fn current_id(&self) -> Option<&str> {
        self.keys.first().map(|(id, _)| id.as_str())
    }

    /// `enc:v1:<current key id>:`: what every value sealed now starts with.
    pub fn current_prefix(&self) -> Option<String> {
        self.current_id().map(|id| format!("{PREFIX}{id}:"))
    }

    /// Seals `plaintext` for the place `context` names; without keys,
    /// returns it unchanged.
    pub fn seal<'a>(&self, plaintext: &'a str, context: &str) -> Cow<'a, str> {
        let Some((id, cipher)) = self.keys.first() else {
            return Cow::Borrowed(plaintext);
        };
        let mut nonce = [0u8; NONCE_LEN];
        rand::fill(&mut nonce);
        let ciphertext = cipher
            .encrypt(
                &XNonce::from(nonce),
                Payload {
                    msg: plaintext.as_bytes(),
                    aad: context.as_bytes(),
                },
            )
            .expect("XChaCha20-Poly1305 seals any message that fits in memory");
        let mut sealed = Vec::with_capacity(NONCE_LEN + ciphertext.len());
        sealed.extend_from_slice(&nonce);
        sealed.extend_from_slice(&ciphertext);
        Cow::Owned(format!("{PREFIX}{id}:{}", STANDARD.encode(sealed)))
    }

    /// From now on a plaintext value is an error: called once no stored
    /// value is plaintext. Without keys, plaintext is all there is, and
    /// stays accepted.
    pub fn refuse_plaintext(&self) {
        if self.is_enabled() {
            self.plaintext_refused.store(true, Ordering::Relaxed);
        }
    }

    /// Whether a plaintext value is still read as itself.
    pub fn check_plaintext(&self) -> Result<(), SealError> {
        if self.plaintext_refused.load(Ordering::Relaxed) {
            return Err(SealError::Plaintext);
        }
        Ok(())
    }

    /// Opens a stored value for the place `context` names. Plaintext (no
    /// prefix) comes back as it is, unless refused (`refuse_plaintext`).
    pub fn open<'a>(&self, stored: &'a str, context: &str) -> Result<Cow<'a, str>, SealError> {
        let Some(rest) = stored.strip_prefix(PREFIX) else {
            self.check_plaintext()?;
            return Ok(Cow::Borrowed(stored));
        };
        let (id, encoded) = rest.split_once(':').ok_or(SealError::Malformed)?;
        let cipher = self
            .keys
            .iter()
            .find(|(known, _)| known == id)
            .map(|(_, cipher)| cipher)
            .ok_or_else(|| SealError::UnknownKey(id.to_string()))?;
        let corrupt = || SealError::Corrupt(id.to_string());
        let bytes = STANDARD.decode(encoded).map_err(|_| corrupt())?;
        if bytes.len() < NONCE_LEN {
            return Err(corrupt());
        }
        let (nonce, ciphertext) = bytes.split_at(NONCE_LEN);
        let nonce = XNonce::try_from(nonce).map_err(|_| corrupt())?;
        let plaintext = cipher
            .decrypt(
                &nonce,
                Payload {
                    msg: ciphertext,
                    aad: context.as_bytes(),
                },
            )
            .map_err(|_| corrupt())?;
        String::from_utf8(plaintext)
            .map(Cow::Owned)
            .map_err(|_| corrupt())
    }

    /// Whether a stored value should be sealed again: it is plaintext, or
    /// sealed under a key that no longer seals. Always false without keys.
    pub fn needs_reseal(&self, stored: &str) -> bool {
        match self.current_id() {
            None => false,
            Some(id) => !stored
                .strip_prefix(PREFIX)
                .and_then(|rest| rest.strip_prefix(id))
                .is_some_and(|rest| rest.starts_with(':')),
        }
    }
}

/// Key ids appear in every sealed value: short, and free of the separator.
pub fn valid_key_id(id: &str) -> bool {
    (1..=MAX_KEY_ID_LEN).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// Where a value lives, as associated data: the same plaintext sealed for
/// another place does not open here.
pub mod context {
    use uuid::Uuid;

    pub fn endpoint_secret(endpoint: Uuid) -> String {
        format!("endpoint:{endpoint}:secret")
    }

    pub fn endpoint_previous_secret(endpoint: Uuid) -> String {
        format!("endpoint:{endpoint}:previous_secret")
    }

    /// The URL of the operator endpoint (`operator.url`, often with a
    /// token in it); other endpoints' URLs are stored in clear.
    pub fn endpoint_url(endpoint: Uuid) -> String {
        format!("endpoint:{endpoint}:url")
    }

    pub fn endpoint_header(endpoint: Uuid, name: &str) -> String {
        format!("endpoint:{endpoint}:header:{name}")
    }

    pub fn notification_header(notification: Uuid, name: &str) -> String {
        format!("notification:{notification}:header:{name}")
    }
}

impl fmt::Debug for Keyring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ids: Vec<&str> = self.keys.iter().map(|(id, _)| id.as_str()).collect();
        f.debug_struct("Keyring").field("ids", &ids).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY_A: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
    const KEY_B: &str = "HxwdHhobGBkWFxQVEhMQEQ4PDA0KCwgJBgcEBQIDAAE=";

    fn ring(keys: &[(&str, &str)]) -> Keyring {
        Keyring::new(keys.iter().copied()).unwrap()
    }

    #[test]
    fn plaintext_reads_as_itself_until_refused_and_always_without_keys() {
        let keys = ring(&[("a", KEY_A)]);
        let sealed = keys.seal("whsec_x", "c").into_owned();
        assert_eq!(keys.open("whsec_x", "c").unwrap(), "whsec_x");
        keys.clone().refuse_plaintext();
        assert_eq!(keys.open("whsec_x", "c"), Err(SealError::Plaintext));
        assert_eq!(keys.open(&sealed, "c").unwrap(), "whsec_x");
        let none = Keyring::default();
        none.refuse_plaintext();
        assert_eq!(none.open("whsec_x", "c").unwrap(), "whsec_x");
    }

    #[test]
    fn a_sealed_value_opens_to_the_plaintext_and_does_not_contain_it() {
        let keys = ring(&[("2026-11", KEY_A)]);
        let sealed = keys.seal("whsec_hunter2", "endpoint:1:secret");
        assert!(sealed.starts_with("enc:v1:2026-11:"), "{sealed}");
        assert!(!sealed.contains("hunter2"));
        assert_eq!(
            keys.open(&sealed, "endpoint:1:secret").unwrap(),
            "whsec_hunter2"
        );
        // A fresh nonce each time: equal plaintexts do not look equal.
        assert_ne!(keys.seal("whsec_hunter2", "endpoint:1:secret"), sealed);
    }

    /// What is stored stays readable across upgrades of the cipher's crate:
    /// this value was sealed outside hookd, by Python's `cryptography`
    /// (its ChaCha20-Poly1305 under the HChaCha20 subkey of the nonce's
    /// first 16 bytes, as XChaCha20-Poly1305 is defined), with the nonce
    /// 0x40..=0x57.
    #[test]
    fn a_value_sealed_by_another_implementation_opens() {
        let keys = ring(&[("2026-11", KEY_A)]);
        let sealed =
            "enc:v1:2026-11:QEFCQ0RFRkdISUpLTE1OT1BRUlNUVVZXo1F2FbO/EWPhgOLMnZcLa66Ccf1P8UnjGEGcMJs=";
        assert_eq!(
            keys.open(sealed, "endpoint:1:secret").unwrap(),
            "whsec_hunter2"
        );
        assert_eq!(
            keys.open(sealed, "endpoint:2:secret"),
            Err(SealError::Corrupt("2026-11".into()))
        );
    }

    #[test]
    fn a_tampered_value_is_refused() {
        let keys = ring(&[("k", KEY_A)]);
        let sealed = keys.seal("Bearer abc", "c").into_owned();
        let (head, body) = sealed.split_at(sealed.len() - 6);
        let flipped = format!("{head}{}", if body.starts_with('A') { "B" } else { "A" });
        let tampered = format!("{flipped}{}", &body[1..]);
        assert_eq!(
            keys.open(&tampered, "c"),
            Err(SealError::Corrupt("k".into()))
        );
        assert_eq!(
            keys.open("enc:v1:k:bm90IGEgbm9uY2U=", "c"),
            Err(SealError::Corrupt("k".into()))
        );
        assert_eq!(
            keys.open("enc:v1:no-separator", "c"),
            Err(SealError::Malformed)
        );
    }

    #[test]
    fn a_value_moved_to_another_row_or_column_is_refused() {
        let keys = ring(&[("k", KEY_A)]);
        let sealed = keys.seal("Bearer abc", "endpoint:1:header:authorization");
        for elsewhere in [
            "endpoint:2:header:authorization",
            "endpoint:1:header:x-other",
        ] {
            assert_eq!(
                keys.open(&sealed, elsewhere),
                Err(SealError::Corrupt("k".into()))
            );
        }
    }

    #[test]
    fn a_value_under_an_unknown_key_id_is_refused_by_name() {
        let old = ring(&[("old", KEY_A)]);
        let new = ring(&[("new", KEY_B)]);
        let sealed = old.seal("x", "c");
        assert_eq!(
            new.open(&sealed, "c"),
            Err(SealError::UnknownKey("old".into()))
        );
        assert_eq!(
            Keyring::default().open(&sealed, "c"),
            Err(SealError::UnknownKey("old".into()))
        );
    }

    #[test]
    fn every_key_opens_and_only_the_first_seals() {
        let old = ring(&[("old", KEY_A)]);
        let sealed_old = old.seal("x", "c");
        let both = ring(&[("new", KEY_B), ("old", KEY_A)]);
        assert_eq!(both.open(&sealed_old, "c").unwrap(), "x");
        assert!(both.needs_reseal(&sealed_old));
        let sealed_new = both.seal("x", "c");
        assert!(sealed_new.starts_with("enc:v1:new:"));
        assert!(!both.needs_reseal(&sealed_new));
        assert!(both.needs_reseal("plaintext"));
        // A key id that merely starts like the current one is another key.
        let ring_n = ring(&[("ne", KEY_A)]);
        assert!(ring_n.needs_reseal(&sealed_new));
    }

    #[test]
    fn plaintext_reads_as_itself_and_without_keys_nothing_is_sealed() {
        let none = Keyring::default();
        assert!(!none.is_enabled());
        assert_eq!(none.seal("whsec_x", "c"), "whsec_x");
        assert!(!none.needs_reseal("whsec_x"));
        let keys = ring(&[("k", KEY_A)]);
        assert_eq!(keys.open("whsec_x", "c").unwrap(), "whsec_x");
    }

    #[test]
    fn bad_key_configuration_is_refused() {
        assert_eq!(
            Keyring::new([("", KEY_A)]).unwrap_err(),
            KeyError::BadId("".into())
        );
        assert_eq!(
            Keyring::new([("a:b", KEY_A)]).unwrap_err(),
            KeyError::BadId("a:b".into())
        );
        assert!(Keyring::new([("x".repeat(33).as_str(), KEY_A)]).is_err());
        assert_eq!(
            Keyring::new([("a", KEY_A), ("a", KEY_B)]).unwrap_err(),
            KeyError::DuplicateId("a".into())
        );
        assert_eq!(
            Keyring::new([("a", "c2hvcnQ=")]).unwrap_err(),
            KeyError::BadKey("a".into())
        );
        let debug = format!("{:?}", ring(&[("a", KEY_A)]));
        assert!(!debug.contains(KEY_A) && debug.contains("\"a\""), "{debug}");
    }
}
