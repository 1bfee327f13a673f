//! Housekeeping through the wrapper: only the operator endpoint carries
//! sealed values (its secret, and `operator.url`, which chat webhooks put a
//! token in); the rest goes straight through.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::values::{open_secret, open_url, seal_secret};
use super::Sealing;
use crate::domain::index_owner::{Beat, IndexSeen};
use crate::domain::operator_event::{OperatorEvent, OPERATOR_ENDPOINT_ID};
use crate::domain::sealed::context;
use crate::store::health::FailingEndpoint;
use crate::store::housekeeping::{DueBacklog, KeyCursor, PendingCursor};
use crate::store::seams::{HousekeepingStore, OperatorTarget, PendingRows};
use crate::store::StoreError;

#[async_trait::async_trait]
impl<S: PendingRows> PendingRows for Sealing<S> {
    async fn pending_page(
        &self,
        after: Option<PendingCursor>,
        limit: i64,
    ) -> Result<Vec<(Uuid, DateTime<Utc>)>, StoreError> {
        self.inner.pending_page(after, limit).await
    }
}

#[async_trait::async_trait]
impl<S: HousekeepingStore> HousekeepingStore for Sealing<S> {
    async fn needing_index(
        &self,
        limit: i64,
    ) -> Result<Vec<(Uuid, Option<DateTime<Utc>>)>, StoreError> {
        self.inner.needing_index(limit).await
    }
    async fn release_stranded(
        &self,
        after: Option<Uuid>,
        limit: i64,
    ) -> Result<(u64, Option<Uuid>), StoreError> {
        self.inner.release_stranded(after, limit).await
    }
    async fn clear_needs_index(&self, ids: &[Uuid]) -> Result<(), StoreError> {
        self.inner.clear_needs_index(ids).await
    }
    async fn pending_due_before(
        &self,
        after: Option<PendingCursor>,
        due_before: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<(Uuid, DateTime<Utc>)>, StoreError> {
        self.inner
            .pending_due_before(after, due_before, limit)
            .await
    }
    async fn still_pending(&self, ids: &[Uuid]) -> Result<Vec<(Uuid, DateTime<Utc>)>, StoreError> {
        self.inner.still_pending(ids).await
    }
    async fn pending_created_after(
        &self,
        after: Uuid,
        limit: i64,
    ) -> Result<Vec<(Uuid, DateTime<Utc>)>, StoreError> {
        self.inner.pending_created_after(after, limit).await
    }
    async fn purge_completed(
        &self,
        before: DateTime<Utc>,
        after: Option<Uuid>,
        limit: i64,
    ) -> Result<(u64, Option<Uuid>), StoreError> {
        self.inner.purge_completed(before, after, limit).await
    }
    async fn purge_events(
        &self,
        before: DateTime<Utc>,
        after: Option<Uuid>,
        limit: i64,
    ) -> Result<(u64, Option<Uuid>), StoreError> {
        self.inner.purge_events(before, after, limit).await
    }
    async fn purge_order_keys(
        &self,
        after: Option<KeyCursor>,
        limit: i64,
        before: DateTime<Utc>,
    ) -> Result<(u64, Option<KeyCursor>), StoreError> {
        self.inner.purge_order_keys(after, limit, before).await
    }
    async fn maintain_partitions(
        &self,
        today: chrono::NaiveDate,
        before: Option<DateTime<Utc>>,
    ) -> Result<crate::store::partitions::PartitionUpkeep, StoreError> {
        self.inner.maintain_partitions(today, before).await
    }
    async fn clock_skew(&self) -> Result<Option<chrono::Duration>, StoreError> {
        self.inner.clock_skew().await
    }
    async fn beat_index(&self, beat: &Beat) -> Result<Vec<IndexSeen>, StoreError> {
        self.inner.beat_index(beat).await
    }
    async fn end_index_beats(&self, process: Uuid, now: DateTime<Utc>) -> Result<(), StoreError> {
        self.inner.end_index_beats(process, now).await
    }
    /// The target goes in sealed; what is stored is opened before the
    /// target compares it, since a value sealed again never reads the same.
    async fn sync_operator_endpoint(
        &self,
        target: Option<OperatorTarget<'_>>,
    ) -> Result<(), StoreError> {
        let Some(target) = target else {
            return self.inner.sync_operator_endpoint(None).await;
        };
        let keys = &*self.keys;
        let id = OPERATOR_ENDPOINT_ID;
        let secret = seal_secret(keys, id, &target.secret);
        let url = keys
            .seal(&target.url, &context::endpoint_url(id))
            .into_owned();
        let unchanged = target.unchanged;
        let sealed = OperatorTarget {
            url: url.into(),
            secret: secret.into(),
            unchanged: Box::new(move |stored_url: &str, stored_secret: &str| {
                // In clear, or under a key that no longer seals: written
                // again. A secret that does not open (a retired key) is
                // replaced by the configured one, which is the truth anyway.
                if keys.needs_reseal(stored_url) {
                    return false;
                }
                let (mut url, mut secret) = (stored_url.to_string(), stored_secret.to_string());
                open_url(keys, id, &mut url).is_ok()
                    && open_secret(keys, id, &mut secret).is_ok()
                    && unchanged(&url, &secret)
            }),
        };
        self.inner.sync_operator_endpoint(Some(sealed)).await
    }
    async fn due_backlog(
        &self,
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<DueBacklog, StoreError> {
        self.inner.due_backlog(now, limit).await
    }
    async fn failing_endpoints(
        &self,
        failing_before: DateTime<Utc>,
    ) -> Result<Vec<FailingEndpoint>, StoreError> {
        self.inner.failing_endpoints(failing_before).await
    }
    async fn disable_endpoints(
        &self,
        endpoints: &[FailingEndpoint],
        reason: &str,
        events: &[OperatorEvent],
    ) -> Result<Vec<Uuid>, StoreError> {
        self.inner
            .disable_endpoints(endpoints, reason, events)
            .await
    }
}
