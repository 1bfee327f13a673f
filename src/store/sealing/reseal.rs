//! Bringing stored secrets under the current key: once `secrets.keys` is
//! set, values written in plaintext (before keys were configured) are
//! sealed, and values sealed under a key that is no longer first are sealed
//! again under the first, so old keys can be retired.
//!
//! Every process does it at start, in the background while it serves
//! (reads open plaintext and every configured key meanwhile). It walks each
//! table by id in small pages (`ResealRows`, which holds each page's rows
//! while they are rewritten and skips those others hold: several processes
//! starting together share the work). Running it twice changes nothing the
//! second time.

use std::collections::BTreeMap;

use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::values::{
    open_endpoint_values, open_headers, open_url, seal_headers, seal_previous, seal_secret,
};
use super::Sealing;
use crate::domain::sealed::{context, SealError, PREFIX};
use crate::store::seams::{EndpointSecrets, ResealRows};
use crate::store::StoreError;

const BATCH: i64 = 500;
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

impl<S: ResealRows> Sealing<S> {
    /// Seals every endpoint secret and header value, and every notification
    /// header value, that is not sealed under the current key. Stops early
    /// on `shutdown`. Without keys, does nothing.
    ///
    /// A row held by someone else at that moment (a delivery being
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
        let prefix = self.keys.current_prefix().unwrap_or_default();
        let mut unreadable = 0;
        let mut after = Uuid::nil();
        while !shutdown.is_cancelled() {
            let mut reseal = |row: &mut EndpointSecrets| self.reseal_endpoint(row, &mut unreadable);
            let page = self
                .inner
                .reseal_endpoints(after, BATCH, &prefix, &mut reseal)
                .await?;
            done.endpoints += page.changed;
            match page.next {
                Some(id) => after = id,
                None => break,
            }
        }
        let mut after = Uuid::nil();
        while !shutdown.is_cancelled() {
            let mut reseal = |id: Uuid, headers: &mut BTreeMap<String, String>| {
                self.reseal_notification(id, headers, &mut unreadable)
            };
            let page = self
                .inner
                .reseal_notifications(after, BATCH, &prefix, &mut reseal)
                .await?;
            done.notifications += page.changed;
            match page.next {
                Some(id) => after = id,
                None => break,
            }
        }
        done.unreadable = unreadable;
        Ok(done)
    }

    /// Rows with a value not sealed under the current key.
    pub async fn stale_rows(&self) -> Result<u64, StoreError> {
        let prefix = self.keys.current_prefix().unwrap_or_default();
        self.inner.count_not_starting_with(&prefix).await
    }

    /// Rows with a value that is not sealed at all (plaintext).
    pub async fn plaintext_rows(&self) -> Result<u64, StoreError> {
        self.inner.count_not_starting_with(PREFIX).await
    }
}

impl<S> Sealing<S> {
    /// Seals one endpoint's values again (the operator endpoint's URL
    /// among them), if one is not under the current key (the backend chose
    /// the row; the same rule, in Rust, decides).
    pub(super) fn reseal_endpoint(&self, row: &mut EndpointSecrets, unreadable: &mut u64) -> bool {
        let keys = &*self.keys;
        let needed = keys.needs_reseal(&row.secret)
            || row
                .previous_secrets
                .iter()
                .any(|p| keys.needs_reseal(&p.secret))
            || row.headers.values().any(|v| keys.needs_reseal(v))
            || row.url.as_deref().is_some_and(|u| keys.needs_reseal(u));
        if !needed {
            return false;
        }
        let id = row.id;
        let opened = open_endpoint_values(
            keys,
            id,
            &mut row.secret,
            &mut row.previous_secrets,
            &mut row.headers,
        )
        .and_then(|()| {
            row.url
                .as_mut()
                .map_or(Ok(()), |url| open_url(keys, id, url))
        });
        if let Err(error) = opened {
            log_unreadable("endpoint", id, &error);
            *unreadable += 1;
            return false;
        }
        if let Some(url) = &mut row.url {
            *url = keys.seal(url, &context::endpoint_url(id)).into_owned();
        }
        row.secret = seal_secret(keys, id, &row.secret);
        row.previous_secrets = seal_previous(keys, id, &row.previous_secrets);
        if let Some(sealed) = seal_headers(keys, &row.headers, |n| context::endpoint_header(id, n))
        {
            row.headers = sealed;
        }
        true
    }

    pub(super) fn reseal_notification(
        &self,
        id: Uuid,
        headers: &mut BTreeMap<String, String>,
        unreadable: &mut u64,
    ) -> bool {
        let keys = &*self.keys;
        let context = |n: &str| context::notification_header(id, n);
        if let Err(error) = open_headers(keys, headers, context) {
            log_unreadable("notification", id, &error);
            *unreadable += 1;
            return false;
        }
        if let Some(sealed) = seal_headers(keys, headers, context) {
            *headers = sealed;
        }
        true
    }
}

fn log_unreadable(table: &str, id: Uuid, error: &SealError) {
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
pub async fn run<S: ResealRows>(store: Sealing<S>, shutdown: CancellationToken) {
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
