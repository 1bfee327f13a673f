//! Recording attempts on SQLite: a batch in one transaction on the writer.
//!
//! Nothing is decided here, as in PostgreSQL's one statement
//! (`postgres/recording.rs`, whose semantics this follows): each record
//! comes with its next state, the row state it was decided on
//! (`status::Expected`), where its attempt is kept (`status::keeping`),
//! its operator event, and the batch's health (`health::observe`). What is
//! compared is persistence only:
//! - the notification moves only while it is still as `Expected` says
//!   (pending, that many attempts, that series, that pull lease and, for a
//!   lease that ran out, that end);
//! - an attempt row for a record that moved and is not kept `inline`, or
//!   that did not move and is kept `when_refused`; `INSERT OR IGNORE` on
//!   `(notification_id, number)` and the `first_attempt_ms IS NULL OR
//!   number <> 1` test keep one attempt 1 per notification;
//! - a refused attempt kept in the history counted on a cancelled
//!   notification whose next attempt it is (`count_refused`);
//! - an operator event for a moved row only, while the operator endpoint
//!   exists, once per key;
//! - health written over a push endpoint in the other state only, one of
//!   whose notifications moved;
//! - the per-minute counts of the attempts that moved (`stats.rs`).
//!
//! The ends of pull leases (`pull.rs`, `pull_due.rs`) are recorded by the
//! same code, inside their own transaction (`record_attempts_on`). What a
//! batch's ordered ends release is read and written by `releasing.rs`.
//!
//! One writer connection: the transaction reads and writes with nothing
//! between, as PostgreSQL's row locks would have it. The moves and the
//! attempts' rows go in one statement each for the whole batch, their
//! records as a JSON array (`json_each`), as `ordering.rs` places many
//! creates: SQLite is in-process, but each statement still crosses to
//! the connection's worker thread and back, and per record that was
//! about half of a batch's time on the one writer (45 against 18 µs a
//! record, `BENCHMARKS.md`).

use std::collections::{BTreeSet, HashSet};

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use sqlx::{Connection, SqliteConnection};
use uuid::Uuid;

use super::columns::{json_text, micros, records};
use super::releasing::{
    moved_to_succeeded, released, successors_releasing, SuccessWrites, Successor, RECORDER_OFF,
    SUCCESSES_RELEASE,
};
use super::riding::{Rider, Waited};
use super::{store_error, SqliteStore};
use crate::domain::health::Health;
use crate::domain::id::new_id;
use crate::domain::operator_event::{OperatorEvent, OPERATOR_ENDPOINT_ID};
use crate::domain::status::COUNTS_REFUSED_ATTEMPTS;
use crate::store::recording::{ending, refused_kept, AttemptRecord, Recorded};
use crate::store::StoreError;

/// The decided states, each written over a row still as expected: one
/// JSON array per record (`move_all`), `now` as `?1`. A row moves once
/// whatever matches it, as in PostgreSQL's `UPDATE … FROM`. Without
/// RETURNING: when every record's row moves, its count says so
/// (`returning::changed_every_row`); `MOVE` says which did otherwise.
pub(super) const MOVE_ALL: &str = records!(
    "r",
    "?2",
    "UPDATE notifications AS n SET \
         attempts = r.value ->> 1, status = r.value ->> 2, \
         next_attempt_at = r.value ->> 3, last_attempt_at = r.value ->> 4, \
         last_status_code = r.value ->> 5, last_error = r.value ->> 6, \
         first_attempt_ms = CASE WHEN r.value ->> 7 THEN r.value ->> 8 ELSE first_attempt_ms END, \
         first_attempt_body = CASE WHEN r.value ->> 7 THEN r.value ->> 9 \
             ELSE first_attempt_body END, \
         completed_at = CASE WHEN r.value ->> 10 THEN ?1 END, \
         behind = CASE WHEN r.value ->> 2 = 'succeeded' THEN NULL ELSE n.behind END, \
         lease_id = NULL, leased_at = NULL, updated_at = ?1 \
     FROM r \
     WHERE n.id = unhex(r.value ->> 0) AND n.status = 'pending' \
       AND n.attempts = r.value ->> 11 AND n.series_start = r.value ->> 12 \
       AND (r.value ->> 13 IS NULL OR (n.lease_id = unhex(r.value ->> 13) \
            AND (r.value ->> 14 IS NULL OR n.next_attempt_at = r.value ->> 14)))"
);

