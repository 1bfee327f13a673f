//! Notifications waiting in this process for a slot of their endpoint's
//! cap, fresh ones in a line apart from the backlog (design §17, "Lanes";
//! issue #48).
//!
//! Without lanes, a notification over its endpoint's cap went back to the
//! due index until about when a slot should free.
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
//! (the endpoint's, or `dispatcher.fresh_share`) keeps no fresh one
//! apart: every one over the cap is in the backlog's line below.
//!
//! Backlog over the cap waits here too, in a line of its own per endpoint,
//! at most one cap's worth (`MAX_BACKLOG_WAITING` in all): a slot it frees
//! goes to the next of its line at once, not a claim later. Beyond that
//! they go back to the index, each a slot's worth of the endpoint's
//! attempt duration after the last one its line gave back, whichever
//! claim found it (`InFlight::defer`), so that the ones waiting here are
//! refilled about as fast as slots free. Until session 32 all of them went
//! back, each counted from the start of its own claim: every claim sent
//! its deferred ones back at the times of the claim before it, so the
//! dispatcher claimed, loaded and put back the whole backlog every few
//! milliseconds, and a guess early or late left a slot idle. A backlog of
//! 20,000 at the default cap drained at 0.78-0.80 of what the cap allows
//! a receiver answering in 20 ms; with both, 0.86 in server mode and
//! 0.92 embedded (the lanes bench). The line alone, without the wait here,
//! drained at 0.70 and 0.77: a slot freed before the next one came back
//! stayed idle.

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
/// Backlog notifications this process may have waiting for a slot, over
/// every endpoint (each at most its cap).
pub(super) const MAX_BACKLOG_WAITING: usize = 1024;

/// A notification waiting for a slot, with what starting it needs.
pub(super) struct Waiting {
    pub row: DueNotification,
    pub plan: Arc<Plan>,
    pub due_at: DateTime<Utc>,
    pub cap: u32,
    /// The endpoint's fresh share: a backlog one keeps to its part of the
    /// cap while fresh ones wait.
    pub share: f64,
    /// When it goes back to the index if it has not started.
    pub until: DateTime<Utc>,
}

/// The ones of a lane waiting, per endpoint in due order.
#[derive(Default)]
pub(super) struct Queue {
    by_endpoint: HashMap<Uuid, VecDeque<Waiting>>,
    ids: HashSet<Uuid>,
}

impl Queue {
    /// Whether work of `endpoint` waits for a slot.
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

    /// How many wait, over every endpoint.
    fn total(&self) -> usize {
        self.ids.len()
    }

    /// Queues `waiting` behind its endpoint's; refuses it (`false`) when
    /// that endpoint has `most` waiting.
    pub(super) fn push(&mut self, waiting: Waiting, most: usize) -> bool {
        if self.len(waiting.row.endpoint_id) >= most {
            return false;
        }
        let queue = self.by_endpoint.entry(waiting.row.endpoint_id).or_default();
        self.ids.insert(waiting.row.id);
        queue.push_back(waiting);
        true
    }

