//! PostgreSQL's side of the seams: `PgStore` implements each by delegating
//! to its own methods.

use chrono::{DateTime, Utc};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::PgStore;
use crate::clock::Clock;
use crate::domain::health::Health;
use crate::domain::index_owner::{Beat, IndexSeen};
use crate::domain::operator_event::OperatorEvent;
use crate::domain::problem::Problem;
use crate::domain::pull::{Delivery, Receipt};
use crate::domain::status::Status;
use crate::store::attempts::Attempt;
use crate::store::backlog::Backlog;
use crate::store::cancel::Cancel;
use crate::store::consumer_tokens::ConsumerTokenRows;
use crate::store::delivery::{Claimed, DueNotification, Head, Retry};
use crate::store::endpoints::{Endpoint, EndpointRef};
use crate::store::events::{Event, EventFilter, Subscriber};
use crate::store::health::FailingEndpoint;
use crate::store::housekeeping::{DueBacklog, KeyCursor, PendingCursor};
use crate::store::notifications::{MostAttempted, Notification, NotificationFilter};
use crate::store::pull::{LeaseDecision, Leased, Leases, LeasesEnded, Taken};
use crate::store::pull_due::PickDecision;
use crate::store::recording::{AttemptRecord, Recorded};
use crate::store::seams::{
    Clocked, DeliveryStore, EndpointChange, HousekeepingStore, OperatorTarget, PullStore,
    ReadStore, WriteStore,
};
use crate::store::writes::{Committed, Writes};
use crate::store::{StoreError, StoreKind};

impl Clocked for PgStore {
    fn clock(&self) -> &Clock {
        PgStore::clock(self)
    }
}

#[async_trait::async_trait]
impl WriteStore for PgStore {
    async fn commit(&self, writes: Writes) -> Result<Committed, StoreError> {
        PgStore::commit(self, writes).await
    }
    async fn find_endpoints(
        &self,
        ids: &[Uuid],
        uids: &[String],
    ) -> Result<Vec<Endpoint>, StoreError> {
        PgStore::find_endpoints(self, ids, uids).await
    }
    async fn find_endpoint(&self, by: &EndpointRef) -> Result<Option<Endpoint>, StoreError> {
        PgStore::find_endpoint(self, by).await
    }
    async fn subscribers(&self, owners: &[Option<String>]) -> Result<Vec<Subscriber>, StoreError> {
        PgStore::subscribers(self, owners).await
    }
    async fn mark_needs_index(&self, ids: &[Uuid]) -> Result<(), StoreError> {
        PgStore::mark_needs_index(self, ids).await
    }
    async fn cancel_notification(
        &self,
        id: Uuid,
        spare: Option<Uuid>,
    ) -> Result<Cancel, StoreError> {
        PgStore::cancel_notification(self, id, spare).await
    }
    async fn cancel_by_key(
        &self,
        key: &str,
        endpoint_id: Option<Uuid>,
        spare: Option<Uuid>,
    ) -> Result<Vec<Uuid>, StoreError> {
        PgStore::cancel_by_key(self, key, endpoint_id, spare).await
    }
    async fn cancel_event(&self, id: Uuid) -> Result<Option<Vec<Uuid>>, StoreError> {
        PgStore::cancel_event(self, id).await
    }
    async fn retry_notification(
        &self,
        id: Uuid,
        now: chrono::DateTime<chrono::Utc>,
        delivering: bool,
    ) -> Result<Retry, StoreError> {
        PgStore::retry_notification(self, id, now, delivering).await
    }
    async fn create_endpoint(&self, endpoint: &Endpoint) -> Result<Endpoint, StoreError> {
        PgStore::create_endpoint(self, endpoint).await
    }
    async fn modify_endpoint<'a>(
        &self,
        by: &EndpointRef,
        change: EndpointChange<'a>,
    ) -> Result<Option<Result<Endpoint, Problem>>, StoreError> {
        PgStore::modify_endpoint(self, by, change).await
    }
    async fn delete_endpoint(&self, by: &EndpointRef) -> Result<Option<Vec<Uuid>>, StoreError> {
        PgStore::delete_endpoint(self, by).await
    }
    async fn revoke_portal_links(
        &self,
        by: &EndpointRef,
    ) -> Result<Option<(Uuid, i32)>, StoreError> {
        PgStore::revoke_portal_links(self, by).await
    }
    async fn revoke_owner_portal_links(&self, owner: &str) -> Result<Option<i32>, StoreError> {
        PgStore::revoke_owner_portal_links(self, owner).await
    }
    async fn owner_portal_generation(&self, owner: &str) -> Result<Option<i32>, StoreError> {
        PgStore::owner_portal_generation(self, owner).await
    }
}

