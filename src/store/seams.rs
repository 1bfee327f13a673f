//! The store as its users see it: one trait per user, so that another
//! backend (SQLite, for the embedded mode) implements exactly what each
//! part of hookd needs, and each part names only what it uses.
//! - `WriteStore`: the write path (`service`);
//! - `ReadStore`: the API's reads (status, lists, counts);
//! - `DeliveryStore`: the dispatcher (load what it claimed, record attempts);
//! - `BreakerStore` (`store::breaker`): the circuit breaker;
//! - `HousekeepingStore`: housekeeping (indexing owed, sweeps, retention,
//!   the operator endpoint, failing endpoints), which is also the
//!   `PendingRows` a rebuild of the due index reads;
//! - `PullStore`: pull consumption;
//! - `ResealRows` (`store::reseal`): the walk that brings values sealed
//!   at rest under the current key;
//! - `StatsStore`: the per-minute counts behind `GET /v1/stats`, read by
//!   the API and sampled and pruned by housekeeping (so both `ReadStore`
//!   and `HousekeepingStore` include it).
//!
//! - `OperationStore` (`store::operations`): recover operations and
//!   their leases.
//!
//! Each of those that decides by time (all but `ReadStore`, `StatsStore`
//! and `ResealRows`) is also `Clocked`: the part that uses it reads the
//! store's clock (`crate::clock`) for its own rules, so a process has one.
//!
//! Wrappers implement them over any store: `sealing::Sealing` seals at
//! rest what crosses them (every trait but `ResealRows`: the reseal walk
//! runs over the backend's own); `replica::ReplicaReads` serves
//! `ReadStore` and `StatsStore` from a replica.
//!
//! PostgreSQL (`postgres::PgStore`) implements them by delegating to its
//! own methods (`postgres/seams.rs`).

use std::sync::Arc;

use chrono::{DateTime, Utc};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::attempts::Attempt;
use super::backlog::Backlog;
pub use super::breaker::{BreakerStore, SharedBreaker};
use super::cancel::Cancel;
use super::consumer_tokens::ConsumerTokenRows;
use super::delivery::{Claimed, DueNotification, Head, Retry};
use super::endpoints::{Endpoint, EndpointRef};
use super::events::{Event, EventFilter, Subscriber};
use super::health::FailingEndpoint;
use super::housekeeping::{DueBacklog, KeyCursor, PendingCursor};
use super::notifications::{MostAttempted, Notification, NotificationFilter};
pub use super::operations::{OperationStore, SharedOperations};
use super::pull::{LeaseDecision, Leased, Leases, LeasesEnded, Taken};
use super::pull_due::PickDecision;
use super::recording::{AttemptRecord, Recorded};
pub use super::reseal::{EndpointSecrets, ResealEndpoint, ResealHeaders, ResealPage, ResealRows};
pub use super::stats::{SharedStats, StatsStore};
use super::writes::{Committed, Writes};
use super::{StoreError, StoreKind};
use crate::clock::Clock;
use crate::domain::health::Health;
use crate::domain::index_owner::{Beat, IndexSeen};
use crate::domain::operator_event::OperatorEvent;
use crate::domain::problem::Problem;
use crate::domain::pull::{Delivery, Receipt};
use crate::domain::status::Status;

/// A change to an endpoint, applied under its row lock; it may refuse. It
/// may run more than once, each time on the row as then read (a store
/// runs its transaction again when PostgreSQL failed it to break a
/// deadlock): it changes the endpoint it is given and nothing else.
pub type EndpointChange<'a> = Box<dyn FnMut(&mut Endpoint) -> Result<(), Problem> + Send + 'a>;

/// What the operator endpoint should be (`operator.url` and its secret),
/// as the store is to keep it, and how to tell whether what it keeps
/// already says that: a wrapper that stores values sealed (with a fresh
/// nonce each time) opens what is stored to compare it.
pub struct OperatorTarget<'a> {
    pub url: std::borrow::Cow<'a, str>,
    pub secret: std::borrow::Cow<'a, str>,
    pub unchanged: SameOperator<'a>,
}

/// Whether a stored `(url, secret)` is already the target.
pub type SameOperator<'a> = Box<dyn Fn(&str, &str) -> bool + Send + Sync + 'a>;

impl<'a> OperatorTarget<'a> {
    /// The target as configured, kept as it is.
    pub fn plain(url: &'a str, secret: &'a str) -> Self {
        Self {
            url: url.into(),
            secret: secret.into(),
            unchanged: Box::new(move |stored_url, stored_secret| {
                stored_url == url && stored_secret == secret
            }),
        }
    }
}

