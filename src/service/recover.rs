//! Recover after an outage (docs/design.md §16): `POST /v1/endpoints/{id}/recover`
//! stores an operation and answers at once; a runner in every process
//! takes running operations under a lease (one process works one at a
//! time, and one a crashed process held is taken over when its lease runs
//! out, or at once after a clean shutdown) and works them page by page.
//! Each page restarts its notifications in the store by the retry rule,
//! advancing the operation's cursor and counts in the same transaction;
//! then they are indexed due now (push) or signalled to consumers (pull).
//! Nothing here paces them: due now, in due order, the dispatcher's
//! per-endpoint cap (and rate limit) spreads them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::bulk::Asked;
use super::{Service, ServiceError};
use crate::domain::operation::{lease_until, OperationStatus, Window, PAGE};
use crate::domain::problem::Problem;
use crate::store::endpoints::EndpointRef;
use crate::store::operations::{Operation, OperationPage};
use crate::store::seams::SharedOperations;
use crate::store::StoreError;
use crate::telemetry::failures::{warn_once_per_run, FailureRun};

/// How often a runner with nothing to do looks for operations another
/// process started, or whose runner stopped.
const LOOK_EVERY: Duration = Duration::from_secs(1);
/// How often finished operations past retention are deleted.
const PURGE_EVERY: Duration = Duration::from_secs(3600);
/// Operations a purge deletes per statement.
const PURGE_BATCH: i64 = 1000;

/// Starts recovers, reads operations, and runs them. Cheap to clone.
#[derive(Clone)]
pub struct Recovery(Arc<Inner>);

struct Inner {
    store: SharedOperations,
    service: Service,
    /// A recover started in this process: look now, not at the next tick.
    wake: Notify,
}

impl Recovery {
    /// The time now by the one clock (`crate::clock`): the store's, which
    /// decides an operation's lease with the time given here.
    pub(super) fn now(&self) -> chrono::DateTime<Utc> {
        self.0.store.clock().now()
    }

    pub(super) fn service(&self) -> &Service {
        &self.0.service
    }

    pub(super) fn store(&self) -> &SharedOperations {
        &self.0.store
    }

    /// An operation started in this process: look now, not at the next tick.
    pub(super) fn wake(&self) {
        self.0.wake.notify_one();
    }

    pub fn new(store: SharedOperations, service: Service) -> Self {
        Self(Arc::new(Inner {
            store,
            service,
            wake: Notify::new(),
        }))
    }

    /// Starts a recover of endpoint `endpoint` (id or uid) over the window
    /// `since`..`until` asks for, unless one already runs for it; or,
    /// `dry_run`, counts what it would restart.
    pub async fn start(
        &self,
        endpoint: &str,
        since: Option<&str>,
        until: Option<&str>,
        dry_run: bool,
    ) -> Result<Asked, ServiceError> {
        let now = self.now();
        let window = Window::asked(since, until, now)?;
        let found = self
            .0
            .service
            .store
            .find_endpoint(&EndpointRef::parse(endpoint))
            .await?
            .ok_or_else(|| Problem::not_found("endpoint"))?;
        self.ask(Operation::recover(found.id, window, now), dry_run)
            .await
    }

    pub async fn get(&self, id: Uuid) -> Result<Option<Operation>, StoreError> {
        self.0.store.get_operation(id).await
    }

