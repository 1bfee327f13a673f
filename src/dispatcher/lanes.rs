//! Fresh notifications waiting in this process for a slot of their
//! endpoint's cap (design §17, "Lanes"; issue #48).
//!
//! Without lanes, a notification over its endpoint's cap goes back to the
//! due index until about when a slot should free (`InFlight::deferral`).
//! Behind a backlog of retries that is wrong twice for a fresh one: its
//! place in line counts the whole claimed backlog, and back in the index
//! it sorts behind every retry that became due before it, so it is
//! claimed only once the dispatcher has churned through them (5.3 s p99
//! in server mode, 12.2 s embedded, with 20,000 retries due:
//! `BENCH_ONLY=lanes BENCH_MODE=both cargo bench --bench dispatch`).
//!
//! So a fresh one that finds no slot (handed over by the committer, or
//! claimed) keeps its lease and waits here, in due order among the fresh
//! ones of its endpoint only, and the dispatcher starts it as soon as a
//! slot frees; while any wait, the endpoint's backlog may hold at most
//! `⌈(1 − share) × cap⌉` slots (`domain::lane::has_room`), so the slots
//! it frees go to them. Nothing waits for a slot in the index's order,
//! and the index needs no lane of its own: a hand-off (every fresh one
//! created due now by a dispatching process) never meets it, and a claim
//! that brings fresh ones among retries moves them here at once.
//!
//! Bounds: at most `MAX_WAITING` per endpoint (the rest go back to the
//! index, placed by their place among the fresh ones), each for at most
//! `MAX_WAIT` (well within the lease they hold; then back to the index, as
//! any claim that found no slot). A cancel while one waits is seen before
//! it is sent (`task::deliver` looks at the lease again), and at shutdown
//! they go back to the index with what was handed over. `fresh_share = 0`
//! (the endpoint's, or `dispatcher.fresh_share`) keeps nothing here:
//! today's behaviour exactly.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::{mpsc, Semaphore};
use tokio::task::JoinSet;
use uuid::Uuid;

use super::delivery::Plan;
use super::in_flight::InFlight;
use super::recorder::Finished;
use super::throttle::Start;
use super::{task, Dispatcher, Shared};
use crate::domain::lane::{self, Lane};
use crate::store::delivery::DueNotification;

/// Fresh notifications one endpoint may have waiting in this process; the
/// others go back to the index.
pub(super) const MAX_WAITING: usize = 1024;
/// The longest one waits here before it goes back to the index.
pub(super) const MAX_WAIT: Duration = Duration::from_secs(10);

/// A fresh notification waiting for a slot, with what starting it needs.
pub(super) struct Waiting {
    pub row: DueNotification,
    pub plan: Arc<Plan>,
    pub due_at: DateTime<Utc>,
    pub cap: u32,
    /// When it goes back to the index if it has not started.
    pub until: DateTime<Utc>,
}

/// The fresh ones waiting, per endpoint in due order.
#[derive(Default)]
pub(super) struct FreshWaiting {
    by_endpoint: HashMap<Uuid, VecDeque<Waiting>>,
    ids: HashSet<Uuid>,
}

impl FreshWaiting {
    /// Whether fresh work of `endpoint` waits for a slot.
    pub(super) fn waits(&self, endpoint: Uuid) -> bool {
        self.by_endpoint.contains_key(&endpoint)
    }

    pub(super) fn contains(&self, id: &Uuid) -> bool {
        self.ids.contains(id)
    }

    pub(super) fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// How many of `endpoint`'s wait.
    pub(super) fn len(&self, endpoint: Uuid) -> usize {
        self.by_endpoint.get(&endpoint).map_or(0, VecDeque::len)
    }

    /// Queues `waiting` behind its endpoint's; refuses it (`false`) when
    /// that endpoint has `MAX_WAITING` waiting.
    pub(super) fn push(&mut self, waiting: Waiting) -> bool {
        let queue = self.by_endpoint.entry(waiting.row.endpoint_id).or_default();
        if queue.len() >= MAX_WAITING {
            return false;
        }
        self.ids.insert(waiting.row.id);
        queue.push_back(waiting);
        true
    }

    /// Everything waiting, emptied (at shutdown).
    pub(super) fn drain(&mut self) -> Vec<Uuid> {
        self.by_endpoint.clear();
        self.ids.drain().collect()
    }