/// The clock a store's rules read (`crate::clock`): its users read it too,
/// so that every rule of a process reads one clock.
pub trait Clocked {
    fn clock(&self) -> &Clock;
}

/// What the write path needs.
#[async_trait::async_trait]
pub trait WriteStore: Clocked + Send + Sync + 'static {
    /// Commits notifications and events (with their deliveries) at once.
    async fn commit(&self, writes: Writes) -> Result<Committed, StoreError>;
    async fn find_endpoints(
        &self,
        ids: &[Uuid],
        uids: &[String],
    ) -> Result<Vec<Endpoint>, StoreError>;
    async fn find_endpoint(&self, by: &EndpointRef) -> Result<Option<Endpoint>, StoreError>;
    /// The live, enabled endpoints of these owners: fan-out candidates.
    async fn subscribers(&self, owners: &[Option<String>]) -> Result<Vec<Subscriber>, StoreError>;
    /// Rows the due index could not take now; housekeeping indexes them.
    async fn mark_needs_index(&self, ids: &[Uuid]) -> Result<(), StoreError>;
    /// `spare`: an endpoint whose notifications are left as they are
    /// (the caller may not cancel them); the row is still returned.
    async fn cancel_notification(
        &self,
        id: Uuid,
        spare: Option<Uuid>,
    ) -> Result<Cancel, StoreError>;
    async fn cancel_by_key(
        &self,
        key: &str,
        endpoint_id: Option<Uuid>,
        spare: Option<Uuid>,
    ) -> Result<Vec<Uuid>, StoreError>;
    async fn cancel_event(&self, id: Uuid) -> Result<Option<Vec<Uuid>>, StoreError>;
    /// `delivering`: the due index holds a lease on it (a push attempt may
    /// be under way), which only a pending notification must respect.
    async fn retry_notification(
        &self,
        id: Uuid,
        now: chrono::DateTime<chrono::Utc>,
        delivering: bool,
    ) -> Result<Retry, StoreError>;
    async fn create_endpoint(&self, endpoint: &Endpoint) -> Result<Endpoint, StoreError>;
    /// `Ok(None)`: no such endpoint; `Ok(Some(Err(_)))`: `change` refused.
    async fn modify_endpoint<'a>(
        &self,
        by: &EndpointRef,
        change: EndpointChange<'a>,
    ) -> Result<Option<Result<Endpoint, Problem>>, StoreError>;
    /// The ids of the pending notifications it cancelled; `None`: no such
    /// endpoint.
    async fn delete_endpoint(&self, by: &EndpointRef) -> Result<Option<Vec<Uuid>>, StoreError>;
    /// Raises the endpoint's `portal_generation` (every link issued before
    /// stops working) past its owner's (`owner_portal_generation`), and the
    /// owner's to it, so that its owner's links stop too, and stay stopped
    /// once the endpoint is deleted or moved; its id and the new
    /// generation, `None`: no such endpoint.
    async fn revoke_portal_links(
        &self,
        by: &EndpointRef,
    ) -> Result<Option<(Uuid, i32)>, StoreError>;
    /// Raises every live endpoint of `owner`, and the owner's own
    /// generation (`portal_owners`), to one past the owner's: each link of
    /// the owner, and of each of its endpoints, issued before stops
    /// working, whatever becomes of those endpoints. The new generation;
    /// `None`: the owner has no live endpoint.
    async fn revoke_owner_portal_links(&self, owner: &str) -> Result<Option<i32>, StoreError>;
    /// The generation an owner's links carry: the highest of its live
    /// endpoints' and its own (`portal_owners`, which revokes raise and
    /// nothing lowers), read where revocations are written (a link issued
    /// at a lower one is revoked); `None`: the owner has no live endpoint.
    async fn owner_portal_generation(&self, owner: &str) -> Result<Option<i32>, StoreError>;
}

