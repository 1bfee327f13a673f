//! Ending leases: a consumer's ack, nack and extension, and a lease that
//! ran out as a pull meets it. Each ended lease is one attempt, recorded
//! like a push attempt; what it makes of the notification is decided in
//! `domain` (`pull::after_failure`, `status::after_attempt`). The leases
//! and waits hookd ends on its own are in `unanswered`.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::not_yours;
use crate::domain::jitter::Jitter;
use crate::domain::lease::{at_pull, due_again, ended_now, failure_span, AtPull};
use crate::domain::operator_event::{FailedNotification, OperatorEvent};
use crate::domain::outcome::Outcome;
use crate::domain::problem::{ErrorCode, Problem};
use crate::domain::pull::{after_failure, failure_error, Failure, Receipt};
use crate::domain::schedule::Schedule;
use crate::domain::status::{after_attempt, expected, keeping, Status};
use crate::service::{Service, ServiceError};
use crate::store::pull::{Leased, Leases, Taken};
use crate::store::pull_due::Pick;
use crate::store::recording::AttemptRecord;

/// Leases ended per statement by the expiry sweep.
pub(super) const EXPIRE_BATCH: i64 = 1000;

/// How a consumer ends a lease.
#[derive(Debug, Clone)]
pub enum End {
    Ack,
    Nack {
        retry_after: Option<Duration>,
        error: Option<String>,
        permanent: bool,
    },
}

/// What an ended lease made of its notification.
#[derive(Debug, Clone)]
pub struct Ended {
    pub id: Uuid,
    pub status: Status,
    /// The attempt the lease was.
    pub attempt: i32,
    pub next_attempt_at: Option<DateTime<Utc>>,
}

/// What one expiry sweep did: the expired leases it read (a full
/// `EXPIRE_BATCH` means there may be more) and those it ended (the others
/// changed meanwhile).
#[derive(Debug, Clone, Copy)]
pub struct Swept {
    pub read: usize,
    pub ended: usize,
}

/// Who ends leases, and within which endpoint: a consumer token is bound to
/// one endpoint; the batch routes name one.
#[derive(Debug, Clone, Copy, Default)]
pub struct Scope {
    pub consumer: Option<Uuid>,
    pub endpoint: Option<Uuid>,
}

impl Service {
    /// Ends the leases `receipts` name, as `how` says; one result per
    /// receipt, in order. Nothing changes for a refused receipt.
    pub async fn end_leases(
        &self,
        receipts: &[Receipt],
        how: &End,
        scope: Scope,
    ) -> Result<Vec<Result<Ended, Problem>>, ServiceError> {
        let operator = self.settings.operator.enabled();
        // A notification named twice (a stale receipt, then the current
        // one) is ended by the first receipt that holds its lease, not by
        // the first given: the others are `lease_lost`.
        let mut named: HashMap<Uuid, Vec<Receipt>> = HashMap::new();
        for receipt in receipts {
            named
                .entry(receipt.notification)
                .or_default()
                .push(*receipt);
        }
        let ended_leases = self
            .pull
            .end_leases(
                Leases::Receipts(receipts),
                Box::new(|row| {
                    named
                        .get(&row.id)?
                        .iter()
                        .find_map(|receipt| judge(row, receipt, how, scope, operator).ok())
                }),
            )
            .await?;
        let moved: HashSet<Uuid> = ended_leases.moved.into_iter().collect();
        let rows: HashMap<Uuid, Leased> =
            ended_leases.rows.into_iter().map(|r| (r.id, r)).collect();
        let mut seen = HashSet::new();
        let results = receipts
            .iter()
            .enumerate()
            .map(|(i, receipt)| {
                let row = rows
                    .get(&receipt.notification)
                    .ok_or_else(|| Problem::not_found("notification"))?;
                // An item's field names its place, as a malformed one's does.
                let record = judge(row, receipt, how, scope, operator).map_err(|mut problem| {
                    if problem.field.as_deref() == Some("receipts") {
                        problem.field = Some(format!("receipts[{i}]"));
                    }
                    problem
                })?;
                if !seen.insert(receipt.notification) {
                    return Err(lease_lost());
                }
                // Judged on what was read; lost before the write.
                if !moved.contains(&record.notification_id) {
                    return Err(lease_lost());
                }
                Ok(ended(&record))
            })
            .collect::<Vec<_>>();
        let how_label = match how {
            End::Ack => "ack",
            End::Nack { .. } => "nack",
        };
        if matches!(how, End::Nack { .. }) {
            // A nacked notification is due again at its next attempt, which
            // may be sooner than a waiting consumer planned to look (at the
            // lease's end): wake the endpoint's waiters to look again.
            let mut endpoints: Vec<Uuid> = results
                .iter()
                .flatten()
                .filter_map(|done| rows.get(&done.id).map(|r| r.endpoint_id))
                .collect();
            endpoints.sort_unstable();
            endpoints.dedup();
            self.signal_pull(&endpoints).await;
        }
        for done in results.iter().flatten() {
            metrics::counter!("hookd_pull_ended_total", "how" => how_label).increment(1);
            if let Some(leased_at) = rows.get(&done.id).and_then(|r| r.leased_at) {
                let held = (self.now() - leased_at).num_microseconds().unwrap_or(0);
                metrics::histogram!("hookd_pull_ack_seconds").record(held.max(0) as f64 / 1e6);
            }
        }
        Ok(results)
    }

