//! The circuit breaker's state in PostgreSQL (`endpoint_circuits`): read,
//! and compare-and-set as `domain::breaker` decided. Nothing is decided
//! here.

use chrono::{DateTime, Utc};
use sqlx::postgres::PgRow;
use sqlx::Row;
use uuid::Uuid;

use super::operator::{insert_operator_events, EventBinds};
use super::ordering::released;
use super::partitions::id_span;
use super::releasing::{release_ended_apart, release_in_batch};
use super::PgStore;
use crate::domain::breaker::{write, Circuit, State, Write};
use crate::domain::minute_stats::Counted;
use crate::domain::operator_event::{OperatorEvent, OPERATOR_ENDPOINT_ID};
use crate::domain::status::Status;
use crate::domain::transition::held_too_long;
use crate::store::breaker::{BreakerStore, PendingOf};
use crate::store::StoreError;

const CIRCUIT_COLUMNS: &str = "endpoint_id, failures, state, opened_at, next_probe_at, open_ms, \
     probe_until, release_passes, release_at";

/// The stored circuit is still the one seen (`$2`..`$8`).
const STILL_SEEN: &str = "endpoint_id = $1 AND failures = $2 AND state = $3 \
     AND opened_at IS NOT DISTINCT FROM $4 AND next_probe_at IS NOT DISTINCT FROM $5 \
     AND probe_until IS NOT DISTINCT FROM $6 AND release_passes = $7 \
     AND release_at IS NOT DISTINCT FROM $8";

fn circuit(row: &PgRow) -> Result<(Uuid, Circuit), sqlx::Error> {
    let state: String = row.try_get("state")?;
    Ok((
        row.try_get("endpoint_id")?,
        Circuit {
            failures: row.try_get("failures")?,
            state: State::parse(&state).unwrap_or_default(),
            opened_at: row.try_get("opened_at")?,
            next_probe_at: row.try_get("next_probe_at")?,
            open_ms: row.try_get("open_ms")?,
            probe_until: row.try_get("probe_until")?,
            release_passes: row.try_get("release_passes")?,
            release_at: row.try_get("release_at")?,
        },
    ))
}

impl PgStore {
    pub async fn circuits(&self) -> Result<Vec<(Uuid, Circuit)>, StoreError> {
        let sql = format!("SELECT {CIRCUIT_COLUMNS} FROM endpoint_circuits");
        Ok(sqlx::query(sqlx::AssertSqlSafe(sql))
            .try_map(|row: PgRow| circuit(&row))
            .fetch_all(&self.pool)
            .await?)
    }

    pub async fn circuits_of(&self, ids: &[Uuid]) -> Result<Vec<(Uuid, Circuit)>, StoreError> {
        let sql =
            format!("SELECT {CIRCUIT_COLUMNS} FROM endpoint_circuits WHERE endpoint_id = ANY($1)");
        Ok(sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(ids)
            .try_map(|row: PgRow| circuit(&row))
            .fetch_all(&self.pool)
            .await?)
    }