/// What the API reads.
#[async_trait::async_trait]
pub trait ReadStore: StatsStore + Send + Sync + 'static {
    /// Which database this is, for `/readyz`.
    fn kind(&self) -> StoreKind;
    async fn ping(&self) -> Result<(), StoreError>;
    /// Closes the store's connections once nothing uses them (at shutdown,
    /// by the app that opened the store): SQLite then checkpoints its
    /// write-ahead log into the file, PostgreSQL's sessions end cleanly.
    /// Each store says what it closes; a wrapper closes what it wraps.
    async fn close(&self);
    async fn get_notification(&self, id: Uuid) -> Result<Option<Notification>, StoreError>;
    async fn list_notifications(
        &self,
        filter: &NotificationFilter,
    ) -> Result<Vec<Notification>, StoreError>;
    /// Where a bounded list's page stops examining rows
    /// (`NotificationFilter::examined_per_endpoint`): the last id it reads
    /// in the list's order, `None` when it reads every row its scope has.
    async fn notifications_frontier(
        &self,
        filter: &NotificationFilter,
    ) -> Result<Option<Uuid>, StoreError>;
    /// One endpoint's notifications attempted more than once, most
    /// attempts first, then newest; payloads left out.
    async fn most_attempted(&self, filter: &MostAttempted)
        -> Result<Vec<Notification>, StoreError>;
    /// Where a page of `most_attempted` with a status stops examining
    /// rows: the `MAX_EXAMINED`th past its cursor, `None` when fewer are.
    async fn most_attempted_frontier(
        &self,
        filter: &MostAttempted,
    ) -> Result<Option<(i32, Uuid)>, StoreError>;
    /// Up to `cap` ids of the notifications whose key, or whose event's
    /// key, starts with `prefix`, in `filter`'s endpoint and creation
    /// window, past its cursor, in no order: all of them when fewer than
    /// `cap` come back (`NotificationFilter::ids`).
    async fn key_prefix_ids(
        &self,
        prefix: &str,
        filter: &NotificationFilter,
        cap: i64,
    ) -> Result<Vec<Uuid>, StoreError>;
    /// The event types an endpoint was sent lately (§18: what a merchant
    /// chooses among): those of the newest `per_source` events of its
    /// `owner` and of its own newest `per_source` notifications, both with
    /// ids above `since` (a time's first id), distinct, in no order.
    /// Bounded by `per_source` rows of each index, whatever the history.
    async fn recent_event_types(
        &self,
        endpoint_id: Uuid,
        owner: Option<&str>,
        since: Uuid,
        per_source: i64,
    ) -> Result<Vec<String>, StoreError>;
    async fn list_attempts(
        &self,
        notification_id: Uuid,
        after: i32,
        limit: i64,
    ) -> Result<Vec<Attempt>, StoreError>;
    async fn find_endpoint(&self, by: &EndpointRef) -> Result<Option<Endpoint>, StoreError>;
    async fn list_endpoints(
        &self,
        before: Option<Uuid>,
        limit: i64,
        owner: Option<&str>,
    ) -> Result<Vec<Endpoint>, StoreError>;
    async fn get_event(&self, id: Uuid) -> Result<Option<Event>, StoreError>;
    async fn event_counts(&self, id: Uuid) -> Result<Vec<(Status, i64)>, StoreError>;
    async fn list_events(&self, filter: &EventFilter) -> Result<Vec<Event>, StoreError>;
    /// As `notifications_frontier`, for `EventFilter::bounded`.
    async fn events_frontier(&self, filter: &EventFilter) -> Result<Option<Uuid>, StoreError>;
    /// What waits for `endpoint` at `now`, each count up to `BACKLOG_CAP`.
    async fn endpoint_backlog(
        &self,
        endpoint: Uuid,
        now: DateTime<Utc>,
    ) -> Result<Backlog, StoreError>;
}

/// Where a rebuild of the due index reads what is pending: pages in due
/// order (keyset `(due time, id)`).
#[async_trait::async_trait]
pub trait PendingRows: Send + Sync {
    async fn pending_page(
        &self,
        after: Option<PendingCursor>,
        limit: i64,
    ) -> Result<Vec<(Uuid, DateTime<Utc>)>, StoreError>;
}

/// What the dispatcher needs.
#[async_trait::async_trait]
pub trait DeliveryStore: Clocked + Send + Sync + 'static {
    /// The claimed notifications and, once each, those of their endpoints
    /// for which `current(id, version)` is false.
    async fn load_claimed(
        &self,
        ids: &[Uuid],
        current: &(dyn Fn(Uuid, i64) -> bool + Sync),
    ) -> Result<Claimed, StoreError>;
    /// The heads of the claimed notifications (no body): what a claim
    /// reads first when some endpoint is known to be throttled or held, so
    /// that those going back to the index are not loaded.
    async fn load_heads(&self, ids: &[Uuid]) -> Result<Vec<Head>, StoreError>;
    /// Notifications already at hand (handed over by this process's
    /// committer) with, once each, those of their endpoints for which
    /// `current(id, version)` is false.
    async fn with_endpoints(
        &self,
        notifications: Vec<DueNotification>,
        current: &(dyn Fn(Uuid, i64) -> bool + Sync),
    ) -> Result<Claimed, StoreError>;
    /// Records a batch of attempts with the state each decided, the
    /// operator events they raise and the endpoints' health, at once;
    /// returns the ids whose state moved and what their ordered ends
    /// released (`Recorded`).
    async fn record_attempts(
        &self,
        records: &[AttemptRecord],
        health: &[(Uuid, Health)],
    ) -> Result<Recorded, StoreError>;
    /// Cancels pending notifications whose endpoint is gone.
    async fn cancel_notifications(&self, ids: &[Uuid]) -> Result<(), StoreError>;
    /// Makes claimed rows of endpoints that are pull now pull rows.
    async fn hand_to_pull(&self, ids: &[Uuid]) -> Result<(), StoreError>;
}

