//! Decisions the pull cases hand to the store, made as hookd makes them
//! with `domain::lease` and `domain::pull`, and the takes and acks built
//! on them. A decision may be wrong on purpose (a stale receipt): the
//! store must refuse what no longer holds when it writes.

use std::time::Duration as StdDuration;

use chrono::{Duration, Utc};
use hookd::domain::lease::{at_pull, due_again, ended_now, failure_span, AtPull};
use hookd::domain::outcome::Outcome;
use hookd::domain::pull::{after_failure, failure_error, Failure, Receipt};
use hookd::domain::schedule::Schedule;
use hookd::domain::status::{after_attempt, keeping, Expected, ExpectedLease};
use hookd::store::endpoints::Endpoint;
use hookd::store::notifications::NewNotification;
use hookd::store::pull::{Leased, Leases, Taken};
use hookd::store::pull_due::Pick;
use hookd::store::recording::AttemptRecord;
use hookd::store::seams::PullStore;
use uuid::Uuid;

use super::fixtures::due_at;
use super::Backend;

pub const MINUTE: StdDuration = StdDuration::from_secs(60);

/// What a pull makes of a row, as `domain::lease` decides.
pub fn pick(row: &Leased) -> Pick {
    match at_pull(row.lease(), row.next_attempt_at, row.now) {
        AtPull::Take => Pick {
            record: None,
            take: row.next_attempt_at,
        },
        AtPull::Leave => Pick::default(),
        AtPull::RanOut(_) => {
            let record = failed(row, &Failure::LeaseExpired);
            let take = due_again(&record.outcome, row.now)
                .then_some(record.next.next_attempt_at)
                .flatten();
            Pick {
                record: Some(record),
                take,
            }
        }
    }
}

/// A failed leased attempt on the row as read, with the lease it ends.
pub fn failed(row: &Leased, failure: &Failure) -> AttemptRecord {
    let schedule = Schedule::from_stored(row.schedule_name.clone(), &row.schedule_ms);
    let number = row.attempts + 1;
    let (started, ended) = failure_span(failure, row.lease(), row.now);
    let in_series = (number - row.series_start).max(1) as u32;
    // The fixtures' endpoints have no jitter: the schedule exact.
    let outcome = after_failure(failure, &schedule, 1.0, in_series, ended);
    let (code, message) = failure_error(failure, None);
    let expired = *failure == Failure::LeaseExpired;
    let expected = Expected {
        lease: row.lease_id.map(|id| ExpectedLease {
            id,
            ran_out_at: row.lease().filter(|_| expired).map(|l| l.until),
        }),
        ..ack(row, Uuid::nil()).expected
    };
    AttemptRecord {
        error_code: Some(code.into()),
        error_message: Some(message.clone()),
        next: after_attempt(&outcome, Some((code, &message))),
        keep: keeping(number, &outcome, true, &expected),
        expected,
        outcome,
        started_at: started,
        due_at: None,
        ..ack(row, Uuid::nil())
    }
}

/// An ack of the row as read, presenting `lease`.
pub fn ack(row: &Leased, lease: Uuid) -> AttemptRecord {
    let (started_at, _) = ended_now(row.lease(), row.now);
    let expected = Expected {
        attempts: row.attempts,
        series_start: row.series_start,
        lease: Some(ExpectedLease {
            id: lease,
            ran_out_at: None,
        }),
    };
    AttemptRecord {
        notification_id: row.id,
        endpoint_id: row.endpoint_id,
        number: row.attempts + 1,
        keep: keeping(row.attempts + 1, &Outcome::Succeeded, false, &expected),
        expected,
        started_at,
        due_at: None,
        duration_ms: 1,
        status_code: None,
        response_body: None,
        response_headers: None,
        sent_headers: None,
        error_code: None,
        error_message: None,
        outcome: Outcome::Succeeded,
        tells_of_endpoint: true,
        next: after_attempt(&Outcome::Succeeded, None),
        event: None,
        ordered: false,
    }
}

pub async fn take<S: Backend>(
    store: &S,
    endpoint: Uuid,
    max: i64,
    lease: StdDuration,
) -> Vec<Taken> {
    PullStore::take(store, endpoint, max, lease, Box::new(pick))
        .await
        .unwrap()
}

pub fn receipt(taken: &Taken) -> Receipt {
    Receipt {
        notification: taken.id,
        lease: taken.lease_id,
    }
}

/// Acks with `receipt` whatever the row holds (the store must check); the
/// ids that moved.
pub async fn ack_with<S: Backend>(store: &S, receipt: Receipt) -> Vec<Uuid> {
    PullStore::end_leases(
        store,
        Leases::Receipts(&[receipt]),
        Box::new(move |row| Some(ack(row, receipt.lease))),
    )
    .await
    .unwrap()
    .moved
}

/// A schedule that retries at once: a lease that ran out is due again.
pub fn at_once(endpoint: &Endpoint) -> NewNotification {
    NewNotification {
        schedule: Schedule::from_stored(None, &[0, 0, 0]),
        ..due_at(endpoint, Utc::now() - Duration::seconds(1))
    }
}
