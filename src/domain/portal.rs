//! Portal links (docs/design.md §11): a token that lets whoever holds it see one
//! endpoint's or one owner's notifications, and retry them, until it
//! expires. Signed, not stored: rotating `portal.key` revokes every link.
//!
//! `hookd_portal_` + base64url(payload) + `.` + base64url(HMAC-SHA256(key,
//! "hookd-portal-v1." + base64url(payload))), base64 without padding. The
//! payload is `e.<expiry>.<endpoint id>` or `o.<expiry>.<owner uid>`, the
//! expiry in unix seconds; an endpoint's link issued after a revocation
//! adds `.<generation>` (`e.<expiry>.<endpoint id>.<generation>`), the
//! endpoint's `portal_generation` then: a link of another generation than
//! its endpoint's current one is refused. The MAC covers the payload as sent, so nothing
//! of it is decoded before the signature holds; the version string keeps a
//! MAC made for anything else under the same key from passing as a link.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use chrono::{DateTime, Duration, Utc};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use uuid::Uuid;

use super::fields::valid_uid;

/// How every portal token starts, so the API tells it from an API token
/// before any other work.
pub const PORTAL_TOKEN_PREFIX: &str = "hookd_portal_";

/// Longer tokens are refused before any decoding or MAC: the longest hookd
/// issues (an owner uid of 128 bytes) is about 250.
pub const MAX_TOKEN_BYTES: usize = 512;

/// The longest life of a link: 7 days.
pub const MAX_LIFETIME_SECONDS: i64 = 7 * 24 * 3600;

/// A link's life unless the request names one: a day.
pub const DEFAULT_LIFETIME_SECONDS: i64 = 24 * 3600;

const CONTEXT: &[u8] = b"hookd-portal-v1.";

/// What a link shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PortalScope {
    Endpoint(Uuid),
    Owner(String),
}

/// What a valid token says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortalClaims {
    pub scope: PortalScope,
    pub expires_at: DateTime<Utc>,
    /// The endpoint's `portal_generation` when the link was issued (0 for
    /// an owner's link, and for links issued before any revocation).
    pub generation: u32,
}

/// Why a token is refused. The API answers every one alike (401): the
/// kinds are for tests and logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("the token is longer than any hookd issues")]
    TooLong,
    #[error("the token is not a portal token")]
    Malformed,
    #[error("the token's signature does not match portal.key")]
    BadSignature,
    #[error("the link expired")]
    Expired,
    #[error("the token expires later than any link hookd issues")]
    TooFarAhead,
}

/// Whether a requested lifetime is allowed: 1 s to 7 days.
pub fn valid_lifetime(seconds: i64) -> bool {
    (1..=MAX_LIFETIME_SECONDS).contains(&seconds)
}

/// The token for `claims`, signed with `key`. Expiries are whole seconds:
/// a sub-second part is dropped.
pub fn sign(key: &[u8], claims: &PortalClaims) -> String {
    let payload = match &claims.scope {
        PortalScope::Endpoint(id) if claims.generation > 0 => format!(
            "e.{}.{id}.{}",
            claims.expires_at.timestamp(),
            claims.generation
        ),
        PortalScope::Endpoint(id) => format!("e.{}.{id}", claims.expires_at.timestamp()),
        PortalScope::Owner(uid) => format!("o.{}.{uid}", claims.expires_at.timestamp()),
    };
    let payload = URL_SAFE_NO_PAD.encode(payload);
    let signature = URL_SAFE_NO_PAD.encode(mac(key, &payload).finalize().into_bytes());
    format!("{PORTAL_TOKEN_PREFIX}{payload}.{signature}")
}

/// What `token` grants at `now`, if `key` signed it and it has not
/// expired. The length is checked first, then the signature (in constant
/// time), and only then is the payload decoded.
pub fn verify(key: &[u8], token: &str, now: DateTime<Utc>) -> Result<PortalClaims, TokenError> {
    if token.len() > MAX_TOKEN_BYTES {
        return Err(TokenError::TooLong);
    }
    let rest = token
        .strip_prefix(PORTAL_TOKEN_PREFIX)
        .ok_or(TokenError::Malformed)?;
    let (payload, signature) = rest.rsplit_once('.').ok_or(TokenError::Malformed)?;
    let signature = URL_SAFE_NO_PAD
        .decode(signature)
        .map_err(|_| TokenError::Malformed)?;
    mac(key, payload)
        .verify_slice(&signature)
        .map_err(|_| TokenError::BadSignature)?;
    let claims = parse(payload).ok_or(TokenError::Malformed)?;
    if claims.expires_at <= now {
        return Err(TokenError::Expired);
    }
    if claims.expires_at > now + Duration::seconds(MAX_LIFETIME_SECONDS + 60) {
        return Err(TokenError::TooFarAhead);
    }
    Ok(claims)
}

fn mac(key: &[u8], payload: &str) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes a key of any length");
    mac.update(CONTEXT);
    mac.update(payload.as_bytes());
    mac
}

fn parse(payload: &str) -> Option<PortalClaims> {
    let text = String::from_utf8(URL_SAFE_NO_PAD.decode(payload).ok()?).ok()?;
    let mut parts = text.splitn(3, '.');
    let (kind, expiry, subject) = (parts.next()?, parts.next()?, parts.next()?);
    let expires_at = DateTime::from_timestamp(expiry.parse().ok()?, 0)?;
    let (scope, generation) = match kind {
        "e" => {
            let (id, generation) = match subject.split_once('.') {
                Some((id, generation)) => (id, generation.parse().ok().filter(|g| *g > 0)?),
                None => (subject, 0),
            };
            (PortalScope::Endpoint(Uuid::parse_str(id).ok()?), generation)
        }
        "o" if valid_uid(subject) => (PortalScope::Owner(subject.to_string()), 0),
        _ => return None,
    };
    Some(PortalClaims {
        scope,
        expires_at,
        generation,
    })
}

#[cfg(test)]
#[path = "portal_tests.rs"]
mod tests;
