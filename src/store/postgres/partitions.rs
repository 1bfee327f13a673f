//! The daily partitions of `notifications` and `attempts` in PostgreSQL
//! (migration 20261204000040, docs/partitioning.md): made ahead, dropped
//! by retention. `domain::partition` decides which days and whether a day
//! may go; this reads the catalog and the partitions and runs the DDL.
//!
//! One process at a time: the pass holds a session advisory lock
//! (`UPKEEP_LOCK`) on one connection, and a process that finds it taken
//! skips its pass (the holder does the same work).
//!
//! DDL on a partitioned table locks its parent: `CREATE TABLE … PARTITION
//! OF` and `DETACH PARTITION` take ACCESS EXCLUSIVE on it (PostgreSQL 15),
//! and `DETACH … CONCURRENTLY` cannot be used while the table has a DEFAULT
//! partition, which it has so that no insert is ever refused. So each such
//! statement runs with a short `lock_timeout` and is tried again a few
//! times: while it waits for the lock, every query on the table queues
//! behind it, so it must never wait long.

use chrono::{DateTime, NaiveDate, Utc};
use sqlx::{AssertSqlSafe, Connection, PgConnection};
use uuid::Uuid;

use super::PgStore;
use crate::domain::partition::{self, Summary};
use crate::store::partitions::PartitionUpkeep;
use crate::store::StoreError;

/// The lowest and highest of `ids`, bound beside `id = ANY(…)` as
/// `id BETWEEN … AND …` so that a lookup by a list of ids reads only the
/// days they fall in. PostgreSQL prunes partitions on a range of
/// parameters as the executor starts, but not on `= ANY($1)` with an array
/// parameter: alone, that probed the primary key of every day's partition
/// for each id, and a drain beside 29 days of history ran at 0.75 of its
/// speed on an empty database (0.97 with the span, BENCHMARKS.md). Ids are
/// UUIDv7, their creation times: a batch's span is usually a day or a few,
/// and whatever it is, the result is the same. `(nil, nil)` for none,
/// which matches nothing.
pub(super) fn id_span(ids: &[Uuid]) -> (Uuid, Uuid) {
    let low = ids.iter().min().copied().unwrap_or_default();
    let high = ids.iter().max().copied().unwrap_or_default();
    (low, high)
}

/// The advisory lock of the upkeep ("hookd_pa").
const UPKEEP_LOCK: i64 = 0x686f_6f6b_645f_7061;
/// How long a DDL statement waits for its table's lock before it gives up
/// (and is tried again): what queries on the table may queue behind it.
const LOCK_TIMEOUT: &str = "SET LOCAL lock_timeout = '200ms'";
/// Tries of a DDL statement that meets a lock timeout, in one pass.
const TRIES: u32 = 5;
/// Key rows deleted per statement when a day goes.
const KEY_BATCH: i64 = 5000;

/// A partition of `notifications` as the catalog has it.
struct Part {
    name: String,
    /// Its lowest id (`None`: MINVALUE, the legacy partition) and the
    /// first id it does not hold.
    low: Option<Uuid>,
    end: Uuid,
}

impl PgStore {
    /// One pass: the partitions of `today` and the days ahead that are
    /// missing are made; with `before` (retention's cutoff), the days
    /// `domain::partition::droppable` lets go are dropped, notifications
    /// and attempts together, then their key rows.
    pub async fn maintain_partitions(
        &self,
        today: NaiveDate,
        before: Option<DateTime<Utc>>,
    ) -> Result<PartitionUpkeep, StoreError> {
        let mut conn = self.pool.acquire().await?;
        let partitioned: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM pg_class WHERE oid = to_regclass('notifications') \
                 AND relkind = 'p')",
        )
        .fetch_one(&mut *conn)
        .await?;
        if !partitioned {
            return Ok(PartitionUpkeep::default());
        }
        let locked: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
            .bind(UPKEEP_LOCK)
            .fetch_one(&mut *conn)
            .await?;
        if !locked {
            return Ok(PartitionUpkeep {
                skipped: true,
                ..PartitionUpkeep::default()
            });
        }
        let result = upkeep(&mut conn, today, before).await;
        let unlocked = sqlx::query("SELECT pg_advisory_unlock($1)")
            .bind(UPKEEP_LOCK)
            .execute(&mut *conn)
            .await;
        if unlocked.is_err() {
            // A connection still holding the lock must not go back to the
            // pool: it would keep every process from the upkeep.
            drop(conn.detach());
        }
        result
    }
}

