//! Cancels and retries by hand on SQLite, and the fan-out's subscribers.
//!
//! Whether a notification may be cancelled or retried is decided in
//! `domain::transition` on the row read in a transaction on the single
//! writer (which stands for PostgreSQL's row lock); the write carries the
//! decision. The set-based cancels all go through `cancel_pending`, which
//! selects `status = 'pending'` (`Status::cancellable`), as PostgreSQL's
//! does.

use chrono::{DateTime, Utc};
use sqlx::sqlite::SqliteRow;
use sqlx::{Row, SqliteConnection};
use uuid::Uuid;

use super::columns::{self, micros, NOTIFICATION_BODY, NOTIFICATION_COLUMNS};
use super::{store_error, SqliteStore};
use crate::domain::lease::Lease;
use crate::domain::ordering::KeyOrdering;
use crate::domain::pull::Delivery;
use crate::domain::transition::{cancel, Retried};
use crate::store::cancel::{Cancel, Pending};
use crate::store::delivery::{retry_notification, Retry, RetryRead, RetryStep};
use crate::store::events::Subscriber;
use crate::store::notifications::Notification;
use crate::store::StoreError;

/// What a cancel makes of every pending row it takes
/// (`transition::cancel`'s result for one: cancelled, nothing due, final,
/// no lease); `?1` is now.
macro_rules! cancel_where {
    ($filter:literal) => {
        concat!(
            "UPDATE notifications SET status = 'cancelled', next_attempt_at = NULL, \
                 completed_at = ?1, updated_at = ?1, needs_index = 0, \
                 lease_id = NULL, leased_at = NULL \
             WHERE status = 'pending' AND ",
            $filter,
            " RETURNING id"
        )
    };
}

/// `cancel_pending`'s statement for each selector, each for its index
/// (the primary key, `key`'s, the endpoint's, the event's).
pub(super) const CANCEL_IDS: &str = cancel_where!("id IN (SELECT unhex(value) FROM json_each(?2))");
pub(super) const CANCEL_KEY: &str =
    cancel_where!("key = ?2 AND (?3 IS NULL OR endpoint_id = ?3) AND endpoint_id IS NOT ?4");
pub(super) const CANCEL_ENDPOINT: &str = cancel_where!("endpoint_id = ?2");
pub(super) const CANCEL_EVENT: &str = cancel_where!("event_id = ?2");
pub(super) const CANCEL_OTHER_OWNERS: &str = cancel_where!(
    "endpoint_id = ?2 AND EXISTS (SELECT 1 FROM events e \
         WHERE e.id = notifications.event_id AND e.owner IS NOT ?3)"
);

/// The one cancel every set-based path uses (by key, an event's, a
/// deleted endpoint's, a create that raced a delete, orphaned pulls), as
/// PostgreSQL's `cancel_pending`: every pending row it selects becomes
/// what `transition::cancel` makes of one (cancelled, nothing due, final,
/// no lease), stamped `now` (micros). Runs on the writer or inside the
/// caller's transaction; returns the ids it cancelled.
pub(super) async fn cancel_pending<'c>(
    executor: impl sqlx::SqliteExecutor<'c>,
    which: Pending<'_>,
    now: i64,
) -> Result<Vec<Uuid>, StoreError> {
    let query = match which {
        Pending::Ids(ids) => sqlx::query_scalar(CANCEL_IDS)
            .bind(now)
            .bind(columns::id_list(ids)),
        Pending::Key {
            key,
            endpoint_id,
            spare,
        } => sqlx::query_scalar(CANCEL_KEY)
            .bind(now)
            .bind(key)
            .bind(endpoint_id)
            .bind(spare),
        Pending::Endpoint(endpoint_id) => sqlx::query_scalar(CANCEL_ENDPOINT)
            .bind(now)
            .bind(endpoint_id),
        Pending::Event(event_id) => sqlx::query_scalar(CANCEL_EVENT).bind(now).bind(event_id),
        Pending::OtherOwners { endpoint_id, owner } => sqlx::query_scalar(CANCEL_OTHER_OWNERS)
            .bind(now)
            .bind(endpoint_id)
            .bind(owner),
    };
    query.fetch_all(executor).await.map_err(store_error)
}

