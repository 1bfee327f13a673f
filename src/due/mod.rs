//! The due index: *when* each pending notification is next due, and the
//! leases of what is being delivered now. The store (PostgreSQL or the
//! SQLite file) is the truth; the index only orders it, and can be refilled
//! from it at any time.
//!
//! Backends sit side by side, chosen once at start-up: `redis` (server
//! mode, several processes) and `memory` (in-process, for the embedded
//! mode). Every one implements the core (`DueIndex`); one that can lose
//! what it holds while hookd runs also implements its `Recovery` (a
//! marker, a refill lock, a sweep). What refills an index from the store
//! sits above both (`dispatcher::refill`): this module knows no store, and
//! nothing outside a backend knows its keys, markers or locks.

pub mod memory;
#[cfg(feature = "server")]
pub mod redis;

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::Notify;
use uuid::Uuid;

/// Why the index did not do what it was asked. Neutral: each backend turns
/// its own failures into these (Redis's in `redis`).
#[derive(Debug, thiserror::Error)]
pub enum DueError {
    /// The index cannot be reached or refused the command. The cause is in
    /// the message (logs print an error once, by its `Display`) and kept as
    /// the source for whoever needs to tell causes apart (the Redis link,
    /// to notice a failover).
    #[error("due index unavailable: {0}")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("the due index did not answer within {0:?}")]
    Timeout(Duration),
    /// The index returned an id that is none (`n` bytes).
    #[error("the due index returned a malformed member ({0} bytes)")]
    Malformed(usize),
}

/// The time a due time is kept at in an index: unix milliseconds, rounded
/// up, so that a claim at `now >= score` never finds a row whose
/// microsecond due time is later.
pub fn score(at: DateTime<Utc>) -> i64 {
    let micros = at.timestamp_micros();
    micros.div_euclid(1000) + i64::from(micros.rem_euclid(1000) != 0)
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
    /// Leases of earlier claims whose answer was lost, returned to `due`
    /// by this call before they expired (`redis::lease::LostClaims`).
    pub recovered: usize,
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

/// What the marker of an index that can lose data says about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexState {
    /// Complete, in this build's format.
    Complete,
    /// Lost (Redis restarted empty, was flushed or failed over) or never
    /// filled.
    Missing,
    /// The marker is there but part of the index is gone (evicted, deleted
    /// or not replicated). Refilled like `Missing`.
    DueLost,
    /// Complete, but written by a build with another format.
    OtherFormat,
}

/// The core of a due index: what every backend does, and all that the
/// write path and the dispatcher call. Times are kept as `score`s
/// (milliseconds); a notification may be due and leased at once (a claim
/// leases it; `add` of a leased id puts it back in the due set too).
#[async_trait::async_trait]
pub trait DueIndex: Send + Sync + 'static {
    // The write path.

    /// Adds (or moves) notifications to the index at their due times.
    async fn add(&self, entries: &[(Uuid, DateTime<Utc>)]) -> Result<(), DueError>;
    /// Adds notifications that this process's dispatcher delivers at once
    /// (handed over by its committer) as leased until `lease_until`, as if
    /// claimed: if that dispatcher never records them, they come back due
    /// when the lease expires, like any claim. An id under a lease that
    /// ends later keeps it: whoever holds it delivers it.
    async fn add_leased(&self, ids: &[Uuid], lease_until: DateTime<Utc>) -> Result<(), DueError>;
    /// Removes notifications (cancelled ones), due or leased. Best effort:
    /// the dispatcher skips ids whose rows are no longer pending anyway.
    async fn remove(&self, ids: &[Uuid]) -> Result<(), DueError>;

    // The dispatcher.

    /// Claims up to `limit` ids due by `due_by`, earliest first, leasing
    /// them until `lease_until`. First, leases expired at `now` come back
    /// due at `now` (counted in `requeued`), so a claim takes them first.
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
    /// Of `ids`, those leased at `now` and when each lease ends, in one
    /// call whatever their number (a list's notifications: `in_flight`).
    async fn lease_ends(
        &self,
        ids: &[Uuid],
        now: DateTime<Utc>,
    ) -> Result<Vec<(Uuid, DateTime<Utc>)>, DueError>;
    /// Woken when something becomes due (or a lease expires) before the
    /// time the last claim said was the next: a dispatcher sleeping until
    /// then waits on it too. `None`: the index cannot tell (it is shared
    /// with other processes); the dispatcher relies on its own wake-ups.
    fn wakeups(&self) -> Option<Arc<Notify>> {
        None
    }

    // Filling from the store.

    /// Adds the entries that are neither due nor leased; returns how many.
    /// What a refill from the store adds, in batches of any size.
    async fn add_missing(&self, entries: &[(Uuid, DateTime<Utc>)]) -> Result<usize, DueError>;
    /// For rows whose indexing is owed (`needs_index`: the index failed at
    /// their commit, or the store created them, as operator events): adds
    /// those neither due nor leased, and moves to their time those due
    /// later (a retry whose move failed). Moving earlier is safe: a claim
    /// of a row not yet due gives it back. Returns how many it wrote.
    async fn add_marked(&self, entries: &[(Uuid, DateTime<Utc>)]) -> Result<usize, DueError>;

    // Housekeeping and readiness.

    /// (due, leased) counts.
    async fn depth(&self) -> Result<(u64, u64), DueError>;
    async fn ping(&self) -> Result<(), DueError>;
    /// Configuration that endangers the index (an eviction policy, say).
    async fn warnings(&self) -> Vec<String>;
    /// Its recovery, for an index that can lose what it holds while hookd
    /// runs (Redis); `None` for one that lives and dies with the process.
    fn recovery(&self) -> Option<&dyn Recovery> {
        None
    }
    /// The Redis connection and prefix this index keeps its keys under,
    /// for state that lives beside it and must be shared as widely (rate
    /// limits: `startup` composes them); `None` for an index of this
    /// process only.
    #[cfg(feature = "server")]
    fn redis(&self) -> Option<&self::redis::RedisIndex> {
        None
    }
}