async fn upkeep(
    conn: &mut PgConnection,
    today: NaiveDate,
    before: Option<DateTime<Utc>>,
) -> Result<PartitionUpkeep, StoreError> {
    let mut done = PartitionUpkeep::default();
    drop_detached(conn).await?;
    let parts = partitions(conn).await?;
    // Days below the legacy partition's end are its own.
    let legacy_end = parts
        .iter()
        .filter(|p| p.low.is_none())
        .map(|p| p.end)
        .max();
    for day in partition::days_ahead(today) {
        if legacy_end.is_some_and(|end| partition::day_bound(day) < end) {
            continue;
        }
        // A day that cannot be made (rows of its range already in the
        // DEFAULT partition) must not stop retention: its rows go on to
        // the DEFAULT partition, which is warned about.
        match create_day(conn, day).await {
            Ok(made) => done.created += made,
            Err(error) => tracing::warn!(%error, %day, "cannot make a day's partitions"),
        }
    }
    if let Some(before) = before {
        for part in parts
            .iter()
            .filter(|p| p.end <= partition::day_bound(today))
        {
            if drop_if_expired(conn, part, before).await? {
                done.dropped.push(part.name.clone());
                // The day is gone; its key rows follow.
                let started = std::time::Instant::now();
                done.keys_deleted += delete_keys(conn, part).await?;
                done.keys_took += started.elapsed();
            }
        }
    }
    done.default_rows = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM notifications_default) \
             OR EXISTS (SELECT 1 FROM attempts_default)",
    )
    .fetch_one(&mut *conn)
    .await?;
    Ok(done)
}

/// Makes `day`'s partitions of `notifications` and `attempts` that are
/// missing, both in one transaction (a day never has one without the
/// other); how many it made. A day whose ids already sit in a DEFAULT
/// partition is skipped with a warning, found by a read without a lock:
/// the CREATE would fail only after scanning the DEFAULT partition under
/// ACCESS EXCLUSIVE, blocking every query for that scan, at every pass.
async fn create_day(conn: &mut PgConnection, day: NaiveDate) -> Result<usize, StoreError> {
    let mut missing = Vec::new();
    for table in partition::TABLES {
        let name = partition::partition_name(table, day);
        let exists: bool = sqlx::query_scalar("SELECT to_regclass($1) IS NOT NULL")
            .bind(&name)
            .fetch_one(&mut *conn)
            .await?;
        if !exists {
            missing.push((table, name));
        }
    }
    if missing.is_empty() {
        return Ok(0);
    }
    let (lo, hi) = (
        partition::day_bound(day),
        partition::day_bound(day.succ_opt().expect("a day after")),
    );
    let in_default: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM notifications_default WHERE id >= $1 AND id < $2) \
             OR EXISTS (SELECT 1 FROM attempts_default \
                 WHERE notification_id >= $1 AND notification_id < $2)",
    )
    .bind(lo)
    .bind(hi)
    .fetch_one(&mut *conn)
    .await?;
    if in_default {
        tracing::warn!(%day, "a day's rows are in the DEFAULT partition: its partitions are not made");
        return Ok(0);
    }
    // Names and bounds are made here (letters, digits, hex): no value from
    // outside is spliced.
    let ddl: Vec<String> = missing
        .iter()
        .map(|(table, name)| {
            format!(
                "CREATE TABLE IF NOT EXISTS {name} PARTITION OF {table} \
                 FOR VALUES FROM ('{lo}') TO ('{hi}')"
            )
        })
        .collect();
    with_retries(conn, |tx| {
        let ddl = ddl.clone();
        Box::pin(async move {
            for statement in &ddl {
                sqlx::raw_sql(AssertSqlSafe(statement.clone()))
                    .execute(&mut *tx)
                    .await?;
            }
            Ok(Some(ddl.len()))
        })
    })
    .await
    .map(|made| made.unwrap_or(0))
}

/// A step of DDL in a transaction: `Some` to commit, `None` to roll back.
type Step<'c, T> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<Option<T>, StoreError>> + Send + 'c>>;