    /// Lengthens the lease `receipt` names to `lease` from now. The row is
    /// read with the store's clock, `check_lease` (`domain::lease`) decides
    /// the lease still runs and is the caller's, and the store moves its
    /// end only if it is still the one read.
    pub async fn extend_lease(
        &self,
        receipt: &Receipt,
        lease: Duration,
        scope: Scope,
    ) -> Result<DateTime<Utc>, ServiceError> {
        let row = self
            .pull
            .lease_of(receipt.notification)
            .await?
            .ok_or_else(|| Problem::not_found("notification"))?;
        check_lease(&row, receipt, scope)?;
        let held = row.lease().ok_or_else(lease_lost)?;
        let to = held.extended(lease, row.now);
        if let Some(until) = self.pull.extend_lease(receipt, held.until, to).await? {
            return Ok(until);
        }
        // Changed since it was read: read it again to say why.
        let row = self
            .pull
            .lease_of(receipt.notification)
            .await?
            .ok_or_else(|| Problem::not_found("notification"))?;
        check_lease(&row, receipt, scope)?;
        Err(lease_lost().into())
    }

    /// Ends the leases of taken notifications that cannot be handed over (a
    /// sealed custom header does not open) as failed attempts, as push
    /// records them; returns the others.
    pub(super) async fn fail_unopened(
        &self,
        taken: Vec<Taken>,
    ) -> Result<Vec<Taken>, ServiceError> {
        let (unopened, readable): (Vec<Taken>, Vec<Taken>) =
            taken.into_iter().partition(|t| t.unreadable.is_some());
        if unopened.is_empty() {
            return Ok(readable);
        }
        let operator = self.settings.operator.enabled();
        let receipts: Vec<Receipt> = unopened
            .iter()
            .map(|t| Receipt {
                notification: t.id,
                lease: t.lease_id,
            })
            .collect();
        let failed: HashMap<Uuid, (Uuid, String)> = unopened
            .iter()
            .filter_map(|t| {
                let error = t.unreadable.as_ref()?;
                let message = format!("cannot decrypt the notification's custom headers: {error}");
                Some((t.id, (t.lease_id, message)))
            })
            .collect();
        let ended = self
            .pull
            .end_leases(
                Leases::Receipts(&receipts),
                Box::new(|row| {
                    let (lease, message) = failed.get(&row.id)?;
                    row.holds(*lease)
                        .then(|| attempt(row, &Failure::Unopened, Some(message), operator))
                }),
            )
            .await?;
        metrics::counter!("hookd_pull_ended_total", "how" => "unopened")
            .increment(ended.moved.len() as u64);
        Ok(readable)
    }
}

