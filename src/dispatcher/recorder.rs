//! Records finished attempts in batches: one store write for every outcome
//! waiting (a PostgreSQL statement, or a SQLite transaction), then one
//! round trip to the due index that ends their leases and schedules their
//! retries. The index is touched only after the store commits; if the store
//! is down or stalled the batch is retried until it is back,
//! and meanwhile the leases of every outcome not yet written (`Unrecorded`:
//! in the batch, queued behind it, or waiting to be handed over) are
//! extended, so that none is claimed and sent again because its outcome
//! could not be written. Delivery tasks keep their dispatcher permit until
//! the recorder's channel takes their outcome: once the recorder holds a
//! batch beside the one it writes and the channel is full, a recorder that
//! cannot write stops the dispatcher from sending more.
//!
//! A throttled endpoint's successes may be held until the end of their
//! group of slots (`domain::record_hold`, at most a second), so that the
//! group is written in one transaction rather than one per send; anything
//! else that comes writes them at once with it, and a closing channel
//! writes what is held before the recorder ends. A held outcome stays
//! `Unrecorded`.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::{mpsc, Notify};
use tokio::time::Instant;
use uuid::Uuid;

use crate::domain::health;
use crate::domain::outcome::Outcome;
use crate::due::SharedIndex;
use crate::store::recording::{AttemptRecord, Recorded};
use crate::store::seams::{DeliveryStore, SharedDelivery};
use crate::telemetry::failures::{warn_once_per_run, FailureRun};

/// Most outcomes written in one statement.
pub const MAX_BATCH: usize = 1000;

/// How often lease completions Redis refused are tried again while no new
/// outcome comes to carry them.
const OWED_RETRY: Duration = Duration::from_secs(1);
/// Most ids owed before the oldest are left to their leases' expiry.
const MAX_OWED: usize = 100_000;
/// How often the leases of outcomes not yet written are extended while
/// PostgreSQL keeps them waiting. A lease is at least `LEASE_MARGIN` (5 s)
/// longer than an attempt, so an outcome arrives with seconds of it left;
/// a write that takes less than this (nearly all) extends nothing.
const EXTEND_EVERY: Duration = Duration::from_secs(1);

/// The notifications whose attempt has an outcome this process has not
/// written yet. A delivery task adds its notification before it hands the
/// outcome over; the recorder removes it once the outcome is committed.
#[derive(Default)]
pub struct Unrecorded(Mutex<HashSet<Uuid>>);

impl Unrecorded {
    pub fn add(&self, id: Uuid) {
        self.0.lock().expect("unrecorded lock").insert(id);
    }

    /// Those of `ids` in the set, under one look.
    pub fn among(&self, ids: &[Uuid]) -> Vec<Uuid> {
        let set = self.0.lock().expect("unrecorded lock");
        ids.iter().filter(|id| set.contains(id)).copied().collect()
    }

    fn remove(&self, ids: impl Iterator<Item = Uuid>) {
        let mut set = self.0.lock().expect("unrecorded lock");
        for id in ids {
            set.remove(&id);
        }
    }

    fn ids(&self) -> Vec<Uuid> {
        self.0
            .lock()
            .expect("unrecorded lock")
            .iter()
            .copied()
            .collect()
    }
}

/// An outcome handed to the recorder, and when it must be written by
/// (`domain::record_hold`); `None`: at once.
pub(super) struct Finished {
    pub record: AttemptRecord,
    pub write_by: Option<Instant>,
}

/// Outcomes taken from the channel and not yet written, in the order they
/// came. Those that may wait (a throttled endpoint's successes) are held
/// until the earliest of their times, or until anything else comes: then
/// everything is written together, so each endpoint's outcomes are still
/// recorded (and counted by the breaker) in the order they came.
#[derive(Default)]
struct Pending {
    records: Vec<AttemptRecord>,
    /// One of them is to be written at once.
    at_once: bool,
    /// The earliest time one of them is to be written by.
    earliest: Option<Instant>,
}

impl Pending {
    fn push(&mut self, finished: Finished) {
        match finished.write_by {
            None => self.at_once = true,
            Some(by) => self.earliest = Some(self.earliest.map_or(by, |e| e.min(by))),
        }
        self.records.push(finished.record);
    }

    fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether to write now.
    fn ready(&self) -> bool {
        self.at_once
            || self.records.len() >= MAX_BATCH
            || self.earliest.is_some_and(|e| e <= Instant::now())
    }

    /// The oldest `MAX_BATCH` (all, nearly always). What stays behind
    /// came after something to be written at once, or past a full batch:
    /// it is written next, at once.
    fn take(&mut self) -> Vec<AttemptRecord> {
        let rest = self.records.split_off(self.records.len().min(MAX_BATCH));
        self.at_once = !rest.is_empty();
        self.earliest = None;
        std::mem::replace(&mut self.records, rest)
    }
}

/// Records outcomes until the channel closes; then writes what is held.
/// `wake` is poked when a retry was scheduled, so a dispatcher sleeping
/// towards a later time re-plans. `lease`: how long a claim is leased for
/// (`dispatcher.lease_ms`).
pub(super) async fn run(
    store: SharedDelivery,
    due: SharedIndex,
    wake: Arc<Notify>,
    lease: Duration,
    unrecorded: Arc<Unrecorded>,
    mut outcomes: mpsc::Receiver<Finished>,
    breaker: Arc<super::breaker::Breaker>,
) {
    let mut pending = Pending::default();
    let mut owed = Owed::default();
    let mut closed = false;
    loop {
        // Without anything to write now, wait for an outcome (or for the
        // time of one held).
        if !closed && !pending.ready() {
            closed = next_outcome(&mut outcomes, &mut owed, &due, &wake, &mut pending).await;
        }
        // Outcomes that arrived meanwhile go with it.
        while !closed && pending.len() < MAX_BATCH {
            match outcomes.try_recv() {
                Ok(finished) => pending.push(finished),
                Err(mpsc::error::TryRecvError::Empty) => break,
                Err(mpsc::error::TryRecvError::Disconnected) => closed = true,
            }
        }
        if !closed && !pending.ready() {
            continue;
        }
        let batch = pending.take();
        if batch.is_empty() {
            // Shutting down with nothing held: one last try; what still
            // fails waits for its lease.
            owed.settle(&due).await;
            return;
        }
        let room = MAX_BATCH.saturating_sub(pending.len());
        let writing = (&batch[..], room, &mut outcomes);
        let (released, moved) = record(
            &*store,
            &due,
            lease,
            &unrecorded,
            writing,
            &mut pending,
            &mut owed,
        )
        .await;
        if owed.settle(&due).await || released {
            wake.notify_one();
        }
        // After the leases: a circuit that opens holds what comes next.
        breaker.after_batch(&batch, &moved).await;
    }
}

