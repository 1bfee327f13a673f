//! Operations (docs/design.md §16, §18): work the API starts and answers at
//! once, run in the background in pages, resumed after a restart. Three
//! kinds: `recover` restarts, as new series, an endpoint's notifications
//! that ended `failed` in a window; `retry` restarts those that failed and
//! match a filter (`domain::bulk`); both page over the endpoint's failed
//! notifications by the time they failed. `cancel` cancels the pending
//! ones that match a filter, paging over the endpoint's notifications
//! newest first. This decides the window a request asks for,
//! which notifications it holds, whether a runner may take an operation
//! (its lease), and what a page makes of the operation. No I/O: the store
//! reads and compare-and-sets what is decided here.

use std::time::Duration;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::lease::Lease;
use super::problem::{shown, ErrorCode, Problem};
use super::status::Status;
use super::transition::{retry, Retried};

/// How long a runner holds an operation between two pages. A runner that
/// stops (a crash, a kill -9) leaves the lease to run out; then another
/// process, or the same one restarted, takes the operation over.
pub const LEASE: Duration = Duration::from_secs(30);

/// Failed notifications a page restarts at most: one statement reads at
/// most this many rows, whatever the window holds.
pub const PAGE: i64 = 500;

/// Where an operation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum OperationStatus {
    /// Pages are left to run (or a runner is between two).
    Running,
    /// Every page ran.
    Done,
    /// It stopped before the end; `error` says why.
    Failed,
}

impl OperationStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            OperationStatus::Running => "running",
            OperationStatus::Done => "done",
            OperationStatus::Failed => "failed",
        }
    }

    /// The stored text; `None` for text no migration allows.
    pub fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "running" => OperationStatus::Running,
            "done" => OperationStatus::Done,
            "failed" => OperationStatus::Failed,
            _ => return None,
        })
    }
}

/// What an operation does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum OperationKind {
    /// Restart an endpoint's notifications that failed in a window.
    Recover,
    /// Restart an endpoint's failed notifications that match a filter
    /// (`POST /v1/notifications/retry`).
    Retry,
    /// Cancel an endpoint's pending notifications that match a filter
    /// (`POST /v1/notifications/cancel`).
    Cancel,
}

impl OperationKind {
    pub fn as_str(self) -> &'static str {
        match self {
            OperationKind::Recover => "recover",
            OperationKind::Retry => "retry",
            OperationKind::Cancel => "cancel",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "recover" => Some(OperationKind::Recover),
            "retry" => Some(OperationKind::Retry),
            "cancel" => Some(OperationKind::Cancel),
            _ => None,
        }
    }
}

/// A recover's window: notifications that ended failed between `since`
/// and `until`, both included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub since: DateTime<Utc>,
    pub until: DateTime<Utc>,
}