/// What a pull does with a row it reads (`domain::lease::at_pull`): a free
/// due one is taken; one whose lease ran out has the attempt that lease
/// was recorded, ending with it, and is taken at once if the schedule's
/// wait after it is over.
pub(super) fn pick(row: &Leased, operator: bool) -> Pick {
    match at_pull(row.lease(), row.next_attempt_at, row.now) {
        AtPull::Take => Pick {
            record: None,
            take: row.next_attempt_at,
        },
        AtPull::Leave => Pick::default(),
        AtPull::RanOut(_) => {
            let record = attempt(row, &Failure::LeaseExpired, None, operator);
            metrics::counter!("hookd_pull_ended_total", "how" => "lease_expired").increment(1);
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

fn lease_lost() -> Problem {
    Problem::conflict(
        ErrorCode::LeaseLost,
        "the receipt's lease is no longer current (it ran out, or was ended): another consumer may hold the notification now",
    )
}

/// Whether `receipt` may act on `row` for this caller: the notification
/// is the caller's, pulled, pending, and under this very lease.
fn check_lease(row: &Leased, receipt: &Receipt, scope: Scope) -> Result<(), Problem> {
    if scope.consumer.is_some_and(|c| c != row.endpoint_id) {
        return Err(not_yours());
    }
    if scope.endpoint.is_some_and(|e| e != row.endpoint_id) {
        return Err(Problem::invalid(
            ErrorCode::ReceiptMismatch,
            "receipts",
            "the receipt is for a notification of another endpoint",
        ));
    }
    if !row.pull {
        return Err(Problem::conflict(
            ErrorCode::NotPull,
            "the notification is pushed by hookd, not pulled: it has no lease to end",
        ));
    }
    // A lease ends with its notification (a cancel, say): as DESIGN §10
    // says, a receipt that is no longer current is `lease_lost`, whatever
    // ended it, so a consumer handles one answer.
    if row.status != Status::Pending {
        return Err(Problem::conflict(
            ErrorCode::LeaseLost,
            format!(
                "the receipt's lease is no longer current: the notification ended `{}`",
                row.status
            ),
        ));
    }
    if !row.holds(receipt.lease) {
        return Err(lease_lost());
    }
    Ok(())
}

/// The attempt a receipt's lease ends with, or why it may not.
fn judge(
    row: &Leased,
    receipt: &Receipt,
    how: &End,
    scope: Scope,
    operator: bool,
) -> Result<AttemptRecord, Problem> {
    check_lease(row, receipt, scope)?;
    Ok(match how {
        End::Ack => {
            let span = ended_now(row.lease(), row.now);
            attempt_with(row, span, Outcome::Succeeded, None, operator, false)
        }
        End::Nack {
            retry_after,
            error,
            permanent,
        } => attempt(
            row,
            &Failure::Nack {
                retry_after: *retry_after,
                permanent: *permanent,
            },
            error.as_deref(),
            operator,
        ),
    })
}

/// A failed leased attempt, with what the schedule makes of it.
pub(super) fn attempt(
    row: &Leased,
    failure: &Failure,
    message: Option<&str>,
    operator: bool,
) -> AttemptRecord {
    let schedule = Schedule::from_stored(row.schedule_name.clone(), &row.schedule_ms);
    let number = row.attempts + 1;
    let in_series = (number - row.series_start).max(1) as u32;
    // A lease that ran out ended with it: the schedule goes on from there,
    // however late this is noticed.
    let span = failure_span(failure, row.lease(), row.now);
    let factor = Jitter::stored(row.schedule_jitter).draw();
    let outcome = after_failure(failure, &schedule, factor, in_series, span.1);
    let (code, message) = failure_error(failure, message);
    let expired = *failure == Failure::LeaseExpired;
    attempt_with(row, span, outcome, Some((code, message)), operator, expired)
}

fn attempt_with(
    row: &Leased,
    (started_at, ended_at): (DateTime<Utc>, DateTime<Utc>),
    outcome: Outcome,
    error: Option<(&str, String)>,
    operator: bool,
    expired: bool,
) -> AttemptRecord {
    let number = row.attempts + 1;
    let duration = (ended_at - started_at)
        .num_milliseconds()
        .clamp(0, i32::MAX as i64) as i32;
    let next = after_attempt(&outcome, error.as_ref().map(|(c, m)| (*c, m.as_str())));
    let event = if operator && next.status == Status::Failed {
        OperatorEvent::notification_failed(
            &FailedNotification {
                notification_id: row.id,
                endpoint_id: row.endpoint_id,
                key: row.key.as_deref(),
                event_type: row.event_type.as_deref(),
                attempts: number,
                last_status_code: None,
                last_error: next.last_error.as_deref(),
            },
            row.now,
        )
    } else {
        None
    };
    // A lease that ran out is recorded only if it was not extended since
    // it was read.
    let expected = expected(row.attempts, row.series_start, row.lease(), expired);
    let keep = keeping(number, &outcome, error.is_some(), &expected);
    AttemptRecord {
        notification_id: row.id,
        endpoint_id: row.endpoint_id,
        number,
        expected,
        keep,
        started_at,
        due_at: None,
        duration_ms: duration,
        status_code: None,
        response_body: None,
        response_headers: None,
        sent_headers: None,
        error_code: error.as_ref().map(|(c, _)| c.to_string()),
        error_message: error.map(|(_, m)| m),
        outcome,
        // A pull endpoint has no URL, nor a breaker or health of its own.
        tells_of_endpoint: true,
        next,
        event,
        // A pull consumer takes the next of its key: nothing to index.
        ordered: false,
    }
}

fn ended(record: &AttemptRecord) -> Ended {
    Ended {
        id: record.notification_id,
        status: record.next.status,
        attempt: record.number,
        next_attempt_at: record.next.next_attempt_at,
    }
}
