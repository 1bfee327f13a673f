//! Taking pull notifications on SQLite, and the end of those never pulled.
//!
//! What a pull makes of each row is decided by the caller (`PickDecision`,
//! over `domain::lease::at_pull`); this reads, and writes the decisions.
//! PostgreSQL holds the rows it reads (`FOR UPDATE ... SKIP LOCKED`); here
//! the read, the decision and the writes run in one transaction on the
//! single writer connection, so no other consumer can take a row between
//! them, and none is ever skipped for being held. `next_attempt_at <= now`
//! only selects candidates through `notifications_pull_due`; the lease is
//! written only over a row still free and pending (`lease_id IS NULL`).

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::sqlite::SqliteRow;
use sqlx::{AssertSqlSafe, Row, SqliteConnection};
use uuid::Uuid;

use super::columns::{self, id_list, micros};
use super::ordering::released;
use super::pull::{leased_rows, LEASED_FROM};
use super::{store_error, SqliteStore};
use crate::domain::lease::{lease_end, window_start};
use crate::store::pull::Leased;
use crate::store::pull::{LeaseDecision, Taken};
use crate::store::pull_due::{take_rounds, PickDecision, TakeSteps};
use crate::store::recording::AttemptRecord;
use crate::store::StoreError;

impl SqliteStore {
    /// Takes up to `max` due notifications of a pull endpoint, earliest due
    /// first, leasing each for `lease`; none while the endpoint is disabled,
    /// as in PostgreSQL. Rows whose lease ran out unrecorded
    /// are read too; `decide` says what to record of each and whether to
    /// take it (the loop: `store::pull_due::take_rounds`).
    pub async fn take(
        &self,
        endpoint_id: Uuid,
        max: i64,
        lease: Duration,
        decide: PickDecision<'_>,
    ) -> Result<Vec<Taken>, StoreError> {
        let now = self.clock.now();
        let mut steps = Steps {
            tx: self.writer.begin().await.map_err(store_error)?,
            endpoint_id,
            count_minutes: self.count_minutes,
        };
        let taken = take_rounds(&mut steps, max, now, lease_end(now, lease), decide).await?;
        steps.tx.commit().await.map_err(store_error)?;
        Ok(taken)
    }

    /// Ends pending notifications of live, enabled pull endpoints that have
    /// been due for `max_wait` or longer (a disabled one holds them, as in
    /// PostgreSQL), at most `limit`: reads them, asks
    /// `decide` for the attempt each ends with, and records those attempts,
    /// in one transaction. Returns the ids that ended.
    pub async fn end_unpulled(
        &self,
        max_wait: Duration,
        limit: i64,
        mut decide: LeaseDecision<'_>,
    ) -> Result<Vec<Uuid>, StoreError> {
        let now = self.clock.now();
        let since = window_start(now, max_wait);
        let mut tx = self.writer.begin().await.map_err(store_error)?;
        let sql = format!(
            "{LEASED_FROM} WHERE n.id IN ( \
                 SELECT o.id FROM endpoints ep JOIN notifications o ON o.endpoint_id = ep.id \
                 WHERE ep.delivery = 'pull' AND ep.deleted_at IS NULL AND ep.disabled = 0 \
                   AND o.status = 'pending' AND o.pull = 1 AND o.next_attempt_at <= ?1 \
                   AND {released} \
                 ORDER BY o.next_attempt_at, o.id LIMIT ?2)",
            released = released!("o")
        );
        let read = sqlx::query(AssertSqlSafe(sql))
            .bind(micros(since))
            .bind(limit)
            .fetch_all(&mut *tx)
            .await
            .map_err(store_error)?;
        let rows = leased_rows(&read, now)?;
        let records: Vec<AttemptRecord> = rows.iter().filter_map(&mut decide).collect();
        let moved =
            super::recording::record_lease_ends_on(&mut tx, &records, now, self.count_minutes)
                .await?;
        tx.commit().await.map_err(store_error)?;
        Ok(moved)
    }
}

/// A take's steps on SQLite, in one transaction on the single writer
/// connection: no other consumer can take a row between them.
struct Steps {
    tx: sqlx::Transaction<'static, sqlx::Sqlite>,
    endpoint_id: Uuid,
    count_minutes: bool,
}

