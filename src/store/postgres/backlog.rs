//! An endpoint's backlog (`store::backlog`), from the partial index of
//! pending notifications by endpoint and due time.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::PgStore;
use crate::store::backlog::{Backlog, BACKLOG_CAP};
use crate::store::StoreError;

impl PgStore {
    pub async fn endpoint_backlog(
        &self,
        endpoint: Uuid,
        now: DateTime<Utc>,
    ) -> Result<Backlog, StoreError> {
        let (pending, due, leased): (i64, i64, i64) = sqlx::query_as(
            "SELECT \
               (SELECT count(*) FROM (SELECT 1 FROM notifications \
                  WHERE endpoint_id = $1 AND status = 'pending' LIMIT $3) p), \
               (SELECT count(*) FROM (SELECT 1 FROM notifications \
                  WHERE endpoint_id = $1 AND status = 'pending' AND next_attempt_at <= $2 \
                    LIMIT $3) d), \
               (SELECT count(*) FROM (SELECT 1 FROM notifications \
                  WHERE endpoint_id = $1 AND status = 'pending' AND lease_id IS NOT NULL \
                    AND next_attempt_at > $2 LIMIT $3) l)",
        )
        .bind(endpoint)
        .bind(now)
        .bind(BACKLOG_CAP)
        .fetch_one(&self.pool)
        .await?;
        Ok(Backlog {
            pending,
            due,
            leased,
        })
    }
}
