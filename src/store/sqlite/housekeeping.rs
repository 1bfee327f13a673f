//! Housekeeping on SQLite: rows owed to the due index, pending pages in due
//! order (what a rebuild of the in-process index reads at start), and
//! retention.

use chrono::{DateTime, Utc};
use sqlx::sqlite::SqliteRow;
use sqlx::{AssertSqlSafe, Row};
use uuid::Uuid;

use super::columns::{self, micros, IN_ID_LIST};
use super::ordering::released;
use super::{store_error, SqliteStore};
use crate::domain::retention;
use crate::domain::status::Status;
use crate::store::housekeeping::{walked, PendingCursor};
use crate::store::StoreError;

/// One page of pending push rows in due order after a cursor and before a
/// time, on `notifications_pending_due` (its term `status = 'pending'`
/// written as the index has it). Both bounds are always bound, so the
/// statement is one and its range is the index's.
pub(super) const PENDING_PAGE: &str = concat!(
    "SELECT n.id, n.next_attempt_at FROM notifications n \
     WHERE n.status = 'pending' AND n.pull = 0 AND n.next_attempt_at IS NOT NULL \
       AND (n.next_attempt_at, n.id) > (?, ?) AND n.next_attempt_at < ? AND ",
    released!("n"),
    " ORDER BY n.next_attempt_at, n.id LIMIT ?"
);

/// A row of (id, due time).
fn due(row: &SqliteRow) -> Result<(Uuid, DateTime<Utc>), sqlx::Error> {
    Ok((
        row.try_get(0)?,
        columns::time_of("next_attempt_at", row.try_get(1)?)?,
    ))
}

fn dues(rows: Vec<SqliteRow>) -> Result<Vec<(Uuid, DateTime<Utc>)>, StoreError> {
    rows.iter()
        .map(due)
        .collect::<Result<_, _>>()
        .map_err(store_error)
}

