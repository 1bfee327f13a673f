//! The per-minute counts carry nothing sealed (an endpoint's URL is
//! stored in clear): straight through.

use chrono::{DateTime, Utc};

use super::Sealing;
use crate::store::seams::StatsStore;
use crate::store::stats::{FailingCount, MinuteRow, StatsScope};
use crate::store::StoreError;

#[async_trait::async_trait]
impl<S: StatsStore> StatsStore for Sealing<S> {
    async fn minute_counts(
        &self,
        scope: &StatsScope,
        since: DateTime<Utc>,
    ) -> Result<Vec<MinuteRow>, StoreError> {
        self.inner.minute_counts(scope, since).await
    }
    async fn pending_samples(
        &self,
        since: DateTime<Utc>,
    ) -> Result<Vec<(DateTime<Utc>, i64)>, StoreError> {
        self.inner.pending_samples(since).await
    }
    async fn most_failing(
        &self,
        scope: &StatsScope,
        since: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<FailingCount>, StoreError> {
        self.inner.most_failing(scope, since, limit).await
    }
    async fn sample_pending(&self, minute: DateTime<Utc>) -> Result<(), StoreError> {
        self.inner.sample_pending(minute).await
    }
    async fn purge_minutes(&self, before: DateTime<Utc>, limit: i64) -> Result<u64, StoreError> {
        self.inner.purge_minutes(before, limit).await
    }
}