#[async_trait::async_trait]
impl ReadStore for PgStore {
    fn kind(&self) -> StoreKind {
        StoreKind::Postgres
    }
    async fn ping(&self) -> Result<(), StoreError> {
        PgStore::ping(self).await
    }
    /// Ends each connection with PostgreSQL's Terminate message once it
    /// is back in the pool, rather than leaving them to the process's
    /// exit: a hookd run inside another process (a test's, an embedder's)
    /// leaves no idle session behind, which would hold off a DROP
    /// DATABASE.
    async fn close(&self) {
        self.pool.close().await;
    }
    async fn get_notification(&self, id: Uuid) -> Result<Option<Notification>, StoreError> {
        PgStore::get_notification(self, id).await
    }
    async fn list_notifications(
        &self,
        filter: &NotificationFilter,
    ) -> Result<Vec<Notification>, StoreError> {
        PgStore::list_notifications(self, filter).await
    }
    async fn notifications_frontier(
        &self,
        filter: &NotificationFilter,
    ) -> Result<Option<Uuid>, StoreError> {
        PgStore::notifications_frontier(self, filter).await
    }
    async fn most_attempted(
        &self,
        filter: &MostAttempted,
    ) -> Result<Vec<Notification>, StoreError> {
        PgStore::most_attempted(self, filter).await
    }
    async fn most_attempted_frontier(
        &self,
        filter: &MostAttempted,
    ) -> Result<Option<(i32, Uuid)>, StoreError> {
        PgStore::most_attempted_frontier(self, filter).await
    }
    async fn key_prefix_ids(
        &self,
        prefix: &str,
        filter: &NotificationFilter,
        cap: i64,
    ) -> Result<Vec<Uuid>, StoreError> {
        PgStore::key_prefix_ids(self, prefix, filter, cap).await
    }
    async fn recent_event_types(
        &self,
        endpoint_id: Uuid,
        owner: Option<&str>,
        since: Uuid,
        per_source: i64,
    ) -> Result<Vec<String>, StoreError> {
        PgStore::recent_event_types(self, endpoint_id, owner, since, per_source).await
    }
    async fn list_attempts(
        &self,
        notification_id: Uuid,
        after: i32,
        limit: i64,
    ) -> Result<Vec<Attempt>, StoreError> {
        PgStore::list_attempts(self, notification_id, after, limit).await
    }
    async fn find_endpoint(&self, by: &EndpointRef) -> Result<Option<Endpoint>, StoreError> {
        PgStore::find_endpoint(self, by).await
    }
    async fn list_endpoints(
        &self,
        before: Option<Uuid>,
        limit: i64,
        owner: Option<&str>,
    ) -> Result<Vec<Endpoint>, StoreError> {
        PgStore::list_endpoints(self, before, limit, owner).await
    }
    async fn get_event(&self, id: Uuid) -> Result<Option<Event>, StoreError> {
        PgStore::get_event(self, id).await
    }
    async fn event_counts(&self, id: Uuid) -> Result<Vec<(Status, i64)>, StoreError> {
        PgStore::event_counts(self, id).await
    }
    async fn list_events(&self, filter: &EventFilter) -> Result<Vec<Event>, StoreError> {
        PgStore::list_events(self, filter).await
    }
    async fn events_frontier(&self, filter: &EventFilter) -> Result<Option<Uuid>, StoreError> {
        PgStore::events_frontier(self, filter).await
    }
    async fn endpoint_backlog(
        &self,
        endpoint: Uuid,
        now: DateTime<Utc>,
    ) -> Result<Backlog, StoreError> {
        PgStore::endpoint_backlog(self, endpoint, now).await
    }
}

