//! SQLite's side of operations (`seams::OperationStore`), as PostgreSQL's
//! (`postgres/operations.rs`): the same keyset over
//! `notifications_failed_by_endpoint`, the same rules from
//! `domain::operation`, each page in one transaction of the one writer.

use chrono::{DateTime, Utc};
use sqlx::sqlite::SqliteRow;
use sqlx::Row;
use uuid::Uuid;

use super::columns::{self, micros};
use super::{store_error, SqliteStore};
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

fn operation(row: &SqliteRow) -> Result<Operation, sqlx::Error> {
    let decode = |column: &str| sqlx::Error::ColumnDecode {
        index: column.into(),
        source: format!("unknown {column}").into(),
    };
    let kind: String = row.try_get("kind")?;
    let status: String = row.try_get("status")?;
    let cursor_at = columns::optional_time(row, "cursor_at")?;
    let cursor_id: Option<Uuid> = row.try_get("cursor_id")?;
    let filter: Option<String> = row.try_get("filter")?;
    let filter = filter
        .map(|text| serde_json::from_str::<BulkFilter>(&text))
        .transpose()
        .map_err(|_| decode("filter"))?;
    Ok(Operation {
        id: row.try_get("id")?,
        kind: OperationKind::parse(&kind).ok_or_else(|| decode("kind"))?,
        endpoint_id: row.try_get("endpoint_id")?,
        status: OperationStatus::parse(&status).ok_or_else(|| decode("status"))?,
        window: Window {
            since: columns::time(row, "since")?,
            until: columns::time(row, "until")?,
        },
        filter,
        matched: row.try_get("matched")?,
        started: row.try_get("started")?,
        cursor: cursor_at.zip(cursor_id),
        lease_holder: row.try_get("lease_holder")?,
        lease_until: columns::optional_time(row, "lease_until")?,
        error: row.try_get("error")?,
        created_at: columns::time(row, "created_at")?,
        updated_at: columns::time(row, "updated_at")?,
        finished_at: columns::optional_time(row, "finished_at")?,
    })
}

async fn read(
    executor: impl sqlx::SqliteExecutor<'_>,
    id: Uuid,
) -> Result<Option<Operation>, StoreError> {
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM operations WHERE id = ?"
    )))
    .bind(id)
    .try_map(|row: SqliteRow| operation(&row))
    .fetch_optional(executor)
    .await
    .map_err(store_error)
}

fn failed_row(row: &SqliteRow) -> Result<FailedRow, sqlx::Error> {
    let leased_at = columns::optional_time(row, "leased_at")?;
    let next_at = columns::optional_time(row, "next_attempt_at")?;
    Ok(FailedRow {
        id: row.try_get("id")?,
        status: columns::status(row, "status")?,
        attempts: row.try_get("attempts")?,
        lease: Lease::stored(row.try_get("lease_id")?, leased_at, next_at),
        completed_at: columns::time(row, "completed_at")?,
        pull: row.try_get::<i64, _>("pull")? != 0,
        created_at: columns::time(row, "created_at")?,
        event_type: row.try_get("event_type")?,
        key: row.try_get("key")?,
    })
}

/// A page of an operation, as PostgreSQL's `FAILED_PAGE`: the endpoint's
/// failed notifications after the cursor, to the window's end, oldest
/// failure first, each with its creation time, type and key (its own, or
/// else its event's), over `notifications_failed_by_endpoint`.
async fn failed_page(
    executor: impl sqlx::SqliteExecutor<'_>,
    endpoint: Uuid,
    after: (DateTime<Utc>, Uuid),
    until: DateTime<Utc>,
    limit: i64,
) -> Result<Vec<FailedRow>, StoreError> {
    sqlx::query(
        "SELECT n.id, n.status, n.attempts, n.lease_id, n.leased_at, n.next_attempt_at, \
             n.completed_at, n.pull, n.created_at, \
             coalesce(n.event_type, e.event_type) AS event_type, coalesce(n.key, e.key) AS key \
         FROM notifications n LEFT JOIN events e ON e.id = n.event_id \
         WHERE n.endpoint_id = ?1 AND n.status = 'failed' \
           AND (n.completed_at, n.id) > (?2, ?3) AND n.completed_at <= ?4 \
         ORDER BY n.completed_at, n.id LIMIT ?5",
    )
    .bind(endpoint)
    .bind(micros(after.0))
    .bind(after.1)
    .bind(micros(until))
    .bind(limit)
    .try_map(|row: SqliteRow| failed_row(&row))
    .fetch_all(executor)
    .await
    .map_err(store_error)
}

/// One page's transaction on the writer (`store::operation_page`).
struct SqlitePage {
    tx: sqlx::Transaction<'static, sqlx::Sqlite>,
}

#[async_trait::async_trait]
impl PageStep for SqlitePage {
    async fn operation(&mut self, id: Uuid) -> Result<Option<Operation>, StoreError> {
        read(&mut *self.tx, id).await
    }

