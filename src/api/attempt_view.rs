//! How an attempt is shown: its outcome, the request's headers as they
//! were sent and the response's as far as they are kept
//! (`domain::attempt_headers`), and whether a retry started it.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::domain::attempt_headers::{decode_response, decode_sent};
use crate::sender::{own_headers, Own};
use crate::store::attempts::Attempt;
use crate::store::notifications::Notification;

#[derive(Serialize, utoipa::ToSchema)]
pub struct AttemptView {
    /// 1-based, over every series.
    pub number: i32,
    pub started_at: DateTime<Utc>,
    pub duration_ms: i32,
    pub status_code: Option<i32>,
    /// The first 4 KiB of the response body.
    pub response_body: Option<String>,
    /// Why no acceptable response came: `timeout`, `connect`, `blocked_address`...
    pub error: Option<AttemptError>,
    /// `succeeded`, `retry` (another attempt follows) or `failed` (final).
    pub outcome: String,
    /// Where the attempt went, when the notification names its own URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The request's headers as sent: hookd's own (`webhook-id`,
    /// `webhook-timestamp`, `webhook-signature`, ...), then each custom
    /// header by name, its value `null` (never kept: credentials, often).
    /// `null` when no request was made (a pull consumer's attempt, one
    /// refused before sending), for a delivery at its first attempt (kept
    /// in its notification's row, without headers), or for an attempt
    /// recorded before hookd kept them.
    pub request_headers: Option<Vec<HeaderLine>>,
    /// The response's headers, whole ones within their first 4 KiB; `null`
    /// as `request_headers` is.
    pub response_headers: Option<Vec<HeaderLine>>,
    /// It opens an attempt series a retry started (a caller's, a bulk
    /// retry's or a recover's).
    pub retried: bool,
}

/// One header of a request or response.
#[derive(Serialize, utoipa::ToSchema, Debug, PartialEq, Eq)]
pub struct HeaderLine {
    pub name: String,
    /// `null` for a custom header of a request: its value is not kept.
    pub value: Option<String>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct AttemptError {
    pub code: String,
    pub message: String,
}

impl AttemptView {
    /// Attempt `a` of `notification`.
    pub(super) fn of(a: Attempt, notification: &Notification) -> Self {
        Self {
            request_headers: a
                .sent_headers
                .as_deref()
                .map(|sent| request_headers(notification, &a, sent)),
            response_headers: a.response_headers.as_deref().map(|text| {
                decode_response(text)
                    .into_iter()
                    .map(|(name, value)| HeaderLine {
                        name: name.to_string(),
                        value: Some(value.to_string()),
                    })
                    .collect()
            }),
            retried: a.retried,
            number: a.number,
            started_at: a.started_at,
            duration_ms: a.duration_ms,
            status_code: a.status_code,
            response_body: a.response_body,
            error: a.error_code.map(|code| AttemptError {
                code,
                message: a.error_message.unwrap_or_default(),
            }),
            outcome: a.outcome.to_string(),
            url: None,
        }
    }
}

/// What attempt `a` of `notification` sent, by the rule the sender sends
/// by (`sender::own_headers`), with what its row kept (`sent`).
fn request_headers(notification: &Notification, a: &Attempt, sent: &str) -> Vec<HeaderLine> {
    let sent = decode_sent(sent);
    let mut buffer = uuid::Uuid::encode_buffer();
    let own = Own {
        id: notification.id.hyphenated().encode_lower(&mut buffer),
        timestamp: a.started_at.timestamp(),
        signature: hyper::header::HeaderValue::from_str(sent.signature).ok(),
        attempt: u32::try_from(a.number).unwrap_or(0),
        content_type: &notification.content_type,
        event_type: notification.event_type.as_deref(),
        sequence: notification.sequence,
        event_id: notification.event_id,
    };
    let mut lines = Vec::with_capacity(crate::sender::OWN_HEADERS + sent.custom.len());
    own_headers(&own, |name, value| {
        lines.push(HeaderLine {
            name: name.as_str().to_string(),
            value: Some(String::from_utf8_lossy(value.as_bytes()).into_owned()),
        })
    });
    lines.extend(sent.custom.into_iter().map(|name| HeaderLine {
        name: name.to_string(),
        value: None,
    }));
    lines
}
