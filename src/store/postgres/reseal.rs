//! Bringing stored secrets under the current key: once `secrets.keys` is
//! set, rows written in plaintext (before keys were configured) are sealed,
//! and rows sealed under a key that is no longer first are sealed again
//! under the first, so old keys can be retired.
//!
//! Every process does it at start, in the background while it serves
//! (reads open plaintext and every configured key meanwhile). It walks each
//! table by primary key in small transactions that lock their rows with
//! `FOR UPDATE SKIP LOCKED`: several processes starting together share the
//! work instead of waiting on each other, and a row another transaction
//! holds is being written by a path that seals under the current key
//! anyway. Running it twice changes nothing the second time.

use std::collections::BTreeMap;

use sqlx::types::Json;
use sqlx::AssertSqlSafe;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::sealing::{
    open_headers, open_previous, open_secret, seal_headers, seal_previous, seal_secret,
};
use super::PgStore;
use crate::domain::sealed::{context, SealError, PREFIX};
use crate::store::endpoints::PreviousSecret;
use crate::store::StoreError;

const BATCH: i64 = 500;
/// An endpoint row with a value not starting with `$PREFIX`, the current
/// key's `enc:v1:<id>:`: rows already done are neither locked nor sent.
const STALE_ENDPOINT: &str = "NOT starts_with(secret, $PREFIX) \
     OR EXISTS (SELECT 1 FROM jsonb_array_elements(previous_secrets) p \
                WHERE NOT starts_with(p->>'secret', $PREFIX)) \
     OR EXISTS (SELECT 1 FROM jsonb_each_text(headers) h WHERE NOT starts_with(h.value, $PREFIX))";
/// The same for a notification; most have no headers and fail the first test.
const STALE_NOTIFICATION: &str = "headers <> '{}'::jsonb \
     AND EXISTS (SELECT 1 FROM jsonb_each_text(headers) h WHERE NOT starts_with(h.value, $PREFIX))";
/// Walks before giving up on rows that stay locked (the next start goes on).
const MAX_WALKS: usize = 10;
const WALK_PAUSE: std::time::Duration = std::time::Duration::from_secs(1);
/// Checks for plaintext left after the walk before giving up refusing it
/// (the next start checks again).
const REFUSAL_CHECKS: usize = 3;

/// What one walk did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Resealed {
    pub endpoints: u64,
    pub notifications: u64,
    /// Rows with a value that does not open (its key is not configured):
    /// left as they are, each logged.
    pub unreadable: u64,
}

type EndpointSecrets = (
    Uuid,
    String,
    Json<Vec<PreviousSecret>>,
    Json<BTreeMap<String, String>>,
);

