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
//! - `ResealRows`: the walk that brings values sealed at rest under the
//!   current key;
//! - `StatsStore`: the per-minute counts behind `GET /v1/stats`, read by
//!   the API and sampled and pruned by housekeeping (so both `ReadStore`
//!   and `HousekeepingStore` include it).
//!
//! - `OperationStore`: recover operations and their leases.
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

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::clock::Clock;

use uuid::Uuid;

use chrono::{DateTime, Utc};
use tokio_util::sync::CancellationToken;

use super::attempts::Attempt;
use super::backlog::Backlog;
pub use super::breaker::{BreakerStore, SharedBreaker};
use super::cancel::Cancel;
use super::consumer_tokens::ConsumerTokenRows;
use super::delivery::{Claimed, DueNotification, Head, Retry};
use super::endpoints::{Endpoint, EndpointRef, PreviousSecret};
use super::events::{Event, EventFilter, Subscriber};
use super::health::FailingEndpoint;
use super::housekeeping::{DueBacklog, KeyCursor, PendingCursor};
use super::notifications::{MostAttempted, Notification, NotificationFilter};
use super::pull::{LeaseDecision, Leased, Leases, LeasesEnded, Taken};
use super::pull_due::PickDecision;
use super::recording::{AttemptRecord, Recorded};
pub use super::stats::{SharedStats, StatsStore};
use super::writes::{Committed, Writes};
use super::{StoreError, StoreKind};
use crate::domain::health::Health;
use crate::domain::operator_event::OperatorEvent;
use crate::domain::problem::Problem;
use crate::domain::pull::{Delivery, Receipt};
use crate::domain::status::Status;

/// A change to an endpoint, applied under its row lock; it may refuse.
pub type EndpointChange<'a> = Box<dyn FnOnce(&mut Endpoint) -> Result<(), Problem> + Send + 'a>;

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
    /// stops working); its id and the new generation, `None`: no such
    /// endpoint.
    async fn revoke_portal_links(
        &self,
        by: &EndpointRef,
    ) -> Result<Option<(Uuid, i32)>, StoreError>;
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
    async fn cancel_orphaned_pulls(&self, limit: i64) -> Result<usize, StoreError>;
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

pub type SharedPull = Arc<dyn PullStore>;
pub type SharedWrites = Arc<dyn WriteStore>;
pub type SharedDelivery = Arc<dyn DeliveryStore>;
pub type SharedHousekeeping = Arc<dyn HousekeepingStore>;
pub type SharedReads = Arc<dyn ReadStore>;

/// What operations need (docs/design.md §16, `service::recover`): start one
/// (one running per endpoint and kind), read one, lease one to a runner
/// (compare-and-set on the lease it read, so with several processes one
/// works an operation at a time), and work a recover page by page, each
/// page's restarts and the operation's cursor and counts in one
/// transaction.
#[async_trait::async_trait]
pub trait OperationStore: Clocked + Send + Sync + 'static {
    /// Stores `operation` unless one of its kind already runs for its
    /// endpoint; then returns that one.
    async fn start_operation(
        &self,
        operation: &super::operations::Operation,
    ) -> Result<super::operations::Started, StoreError>;
    async fn get_operation(
        &self,
        id: Uuid,
    ) -> Result<Option<super::operations::Operation>, StoreError>;
    /// Leases to `holder`, until `until`, one operation that
    /// `domain::operation::leasable` says may be taken at `now`.
    async fn lease_operation(
        &self,
        holder: Uuid,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<Option<super::operations::Operation>, StoreError>;
    /// Works the next page (at most `limit` rows read) of operation `id`,
    /// which `holder` must hold: a recover's or a retry's restarts, each
    /// notification as `store::operations::restarts` decides at `now`; a
    /// cancel's cancels, as `store::operations::cancels` decides. Advances
    /// the cursor and the counts, renews the lease until `until`, and ends
    /// the operation `done` after its last page, all in one transaction.
    /// `None`: `holder` does not hold it (any more), or it no longer runs.
    async fn operation_page(
        &self,
        id: Uuid,
        holder: Uuid,
        limit: i64,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<Option<super::operations::OperationPage>, StoreError>;
    /// Up to `limit` of `endpoint`'s notifications that ended failed after
    /// `after` (failure time, id) and by `until`, in failure order, as a
    /// page reads them but under no lock and changing nothing: a bulk
    /// retry's dry run counts what it would restart.
    async fn failed_page(
        &self,
        endpoint: Uuid,
        after: (DateTime<Utc>, Uuid),
        until: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<super::operations::FailedRow>, StoreError>;
    /// Up to `limit` of `endpoint`'s notifications below `before`, newest
    /// first, as a cancel's page reads them but changing nothing: its dry
    /// run counts what it would cancel.
    async fn endpoint_page(
        &self,
        endpoint: Uuid,
        before: Uuid,
        limit: i64,
    ) -> Result<Vec<super::operations::EndpointRow>, StoreError>;
    /// Ends operation `id`, held by `holder`, `failed` with `error`.
    async fn fail_operation(
        &self,
        id: Uuid,
        holder: Uuid,
        error: &str,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError>;
    /// Gives `holder`'s lease on `id` back (at shutdown), so that the next
    /// process takes it over at once rather than when it runs out.
    async fn release_operation(&self, id: Uuid, holder: Uuid) -> Result<(), StoreError>;
    /// Deletes up to `limit` operations `domain::retention::operation_expired`
    /// says go (finished before `before`); how many.
    async fn purge_operations(&self, before: DateTime<Utc>, limit: i64) -> Result<u64, StoreError>;
}

pub type SharedOperations = Arc<dyn OperationStore>;