    fn pop(&mut self, endpoint: Uuid) -> Option<Waiting> {
        let queue = self.by_endpoint.get_mut(&endpoint)?;
        let waiting = queue.pop_front();
        if queue.is_empty() {
            self.by_endpoint.remove(&endpoint);
        }
        if let Some(waiting) = &waiting {
            self.ids.remove(&waiting.row.id);
        }
        waiting
    }
}

impl InFlight {
    /// Takes the waiting fresh ones that have a slot now (and a permit of
    /// `permits`), head first per endpoint; and those that waited past
    /// their time, for the index.
    pub(super) fn start_waiting(
        &mut self,
        permits: &Arc<Semaphore>,
        now: DateTime<Utc>,
    ) -> (Vec<Start>, Vec<Uuid>) {
        let (mut starting, mut expired) = (Vec::new(), Vec::new());
        let endpoints: Vec<Uuid> = self.fresh.by_endpoint.keys().copied().collect();
        for endpoint in endpoints {
            while let Some(head) = self
                .fresh
                .by_endpoint
                .get(&endpoint)
                .and_then(|q| q.front())
            {
                if head.until <= now {
                    let gone = self.fresh.pop(endpoint).expect("a head");
                    expired.push(gone.row.id);
                    continue;
                }
                if self.count(endpoint) >= head.cap {
                    break;
                }
                let Ok(permit) = permits.clone().try_acquire_owned() else {
                    return (starting, expired);
                };
                let Waiting {
                    row,
                    plan,
                    due_at,
                    cap,
                    ..
                } = self.fresh.pop(endpoint).expect("a head");
                // A fresh one needs only a free slot: the share is moot.
                let started = self.try_start(endpoint, (row.id, Lane::Fresh), (cap, 1.0));
                debug_assert!(started, "a slot was free");
                starting.push((row, plan, due_at, permit));
            }
        }
        (starting, expired)
    }
}

/// What a delivery found at its endpoint's cap. Returned once per
/// delivery and matched at once: boxing the start would allocate for each.
#[allow(clippy::large_enum_variant)]
pub(super) enum Slot {
    /// A slot is its: start it.
    Start(Start),
    /// A fresh one with no slot: it waits here, lease kept.
    Waits,
    /// No slot: back to the index until then.
    Later(DateTime<Utc>),
}

impl Shared {
    /// Whether fresh ones wait for a slot: a freed slot should wake the
    /// dispatcher then.
    pub(super) fn fresh_waiting(&self) -> bool {
        !self
            .in_flight
            .lock()
            .expect("in-flight lock")
            .fresh
            .is_empty()
    }

    /// Takes a slot of its endpoint's `cap` (split by `share`) for `start`,
    /// or puts a fresh one in line here, or says when to look again: the
    /// endpoint's attempt duration times its place among those of its
    /// lane found without a slot (`places`, per claim).
    pub(super) fn take_slot(
        &self,
        start: Start,
        (cap, share): (u32, f64),
        (now, until): (DateTime<Utc>, DateTime<Utc>),
        places: &mut HashMap<(Uuid, Lane), u32>,
    ) -> Slot {
        let (row, plan, due_at, permit) = start;
        let (endpoint, lanes) = (row.endpoint_id, share > 0.0);
        let lane = Lane::of(row.attempts);
        let fresh = lanes && lane == Lane::Fresh;
        let mut in_flight = self.in_flight.lock().expect("in-flight lock");
        // A fresh one does not pass those of its endpoint already waiting.
        let behind = fresh && in_flight.fresh.waits(endpoint);
        if !behind && in_flight.try_start(endpoint, (row.id, lane), (cap, share)) {
            return Slot::Start((row, plan, due_at, permit));
        }
        drop(permit);
        let id = row.id;
        if fresh {
            let waiting = Waiting {
                row,
                plan,
                due_at,
                cap,
                until,
            };
            if in_flight.fresh.push(waiting) {
                return Slot::Waits;
            }
        }
        // Lanes off: one line per endpoint, as before lanes.
        let line = if fresh { Lane::Fresh } else { Lane::Backlog };
        let place = places.entry((endpoint, line)).or_default();
        *place += 1;
        let (place, slots) = if fresh {
            let slots = cap.saturating_sub(lane::backlog_slots(cap, share)).max(1);
            (in_flight.fresh.len(endpoint) as u32 + *place, slots)
        } else {
            (*place, cap)
        };
        let wait = in_flight.deferral(endpoint, place, slots);
        tracing::trace!(notification_id = %id, ?wait, "no slot at its endpoint's cap");
        Slot::Later(now + chrono::Duration::from_std(wait).unwrap_or_default())
    }
}

