//! Validation of producer-supplied names and headers, shared by the API and
//! anything else that accepts them.

use super::problem::shown;

/// Custom headers may not set these: hookd owns them on every delivery.
const RESERVED_HEADERS: &[&str] = &[
    "content-type",
    "content-length",
    "user-agent",
    "host",
    "connection",
    "transfer-encoding",
    "te",
    "upgrade",
    "keep-alive",
    "proxy-connection",
    "expect",
];
const RESERVED_HEADER_PREFIXES: &[&str] = &["webhook-", "hookd-"];

/// Largest custom header value, in bytes.
pub const MAX_HEADER_VALUE_BYTES: usize = 8 << 10;
/// Largest set of custom headers (names and values) of one endpoint or one
/// notification, in bytes: every delivery carries them, every read shows
/// their names, and caches hold them.
pub const MAX_HEADERS_BYTES: usize = 32 << 10;
/// Most custom headers on one endpoint or one notification.
pub const MAX_HEADERS: usize = 50;
/// Most statuses in an endpoint's `permanent_statuses`: there are 200
/// 4xx and 5xx statuses.
pub const MAX_PERMANENT_STATUSES: usize = 200;

/// What a response shows of custom headers: their names, never their
/// values (they often carry the receiver's credentials).
pub const MASK: &str = "***";

/// The W3C Trace Context headers a notification may keep among its
/// custom headers (`telemetry::trace_context`), lower case.
pub const TRACEPARENT: &str = "traceparent";
pub const TRACESTATE: &str = "tracestate";

/// Custom headers as a response shows them: each value `MASK`, except a
/// W3C trace context's (`traceparent`, `tracestate`), which is no secret
/// and says which trace a notification belongs to.
pub fn masked(
    headers: std::collections::BTreeMap<String, String>,
) -> std::collections::BTreeMap<String, String> {
    headers
        .into_iter()
        .map(|(name, value)| {
            let shown = if name.eq_ignore_ascii_case(TRACEPARENT)
                || name.eq_ignore_ascii_case(TRACESTATE)
            {
                value
            } else {
                MASK.to_string()
            };
            (name, shown)
        })
        .collect()
}

/// `valid_key`'s characters for the OpenAPI document: no control character
/// (Unicode's Cc, as `char::is_control`).
pub const KEY_PATTERN: &str = r"^[^\u0000-\u001F\u007F-\u009F]+$";

/// The longest business key, in bytes (`valid_key`; the OpenAPI document's
/// `maxLength` for a key, in a body or a query).
pub const KEY_MAX_LEN: usize = 255;

/// A producer's business key: 1 to `KEY_MAX_LEN` bytes, no control
/// characters.
pub fn valid_key(key: &str) -> bool {
    !key.is_empty() && key.len() <= KEY_MAX_LEN && !key.chars().any(char::is_control)
}

