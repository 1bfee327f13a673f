//! The headers of an attempt: hookd's own (`own_headers`, the one rule the
//! sender sends by and the attempts API shows by), the endpoint's and the
//! notification's custom ones (`header_map`), and what an attempt's row
//! keeps of them (`Kept`).

use std::collections::BTreeMap;

use hyper::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE, USER_AGENT};
use uuid::Uuid;

use super::USER_AGENT_VALUE;
use crate::domain::attempt_headers;

/// Headers hookd sets on every attempt: content-type, user-agent,
/// webhook-id, -timestamp and -signature, hookd-attempt, hookd-event-type
/// and hookd-event-id, and webhook-sequence on an ordered endpoint.
pub const OWN_HEADERS: usize = 9;

/// What hookd's own headers on an attempt are made of: the attempt and
/// its notification.
#[derive(Debug, Clone)]
pub struct Own<'a> {
    /// The notification's id, as `webhook-id`.
    pub id: &'a str,
    /// When the attempt started, in Unix seconds.
    pub timestamp: i64,
    /// The `webhook-signature` value, if it is a valid one.
    pub signature: Option<HeaderValue>,
    /// 1-based, over every series.
    pub attempt: u32,
    pub content_type: &'a str,
    pub event_type: Option<&'a str>,
    pub sequence: Option<i64>,
    pub event_id: Option<Uuid>,
}

/// hookd's own headers (`OWN_HEADERS`), each handed to `put` in the order
/// the sender sets them, after the custom ones, which they override. The
/// one rule: the sender sends by it, and an attempt's view shows by it
/// what was sent.
pub fn own_headers(own: &Own<'_>, mut put: impl FnMut(HeaderName, HeaderValue)) {
    if let Ok(value) = content_type_value(own.content_type) {
        put(CONTENT_TYPE, value);
    }
    put(USER_AGENT, HeaderValue::from_static(USER_AGENT_VALUE));
    if let Ok(value) = HeaderValue::from_str(own.id) {
        put(HeaderName::from_static("webhook-id"), value);
    }
    put(
        HeaderName::from_static("webhook-timestamp"),
        HeaderValue::from(own.timestamp),
    );
    if let Some(signature) = &own.signature {
        put(
            HeaderName::from_static("webhook-signature"),
            signature.clone(),
        );
    }
    put(
        HeaderName::from_static("hookd-attempt"),
        HeaderValue::from(own.attempt),
    );
    if let Some(event_type) = own.event_type {
        if let Ok(value) = HeaderValue::from_str(event_type) {
            put(HeaderName::from_static("hookd-event-type"), value);
        }
    }
    if let Some(sequence) = own.sequence {
        put(
            HeaderName::from_static(crate::domain::ordering::SEQUENCE_HEADER),
            HeaderValue::from(sequence),
        );
    }
    if let Some(event_id) = own.event_id {
        let mut buffer = Uuid::encode_buffer();
        let event_id: &str = event_id.hyphenated().encode_lower(&mut buffer);
        if let Ok(value) = HeaderValue::from_str(event_id) {
            put(HeaderName::from_static("hookd-event-id"), value);
        }
    }
}

/// The content type's header value; JSON, nearly every notification's,
/// without an allocation.
pub(super) fn content_type_value(
    content_type: &str,
) -> Result<HeaderValue, hyper::header::InvalidHeaderValue> {
    if content_type == "application/json" {
        return Ok(HeaderValue::from_static("application/json"));
    }
    HeaderValue::from_str(content_type)
}

/// An attempt's headers as the sender saw them, turned into the text its
/// row keeps (`encode`) only for an attempt that gets a row of `attempts`:
/// the delivery at its first attempt, the one most deliveries make, keeps
/// none, and pays only for moving these.
#[derive(Debug, Clone, Default)]
pub struct Kept {
    /// The `webhook-signature` value sent, and the custom headers' names;
    /// `None` when no request was made.
    pub sent: Option<(HeaderValue, Vec<HeaderName>)>,
    /// The response's headers; `None` when no response came.
    pub answered: Option<HeaderMap>,
}

impl Kept {
    /// `(sent_headers, response_headers)` as an attempt's row keeps them
    /// (`domain::attempt_headers`).
    pub fn encode(self) -> (Option<String>, Option<String>) {
        let sent = self.sent.map(|(signature, custom)| {
            attempt_headers::encode_sent(
                signature.to_str().unwrap_or_default(),
                custom.iter().map(HeaderName::as_str),
            )
        });
        let answered = self.answered.and_then(|headers| {
            attempt_headers::encode_response(
                headers
                    .iter()
                    .map(|(name, value)| (name.as_str(), value.as_bytes())),
            )
        });
        (sent, answered)
    }
}

/// Adds custom headers to `map`, replacing same-named ones (names are
/// case-insensitive). Names and values were validated when stored; one that
/// still does not fit HTTP is skipped.
pub(super) fn header_map(custom: &BTreeMap<String, String>, mut map: HeaderMap) -> HeaderMap {
    for (name, value) in custom {
        if let (Ok(name), Ok(mut value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            // Custom headers often carry the receiver's credentials: never
            // printed by Debug, never indexed by HTTP/2 header compression.
            value.set_sensitive(true);
            map.insert(name, value);
        }
    }
    map
}
