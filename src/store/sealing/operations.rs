//! Operations carry nothing sealed: straight through.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::Sealing;
use crate::store::operations::{EndpointRow, FailedRow, Operation, OperationPage, Started};
use crate::store::seams::OperationStore;
use crate::store::StoreError;

#[async_trait::async_trait]
impl<S: OperationStore> OperationStore for Sealing<S> {
    async fn start_operation(&self, operation: &Operation) -> Result<Started, StoreError> {
        self.inner.start_operation(operation).await
    }
    async fn get_operation(&self, id: Uuid) -> Result<Option<Operation>, StoreError> {
        self.inner.get_operation(id).await
    }
    async fn lease_operation(
        &self,
        holder: Uuid,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<Option<Operation>, StoreError> {
        self.inner.lease_operation(holder, now, until).await
    }
    async fn operation_page(
        &self,
        id: Uuid,
        holder: Uuid,
        limit: i64,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<Option<OperationPage>, StoreError> {
        self.inner
            .operation_page(id, holder, limit, now, until)
            .await
    }
    async fn failed_page(
        &self,
        endpoint: Uuid,
        after: (DateTime<Utc>, Uuid),
        until: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<FailedRow>, StoreError> {
        self.inner.failed_page(endpoint, after, until, limit).await
    }
    async fn endpoint_page(
        &self,
        endpoint: Uuid,
        before: Uuid,
        limit: i64,
    ) -> Result<Vec<EndpointRow>, StoreError> {
        self.inner.endpoint_page(endpoint, before, limit).await
    }
    async fn fail_operation(
        &self,
        id: Uuid,
        holder: Uuid,
        error: &str,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        self.inner.fail_operation(id, holder, error, now).await
    }
    async fn release_operation(&self, id: Uuid, holder: Uuid) -> Result<(), StoreError> {
        self.inner.release_operation(id, holder).await
    }
    async fn purge_operations(&self, before: DateTime<Utc>, limit: i64) -> Result<u64, StoreError> {
        self.inner.purge_operations(before, limit).await
    }
}
