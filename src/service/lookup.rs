//! Finding the endpoints that writes name, through a small cache.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use uuid::Uuid;

use super::{Service, ServiceError};
use crate::store::endpoints::{Endpoint, EndpointRef};
use crate::store::StoreError;

/// Endpoints by canonical reference (an id however it was spelled, or a
/// valid uid), for `ENDPOINT_CACHE_TTL`, bounded by the bytes the entries
/// hold. A change made through this process clears it; one made through
/// another process shows here within the TTL. Keyed by the parsed
/// reference, never the raw text: one endpoint named in a thousand
/// spellings of its UUID is one entry.
///
/// Requests that miss the same endpoint at once wait for one read: when an
/// entry expires under load, every request in flight would otherwise read
/// it, and those concurrent reads made the connection pool open new
/// PostgreSQL connections mid-burst (six at once, every second, at 4,000
/// creates/s), each a stall of its own while its backend started and
/// planned its statements.
#[derive(Clone)]
pub(super) struct EndpointCache(moka::future::Cache<EndpointRef, Arc<Endpoint>>);

pub const ENDPOINT_CACHE_TTL: Duration = Duration::from_secs(1);
/// What the cached endpoints may weigh in all (headers, URLs, secrets).
pub const ENDPOINT_CACHE_BYTES: u64 = 16 << 20;

impl Default for EndpointCache {
    fn default() -> Self {
        Self(
            moka::future::Cache::builder()
                .max_capacity(ENDPOINT_CACHE_BYTES)
                .weigher(|_, endpoint: &Arc<Endpoint>| endpoint.approximate_size())
                .time_to_live(ENDPOINT_CACHE_TTL)
                .build(),
        )
    }
}

impl EndpointCache {
    async fn get(&self, by: &EndpointRef) -> Option<Arc<Endpoint>> {
        self.0.get(by).await
    }

    /// Caches `endpoint` under the reference it was found by.
    async fn put(&self, by: EndpointRef, endpoint: Arc<Endpoint>) {
        if by.is_possible() {
            self.0.insert(by, endpoint).await;
        }
    }

    /// The endpoint `wanted` names: cached, or read by `read` once for
    /// every caller that misses it meanwhile. `None` (and nothing cached)
    /// if there is none.
    async fn get_or_read(
        &self,
        wanted: &EndpointRef,
        read: impl Future<Output = Result<Option<Endpoint>, StoreError>>,
    ) -> Result<Option<Arc<Endpoint>>, Arc<StoreError>> {
        let read = async {
            match read.await {
                Ok(Some(endpoint)) => Ok(Arc::new(endpoint)),
                Ok(None) => Err(None),
                Err(error) => Err(Some(Arc::new(error))),
            }
        };
        match self.0.try_get_with(wanted.clone(), read).await {
            Ok(endpoint) => Ok(Some(endpoint)),
            Err(failed) => match failed.as_ref() {
                None => Ok(None),
                Some(error) => Err(error.clone()),
            },
        }
    }

    pub(super) fn clear(&self) {
        self.0.invalidate_all();
    }
}

/// The endpoints a request names, by parsed reference.
pub(super) type Resolved = HashMap<EndpointRef, Arc<Endpoint>>;

impl Service {
    /// Which of `ids` are `url_secret` endpoints (live ones; through the
    /// cache), so that their notifications' URLs are shown by origin only.
    pub async fn url_secret_endpoints(
        &self,
        ids: impl IntoIterator<Item = Uuid>,
    ) -> Result<HashSet<Uuid>, ServiceError> {
        self.endpoints_where(ids, |e| e.url_secret).await
    }

    /// Which of `ids` are disabled endpoints (live ones; through the
    /// cache, which this process's changes clear): they hold their
    /// notifications (`domain::waiting`).
    pub async fn disabled_endpoints(
        &self,
        ids: impl IntoIterator<Item = Uuid>,
    ) -> Result<HashSet<Uuid>, ServiceError> {
        self.endpoints_where(ids, |e| e.disabled).await
    }

    /// Which of `ids` are live endpoints that `keep` keeps, through the
    /// cache.
    async fn endpoints_where(
        &self,
        ids: impl IntoIterator<Item = Uuid>,
        keep: impl Fn(&Endpoint) -> bool,
    ) -> Result<HashSet<Uuid>, ServiceError> {
        let wanted: Vec<EndpointRef> = ids.into_iter().map(EndpointRef::Id).collect();
        if wanted.is_empty() {
            return Ok(HashSet::new());
        }
        let found = self.resolve_refs(wanted).await?;
        Ok(found.values().filter(|e| keep(e)).map(|e| e.id).collect())
    }