    /// Everything waiting, emptied (at shutdown).
    fn drain(&mut self) -> Vec<Uuid> {
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
    /// Whether any notification waits here for a slot.
    pub(super) fn any_waiting(&self) -> bool {
        !self.fresh.is_empty() || !self.backlog.is_empty()
    }

    /// Whether `id` waits here for a slot.
    pub(super) fn waiting(&self, id: &Uuid) -> bool {
        self.fresh.contains(id) || self.backlog.contains(id)
    }

    /// Everything waiting here, emptied (at shutdown).
    pub(super) fn drain_waiting(&mut self) -> Vec<Uuid> {
        let mut waiting = self.fresh.drain();
        waiting.extend(self.backlog.drain());
        waiting
    }

    /// Takes the waiting ones that have a slot now (and a permit of
    /// `permits`), head first per endpoint, fresh before backlog; and
    /// those that waited past their time, for the index.
    pub(super) fn start_waiting(
        &mut self,
        permits: &Arc<Semaphore>,
        now: DateTime<Utc>,
    ) -> (Vec<Start>, Vec<Uuid>) {
        let (mut starting, mut expired) = (Vec::new(), Vec::new());
        for lane in [Lane::Fresh, Lane::Backlog] {
            let endpoints: Vec<Uuid> = self.queue(lane).by_endpoint.keys().copied().collect();
            for endpoint in endpoints {
                if !self.start_line(
                    (endpoint, lane),
                    permits,
                    now,
                    (&mut starting, &mut expired),
                ) {
                    return (starting, expired);
                }
            }
        }
        (starting, expired)
    }

    /// Starts the head of `endpoint`'s line of `lane` while it has a slot;
    /// `false` once no permit is left.
    fn start_line(
        &mut self,
        (endpoint, lane): (Uuid, Lane),
        permits: &Arc<Semaphore>,
        now: DateTime<Utc>,
        (starting, expired): (&mut Vec<Start>, &mut Vec<Uuid>),
    ) -> bool {
        while let Some(head) = self
            .queue(lane)
            .by_endpoint
            .get(&endpoint)
            .and_then(|q| q.front())
        {
            if head.until <= now {
                let gone = self.queue_mut(lane).pop(endpoint).expect("a head");
                expired.push(gone.row.id);
                continue;
            }
            // A fresh one needs only a free slot: the share is moot. A
            // backlog one keeps to its part while fresh ones wait.
            let share = if lane == Lane::Fresh { 1.0 } else { head.share };
            let slot = (head.row.id, head.row.lane());
            let cap = head.cap;
            let Ok(permit) = permits.clone().try_acquire_owned() else {
                return false;
            };
            if !self.try_start(endpoint, slot, (cap, share)) {
                return true;
            }
            let Waiting {
                row, plan, due_at, ..
            } = self.queue_mut(lane).pop(endpoint).expect("a head");
            starting.push((row, plan, due_at, permit));
        }
        true
    }

    fn queue(&self, lane: Lane) -> &Queue {
        match lane {
            Lane::Fresh => &self.fresh,
            Lane::Backlog => &self.backlog,
        }
    }

    fn queue_mut(&mut self, lane: Lane) -> &mut Queue {
        match lane {
            Lane::Fresh => &mut self.fresh,
            Lane::Backlog => &mut self.backlog,
        }
    }
}

/// What a delivery found at its endpoint's cap. Returned once per
/// delivery and matched at once: boxing the start would allocate for each.
#[allow(clippy::large_enum_variant)]
pub(super) enum Slot {
    /// A slot is its: start it.
    Start(Start),
    /// No slot: it waits here in its line, lease kept.
    Waits,
    /// No slot: back to the index until then.
    Later(DateTime<Utc>),
}

impl Shared {
    /// Whether any wait for a slot: a freed slot should wake the
    /// dispatcher then.
    pub(super) fn any_waiting(&self) -> bool {
        self.in_flight.lock().expect("in-flight lock").any_waiting()
    }

    /// Takes a slot of its endpoint's `cap` (split by `share`) for `start`,
    /// or puts it in its line here, or (that line full) says when to look
    /// again: a slot's worth of the endpoint's attempt duration after the
    /// last one of its line given back, and no sooner than its place
    /// behind those waiting here says (`InFlight::defer`).
    pub(super) fn take_slot(
        &self,
        start: Start,
        (cap, share): (u32, f64),
        (now, until): (DateTime<Utc>, DateTime<Utc>),
    ) -> Slot {
        let (row, plan, due_at, permit) = start;
        let (endpoint, lanes) = (row.endpoint_id, share > 0.0);
        let lane = row.lane();
        let fresh = lanes && lane == Lane::Fresh;
        // Lanes off: one line per endpoint, as before lanes.
        let line = if fresh { Lane::Fresh } else { Lane::Backlog };
        let mut in_flight = self.in_flight.lock().expect("in-flight lock");
        // None passes those of its line already waiting.
        let behind = in_flight.queue(line).waits(endpoint);
        if !behind && in_flight.try_start(endpoint, (row.id, lane), (cap, share)) {
            return Slot::Start((row, plan, due_at, permit));
        }
        drop(permit);
        let id = row.id;
        let waiting = Waiting {
            row,
            plan,
            due_at,
            cap,
            share,
            until,
        };
        let queued = match line {
            Lane::Fresh => in_flight.fresh.push(waiting, MAX_WAITING),
            Lane::Backlog => {
                in_flight.backlog.total() < MAX_BACKLOG_WAITING
                    && in_flight.backlog.push(waiting, cap as usize)
            }
        };
        if queued {
            return Slot::Waits;
        }
        let ahead = in_flight.queue(line).len(endpoint) as u32;
        let slots = if fresh {
            cap.saturating_sub(lane::backlog_slots(cap, share)).max(1)
        } else {
            cap
        };
        let at = in_flight.defer((endpoint, line), ahead, slots, now);
        tracing::trace!(notification_id = %id, %at, "no slot at its endpoint's cap");
        Slot::Later(at)
    }
}

impl Dispatcher {
    /// Starts the waiting ones that have a slot now, and gives back
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
            if !in_flight.any_waiting() {
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
            share: 0.5,
            until,
        }
    }

