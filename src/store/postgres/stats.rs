//! The per-minute counts in PostgreSQL (`store::stats`): one upsert
//! statement per recorded batch, adding the batch's sums (made in Rust,
//! `domain::minute_stats`) to `minute_stats`, `minute_totals`,
//! `hour_failing` and `owner_minute_stats`; the
//! overview's reads; the pending sample and retention.
//!
//! The upsert takes its rows in the order the sums give them (endpoint,
//! then minute; minute for the totals), so two processes adding to the
//! same rows lock them in the same order and wait rather than deadlock.
//! Each batch adds to one of `TOTAL_SHARDS` rows of its minute's totals,
//! drawn at random: processes recording at once seldom wait on one row.

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use sqlx::Row;
use uuid::Uuid;

use super::PgStore;
use crate::domain::lateness::BUCKETS;
use crate::domain::minute_stats::{ranked_from_hours, MinuteSums};
use crate::store::seams::StatsStore;
use crate::store::stats::{
    adding_columns, count_columns, counts_from, summed_columns, FailingCount, MinuteRow,
    StatsScope, OWNER_SHARDS, TOTAL_SHARDS,
};
use crate::store::StoreError;

/// The counts of `from` (an UNNEST aliased `k` with the four counts and
/// `max` as columns, and `i` its ordinality) and the buckets from the flat
/// array `$lateness`, `BUCKETS` per row.
fn picked(lateness: &str) -> String {
    let mut list = String::from("k.attempts, k.failed_attempts, k.delivered, k.failed, k.max");
    for j in 1..=BUCKETS {
        list.push_str(&format!(", {lateness}[(k.i::int - 1) * {BUCKETS} + {j}]"));
    }
    list
}

/// `picked`, summed over a group (the largest lateness is the largest).
fn summed_picked(lateness: &str) -> String {
    let mut list = String::from(
        "sum(k.attempts), sum(k.failed_attempts), sum(k.delivered), sum(k.failed), max(k.max)",
    );
    for j in 1..=BUCKETS {
        list.push_str(&format!(
            ", sum({lateness}[(k.i::int - 1) * {BUCKETS} + {j}])"
        ));
    }
    list
}

/// `add_minute_sums`' statement: the totals in the outer insert, the
/// endpoints' rows, the failing hours and then the owners' rows in the
/// CTEs (run after it, in every process alike). The owners' rows are the
/// endpoints' sums grouped by the owner each endpoint has as this
/// statement reads it (a PATCH committed before it counts, one committing
/// meanwhile does not): each attempt is added to exactly one owner's
/// counts, or to none.
static ADD_SUMS: LazyLock<String> = LazyLock::new(|| {
    let columns = count_columns().join(", ");
    let adding = adding_columns("GREATEST");
    format!(
        "WITH per_endpoint AS ( \
             INSERT INTO minute_stats AS s (endpoint_id, minute, {columns}) \
             SELECT k.endpoint_id, k.minute, {endpoint_counts} \
             FROM UNNEST($1::uuid[], $2::timestamptz[], $3::int[], $4::int[], $5::int[], \
                 $6::int[], $7::bigint[]) WITH ORDINALITY \
                 AS k(endpoint_id, minute, attempts, failed_attempts, delivered, failed, max, i) \
             ORDER BY k.i \
             ON CONFLICT (endpoint_id, minute) DO UPDATE SET {adding} \
         ), per_hour AS ( \
             INSERT INTO hour_failing AS h (hour, endpoint_id, failed_attempts) \
             SELECT k.hour, k.endpoint_id, k.failed_attempts \
             FROM UNNEST($17::timestamptz[], $18::uuid[], $19::int[]) WITH ORDINALITY \
                 AS k(hour, endpoint_id, failed_attempts, i) \
             ORDER BY k.i \
             ON CONFLICT (hour, endpoint_id) \
             DO UPDATE SET failed_attempts = h.failed_attempts + EXCLUDED.failed_attempts \
         ), per_owner AS ( \
             INSERT INTO owner_minute_stats AS s (owner, minute, shard, {columns}) \
             SELECT e.owner, k.minute, $20::smallint, {owner_counts} \
             FROM UNNEST($1::uuid[], $2::timestamptz[], $3::int[], $4::int[], $5::int[], \
                 $6::int[], $7::bigint[]) WITH ORDINALITY \
                 AS k(endpoint_id, minute, attempts, failed_attempts, delivered, failed, max, i) \
             JOIN endpoints e ON e.id = k.endpoint_id \
             WHERE e.owner IS NOT NULL AND NOT e.managed \
             GROUP BY e.owner, k.minute \
             ORDER BY e.owner, k.minute \
             ON CONFLICT (owner, minute, shard) DO UPDATE SET {adding} \
         ) \
         INSERT INTO minute_totals AS s (minute, shard, {columns}) \
         SELECT k.minute, $9::smallint, {total_counts} \
         FROM UNNEST($10::timestamptz[], $11::int[], $12::int[], $13::int[], $14::int[], \
             $15::bigint[]) WITH ORDINALITY \
             AS k(minute, attempts, failed_attempts, delivered, failed, max, i) \
         ORDER BY k.i \
         ON CONFLICT (minute, shard) DO UPDATE SET {adding}",
        endpoint_counts = picked("($8::int[])"),
        total_counts = picked("($16::int[])"),
        owner_counts = summed_picked("($8::int[])"),
    )
});

