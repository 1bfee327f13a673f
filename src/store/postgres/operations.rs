//! PostgreSQL's side of operations (`seams::OperationStore`): the
//! `operations` table, and a recover's pages over an endpoint's failed
//! notifications by keyset `(completed_at, id)` on
//! `notifications_failed_by_endpoint`. Rows are read under their lock,
//! decided in Rust (`domain::operation`), and written back with the
//! operation's cursor in the same transaction.

use chrono::{DateTime, Utc};
use sqlx::postgres::PgRow;
use sqlx::Row;
use uuid::Uuid;

use super::PgStore;
use crate::domain::bulk::BulkFilter;
use crate::domain::lease::Lease;
use crate::domain::operation::{OperationKind, OperationStatus, Paged, Window};
use crate::domain::transition::Retried;
use crate::store::cancel::Pending;
use crate::store::operation_page::{operation_page, PageStep};
use crate::store::operations::{
    lease_first, EndpointRow, FailedRow, Operation, OperationPage, Started, LEASE_CANDIDATES,
};
use crate::store::seams::OperationStore;
use crate::store::StoreError;

const COLUMNS: &str = "id, kind, endpoint_id, status, since, until, filter, matched, started, \
    cursor_at, cursor_id, lease_holder, lease_until, error, created_at, updated_at, finished_at";

fn operation(row: &PgRow) -> Result<Operation, sqlx::Error> {
    let decode = |column: &str, what: &str| sqlx::Error::ColumnDecode {
        index: column.into(),
        source: format!("unknown {what}").into(),
    };
    let kind: String = row.try_get("kind")?;
    let status: String = row.try_get("status")?;
    let cursor_at: Option<DateTime<Utc>> = row.try_get("cursor_at")?;
    let cursor_id: Option<Uuid> = row.try_get("cursor_id")?;
    let filter: Option<String> = row.try_get("filter")?;
    let filter = filter
        .map(|text| serde_json::from_str::<BulkFilter>(&text))
        .transpose()
        .map_err(|_| decode("filter", "filter"))?;
    Ok(Operation {
        id: row.try_get("id")?,
        kind: OperationKind::parse(&kind).ok_or_else(|| decode("kind", "kind"))?,
        endpoint_id: row.try_get("endpoint_id")?,
        status: OperationStatus::parse(&status).ok_or_else(|| decode("status", "status"))?,
        window: Window {
            since: row.try_get("since")?,
            until: row.try_get("until")?,
        },
        filter,
        matched: row.try_get("matched")?,
        started: row.try_get("started")?,
        cursor: cursor_at.zip(cursor_id),
        lease_holder: row.try_get("lease_holder")?,
        lease_until: row.try_get("lease_until")?,
        error: row.try_get("error")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
        finished_at: row.try_get("finished_at")?,
    })
}

async fn read(
    executor: impl sqlx::PgExecutor<'_>,
    id: Uuid,
    lock: bool,
) -> Result<Option<Operation>, StoreError> {
    let sql = format!(
        "SELECT {COLUMNS} FROM operations WHERE id = $1{}",
        if lock { " FOR UPDATE" } else { "" }
    );
    Ok(sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(id)
        .try_map(|row: PgRow| operation(&row))
        .fetch_optional(executor)
        .await?)
}

/// A page of an operation: the endpoint's failed notifications after the
/// cursor, to the window's end, oldest failure first, each with its
/// creation time and its type and key (its own, or else its event's) for a
/// bulk retry's filter; `FOR UPDATE OF n` when it restarts them. On
/// `notifications_failed_by_endpoint`, it reads the page's rows and no
/// more, whatever the filter (`plan_tests`).
pub(super) const FAILED_PAGE: &str =
    "SELECT n.id, n.status, n.attempts, n.lease_id, n.leased_at, n.next_attempt_at, \
         n.completed_at, n.pull, n.created_at, COALESCE(n.event_type, e.event_type) AS event_type, \
         COALESCE(n.key, e.key) AS key \
     FROM notifications n LEFT JOIN events e ON e.id = n.event_id \
     WHERE n.endpoint_id = $1 AND n.status = 'failed' \
       AND (n.completed_at, n.id) > ($2, $3) AND n.completed_at <= $4 \
     ORDER BY n.completed_at, n.id LIMIT $5";