    /// Writes as `domain::breaker::write` says: an insert, a delete or an
    /// update, each a compare-and-set on `seen`.
    pub async fn set_circuit(
        &self,
        endpoint: Uuid,
        seen: &Circuit,
        new: &Circuit,
        event: Option<&OperatorEvent>,
    ) -> Result<bool, StoreError> {
        let mut tx = self.pool.begin().await?;
        let done = match write(seen, new) {
            Write::Insert => {
                sqlx::query(
                    "INSERT INTO endpoint_circuits (endpoint_id, failures, state, opened_at, \
                         next_probe_at, probe_until, release_passes, release_at, open_ms) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING",
                )
                .bind(endpoint)
                .bind(new.failures)
                .bind(new.state.as_str())
                .bind(new.opened_at)
                .bind(new.next_probe_at)
                .bind(new.probe_until)
                .bind(new.release_passes)
                .bind(new.release_at)
                .bind(new.open_ms)
                .execute(&mut *tx)
                .await?
            }
            Write::Delete => {
                let sql = format!("DELETE FROM endpoint_circuits WHERE {STILL_SEEN}");
                seen_binds(sqlx::query(sqlx::AssertSqlSafe(sql)), endpoint, seen)
                    .execute(&mut *tx)
                    .await?
            }
            Write::Update => {
                let sql = format!(
                    "UPDATE endpoint_circuits SET failures = $9, state = $10, opened_at = $11, \
                         next_probe_at = $12, probe_until = $13, release_passes = $14, \
                         release_at = $15, open_ms = $16 \
                     WHERE {STILL_SEEN}"
                );
                seen_binds(sqlx::query(sqlx::AssertSqlSafe(sql)), endpoint, seen)
                    .bind(new.failures)
                    .bind(new.state.as_str())
                    .bind(new.opened_at)
                    .bind(new.next_probe_at)
                    .bind(new.probe_until)
                    .bind(new.release_passes)
                    .bind(new.release_at)
                    .bind(new.open_ms)
                    .execute(&mut *tx)
                    .await?
            }
        };
        let done = done.rows_affected() == 1;
        if done {
            if let Some(event) = event {
                let now = self.clock.now();
                insert_events(&mut tx, &[event.subject], std::slice::from_ref(event), now).await?;
            }
        }
        tx.commit().await?;
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
        // Only those that can be sent: none waiting behind its key's head
        // (`ordering::released`), which a probe could not send and a
        // release would put in the index for the claim to pass over.
        Ok(sqlx::query_as(concat!(
            "SELECT n.id, n.next_attempt_at FROM notifications n \
             WHERE n.endpoint_id = $1 AND n.status = 'pending' AND n.next_attempt_at <= $2 \
               AND ($3::timestamptz IS NULL OR (n.next_attempt_at, n.id) > ($3, $4)) \
               AND (NOT $6 OR n.url IS NULL) AND ",
            released!("n"),
            " ORDER BY n.next_attempt_at, n.id LIMIT $5"
        ))
        .bind(endpoint)
        .bind(until)
        .bind(after_at)
        .bind(after_id)
        .bind(limit)
        .bind(which == PendingOf::WithoutOwnUrl)
        .fetch_all(&self.pool)
        .await?)
    }

    pub async fn mark_released(&self, ids: &[Uuid]) -> Result<(), StoreError> {
        if ids.is_empty() {
            return Ok(());
        }
        let (low, high) = id_span(ids);
        sqlx::query(
            "UPDATE notifications SET released_by_circuit = true \
             WHERE id = ANY($1) AND id BETWEEN $2 AND $3 \
               AND status = 'pending' AND attempts = 0 AND NOT released_by_circuit",
        )
        .bind(ids)
        .bind(low)
        .bind(high)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    pub async fn due_count(&self, endpoint: Uuid, now: DateTime<Utc>) -> Result<i64, StoreError> {
        Ok(sqlx::query_scalar(
            "SELECT count(*) FROM notifications \
             WHERE endpoint_id = $1 AND status = 'pending' AND next_attempt_at <= $2",
        )
        .bind(endpoint)
        .bind(now)
        .fetch_one(&self.pool)
        .await?)
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
        let ids: Vec<Uuid> = held.iter().map(|h| h.0).collect();
        let attempts: Vec<i32> = held.iter().map(|h| h.1).collect();
        let series: Vec<i32> = held.iter().map(|h| h.2).collect();
        // `held_too_long` of a pending row: the rows selected are pending.
        let ended = held_too_long(Status::Pending).expect("a pending notification ends");
        let now = self.clock.now();
        let mut tx = self.pool.begin().await?;
        // What the ordered ones release is released after the update, their
        // key rows taken in a create's order (`release_ended_apart`).
        release_in_batch(&mut tx).await?;
        let failed: Vec<(Uuid, Uuid, bool)> = sqlx::query_as(
            "UPDATE notifications n SET status = $5, next_attempt_at = $6, \
                 last_error = $4, completed_at = $7, updated_at = $7, \
                 lease_id = NULL, leased_at = NULL \
             FROM UNNEST($1::uuid[], $2::int[], $3::int[]) AS h(id, attempts, series_start) \
             WHERE n.id = h.id AND (n.status = 'pending') IS TRUE AND n.attempts = h.attempts \
               AND n.series_start = h.series_start \
             RETURNING n.id, n.endpoint_id, n.sequence IS NOT NULL",
        )
        .bind(&ids)
        .bind(&attempts)
        .bind(&series)
        .bind(last_error)
        .bind(ended.status)
        .bind(ended.next_attempt_at)
        .bind(now)
        .fetch_all(&mut *tx)
        .await?;
        let ordered = failed.iter().filter(|f| f.2).map(|f| f.0).collect();
        release_ended_apart(&mut tx, ordered, now).await?;
        // Failures without an attempt count in the per-minute counts too.
        let sums = crate::domain::minute_stats::sum(
            failed
                .iter()
                .map(|&(_, endpoint, _)| Counted::failed_without_attempt(endpoint, now)),
        );
        if self.count_minutes {
            super::stats::add_minute_sums(&mut tx, &sums).await?;
        }
        let failed: Vec<Uuid> = failed.into_iter().map(|(id, _, _)| id).collect();
        insert_events(&mut tx, &failed, events, now).await?;
        tx.commit().await?;
        Ok(failed)
    }
}

fn seen_binds<'q>(
    query: sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>,
    endpoint: Uuid,
    seen: &Circuit,
) -> sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments> {
    query
        .bind(endpoint)
        .bind(seen.failures)
        .bind(seen.state.as_str())
        .bind(seen.opened_at)
        .bind(seen.next_probe_at)
        .bind(seen.probe_until)
        .bind(seen.release_passes)
        .bind(seen.release_at)
}

