//! The store as its users see it: one trait per user, so that another
//! backend (SQLite, for the embedded mode) implements exactly what each
//! part of hookd needs, and each part names only what it uses.
//! - `WriteStore`: the write path (`service`);
//! - `ReadStore`: the API's reads (status, lists, counts);
//! - `PendingRows`: a rebuild of the due index.
//!
//! PostgreSQL (`Store`) implements them by delegating to its own methods.

use std::sync::Arc;

use uuid::Uuid;

use super::attempts::Attempt;
use super::delivery::Retry;
use super::endpoints::{Endpoint, EndpointRef};
use super::events::{Event, EventFilter, Subscriber};
use super::notifications::{Cancel, Notification, NotificationFilter};
use super::writes::{Committed, Writes};
use super::{Store, StoreError};
use crate::domain::problem::Problem;
use crate::domain::status::Status;

/// A change to an endpoint, applied under its row lock; it may refuse.
pub type EndpointChange<'a> = Box<dyn FnOnce(&mut Endpoint) -> Result<(), Problem> + Send + 'a>;

/// What the write path needs.
#[async_trait::async_trait]
pub trait WriteStore: Send + Sync + 'static {
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
    async fn cancel_notification(&self, id: Uuid) -> Result<Cancel, StoreError>;
    async fn cancel_by_key(
        &self,
        key: &str,
        endpoint_id: Option<Uuid>,
    ) -> Result<Vec<Uuid>, StoreError>;
    async fn cancel_event(&self, id: Uuid) -> Result<Option<Vec<Uuid>>, StoreError>;
    async fn retry_notification(
        &self,
        id: Uuid,
        now: chrono::DateTime<chrono::Utc>,
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
}

/// What the API reads.
#[async_trait::async_trait]
pub trait ReadStore: Send + Sync + 'static {
    async fn ping(&self) -> Result<(), StoreError>;
    async fn get_notification(&self, id: Uuid) -> Result<Option<Notification>, StoreError>;
    async fn list_notifications(
        &self,
        filter: &NotificationFilter,
    ) -> Result<Vec<Notification>, StoreError>;
    async fn notification_url(&self, id: Uuid) -> Result<Option<Option<String>>, StoreError>;
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
}

/// Where a rebuild of the due index reads what is pending: pages in due
/// order (keyset `(due time, id)`).
#[async_trait::async_trait]
pub trait PendingRows: Send + Sync {
    async fn pending_page(
        &self,
        after: Option<(chrono::DateTime<chrono::Utc>, Uuid)>,
        limit: i64,
    ) -> Result<Vec<(Uuid, chrono::DateTime<chrono::Utc>)>, StoreError>;
}

pub type SharedWrites = Arc<dyn WriteStore>;
pub type SharedReads = Arc<dyn ReadStore>;

#[async_trait::async_trait]
impl WriteStore for Store {
    async fn commit(&self, writes: Writes) -> Result<Committed, StoreError> {
        Store::commit(self, writes).await
    }
    async fn find_endpoints(
        &self,
        ids: &[Uuid],
        uids: &[String],
    ) -> Result<Vec<Endpoint>, StoreError> {
        Store::find_endpoints(self, ids, uids).await
    }
    async fn find_endpoint(&self, by: &EndpointRef) -> Result<Option<Endpoint>, StoreError> {
        Store::find_endpoint(self, by).await
    }
    async fn subscribers(&self, owners: &[Option<String>]) -> Result<Vec<Subscriber>, StoreError> {
        Store::subscribers(self, owners).await
    }
    async fn mark_needs_index(&self, ids: &[Uuid]) -> Result<(), StoreError> {
        Store::mark_needs_index(self, ids).await
    }
    async fn cancel_notification(&self, id: Uuid) -> Result<Cancel, StoreError> {
        Store::cancel_notification(self, id).await
    }
    async fn cancel_by_key(
        &self,
        key: &str,
        endpoint_id: Option<Uuid>,
    ) -> Result<Vec<Uuid>, StoreError> {
        Store::cancel_by_key(self, key, endpoint_id).await
    }
    async fn cancel_event(&self, id: Uuid) -> Result<Option<Vec<Uuid>>, StoreError> {
        Store::cancel_event(self, id).await
    }
    async fn retry_notification(
        &self,
        id: Uuid,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<Retry, StoreError> {
        Store::retry_notification(self, id, now).await
    }
    async fn create_endpoint(&self, endpoint: &Endpoint) -> Result<Endpoint, StoreError> {
        Store::create_endpoint(self, endpoint).await
    }
    async fn modify_endpoint<'a>(
        &self,
        by: &EndpointRef,
        change: EndpointChange<'a>,
    ) -> Result<Option<Result<Endpoint, Problem>>, StoreError> {
        Store::modify_endpoint(self, by, change).await
    }
    async fn delete_endpoint(&self, by: &EndpointRef) -> Result<Option<Vec<Uuid>>, StoreError> {
        Store::delete_endpoint(self, by).await
    }
}

#[async_trait::async_trait]
impl ReadStore for Store {
    async fn ping(&self) -> Result<(), StoreError> {
        Store::ping(self).await
    }
    async fn get_notification(&self, id: Uuid) -> Result<Option<Notification>, StoreError> {
        Store::get_notification(self, id).await
    }
    async fn list_notifications(
        &self,
        filter: &NotificationFilter,
    ) -> Result<Vec<Notification>, StoreError> {
        Store::list_notifications(self, filter).await
    }
    async fn notification_url(&self, id: Uuid) -> Result<Option<Option<String>>, StoreError> {
        Store::notification_url(self, id).await
    }
    async fn list_attempts(
        &self,
        notification_id: Uuid,
        after: i32,
        limit: i64,
    ) -> Result<Vec<Attempt>, StoreError> {
        Store::list_attempts(self, notification_id, after, limit).await
    }
    async fn find_endpoint(&self, by: &EndpointRef) -> Result<Option<Endpoint>, StoreError> {
        Store::find_endpoint(self, by).await
    }
    async fn list_endpoints(
        &self,
        before: Option<Uuid>,
        limit: i64,
        owner: Option<&str>,
    ) -> Result<Vec<Endpoint>, StoreError> {
        Store::list_endpoints(self, before, limit, owner).await
    }
    async fn get_event(&self, id: Uuid) -> Result<Option<Event>, StoreError> {
        Store::get_event(self, id).await
    }
    async fn event_counts(&self, id: Uuid) -> Result<Vec<(Status, i64)>, StoreError> {
        Store::event_counts(self, id).await
    }
    async fn list_events(&self, filter: &EventFilter) -> Result<Vec<Event>, StoreError> {
        Store::list_events(self, filter).await
    }
}
