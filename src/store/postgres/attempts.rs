//! A notification's attempts as PostgreSQL keeps them: rows of `attempts`,
//! and a first attempt that succeeded kept in its notification's row.

use uuid::Uuid;

use super::PgStore;
use crate::store::attempts::Attempt;
use crate::store::StoreError;

impl PgStore {
    /// A notification's attempts in order, after attempt number `after`: its
    /// rows of `attempts` and, when it was delivered at its first attempt,
    /// that attempt, kept in the notification's own row (`record_attempts`,
    /// which then writes no row 1; should one exist, written by a build
    /// before this one during a rolling upgrade, the attempt kept in the
    /// notification is listed, as the first one recorded).
    pub async fn list_attempts(
        &self,
        notification_id: Uuid,
        after: i32,
        limit: i64,
    ) -> Result<Vec<Attempt>, StoreError> {
        Ok(sqlx::query_as::<_, Attempt>(
            "WITH kept AS ( \
                 SELECT id, last_attempt_at, first_attempt_ms, last_status_code, first_attempt_body \
                 FROM notifications WHERE id = $1 AND first_attempt_ms IS NOT NULL \
             ) \
             SELECT notification_id, number, started_at, duration_ms, status_code, response_body, \
                 error_code, error_message, outcome, sent_headers, response_headers, retried \
             FROM attempts WHERE notification_id = $1 AND number > $2 \
               AND NOT (number = 1 AND EXISTS (SELECT 1 FROM kept)) \
             UNION ALL \
             SELECT id, 1, last_attempt_at, first_attempt_ms, last_status_code, first_attempt_body, \
                 NULL, NULL, 'succeeded', NULL, NULL, false \
             FROM kept WHERE $2 < 1 \
             ORDER BY number LIMIT $3",
        )
        .bind(notification_id)
        .bind(after)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?)
    }
}
