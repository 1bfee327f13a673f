//! The API's reads through the wrapper: notifications' custom header
//! values and endpoints' secrets and header values are opened.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::Sealing;
use crate::domain::status::Status;
use crate::store::attempts::Attempt;
use crate::store::backlog::Backlog;
use crate::store::endpoints::{Endpoint, EndpointRef};
use crate::store::events::{Event, EventFilter};
use crate::store::notifications::{MostAttempted, Notification, NotificationFilter};
use crate::store::seams::ReadStore;
use crate::store::{StoreError, StoreKind};

#[async_trait::async_trait]
impl<S: ReadStore> ReadStore for Sealing<S> {
    fn kind(&self) -> StoreKind {
        self.inner.kind()
    }
    async fn close(&self) {
        self.inner.close().await
    }
    async fn ping(&self) -> Result<(), StoreError> {
        self.inner.ping().await
    }
    async fn get_notification(&self, id: Uuid) -> Result<Option<Notification>, StoreError> {
        let mut found = self.inner.get_notification(id).await?;
        found.iter_mut().for_each(|n| self.open_notification(n));
        Ok(found)
    }
    async fn list_notifications(
        &self,
        filter: &NotificationFilter,
    ) -> Result<Vec<Notification>, StoreError> {
        let rows = self.inner.list_notifications(filter).await?;
        Ok(self.open_notifications(rows))
    }
    async fn notifications_frontier(
        &self,
        filter: &NotificationFilter,
    ) -> Result<Option<Uuid>, StoreError> {
        self.inner.notifications_frontier(filter).await
    }
    async fn most_attempted(
        &self,
        filter: &MostAttempted,
    ) -> Result<Vec<Notification>, StoreError> {
        let rows = self.inner.most_attempted(filter).await?;
        Ok(self.open_notifications(rows))
    }
    async fn most_attempted_frontier(
        &self,
        filter: &MostAttempted,
    ) -> Result<Option<(i32, Uuid)>, StoreError> {
        self.inner.most_attempted_frontier(filter).await
    }
    async fn key_prefix_ids(
        &self,
        prefix: &str,
        filter: &NotificationFilter,
        cap: i64,
    ) -> Result<Vec<Uuid>, StoreError> {
        self.inner.key_prefix_ids(prefix, filter, cap).await
    }
    async fn recent_event_types(
        &self,
        endpoint_id: Uuid,
        owner: Option<&str>,
        since: Uuid,
        per_source: i64,
    ) -> Result<Vec<String>, StoreError> {
        self.inner
            .recent_event_types(endpoint_id, owner, since, per_source)
            .await
    }
    async fn list_attempts(
        &self,
        notification_id: Uuid,
        after: i32,
        limit: i64,
    ) -> Result<Vec<Attempt>, StoreError> {
        self.inner
            .list_attempts(notification_id, after, limit)
            .await
    }
    async fn find_endpoint(&self, by: &EndpointRef) -> Result<Option<Endpoint>, StoreError> {
        let mut found = ReadStore::find_endpoint(&self.inner, by).await?;
        found.iter_mut().for_each(|e| self.open_endpoint(e));
        Ok(found)
    }
    async fn list_endpoints(
        &self,
        before: Option<Uuid>,
        limit: i64,
        owner: Option<&str>,
    ) -> Result<Vec<Endpoint>, StoreError> {
        let rows = self.inner.list_endpoints(before, limit, owner).await?;
        Ok(self.open_endpoints(rows))
    }
    async fn get_event(&self, id: Uuid) -> Result<Option<Event>, StoreError> {
        self.inner.get_event(id).await
    }
    async fn event_counts(&self, id: Uuid) -> Result<Vec<(Status, i64)>, StoreError> {
        self.inner.event_counts(id).await
    }
    async fn list_events(&self, filter: &EventFilter) -> Result<Vec<Event>, StoreError> {
        self.inner.list_events(filter).await
    }
    async fn events_frontier(&self, filter: &EventFilter) -> Result<Option<Uuid>, StoreError> {
        self.inner.events_frontier(filter).await
    }
    async fn endpoint_backlog(
        &self,
        endpoint: Uuid,
        now: DateTime<Utc>,
    ) -> Result<Backlog, StoreError> {
        self.inner.endpoint_backlog(endpoint, now).await
    }
}
