//! Endpoint signing secrets in the Standard Webhooks form `whsec_<base64>`.

use std::fmt;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use rand::RngCore;

pub const PREFIX: &str = "whsec_";
const GENERATED_LEN: usize = 32;
const MIN_LEN: usize = 24;
const MAX_LEN: usize = 64;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a secret is `whsec_` followed by the base64 of 24 to 64 bytes")]
pub struct InvalidSecret;

/// A signing secret: its text form (what producers see) and the HMAC key.
#[derive(Clone, PartialEq, Eq)]
pub struct SigningSecret {
    text: String,
    key: Vec<u8>,
}

impl SigningSecret {
    pub fn generate() -> Self {
        let mut key = vec![0u8; GENERATED_LEN];
        rand::thread_rng().fill_bytes(&mut key);
        Self {
            text: format!("{PREFIX}{}", STANDARD.encode(&key)),
            key,
        }
    }

    pub fn parse(text: &str) -> Result<Self, InvalidSecret> {
        let encoded = text.strip_prefix(PREFIX).ok_or(InvalidSecret)?;
        let key = STANDARD.decode(encoded).map_err(|_| InvalidSecret)?;
        if !(MIN_LEN..=MAX_LEN).contains(&key.len()) {
            return Err(InvalidSecret);
        }
        Ok(Self {
            text: text.to_string(),
            key,
        })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    pub fn key(&self) -> &[u8] {
        &self.key
    }
}

impl fmt::Debug for SigningSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SigningSecret(***)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_secret_parses_back_to_the_same_key() {
        let secret = SigningSecret::generate();
        assert!(secret.as_str().starts_with(PREFIX));
        assert_eq!(
            SigningSecret::parse(secret.as_str()).unwrap().key(),
            secret.key()
        );
    }

    #[test]
    fn secrets_without_prefix_or_of_wrong_length_are_rejected() {
        assert_eq!(
            SigningSecret::parse("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
            Err(InvalidSecret)
        );
        assert_eq!(SigningSecret::parse("whsec_c2hvcnQ="), Err(InvalidSecret));
        assert_eq!(
            SigningSecret::parse("whsec_not base64!"),
            Err(InvalidSecret)
        );
        // The Standard Webhooks test vector's secret is valid.
        assert!(SigningSecret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").is_ok());
    }

    #[test]
    fn debug_output_hides_the_secret() {
        let secret = SigningSecret::generate();
        assert!(!format!("{secret:?}").contains(&secret.as_str()[PREFIX.len()..]));
    }
}
