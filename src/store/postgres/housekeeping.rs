//! Housekeeping in PostgreSQL: rows owed to the due index, pending pages in
//! due order, retention.
//!
//! Retention's choice is `domain::retention`'s; what stays in SQL is the
//! walk's bound (`id < notifications_end`) and the delete's compare-and-set
//! on the status and completion the domain chose on.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::ordering::released;
use super::partitions::id_span;
use super::PgStore;
use crate::domain::retention;
use crate::domain::status::Status;
use crate::store::housekeeping::{walked, PendingCursor};
use crate::store::StoreError;

/// Of a page's ids (`$1`, their span `$2`..`$3`), those still pending and
/// indexed, with their due times. Like every walk that fills the index
/// (`PENDING_PAGE`, `pending_created_after`), it leaves out one that waits
/// behind an earlier one of its key (`ordering::released`): nothing would
/// send it, and a claim of it read as an attempt under way. It is indexed
/// when its key releases it.
pub(super) const STILL_PENDING: &str = concat!(
    "SELECT n.id, n.next_attempt_at FROM notifications n \
     WHERE n.id = ANY($1) AND n.id BETWEEN $2 AND $3 \
       AND n.status = 'pending' AND NOT n.pull AND n.next_attempt_at IS NOT NULL AND ",
    released!("n")
);

impl PgStore {
    /// How far PostgreSQL's clock is ahead of the store's (`crate::clock`),
    /// read against the middle of the round trip: the hosts of server-mode
    /// processes must agree on the time, and a database host that agrees
    /// with each of them is the one witness they share.
    pub async fn clock_skew(&self) -> Result<chrono::Duration, StoreError> {
        let before = self.clock.now();
        let theirs: DateTime<Utc> = sqlx::query_scalar("SELECT clock_timestamp()")
            .fetch_one(&self.pool)
            .await?;
        let after = self.clock.now();
        Ok(theirs - (before + (after - before) / 2))
    }

    /// Notifications marked `needs_index`, with their due time while they
    /// are pending (`None` once final: nothing to index, only the mark to
    /// clear).
    ///
    /// The predicate is exactly the partial index's, `needs_index`, so that
    /// index is the only one that fits. With `status = 'pending'` in the
    /// query, the planner also could, and did, walk `notifications_pending_due`
    /// and filter every pending row: once a second, per process.
    pub async fn needing_index(
        &self,
        limit: i64,
    ) -> Result<Vec<(Uuid, Option<DateTime<Utc>>)>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT id, CASE WHEN status = 'pending' THEN next_attempt_at END FROM notifications \
             WHERE needs_index ORDER BY next_attempt_at LIMIT $1",
        )
        .bind(limit)
        .fetch_all(&self.pool)
        .await?)
    }

    /// Clears the marks of `ids` (`CLEAR_NEEDS_INDEX`).
    pub async fn clear_needs_index(&self, ids: &[Uuid]) -> Result<(), StoreError> {
        let (low, high) = id_span(ids);
        sqlx::query(CLEAR_NEEDS_INDEX)
            .bind(ids)
            .bind(low)
            .bind(high)
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}
/// Clears the marks of `$1` (ids from `$2` to `$3`), locking the rows in
/// id order, as `releasing::RELEASE_ENDED` locks the successors it
/// writes: the two may take a key's new head at the same time, and in
/// opposite orders they deadlocked. By primary key only: `needs_index IS TRUE` keeps the
/// partial index of marked rows out of it.
pub(super) const CLEAR_NEEDS_INDEX: &str = "UPDATE notifications n SET needs_index = false \
     FROM (SELECT id FROM notifications \
           WHERE id = ANY($1) AND id BETWEEN $2 AND $3 AND needs_index IS TRUE \
           ORDER BY id FOR UPDATE) s \
     WHERE n.id = ANY($1) AND n.id BETWEEN $2 AND $3 AND n.id = s.id AND n.needs_index IS TRUE";
/// One page of pending rows in due order after a cursor and before a time,
/// those a claim would send (`ordering::released`, as `STILL_PENDING`).
/// Both bounds are always given (see `FIRST` and `NO_END`): an optional
/// bound written `$1 IS NULL OR …` is no index condition in a generic plan,
/// and every page then read the index from its start (a rebuild of
/// 1,000,000 took 22–34 s instead of 3–4).
pub(crate) const PENDING_PAGE: &str = concat!(
    "SELECT n.id, n.next_attempt_at FROM notifications n \
     WHERE n.status = 'pending' AND NOT n.pull AND n.next_attempt_at IS NOT NULL \
       AND (n.next_attempt_at, n.id) > ($1, $2) AND n.next_attempt_at < $3 AND ",
    released!("n"),
    " ORDER BY n.next_attempt_at, n.id LIMIT $4"
);
/// Midnight UTC on a day of a year PostgreSQL's `timestamptz` holds.
fn midnight(year: i32, month: u32, day: u32) -> DateTime<Utc> {
    chrono::NaiveDate::from_ymd_opt(year, month, day)
        .and_then(|day| day.and_hms_opt(0, 0, 0))
        .expect("a valid date")
        .and_utc()
}
/// Before every due time a row can have.
fn first() -> PendingCursor {
    (midnight(1, 1, 1), Uuid::nil())
}
/// After every due time a row can have.
fn no_end() -> DateTime<Utc> {
    midnight(9999, 12, 31)
}
impl PgStore {
    /// One page of pending rows in due order, after `after`: what a rebuild
    /// or a sweep walks, on the `notifications_pending_due` index.
    pub async fn pending_page(
        &self,
        after: Option<PendingCursor>,
        due_before: Option<DateTime<Utc>>,
        limit: i64,
    ) -> Result<Vec<(Uuid, DateTime<Utc>)>, StoreError> {
        let (at, id) = after.unwrap_or_else(first);
        Ok(sqlx::query_as(PENDING_PAGE)
            .bind(at)
            .bind(id)
            .bind(due_before.unwrap_or_else(no_end))
            .bind(limit)
            .fetch_all(&self.pool)
            .await?)
    }