    /// `endpoint` at its cap of 2 (fresh share 0.5), both slots taken by
    /// backlog: the state and the two in flight.
    fn cap_of_2_full_of_backlog(endpoint: Uuid) -> (InFlight, Vec<Uuid>) {
        let mut in_flight = InFlight::default();
        let busy: Vec<Uuid> = (0..2).map(|_| Uuid::now_v7()).collect();
        for id in &busy {
            assert!(in_flight.try_start(endpoint, (*id, Lane::Backlog), (2, 0.5)));
        }
        (in_flight, busy)
    }

    #[test]
    fn a_waiting_fresh_one_takes_the_next_free_slot_in_line_and_backlog_keeps_to_its_share_meanwhile(
    ) {
        let (endpoint, now) = (Uuid::now_v7(), Utc::now());
        let later = now + chrono::Duration::seconds(5);
        let permits = Arc::new(Semaphore::new(10));
        let (mut in_flight, busy) = cap_of_2_full_of_backlog(endpoint);
        let (first, second) = (waiting(endpoint, later), waiting(endpoint, later));
        let line = [first.row.id, second.row.id];
        assert!(in_flight.fresh.push(first, MAX_WAITING));
        assert!(in_flight.fresh.push(second, MAX_WAITING));
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

    #[test]
    fn backlog_over_the_cap_waits_a_caps_worth_and_a_freed_slot_goes_to_a_waiting_fresh_one_first()
    {
        let (endpoint, now) = (Uuid::now_v7(), Utc::now());
        let later = now + chrono::Duration::seconds(5);
        let permits = Arc::new(Semaphore::new(10));
        let (mut in_flight, busy) = cap_of_2_full_of_backlog(endpoint);
        let retries: Vec<Waiting> = (0..3)
            .map(|_| {
                let mut retry = waiting(endpoint, later);
                retry.row.attempts = 1;
                retry
            })
            .collect();
        let line: Vec<Uuid> = retries.iter().map(|w| w.row.id).collect();
        let queued: Vec<bool> = retries
            .into_iter()
            .map(|w| in_flight.backlog.push(w, 2))
            .collect();
        assert_eq!(queued, [true, true, false], "a cap's worth waits");
        let (starting, _) = in_flight.start_waiting(&permits, now);
        assert!(starting.is_empty(), "the cap is full");
        in_flight.finish(endpoint, busy[0]);
        let (starting, _) = in_flight.start_waiting(&permits, now);
        let started: Vec<Uuid> = starting.iter().map(|(row, ..)| row.id).collect();
        assert_eq!(started, [line[0]], "the head of the backlog's line");
        let fresh = waiting(endpoint, later);
        let fresh_id = fresh.row.id;
        assert!(in_flight.fresh.push(fresh, MAX_WAITING));
        in_flight.finish(endpoint, busy[1]);
        let (starting, _) = in_flight.start_waiting(&permits, now);
        let started: Vec<Uuid> = starting.iter().map(|(row, ..)| row.id).collect();
        assert_eq!(started, [fresh_id], "fresh first");
        assert_eq!(
            in_flight.backlog.len(endpoint),
            1,
            "the next retry still waits"
        );
        assert!(in_flight.waiting(&line[1]));
    }
}