    async fn endpoint_deleted(&mut self, endpoint: Uuid) -> Result<bool, StoreError> {
        let deleted: Option<bool> =
            sqlx::query_scalar("SELECT deleted_at IS NOT NULL FROM endpoints WHERE id = ?")
                .bind(endpoint)
                .fetch_optional(&mut *self.tx)
                .await
                .map_err(store_error)?;
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
        super::cancel::cancel_pending(&mut *self.tx, Pending::Ids(ids), micros(now)).await
    }

    async fn failed_page(
        &mut self,
        endpoint: Uuid,
        after: (DateTime<Utc>, Uuid),
        until: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<FailedRow>, StoreError> {
        failed_page(&mut *self.tx, endpoint, after, until, limit).await
    }

    async fn restart(
        &mut self,
        endpoint: Uuid,
        restarting: &[(&FailedRow, Retried)],
        now: DateTime<Utc>,
    ) -> Result<Vec<Uuid>, StoreError> {
        for (row, retried) in restarting {
            sqlx::query(
                "UPDATE notifications SET status = ?2, series_start = ?3, \
                     next_attempt_at = ?4, completed_at = NULL, needs_index = 0, \
                     lease_id = NULL, leased_at = NULL, updated_at = ?5 WHERE id = ?1",
            )
            .bind(row.id)
            .bind(retried.status.as_str())
            .bind(retried.series_start)
            .bind(micros(retried.next_attempt_at))
            .bind(micros(now))
            .execute(&mut *self.tx)
            .await
            .map_err(store_error)?;
        }
        let ids: Vec<Uuid> = restarting.iter().map(|(row, _)| row.id).collect();
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
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE operations SET matched = matched + ?2, started = started + ?3, \
                 cursor_at = ?4, cursor_id = ?5, lease_until = ?6, status = ?7, updated_at = ?8, \
                 finished_at = CASE WHEN ?7 = 'running' THEN NULL ELSE ?8 END, \
                 error = coalesce(?9, error) \
             WHERE id = ?1 RETURNING {COLUMNS}"
        )))
        .bind(id)
        .bind(paged.matched)
        .bind(paged.started)
        .bind(cursor_at.map(micros))
        .bind(cursor_id)
        .bind(micros(until))
        .bind(status.as_str())
        .bind(micros(now))
        .bind(error)
        .try_map(|row: SqliteRow| operation(&row))
        .fetch_one(&mut *self.tx)
        .await
        .map_err(store_error)
    }

    async fn commit(self) -> Result<(), StoreError> {
        self.tx.commit().await.map_err(store_error)
    }
}

/// Up to `limit` of `endpoint`'s notifications below `before`, newest
/// first (`notifications_endpoint_newest`), with their type and key (their
/// own, or else their event's).
async fn endpoint_page(
    executor: impl sqlx::SqliteExecutor<'_>,
    endpoint: Uuid,
    before: Uuid,
    limit: i64,
) -> Result<Vec<EndpointRow>, StoreError> {
    sqlx::query(
        "SELECT n.id, n.status, n.created_at, coalesce(n.event_type, e.event_type) AS event_type, \
             coalesce(n.key, e.key) AS key \
         FROM notifications n LEFT JOIN events e ON e.id = n.event_id \
         WHERE n.endpoint_id = ?1 AND n.id < ?2 ORDER BY n.id DESC LIMIT ?3",
    )
    .bind(endpoint)
    .bind(before)
    .bind(limit)
    .try_map(|row: SqliteRow| {
        Ok(EndpointRow {
            id: row.try_get("id")?,
            status: columns::status(&row, "status")?,
            created_at: columns::time(&row, "created_at")?,
            event_type: row.try_get("event_type")?,
            key: row.try_get("key")?,
        })
    })
    .fetch_all(executor)
    .await
    .map_err(store_error)
}

