//! Pull consumption on SQLite: leases ended, extended and read, and the
//! delivery mode switches.
//!
//! As in PostgreSQL (`postgres/pull.rs`), whether a lease still runs is
//! decided in `domain::lease`, never here: rows are read with one time
//! of the store's clock per operation (`crate::clock`), the domain or the caller's
//! decision decides, and each write is a compare-and-set on what was
//! decided. Where PostgreSQL locks the rows it reads (`FOR UPDATE`), the
//! read, the decision and the write here run in one transaction on the
//! single writer connection: no other write can come between.

use chrono::{DateTime, Utc};
use sqlx::sqlite::SqliteRow;
use sqlx::{AssertSqlSafe, Row, SqliteConnection};
use uuid::Uuid;

use super::columns::{self, id_list, micros, IN_ID_LIST};
use super::{store_error, SqliteStore};
use crate::domain::lease::{released, Lease};
use crate::domain::pull::{strays_since, Delivery, Receipt};
use crate::store::cancel::Pending;
use crate::store::pull::{LeaseDecision, Leased, Leases, LeasesEnded};
use crate::store::recording::AttemptRecord;
use crate::store::StoreError;

/// The columns `Leased` reads; `n` is the notification, `e` its event.
pub(super) const LEASED_FROM: &str = "SELECT n.id, n.endpoint_id, n.pull, n.status, n.key, \
     COALESCE(n.event_type, e.event_type) AS event_type, n.attempts, n.series_start, \
     n.schedule_ms, n.schedule_name, n.lease_id, n.leased_at, n.next_attempt_at, \
     COALESCE((SELECT j.schedule_jitter FROM endpoints j WHERE j.id = n.endpoint_id), 0.0) \
     AS schedule_jitter \
     FROM notifications n LEFT JOIN events e ON e.id = n.event_id";

/// A row read with `LEASED_FROM`, as of `now`.
pub(super) fn leased(row: &SqliteRow, now: DateTime<Utc>) -> Result<Leased, sqlx::Error> {
    Ok(Leased {
        id: row.try_get("id")?,
        endpoint_id: row.try_get("endpoint_id")?,
        pull: row.try_get::<i64, _>("pull")? != 0,
        status: columns::status(row, "status")?,
        key: row.try_get("key")?,
        event_type: row.try_get("event_type")?,
        attempts: row.try_get("attempts")?,
        series_start: row.try_get("series_start")?,
        schedule_ms: columns::json(row, "schedule_ms")?,
        schedule_name: row.try_get("schedule_name")?,
        lease_id: row.try_get("lease_id")?,
        leased_at: columns::optional_time(row, "leased_at")?,
        next_attempt_at: columns::optional_time(row, "next_attempt_at")?,
        now,
        schedule_jitter: row.try_get("schedule_jitter")?,
    })
}

pub(super) fn leased_rows(
    rows: &[SqliteRow],
    now: DateTime<Utc>,
) -> Result<Vec<Leased>, StoreError> {
    rows.iter()
        .map(|row| leased(row, now))
        .collect::<Result<_, _>>()
        .map_err(store_error)
}

impl SqliteStore {
    /// When the endpoint next needs a consumer: the earliest due time of
    /// its pending pull notifications, leased ones at their lease's end;
    /// never while it is disabled (its enabling wakes its consumers).
    pub async fn next_pull_due(
        &self,
        endpoint_id: Uuid,
    ) -> Result<Option<DateTime<Utc>>, StoreError> {
        // `notifications_pull_due`, its terms as the index writes them.
        let due: Option<Option<i64>> = sqlx::query_scalar(
            "SELECT next_attempt_at FROM notifications \
             WHERE endpoint_id = ?1 AND status = 'pending' AND pull = 1 \
               AND NOT EXISTS (SELECT 1 FROM endpoints d WHERE d.id = ?1 AND d.disabled = 1) \
             ORDER BY next_attempt_at, id LIMIT 1",
        )
        .bind(endpoint_id)
        .fetch_optional(&self.reader)
        .await
        .map_err(store_error)?;
        due.flatten()
            .map(|us| columns::time_of("next_attempt_at", us))
            .transpose()
            .map_err(store_error)
    }