#[async_trait::async_trait]
impl DeliveryStore for PgStore {
    async fn load_claimed(
        &self,
        ids: &[Uuid],
        current: &(dyn Fn(Uuid, i64) -> bool + Sync),
    ) -> Result<Claimed, StoreError> {
        PgStore::load_claimed(self, ids, current).await
    }
    async fn load_heads(&self, ids: &[Uuid]) -> Result<Vec<Head>, StoreError> {
        PgStore::load_heads(self, ids).await
    }
    async fn with_endpoints(
        &self,
        notifications: Vec<DueNotification>,
        current: &(dyn Fn(Uuid, i64) -> bool + Sync),
    ) -> Result<Claimed, StoreError> {
        PgStore::with_endpoints(self, notifications, current).await
    }
    async fn record_attempts(
        &self,
        records: &[AttemptRecord],
        health: &[(Uuid, Health)],
    ) -> Result<Recorded, StoreError> {
        PgStore::record_attempts(self, records, health).await
    }
    async fn cancel_notifications(&self, ids: &[Uuid]) -> Result<(), StoreError> {
        PgStore::cancel_notifications(self, ids).await
    }
    async fn hand_to_pull(&self, ids: &[Uuid]) -> Result<(), StoreError> {
        PgStore::hand_to_pull(self, ids).await
    }
}

