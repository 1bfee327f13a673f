//! Bulk actions by filter (docs/design.md §18): `POST
//! /v1/notifications/retry` restarts, as an operation like recover, every
//! notification of an endpoint that ended `failed` and matches the list
//! filters it names (event type, key prefix, created window);
//! `POST /v1/notifications/cancel` with the same filters cancels every
//! `pending` one. This decides what a request asks for and whether a
//! notification matches; the store reads an endpoint's notifications a
//! page at a time and changes those this says match. No I/O.
//!
//! A retry restarts failed notifications only: a pending one is already on
//! its way (or held by its endpoint or its key, which a retry does not
//! change), and succeeded and cancelled ones are final. A cancel cancels
//! pending ones only: the others have ended. So a `status` other than the
//! one an action changes is refused rather than matched and left alone.

use chrono::{DateTime, Utc};

use super::created::CreatedWindow;
use super::fields::{valid_event_type, valid_key};
use super::problem::{shown, ErrorCode, Problem};
use super::status::Status;

/// What a bulk retry restarts, beside its endpoint and `failed`.
#[derive(
    Debug, Default, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema,
)]
pub struct BulkFilter {
    /// The notification's type, or its event's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_type: Option<String>,
    /// A prefix of the notification's key, or of its event's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_prefix: Option<String>,
    /// Created at or after.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_after: Option<DateTime<Utc>>,
    /// Created before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_before: Option<DateTime<Utc>>,
}

/// What the filter reads of a failed notification.
#[derive(Debug, Clone, Copy)]
pub struct Candidate<'a> {
    pub created_at: DateTime<Utc>,
    /// Its own type, or else its event's.
    pub event_type: Option<&'a str>,
    /// Its own key, or else its event's.
    pub key: Option<&'a str>,
}

impl BulkFilter {
    /// The filter a request asks for; each field checked as the lists
    /// check it, `status` only the one the action changes (`changes`:
    /// failed for a retry, pending for a cancel).
    pub fn asked(
        changes: Status,
        status: Option<&str>,
        event_type: Option<String>,
        key_prefix: Option<String>,
        created: CreatedWindow,
    ) -> Result<Self, Problem> {
        if let Some(status) = status.filter(|status| *status != changes.as_str()) {
            let why = match changes {
                Status::Pending => "a bulk cancel cancels pending notifications only (the others have ended)",
                _ => "a bulk retry restarts failed notifications only (pending ones are on their way, succeeded and cancelled ones are final)",
            };
            return Err(Problem::invalid(
                ErrorCode::InvalidValue,
                "status",
                format!(
                    "status `{}`: {why}; leave it out or say `{}`",
                    shown(status),
                    changes.as_str()
                ),
            ));
        }
        if event_type.as_deref().is_some_and(|t| !valid_event_type(t)) {
            return Err(Problem::invalid(
                ErrorCode::InvalidValue,
                "event_type",
                "event_type is 1 to 255 of A-Z a-z 0-9 _ - . : /",
            ));
        }
        if key_prefix.as_deref().is_some_and(|p| !valid_key(p)) {
            return Err(Problem::invalid(
                ErrorCode::InvalidValue,
                "key_prefix",
                "key_prefix is 1 to 255 bytes without control characters",
            ));
        }
        Ok(Self {
            event_type,
            key_prefix,
            created_after: created.after,
            created_before: created.before,
        })
    }

    fn created(&self) -> CreatedWindow {
        CreatedWindow {
            after: self.created_after,
            before: self.created_before,
        }
    }

    /// Whether a failed notification read on a page is one to restart.
    pub fn holds(&self, candidate: Candidate<'_>) -> bool {
        self.created().contains(candidate.created_at)
            && self
                .event_type
                .as_deref()
                .is_none_or(|wanted| candidate.event_type == Some(wanted))
            && self
                .key_prefix
                .as_deref()
                .is_none_or(|prefix| candidate.key.is_some_and(|key| key.starts_with(prefix)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_700_000_000 + seconds, 0).unwrap()
    }

    fn candidate<'a>(
        seconds: i64,
        event_type: Option<&'a str>,
        key: Option<&'a str>,
    ) -> Candidate<'a> {
        Candidate {
            created_at: at(seconds),
            event_type,
            key,
        }
    }

    #[test]
    fn an_empty_filter_holds_every_failed_notification() {
        let filter = BulkFilter::default();
        assert!(filter.holds(candidate(0, None, None)));
        assert!(filter.holds(candidate(5, Some("order.paid"), Some("order-1"))));
    }

    #[test]
    fn each_field_narrows_and_the_created_window_is_half_open() {
        let filter = BulkFilter {
            event_type: Some("order.paid".into()),
            key_prefix: Some("order-12".into()),
            created_after: Some(at(10)),
            created_before: Some(at(20)),
        };
        assert!(filter.holds(candidate(10, Some("order.paid"), Some("order-123"))));
        assert!(filter.holds(candidate(19, Some("order.paid"), Some("order-12"))));
        assert!(!filter.holds(candidate(20, Some("order.paid"), Some("order-123"))));
        assert!(!filter.holds(candidate(9, Some("order.paid"), Some("order-123"))));
        assert!(!filter.holds(candidate(15, Some("order.refunded"), Some("order-123"))));
        assert!(!filter.holds(candidate(15, None, Some("order-123"))));
        assert!(!filter.holds(candidate(15, Some("order.paid"), Some("order-2"))));
        assert!(!filter.holds(candidate(15, Some("order.paid"), None)));
    }

    #[test]
    fn a_status_other_than_the_one_changed_a_bad_field_or_an_empty_window_is_refused_by_name() {
        let none = CreatedWindow::default();
        let cases = [
            (Some("pending"), None, None, none, "status"),
            (
                None,
                Some("no spaces".to_string()),
                None,
                none,
                "event_type",
            ),
            (None, None, Some(String::new()), none, "key_prefix"),
            (None, None, Some("a\nb".to_string()), none, "key_prefix"),
        ];
        for (status, event_type, key_prefix, created, field) in cases {
            let refused =
                BulkFilter::asked(Status::Failed, status, event_type, key_prefix, created)
                    .unwrap_err();
            assert_eq!(refused.field.as_deref(), Some(field));
            assert_eq!(refused.code, ErrorCode::InvalidValue);
        }
        let failed = BulkFilter::asked(Status::Failed, Some("failed"), None, None, none).unwrap();
        assert_eq!(failed, BulkFilter::default());
        let pending = BulkFilter::asked(Status::Pending, Some("pending"), None, None, none);
        assert_eq!(pending.unwrap(), BulkFilter::default());
        let refused = BulkFilter::asked(Status::Pending, Some("failed"), None, None, none);
        assert_eq!(refused.unwrap_err().field.as_deref(), Some("status"));
    }

    #[test]
    fn a_filter_is_stored_as_json_with_only_its_fields() {
        let filter = BulkFilter {
            key_prefix: Some("order-".into()),
            ..BulkFilter::default()
        };
        let text = serde_json::to_string(&filter).unwrap();
        assert_eq!(text, r#"{"key_prefix":"order-"}"#);
        assert_eq!(serde_json::from_str::<BulkFilter>(&text).unwrap(), filter);
    }
}