/// Runs `step` in a transaction with the short lock timeout, again after a
/// lock timeout, up to `TRIES` times; `None` when the step declined or
/// every try timed out (the next pass tries again).
async fn with_retries<T>(
    conn: &mut PgConnection,
    mut step: impl for<'c> FnMut(&'c mut PgConnection) -> Step<'c, T>,
) -> Result<Option<T>, StoreError> {
    for attempt in 1..=TRIES {
        let mut tx = conn.begin().await?;
        sqlx::query(LOCK_TIMEOUT).execute(&mut *tx).await?;
        match step(&mut tx).await {
            Ok(Some(value)) => {
                tx.commit().await?;
                return Ok(Some(value));
            }
            Ok(None) => {
                tx.rollback().await?;
                return Ok(None);
            }
            Err(error) if lock_timed_out(&error) => {
                tx.rollback().await?;
                tokio::time::sleep(std::time::Duration::from_millis(100 * u64::from(attempt)))
                    .await;
            }
            Err(error) => return Err(error),
        }
    }
    Ok(None)
}

fn lock_timed_out(error: &StoreError) -> bool {
    // 55P03 lock_not_available: `lock_timeout` ran out.
    let StoreError::Database(cause) = error else {
        return false;
    };
    cause
        .downcast_ref::<sqlx::Error>()
        .and_then(|e| e.as_database_error())
        .and_then(|e| e.code())
        .is_some_and(|code| code == "55P03")
}

/// The partitions of `notifications` but the DEFAULT one, with their
/// ranges.
async fn partitions(conn: &mut PgConnection) -> Result<Vec<Part>, StoreError> {
    let rows: Vec<(String, String)> = sqlx::query_as(
        "SELECT c.relname::text, pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i \
         JOIN pg_class c ON c.oid = i.inhrelid \
         WHERE i.inhparent = 'notifications'::regclass",
    )
    .fetch_all(&mut *conn)
    .await?;
    Ok(rows
        .into_iter()
        .filter_map(|(name, bound)| {
            let (low, end) = range_of(&bound)?;
            Some(Part { name, low, end })
        })
        .collect())
}

/// The range of a bound as PostgreSQL prints it: `FOR VALUES FROM
/// ('…') TO ('…')` or `FROM (MINVALUE) TO ('…')`; `None` for DEFAULT.
fn range_of(bound: &str) -> Option<(Option<Uuid>, Uuid)> {
    let (from, to) = bound
        .strip_prefix("FOR VALUES FROM (")?
        .split_once(") TO (")?;
    let value = |text: &str| Uuid::parse_str(text.trim_end_matches(')').trim_matches('\'')).ok();
    let end = value(to)?;
    Some((
        if from == "MINVALUE" {
            None
        } else {
            Some(value(from)?)
        },
        end,
    ))
}

/// Drops `part` and its day of `attempts` when the domain lets it go;
/// whether it did.
async fn drop_if_expired(
    conn: &mut PgConnection,
    part: &Part,
    before: DateTime<Utc>,
) -> Result<bool, StoreError> {
    // Before any read of its rows: a partition not wholly past the cutoff
    // (every day ahead, today's, the recent ones) is not scanned.
    if !partition::past(part.end, before) {
        return Ok(false);
    }
    // Names come from the catalog, quoted as identifiers.
    let name = quote(&part.name);
    let first = summary(conn, &name).await?;
    if !partition::droppable(part.end, &first, before) {
        return Ok(false);
    }
    // What a success of the day released still names it in `behind`
    // (`postgres::ordering::released`): cleared first, so that it does not
    // read as waiting for a removed holder. Before the detach and in a
    // statement of its own, not in the detach's transaction, which locks
    // the whole table: a droppable day has no pending notification, so no
    // success of it comes meanwhile, and nothing is placed behind a success.
    sqlx::query(
        "UPDATE notifications s SET behind = NULL FROM notifications p \
         WHERE s.behind >= $1 AND s.behind < $2 AND (s.status = 'pending') IS TRUE \
           AND p.id = s.behind AND p.status = 'succeeded'",
    )
    .bind(part.low.unwrap_or(Uuid::nil()))
    .bind(part.end)
    .execute(&mut *conn)
    .await?;
    let attempts = part.name.replacen("notifications", "attempts", 1);
    let detach_notifications = format!("ALTER TABLE notifications DETACH PARTITION {name}");
    let detach_attempts = format!("ALTER TABLE attempts DETACH PARTITION {}", quote(&attempts));
    let end = part.end;
    let detached = with_retries(conn, |tx| {
        let (a, b, name) = (
            detach_notifications.clone(),
            detach_attempts.clone(),
            name.clone(),
        );
        let attempts = attempts.clone();
        Box::pin(async move {
            sqlx::raw_sql(AssertSqlSafe(a)).execute(&mut *tx).await?;
            // Detached and locked: nothing changes it any more. The day is
            // decided again on what it holds now (a retry made a row
            // pending, a redelivery completed one lately since the first
            // read): a day no longer droppable stays.
            let now = summary(tx, &name).await?;
            if !partition::droppable(end, &now, before) {
                return Ok(None);
            }
            let has_attempts: bool = sqlx::query_scalar("SELECT to_regclass($1) IS NOT NULL")
                .bind(&attempts)
                .fetch_one(&mut *tx)
                .await?;
            if has_attempts {
                sqlx::raw_sql(AssertSqlSafe(b)).execute(&mut *tx).await?;
            }
            Ok(Some(()))
        })
    })
    .await?;
    if detached.is_none() {
        return Ok(false);
    }
    // Detached: no query of `notifications` reads them any more, and the
    // drop locks them alone.
    drop_detached(conn).await?;
    Ok(true)
}