#[async_trait::async_trait]
impl HousekeepingStore for PgStore {
    async fn needing_index(
        &self,
        limit: i64,
    ) -> Result<Vec<(Uuid, Option<DateTime<Utc>>)>, StoreError> {
        PgStore::needing_index(self, limit).await
    }
    async fn release_stranded(
        &self,
        after: Option<Uuid>,
        limit: i64,
    ) -> Result<(u64, Option<Uuid>), StoreError> {
        super::ordering::release_stranded(self, after, limit).await
    }
    async fn clear_needs_index(&self, ids: &[Uuid]) -> Result<(), StoreError> {
        PgStore::clear_needs_index(self, ids).await
    }
    async fn pending_due_before(
        &self,
        after: Option<PendingCursor>,
        due_before: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<(Uuid, DateTime<Utc>)>, StoreError> {
        PgStore::pending_page(self, after, Some(due_before), limit).await
    }
    async fn still_pending(&self, ids: &[Uuid]) -> Result<Vec<(Uuid, DateTime<Utc>)>, StoreError> {
        PgStore::still_pending(self, ids).await
    }
    async fn pending_created_after(
        &self,
        after: Uuid,
        limit: i64,
    ) -> Result<Vec<(Uuid, DateTime<Utc>)>, StoreError> {
        PgStore::pending_created_after(self, after, limit).await
    }
    async fn purge_completed(
        &self,
        before: DateTime<Utc>,
        after: Option<Uuid>,
        limit: i64,
    ) -> Result<(u64, Option<Uuid>), StoreError> {
        PgStore::purge_completed(self, before, after, limit).await
    }
    async fn purge_events(
        &self,
        before: DateTime<Utc>,
        after: Option<Uuid>,
        limit: i64,
    ) -> Result<(u64, Option<Uuid>), StoreError> {
        PgStore::purge_events(self, before, after, limit).await
    }
    async fn purge_order_keys(
        &self,
        after: Option<KeyCursor>,
        limit: i64,
        before: DateTime<Utc>,
    ) -> Result<(u64, Option<KeyCursor>), StoreError> {
        crate::store::housekeeping::purge_order_keys(self, after, limit, before).await
    }
    async fn maintain_partitions(
        &self,
        today: chrono::NaiveDate,
        before: Option<DateTime<Utc>>,
    ) -> Result<crate::store::partitions::PartitionUpkeep, StoreError> {
        PgStore::maintain_partitions(self, today, before).await
    }
    async fn clock_skew(&self) -> Result<Option<chrono::Duration>, StoreError> {
        PgStore::clock_skew(self).await.map(Some)
    }
    async fn beat_index(&self, beat: &Beat) -> Result<Vec<IndexSeen>, StoreError> {
        PgStore::beat_index(self, beat).await
    }
    async fn end_index_beats(&self, process: Uuid, now: DateTime<Utc>) -> Result<(), StoreError> {
        PgStore::end_index_beats(self, process, now).await
    }
    async fn sync_operator_endpoint(
        &self,
        target: Option<OperatorTarget<'_>>,
    ) -> Result<(), StoreError> {
        PgStore::sync_operator_endpoint(self, target).await
    }
    async fn due_backlog(
        &self,
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<DueBacklog, StoreError> {
        PgStore::due_backlog(self, now, limit).await
    }
    async fn failing_endpoints(
        &self,
        failing_before: DateTime<Utc>,
    ) -> Result<Vec<FailingEndpoint>, StoreError> {
        PgStore::failing_endpoints(self, failing_before).await
    }
    async fn disable_endpoints(
        &self,
        endpoints: &[FailingEndpoint],
        reason: &str,
        events: &[OperatorEvent],
    ) -> Result<Vec<Uuid>, StoreError> {
        PgStore::disable_endpoints(self, endpoints, reason, events).await
    }
}

#[async_trait::async_trait]
impl PullStore for PgStore {
    async fn take(
        &self,
        endpoint_id: Uuid,
        max: i64,
        lease: std::time::Duration,
        decide: PickDecision<'_>,
    ) -> Result<Vec<Taken>, StoreError> {
        PgStore::take(self, endpoint_id, max, lease, decide).await
    }
    async fn end_unpulled(
        &self,
        max_wait: std::time::Duration,
        limit: i64,
        decide: LeaseDecision<'_>,
    ) -> Result<Vec<Uuid>, StoreError> {
        PgStore::end_unpulled(self, max_wait, limit, decide).await
    }
    async fn next_pull_due(&self, endpoint_id: Uuid) -> Result<Option<DateTime<Utc>>, StoreError> {
        PgStore::next_pull_due(self, endpoint_id).await
    }
    async fn end_leases(
        &self,
        which: Leases<'_>,
        decide: LeaseDecision<'_>,
    ) -> Result<LeasesEnded, StoreError> {
        PgStore::end_leases(self, which, decide).await
    }
    async fn extend_lease(
        &self,
        receipt: &Receipt,
        until: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Option<DateTime<Utc>>, StoreError> {
        PgStore::extend_lease(self, receipt, until, to).await
    }
    async fn lease_of(&self, id: Uuid) -> Result<Option<Leased>, StoreError> {
        PgStore::lease_of(self, id).await
    }
    async fn follow_delivery(
        &self,
        endpoint_id: Uuid,
        delivery: Delivery,
    ) -> Result<Vec<(Uuid, DateTime<Utc>)>, StoreError> {
        PgStore::follow_delivery(self, endpoint_id, delivery).await
    }
    async fn adopt_strays(&self, limit: i64) -> Result<Vec<(Uuid, DateTime<Utc>)>, StoreError> {
        PgStore::adopt_strays(self, limit).await
    }
    async fn cancel_orphans(&self, limit: i64) -> Result<Vec<Uuid>, StoreError> {
        PgStore::cancel_orphans(self, limit).await
    }
    async fn set_consumer_token(
        &self,
        endpoint_id: Uuid,
        digest: &[u8; 32],
    ) -> Result<bool, StoreError> {
        PgStore::set_consumer_token(self, endpoint_id, digest).await
    }
    async fn consumer_tokens(
        &self,
        since: Option<DateTime<Utc>>,
    ) -> Result<ConsumerTokenRows, StoreError> {
        PgStore::consumer_tokens(self, since).await
    }
    async fn revoke_consumer_token(&self, endpoint_id: Uuid) -> Result<(), StoreError> {
        PgStore::revoke_consumer_token(self, endpoint_id).await
    }
    async fn signal_pull(&self, endpoints: &[Uuid]) -> Result<(), StoreError> {
        PgStore::signal_pull(self, endpoints).await
    }
    async fn listen_pull(
        &self,
        woken: &(dyn Fn(Option<Uuid>) + Send + Sync),
        shutdown: &CancellationToken,
    ) {
        PgStore::listen_pull(self, woken, shutdown).await
    }
}