/// `MOVE_ALL`, returning the ids of the rows that moved.
pub(super) static MOVE: LazyLock<String> = LazyLock::new(|| format!("{MOVE_ALL} RETURNING id"));

/// The attempts' rows (one JSON array each), for notifications that exist
/// and hold no inline attempt of that number.
pub(super) const KEEP: &str = records!(
    "a",
    "?",
    "INSERT OR IGNORE INTO attempts (notification_id, number, started_at, \
         duration_ms, status_code, response_body, error_code, error_message, outcome, \
         sent_headers, response_headers, retried) \
     SELECT n.id, a.value ->> 1, a.value ->> 2, a.value ->> 3, a.value ->> 4, a.value ->> 5, \
         a.value ->> 6, a.value ->> 7, a.value ->> 8, a.value ->> 9, a.value ->> 10, \
         a.value ->> 11 \
     FROM a JOIN notifications n ON n.id = unhex(a.value ->> 0) \
     WHERE n.first_attempt_ms IS NULL OR a.value ->> 1 <> 1"
);

/// Refused attempts counted on their notifications (`count_refused`): one
/// JSON array per attempt, `now` as `?1`, the status that counts them as
/// `?3`.
const COUNT_REFUSED: &str = records!(
    "c",
    "?2",
    "UPDATE notifications AS n SET attempts = c.value ->> 1, \
         last_attempt_at = c.value ->> 2, last_status_code = c.value ->> 3, \
         last_error = c.value ->> 4, updated_at = ?1 \
     FROM c \
     WHERE n.id = unhex(c.value ->> 0) AND n.status = ?3 \
       AND n.attempts = (c.value ->> 1) - 1"
);

/// Counts refused attempts that were kept (`recording::refused_kept`) on
/// their notifications where `status::COUNTS_REFUSED_ATTEMPTS` says they
/// count, as PostgreSQL's `count_refused` does: the attempt is the
/// notification's next one, and becomes its last; its status stays. Only
/// when a batch had a row that did not move.
async fn count_refused(
    conn: &mut SqliteConnection,
    refused: &[&AttemptRecord],
    now: i64,
) -> Result<(), StoreError> {
    if refused.is_empty() {
        return Ok(());
    }
    let rows: Vec<_> = refused
        .iter()
        .map(|r| {
            (
                r.notification_id.simple().to_string(),
                r.number,
                micros(r.started_at),
                r.status_code,
                r.next.last_error.as_deref(),
            )
        })
        .collect();
    sqlx::query(COUNT_REFUSED)
        .bind(now)
        .bind(json_text(&rows))
        .bind(COUNTS_REFUSED_ATTEMPTS.as_str())
        .execute(&mut *conn)
        .await
        .map_err(store_error)?;
    Ok(())
}

/// An operator event, due at once, owed to the due index; only while the
/// operator endpoint exists, and once per key.
const REPORT: &str = "INSERT INTO notifications (id, endpoint_id, key, event_type, content_type, \
         body, schedule_ms, schedule_name, deliver_at, next_attempt_at, needs_index, \
         created_at, updated_at) \
     SELECT ?1, op.id, ?2, ?3, 'application/json', ?4, op.schedule_ms, op.schedule_name, \
         ?5, ?5, 1, ?5, ?5 \
     FROM endpoints op WHERE op.id = ?6 AND op.deleted_at IS NULL \
     ON CONFLICT (key, endpoint_id) WHERE key IS NOT NULL DO NOTHING";

