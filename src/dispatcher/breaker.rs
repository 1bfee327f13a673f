//! The circuit breaker in a dispatcher (docs/design.md §16; the rule is
//! `domain::breaker`, the state is the store's `endpoint_circuits`, shared
//! by every process).
//!
//! - **View**: every second (sooner when a probe or a release falls due)
//!   each dispatcher reads the circuits that are not clean (the table has
//!   rows for no others) and holds them in memory; what its own recorder
//!   writes it sees at once. A claim therefore costs no statement: a
//!   process that has not seen an opening yet sends for at most a second
//!   more, and those attempts count like any.
//! - **Hold** (`admit`): a claimed notification of an endpoint whose
//!   circuit is not closed is not sent and not recorded: it goes back to
//!   the due index at its hold deadline (due time + `max_hold_ms`), so held
//!   notifications cost nothing while they wait. Claimed at that deadline
//!   with the circuit still open, it ends failed, `circuit_open`.
//! - **Count** (`after_batch`, by the recorder): only endpoints with a
//!   counting failure, or whose circuit is not clean, cost a read and a
//!   compare-and-set.
//! - **Probe**: an open circuit whose period is over is set probing with a
//!   lease by one process (a compare-and-set: exactly one wins); that one
//!   leases the endpoint's earliest due notification in the index and
//!   hands it to its own dispatcher, which sends it as an ordinary attempt.
//!   A prober that dies leaves its lease to lapse; another probes then.
//! - **Release**: a close owes a release (in the store, done by whichever
//!   process sees it first): the endpoint's pending notifications due by
//!   now are moved back to their due times in the index, in pages in due
//!   order, and the dispatcher drains them at the endpoint's cap. It is
//!   done again a lease later, for holds decided on a stale view. If both
//!   are lost anyway, a held row comes due at its hold deadline and is
//!   sent then: late, never lost.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Mutex;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::Notify;
use uuid::Uuid;

use crate::config::Settings;
use crate::domain::breaker::{
    counts, draw_factor, hold, says_anything, Change, Circuit, Hold, Override, Policy, State,
    CIRCUIT_OPEN,
};
use crate::domain::operator_event::{CircuitChange, FailedNotification, OperatorEvent};
use crate::due::SharedIndex;
use crate::store::delivery::DueNotification;
use crate::store::recording::AttemptRecord;
use crate::store::seams::{SharedBreaker, SharedDelivery};

#[path = "breaker_timer.rs"]
mod timer;

#[path = "breaker_view.rs"]
mod view;
use view::View;

#[cfg(test)]
#[path = "breaker_tests.rs"]
mod tests;

/// The longest the view goes unread.
const REFRESH: Duration = Duration::from_secs(1);
/// Notifications moved per page of a release.
const RELEASE_PAGE: i64 = 1000;
/// Compare-and-set tries of one change before it is left to the next batch.
const TRIES: usize = 3;

/// How long a claim waits when this process's own failures, not yet
/// counted by its recorder, would open the circuit: until the recorder
/// has said whether they did.
const UNTIL_COUNTED: chrono::Duration = chrono::Duration::milliseconds(100);

/// What to do with a claimed notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Admit {
    Send,
    /// Not yet: back to the index until then.
    Defer(DateTime<Utc>),
    /// Held: back to the index until then.
    Park(DateTime<Utc>),
    /// Held too long: ends failed, `circuit_open`.
    Fail,
}

pub(super) struct Breaker {
    store: SharedBreaker,
    delivery: SharedDelivery,
    due: SharedIndex,
    defaults: Policy,
    max_hold: chrono::Duration,
    lease: chrono::Duration,
    operator: bool,
    view: Mutex<View>,
    /// Probes this process won, for its dispatcher to send.
    ready: Mutex<Vec<DueNotification>>,
    /// Claimed and held too long, for `fail_held`.
    failing: Mutex<Vec<DueNotification>>,
    probed: Notify,
}

impl Breaker {
    /// Now, by the store's clock (`crate::clock`), to the microsecond both
    /// stores keep: a time written and read back compares equal in a
    /// compare-and-set.
    fn now(&self) -> DateTime<Utc> {
        self.store.clock().now()
    }