/// What only an index that can lose data needs: to notice the loss (a
/// marker, an epoch), to be refilled by one process at a time, and to be
/// swept for rows that fell through the cracks. The refill itself is the
/// store's business and sits above both (`dispatcher::refill`).
#[async_trait::async_trait]
pub trait Recovery: DueIndex {
    /// Changes when the index may have lost recent writes (a new Redis
    /// master): housekeeping then re-adds recent rows.
    fn epoch(&self) -> u64;
    /// Whether the index is known to be complete, and in this build's
    /// format.
    async fn state(&self) -> Result<IndexState, DueError>;
    /// Takes the lock that lets one process refill the index, or renews it
    /// when this process holds it; `false`: another process holds it.
    async fn lock_refill(&self) -> Result<bool, DueError>;
    async fn unlock_refill(&self) -> Result<(), DueError>;
    /// Drops the whole index, leases included, and its marker: what a
    /// refill does first to an index of another format.
    async fn clear(&self) -> Result<(), DueError>;
    /// Empties the due set and keeps the leases: what every refill does
    /// first, so that nothing left of a partly lost index hides.
    async fn clear_due(&self) -> Result<(), DueError>;
    /// Marks the index complete, after a refill.
    async fn mark_complete(&self) -> Result<(), DueError>;
    /// The ids among `entries` that are neither due nor leased, changing
    /// nothing: what the sweep looks for.
    async fn missing(&self, entries: &[(Uuid, DateTime<Utc>)]) -> Result<Vec<Uuid>, DueError>;
    /// The parts of the index that are lost and refilled apart, each with
    /// a marker and a lock of its own (a sharded index's shards, docs/design.md
    /// §13); empty: the index is one part. A refill reads the store once
    /// for all the parts it finds lost.
    fn parts(&self) -> Vec<&dyn Recovery> {
        Vec::new()
    }
    /// The part (an index into `parts`) that holds `id`.
    fn part_of(&self, _id: &Uuid) -> usize {
        0
    }
    /// The index's name (`domain::index_owner`), kept beside its keys and
    /// made anew when they are lost; read even while the index is paused.
    async fn identity(&self) -> Result<String, DueError>;
    /// This process beats (`domain::index_owner`): from now on every
    /// command fails until a beat reached the database (`set_owner`), and
    /// again once none has for `BLIND_AFTER`.
    fn beats_start(&self);
    /// What a beat that reached the database found (the beat written at
    /// `at`): every command fails with `another` while another index owns
    /// the database (`Some`).
    fn set_owner(
        &self,
        another: Option<crate::domain::index_owner::AnotherIndex>,
        at: std::time::Instant,
    );
    /// Whether every command fails for the beats (`beats_start`,
    /// `set_owner`): another index owns the database, or this process
    /// cannot tell.
    fn paused(&self) -> bool;
}