    /// Ends leases: reads the rows `which` selects, asks `decide` for the
    /// attempt each ends with, and records those attempts, clearing the
    /// leases, in one transaction on the writer. Each is still written
    /// only if its row has the lease it was decided on. The ran-out
    /// selectors' `next_attempt_at <= now` only picks candidates; `decide`
    /// says which ran out.
    pub async fn end_leases(
        &self,
        which: Leases<'_>,
        mut decide: LeaseDecision<'_>,
    ) -> Result<LeasesEnded, StoreError> {
        let now = self.clock.now();
        let mut tx = self.writer.begin().await.map_err(store_error)?;
        let read = match which {
            Leases::Receipts(receipts) => {
                let ids: Vec<Uuid> = receipts.iter().map(|r| r.notification).collect();
                let sql = format!("{LEASED_FROM} WHERE n.id IN {IN_ID_LIST}");
                sqlx::query(AssertSqlSafe(sql))
                    .bind(id_list(&ids))
                    .fetch_all(&mut *tx)
                    .await
            }
            Leases::Expired { endpoint, limit } => {
                let sql = format!(
                    "{LEASED_FROM} WHERE n.lease_id IS NOT NULL AND n.next_attempt_at <= ?1 \
                       AND (?2 IS NULL OR n.endpoint_id = ?2) \
                     ORDER BY n.next_attempt_at LIMIT ?3"
                );
                sqlx::query(AssertSqlSafe(sql))
                    .bind(micros(now))
                    .bind(endpoint)
                    .bind(limit)
                    .fetch_all(&mut *tx)
                    .await
            }
            Leases::ExpiredOf(ids) => {
                let sql = format!(
                    "{LEASED_FROM} WHERE n.id IN {IN_ID_LIST} \
                       AND n.lease_id IS NOT NULL AND n.next_attempt_at <= ?"
                );
                sqlx::query(AssertSqlSafe(sql))
                    .bind(id_list(ids))
                    .bind(micros(now))
                    .fetch_all(&mut *tx)
                    .await
            }
            Leases::HeldBy { endpoint, limit } => {
                let sql = format!(
                    "{LEASED_FROM} WHERE n.endpoint_id = ?1 AND n.status = 'pending' AND n.pull = 1 \
                       AND n.lease_id IS NOT NULL LIMIT ?2"
                );
                sqlx::query(AssertSqlSafe(sql))
                    .bind(endpoint)
                    .bind(limit)
                    .fetch_all(&mut *tx)
                    .await
            }
        };
        let rows = leased_rows(&read.map_err(store_error)?, now)?;
        let records: Vec<AttemptRecord> = rows.iter().filter_map(&mut decide).collect();
        let moved =
            super::recording::record_lease_ends_on(&mut tx, &records, now, self.count_minutes)
                .await?;
        tx.commit().await.map_err(store_error)?;
        Ok(LeasesEnded { rows, moved })
    }

