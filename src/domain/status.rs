//! The life cycle of a notification.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::lease::Lease;
use super::outcome::Outcome;

/// `pending` until it succeeds, exhausts its schedule (`failed`) or is cancelled.
// Stored as its lowercase name in a `text` column (the schema's CHECK lists
// the same four), so a row decodes to one of these or not at all. (A plain
// comment: the doc comment is the API document's description.)
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

/// The row state an attempt's decision was made on. The decision
/// (`after_attempt`, the operator event, the endpoint's health) holds only
/// over that state, so the store writes it only over a row still in it: a
/// notification still pending (the only status attempted) with exactly
/// `attempts` attempts in the series from `series_start`, and, for a pull
/// lease, still under that lease. A duplicate delivery, a late one, or one
/// that raced a cancel or a retry, then changes nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expected {
    /// Attempts the notification had: the attempt is number `attempts + 1`.
    pub attempts: i32,
    /// The series the attempt belongs to: a retry since then starts another.
    pub series_start: i32,
    /// The pull lease the attempt ends. `None` for push: the due index's
    /// lease fenced that attempt, and `attempts` fences its recording.
    pub lease: Option<ExpectedLease>,
}

/// The lease an attempt ends, as it was when the attempt was decided on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExpectedLease {
    pub id: Uuid,
    /// For a lease that ran out, its end: an extension since (one that read
    /// it running just before it ran out) moved it, and wins.
    pub ran_out_at: Option<DateTime<Utc>>,
}

/// The state attempt number `attempts + 1` of the series from
/// `series_start` is decided on; `lease` is the pull lease it ends, if
/// any, and `ran_out` whether it ends because that lease ran out.
pub fn expected(attempts: i32, series_start: i32, lease: Option<Lease>, ran_out: bool) -> Expected {
    Expected {
        attempts,
        series_start,
        lease: lease.map(|lease| ExpectedLease {
            id: lease.id,
            ran_out_at: ran_out.then_some(lease.until),
        }),
    }
}

/// Where a recorded attempt is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keeping {
    /// In the notification's own row (`first_attempt_*`, with its
    /// `last_attempt_at` and `last_status_code`) rather than a row of
    /// attempts, when it moves the notification: a first attempt that
    /// succeeded with no error, the write most deliveries make.
    pub inline: bool,
    /// Kept in the history even when the row was no longer as `Expected`
    /// (the notification changes nothing then): an attempt hookd made
    /// happened, whatever the row says now. A consumer's answer on a lease
    /// that is no longer its own is refused, and leaves nothing.
    pub when_refused: bool,
}

/// The status in which a notification still counts an attempt that was
/// refused (kept `when_refused`, not moving it): one cancelled while that
/// attempt was on the wire. Cancelled is final, so nothing else decides
/// on its count, and its `attempts` and last attempt then say what its
/// attempts list says (the receiver may have answered 200). Any other
/// refusal (a retry's new series, a duplicate of an attempt recorded
/// already) leaves the row to the attempt it was decided for.
pub const COUNTS_REFUSED_ATTEMPTS: Status = Status::Cancelled;

/// Where attempt `number`, which ended in `outcome` (with an error or
/// not), decided on `expected`, is kept.
pub fn keeping(number: i32, outcome: &Outcome, error: bool, expected: &Expected) -> Keeping {
    Keeping {
        inline: number == 1 && *outcome == Outcome::Succeeded && !error,
        when_refused: expected.lease.is_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::outcome::FailReason;

    #[test]
    fn an_attempt_is_decided_on_its_count_its_series_and_the_lease_it_ends() {
        let lease = Lease {
            id: Uuid::from_u128(9),
            since: at(0),
            until: at(30),
        };
        let cases = [
            // (attempts, series start, lease, ran out, expected lease)
            (0, 0, None, false, None),
            (3, 2, None, true, None),
            (
                1,
                0,
                Some(lease),
                false,
                Some(ExpectedLease {
                    id: lease.id,
                    ran_out_at: None,
                }),
            ),
            (
                1,
                0,
                Some(lease),
                true,
                Some(ExpectedLease {
                    id: lease.id,
                    ran_out_at: Some(at(30)),
                }),
            ),
        ];
        for (attempts, series_start, held, ran_out, want) in cases {
            let decided = expected(attempts, series_start, held, ran_out);
            assert_eq!(
                (decided.attempts, decided.series_start),
                (attempts, series_start)
            );
            assert_eq!(decided.lease, want);
        }
    }

    #[test]
    fn only_a_first_clean_success_is_kept_inline_and_only_push_attempts_outlive_a_refusal() {
        let push = expected(0, 0, None, false);
        let lease = Lease {
            id: Uuid::from_u128(9),
            since: at(0),
            until: at(30),
        };
        let pull = expected(0, 0, Some(lease), false);
        let retry = Outcome::Retry { at: at(60) };
        let cases = [
            // (number, outcome, error, expected, inline, kept when refused)
            (1, Outcome::Succeeded, false, push, true, true),
            (1, Outcome::Succeeded, true, push, false, true),
            (2, Outcome::Succeeded, false, push, false, true),
            (1, retry, false, push, false, true),
            (
                1,
                Outcome::Failed(FailReason::Exhausted),
                true,
                push,
                false,
                true,
            ),
            (1, Outcome::Succeeded, false, pull, true, false),
            (1, retry, true, pull, false, false),
        ];
        for (number, outcome, error, expected, inline, when_refused) in cases {
            assert_eq!(
                keeping(number, &outcome, error, &expected),
                Keeping {
                    inline,
                    when_refused
                },
                "{number} {outcome:?} {error}"
            );
        }
    }

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
