//! Finding the endpoints that writes name, through a small cache.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use super::{Service, ServiceError};
use crate::store::endpoints::{Endpoint, EndpointRef};

/// Endpoints by canonical reference (an id however it was spelled, or a
/// valid uid), for `ENDPOINT_CACHE_TTL`, bounded by the bytes the entries
/// hold. A change made through this process clears it; one made through
/// another process shows here within the TTL. Keyed by the parsed
/// reference, never the raw text: one endpoint named in a thousand
/// spellings of its UUID is one entry.
#[derive(Clone)]
pub(super) struct EndpointCache(moka::sync::Cache<EndpointRef, Arc<Endpoint>>);

pub const ENDPOINT_CACHE_TTL: Duration = Duration::from_secs(1);
/// What the cached endpoints may weigh in all (headers, URLs, secrets).
pub const ENDPOINT_CACHE_BYTES: u64 = 16 << 20;

impl Default for EndpointCache {
    fn default() -> Self {
        Self(
            moka::sync::Cache::builder()
                .max_capacity(ENDPOINT_CACHE_BYTES)
                .weigher(|_, endpoint: &Arc<Endpoint>| endpoint.approximate_size())
                .time_to_live(ENDPOINT_CACHE_TTL)
                .build(),
        )
    }
}

impl EndpointCache {
    fn get(&self, by: &EndpointRef) -> Option<Arc<Endpoint>> {
        self.0.get(by)
    }

    /// Caches `endpoint` under the reference it was found by.
    fn put(&self, by: EndpointRef, endpoint: Arc<Endpoint>) {
        if by.is_possible() {
            self.0.insert(by, endpoint);
        }
    }

    pub(super) fn clear(&self) {
        self.0.invalidate_all();
    }
}

/// The endpoints a request names, by parsed reference.
pub(super) type Resolved = HashMap<EndpointRef, Arc<Endpoint>>;

impl Service {
    /// Finds every endpoint `names` name: from the cache, then the rest in
    /// one query, by id and uid. Names that match nothing are left out; the
    /// caller says which field named them.
    pub(super) async fn resolve_endpoints<'a>(
        &self,
        names: impl IntoIterator<Item = &'a str>,
    ) -> Result<Resolved, ServiceError> {
        let mut found = HashMap::new();
        let mut missing = HashSet::new();
        for name in names {
            let wanted = EndpointRef::parse(name);
            // No endpoint can have an impossible uid.
            if !wanted.is_possible() || found.contains_key(&wanted) || missing.contains(&wanted) {
                continue;
            }
            match self.endpoints.get(&wanted) {
                Some(endpoint) => {
                    found.insert(wanted, endpoint);
                }
                None => {
                    missing.insert(wanted);
                }
            }
        }
        if missing.is_empty() {
            return Ok(found);
        }
        let mut ids = Vec::new();
        let mut uids = Vec::new();
        for wanted in missing {
            match wanted {
                EndpointRef::Id(id) => ids.push(id),
                EndpointRef::Uid(uid) => uids.push(uid),
            }
        }
        for endpoint in self.store.find_endpoints(&ids, &uids).await? {
            let endpoint = Arc::new(endpoint);
            if ids.contains(&endpoint.id) {
                self.endpoints
                    .put(EndpointRef::Id(endpoint.id), endpoint.clone());
                found.insert(EndpointRef::Id(endpoint.id), endpoint.clone());
            }
            if let Some(uid) = endpoint.uid.as_ref().filter(|u| uids.contains(u)) {
                let by = EndpointRef::Uid(uid.clone());
                self.endpoints.put(by.clone(), endpoint.clone());
                found.insert(by, endpoint);
            }
        }
        Ok(found)
    }
}
