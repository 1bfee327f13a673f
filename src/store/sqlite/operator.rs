//! The managed operator endpoint on SQLite, kept in step with
//! `operator.url` (values stored as given: a sealing wrapper seals them).

use super::columns::{json_text, micros};
use super::{store_error, SqliteStore};
use crate::domain::operator_event::OPERATOR_ENDPOINT_ID;
use crate::domain::schedule::Schedule;
use crate::store::seams::OperatorTarget;
use crate::store::StoreError;

impl SqliteStore {
    /// Makes the managed operator endpoint match `target`: created or
    /// updated when set (written only when `target.unchanged` says the
    /// stored values differ, or it was deleted or disabled), deleted when
    /// not.
    pub async fn sync_operator_endpoint(
        &self,
        target: Option<OperatorTarget<'_>>,
    ) -> Result<(), StoreError> {
        let now = micros(self.clock.now());
        let Some(target) = target else {
            sqlx::query(
                "UPDATE endpoints SET deleted_at = ?2, updated_at = ?2, version = version + 1 \
                 WHERE id = ?1 AND deleted_at IS NULL",
            )
            .bind(OPERATOR_ENDPOINT_ID)
            .bind(now)
            .execute(&self.writer)
            .await
            .map_err(store_error)?;
            return Ok(());
        };
        let mut tx = self.writer.begin().await.map_err(store_error)?;
        let current: Option<(Option<String>, String, bool, bool)> = sqlx::query_as(
            "SELECT url, secret, deleted_at IS NOT NULL, disabled = 1 FROM endpoints WHERE id = ?",
        )
        .bind(OPERATOR_ENDPOINT_ID)
        .fetch_optional(&mut *tx)
        .await
        .map_err(store_error)?;
        match current {
            None => {
                let schedule = Schedule::default();
                sqlx::query(
                    "INSERT INTO endpoints (id, url, description, secret, schedule_ms, \
                         schedule_name, managed, created_at, updated_at) \
                     VALUES (?1, ?2, 'hookd operator events (operator.url)', ?3, ?4, ?5, 1, ?6, ?6)",
                )
                .bind(OPERATOR_ENDPOINT_ID)
                .bind(target.url.as_ref())
                .bind(target.secret.as_ref())
                .bind(json_text(&schedule.delays_ms()))
                .bind(schedule.name())
                .bind(now)
                .execute(&mut *tx)
                .await
                .map_err(store_error)?;
            }
            Some((stored_url, stored_secret, deleted, disabled)) => {
                let stored_url = stored_url.unwrap_or_default();
                if !(target.unchanged)(&stored_url, &stored_secret) || deleted || disabled {
                    sqlx::query(
                        "UPDATE endpoints SET url = ?2, secret = ?3, deleted_at = NULL, \
                             disabled = 0, disabled_at = NULL, updated_at = ?4, version = version + 1 WHERE id = ?1",
                    )
                    .bind(OPERATOR_ENDPOINT_ID)
                    .bind(target.url.as_ref())
                    .bind(target.secret.as_ref())
                    .bind(now)
                    .execute(&mut *tx)
                    .await
                    .map_err(store_error)?;
                }
            }
        }
        tx.commit().await.map_err(store_error)?;
        Ok(())
    }
}
