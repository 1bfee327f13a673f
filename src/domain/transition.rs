//! The transitions a caller asks of a notification, beside those its
//! attempts make (`status::after_attempt`): a retry starts a new attempt
//! series, a cancel ends it. Each is decided here on the row as the store
//! read it (under its lock), and either refused, for a reason the API
//! answers as a 409, or returned for the store to write as it is.

use chrono::{DateTime, Utc};

use super::lease::Lease;
use super::status::Status;

impl Status {
    /// Whether a cancel applies: only to a notification not final yet.
    /// A set-based cancel (by key, by event, an endpoint's) selects its
    /// rows with `status = 'pending'`: this rule, rendered for the index.
    pub fn cancellable(self) -> bool {
        self == Status::Pending
    }
}

/// What a retry makes of a notification: pending again, due at
/// `next_attempt_at`, in a series that starts after the attempts made so
/// far (the schedule starts over), not final (`completed_at` cleared),
/// under no lease (a receipt of the lease before stops working).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retried {
    pub status: Status,
    pub series_start: i32,
    pub next_attempt_at: DateTime<Utc>,
}

/// Whether attempt `number` of the series from `series_start` opens a
/// series a retry started (a caller's, a bulk retry's or a recover's),
/// as the attempt timeline marks it. A retry of a notification never
/// attempted starts its series at 0, as its first: not told apart.
pub fn opens_retried_series(number: i32, series_start: i32) -> bool {
    series_start > 0 && number == series_start + 1
}

/// Why a retry is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryRefused {
    /// Succeeded or cancelled: nothing to send again.
    NotRetryable,
    /// Pending and being delivered (under the due index's lease, or a
    /// consumer's lease that still runs): a retry would race the attempt.
    InFlight,
    /// Pending under a consumer's lease that ran out, its attempt not
    /// recorded yet: that attempt is recorded first, then the retry.
    LeaseRanOut,
    /// Failed or pending, of an endpoint that was deleted: nothing would
    /// send it (the dispatcher cancels what a deleted endpoint holds).
    EndpointDeleted,
}

/// A retry, at `now`, of a notification with this status, these attempts
/// and this lease (read at `read_at`, the store's clock), of an endpoint
/// deleted or not; `delivering`: the due index holds a lease on it. A
/// failed one is retried whatever the index says: its last attempt is
/// recorded, and the lease that attempt held may only not be released yet.
pub fn retry(
    (status, attempts, lease): (Status, i32, Option<Lease>),
    endpoint_deleted: bool,
    delivering: bool,
    now: DateTime<Utc>,
    read_at: DateTime<Utc>,
) -> Result<Retried, RetryRefused> {
    let retried = Retried {
        status: Status::Pending,
        series_start: attempts,
        next_attempt_at: now,
    };
    match status {
        Status::Failed | Status::Pending if endpoint_deleted => Err(RetryRefused::EndpointDeleted),
        Status::Failed => Ok(retried),
        Status::Pending => match lease {
            Some(lease) if lease.runs_at(read_at) => Err(RetryRefused::InFlight),
            _ if delivering => Err(RetryRefused::InFlight),
            Some(_) => Err(RetryRefused::LeaseRanOut),
            None => Ok(retried),
        },
        Status::Succeeded | Status::Cancelled => Err(RetryRefused::NotRetryable),
    }
}

/// What a cancel makes of a notification: final (`completed_at` set, by
/// the store's clock), nothing due, under no lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cancelled {
    pub status: Status,
    pub next_attempt_at: Option<DateTime<Utc>>,
}

/// Why a cancel is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelRefused {
    /// Already final: succeeded, failed, or cancelled before.
    NotPending,
    /// The caller may not cancel this endpoint's notifications (operator
    /// alerts without `admin`).
    Spared,
}

/// A cancel of a notification with this status; `spared`: it belongs to
/// an endpoint the caller may not cancel notifications of.
pub fn cancel(status: Status, spared: bool) -> Result<Cancelled, CancelRefused> {
    if spared {
        return Err(CancelRefused::Spared);
    }
    if !status.cancellable() {
        return Err(CancelRefused::NotPending);
    }
    Ok(Cancelled {
        status: Status::Cancelled,
        next_attempt_at: None,
    })
}

/// What an open circuit makes of a notification it held past `max_hold`:
/// failed (`circuit_open`), final, nothing due, under no lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeldTooLong {
    pub status: Status,
    pub next_attempt_at: Option<DateTime<Utc>>,
}

