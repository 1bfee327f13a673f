//! RETURNING only when it tells something. sqlx hands each row a SQLite
//! statement returns over from the connection's worker thread, about 8 µs
//! a row (`columns::json_rows`). A batch write that changes every row it
//! was given, as a recording whose rows are all as expected or a create
//! whose keys are all new nearly always does, returns nothing its count
//! of changed rows would not tell. So the batch is written without
//! RETURNING first, and only a count short of the batch pays for the rows.

use sqlx::{Connection, Execute, Executor, Sqlite, SqliteConnection};

use super::errors::store_error;
use crate::store::StoreError;

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