/// Column-wise binds of rows of counts: the four counts, the largest
/// lateness, and every bucket in one flat array.
#[derive(Default)]
struct CountBinds {
    attempts: Vec<i32>,
    failed_attempts: Vec<i32>,
    delivered: Vec<i32>,
    failed: Vec<i32>,
    max: Vec<i64>,
    lateness: Vec<i32>,
}

impl CountBinds {
    fn push(&mut self, counts: &crate::domain::minute_stats::Counts) {
        let narrow = |v: i64| v.clamp(0, i64::from(i32::MAX)) as i32;
        self.attempts.push(narrow(counts.attempts));
        self.failed_attempts.push(narrow(counts.failed_attempts));
        self.delivered.push(narrow(counts.delivered));
        self.failed.push(narrow(counts.failed));
        self.max.push(counts.lateness_max_ms);
        self.lateness
            .extend(counts.lateness.iter().map(|&v| narrow(v)));
    }
}

/// Adds a batch's sums on the caller's connection, inside the transaction
/// that writes what they count.
pub(super) async fn add_minute_sums(
    conn: &mut sqlx::PgConnection,
    sums: &MinuteSums,
) -> Result<(), StoreError> {
    if sums.is_empty() {
        return Ok(());
    }
    let mut ids = Vec::with_capacity(sums.endpoints.len());
    let mut minutes = Vec::with_capacity(sums.endpoints.len());
    let mut per_endpoint = CountBinds::default();
    for (id, minute, counts) in &sums.endpoints {
        ids.push(*id);
        minutes.push(*minute);
        per_endpoint.push(counts);
    }
    let mut total_minutes = Vec::with_capacity(sums.totals.len());
    let mut totals = CountBinds::default();
    for (minute, counts) in &sums.totals {
        total_minutes.push(*minute);
        totals.push(counts);
    }
    let shard = (rand::random::<u16>() % TOTAL_SHARDS as u16) as i16;
    sqlx::query(ADD_SUMS.as_str())
        .bind(&ids)
        .bind(&minutes)
        .bind(&per_endpoint.attempts)
        .bind(&per_endpoint.failed_attempts)
        .bind(&per_endpoint.delivered)
        .bind(&per_endpoint.failed)
        .bind(&per_endpoint.max)
        .bind(&per_endpoint.lateness)
        .bind(shard)
        .bind(&total_minutes)
        .bind(&totals.attempts)
        .bind(&totals.failed_attempts)
        .bind(&totals.delivered)
        .bind(&totals.failed)
        .bind(&totals.max)
        .bind(&totals.lateness)
        .bind(sums.failing_hours.iter().map(|h| h.0).collect::<Vec<_>>())
        .bind(sums.failing_hours.iter().map(|h| h.1).collect::<Vec<_>>())
        .bind(sums.failing_hours.iter().map(|h| h.2).collect::<Vec<_>>())
        .bind(shard % OWNER_SHARDS)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// Where `scope`'s rows of `minute_stats` (aliased `s`) are, with its
/// values bound from `$first` on; `None`: every endpoint.
fn scope_clause(scope: &StatsScope, first: usize) -> Option<String> {
    match (&scope.endpoint, &scope.owner) {
        (None, None) => None,
        (Some(_), None) => Some(format!("s.endpoint_id = ${first}")),
        (None, Some(_)) => Some(format!(
            "s.endpoint_id IN (SELECT id FROM endpoints \
             WHERE owner = ${first} AND deleted_at IS NULL AND NOT managed)"
        )),
        (Some(_), Some(_)) => Some(format!(
            "s.endpoint_id = ${first} AND EXISTS (SELECT 1 FROM endpoints \
             WHERE id = ${first} AND owner = ${} AND deleted_at IS NULL AND NOT managed)",
            first + 1
        )),
    }
}

fn bind_scope<'q>(
    mut query: sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>,
    scope: &'q StatsScope,
) -> sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments> {
    if let Some(id) = scope.endpoint {
        query = query.bind(id);
    }
    if let Some(owner) = &scope.owner {
        query = query.bind(owner.as_str());
    }
    query
}

