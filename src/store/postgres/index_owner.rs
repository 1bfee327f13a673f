//! The due indexes seen on this database (`domain::index_owner`): a beat
//! reads every row and writes its own under a transaction-scoped advisory
//! lock, so that two first beats at once do not each miss the other's row
//! and both own the database. `Beat::apply` and `index_owner::ending`
//! decide what is written and deleted; this file reads and writes.

use chrono::{DateTime, Utc};
use sqlx::{Postgres, Row, Transaction};
use uuid::Uuid;

use super::PgStore;
use crate::domain::index_owner::{ending, Beat, IndexSeen};
use crate::store::StoreError;

/// The advisory lock that makes beats one at a time (its own number,
/// beside `partitions::UPKEEP_LOCK`).
const BEAT_LOCK: i64 = 0x686f_6f6b_6402;

impl PgStore {
    pub(super) async fn beat_index(&self, beat: &Beat) -> Result<Vec<IndexSeen>, StoreError> {
        let mut tx = self.pool.begin().await?;
        let stored = locked_rows(&mut tx).await?;
        let applied = beat.apply(&stored);
        write_rows(&mut tx, &applied.delete, applied.write.as_ref()).await?;
        tx.commit().await?;
        Ok(applied.live)
    }

    /// A process that stops deletes what `index_owner::ending` says.
    pub(super) async fn end_index_beats(
        &self,
        process: Uuid,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await?;
        let stored = locked_rows(&mut tx).await?;
        write_rows(&mut tx, &ending(process, now, &stored), None).await?;
        tx.commit().await?;
        Ok(())
    }
}

/// Every row, read under `BEAT_LOCK`.
async fn locked_rows(tx: &mut Transaction<'_, Postgres>) -> Result<Vec<IndexSeen>, StoreError> {
    // A process that froze holding the lock (SIGSTOP, a paused VM)
    // holds up every beat: its session ends after 5 s idle in its
    // transaction, and a beat waits at most 2 s for the lock (and
    // tries again a second later), so the others' beats go on.
    sqlx::query(
        "SELECT set_config('lock_timeout', '2s', true), \
                set_config('idle_in_transaction_session_timeout', '5s', true)",
    )
    .execute(&mut **tx)
    .await?;
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(BEAT_LOCK)
        .execute(&mut **tx)
        .await?;
    let rows = sqlx::query("SELECT identity, process, first_seen, seen_at FROM due_indexes")
        .fetch_all(&mut **tx)
        .await?;
    let seen = rows
        .iter()
        .map(|row| {
            Ok(IndexSeen {
                identity: row.try_get(0)?,
                process: row.try_get(1)?,
                first_seen: row.try_get(2)?,
                seen_at: row.try_get(3)?,
            })
        })
        .collect::<Result<_, sqlx::Error>>()?;
    Ok(seen)
}

/// Deletes the rows `delete` (by index and process), then writes `write`.
async fn write_rows(
    tx: &mut Transaction<'_, Postgres>,
    delete: &[IndexSeen],
    write: Option<&IndexSeen>,
) -> Result<(), StoreError> {
    if !delete.is_empty() {
        let (identities, processes): (Vec<&str>, Vec<Uuid>) = delete
            .iter()
            .map(|s| (s.identity.as_str(), s.process))
            .unzip();
        sqlx::query(
            "DELETE FROM due_indexes WHERE (identity, process) IN \
                 (SELECT * FROM unnest($1::text[], $2::uuid[]))",
        )
        .bind(identities)
        .bind(processes)
        .execute(&mut **tx)
        .await?;
    }
    if let Some(written) = write {
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
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}