    /// Moves a lease's end from `until` (as read, and decided running) to
    /// `to`, only if the row still has that lease with that end and it has
    /// not run out since it was read (the read is a reader's, before this
    /// write: a lease that ran out is never extended); returns the end as
    /// stored.
    pub async fn extend_lease(
        &self,
        receipt: &Receipt,
        until: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Option<DateTime<Utc>>, StoreError> {
        let stored: Option<i64> = sqlx::query_scalar(
            "UPDATE notifications SET next_attempt_at = ?4, updated_at = ?5 \
             WHERE id = ?1 AND lease_id = ?2 AND next_attempt_at = ?3 \
               AND next_attempt_at > ?5 \
             RETURNING next_attempt_at",
        )
        .bind(receipt.notification)
        .bind(receipt.lease)
        .bind(micros(until))
        .bind(micros(to))
        .bind(micros(self.clock.now()))
        .fetch_optional(&self.writer)
        .await
        .map_err(store_error)?;
        stored
            .map(|us| columns::time_of("next_attempt_at", us))
            .transpose()
            .map_err(store_error)
    }

    /// The lease state of one notification: why a receipt was refused.
    pub async fn lease_of(&self, id: Uuid) -> Result<Option<Leased>, StoreError> {
        let now = self.clock.now();
        let sql = format!("{LEASED_FROM} WHERE n.id = ?");
        let row = sqlx::query(AssertSqlSafe(sql))
            .bind(id)
            .fetch_optional(&self.reader)
            .await
            .map_err(store_error)?;
        row.map(|row| leased(&row, now))
            .transpose()
            .map_err(store_error)
    }

    /// Makes every pending notification of the endpoint follow its mode:
    /// to pull, they leave the due index (the caller removes them); to
    /// push, leases end without an attempt and they are due as
    /// `domain::lease::released` says. Returns the ids that moved, with
    /// their due times.
    pub async fn follow_delivery(
        &self,
        endpoint_id: Uuid,
        delivery: Delivery,
    ) -> Result<Vec<(Uuid, DateTime<Utc>)>, StoreError> {
        let pull = delivery == Delivery::Pull;
        let now = self.clock.now();
        let mut tx = self.writer.begin().await.map_err(store_error)?;
        let rows = sqlx::query(
            "SELECT id, lease_id, leased_at, next_attempt_at FROM notifications \
             WHERE endpoint_id = ? AND status = 'pending' AND pull <> ? ORDER BY id",
        )
        .bind(endpoint_id)
        .bind(pull)
        .fetch_all(&mut *tx)
        .await
        .map_err(store_error)?;
        let moved = switch_rows(&mut tx, &rows, pull, now).await?;
        tx.commit().await.map_err(store_error)?;
        Ok(moved)
    }

    /// Pending pull notifications of push endpoints changed in the last
    /// day (written by a process whose endpoint cache had not yet seen a
    /// switch), moved to push as `follow_delivery` does; at most `limit`.
    pub async fn adopt_strays(&self, limit: i64) -> Result<Vec<(Uuid, DateTime<Utc>)>, StoreError> {
        let now = self.clock.now();
        let mut tx = self.writer.begin().await.map_err(store_error)?;
        let rows = sqlx::query(STRAYS)
            .bind(micros(strays_since(now)))
            .bind(limit)
            .fetch_all(&mut *tx)
            .await
            .map_err(store_error)?;
        let moved = switch_rows(&mut tx, &rows, false, now).await?;
        tx.commit().await.map_err(store_error)?;
        Ok(moved)
    }

    /// Cancels pending notifications, push or pull, of endpoints deleted
    /// in the last day (made by a process whose cache had not seen the
    /// delete), as `store::cancel::cancel_pending` does; at most `limit`.
    /// Returns those it cancelled.
    pub async fn cancel_orphans(&self, limit: i64) -> Result<Vec<Uuid>, StoreError> {
        let now = self.clock.now();
        let ids: Vec<Uuid> = sqlx::query_scalar(ORPHANS)
            .bind(micros(strays_since(now)))
            .bind(limit)
            .fetch_all(&self.writer)
            .await
            .map_err(store_error)?;
        if ids.is_empty() {
            return Ok(ids);
        }
        super::cancel::cancel_pending(&self.writer, Pending::Ids(&ids), micros(now)).await
    }
}

/// Pending pull rows of push endpoints changed since `?1` (`adopt_strays`).
/// `CROSS JOIN` makes SQLite walk the endpoints and each one's pending
/// pull rows (`notifications_pull_due`, named: on its own SQLite took the
/// endpoint's whole pending backlog, push rows too): a plain join walked
/// every pending notification in due order and looked its endpoint up, a
/// read of the whole backlog on the writer's connection every 30 s.
pub(super) const STRAYS: &str = "SELECT n.id, n.lease_id, n.leased_at, n.next_attempt_at \
     FROM endpoints e CROSS JOIN notifications n INDEXED BY notifications_pull_due \
         ON n.endpoint_id = e.id \
     WHERE e.updated_at > ?1 AND e.delivery = 'push' AND e.deleted_at IS NULL \
       AND n.status = 'pending' AND n.pull = 1 \
     LIMIT ?2";

/// Pending rows of endpoints deleted since `?1` (`cancel_orphans`): the
/// endpoints deleted (`endpoints_deleted`), then each one's pending rows
/// (`notifications_endpoint_pending_due`), for the reason `STRAYS` says.
pub(super) const ORPHANS: &str = "SELECT n.id FROM endpoints e CROSS JOIN notifications n \
     ON n.endpoint_id = e.id \
     WHERE e.deleted_at > ?1 AND n.status = 'pending' LIMIT ?2";

/// Writes rows read in the caller's transaction into mode `pull`, each
/// lease ended with no attempt and the row due as
/// `domain::lease::released` decides.
async fn switch_rows(
    conn: &mut SqliteConnection,
    rows: &[SqliteRow],
    pull: bool,
    now: DateTime<Utc>,
) -> Result<Vec<(Uuid, DateTime<Utc>)>, StoreError> {
    let mut moved = Vec::with_capacity(rows.len());
    for row in rows {
        let (id, lease_id, leased_at, due_at) = lease_row(row).map_err(store_error)?;
        let lease = Lease::stored(lease_id, leased_at, due_at);
        let due = released(lease, due_at, now);
        sqlx::query(
            "UPDATE notifications SET pull = ?2, next_attempt_at = ?3, \
                 lease_id = NULL, leased_at = NULL, updated_at = ?4 WHERE id = ?1",
        )
        .bind(id)
        .bind(pull)
        .bind(due.map(micros))
        .bind(micros(now))
        .execute(&mut *conn)
        .await
        .map_err(store_error)?;
        // A pending row always has a due time; one without has nothing to
        // index.
        if let Some(due) = due {
            moved.push((id, due));
        }
    }
    Ok(moved)
}

type LeaseRow = (
    Uuid,
    Option<Uuid>,
    Option<DateTime<Utc>>,
    Option<DateTime<Utc>>,
);

fn lease_row(row: &SqliteRow) -> Result<LeaseRow, sqlx::Error> {
    Ok((
        row.try_get("id")?,
        row.try_get("lease_id")?,
        columns::optional_time(row, "leased_at")?,
        columns::optional_time(row, "next_attempt_at")?,
    ))
}
