//! What notifications and events share: the body (a JSON `payload` or a
//! text `body`) with its content type, when it is due, and where it may go.

use std::net::IpAddr;

use chrono::{DateTime, Utc};
use serde_json::value::RawValue;

use crate::domain::json_keys::{unreadable, Unreadable};
use crate::domain::json_value::{
    is_json_content_type, nests_deeper_than, unreadable_value, MAX_PAYLOAD_DEPTH,
};
use crate::domain::problem::{shown, ErrorCode, Problem};
use crate::domain::schedule::parse_duration;

/// Furthest in the future a notification or event may be scheduled.
pub const MAX_DEFERRAL_DAYS: i64 = 365;
const DEFAULT_CONTENT_TYPE: &str = "application/json";
/// A `body` is text unless its `content_type` says otherwise.
const DEFAULT_TEXT_CONTENT_TYPE: &str = "text/plain; charset=utf-8";

/// The bytes to send and their media type.
pub(super) struct Content {
    pub body: Vec<u8>,
    pub content_type: String,
    /// Which was given, `payload` or `body`: the field a problem with it names.
    pub field: &'static str,
}

impl Content {
    /// JSON content as hookd's answers show it back (`api::body`: as a
    /// `payload`, inside the answer's own JSON) and as a receiver's parser
    /// reads it: it nests at most `MAX_PAYLOAD_DEPTH` levels, and holds no
    /// value serde_json will not read (`unreadable_value`). hookd stored
    /// such a notification and sent it as given, and then its Rust client
    /// failed to read it back, and a pull that offered it failed the
    /// consumer's whole batch after hookd had leased every notification in
    /// it. Content of another type is not read, and a `body` of JSON's
    /// type that does not parse (shown as text) only for its depth.
    pub fn readable_back(&self) -> Result<(), Problem> {
        if !is_json_content_type(&self.content_type) {
            return Ok(());
        }
        if nests_deeper_than(&self.body, MAX_PAYLOAD_DEPTH) {
            return Err(Problem::invalid(
                ErrorCode::InvalidValue,
                self.field,
                format!(
                    "JSON content nests at most {MAX_PAYLOAD_DEPTH} levels deep: hookd's answers carry it inside their own JSON, which common parsers stop reading at 128"
                ),
            ));
        }
        match unreadable_value(&self.body) {
            Some(why) => Err(Problem::invalid(
                ErrorCode::InvalidValue,
                self.field,
                format!(
                    "JSON content holds a value common JSON parsers cannot read ({}): a number beyond a 64-bit float's range, or an escape of half a UTF-16 surrogate pair",
                    shown(&why)
                ),
            )),
            None => Ok(()),
        }
    }

    /// An event's content as payload filters read it: readable back
    /// (`readable_back`), which filters then read whole, and no object
    /// names a key twice: a filter reads a repeated key's last value and a
    /// receiver's parser may read its first. (A `body` need not be JSON:
    /// one that is not matches no filter, as its text says.)
    pub fn readable_by_filters(&self) -> Result<(), Problem> {
        self.readable_back()?;
        if !is_json_content_type(&self.content_type) {
            return Ok(());
        }
        match unreadable(&self.body) {
            Some(Unreadable::RepeatedKey(key)) => Err(Problem::invalid(
                ErrorCode::InvalidValue,
                self.field,
                format!(
                    "an event's JSON names the key \"{}\" twice in one object: payload filters would read one value and a receiver perhaps the other",
                    shown(&key)
                ),
            )),
            _ => Ok(()),
        }
    }
}

