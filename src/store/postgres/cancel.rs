//! Cancelling in PostgreSQL: by id, by key, by event, and the one statement
//! every cancel path uses.
//!
//! Whether a notification may be cancelled, and what a cancel makes of it,
//! is `domain::transition::cancel`. A cancel by id reads the row under its
//! lock, asks, and writes the result. The set-based cancels (by key, an
//! event's, an endpoint's, orphans) select with `status = 'pending'`:
//! `Status::cancellable` rendered for the indexes they use, so the rows
//! they write are exactly those the domain would cancel; their SET is
//! `cancel`'s result for such a row (cancelled, nothing due, final, no
//! lease), the same constant for every row.

use sqlx::{AssertSqlSafe, PgConnection, PgPool};
use uuid::Uuid;

use super::notifications::columns_with_body;
use super::partitions::id_span;
use super::releasing::{release_ended_apart, release_in_batch};
use super::PgStore;
use crate::domain::transition::cancel;
use crate::store::cancel::{Cancel, Pending};
use crate::store::notifications::Notification;
use crate::store::StoreError;

impl PgStore {
    /// Cancels the notification if `domain::transition::cancel` allows it
    /// (pending, and not `spare`'s), on the row read under its lock, and
    /// returns it (either way) as it then is.
    ///
    /// An ordered one's predecessor is locked first (`FOR SHARE`), so a
    /// cancel of a key's tail waits for a recording of its predecessor's
    /// end, and its release trigger then reads that end: otherwise each
    /// can read the other as pending and leave the key's tail naming one
    /// that ended (`store::ordering`). The predecessor before the row, as
    /// the recorder and the release trigger take them (an end, then what
    /// waits for it); a set-based cancel of both at once may take them the
    /// other way round, and PostgreSQL then fails one of the two, whose
    /// caller gets a 503. A predecessor that changed in between (passed
    /// over meanwhile) is locked again.
    pub async fn cancel_notification(
        &self,
        id: Uuid,
        spare: Option<Uuid>,
    ) -> Result<Cancel, StoreError> {
        let mut tries = 0;
        loop {
            tries += 1;
            if let Some(done) = self.cancel_once(id, spare, tries == 3).await? {
                return Ok(done);
            }
        }
    }

    /// One try of `cancel_notification`; `None`: the predecessor changed
    /// after it was locked, and `last` is false.
    async fn cancel_once(
        &self,
        id: Uuid,
        spare: Option<Uuid>,
        last: bool,
    ) -> Result<Option<Cancel>, StoreError> {
        let mut tx = self.pool.begin().await?;
        let locked: Option<Uuid> = sqlx::query_scalar(
            "SELECT p.id FROM notifications p \
             WHERE p.id = (SELECT behind FROM notifications WHERE id = $1) FOR SHARE OF p",
        )
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?;
        let sql = format!(
            "SELECT {} FROM notifications WHERE id = $1 FOR UPDATE",
            columns_with_body()
        );
        let row = sqlx::query_as::<_, Notification>(AssertSqlSafe(sql))
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?;
        let Some(row) = row else {
            return Ok(Some(Cancel::NotFound));
        };
        if locked.is_some() && !last {
            let behind: Option<Uuid> =
                sqlx::query_scalar("SELECT behind FROM notifications WHERE id = $1")
                    .bind(id)
                    .fetch_one(&mut *tx)
                    .await?;
            if behind != locked {
                return Ok(None);
            }
        }
        let decided = cancel(row.status, spare == Some(row.endpoint_id));
        let row = match decided {
            Ok(cancelled) => {
                let sql = format!(
                    "UPDATE notifications SET status = $2, next_attempt_at = $3, \
                         completed_at = $4, updated_at = $4, needs_index = false, \
                         lease_id = NULL, leased_at = NULL \
                     WHERE id = $1 RETURNING {}",
                    columns_with_body()
                );
                sqlx::query_as::<_, Notification>(AssertSqlSafe(sql))
                    .bind(id)
                    .bind(cancelled.status)
                    .bind(cancelled.next_attempt_at)
                    .bind(self.clock.now())
                    .fetch_one(&mut *tx)
                    .await?
            }
            Err(_) => row,
        };
        tx.commit().await?;
        Ok(Some(match (decided, row) {
            (Ok(_), row) => Cancel::Cancelled(row),
            (Err(_), row) => Cancel::NotPending(row),
        }))
    }

