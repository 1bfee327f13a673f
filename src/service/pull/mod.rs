//! Pull consumption (docs/design.md §10): consumers take due notifications of a
//! pull endpoint under a lease (long-polling when nothing is due), then ack,
//! nack or extend with the lease's receipt. Each lease is one attempt,
//! recorded like a push attempt when it ends; a lease that runs out is a
//! failed attempt (`lease_expired`) that ended with the lease, and the
//! schedule goes on from there. A pull records the leases that ran out
//! among the rows it reads, and takes them back once due again; the sweep
//! records those nobody pulls. A notification no consumer takes within
//! `pull.max_wait` of its due time fails `not_pulled`. A disabled endpoint
//! holds its notifications: none is offered (a pull is refused, one
//! already waiting takes nothing) and none fails, and its enabling moves
//! their due times on by the time it was disabled (`domain::lease::
//! due_after_hold`) and wakes its consumers.
//!
//! Waiting consumers are woken by this process's writes at once, and by
//! other processes' through the store's signal (`PullStore::signal_pull`);
//! besides, each waits no longer than the endpoint's next due time, so a
//! notification that becomes due by the clock is taken on time too.

mod leases;
mod tokens;
mod unanswered;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::Utc;
use tokio::sync::Notify;
use tokio::time::Instant;
use uuid::Uuid;

use super::{Service, ServiceError};
use crate::domain::lease::not_pulled_checks;
use crate::domain::problem::{ErrorCode, Problem};
use crate::domain::pull::{new_consumer_token, Delivery, Take};
use crate::store::endpoints::{Endpoint, EndpointRef};
use crate::store::pull::Taken;
use crate::telemetry::failures::{warn_once_per_run, FailureRun};

use leases::EXPIRE_BATCH;
pub use leases::{End, Ended, Scope};
pub use tokens::{ConsumerTokens, NotLoaded};

/// Consumers waiting on an endpoint, by endpoint. An entry lives while
/// someone waits on it.
#[derive(Default)]
pub(super) struct Waiters {
    waiting: Mutex<HashMap<Uuid, Arc<Notify>>>,
    /// Set at shutdown: nobody waits any more.
    closed: std::sync::atomic::AtomicBool,
}

/// One consumer's place among an endpoint's waiters, given up when
/// dropped, also when the request is abandoned mid-wait.
struct Joined<'a> {
    waiters: &'a Waiters,
    endpoint: Uuid,
    notify: Option<Arc<Notify>>,
}

impl<'a> Joined<'a> {
    fn new(waiters: &'a Waiters, endpoint: Uuid) -> Self {
        let notify = waiters
            .waiting
            .lock()
            .expect("waiters lock")
            .entry(endpoint)
            .or_default()
            .clone();
        Self {
            waiters,
            endpoint,
            notify: Some(notify),
        }
    }

    fn notify(&self) -> &Notify {
        self.notify.as_deref().expect("held until dropped")
    }
}

impl Drop for Joined<'_> {
    fn drop(&mut self) {
        let mut waiting = self.waiters.waiting.lock().expect("waiters lock");
        drop(self.notify.take());
        if waiting
            .get(&self.endpoint)
            .is_some_and(|n| Arc::strong_count(n) == 1)
        {
            waiting.remove(&self.endpoint);
        }
    }
}

impl Waiters {
    /// Wakes every waiter for good: shutdown.
    fn close(&self) {
        self.closed.store(true, std::sync::atomic::Ordering::SeqCst);
        self.wake(None);
    }

