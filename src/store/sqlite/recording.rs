//! Recording attempts on SQLite: a batch in one transaction on the writer.
//!
//! Nothing is decided here, as in PostgreSQL's one statement
//! (`postgres/recording.rs`, whose semantics this follows record by
//! record): each record comes with its next state, the row state it was
//! decided on (`status::Expected`), where its attempt is kept
//! (`status::keeping`), its operator event, and the batch's health
//! (`health::observe`). What is compared is persistence only:
//! - the notification moves only while it is still as `Expected` says
//!   (pending, that many attempts, that series, that pull lease and, for a
//!   lease that ran out, that end);
//! - an attempt row for a record that moved and is not kept `inline`, or
//!   that did not move and is kept `when_refused`; `INSERT OR IGNORE` on
//!   `(notification_id, number)` and the `first_attempt_ms IS NULL OR
//!   number <> 1` test keep one attempt 1 per notification;
//! - an operator event for a moved row only, while the operator endpoint
//!   exists, once per key;
//! - health written over a push endpoint in the other state only, one of
//!   whose notifications moved;
//! - the per-minute counts of the attempts that moved (`stats.rs`).
//!
//! The ends of pull leases (`pull.rs`, `pull_due.rs`) are recorded by the
//! same code, inside their own transaction (`record_attempts_on`).
//!
//! One writer connection: the transaction reads and writes with nothing
//! between, as PostgreSQL's row locks would have it. Each statement is a
//! constant string, prepared once on the connection and reused per record
//! (SQLite is in-process: a statement per record costs no round trip).

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use sqlx::SqliteConnection;
use uuid::Uuid;

use super::columns::micros;
use super::{store_error, SqliteStore};
use crate::domain::health::Health;
use crate::domain::id::new_id;
use crate::domain::operator_event::{OperatorEvent, OPERATOR_ENDPOINT_ID};
use crate::store::recording::{ended, AttemptRecord, Recorded};
use crate::store::StoreError;

/// The decided state, written over a row still as expected.
const MOVE: &str = "UPDATE notifications SET \
         attempts = ?2, status = ?3, next_attempt_at = ?4, last_attempt_at = ?5, \
         last_status_code = ?6, last_error = ?7, \
         first_attempt_ms = CASE WHEN ?8 THEN ?9 ELSE first_attempt_ms END, \
         first_attempt_body = CASE WHEN ?8 THEN ?10 ELSE first_attempt_body END, \
         completed_at = CASE WHEN ?11 THEN ?12 END, \
         lease_id = NULL, leased_at = NULL, updated_at = ?12 \
     WHERE id = ?1 AND status = 'pending' AND attempts = ?13 AND series_start = ?14 \
       AND (?15 IS NULL OR (lease_id = ?15 AND (?16 IS NULL OR next_attempt_at = ?16))) \
     RETURNING endpoint_id";

/// The attempt's row, for a notification that exists and holds no inline
/// attempt of that number.
const KEEP: &str = "INSERT OR IGNORE INTO attempts (notification_id, number, started_at, \
         duration_ms, status_code, response_body, error_code, error_message, outcome) \
     SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9 FROM notifications n \
     WHERE n.id = ?1 AND (n.first_attempt_ms IS NULL OR ?2 <> 1)";

/// An operator event, due at once, owed to the due index; only while the
/// operator endpoint exists, and once per key.
const REPORT: &str = "INSERT INTO notifications (id, endpoint_id, key, event_type, content_type, \
         body, schedule_ms, schedule_name, deliver_at, next_attempt_at, needs_index, \
         created_at, updated_at) \
     SELECT ?1, op.id, ?2, ?3, 'application/json', ?4, op.schedule_ms, op.schedule_name, \
         ?5, ?5, 1, ?5, ?5 \
     FROM endpoints op WHERE op.id = ?6 AND op.deleted_at IS NULL \
     ON CONFLICT (key, endpoint_id) WHERE key IS NOT NULL DO NOTHING";

/// Health over a push endpoint in the other state.
const HEAL: &str = "UPDATE endpoints SET failing_since = ?2 \
     WHERE id = ?1 AND (failing_since IS NOT NULL) = ?3 AND url IS NOT NULL";

