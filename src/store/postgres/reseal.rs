//! PostgreSQL's side of the reseal walk (`store::sealing::reseal`, which
//! decides what each value becomes): pages of rows with a value not under
//! the current key, each page in a small transaction that locks its rows
//! with `FOR UPDATE SKIP LOCKED`: several processes starting together share
//! the work instead of waiting on each other, and a row another transaction
//! holds is being written by a path that seals under the current key
//! anyway.

use std::collections::BTreeMap;

use sqlx::types::Json;
use sqlx::AssertSqlSafe;
use uuid::Uuid;

use super::PgStore;
use crate::store::endpoints::PreviousSecret;
use crate::store::seams::{EndpointSecrets, ResealEndpoint, ResealHeaders, ResealPage, ResealRows};
use crate::store::StoreError;

/// An endpoint row with a value not starting with `$PREFIX`, the current
/// key's `enc:v1:<id>:`: rows already done are neither locked nor sent.
/// The operator endpoint's (`managed`) URL is one of its values.
const STALE_ENDPOINT: &str = "NOT starts_with(secret, $PREFIX) \
     OR (managed AND NOT starts_with(url, $PREFIX)) \
     OR EXISTS (SELECT 1 FROM jsonb_array_elements(previous_secrets) p \
                WHERE NOT starts_with(p->>'secret', $PREFIX)) \
     OR EXISTS (SELECT 1 FROM jsonb_each_text(headers) h WHERE NOT starts_with(h.value, $PREFIX))";
/// The same for a notification; most have no headers and fail the first test.
const STALE_NOTIFICATION: &str = "headers <> '{}'::jsonb \
     AND EXISTS (SELECT 1 FROM jsonb_each_text(headers) h WHERE NOT starts_with(h.value, $PREFIX))";

type EndpointRow = (
    Uuid,
    String,
    Json<Vec<PreviousSecret>>,
    Json<BTreeMap<String, String>>,
    Option<String>,
);

#[async_trait::async_trait]
impl ResealRows for PgStore {
    async fn count_not_starting_with(&self, prefix: &str) -> Result<u64, StoreError> {
        let count: i64 = sqlx::query_scalar(AssertSqlSafe(format!(
            "SELECT (SELECT count(*) FROM endpoints WHERE {}) \
                 + (SELECT count(*) FROM notifications WHERE {})",
            stale(STALE_ENDPOINT, "$1"),
            stale(STALE_NOTIFICATION, "$1"),
        )))
        .bind(prefix)
        .fetch_one(&self.pool)
        .await?;
        Ok(count as u64)
    }

    async fn reseal_endpoints(
        &self,
        after: Uuid,
        limit: i64,
        prefix: &str,
        reseal: ResealEndpoint<'_>,
    ) -> Result<ResealPage, StoreError> {
        let mut tx = self.pool.begin().await?;
        let rows: Vec<EndpointRow> = sqlx::query_as(AssertSqlSafe(format!(
            "SELECT id, secret, previous_secrets, headers, CASE WHEN managed THEN url END FROM endpoints \
             WHERE id > $1 AND ({}) ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED",
            stale(STALE_ENDPOINT, "$3")
        )))
        .bind(after)
        .bind(limit)
        .bind(prefix)
        .fetch_all(&mut *tx)
        .await?;
        let next = next_page(&rows, limit, |r| r.0);
        let mut changed = 0;
        for (id, secret, Json(previous_secrets), Json(headers), url) in rows {
            let mut row = EndpointSecrets {
                id,
                secret,
                previous_secrets,
                headers,
                url,
            };
            if !reseal(&mut row) {
                continue;
            }
            sqlx::query(
                "UPDATE endpoints SET secret = $2, previous_secrets = $3, headers = $4, \
                 url = COALESCE($5, url) WHERE id = $1",
            )
            .bind(id)
            .bind(&row.secret)
            .bind(Json(&row.previous_secrets))
            .bind(Json(&row.headers))
            .bind(&row.url)
            .execute(&mut *tx)
            .await?;
            changed += 1;
        }
        tx.commit().await?;
        Ok(ResealPage { next, changed })
    }

    /// PostgreSQL picks the rows (most have no headers, or are done), so a
    /// walk over a done table returns nothing, but still reads the table
    /// once.
    async fn reseal_notifications(
        &self,
        after: Uuid,
        limit: i64,
        prefix: &str,
        reseal: ResealHeaders<'_>,
    ) -> Result<ResealPage, StoreError> {
        let mut tx = self.pool.begin().await?;
        let rows: Vec<(Uuid, Json<BTreeMap<String, String>>)> =
            sqlx::query_as(AssertSqlSafe(format!(
                "SELECT id, headers FROM notifications WHERE id > $1 AND {} \
             ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED",
                stale(STALE_NOTIFICATION, "$3")
            )))
            .bind(after)
            .bind(limit)
            .bind(prefix)
            .fetch_all(&mut *tx)
            .await?;
        let next = next_page(&rows, limit, |r| r.0);
        let (mut ids, mut sealed) = (
            Vec::with_capacity(rows.len()),
            Vec::with_capacity(rows.len()),
        );
        for (id, Json(mut headers)) in rows {
            if reseal(id, &mut headers) {
                ids.push(id);
                sealed.push(Json(headers));
            }
        }
        if !ids.is_empty() {
            sqlx::query(
                "UPDATE notifications n SET headers = t.headers \
                 FROM UNNEST($1::uuid[], $2::jsonb[]) AS t(id, headers) WHERE n.id = t.id",
            )
            .bind(&ids)
            .bind(&sealed)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(ResealPage {
            next,
            changed: ids.len() as u64,
        })
    }
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
    test.replace("$PREFIX", param)
}
