//! The circuit breaker's state in SQLite (`endpoint_circuits`), as
//! `../postgres/breaker.rs`: read, and compare-and-set on the writer as
//! `domain::breaker` decided.

use chrono::{DateTime, Utc};
use sqlx::sqlite::SqliteRow;
use sqlx::{AssertSqlSafe, Row};
use uuid::Uuid;

use super::columns::{self, id_list, micros, IN_ID_LIST};
use super::ordering::released;
use super::recording::report;
use super::{store_error, SqliteStore};
use crate::domain::breaker::{write, Circuit, State, Write};
use crate::domain::minute_stats::Counted;
use crate::domain::operator_event::OperatorEvent;
use crate::domain::status::Status;
use crate::domain::transition::held_too_long;
use crate::store::breaker::{BreakerStore, PendingOf};
use crate::store::StoreError;

const CIRCUIT_COLUMNS: &str = "endpoint_id, failures, state, opened_at, next_probe_at, open_ms, \
     probe_until, release_passes, release_at";

/// The stored circuit is still the one seen (`?1`..`?8`).
const STILL_SEEN: &str = "endpoint_id = ?1 AND failures = ?2 AND state = ?3 \
     AND opened_at IS ?4 AND next_probe_at IS ?5 AND probe_until IS ?6 \
     AND release_passes = ?7 AND release_at IS ?8";

fn circuit(row: &SqliteRow) -> Result<(Uuid, Circuit), sqlx::Error> {
    let state: String = row.try_get("state")?;
    Ok((
        row.try_get("endpoint_id")?,
        Circuit {
            failures: row.try_get("failures")?,
            state: State::parse(&state).unwrap_or_default(),
            opened_at: columns::optional_time(row, "opened_at")?,
            next_probe_at: columns::optional_time(row, "next_probe_at")?,
            open_ms: row.try_get("open_ms")?,
            probe_until: columns::optional_time(row, "probe_until")?,
            release_passes: row.try_get("release_passes")?,
            release_at: columns::optional_time(row, "release_at")?,
        },
    ))
}

/// The circuit's values in bind order: failures, state, opened_at,
/// next_probe_at, probe_until, release_passes, release_at, open_ms.
type Values = (
    i32,
    &'static str,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    i32,
    Option<i64>,
    i64,
);

fn values(c: &Circuit) -> Values {
    (
        c.failures,
        c.state.as_str(),
        c.opened_at.map(micros),
        c.next_probe_at.map(micros),
        c.probe_until.map(micros),
        c.release_passes,
        c.release_at.map(micros),
        c.open_ms,
    )
}

impl SqliteStore {
    pub async fn circuits(&self) -> Result<Vec<(Uuid, Circuit)>, StoreError> {
        let sql = format!("SELECT {CIRCUIT_COLUMNS} FROM endpoint_circuits");
        sqlx::query(AssertSqlSafe(sql))
            .try_map(|row: SqliteRow| circuit(&row))
            .fetch_all(&self.reader)
            .await
            .map_err(store_error)
    }

    pub async fn circuits_of(&self, ids: &[Uuid]) -> Result<Vec<(Uuid, Circuit)>, StoreError> {
        let sql = format!(
            "SELECT {CIRCUIT_COLUMNS} FROM endpoint_circuits WHERE endpoint_id IN {IN_ID_LIST}"
        );
        sqlx::query(AssertSqlSafe(sql))
            .bind(id_list(ids))
            .try_map(|row: SqliteRow| circuit(&row))
            .fetch_all(&self.reader)
            .await
            .map_err(store_error)
    }

