//! The time of a pull lease (docs/design.md §10): whether it still runs, what a
//! pull makes of a notification it looks at, when a failed leased attempt
//! started and ended (a lease that ran out ended with it, however late
//! hookd notices), and when a notification no consumer takes gives up
//! (`pull.max_wait`). No I/O: the store reads the rows and the clock
//! (`clock::Clock`, the same in both backends), these decide, the store
//! writes.

use std::time::Duration;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::outcome::Outcome;
use super::pull::Failure;

/// A notification's lease, as stored: taken at `since`, running until
/// `until` (as extended).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lease {
    pub id: Uuid,
    pub since: DateTime<Utc>,
    pub until: DateTime<Utc>,
}

impl Lease {
    /// The lease a notification row holds, if any (still running or not):
    /// while leased, the row's `next_attempt_at` is when the lease runs out.
    /// A lease taken before `leased_at` was stored counts from its end.
    pub fn stored(
        id: Option<Uuid>,
        leased_at: Option<DateTime<Utc>>,
        next_attempt_at: Option<DateTime<Utc>>,
    ) -> Option<Lease> {
        let (id, until) = (id?, next_attempt_at?);
        Some(Lease {
            id,
            since: leased_at.unwrap_or(until),
            until,
        })
    }

    /// Whether the lease still runs at `now`. It has run out at `until`:
    /// an ack then is too late, and a pull may take the notification back.
    /// The one place this is decided: every backend reads the row and its
    /// clock, and asks here.
    pub fn runs_at(&self, now: DateTime<Utc>) -> bool {
        now < self.until
    }

    /// Where an extension by `by` at `now` moves the lease's end. The
    /// store writes it only over the end it was decided on (`self.until`).
    pub fn extended(&self, by: Duration, now: DateTime<Utc>) -> DateTime<Utc> {
        lease_end(now, by)
    }
}

/// The longest a lease or a window is taken to run: a length past it (or
/// past what a time can hold) counts as this. Both backends store any
/// time up to it.
pub const LONGEST: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// Where a lease of `length` taken (or extended) at `now` ends, bounded by
/// `LONGEST`: the one rule for a lease's end, in every backend.
pub fn lease_end(now: DateTime<Utc>, length: Duration) -> DateTime<Utc> {
    now + bounded(length)
}

/// The start of the window of `length` that ends at `now` (the stray and
/// orphan windows, `pull.max_wait`), bounded by `LONGEST` as a lease is.
pub fn window_start(now: DateTime<Utc>, length: Duration) -> DateTime<Utc> {
    now - bounded(length)
}

fn bounded(length: Duration) -> chrono::Duration {
    chrono::Duration::from_std(length.min(LONGEST)).expect("LONGEST fits a chrono::Duration")
}

/// Whether a row with this lease (if any) is under one that still runs at
/// `now`: what a notification's `leased` says.
pub fn held(lease: Option<Lease>, now: DateTime<Utc>) -> bool {
    lease.is_some_and(|lease| lease.runs_at(now))
}

/// When a pending notification is due once its lease (if any) ends with no
/// attempt (its endpoint left pull, or switched back before a consumer
/// answered): a leased one at once, as if its consumer had let go, and its
/// receipt stops working; a free one when it was.
pub fn released(
    lease: Option<Lease>,
    due_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Option<DateTime<Utc>> {
    match lease {
        Some(_) => Some(now),
        None => due_at,
    }
}

/// What a pull makes of a pending notification of its endpoint, at `now`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtPull {
    /// Free and due: taken.
    Take,
    /// Not due yet, or under a lease that still runs: left alone.
    Leave,
    /// Its lease ran out and the attempt it was is not recorded yet: the
    /// pull records it (`Failure::LeaseExpired`, ending with the lease),
    /// and takes the notification if that makes it due by `now`
    /// (`due_again`). The lease sweep does the same for notifications no
    /// pull looks at.
    RanOut(Lease),
}

/// What a pull makes of a pending notification whose lease is `lease`
/// (if any) and which is next due at `due_at` (unless leased).
pub fn at_pull(lease: Option<Lease>, due_at: Option<DateTime<Utc>>, now: DateTime<Utc>) -> AtPull {
    match lease {
        Some(lease) if lease.runs_at(now) => AtPull::Leave,
        Some(lease) => AtPull::RanOut(lease),
        None if due_at.is_some_and(|due| due <= now) => AtPull::Take,
        None => AtPull::Leave,
    }
}

/// Whether what a failed leased attempt made of the notification leaves it
/// due again by `now`: the pull that recorded the attempt takes it at once.
pub fn due_again(outcome: &Outcome, now: DateTime<Utc>) -> bool {
    matches!(outcome, Outcome::Retry { at } if *at <= now)
}

