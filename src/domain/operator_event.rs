//! Operator events: what hookd reports about itself to the operator webhook
//! (`operator.url`): `notification.failed`, `endpoint.disabled`,
//! `endpoint.circuit_opened` and `endpoint.circuit_closed`. All share one
//! envelope, `{"type", "timestamp", "data"}`, built here; the store
//! writes each event as a notification to the managed operator endpoint, in
//! the same statement (PostgreSQL) or transaction (SQLite) as the change it
//! reports, and only if that change is
//! written.

use chrono::{DateTime, Utc};
use serde::Serialize;
use uuid::Uuid;

/// The config-managed endpoint that receives operator events (`operator.url`).
pub const OPERATOR_ENDPOINT_ID: Uuid = Uuid::from_u128(0x0000_0000_0000_7000_8000_0000_0000_000f);

/// The endpoint whose notifications a caller may not cancel: operator
/// alerts are hookd's own reports to the operator, and their keys are
/// predictable, so a producer's `write` token could silence them; only an
/// `admin` token may cancel them.
pub fn spared_from(admin: bool) -> Option<Uuid> {
    (!admin).then_some(OPERATOR_ENDPOINT_ID)
}

/// One event, ready to be stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperatorEvent {
    /// The notification or endpoint whose change it reports: the store
    /// writes the event only together with that change.
    pub subject: Uuid,
    /// The envelope's `type`, also the event notification's `event_type`.
    pub event_type: &'static str,
    /// Idempotency key: the same change recorded twice (a duplicate delivery,
    /// two processes) stores one event.
    pub key: String,
    /// The envelope as JSON.
    pub body: Vec<u8>,
}

#[derive(Serialize)]
struct Envelope<'a, D> {
    #[serde(rename = "type")]
    event_type: &'a str,
    timestamp: DateTime<Utc>,
    data: &'a D,
}

/// A notification that ended `failed`, as its event reports it.
#[derive(Debug, Clone, Serialize)]
pub struct FailedNotification<'a> {
    pub notification_id: Uuid,
    pub endpoint_id: Uuid,
    pub key: Option<&'a str>,
    pub event_type: Option<&'a str>,
    pub attempts: i32,
    pub last_status_code: Option<i32>,
    pub last_error: Option<&'a str>,
}

/// An endpoint hookd disabled, as its event reports it.
#[derive(Debug, Clone, Serialize)]
pub struct DisabledEndpoint<'a> {
    pub endpoint_id: Uuid,
    pub endpoint_uid: Option<&'a str>,
    pub url: &'a str,
    pub failing_since: DateTime<Utc>,
    pub reason: &'a str,
}

/// An endpoint's circuit that opened or closed, as its event reports it.
#[derive(Debug, Clone, Serialize)]
pub struct CircuitChange {
    pub endpoint_id: Uuid,
    /// `open` or `closed`.
    pub state: &'static str,
    pub opened_at: DateTime<Utc>,
    pub next_probe_at: Option<DateTime<Utc>>,
}

impl OperatorEvent {
    pub const NOTIFICATION_FAILED: &'static str = "notification.failed";
    pub const ENDPOINT_DISABLED: &'static str = "endpoint.disabled";
    pub const CIRCUIT_OPENED: &'static str = "endpoint.circuit_opened";
    pub const CIRCUIT_CLOSED: &'static str = "endpoint.circuit_closed";

    /// One per opening (a failed probe that opens it again is no new
    /// one) and one per close, keyed by when the circuit opened.
    pub fn circuit(change: &CircuitChange, now: DateTime<Utc>) -> Self {
        let event_type = if change.state == "open" {
            Self::CIRCUIT_OPENED
        } else {
            Self::CIRCUIT_CLOSED
        };
        let key = format!(
            "{event_type}:{}:{}",
            change.endpoint_id,
            change.opened_at.timestamp_micros()
        );
        Self::new(event_type, change.endpoint_id, key, change, now)
    }

    /// One per notification and attempt count: a notification retried by
    /// hand that fails again is reported again. An operator event that
    /// fails is not: its report would be one more to fail.
    pub fn notification_failed(
        failed: &FailedNotification<'_>,
        now: DateTime<Utc>,
    ) -> Option<Self> {
        if failed.endpoint_id == OPERATOR_ENDPOINT_ID {
            return None;
        }
        let key = format!(
            "{}:{}:{}",
            Self::NOTIFICATION_FAILED,
            failed.notification_id,
            failed.attempts
        );
        Some(Self::new(
            Self::NOTIFICATION_FAILED,
            failed.notification_id,
            key,
            failed,
            now,
        ))
    }

