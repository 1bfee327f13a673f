//! The write path through the wrapper: notifications' and events' custom
//! header values, and endpoints' secrets and header values, are sealed on
//! their way in; the rows handed back hold them in clear again.

use uuid::Uuid;

use super::values::{seal_headers, PlainEndpoint};
use super::Sealing;
use crate::domain::problem::{ErrorCode, Problem};
use crate::domain::sealed::{context, SealError};
use crate::store::cancel::Cancel;
use crate::store::delivery::Retry;
use crate::store::endpoints::{Endpoint, EndpointRef};
use crate::store::events::{EventInserted, Subscriber};
use crate::store::notifications::Inserted;
use crate::store::seams::{EndpointChange, WriteStore};
use crate::store::writes::{Committed, Writes};
use crate::store::StoreError;

#[async_trait::async_trait]
impl<S: WriteStore> WriteStore for Sealing<S> {
    /// Rows created come back with the values in clear they were given;
    /// rows met by their key (`Existing`, `KeyConflict`) are opened. Which
    /// of those a row is, the store decides by its payload and type alone:
    /// no sealed value takes part in the comparison.
    async fn commit(&self, mut writes: Writes) -> Result<Committed, StoreError> {
        let keys = &*self.keys;
        // The values in clear, by position in the commit (which `Committed`
        // keeps): only rows with custom headers have any.
        let mut plain_notifications = Vec::new();
        for (at, n) in writes.notifications.iter_mut().enumerate() {
            let id = n.id;
            if let Some(sealed) = seal_headers(keys, &n.headers, |name| {
                context::notification_header(id, name)
            }) {
                plain_notifications.push((at, std::mem::replace(&mut n.headers, sealed)));
            }
        }
        // An event's headers are stored with each delivery, sealed for it.
        let mut plain_events = Vec::new();
        for (at, event) in writes.events.iter_mut().enumerate() {
            if !keys.is_enabled() || event.headers.is_empty() {
                continue;
            }
            for delivery in &mut event.deliveries {
                let id = delivery.id;
                delivery.headers = seal_headers(keys, &event.headers, |name| {
                    context::notification_header(id, name)
                });
            }
            plain_events.push((at, std::mem::take(&mut event.headers)));
        }
        let mut committed = self.inner.commit(writes).await?;
        for row in &mut committed.notifications {
            if let Inserted::Existing(n) | Inserted::KeyConflict(n) = row {
                self.open_notification(n);
            }
        }
        for (at, headers) in plain_notifications {
            if let Some(Inserted::Created(n)) = committed.notifications.get_mut(at) {
                n.headers = headers;
            }
        }
        for (at, plain) in plain_events {
            if let Some(EventInserted::Created { push, headers, .. }) = committed.events.get_mut(at)
            {
                *headers = plain;
                push.iter_mut().for_each(|d| d.headers = None);
            }
        }
        Ok(committed)
    }
    async fn find_endpoints(
        &self,
        ids: &[Uuid],
        uids: &[String],
    ) -> Result<Vec<Endpoint>, StoreError> {
        let rows = self.inner.find_endpoints(ids, uids).await?;
        Ok(self.open_endpoints(rows))
    }
    async fn find_endpoint(&self, by: &EndpointRef) -> Result<Option<Endpoint>, StoreError> {
        let mut found = WriteStore::find_endpoint(&self.inner, by).await?;
        found.iter_mut().for_each(|e| self.open_endpoint(e));
        Ok(found)
    }
    async fn subscribers(&self, owners: &[Option<String>]) -> Result<Vec<Subscriber>, StoreError> {
        self.inner.subscribers(owners).await
    }
    async fn mark_needs_index(&self, ids: &[Uuid]) -> Result<(), StoreError> {
        self.inner.mark_needs_index(ids).await
    }
    async fn cancel_notification(
        &self,
        id: Uuid,
        spare: Option<Uuid>,
    ) -> Result<Cancel, StoreError> {
        let mut cancel = self.inner.cancel_notification(id, spare).await?;
        if let Cancel::Cancelled(n) | Cancel::NotPending(n) = &mut cancel {
            self.open_notification(n);
        }
        Ok(cancel)
    }
    async fn cancel_by_key(
        &self,
        key: &str,
        endpoint_id: Option<Uuid>,
        spare: Option<Uuid>,
    ) -> Result<Vec<Uuid>, StoreError> {
        self.inner.cancel_by_key(key, endpoint_id, spare).await
    }
    async fn cancel_event(&self, id: Uuid) -> Result<Option<Vec<Uuid>>, StoreError> {
        self.inner.cancel_event(id).await
    }
    async fn retry_notification(
        &self,
        id: Uuid,
        now: chrono::DateTime<chrono::Utc>,
        delivering: bool,
    ) -> Result<Retry, StoreError> {
        let mut retry = self.inner.retry_notification(id, now, delivering).await?;
        match &mut retry {
            Retry::Retried(n)
            | Retry::NotRetryable(n)
            | Retry::InFlight(n)
            | Retry::LeaseRanOut(n)
            | Retry::EndpointDeleted(n) => self.open_notification(n),
            Retry::NotFound => {}
        }
        Ok(retry)
    }
    async fn create_endpoint(&self, endpoint: &Endpoint) -> Result<Endpoint, StoreError> {
        if !self.keys.is_enabled() {
            return self.inner.create_endpoint(endpoint).await;
        }
        let mut sealed = endpoint.clone();
        let plain = PlainEndpoint::seal(&self.keys, &mut sealed);
        let mut created = self.inner.create_endpoint(&sealed).await?;
        if let Some(plain) = plain {
            plain.restore(&mut created);
        }
        Ok(created)
    }
    /// The store calls the change under its lock with the row as stored:
    /// it is opened first, so `change` sees (and compares, and changes)
    /// values in clear, and sealed again before the store writes it back.
    /// A row with a value that does not open is not changed: writing it
    /// back would replace that value.
    async fn modify_endpoint<'a>(
        &self,
        by: &EndpointRef,
        mut change: EndpointChange<'a>,
    ) -> Result<Option<Result<Endpoint, Problem>>, StoreError> {
        let mut unreadable: Option<(Uuid, SealError)> = None;
        let mut plain: Option<PlainEndpoint> = None;
        let (unreadable_slot, plain_slot) = (&mut unreadable, &mut plain);
        let sealed_change: EndpointChange<'_> = Box::new(move |endpoint: &mut Endpoint| {
            self.open_endpoint(endpoint);
            if let Some(error) = endpoint.unreadable.take() {
                *unreadable_slot = Some((endpoint.id, error));
                // Only makes the store leave the row as it is; the caller
                // gets the seal error instead.
                return Err(Problem::conflict(
                    ErrorCode::Conflict,
                    "a sealed value does not open",
                ));
            }
            change(endpoint)?;
            *plain_slot = PlainEndpoint::seal(&self.keys, endpoint);
            Ok(())
        });
        let modified = self.inner.modify_endpoint(by, sealed_change).await?;
        if let Some((id, error)) = unreadable {
            return Err(StoreError::Sealed {
                what: format!("endpoint {id}"),
                error,
            });
        }
        Ok(match modified {
            Some(Ok(mut updated)) => {
                if let Some(plain) = plain {
                    plain.restore(&mut updated);
                }
                Some(Ok(updated))
            }
            other => other,
        })
    }
    async fn delete_endpoint(&self, by: &EndpointRef) -> Result<Option<Vec<Uuid>>, StoreError> {
        self.inner.delete_endpoint(by).await
    }
    async fn revoke_portal_links(
        &self,
        by: &EndpointRef,
    ) -> Result<Option<(Uuid, i32)>, StoreError> {
        self.inner.revoke_portal_links(by).await
    }
    async fn revoke_owner_portal_links(&self, owner: &str) -> Result<Option<i32>, StoreError> {
        self.inner.revoke_owner_portal_links(owner).await
    }
    async fn owner_portal_generation(&self, owner: &str) -> Result<Option<i32>, StoreError> {
        self.inner.owner_portal_generation(owner).await
    }
}
