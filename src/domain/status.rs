//! The life cycle of a notification.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::outcome::Outcome;

/// `pending` until it succeeds, exhausts its schedule (`failed`) or is cancelled.
/// Stored as its lowercase name in a `text` column (the schema's CHECK lists
/// the same four), so a row decodes to one of these or not at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pending,
    Succeeded,
    Failed,
    Cancelled,
}

impl Status {
    pub const ALL: [Status; 4] = [
        Status::Pending,
        Status::Succeeded,
        Status::Failed,
        Status::Cancelled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Succeeded => "succeeded",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == text)
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a pending notification becomes after an attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AfterAttempt {
    pub status: Status,
    /// When the next attempt is due; `None` once the notification is final.
    pub next_attempt_at: Option<DateTime<Utc>>,
    /// Whether the notification is final now (its `completed_at` is set).
    pub completed: bool,
    /// `code: message` of the attempt's error; `None` after an attempt that
    /// had none (a success, or an answer that was not one).
    pub last_error: Option<String>,
}

/// The state machine. A pending notification's attempt ends it `succeeded`
/// or `failed` for good, or keeps it `pending` until the retry is due; the
/// attempt's error, `(code, message)`, becomes its `last_error`.
///
/// The notification is pending by construction (only pending ones are
/// attempted). Whether it still is as the attempt is written, and whether
/// the attempt follows its last one, is for the store to check there: a
/// cancel or a duplicate delivery may have come first, and that is decided
/// where concurrent writers meet, not here.
pub fn after_attempt(outcome: &Outcome, error: Option<(&str, &str)>) -> AfterAttempt {
    let last_error = error.map(|(code, message)| format!("{code}: {message}"));
    match outcome {
        Outcome::Succeeded => AfterAttempt {
            status: Status::Succeeded,
            next_attempt_at: None,
            completed: true,
            last_error,
        },
        Outcome::Retry { at } => AfterAttempt {
            status: Status::Pending,
            next_attempt_at: Some(*at),
            completed: false,
            last_error,
        },
        Outcome::Failed(_) => AfterAttempt {
            status: Status::Failed,
            next_attempt_at: None,
            completed: true,
            last_error,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::outcome::FailReason;

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_700_000_000 + seconds, 0).unwrap()
    }

    #[test]
    fn a_success_ends_the_notification_succeeded_with_nothing_more_due() {
        assert_eq!(
            after_attempt(&Outcome::Succeeded, None),
            AfterAttempt {
                status: Status::Succeeded,
                next_attempt_at: None,
                completed: true,
                last_error: None,
            }
        );
    }

    #[test]
    fn a_retry_keeps_the_notification_pending_until_its_time_and_keeps_the_error() {
        assert_eq!(
            after_attempt(
                &Outcome::Retry { at: at(30) },
                Some(("timeout", "no answer within 10s"))
            ),
            AfterAttempt {
                status: Status::Pending,
                next_attempt_at: Some(at(30)),
                completed: false,
                last_error: Some("timeout: no answer within 10s".into()),
            }
        );
    }

    #[test]
    fn a_failure_is_final_for_every_reason() {
        for reason in [
            FailReason::Exhausted,
            FailReason::PermanentStatus,
            FailReason::Aborted,
        ] {
            let next = after_attempt(&Outcome::Failed(reason), None);
            assert_eq!(next.status, Status::Failed);
            assert_eq!(next.next_attempt_at, None);
            assert!(next.completed);
        }
        let refused = after_attempt(
            &Outcome::Failed(FailReason::Exhausted),
            Some(("connect", "connection refused")),
        );
        assert_eq!(
            refused.last_error.as_deref(),
            Some("connect: connection refused")
        );
    }

    #[test]
    fn every_status_round_trips_through_its_name() {
        for status in Status::ALL {
            assert_eq!(Status::parse(status.as_str()), Some(status));
        }
        assert_eq!(Status::parse("PENDING"), None);
    }
}