    /// One per endpoint and run of failures: re-enabled and disabled again
    /// after a new run, it is reported again.
    pub fn endpoint_disabled(disabled: &DisabledEndpoint<'_>, now: DateTime<Utc>) -> Self {
        let key = format!(
            "{}:{}:{}",
            Self::ENDPOINT_DISABLED,
            disabled.endpoint_id,
            epoch_seconds(disabled.failing_since)
        );
        Self::new(
            Self::ENDPOINT_DISABLED,
            disabled.endpoint_id,
            key,
            disabled,
            now,
        )
    }

    fn new<D: Serialize>(
        event_type: &'static str,
        subject: Uuid,
        key: String,
        data: &D,
        now: DateTime<Utc>,
    ) -> Self {
        let envelope = Envelope {
            event_type,
            timestamp: now,
            data,
        };
        Self {
            subject,
            event_type,
            key,
            // Plain fields with string keys: serialising cannot fail.
            body: serde_json::to_vec(&envelope).expect("an operator event serialises"),
        }
    }
}

/// Whole seconds since the epoch, halves away from zero: what PostgreSQL's
/// `extract(epoch FROM t)::bigint` gives, which made these keys before they
/// were built here. The same endpoint and run keep the same key across builds.
fn epoch_seconds(at: DateTime<Utc>) -> i64 {
    let micros = at.timestamp_micros();
    let (seconds, rest) = (micros / 1_000_000, micros % 1_000_000);
    if rest >= 500_000 {
        seconds + 1
    } else if rest <= -500_000 {
        seconds - 1
    } else {
        seconds
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;

    fn at(micros: i64) -> DateTime<Utc> {
        DateTime::from_timestamp_micros(micros).unwrap()
    }

    fn parsed(event: &OperatorEvent) -> Value {
        serde_json::from_slice(&event.body).unwrap()
    }

    #[test]
    fn a_failed_notification_is_reported_in_the_envelope_with_its_attempt_count_in_the_key() {
        let id = Uuid::from_u128(1);
        let endpoint = Uuid::from_u128(2);
        let now = at(1_700_000_000_000_000);
        let mut failed = FailedNotification {
            notification_id: id,
            endpoint_id: endpoint,
            key: Some("order-7"),
            event_type: None,
            attempts: 3,
            last_status_code: Some(503),
            last_error: None,
        };
        let event = OperatorEvent::notification_failed(&failed, now).unwrap();
        assert_eq!(event.subject, id);
        assert_eq!(event.event_type, "notification.failed");
        assert_eq!(event.key, format!("notification.failed:{id}:3"));
        assert_eq!(
            parsed(&event),
            json!({
                "type": "notification.failed",
                "timestamp": "2023-11-14T22:13:20Z",
                "data": {
                    "notification_id": id, "endpoint_id": endpoint, "key": "order-7",
                    "event_type": null, "attempts": 3, "last_status_code": 503, "last_error": null,
                },
            })
        );
        // An operator event's own failure is not reported.
        failed.endpoint_id = OPERATOR_ENDPOINT_ID;
        assert_eq!(OperatorEvent::notification_failed(&failed, now), None);
    }

    #[test]
    fn a_disabled_endpoint_is_reported_in_the_same_envelope_keyed_by_its_run_of_failures() {
        let id = Uuid::from_u128(3);
        let since = at(1_699_999_000_250_000);
        let event = OperatorEvent::endpoint_disabled(
            &DisabledEndpoint {
                endpoint_id: id,
                endpoint_uid: Some("shop"),
                url: "https://shop.example/hook",
                failing_since: since,
                reason: "failing",
            },
            at(1_700_000_000_000_000),
        );
        assert_eq!(event.subject, id);
        assert_eq!(event.key, format!("endpoint.disabled:{id}:1699999000"));
        let body = parsed(&event);
        assert_eq!(body["type"], json!("endpoint.disabled"));
        assert_eq!(body["timestamp"], json!("2023-11-14T22:13:20Z"));
        assert_eq!(
            body["data"],
            json!({
                "endpoint_id": id, "endpoint_uid": "shop", "url": "https://shop.example/hook",
                "failing_since": "2023-11-14T21:56:40.250Z", "reason": "failing",
            })
        );
    }

    #[test]
    fn key_seconds_round_halves_away_from_zero_like_postgresql() {
        assert_eq!(epoch_seconds(at(1_499_999)), 1);
        assert_eq!(epoch_seconds(at(1_500_000)), 2);
        assert_eq!(epoch_seconds(at(2_000_000)), 2);
        assert_eq!(epoch_seconds(at(-1_499_999)), -1);
        assert_eq!(epoch_seconds(at(-1_500_000)), -2);
    }
}
