//! Endpoint signing keys in the Standard Webhooks forms: `whsec_<base64>`,
//! a shared secret that signs with HMAC-SHA256 (`v1`), or `whsk_<base64>`,
//! an Ed25519 secret key that signs asymmetrically (`v1a`, docs/design.md
//! §19), whose public key receivers verify with is `whpk_<base64 of its
//! 32 bytes>`; or an RSA private key in PEM (PKCS#8 `BEGIN PRIVATE KEY`,
//! or PKCS#1 `BEGIN RSA PRIVATE KEY`), which signs form bodies as Alipay
//! signs its asynchronous notifications (`rsa2`, `sign_type=RSA2`), whose
//! public key is published as a PEM SubjectPublicKeyInfo. hookd generates
//! shared secrets and Ed25519 keys; an RSA key is the operator's own
//! (`openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048`). An
//! endpoint's kind of signing is its current key's kind.

use std::fmt;
use std::sync::Arc;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use ring::signature::{Ed25519KeyPair, KeyPair, RsaKeyPair};
use serde::{Deserialize, Serialize};

pub const PREFIX: &str = "whsec_";
/// An Ed25519 secret key: the base64 of its 32-byte seed, or of the seed
/// and the public key (64 bytes, libsodium's form, which hookd writes).
pub const SECRET_KEY_PREFIX: &str = "whsk_";
/// An Ed25519 public key: the base64 of its 32 bytes.
pub const PUBLIC_KEY_PREFIX: &str = "whpk_";
const GENERATED_LEN: usize = 32;
const MIN_LEN: usize = 24;
const MAX_LEN: usize = 64;
const SEED_LEN: usize = 32;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a secret is `whsec_` followed by the base64 of 24 to 64 bytes; for ed25519 `whsk_` followed by the base64 of a 32-byte seed or a 64-byte secret key; for rsa2 an RSA private key of 2048 to 4096 bits in PEM (BEGIN PRIVATE KEY or BEGIN RSA PRIVATE KEY)")]
pub struct InvalidSecret;

/// How an endpoint signs its deliveries.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Signing {
    /// HMAC-SHA256 with a shared secret (`v1,`), the default.
    #[default]
    Hmac,
    /// Ed25519 (`v1a,`): receivers hold only the public key.
    Ed25519,
    /// SHA256withRSA over a form body's parameters, added to it as `sign`
    /// and `sign_type=RSA2` (Alipay's asynchronous notifications).
    Rsa2,
}

impl Signing {
    /// The kind of a stored key's text.
    pub fn of(text: &str) -> Self {
        if text.starts_with(SECRET_KEY_PREFIX) {
            Signing::Ed25519
        } else if text.trim_start().starts_with("-----BEGIN") {
            Signing::Rsa2
        } else {
            Signing::Hmac
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Signing::Hmac => "hmac",
            Signing::Ed25519 => "ed25519",
            Signing::Rsa2 => "rsa2",
        }
    }
}

/// A signing key: its text form (what producers see, what is stored,
/// sealed) and what signs: the HMAC key, or the Ed25519 key pair.
#[derive(Clone)]
pub struct SigningSecret {
    text: String,
    key: Key,
}

#[derive(Clone)]
enum Key {
    Hmac(Vec<u8>),
    Ed25519(Arc<Ed25519KeyPair>),
    Rsa2(Arc<RsaKeyPair>),
}

impl PartialEq for SigningSecret {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl Eq for SigningSecret {}

impl SigningSecret {
    /// A new shared secret (`whsec_`).
    pub fn generate() -> Self {
        let mut key = vec![0u8; GENERATED_LEN];
        rand::fill(&mut key);
        Self {
            text: format!("{PREFIX}{}", STANDARD.encode(&key)),
            key: Key::Hmac(key),
        }
    }

    /// A new key of this kind; `None` for RSA, whose keys the operator
    /// brings.
    pub fn generate_for(signing: Signing) -> Option<Self> {
        Some(match signing {
            Signing::Hmac => Self::generate(),
            Signing::Rsa2 => return None,
            Signing::Ed25519 => {
                let mut seed = [0u8; SEED_LEN];
                rand::fill(&mut seed);
                let pair = Ed25519KeyPair::from_seed_unchecked(&seed)
                    .expect("any 32 bytes are an Ed25519 seed");
                let mut secret_key = seed.to_vec();
                secret_key.extend_from_slice(pair.public_key().as_ref());
                Self {
                    text: format!("{SECRET_KEY_PREFIX}{}", STANDARD.encode(&secret_key)),
                    key: Key::Ed25519(Arc::new(pair)),
                }
            }
        })
    }