    /// Cancels every pending notification with this business key (on one
    /// endpoint, or on all), but `spare`'s. Returns their ids.
    pub async fn cancel_by_key(
        &self,
        key: &str,
        endpoint_id: Option<Uuid>,
        spare: Option<Uuid>,
    ) -> Result<Vec<Uuid>, StoreError> {
        cancel_pending_now(
            &self.pool,
            Pending::Key {
                key,
                endpoint_id,
                spare,
            },
            self.clock.now(),
        )
        .await
    }
}
/// The one cancel every path uses (by id, by key, a deleted endpoint's, a
/// dispatcher's orphans): the notification becomes final, nothing is due,
/// nothing is left to index. Only pending ones change; returns their ids.
/// Runs inside the caller's transaction (`cancel_pending_now` on the
/// pool); stamps the rows at `now` (the store's clock). What the ordered
/// ones release is released after the update, their key rows taken in a
/// create's order (`releasing::release_ended_apart`).
pub(super) async fn cancel_pending(
    conn: &mut PgConnection,
    which: Pending<'_>,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Vec<Uuid>, StoreError> {
    // `$now` is the parameter after the selector's.
    macro_rules! cancel_where {
        ($now:literal, $filter:literal) => {
            concat!(
                "UPDATE notifications SET status = 'cancelled', next_attempt_at = NULL, \
                     completed_at = ",
                $now,
                ", updated_at = ",
                $now,
                ", needs_index = false, \
                     lease_id = NULL, leased_at = NULL \
                 WHERE status = 'pending' AND ",
                $filter,
                " RETURNING id, sequence IS NOT NULL"
            )
        };
    }
    // One statement per selector, each for its own index (the primary key,
    // `notification_keys`' then the primary key, `notifications_endpoint_newest`,
    // `notifications_event`).
    let query = match which {
        Pending::Ids(ids) => {
            let (low, high) = id_span(ids);
            sqlx::query_as(cancel_where!("$4", "id = ANY($1) AND id BETWEEN $2 AND $3"))
                .bind(ids)
                .bind(low)
                .bind(high)
                .bind(now)
        }
        Pending::Key {
            key,
            endpoint_id,
            spare,
        } => sqlx::query_as(cancel_where!(
            "$4",
            "id IN (SELECT k.id FROM notification_keys k WHERE k.key = $1 \
                 AND ($2::uuid IS NULL OR k.endpoint_id = $2) AND k.endpoint_id IS DISTINCT FROM $3)"
        ))
        .bind(key)
        .bind(endpoint_id)
        .bind(spare)
        .bind(now),
        Pending::Endpoint(endpoint_id) => {
            sqlx::query_as(cancel_where!("$2", "endpoint_id = $1"))
                .bind(endpoint_id)
                .bind(now)
        }
        Pending::Event(event_id) => sqlx::query_as(cancel_where!("$2", "event_id = $1"))
            .bind(event_id)
            .bind(now),
        Pending::OtherOwners { endpoint_id, owner } => sqlx::query_as(cancel_where!(
            "$3",
            "endpoint_id = $1 AND EXISTS (SELECT 1 FROM events e \
                 WHERE e.id = notifications.event_id AND e.owner IS DISTINCT FROM $2)"
        ))
        .bind(endpoint_id)
        .bind(owner)
        .bind(now),
    };
    release_in_batch(&mut *conn).await?;
    let cancelled: Vec<(Uuid, bool)> = query.fetch_all(&mut *conn).await?;
    let ordered = cancelled.iter().filter(|c| c.1).map(|c| c.0).collect();
    release_ended_apart(conn, ordered, now).await?;
    Ok(cancelled.into_iter().map(|c| c.0).collect())
}

/// `cancel_pending` in a transaction of its own.
pub(super) async fn cancel_pending_now(
    pool: &PgPool,
    which: Pending<'_>,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Vec<Uuid>, StoreError> {
    let mut tx = pool.begin().await?;
    let cancelled = cancel_pending(&mut tx, which, now).await?;
    tx.commit().await?;
    Ok(cancelled)
}
