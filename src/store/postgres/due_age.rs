//! How old the push backlog is in PostgreSQL: per endpoint, the earliest
//! due time among its due rows, by lane: fresh, or backlog
//! (attempted before, or released by a closing circuit;
//! `store::housekeeping::DueBacklog`).

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::PgStore;
use crate::store::housekeeping::{DueBacklog, DUE_SCAN};
use crate::store::StoreError;

/// Of each kind, the oldest `$2` push rows due by `$1`, walked in due
/// order on `notifications_pending_due`, grouped by endpoint: a bounded
/// range of one index however large the backlog (the plan is asserted in
/// `bounded_plan_tests`).
pub(super) const DUE_BACKLOG: &str =
    "SELECT endpoint_id, attempted, min(next_attempt_at), count(*) FROM ( \
       (SELECT endpoint_id, false AS attempted, next_attempt_at FROM notifications \
        WHERE status = 'pending' AND NOT pull AND next_attempt_at <= $1 \
          AND attempts = 0 AND NOT released_by_circuit \
        ORDER BY next_attempt_at LIMIT $2) \
       UNION ALL \
       (SELECT endpoint_id, true, next_attempt_at FROM notifications \
        WHERE status = 'pending' AND NOT pull AND next_attempt_at <= $1 \
          AND (attempts > 0 OR released_by_circuit) \
        ORDER BY next_attempt_at LIMIT $2) \
     ) due GROUP BY endpoint_id, attempted";

impl PgStore {
    pub async fn due_backlog(
        &self,
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<DueBacklog, StoreError> {
        let groups: Vec<(Uuid, bool, DateTime<Utc>, i64)> = sqlx::query_as(DUE_BACKLOG)
            .bind(now)
            .bind(DUE_SCAN)
            .fetch_all(&self.pool)
            .await?;
        Ok(DueBacklog::from_groups(groups, limit))
    }
}