    pub fn parse(text: &str) -> Result<Self, InvalidSecret> {
        if Signing::of(text) == Signing::Rsa2 {
            return parse_rsa(text).map(|pair| Self {
                text: text.to_string(),
                key: Key::Rsa2(Arc::new(pair)),
            });
        }
        if let Some(encoded) = text.strip_prefix(SECRET_KEY_PREFIX) {
            let bytes = STANDARD.decode(encoded).map_err(|_| InvalidSecret)?;
            let pair = match bytes.len() {
                SEED_LEN => Ed25519KeyPair::from_seed_unchecked(&bytes),
                64 => {
                    Ed25519KeyPair::from_seed_and_public_key(&bytes[..SEED_LEN], &bytes[SEED_LEN..])
                }
                _ => return Err(InvalidSecret),
            }
            .map_err(|_| InvalidSecret)?;
            return Ok(Self {
                text: text.to_string(),
                key: Key::Ed25519(Arc::new(pair)),
            });
        }
        let encoded = text.strip_prefix(PREFIX).ok_or(InvalidSecret)?;
        let key = STANDARD.decode(encoded).map_err(|_| InvalidSecret)?;
        if !(MIN_LEN..=MAX_LEN).contains(&key.len()) {
            return Err(InvalidSecret);
        }
        Ok(Self {
            text: text.to_string(),
            key: Key::Hmac(key),
        })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    pub fn signing(&self) -> Signing {
        match self.key {
            Key::Hmac(_) => Signing::Hmac,
            Key::Ed25519(_) => Signing::Ed25519,
            Key::Rsa2(_) => Signing::Rsa2,
        }
    }

    /// The HMAC key of a shared secret.
    pub fn hmac_key(&self) -> Option<&[u8]> {
        match &self.key {
            Key::Hmac(key) => Some(key),
            _ => None,
        }
    }

    /// The key pair of an Ed25519 key.
    pub fn ed25519(&self) -> Option<&Arc<Ed25519KeyPair>> {
        match &self.key {
            Key::Ed25519(pair) => Some(pair),
            _ => None,
        }
    }

    /// The key pair of an RSA key.
    pub fn rsa(&self) -> Option<&Arc<RsaKeyPair>> {
        match &self.key {
            Key::Rsa2(pair) => Some(pair),
            _ => None,
        }
    }

    /// What verifies this key's signatures: `whpk_<base64 of the 32
    /// bytes>` for Ed25519, a PEM SubjectPublicKeyInfo for RSA; `None` for
    /// a shared secret.
    pub fn public_key(&self) -> Option<String> {
        match &self.key {
            Key::Hmac(_) => None,
            Key::Ed25519(pair) => Some(format!(
                "{PUBLIC_KEY_PREFIX}{}",
                STANDARD.encode(pair.public_key().as_ref())
            )),
            Key::Rsa2(pair) => Some(rsa_public_pem(pair.public().as_ref())),
        }
    }
}

/// Whether a content type is a form's (parameters aside): the only body
/// an `rsa2` key signs.
pub fn is_form(content_type: &str) -> bool {
    content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .eq_ignore_ascii_case("application/x-www-form-urlencoded")
}

/// The PEM labels of an RSA private key: PKCS#8, PKCS#1. ring takes
/// moduli of 2048 to 4096 bits (RSA2's are 2048).
const RSA_PEM_LABELS: [&str; 2] = ["PRIVATE KEY", "RSA PRIVATE KEY"];

/// An RSA private key from PEM: PKCS#8 or PKCS#1, 2048 to 4096 bits.
fn parse_rsa(text: &str) -> Result<RsaKeyPair, InvalidSecret> {
    let text = text.trim();
    let label = RSA_PEM_LABELS
        .iter()
        .find(|label| text.starts_with(&format!("-----BEGIN {label}-----")))
        .ok_or(InvalidSecret)?;
    let body = text
        .strip_prefix(&format!("-----BEGIN {label}-----"))
        .and_then(|rest| rest.strip_suffix(&format!("-----END {label}-----")))
        .ok_or(InvalidSecret)?;
    let base64: String = body.chars().filter(|c| !c.is_whitespace()).collect();
    let der = STANDARD.decode(base64).map_err(|_| InvalidSecret)?;
    if *label == "PRIVATE KEY" {
        RsaKeyPair::from_pkcs8(&der)
    } else {
        RsaKeyPair::from_der(&der)
    }
    .map_err(|_| InvalidSecret)
}

/// A PEM SubjectPublicKeyInfo around a PKCS#1 RSAPublicKey: the
/// rsaEncryption algorithm, then the key as a BIT STRING.
fn rsa_public_pem(pkcs1: &[u8]) -> String {
    fn der(tag: u8, content: &[u8]) -> Vec<u8> {
        let mut out = vec![tag];
        let len = content.len();
        if len < 0x80 {
            out.push(len as u8);
        } else {
            let bytes: Vec<u8> = len
                .to_be_bytes()
                .into_iter()
                .skip_while(|b| *b == 0)
                .collect();
            out.push(0x80 | bytes.len() as u8);
            out.extend_from_slice(&bytes);
        }
        out.extend_from_slice(content);
        out
    }
    // SEQUENCE { OID 1.2.840.113549.1.1.1, NULL }
    const RSA_ENCRYPTION: [u8; 15] = [
        0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01, 0x05, 0x00,
    ];
    let mut bits = vec![0u8];
    bits.extend_from_slice(pkcs1);
    let mut info = RSA_ENCRYPTION.to_vec();
    info.extend(der(0x03, &bits));
    let encoded = STANDARD.encode(der(0x30, &info));
    let mut pem = String::from("-----BEGIN PUBLIC KEY-----\n");
    for line in encoded.as_bytes().chunks(64) {
        pem.push_str(std::str::from_utf8(line).expect("base64 is ASCII"));
        pem.push('\n');
    }
    pem.push_str("-----END PUBLIC KEY-----\n");
    pem
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
            SigningSecret::parse(secret.as_str()).unwrap().hmac_key(),
            secret.hmac_key()
        );
    }

