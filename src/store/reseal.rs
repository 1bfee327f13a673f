//! The store's side of the reseal walk (`sealing::reseal`): a backend's
//! pages of rows whose values are not sealed under the current key.

use std::collections::BTreeMap;

use uuid::Uuid;

use super::endpoints::PreviousSecret;
use super::StoreError;

/// An endpoint's values sealed at rest, as a reseal walk reads and rewrites them.
pub struct EndpointSecrets {
    pub id: Uuid,
    pub secret: String,
    pub previous_secrets: Vec<PreviousSecret>,
    pub headers: BTreeMap<String, String>,
    /// Its URL where that is sealed too (the operator endpoint's), else `None`.
    pub url: Option<String>,
}

/// Rewrites one endpoint's values in place; `true`: they changed.
pub type ResealEndpoint<'a> = &'a mut (dyn FnMut(&mut EndpointSecrets) -> bool + Send);
/// Rewrites one notification's header values in place; `true`: changed.
pub type ResealHeaders<'a> =
    &'a mut (dyn FnMut(Uuid, &mut BTreeMap<String, String>) -> bool + Send);

/// Where one page of a reseal walk ended.
#[derive(Debug, Default, Clone, Copy)]
pub struct ResealPage {
    /// Where the next page starts (`None`: the walk is done).
    pub next: Option<Uuid>,
    /// Rows written back.
    pub changed: u64,
}

/// What the reseal walk (`sealing::reseal`) needs of a backend: pages of
/// the rows with a value not sealed under the current key, each row held
/// while it is rewritten, so that nothing written meanwhile is
/// overwritten. Which rows, and what they become, is decided by the walk;
/// `prefix` only lets the backend skip rows already done.
#[async_trait::async_trait]
pub trait ResealRows: Send + Sync + 'static {
    /// Rows (endpoints, notifications) with a value sealed at rest not starting with `prefix`.
    async fn count_not_starting_with(&self, prefix: &str) -> Result<u64, StoreError>;
    /// Up to `limit` endpoints after `after` (by id) with a value not
    /// starting with `prefix`, skipping rows others hold; those `reseal`
    /// changed are written back before they are let go.
    async fn reseal_endpoints(
        &self,
        after: Uuid,
        limit: i64,
        prefix: &str,
        reseal: ResealEndpoint<'_>,
    ) -> Result<ResealPage, StoreError>;
    /// The same for notifications' custom header values.
    async fn reseal_notifications(
        &self,
        after: Uuid,
        limit: i64,
        prefix: &str,
        reseal: ResealHeaders<'_>,
    ) -> Result<ResealPage, StoreError>;
}