    /// Runs operations until `shutdown`: takes one whose lease is free,
    /// works it to its end (or until its lease is lost, or shutdown, when
    /// the lease is given back), then looks again. `sole`: no other
    /// process can use the store (the embedded file is locked), so a lease
    /// found is one a killed process left, taken over at once rather than
    /// when it runs out.
    pub async fn run(self, shutdown: CancellationToken, sole: bool) {
        let holder = crate::domain::id::new_id();
        let mut purged: Option<Instant> = None;
        let mut looking = FailureRun::default();
        while !shutdown.is_cancelled() {
            let now = self.now();
            // Any lease another runner took ends within `LEASE` of now.
            let free_at = if sole { lease_until(now) } else { now };
            let leased = self
                .0
                .store
                .lease_operation(holder, free_at, lease_until(now))
                .await;
            if leased.is_ok() && looking.succeeded() {
                tracing::info!("looks for operations to run again");
            }
            match leased {
                Ok(Some(operation)) => {
                    self.work(operation, holder, &shutdown).await;
                    continue;
                }
                Ok(None) => {}
                Err(error) => {
                    warn_once_per_run!(looking, %error, "cannot look for operations to run; looking again")
                }
            }
            if purged.is_none_or(|at| at.elapsed() >= PURGE_EVERY) {
                purged = Some(Instant::now());
                self.purge().await;
            }
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = self.0.wake.notified() => {}
                _ = tokio::time::sleep(LOOK_EVERY) => {}
            }
        }
    }

    async fn work(&self, operation: Operation, holder: Uuid, shutdown: &CancellationToken) {
        let (id, endpoint_id) = (operation.id, operation.endpoint_id);
        let mut backoff = Duration::from_millis(100);
        loop {
            if shutdown.is_cancelled() {
                if let Err(error) = self.0.store.release_operation(id, holder).await {
                    tracing::warn!(operation_id = %id, %error, "cannot give the operation back; it is taken over when its lease runs out");
                }
                return;
            }
            let now = self.now();
            let page = self
                .0
                .store
                .operation_page(id, holder, PAGE, now, lease_until(now))
                .await;
            match page {
                // Another process holds it now, or it ended.
                Ok(None) => return,
                Ok(Some(page)) => {
                    backoff = Duration::from_millis(100);
                    self.release(endpoint_id, &page).await;
                    if let Some(after) = page
                        .operation
                        .filter(|o| o.status != OperationStatus::Running)
                    {
                        tracing::info!(operation_id = %id, %endpoint_id, kind = after.kind.as_str(),
                            status = after.status.as_str(), error = after.error.as_deref(),
                            matched = after.matched, started = after.started, "operation ended");
                        return;
                    }
                }
                // The database is away: the operation waits for it (its
                // lease may run out meanwhile; then whoever holds it goes on).
                Err(error @ StoreError::Unavailable(_)) => {
                    tracing::warn!(operation_id = %id, %error, "recover waits for the database");
                    tokio::select! {
                        _ = shutdown.cancelled() => {}
                        _ = tokio::time::sleep(backoff) => {}
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                }
                Err(error) => {
                    tracing::error!(operation_id = %id, %error, "recover failed");
                    let said = "the store refused a page; see hookd's log";
                    if let Err(error) = self
                        .0
                        .store
                        .fail_operation(id, holder, said, self.now())
                        .await
                    {
                        tracing::warn!(operation_id = %id, %error, "cannot mark the operation failed");
                    }
                    return;
                }
            }
        }
    }

    /// Makes what a page restarted reach its receivers: push ones indexed
    /// due (the index's own failure is owed and healed by housekeeping),
    /// pull ones signalled to the endpoint's consumers; takes what it
    /// cancelled out of the due index.
    async fn release(&self, endpoint_id: Uuid, page: &OperationPage) {
        if !page.cancelled.is_empty() {
            metrics::counter!("hookd_bulk_cancelled_total").increment(page.cancelled.len() as u64);
            self.0.service.unindex(&page.cancelled).await;
        }
        let Some(at) = page.at else { return };
        let due: Vec<_> = page
            .restarted
            .iter()
            .filter(|(id, pull)| !pull && !page.waiting.contains(id))
            .map(|(id, _)| (*id, at))
            .collect();
        metrics::counter!("hookd_recover_restarted_total").increment(page.restarted.len() as u64);
        self.0.service.index_due(&due).await;
        if due.len() < page.restarted.len() {
            self.0.service.signal_pull(&[endpoint_id]).await;
        }
    }

    /// Deletes finished operations as old as retention deletes
    /// notifications (`domain::retention::operation_expired`); none when
    /// retention keeps everything.
    async fn purge(&self) {
        let days = self.0.service.settings.retention.days;
        if days == 0 {
            return;
        }
        let before = self.now() - chrono::Duration::days(i64::from(days));
        loop {
            match self.0.store.purge_operations(before, PURGE_BATCH).await {
                Ok(deleted) if deleted as i64 == PURGE_BATCH => continue,
                Ok(_) => return,
                Err(error) => {
                    tracing::warn!(%error, "cannot delete old operations; trying again later");
                    return;
                }
            }
        }
    }
}
