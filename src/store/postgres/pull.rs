//! Pull consumption in PostgreSQL: leases ended, extended and read, delivery
//! mode switches, and the signal between processes (LISTEN/NOTIFY).
//!
//! Whether a lease still runs is decided in `domain::lease`, never here:
//! rows are read as of the store's clock (`crate::clock`, bound into the
//! statement as `$now`; PostgreSQL's own `now()` decides nothing), the
//! domain decides, and each write is fenced by a compare-and-set on what it
//! decided on. The predicates on leases that remain are of two kinds:
//! - candidate filters of set-based reads (`end_leases`' ran-out sweep:
//!   `lease_id IS NOT NULL AND next_attempt_at <= $now`), which only
//!   choose, through an index, rows worth reading; the domain then decides
//!   each (`LeaseDecision`), and a row the filter let through that the
//!   domain finds still running is left alone;
//! - compare-and-sets on values the domain chose: `lease_id = $lease AND
//!   next_attempt_at = $until` (an extension, `extend_lease`), and the
//!   recording statement's `Expected` (`recording.rs`).
//!
//! The delivery mode switch (`follow_delivery`, `adopt_strays`) reads the
//! rows under a lock, and `domain::lease::released` says when each is due
//! once its lease ends with no attempt; the write is only the result.
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::partitions::id_span;
use super::PgStore;
use crate::domain::lease::{released, Lease};
use crate::domain::pull::{strays_since, Delivery, Receipt};
use crate::store::pull::LeaseDecision;
use crate::store::pull::Leased;
use crate::store::pull::Leases;
use crate::store::pull::LeasesEnded;
use crate::store::recording::AttemptRecord;
use crate::store::StoreError;
use crate::telemetry::failures::{warn_once_per_run, FailureRun};

/// The columns `Leased` reads; `n` is the notification, `e` its event.
/// The endpoint's jitter by its primary key: no join to widen every
/// statement that reads these. Its `now` is the store's clock, set by
/// `as_of`.
pub(super) const LEASED: &str = "n.id, n.endpoint_id, n.pull, n.status, n.key, \
     COALESCE(n.event_type, e.event_type) AS event_type, n.attempts, n.series_start, \
     n.schedule_ms, n.schedule_name, n.lease_id, n.leased_at, n.next_attempt_at, \
     COALESCE((SELECT j.schedule_jitter FROM endpoints j WHERE j.id = n.endpoint_id), 0) \
     AS schedule_jitter";
/// Rows read with `LEASED`, as of `now` (the store's clock, which the
/// statement that read them was given).
pub(super) fn as_of(mut rows: Vec<Leased>, now: DateTime<Utc>) -> Vec<Leased> {
    for row in &mut rows {
        row.now = now;
    }
    rows
}

impl PgStore {
    /// When the endpoint next needs a consumer: the earliest due time of
    /// its pending pull notifications, leased ones at their lease's end;
    /// never while it is disabled (its enabling wakes its consumers).
    pub async fn next_pull_due(
        &self,
        endpoint_id: Uuid,
    ) -> Result<Option<DateTime<Utc>>, StoreError> {
        Ok(sqlx::query_scalar(
            "SELECT next_attempt_at FROM notifications \
             WHERE endpoint_id = $1 AND status = 'pending' AND pull \
               AND NOT EXISTS (SELECT 1 FROM endpoints d WHERE d.id = $1 AND d.disabled) \
             ORDER BY next_attempt_at, id LIMIT 1",
        )
        .bind(endpoint_id)
        .fetch_optional(&self.pool)
        .await?
        .flatten())
    }

