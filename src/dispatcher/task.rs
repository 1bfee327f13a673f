//! One delivery's life in a task of its own: held until its due time (a
//! claim may come early), attempted unless it was cancelled meanwhile, its
//! outcome handed to the recorder, and its slot given back.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::{mpsc, OwnedSemaphorePermit};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tracing::Instrument;
use uuid::Uuid;

use super::delivery::{self, Plan};
use super::recorder::Finished;
use super::Shared;
use crate::domain::outcome::Outcome;
use crate::domain::record_hold::{write_by_us, Sent};
use crate::store::delivery::DueNotification;
use crate::store::recording::AttemptRecord;

impl Shared {
    /// Those of `ids` this process is delivering now or holds the outcome
    /// of unwritten: one look at each, per claim.
    pub(super) fn busy_among(&self, ids: &[Uuid]) -> HashSet<Uuid> {
        let mut busy: HashSet<Uuid> = {
            let in_flight = self.in_flight.lock().expect("in-flight lock");
            ids.iter()
                .filter(|id| in_flight.ids.contains_key(id) || in_flight.waiting(id))
                .copied()
                .collect()
        };
        busy.extend(self.unrecorded.among(ids));
        busy
    }

    /// When `record`'s outcome, sent at `slot`, must be written by
    /// (`domain::record_hold`): a throttled endpoint's success waits for
    /// the end of its group of slots; anything else, `None`, at once.
    fn write_by(&self, record: &AttemptRecord, slot: DateTime<Utc>) -> Option<Instant> {
        let now = self.clock.now();
        let throttled = self.throttled.limit_of(record.endpoint_id, now);
        let sent = Sent {
            succeeded: record.outcome == Outcome::Succeeded,
            // Looked up only where it could matter.
            probe: throttled.is_some() && self.breaker.is_probe(record.notification_id),
            throttled,
            slot_us: slot.timestamp_micros(),
        };
        let now_us = now.timestamp_micros();
        let by = write_by_us(sent, now_us)?;
        Some(Instant::now() + Duration::from_micros((by - now_us) as u64))
    }
}

/// Starts a delivery's task.
pub(super) fn start(
    shared: &Arc<Shared>,
    outcomes: &mpsc::Sender<Finished>,
    tasks: &mut JoinSet<()>,
    start: super::throttle::Start,
) {
    spawn(shared, outcomes, tasks, start, false);
}

/// Starts the task of a delivery that waited for a slot (`lanes`): as one
/// that waited for its due time, it looks at its lease and circuit first.
pub(super) fn start_waited(
    shared: &Arc<Shared>,
    outcomes: &mpsc::Sender<Finished>,
    tasks: &mut JoinSet<()>,
    start: super::throttle::Start,
) {
    spawn(shared, outcomes, tasks, start, true);
}

fn spawn(
    shared: &Arc<Shared>,
    outcomes: &mpsc::Sender<Finished>,
    tasks: &mut JoinSet<()>,
    (row, plan, due_at, permit): super::throttle::Start,
    waited: bool,
) {
    let shared = shared.clone();
    let outcomes = outcomes.clone();
    let span = tracing::debug_span!(
        "delivery",
        notification_id = %row.id,
        endpoint_id = %row.endpoint_id,
        attempt = row.attempts + 1,
        outcome = tracing::field::Empty,
        status_code = tracing::field::Empty,
        duration_ms = tracing::field::Empty,
    );
    tasks.spawn(deliver(shared, plan, row, (due_at, waited), permit, outcomes).instrument(span));
}

