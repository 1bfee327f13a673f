//! Consumer tokens in PostgreSQL: the full read and the read of what changed
//! since, by the store's clock (`crate::clock`).

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::PgStore;
use crate::domain::pull::Delivery;
use crate::store::consumer_tokens::ConsumerTokenRow;
use crate::store::consumer_tokens::ConsumerTokenRows;
use crate::store::StoreError;

/// A row as PostgreSQL returns it (endpoint id, digest, deleted, delivery):
/// all `NULL` when nothing changed (one row either way; the clock it was
/// read at is the store's, taken before).
type Read = (
    Option<Uuid>,
    Option<Vec<u8>>,
    Option<bool>,
    Option<Delivery>,
);
/// Every consumer token, with its endpoint.
const ALL: &str = "SELECT c.endpoint_id, c.digest, c.deleted, c.delivery \
     FROM (VALUES (1)) AS one (x) LEFT JOIN ( \
         SELECT t.endpoint_id, t.digest, e.deleted_at IS NOT NULL AS deleted, e.delivery \
         FROM consumer_tokens t JOIN endpoints e ON e.id = t.endpoint_id \
     ) AS c ON true";
/// The endpoints whose token was issued, or whose row changed (a delete, a
/// switch of delivery), in `($1, $2)`, with their token if they have one.
/// Both bounds are always given: a generic plan takes a range with two
/// parameters for a small slice of its index (`consumer_tokens_issued`,
/// `endpoints_changed`), where `> $1` alone reads as a third of the table.
pub(crate) const CHANGED: &str = "SELECT c.endpoint_id, c.digest, c.deleted, c.delivery \
     FROM (VALUES (1)) AS one (x) LEFT JOIN ( \
         SELECT e.id AS endpoint_id, t.digest, e.deleted_at IS NOT NULL AS deleted, e.delivery \
         FROM endpoints e LEFT JOIN consumer_tokens t ON t.endpoint_id = e.id \
         WHERE e.id IN ( \
             SELECT endpoint_id FROM consumer_tokens WHERE created_at > $1 AND created_at < $2 \
             UNION ALL \
             SELECT id FROM endpoints WHERE updated_at > $1 AND updated_at < $2) \
     ) AS c ON true";
impl PgStore {
    /// Every consumer token (`since` is `None`), or those of the endpoints
    /// whose token was issued or whose row changed after `since`.
    pub async fn consumer_tokens(
        &self,
        since: Option<DateTime<Utc>>,
    ) -> Result<ConsumerTokenRows, StoreError> {
        // Before the read: a change it misses is after this, and the next
        // read finds it.
        let read_at = self.clock.now();
        let read: Vec<Read> = match since {
            None => sqlx::query_as(ALL).fetch_all(&self.pool).await?,
            Some(since) => {
                sqlx::query_as(CHANGED)
                    .bind(since)
                    .bind(far_future())
                    .fetch_all(&self.pool)
                    .await?
            }
        };
        let rows = read
            .into_iter()
            .filter_map(|(endpoint_id, digest, deleted, delivery)| {
                Some(ConsumerTokenRow {
                    endpoint_id: endpoint_id?,
                    // A digest of another length is no token's.
                    digest: digest.and_then(|d| <[u8; 32]>::try_from(d).ok()),
                    deleted: deleted?,
                    delivery: delivery?,
                })
            })
            .collect();
        Ok(ConsumerTokenRows { read_at, rows })
    }

    /// Removes the endpoint's consumer token, if it has one.
    pub async fn revoke_consumer_token(&self, endpoint_id: Uuid) -> Result<(), StoreError> {
        revoke(&self.pool, endpoint_id).await
    }
}

/// Deletes the endpoint's consumer token on `executor`: the pool, or a
/// switch to push's own transaction (`modify_endpoint`).
pub(super) async fn revoke<'e>(
    executor: impl sqlx::PgExecutor<'e>,
    endpoint_id: Uuid,
) -> Result<(), StoreError> {
    sqlx::query("DELETE FROM consumer_tokens WHERE endpoint_id = $1")
        .bind(endpoint_id)
        .execute(executor)
        .await?;
    Ok(())
}
/// After every time a row can have: the open end of `CHANGED`'s range.
fn far_future() -> DateTime<Utc> {
    chrono::NaiveDate::from_ymd_opt(9999, 12, 31)
        .and_then(|day| day.and_hms_opt(0, 0, 0))
        .expect("a valid date")
        .and_utc()
}