impl Window {
    /// The window a request asks for at `now`: `since` (RFC 3339) is
    /// required; `until` defaults to `now`. Neither may be in the future
    /// (nothing has failed there yet, and a window still open would take in
    /// notifications the recover itself restarted and that failed again),
    /// and `until` may not be before `since`.
    pub fn asked(
        since: Option<&str>,
        until: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<Window, Problem> {
        let since = match since {
            None => {
                return Err(Problem::invalid(
                    ErrorCode::MissingField,
                    "since",
                    "since is required: the time (RFC 3339) from which failed notifications are restarted",
                ))
            }
            Some(text) => time("since", text)?,
        };
        if since > now {
            return Err(future("since"));
        }
        let until = match until {
            None => now,
            Some(text) => time("until", text)?,
        };
        if until > now {
            return Err(future("until"));
        }
        if until < since {
            return Err(Problem::invalid(
                ErrorCode::InvalidValue,
                "until",
                "until is before since",
            ));
        }
        Ok(Window { since, until })
    }

    /// Whether a notification with this status, ended at `completed_at`,
    /// is one a recover over this window restarts. Stores select the same
    /// rows with `status = 'failed' AND completed_at BETWEEN since AND
    /// until` (the rule rendered for the index `notifications_failed_by_endpoint`).
    pub fn holds(&self, status: Status, completed_at: Option<DateTime<Utc>>) -> bool {
        status == Status::Failed
            && completed_at.is_some_and(|at| self.since <= at && at <= self.until)
    }
}

/// A bulk retry's `completed_after` at `now`: not in the future, as a
/// recover's window is not (nothing has failed there yet, and its window
/// would end before it starts).
pub fn failed_since(
    at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Result<Option<DateTime<Utc>>, Problem> {
    match at {
        Some(at) if at > now => Err(future("completed_after")),
        _ => Ok(at),
    }
}

fn time(field: &str, text: &str) -> Result<DateTime<Utc>, Problem> {
    DateTime::parse_from_rfc3339(text)
        .map(|at| at.with_timezone(&Utc))
        .map_err(|_| {
            Problem::invalid(
                ErrorCode::InvalidValue,
                field,
                format!(
                    "{field} `{}` is not an RFC 3339 time such as 2026-11-26T03:00:00Z",
                    shown(text)
                ),
            )
        })
}

fn future(field: &str) -> Problem {
    Problem::invalid(
        ErrorCode::InvalidValue,
        field,
        format!("{field} is in the future: only notifications that have failed are restarted"),
    )
}

/// Whether a runner may take an operation at `now`: it runs, and no lease
/// on it runs (never taken, given back, or run out). Stores take it with
/// a compare-and-set on the `lease_until` they read.
pub fn leasable(
    status: OperationStatus,
    lease_until: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> bool {
    status == OperationStatus::Running && lease_until.is_none_or(|until| until <= now)
}

/// When a lease taken or renewed at `now` runs out.
pub fn lease_until(now: DateTime<Utc>) -> DateTime<Utc> {
    now + chrono::Duration::from_std(LEASE).expect("the lease fits a chrono duration")
}

/// Where a page leaves its operation: the page read `found` rows of at
/// most `limit`, the last at `last` (its failure time and id), of which
/// `matched` match the operation's filter and `started` were restarted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Paged {
    pub matched: i64,
    pub started: i64,
    /// Where the next page starts; unchanged when the page found nothing.
    pub cursor: Option<(DateTime<Utc>, Uuid)>,
    /// No row is left after this page: the operation is done.
    pub done: bool,
}

/// What a page of `found` rows (of at most `limit`), the last at `last`,
/// `matched` of them matching and `started` restarted, makes of an
/// operation at `cursor`. A page shorter than its limit is the last: the
/// window's end has been reached (rows that fail later end after `until`,
/// never inside the window).
pub fn after_page(
    cursor: Option<(DateTime<Utc>, Uuid)>,
    (found, matched): (usize, usize),
    last: Option<(DateTime<Utc>, Uuid)>,
    started: usize,
    limit: i64,
) -> Paged {
    Paged {
        matched: matched as i64,
        started: started as i64,
        cursor: last.or(cursor),
        done: (found as i64) < limit,
    }
}

/// What a recover makes of one failed notification of its page: what the
/// single-notification retry (`POST /v1/notifications/{id}/retry`) makes
/// of it, by the same rule (`transition::retry`); `None`: left as it is
/// (the rule refused). The due index is not asked whether the
/// notification is being delivered: for a failed one the rule does not
/// look, its last attempt being recorded. A recover runs on a live
/// endpoint (a deleted one's operations end with it).
pub fn restart(
    status: Status,
    attempts: i32,
    lease: Option<Lease>,
    now: DateTime<Utc>,
    read_at: DateTime<Utc>,
) -> Option<Retried> {
    retry((status, attempts, lease), false, false, now, read_at).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_700_000_000 + seconds, 0).unwrap()
    }

    fn text(at: DateTime<Utc>) -> String {
        at.to_rfc3339()
    }

