//! What a batch of recorded attempts adds to the per-minute counts behind
//! the overview (`GET /v1/stats`): per endpoint and minute, and per minute
//! for the whole deployment. The store adds each sum to its row in the
//! transaction that records the attempts, so a count commits exactly when
//! what it counts does, and rows that several processes add to only ever
//! grow by what each committed.
//!
//! What counts (decided here, once):
//! - an attempt that moved its notification (the recording's
//!   compare-and-set; a duplicate delivery by a process whose lease ran
//!   out moves nothing and is not counted, so nothing is counted twice);
//! - a failed attempt: one whose outcome is not a success;
//! - delivered, failed: a notification that ended so; cancelled is
//!   neither. Notifications that end failed without an attempt (held
//!   behind an open circuit past their hold) count where that is decided;
//! - lateness: a push attempt's start minus its due time, in
//!   `domain::lateness`'s buckets (pull consumers choose when they take a
//!   notification: they have none).
//!
//! Minutes are those the attempts started in (a failure without an
//! attempt: when it was decided), in UTC.
//!
//! Failed attempts are also summed per endpoint and *hour*: the ranking of
//! the endpoints failing most over a day reads 24 rows per failing
//! endpoint from those, plus the minutes of the window's first, partial
//! hour, instead of up to 1,440 rows per endpoint (`ranked_from_hours`).

use std::collections::BTreeMap;

use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use uuid::Uuid;

use super::lateness::{bucket_of, ceil_ms, Histogram, BUCKETS};
use super::status::Status;

/// The counts of one row: an endpoint's minute, or the deployment's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counts {
    pub attempts: i64,
    pub failed_attempts: i64,
    pub delivered: i64,
    pub failed: i64,
    pub lateness: Histogram,
    /// The largest lateness counted, in whole ms rounded up (0: none).
    pub lateness_max_ms: i64,
}

impl Default for Counts {
    fn default() -> Self {
        Self {
            attempts: 0,
            failed_attempts: 0,
            delivered: 0,
            failed: 0,
            lateness: [0; BUCKETS],
            lateness_max_ms: 0,
        }
    }
}

impl Counts {
    /// Adds `other`: how rows merge, in a batch and in the store.
    pub fn add(&mut self, other: &Counts) {
        self.attempts += other.attempts;
        self.failed_attempts += other.failed_attempts;
        self.delivered += other.delivered;
        self.failed += other.failed;
        for (mine, theirs) in self.lateness.iter_mut().zip(other.lateness.iter()) {
            *mine += theirs;
        }
        self.lateness_max_ms = self.lateness_max_ms.max(other.lateness_max_ms);
    }

    fn count(&mut self, item: &Counted) {
        if let Some(succeeded) = item.attempt {
            self.attempts += 1;
            self.failed_attempts += i64::from(!succeeded);
        }
        if let Some(late_us) = item.late_us {
            self.lateness[bucket_of(late_us)] += 1;
            self.lateness_max_ms = self.lateness_max_ms.max(ceil_ms(late_us));
        }
        match item.ended {
            Some(Status::Succeeded) => self.delivered += 1,
            Some(Status::Failed) => self.failed += 1,
            _ => {}
        }
    }
}

/// One thing to count, for one endpoint at one time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counted {
    pub endpoint_id: Uuid,
    pub at: DateTime<Utc>,
    /// An attempt, and whether it succeeded.
    pub attempt: Option<bool>,
    /// The attempt's lateness in microseconds, when it had a due time.
    pub late_us: Option<i64>,
    /// The status the notification ended in, if it ended.
    pub ended: Option<Status>,
}

impl Counted {
    /// An attempt that moved its notification to `next`: `succeeded` is
    /// whether its outcome was a success, `due_at` when it was due (push).
    pub fn attempt(
        endpoint_id: Uuid,
        started_at: DateTime<Utc>,
        succeeded: bool,
        due_at: Option<DateTime<Utc>>,
        next: Status,
    ) -> Self {
        Self {
            endpoint_id,
            at: started_at,
            attempt: Some(succeeded),
            late_us: due_at.map(|due| (started_at - due).num_microseconds().unwrap_or(i64::MAX)),
            ended: (next != Status::Pending).then_some(next),
        }
    }