    /// Writes as `domain::breaker::write` says, each a compare-and-set on
    /// `seen`.
    pub async fn set_circuit(
        &self,
        endpoint: Uuid,
        seen: &Circuit,
        new: &Circuit,
        event: Option<&OperatorEvent>,
    ) -> Result<bool, StoreError> {
        let mut tx = self.writer.begin().await.map_err(store_error)?;
        let s = values(seen);
        let n = values(new);
        let write = write(seen, new);
        let done = if write == Write::Insert {
            sqlx::query(
                "INSERT INTO endpoint_circuits (endpoint_id, failures, state, opened_at, \
                     next_probe_at, probe_until, release_passes, release_at, open_ms) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT DO NOTHING",
            )
            .bind(endpoint)
            .bind(n.0)
            .bind(n.1)
            .bind(n.2)
            .bind(n.3)
            .bind(n.4)
            .bind(n.5)
            .bind(n.6)
            .bind(n.7)
            .execute(&mut *tx)
            .await
        } else {
            let sql = if write == Write::Delete {
                format!("DELETE FROM endpoint_circuits WHERE {STILL_SEEN}")
            } else {
                format!(
                    "UPDATE endpoint_circuits SET failures = ?9, state = ?10, opened_at = ?11, \
                         next_probe_at = ?12, probe_until = ?13, release_passes = ?14, \
                         release_at = ?15, open_ms = ?16 \
                     WHERE {STILL_SEEN}"
                )
            };
            let query = sqlx::query(AssertSqlSafe(sql))
                .bind(endpoint)
                .bind(s.0)
                .bind(s.1)
                .bind(s.2)
                .bind(s.3)
                .bind(s.4)
                .bind(s.5)
                .bind(s.6);
            let query = if write == Write::Delete {
                query
            } else {
                query
                    .bind(n.0)
                    .bind(n.1)
                    .bind(n.2)
                    .bind(n.3)
                    .bind(n.4)
                    .bind(n.5)
                    .bind(n.6)
                    .bind(n.7)
            };
            query.execute(&mut *tx).await
        }
        .map_err(store_error)?;
        let done = done.rows_affected() == 1;
        if done {
            if let Some(event) = event {
                report(&mut tx, event, micros(self.clock.now())).await?;
            }
        }
        tx.commit().await.map_err(store_error)?;
        Ok(done)
    }