impl Dispatcher {
    /// Starts the waiting fresh ones that have a slot now, and gives back
    /// to the index those that waited past their time.
    pub(super) async fn start_waiting(
        &self,
        shared: &Arc<Shared>,
        outcomes: &mpsc::Sender<Finished>,
        tasks: &mut JoinSet<()>,
    ) {
        let now = shared.clock.now();
        let (starting, expired) = {
            let mut in_flight = shared.in_flight.lock().expect("in-flight lock");
            if in_flight.fresh.is_empty() {
                return;
            }
            in_flight.start_waiting(&shared.permits, now)
        };
        for start in starting {
            task::start_waited(shared, outcomes, tasks, start);
        }
        if !expired.is_empty() {
            let back: Vec<_> = expired.into_iter().map(|id| (id, now)).collect();
            if let Err(error) = self.due.reschedule(&back).await {
                tracing::warn!(%error, "cannot give back fresh ones that waited; their leases will expire");
            }
        }
    }

    /// When a fresh one put in line now goes back to the index if it has
    /// not started: `MAX_WAIT`, or a quarter of the lease it holds if less.
    pub(super) fn wait_until(&self, now: DateTime<Utc>) -> DateTime<Utc> {
        let wait = MAX_WAIT.min(self.settings.lease() / 4);
        now + chrono::Duration::from_std(wait).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waiting(endpoint: Uuid, until: DateTime<Utc>) -> Waiting {
        let plan = Plan::new(
            super::super::plans::tests::endpoint(endpoint, 1, None),
            until,
            Duration::from_secs(1),
            Duration::from_secs(1),
        );
        Waiting {
            row: DueNotification {
                endpoint_id: endpoint,
                next_attempt_at: Some(until),
                ..super::super::handoff::tests::row()
            },
            plan: Arc::new(plan),
            due_at: until,
            cap: 2,
            until,
        }
    }

    #[test]
    fn a_waiting_fresh_one_takes_the_next_free_slot_in_line_and_backlog_keeps_to_its_share_meanwhile(
    ) {
        let (endpoint, now) = (Uuid::now_v7(), Utc::now());
        let later = now + chrono::Duration::seconds(5);
        let permits = Arc::new(Semaphore::new(10));
        let mut in_flight = InFlight::default();
        let busy: Vec<Uuid> = (0..2).map(|_| Uuid::now_v7()).collect();
        for id in &busy {
            assert!(in_flight.try_start(endpoint, (*id, Lane::Backlog), (2, 0.5)));
        }
        let (first, second) = (waiting(endpoint, later), waiting(endpoint, later));
        let line = [first.row.id, second.row.id];
        assert!(in_flight.fresh.push(first));
        assert!(in_flight.fresh.push(second));
        let (starting, _) = in_flight.start_waiting(&permits, now);
        assert!(starting.is_empty(), "the cap is full");
        in_flight.finish(endpoint, busy[0]);
        // One of 2 is the backlog's share: the freed slot is fresh's.
        assert!(!in_flight.try_start(endpoint, (Uuid::now_v7(), Lane::Backlog), (2, 0.5)));
        let (starting, expired) = in_flight.start_waiting(&permits, now);
        let started: Vec<Uuid> = starting.iter().map(|(row, ..)| row.id).collect();
        assert_eq!(started, [line[0]], "the head of the line");
        assert!(expired.is_empty());
        let (starting, expired) = in_flight.start_waiting(&permits, later);
        assert!(starting.is_empty());
        assert_eq!(expired, [line[1]], "waited past its time");
        assert!(in_flight.fresh.is_empty());
        // None waits: the backlog may take the whole cap again.
        in_flight.finish(endpoint, line[0]);
        assert!(in_flight.try_start(endpoint, (Uuid::now_v7(), Lane::Backlog), (2, 0.5)));
    }
}