    /// Of `ids`, those still pending, with their due times: what a sweep
    /// re-reads before re-indexing rows it found missing from Redis.
    pub async fn still_pending(
        &self,
        ids: &[Uuid],
    ) -> Result<Vec<(Uuid, DateTime<Utc>)>, StoreError> {
        let (low, high) = id_span(ids);
        Ok(sqlx::query_as(STILL_PENDING)
            .bind(ids)
            .bind(low)
            .bind(high)
            .fetch_all(&self.pool)
            .await?)
    }

    /// One page of pending rows created after the id `after` (UUIDv7, so a
    /// creation time), in id order: what is re-added after a Redis failover,
    /// on the primary key.
    pub async fn pending_created_after(
        &self,
        after: Uuid,
        limit: i64,
    ) -> Result<Vec<(Uuid, DateTime<Utc>)>, StoreError> {
        Ok(sqlx::query_as(concat!(
            "SELECT n.id, n.next_attempt_at FROM notifications n \
             WHERE n.id > $1 AND n.status = 'pending' AND NOT n.pull \
               AND n.next_attempt_at IS NOT NULL AND ",
            released!("n"),
            " ORDER BY n.id LIMIT $2"
        ))
        .bind(after)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?)
    }

    /// Deletes the final notifications completed before `before`, with
    /// their attempts, among the next `limit` rows of the primary key after
    /// `after`. Returns how many it deleted and where to go on from (`None`
    /// once the walk is done).
    ///
    /// There is no index on `completed_at` (it would cost an entry on every
    /// completion): the walk covers the primary key up to
    /// `domain::retention::notifications_end`. Each row's status and
    /// completion are read, `domain::retention::expired` chooses, and the
    /// delete compares them with what was read: a row changed meanwhile (a
    /// retry taking it back to pending) is left for a later walk to judge.
    /// A pending notification that a deleted success released (it still
    /// names it in `behind`: `postgres::ordering::released`) is cleared in
    /// the same statement: a `behind` naming a removed notification would
    /// read as waiting for a removed holder.
    pub async fn purge_completed(
        &self,
        before: DateTime<Utc>,
        after: Option<Uuid>,
        limit: i64,
    ) -> Result<(u64, Option<Uuid>), StoreError> {
        let scanned: Vec<(Uuid, Status, Option<DateTime<Utc>>)> = sqlx::query_as(
            "SELECT id, status, completed_at FROM notifications \
             WHERE id > $3 AND id < $2 ORDER BY id LIMIT $1",
        )
        .bind(limit)
        .bind(retention::notifications_end(before))
        .bind(after.unwrap_or(Uuid::nil()))
        .fetch_all(&self.pool)
        .await?;
        let last = scanned.last().map(|(id, _, _)| *id);
        let mut ids = Vec::new();
        let mut statuses = Vec::new();
        let mut completed = Vec::new();
        for (id, status, completed_at) in &scanned {
            if retention::expired(*status, *completed_at, before) {
                ids.push(*id);
                statuses.push(*status);
                completed.push(*completed_at);
            }
        }
        let deleted: i64 = if ids.is_empty() {
            0
        } else {
            sqlx::query_scalar(
                "WITH deleted AS ( \
                     DELETE FROM notifications n \
                     USING UNNEST($1::uuid[], $2::text[], $3::timestamptz[]) \
                         AS r(id, status, completed_at) \
                     WHERE n.id = r.id AND n.status = r.status \
                       AND n.completed_at = r.completed_at \
                     RETURNING n.id, n.status \
                 ), successors_released AS ( \
                     UPDATE notifications s SET behind = NULL \
                     FROM deleted d \
                     WHERE s.behind = d.id AND d.status = 'succeeded' \
                       AND (s.status = 'pending') IS TRUE \
                 ), attempts_deleted AS ( \
                     DELETE FROM attempts WHERE notification_id IN (SELECT id FROM deleted) \
                 ), keys_deleted AS ( \
                     DELETE FROM notification_keys WHERE id IN (SELECT id FROM deleted) \
                 ) \
                 SELECT count(*) FROM deleted",
            )
            .bind(&ids)
            .bind(&statuses)
            .bind(&completed)
            .fetch_one(&self.pool)
            .await?
        };
        Ok(walked((deleted, scanned.len() as i64, last), limit))
    }
}
/// A rebuild of the due index reads pending rows through this seam.
#[async_trait::async_trait]
impl crate::store::seams::PendingRows for PgStore {
    async fn pending_page(
        &self,
        after: Option<PendingCursor>,
        limit: i64,
    ) -> Result<Vec<(Uuid, DateTime<Utc>)>, StoreError> {
        PgStore::pending_page(self, after, None, limit).await
    }
}