/// Health over the push endpoints in the other state: one JSON array per
/// endpoint, its id, its `failing_since` and whether the change is to a
/// failing one's.
const HEAL: &str = records!(
    "h",
    "?",
    "UPDATE endpoints AS e SET failing_since = h.value ->> 1 FROM h \
     WHERE e.id = unhex(h.value ->> 0) \
       AND (e.failing_since IS NOT NULL) = (h.value ->> 2) AND e.url IS NOT NULL"
);

/// The savepoint a batch's move is written in (`move_all`); the rest of
/// the recording (`FINISH`) releases it.
const SAVEPOINT: &str = "recording";

/// `MOVE_ALL` in `SAVEPOINT`, then the count of rows it changed.
static MOVE_ALL_COUNTED: LazyLock<String> =
    LazyLock::new(|| format!("SAVEPOINT {SAVEPOINT}; {MOVE_ALL}; SELECT changes()"));

/// `MOVE_ALL_COUNTED` undone, and `MOVE` instead.
static MOVE_AGAIN: LazyLock<String> =
    LazyLock::new(|| format!("ROLLBACK TO {SAVEPOINT}; {}", MOVE.as_str()));

/// What a recording writes once its rows moved, in one go (each statement
/// crosses to the writer's worker thread and back, and a batch's are
/// decided by then): the move's savepoint released, the attempts' rows
/// (`KEEP`), health (`HEAL`) and the per-minute counts
/// (`stats::ADD_MINUTE_SUMS`), each over its JSON array, `[]` for none.
static FINISH: LazyLock<String> = LazyLock::new(|| {
    format!(
        "RELEASE {SAVEPOINT}; {KEEP}; {HEAL}; {}",
        super::stats::ADD_MINUTE_SUMS.as_str()
    )
});

/// `FINISH`, what the recorded successes release besides their pushed
/// successors (`SUCCESSES_RELEASE`), and the recorder's release switched
/// off (`release_by_recorder`).
static FINISH_RELEASING: LazyLock<String> = LazyLock::new(|| {
    format!(
        "{}; {}; {RECORDER_OFF}",
        FINISH.as_str(),
        SUCCESSES_RELEASE.as_str()
    )
});

impl SqliteStore {
    /// Records many attempts in one transaction (one commit): writes each
    /// notification's decided next state where the row is still as its
    /// record expects, the attempts' rows, the operator events of the rows
    /// that moved and the endpoints' health; then reads what the ordered
    /// ends released (`Recorded`): of the successors of the records that
    /// end ordered, read before the move, the ones it released. When a
    /// create holds the writer, that transaction is the create's
    /// (`riding`).
    pub async fn record_attempts(
        &self,
        records: &[AttemptRecord],
        health: &[(Uuid, Health)],
    ) -> Result<Recorded, StoreError> {
        if records.is_empty() {
            return Ok(Recorded::default());
        }
        // A create holding the writer may write it with its own
        // (`riding`).
        let mut conn = match self.writer.try_acquire() {
            Some(conn) => conn,
            None => match self.riders.wait(records, health, &self.writer).await? {
                Waited::Recorded(recorded) => return Ok(recorded),
                Waited::Writer(conn) => conn,
            },
        };
        let mut tx = conn.begin().await.map_err(store_error)?;
        let recorded = self.record_on(&mut tx, records, health).await?;
        tx.commit().await.map_err(store_error)?;
        Ok(recorded)
    }

    /// `record_attempts` in the caller's transaction on the writer.
    async fn record_on(
        &self,
        conn: &mut SqliteConnection,
        records: &[AttemptRecord],
        health: &[(Uuid, Health)],
    ) -> Result<Recorded, StoreError> {
        let ending: Vec<Uuid> = ending(records).collect();
        let successors = successors_releasing(conn, &ending).await?;
        let releasing = (!ending.is_empty()).then_some(successors.as_slice());
        let (moved, succeeded) = record_attempts_on(
            conn,
            records,
            health,
            self.clock.now(),
            self.count_minutes,
            releasing,
        )
        .await?;
        let released = released(conn, &succeeded, successors).await?;
        Ok(Recorded { moved, released })
    }

