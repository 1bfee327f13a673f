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

use crate::domain::outcome::Outcome;
use crate::due::DueIndex;
use crate::store::delivery::AttemptRecord;
use crate::store::Store;

/// Most outcomes written in one statement.
pub const MAX_BATCH: usize = 1000;

/// Records outcomes until the channel closes. `wake` is poked when a retry
/// was scheduled, so a dispatcher sleeping towards a later time re-plans.
pub async fn run(
    store: Store,
    due: DueIndex,
    wake: Arc<Notify>,
    mut outcomes: mpsc::Receiver<AttemptRecord>,
    operator: bool,
) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while let Some(first) = outcomes.recv().await {
        batch.clear();
        batch.push(first);
        while batch.len() < MAX_BATCH {
            match outcomes.try_recv() {
                Ok(record) => batch.push(record),
                Err(_) => break,
            }
        }
        if record(&store, &due, &batch, operator).await {
            wake.notify_one();
        }
    }
}

/// Records one batch; returns whether it scheduled any retry.
async fn record(store: &Store, due: &DueIndex, batch: &[AttemptRecord], operator: bool) -> bool {
    let mut backoff = Duration::from_millis(100);
    let moved: HashSet<Uuid> = loop {
        match store.record_attempts(batch, operator).await {
            Ok(moved) => break moved.into_iter().collect(),
            Err(error) => {
                tracing::warn!(%error, count = batch.len(), "cannot record attempts yet; retrying");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
        }
    };
    let done: Vec<Uuid> = batch.iter().map(|r| r.notification_id).collect();
    let next: Vec<_> = batch
        .iter()
        .filter(|r| moved.contains(&r.notification_id))
        .filter_map(|r| match r.outcome {
            Outcome::Retry { at } => Some((r.notification_id, at)),
            _ => None,
        })
        .collect();
    if let Err(error) = due.complete(&done, &next).await {
        // Not lost: the leases expire, the ids return to `due`, and the
        // dispatcher reschedules them from their rows.
        tracing::warn!(%error, "cannot complete leases in Redis; they will expire and be reconciled");
    }
    !next.is_empty()
}
