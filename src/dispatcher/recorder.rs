//! Records finished attempts in batches: one PostgreSQL statement for every
//! outcome waiting, then one Redis round trip that ends their leases and
//! schedules their retries. Redis is touched only after PostgreSQL commits;
//! if PostgreSQL is down the batch is retried until it is back (the leases
//! may expire meanwhile; PostgreSQL then fences the duplicate).

use std::collections::HashSet;
use std::time::Duration;

use std::sync::Arc;

use tokio::sync::{mpsc, Notify};
use uuid::Uuid;

use crate::domain::health;
use crate::domain::outcome::Outcome;
use crate::due::SharedIndex;
use crate::store::delivery::AttemptRecord;
use crate::store::seams::{DeliveryStore, SharedDelivery};

/// Most outcomes written in one statement.
pub const MAX_BATCH: usize = 1000;

/// How often lease completions Redis refused are tried again while no new
/// outcome comes to carry them.
const OWED_RETRY: Duration = Duration::from_secs(1);
/// Most ids owed before the oldest are left to their leases' expiry.
const MAX_OWED: usize = 100_000;

/// Records outcomes until the channel closes. `wake` is poked when a retry
/// was scheduled, so a dispatcher sleeping towards a later time re-plans.
pub async fn run(
    store: SharedDelivery,
    due: SharedIndex,
    wake: Arc<Notify>,
    mut outcomes: mpsc::Receiver<AttemptRecord>,
) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    let mut owed = Owed::default();
    loop {
        let first = if owed.is_empty() {
            outcomes.recv().await
        } else {
            match tokio::time::timeout(OWED_RETRY, outcomes.recv()).await {
                Ok(first) => first,
                Err(_) => {
                    if owed.settle(&due).await {
                        wake.notify_one();
                    }
                    continue;
                }
            }
        };
        let Some(first) = first else {
            // Shutting down: one last try; what still fails waits for its lease.
            owed.settle(&due).await;
            return;
        };
        batch.clear();
        batch.push(first);
        while batch.len() < MAX_BATCH {
            match outcomes.try_recv() {
                Ok(record) => batch.push(record),
                Err(_) => break,
            }
        }
        record(&*store, &batch, &mut owed).await;
        if owed.settle(&due).await {
            wake.notify_one();
        }
    }
}

/// Lease completions not yet done in Redis: ids whose leases end, and the
/// next due times of those with a retry. Redis down, full (OOM), read-only
/// or misconfigured refuses them; they are tried again with the next batch
/// or within `OWED_RETRY`, so a retry is late by seconds after Redis takes
/// writes again, not by a whole lease.
#[derive(Default)]
struct Owed {
    done: Vec<Uuid>,
    next: Vec<(Uuid, chrono::DateTime<chrono::Utc>)>,
}

impl Owed {
    fn is_empty(&self) -> bool {
        self.done.is_empty()
    }

    /// Tries to complete everything owed; returns whether a retry was
    /// scheduled.
    async fn settle(&mut self, due: &SharedIndex) -> bool {
        if self.is_empty() {
            return false;
        }
        match due.complete(&self.done, &self.next).await {
            Ok(()) => {
                let scheduled = !self.next.is_empty();
                self.done.clear();
                self.next.clear();
                scheduled
            }
            Err(error) => {
                tracing::warn!(%error, owed = self.done.len(), "cannot complete leases in Redis yet; trying again");
                if self.done.len() > MAX_OWED {
                    // Not lost: the leases expire, the ids return to `due`,
                    // and the dispatcher reschedules them from their rows.
                    self.done.drain(..self.done.len() - MAX_OWED);
                    let kept: HashSet<Uuid> = self.done.iter().copied().collect();
                    self.next.retain(|(id, _)| kept.contains(id));
                }
                false
            }
        }
    }
}

/// Records one batch in PostgreSQL (retrying until it commits), with what
/// it says about its endpoints' health, and adds its lease completions to
/// `owed`.
async fn record(store: &dyn DeliveryStore, batch: &[AttemptRecord], owed: &mut Owed) {
    let health = health::observe(
        batch
            .iter()
            .map(|r| (r.endpoint_id, r.outcome == Outcome::Succeeded, r.started_at)),
    );
    let mut backoff = Duration::from_millis(100);
    let moved: HashSet<Uuid> = loop {
        match store.record_attempts(batch, &health).await {
            Ok(moved) => break moved.into_iter().collect(),
            Err(error) => {
                tracing::warn!(%error, count = batch.len(), "cannot record attempts yet; retrying");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
        }
    };
    owed.done.extend(batch.iter().map(|r| r.notification_id));
    owed.next.extend(
        batch
            .iter()
            .filter(|r| moved.contains(&r.notification_id))
            .filter_map(|r| match r.outcome {
                Outcome::Retry { at } => Some((r.notification_id, at)),
                _ => None,
            }),
    );
}
