//! The event types an endpoint was sent lately, in PostgreSQL: what a
//! portal `manage` link offers to choose from (`GET
//! /v1/endpoints/{id}/event-types`).

use uuid::Uuid;

use super::PgStore;
use crate::store::StoreError;

/// `RECENT_EVENT_TYPES` for an owner condition: each source newest first on
/// its own index, at most `$4` rows each. The events are ordered by owner
/// too, which the condition makes one value: PostgreSQL takes `IS NULL`
/// for no equality, and would sort the owner's window without it.
macro_rules! recent_event_types {
    ($owner:literal) => {
        concat!(
            "SELECT DISTINCT t FROM ( \
             (SELECT e.event_type AS t FROM events e WHERE ",
            $owner,
            " AND e.id > $3 ORDER BY e.owner, e.id DESC LIMIT $4) \
             UNION ALL \
             (SELECT n.event_type FROM notifications n \
              WHERE n.endpoint_id = $1 AND n.id > $3 ORDER BY n.id DESC LIMIT $4)) recent \
             WHERE t IS NOT NULL"
        )
    };
}

impl PgStore {
    /// `ReadStore::recent_event_types`: each source read newest first on
    /// its own index (`events_owner_newest`, `notifications_endpoint_newest`),
    /// at most `per_source` rows.
    pub async fn recent_event_types(
        &self,
        endpoint_id: Uuid,
        owner: Option<&str>,
        since: Uuid,
        per_source: i64,
    ) -> Result<Vec<String>, StoreError> {
        let statement = RECENT_EVENT_TYPES[usize::from(owner.is_none())];
        Ok(sqlx::query_scalar(statement)
            .bind(endpoint_id)
            .bind(owner)
            .bind(since)
            .bind(per_source)
            .fetch_all(&self.pool)
            .await?)
    }
}

/// `recent_event_types`, for an endpoint with an owner (`$2`) or without
/// one (`$2` unused): two statements, so that each plans on
/// `events_owner_newest` in its order (an `OR` of the two would not).
pub(super) const RECENT_EVENT_TYPES: [&str; 2] = [
    recent_event_types!("e.owner = $2"),
    recent_event_types!("e.owner IS NULL AND $2::text IS NULL"),
];