fn minute_row(row: &sqlx::postgres::PgRow) -> Result<MinuteRow, sqlx::Error> {
    let minute: DateTime<Utc> = row.try_get(0)?;
    let values = (1..=count_columns().len())
        .map(|i| row.try_get::<Option<i64>, _>(i))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((minute, counts_from(&values)))
}

#[async_trait::async_trait]
impl StatsStore for PgStore {
    async fn minute_counts(
        &self,
        scope: &StatsScope,
        since: DateTime<Utc>,
    ) -> Result<Vec<MinuteRow>, StoreError> {
        let sums = summed_columns();
        // The whole deployment from its totals, an owner's from its own
        // sums: a few rows per minute however many endpoints there are.
        let sql = match scope_clause(scope, 2) {
            None => format!(
                "SELECT minute, {sums} FROM minute_totals WHERE minute >= $1 GROUP BY minute"
            ),
            Some(_) if scope.endpoint.is_none() => format!(
                "SELECT minute, {sums} FROM owner_minute_stats \
                 WHERE minute >= $1 AND owner = $2 GROUP BY minute"
            ),
            Some(clause) => format!(
                "SELECT s.minute, {sums} FROM minute_stats s WHERE s.minute >= $1 AND {clause} \
                 GROUP BY s.minute"
            ),
        };
        let query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(since);
        let rows = bind_scope(query, scope).fetch_all(&self.pool).await?;
        Ok(rows.iter().map(minute_row).collect::<Result<_, _>>()?)
    }

    async fn pending_samples(
        &self,
        since: DateTime<Utc>,
    ) -> Result<Vec<(DateTime<Utc>, i64)>, StoreError> {
        Ok(
            sqlx::query_as("SELECT minute, pending FROM minute_backlog WHERE minute >= $1")
                .bind(since)
                .fetch_all(&self.pool)
                .await?,
        )
    }

