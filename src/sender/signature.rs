//! Standard Webhooks signatures: `v1,<base64 HMAC-SHA256(key, "{id}.{ts}.{body}")>`
//! for a shared secret, `v1a,<base64 Ed25519(key, "{id}.{ts}.{body}")>` for an
//! Ed25519 key; space-separated when more than one key signs (during a
//! rotation, or a switch from one kind to the other).

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use bytes::Bytes;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::domain::secret::SigningSecret;

/// An endpoint's keys prepared once per claimed batch: a shared secret as
/// its keyed HMAC state (keying hashes the key into the inner and outer
/// pads, two SHA-256 blocks, which each signature would otherwise repeat),
/// an Ed25519 key as its parsed pair.
pub struct Signer {
    keyed: Vec<Keyed>,
}

enum Keyed {
    Hmac(Hmac<Sha256>),
    Ed25519(std::sync::Arc<ring::signature::Ed25519KeyPair>),
    /// Signs the form body itself (`form`), not the header.
    Rsa2(std::sync::Arc<ring::signature::RsaKeyPair>),
}

impl Signer {
    /// The current secret first, then the previous ones.
    pub fn new(secrets: &[SigningSecret]) -> Self {
        Self {
            keyed: secrets
                .iter()
                .filter_map(|secret| {
                    if let Some(key) = secret.hmac_key() {
                        let keyed = Hmac::<Sha256>::new_from_slice(key)
                            .expect("HMAC takes keys of any length");
                        return Some(Keyed::Hmac(keyed));
                    }
                    if let Some(pair) = secret.ed25519() {
                        return Some(Keyed::Ed25519(pair.clone()));
                    }
                    secret.rsa().map(|pair| Keyed::Rsa2(pair.clone()))
                })
                .collect(),
        }
    }

    /// The `webhook-signature` header value: one signature per shared
    /// secret or Ed25519 key, written into one buffer; empty when only RSA
    /// keys sign (they sign the body: `form`).
    pub fn header(&self, id: &str, timestamp: i64, body: &[u8]) -> String {
        // The timestamp's digits on the stack: an i64 takes at most 20.
        let mut digits = [0u8; 24];
        let len = {
            let mut rest = &mut digits[..];
            std::io::Write::write_fmt(&mut rest, format_args!("{timestamp}"))
                .expect("an i64 fits in 24 bytes");
            24 - rest.len()
        };
        let timestamp = &digits[..len];
        let mut header = String::with_capacity(self.keyed.len() * 92);
        // Ed25519 signs one contiguous message: built once, if asked.
        let mut message: Option<Vec<u8>> = None;
        for keyed in &self.keyed {
            if matches!(keyed, Keyed::Rsa2(_)) {
                continue;
            }
            if !header.is_empty() {
                header.push(' ');
            }
            match keyed {
                Keyed::Rsa2(_) => {}
                Keyed::Hmac(keyed) => {
                    let mut mac = keyed.clone();
                    mac.update(id.as_bytes());
                    mac.update(b".");
                    mac.update(timestamp);
                    mac.update(b".");
                    mac.update(body);
                    header.push_str("v1,");
                    STANDARD.encode_string(mac.finalize().into_bytes(), &mut header);
                }
                Keyed::Ed25519(pair) => {
                    let message = message.get_or_insert_with(|| {
                        let mut m = Vec::with_capacity(id.len() + len + body.len() + 2);
                        m.extend_from_slice(id.as_bytes());
                        m.push(b'.');
                        m.extend_from_slice(timestamp);
                        m.push(b'.');
                        m.extend_from_slice(body);
                        m
                    });
                    header.push_str("v1a,");
                    STANDARD.encode_string(pair.sign(message), &mut header);
                }
            }
        }
        header
    }
}

impl Signer {
    /// The body an `rsa2` endpoint is sent: the form as given, without a
    /// `sign` or `sign_type` of its own, then `sign_type=RSA2` and `sign`,
    /// the base64 of SHA256withRSA over its other non-empty parameters,
    /// URL-decoded, sorted by name, joined as `k=v&…` (how Alipay signs its
    /// asynchronous notifications). Only the current key signs: a form has
    /// one `sign`. `None` when the current key is not RSA; an error for a
    /// body that is no form.
    pub fn form(&self, content_type: &str, body: &[u8]) -> Option<Result<Vec<u8>, String>> {
        let Some(Keyed::Rsa2(pair)) = self.keyed.first() else {
            return None;
        };
        Some(rsa2_form(pair, content_type, body))
    }

    /// The body a delivery is sent: `body` itself, or for an `rsa2` key
    /// the signed form (`form`), made on the blocking pool: an RSA
    /// signature is about 0.6 ms of CPU (BENCHMARKS.md), too long to hold
    /// one of the runtime's threads.
    pub async fn signed_body(&self, content_type: &str, body: &Bytes) -> Result<Bytes, String> {
        let Some(Keyed::Rsa2(pair)) = self.keyed.first() else {
            return Ok(body.clone());
        };
        let (pair, content_type, body) = (pair.clone(), content_type.to_string(), body.clone());
        tokio::task::spawn_blocking(move || rsa2_form(&pair, &content_type, &body))
            .await
            .map_err(|_| "the signing task ended without signing".to_string())?
            .map(Bytes::from)
    }
}