    /// Ends leases: reads the rows `which` selects, asks `decide` for the
    /// attempt each ends with, and records those attempts (their
    /// notifications' next state, operator events), clearing the leases,
    /// in one statement (with the per-minute counts they add, in one
    /// transaction). Nothing is locked in between: each attempt is
    /// written only if its row still has the lease it was decided on
    /// (`AttemptRecord::expected`), so a lease lost meanwhile is left alone.
    /// The ran-out selectors' `lease_id IS NOT NULL AND next_attempt_at <=
    /// $now` only picks candidates cheaply; `decide` says which ran out.
    pub async fn end_leases(
        &self,
        which: Leases<'_>,
        mut decide: LeaseDecision<'_>,
    ) -> Result<LeasesEnded, StoreError> {
        let now = self.clock.now();
        let mut conn = self.pool.acquire().await?;
        let rows = match which {
            Leases::Receipts(receipts) => {
                let ids: Vec<Uuid> = receipts.iter().map(|r| r.notification).collect();
                let (low, high) = id_span(&ids);
                let sql = format!(
                    "SELECT {LEASED} FROM notifications n LEFT JOIN events e ON e.id = n.event_id \
                     WHERE n.id = ANY($1) AND n.id BETWEEN $2 AND $3"
                );
                sqlx::query_as::<_, Leased>(sqlx::AssertSqlSafe(sql))
                    .bind(&ids)
                    .bind(low)
                    .bind(high)
                    .fetch_all(&mut *conn)
                    .await?
            }
            Leases::Expired { endpoint, limit } => {
                let sql = format!(
                    "SELECT {LEASED} FROM notifications n LEFT JOIN events e ON e.id = n.event_id \
                     WHERE n.lease_id IS NOT NULL AND n.next_attempt_at <= $3 \
                       AND ($1::uuid IS NULL OR n.endpoint_id = $1) \
                     ORDER BY n.next_attempt_at LIMIT $2"
                );
                sqlx::query_as::<_, Leased>(sqlx::AssertSqlSafe(sql))
                    .bind(endpoint)
                    .bind(limit)
                    .bind(now)
                    .fetch_all(&mut *conn)
                    .await?
            }
            Leases::ExpiredOf(ids) => {
                let (low, high) = id_span(ids);
                let sql = format!(
                    "SELECT {LEASED} FROM notifications n LEFT JOIN events e ON e.id = n.event_id \
                     WHERE n.id = ANY($1) AND n.id BETWEEN $2 AND $3 \
                       AND n.lease_id IS NOT NULL AND n.next_attempt_at <= $4"
                );
                sqlx::query_as::<_, Leased>(sqlx::AssertSqlSafe(sql))
                    .bind(ids)
                    .bind(low)
                    .bind(high)
                    .bind(now)
                    .fetch_all(&mut *conn)
                    .await?
            }
            Leases::HeldBy { endpoint, limit } => {
                let sql = format!(
                    "SELECT {LEASED} FROM notifications n LEFT JOIN events e ON e.id = n.event_id \
                     WHERE n.endpoint_id = $1 AND n.status = 'pending' AND n.pull \
                       AND n.lease_id IS NOT NULL LIMIT $2"
                );
                sqlx::query_as::<_, Leased>(sqlx::AssertSqlSafe(sql))
                    .bind(endpoint)
                    .bind(limit)
                    .fetch_all(&mut *conn)
                    .await?
            }
        };
        let rows = as_of(rows, now);
        let records: Vec<AttemptRecord> = rows.iter().filter_map(&mut decide).collect();
        let mut tx = sqlx::Connection::begin(&mut *conn).await?;
        let moved =
            super::recording::record_attempts_on(&mut tx, &records, &[], now, self.count_minutes)
                .await?
                .ids;
        tx.commit().await?;
        Ok(LeasesEnded { rows, moved })
    }