    async fn most_failing(
        &self,
        scope: &StatsScope,
        since: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<FailingCount>, StoreError> {
        // Ranked from the failed attempts per hour for the window's whole
        // hours and per minute (the rows with a failure only:
        // `minute_stats_failing`) for the minutes before the first of
        // them, then the attempts of the few ranked, by their keys.
        // Managed endpoints (the operator's) are never ranked: their URL is
        // configuration, often with a token in it, and the API never shows
        // them.
        let clause = scope_clause(scope, 4).map_or(String::new(), |c| format!("AND {c}"));
        let hourly = clause.replace("s.endpoint_id", "h.endpoint_id");
        let sql = format!(
            "WITH failing AS ( \
                 SELECT h.endpoint_id, h.failed_attempts FROM hour_failing h \
                 WHERE h.hour >= $3 {hourly} \
                 UNION ALL \
                 SELECT s.endpoint_id, s.failed_attempts FROM minute_stats s \
                 WHERE s.minute >= $1 AND s.minute < $3 AND s.failed_attempts > 0 {clause} \
             ), top AS ( \
                 SELECT f.endpoint_id, sum(f.failed_attempts) AS failed_attempts \
                 FROM failing f \
                 WHERE f.endpoint_id NOT IN (SELECT id FROM endpoints WHERE managed) \
                 GROUP BY f.endpoint_id ORDER BY 2 DESC, 1 LIMIT $2 \
             ) \
             SELECT t.endpoint_id, t.failed_attempts, \
                 (SELECT sum(a.attempts) FROM minute_stats a \
                  WHERE a.endpoint_id = t.endpoint_id AND a.minute >= $1) AS attempts, \
                 e.url \
             FROM top t LEFT JOIN endpoints e ON e.id = t.endpoint_id \
             ORDER BY t.failed_attempts DESC, t.endpoint_id"
        );
        let query = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(since)
            .bind(limit)
            .bind(ranked_from_hours(since));
        let rows = bind_scope(query, scope).fetch_all(&self.pool).await?;
        let failing = rows
            .iter()
            .map(|row| {
                Ok(FailingCount {
                    endpoint_id: row.try_get::<Uuid, _>(0)?,
                    failed_attempts: row.try_get(1)?,
                    attempts: row.try_get::<Option<i64>, _>(2)?.unwrap_or(0),
                    url: row.try_get(3)?,
                })
            })
            .collect::<Result<_, sqlx::Error>>()?;
        Ok(failing)
    }

    async fn sample_pending(&self, minute: DateTime<Utc>) -> Result<(), StoreError> {
        // The count runs only if no process sampled the minute yet (the
        // NOT EXISTS is an init plan, evaluated first).
        sqlx::query(
            "INSERT INTO minute_backlog (minute, pending) \
             SELECT $1, (SELECT count(*) FROM notifications WHERE status = 'pending') \
             WHERE NOT EXISTS (SELECT 1 FROM minute_backlog WHERE minute = $1) \
             ON CONFLICT (minute) DO NOTHING",
        )
        .bind(minute)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn purge_minutes(&self, before: DateTime<Utc>, limit: i64) -> Result<u64, StoreError> {
        let mut deleted = 0;
        for sql in [
            "DELETE FROM minute_stats WHERE ctid = ANY(ARRAY( \
                 SELECT ctid FROM minute_stats WHERE minute < $1 LIMIT $2))",
            "DELETE FROM minute_totals WHERE ctid = ANY(ARRAY( \
                 SELECT ctid FROM minute_totals WHERE minute < $1 LIMIT $2))",
            "DELETE FROM minute_backlog WHERE ctid = ANY(ARRAY( \
                 SELECT ctid FROM minute_backlog WHERE minute < $1 LIMIT $2))",
            "DELETE FROM hour_failing WHERE ctid = ANY(ARRAY( \
                 SELECT ctid FROM hour_failing WHERE hour < $1 LIMIT $2))",
            "DELETE FROM owner_minute_stats WHERE ctid = ANY(ARRAY( \
                 SELECT ctid FROM owner_minute_stats WHERE minute < $1 LIMIT $2))",
        ] {
            deleted += sqlx::query(sql)
                .bind(before)
                .bind(limit)
                .execute(&self.pool)
                .await?
                .rows_affected();
        }
        Ok(deleted)
    }
}
