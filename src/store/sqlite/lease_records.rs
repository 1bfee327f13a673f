//! Recording the attempts that end pull leases (an ack, a nack, a lease
//! that ran out, a notification never pulled), inside the caller's
//! transaction on the writer, with `postgres/recording.rs`'s semantics:
//! - the notification moves only if it is still as `record.expected`
//!   says (pending, its attempts and series, and for a lease its id and,
//!   for one that ran out, its end): a compare-and-set on what the domain
//!   decided on;
//! - an attempt row for a record that moved and is not kept `inline`, or
//!   that did not move and is kept `when_refused` (one attempt 1 per
//!   notification, in a row or inline);
//! - its operator event for a moved row only, while the operator endpoint
//!   exists.
//!
//! Pull leases carry no endpoint health, so none is written. The
//! delivery store's `record_attempts` may replace this once it exists for
//! SQLite.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::columns::micros;
use super::store_error;
use crate::domain::id;
use crate::domain::operator_event::{OperatorEvent, OPERATOR_ENDPOINT_ID};
use crate::store::recording::AttemptRecord;
use crate::store::StoreError;

/// Records `records` at `now`; returns the ids of the notifications that
/// moved.
pub(super) async fn record_on(
    conn: &mut sqlx::SqliteConnection,
    records: &[AttemptRecord],
    now: DateTime<Utc>,
) -> Result<Vec<Uuid>, StoreError> {
    let mut moved = Vec::new();
    for record in records {
        if record_one(conn, record, now).await? {
            moved.push(record.notification_id);
        }
    }
    Ok(moved)
}

async fn record_one(
    conn: &mut sqlx::SqliteConnection,
    r: &AttemptRecord,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let lease = r.expected.lease.map(|lease| lease.id);
    let ran_out = r.expected.lease.and_then(|lease| lease.ran_out_at);
    let done = sqlx::query(
        "UPDATE notifications SET attempts = ?2, status = ?3, next_attempt_at = ?4, \
             last_attempt_at = ?5, last_status_code = ?6, last_error = ?7, \
             first_attempt_ms = CASE WHEN ?8 THEN ?9 ELSE first_attempt_ms END, \
             first_attempt_body = CASE WHEN ?8 THEN ?10 ELSE first_attempt_body END, \
             completed_at = CASE WHEN ?11 THEN ?12 END, \
             lease_id = NULL, leased_at = NULL, updated_at = ?12 \
         WHERE id = ?1 AND status = 'pending' AND attempts = ?13 AND series_start = ?14 \
           AND (?15 IS NULL OR (lease_id = ?15 \
                AND (?16 IS NULL OR next_attempt_at = ?16)))",
    )
    .bind(r.notification_id)
    .bind(r.number)
    .bind(r.next.status.as_str())
    .bind(r.next.next_attempt_at.map(micros))
    .bind(micros(r.started_at))
    .bind(r.status_code)
    .bind(r.next.last_error.as_deref())
    .bind(r.keep.inline)
    .bind(r.duration_ms)
    .bind(r.response_body.as_deref())
    .bind(r.next.completed)
    .bind(micros(now))
    .bind(r.expected.attempts)
    .bind(r.expected.series_start)
    .bind(lease)
    .bind(ran_out.map(micros))
    .execute(&mut *conn)
    .await
    .map_err(store_error)?;
    let moved = done.rows_affected() == 1;
    let keep_row = if moved {
        !r.keep.inline
    } else if r.keep.when_refused {
        // One attempt 1 per notification: not beside one kept inline.
        let inline_first: Option<bool> = sqlx::query_scalar(
            "SELECT first_attempt_ms IS NOT NULL AND ?2 = 1 FROM notifications WHERE id = ?1",
        )
        .bind(r.notification_id)
        .bind(r.number)
        .fetch_optional(&mut *conn)
        .await
        .map_err(store_error)?;
        inline_first == Some(false)
    } else {
        false
    };
    if keep_row {
        sqlx::query(
            "INSERT INTO attempts (notification_id, number, started_at, duration_ms, \
                 status_code, response_body, error_code, error_message, outcome) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) \
             ON CONFLICT (notification_id, number) DO NOTHING",
        )
        .bind(r.notification_id)
        .bind(r.number)
        .bind(micros(r.started_at))
        .bind(r.duration_ms)
        .bind(r.status_code)
        .bind(r.response_body.as_deref())
        .bind(r.error_code.as_deref())
        .bind(r.error_message.as_deref())
        .bind(r.outcome.kind().as_str())
        .execute(&mut *conn)
        .await
        .map_err(store_error)?;
    }
    if moved {
        if let Some(event) = &r.event {
            operator_event(conn, event, now).await?;
        }
    }
    Ok(moved)
}

/// The operator event of a moved row, as `insert_operator_events!` writes
/// it: to the operator endpoint while it exists, once per key.
async fn operator_event(
    conn: &mut sqlx::SqliteConnection,
    event: &OperatorEvent,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO notifications (id, endpoint_id, key, event_type, content_type, body, \
             schedule_ms, schedule_name, deliver_at, next_attempt_at, needs_index, \
             created_at, updated_at) \
         SELECT ?1, op.id, ?3, ?4, 'application/json', ?5, op.schedule_ms, op.schedule_name, \
             ?6, ?6, 1, ?6, ?6 \
         FROM endpoints op WHERE op.id = ?2 AND op.deleted_at IS NULL \
         ON CONFLICT DO NOTHING",
    )
    .bind(id::new_id())
    .bind(OPERATOR_ENDPOINT_ID)
    .bind(&event.key)
    .bind(event.event_type)
    .bind(&event.body[..])
    .bind(micros(now))
    .execute(&mut *conn)
    .await
    .map_err(store_error)?;
    Ok(())
}
