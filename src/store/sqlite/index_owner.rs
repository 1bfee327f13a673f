//! The due indexes seen on this database (`domain::index_owner`), as
//! `postgres::index_owner`: the writer is the only one, so its
//! transaction needs no lock. The embedded mode's index lives in its
//! process and never beats; the seam is here so the store's contract is
//! one.

use chrono::{DateTime, Utc};
use sqlx::{Sqlite, Transaction};
use uuid::Uuid;

use super::columns::{self, micros};
use super::{store_error, SqliteStore};
use crate::domain::index_owner::{ending, Beat, IndexSeen};
use crate::store::StoreError;

impl SqliteStore {
    pub(super) async fn beat_index(&self, beat: &Beat) -> Result<Vec<IndexSeen>, StoreError> {
        let mut tx = self.writer.begin().await.map_err(store_error)?;
        let stored = rows(&mut tx).await.map_err(store_error)?;
        let applied = beat.apply(&stored);
        write_rows(&mut tx, &applied.delete, applied.write.as_ref())
            .await
            .map_err(store_error)?;
        tx.commit().await.map_err(store_error)?;
        Ok(applied.live)
    }

    pub(super) async fn end_index_beats(
        &self,
        process: Uuid,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let mut tx = self.writer.begin().await.map_err(store_error)?;
        let stored = rows(&mut tx).await.map_err(store_error)?;
        write_rows(&mut tx, &ending(process, now, &stored), None)
            .await
            .map_err(store_error)?;
        tx.commit().await.map_err(store_error)
    }
}

async fn rows(tx: &mut Transaction<'_, Sqlite>) -> Result<Vec<IndexSeen>, sqlx::Error> {
    let rows: Vec<(String, Uuid, i64, i64)> =
        sqlx::query_as("SELECT identity, process, first_seen, seen_at FROM due_indexes")
            .fetch_all(&mut **tx)
            .await?;
    rows.into_iter()
        .map(|(identity, process, first_seen, seen_at)| {
            Ok(IndexSeen {
                identity,
                process,
                first_seen: columns::time_of("first_seen", first_seen)?,
                seen_at: columns::time_of("seen_at", seen_at)?,
            })
        })
        .collect()
}

/// Deletes the rows `delete` (by index and process: a few rows, one
/// statement each), then writes `write`.
async fn write_rows(
    tx: &mut Transaction<'_, Sqlite>,
    delete: &[IndexSeen],
    write: Option<&IndexSeen>,
) -> Result<(), sqlx::Error> {
    for row in delete {
        sqlx::query("DELETE FROM due_indexes WHERE identity = ?1 AND process = ?2")
            .bind(&row.identity)
            .bind(row.process)
            .execute(&mut **tx)
            .await?;
    }
    if let Some(written) = write {
        sqlx::query(
            "INSERT INTO due_indexes (identity, process, first_seen, seen_at) \
             VALUES (?1, ?2, ?3, ?4) \
             ON CONFLICT (identity, process) DO UPDATE \
                 SET first_seen = excluded.first_seen, seen_at = excluded.seen_at",
        )
        .bind(&written.identity)
        .bind(written.process)
        .bind(micros(written.first_seen))
        .bind(micros(written.seen_at))
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}