fn failed_row(row: &PgRow) -> Result<FailedRow, sqlx::Error> {
    Ok(FailedRow {
        id: row.try_get("id")?,
        status: row.try_get("status")?,
        attempts: row.try_get("attempts")?,
        lease: Lease::stored(
            row.try_get("lease_id")?,
            row.try_get("leased_at")?,
            row.try_get("next_attempt_at")?,
        ),
        completed_at: row.try_get("completed_at")?,
        pull: row.try_get("pull")?,
        created_at: row.try_get("created_at")?,
        event_type: row.try_get("event_type")?,
        key: row.try_get("key")?,
    })
}

async fn failed_page(
    executor: impl sqlx::PgExecutor<'_>,
    endpoint: Uuid,
    after: (DateTime<Utc>, Uuid),
    until: DateTime<Utc>,
    limit: i64,
    lock: bool,
) -> Result<Vec<FailedRow>, StoreError> {
    let sql = if lock {
        sqlx::AssertSqlSafe(format!("{FAILED_PAGE} FOR UPDATE OF n"))
    } else {
        sqlx::AssertSqlSafe(FAILED_PAGE.to_string())
    };
    Ok(sqlx::query(sql)
        .bind(endpoint)
        .bind(after.0)
        .bind(after.1)
        .bind(until)
        .bind(limit)
        .try_map(|row: PgRow| failed_row(&row))
        .fetch_all(executor)
        .await?)
}

/// One page's transaction (`store::operation_page`).
struct PgPage {
    tx: sqlx::Transaction<'static, sqlx::Postgres>,
}

#[async_trait::async_trait]
impl PageStep for PgPage {
    async fn operation(&mut self, id: Uuid) -> Result<Option<Operation>, StoreError> {
        read(&mut *self.tx, id, true).await
    }

    async fn endpoint_deleted(&mut self, endpoint: Uuid) -> Result<bool, StoreError> {
        // Under no lock: the recorder locks notifications, then their
        // endpoint (health), and this page locks notifications after.
        let deleted: Option<bool> =
            sqlx::query_scalar("SELECT deleted_at IS NOT NULL FROM endpoints WHERE id = $1")
                .bind(endpoint)
                .fetch_optional(&mut *self.tx)
                .await?;
        Ok(deleted.unwrap_or(true))
    }

    async fn endpoint_page(
        &mut self,
        endpoint: Uuid,
        before: Uuid,
        limit: i64,
    ) -> Result<Vec<EndpointRow>, StoreError> {
        endpoint_page(&mut *self.tx, endpoint, before, limit).await
    }

    async fn cancel(&mut self, ids: &[Uuid], now: DateTime<Utc>) -> Result<Vec<Uuid>, StoreError> {
        super::cancel::cancel_pending(&mut self.tx, Pending::Ids(ids), now).await
    }

