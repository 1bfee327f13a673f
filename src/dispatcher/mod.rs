//! The dispatcher: claim due ids from the due index (Redis, or in-process
//! in the embedded mode) and load their rows from the store (`claim`),
//! deliver them within the global and per-endpoint caps, and hand the
//! outcomes to the recorder. It sleeps until just before the earliest due
//! time (or a lease expiry, or `max_idle_ms`), claims what is due in the
//! next few milliseconds and holds it until due, and wakes early when this
//! process enqueues something due sooner, or when the index says so. What
//! this process's committers create due now comes without a claim or a load
//! (`handoff`). An endpoint's cap is split by lane: a fresh notification
//! over it waits here for the next slot (`lanes`). `refill` fills an index
//! from the store.

mod breaker;
mod claim;
mod clock_skew;
mod delivery;
mod due_age;
pub mod handoff;
mod heal;
pub mod housekeeping;
mod in_flight;
pub(crate) mod index_owner;
mod lanes;
mod plans;
mod recorder;
pub mod refill;
mod retention;
mod screen;
pub(crate) mod stop;
mod task;
mod throttle;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::{mpsc, Notify, Semaphore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::config::Settings;
use crate::domain::status::Status;
use crate::due::SharedIndex;
use crate::sender::Sender;
use crate::store::seams::{SharedBreaker, SharedDelivery, SharedHousekeeping};
use claim::Turn;
use in_flight::InFlight;
use plans::{Loaded, Plans};
use recorder::Finished;

pub use handoff::Handoff;

/// How long a notification of a disabled endpoint waits before it is looked
/// at again.
const DISABLED_DEFERRAL: Duration = Duration::from_secs(60);
/// Pause after a store error before claiming again.
const STORE_BACKOFF: Duration = Duration::from_secs(1);

pub struct Dispatcher {
    store: SharedDelivery,
    housekeeping: SharedHousekeeping,
    due: SharedIndex,
    sender: Sender,
    settings: Arc<Settings>,
    wake: Arc<Notify>,
    handoff: Arc<Handoff>,
    /// The rate limiter beside the due index (`throttle`).
    limiter: crate::limiter::SharedLimiter,
    breaker: SharedBreaker,
}

/// The shared parts each delivery task needs.
struct Shared {
    sender: Sender,
    due: SharedIndex,
    /// Whether operator events are on (`operator.url`).
    operator: bool,
    default_timeout: Duration,
    in_flight: Mutex<InFlight>,
    permits: Arc<Semaphore>,
    slot_freed: Notify,
    /// Outcomes not written yet, whose leases the recorder extends.
    unrecorded: Arc<recorder::Unrecorded>,
    breaker: Arc<breaker::Breaker>,
    throttled: screen::Hint,
    /// The one clock (`crate::clock`): the store's.
    clock: crate::clock::Clock,
    /// The last claim failed: a run of failures (Redis down, or an index
    /// paused for hours) is warned of once, not every second.
    claims_failing: std::sync::atomic::AtomicBool,
}

impl Dispatcher {
    // Each is a handle a dispatcher is made of, passed once at start-up.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        store: SharedDelivery,
        housekeeping: SharedHousekeeping,
        due: SharedIndex,
        limiter: crate::limiter::SharedLimiter,
        sender: Sender,
        settings: Arc<Settings>,
        wake: Arc<Notify>,
        handoff: Arc<Handoff>,
        breaker: SharedBreaker,
    ) -> Self {
        Self {
            store,
            housekeeping,
            limiter,
            due,
            sender,
            settings,
            wake,
            handoff,
            breaker,
        }
    }

