//! SQLite's side of the reseal walk (`store::sealing::reseal`, which
//! decides what each value becomes): pages of rows with a value not under
//! the current key, each page read and rewritten in one transaction on the
//! single writer, which stands for PostgreSQL's `FOR UPDATE SKIP LOCKED`
//! (nothing else writes the page meanwhile).
//!
//! A rewritten row leaves its old value (plaintext, before keys were set)
//! in the page's free space, and the page's earlier versions in the
//! write-ahead log: each page is written with `secure_delete` on (freed
//! space zeroed), and `forget_old_values` checkpoints and truncates the log
//! after the walk, so neither file keeps a copy (issue #47). Only the walk's
//! pages pay for the zeroing.

use std::collections::BTreeMap;

use sqlx::AssertSqlSafe;
use uuid::Uuid;

use super::columns::json_text;
use super::{store_error, SqliteStore};
use crate::store::endpoints::PreviousSecret;
use crate::store::seams::{EndpointSecrets, ResealEndpoint, ResealHeaders, ResealPage};
use crate::store::StoreError;

/// An endpoint row with a value not starting with `?P` (the current key's
/// `enc:v1:<id>:`): rows already done are not sent. The operator
/// endpoint's (`managed`) URL is one of its values.
const STALE_ENDPOINT: &str = "substr(secret, 1, length(?P)) <> ?P \
     OR (managed = 1 AND substr(url, 1, length(?P)) <> ?P) \
     OR EXISTS (SELECT 1 FROM json_each(endpoints.previous_secrets) p \
                WHERE substr(json_extract(p.value, '$.secret'), 1, length(?P)) <> ?P) \
     OR EXISTS (SELECT 1 FROM json_each(endpoints.headers) h \
                WHERE substr(h.value, 1, length(?P)) <> ?P)";
/// The same for a notification; most have no headers and fail the first test.
const STALE_NOTIFICATION: &str = "headers <> '{}' \
     AND EXISTS (SELECT 1 FROM json_each(notifications.headers) h \
                 WHERE substr(h.value, 1, length(?P)) <> ?P)";

/// An endpoint's sealed values as read: id, secret, previous secrets and
/// headers (JSON), and the operator endpoint's URL.
type EndpointRow = (Uuid, String, String, String, Option<String>);

fn decode<T: serde::de::DeserializeOwned>(column: &str, text: &str) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|e| {
        store_error(sqlx::Error::ColumnDecode {
            index: column.into(),
            source: e.into(),
        })
    })
}

impl SqliteStore {
    /// Rows (endpoints and notifications) with a value sealed at rest that
    /// does not start with `prefix`.
    pub async fn count_not_starting_with(&self, prefix: &str) -> Result<u64, StoreError> {
        let count: i64 = sqlx::query_scalar(AssertSqlSafe(format!(
            "SELECT (SELECT count(*) FROM endpoints WHERE {}) \
                 + (SELECT count(*) FROM notifications WHERE {})",
            stale(STALE_ENDPOINT, "?1"),
            stale(STALE_NOTIFICATION, "?1"),
        )))
        .bind(prefix)
        .fetch_one(&self.reader)
        .await
        .map_err(store_error)?;
        Ok(count as u64)
    }

    /// Up to `limit` endpoints after `after` (by id) with a value not
    /// starting with `prefix`; those `reseal` changed are written back in
    /// the same transaction.
    pub async fn reseal_endpoints(
        &self,
        after: Uuid,
        limit: i64,
        prefix: &str,
        reseal: ResealEndpoint<'_>,
    ) -> Result<ResealPage, StoreError> {
        let mut tx = self.writer.begin().await.map_err(store_error)?;
        secure_delete(&mut tx, true).await?;
        let rows: Vec<EndpointRow> = sqlx::query_as(AssertSqlSafe(format!(
            "SELECT id, secret, previous_secrets, headers, CASE WHEN managed = 1 THEN url END \
             FROM endpoints \
             WHERE id > ?1 AND ({}) ORDER BY id LIMIT ?2",
            stale(STALE_ENDPOINT, "?3")
        )))
        .bind(after)
        .bind(limit)
        .bind(prefix)
        .fetch_all(&mut *tx)
        .await
        .map_err(store_error)?;
        let next = next_page(&rows, limit, |r| r.0);
        let mut changed = 0;
        for (id, secret, previous, headers, url) in rows {
            let mut row = EndpointSecrets {
                id,
                secret,
                previous_secrets: decode::<Vec<PreviousSecret>>("previous_secrets", &previous)?,
                headers: decode("headers", &headers)?,
                url,
            };
            if !reseal(&mut row) {
                continue;
            }
            sqlx::query(
                "UPDATE endpoints SET secret = ?2, previous_secrets = ?3, headers = ?4, \
                 url = COALESCE(?5, url) WHERE id = ?1",
            )
            .bind(id)
            .bind(&row.secret)
            .bind(json_text(&row.previous_secrets))
            .bind(json_text(&row.headers))
            .bind(&row.url)
            .execute(&mut *tx)
            .await
            .map_err(store_error)?;
            changed += 1;
        }
        secure_delete(&mut tx, false).await?;
        tx.commit().await.map_err(store_error)?;
        Ok(ResealPage { next, changed })
    }