    pub(super) fn new(
        store: SharedBreaker,
        delivery: SharedDelivery,
        due: SharedIndex,
        settings: &Settings,
    ) -> Self {
        let ms = |ms: u64| chrono::Duration::milliseconds(ms.min(i64::MAX as u64) as i64);
        Self {
            store,
            delivery,
            due,
            defaults: settings.dispatcher.breaker.policy(),
            max_hold: ms(settings.dispatcher.breaker.max_hold_ms),
            lease: ms(settings.dispatcher.lease_ms),
            operator: settings.operator.enabled(),
            view: Mutex::new(View::default()),
            ready: Mutex::new(Vec::new()),
            failing: Mutex::new(Vec::new()),
            probed: Notify::new(),
        }
    }

    /// `row` if it is to be sent now; if not, it is given back in `later`
    /// (held, or waiting for the recorder), or kept to end failed by
    /// `fail_held` (held too long).
    pub(super) fn admits(
        &self,
        own: Override,
        row: DueNotification,
        due_at: DateTime<Utc>,
        now: DateTime<Utc>,
        later: &mut Vec<(Uuid, DateTime<Utc>)>,
    ) -> Option<DueNotification> {
        match self.admit(own, (row.endpoint_id, row.id), due_at, now) {
            Admit::Send => return Some(row),
            Admit::Defer(until) | Admit::Park(until) => later.push((row.id, until)),
            Admit::Fail => self.failing.lock().expect("breaker lock").push(row),
        }
        None
    }

    /// The endpoints whose circuit holds, in this process's view.
    pub(super) fn holding(&self) -> Vec<Uuid> {
        let view = self.view.lock().expect("breaker lock");
        view.circuits
            .iter()
            .filter(|(_, circuit)| circuit.holds())
            .map(|(endpoint, _)| *endpoint)
            .collect()
    }

