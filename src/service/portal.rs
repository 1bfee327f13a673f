//! What portal links need of the service: revoking an endpoint's links,
//! and the live endpoint a link names, from the endpoint cache.

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

    /// A live endpoint by id, through the endpoint cache (a second old at
    /// most): what a portal link checks on every request.
    pub async fn live_endpoint(&self, id: Uuid) -> Result<Option<Arc<Endpoint>>, ServiceError> {
        let name = id.to_string();
        let found = self.resolve_endpoints([name.as_str()]).await?;
        Ok(found.into_values().next())
    }
}