    fn is_closed(&self) -> bool {
        self.closed.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// How many consumers of this process wait on `endpoint` now.
    fn count(&self, endpoint: Uuid) -> usize {
        let waiting = self.waiting.lock().expect("waiters lock");
        waiting
            .get(&endpoint)
            .map_or(0, |n| Arc::strong_count(n) - 1)
    }

    /// Wakes the consumers waiting on `endpoint`, or on every endpoint.
    pub(super) fn wake(&self, endpoint: Option<Uuid>) {
        let waiting = self.waiting.lock().expect("waiters lock");
        match endpoint {
            Some(id) => {
                if let Some(notify) = waiting.get(&id) {
                    notify.notify_waiters();
                }
            }
            None => waiting.values().for_each(|n| n.notify_waiters()),
        }
    }
}

impl Service {
    /// The pull endpoint `by` names, if the caller may consume it.
    async fn pull_endpoint(
        &self,
        by: &EndpointRef,
        consumer: Option<Uuid>,
    ) -> Result<Endpoint, ServiceError> {
        // A consumer learns nothing of other endpoints, not even whether
        // they exist.
        let endpoint = self.store.find_endpoint(by).await?.ok_or_else(|| {
            if consumer.is_some() {
                not_yours()
            } else {
                Problem::not_found("endpoint")
            }
        })?;
        if consumer.is_some_and(|c| c != endpoint.id) {
            return Err(not_yours().into());
        }
        if endpoint.delivery != Delivery::Pull {
            return Err(Problem::conflict(
                ErrorCode::NotPull,
                "this endpoint is push: hookd POSTs its notifications; PATCH it to \"delivery\": \"pull\" to pull them",
            )
            .into());
        }
        Ok(endpoint)
    }

    /// How many consumers of this process wait on the endpoint now.
    pub fn pull_waiters(&self, endpoint: Uuid) -> usize {
        self.pulls.count(endpoint)
    }

    /// The id of the pull endpoint `by` names, if the caller may consume it.
    pub async fn pull_endpoint_id(
        &self,
        by: &EndpointRef,
        consumer: Option<Uuid>,
    ) -> Result<Uuid, ServiceError> {
        Ok(self.pull_endpoint(by, consumer).await?.id)
    }

    /// Takes up to `take.max` due notifications of the endpoint, waiting up
    /// to `take.wait` for the first.
    pub async fn pull(
        &self,
        by: &EndpointRef,
        consumer: Option<Uuid>,
        take: Take,
    ) -> Result<(Uuid, Vec<Taken>), ServiceError> {
        let endpoint = self.pull_endpoint(by, consumer).await?;
        if endpoint.disabled {
            return Err(Problem::conflict(
                ErrorCode::EndpointDisabled,
                "the endpoint is disabled: enable it to pull",
            )
            .into());
        }
        let until = Instant::now() + take.wait;
        let mut behind = None;
        loop {
            // Join before looking, so a signal between the look and the
            // wait is not missed.
            let joined = Joined::new(&self.pulls, endpoint.id);
            let step = self
                .pull_once(endpoint.id, take, until, joined.notify(), &mut behind)
                .await;
            drop(joined);
            if let Some(taken) = step? {
                record_taken(&taken, self.now());
                return Ok((endpoint.id, taken));
            }
        }
    }

    /// One look: what was taken (`Some`, possibly empty once the wait is
    /// over), or `None` after waiting for a signal or the next due time.
    /// `behind`: how long the last look waited behind rows due yet not
    /// taken (`behind_held`), `None` once something changed.
    async fn pull_once(
        &self,
        endpoint: Uuid,
        take: Take,
        until: Instant,
        notify: &Notify,
        behind: &mut Option<Duration>,
    ) -> Result<Option<Vec<Taken>>, ServiceError> {
        let woken = notify.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        let operator = self.settings.operator.enabled();
        let taken = self
            .pull
            .take(
                endpoint,
                i64::from(take.max),
                take.lease,
                Box::new(move |row| leases::pick(row, operator)),
            )
            .await?;
        let took = taken.len();
        let taken = self.fail_unopened(taken).await?;
        if taken.is_empty() && took > 0 {
            // Every one taken failed to open and is rescheduled: look again.
            return Ok(None);
        }
        if !taken.is_empty() || Instant::now() >= until || self.pulls.is_closed() {
            return Ok(Some(taken));
        }
        let wait_until = match self.pull.next_pull_due(endpoint).await? {
            // Due, yet not taken: rows another transaction holds (a
            // consumer taking them this instant, the sweep, `end_unpulled`),
            // looked at again shortly, then less and less often while
            // that lasts. A lease that ran out is no reason: the take
            // recorded it, and it is due again later.
            Some(due) if due <= self.now() => {
                let wait = behind_held(*behind);
                *behind = Some(wait);
                Instant::now() + wait
            }
            Some(due) => {
                *behind = None;
                Instant::now() + (due - self.now()).to_std().unwrap_or_default()
            }
            None => {
                *behind = None;
                until
            }
        };
        tokio::select! {
            // Something changed: the next wait behind held rows is short.
            _ = &mut woken => *behind = None,
            _ = tokio::time::sleep_until(wait_until.min(until)) => {}
        }
        Ok(None)
    }