    /// The same for notifications' custom header values.
    pub async fn reseal_notifications(
        &self,
        after: Uuid,
        limit: i64,
        prefix: &str,
        reseal: ResealHeaders<'_>,
    ) -> Result<ResealPage, StoreError> {
        let mut tx = self.writer.begin().await.map_err(store_error)?;
        secure_delete(&mut tx, true).await?;
        let rows: Vec<(Uuid, String)> = sqlx::query_as(AssertSqlSafe(format!(
            "SELECT id, headers FROM notifications WHERE id > ?1 AND {} ORDER BY id LIMIT ?2",
            stale(STALE_NOTIFICATION, "?3")
        )))
        .bind(after)
        .bind(limit)
        .bind(prefix)
        .fetch_all(&mut *tx)
        .await
        .map_err(store_error)?;
        let next = next_page(&rows, limit, |r| r.0);
        let mut changed = 0;
        for (id, headers) in rows {
            let mut headers: BTreeMap<String, String> = decode("headers", &headers)?;
            if !reseal(id, &mut headers) {
                continue;
            }
            sqlx::query("UPDATE notifications SET headers = ?2 WHERE id = ?1")
                .bind(id)
                .bind(json_text(&headers))
                .execute(&mut *tx)
                .await
                .map_err(store_error)?;
            changed += 1;
        }
        secure_delete(&mut tx, false).await?;
        tx.commit().await.map_err(store_error)?;
        Ok(ResealPage { next, changed })
    }
}

impl SqliteStore {
    /// After the walk: the write-ahead log checkpointed into the file and
    /// truncated, so the earlier versions of the pages it rewrote (their
    /// plaintext) are in neither file. A read in progress keeps the log:
    /// each try waits for readers at most `CHECKPOINT_WAIT_MS` (the writer
    /// is held meanwhile, so not the configured busy timeout), then lets
    /// the writer go; after the last, `false` (a later checkpoint, or the
    /// stop, resets the log).
    pub async fn forget_old_values(&self) -> Result<bool, StoreError> {
        for _ in 0..CHECKPOINT_TRIES {
            let mut conn = self.writer.acquire().await.map_err(store_error)?;
            let configured: i64 = sqlx::query_scalar("PRAGMA busy_timeout")
                .fetch_one(&mut *conn)
                .await
                .map_err(store_error)?;
            let set = |ms: i64| AssertSqlSafe(format!("PRAGMA busy_timeout = {ms}"));
            sqlx::query(set(CHECKPOINT_WAIT_MS))
                .execute(&mut *conn)
                .await
                .map_err(store_error)?;
            // (busy, frames in the log, frames checkpointed)
            let checkpoint: Result<(i64, i64, i64), _> =
                sqlx::query_as("PRAGMA wal_checkpoint(TRUNCATE)")
                    .fetch_one(&mut *conn)
                    .await;
            sqlx::query(set(configured))
                .execute(&mut *conn)
                .await
                .map_err(store_error)?;
            drop(conn);
            if checkpoint.map_err(store_error)?.0 == 0 {
                return Ok(true);
            }
            tokio::time::sleep(CHECKPOINT_PAUSE).await;
        }
        Ok(false)
    }
}

const CHECKPOINT_TRIES: usize = 20;
const CHECKPOINT_WAIT_MS: i64 = 100;
const CHECKPOINT_PAUSE: std::time::Duration = std::time::Duration::from_millis(100);

/// `secure_delete` for the rest of the writer's transaction: a value a
/// statement replaces or deletes is overwritten with zeros in its page.
/// Set back off before the commit; a page that fails leaves it on, which
/// costs only the zeroing.
async fn secure_delete(
    tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>,
    on: bool,
) -> Result<(), StoreError> {
    let pragma = if on {
        "PRAGMA secure_delete = ON"
    } else {
        "PRAGMA secure_delete = OFF"
    };
    sqlx::query(pragma)
        .execute(&mut **tx)
        .await
        .map_err(store_error)?;
    Ok(())
}

/// Where the next page starts: after the last row of a full page.
fn next_page<T>(rows: &[T], limit: i64, id: impl Fn(&T) -> Uuid) -> Option<Uuid> {
    (rows.len() as i64 == limit)
        .then(|| rows.last().map(id))
        .flatten()
}

/// A staleness test with its parameter placeholder: constants only, so the
/// queries built with it are wrapped in `AssertSqlSafe`.
fn stale(test: &str, param: &str) -> String {
    test.replace("?P", param)
}
