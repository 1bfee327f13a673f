//! Multi-row writes of a batch: inserts in runs of a few shapes, and
//! RETURNING only when it tells something. sqlx hands each row a SQLite
//! statement returns over from the connection's worker thread, about 8 µs
//! a row (`columns::json_rows`). A batch write that changes every row it
//! was given, as a recording whose rows are all as expected or a create
//! whose keys are all new nearly always does, returns nothing its count
//! of changed rows would not tell. So the batch is written without
//! RETURNING first, and only a count short of the batch pays for the rows.

use std::collections::HashSet;

use sqlx::{Connection, Execute, Executor, QueryBuilder, Sqlite, SqliteConnection};
use uuid::Uuid;

use super::errors::store_error;
use crate::store::StoreError;

/// Most rows one multi-row INSERT writes: a whole batch as the API takes
/// it (`service::notifications::MAX_BATCH`) in one statement. 1,000
/// notifications bind 18,000 values (18 a row; a fan-out's deliveries 15),
/// under the 32,766 of the SQLite hookd bundles (3.32 and later). Each
/// statement crosses to the writer's worker thread and back: in runs of
/// 64, a batch of 1,000 took 17 statements, and the time between them was
/// as long as their own (`BENCHMARKS.md`, #51).
pub(super) const ROWS_PER_INSERT: usize = 1000;

/// `items` in runs of `max`, then of the powers of two below it that the
/// rest adds up to: a multi-row INSERT then has one of a few shapes, each
/// prepared once on the writer's connection and reused, however the
/// batches are sized.
pub(super) fn runs<T>(mut items: &[T], max: usize) -> Vec<&[T]> {
    let mut runs = Vec::new();
    while !items.is_empty() {
        let size = if items.len() >= max {
            max
        } else {
            1 << items.len().ilog2()
        };
        let (run, rest) = items.split_at(size);
        runs.push(run);
        items = rest;
    }
    runs
}

/// Runs `statement`, a batch write without RETURNING that can change at
/// most `rows` rows, in a savepoint of the caller's transaction. When it
/// changed `rows` rows, it changed every one it could: the write is kept
/// and `true` says so. Otherwise it is rolled back, and `false` tells the
/// caller to write the batch again with RETURNING to learn which rows
/// changed. (SQLite's count leaves out what triggers change.)
pub(super) async fn changed_every_row<'q>(
    conn: &mut SqliteConnection,
    statement: impl Execute<'q, Sqlite> + 'q,
    rows: usize,
) -> Result<bool, StoreError> {
    let mut savepoint = conn.begin().await.map_err(store_error)?;
    let changed = savepoint
        .execute(statement)
        .await
        .map_err(store_error)?
        .rows_affected();
    if changed == rows as u64 {
        savepoint.commit().await.map_err(store_error)?;
        Ok(true)
    } else {
        savepoint.rollback().await.map_err(store_error)?;
        Ok(false)
    }
}

/// Inserts `items` in multi-row runs (`runs`), each written by
/// `insert(run, returning)`, an INSERT that writes nothing for a key met
/// and, with `returning`, returns the ids it created; gives the ids of
/// the items created. A run without keys (`keyed`) creates every row or
/// fails, so it returns nothing; a keyed run returns its ids only when a
/// key met makes its count short (`changed_every_row`).
pub(super) async fn insert_runs<T>(
    conn: &mut SqliteConnection,
    items: &[T],
    insert: impl Fn(&[T], bool) -> QueryBuilder<Sqlite>,
    keyed: impl Fn(&T) -> bool,
    id: impl Fn(&T) -> Uuid,
) -> Result<HashSet<Uuid>, StoreError> {
    let mut created = HashSet::with_capacity(items.len());
    for run in runs(items, ROWS_PER_INSERT) {
        let mut all = insert(run, false);
        let every_row = if run.iter().any(&keyed) {
            changed_every_row(conn, all.build(), run.len()).await?
        } else {
            all.build().execute(&mut *conn).await.map_err(store_error)?;
            true
        };
        if every_row {
            created.extend(run.iter().map(&id));
            continue;
        }
        let ids: Vec<Uuid> = insert(run, true)
            .build_query_scalar()
            .fetch_all(&mut *conn)
            .await
            .map_err(store_error)?;
        created.extend(ids);
    }
    Ok(created)
}

#[cfg(test)]
mod tests {
    use super::runs;

    #[test]
    fn runs_are_of_the_largest_and_then_of_powers_of_two() {
        let items: Vec<u32> = (0..200).collect();
        let sizes: Vec<usize> = runs(&items, 64).iter().map(|r| r.len()).collect();
        assert_eq!(sizes, [64, 64, 64, 8]);
        let sizes: Vec<usize> = runs(&items[..7], 64).iter().map(|r| r.len()).collect();
        assert_eq!(sizes, [4, 2, 1]);
        assert!(runs::<u32>(&[], 64).is_empty());
    }
}