    /// A new consumer token for the pull endpoint; the one before stops
    /// working, in this process at once and in others within a second or
    /// two.
    pub async fn issue_consumer_token(
        &self,
        by: &EndpointRef,
    ) -> Result<(Uuid, String), ServiceError> {
        let endpoint = self.pull_endpoint(by, None).await?;
        let token = new_consumer_token();
        let digest = crate::config::digest(&token);
        if !self.pull.set_consumer_token(endpoint.id, &digest).await? {
            return Err(Problem::not_found("endpoint").into());
        }
        self.tokens.issued(endpoint.id, digest).await;
        Ok((endpoint.id, token))
    }

    /// Makes the endpoint's pending notifications follow its (new) mode.
    pub(super) async fn follow_delivery(&self, endpoint: &Endpoint) -> Result<(), ServiceError> {
        if endpoint.delivery == Delivery::Push {
            self.end_held_leases(endpoint.id).await?;
        }
        let moved = self
            .pull
            .follow_delivery(endpoint.id, endpoint.delivery)
            .await?;
        match endpoint.delivery {
            Delivery::Pull => {
                let ids: Vec<Uuid> = moved.iter().map(|(id, _)| *id).collect();
                self.unindex(&ids).await;
                self.signal_pull(&[endpoint.id]).await;
            }
            Delivery::Push => {
                // A push endpoint has no consumers: the switch's commit
                // deleted its token (`pull::switch_revokes_token`), so a
                // switch back to pull does not bring it back.
                self.reread_consumer_tokens().await;
                self.index_due(&moved).await
            }
        }
        Ok(())
    }

    /// Wakes the consumers of these endpoints, here and in every process.
    pub(crate) async fn signal_pull(&self, endpoints: &[Uuid]) {
        if endpoints.is_empty() {
            return;
        }
        for endpoint in endpoints {
            self.pulls.wake(Some(*endpoint));
        }
        if let Err(error) = self.pull.signal_pull(endpoints).await {
            // Consumers of other processes still look at their next due time.
            tracing::warn!(%error, "could not signal other processes' pull consumers");
        }
    }

