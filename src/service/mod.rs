//! The write path below the API. Handlers parse a request and answer; the
//! service validates what they parsed against stored endpoints, expands an
//! event into one notification per subscribed endpoint, commits it (group
//! commit: one statement and one fsync for everything queued meanwhile),
//! indexes what became due and wakes this process's dispatcher.
//!
//! ```text
//! api ──▶ service::{notifications, events, endpoints}
//!             │ validate (domain), resolve endpoints (lookup), expand (fan-out)
//!             ▼
//!         commit (group commit) ──▶ store (PostgreSQL | SQLite) ──▶ index (due)
//! ```

mod breaker;
mod breaker_fields;
pub mod bulk;
mod commit;
mod endpoint_fields;
pub mod endpoints;
pub mod events;
mod filter_fields;
mod index;
mod lookup;
pub mod notifications;
mod payload;
mod portal;
pub mod pull;
mod rate_limit_fields;
pub mod recover;
mod success_fields;

use std::sync::Arc;

use tokio::sync::Notify;

use crate::config::Settings;
use crate::domain::problem::Problem;
use crate::due::SharedIndex;
use crate::store::seams::{SharedPull, SharedWrites};
use crate::store::StoreError;

pub use commit::COMMITTERS;

/// Why a write did not happen.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// The input is refused; nothing was written.
    #[error(transparent)]
    Rejected(#[from] Problem),
    /// The store failed; shared by every request of one group commit.
    #[error("{0}")]
    Store(#[source] Arc<StoreError>),
    /// The committer went away before answering (shutdown).
    #[error("the write was not answered")]
    Lost,
    /// The due index cannot tell what the write needs to know (whether a
    /// notification is being delivered); `None` while the breaker keeps
    /// requests away from it.
    #[error("the due index is unavailable")]
    IndexUnavailable(#[source] Option<crate::due::DueError>),
}

impl From<StoreError> for ServiceError {
    fn from(error: StoreError) -> Self {
        ServiceError::Store(Arc::new(error))
    }
}

/// The write path's handles. Cheap to clone: one reference count, since
/// every API request clones it (with `AppState`) at least twice.
#[derive(Clone)]
pub struct Service(Arc<Handles>);

/// What a `Service` holds.
pub struct Handles {
    store: SharedWrites,
    /// Pull endpoints' leases and their signal between processes.
    pull: SharedPull,
    /// Consumers of this process waiting for their endpoint's next due
    /// notification.
    pulls: Arc<pull::Waiters>,
    /// Consumer tokens that work now, by digest, kept current from the
    /// store: a bearer token is checked without a query.
    tokens: pull::ConsumerTokens,
    due: SharedIndex,
    settings: Arc<Settings>,
    /// Wakes this process's dispatcher when something becomes due soon.
    wake: Arc<Notify>,
    /// Where the committers hand notifications due now to this process's
    /// dispatcher (closed when it has none).
    handoff: Arc<crate::dispatcher::Handoff>,
    commit: commit::Committer,
    /// Endpoints recently named by creates, so a create costs one commit
    /// and not a lookup too.
    endpoints: lookup::EndpointCache,
    /// Owners' endpoints recently fanned out to.
    subscribers: events::SubscriberCache,
    /// Refuses per-notification URLs that name a private address.
    guard: Arc<crate::sender::guard::Guard>,
    /// Keeps requests from waiting on a failing due index.
    breaker: Arc<breaker::Breaker>,
}

impl std::ops::Deref for Service {
    type Target = Handles;

    fn deref(&self) -> &Handles {
        &self.0
    }
}

impl Service {
    /// The time now by the one clock (`crate::clock`): the store's, which
    /// its rules read too.
    pub fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.store.clock().now()
    }

    /// The service and its committers (`COMMITTERS` tasks, which run as long
    /// as the runtime does). Call it inside a Tokio runtime.
    pub fn start(
        store: SharedWrites,
        pull: SharedPull,
        due: SharedIndex,
        settings: Arc<Settings>,
    ) -> Self {
        let (commit, queue) = commit::Committer::channel();
        let service = Self(Arc::new(Handles {
            store,
            pull,
            pulls: Default::default(),
            tokens: Default::default(),
            due,
            wake: Arc::new(Notify::new()),
            handoff: Default::default(),
            commit,
            endpoints: Default::default(),
            subscribers: Default::default(),
            guard: Arc::new(crate::sender::guard::Guard::new(
                settings.sender.allow_networks.clone(),
            )),
            breaker: Default::default(),
            settings,
        }));
        commit::spawn(service.clone(), queue);
        service
    }

    /// What the dispatcher of this process waits on besides its timer.
    pub fn wake(&self) -> Arc<Notify> {
        self.wake.clone()
    }

    /// Where this process's dispatcher takes what the committers hand it.
    pub fn handoff(&self) -> Arc<crate::dispatcher::Handoff> {
        self.handoff.clone()
    }

    /// Forgets cached endpoints, so the next write reads them again (an
    /// endpoint changed through this process, or a test that changed one
    /// behind hookd's back).
    pub fn forget_cached_endpoints(&self) {
        self.endpoints.clear();
        self.subscribers.clear();
    }
}
