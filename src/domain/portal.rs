//! Portal links (docs/design.md §11, §18): a token that lets whoever holds
//! it see one endpoint's or one owner's notifications, and, as its
//! permissions say, retry them and manage the endpoints (URL, event types,
//! secret, a test), until it expires. Signed, not stored: rotating
//! `portal.key` revokes every link.
//!
//! `hookd_portal_` + base64url(payload) + `.` + base64url(HMAC-SHA256(key,
//! "hookd-portal-v1." + base64url(payload))), base64 without padding. The
//! payload is `<kind>.<expiry>.<endpoint id>` or `<kind>.<expiry>.<owner
//! uid>`, the expiry in unix seconds. The kind is `e` (an endpoint) or `o`
//! (an owner), alone for the default permissions (read and retry, all a
//! link could do before permissions existed, so earlier links keep
//! working) or followed by the permissions' letters in this order: `r`
//! read (always), `t` retry, `m` manage (`ertm`, `or`). An endpoint's link
//! issued after a revocation
//! adds `.<generation>` (`e.<expiry>.<endpoint id>.<generation>`), the
//! endpoint's `portal_generation` then: a link of another generation than
//! its endpoint's current one is refused. An owner's link issued after a
//! revocation adds `~<generation>` (`o.<expiry>.<owner uid>~<generation>`:
//! a uid may hold a `.`, never a `~`), the highest generation of the
//! owner's endpoints then: a link below the current highest is refused.
//! A link lives no longer than what it shows, and a refused one stays
//! refused: an owner with no live endpoint refuses its links (and issues
//! none), and an endpoint that comes to it later (created with that owner,
//! or moved to it) starts past every generation the owner had (its
//! endpoints', deleted ones included, and its revocations'), so a link of
//! a merchant offboarded last week does not wake up for the next endpoint
//! given that owner name. An endpoint moved to another owner (or to none)
//! likewise starts past every generation of its new owner and its own,
//! which revokes its links and the new owner's, as a revocation would, and
//! leaves its old owner's generation where it was (`portal_owners`). The
//! stores write the rule in their create and change statements
//! (`postgres::endpoints`, `sqlite::endpoints`, `past_generations`).
//!
//! The MAC covers the payload as sent, so nothing
//! of it is decoded before the signature holds; the version string keeps a
//! MAC made for anything else under the same key from passing as a link.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use chrono::{DateTime, Duration, Utc};
use hmac::{Hmac, KeyInit, Mac};
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

/// What a link's holder may do beyond reading (which every link may):
/// retry its notifications, and manage its endpoints (§18: change the URL
/// and event types, see and rotate the signing secret, send a test).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortalPermissions {
    pub retry: bool,
    pub manage: bool,
}

impl Default for PortalPermissions {
    /// `["read", "retry"]`, as DESIGN §18 says.
    fn default() -> Self {
        Self {
            retry: true,
            manage: false,
        }
    }
}

impl PortalPermissions {
    /// Every permission's name, in the order `names` gives them.
    pub const NAMES: [&'static str; 3] = ["read", "retry", "manage"];

    /// The permissions `names` grant: each one of `NAMES`, `read` among
    /// them, none twice. `None` for anything else.
    pub fn from_names<S: AsRef<str>>(names: &[S]) -> Option<Self> {
        let mut seen = [false; 3];
        for name in names {
            let at = Self::NAMES.iter().position(|n| *n == name.as_ref())?;
            if std::mem::replace(&mut seen[at], true) {
                return None;
            }
        }
        seen[0].then_some(Self {
            retry: seen[1],
            manage: seen[2],
        })
    }

    /// What `from_names` takes back.
    pub fn names(self) -> Vec<&'static str> {
        let held = [true, self.retry, self.manage];
        Self::NAMES
            .into_iter()
            .zip(held)
            .filter_map(|(name, held)| held.then_some(name))
            .collect()
    }

    /// The letters after a token's kind: none for the default.
    fn letters(self) -> String {
        if self == Self::default() {
            return String::new();
        }
        let mut letters = String::from("r");
        if self.retry {
            letters.push('t');
        }
        if self.manage {
            letters.push('m');
        }
        letters
    }

    /// What `letters` wrote: exactly one of its spellings.
    fn from_letters(letters: &str) -> Option<Self> {
        if letters.is_empty() {
            return Some(Self::default());
        }
        let rest = letters.strip_prefix('r')?;
        let (retry, rest) = match rest.strip_prefix('t') {
            Some(rest) => (true, rest),
            None => (false, rest),
        };
        let manage = match rest {
            "" => false,
            "m" => true,
            _ => return None,
        };
        let permissions = Self { retry, manage };
        // The default has one spelling, the bare kind.
        (permissions != Self::default()).then_some(permissions)
    }
}

/// What a valid token says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortalClaims {
    pub scope: PortalScope,
    pub permissions: PortalPermissions,
    pub expires_at: DateTime<Utc>,
    /// The endpoint's `portal_generation` when the link was issued, or for
    /// an owner's link the highest of its endpoints' (0 for links issued
    /// before any revocation).
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
    let letters = claims.permissions.letters();
    let expiry = claims.expires_at.timestamp();
    let payload = match &claims.scope {
        PortalScope::Endpoint(id) if claims.generation > 0 => {
            format!("e{letters}.{expiry}.{id}.{}", claims.generation)
        }
        PortalScope::Endpoint(id) => format!("e{letters}.{expiry}.{id}"),
        PortalScope::Owner(uid) if claims.generation > 0 => {
            format!("o{letters}.{expiry}.{uid}~{}", claims.generation)
        }
        PortalScope::Owner(uid) => format!("o{letters}.{expiry}.{uid}"),
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
    let (kind, letters) = kind.split_at_checked(1)?;
    let permissions = PortalPermissions::from_letters(letters)?;
    let (scope, generation) = match kind {
        "e" => {
            let (id, generation) = match subject.split_once('.') {
                Some((id, generation)) => (id, generation.parse().ok().filter(|g| *g > 0)?),
                None => (subject, 0),
            };
            (PortalScope::Endpoint(Uuid::parse_str(id).ok()?), generation)
        }
        "o" => {
            let (uid, generation) = match subject.split_once('~') {
                Some((uid, generation)) => (uid, generation.parse().ok().filter(|g| *g > 0)?),
                None => (subject, 0),
            };
            if !valid_uid(uid) {
                return None;
            }
            (PortalScope::Owner(uid.to_string()), generation)
        }
        _ => return None,
    };
    Some(PortalClaims {
        scope,
        permissions,
        expires_at,
        generation,
    })
}

#[cfg(test)]
#[path = "portal_tests.rs"]
mod tests;
