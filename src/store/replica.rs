//! The API's reads from a streaming replica (`database.read_url`, docs/design.md
//! §13): notifications, their attempts and events are read there, so that
//! status queries, lists and the console take no work from the primary
//! that records deliveries.
//!
//! A replica runs behind the primary by its replay delay. What it cannot
//! answer yet, a notification or event created a moment ago, is asked of
//! the primary, so whoever created something finds it at once; a replica
//! that fails (down, restarting) hands every read to the primary, so it
//! costs freshness, never availability. Lists stay on the replica and may
//! lag by its delay. Endpoints are always read on the primary: there are
//! few, and an edit must show at once (a stale endpoint is not a missing
//! one, so falling back on a miss would not catch it).

use std::future::Future;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::domain::status::Status;
use crate::store::attempts::Attempt;
use crate::store::backlog::Backlog;
use crate::store::endpoints::{Endpoint, EndpointRef};
use crate::store::events::{Event, EventFilter};
use crate::store::notifications::{MostAttempted, Notification, NotificationFilter};
use crate::store::seams::ReadStore;
use crate::store::stats::{FailingCount, MinuteRow, StatsScope, StatsStore};
use crate::store::{StoreError, StoreKind};

/// After the replica fails, reads skip it this long: a replica that does
/// not answer (a host gone, packets dropped) would otherwise cost every
/// read its connection timeout before the primary answers.
const COOL_DOWN: std::time::Duration = std::time::Duration::from_secs(10);

/// Reads from `replica`, falling back to `primary` (both sealed alike).
pub struct ReplicaReads<R, P> {
    replica: R,
    primary: P,
    /// Until when the replica is skipped (`COOL_DOWN` after a failure).
    skip_until: std::sync::Mutex<Option<std::time::Instant>>,
}

impl<R: ReadStore, P: ReadStore> ReplicaReads<R, P> {
    pub fn new(replica: R, primary: P) -> Self {
        Self {
            replica,
            primary,
            skip_until: std::sync::Mutex::new(None),
        }
    }

    /// The replica's answer when `found` says it is one and the replica is
    /// not cooling down after a failure; otherwise the primary's (which is
    /// also the answer for a row that exists nowhere). The metric's label
    /// says why the primary answered: `missing` (not replayed yet, or
    /// nowhere) or `failed`.
    async fn read<T, Replica, Primary>(
        &self,
        replica: Replica,
        primary: impl FnOnce() -> Primary,
        found: impl FnOnce(&T) -> bool,
    ) -> Result<T, StoreError>
    where
        Replica: Future<Output = Result<T, StoreError>>,
        Primary: Future<Output = Result<T, StoreError>>,
    {
        let now = std::time::Instant::now();
        let cooling = self
            .skip_until
            .lock()
            .unwrap()
            .is_some_and(|until| now < until);
        let reason = if cooling {
            "failed"
        } else {
            match replica.await {
                Ok(answer) if found(&answer) => return Ok(answer),
                Ok(_) => "missing",
                Err(error) => {
                    tracing::warn!(%error, "the read replica failed; reading the primary for a while");
                    *self.skip_until.lock().unwrap() = Some(now + COOL_DOWN);
                    "failed"
                }
            }
        };
        metrics::counter!("hookd_read_replica_fallbacks_total", "reason" => reason).increment(1);
        primary().await
    }
}

/// Any answer the replica gives is the answer.
fn any<T>(_: &T) -> bool {
    true
}

