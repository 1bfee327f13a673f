//! The circuit breaker through the wrapper: no sealed values, straight
//! through.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::Sealing;
use crate::domain::breaker::Circuit;
use crate::domain::operator_event::OperatorEvent;
use crate::store::breaker::{BreakerStore, PendingOf};
use crate::store::StoreError;

#[async_trait::async_trait]
impl<S: BreakerStore> BreakerStore for Sealing<S> {
    async fn circuits(&self) -> Result<Vec<(Uuid, Circuit)>, StoreError> {
        self.inner.circuits().await
    }
    async fn circuits_of(&self, endpoints: &[Uuid]) -> Result<Vec<(Uuid, Circuit)>, StoreError> {
        self.inner.circuits_of(endpoints).await
    }
    async fn set_circuit(
        &self,
        endpoint: Uuid,
        seen: &Circuit,
        new: &Circuit,
        event: Option<&OperatorEvent>,
    ) -> Result<bool, StoreError> {
        self.inner.set_circuit(endpoint, seen, new, event).await
    }
    async fn pending_of(
        &self,
        endpoint: Uuid,
        which: PendingOf,
        after: Option<(DateTime<Utc>, Uuid)>,
        until: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<(Uuid, DateTime<Utc>)>, StoreError> {
        self.inner
            .pending_of(endpoint, which, after, until, limit)
            .await
    }
    async fn mark_released(&self, ids: &[Uuid]) -> Result<(), StoreError> {
        self.inner.mark_released(ids).await
    }
    async fn due_count(&self, endpoint: Uuid, now: DateTime<Utc>) -> Result<i64, StoreError> {
        self.inner.due_count(endpoint, now).await
    }
    async fn fail_held(
        &self,
        held: &[(Uuid, i32, i32)],
        last_error: &str,
        events: &[OperatorEvent],
    ) -> Result<Vec<Uuid>, StoreError> {
        self.inner.fail_held(held, last_error, events).await
    }
}
