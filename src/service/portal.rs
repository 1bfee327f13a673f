//! What portal links need of the service: revoking an endpoint's or an
//! owner's links, the live endpoint a link names, from the endpoint
//! cache, and where a link that may manage its endpoint may move its URL.
//!
//! A link is a bearer token handed to a merchant, who may pass it on or
//! lose it; the endpoint's operator set what a link never sees: its custom
//! headers (the receiver's credentials, often: a link reads their names,
//! values masked) and `sender.allow_networks` (private networks opened for
//! the operator's own receivers). So a link moves the URL only where those
//! stay the operator's: with custom headers, under the current URL (as a
//! per-notification URL takes them: `domain::receiver_url::lies_under`);
//! into a private network, only one the current URL is in. A third party
//! holding a link once moved an endpoint to its own host and sent a test,
//! and got the `x-api-key` the operator had set, in clear; or moved it onto
//! hookd's own API and read the answer in the attempts.

use std::sync::Arc;

use url::Url;
use uuid::Uuid;

use super::{Service, ServiceError};
use crate::domain::problem::{ErrorCode, Problem};
use crate::domain::receiver_url::lies_under;
use crate::sender::guard::addresses;
use crate::store::endpoints::{Endpoint, EndpointRef};

impl Service {
    /// Revokes every portal link of the endpoint issued so far: its id and
    /// the new generation. In this process at once; in others within the
    /// endpoint cache's second.
    pub async fn revoke_portal_links(&self, by: &EndpointRef) -> Result<(Uuid, i32), ServiceError> {
        let revoked = self
            .store
            .revoke_portal_links(by)
            .await?
            .ok_or_else(|| Problem::not_found("endpoint"))?;
        self.forget_cached_endpoints();
        Ok(revoked)
    }

    /// Revokes every portal link of the owner issued so far, and every
    /// link of each of its endpoints: the new generation. `404` when the
    /// owner has no live endpoint (its links are refused already).
    pub async fn revoke_owner_portal_links(&self, owner: &str) -> Result<i32, ServiceError> {
        let revoked = self
            .store
            .revoke_owner_portal_links(owner)
            .await?
            .ok_or_else(|| Problem::not_found("owner"))?;
        self.forget_cached_endpoints();
        Ok(revoked)
    }

    /// The generation an owner's links carry now (`WriteStore::
    /// owner_portal_generation`); `None`: the owner has no live endpoint.
    pub async fn owner_portal_generation(&self, owner: &str) -> Result<Option<i32>, ServiceError> {
        Ok(self.store.owner_portal_generation(owner).await?)
    }

    /// A live endpoint by id, through the endpoint cache (a second old at
    /// most): what a portal link checks on every request.
    pub async fn live_endpoint(&self, id: Uuid) -> Result<Option<Arc<Endpoint>>, ServiceError> {
        let name = id.to_string();
        let found = self.resolve_endpoints([name.as_str()]).await?;
        Ok(found.into_values().next())
    }
}

/// Refuses a link's move of an endpoint with custom headers from `own`
/// to `to` (both as stored, so valid) unless `to` lies under `own`.
pub(super) fn headers_stay_under(own: Option<&str>, to: Option<&str>) -> Result<(), Problem> {
    let parsed = |url: Option<&str>| url.and_then(|url| Url::parse(url).ok());
    if let (Some(own), Some(to)) = (parsed(own), parsed(to)) {
        if lies_under(&to, &own) {
            return Ok(());
        }
    }
    Err(Problem::forbidden(
        "this endpoint sends custom headers its sender set, which a portal link may not take to another receiver: its url may move only under the current one (the same scheme, host and port, a path continuing it); ask the sender to move it",
    ))
}

impl Service {
    /// Refuses a link's move of `current` to `url` whose host lies, now,
    /// in a network of `sender.allow_networks` that `current`'s URL does
    /// not lie in. The sender's guard judges the addresses again at each
    /// connection, with every allowed network: a name that resolves to a
    /// public address now and to a private one later passes this check.
    pub(super) async fn stays_in_its_networks(
        &self,
        current: &Endpoint,
        url: &str,
    ) -> Result<(), ServiceError> {
        if !self.guard.allows_networks() {
            return Ok(());
        }
        // A URL that does not parse is refused as for any caller.
        let Ok(to) = Url::parse(url) else {
            return Ok(());
        };
        let own = match current.url.as_deref().map(Url::parse) {
            Some(Ok(own)) => self.guard.networks_of_url(&own).await.unwrap_or_default(),
            _ => Default::default(),
        };
        let reaches = self.guard.narrowed(&own);
        let found = addresses(&to).await.map_err(|error| {
            Problem::invalid(
                ErrorCode::InvalidUrl,
                "url",
                format!("the url's host does not resolve ({error}): a portal link sets a url whose host does"),
            )
        })?;
        if found.into_iter().all(|ip| reaches.permits(ip)) {
            return Ok(());
        }
        Err(Problem::forbidden(
            "a portal link may point its endpoint at public addresses, or within the private network its current url is in: ask the sender for another",
        )
        .into())
    }
}