/// The end of a notification held past `max_hold`, if its status allows
/// one: only a pending notification ends so (`Status::cancellable`'s rule,
/// not final yet). The stores write it over the rows still pending in the
/// attempt count and series they were held at, a set-based write that
/// selects `status = 'pending'`: this rule, rendered for the index.
pub fn held_too_long(status: Status) -> Option<HeldTooLong> {
    status.cancellable().then_some(HeldTooLong {
        status: Status::Failed,
        next_attempt_at: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_700_000_000 + seconds, 0).unwrap()
    }

    #[test]
    fn only_the_first_attempt_after_a_retry_opens_a_retried_series() {
        assert!(!opens_retried_series(1, 0), "a first attempt");
        assert!(!opens_retried_series(3, 0), "the schedule's third");
        assert!(opens_retried_series(9, 8), "the first after 8 attempts");
        assert!(!opens_retried_series(10, 8), "the retried series' second");
    }

    #[test]
    fn a_retry_starts_a_new_series_unless_an_attempt_is_under_way() {
        let lease = Lease {
            id: Uuid::from_u128(1),
            since: at(0),
            until: at(30),
        };
        let (now, read_at) = (at(100), at(10));
        let ran_out = at(31);
        let retried = Ok(Retried {
            status: Status::Pending,
            series_start: 4,
            next_attempt_at: now,
        });
        use RetryRefused::*;
        let cases = [
            // (status, lease, delivering, read at, result)
            (Status::Failed, None, false, read_at, retried),
            (Status::Failed, None, true, read_at, retried),
            (Status::Failed, Some(lease), true, read_at, retried),
            (Status::Pending, None, false, read_at, retried),
            (Status::Pending, None, true, read_at, Err(InFlight)),
            (Status::Pending, Some(lease), false, read_at, Err(InFlight)),
            (
                Status::Pending,
                Some(lease),
                false,
                ran_out,
                Err(LeaseRanOut),
            ),
            (Status::Pending, Some(lease), true, ran_out, Err(InFlight)),
            (Status::Succeeded, None, false, read_at, Err(NotRetryable)),
            (Status::Cancelled, None, false, read_at, Err(NotRetryable)),
        ];
        for (status, lease, delivering, read_at, want) in cases {
            assert_eq!(
                retry((status, 4, lease), false, delivering, now, read_at),
                want,
                "{status} {lease:?} {delivering} {read_at}"
            );
        }
    }

    #[test]
    fn a_notification_of_a_deleted_endpoint_is_not_retried_unless_final_for_another_reason() {
        let (now, read_at) = (at(100), at(10));
        let cases = [
            (Status::Failed, Err(RetryRefused::EndpointDeleted)),
            (Status::Pending, Err(RetryRefused::EndpointDeleted)),
            (Status::Succeeded, Err(RetryRefused::NotRetryable)),
            (Status::Cancelled, Err(RetryRefused::NotRetryable)),
        ];
        for (status, want) in cases {
            assert_eq!(
                retry((status, 4, None), true, false, now, read_at),
                want,
                "{status}"
            );
        }
    }

    #[test]
    fn only_a_pending_notification_is_cancelled_and_never_a_spared_ones() {
        let cancelled = Ok(Cancelled {
            status: Status::Cancelled,
            next_attempt_at: None,
        });
        let cases = [
            (Status::Pending, false, cancelled),
            (Status::Pending, true, Err(CancelRefused::Spared)),
            (Status::Failed, true, Err(CancelRefused::Spared)),
            (Status::Succeeded, false, Err(CancelRefused::NotPending)),
            (Status::Failed, false, Err(CancelRefused::NotPending)),
            (Status::Cancelled, false, Err(CancelRefused::NotPending)),
        ];
        for (status, spared, want) in cases {
            assert_eq!(cancel(status, spared), want, "{status} {spared}");
        }
    }

    #[test]
    fn only_a_pending_notification_fails_for_being_held_too_long() {
        assert_eq!(
            held_too_long(Status::Pending),
            Some(HeldTooLong {
                status: Status::Failed,
                next_attempt_at: None
            })
        );
        for status in [Status::Succeeded, Status::Failed, Status::Cancelled] {
            assert_eq!(held_too_long(status), None, "{status:?}");
        }
    }
}