    /// Runs until `shutdown`; then stops claiming, lets deliveries finish
    /// within `server.shutdown_timeout_ms`, gives back those that did not,
    /// and flushes the outcomes.
    pub async fn run(self, shutdown: CancellationToken) {
        let settings = self.settings.clone();
        let (outcomes, outcomes_rx) = mpsc::channel(settings.sender.max_in_flight * 2);
        let unrecorded = Arc::new(recorder::Unrecorded::default());
        let breaker = Arc::new(breaker::Breaker::new(
            self.breaker.clone(),
            self.store.clone(),
            self.due.clone(),
            &settings,
        ));
        let breaking = tokio::spawn(breaker.clone().run(self.wake.clone(), shutdown.clone()));
        let recorder = tokio::spawn(recorder::run(
            self.store.clone(),
            self.due.clone(),
            self.wake.clone(),
            settings.lease(),
            unrecorded.clone(),
            outcomes_rx,
            breaker.clone(),
        ));
        let operator_synced = housekeeping::sync_operator(&*self.housekeeping, &settings).await;
        let housekeeper = tokio::spawn(housekeeping::run(
            self.housekeeping.clone(),
            self.due.clone(),
            settings.clone(),
            operator_synced,
            shutdown.clone(),
        ));
        let shared = Arc::new(Shared {
            sender: self.sender.clone(),
            due: self.due.clone(),
            operator: settings.operator.enabled(),
            default_timeout: settings.sender_timeout(),
            in_flight: Mutex::new(InFlight::default()),
            permits: Arc::new(Semaphore::new(settings.sender.max_in_flight)),
            slot_freed: Notify::new(),
            unrecorded,
            breaker,
            throttled: screen::Hint::default(),
            clock: self.store.clock().clone(),
            claims_failing: Default::default(),
        });
        let mut plans = Plans::new(shared.default_timeout, settings.max_endpoint_timeout());
        let mut tasks = JoinSet::new();
        if settings.dispatcher.handoff {
            self.handoff.open(shared.permits.clone());
        }
        tracing::info!(
            max_in_flight = settings.sender.max_in_flight,
            handoff = settings.dispatcher.handoff,
            "dispatcher started"
        );

        // Whether the next turn claims from the index: not when only a
        // hand-off woke the dispatcher (nothing in the index got due sooner).
        let mut claim_now = true;
        let index_wakeups = self.due.wakeups();
        let mut idle_until = tokio::time::Instant::now();
        while !shutdown.is_cancelled() {
            while tasks.try_join_next().is_some() {}
            // Those waiting for a slot first: a freed slot is theirs.
            self.start_waiting(&shared, &outcomes, &mut tasks).await;
            if shared.permits.available_permits() == 0 {
                tokio::select! {
                    _ = shutdown.cancelled() => break,
                    _ = shared.slot_freed.notified() => continue,
                }
            }
            let mut handed = self.handoff.take();
            handed.extend(shared.breaker.take_probes());
            if !handed.is_empty()
                && self
                    .deliver_handed(handed, &mut plans, &shared, &outcomes, &mut tasks)
                    .await
            {
                // Some went back to the index (no room after all, or an
                // endpoint at its cap): the next claim finds them.
                claim_now = true;
            }
            if claim_now {
                match self
                    .claim(&mut plans, &shared, &outcomes, &mut tasks, &shutdown)
                    .await
                {
                    Turn::Again => continue,
                    Turn::IdleFor(wait) => {
                        idle_until = tokio::time::Instant::now() + wait;
                        claim_now = false;
                    }
                }
            }
            let waiting = shared.any_waiting();
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = shared.slot_freed.notified(), if waiting => {}
                _ = self.wake.notified() => claim_now = true,
                _ = woken_by(index_wakeups.as_deref()) => claim_now = true,
                _ = self.handoff.handed() => {}
                _ = shared.breaker.probed() => {}
                _ = tokio::time::sleep_until(idle_until) => claim_now = true,
            }
        }

