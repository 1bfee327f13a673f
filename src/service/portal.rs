//! What portal links need of the service: revoking an endpoint's or an
//! owner's links, and the live endpoint a link names, from the endpoint
//! cache.

use std::sync::Arc;

use uuid::Uuid;

use super::{Service, ServiceError};
use crate::domain::problem::Problem;
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