    /// Writes `rider`'s recording in a savepoint of the caller's
    /// transaction (a create's, `riding`): kept when it succeeds, rolled
    /// back to the savepoint when it fails. The inner result is the
    /// rider's answer, to give once the caller's transaction commits; the
    /// outer error, a savepoint that could not end, fails the caller's.
    pub(super) async fn ride(
        &self,
        conn: &mut SqliteConnection,
        rider: &Rider,
    ) -> Result<Result<Recorded, StoreError>, StoreError> {
        let mut savepoint = conn.begin().await.map_err(store_error)?;
        match self
            .record_on(&mut savepoint, &rider.records, &rider.health)
            .await
        {
            Ok(recorded) => {
                savepoint.commit().await.map_err(store_error)?;
                Ok(Ok(recorded))
            }
            Err(error) => {
                savepoint.rollback().await.map_err(store_error)?;
                Ok(Err(error))
            }
        }
    }
}

/// `SqliteStore::record_attempts` inside a transaction of the caller's on
/// the writer, at `now`: how the pull leases' ends (an ack, a nack, a lease
/// that ran out, a notification never pulled) are recorded too, with no
/// health (`&[]`: pull leases carry none); their per-minute counts with
/// them unless `count_minutes` is off. With `releasing` (the successors
/// `successors_releasing` read, having switched the recorder's release
/// on), what the moved successes release is written with the last
/// statements (`SUCCESSES_RELEASE`), and the switch is turned off. Returns
/// the ids that moved and, with `releasing`, the ordered ones of them that
/// moved to succeeded (`releasing::moved_to_succeeded`).
///
/// Four round trips to the writer's worker thread in all, whatever the
/// batch holds (five when a row was not as expected, one more per
/// operator event): the move, counted, and the rest in one go.
pub(super) async fn record_attempts_on(
    conn: &mut SqliteConnection,
    records: &[AttemptRecord],
    health: &[(Uuid, Health)],
    now: DateTime<Utc>,
    count_minutes: bool,
    releasing: Option<&[Successor]>,
) -> Result<(Vec<Uuid>, HashSet<Uuid>), StoreError> {
    let now = micros(now);
    // As PostgreSQL stores them (its text holds no NUL), so that both
    // backends return the same body.
    let bodies: Vec<Option<String>> = records
        .iter()
        .map(|r| {
            r.response_body
                .as_ref()
                .map(|b| b.replace('\0', "\u{FFFD}"))
        })
        .collect();
    // Whether each record's notification moved.
    let moves = move_all(conn, records, &bodies, now).await?;
    if moves.contains(&false) {
        count_refused(conn, &refused_kept(records, &moves), now).await?;
    }
    let mut moved = Vec::with_capacity(records.len());
    let mut moved_endpoints = BTreeSet::new();
    let mut events: Vec<&OperatorEvent> = Vec::new();
    let mut kept = Vec::new();
    for ((r, body), &did_move) in records.iter().zip(&bodies).zip(&moves) {
        let keep = if did_move {
            moved.push(r.notification_id);
            moved_endpoints.insert(r.endpoint_id);
            events.extend(&r.event);
            !r.keep.inline
        } else {
            r.keep.when_refused
        };
        if keep {
            kept.push((
                r.notification_id.simple().to_string(),
                r.number,
                micros(r.started_at),
                r.duration_ms,
                r.status_code,
                body.as_deref(),
                r.error_code.as_deref(),
                r.error_message.as_deref(),
                r.outcome.as_str(),
                r.sent_headers.as_deref(),
                r.response_headers.as_deref(),
                r.retried(),
            ));
        }
    }
    for event in events {
        report(conn, event, now).await?;
    }
    // In endpoint id order, as `health::observe` gives them.
    let heal: Vec<(String, Option<i64>, bool)> = health
        .iter()
        .filter(|(id, _)| moved_endpoints.contains(id))
        .map(|(id, h)| {
            (
                id.simple().to_string(),
                h.failing_since().map(micros),
                h.changes_a_failing_endpoint(),
            )
        })
        .collect();
    // The attempts that moved, added to the per-minute counts in the same
    // transaction.
    let sums = if count_minutes {
        crate::store::stats::sums_of(records, &moved)
    } else {
        Default::default()
    };
    let finish = match releasing {
        Some(_) => FINISH_RELEASING.as_str(),
        None => FINISH.as_str(),
    };
    let mut query = sqlx::query(sqlx::AssertSqlSafe(finish))
        .bind(json_text(&kept))
        .bind(json_text(&heal));
    for records in super::stats::minute_sums_json(&sums) {
        query = query.bind(records);
    }
    let mut succeeded = HashSet::new();
    if let Some(successors) = releasing {
        succeeded = moved_to_succeeded(conn, records, &moved).await?;
        let writes = SuccessWrites::of(&succeeded, successors);
        query = query
            .bind(writes.tails)
            .bind(writes.holders)
            .bind(now)
            .bind(writes.pulled);
    }
    query.execute(&mut *conn).await.map_err(store_error)?;
    Ok((moved, succeeded))
}

