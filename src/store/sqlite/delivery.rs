//! The dispatcher's reads and writes on SQLite: claimed notifications with
//! their endpoints, cancels of a gone endpoint's rows and the hand-over to
//! pull. Recording attempts is `recording`.

use sqlx::sqlite::SqliteRow;
use sqlx::Row;
use uuid::Uuid;

use super::columns::{self, micros, IN_ID_LIST};
use super::ordering::released;
use super::{store_error, SqliteStore};
use crate::store::cancel::Pending;
use crate::store::delivery::{stale_endpoints, Claimed, DeliveryEndpoint, DueNotification, Head};
use crate::store::StoreError;

/// A claimed notification's columns; an event's delivery has its event's
/// type and body (stored once per event), and every row its endpoint's
/// version (`NULL`: the endpoint row is gone).
const DUE_COLUMNS: &str = "n.id, n.endpoint_id, n.key, n.content_type, \
     CASE WHEN n.event_id IS NULL THEN n.event_type ELSE e.event_type END AS event_type, \
     CASE WHEN n.event_id IS NULL THEN n.body ELSE e.body END AS body, \
     n.headers, n.schedule_ms, n.schedule_name, n.status, n.attempts, n.series_start, \
     n.released_by_circuit, n.next_attempt_at, n.event_id, n.url, n.sequence, ep.version AS endpoint_version";

fn due(row: &SqliteRow) -> Result<DueNotification, sqlx::Error> {
    Ok(DueNotification {
        id: row.try_get("id")?,
        endpoint_id: row.try_get("endpoint_id")?,
        key: row.try_get("key")?,
        event_type: row.try_get("event_type")?,
        content_type: row.try_get("content_type")?,
        body: row.try_get("body")?,
        headers: columns::json(row, "headers")?,
        schedule_ms: columns::json(row, "schedule_ms")?,
        schedule_name: row.try_get("schedule_name")?,
        status: columns::status(row, "status")?,
        attempts: row.try_get("attempts")?,
        series_start: row.try_get("series_start")?,
        released_by_circuit: row.try_get::<i64, _>("released_by_circuit")? != 0,
        next_attempt_at: columns::optional_time(row, "next_attempt_at")?,
        event_id: row.try_get("event_id")?,
        url: row.try_get("url")?,
        endpoint_version: row.try_get("endpoint_version")?,
        unreadable: None,
        sequence: row.try_get("sequence")?,
    })
}

fn delivery_endpoint(row: &SqliteRow) -> Result<DeliveryEndpoint, sqlx::Error> {
    Ok(DeliveryEndpoint {
        id: row.try_get("id")?,
        uid: row.try_get("uid")?,
        version: row.try_get("version")?,
        url: row.try_get("url")?,
        secret: row.try_get("secret")?,
        previous_secrets: columns::json(row, "previous_secrets")?,
        success_body: row.try_get("success_body")?,
        success_filter: super::rows::optional_json(row, "success_filter")?,
        permanent_statuses: columns::json(row, "permanent_statuses")?,
        schedule_jitter: row.try_get("schedule_jitter")?,
        rate_limit_per_second: row.try_get("rate_limit_per_second")?,
        rate_limit_burst: row.try_get("rate_limit_burst")?,
        fresh_share: row.try_get("fresh_share")?,
        breaker: super::rows::breaker_override(row)?,
        headers: columns::json(row, "headers")?,
        timeout_ms: row.try_get("timeout_ms")?,
        max_in_flight: row.try_get("max_in_flight")?,
        disabled: row.try_get::<i64, _>("disabled")? != 0,
        deleted: row.try_get::<i64, _>("deleted")? != 0,
        pull: row.try_get::<i64, _>("pull")? != 0,
        unreadable: None,
    })
}

impl SqliteStore {
    /// Loads claimed notifications, each with its endpoint row's version,
    /// then the endpoints for which `current` says the caller's copy is not
    /// of that version: usually none, so a claim is one query.
    pub async fn load_claimed(
        &self,
        ids: &[Uuid],
        current: &(dyn Fn(Uuid, i64) -> bool + Sync),
    ) -> Result<Claimed, StoreError> {
        if ids.is_empty() {
            return Ok(Claimed::default());
        }
        let sql = format!(
            "SELECT {DUE_COLUMNS} FROM notifications n \
                 LEFT JOIN events e ON e.id = n.event_id \
                 LEFT JOIN endpoints ep ON ep.id = n.endpoint_id \
             WHERE n.id IN {IN_ID_LIST} AND {released}",
            released = released!("n")
        );
        let notifications = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(columns::id_list(ids))
            .try_map(|row: SqliteRow| due(&row))
            .fetch_all(&self.reader)
            .await
            .map_err(store_error)?;
        self.with_endpoints(notifications, current).await
    }