    /// What keeps pull consumption going in the background, until
    /// `shutdown`: signals from other processes, leases that run out (a
    /// backstop: a pull records those it meets), notifications left pull
    /// after their endpoint became push, and those no consumer took within
    /// `pull.max_wait`.
    pub async fn run_pull(self, shutdown: tokio_util::sync::CancellationToken) {
        let listening = {
            let (service, shutdown) = (self.clone(), shutdown.clone());
            tokio::spawn(async move {
                let pulls = service.pulls.clone();
                let woken = move |endpoint| pulls.wake(endpoint);
                let listen = service.pull.listen_pull(&woken, &shutdown);
                // Connecting may hang on a stalled database: shutdown wins.
                tokio::select! {
                    _ = shutdown.cancelled() => {}
                    _ = listen => {}
                }
            })
        };
        // Apart from the sweeps, which may take a while.
        let tokens = tokio::spawn(self.clone().keep_consumer_tokens(shutdown.clone()));
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut ticks: u64 = 0;
        let mut expiring = FailureRun::default();
        // Ticks are a second apart.
        let unpulled_every = not_pulled_checks(self.settings.pull_max_wait())
            .as_secs()
            .max(1);
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = tick.tick() => {}
            }
            ticks += 1;
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = self.sweep_pull(ticks.is_multiple_of(30), &mut expiring) => {}
            }
            if ticks.is_multiple_of(unpulled_every) {
                tokio::select! {
                    _ = shutdown.cancelled() => break,
                    ended = self.end_unpulled() => match ended {
                        Ok(0) => {}
                        Ok(count) => tracing::info!(
                            count,
                            "failed pull notifications no consumer took within pull.max_wait"
                        ),
                        Err(error) => {
                            tracing::warn!(%error, "could not end pull notifications nobody took")
                        }
                    },
                }
            }
        }
        // Waiting consumers answer now (with what is due, or nothing), so
        // a graceful shutdown does not wait out their long polls.
        self.pulls.close();
        let _ = listening.await;
        let _ = tokens.await;
    }

    /// One round of the background work: leases that ran out, and (with
    /// `strays`) rows left pull on endpoints that are push now, and pending
    /// rows, push or pull, of endpoints deleted meanwhile.
    /// `expiring` says a run of failures to end leases once.
    async fn sweep_pull(&self, strays: bool, expiring: &mut FailureRun) {
        loop {
            match self.expire_leases(None).await {
                Ok(swept) if swept.read as i64 == EXPIRE_BATCH => continue,
                Ok(_) => {
                    if expiring.succeeded() {
                        tracing::info!("ends expired pull leases again");
                    }
                    break;
                }
                Err(error) => {
                    warn_once_per_run!(expiring, %error, "could not end expired pull leases; trying again every second");
                    break;
                }
            }
        }
        if strays {
            match self.pull.adopt_strays(EXPIRE_BATCH).await {
                Ok(moved) => self.index_due(&moved).await,
                Err(error) => tracing::warn!(%error, "could not adopt stray pull rows"),
            }
            match self.pull.cancel_orphans(EXPIRE_BATCH).await {
                Ok(cancelled) if cancelled.is_empty() => {}
                Ok(cancelled) => {
                    tracing::info!(
                        count = cancelled.len(),
                        "cancelled notifications created as their endpoint was deleted"
                    );
                    self.unindex(&cancelled).await;
                }
                Err(error) => tracing::warn!(%error, "could not cancel orphaned notifications"),
            }
        }
    }
}

/// The first wait of a pull behind rows that are due yet not taken (held
/// by another transaction): they are usually free again within
/// milliseconds.
const BEHIND_FIRST: Duration = Duration::from_millis(5);
/// The longest: a row held that long is held by something slow (the sweep
/// or `end_unpulled` over a large backlog), and a waiting pull then costs
/// two queries four times a second, not two hundred.
const BEHIND_MOST: Duration = Duration::from_millis(250);

/// How long a waiting pull waits before it looks again behind rows due yet
/// not taken, after `last` such wait (`None`: the first since something
/// changed): 5 ms, then doubled each time up to 250 ms.
fn behind_held(last: Option<Duration>) -> Duration {
    last.map_or(BEHIND_FIRST, |last| (last * 2).min(BEHIND_MOST))
}

pub(super) fn not_yours() -> Problem {
    Problem::forbidden("this consumer token belongs to another endpoint")
}

fn record_taken(taken: &[Taken], now: chrono::DateTime<Utc>) {
    if taken.is_empty() {
        return;
    }
    metrics::counter!("hookd_pulled_total").increment(taken.len() as u64);
    for row in taken {
        let late = (now - row.due_at).num_microseconds().unwrap_or(0).max(0);
        metrics::histogram!("hookd_pull_lateness_seconds").record(late as f64 / 1e6);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pull_behind_held_rows_backs_off_from_5_ms_to_250_ms() {
        let mut waits = Vec::new();
        let mut last = None;
        for _ in 0..9 {
            let wait = behind_held(last);
            waits.push(wait.as_millis());
            last = Some(wait);
        }
        assert_eq!(waits, [5, 10, 20, 40, 80, 160, 250, 250, 250]);
        // Twenty seconds behind a held row: 85 looks, not 4,000.
        let (mut looks, mut spent, mut last) = (0, Duration::ZERO, None);
        while spent < Duration::from_secs(20) {
            let wait = behind_held(last);
            spent += wait;
            last = Some(wait);
            looks += 1;
        }
        assert!(looks <= 85, "{looks} looks");
    }
}
