//! Cancelling in PostgreSQL: by id, by key, by event, and the one statement
//! every cancel path uses.

use sqlx::AssertSqlSafe;
use uuid::Uuid;

use super::notifications::columns_with_body;
use super::PgStore;
use crate::store::cancel::Cancel;
use crate::store::notifications::Notification;
use crate::store::StoreError;

impl PgStore {
    /// Cancels the notification if it is pending and not `spare`'s, and
    /// reads it back (either way) in the same transaction: the row lock the
    /// cancel took keeps anyone from changing it in between.
    pub async fn cancel_notification(
        &self,
        id: Uuid,
        spare: Option<Uuid>,
    ) -> Result<Cancel, StoreError> {
        let mut tx = self.pool.begin().await?;
        let cancelled = cancel_pending(&mut *tx, Pending::One { id, spare }).await?;
        let sql = format!(
            "SELECT {} FROM notifications WHERE id = $1",
            columns_with_body()
        );
        let row = sqlx::query_as::<_, Notification>(AssertSqlSafe(sql))
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(match row {
            Some(row) if !cancelled.is_empty() => Cancel::Cancelled(row),
            Some(row) => Cancel::NotPending(row),
            None => Cancel::NotFound,
        })
    }

    /// Cancels every pending notification with this business key (on one
    /// endpoint, or on all), but `spare`'s. Returns their ids.
    pub async fn cancel_by_key(
        &self,
        key: &str,
        endpoint_id: Option<Uuid>,
        spare: Option<Uuid>,
    ) -> Result<Vec<Uuid>, StoreError> {
        cancel_pending(
            &self.pool,
            Pending::Key {
                key,
                endpoint_id,
                spare,
            },
        )
        .await
    }
}
/// Which pending notifications a cancel takes.
pub(super) enum Pending<'a> {
    Ids(&'a [Uuid]),
    /// One, unless it is `spare`'s.
    One {
        id: Uuid,
        spare: Option<Uuid>,
    },
    /// By business key, on one endpoint or on all, but `spare`.
    Key {
        key: &'a str,
        endpoint_id: Option<Uuid>,
        spare: Option<Uuid>,
    },
    /// Every one of an endpoint's.
    Endpoint(Uuid),
    /// Every delivery of an event.
    Event(Uuid),
}
/// The one cancel every path uses (by id, by key, a deleted endpoint's, a
/// dispatcher's orphans): the notification becomes final, nothing is due,
/// nothing is left to index. Only pending ones change; returns their ids.
/// Runs on the pool or inside the caller's transaction.
pub(super) async fn cancel_pending<'c>(
    executor: impl sqlx::PgExecutor<'c>,
    which: Pending<'_>,
) -> Result<Vec<Uuid>, StoreError> {
    macro_rules! cancel_where {
        ($filter:literal) => {
            concat!(
                "UPDATE notifications SET status = 'cancelled', next_attempt_at = NULL, \
                     completed_at = now(), updated_at = now(), needs_index = false, \
                     lease_id = NULL, leased_at = NULL \
                 WHERE status = 'pending' AND ",
                $filter,
                " RETURNING id"
            )
        };
    }
    // One statement per selector, each for its own index (the primary key,
    // `notifications_key`, `notifications_endpoint_newest`,
    // `notifications_event`).
    let query = match which {
        Pending::Ids(ids) => sqlx::query_scalar(cancel_where!("id = ANY($1)")).bind(ids),
        Pending::One { id, spare } => sqlx::query_scalar(cancel_where!(
            "id = $1 AND endpoint_id IS DISTINCT FROM $2"
        ))
        .bind(id)
        .bind(spare),
        Pending::Key {
            key,
            endpoint_id,
            spare,
        } => sqlx::query_scalar(cancel_where!(
            "key = $1 AND ($2::uuid IS NULL OR endpoint_id = $2) AND endpoint_id IS DISTINCT FROM $3"
        ))
        .bind(key)
        .bind(endpoint_id)
        .bind(spare),
        Pending::Endpoint(endpoint_id) => {
            sqlx::query_scalar(cancel_where!("endpoint_id = $1")).bind(endpoint_id)
        }
        Pending::Event(event_id) => {
            sqlx::query_scalar(cancel_where!("event_id = $1")).bind(event_id)
        }
    };
    Ok(query.fetch_all(executor).await?)
}
