//! Endpoint health on SQLite: failing endpoints, and disabling them with
//! their operator events in one transaction on the writer.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use sqlx::sqlite::SqliteRow;
use sqlx::Row;
use uuid::Uuid;

use super::columns::{self, micros};
use super::recording::report;
use super::{store_error, SqliteStore};
use crate::domain::operator_event::OperatorEvent;
use crate::store::health::FailingEndpoint;
use crate::store::StoreError;

impl SqliteStore {
    /// Endpoints whose every attempt has failed since before
    /// `failing_before`, live, enabled, unmanaged and push, in id order.
    pub async fn failing_endpoints(
        &self,
        failing_before: DateTime<Utc>,
    ) -> Result<Vec<FailingEndpoint>, StoreError> {
        sqlx::query(
            "SELECT id, uid, url, url_secret, failing_since, updated_at FROM endpoints \
             WHERE failing_since < ? AND disabled = 0 AND deleted_at IS NULL AND managed = 0 \
               AND url IS NOT NULL \
             ORDER BY id",
        )
        .bind(micros(failing_before))
        .try_map(|row: SqliteRow| {
            Ok(FailingEndpoint {
                id: row.try_get("id")?,
                uid: row.try_get("uid")?,
                url: row.try_get("url")?,
                url_secret: row.try_get("url_secret")?,
                failing_since: columns::time(&row, "failing_since")?,
                updated_at: columns::time(&row, "updated_at")?,
            })
        })
        .fetch_all(&self.reader)
        .await
        .map_err(store_error)
    }

    /// Disables `endpoints` (as `failing_endpoints` read them) for `reason`
    /// and, in the same transaction, inserts the `endpoint.disabled` event
    /// of each one it disables. An endpoint changed since it was read (its
    /// `failing_since` or `updated_at` differ, or it was disabled or
    /// deleted) is left alone, so no event tells of a state that is gone.
    /// Returns the ids it disabled.
    pub async fn disable_endpoints(
        &self,
        endpoints: &[FailingEndpoint],
        reason: &str,
        events: &[OperatorEvent],
    ) -> Result<Vec<Uuid>, StoreError> {
        if endpoints.is_empty() {
            return Ok(Vec::new());
        }
        let mut tx = self.writer.begin().await.map_err(store_error)?;
        // With the writer held, as `endpoints.rs` stamps every change.
        let now = micros(self.clock.now());
        let mut disabled = Vec::with_capacity(endpoints.len());
        for endpoint in endpoints {
            let done = sqlx::query(
                "UPDATE endpoints SET disabled = 1, disabled_reason = ?4, updated_at = ?5, \
                     disabled_at = ?5, version = version + 1 \
                 WHERE id = ?1 AND failing_since = ?2 AND updated_at = ?3 \
                   AND disabled = 0 AND deleted_at IS NULL",
            )
            .bind(endpoint.id)
            .bind(micros(endpoint.failing_since))
            .bind(micros(endpoint.updated_at))
            .bind(reason)
            .bind(now)
            .execute(&mut *tx)
            .await
            .map_err(store_error)?;
            if done.rows_affected() == 1 {
                disabled.push(endpoint.id);
            }
        }
        let changed: BTreeSet<Uuid> = disabled.iter().copied().collect();
        for event in events.iter().filter(|e| changed.contains(&e.subject)) {
            report(&mut tx, event, now).await?;
        }
        tx.commit().await.map_err(store_error)?;
        Ok(disabled)
    }
}
