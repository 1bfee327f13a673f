//! The due indexes seen on this database (`domain::index_owner`): a beat
//! reads every row and writes its own under a transaction-scoped advisory
//! lock, so that two first beats at once do not each miss the other's row
//! and both own the database (`Beat::apply` decides what is written).

use chrono::{DateTime, Utc};
use sqlx::Row;

use super::PgStore;
use crate::domain::index_owner::{Beat, IndexSeen};
use crate::store::StoreError;

/// The advisory lock that makes beats one at a time (its own number,
/// beside `partitions::UPKEEP_LOCK`).
const BEAT_LOCK: i64 = 0x686f_6f6b_6402;

impl PgStore {
    pub(super) async fn beat_index(&self, beat: &Beat) -> Result<Vec<IndexSeen>, StoreError> {
        let mut tx = self.pool.begin().await?;
        // A process that froze holding the lock (SIGSTOP, a paused VM)
        // holds up every beat: its session ends after 5 s idle in its
        // transaction, and a beat waits at most 2 s for the lock (and
        // tries again a second later), so the others' beats go on.
        sqlx::query(
            "SELECT set_config('lock_timeout', '2s', true), \
                    set_config('idle_in_transaction_session_timeout', '5s', true)",
        )
        .execute(&mut *tx)
        .await?;
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .bind(BEAT_LOCK)
            .execute(&mut *tx)
            .await?;
        // The gone name and the forgotten rows go once `apply` has read
        // them (a renamed index takes the gone one's first sighting).
        let stored: Vec<IndexSeen> =
            sqlx::query("SELECT identity, process, first_seen, seen_at FROM due_indexes")
                .fetch_all(&mut *tx)
                .await?
                .iter()
                .map(|row| {
                    Ok(IndexSeen {
                        identity: row.try_get(0)?,
                        process: row.try_get(1)?,
                        first_seen: row.try_get::<DateTime<Utc>, _>(2)?,
                        seen_at: row.try_get::<DateTime<Utc>, _>(3)?,
                    })
                })
                .collect::<Result<_, sqlx::Error>>()?;
        let (written, live) = beat.apply(&stored);
        // A process that does not claim only reads.
        if let Some(written) = written {
            sqlx::query(
                "DELETE FROM due_indexes WHERE seen_at < $4 \
                 OR (identity <> $1 AND (identity = $2 OR process = $3))",
            )
            .bind(&beat.identity)
            .bind(beat.gone())
            .bind(beat.process)
            .bind(beat.forget_before())
            .execute(&mut *tx)
            .await?;
            sqlx::query(
                "INSERT INTO due_indexes (identity, process, first_seen, seen_at) \
                 VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (identity, process) DO UPDATE \
                     SET first_seen = excluded.first_seen, seen_at = excluded.seen_at",
            )
            .bind(&written.identity)
            .bind(written.process)
            .bind(written.first_seen)
            .bind(written.seen_at)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(live)
    }

    /// A process that stops deletes its row unless an index other than
    /// its own is live (`HousekeepingStore::end_index_beats`).
    pub(super) async fn end_index_beats(
        &self,
        process: uuid::Uuid,
        live_after: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "DELETE FROM due_indexes d WHERE d.process = $1 AND NOT EXISTS ( \
                 SELECT 1 FROM due_indexes o \
                 WHERE o.identity <> d.identity AND o.seen_at > $2)",
        )
        .bind(process)
        .bind(live_after)
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}