    #[test]
    fn a_generated_ed25519_key_parses_back_with_the_same_public_key() {
        let secret = SigningSecret::generate_for(Signing::Ed25519).unwrap();
        assert!(secret.as_str().starts_with(SECRET_KEY_PREFIX));
        assert_eq!(Signing::of(secret.as_str()), Signing::Ed25519);
        let public = secret.public_key().unwrap();
        assert!(public.starts_with(PUBLIC_KEY_PREFIX));
        assert_eq!(
            STANDARD
                .decode(&public[PUBLIC_KEY_PREFIX.len()..])
                .unwrap()
                .len(),
            32
        );
        let back = SigningSecret::parse(secret.as_str()).unwrap();
        assert_eq!(back.public_key(), Some(public.clone()));
        // The seed alone is the same key.
        let seed = &STANDARD
            .decode(&secret.as_str()[SECRET_KEY_PREFIX.len()..])
            .unwrap()[..32];
        let from_seed = SigningSecret::parse(&format!("whsk_{}", STANDARD.encode(seed))).unwrap();
        assert_eq!(from_seed.public_key(), Some(public));
    }

    #[test]
    fn an_ed25519_key_whose_halves_disagree_or_of_wrong_length_is_rejected() {
        let a = STANDARD
            .decode(
                &SigningSecret::generate_for(Signing::Ed25519)
                    .unwrap()
                    .as_str()[5..],
            )
            .unwrap();
        let b = STANDARD
            .decode(
                &SigningSecret::generate_for(Signing::Ed25519)
                    .unwrap()
                    .as_str()[5..],
            )
            .unwrap();
        let mixed = [&a[..32], &b[32..]].concat();
        assert_eq!(
            SigningSecret::parse(&format!("whsk_{}", STANDARD.encode(mixed))),
            Err(InvalidSecret)
        );
        assert_eq!(
            SigningSecret::parse(&format!("whsk_{}", STANDARD.encode([7u8; 31]))),
            Err(InvalidSecret)
        );
        assert_eq!(SigningSecret::parse("whsk_not base64"), Err(InvalidSecret));
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
        let key = SigningSecret::generate_for(Signing::Ed25519).unwrap();
        assert!(!format!("{key:?}").contains(&key.as_str()[SECRET_KEY_PREFIX.len()..]));
    }
}