    /// Moves a lease's end from `until` (as read, and decided on: the
    /// caller found it running, `domain::lease`) to `to`; returns the end
    /// as stored. `None`: the row no longer has that lease with that end
    /// (it was ended, or extended by another request meanwhile), or the
    /// lease ran out between the caller's read and this write; the caller
    /// reads it again to say why. The lease id is fresh per lease and
    /// cleared by every transition out of it, so matching it says the row
    /// is still pending under it. `next_attempt_at > $now` fences the gap
    /// between the read and this write: a lease that has run out is never
    /// extended (docs/design.md §10), however late the request that found it
    /// running is written.
    pub async fn extend_lease(
        &self,
        receipt: &Receipt,
        until: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Option<DateTime<Utc>>, StoreError> {
        Ok(sqlx::query_scalar(
            "UPDATE notifications SET next_attempt_at = $4, updated_at = $5 \
             WHERE id = $1 AND lease_id = $2 AND next_attempt_at = $3 \
               AND next_attempt_at > $5 \
             RETURNING next_attempt_at",
        )
        .bind(receipt.notification)
        .bind(receipt.lease)
        .bind(until)
        .bind(to)
        .bind(self.clock.now())
        .fetch_optional(&self.pool)
        .await?)
    }

    /// The lease state of one notification, unlocked: why a receipt was
    /// refused.
    pub async fn lease_of(&self, id: Uuid) -> Result<Option<Leased>, StoreError> {
        let sql = format!(
            "SELECT {LEASED} FROM notifications n LEFT JOIN events e ON e.id = n.event_id \
             WHERE n.id = $1"
        );
        let now = self.clock.now();
        let row = sqlx::query_as::<_, Leased>(sqlx::AssertSqlSafe(sql))
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.map(|row| Leased { now, ..row }))
    }

    /// Makes every pending notification of the endpoint follow its mode:
    /// to pull, they leave the due index (the caller removes them); to
    /// push, leases end without an attempt (their receipts stop working)
    /// and they are due as `domain::lease::released` says. Returns the ids
    /// that moved, with their due times.
    ///
    /// The rows are read under a lock, decided on, and written in one
    /// transaction: a switch is rare, and the lock keeps what was read.
    /// `pull <> $2` picks the rows not yet in the mode; `status = 'pending'`
    /// is `Status::Pending`, the only status a mode applies to.
    pub async fn follow_delivery(
        &self,
        endpoint_id: Uuid,
        delivery: Delivery,
    ) -> Result<Vec<(Uuid, DateTime<Utc>)>, StoreError> {
        let pull = delivery == Delivery::Pull;
        let now = self.clock.now();
        let mut tx = self.pool.begin().await?;
        let rows: Vec<LeaseRow> = sqlx::query_as(
            "SELECT id, lease_id, leased_at, next_attempt_at FROM notifications \
             WHERE endpoint_id = $1 AND status = 'pending' AND pull <> $2 \
             ORDER BY id FOR UPDATE",
        )
        .bind(endpoint_id)
        .bind(pull)
        .fetch_all(&mut *tx)
        .await?;
        let moved = switch_rows(&mut tx, &rows, pull, now).await?;
        tx.commit().await?;
        Ok(moved)
    }

    /// Pending notifications whose `pull` differs from their endpoint's
    /// mode (written by a process whose endpoint cache had not yet seen a
    /// switch), moved to it; at most `limit`. Returns the ids now push,
    /// with their due times, for the due index.
    ///
    /// Strays come from a switch a moment ago, so only endpoints changed in
    /// the last day are looked at (`endpoints_changed`), one probe of
    /// `notifications_pull_due` each: a scan of pending pull rows would read
    /// every pull backlog in full each time to find none. The rows are
    /// read and held, then released as `follow_delivery` does. The filter
    /// (`e.delivery = 'push'` beside `n.pull`) selects rows whose mode is
    /// not their endpoint's: the rule that a notification follows its
    /// endpoint's mode, rendered as a join for the indexes.
    pub async fn adopt_strays(&self, limit: i64) -> Result<Vec<(Uuid, DateTime<Utc>)>, StoreError> {
        let now = self.clock.now();
        let mut tx = self.pool.begin().await?;
        let rows: Vec<LeaseRow> = sqlx::query_as(
            "SELECT n.id, n.lease_id, n.leased_at, n.next_attempt_at FROM notifications n \
             WHERE n.id IN ( \
                 SELECT s.id FROM endpoints e CROSS JOIN LATERAL ( \
                     SELECT id FROM notifications \
                     WHERE endpoint_id = e.id AND status = 'pending' AND pull LIMIT $1 \
                 ) s \
                 WHERE e.updated_at > $2 \
                   AND e.delivery = 'push' AND e.deleted_at IS NULL LIMIT $1 \
             ) AND n.status = 'pending' AND n.pull \
             FOR UPDATE OF n SKIP LOCKED",
        )
        .bind(limit)
        .bind(strays_since(now))
        .fetch_all(&mut *tx)
        .await?;
        let moved = switch_rows(&mut tx, &rows, false, now).await?;
        tx.commit().await?;
        Ok(moved)
    }

