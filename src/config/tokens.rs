//! `api.tokens`: plain strings (admin tokens) or tables with a name, the
//! token or its SHA-256, and scopes; checked once at load and kept as
//! digests.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::{ApiSettings, Secret};
use crate::domain::pull::CONSUMER_TOKEN_PREFIX;
use crate::domain::scope::{Scope, Scopes};

/// One entry of `api.tokens`: a plain string (an `admin` token, as before
/// scopes existed) or a table with a name, the token or its SHA-256, and
/// scopes.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum TokenSpec {
    Plain(Secret),
    Scoped(ScopedToken),
}

/// A string or a table, each read as itself: a mistake in a table says
/// which field and what it may be (`unknown variant `superuser`, expected
/// one of `admin`, ...`), where serde's untagged enum said only that the
/// entry matched no variant.
impl<'de> Deserialize<'de> for TokenSpec {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Entry;
        impl<'de> serde::de::Visitor<'de> for Entry {
            type Value = TokenSpec;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a token string, or a table with name, token or sha256, and scopes")
            }

            fn visit_str<E: serde::de::Error>(self, token: &str) -> Result<TokenSpec, E> {
                Ok(TokenSpec::Plain(Secret::new(token)))
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<TokenSpec, A::Error> {
                ScopedToken::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(TokenSpec::Scoped)
            }
        }
        deserializer.deserialize_any(Entry)
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ScopedToken {
    /// Shows in audit events and logs, never the token.
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<Secret>,
    /// Hex SHA-256 of the token, so a config file need not hold the token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<Secret>,
    pub scopes: Vec<Scope>,
}

/// A token as hookd checks it: only its digest is kept.
#[derive(Clone, PartialEq, Eq)]
pub struct Credential {
    pub name: String,
    pub digest: [u8; 32],
    pub scopes: Scopes,
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credential")
            .field("name", &self.name)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

/// 128 bits as base64 take 22 characters; a shorter token is guessable.
pub const MIN_TOKEN_CHARS: usize = 22;

impl TokenSpec {
    /// The credential this entry stands for, or why it is invalid. Plain
    /// entries are named by their place in the list (`token-1`, ...).
    pub(super) fn credential(&self, index: usize) -> Result<Credential, String> {
        let long_enough = |token: &Secret| {
            if !token.expose().bytes().all(|b| b.is_ascii_graphic()) {
                // A client sends it after `Bearer `, where a space, a line
                // feed or a byte past ASCII does not survive.
                Err("each token is printable ASCII without spaces (it is sent in an Authorization header)".to_string())
            } else if token.expose().chars().count() < MIN_TOKEN_CHARS {
                Err(format!(
                    "each token must have at least {MIN_TOKEN_CHARS} characters (128 bits as base64)"
                ))
            } else if token.expose().starts_with(CONSUMER_TOKEN_PREFIX) {
                // Requests with such a token are read as a consumer's.
                Err(format!(
                    "a token may not start with `{CONSUMER_TOKEN_PREFIX}`: that marks pull consumer tokens"
                ))
            } else {
                Ok(digest(token.expose()))
            }
        };
        match self {
            TokenSpec::Plain(token) => Ok(Credential {
                name: format!("token-{}", index + 1),
                digest: long_enough(token)?,
                scopes: Scopes::ALL,
            }),
            TokenSpec::Scoped(entry) => {
                let name_ok = (1..=64).contains(&entry.name.len())
                    && entry
                        .name
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"_-.:".contains(&b));
                if !name_ok {
                    return Err("each name is 1 to 64 of A-Z a-z 0-9 _ - . :".into());
                }
                if entry.scopes.is_empty() {
                    return Err(format!("`{}` needs at least one scope", entry.name));
                }
                let digest = match (&entry.token, &entry.sha256) {
                    (Some(token), None) => long_enough(token)?,
                    (None, Some(hex)) => parse_digest(hex.expose())
                        .ok_or_else(|| format!("`{}`: sha256 is 64 hex digits", entry.name))?,
                    _ => {
                        return Err(format!(
                            "`{}` needs exactly one of token or sha256",
                            entry.name
                        ))
                    }
                };
                Ok(Credential {
                    name: entry.name.clone(),
                    digest,
                    scopes: Scopes::of(&entry.scopes),
                })
            }
        }
    }
}

/// SHA-256 of a token: what hookd compares, in constant time.
pub fn digest(token: &str) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(token.as_bytes()).into()
}

fn parse_digest(hex: &str) -> Option<[u8; 32]> {
    let hex = hex.trim();
    if hex.len() != 64 || !hex.is_ascii() {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

impl ApiSettings {
    /// The configured tokens as credentials (validated at load, so this
    /// cannot fail afterwards; invalid entries are left out).
    pub fn credentials(&self) -> Vec<Credential> {
        self.tokens
            .iter()
            .enumerate()
            .filter_map(|(i, spec)| spec.credential(i).ok())
            .collect()
    }
}
