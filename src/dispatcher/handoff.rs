//! The hand-off from this process's committer to its own dispatcher. A
//! notification created due now would otherwise go committer → Redis `due`
//! → claim → load from PostgreSQL → send: two round trips and a query to
//! learn what the committer already holds. When this process dispatches and
//! has room, the committer instead adds the new ids to Redis as leased (as
//! a claim would have) and hands the rows over here; the dispatcher sends
//! them at once, reading an endpoint only if its prepared copy is not of
//! the version the insert saw.
//!
//! Nothing is lost if the hand-off fails at any point: the rows are
//! committed, and their leases are in Redis. A dispatcher that stops (or
//! dies) before sending them leaves the leases to expire, and any
//! dispatcher's next claim returns them to `due`, exactly as for a claim
//! whose process died.

use std::sync::{Arc, Mutex};

use tokio::sync::{Notify, Semaphore};

use crate::store::delivery::DueNotification;

/// Shared by the committers and the dispatcher of one process. Closed (no
/// room) until the dispatcher opens it, and after it closes it.
#[derive(Default)]
pub struct Handoff {
    state: Mutex<State>,
    /// Tells the dispatcher that rows were handed over.
    handed: Notify,
}

#[derive(Default)]
struct State {
    /// The dispatcher's delivery permits while it runs.
    permits: Option<Arc<Semaphore>>,
    queue: Vec<DueNotification>,
}

impl Handoff {
    /// How many more rows the dispatcher would start at once: its free
    /// permits less what is already waiting for it. 0 while it does not run.
    pub fn room(&self) -> usize {
        let state = self.state.lock().expect("hand-off lock");
        state.permits.as_ref().map_or(0, |permits| {
            permits
                .available_permits()
                .saturating_sub(state.queue.len())
        })
    }

    /// Hands rows over. Gives them back if the dispatcher has stopped
    /// meanwhile (their leases are the caller's to return).
    pub fn push(&self, rows: Vec<DueNotification>) -> Result<(), Vec<DueNotification>> {
        {
            let mut state = self.state.lock().expect("hand-off lock");
            if state.permits.is_none() {
                return Err(rows);
            }
            state.queue.extend(rows);
        }
        self.handed.notify_one();
        Ok(())
    }

    /// Starts taking rows, with the dispatcher's permits as the room (the
    /// dispatcher's call; public for tests that play a dispatcher).
    pub fn open(&self, permits: Arc<Semaphore>) {
        self.state.lock().expect("hand-off lock").permits = Some(permits);
    }

    /// What was handed over since the last take.
    pub fn take(&self) -> Vec<DueNotification> {
        std::mem::take(&mut self.state.lock().expect("hand-off lock").queue)
    }

    /// Stops taking rows; returns those not taken yet.
    pub(super) fn close(&self) -> Vec<DueNotification> {
        let mut state = self.state.lock().expect("hand-off lock");
        state.permits = None;
        std::mem::take(&mut state.queue)
    }

    /// Completes when rows are handed over (or were, since the last wait).
    pub(super) async fn handed(&self) {
        self.handed.notified().await
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A pending row due now, of an endpoint of its own.
    pub(in crate::dispatcher) fn row() -> DueNotification {
        DueNotification {
            id: uuid::Uuid::now_v7(),
            endpoint_id: uuid::Uuid::now_v7(),
            key: None,
            event_type: None,
            content_type: "application/json".into(),
            body: b"{}".to_vec(),
            headers: Default::default(),
            schedule_ms: vec![0],
            schedule_name: None,
            status: crate::domain::status::Status::Pending,
            attempts: 0,
            series_start: 0,
            released_by_circuit: false,
            next_attempt_at: Some(chrono::Utc::now()),
            event_id: None,
            url: None,
            endpoint_version: Some(1),
            unreadable: None,
            sequence: None,
        }
    }

    #[test]
    fn a_closed_hand_off_has_no_room_and_gives_rows_back() {
        let handoff = Handoff::default();
        assert_eq!(handoff.room(), 0);
        assert_eq!(handoff.push(vec![row()]).unwrap_err().len(), 1);
    }

    #[test]
    fn the_room_is_the_free_permits_less_what_waits() {
        let handoff = Handoff::default();
        let permits = Arc::new(Semaphore::new(3));
        handoff.open(permits.clone());
        let _held = permits.clone().try_acquire_owned().unwrap();
        assert_eq!(handoff.room(), 2);
        handoff.push(vec![row()]).unwrap();
        assert_eq!(handoff.room(), 1);
        assert_eq!(handoff.take().len(), 1);
        assert_eq!(handoff.room(), 2);
    }

    #[test]
    fn closing_returns_what_was_not_taken() {
        let handoff = Handoff::default();
        handoff.open(Arc::new(Semaphore::new(4)));
        handoff.push(vec![row(), row()]).unwrap();
        assert_eq!(handoff.close().len(), 2);
        assert_eq!(handoff.room(), 0);
        assert!(handoff.push(vec![row()]).is_err());
    }
}
