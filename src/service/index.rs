//! Keeping the due index in step with what the service commits. The index
//! (Redis, or in-process) is only an index: when it fails, the rows are
//! marked `needs_index` in the store and the
//! housekeeper indexes them later; the producer keeps its 201. After a
//! failure the breaker (`breaker`) keeps requests from waiting on the index
//! for a while.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::breaker::Gate;
use super::{Service, ServiceError};
use crate::due::DueError;
use crate::store::delivery::DueNotification;
use crate::store::events::EventInserted;
use crate::store::notifications::Inserted;
use crate::store::writes::{Committed, Writes};

impl Service {
    /// Adds committed notifications to the due index, and wakes this
    /// process's dispatcher when one is due before its next look.
    pub(crate) async fn index_due(&self, due: &[(Uuid, DateTime<Utc>)]) {
        self.index(due, false).await
    }

    /// As `index_due`, but an id some dispatcher has claimed meanwhile
    /// stays in flight and is not put back due beside its lease (the index
    /// adds it only if it is neither due nor leased, or moves it earlier):
    /// for a row that was pending when its caller checked it was not
    /// leased, which a claim may have leased since.
    pub(crate) async fn index_due_unless_leased(&self, due: &[(Uuid, DateTime<Utc>)]) {
        self.index(due, true).await
    }

    async fn index(&self, due: &[(Uuid, DateTime<Utc>)], unless_leased: bool) {
        if due.is_empty() {
            return;
        }
        let result = if !self.index_gate() {
            Err(None)
        } else if unless_leased {
            self.observed(self.due.add_marked(due).await).map(|_| ())
        } else {
            self.observed(self.due.add(due).await)
        };
        match result {
            Ok(()) => {
                let soon = self.now()
                    + chrono::Duration::milliseconds(self.settings.dispatcher.max_idle_ms as i64);
                if due.iter().any(|(_, at)| *at <= soon) {
                    self.wake.notify_one();
                }
            }
            Err(error) => self.owe_index(due, error).await,
        }
    }

    /// Whether the notifications of this commit that are due now (single
    /// ones and events' deliveries) go to this process's dispatcher
    /// (`dispatcher::handoff`) rather than through the index and a claim;
    /// if so, the due time up to which they do. Only when all of the
    /// commit's notifications fit in the dispatcher's room: a bulk commit
    /// goes through the index, and its insert reads no endpoint versions.
    pub(crate) fn handing_off(&self, writes: &Writes) -> Option<DateTime<Utc>> {
        if !self.settings.dispatcher.handoff || self.breaker.is_open() {
            return None;
        }
        let deliveries = || writes.events.iter().flat_map(|e| &e.deliveries);
        let rows = writes.notifications.len() + deliveries().count();
        if rows == 0 || rows > self.handoff.room() {
            return None;
        }
        let due_by = self.now()
            + chrono::Duration::milliseconds(self.settings.dispatcher.claim_ahead_ms as i64);
        let singles = writes
            .notifications
            .iter()
            .map(|n| (n.pull, n.next_attempt_at));
        let delivered = deliveries().map(|d| (d.pull, d.next_attempt_at));
        singles
            .chain(delivered)
            .any(|(pull, at)| !pull && at <= due_by)
            .then_some(due_by)
    }

    /// Indexes what a commit created, except what is due by `due_by`: that
    /// goes to this process's dispatcher, leased in the index as a claim
    /// would have leased it.
    pub(crate) async fn index_or_hand_off(
        &self,
        due: Vec<(Uuid, DateTime<Utc>)>,
        committed: &Committed,
        due_by: DateTime<Utc>,
    ) {
        // A row without a version had no endpoint row when it was
        // inserted: a claim finds that out.
        let version = |id| committed.endpoint_versions.get(&id).copied();
        let singles = committed
            .notifications
            .iter()
            .filter_map(|inserted| match inserted {
                Inserted::Created(n)
                    if !n.pull
                        && n.behind.is_none()
                        && n.next_attempt_at.is_some_and(|at| at <= due_by) =>
                {
                    Some(DueNotification::created(n, version(n.id)?))
                }
                _ => None,
            });
        let deliveries = committed.events.iter().flat_map(|inserted| match inserted {
            EventInserted::Created {
                event,
                push,
                headers,
                ..
            } => push
                .iter()
                .filter(|d| d.place.behind.is_none() && d.next_attempt_at <= due_by)
                .filter_map(|d| {
                    Some(DueNotification::delivering(
                        event,
                        headers,
                        d,
                        version(d.id)?,
                    ))
                })
                .collect(),
            _ => Vec::new(),
        });
        let handed: Vec<DueNotification> = singles.chain(deliveries).collect();
        if handed.is_empty() {
            return self.index_due(&due).await;
        }
        let ids: Vec<Uuid> = handed.iter().map(|row| row.id).collect();
        let handed_ids: HashSet<Uuid> = ids.iter().copied().collect();
        let (leased, rest): (Vec<_>, Vec<_>) =
            due.into_iter().partition(|(id, _)| handed_ids.contains(id));
        self.index_due(&rest).await;
        let lease_until =
            self.now() + chrono::Duration::from_std(self.settings.lease()).unwrap_or_default();
        let result = if self.index_gate() {
            self.observed(self.due.add_leased(&ids, lease_until).await)
        } else {
            Err(None)
        };
        match result {
            Ok(()) => {
                if let Err(rows) = self.handoff.push(handed) {
                    // The dispatcher stopped meanwhile: the leases go back
                    // as due now, for whichever dispatcher claims next.
                    let back: Vec<_> = rows.iter().map(|row| (row.id, self.now())).collect();
                    if let Err(error) = self.due.reschedule(&back).await {
                        tracing::warn!(%error, "could not give back notifications a stopped dispatcher did not take; their leases will expire");
                    }
                }
            }
            Err(error) => self.owe_index(&leased, error).await,
        }
    }

    /// Marks rows the index did not get, for the housekeeper to index.
    async fn owe_index(&self, due: &[(Uuid, DateTime<Utc>)], error: Option<DueError>) {
        if let Some(error) = error {
            tracing::warn!(%error, count = due.len(), "could not index notifications; marking them for the indexer");
        }
        let ids: Vec<Uuid> = due.iter().map(|(id, _)| *id).collect();
        if let Err(error) = self.store.mark_needs_index(&ids).await {
            // The overdue sweep still finds them: rows that are due and in
            // neither Redis set are re-indexed.
            tracing::warn!(%error, "could not mark notifications for indexing");
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
        self.observed(self.due.leased(id, self.now()).await)
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

    /// The due index answered a check outside the write path (`/readyz`):
    /// the breaker closes, as its own probe would close it. Only a request
    /// started that probe, so a process no create reached kept reporting
    /// the breaker open (`hookd_index_breaker_open` 1) long after Redis
    /// came back.
    pub fn index_answered(&self) {
        if self.breaker.is_open() {
            self.breaker.succeeded();
        }
    }

    /// Whether requests are doing without the due index (it failed lately).
    pub fn index_breaker_open(&self) -> bool {
        self.breaker.is_open()
    }
}