impl SqliteStore {
    /// Records many attempts in one transaction (one commit): writes each
    /// notification's decided next state where the row is still as its
    /// record expects, the attempts' rows, the operator events of the rows
    /// that moved and the endpoints' health; then reads what the ordered
    /// ends released (`Recorded`).
    pub async fn record_attempts(
        &self,
        records: &[AttemptRecord],
        health: &[(Uuid, Health)],
    ) -> Result<Recorded, StoreError> {
        if records.is_empty() {
            return Ok(Recorded::default());
        }
        let mut tx = self.writer.begin().await.map_err(store_error)?;
        let moved = record_attempts_on(
            &mut tx,
            records,
            health,
            self.clock.now(),
            self.count_minutes,
        )
        .await?;
        let released = super::ordering::released(&mut tx, &ended(records, &moved)).await?;
        tx.commit().await.map_err(store_error)?;
        Ok(Recorded { moved, released })
    }
}

/// `SqliteStore::record_attempts` inside a transaction of the caller's on
/// the writer, at `now`: how the pull leases' ends (an ack, a nack, a lease
/// that ran out, a notification never pulled) are recorded too, with no
/// health (`&[]`: pull leases carry none); their per-minute counts with
/// them unless `count_minutes` is off.
pub(super) async fn record_attempts_on(
    conn: &mut SqliteConnection,
    records: &[AttemptRecord],
    health: &[(Uuid, Health)],
    now: DateTime<Utc>,
    count_minutes: bool,
) -> Result<Vec<Uuid>, StoreError> {
    let now = micros(now);
    let mut moved = Vec::with_capacity(records.len());
    let mut moved_endpoints = BTreeSet::new();
    let mut events: Vec<&OperatorEvent> = Vec::new();
    for r in records {
        // As PostgreSQL stores it (its text holds no NUL), so that both
        // backends return the same body.
        let body = r
            .response_body
            .as_ref()
            .map(|b| b.replace('\0', "\u{FFFD}"));
        let lease = r.expected.lease;
        let endpoint: Option<Uuid> = sqlx::query_scalar(MOVE)
            .bind(r.notification_id)
            .bind(r.number)
            .bind(r.next.status.as_str())
            .bind(r.next.next_attempt_at.map(micros))
            .bind(micros(r.started_at))
            .bind(r.status_code)
            .bind(r.next.last_error.as_deref())
            .bind(r.keep.inline)
            .bind(r.duration_ms)
            .bind(body.as_deref())
            .bind(r.next.completed)
            .bind(now)
            .bind(r.expected.attempts)
            .bind(r.expected.series_start)
            .bind(lease.map(|l| l.id))
            .bind(lease.and_then(|l| l.ran_out_at).map(micros))
            .fetch_optional(&mut *conn)
            .await
            .map_err(store_error)?;
        let keep = match endpoint {
            Some(endpoint) => {
                moved.push(r.notification_id);
                moved_endpoints.insert(endpoint);
                events.extend(&r.event);
                !r.keep.inline
            }
            None => r.keep.when_refused,
        };
        if keep {
            sqlx::query(KEEP)
                .bind(r.notification_id)
                .bind(r.number)
                .bind(micros(r.started_at))
                .bind(r.duration_ms)
                .bind(r.status_code)
                .bind(body.as_deref())
                .bind(r.error_code.as_deref())
                .bind(r.error_message.as_deref())
                .bind(r.outcome.as_str())
                .execute(&mut *conn)
                .await
                .map_err(store_error)?;
        }
    }
    for event in events {
        report(conn, event, now).await?;
    }
    // In endpoint id order, as `health::observe` gives them.
    for (id, h) in health {
        if !moved_endpoints.contains(id) {
            continue;
        }
        sqlx::query(HEAL)
            .bind(*id)
            .bind(h.failing_since().map(micros))
            .bind(h.changes_a_failing_endpoint())
            .execute(&mut *conn)
            .await
            .map_err(store_error)?;
    }
    // The attempts that moved, added to the per-minute counts in the same
    // transaction.
    if count_minutes {
        let sums = crate::store::stats::sums_of(records, &moved);
        super::stats::add_minute_sums(conn, &sums).await?;
    }
    Ok(moved)
}

/// Writes `event` as a notification to the operator endpoint (`REPORT`),
/// at `now` (microseconds), in the caller's transaction.
pub(super) async fn report(
    conn: &mut SqliteConnection,
    event: &OperatorEvent,
    now: i64,
) -> Result<(), StoreError> {
    sqlx::query(REPORT)
        .bind(new_id())
        .bind(event.key.as_str())
        .bind(event.event_type)
        .bind(event.body.as_slice())
        .bind(now)
        .bind(OPERATOR_ENDPOINT_ID)
        .execute(conn)
        .await
        .map_err(store_error)?;
    Ok(())
}