/// Inserts the events whose subject is among `changed`, due at `now`, in
/// the caller's transaction.
async fn insert_events(
    tx: &mut sqlx::PgConnection,
    changed: &[Uuid],
    events: &[OperatorEvent],
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    if events.is_empty() || changed.is_empty() {
        return Ok(());
    }
    let binds: EventBinds<'_> = events.iter().collect();
    sqlx::query(concat!(
        "WITH changed AS (SELECT unnest($7::uuid[]) AS id), ",
        insert_operator_events!("changed", "$6", "$1", "$2", "$3", "$4", "$5", "$8"),
        " SELECT 1"
    ))
    .bind(&binds.subjects)
    .bind(&binds.types)
    .bind(&binds.keys)
    .bind(&binds.bodies)
    .bind(OPERATOR_ENDPOINT_ID)
    .bind(&binds.ids)
    .bind(changed)
    .bind(now)
    .execute(tx)
    .await?;
    Ok(())
}

#[async_trait::async_trait]
impl BreakerStore for PgStore {
    async fn circuits(&self) -> Result<Vec<(Uuid, Circuit)>, StoreError> {
        PgStore::circuits(self).await
    }
    async fn circuits_of(&self, endpoints: &[Uuid]) -> Result<Vec<(Uuid, Circuit)>, StoreError> {
        PgStore::circuits_of(self, endpoints).await
    }
    async fn set_circuit(
        &self,
        endpoint: Uuid,
        seen: &Circuit,
        new: &Circuit,
        event: Option<&OperatorEvent>,
    ) -> Result<bool, StoreError> {
        PgStore::set_circuit(self, endpoint, seen, new, event).await
    }
    async fn pending_of(
        &self,
        endpoint: Uuid,
        which: PendingOf,
        after: Option<(DateTime<Utc>, Uuid)>,
        until: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<(Uuid, DateTime<Utc>)>, StoreError> {
        PgStore::pending_of(self, endpoint, which, after, until, limit).await
    }
    async fn mark_released(&self, ids: &[Uuid]) -> Result<(), StoreError> {
        PgStore::mark_released(self, ids).await
    }
    async fn due_count(&self, endpoint: Uuid, now: DateTime<Utc>) -> Result<i64, StoreError> {
        PgStore::due_count(self, endpoint, now).await
    }
    async fn fail_held(
        &self,
        held: &[(Uuid, i32, i32)],
        last_error: &str,
        events: &[OperatorEvent],
    ) -> Result<Vec<Uuid>, StoreError> {
        PgStore::fail_held(self, held, last_error, events).await
    }
}