/// What housekeeping needs.
#[async_trait::async_trait]
pub trait HousekeepingStore: Clocked + PendingRows + StatsStore + Send + Sync + 'static {
    /// Rows whose indexing is owed, with their due time while pending.
    async fn needing_index(
        &self,
        limit: i64,
    ) -> Result<Vec<(Uuid, Option<DateTime<Utc>>)>, StoreError>;
    async fn clear_needs_index(&self, ids: &[Uuid]) -> Result<(), StoreError>;
    /// One page of a walk over the notifications that wait for another
    /// (`behind`, in its order: those after `after`, `limit` of them).
    /// Releases those of them stranded behind one already final
    /// (`store::ordering`) as its end would have: each waits for what that
    /// one waited for, and one waiting for nothing is owed to the index
    /// (`needs_index`); and gives those waiting for one that retention
    /// removed their place again (`store::ordering::orphan_behind`). How
    /// many it moved, and where the walk goes on (none: the page reached
    /// the end, and the next starts again from the first).
    async fn release_stranded(
        &self,
        after: Option<Uuid>,
        limit: i64,
    ) -> Result<(u64, Option<Uuid>), StoreError>;
    async fn pending_due_before(
        &self,
        after: Option<PendingCursor>,
        due_before: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<(Uuid, DateTime<Utc>)>, StoreError>;
    async fn still_pending(&self, ids: &[Uuid]) -> Result<Vec<(Uuid, DateTime<Utc>)>, StoreError>;
    async fn pending_created_after(
        &self,
        after: Uuid,
        limit: i64,
    ) -> Result<Vec<(Uuid, DateTime<Utc>)>, StoreError>;
    async fn purge_completed(
        &self,
        before: DateTime<Utc>,
        after: Option<Uuid>,
        limit: i64,
    ) -> Result<(u64, Option<Uuid>), StoreError>;
    async fn purge_events(
        &self,
        before: DateTime<Utc>,
        after: Option<Uuid>,
        limit: i64,
    ) -> Result<(u64, Option<Uuid>), StoreError>;
    /// Deletes the ordering keys (`order_keys`) whose line was empty
    /// since before retention's cutoff `before` and that no stored one
    /// holds (`domain::retention::order_key_expired`; clearing a holder
    /// retention removed), among the next `limit` keys after
    /// `after` (`store::housekeeping::purge_order_keys`): a later
    /// notification of one starts its sequence again at 1. How many it
    /// deleted and where to go on from (`None` once the walk is done).
    async fn purge_order_keys(
        &self,
        after: Option<KeyCursor>,
        limit: i64,
        before: DateTime<Utc>,
    ) -> Result<(u64, Option<KeyCursor>), StoreError>;
    /// Server mode's daily partitions (docs/design.md §13): makes those of
    /// `today` and the days ahead, drops those retention lets go
    /// (`before`: its cutoff, `None` while retention is off), and reports
    /// whether a DEFAULT partition holds rows. A store without partitions
    /// (SQLite: retention deletes rows) has nothing to do.
    async fn maintain_partitions(
        &self,
        today: chrono::NaiveDate,
        before: Option<DateTime<Utc>>,
    ) -> Result<crate::store::partitions::PartitionUpkeep, StoreError> {
        let _ = (today, before);
        Ok(Default::default())
    }
    /// How far the database's clock is ahead of this process's
    /// (`crate::clock`: the hosts of server-mode processes must agree on
    /// the time); `None` for a store in this process (SQLite), which has
    /// no clock of its own.
    async fn clock_skew(&self) -> Result<Option<chrono::Duration>, StoreError> {
        Ok(None)
    }
    /// Reads every due index row and writes what `Beat::apply` decides
    /// (this process's row, the rows it deletes), one beat at a time;
    /// returns the live rows, this one among them, for
    /// `domain::index_owner::another_owner` to choose the owner.
    async fn beat_index(&self, beat: &Beat) -> Result<Vec<IndexSeen>, StoreError>;
    /// As `process` stops: reads every row and deletes what
    /// `domain::index_owner::ending` decides (its row, unless another
    /// index is live), so that an index whose last process stopped hands
    /// the database over at once.
    async fn end_index_beats(&self, process: Uuid, now: DateTime<Utc>) -> Result<(), StoreError>;
    /// The push notifications due by `now` and not yet sent, by whether
    /// they were attempted before: the `limit` endpoints of each kind with
    /// the oldest due row, and how many of each kind (a bounded read:
    /// `housekeeping::DUE_SCAN`).
    async fn due_backlog(&self, now: DateTime<Utc>, limit: usize)
        -> Result<DueBacklog, StoreError>;
    /// Makes the managed operator endpoint match `target`: created or
    /// updated when set, deleted when not.
    async fn sync_operator_endpoint(
        &self,
        target: Option<OperatorTarget<'_>>,
    ) -> Result<(), StoreError>;
    async fn failing_endpoints(
        &self,
        failing_before: DateTime<Utc>,
    ) -> Result<Vec<FailingEndpoint>, StoreError>;
    async fn disable_endpoints(
        &self,
        endpoints: &[FailingEndpoint],
        reason: &str,
        events: &[OperatorEvent],
    ) -> Result<Vec<Uuid>, StoreError>;
}