/// The notification as the API returns it, read at `at` (its lease).
async fn row_of(
    conn: &mut SqliteConnection,
    id: Uuid,
    at: DateTime<Utc>,
) -> Result<Option<Notification>, StoreError> {
    let sql = format!(
        "SELECT {NOTIFICATION_COLUMNS}, {NOTIFICATION_BODY} FROM notifications WHERE id = ?"
    );
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(id)
        .try_map(|row: SqliteRow| columns::notification(&row, Some(at)))
        .fetch_optional(&mut *conn)
        .await
        .map_err(store_error)
}

impl SqliteStore {
    /// Cancels the notification if `domain::transition::cancel` allows it
    /// (pending, and not `spare`'s), and returns it (either way) as it
    /// then is.
    pub async fn cancel_notification(
        &self,
        id: Uuid,
        spare: Option<Uuid>,
    ) -> Result<Cancel, StoreError> {
        let now = self.clock.now();
        let mut tx = self.writer.begin().await.map_err(store_error)?;
        let Some(row) = row_of(&mut tx, id, now).await? else {
            return Ok(Cancel::NotFound);
        };
        let decided = cancel(row.status, spare == Some(row.endpoint_id));
        let row = match decided {
            Ok(cancelled) => {
                sqlx::query(
                    "UPDATE notifications SET status = ?2, next_attempt_at = ?3, \
                         completed_at = ?4, updated_at = ?4, needs_index = 0, \
                         lease_id = NULL, leased_at = NULL WHERE id = ?1",
                )
                .bind(id)
                .bind(cancelled.status.as_str())
                .bind(cancelled.next_attempt_at.map(micros))
                .bind(micros(now))
                .execute(&mut *tx)
                .await
                .map_err(store_error)?;
                row_of(&mut tx, id, now).await?.unwrap_or(row)
            }
            Err(_) => row,
        };
        tx.commit().await.map_err(store_error)?;
        Ok(match decided {
            Ok(_) => Cancel::Cancelled(row),
            Err(_) => Cancel::NotPending(row),
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
            &self.writer,
            Pending::Key {
                key,
                endpoint_id,
                spare,
            },
            micros(self.clock.now()),
        )
        .await
    }

    /// Cancels an event's pending deliveries; `None`: no such event.
    pub async fn cancel_event(&self, id: Uuid) -> Result<Option<Vec<Uuid>>, StoreError> {
        let mut tx = self.writer.begin().await.map_err(store_error)?;
        let exists: Option<i64> = sqlx::query_scalar("SELECT 1 FROM events WHERE id = ?")
            .bind(id)
            .fetch_optional(&mut *tx)
            .await
            .map_err(store_error)?;
        if exists.is_none() {
            return Ok(None);
        }
        // Deliveries a fan-out still has to write are cancelled too.
        super::fanout::finish_plans_in(&mut tx).await?;
        let ids = cancel_pending(&mut *tx, Pending::Event(id), micros(self.clock.now())).await?;
        tx.commit().await.map_err(store_error)?;
        Ok(Some(ids))
    }

    /// Starts a new attempt series now for a failed or pending
    /// notification, as `store::delivery::retry_notification` decides on
    /// the row read in the writer's transaction, with this operation's
    /// clock (whether a consumer's lease still runs); `delivering`: the due
    /// index holds a lease on it. A refusal comes back with the row as it
    /// is.
    pub async fn retry_notification(
        &self,
        id: Uuid,
        now: DateTime<Utc>,
        delivering: bool,
    ) -> Result<Retry, StoreError> {
        let read_at = self.clock.now();
        let tx = self.writer.begin().await.map_err(store_error)?;
        let step = SqliteRetry {
            tx,
            read_at,
            row: None,
        };
        retry_notification(step, id, now, delivering).await
    }

    /// The live, enabled endpoints of these owners: fan-out candidates.
    pub async fn subscribers(
        &self,
        owners: &[Option<String>],
    ) -> Result<Vec<Subscriber>, StoreError> {
        let named: Vec<&str> = owners.iter().flatten().map(String::as_str).collect();
        let unowned = owners.iter().any(Option::is_none);
        sqlx::query(
            "SELECT id, owner, event_types, filter, schedule_ms, schedule_name, delivery, ordering \
             FROM endpoints \
             WHERE (owner IN (SELECT value FROM json_each(?1)) OR (?2 AND owner IS NULL)) \
               AND deleted_at IS NULL AND disabled = 0 AND managed = 0 \
             ORDER BY owner, id",
        )
        .bind(columns::json_text(&named))
        .bind(unowned)
        .try_map(|row: SqliteRow| {
            let event_types: Option<String> = row.try_get("event_types")?;
            let delivery: String = row.try_get("delivery")?;
            Ok(Subscriber {
                id: row.try_get("id")?,
                owner: row.try_get("owner")?,
                event_types: event_types
                    .map(|text| serde_json::from_str(&text))
                    .transpose()
                    .map_err(|e| sqlx::Error::ColumnDecode {
                        index: "event_types".into(),
                        source: e.into(),
                    })?,
                filter: super::rows::optional_json(&row, "filter")?,
                schedule_ms: columns::json(&row, "schedule_ms")?,
                schedule_name: row.try_get("schedule_name")?,
                delivery: if delivery == "pull" {
                    Delivery::Pull
                } else {
                    Delivery::Push
                },
                ordering: if row.try_get::<String, _>("ordering")? == "key" {
                    KeyOrdering::Key
                } else {
                    KeyOrdering::None
                },
            })
        })
        .fetch_all(&self.reader)
        .await
        .map_err(store_error)
    }
}

/// A retry's read and write in the writer's transaction, at `read_at`;
/// `row`: the row as read.
struct SqliteRetry {
    tx: sqlx::Transaction<'static, sqlx::Sqlite>,
    read_at: DateTime<Utc>,
    row: Option<Notification>,
}

#[async_trait::async_trait]
impl RetryStep for SqliteRetry {
    async fn read(&mut self, id: Uuid) -> Result<Option<RetryRead>, StoreError> {
        let Some(row) = row_of(&mut self.tx, id, self.read_at).await? else {
            return Ok(None);
        };
        let (lease_id, leased_at, endpoint_deleted): (Option<Uuid>, Option<i64>, bool) =
            sqlx::query_as(
                "SELECT n.lease_id, n.leased_at, ep.id IS NULL OR ep.deleted_at IS NOT NULL \
                 FROM notifications n LEFT JOIN endpoints ep ON ep.id = n.endpoint_id \
                 WHERE n.id = ?",
            )
            .bind(id)
            .fetch_one(&mut *self.tx)
            .await
            .map_err(store_error)?;
        let leased_at = leased_at
            .map(|us| columns::time_of("leased_at", us))
            .transpose()
            .map_err(store_error)?;
        let read = RetryRead {
            status: row.status,
            attempts: row.attempts,
            lease: Lease::stored(lease_id, leased_at, row.next_attempt_at),
            endpoint_deleted,
            read_at: self.read_at,
        };
        self.row = Some(row);
        Ok(Some(read))
    }