    async fn failed_page(
        &mut self,
        endpoint: Uuid,
        after: (DateTime<Utc>, Uuid),
        until: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<FailedRow>, StoreError> {
        failed_page(&mut *self.tx, endpoint, after, until, limit, true).await
    }

    async fn restart(
        &mut self,
        endpoint: Uuid,
        restarting: &[(&FailedRow, Retried)],
        now: DateTime<Utc>,
    ) -> Result<Vec<Uuid>, StoreError> {
        let mut ids = Vec::with_capacity(restarting.len());
        let mut statuses = Vec::with_capacity(restarting.len());
        let mut series = Vec::with_capacity(restarting.len());
        let mut due = Vec::with_capacity(restarting.len());
        for (row, retried) in restarting {
            ids.push(row.id);
            statuses.push(retried.status);
            series.push(retried.series_start);
            due.push(retried.next_attempt_at);
        }
        if !ids.is_empty() {
            sqlx::query(
                "UPDATE notifications n SET status = u.status, series_start = u.series_start, \
                     next_attempt_at = u.due, completed_at = NULL, needs_index = false, \
                     lease_id = NULL, leased_at = NULL, updated_at = $5 \
                 FROM UNNEST($1::uuid[], $2::text[], $3::int[], $4::timestamptz[]) \
                     AS u(id, status, series_start, due) \
                 WHERE n.id = u.id",
            )
            .bind(&ids)
            .bind(&statuses)
            .bind(&series)
            .bind(&due)
            .bind(now)
            .execute(&mut *self.tx)
            .await?;
        }
        super::ordering::requeue_all(&mut self.tx, endpoint, &ids).await
    }

    async fn record(
        &mut self,
        id: Uuid,
        paged: &Paged,
        (status, error): (OperationStatus, Option<&str>),
        until: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<Operation, StoreError> {
        let (cursor_at, cursor_id) = paged.cursor.unzip();
        Ok(sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE operations SET matched = matched + $2, started = started + $3, \
                 cursor_at = $4, cursor_id = $5, lease_until = $6, status = $7, updated_at = $8, \
                 finished_at = CASE WHEN $7 = 'running' THEN NULL ELSE $8 END, \
                 error = COALESCE($9, error) \
             WHERE id = $1 RETURNING {COLUMNS}"
        )))
        .bind(id)
        .bind(paged.matched)
        .bind(paged.started)
        .bind(cursor_at)
        .bind(cursor_id)
        .bind(until)
        .bind(status.as_str())
        .bind(now)
        .bind(error)
        .try_map(|row: PgRow| operation(&row))
        .fetch_one(&mut *self.tx)
        .await?)
    }

    async fn commit(self) -> Result<(), StoreError> {
        Ok(self.tx.commit().await?)
    }
}

/// Up to `limit` of `endpoint`'s notifications below `before`, newest
/// first, with their type and key (their own, or else their event's).
async fn endpoint_page(
    executor: impl sqlx::PgExecutor<'_>,
    endpoint: Uuid,
    before: Uuid,
    limit: i64,
) -> Result<Vec<EndpointRow>, StoreError> {
    Ok(sqlx::query(
        "SELECT n.id, n.status, n.created_at, COALESCE(n.event_type, e.event_type) AS event_type, \
             COALESCE(n.key, e.key) AS key \
         FROM notifications n LEFT JOIN events e ON e.id = n.event_id \
         WHERE n.endpoint_id = $1 AND n.id < $2 ORDER BY n.id DESC LIMIT $3",
    )
    .bind(endpoint)
    .bind(before)
    .bind(limit)
    .try_map(|row: PgRow| {
        Ok(EndpointRow {
            id: row.try_get("id")?,
            status: row.try_get("status")?,
            created_at: row.try_get("created_at")?,
            event_type: row.try_get("event_type")?,
            key: row.try_get("key")?,
        })
    })
    .fetch_all(executor)
    .await?)
}