    /// The claimed notifications' heads: the columns a claim decides on
    /// before it reads a body.
    pub async fn load_heads(&self, ids: &[Uuid]) -> Result<Vec<Head>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT n.id, n.endpoint_id, n.status, n.next_attempt_at, n.attempts, \
                 n.released_by_circuit, ep.version AS endpoint_version \
             FROM notifications n LEFT JOIN endpoints ep ON ep.id = n.endpoint_id \
             WHERE n.id IN {IN_ID_LIST}"
        );
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(columns::id_list(ids))
            .try_map(|row: SqliteRow| {
                Ok(Head {
                    id: row.try_get("id")?,
                    endpoint_id: row.try_get("endpoint_id")?,
                    status: columns::status(&row, "status")?,
                    next_attempt_at: columns::optional_time(&row, "next_attempt_at")?,
                    attempts: row.try_get("attempts")?,
                    released_by_circuit: row.try_get::<i64, _>("released_by_circuit")? != 0,
                    endpoint_version: row.try_get("endpoint_version")?,
                })
            })
            .fetch_all(&self.reader)
            .await
            .map_err(store_error)
    }

    /// Notifications to deliver with, once each, those of their endpoints
    /// for which `current` says the caller's copy is not of the version the
    /// notification came with: usually none, and then no query at all. A
    /// deleted endpoint comes back marked `deleted`; a row gone entirely
    /// (no version) is not asked for, as in PostgreSQL.
    pub async fn with_endpoints(
        &self,
        notifications: Vec<DueNotification>,
        current: &(dyn Fn(Uuid, i64) -> bool + Sync),
    ) -> Result<Claimed, StoreError> {
        let endpoint_ids = stale_endpoints(&notifications, current);
        let endpoints = if endpoint_ids.is_empty() {
            Vec::new()
        } else {
            let sql = format!(
                "SELECT id, uid, version, COALESCE(url, '') AS url, secret, previous_secrets, \
                     success_body, success_filter, permanent_statuses, headers, timeout_ms, max_in_flight, \
                     schedule_jitter, rate_limit_per_second, rate_limit_burst, fresh_share, breaker_off, breaker_failures, breaker_open_ms, breaker_max_open_ms, \
                     disabled, (deleted_at IS NOT NULL) AS deleted, delivery = 'pull' AS pull \
                 FROM endpoints WHERE id IN {IN_ID_LIST}"
            );
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(columns::id_list(&endpoint_ids))
                .try_map(|row: SqliteRow| delivery_endpoint(&row))
                .fetch_all(&self.reader)
                .await
                .map_err(store_error)?
        };
        Ok(Claimed {
            notifications,
            endpoints,
        })
    }

    /// Cancels pending notifications whose endpoint was deleted (a create
    /// that raced the delete).
    pub async fn cancel_notifications(&self, ids: &[Uuid]) -> Result<(), StoreError> {
        if ids.is_empty() {
            return Ok(());
        }
        super::cancel::cancel_pending(&self.writer, Pending::Ids(ids), micros(self.clock.now()))
            .await?;
        Ok(())
    }

    /// Makes claimed rows of endpoints that are pull now pull rows, and
    /// tells those endpoints' consumers (in this process: one process owns
    /// the file), as PostgreSQL's statement notifies every process.
    pub async fn hand_to_pull(&self, ids: &[Uuid]) -> Result<(), StoreError> {
        if ids.is_empty() {
            return Ok(());
        }
        let moved: Vec<Uuid> = sqlx::query_scalar(
            "UPDATE notifications SET pull = 1, updated_at = ?2 \
             WHERE id IN (SELECT unhex(value) FROM json_each(?1)) \
               AND status = 'pending' AND pull = 0 \
               AND endpoint_id IN (SELECT e.id FROM endpoints e WHERE e.delivery = 'pull') \
             RETURNING endpoint_id",
        )
        .bind(columns::id_list(ids))
        .bind(micros(self.clock.now()))
        .fetch_all(&self.writer)
        .await
        .map_err(store_error)?;
        // Their consumers are told, as PostgreSQL's statement notifies.
        let mut endpoints = moved;
        endpoints.sort_unstable();
        endpoints.dedup();
        self.signal_pull(&endpoints).await
    }
}