    #[test]
    fn a_window_needs_since_and_defaults_until_to_now() {
        let now = at(100);
        let window = Window::asked(Some(&text(at(10))), None, now).unwrap();
        assert_eq!(
            window,
            Window {
                since: at(10),
                until: now
            }
        );
        let missing = Window::asked(None, None, now).unwrap_err();
        assert_eq!(
            (missing.code, missing.field.as_deref()),
            (ErrorCode::MissingField, Some("since"))
        );
        let equal = Window::asked(Some(&text(at(10))), Some(&text(at(10))), now).unwrap();
        assert_eq!(equal.since, equal.until);
    }

    #[test]
    fn a_bulk_retry_takes_failures_since_a_time_up_to_now_only() {
        let now = at(100);
        assert_eq!(failed_since(None, now), Ok(None));
        assert_eq!(failed_since(Some(now), now), Ok(Some(now)));
        let refused = failed_since(Some(at(101)), now).unwrap_err();
        assert_eq!(
            (refused.code, refused.field.as_deref()),
            (ErrorCode::InvalidValue, Some("completed_after"))
        );
    }

    #[test]
    fn a_window_in_the_future_unparseable_or_backwards_is_refused_naming_its_field() {
        let now = at(100);
        let cases = [
            (Some("yesterday".to_string()), None, "since"),
            (Some(text(at(101))), None, "since"),
            (Some(text(at(10))), Some("soon".to_string()), "until"),
            (Some(text(at(10))), Some(text(at(101))), "until"),
            (Some(text(at(50))), Some(text(at(40))), "until"),
        ];
        for (since, until, field) in cases {
            let refused = Window::asked(since.as_deref(), until.as_deref(), now).unwrap_err();
            assert_eq!(refused.field.as_deref(), Some(field), "{since:?} {until:?}");
            assert_eq!(refused.code, ErrorCode::InvalidValue);
        }
    }

    #[test]
    fn a_window_holds_failed_notifications_that_ended_inside_it_bounds_included() {
        let window = Window {
            since: at(10),
            until: at(20),
        };
        assert!(window.holds(Status::Failed, Some(at(10))));
        assert!(window.holds(Status::Failed, Some(at(20))));
        assert!(!window.holds(Status::Failed, Some(at(9))));
        assert!(!window.holds(Status::Failed, Some(at(21))));
        assert!(!window.holds(Status::Failed, None));
        for other in [Status::Pending, Status::Succeeded, Status::Cancelled] {
            assert!(!window.holds(other, Some(at(15))), "{other}");
        }
    }

    #[test]
    fn only_a_running_operation_under_no_running_lease_is_taken() {
        let now = at(100);
        assert!(leasable(OperationStatus::Running, None, now));
        assert!(leasable(OperationStatus::Running, Some(at(100)), now));
        assert!(!leasable(OperationStatus::Running, Some(at(101)), now));
        assert!(!leasable(OperationStatus::Done, None, now));
        assert!(!leasable(OperationStatus::Failed, Some(at(0)), now));
        assert_eq!(lease_until(now), at(130));
    }

    #[test]
    fn a_short_page_is_the_last_and_an_empty_one_keeps_the_cursor() {
        let id = Uuid::now_v7();
        let full = after_page(None, (500, 500), Some((at(5), id)), 500, 500);
        assert_eq!(
            full,
            Paged {
                matched: 500,
                started: 500,
                cursor: Some((at(5), id)),
                done: false
            }
        );
        let short = after_page(Some((at(5), id)), (3, 3), Some((at(6), id)), 3, 500);
        assert!(short.done);
        let filtered = after_page(None, (500, 2), Some((at(7), id)), 1, 500);
        assert_eq!((filtered.matched, filtered.started), (2, 1));
        assert_eq!(filtered.cursor, Some((at(7), id)));
        assert!(
            !filtered.done,
            "a full page read is not the last, whatever matched"
        );
        let empty = after_page(Some((at(5), id)), (0, 0), None, 0, 500);
        assert_eq!(empty.cursor, Some((at(5), id)));
        assert!(empty.done);
    }
}