/// Waits for the next outcome and adds it to `pending`, or until the time
/// of one held there, settling what is owed meanwhile; says whether the
/// channel is closed (and empty).
async fn next_outcome(
    outcomes: &mut mpsc::Receiver<Finished>,
    owed: &mut Owed,
    due: &SharedIndex,
    wake: &Notify,
    pending: &mut Pending,
) -> bool {
    let held = pending.earliest;
    loop {
        let retry = (!owed.is_empty()).then(|| Instant::now() + OWED_RETRY);
        let until = match (retry, held) {
            (Some(r), Some(h)) => Some(r.min(h)),
            (r, h) => r.or(h),
        };
        let received = match until {
            None => outcomes.recv().await,
            Some(until) => match tokio::time::timeout_at(until, outcomes.recv()).await {
                Ok(received) => received,
                Err(_) if held.is_some_and(|h| h <= Instant::now()) => return false,
                Err(_) => {
                    if owed.settle(due).await {
                        wake.notify_one();
                    }
                    continue;
                }
            },
        };
        return match received {
            Some(finished) => {
                pending.push(finished);
                false
            }
            None => true,
        };
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
    /// The last try failed: a run of failures is warned of once.
    failing: FailureRun,
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
                if self.failing.succeeded() {
                    tracing::info!("completes leases in Redis again");
                }
                let scheduled = !self.next.is_empty();
                self.done.clear();
                self.next.clear();
                scheduled
            }
            Err(error) => {
                warn_once_per_run!(self.failing, %error, owed = self.done.len(), "cannot complete leases in Redis yet; trying again");
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
/// `owed`. While the write waits, outcomes that arrive are added to
/// `pending` (up to `room`), and every `EXTEND_EVERY` the leases of all
/// that are `unrecorded` (held ones included) are extended by `lease`.
/// Returns whether it indexed released successors, and the ids whose
/// write moved their notification.
async fn record(
    store: &dyn DeliveryStore,
    due: &SharedIndex,
    lease: Duration,
    unrecorded: &Unrecorded,
    (batch, room, outcomes): (&[AttemptRecord], usize, &mut mpsc::Receiver<Finished>),
    pending: &mut Pending,
    owed: &mut Owed,
) -> (bool, HashSet<Uuid>) {
    // Only attempts to the endpoint's own receiver tell of its health.
    let health = health::observe(
        batch
            .iter()
            .filter(|r| r.tells_of_endpoint)
            .map(|r| (r.endpoint_id, r.outcome == Outcome::Succeeded, r.started_at)),
    );
    let mut taken = 0;
    let mut closed = false;
    let mut extend_at = tokio::time::Instant::now() + EXTEND_EVERY;
    // Said once per recording that waits, not every second.
    let (mut extended, mut extending) = (false, FailureRun::default());
    let writing = write(store, batch, &health);
    tokio::pin!(writing);
    let recorded = loop {
        tokio::select! {
            recorded = &mut writing => break recorded,
            next = outcomes.recv(), if !closed && taken < room => match next {
                Some(finished) => {
                    taken += 1;
                    pending.push(finished);
                }
                None => closed = true,
            },
            _ = tokio::time::sleep_until(extend_at) => {
                extend_at = tokio::time::Instant::now() + EXTEND_EVERY;
                let ids = unrecorded.ids();
                let until = crate::domain::lease::lease_end(store.clock().now(), lease);
                match due.extend(&ids, until).await {
                    Ok(()) => {
                        metrics::counter!("hookd_leases_extended_total").increment(ids.len() as u64);
                        let first = !std::mem::replace(&mut extended, true);
                        if extending.succeeded() || first {
                            tracing::info!(count = ids.len(), "outcomes wait on PostgreSQL; extending their leases every second until it answers");
                        } else {
                            tracing::debug!(count = ids.len(), "outcomes wait on PostgreSQL; extended their leases");
                        }
                    }
                    Err(error) => {
                        warn_once_per_run!(extending, %error, count = ids.len(), "cannot extend the leases of outcomes waiting on PostgreSQL");
                    }
                }
            }
        }
    };
    unrecorded.remove(batch.iter().map(|r| r.notification_id));
    let released = index_released(due, &recorded.released).await;
    let moved: HashSet<Uuid> = recorded.moved.into_iter().collect();
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
    (released, moved)
}

/// Indexes at once the next notification of each key whose notification
/// a batch ended (`store::ordering`), which its recording released and
/// took off the housekeeper's list: a key's notifications then follow
/// each other within a claim's wait, not the housekeeper's second. What
/// fails here, the overdue sweep indexes. Whether it indexed any: this
/// process's dispatcher is woken for them.
async fn index_released(due: &SharedIndex, released: &[(Uuid, DateTime<Utc>)]) -> bool {
    if released.is_empty() {
        return false;
    }
    match due.add(released).await {
        Ok(()) => true,
        Err(error) => {
            tracing::warn!(%error, count = released.len(), "cannot index the notifications their keys' ends released; the overdue sweep will");
            false
        }
    }
}

/// Writes one batch, retrying until the store commits it; returns what
/// it did (`Recorded`).
async fn write(
    store: &dyn DeliveryStore,
    batch: &[AttemptRecord],
    health: &[(Uuid, health::Health)],
) -> Recorded {
    let mut backoff = Duration::from_millis(100);
    let (mut failing, mut tries) = (FailureRun::default(), 0_u32);
    loop {
        match store.record_attempts(batch, health).await {
            Ok(recorded) => {
                if failing.succeeded() {
                    tracing::info!(count = batch.len(), "records attempts again");
                }
                return recorded;
            }
            Err(error) => {
                // When it begins, then about once a minute: a batch the
                // database keeps refusing holds up every outcome after it.
                tries += 1;
                if failing.failed() || tries % 12 == 0 {
                    tracing::warn!(%error, count = batch.len(), tries, "cannot record attempts yet; retrying every 5 s at most");
                } else {
                    tracing::debug!(%error, count = batch.len(), tries, "cannot record attempts yet");
                }
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
        }
    }
}