#[async_trait::async_trait]
impl OperationStore for SqliteStore {
    async fn start_operation(&self, operation: &Operation) -> Result<Started, StoreError> {
        let mut tx = self.writer.begin().await.map_err(store_error)?;
        let running = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM operations \
             WHERE endpoint_id = ? AND kind = ? AND status = 'running'"
        )))
        .bind(operation.endpoint_id)
        .bind(operation.kind.as_str())
        .try_map(|row: SqliteRow| self::operation(&row))
        .fetch_optional(&mut *tx)
        .await
        .map_err(store_error)?;
        if let Some(running) = running {
            return Ok(Started::Running(running));
        }
        let started = sqlx::query(sqlx::AssertSqlSafe(format!(
            "INSERT INTO operations (id, kind, endpoint_id, status, since, until, filter, \
                 created_at, updated_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?8, ?7, ?7) RETURNING {COLUMNS}"
        )))
        .bind(operation.id)
        .bind(operation.kind.as_str())
        .bind(operation.endpoint_id)
        .bind(operation.status.as_str())
        .bind(micros(operation.window.since))
        .bind(micros(operation.window.until))
        .bind(micros(operation.created_at))
        .bind(
            operation
                .filter
                .as_ref()
                .map(|filter| serde_json::to_string(filter).expect("a filter is JSON")),
        )
        .try_map(|row: SqliteRow| self::operation(&row))
        .fetch_one(&mut *tx)
        .await
        .map_err(store_error)?;
        tx.commit().await.map_err(store_error)?;
        Ok(Started::Started(started))
    }

    async fn get_operation(&self, id: Uuid) -> Result<Option<Operation>, StoreError> {
        read(&self.reader, id).await
    }

    async fn lease_operation(
        &self,
        holder: Uuid,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<Option<Operation>, StoreError> {
        // Read on a reader, so that a look that finds nothing (most of
        // them) costs the writer nothing; the write compares and sets.
        let running = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM operations WHERE status = 'running' \
             ORDER BY created_at, id LIMIT ?1"
        )))
        .bind(LEASE_CANDIDATES)
        .try_map(|row: SqliteRow| operation(&row))
        .fetch_all(&self.reader)
        .await
        .map_err(store_error)?;
        lease_first(running, now, |candidate| async move {
            let taken = sqlx::query(sqlx::AssertSqlSafe(format!(
                "UPDATE operations SET lease_holder = ?2, lease_until = ?3 \
                 WHERE id = ?1 AND status = 'running' AND lease_until IS ?4 AND lease_holder IS ?5 \
                 RETURNING {COLUMNS}"
            )))
            .bind(candidate.id)
            .bind(holder)
            .bind(micros(until))
            .bind(candidate.lease_until.map(micros))
            .bind(candidate.lease_holder)
            .try_map(|row: SqliteRow| operation(&row))
            .fetch_optional(&self.writer)
            .await
            .map_err(store_error)?;
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
        // The caller's `now` is the one clock (`crate::clock`).
        let tx = self.writer.begin().await.map_err(store_error)?;
        operation_page(SqlitePage { tx }, (id, holder), limit, now, until).await
    }

    async fn endpoint_page(
        &self,
        endpoint: Uuid,
        before: Uuid,
        limit: i64,
    ) -> Result<Vec<EndpointRow>, StoreError> {
        endpoint_page(&self.reader, endpoint, before, limit).await
    }

    async fn failed_page(
        &self,
        endpoint: Uuid,
        after: (DateTime<Utc>, Uuid),
        until: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<FailedRow>, StoreError> {
        failed_page(&self.reader, endpoint, after, until, limit).await
    }

    async fn fail_operation(
        &self,
        id: Uuid,
        holder: Uuid,
        error: &str,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE operations SET status = 'failed', error = ?3, lease_holder = NULL, \
                 lease_until = NULL, updated_at = ?4, finished_at = ?4 \
             WHERE id = ?1 AND lease_holder = ?2 AND status = 'running'",
        )
        .bind(id)
        .bind(holder)
        .bind(error)
        .bind(micros(now))
        .execute(&self.writer)
        .await
        .map_err(store_error)?;
        Ok(())
    }

    async fn release_operation(&self, id: Uuid, holder: Uuid) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE operations SET lease_holder = NULL, lease_until = NULL \
             WHERE id = ?1 AND lease_holder = ?2",
        )
        .bind(id)
        .bind(holder)
        .execute(&self.writer)
        .await
        .map_err(store_error)?;
        Ok(())
    }

    async fn purge_operations(&self, before: DateTime<Utc>, limit: i64) -> Result<u64, StoreError> {
        crate::store::operations::purge_operations(self, before, limit).await
    }
}

#[async_trait::async_trait]
impl crate::store::operations::OperationRetention for SqliteStore {
    async fn finished_before(
        &self,
        before: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<(Uuid, String, Option<DateTime<Utc>>)>, StoreError> {
        sqlx::query(
            "SELECT id, status, finished_at FROM operations \
             WHERE finished_at < ?1 AND finished_at IS NOT NULL LIMIT ?2",
        )
        .bind(micros(before))
        .bind(limit)
        .try_map(|row: SqliteRow| {
            let finished: Option<i64> = row.try_get("finished_at")?;
            Ok((
                row.try_get("id")?,
                row.try_get("status")?,
                finished
                    .map(|us| columns::time_of("finished_at", us))
                    .transpose()?,
            ))
        })
        .fetch_all(&self.writer)
        .await
        .map_err(store_error)
    }

    async fn delete_finished(&self, ids: &[Uuid]) -> Result<u64, StoreError> {
        let sql = format!(
            "DELETE FROM operations WHERE id IN {} AND status <> 'running'",
            columns::IN_ID_LIST
        );
        let done = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(columns::id_list(ids))
            .execute(&self.writer)
            .await
            .map_err(store_error)?;
        Ok(done.rows_affected())
    }
}
