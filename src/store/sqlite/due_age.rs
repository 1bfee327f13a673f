//! How old the push backlog is on SQLite: per endpoint, the earliest due
//! time among its due rows, by lane: fresh, or backlog (attempted
//! before, or released by a closing circuit;
//! `store::housekeeping::DueBacklog`).

use chrono::{DateTime, Utc};
use sqlx::Row;
use uuid::Uuid;

use super::columns::{self, micros};
use super::{store_error, SqliteStore};
use crate::store::housekeeping::{DueBacklog, DUE_SCAN};
use crate::store::StoreError;

/// Of each kind, the oldest `DUE_SCAN` push rows due by a time, walked in
/// due order on `notifications_pending_due` (its term `status =
/// 'pending'` written as the index has it), grouped by endpoint.
pub(super) const DUE_BACKLOG: &str =
    "SELECT endpoint_id, attempted, min(next_attempt_at), count(*) FROM ( \
       SELECT * FROM (SELECT endpoint_id, 0 AS attempted, next_attempt_at FROM notifications \
        WHERE status = 'pending' AND pull = 0 AND next_attempt_at <= ?1 \
          AND attempts = 0 AND released_by_circuit = 0 \
        ORDER BY next_attempt_at LIMIT ?2) \
       UNION ALL \
       SELECT * FROM (SELECT endpoint_id, 1, next_attempt_at FROM notifications \
        WHERE status = 'pending' AND pull = 0 AND next_attempt_at <= ?1 \
          AND (attempts > 0 OR released_by_circuit = 1) \
        ORDER BY next_attempt_at LIMIT ?2) \
     ) GROUP BY endpoint_id, attempted";

impl SqliteStore {
    pub async fn due_backlog(
        &self,
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<DueBacklog, StoreError> {
        let rows = sqlx::query(DUE_BACKLOG)
            .bind(micros(now))
            .bind(DUE_SCAN)
            .fetch_all(&self.reader)
            .await
            .map_err(store_error)?;
        let groups = rows
            .iter()
            .map(|row| {
                let endpoint: Uuid = row.try_get(0)?;
                let attempted: i64 = row.try_get(1)?;
                let due = columns::time_of("next_attempt_at", row.try_get(2)?)?;
                Ok((endpoint, attempted != 0, due, row.try_get(3)?))
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(store_error)?;
        Ok(DueBacklog::from_groups(groups, limit))
    }
}