    /// Finds every endpoint `names` name: from the cache, then the rest in
    /// one query, by id and uid. Names that match nothing are left out; the
    /// caller says which field named them.
    pub(super) async fn resolve_endpoints<'a>(
        &self,
        names: impl IntoIterator<Item = &'a str>,
    ) -> Result<Resolved, ServiceError> {
        // Parsed before any wait: the names borrow from the request.
        let wanted: Vec<EndpointRef> = names.into_iter().map(EndpointRef::parse).collect();
        self.resolve_refs(wanted).await
    }

    /// `resolve_endpoints` for references already parsed (ids the caller
    /// holds: no string to write and parse back).
    async fn resolve_refs(&self, wanted: Vec<EndpointRef>) -> Result<Resolved, ServiceError> {
        let mut found = HashMap::new();
        let mut missing = HashSet::new();
        for wanted in wanted {
            // No endpoint can have an impossible uid.
            if !wanted.is_possible() || found.contains_key(&wanted) || missing.contains(&wanted) {
                continue;
            }
            match self.endpoints.get(&wanted).await {
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
        if missing.len() == 1 {
            // The usual miss (one endpoint, named by many requests at once):
            // one read, whoever else is waiting for it.
            let wanted = missing.into_iter().next().expect("one missing");
            if let Some(endpoint) = self.endpoint_once(&wanted).await? {
                found.insert(wanted, endpoint);
            }
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
                    .put(EndpointRef::Id(endpoint.id), endpoint.clone())
                    .await;
                found.insert(EndpointRef::Id(endpoint.id), endpoint.clone());
            }
            if let Some(uid) = endpoint.uid.as_ref().filter(|u| uids.contains(u)) {
                let by = EndpointRef::Uid(uid.clone());
                self.endpoints.put(by.clone(), endpoint.clone()).await;
                found.insert(by, endpoint);
            }
        }
        Ok(found)
    }

    /// The endpoint `wanted` names, read once for every request that
    /// misses it meanwhile; `None` (not cached) if there is none.
    async fn endpoint_once(
        &self,
        wanted: &EndpointRef,
    ) -> Result<Option<Arc<Endpoint>>, ServiceError> {
        let read = async {
            let (ids, uids) = match wanted {
                EndpointRef::Id(id) => (vec![*id], Vec::new()),
                EndpointRef::Uid(uid) => (Vec::new(), vec![uid.clone()]),
            };
            let found = self.store.find_endpoints(&ids, &uids).await?;
            Ok(found.into_iter().find(|endpoint| match wanted {
                EndpointRef::Id(id) => endpoint.id == *id,
                EndpointRef::Uid(uid) => endpoint.uid.as_ref() == Some(uid),
            }))
        };
        self.endpoints
            .get_or_read(wanted, read)
            .await
            .map_err(ServiceError::Store)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// A read that takes a few turns of the runtime, as a query would.
    async fn read(
        reads: &AtomicUsize,
        endpoint: Option<Endpoint>,
    ) -> Result<Option<Endpoint>, StoreError> {
        reads.fetch_add(1, Ordering::SeqCst);
        for _ in 0..3 {
            tokio::task::yield_now().await;
        }
        Ok(endpoint)
    }

    #[tokio::test]
    async fn requests_that_miss_one_endpoint_together_read_it_once() {
        let cache = EndpointCache::default();
        let endpoint = super::super::endpoints::default_endpoint(chrono::Utc::now());
        let wanted = EndpointRef::Id(endpoint.id);
        let reads = AtomicUsize::new(0);
        let found = futures::future::join_all(
            (0..50).map(|_| cache.get_or_read(&wanted, read(&reads, Some(endpoint.clone())))),
        )
        .await;
        assert!(found
            .iter()
            .all(|f| f.as_ref().unwrap().as_ref().unwrap().id == endpoint.id));
        assert_eq!(reads.load(Ordering::SeqCst), 1);
        // And it is cached for the next request.
        let again = cache.get_or_read(&wanted, read(&reads, None)).await;
        assert!(again.unwrap().is_some());
        assert_eq!(reads.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn an_endpoint_that_is_not_there_is_not_cached() {
        let cache = EndpointCache::default();
        let wanted = EndpointRef::Uid("nobody".into());
        let reads = AtomicUsize::new(0);
        assert!(cache
            .get_or_read(&wanted, read(&reads, None))
            .await
            .unwrap()
            .is_none());
        assert!(cache
            .get_or_read(&wanted, read(&reads, None))
            .await
            .unwrap()
            .is_none());
        assert_eq!(reads.load(Ordering::SeqCst), 2);
    }
}
