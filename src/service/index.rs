//! Keeping the due index in step with what the service commits. Redis is
//! only an index: when it fails, the rows are marked in PostgreSQL and the
//! housekeeper indexes them later; the producer keeps its 201.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::Service;

impl Service {
    /// Adds committed notifications to the due index, and wakes this
    /// process's dispatcher when one is due before its next look.
    pub(crate) async fn index_due(&self, due: &[(Uuid, DateTime<Utc>)]) {
        if due.is_empty() {
            return;
        }
        match self.due.add(due).await {
            Ok(()) => {
                let soon = Utc::now()
                    + chrono::Duration::milliseconds(self.settings.dispatcher.max_idle_ms as i64);
                if due.iter().any(|(_, at)| *at <= soon) {
                    self.wake.notify_one();
                }
            }
            Err(error) => {
                tracing::warn!(%error, count = due.len(), "could not index notifications; marking them for the indexer");
                let ids: Vec<Uuid> = due.iter().map(|(id, _)| *id).collect();
                if let Err(error) = self.store.mark_needs_index(&ids).await {
                    // The overdue sweep still finds them: rows that are due
                    // and in neither Redis set are re-indexed.
                    tracing::warn!(%error, "could not mark notifications for indexing");
                }
            }
        }
    }

    /// Removes notifications from the due index, best effort: the dispatcher
    /// skips ids whose rows are no longer pending anyway.
    pub(crate) async fn unindex(&self, ids: &[Uuid]) {
        if ids.is_empty() {
            return;
        }
        if let Err(error) = self.due.remove(ids).await {
            tracing::debug!(%error, "could not remove notifications from the due index");
        }
    }
}
