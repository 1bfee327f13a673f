//! Taking pull notifications in PostgreSQL: rows leased under `SKIP LOCKED`,
//! and the end of those never pulled.
//!
//! What a pull makes of each row (take it, leave it, record the lease that
//! ran out) and when one was never pulled are decided in `domain::lease`
//! (`at_pull`, `not_pulled`, through the caller's decision). The SQL that
//! remains is persistence:
//! - `next_attempt_at <= $now` (and `<= $now - max_wait`, the store's
//!   clock bound in: `crate::clock`) selects
//!   candidates through `notifications_pull_due`: rows free and due, and
//!   rows whose lease ran out (its end is their `next_attempt_at`). The
//!   domain decides each; one it leaves is skipped (`seen`).
//! - `lease_rows`' `status = 'pending' AND lease_id IS NULL` writes a lease
//!   only over a row still as the domain found it: free (or freed by the
//!   attempt just recorded for its ran-out lease) and pending; the caller
//!   holds the rows, so it always holds, and costs nothing.
use std::time::Duration;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::ordering::released;
use super::pull::{as_of, LEASED};
use super::recording::record_attempts_on;
use super::PgStore;
use crate::domain::lease::{lease_end, window_start};
use crate::store::pull::LeaseDecision;
use crate::store::pull::Leased;
use crate::store::pull::Taken;
use crate::store::pull_due::{take_rounds, PickDecision, TakeSteps};
use crate::store::recording::AttemptRecord;
use crate::store::StoreError;

impl PgStore {
    /// Takes up to `max` due notifications of a pull endpoint, earliest due
    /// first, leasing each for `lease`; none while the endpoint is disabled
    /// (it holds them, also from a pull that was waiting as it was
    /// disabled). Rows whose lease ran out unrecorded
    /// are read too (they are at the lease's end in the endpoint's due
    /// order); `decide` says what to record of each and whether to take it
    /// (the loop: `store::pull_due::take_rounds`).
    pub async fn take(
        &self,
        endpoint_id: Uuid,
        max: i64,
        lease: Duration,
        decide: PickDecision<'_>,
    ) -> Result<Vec<Taken>, StoreError> {
        let now = self.clock.now();
        let mut steps = Steps {
            tx: self.pool.begin().await?,
            endpoint_id,
            count_minutes: self.count_minutes,
        };
        let taken = take_rounds(&mut steps, max, now, lease_end(now, lease), decide).await?;
        steps.tx.commit().await?;
        Ok(taken)
    }

    /// Ends pending notifications of live, enabled pull endpoints that have
    /// been due for `max_wait` or longer (a disabled one holds them, and
    /// its enabling moves their due times on by the time it was disabled:
    /// `endpoints::release_held`), at most `limit`: reads them, holding
    /// them, asks `decide` for the attempt each ends with, and records those
    /// attempts, in one transaction. Returns the ids that ended.
    ///
    /// One probe of `notifications_pull_due` per pull endpoint, for its
    /// oldest due rows: no walk of the pending rows.
    pub async fn end_unpulled(
        &self,
        max_wait: Duration,
        limit: i64,
        mut decide: LeaseDecision<'_>,
    ) -> Result<Vec<Uuid>, StoreError> {
        let now = self.clock.now();
        let mut tx = self.pool.begin().await?;
        let sql = format!(
            "SELECT {LEASED} FROM notifications n LEFT JOIN events e ON e.id = n.event_id \
             WHERE n.id IN ( \
                 SELECT o.id FROM endpoints ep CROSS JOIN LATERAL ( \
                     SELECT w.id FROM notifications w \
                     WHERE w.endpoint_id = ep.id AND w.status = 'pending' AND w.pull \
                       AND w.next_attempt_at <= $1 AND {released} \
                     ORDER BY w.next_attempt_at, w.id LIMIT $2 \
                 ) o \
                 WHERE ep.delivery = 'pull' AND ep.deleted_at IS NULL AND NOT ep.disabled LIMIT $2 \
             ) AND n.status = 'pending' AND n.pull \
             FOR UPDATE OF n SKIP LOCKED",
            released = released!("w")
        );
        let rows = sqlx::query_as::<_, Leased>(sqlx::AssertSqlSafe(sql))
            .bind(window_start(now, max_wait))
            .bind(limit)
            .fetch_all(&mut *tx)
            .await?;
        let rows = as_of(rows, now);
        let records: Vec<AttemptRecord> = rows.iter().filter_map(&mut decide).collect();
        let moved = record_attempts_on(&mut tx, &records, &[], now, self.count_minutes).await?;
        tx.commit().await?;
        Ok(moved.ids)
    }
}