fn rsa2_form(
    pair: &ring::signature::RsaKeyPair,
    content_type: &str,
    body: &[u8],
) -> Result<Vec<u8>, String> {
    if !crate::domain::secret::is_form(content_type) {
        return Err(format!(
            "rsa2 signs form bodies (application/x-www-form-urlencoded), and this one is {content_type}"
        ));
    }
    let signed = |key: &str| key != "sign" && key != "sign_type";
    let mut params: Vec<(String, String)> = url::form_urlencoded::parse(body)
        .filter(|(key, value)| signed(key) && !value.is_empty())
        .map(|(key, value)| (key.into_owned(), value.into_owned()))
        .collect();
    params.sort();
    let mut content = String::with_capacity(body.len());
    for (i, (key, value)) in params.iter().enumerate() {
        if i > 0 {
            content.push('&');
        }
        content.push_str(key);
        content.push('=');
        content.push_str(value);
    }
    let mut signature = vec![0u8; pair.public().modulus_len()];
    pair.sign(
        &ring::signature::RSA_PKCS1_SHA256,
        &ring::rand::SystemRandom::new(),
        content.as_bytes(),
        &mut signature,
    )
    .map_err(|_| "the RSA key did not sign".to_string())?;
    // The producer's own bytes, each pair as given, but any sign of its own.
    let mut out = Vec::with_capacity(body.len() + signature.len() * 2);
    for pair in body.split(|b| *b == b'&').filter(|p| !p.is_empty()) {
        let key = pair.split(|b| *b == b'=').next().unwrap_or_default();
        if key == b"sign" || key == b"sign_type" {
            continue;
        }
        out.extend_from_slice(pair);
        out.push(b'&');
    }
    let tail = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("sign_type", "RSA2")
        .append_pair("sign", &STANDARD.encode(&signature))
        .finish();
    out.extend_from_slice(tail.as_bytes());
    Ok(out)
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

    /// RFC 8032's first test vector (an empty message) through the
    /// header: the signature of `"{id}.{ts}."` with the same key verifies
    /// with ring's own verifier, and hookd's key text round-trips the seed.
    #[test]
    fn an_ed25519_key_signs_v1a_over_id_timestamp_and_body() {
        use ring::signature::{KeyPair, UnparsedPublicKey, ED25519};
        let seed = [
            0x9d, 0x61, 0xb1, 0x9d, 0xef, 0xfd, 0x5a, 0x60, 0xba, 0x84, 0x4a, 0xf4, 0x92, 0xec,
            0x2c, 0xc4, 0x44, 0x49, 0xc5, 0x69, 0x7b, 0x32, 0x69, 0x19, 0x70, 0x3b, 0xac, 0x03,
            0x1c, 0xae, 0x7f, 0x60,
        ];
        let secret = SigningSecret::parse(&format!("whsk_{}", STANDARD.encode(seed))).unwrap();
        assert_eq!(
            secret.public_key().unwrap(),
            format!(
                "whpk_{}",
                STANDARD.encode([
                    0xd7, 0x5a, 0x98, 0x01, 0x82, 0xb1, 0x0a, 0xb7, 0xd5, 0x4b, 0xfe, 0xd3, 0xc9,
                    0x64, 0x07, 0x3a, 0x0e, 0xe1, 0x72, 0xf3, 0xda, 0xa6, 0x23, 0x25, 0xaf, 0x02,
                    0x1a, 0x68, 0xf7, 0x07, 0x51, 0x1a
                ])
            )
        );
        let header = sign(&secret, "msg_1", 1614265330, br#"{"test": 1}"#);
        let signature = STANDARD
            .decode(header.strip_prefix("v1a,").unwrap())
            .unwrap();
        let public = secret.ed25519().unwrap().public_key().as_ref().to_vec();
        UnparsedPublicKey::new(&ED25519, &public)
            .verify(br#"msg_1.1614265330.{"test": 1}"#, &signature)
            .expect("the v1a signature verifies");
        assert!(UnparsedPublicKey::new(&ED25519, &public)
            .verify(br#"msg_1.1614265331.{"test": 1}"#, &signature)
            .is_err());
    }

    #[test]
    fn a_switch_of_kind_signs_with_both_during_the_overlap() {
        let ed = SigningSecret::generate_for(crate::domain::secret::Signing::Ed25519).unwrap();
        let shared = SigningSecret::generate();
        let header = Signer::new(&[ed.clone(), shared.clone()]).header("id", 1, b"{}");
        let parts: Vec<&str> = header.split(' ').collect();
        assert_eq!(parts.len(), 2);
        assert!(parts[0].starts_with("v1a,"));
        assert_eq!(parts[1], sign(&shared, "id", 1, b"{}"));
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