    /// Whether to send notification `id` of `endpoint`, due at `due_at`,
    /// now (`dispatcher::screen` asks before the row is read).
    pub(super) fn admit(
        &self,
        own: Override,
        (endpoint, id): (Uuid, Uuid),
        due_at: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Admit {
        let mut view = self.view.lock().expect("breaker lock");
        let Some(policy) = own.resolve(self.defaults) else {
            view.policies.remove(&endpoint);
            if view.circuits.get(&endpoint).is_some_and(Circuit::holds) {
                view.turned_off.insert(endpoint);
            }
            return Admit::Send;
        };
        view.policies.insert(endpoint, policy);
        if view.probes.contains(&id) {
            return Admit::Send;
        }
        let stored = view.circuits.get(&endpoint).copied();
        match stored {
            Some(circuit) if circuit.holds() => match hold(due_at, now, self.max_hold) {
                Hold::Park(until) => {
                    metrics::counter!("hookd_notifications_held_total").increment(1);
                    Admit::Park(until)
                }
                Hold::Fail => Admit::Fail,
            },
            _ if view.foresees_opening(endpoint, stored, &policy) => {
                Admit::Defer(now + UNTIL_COUNTED)
            }
            _ => Admit::Send,
        }
    }

    /// An attempt this process made, before the recorder has it: what
    /// `admit` foresees until then.
    pub(super) fn observed(&self, record: &AttemptRecord) {
        let error = record.error_code.as_deref();
        if !record.tells_of_endpoint || !says_anything(record.status_code, error) {
            return;
        }
        let mut view = self.view.lock().expect("breaker lock");
        if !view.policies.contains_key(&record.endpoint_id) {
            return;
        }
        if counts(record.status_code, error) {
            *view.unrecorded.entry(record.endpoint_id).or_default() += 1;
        } else {
            view.unrecorded.remove(&record.endpoint_id);
        }
    }

    /// Ends failed `circuit_open` those held too long, still pending with
    /// the attempts they were claimed with, and drops them from the index.
    pub(super) async fn fail_held(&self) {
        let rows = std::mem::take(&mut *self.failing.lock().expect("breaker lock"));
        if rows.is_empty() {
            return;
        }
        let last_error = format!(
            "{CIRCUIT_OPEN}: the endpoint's circuit stayed open longer than dispatcher.breaker.max_hold_ms"
        );
        let held: Vec<(Uuid, i32, i32)> = rows
            .iter()
            .map(|r| (r.id, r.attempts, r.series_start))
            .collect();
        let events: Vec<OperatorEvent> = rows
            .iter()
            .filter(|_| self.operator)
            .filter_map(|row| {
                let failed = FailedNotification {
                    notification_id: row.id,
                    endpoint_id: row.endpoint_id,
                    key: row.key.as_deref(),
                    event_type: row.event_type.as_deref(),
                    attempts: row.attempts,
                    last_status_code: None,
                    last_error: Some(&last_error),
                };
                OperatorEvent::notification_failed(&failed, self.now())
            })
            .collect();
        let failed = match self.store.fail_held(&held, &last_error, &events).await {
            Ok(failed) => failed,
            Err(error) => {
                tracing::warn!(%error, "cannot end notifications held too long; their leases will expire");
                return;
            }
        };
        metrics::counter!("hookd_notifications_failed_circuit_open_total")
            .increment(failed.len() as u64);
        if let Err(error) = self.due.forget(&failed).await {
            tracing::debug!(%error, "cannot drop ended notifications from the index; their leases will expire");
        }
        // Those the compare-and-set left alone changed meanwhile (retried,
        // attempted elsewhere): due now, the next claim looks at them again.
        let now = self.now();
        let changed: Vec<(Uuid, DateTime<Utc>)> = rows
            .iter()
            .filter(|row| !failed.contains(&row.id))
            .map(|row| (row.id, now))
            .collect();
        if !changed.is_empty() {
            if let Err(error) = self.due.reschedule(&changed).await {
                tracing::debug!(%error, "cannot give back notifications that changed; their leases will expire");
            }
        }
    }

    /// Whether `id` is a probe this process won.
    pub(super) fn is_probe(&self, id: Uuid) -> bool {
        self.view.lock().expect("breaker lock").probes.contains(&id)
    }

    /// Whether notification `id`, admitted before it waited (for its time,
    /// a rate limit's slot later in its group, or a slot at its endpoint's
    /// cap), is not to be sent now: it is no probe, and its endpoint's
    /// circuit held meanwhile, or the failures not yet counted would open
    /// it (as `admit` foresees them). With a cap of 1, the one waiting for
    /// the slot started as each failure came back, and a receiver that was
    /// down got up to twice its `failures` before the circuit opened.
    pub(super) fn stops(&self, endpoint: Uuid, id: Uuid) -> bool {
        self.view.lock().expect("breaker lock").stops(endpoint, id)
    }

    /// Probes won by this process, for its dispatcher to send.
    pub(super) fn take_probes(&self) -> Vec<DueNotification> {
        std::mem::take(&mut *self.ready.lock().expect("breaker lock"))
    }

    /// Woken when a probe is ready.
    pub(super) async fn probed(&self) {
        self.probed.notified().await
    }

    /// What a recorded batch says of its endpoints' circuits. Its failures
    /// stop being foreseen only once counted (or not): a claim meanwhile
    /// waits rather than sends. Only the records whose write `moved` their
    /// notification count: one that found it moved already (another
    /// process delivered it after this one stalled past its lease, and
    /// its late answer here reads as a timeout) says nothing the
    /// notification's history keeps, and must not open a healthy
    /// receiver's circuit. (An attempt to a notification cancelled while
    /// in flight is listed but moves nothing, so it is not counted either:
    /// one observation of the receiver fewer.)
    pub(super) async fn after_batch(&self, batch: &[AttemptRecord], moved: &HashSet<Uuid>) {
        let mut foreseen: HashMap<Uuid, i32> = HashMap::new();
        self.count(batch, moved, &mut foreseen).await;
        let mut view = self.view.lock().expect("breaker lock");
        for (endpoint, counted) in foreseen {
            if let Some(n) = view.unrecorded.get_mut(&endpoint) {
                *n -= counted;
                if *n <= 0 {
                    view.unrecorded.remove(&endpoint);
                }
            }
        }
    }

    async fn count(
        &self,
        batch: &[AttemptRecord],
        moved: &HashSet<Uuid>,
        foreseen: &mut HashMap<Uuid, i32>,
    ) {
        self.close_turned_off().await;
        let mut by_endpoint: BTreeMap<Uuid, Vec<bool>> = BTreeMap::new();
        let mut policies = HashMap::new();
        {
            let mut view = self.view.lock().expect("breaker lock");
            for record in batch {
                view.probes.remove(&record.notification_id);
                let Some(policy) = view.policies.get(&record.endpoint_id).copied() else {
                    continue;
                };
                let error = record.error_code.as_deref();
                // Another receiver's answer (a per-notification URL not
                // under the endpoint's) says nothing of this circuit.
                if !record.tells_of_endpoint || !says_anything(record.status_code, error) {
                    continue;
                }
                if counts(record.status_code, error) {
                    *foreseen.entry(record.endpoint_id).or_default() += 1;
                }
                if !moved.contains(&record.notification_id) {
                    continue;
                }
                policies.insert(record.endpoint_id, policy);
                by_endpoint
                    .entry(record.endpoint_id)
                    .or_default()
                    .push(counts(record.status_code, error));
            }
            // Nothing to write for an endpoint whose circuit is clean and
            // that only answered (nearly every batch).
            by_endpoint.retain(|endpoint, counted| {
                counted.iter().any(|c| *c) || view.circuits.contains_key(endpoint)
            });
        }
        if by_endpoint.is_empty() {
            return;
        }
        for _ in 0..TRIES {
            let endpoints: Vec<Uuid> = by_endpoint.keys().copied().collect();
            let stored = match self.store.circuits_of(&endpoints).await {
                Ok(stored) => stored.into_iter().collect::<HashMap<_, _>>(),
                Err(error) => {
                    tracing::warn!(%error, "cannot read circuits; these attempts are not counted");
                    return;
                }
            };
            let now = self.now();
            let mut done = Vec::new();
            for (endpoint, counted) in &by_endpoint {
                let seen = stored.get(endpoint).copied().unwrap_or_default();
                let Some((new, change)) =
                    seen.after_attempts(counted, policies[endpoint], now, draw_factor())
                else {
                    self.remember(*endpoint, seen);
                    done.push(*endpoint);
                    continue;
                };
                match self.set(*endpoint, &seen, &new, change).await {
                    // Another process changed it since the read: read again.
                    Some(false) => {}
                    Some(true) => done.push(*endpoint),
                    None => return,
                }
            }
            for endpoint in done {
                by_endpoint.remove(&endpoint);
            }
            if by_endpoint.is_empty() {
                return;
            }
        }
    }

    /// Closes the circuits of endpoints whose breaker was turned off.
    async fn close_turned_off(&self) {
        let off: Vec<Uuid> = {
            let mut view = self.view.lock().expect("breaker lock");
            view.turned_off.drain().collect()
        };
        if off.is_empty() {
            return;
        }
        let Ok(stored) = self.store.circuits_of(&off).await else {
            return;
        };
        for (endpoint, seen) in stored {
            if let Some((new, change)) = seen.turned_off(self.now()) {
                self.set(endpoint, &seen, &new, change).await;
            }
        }
    }

    /// Compare-and-sets one circuit with its event; `None` if the store
    /// failed.
    async fn set(
        &self,
        endpoint: Uuid,
        seen: &Circuit,
        new: &Circuit,
        change: Change,
    ) -> Option<bool> {
        let event = match change {
            Change::Opened if seen.state == State::Closed => Some(("open", new)),
            Change::Closed => Some(("closed", seen)),
            _ => None,
        }
        .filter(|_| self.operator)
        .and_then(|(state, c)| {
            Some(OperatorEvent::circuit(
                &CircuitChange {
                    endpoint_id: endpoint,
                    state,
                    opened_at: c.opened_at?,
                    next_probe_at: new.next_probe_at,
                },
                self.now(),
            ))
        });
        match self
            .store
            .set_circuit(endpoint, seen, new, event.as_ref())
            .await
        {
            Ok(true) => {
                self.remember(endpoint, *new);
                let state = match change {
                    Change::Opened => Some("open"),
                    Change::Closed => Some("closed"),
                    Change::Counted => None,
                };
                if let Some(state) = state {
                    metrics::counter!("hookd_circuit_transitions_total", "state" => state)
                        .increment(1);
                    tracing::info!(endpoint_id = %endpoint, state, next_probe_at = ?new.next_probe_at, "circuit {state}");
                }
                Some(true)
            }
            Ok(false) => Some(false),
            Err(error) => {
                tracing::warn!(%error, endpoint_id = %endpoint, "cannot write a circuit");
                None
            }
        }
    }

    fn remember(&self, endpoint: Uuid, circuit: Circuit) {
        let mut view = self.view.lock().expect("breaker lock");
        view.writes += 1;
        let writes = view.writes;
        view.written.insert(endpoint, writes);
        if circuit.is_clean() {
            view.circuits.remove(&endpoint);
        } else {
            view.circuits.insert(endpoint, circuit);
        }
    }
}