impl SqliteStore {
    /// Notifications marked `needs_index`, with their due time while they
    /// are pending (`None` once final: only the mark to clear). The
    /// predicate is exactly the partial index's.
    pub async fn needing_index(
        &self,
        limit: i64,
    ) -> Result<Vec<(Uuid, Option<DateTime<Utc>>)>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, CASE WHEN status = 'pending' THEN next_attempt_at END FROM notifications \
             WHERE needs_index = 1 ORDER BY next_attempt_at LIMIT ?",
        )
        .bind(limit)
        .fetch_all(&self.reader)
        .await
        .map_err(store_error)?;
        rows.iter()
            .map(|row| {
                let at: Option<i64> = row.try_get(1)?;
                Ok((
                    row.try_get(0)?,
                    at.map(|us| columns::time_of("next_attempt_at", us))
                        .transpose()?,
                ))
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(store_error)
    }

    pub async fn clear_needs_index(&self, ids: &[Uuid]) -> Result<(), StoreError> {
        if ids.is_empty() {
            return Ok(());
        }
        let sql = format!("UPDATE notifications SET needs_index = 0 WHERE id IN {IN_ID_LIST}");
        sqlx::query(AssertSqlSafe(sql))
            .bind(columns::id_list(ids))
            .execute(&self.writer)
            .await
            .map_err(store_error)?;
        Ok(())
    }

    /// One page of pending rows in due order, after `after`: what a
    /// rebuild of the due index walks.
    pub async fn pending_page(
        &self,
        after: Option<PendingCursor>,
        limit: i64,
    ) -> Result<Vec<(Uuid, DateTime<Utc>)>, StoreError> {
        self.pending_before(after, i64::MAX, limit).await
    }

    /// As `pending_page`, of the rows due before `due_before`: a sweep.
    pub async fn pending_due_before(
        &self,
        after: Option<PendingCursor>,
        due_before: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<(Uuid, DateTime<Utc>)>, StoreError> {
        self.pending_before(after, micros(due_before), limit).await
    }

    async fn pending_before(
        &self,
        after: Option<PendingCursor>,
        before_us: i64,
        limit: i64,
    ) -> Result<Vec<(Uuid, DateTime<Utc>)>, StoreError> {
        let (at, id) = after.map_or((i64::MIN, Uuid::nil()), |(at, id)| (micros(at), id));
        let rows = sqlx::query(PENDING_PAGE)
            .bind(at)
            .bind(id)
            .bind(before_us)
            .bind(limit)
            .fetch_all(&self.reader)
            .await
            .map_err(store_error)?;
        dues(rows)
    }

    /// Of `ids`, those still pending, with their due times.
    pub async fn still_pending(
        &self,
        ids: &[Uuid],
    ) -> Result<Vec<(Uuid, DateTime<Utc>)>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT n.id, n.next_attempt_at FROM notifications n WHERE n.id IN {IN_ID_LIST} \
               AND n.status = 'pending' AND n.pull = 0 AND n.next_attempt_at IS NOT NULL \
               AND {}",
            released!("n")
        );
        let rows = sqlx::query(AssertSqlSafe(sql))
            .bind(columns::id_list(ids))
            .fetch_all(&self.reader)
            .await
            .map_err(store_error)?;
        dues(rows)
    }

    /// One page of pending rows created after the id `after` (UUIDv7, so a
    /// creation time), in id order, on the primary key.
    pub async fn pending_created_after(
        &self,
        after: Uuid,
        limit: i64,
    ) -> Result<Vec<(Uuid, DateTime<Utc>)>, StoreError> {
        let rows = sqlx::query(concat!(
            "SELECT n.id, n.next_attempt_at FROM notifications n \
             WHERE n.id > ? AND n.status = 'pending' AND n.pull = 0 \
               AND n.next_attempt_at IS NOT NULL AND ",
            released!("n"),
            " ORDER BY n.id LIMIT ?"
        ))
        .bind(after)
        .bind(limit)
        .fetch_all(&self.reader)
        .await
        .map_err(store_error)?;
        dues(rows)
    }

    /// Deletes the final notifications completed before `before`, with
    /// their attempts, among the next `limit` rows of the primary key after
    /// `after`, up to `domain::retention::notifications_end`. Returns how
    /// many it deleted and where to go on from (`None` once the walk is
    /// done). Each row's status and completion are read,
    /// `domain::retention::expired` chooses, and the delete compares them
    /// with what was read, as PostgreSQL does; in one transaction on the
    /// writer, nothing changes between.
    pub async fn purge_completed(
        &self,
        before: DateTime<Utc>,
        after: Option<Uuid>,
        limit: i64,
    ) -> Result<(u64, Option<Uuid>), StoreError> {
        let mut tx = self.writer.begin().await.map_err(store_error)?;
        let read = sqlx::query(
            "SELECT id, status, completed_at FROM notifications \
             WHERE id > ?1 AND id < ?2 ORDER BY id LIMIT ?3",
        )
        .bind(after.unwrap_or(Uuid::nil()))
        .bind(retention::notifications_end(before))
        .bind(limit)
        .fetch_all(&mut *tx)
        .await
        .map_err(store_error)?;
        let scanned = read
            .iter()
            .map(|row| {
                Ok((
                    row.try_get::<Uuid, _>("id")?,
                    columns::status(row, "status")?,
                    columns::optional_time(row, "completed_at")?,
                ))
            })
            .collect::<Result<Vec<_>, sqlx::Error>>()
            .map_err(store_error)?;
        let mut gone = Vec::new();
        let mut successes = Vec::new();
        for (id, status, completed_at) in &scanned {
            if !retention::expired(*status, *completed_at, before) {
                continue;
            }
            let deleted: Option<Uuid> = sqlx::query_scalar(
                "DELETE FROM notifications WHERE id = ?1 AND status = ?2 AND completed_at = ?3 \
                 RETURNING id",
            )
            .bind(id)
            .bind(status.as_str())
            .bind(completed_at.map(micros))
            .fetch_optional(&mut *tx)
            .await
            .map_err(store_error)?;
            if deleted.is_some() && *status == Status::Succeeded {
                successes.push(*id);
            }
            gone.extend(deleted);
        }
        if !successes.is_empty() {
            // What a removed success released still names it in `behind`
            // (`ordering::released`): cleared, so that it does not read
            // as waiting for a removed holder.
            let sql = format!(
                "UPDATE notifications SET behind = NULL \
                 WHERE behind IN {IN_ID_LIST} AND status = 'pending'"
            );
            sqlx::query(AssertSqlSafe(sql))
                .bind(columns::id_list(&successes))
                .execute(&mut *tx)
                .await
                .map_err(store_error)?;
        }
        if !gone.is_empty() {
            let sql = format!("DELETE FROM attempts WHERE notification_id IN {IN_ID_LIST}");
            sqlx::query(AssertSqlSafe(sql))
                .bind(columns::id_list(&gone))
                .execute(&mut *tx)
                .await
                .map_err(store_error)?;
        }
        tx.commit().await.map_err(store_error)?;
        let last = scanned.last().map(|(id, _, _)| *id);
        let deleted = gone.len() as i64;
        Ok(walked((deleted, scanned.len() as i64, last), limit))
    }
}
