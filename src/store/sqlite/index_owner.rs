//! The due indexes seen on this database (`domain::index_owner`), as
//! `postgres::index_owner`: the writer is the only one, so its
//! transaction needs no lock. The embedded mode's index lives in its
//! process and never beats; the seam is here so the store's contract is
//! one.

use super::columns::{self, micros};
use super::{store_error, SqliteStore};
use crate::domain::index_owner::{Beat, IndexSeen};
use crate::store::StoreError;

impl SqliteStore {
    pub(super) async fn beat_index(&self, beat: &Beat) -> Result<Vec<IndexSeen>, StoreError> {
        let mut tx = self.writer.begin().await.map_err(store_error)?;
        let rows: Vec<(String, uuid::Uuid, i64, i64)> =
            sqlx::query_as("SELECT identity, process, first_seen, seen_at FROM due_indexes")
                .fetch_all(&mut *tx)
                .await
                .map_err(store_error)?;
        let stored = rows
            .into_iter()
            .map(|(identity, process, first_seen, seen_at)| {
                Ok(IndexSeen {
                    identity,
                    process,
                    first_seen: columns::time_of("first_seen", first_seen)?,
                    seen_at: columns::time_of("seen_at", seen_at)?,
                })
            })
            .collect::<Result<Vec<_>, sqlx::Error>>()
            .map_err(store_error)?;
        let (written, live) = beat.apply(&stored);
        // A process that does not claim only reads.
        if let Some(written) = written {
            sqlx::query(
                "DELETE FROM due_indexes WHERE seen_at < ?4 \
                 OR (identity <> ?1 AND (identity = ?2 OR process = ?3))",
            )
            .bind(&beat.identity)
            .bind(beat.gone())
            .bind(beat.process)
            .bind(micros(beat.forget_before()))
            .execute(&mut *tx)
            .await
            .map_err(store_error)?;
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
            .execute(&mut *tx)
            .await
            .map_err(store_error)?;
        }
        tx.commit().await.map_err(store_error)?;
        Ok(live)
    }

    pub(super) async fn end_index_beats(
        &self,
        process: uuid::Uuid,
        live_after: chrono::DateTime<chrono::Utc>,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "DELETE FROM due_indexes AS d WHERE d.process = ?1 AND NOT EXISTS ( \
                 SELECT 1 FROM due_indexes AS o \
                 WHERE o.identity <> d.identity AND o.seen_at > ?2)",
        )
        .bind(process)
        .bind(micros(live_after))
        .execute(&self.writer)
        .await
        .map_err(store_error)?;
        Ok(())
    }
}