        let running = stop::Running {
            tasks,
            recorder,
            housekeeper,
            breaking,
        };
        stop::stop(
            &self.due,
            &self.handoff,
            &shared,
            outcomes,
            running,
            &settings,
        )
        .await;
        tracing::info!("dispatcher stopped");
    }

    /// Starts deliveries for claimed ids (those due by `due_by` wait for
    /// their due time, those the limiter `admitted` for their slot); gives
    /// back those that must wait longer, and says whether there were any.
    async fn dispatch(
        &self,
        ids: &[Uuid],
        Loaded {
            notifications,
            plans,
            admitted,
        }: Loaded,
        (now, due_by): (DateTime<Utc>, DateTime<Utc>),
        shared: &Arc<Shared>,
        outcomes: &mpsc::Sender<Finished>,
        tasks: &mut JoinSet<()>,
    ) -> bool {
        let mut rows: HashMap<Uuid, _> = notifications.into_iter().map(|r| (r.id, r)).collect();
        let mut gone = Vec::new();
        let mut orphans = Vec::new();
        let mut handed = Vec::new();
        let mut later = Vec::new();
        let wait_until = self.wait_until(now);
        let default_cap = self.settings.dispatcher.endpoint_max_in_flight;
        let default_limit = self.settings.dispatcher.default_rate_limit;
        let mut throttle = throttle::Throttle::new(
            (
                default_limit.and_then(|d| d.limit()),
                self.settings.dispatcher.fresh_share,
            ),
            admitted,
        );
        // Those this process is delivering, or holds the outcome of
        // unwritten: a claim that found them again (a lease ran out under a
        // stall, or a rebuild re-added them) leaves them to that attempt,
        // whose recording ends the new lease too.
        let busy = shared.busy_among(ids);
        for id in ids {
            if busy.contains(id) {
                continue;
            }
            // PostgreSQL fences Redis: a row that is missing, final or not
            // yet due is not sent, whatever the index said.
            let Some(row) = rows.remove(id) else {
                gone.push(*id);
                continue;
            };
            let Some(due_at) = row
                .next_attempt_at
                .filter(|_| row.status() == Status::Pending)
            else {
                gone.push(*id);
                continue;
            };
            if due_at > due_by {
                later.push((*id, due_at));
                continue;
            }
            let Some(plan) = plans.get(&row.endpoint_id).cloned() else {
                gone.push(*id);
                continue;
            };
            if plan.deleted {
                orphans.push(*id);
                gone.push(*id);
                continue;
            }
            if plan.pull {
                // Switched to pull after it was indexed: its consumers take it.
                handed.push(*id);
                gone.push(*id);
                continue;
            }
            if plan.disabled {
                later.push((
                    *id,
                    now + chrono::Duration::from_std(DISABLED_DEFERRAL).unwrap_or_default(),
                ));
                continue;
            }
            let Some(row) = shared
                .breaker
                .admits(plan.breaker, row, due_at, now, &mut later)
            else {
                continue;
            };
            let cap = plan.max_in_flight.unwrap_or(default_cap);
            let Ok(permit) = shared.permits.clone().try_acquire_owned() else {
                later.push((*id, now));
                continue;
            };
            // A limited endpoint's: its cap is counted where the limiter's
            // answer is (`throttle`), so that a throttled one takes no room.
            // A probe is not limited: one request per open period, and a
            // slot behind a backlog's reservations would keep the circuit
            // open long after the receiver came back.
            let start = (row, plan, due_at, permit);
            let start = if shared.breaker.is_probe(start.0.id) {
                start
            } else {
                let Some(start) = throttle.hold(start, cap) else {
                    continue;
                };
                start
            };
            let share = start
                .1
                .fresh_share
                .unwrap_or(self.settings.dispatcher.fresh_share);
            match shared.take_slot(start, (cap, share), (now, wait_until)) {
                lanes::Slot::Start(start) => task::start(shared, outcomes, tasks, start),
                lanes::Slot::Waits => {}
                lanes::Slot::Later(at) => later.push((*id, at)),
            }
        }
        let limited = throttle
            .settle(&*self.limiter, shared, (now, due_by), &mut later)
            .await;
        for limited in limited {
            task::start(shared, outcomes, tasks, limited);
        }
        shared.breaker.fail_held().await;
        if !orphans.is_empty() {
            // Deleting an endpoint cancels its pending notifications; these
            // were created while the delete ran.
            if let Err(error) = self.store.cancel_notifications(&orphans).await {
                tracing::warn!(%error, "cannot cancel notifications of a deleted endpoint");
            }
        }
        if !handed.is_empty() {
            if let Err(error) = self.store.hand_to_pull(&handed).await {
                tracing::warn!(%error, "cannot hand notifications to a pull endpoint's consumers");
            }
        }
        if !gone.is_empty() {
            if let Err(error) = self.due.forget(&gone).await {
                tracing::debug!(%error, "cannot drop stale claims; their leases will expire");
            }
        }
        if !later.is_empty() {
            if let Err(error) = self.due.reschedule(&later).await {
                tracing::warn!(%error, "cannot defer claims; their leases will expire");
            }
        }
        !later.is_empty()
    }
}

/// Until the index wakes the dispatcher; never, for one that does not.
async fn woken_by(wakeups: Option<&Notify>) {
    match wakeups {
        Some(notify) => notify.notified().await,
        None => std::future::pending().await,
    }
}
