//! Standard Webhooks signatures: `v1,<base64 HMAC-SHA256(key, "{id}.{ts}.{body}")>`,
//! space-separated when more than one secret signs (during a rotation).

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::domain::secret::SigningSecret;

pub fn sign(key: &[u8], id: &str, timestamp: i64, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
}

/// The `webhook-signature` header value: one signature per secret.
pub fn signature_header(
    secrets: &[SigningSecret],
    id: &str,
    timestamp: i64,
    body: &[u8],
) -> String {
    secrets
        .iter()
        .map(|secret| sign(secret.key(), id, timestamp, body))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The test vector of the Standard Webhooks specification.
    #[test]
    fn signature_matches_the_standard_webhooks_test_vector() {
        let secret = SigningSecret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let signature = sign(
            secret.key(),
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
        let header = signature_header(&[new.clone(), old.clone()], "id", 1, b"{}");
        let parts: Vec<&str> = header.split(' ').collect();
        assert_eq!(
            parts,
            vec![
                sign(new.key(), "id", 1, b"{}"),
                sign(old.key(), "id", 1, b"{}")
            ]
        );
    }
}
