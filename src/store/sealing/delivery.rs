//! The dispatcher's and pull consumers' side through the wrapper: what is
//! about to be sent is opened, once per notification with custom headers
//! and once per endpoint a batch loads (as many as the store's own opening
//! did before the wrapper); a value that does not open fails that attempt.

use chrono::{DateTime, Utc};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::Sealing;
use crate::domain::health::Health;
use crate::domain::pull::{Delivery, Receipt};
use crate::store::consumer_tokens::ConsumerTokenRows;
use crate::store::delivery::{Claimed, DueNotification, Head};
use crate::store::pull::{LeaseDecision, Leased, Leases, LeasesEnded, Taken};
use crate::store::pull_due::PickDecision;
use crate::store::recording::{AttemptRecord, Recorded};
use crate::store::seams::{DeliveryStore, PullStore};
use crate::store::StoreError;

impl<S> Sealing<S> {
    fn open_endpoints_of(&self, claimed: &mut Claimed) {
        for endpoint in &mut claimed.endpoints {
            self.open_delivery_endpoint(endpoint);
        }
    }
}

#[async_trait::async_trait]
impl<S: DeliveryStore> DeliveryStore for Sealing<S> {
    async fn load_claimed(
        &self,
        ids: &[Uuid],
        current: &(dyn Fn(Uuid, i64) -> bool + Sync),
    ) -> Result<Claimed, StoreError> {
        let mut claimed = self.inner.load_claimed(ids, current).await?;
        for row in &mut claimed.notifications {
            row.unreadable = self.open_outgoing_headers(row.id, &mut row.headers);
        }
        self.open_endpoints_of(&mut claimed);
        Ok(claimed)
    }
    /// Heads carry nothing sealed.
    async fn load_heads(&self, ids: &[Uuid]) -> Result<Vec<Head>, StoreError> {
        self.inner.load_heads(ids).await
    }
    /// The notifications are this process's own, in clear already: only
    /// the endpoints loaded are opened.
    async fn with_endpoints(
        &self,
        notifications: Vec<DueNotification>,
        current: &(dyn Fn(Uuid, i64) -> bool + Sync),
    ) -> Result<Claimed, StoreError> {
        let mut claimed = self.inner.with_endpoints(notifications, current).await?;
        self.open_endpoints_of(&mut claimed);
        Ok(claimed)
    }
    async fn record_attempts(
        &self,
        records: &[AttemptRecord],
        health: &[(Uuid, Health)],
    ) -> Result<Recorded, StoreError> {
        self.inner.record_attempts(records, health).await
    }
    async fn cancel_notifications(&self, ids: &[Uuid]) -> Result<(), StoreError> {
        self.inner.cancel_notifications(ids).await
    }
    async fn hand_to_pull(&self, ids: &[Uuid]) -> Result<(), StoreError> {
        self.inner.hand_to_pull(ids).await
    }
}

#[async_trait::async_trait]
impl<S: PullStore> PullStore for Sealing<S> {
    async fn take(
        &self,
        endpoint_id: Uuid,
        max: i64,
        lease: std::time::Duration,
        decide: PickDecision<'_>,
    ) -> Result<Vec<Taken>, StoreError> {
        let mut taken = self.inner.take(endpoint_id, max, lease, decide).await?;
        for row in &mut taken {
            row.unreadable = self.open_outgoing_headers(row.id, &mut row.headers);
        }
        Ok(taken)
    }
    async fn end_unpulled(
        &self,
        max_wait: std::time::Duration,
        limit: i64,
        decide: LeaseDecision<'_>,
    ) -> Result<Vec<Uuid>, StoreError> {
        self.inner.end_unpulled(max_wait, limit, decide).await
    }
    async fn next_pull_due(&self, endpoint_id: Uuid) -> Result<Option<DateTime<Utc>>, StoreError> {
        self.inner.next_pull_due(endpoint_id).await
    }
    async fn end_leases(
        &self,
        which: Leases<'_>,
        decide: LeaseDecision<'_>,
    ) -> Result<LeasesEnded, StoreError> {
        self.inner.end_leases(which, decide).await
    }
    async fn extend_lease(
        &self,
        receipt: &Receipt,
        until: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Option<DateTime<Utc>>, StoreError> {
        self.inner.extend_lease(receipt, until, to).await
    }
    async fn lease_of(&self, id: Uuid) -> Result<Option<Leased>, StoreError> {
        self.inner.lease_of(id).await
    }
    async fn follow_delivery(
        &self,
        endpoint_id: Uuid,
        delivery: Delivery,
    ) -> Result<Vec<(Uuid, DateTime<Utc>)>, StoreError> {
        self.inner.follow_delivery(endpoint_id, delivery).await
    }
    async fn adopt_strays(&self, limit: i64) -> Result<Vec<(Uuid, DateTime<Utc>)>, StoreError> {
        self.inner.adopt_strays(limit).await
    }
    async fn cancel_orphans(&self, limit: i64) -> Result<Vec<Uuid>, StoreError> {
        self.inner.cancel_orphans(limit).await
    }
    async fn set_consumer_token(
        &self,
        endpoint_id: Uuid,
        digest: &[u8; 32],
    ) -> Result<bool, StoreError> {
        self.inner.set_consumer_token(endpoint_id, digest).await
    }
    async fn consumer_tokens(
        &self,
        since: Option<DateTime<Utc>>,
    ) -> Result<ConsumerTokenRows, StoreError> {
        self.inner.consumer_tokens(since).await
    }
    async fn revoke_consumer_token(&self, endpoint_id: Uuid) -> Result<(), StoreError> {
        self.inner.revoke_consumer_token(endpoint_id).await
    }
    async fn signal_pull(&self, endpoints: &[Uuid]) -> Result<(), StoreError> {
        self.inner.signal_pull(endpoints).await
    }
    async fn listen_pull(
        &self,
        woken: &(dyn Fn(Option<Uuid>) + Send + Sync),
        shutdown: &CancellationToken,
    ) {
        self.inner.listen_pull(woken, shutdown).await
    }
}