#[async_trait::async_trait]
impl OperationStore for PgStore {
    async fn start_operation(&self, operation: &Operation) -> Result<Started, StoreError> {
        let filter = operation
            .filter
            .as_ref()
            .map(|filter| serde_json::to_string(filter).expect("a filter is JSON"));
        // The running one may end between a conflict and the read: then
        // the insert is tried again.
        for _ in 0..3 {
            let inserted = sqlx::query(sqlx::AssertSqlSafe(format!(
                "INSERT INTO operations (id, kind, endpoint_id, status, since, until, filter, \
                     created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $8, $7, $7) \
                 ON CONFLICT (endpoint_id, kind) WHERE status = 'running' DO NOTHING \
                 RETURNING {COLUMNS}"
            )))
            .bind(operation.id)
            .bind(operation.kind.as_str())
            .bind(operation.endpoint_id)
            .bind(operation.status.as_str())
            .bind(operation.window.since)
            .bind(operation.window.until)
            .bind(operation.created_at)
            .bind(filter.as_deref())
            .try_map(|row: PgRow| self::operation(&row))
            .fetch_optional(&self.pool)
            .await?;
            if let Some(started) = inserted {
                return Ok(Started::Started(started));
            }
            let running = sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT {COLUMNS} FROM operations \
                 WHERE endpoint_id = $1 AND kind = $2 AND status = 'running'"
            )))
            .bind(operation.endpoint_id)
            .bind(operation.kind.as_str())
            .try_map(|row: PgRow| self::operation(&row))
            .fetch_optional(&self.pool)
            .await?;
            if let Some(running) = running {
                return Ok(Started::Running(running));
            }
        }
        Err(StoreError::Conflict(
            "operations_running_per_endpoint".into(),
        ))
    }

    async fn get_operation(&self, id: Uuid) -> Result<Option<Operation>, StoreError> {
        read(&self.pool, id, false).await
    }

    async fn lease_operation(
        &self,
        holder: Uuid,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<Option<Operation>, StoreError> {
        // Few rows: only running operations, oldest first.
        let running = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM operations WHERE status = 'running' \
             ORDER BY created_at, id LIMIT $1"
        )))
        .bind(LEASE_CANDIDATES)
        .try_map(|row: PgRow| operation(&row))
        .fetch_all(&self.pool)
        .await?;
        lease_first(running, now, |candidate| async move {
            let taken = sqlx::query(sqlx::AssertSqlSafe(format!(
                "UPDATE operations SET lease_holder = $2, lease_until = $3 \
                 WHERE id = $1 AND status = 'running' \
                   AND lease_until IS NOT DISTINCT FROM $4 \
                   AND lease_holder IS NOT DISTINCT FROM $5 \
                 RETURNING {COLUMNS}"
            )))
            .bind(candidate.id)
            .bind(holder)
            .bind(until)
            .bind(candidate.lease_until)
            .bind(candidate.lease_holder)
            .try_map(|row: PgRow| operation(&row))
            .fetch_optional(&self.pool)
            .await?;
            Ok::<_, StoreError>(taken)
        })
        .await
    }

    async fn operation_page(
        &self,
        id: Uuid,
        holder: Uuid,
        limit: i64,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<Option<OperationPage>, StoreError> {
        // `now` is the caller's, from the one clock (`crate::clock`): the
        // rows are read as of it too.
        let tx = self.pool.begin().await?;
        operation_page(PgPage { tx }, (id, holder), limit, now, until).await
    }

    async fn endpoint_page(
        &self,
        endpoint: Uuid,
        before: Uuid,
        limit: i64,
    ) -> Result<Vec<EndpointRow>, StoreError> {
        endpoint_page(&self.pool, endpoint, before, limit).await
    }

    async fn failed_page(
        &self,
        endpoint: Uuid,
        after: (DateTime<Utc>, Uuid),
        until: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<FailedRow>, StoreError> {
        failed_page(&self.pool, endpoint, after, until, limit, false).await
    }

    async fn fail_operation(
        &self,
        id: Uuid,
        holder: Uuid,
        error: &str,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE operations SET status = 'failed', error = $3, lease_holder = NULL, \
                 lease_until = NULL, updated_at = $4, finished_at = $4 \
             WHERE id = $1 AND lease_holder = $2 AND status = 'running'",
        )
        .bind(id)
        .bind(holder)
        .bind(error)
        .bind(now)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn release_operation(&self, id: Uuid, holder: Uuid) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE operations SET lease_holder = NULL, lease_until = NULL \
             WHERE id = $1 AND lease_holder = $2",
        )
        .bind(id)
        .bind(holder)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn purge_operations(&self, before: DateTime<Utc>, limit: i64) -> Result<u64, StoreError> {
        crate::store::operations::purge_operations(self, before, limit).await
    }
}

#[async_trait::async_trait]
impl crate::store::operations::OperationRetention for PgStore {
    /// Through `operations_finished`.
    async fn finished_before(
        &self,
        before: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<(Uuid, String, Option<DateTime<Utc>>)>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT id, status, finished_at FROM operations \
             WHERE finished_at < $1 AND finished_at IS NOT NULL LIMIT $2",
        )
        .bind(before)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?)
    }

    async fn delete_finished(&self, ids: &[Uuid]) -> Result<u64, StoreError> {
        let done = sqlx::query("DELETE FROM operations WHERE id = ANY($1) AND status <> 'running'")
            .bind(ids)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected())
    }
}