#[async_trait::async_trait]
impl<R: ReadStore, P: ReadStore> ReadStore for ReplicaReads<R, P> {
    fn kind(&self) -> StoreKind {
        self.primary.kind()
    }
    /// Readiness is the primary's: without the replica, reads go there.
    async fn ping(&self) -> Result<(), StoreError> {
        self.primary.ping().await
    }
    async fn close(&self) {
        self.replica.close().await;
        self.primary.close().await;
    }
    async fn get_notification(&self, id: Uuid) -> Result<Option<Notification>, StoreError> {
        self.read(
            self.replica.get_notification(id),
            || self.primary.get_notification(id),
            Option::is_some,
        )
        .await
    }
    async fn list_notifications(
        &self,
        filter: &NotificationFilter,
    ) -> Result<Vec<Notification>, StoreError> {
        self.read(
            self.replica.list_notifications(filter),
            || self.primary.list_notifications(filter),
            any,
        )
        .await
    }
    async fn notifications_frontier(
        &self,
        filter: &NotificationFilter,
    ) -> Result<Option<Uuid>, StoreError> {
        self.read(
            self.replica.notifications_frontier(filter),
            || self.primary.notifications_frontier(filter),
            Option::is_some,
        )
        .await
    }
    async fn most_attempted(
        &self,
        filter: &MostAttempted,
    ) -> Result<Vec<Notification>, StoreError> {
        self.read(
            self.replica.most_attempted(filter),
            || self.primary.most_attempted(filter),
            any,
        )
        .await
    }
    async fn most_attempted_frontier(
        &self,
        filter: &MostAttempted,
    ) -> Result<Option<(i32, Uuid)>, StoreError> {
        self.read(
            self.replica.most_attempted_frontier(filter),
            || self.primary.most_attempted_frontier(filter),
            Option::is_some,
        )
        .await
    }
    async fn key_prefix_ids(
        &self,
        prefix: &str,
        filter: &NotificationFilter,
        cap: i64,
    ) -> Result<Vec<Uuid>, StoreError> {
        self.read(
            self.replica.key_prefix_ids(prefix, filter, cap),
            || self.primary.key_prefix_ids(prefix, filter, cap),
            any,
        )
        .await
    }
    async fn recent_event_types(
        &self,
        endpoint_id: Uuid,
        owner: Option<&str>,
        since: Uuid,
        per_source: i64,
    ) -> Result<Vec<String>, StoreError> {
        self.read(
            self.replica
                .recent_event_types(endpoint_id, owner, since, per_source),
            || {
                self.primary
                    .recent_event_types(endpoint_id, owner, since, per_source)
            },
            any,
        )
        .await
    }
    async fn list_attempts(
        &self,
        notification_id: Uuid,
        after: i32,
        limit: i64,
    ) -> Result<Vec<Attempt>, StoreError> {
        self.read(
            self.replica.list_attempts(notification_id, after, limit),
            || self.primary.list_attempts(notification_id, after, limit),
            any,
        )
        .await
    }
    async fn find_endpoint(&self, by: &EndpointRef) -> Result<Option<Endpoint>, StoreError> {
        ReadStore::find_endpoint(&self.primary, by).await
    }
    async fn list_endpoints(
        &self,
        before: Option<Uuid>,
        limit: i64,
        owner: Option<&str>,
    ) -> Result<Vec<Endpoint>, StoreError> {
        self.primary.list_endpoints(before, limit, owner).await
    }
    async fn get_event(&self, id: Uuid) -> Result<Option<Event>, StoreError> {
        self.read(
            self.replica.get_event(id),
            || self.primary.get_event(id),
            Option::is_some,
        )
        .await
    }
    async fn event_counts(&self, id: Uuid) -> Result<Vec<(Status, i64)>, StoreError> {
        self.read(
            self.replica.event_counts(id),
            || self.primary.event_counts(id),
            |counts| !counts.is_empty(),
        )
        .await
    }
    async fn list_events(&self, filter: &EventFilter) -> Result<Vec<Event>, StoreError> {
        self.read(
            self.replica.list_events(filter),
            || self.primary.list_events(filter),
            any,
        )
        .await
    }
    async fn events_frontier(&self, filter: &EventFilter) -> Result<Option<Uuid>, StoreError> {
        self.read(
            self.replica.events_frontier(filter),
            || self.primary.events_frontier(filter),
            Option::is_some,
        )
        .await
    }
    async fn endpoint_backlog(
        &self,
        endpoint: Uuid,
        now: DateTime<Utc>,
    ) -> Result<Backlog, StoreError> {
        self.read(
            self.replica.endpoint_backlog(endpoint, now),
            || self.primary.endpoint_backlog(endpoint, now),
            any,
        )
        .await
    }
}

/// The console's overview reads the replica too; what the housekeeper
/// writes goes to the primary.
#[async_trait::async_trait]
impl<R: ReadStore, P: ReadStore> StatsStore for ReplicaReads<R, P> {
    async fn minute_counts(
        &self,
        scope: &StatsScope,
        since: DateTime<Utc>,
    ) -> Result<Vec<MinuteRow>, StoreError> {
        self.read(
            self.replica.minute_counts(scope, since),
            || self.primary.minute_counts(scope, since),
            any,
        )
        .await
    }
    async fn pending_samples(
        &self,
        since: DateTime<Utc>,
    ) -> Result<Vec<(DateTime<Utc>, i64)>, StoreError> {
        self.read(
            self.replica.pending_samples(since),
            || self.primary.pending_samples(since),
            any,
        )
        .await
    }
    async fn most_failing(
        &self,
        scope: &StatsScope,
        since: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<FailingCount>, StoreError> {
        self.read(
            self.replica.most_failing(scope, since, limit),
            || self.primary.most_failing(scope, since, limit),
            any,
        )
        .await
    }
    async fn sample_pending(&self, minute: DateTime<Utc>) -> Result<(), StoreError> {
        self.primary.sample_pending(minute).await
    }
    async fn purge_minutes(&self, before: DateTime<Utc>, limit: i64) -> Result<u64, StoreError> {
        self.primary.purge_minutes(before, limit).await
    }
}