/// The least string above every string that starts with `prefix`, in
/// code point order (which is UTF-8's byte order, SQLite's `BINARY` and
/// PostgreSQL's `"C"`): `prefix <= key < end` holds exactly the keys that
/// start with it. `None` when nothing is above them (a prefix of only
/// U+10FFFF), and the range has no end.
pub fn prefix_end(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        // The next scalar value: past the surrogates, which are not chars.
        let next = (u32::from(last) + 1..=u32::from(char::MAX)).find_map(char::from_u32);
        if let Some(next) = next {
            chars.push(next);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

/// `valid_uid` for the OpenAPI document (which cannot say "not a UUID"):
/// at least one character that is not a dot, within 255 (hookd takes 128:
/// the pattern, without a lookahead, bounds only what it must).
pub const UID_PATTERN: &str = r"^[A-Za-z0-9_.:-]{0,127}[A-Za-z0-9_:-][A-Za-z0-9_.:-]{0,127}$";

/// `valid_event_type` for the OpenAPI document.
pub const EVENT_TYPE_PATTERN: &str = r"^[A-Za-z0-9_.:/-]{1,255}$";

/// An event's type (`subscription::event_type_problem`) for the OpenAPI
/// document: dot-separated segments, none empty (with maxLength 255).
pub const EVENT_SEGMENTS_PATTERN: &str = r"^[A-Za-z0-9_:/-]+(\.[A-Za-z0-9_:/-]+)*$";

/// An endpoint uid: 1–128 of `A-Z a-z 0-9 _ - . :`, not dots alone, and
/// not a UUID (ids and uids share the `/v1/endpoints/{id or uid}` path).
pub fn valid_uid(uid: &str) -> bool {
    (1..=128).contains(&uid.len())
        && uid
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-.:".contains(&b))
        // `.` and `..` are path segments every client's URL handling
        // removes: such an endpoint or owner could not be named in a path.
        && uid.bytes().any(|b| b != b'.')
        && uuid::Uuid::parse_str(uid).is_err()
}

/// An event type: 1–255 of `A-Z a-z 0-9 _ - . : /`.
pub fn valid_event_type(event_type: &str) -> bool {
    (1..=255).contains(&event_type.len())
        && event_type
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-.:/".contains(&b))
}

/// Why a custom header cannot be sent, if it cannot.
pub fn header_problem(name: &str, value: &str) -> Option<String> {
    let lower = name.to_ascii_lowercase();
    let valid_name = hyper::header::HeaderName::from_bytes(name.as_bytes()).is_ok();
    // Quoted below, cut: a name may be megabytes long.
    let name = shown(name);
    if !valid_name {
        return Some(format!("`{name}` is not a valid header name"));
    }
    if value.len() > MAX_HEADER_VALUE_BYTES {
        return Some(format!(
            "the value of `{name}` is {} bytes; at most {MAX_HEADER_VALUE_BYTES}",
            value.len()
        ));
    }
    if value.starts_with(crate::domain::sealed::PREFIX) {
        // The stored form of an encrypted value: as a plaintext value it
        // would be taken for one.
        return Some(format!(
            "the value of `{name}` may not start with `{}`",
            crate::domain::sealed::PREFIX
        ));
    }
    if hyper::header::HeaderValue::from_str(value).is_err() {
        return Some(format!("the value of `{name}` is not a valid header value"));
    }
    if RESERVED_HEADERS.contains(&lower.as_str())
        || RESERVED_HEADER_PREFIXES
            .iter()
            .any(|p| lower.starts_with(p))
    {
        return Some(format!("`{name}` is set by hookd and cannot be overridden"));
    }
    None
}

/// Custom headers as `Debug` shows them: names, each value `***`. For the
/// manual `Debug` of structs that hold them in clear.
pub struct MaskedHeaders<'a>(pub Option<&'a std::collections::BTreeMap<String, String>>);

impl std::fmt::Debug for MaskedHeaders<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        struct Masked;
        impl std::fmt::Debug for Masked {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(MASK)
            }
        }
        match self.0 {
            Some(headers) => f
                .debug_map()
                .entries(headers.keys().map(|name| (name, Masked)))
                .finish(),
            None => f.write_str("None"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masked_headers_show_names_and_never_values() {
        let headers = [("Authorization".to_string(), "Bearer hunter2".to_string())].into();
        let shown = format!("{:?}", MaskedHeaders(Some(&headers)));
        assert_eq!(shown, r#"{"Authorization": ***}"#);
        assert_eq!(format!("{:?}", MaskedHeaders(None)), "None");
    }

    #[test]
    fn uids_are_short_plain_names_that_are_not_uuids() {
        assert!(valid_uid("orders-eu.1"));
        assert!(!valid_uid(""));
        assert!(!valid_uid("has space"));
        assert!(!valid_uid(&"x".repeat(129)));
        assert!(!valid_uid("0193a5f2-7c1e-7b3a-9c4d-1e2f3a4b5c6d"));
    }

    #[test]
    fn a_prefixs_end_is_above_every_key_that_starts_with_it_and_below_the_rest() {
        assert_eq!(prefix_end("order-12").as_deref(), Some("order-13"));
        assert_eq!(prefix_end("a\u{d7ff}").as_deref(), Some("a\u{e000}"));
        assert_eq!(prefix_end("a\u{10ffff}").as_deref(), Some("b"));
        assert_eq!(prefix_end("\u{10ffff}\u{10ffff}"), None);
        let end = prefix_end("订单-9").unwrap();
        for key in ["订单-9", "订单-9z", "订单-9\u{10ffff}x"] {
            assert!(key >= "订单-9" && key < end.as_str(), "{key}");
        }
        for key in ["订单-8z", "订单-:", "订单."] {
            assert!(!(key >= "订单-9" && key < end.as_str()), "{key}");
        }
    }

    #[test]
    fn hookd_owned_headers_cannot_be_overridden() {
        assert!(header_problem("X-Tenant", "acme").is_none());
        assert!(header_problem("Webhook-Signature", "v1,forged").is_some());
        assert!(header_problem("hookd-attempt", "9").is_some());
        assert!(header_problem("Content-Type", "text/plain").is_some());
        assert!(header_problem("bad header", "x").is_some());
        assert!(header_problem("X-Ok", "line\nbreak").is_some());
        assert!(header_problem("X-Big", &"a".repeat(MAX_HEADER_VALUE_BYTES)).is_none());
        assert!(header_problem("X-Big", &"a".repeat(MAX_HEADER_VALUE_BYTES + 1)).is_some());
    }
}