/// `record_attempts_on` for the ends of pull leases, which carry no health
/// and never switch the recorder's release on.
pub(super) async fn record_lease_ends_on(
    conn: &mut SqliteConnection,
    records: &[AttemptRecord],
    now: DateTime<Utc>,
    count_minutes: bool,
) -> Result<Vec<Uuid>, StoreError> {
    let (moved, _) = record_attempts_on(conn, records, &[], now, count_minutes, None).await?;
    Ok(moved)
}

/// `MOVE_ALL`: every record in one statement; whether each record's
/// notification moved. Only a batch some of whose rows are no longer as
/// their records expect (a lease taken over, a cancel, another process's
/// recording) is written again with `MOVE` to learn which.
async fn move_all(
    conn: &mut SqliteConnection,
    records: &[AttemptRecord],
    bodies: &[Option<String>],
    now: i64,
) -> Result<Vec<bool>, StoreError> {
    let rows: Vec<_> = records
        .iter()
        .zip(bodies)
        .map(|(r, body)| {
            let lease = r.expected.lease;
            (
                r.notification_id.simple().to_string(),
                r.number,
                r.next.status.as_str(),
                r.next.next_attempt_at.map(micros),
                micros(r.started_at),
                r.status_code,
                r.next.last_error.as_deref(),
                r.keep.inline,
                r.duration_ms,
                body.as_deref(),
                r.next.completed,
                r.expected.attempts,
                r.expected.series_start,
                lease.map(|l| l.id.simple().to_string()),
                lease.and_then(|l| l.ran_out_at).map(micros),
            )
        })
        .collect();
    let rows = json_text(&rows);
    let notifications: HashSet<Uuid> = records.iter().map(|r| r.notification_id).collect();
    // Without RETURNING (`returning.rs`): when the count says every row
    // moved, it says which.
    let changed: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(MOVE_ALL_COUNTED.as_str()))
        .bind(now)
        .bind(&rows)
        .fetch_one(&mut *conn)
        .await
        .map_err(store_error)?;
    if changed == notifications.len() as i64 {
        return Ok(vec![true; records.len()]);
    }
    let moved: HashSet<Uuid> = sqlx::query_scalar(sqlx::AssertSqlSafe(MOVE_AGAIN.as_str()))
        .bind(now)
        .bind(&rows)
        .fetch_all(&mut *conn)
        .await
        .map_err(store_error)?
        .into_iter()
        .collect();
    Ok(records
        .iter()
        .map(|r| moved.contains(&r.notification_id))
        .collect())
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