/// Deletes the key rows of a day whose tables were dropped, in batches of
/// `KEY_BATCH` (none holds a lock a create waits on for long); how many.
/// A crash before they are all deleted leaves key rows without their
/// notification, which is harmless: the next create of such a key takes
/// it over (`notifications::insert_rows`); nothing comes back for them
/// later, so they cost space only.
async fn delete_keys(conn: &mut PgConnection, part: &Part) -> Result<u64, StoreError> {
    let low = part.low.unwrap_or(Uuid::nil());
    let mut total = 0;
    loop {
        let deleted = sqlx::query(
            "DELETE FROM notification_keys WHERE ctid IN (SELECT ctid FROM notification_keys \
             WHERE id >= $1 AND id < $2 LIMIT $3)",
        )
        .bind(low)
        .bind(part.end)
        .bind(KEY_BATCH)
        .execute(&mut *conn)
        .await?
        .rows_affected();
        total += deleted;
        if deleted < KEY_BATCH as u64 {
            return Ok(total);
        }
    }
}

/// The partition's summary for `domain::partition::droppable`: one read of
/// its rows, without a lock (`drop_if_expired` reads it again under one).
async fn summary(conn: &mut PgConnection, name: &str) -> Result<Summary, StoreError> {
    let (pending, unfinished, latest_completed): (Option<bool>, Option<bool>, Option<DateTime<Utc>>) =
        sqlx::query_as(AssertSqlSafe(format!(
            "SELECT bool_or(status = 'pending'), bool_or(status <> 'pending' AND completed_at IS NULL), \
                 max(completed_at) \
             FROM {name}"
        )))
        .fetch_one(&mut *conn)
        .await?;
    Ok(Summary {
        pending: pending.unwrap_or(false),
        unfinished: unfinished.unwrap_or(false),
        latest_completed,
    })
}

/// Drops the tables an upkeep detached (a pass that stopped between its
/// detach and its drop leaves them; nothing reads them).
async fn drop_detached(conn: &mut PgConnection) -> Result<(), StoreError> {
    let names: Vec<String> = sqlx::query_scalar(
        "SELECT relname::text FROM pg_class \
         WHERE relkind = 'r' AND NOT relispartition \
           AND relnamespace = (SELECT relnamespace FROM pg_class WHERE oid = 'notifications'::regclass) \
           AND (relname IN ('notifications_legacy', 'attempts_legacy') \
                OR relname ~ '^(notifications|attempts)_p[0-9]{8}$')",
    )
    .fetch_all(&mut *conn)
    .await?;
    for name in names {
        sqlx::raw_sql(AssertSqlSafe(format!(
            "DROP TABLE IF EXISTS {}",
            quote(&name)
        )))
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

fn quote(identifier: &str) -> String {
    format!("\"{}\"", identifier.replace('"', "\"\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bound_is_read_as_postgresql_prints_it() {
        let low = Uuid::parse_str("01a21f73-9c00-0000-0000-000000000000").unwrap();
        let end = Uuid::parse_str("01a22499-f800-0000-0000-000000000000").unwrap();
        assert_eq!(
            range_of(&format!("FOR VALUES FROM ('{low}') TO ('{end}')")),
            Some((Some(low), end))
        );
        assert_eq!(
            range_of(&format!("FOR VALUES FROM (MINVALUE) TO ('{end}')")),
            Some((None, end))
        );
        assert_eq!(range_of("DEFAULT"), None);
    }
}