/// Delivers `row` at `due_at` with `plan`, holding `permit` (a slot of
/// `sender.max_in_flight`) until the recorder has its outcome. One that
/// `waited` already (for a slot) is looked at as one that waits for its
/// due time.
pub(super) async fn deliver(
    shared: Arc<Shared>,
    plan: Arc<Plan>,
    mut row: DueNotification,
    (due_at, waited): (DateTime<Utc>, bool),
    permit: OwnedSemaphorePermit,
    outcomes: mpsc::Sender<Finished>,
) {
    let waited = until(due_at, &shared.clock).await || waited;
    let attempted = if waited && !still_leased(&shared, row.id).await {
        // Cancelled (or handed to pull) while it waited: the claim is gone
        // from the index, and nothing is sent after a cancel.
        None
    } else if waited && shared.breaker.stops(row.endpoint_id, row.id) {
        // Its circuit opened while it waited: back to the index, for the
        // next claim to hold, no attempt made.
        if let Err(error) = shared.due.reschedule(&[(row.id, shared.clock.now())]).await {
            tracing::warn!(%error, "cannot give a held claim back; its lease will expire");
        }
        None
    } else {
        let started = std::time::Instant::now();
        // Boxed: the attempt's state (the request, its signing and the
        // client's exchange) is most of a delivery's, and a task's future
        // is moved whole on its way into the runtime at each spawn. Inline
        // it made the future 11 KiB, and copying it cost hookd about 7 % of
        // its CPU per delivery in server mode (BENCHMARKS.md).
        let record = Box::pin(delivery::attempt(
            &shared.sender,
            &plan,
            &mut row,
            shared.operator,
        ))
        .await;
        Some((record, started.elapsed()))
    };
    // Unrecorded from before it stops being in flight: a claim that finds it
    // again sees it in one or the other.
    if let Some((record, _)) = &attempted {
        shared.unrecorded.add(record.notification_id);
        shared.breaker.observed(record);
    }
    {
        let mut in_flight = shared.in_flight.lock().expect("in-flight lock");
        if let Some((_, took)) = &attempted {
            in_flight.observe(row.endpoint_id, *took);
        }
        in_flight.finish(row.endpoint_id, row.id);
    }
    if let Some((record, _)) = attempted {
        // The permit is kept until the recorder's channel takes the outcome.
        // Past the outcomes the recorder holds while a write waits (a batch)
        // and the channel's room (2 x max_in_flight), a recorder that cannot
        // write stops the dispatcher from sending.
        // A throttled endpoint's success may wait there for the others of
        // its group of slots, to be written with them.
        let write_by = shared.write_by(&record, due_at);
        if outcomes.send(Finished { record, write_by }).await.is_err() {
            tracing::warn!("recorder stopped; the attempt will be retried after its lease");
        }
    }
    drop(permit);
    shared.slot_freed.notify_one();
}

/// Returns at `due_at` by `clock`, never before (a claim may come up to
/// `dispatcher.claim_ahead_ms` early), and whether it had to wait.
async fn until(due_at: DateTime<Utc>, clock: &crate::clock::Clock) -> bool {
    let mut waited = false;
    while let Ok(left) = (due_at - clock.now()).to_std() {
        if left.is_zero() {
            break;
        }
        waited = true;
        tokio::time::sleep(left).await;
    }
    waited
}

/// Whether a claim held until its due time is still this dispatcher's: a
/// cancel (or a switch to pull) while it waited removed it from the index.
/// If Redis cannot say, the claim stands, as it would have without the wait.
async fn still_leased(shared: &Shared, id: Uuid) -> bool {
    shared
        .due
        .leased(id, shared.clock.now())
        .await
        .unwrap_or(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size of the future a function taking a delivery's arguments
    /// returns, without calling it.
    fn future_size<F, Fut>(_: F) -> usize
    where
        F: FnOnce(
            Arc<Shared>,
            Arc<Plan>,
            DueNotification,
            (DateTime<Utc>, bool),
            OwnedSemaphorePermit,
            mpsc::Sender<Finished>,
        ) -> Fut,
    {
        std::mem::size_of::<Fut>()
    }

    #[test]
    fn a_delivery_tasks_future_is_small_enough_to_move_cheaply_at_every_spawn() {
        // With the attempt held inline it was 11 KiB, copied whole on its
        // way into each task.
        let size = future_size(deliver);
        assert!(size <= 4096, "a delivery's future takes {size} bytes");
    }
}
