//! An endpoint's backlog (`store::backlog`), from the index of pending
//! notifications by endpoint and due time.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::columns::micros;
use super::{store_error, SqliteStore};
use crate::store::backlog::{Backlog, BACKLOG_CAP};
use crate::store::StoreError;

impl SqliteStore {
    pub async fn endpoint_backlog(
        &self,
        endpoint: Uuid,
        now: DateTime<Utc>,
    ) -> Result<Backlog, StoreError> {
        let (pending, due, leased): (i64, i64, i64) = sqlx::query_as(
            "SELECT \
               (SELECT count(*) FROM (SELECT 1 FROM notifications \
                  WHERE endpoint_id = ?1 AND status = 'pending' LIMIT ?3)), \
               (SELECT count(*) FROM (SELECT 1 FROM notifications \
                  WHERE endpoint_id = ?1 AND status = 'pending' AND next_attempt_at <= ?2 \
                    LIMIT ?3)), \
               (SELECT count(*) FROM (SELECT 1 FROM notifications \
                  WHERE endpoint_id = ?1 AND status = 'pending' AND lease_id IS NOT NULL \
                    AND next_attempt_at > ?2 LIMIT ?3))",
        )
        .bind(endpoint)
        .bind(micros(now))
        .bind(BACKLOG_CAP)
        .fetch_one(&self.reader)
        .await
        .map_err(store_error)?;
        Ok(Backlog {
            pending,
            due,
            leased,
        })
    }
}