/// A take's steps in PostgreSQL, in one transaction: the rows read are
/// held (`FOR UPDATE ... SKIP LOCKED`) until it ends.
struct Steps {
    tx: sqlx::Transaction<'static, sqlx::Postgres>,
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
            "SELECT {LEASED} FROM notifications n LEFT JOIN events e ON e.id = n.event_id \
             WHERE n.endpoint_id = $1 AND n.status = 'pending' AND n.pull \
               AND n.next_attempt_at <= $4 AND NOT (n.id = ANY($3)) AND {released} \
               AND NOT EXISTS (SELECT 1 FROM endpoints d WHERE d.id = $1 AND d.disabled) \
             ORDER BY n.next_attempt_at, n.id LIMIT $2 FOR UPDATE OF n SKIP LOCKED",
            released = released!("n")
        );
        let rows = sqlx::query_as::<_, Leased>(sqlx::AssertSqlSafe(sql))
            .bind(self.endpoint_id)
            .bind(want)
            .bind(seen)
            .bind(now)
            .fetch_all(&mut *self.tx)
            .await?;
        Ok(as_of(rows, now))
    }

    async fn record(
        &mut self,
        records: &[AttemptRecord],
        now: DateTime<Utc>,
    ) -> Result<Vec<Uuid>, StoreError> {
        Ok(
            record_attempts_on(&mut self.tx, records, &[], now, self.count_minutes)
                .await?
                .ids,
        )
    }

    async fn lease(
        &mut self,
        rows: &[(Uuid, DateTime<Utc>)],
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<Vec<Taken>, StoreError> {
        let (ids, due_ats): (Vec<Uuid>, Vec<DateTime<Utc>>) = rows.iter().copied().unzip();
        lease_rows(&mut self.tx, &ids, &due_ats, now, until).await
    }
}

/// Leases these free rows (the caller holds them) from `now` until `until`
/// (`domain::lease::lease_end`), each due since its `due_ats`.
async fn lease_rows(
    conn: &mut sqlx::PgConnection,
    ids: &[Uuid],
    due_ats: &[DateTime<Utc>],
    now: DateTime<Utc>,
    until: DateTime<Utc>,
) -> Result<Vec<Taken>, StoreError> {
    // Lease ids are made in Rust, like every id hookd makes: a backend only
    // stores them.
    let leases: Vec<Uuid> = ids
        .iter()
        .map(|_| crate::domain::id::new_lease_id())
        .collect();
    Ok(sqlx::query_as::<_, Taken>(
        "WITH picked AS ( \
             SELECT * FROM UNNEST($1::uuid[], $2::timestamptz[], $4::uuid[]) AS p(id, due_at, lease) \
         ), taken AS ( \
             UPDATE notifications n SET lease_id = p.lease, leased_at = $3, \
                 next_attempt_at = $5, updated_at = $3 \
             FROM picked p \
             WHERE n.id = p.id AND (n.status = 'pending') IS TRUE AND n.lease_id IS NULL \
             RETURNING n.id, n.endpoint_id, n.key, n.order_key, n.sequence, n.event_type, \
                 n.event_id, n.content_type, \
                 n.body, n.headers, n.created_at, n.attempts, n.lease_id, p.due_at, \
                 n.next_attempt_at AS lease_until \
         ) \
         SELECT t.id, t.endpoint_id, t.key, t.order_key, t.sequence, \
             COALESCE(t.event_type, e.event_type) AS event_type, \
             t.event_id, t.content_type, \
             CASE WHEN t.event_id IS NULL THEN t.body ELSE e.body END AS body, \
             t.headers, t.created_at, t.attempts, t.lease_id, t.due_at, t.lease_until \
         FROM taken t LEFT JOIN events e ON e.id = t.event_id",
    )
    .bind(ids)
    .bind(due_ats)
    .bind(now)
    .bind(&leases)
    .bind(until)
    .fetch_all(conn)
    .await?)
}