    async fn write(
        &mut self,
        id: Uuid,
        retried: &Retried,
        read_at: DateTime<Utc>,
    ) -> Result<Notification, StoreError> {
        sqlx::query(
            "UPDATE notifications SET status = ?2, series_start = ?3, \
                 next_attempt_at = ?4, completed_at = NULL, needs_index = 0, \
                 lease_id = NULL, leased_at = NULL, updated_at = ?5 WHERE id = ?1",
        )
        .bind(id)
        .bind(retried.status.as_str())
        .bind(retried.series_start)
        .bind(micros(retried.next_attempt_at))
        .bind(micros(read_at))
        .execute(&mut *self.tx)
        .await
        .map_err(store_error)?;
        match row_of(&mut self.tx, id, read_at).await? {
            Some(row) => Ok(row),
            None => self.row(id).await,
        }
    }

    async fn row(&mut self, _id: Uuid) -> Result<Notification, StoreError> {
        Ok(self
            .row
            .take()
            .expect("a retry writes or refuses the row it read"))
    }

    async fn requeue(&mut self, row: &Notification) -> Result<Option<Uuid>, StoreError> {
        match crate::store::ordering::Requeued::of(row) {
            Some(again) => super::ordering::requeue(&mut self.tx, again, &[]).await,
            None => Ok(None),
        }
    }

    async fn commit(self) -> Result<(), StoreError> {
        self.tx.commit().await.map_err(store_error)
    }
}