#[async_trait::async_trait]
impl TakeSteps for Steps {
    async fn due_rows(
        &mut self,
        want: i64,
        seen: &[Uuid],
        now: DateTime<Utc>,
    ) -> Result<Vec<Leased>, StoreError> {
        let sql = format!(
            "{LEASED_FROM} WHERE n.endpoint_id = ?1 AND n.status = 'pending' AND n.pull = 1 \
               AND n.next_attempt_at <= ?2 AND n.id NOT IN (SELECT unhex(value) FROM json_each(?3)) \
               AND {released} \
               AND NOT EXISTS (SELECT 1 FROM endpoints d WHERE d.id = ?1 AND d.disabled = 1) \
             ORDER BY n.next_attempt_at, n.id LIMIT ?4",
            released = released!("n")
        );
        let read = sqlx::query(AssertSqlSafe(sql))
            .bind(self.endpoint_id)
            .bind(micros(now))
            .bind(id_list(seen))
            .bind(want)
            .fetch_all(&mut *self.tx)
            .await
            .map_err(store_error)?;
        leased_rows(&read, now)
    }

    async fn record(
        &mut self,
        records: &[AttemptRecord],
        now: DateTime<Utc>,
    ) -> Result<Vec<Uuid>, StoreError> {
        super::recording::record_lease_ends_on(&mut self.tx, records, now, self.count_minutes).await
    }

    async fn lease(
        &mut self,
        rows: &[(Uuid, DateTime<Utc>)],
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<Vec<Taken>, StoreError> {
        let mut taken = Vec::with_capacity(rows.len());
        for &(id, due_at) in rows {
            taken.extend(lease_row(&mut self.tx, id, due_at, now, until).await?);
        }
        Ok(taken)
    }
}

/// Leases one free pending row until `until`, due since `due_at`; `None`
/// if it is no longer free and pending.
async fn lease_row(
    conn: &mut SqliteConnection,
    id: Uuid,
    due_at: DateTime<Utc>,
    now: DateTime<Utc>,
    until: DateTime<Utc>,
) -> Result<Option<Taken>, StoreError> {
    // Lease ids are made in Rust, like every id hookd makes.
    let lease = crate::domain::id::new_lease_id();
    let done = sqlx::query(
        "UPDATE notifications SET lease_id = ?2, leased_at = ?3, next_attempt_at = ?4, \
             updated_at = ?3 \
         WHERE id = ?1 AND status = 'pending' AND lease_id IS NULL",
    )
    .bind(id)
    .bind(lease)
    .bind(micros(now))
    .bind(micros(until))
    .execute(&mut *conn)
    .await
    .map_err(store_error)?;
    if done.rows_affected() == 0 {
        return Ok(None);
    }
    let row = sqlx::query(
        "SELECT n.id, n.endpoint_id, n.key, n.order_key, n.sequence, \
             COALESCE(n.event_type, e.event_type) AS event_type, \
             n.event_id, n.content_type, \
             CASE WHEN n.event_id IS NULL THEN n.body ELSE e.body END AS body, \
             n.headers, n.created_at, n.attempts, n.lease_id, n.next_attempt_at \
         FROM notifications n LEFT JOIN events e ON e.id = n.event_id WHERE n.id = ?",
    )
    .bind(id)
    .fetch_one(&mut *conn)
    .await
    .map_err(store_error)?;
    taken(&row, due_at).map(Some).map_err(store_error)
}

fn taken(row: &SqliteRow, due_at: DateTime<Utc>) -> Result<Taken, sqlx::Error> {
    Ok(Taken {
        id: row.try_get("id")?,
        endpoint_id: row.try_get("endpoint_id")?,
        key: row.try_get("key")?,
        order_key: row.try_get("order_key")?,
        sequence: row.try_get("sequence")?,
        event_type: row.try_get("event_type")?,
        event_id: row.try_get("event_id")?,
        content_type: row.try_get("content_type")?,
        body: row.try_get("body")?,
        headers: columns::json(row, "headers")?,
        created_at: columns::time(row, "created_at")?,
        attempts: row.try_get("attempts")?,
        lease_id: row.try_get("lease_id")?,
        due_at,
        lease_until: columns::time(row, "next_attempt_at")?,
        unreadable: None,
    })
}