/// When a failed leased attempt started and ended. Most end when hookd
/// learns of them (`now`: a nack, a header that did not open); a lease that
/// ran out ended with the lease, however late a sweep or a pull notices;
/// one never pulled spans its wait.
pub fn failure_span(
    failure: &Failure,
    lease: Option<Lease>,
    now: DateTime<Utc>,
) -> (DateTime<Utc>, DateTime<Utc>) {
    match (failure, lease) {
        (Failure::NotPulled { due_at, gave_up_at }, _) => (*due_at, *gave_up_at),
        (Failure::LeaseExpired, Some(lease)) => (lease.since, lease.until.max(lease.since)),
        _ => ended_now(lease, now),
    }
}

/// When a leased attempt that ends as hookd learns of it (an ack, a nack)
/// started and ended: from the lease's start to `now`.
pub fn ended_now(lease: Option<Lease>, now: DateTime<Utc>) -> (DateTime<Utc>, DateTime<Utc>) {
    match lease {
        Some(lease) => (lease.since, now.max(lease.since)),
        None => (now, now),
    }
}

/// When a pending notification no consumer took has waited `max_wait`:
/// one due at `due_at` and under no lease (a lease that ran out is recorded
/// first, and the notification is due again after it) ends `not_pulled`
/// at `due_at + max_wait`. `Some(that time)` once it has passed at `now`.
/// Each time it becomes due (at first, and again after a failed attempt),
/// consumers have `max_wait` to take it.
pub fn not_pulled(
    lease: Option<Lease>,
    due_at: Option<DateTime<Utc>>,
    max_wait: Duration,
    now: DateTime<Utc>,
) -> Option<DateTime<Utc>> {
    if lease.is_some() {
        return None;
    }
    let gave_up_at = due_at? + chrono::Duration::from_std(max_wait).ok()?;
    (gave_up_at <= now).then_some(gave_up_at)
}

/// How often to look for notifications past `pull.max_wait`: a tenth of
/// it, between once a second and once a minute. A check costs one index
/// probe per pull endpoint; a notification fails at most that much after
/// its time.
pub fn not_pulled_checks(max_wait: Duration) -> Duration {
    (max_wait / 10).clamp(Duration::from_secs(1), Duration::from_secs(60))
}

