//! Consumer tokens on SQLite: the full read and the read of what changed
//! since, by the store's clock (taken in Rust, as every time stored here).
//!
//! Both reads run on the writer connection: every write goes through it,
//! so a read there sees every commit made before it, never a reader's
//! older snapshot.

use chrono::{DateTime, Utc};
use sqlx::sqlite::SqliteRow;
use sqlx::Row;
use uuid::Uuid;

use super::columns::micros;
use super::{store_error, SqliteStore};
use crate::domain::pull::Delivery;
use crate::store::consumer_tokens::{ConsumerTokenRow, ConsumerTokenRows};
use crate::store::StoreError;

/// Every consumer token, with its endpoint.
const ALL: &str = "SELECT t.endpoint_id, t.digest, e.deleted_at IS NOT NULL AS deleted, \
         e.delivery \
     FROM consumer_tokens t JOIN endpoints e ON e.id = t.endpoint_id";

/// The endpoints whose token was issued, or whose row changed (a delete, a
/// switch of delivery), at or after `?1`, with their token if they have
/// one; on `consumer_tokens_issued` and `endpoints_changed`. At, not only
/// after: a token issued in the microsecond of the last read, after it,
/// is read again rather than missed (reading one again changes nothing).
const CHANGED: &str = "SELECT e.id AS endpoint_id, t.digest, \
         e.deleted_at IS NOT NULL AS deleted, e.delivery \
     FROM endpoints e LEFT JOIN consumer_tokens t ON t.endpoint_id = e.id \
     WHERE e.id IN ( \
         SELECT endpoint_id FROM consumer_tokens WHERE created_at >= ?1 \
         UNION ALL \
         SELECT id FROM endpoints WHERE updated_at >= ?1)";

impl SqliteStore {
    /// Stores the digest of a new consumer token for the endpoint,
    /// replacing the one before. `false`: no such live endpoint.
    pub async fn set_consumer_token(
        &self,
        endpoint_id: Uuid,
        digest: &[u8; 32],
    ) -> Result<bool, StoreError> {
        // Stamped with the writer held, so no read of changes can come
        // between the stamp and the commit (`consumer_tokens`).
        let mut conn = self.writer.acquire().await.map_err(store_error)?;
        let stored = sqlx::query(
            "INSERT INTO consumer_tokens (endpoint_id, digest, created_at) \
             SELECT id, ?2, ?3 FROM endpoints WHERE id = ?1 AND deleted_at IS NULL \
             ON CONFLICT (endpoint_id) DO UPDATE SET digest = excluded.digest, \
                 created_at = excluded.created_at",
        )
        .bind(endpoint_id)
        .bind(&digest[..])
        .bind(micros(self.clock.now()))
        .execute(&mut *conn)
        .await
        .map_err(store_error)?;
        Ok(stored.rows_affected() == 1)
    }

    /// Every consumer token (`since` is `None`), or those of the endpoints
    /// whose token was issued or whose row changed after `since`.
    pub async fn consumer_tokens(
        &self,
        since: Option<DateTime<Utc>>,
    ) -> Result<ConsumerTokenRows, StoreError> {
        let mut conn = self.writer.acquire().await.map_err(store_error)?;
        // Taken with the connection held: a write stamped before it has
        // committed, since none can run beside this read.
        let read_at = self.clock.now();
        let read = match since {
            None => sqlx::query(ALL).fetch_all(&mut *conn).await,
            Some(since) => {
                sqlx::query(CHANGED)
                    .bind(micros(since))
                    .fetch_all(&mut *conn)
                    .await
            }
        };
        let rows = read
            .map_err(store_error)?
            .iter()
            .map(token_row)
            .collect::<Result<_, _>>()
            .map_err(store_error)?;
        Ok(ConsumerTokenRows { read_at, rows })
    }

    /// Removes the endpoint's consumer token, if it has one.
    pub async fn revoke_consumer_token(&self, endpoint_id: Uuid) -> Result<(), StoreError> {
        revoke(&self.writer, endpoint_id).await
    }
}

/// Deletes the endpoint's consumer token on `executor`: the writer, or a
/// switch to push's own transaction (`modify_endpoint`).
pub(super) async fn revoke<'e>(
    executor: impl sqlx::SqliteExecutor<'e>,
    endpoint_id: Uuid,
) -> Result<(), StoreError> {
    sqlx::query("DELETE FROM consumer_tokens WHERE endpoint_id = ?")
        .bind(endpoint_id)
        .execute(executor)
        .await
        .map_err(store_error)?;
    Ok(())
}

fn token_row(row: &SqliteRow) -> Result<ConsumerTokenRow, sqlx::Error> {
    let digest: Option<Vec<u8>> = row.try_get("digest")?;
    let delivery: String = row.try_get("delivery")?;
    Ok(ConsumerTokenRow {
        endpoint_id: row.try_get("endpoint_id")?,
        // A digest of another length is no token's.
        digest: digest.and_then(|d| <[u8; 32]>::try_from(d).ok()),
        deleted: row.try_get::<i64, _>("deleted")? != 0,
        delivery: if delivery == "pull" {
            Delivery::Pull
        } else {
            Delivery::Push
        },
    })
}