/// What pull consumption needs (docs/design.md §10): leases held in the store,
/// and a signal between processes when an endpoint has something new.
#[async_trait::async_trait]
pub trait PullStore: Clocked + Send + Sync + 'static {
    async fn take(
        &self,
        endpoint_id: Uuid,
        max: i64,
        lease: std::time::Duration,
        decide: PickDecision<'_>,
    ) -> Result<Vec<Taken>, StoreError>;
    async fn end_unpulled(
        &self,
        max_wait: std::time::Duration,
        limit: i64,
        decide: LeaseDecision<'_>,
    ) -> Result<Vec<Uuid>, StoreError>;
    async fn next_pull_due(&self, endpoint_id: Uuid) -> Result<Option<DateTime<Utc>>, StoreError>;
    async fn end_leases(
        &self,
        which: Leases<'_>,
        decide: LeaseDecision<'_>,
    ) -> Result<LeasesEnded, StoreError>;
    /// Moves the receipt's lease's end from `until` (as read, decided
    /// running by `domain::lease`) to `to`, only if the row still has that
    /// lease with that end. The end as stored; `None`: it does not.
    async fn extend_lease(
        &self,
        receipt: &Receipt,
        until: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Option<DateTime<Utc>>, StoreError>;
    async fn lease_of(&self, id: Uuid) -> Result<Option<Leased>, StoreError>;
    async fn follow_delivery(
        &self,
        endpoint_id: Uuid,
        delivery: Delivery,
    ) -> Result<Vec<(Uuid, DateTime<Utc>)>, StoreError>;
    async fn adopt_strays(&self, limit: i64) -> Result<Vec<(Uuid, DateTime<Utc>)>, StoreError>;
    async fn cancel_orphans(&self, limit: i64) -> Result<Vec<Uuid>, StoreError>;
    async fn set_consumer_token(
        &self,
        endpoint_id: Uuid,
        digest: &[u8; 32],
    ) -> Result<bool, StoreError>;
    /// Every consumer token (`since` is `None`), or those of endpoints
    /// whose token was issued or whose row changed after `since` (by the
    /// store's clock, as `ConsumerTokenRows::read_at` gives it).
    async fn consumer_tokens(
        &self,
        since: Option<DateTime<Utc>>,
    ) -> Result<ConsumerTokenRows, StoreError>;
    async fn revoke_consumer_token(&self, endpoint_id: Uuid) -> Result<(), StoreError>;
    /// Tells every process (this one included) that these endpoints have
    /// something new for their consumers.
    async fn signal_pull(&self, endpoints: &[Uuid]) -> Result<(), StoreError>;
    /// Calls `woken` with each endpoint signalled by any process, and with
    /// `None` when signals may have been missed (a reconnect), until
    /// `shutdown`.
    async fn listen_pull(
        &self,
        woken: &(dyn Fn(Option<Uuid>) + Send + Sync),
        shutdown: &CancellationToken,
    );
}

pub type SharedPull = Arc<dyn PullStore>;
pub type SharedWrites = Arc<dyn WriteStore>;
pub type SharedDelivery = Arc<dyn DeliveryStore>;
pub type SharedHousekeeping = Arc<dyn HousekeepingStore>;
pub type SharedReads = Arc<dyn ReadStore>;