    pub async fn pending_of(
        &self,
        endpoint: Uuid,
        which: PendingOf,
        after: Option<(DateTime<Utc>, Uuid)>,
        until: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<(Uuid, DateTime<Utc>)>, StoreError> {
        let (after_at, after_id) = after.unzip();
        // Only those that can be sent, as `postgres::breaker::pending_of`.
        sqlx::query(concat!(
            "SELECT n.id, n.next_attempt_at FROM notifications n \
             WHERE n.endpoint_id = ?1 AND n.status = 'pending' AND n.next_attempt_at <= ?2 \
               AND (?3 IS NULL OR (n.next_attempt_at, n.id) > (?3, ?4)) \
               AND (NOT ?6 OR n.url IS NULL) AND ",
            released!("n"),
            " ORDER BY n.next_attempt_at, n.id LIMIT ?5"
        ))
        .bind(endpoint)
        .bind(micros(until))
        .bind(after_at.map(micros))
        .bind(after_id)
        .bind(limit)
        .bind(which == PendingOf::WithoutOwnUrl)
        .try_map(|row: SqliteRow| Ok((row.try_get("id")?, columns::time(&row, "next_attempt_at")?)))
        .fetch_all(&self.reader)
        .await
        .map_err(store_error)
    }

    pub async fn mark_released(&self, ids: &[Uuid]) -> Result<(), StoreError> {
        if ids.is_empty() {
            return Ok(());
        }
        let sql = format!(
            "UPDATE notifications SET released_by_circuit = 1 \
             WHERE id IN {IN_ID_LIST} \
               AND status = 'pending' AND attempts = 0 AND released_by_circuit = 0"
        );
        sqlx::query(AssertSqlSafe(sql))
            .bind(id_list(ids))
            .execute(&self.writer)
            .await
            .map_err(store_error)?;
        Ok(())
    }

    pub async fn due_count(&self, endpoint: Uuid, now: DateTime<Utc>) -> Result<i64, StoreError> {
        sqlx::query_scalar(
            "SELECT count(*) FROM notifications \
             WHERE endpoint_id = ?1 AND status = 'pending' AND next_attempt_at <= ?2",
        )
        .bind(endpoint)
        .bind(micros(now))
        .fetch_one(&self.reader)
        .await
        .map_err(store_error)
    }

    pub async fn fail_held(
        &self,
        held: &[(Uuid, i32, i32)],
        last_error: &str,
        events: &[OperatorEvent],
    ) -> Result<Vec<Uuid>, StoreError> {
        if held.is_empty() {
            return Ok(Vec::new());
        }
        let mut tx = self.writer.begin().await.map_err(store_error)?;
        let at = self.clock.now();
        let now = micros(at);
        // `held_too_long` of a pending row: the rows selected are pending.
        let ended = held_too_long(Status::Pending).expect("a pending notification ends");
        let mut failed = Vec::with_capacity(held.len());
        let mut counted = Vec::new();
        for (id, attempts, series_start) in held {
            let endpoint: Option<Uuid> = sqlx::query_scalar(
                "UPDATE notifications SET status = ?6, next_attempt_at = ?7, \
                     last_error = ?4, completed_at = ?5, updated_at = ?5, \
                     lease_id = NULL, leased_at = NULL \
                 WHERE id = ?1 AND status = 'pending' AND attempts = ?2 AND series_start = ?3 \
                 RETURNING endpoint_id",
            )
            .bind(id)
            .bind(attempts)
            .bind(series_start)
            .bind(last_error)
            .bind(now)
            .bind(ended.status.as_str())
            .bind(ended.next_attempt_at.map(micros))
            .fetch_optional(&mut *tx)
            .await
            .map_err(store_error)?;
            if let Some(endpoint) = endpoint {
                failed.push(*id);
                counted.push(Counted::failed_without_attempt(endpoint, at));
            }
        }
        // Failures without an attempt count in the per-minute counts too.
        if self.count_minutes {
            super::stats::add_minute_sums(&mut tx, &crate::domain::minute_stats::sum(counted))
                .await?;
        }
        for event in events.iter().filter(|e| failed.contains(&e.subject)) {
            report(&mut tx, event, now).await?;
        }
        tx.commit().await.map_err(store_error)?;
        Ok(failed)
    }
}

#[async_trait::async_trait]
impl BreakerStore for SqliteStore {
    async fn circuits(&self) -> Result<Vec<(Uuid, Circuit)>, StoreError> {
        SqliteStore::circuits(self).await
    }
    async fn circuits_of(&self, endpoints: &[Uuid]) -> Result<Vec<(Uuid, Circuit)>, StoreError> {
        SqliteStore::circuits_of(self, endpoints).await
    }
    async fn set_circuit(
        &self,
        endpoint: Uuid,
        seen: &Circuit,
        new: &Circuit,
        event: Option<&OperatorEvent>,
    ) -> Result<bool, StoreError> {
        SqliteStore::set_circuit(self, endpoint, seen, new, event).await
    }
    async fn pending_of(
        &self,
        endpoint: Uuid,
        which: PendingOf,
        after: Option<(DateTime<Utc>, Uuid)>,
        until: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<(Uuid, DateTime<Utc>)>, StoreError> {
        SqliteStore::pending_of(self, endpoint, which, after, until, limit).await
    }
    async fn mark_released(&self, ids: &[Uuid]) -> Result<(), StoreError> {
        SqliteStore::mark_released(self, ids).await
    }
    async fn due_count(&self, endpoint: Uuid, now: DateTime<Utc>) -> Result<i64, StoreError> {
        SqliteStore::due_count(self, endpoint, now).await
    }
    async fn fail_held(
        &self,
        held: &[(Uuid, i32, i32)],
        last_error: &str,
        events: &[OperatorEvent],
    ) -> Result<Vec<Uuid>, StoreError> {
        SqliteStore::fail_held(self, held, last_error, events).await
    }
}