impl PgStore {
    /// Seals every endpoint secret and header value, and every notification
    /// header value, that is not sealed under the current key. Stops early
    /// on `shutdown`. Without keys, does nothing.
    ///
    /// A row locked by someone else at that moment (a delivery being
    /// recorded) is skipped by a walk, so walks repeat, a little apart,
    /// until only rows that do not open are left.
    pub async fn reseal_all(&self, shutdown: &CancellationToken) -> Result<Resealed, StoreError> {
        let mut done = Resealed::default();
        if !self.keys.is_enabled() {
            return Ok(done);
        }
        for _ in 0..MAX_WALKS {
            let walk = self.reseal_walk(shutdown).await?;
            done.endpoints += walk.endpoints;
            done.notifications += walk.notifications;
            done.unreadable = walk.unreadable;
            if shutdown.is_cancelled() || self.stale_rows().await? <= walk.unreadable {
                break;
            }
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = tokio::time::sleep(WALK_PAUSE) => {}
            }
        }
        Ok(done)
    }

    async fn reseal_walk(&self, shutdown: &CancellationToken) -> Result<Resealed, StoreError> {
        let mut done = Resealed::default();
        let mut after = Uuid::nil();
        while !shutdown.is_cancelled() {
            let (next, count) = self.reseal_endpoints(after, &mut done).await?;
            done.endpoints += count;
            match next {
                Some(id) => after = id,
                None => break,
            }
        }
        let mut after = Uuid::nil();
        while !shutdown.is_cancelled() {
            let (next, count) = self.reseal_notifications(after, &mut done).await?;
            done.notifications += count;
            match next {
                Some(id) => after = id,
                None => break,
            }
        }
        Ok(done)
    }

    /// Rows with a value not sealed under the current key.
    pub async fn stale_rows(&self) -> Result<u64, StoreError> {
        let prefix = self.keys.current_prefix().unwrap_or_default();
        self.rows_not_starting_with(&prefix).await
    }

    /// Rows with a value that is not sealed at all (plaintext).
    pub async fn plaintext_rows(&self) -> Result<u64, StoreError> {
        self.rows_not_starting_with(PREFIX).await
    }

    async fn rows_not_starting_with(&self, prefix: &str) -> Result<u64, StoreError> {
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

    /// One batch of endpoints after `after` with a value not sealed under the
    /// current key, sealed again. Returns where to go on from and how many
    /// rows changed.
    async fn reseal_endpoints(
        &self,
        after: Uuid,
        done: &mut Resealed,
    ) -> Result<(Option<Uuid>, u64), StoreError> {
        let mut tx = self.pool.begin().await?;
        let rows: Vec<EndpointSecrets> = sqlx::query_as(AssertSqlSafe(format!(
            "SELECT id, secret, previous_secrets, headers FROM endpoints \
             WHERE id > $1 AND ({}) ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED",
            stale(STALE_ENDPOINT, "$3")
        )))
        .bind(after)
        .bind(BATCH)
        .bind(self.keys.current_prefix().unwrap_or_default())
        .fetch_all(&mut *tx)
        .await?;
        let next = (rows.len() as i64 == BATCH)
            .then(|| rows.last().map(|r| r.0))
            .flatten();
        let keys = &self.keys;
        let mut changed = 0;
        for (id, mut secret, Json(mut previous), Json(mut headers)) in rows {
            // PostgreSQL chose these rows; the same rule, in Rust, decides.
            let needed = keys.needs_reseal(&secret)
                || previous.iter().any(|p| keys.needs_reseal(&p.secret))
                || headers.values().any(|v| keys.needs_reseal(v));
            if !needed {
                continue;
            }
            let opened = open_secret(keys, id, &mut secret)
                .and_then(|()| open_previous(keys, id, &mut previous))
                .and_then(|()| {
                    open_headers(keys, &mut headers, |n| context::endpoint_header(id, n))
                });
            if let Err(error) = opened {
                unreadable("endpoint", id, &error);
                done.unreadable += 1;
                continue;
            }
            let headers =
                seal_headers(keys, &headers, |n| context::endpoint_header(id, n)).into_owned();
            sqlx::query("UPDATE endpoints SET secret = $2, previous_secrets = $3, headers = $4 WHERE id = $1")
                .bind(id)
                .bind(seal_secret(keys, id, &secret))
                .bind(Json(seal_previous(keys, id, &previous)))
                .bind(Json(headers))
                .execute(&mut *tx)
                .await?;
            changed += 1;
        }
        tx.commit().await?;
        Ok((next, changed))
    }

    /// One batch of notifications after `after` that have a header value
    /// not sealed under the current key. PostgreSQL picks them (most rows
    /// have no headers, or are done), so a walk over a done table returns
    /// nothing, but still reads the table once.
    async fn reseal_notifications(
        &self,
        after: Uuid,
        done: &mut Resealed,
    ) -> Result<(Option<Uuid>, u64), StoreError> {
        let prefix = self.keys.current_prefix().unwrap_or_default();
        let mut tx = self.pool.begin().await?;
        let rows: Vec<(Uuid, Json<BTreeMap<String, String>>)> =
            sqlx::query_as(AssertSqlSafe(format!(
                "SELECT id, headers FROM notifications WHERE id > $1 AND {} \
             ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED",
                stale(STALE_NOTIFICATION, "$3")
            )))
            .bind(after)
            .bind(BATCH)
            .bind(&prefix)
            .fetch_all(&mut *tx)
            .await?;
        let next = (rows.len() as i64 == BATCH)
            .then(|| rows.last().map(|r| r.0))
            .flatten();
        let keys = &self.keys;
        let (mut ids, mut sealed) = (
            Vec::with_capacity(rows.len()),
            Vec::with_capacity(rows.len()),
        );
        for (id, Json(mut headers)) in rows {
            if let Err(error) =
                open_headers(keys, &mut headers, |n| context::notification_header(id, n))
            {
                unreadable("notification", id, &error);
                done.unreadable += 1;
                continue;
            }
            ids.push(id);
            sealed.push(Json(
                seal_headers(keys, &headers, |n| context::notification_header(id, n)).into_owned(),
            ));
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
        Ok((next, ids.len() as u64))
    }
}

/// A staleness test with `$PREFIX` bound to the parameter `param`.
/// A staleness test with its parameter placeholder: constants only, so the
/// queries built with it are wrapped in `AssertSqlSafe`.
fn stale(test: &str, param: &str) -> String {
    test.replace("$PREFIX", param)
}

fn unreadable(table: &str, id: Uuid, error: &SealError) {
    tracing::error!(
        table,
        %id,
        %error,
        "cannot re-encrypt a stored secret: add the key it names to secrets.keys, or set the value again"
    );
}

/// The start-up task: one walk, then a line saying what it did. A store
/// error ends it (the next start tries again); reads work meanwhile. Once
/// no plaintext value is left, a plaintext value read later is an error
/// (`Keyring::refuse_plaintext`): only a write around hookd, or by a process
/// without `secrets.keys`, can have put it there.
pub async fn run(store: PgStore, shutdown: CancellationToken) {
    let Some(current) = store.keys().current_id().map(str::to_string) else {
        return;
    };
    let done = match store.reseal_all(&shutdown).await {
        Ok(done) => done,
        Err(error) => {
            tracing::warn!(%error, "re-encryption of stored secrets stopped; the next start goes on");
            return;
        }
    };
    // A value written in clear meanwhile (by a process without keys) gets
    // another walk before plaintext is refused.
    for _ in 0..REFUSAL_CHECKS {
        if shutdown.is_cancelled() {
            break;
        }
        if store.plaintext_rows().await.is_ok_and(|n| n == 0) {
            store.keys().refuse_plaintext();
            break;
        }
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = tokio::time::sleep(WALK_PAUSE) => {}
        }
        if store.reseal_all(&shutdown).await.is_err() {
            break;
        }
    }
    let remaining = store.stale_rows().await.unwrap_or(u64::MAX);
    let (endpoints, notifications) = (done.endpoints, done.notifications);
    if remaining == 0 {
        tracing::info!(
            key_id = %current, endpoints, notifications,
            "every stored secret and header value is encrypted under the first key of secrets.keys; the other keys can be retired"
        );
    } else if done.unreadable > 0 {
        tracing::error!(
            key_id = %current, endpoints, notifications, unreadable = done.unreadable,
            "some stored values are sealed under keys not in secrets.keys (logged above); keep their keys until they are set again"
        );
    } else if !shutdown.is_cancelled() {
        tracing::warn!(
            key_id = %current, endpoints, notifications,
            "some stored values are not yet under the first key (rows busy, or written by a process with other keys); the next start goes on"
        );
    }
}