    /// Cancels pending notifications, push or pull, of endpoints deleted
    /// in the last day: a process whose endpoint cache had not yet seen
    /// the delete created them after the delete cancelled the rest.
    /// (The dispatcher cancels a push one when it claims it too, but one
    /// due next week would read `pending` until then; nothing claims pull
    /// ones.) The endpoints' pending rows come from
    /// `notifications_endpoint_pending_due`. At most `limit`; returns
    /// those it cancelled.
    pub async fn cancel_orphans(&self, limit: i64) -> Result<Vec<Uuid>, StoreError> {
        let now = self.clock.now();
        let ids: Vec<Uuid> = sqlx::query_scalar(
            "SELECT o.id FROM endpoints e CROSS JOIN LATERAL ( \
                 SELECT id FROM notifications \
                 WHERE endpoint_id = e.id AND status = 'pending' LIMIT $1 \
             ) o \
             WHERE e.deleted_at > $2 LIMIT $1",
        )
        .bind(limit)
        .bind(strays_since(now))
        .fetch_all(&self.pool)
        .await?;
        if ids.is_empty() {
            return Ok(ids);
        }
        let pending = crate::store::cancel::Pending::Ids(&ids);
        super::cancel::cancel_pending_now(&self.pool, pending, now).await
    }

    /// Makes claimed push rows of pull endpoints pull rows (the dispatcher
    /// found them in the due index after a switch), and signals their
    /// endpoints' consumers. The dispatcher decided it on the endpoint it
    /// loaded (`DeliveryEndpoint::pull`); `e.delivery = 'pull' AND
    /// n.status = 'pending' AND NOT n.pull` is the compare-and-set on what
    /// it decided on (the endpoint still pull, the row still a pending push
    /// one), so a switch back meanwhile, or a cancel, wins.
    pub async fn hand_to_pull(&self, ids: &[Uuid]) -> Result<(), StoreError> {
        let (low, high) = id_span(ids);
        sqlx::query(
            "WITH moved AS ( \
                 UPDATE notifications n SET pull = true, updated_at = $4 FROM endpoints e \
                 WHERE n.id = ANY($1) AND n.id BETWEEN $2 AND $3 \
                   AND e.id = n.endpoint_id AND e.delivery = 'pull' \
                   AND n.status = 'pending' AND NOT n.pull \
                 RETURNING n.endpoint_id \
             ) \
             SELECT pg_notify('hookd_pull', endpoint_id::text) \
             FROM (SELECT DISTINCT endpoint_id FROM moved) AS m",
        )
        .bind(ids)
        .bind(low)
        .bind(high)
        .bind(self.clock.now())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Stores the digest of a new consumer token for the endpoint,
    /// replacing the one before. `false`: no such live endpoint.
    pub async fn set_consumer_token(
        &self,
        endpoint_id: Uuid,
        digest: &[u8; 32],
    ) -> Result<bool, StoreError> {
        let stored = sqlx::query(
            "INSERT INTO consumer_tokens (endpoint_id, digest, created_at) \
             SELECT id, $2, $3 FROM endpoints WHERE id = $1 AND deleted_at IS NULL \
             ON CONFLICT (endpoint_id) DO UPDATE SET digest = EXCLUDED.digest, \
                 created_at = EXCLUDED.created_at",
        )
        .bind(endpoint_id)
        .bind(&digest[..])
        .bind(self.clock.now())
        .execute(&self.pool)
        .await?;
        Ok(stored.rows_affected() == 1)
    }

    /// `NOTIFY hookd_pull` with each endpoint: every process listening
    /// wakes its consumers waiting on them.
    pub async fn signal_pull(&self, endpoints: &[Uuid]) -> Result<(), StoreError> {
        if endpoints.is_empty() {
            return Ok(());
        }
        let names: Vec<String> = endpoints.iter().map(Uuid::to_string).collect();
        sqlx::query("SELECT pg_notify('hookd_pull', e) FROM UNNEST($1::text[]) AS e")
            .bind(&names)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// `LISTEN hookd_pull` on a connection of its own, until `shutdown`.
    /// After the connection is lost, every waiter is woken (`None`): a
    /// signal sent meanwhile is gone, and a waiter that looks again loses
    /// nothing.
    pub async fn listen_pull(
        &self,
        woken: &(dyn Fn(Option<Uuid>) + Send + Sync),
        shutdown: &CancellationToken,
    ) {
        let mut connecting = FailureRun::default();
        loop {
            let mut listener = match sqlx::postgres::PgListener::connect_with(&self.pool).await {
                Ok(listener) => listener,
                Err(error) => {
                    warn_once_per_run!(connecting, %error, "cannot listen for pull signals; retrying every second");
                    tokio::select! {
                        _ = shutdown.cancelled() => return,
                        _ = tokio::time::sleep(Duration::from_secs(1)) => continue,
                    }
                }
            };
            if let Err(error) = listener.listen(PULL_CHANNEL).await {
                warn_once_per_run!(connecting, %error, "cannot listen for pull signals; retrying every second");
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    _ = tokio::time::sleep(Duration::from_secs(1)) => continue,
                }
            }
            if connecting.succeeded() {
                tracing::info!("listens for pull signals again");
            }
            woken(None);
            loop {
                let next = tokio::select! {
                    _ = shutdown.cancelled() => return,
                    next = listener.try_recv() => next,
                };
                match next {
                    Ok(Some(signal)) => woken(Uuid::parse_str(signal.payload()).ok()),
                    // The connection was lost; `try_recv` reconnects on the next call.
                    Ok(None) => woken(None),
                    Err(error) => {
                        // One run with the reconnection's failures: an
                        // outage warns once, and says when it listens again.
                        warn_once_per_run!(connecting, %error, "pull signals interrupted; listening again");
                        break;
                    }
                }
            }
        }
    }
}
/// A pending row's lease, as `follow_delivery` reads it: id, lease id,
/// leased at, next attempt at.
type LeaseRow = (
    Uuid,
    Option<Uuid>,
    Option<DateTime<Utc>>,
    Option<DateTime<Utc>>,
);
/// Writes rows the caller holds into mode `pull`, each lease ended with no
/// attempt and the row due as `domain::lease::released` decides at `now`.
/// Returns the ids with their due times.
async fn switch_rows(
    conn: &mut sqlx::PgConnection,
    rows: &[LeaseRow],
    pull: bool,
    now: DateTime<Utc>,
) -> Result<Vec<(Uuid, DateTime<Utc>)>, StoreError> {
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let (ids, due_ats): (Vec<Uuid>, Vec<Option<DateTime<Utc>>>) = rows
        .iter()
        .map(|&(id, lease_id, leased_at, next_attempt_at)| {
            let lease = Lease::stored(lease_id, leased_at, next_attempt_at);
            (id, released(lease, next_attempt_at, now))
        })
        .unzip();
    Ok(sqlx::query_as(
        "UPDATE notifications n SET pull = $3, next_attempt_at = r.due_at, \
             lease_id = NULL, leased_at = NULL, updated_at = $4 \
         FROM UNNEST($1::uuid[], $2::timestamptz[]) AS r(id, due_at) \
         WHERE n.id = r.id RETURNING n.id, n.next_attempt_at",
    )
    .bind(&ids)
    .bind(&due_ats)
    .bind(pull)
    .bind(now)
    .fetch_all(conn)
    .await?)
}
/// The channel of `signal_pull`.
const PULL_CHANNEL: &str = "hookd_pull";
