//! How the dispatcher stops: no more claims or hand-offs; deliveries in
//! flight finish within `server.shutdown_timeout_ms` or go back to the
//! index; the outcomes are flushed; housekeeping and the breaker's timer
//! stop.

use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::mpsc;
use tokio::task::{JoinHandle, JoinSet};
use uuid::Uuid;

use super::recorder::Finished;
use super::{Handoff, Shared};
use crate::config::Settings;
use crate::due::SharedIndex;

/// What a running dispatcher started beside its loop.
pub(super) struct Running {
    pub tasks: JoinSet<()>,
    pub recorder: JoinHandle<()>,
    pub housekeeper: JoinHandle<()>,
    pub breaking: JoinHandle<()>,
}

pub(super) async fn stop(
    due: &SharedIndex,
    handoff: &Handoff,
    shared: &Shared,
    outcomes: mpsc::Sender<Finished>,
    mut running: Running,
    settings: &Settings,
) {
    // What was handed over and not started, and those waiting for
    // a slot (`lanes`), go back to the index.
    let waiting = shared
        .in_flight
        .lock()
        .expect("in-flight lock")
        .drain_waiting();
    let untaken: Vec<(Uuid, DateTime<Utc>)> = handoff
        .close()
        .iter()
        .map(|row| row.id)
        .chain(waiting)
        .map(|id| (id, shared.clock.now()))
        .collect();
    if !untaken.is_empty() {
        if let Err(error) = due.reschedule(&untaken).await {
            tracing::warn!(%error, "cannot give handed-over notifications back; their leases will expire");
        }
    }
    // Let deliveries finish, within limits.
    let grace = Duration::from_millis(settings.server.shutdown_timeout_ms);
    let in_flight = running.tasks.len();
    if in_flight > 0 {
        tracing::info!(in_flight, "waiting for deliveries in flight");
    }
    let finished = tokio::time::timeout(grace, async {
        while running.tasks.join_next().await.is_some() {}
    })
    .await;
    if finished.is_err() {
        running.tasks.abort_all();
        let unfinished: Vec<(Uuid, DateTime<Utc>)> = {
            let in_flight = shared.in_flight.lock().expect("in-flight lock");
            in_flight
                .ids
                .keys()
                .map(|id| (*id, shared.clock.now()))
                .collect()
        };
        metrics::gauge!("hookd_deliveries_in_flight").set(0.0);
        tracing::warn!(
            count = unfinished.len(),
            "giving back deliveries that did not finish in time"
        );
        if let Err(error) = due.reschedule(&unfinished).await {
            tracing::warn!(%error, "cannot give deliveries back; their leases will expire");
        }
    }
    drop(outcomes);
    let mut recorder = running.recorder;
    if tokio::time::timeout(grace, &mut recorder).await.is_err() {
        // Stopped, not left behind extending leases for a process that
        // is going away.
        recorder.abort();
        tracing::warn!("outcomes not recorded before shutdown; their leases will expire and they will be retried");
    }
    // Housekeeping stops at its next step, unless a store keeps that
    // step waiting (a stalled PostgreSQL holds a query for as long as
    // it stalls): shutdown does not wait for it past the grace.
    stop_within(grace, "housekeeping", running.housekeeper).await;
    running.breaking.abort();
}

/// Waits up to `grace` for `task` to end, then stops it: a task whose step
/// a store keeps waiting does not hold shutdown up.
pub(crate) async fn stop_within<T>(grace: Duration, what: &str, mut task: JoinHandle<T>) {
    if tokio::time::timeout(grace, &mut task).await.is_err() {
        task.abort();
        tracing::warn!(
            task = what,
            "did not stop in time (a store does not answer); stopped it"
        );
    }
}
