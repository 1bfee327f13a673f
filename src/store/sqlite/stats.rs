//! The per-minute counts in the embedded file (`store::stats`), as
//! PostgreSQL keeps them (`postgres/stats.rs`): the batch's sums added
//! in the writer's transaction that records what they count, a statement
//! per table, the overview's reads on the readers, the pending sample and
//! retention.

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use sqlx::sqlite::SqliteRow;
use sqlx::{Row, SqliteConnection};

use super::columns::{json_text, micros, time_of};
use super::{store_error, SqliteStore};
use crate::domain::minute_stats::{ranked_from_hours, Counts, MinuteSums};
use crate::store::seams::StatsStore;
use crate::store::stats::{
    adding_columns, count_columns, counts_from, summed_columns, values, FailingCount, MinuteRow,
    StatsScope, OWNER_SHARDS, TOTAL_SHARDS,
};
use crate::store::StoreError;

/// `count_columns`' values in a record of a batch's sums (`r`), from
/// the record's element `first` on.
fn counts_at(first: usize) -> String {
    (first..first + count_columns().len())
        .map(|i| format!("r.value ->> {i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The upserts of a batch's sums, one statement per table, each over a
/// JSON array of records (as `columns::records!` reads them) bound in
/// turn, `minute_sums_json`'s four: per endpoint and minute, per owner
/// (by the owner the endpoint has as the statement reads it; none for an
/// endpoint without one or the operator's), failed attempts per hour, and
/// totals per minute. Four statements whatever the batch's endpoints and
/// minutes: each statement crosses to the writer's worker thread and back
/// (`recording.rs` sends them in one go with the rest of a recording).
pub(super) static ADD_MINUTE_SUMS: LazyLock<String> = LazyLock::new(|| {
    let records = "WITH r AS MATERIALIZED (SELECT jsonb(value) AS value FROM json_each(?))";
    let columns = count_columns().join(", ");
    let adding = adding_columns("max");
    // `WHERE true`: an upsert's SELECT needs one (SQLite's parser).
    format!(
        "{records} INSERT INTO minute_stats AS s (endpoint_id, minute, {columns}) \
         SELECT unhex(r.value ->> 0), r.value ->> 1, {endpoint} FROM r WHERE true \
         ON CONFLICT (endpoint_id, minute) DO UPDATE SET {adding}; \
         {records} INSERT INTO owner_minute_stats AS s (owner, minute, shard, {columns}) \
         SELECT e.owner, r.value ->> 1, r.value ->> 2, {owner} \
         FROM r JOIN endpoints e ON e.id = unhex(r.value ->> 0) \
         WHERE e.owner IS NOT NULL AND e.managed = 0 \
         ON CONFLICT (owner, minute, shard) DO UPDATE SET {adding}; \
         {records} INSERT INTO hour_failing AS h (hour, endpoint_id, failed_attempts) \
         SELECT r.value ->> 0, unhex(r.value ->> 1), r.value ->> 2 FROM r WHERE true \
         ON CONFLICT (hour, endpoint_id) \
         DO UPDATE SET failed_attempts = h.failed_attempts + excluded.failed_attempts; \
         {records} INSERT INTO minute_totals AS s (minute, shard, {columns}) \
         SELECT r.value ->> 0, r.value ->> 1, {totals} FROM r WHERE true \
         ON CONFLICT (minute, shard) DO UPDATE SET {adding}",
        endpoint = counts_at(2),
        owner = counts_at(3),
        totals = counts_at(2),
    )
});

/// `ADD_MINUTE_SUMS`' four arrays of records for `sums` (each `[]` for
/// none).
pub(super) fn minute_sums_json(sums: &MinuteSums) -> [String; 4] {
    // One process writes the file, so no batch waits on a shard; one is
    // drawn all the same, so that the rows are PostgreSQL's.
    let shard = i64::from(rand::random::<u16>() % TOTAL_SHARDS as u16);
    let counted = |first: Vec<serde_json::Value>, counts: &Counts| {
        let mut record = first;
        record.extend(values(counts).into_iter().map(serde_json::Value::from));
        record
    };
    let endpoints: Vec<_> = sums
        .endpoints
        .iter()
        .map(|(id, minute, counts)| {
            counted(
                vec![id.simple().to_string().into(), micros(*minute).into()],
                counts,
            )
        })
        .collect();
    let owners: Vec<_> = sums
        .endpoints
        .iter()
        .map(|(id, minute, counts)| {
            counted(
                vec![
                    id.simple().to_string().into(),
                    micros(*minute).into(),
                    (shard % i64::from(OWNER_SHARDS)).into(),
                ],
                counts,
            )
        })
        .collect();
    let hours: Vec<_> = sums
        .failing_hours
        .iter()
        .map(|(hour, id, failed)| (micros(*hour), id.simple().to_string(), failed))
        .collect();
    let totals: Vec<_> = sums
        .totals
        .iter()
        .map(|(minute, counts)| counted(vec![micros(*minute).into(), shard.into()], counts))
        .collect();
    [
        json_text(&endpoints),
        json_text(&owners),
        json_text(&hours),
        json_text(&totals),
    ]
}

/// Adds a batch's sums in the caller's transaction on the writer.
pub(super) async fn add_minute_sums(
    conn: &mut SqliteConnection,
    sums: &MinuteSums,
) -> Result<(), StoreError> {
    if sums.is_empty() {
        return Ok(());
    }
    let mut query = sqlx::query(ADD_MINUTE_SUMS.as_str());
    for records in minute_sums_json(sums) {
        query = query.bind(records);
    }
    query.execute(conn).await.map_err(store_error)?;
    Ok(())
}

/// Where `scope`'s rows of `minute_stats` (aliased `s`) are, its values
/// bound from `?first` on; `None`: every endpoint.
fn scope_clause(scope: &StatsScope, first: usize) -> Option<String> {
    match (&scope.endpoint, &scope.owner) {
        (None, None) => None,
        (Some(_), None) => Some(format!("s.endpoint_id = ?{first}")),
        (None, Some(_)) => Some(format!(
            "s.endpoint_id IN (SELECT id FROM endpoints \
             WHERE owner = ?{first} AND deleted_at IS NULL AND managed = 0)"
        )),
        (Some(_), Some(_)) => Some(format!(
            "s.endpoint_id = ?{first} AND EXISTS (SELECT 1 FROM endpoints \
             WHERE id = ?{first} AND owner = ?{} AND deleted_at IS NULL AND managed = 0)",
            first + 1
        )),
    }
}

fn bind_scope<'q>(
    mut query: sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments>,
    scope: &'q StatsScope,
) -> sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments> {
    if let Some(id) = scope.endpoint {
        query = query.bind(id);
    }
    if let Some(owner) = &scope.owner {
        query = query.bind(owner.as_str());
    }
    query
}

fn minute_row(row: &SqliteRow) -> Result<MinuteRow, sqlx::Error> {
    let minute = time_of("minute", row.try_get(0)?)?;
    let values = (1..=count_columns().len())
        .map(|i| row.try_get::<Option<i64>, _>(i))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((minute, counts_from(&values)))
}

#[async_trait::async_trait]
impl StatsStore for SqliteStore {
    async fn minute_counts(
        &self,
        scope: &StatsScope,
        since: DateTime<Utc>,
    ) -> Result<Vec<MinuteRow>, StoreError> {
        let sums = summed_columns();
        let sql = match scope_clause(scope, 2) {
            None => format!(
                "SELECT minute, {sums} FROM minute_totals WHERE minute >= ?1 GROUP BY minute"
            ),
            Some(_) if scope.endpoint.is_none() => format!(
                "SELECT minute, {sums} FROM owner_minute_stats \
                 WHERE minute >= ?1 AND owner = ?2 GROUP BY minute"
            ),
            Some(clause) => format!(
                "SELECT s.minute, {sums} FROM minute_stats s WHERE s.minute >= ?1 AND {clause} \
                 GROUP BY s.minute"
            ),
        };
        let query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(micros(since));
        let rows = bind_scope(query, scope)
            .fetch_all(&self.reader)
            .await
            .map_err(store_error)?;
        rows.iter()
            .map(minute_row)
            .collect::<Result<_, _>>()
            .map_err(store_error)
    }

    async fn pending_samples(
        &self,
        since: DateTime<Utc>,
    ) -> Result<Vec<(DateTime<Utc>, i64)>, StoreError> {
        let rows: Vec<(i64, i64)> =
            sqlx::query_as("SELECT minute, pending FROM minute_backlog WHERE minute >= ?1")
                .bind(micros(since))
                .fetch_all(&self.reader)
                .await
                .map_err(store_error)?;
        rows.into_iter()
            .map(|(minute, pending)| Ok((time_of("minute", minute)?, pending)))
            .collect::<Result<_, sqlx::Error>>()
            .map_err(store_error)
    }

    async fn most_failing(
        &self,
        scope: &StatsScope,
        since: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<FailingCount>, StoreError> {
        // Ranked from the failed attempts per hour for the window's whole
        // hours and per minute for the minutes before the first of them
        // (as PostgreSQL does). Managed endpoints (the operator's) are
        // never ranked: their URL is configuration, often with a token in
        // it, and the API never shows them.
        let clause = scope_clause(scope, 4).map_or(String::new(), |c| format!("AND {c}"));
        let hourly = clause.replace("s.endpoint_id", "h.endpoint_id");
        let sql = format!(
            "WITH failing AS ( \
                 SELECT h.endpoint_id, h.failed_attempts FROM hour_failing h \
                 WHERE h.hour >= ?3 {hourly} \
                 UNION ALL \
                 SELECT s.endpoint_id, s.failed_attempts FROM minute_stats s \
                 WHERE s.minute >= ?1 AND s.minute < ?3 AND s.failed_attempts > 0 {clause} \
             ), top AS ( \
                 SELECT f.endpoint_id, sum(f.failed_attempts) AS failed_attempts \
                 FROM failing f \
                 WHERE f.endpoint_id NOT IN (SELECT id FROM endpoints WHERE managed = 1) \
                 GROUP BY f.endpoint_id ORDER BY 2 DESC, 1 LIMIT ?2 \
             ) \
             SELECT t.endpoint_id, t.failed_attempts, \
                 (SELECT sum(a.attempts) FROM minute_stats a \
                  WHERE a.endpoint_id = t.endpoint_id AND a.minute >= ?1) AS attempts, \
                 e.url \
             FROM top t LEFT JOIN endpoints e ON e.id = t.endpoint_id \
             ORDER BY t.failed_attempts DESC, t.endpoint_id"
        );
        let query = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(micros(since))
            .bind(limit)
            .bind(micros(ranked_from_hours(since)));
        let rows = bind_scope(query, scope)
            .fetch_all(&self.reader)
            .await
            .map_err(store_error)?;
        rows.iter()
            .map(|row| {
                Ok(FailingCount {
                    endpoint_id: row.try_get(0)?,
                    failed_attempts: row.try_get(1)?,
                    attempts: row.try_get::<Option<i64>, _>(2)?.unwrap_or(0),
                    url: row.try_get(3)?,
                })
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(store_error)
    }

    async fn sample_pending(&self, minute: DateTime<Utc>) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO minute_backlog (minute, pending) \
             SELECT ?1, (SELECT count(*) FROM notifications WHERE status = 'pending') \
             WHERE NOT EXISTS (SELECT 1 FROM minute_backlog WHERE minute = ?1) \
             ON CONFLICT (minute) DO NOTHING",
        )
        .bind(micros(minute))
        .execute(&self.writer)
        .await
        .map_err(store_error)?;
        Ok(())
    }

    async fn purge_minutes(&self, before: DateTime<Utc>, limit: i64) -> Result<u64, StoreError> {
        let mut deleted = 0;
        for sql in [
            "DELETE FROM minute_stats WHERE rowid IN \
                 (SELECT rowid FROM minute_stats WHERE minute < ?1 LIMIT ?2)",
            "DELETE FROM minute_totals WHERE rowid IN \
                 (SELECT rowid FROM minute_totals WHERE minute < ?1 LIMIT ?2)",
            "DELETE FROM minute_backlog WHERE minute IN \
                 (SELECT minute FROM minute_backlog WHERE minute < ?1 LIMIT ?2)",
            "DELETE FROM hour_failing WHERE rowid IN \
                 (SELECT rowid FROM hour_failing WHERE hour < ?1 LIMIT ?2)",
            "DELETE FROM owner_minute_stats WHERE rowid IN \
                 (SELECT rowid FROM owner_minute_stats WHERE minute < ?1 LIMIT ?2)",
        ] {
            deleted += sqlx::query(sql)
                .bind(micros(before))
                .bind(limit)
                .execute(&self.writer)
                .await
                .map_err(store_error)?
                .rows_affected();
        }
        Ok(deleted)
    }
}