    /// A notification that ended failed without an attempt, at `at`.
    pub fn failed_without_attempt(endpoint_id: Uuid, at: DateTime<Utc>) -> Self {
        Self {
            endpoint_id,
            at,
            attempt: None,
            late_us: None,
            ended: Some(Status::Failed),
        }
    }
}

/// The start of `at`'s minute.
pub fn minute_of(at: DateTime<Utc>) -> DateTime<Utc> {
    at.duration_trunc(TimeDelta::minutes(1)).unwrap_or(at)
}

/// The start of `at`'s hour.
pub fn hour_of(at: DateTime<Utc>) -> DateTime<Utc> {
    at.duration_trunc(TimeDelta::hours(1)).unwrap_or(at)
}

/// Where a window starting at `since` (a minute) is read from the hourly
/// failure sums: the first whole hour at or after `since`. The minutes
/// before it (at most 59) are read per minute, so the ranking is exact.
pub fn ranked_from_hours(since: DateTime<Utc>) -> DateTime<Utc> {
    let hour = hour_of(since);
    if hour == since {
        hour
    } else {
        hour + TimeDelta::hours(1)
    }
}

/// A batch's sums, each row once, in key order: the order the store locks
/// rows in, so two processes adding to the same rows wait for each other
/// instead of deadlocking.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct MinuteSums {
    /// Per (endpoint, minute).
    pub endpoints: Vec<(Uuid, DateTime<Utc>, Counts)>,
    /// Per minute, every endpoint.
    pub totals: Vec<(DateTime<Utc>, Counts)>,
    /// Failed attempts per (hour, endpoint), only where there were some, in
    /// key order.
    pub failing_hours: Vec<(DateTime<Utc>, Uuid, i32)>,
}

impl MinuteSums {
    pub fn is_empty(&self) -> bool {
        self.totals.is_empty()
    }
}