/// Takes exactly one of `payload` (JSON, kept as the bytes given) and
/// `body` (text), within `max_bytes`.
pub(super) fn content(
    payload: Option<Box<RawValue>>,
    body: Option<String>,
    content_type: Option<String>,
    max_bytes: usize,
) -> Result<Content, Problem> {
    let (body, field) = match (payload, body) {
        (Some(_), Some(_)) => {
            return Err(Problem::invalid(
                ErrorCode::ConflictingFields,
                "body",
                "give either payload (JSON) or body (text), not both",
            ))
        }
        (None, None) => {
            return Err(Problem::invalid(
                ErrorCode::MissingField,
                "payload",
                "payload (JSON) or body (text) is required",
            ))
        }
        (Some(payload), None) => (payload.get().as_bytes().to_vec(), "payload"),
        (None, Some(body)) => (body.into_bytes(), "body"),
    };
    if body.len() > max_bytes {
        return Err(Problem::too_large(
            field,
            format!(
                "{field} is {} bytes; api.max_payload_bytes is {max_bytes}",
                body.len()
            ),
        ));
    }
    let default_type = if field == "body" {
        DEFAULT_TEXT_CONTENT_TYPE
    } else {
        DEFAULT_CONTENT_TYPE
    };
    let content_type = content_type.unwrap_or_else(|| default_type.into());
    if content_type.len() > 255
        || !content_type.contains('/')
        || hyper::header::HeaderValue::from_str(&content_type).is_err()
    {
        return Err(Problem::invalid(
            ErrorCode::InvalidValue,
            "content_type",
            "content_type is a media type such as application/json",
        ));
    }
    Ok(Content {
        body,
        content_type,
        field,
    })
}

/// When nothing may be sent before: `deliver_at`, or `now + delay`, or now.
pub(super) fn deliver_at(
    deliver_at: Option<String>,
    delay: Option<String>,
    now: DateTime<Utc>,
) -> Result<DateTime<Utc>, Problem> {
    let at = match (deliver_at, delay) {
        (Some(_), Some(_)) => {
            return Err(Problem::invalid(
                ErrorCode::ConflictingFields,
                "delay",
                "give either deliver_at or delay, not both",
            ))
        }
        (Some(at), None) => DateTime::parse_from_rfc3339(&at)
            .map_err(|_| {
                Problem::invalid(
                    ErrorCode::InvalidValue,
                    "deliver_at",
                    "deliver_at is an RFC 3339 time such as 2026-01-31T12:00:00Z",
                )
            })
            .map(|at| whole_micros(at.with_timezone(&Utc)))?,
        (None, Some(delay)) => {
            let ms = parse_duration(&delay)
                .map_err(|e| Problem::invalid(ErrorCode::InvalidValue, "delay", e.to_string()))?;
            now + chrono::Duration::milliseconds(ms as i64)
        }
        (None, None) => now,
    };
    if at > now + chrono::Duration::days(MAX_DEFERRAL_DAYS) {
        return Err(Problem::invalid(
            ErrorCode::InvalidValue,
            "deliver_at",
            format!("deliveries may be deferred by at most {MAX_DEFERRAL_DAYS} days"),
        ));
    }
    Ok(at)
}

/// `at` to the microsecond, as both stores keep times, so that a create
/// answers the time a read will: nanoseconds are cut, and a leap second
/// (`23:59:60.5`) is the second after it (`00:00:00.5`), as the stores count.
fn whole_micros(at: DateTime<Utc>) -> DateTime<Utc> {
    DateTime::from_timestamp_micros(at.timestamp_micros()).unwrap_or(at)
}

/// A receiver URL, an endpoint's or a notification's own (Alipay's
/// `notify_url`), as given to create or change it: a URL whose host, when
/// it is an address, is one the sender's guard lets through, so that a
/// URL no attempt could ever reach is refused when given, not recorded as
/// `blocked_address` at every attempt. Names are checked by the guard when
/// they are resolved, at each attempt, and so is a URL stored before
/// `sender.allow_networks` was narrowed.
pub(super) fn allowed_url(
    text: &str,
    https_only: bool,
    guard: &crate::sender::guard::Guard,
) -> Result<String, Problem> {
    let url = crate::domain::validate::check_url(text, "url", https_only)?;
    let address = match url.host() {
        Some(url::Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
        Some(url::Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
        _ => None,
    };
    if let Some(ip) = address.filter(|ip| !guard.permits(*ip)) {
        return Err(Problem::invalid(
            ErrorCode::InvalidUrl,
            "url",
            format!("{ip} is a private, loopback or link-local address, which sender.allow_networks does not allow"),
        ));
    }
    Ok(url.to_string())
}
