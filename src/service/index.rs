//! Keeping the due index in step with what the service commits. Redis is
//! only an index: when it fails, the rows are marked in PostgreSQL and the
//! housekeeper indexes them later; the producer keeps its 201. After a
//! failure the breaker (`breaker`) keeps requests from waiting on the index
//! for a while.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::breaker::Gate;
use super::{Service, ServiceError};
use crate::due::DueError;

impl Service {
    /// Adds committed notifications to the due index, and wakes this
    /// process's dispatcher when one is due before its next look.
    pub(crate) async fn index_due(&self, due: &[(Uuid, DateTime<Utc>)]) {
        if due.is_empty() {
            return;
        }
        let result = if self.index_gate() {
            self.observed(self.due.add(due).await)
        } else {
            Err(None)
        };
        match result {
            Ok(()) => {
                let soon = Utc::now()
                    + chrono::Duration::milliseconds(self.settings.dispatcher.max_idle_ms as i64);
                if due.iter().any(|(_, at)| *at <= soon) {
                    self.wake.notify_one();
                }
            }
            Err(error) => {
                if let Some(error) = error {
                    tracing::warn!(%error, count = due.len(), "could not index notifications; marking them for the indexer");
                }
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
        if ids.is_empty() || !self.index_gate() {
            return;
        }
        if let Err(Some(error)) = self.observed(self.due.remove(ids).await) {
            tracing::debug!(%error, "could not remove notifications from the due index");
        }
    }

    /// Whether `id` is being delivered now (leased). Without an answer from
    /// the index, the caller cannot know: unavailable.
    pub(crate) async fn leased(&self, id: Uuid) -> Result<bool, ServiceError> {
        if !self.index_gate() {
            return Err(ServiceError::IndexUnavailable(None));
        }
        self.observed(self.due.leased(id, Utc::now()).await)
            .map_err(ServiceError::IndexUnavailable)
    }

    /// Whether a request may call the index now. When the breaker's
    /// back-off is over, this starts its probe in the background.
    pub(crate) fn index_gate(&self) -> bool {
        match self.breaker.gate() {
            Gate::Call => true,
            Gate::Skip => false,
            Gate::Probe => {
                let (due, breaker) = (self.due.clone(), self.breaker.clone());
                tokio::spawn(async move {
                    match due.ping().await {
                        Ok(()) => breaker.succeeded(),
                        Err(_) => breaker.failed(),
                    }
                });
                false
            }
        }
    }

    /// Passes an index result through, telling the breaker how it went.
    pub(crate) fn observed<T>(&self, result: Result<T, DueError>) -> Result<T, Option<DueError>> {
        match result {
            Ok(value) => {
                self.breaker.succeeded();
                Ok(value)
            }
            Err(error) => {
                self.breaker.failed();
                Err(Some(error))
            }
        }
    }

    /// Whether requests are doing without the due index (it failed lately).
    pub fn index_breaker_open(&self) -> bool {
        self.breaker.is_open()
    }
}
