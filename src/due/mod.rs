//! The due index: *when* each pending notification is next due, and the
//! leases of what is being delivered now. PostgreSQL is the truth; the
//! index only orders it, and can be rebuilt from it at any time.
//!
//! Backends sit side by side behind one trait (`DueIndex`), chosen once at
//! start-up: `redis` (server mode, several processes) today; an in-process
//! index for the embedded mode fits beside it. The trait's methods are
//! grouped by who calls them; nothing outside a backend knows its keys,
//! markers or locks.

pub mod redis;

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::store::seams::PendingRows;
use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum DueError {
    #[error("redis unavailable: {0}")]
    Unavailable(::redis::RedisError),
    #[error("redis did not answer within {0:?}")]
    Timeout(Duration),
    #[error("redis returned a malformed member ({0} bytes)")]
    Malformed(usize),
    #[error("no sentinel named a master for redis.master_name")]
    NoMaster,
}
/// What one claim call found.
#[derive(Debug, Default)]
pub struct Claim {
    pub ids: Vec<Uuid>,
    /// Earliest due time left in `due` (unix ms).
    pub next_due_ms: Option<i64>,
    /// Earliest lease expiry in `inflight` (unix ms).
    pub next_lease_ms: Option<i64>,
    /// Expired leases returned to `due` by this call.
    pub requeued: usize,
}

impl Claim {
    /// When something will next need this dispatcher's attention: `ahead`
    /// ms before the next due time (claims take what is due a little
    /// ahead), or when a lease expires (only then can it be requeued).
    pub fn next_event_ms(&self, ahead: i64) -> Option<i64> {
        let due = self.next_due_ms.map(|ms| ms - ahead);
        match (due, self.next_lease_ms) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}
/// A shared handle to the configured index.
pub type SharedIndex = Arc<dyn DueIndex>;

/// Why a restore stopped.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    #[error(transparent)]
    Due(#[from] DueError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What a restore did: how many ids it added, in how long.
#[derive(Debug, Clone, Copy)]
pub struct Restored {
    pub added: usize,
    pub took: Duration,
}

#[async_trait::async_trait]
pub trait DueIndex: Send + Sync + 'static {
    // The write path.

    /// Adds (or moves) notifications to the index at their due times.
    async fn add(&self, entries: &[(Uuid, DateTime<Utc>)]) -> Result<(), DueError>;
    /// Adds notifications that this process's dispatcher delivers at once
    /// (handed over by its committer) as leased until `lease_until`, as if
    /// claimed: if that dispatcher never records them, they come back due
    /// when the lease expires, like any claim.
    async fn add_leased(&self, ids: &[Uuid], lease_until: DateTime<Utc>) -> Result<(), DueError>;
    /// Removes notifications (cancelled ones). Best effort: the dispatcher
    /// skips ids whose rows are no longer pending anyway.
    async fn remove(&self, ids: &[Uuid]) -> Result<(), DueError>;

    // The dispatcher.

    /// Claims up to `limit` ids due by `due_by`, leasing them until
    /// `lease_until`; leases expired at `now` come back first.
    async fn claim(
        &self,
        now: DateTime<Utc>,
        due_by: DateTime<Utc>,
        limit: usize,
        lease_until: DateTime<Utc>,
    ) -> Result<Claim, DueError>;
    /// Ends the leases of `done` and schedules `next`, after their
    /// outcomes are committed.
    async fn complete(&self, done: &[Uuid], next: &[(Uuid, DateTime<Utc>)])
        -> Result<(), DueError>;
    /// Gives leased ids back, due at the times given.
    async fn reschedule(&self, entries: &[(Uuid, DateTime<Utc>)]) -> Result<(), DueError>;
    /// Drops leased ids whose rows are no longer pending.
    async fn forget(&self, ids: &[Uuid]) -> Result<(), DueError>;
    /// Moves the leases of those `ids` still leased to `until` (ids no
    /// longer leased stay as they are): a delivery whose outcome waits on
    /// PostgreSQL keeps its lease instead of being claimed and sent again.
    async fn extend(&self, ids: &[Uuid], until: DateTime<Utc>) -> Result<(), DueError>;
    /// Whether `id` is leased at `now`: being delivered by some process.
    async fn leased(&self, id: Uuid, now: DateTime<Utc>) -> Result<bool, DueError>;

    // Housekeeping.

    /// (due, leased) counts.
    async fn depth(&self) -> Result<(u64, u64), DueError>;
    /// Changes when the index may have lost recent writes (a new Redis
    /// master): housekeeping then re-adds recent rows.
    fn epoch(&self) -> u64;
    /// Adds the entries that are neither due nor leased; returns how many.
    async fn add_missing(&self, entries: &[(Uuid, DateTime<Utc>)]) -> Result<usize, DueError>;
    /// For rows whose indexing failed (`needs_index`): adds those neither
    /// due nor leased, and moves to their time those due later (a retry
    /// that Redis refused to move). Moving earlier is safe: a claim of a
    /// row not yet due gives it back. Returns how many it wrote.
    async fn add_marked(&self, entries: &[(Uuid, DateTime<Utc>)]) -> Result<usize, DueError>;
    /// The ids among `entries` that are neither due nor leased.
    async fn missing(&self, entries: &[(Uuid, DateTime<Utc>)]) -> Result<Vec<Uuid>, DueError>;
    /// If the index was lost (or is in another format), rebuilds it from
    /// `rows`, unless another process is doing so. `None`: nothing to do.
    async fn restore(
        &self,
        rows: &dyn PendingRows,
        shutdown: &CancellationToken,
    ) -> Result<Option<Restored>, RestoreError>;

    // Readiness.

    async fn ping(&self) -> Result<(), DueError>;
    /// Configuration that endangers the index (an eviction policy, say).
    async fn warnings(&self) -> Vec<String>;
}
