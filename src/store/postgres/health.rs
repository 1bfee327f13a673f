//! Endpoint health in PostgreSQL: failing endpoints, and disabling them with
//! their operator events.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::operator::{insert_operator_events, EventBinds};
use super::PgStore;
use crate::domain::operator_event::{OperatorEvent, OPERATOR_ENDPOINT_ID};
use crate::store::health::FailingEndpoint;
use crate::store::StoreError;

impl PgStore {
    /// Endpoints whose every attempt has failed since before
    /// `failing_before`, live and enabled, in id order: the ones to disable.
    /// Only push endpoints (with a URL) keep a health record; a pull
    /// endpoint's consumers decide its pace, and a switch to pull clears
    /// `failing_since`.
    pub async fn failing_endpoints(
        &self,
        failing_before: DateTime<Utc>,
    ) -> Result<Vec<FailingEndpoint>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT id, uid, url, url_secret, failing_since, updated_at FROM endpoints \
             WHERE failing_since < $1 AND NOT disabled AND deleted_at IS NULL AND NOT managed \
               AND url IS NOT NULL \
             ORDER BY id",
        )
        .bind(failing_before)
        .fetch_all(&self.pool)
        .await?)
    }

    /// Disables `endpoints` (as `failing_endpoints` read them) for `reason`
    /// and, in the same statement, inserts the `endpoint.disabled` event of
    /// each one it disables. An endpoint changed since it was read (a
    /// success ended its run of failures, someone changed or disabled or
    /// deleted it) is left alone, so no event tells of a state that is gone.
    /// Rows are locked in id order, as the recorder locks them. Returns the
    /// ids it disabled.
    pub async fn disable_endpoints(
        &self,
        endpoints: &[FailingEndpoint],
        reason: &str,
        events: &[OperatorEvent],
    ) -> Result<Vec<Uuid>, StoreError> {
        if endpoints.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<Uuid> = endpoints.iter().map(|e| e.id).collect();
        let failing_since: Vec<DateTime<Utc>> = endpoints.iter().map(|e| e.failing_since).collect();
        let updated_at: Vec<DateTime<Utc>> = endpoints.iter().map(|e| e.updated_at).collect();
        let events: EventBinds<'_> = events.iter().collect();
        Ok(sqlx::query_scalar(concat!(
            "WITH read AS ( \
                 SELECT * FROM UNNEST($1::uuid[], $2::timestamptz[], $3::timestamptz[]) \
                 AS r(id, failing_since, updated_at) \
             ), locked AS MATERIALIZED ( \
                 SELECT e.id FROM endpoints e JOIN read r ON r.id = e.id \
                 WHERE e.failing_since = r.failing_since AND e.updated_at = r.updated_at \
                   AND NOT e.disabled AND e.deleted_at IS NULL \
                 ORDER BY e.id FOR NO KEY UPDATE OF e \
             ), disabled AS ( \
                 UPDATE endpoints e SET disabled = true, disabled_reason = $4, updated_at = $11, \
                     disabled_at = $11, version = e.version + 1 \
                 FROM locked l WHERE e.id = l.id RETURNING e.id \
             ), ",
            insert_operator_events!("disabled", "$10", "$5", "$6", "$7", "$8", "$9", "$11"),
            " SELECT id FROM disabled"
        ))
        .bind(&ids)
        .bind(&failing_since)
        .bind(&updated_at)
        .bind(reason)
        .bind(&events.subjects)
        .bind(&events.types)
        .bind(&events.keys)
        .bind(&events.bodies)
        .bind(OPERATOR_ENDPOINT_ID)
        .bind(&events.ids)
        .bind(self.clock.now())
        .fetch_all(&self.pool)
        .await?)
    }
}
