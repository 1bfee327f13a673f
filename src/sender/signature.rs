//! Standard Webhooks signatures: `v1,<base64 HMAC-SHA256(key, "{id}.{ts}.{body}")>`,
//! space-separated when more than one secret signs (during a rotation).

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::domain::secret::SigningSecret;

/// An endpoint's secrets as keyed HMAC states, prepared once per claimed
/// batch: keying hashes the key into the inner and outer pads (two SHA-256
/// blocks), which each signature would otherwise repeat.
pub struct Signer {
    keyed: Vec<Hmac<Sha256>>,
}

impl Signer {
    /// The current secret first, then the previous ones.
    pub fn new(secrets: &[SigningSecret]) -> Self {
        Self {
            keyed: secrets
                .iter()
                .map(|secret| {
                    Hmac::<Sha256>::new_from_slice(secret.key())
                        .expect("HMAC takes keys of any length")
                })
                .collect(),
        }
    }

    /// The `webhook-signature` header value: one signature per secret,
    /// written into one buffer.
    pub fn header(&self, id: &str, timestamp: i64, body: &[u8]) -> String {
        // The timestamp's digits on the stack: an i64 takes at most 20.
        let mut digits = [0u8; 24];
        let len = {
            let mut rest = &mut digits[..];
            std::io::Write::write_fmt(&mut rest, format_args!("{timestamp}"))
                .expect("an i64 fits in 24 bytes");
            24 - rest.len()
        };
        let mut header = String::with_capacity(self.keyed.len() * 48);
        for (i, keyed) in self.keyed.iter().enumerate() {
            if i > 0 {
                header.push(' ');
            }
            let mut mac = keyed.clone();
            mac.update(id.as_bytes());
            mac.update(b".");
            mac.update(&digits[..len]);
            mac.update(b".");
            mac.update(body);
            header.push_str("v1,");
            STANDARD.encode_string(mac.finalize().into_bytes(), &mut header);
        }
        header
    }
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Signer({} keys, ***)", self.keyed.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sign(secret: &SigningSecret, id: &str, timestamp: i64, body: &[u8]) -> String {
        Signer::new(std::slice::from_ref(secret)).header(id, timestamp, body)
    }

    /// The test vector of the Standard Webhooks specification.
    #[test]
    fn signature_matches_the_standard_webhooks_test_vector() {
        let secret = SigningSecret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let signature = sign(
            &secret,
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1614265330,
            br#"{"test": 2432232314}"#,
        );
        assert_eq!(signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }

    #[test]
    fn every_secret_signs_during_a_rotation() {
        let old = SigningSecret::generate();
        let new = SigningSecret::generate();
        let header = Signer::new(&[new.clone(), old.clone()]).header("id", 1, b"{}");
        let parts: Vec<&str> = header.split(' ').collect();
        assert_eq!(
            parts,
            vec![sign(&new, "id", 1, b"{}"), sign(&old, "id", 1, b"{}")]
        );
    }
}