/// Sums `items` per endpoint and minute, and per minute.
pub fn sum(items: impl IntoIterator<Item = Counted>) -> MinuteSums {
    let mut endpoints: BTreeMap<(Uuid, DateTime<Utc>), Counts> = BTreeMap::new();
    let mut totals: BTreeMap<DateTime<Utc>, Counts> = BTreeMap::new();
    for item in items {
        let minute = minute_of(item.at);
        endpoints
            .entry((item.endpoint_id, minute))
            .or_default()
            .count(&item);
        totals.entry(minute).or_default().count(&item);
    }
    let mut failing_hours: BTreeMap<(DateTime<Utc>, Uuid), i32> = BTreeMap::new();
    for ((id, minute), counts) in &endpoints {
        if counts.failed_attempts > 0 {
            *failing_hours.entry((hour_of(*minute), *id)).or_default() +=
                counts.failed_attempts as i32;
        }
    }
    MinuteSums {
        endpoints: endpoints
            .into_iter()
            .map(|((id, minute), counts)| (id, minute, counts))
            .collect(),
        totals: totals.into_iter().collect(),
        failing_hours: failing_hours
            .into_iter()
            .map(|((hour, id), failed)| (hour, id, failed))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_764_133_200 + seconds, 0).unwrap()
    }

    #[test]
    fn a_batch_is_summed_per_endpoint_and_minute_in_key_order() {
        let (a, b) = (Uuid::from_u128(2), Uuid::from_u128(1));
        let due = |s| Some(at(s));
        let sums = sum([
            Counted::attempt(a, at(1), true, due(1), Status::Succeeded),
            Counted::attempt(a, at(30), false, due(29), Status::Pending),
            Counted::attempt(b, at(59), false, due(0), Status::Failed),
            Counted::attempt(a, at(61), true, None, Status::Succeeded),
            Counted::failed_without_attempt(b, at(2)),
        ]);
        let keys: Vec<_> = sums.endpoints.iter().map(|(id, m, _)| (*id, *m)).collect();
        assert_eq!(keys, [(b, at(0)), (a, at(0)), (a, at(60))]);
        let (_, _, b0) = &sums.endpoints[0];
        assert_eq!(
            (b0.attempts, b0.failed_attempts, b0.delivered, b0.failed),
            (1, 1, 0, 2)
        );
        assert_eq!(b0.lateness_max_ms, 59_000);
        let (_, _, a0) = &sums.endpoints[1];
        assert_eq!(
            (a0.attempts, a0.failed_attempts, a0.delivered, a0.failed),
            (2, 1, 1, 0)
        );
        assert_eq!(a0.lateness.iter().sum::<i64>(), 2);
        assert_eq!(a0.lateness[0], 1, "on time is below 1 ms");
        let (_, _, a1) = &sums.endpoints[2];
        assert_eq!(
            a1.lateness.iter().sum::<i64>(),
            0,
            "no due time, no lateness"
        );
        // The deployment's rows are the endpoints' rows added up.
        assert_eq!(sums.totals.len(), 2);
        let mut first = b0.clone();
        first.add(a0);
        assert_eq!(sums.totals[0], (at(0), first));
        assert_eq!(sums.totals[1], (at(60), a1.clone()));
    }

    #[test]
    fn a_retry_is_an_attempt_and_ends_nothing_and_a_cancel_is_not_a_failure() {
        let id = Uuid::from_u128(1);
        let retry = Counted::attempt(id, at(0), false, None, Status::Pending);
        assert_eq!(retry.ended, None);
        let cancelled = Counted {
            ended: Some(Status::Cancelled),
            ..retry.clone()
        };
        let sums = sum([retry, cancelled]);
        let counts = &sums.totals[0].1;
        assert_eq!(
            (counts.attempts, counts.delivered, counts.failed),
            (2, 0, 0)
        );
    }

    #[test]
    fn an_attempt_before_its_due_time_is_on_time() {
        let id = Uuid::from_u128(1);
        let early = Counted::attempt(id, at(0), true, Some(at(5)), Status::Succeeded);
        let sums = sum([early]);
        assert_eq!(sums.totals[0].1.lateness[0], 1);
        assert_eq!(sums.totals[0].1.lateness_max_ms, 0);
    }

    #[test]
    fn failed_attempts_are_also_summed_per_hour_and_endpoint_and_only_where_some_failed() {
        let (a, b) = (Uuid::from_u128(2), Uuid::from_u128(1));
        let sums = sum([
            Counted::attempt(a, at(1), false, None, Status::Pending),
            Counted::attempt(a, at(61), false, None, Status::Pending),
            Counted::attempt(a, at(3_600), false, None, Status::Pending),
            Counted::attempt(b, at(5), true, None, Status::Succeeded),
            Counted::attempt(b, at(7), false, None, Status::Pending),
        ]);
        assert_eq!(
            sums.failing_hours,
            [(at(0), b, 1), (at(0), a, 2), (at(3_600), a, 1)]
        );
        let healthy = sum([Counted::attempt(b, at(5), true, None, Status::Succeeded)]);
        assert!(healthy.failing_hours.is_empty());
    }

    #[test]
    fn a_window_is_read_per_hour_from_its_first_whole_hour() {
        assert_eq!(ranked_from_hours(at(0)), at(0));
        assert_eq!(ranked_from_hours(at(60)), at(3_600));
        assert_eq!(ranked_from_hours(at(3_540)), at(3_600));
    }

    #[test]
    fn nothing_to_count_is_an_empty_batch() {
        assert!(sum([]).is_empty());
        assert_eq!(minute_of(at(59)), at(0));
        assert_eq!(minute_of(at(60)), at(60));
    }
}