/// Where a free pending pull notification of an endpoint disabled at
/// `disabled_at` and enabled again at `enabled_at` is due once enabled:
/// `pull.max_wait` counts only while its endpoint is enabled (docs/design.md
/// §17), and its wait counts from its due time (`not_pulled`), so that
/// time moves on by the part of the disabled span after it. Due before
/// the endpoint was disabled: by the whole span; due while disabled: at
/// the enabling (its wait starts there); due later: unchanged. Either way
/// it is due by `enabled_at`, so it is offered at once. Those that fell
/// due while disabled share the enabling as their due time, and are taken
/// in id (creation) order among themselves.
///
/// The stores render this rule as one statement over the endpoint's rows
/// (`modify_endpoint`), on a backlog of any size.
pub fn due_after_hold(
    due_at: DateTime<Utc>,
    disabled_at: DateTime<Utc>,
    enabled_at: DateTime<Utc>,
) -> DateTime<Utc> {
    if due_at >= enabled_at {
        return due_at;
    }
    due_at + (enabled_at - due_at.max(disabled_at))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::outcome::FailReason;
    use crate::domain::pull::{after_failure, failure_error};
    use crate::domain::schedule::Schedule;

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_700_000_000 + seconds, 0).unwrap()
    }

    fn lease(since: i64, until: i64) -> Lease {
        Lease {
            id: Uuid::nil(),
            since: at(since),
            until: at(until),
        }
    }

    #[test]
    fn a_lease_runs_until_its_end_and_a_pull_then_takes_the_notification_back() {
        let held = lease(0, 30);
        assert!(held.runs_at(at(29)));
        assert!(!held.runs_at(at(30)), "ended at its end");
        assert_eq!(at_pull(Some(held), None, at(29)), AtPull::Leave);
        assert_eq!(at_pull(Some(held), None, at(45)), AtPull::RanOut(held));
        assert_eq!(at_pull(None, Some(at(10)), at(10)), AtPull::Take);
        assert_eq!(at_pull(None, Some(at(11)), at(10)), AtPull::Leave);
        assert_eq!(at_pull(None, None, at(10)), AtPull::Leave);
    }

    #[test]
    fn a_stored_lease_ends_at_the_rows_due_time_and_is_held_only_while_it_runs() {
        let id = Uuid::from_u128(7);
        let cases = [
            // (lease id, leased at, next attempt at, now, held)
            (None, None, Some(at(30)), at(0), false),
            (Some(id), Some(at(0)), Some(at(30)), at(29), true),
            (Some(id), Some(at(0)), Some(at(30)), at(30), false),
            (Some(id), None, Some(at(30)), at(10), true),
            (Some(id), Some(at(0)), None, at(10), false),
        ];
        for (lease_id, leased_at, until, now, want) in cases {
            let lease = Lease::stored(lease_id, leased_at, until);
            assert_eq!(
                held(lease, now),
                want,
                "{lease_id:?} {leased_at:?} {until:?} {now}"
            );
        }
        assert_eq!(
            Lease::stored(Some(id), None, Some(at(30))).map(|l| l.since),
            Some(at(30)),
            "a lease without its start counts from its end"
        );
        assert_eq!(
            lease(0, 30).extended(Duration::from_secs(60), at(20)),
            at(80)
        );
        assert_eq!(lease_end(at(0), Duration::MAX), at(0) + bounded(LONGEST));
        assert_eq!(
            lease_end(at(0), Duration::from_millis(1500)),
            at(0) + chrono::Duration::milliseconds(1500)
        );
        assert_eq!(window_start(at(0), Duration::MAX), at(0) - bounded(LONGEST));
    }

    #[test]
    fn a_lease_ended_without_an_attempt_leaves_its_notification_due_at_once() {
        let cases = [
            (Some(lease(0, 30)), Some(at(30)), at(10), Some(at(10))),
            (Some(lease(0, 30)), Some(at(30)), at(40), Some(at(40))),
            (None, Some(at(50)), at(10), Some(at(50))),
            (None, None, at(10), None),
        ];
        for (held_by, due_at, now, want) in cases {
            assert_eq!(released(held_by, due_at, now), want);
        }
    }

    #[test]
    fn a_lease_that_ran_out_ended_with_it_however_late_it_is_noticed() {
        let schedule = Schedule::from_stored(None, &[0, 300, 3_600_000]);
        let ran_out = lease(0, 1);
        let noticed = at(5);
        let (started, ended) = failure_span(&Failure::LeaseExpired, Some(ran_out), noticed);
        assert_eq!((started, ended), (at(0), at(1)));
        let outcome = after_failure(&Failure::LeaseExpired, &schedule, 1.0, 1, ended);
        let due = at(1) + chrono::Duration::milliseconds(300);
        assert_eq!(outcome, Outcome::Retry { at: due });
        assert!(due_again(&outcome, noticed));
        assert!(!due_again(&outcome, at(1)));
        assert!(!due_again(&Outcome::Failed(FailReason::Exhausted), noticed));
        // A nack ends when it comes.
        let nack = Failure::Nack {
            retry_after: None,
            permanent: false,
        };
        assert_eq!(failure_span(&nack, Some(ran_out), at(3)), (at(0), at(3)));
    }

    #[test]
    fn max_wait_does_not_count_the_time_an_endpoint_was_disabled() {
        let (disabled, enabled) = (at(100), at(400));
        // Due 40 s before it was disabled: 40 s of its wait are spent, so
        // it is as if due 40 s before the enabling.
        assert_eq!(due_after_hold(at(60), disabled, enabled), at(360));
        // Fell due while disabled: its wait starts at the enabling.
        assert_eq!(due_after_hold(at(250), disabled, enabled), enabled);
        assert_eq!(due_after_hold(at(100), disabled, enabled), enabled);
        // Not due yet: as it was.
        assert_eq!(due_after_hold(at(400), disabled, enabled), at(400));
        assert_eq!(due_after_hold(at(900), disabled, enabled), at(900));
        // Whatever it was, it is offered at once.
        for due in [at(0), at(99), at(101), at(399)] {
            assert!(due_after_hold(due, disabled, enabled) <= enabled);
        }
        let week = Duration::from_secs(7 * 24 * 3600);
        let moved = due_after_hold(at(60), disabled, enabled);
        assert_eq!(
            not_pulled(None, Some(moved), week, at(60 + 7 * 24 * 3600 + 300)),
            Some(at(60 + 7 * 24 * 3600 + 300)),
            "it gives up a week of enabled time after it fell due"
        );
        assert_eq!(
            not_pulled(None, Some(moved), week, at(60 + 7 * 24 * 3600 + 299)),
            None
        );
    }

    #[test]
    fn a_notification_no_consumer_takes_within_max_wait_fails_not_pulled() {
        let week = Duration::from_secs(7 * 24 * 3600);
        let due = at(0);
        let gave_up = at(7 * 24 * 3600);
        assert_eq!(not_pulled(None, Some(due), week, gave_up), Some(gave_up));
        assert_eq!(
            not_pulled(None, Some(due), week, gave_up + chrono::Duration::hours(1)),
            Some(gave_up),
            "it ends when its wait did, however late that is noticed"
        );
        assert_eq!(not_pulled(None, Some(due), week, at(60)), None);
        assert_eq!(
            not_pulled(Some(lease(0, 9)), Some(due), week, gave_up),
            None
        );
        let failure = Failure::NotPulled {
            due_at: due,
            gave_up_at: gave_up,
        };
        let schedule = Schedule::from_stored(None, &[0, 120_000]);
        assert_eq!(
            after_failure(&failure, &schedule, 1.0, 1, gave_up),
            Outcome::Failed(FailReason::NotPulled)
        );
        assert_eq!(failure_error(&failure, None).0, "not_pulled");
        assert_eq!(
            failure_span(&failure, None, at(9 * 24 * 3600)),
            (due, gave_up)
        );
        assert_eq!(not_pulled_checks(week), Duration::from_secs(60));
        assert_eq!(
            not_pulled_checks(Duration::from_secs(1)),
            Duration::from_secs(1)
        );
    }
}
