//! The breaker's timer in each dispatcher: reads the circuits (the view),
//! claims the probes that are due, and does the releases owed.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::{Breaker, View, REFRESH, RELEASE_PAGE};
use crate::domain::breaker::{draw_factor, Change, Circuit, State};
use crate::domain::receiver_url::tells_of_endpoint;
use crate::store::breaker::PendingOf;
use crate::telemetry::failures::{warn_once_per_run, FailureRun};

/// Pending notifications looked at for a probe: the earliest not being
/// delivered by some process is sent.
const PROBE_CANDIDATES: i64 = 16;
/// Pages of candidates looked at before a probe gives up for this period
/// (each page's rows are read to tell their URLs).
const PROBE_PAGES: usize = 8;

/// How long until the next look, given when the next probe or release is
/// due. Nothing due (no circuit open, probing or owing a release, or the
/// read failed): the view is read again a `REFRESH` away, not at once.
/// Something due: at its time, no sooner than 50 ms and no later than a
/// `REFRESH`.
fn next_turn_in(next: Option<DateTime<Utc>>, now: DateTime<Utc>) -> Duration {
    match next {
        None => REFRESH,
        Some(at) => (at - now)
            .to_std()
            .unwrap_or(Duration::ZERO)
            .clamp(Duration::from_millis(50), REFRESH),
    }
}

impl Breaker {
    /// Reads the view, probes and releases what is due, until `shutdown`.
    pub(in crate::dispatcher) async fn run(
        self: Arc<Self>,
        wake: Arc<Notify>,
        shutdown: CancellationToken,
    ) {
        let mut reading = FailureRun::default();
        loop {
            let wait = next_turn_in(self.turn(&wake, &mut reading).await, self.now());
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// One look: returns when the next probe or release is due. `reading`
    /// says a run of failures to read the circuits once.
    async fn turn(&self, wake: &Notify, reading: &mut FailureRun) -> Option<DateTime<Utc>> {
        let read_after = self.view.lock().expect("breaker lock").writes;
        let circuits = match self.store.circuits().await {
            Ok(circuits) => circuits,
            Err(error) => {
                warn_once_per_run!(reading, %error, "cannot read circuits; trying again every second");
                return None;
            }
        };
        if reading.succeeded() {
            tracing::info!("reads circuits again");
        }
        let (mut open, mut probing) = (0, 0);
        for (_, circuit) in &circuits {
            match circuit.state {
                State::Open => open += 1,
                State::Probing => probing += 1,
                State::Closed => {}
            }
        }
        metrics::gauge!("hookd_circuits", "state" => "open").set(open as f64);
        metrics::gauge!("hookd_circuits", "state" => "probing").set(probing as f64);
        {
            let mut view = self.view.lock().expect("breaker lock");
            let View {
                circuits: known,
                written,
                ..
            } = &mut *view;
            // What this process wrote since the read began stays as written.
            let mine: HashMap<Uuid, Option<Circuit>> = written
                .iter()
                .filter(|(_, at)| **at > read_after)
                .map(|(endpoint, _)| (*endpoint, known.get(endpoint).copied()))
                .collect();
            written.clear();
            *known = circuits.iter().copied().collect();
            for (endpoint, circuit) in mine {
                match circuit {
                    Some(circuit) => known.insert(endpoint, circuit),
                    None => known.remove(&endpoint),
                };
            }
        }
        let now = self.now();
        let mut next: Option<DateTime<Utc>> = None;
        for (endpoint, circuit) in circuits {
            if circuit.probe_due(now) {
                self.probe(endpoint, &circuit, now, wake).await;
            } else if circuit.release_due(now) {
                self.release(endpoint, &circuit, now).await;
            }
            let at = match circuit.state {
                State::Open => circuit.next_probe_at,
                State::Probing => circuit.probe_until,
                State::Closed => circuit.release_at,
            };
            next = match (next, at) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        next
    }

    /// The notification to probe `endpoint` with: the earliest pending one
    /// that no process is delivering (the store does not know the leases,
    /// and a lease taken over here would send one notification twice at
    /// once: an attempt may outlast an open period; those leased are
    /// parked or recorded by their holder) and that goes to the endpoint's
    /// own URL or one under it (#47: a per-notification URL elsewhere is
    /// another receiver, whose answer says nothing of this circuit).
    ///
    /// Looks at `PROBE_PAGES` pages of candidates, reading their URLs; if
    /// every one went elsewhere (more than a few pages of them due first
    /// would otherwise keep the endpoint from ever being probed), at the
    /// earliest of those without a URL of their own, which always tell of
    /// the endpoint. `Err` when the store or the index cannot say: another
    /// process will probe.
    async fn probe_candidate(
        &self,
        endpoint: Uuid,
        now: DateTime<Utc>,
    ) -> Result<Option<(Uuid, DateTime<Utc>)>, ()> {
        match self.probe_among(endpoint, PendingOf::All, now).await? {
            Some(found) => Ok(Some(found)),
            None => {
                self.probe_among(endpoint, PendingOf::WithoutOwnUrl, now)
                    .await
            }
        }
    }

    /// `probe_candidate` among `which` of the endpoint's pending
    /// notifications: `PROBE_PAGES` pages at most.
    async fn probe_among(
        &self,
        endpoint: Uuid,
        which: PendingOf,
        now: DateTime<Utc>,
    ) -> Result<Option<(Uuid, DateTime<Utc>)>, ()> {
        let mut after = None;
        for _ in 0..PROBE_PAGES {
            let candidates = self
                .store
                .pending_of(endpoint, which, after, now, PROBE_CANDIDATES)
                .await
                .map_err(|error| {
                    tracing::warn!(%error, endpoint_id = %endpoint, "cannot find a notification to probe with; another process will");
                })?;
            let Some(last) = candidates.last().copied() else {
                return Ok(None);
            };
            after = Some((last.1, last.0));
            // (None waits behind its key's head: `pending_of` leaves those
            // out, as no probe.)
            let tells = match which {
                PendingOf::All => Some(self.telling_of(endpoint, &candidates).await?),
                // None has a URL of its own.
                PendingOf::WithoutOwnUrl => None,
            };
            for (id, due_at) in candidates {
                if tells.as_ref().is_some_and(|tells| !tells.contains(&id)) {
                    continue;
                }
                match self.due.leased(id, now).await {
                    Ok(false) => return Ok(Some((id, due_at))),
                    Ok(true) => continue,
                    Err(error) => {
                        tracing::warn!(%error, endpoint_id = %endpoint, "cannot tell whether the probe is being delivered; another process will probe");
                        return Err(());
                    }
                }
            }
        }
        Ok(None)
    }

    /// Which of `candidates` go to the endpoint's own URL or one under it
    /// (their rows read for their URLs).
    async fn telling_of(
        &self,
        endpoint: Uuid,
        candidates: &[(Uuid, DateTime<Utc>)],
    ) -> Result<HashSet<Uuid>, ()> {
        let ids: Vec<Uuid> = candidates.iter().map(|(id, _)| *id).collect();
        let never_current = |_: Uuid, _: i64| false;
        let loaded = self
            .delivery
            .load_claimed(&ids, &never_current)
            .await
            .map_err(|error| {
                tracing::warn!(%error, endpoint_id = %endpoint, "cannot read the probe's candidates; another process will probe");
            })?;
        let own = loaded
            .endpoints
            .iter()
            .find(|e| e.id == endpoint)
            .and_then(|e| url::Url::parse(&e.url).ok());
        Ok(loaded
            .notifications
            .iter()
            .filter(|n| tells_of_endpoint(n.url.as_deref(), own.as_ref()))
            .map(|n| n.id)
            .collect())
    }

    /// Claims the probe of an open circuit; the winner hands the
    /// endpoint's earliest due notification to its dispatcher.
    async fn probe(&self, endpoint: Uuid, seen: &Circuit, now: DateTime<Utc>, wake: &Notify) {
        let probing = seen.probing(now + self.lease);
        if self.set(endpoint, seen, &probing, Change::Counted).await != Some(true) {
            return;
        }
        let earliest = match self.probe_candidate(endpoint, now).await {
            Ok(earliest) => earliest,
            Err(()) => return,
        };
        let Some((id, _)) = earliest else {
            // Nothing held: open again, and the next notification waits
            // for the next probe.
            let again = probing.nothing_to_probe(now, draw_factor());
            self.set(endpoint, &probing, &again, Change::Counted).await;
            return;
        };
        if let Err(error) = self
            .due
            .add_leased(&[id], probing.probe_until.unwrap_or(now))
            .await
        {
            tracing::warn!(%error, endpoint_id = %endpoint, "cannot lease the probe; another process will probe when this one's claim lapses");
            return;
        }
        let always = |_: Uuid, _: i64| true;
        let row = match self.delivery.load_claimed(&[id], &always).await {
            Ok(claimed) => claimed.notifications.into_iter().next(),
            Err(error) => {
                tracing::warn!(%error, "cannot load the probe; its lease will expire");
                None
            }
        };
        let Some(row) = row else {
            // Gone since it was chosen (cancelled, or waiting behind its
            // key again): open again, for the next probe to choose, rather
            // than probing until the lease runs out with nothing sent.
            tracing::info!(endpoint_id = %endpoint, notification_id = %id, "the probe's notification cannot be sent now; the circuit opens again");
            let again = probing.nothing_to_probe(now, draw_factor());
            self.set(endpoint, &probing, &again, Change::Counted).await;
            return;
        };
        tracing::info!(endpoint_id = %endpoint, notification_id = %id, "circuit probing");
        metrics::counter!("hookd_circuit_transitions_total", "state" => "probing").increment(1);
        self.view.lock().expect("breaker lock").probes.insert(id);
        self.ready.lock().expect("breaker lock").push(row);
        self.probed.notify_one();
        wake.notify_one();
    }

    /// Moves the endpoint's held notifications back to their due times, in
    /// pages in due order, then counts the release done. Each page is
    /// marked released first, so that a claim of one finds it on the
    /// backlog lane (`domain::lane`), not ahead of fresh notifications.
    async fn release(&self, endpoint: Uuid, seen: &Circuit, now: DateTime<Utc>) {
        let mut after = None;
        let mut moved = 0;
        loop {
            let page = match self
                .store
                .pending_of(endpoint, PendingOf::All, after, now, RELEASE_PAGE)
                .await
            {
                Ok(page) => page,
                Err(error) => {
                    tracing::warn!(%error, endpoint_id = %endpoint, "cannot read the held notifications; the release is tried again");
                    return;
                }
            };
            let ids: Vec<Uuid> = page.iter().map(|(id, _)| *id).collect();
            if let Err(error) = self.store.mark_released(&ids).await {
                tracing::warn!(%error, endpoint_id = %endpoint, "cannot mark the held notifications released; the release is tried again");
                return;
            }
            if let Err(error) = self.due.add_marked(&page).await {
                tracing::warn!(%error, endpoint_id = %endpoint, "cannot release held notifications; tried again");
                return;
            }
            moved += page.len();
            after = page.last().map(|(id, at)| (*at, *id));
            if (page.len() as i64) < RELEASE_PAGE {
                break;
            }
        }
        tracing::info!(endpoint_id = %endpoint, moved, "released held notifications");
        let released = seen.released(now, self.lease);
        self.set(endpoint, seen, &released, Change::Counted).await;
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use chrono::{TimeZone, Utc};

    use super::{next_turn_in, REFRESH};

    #[test]
    fn with_nothing_due_the_circuits_are_read_again_a_second_later_not_at_once() {
        let now = Utc.with_ymd_and_hms(2026, 11, 26, 12, 0, 0).unwrap();
        assert_eq!(next_turn_in(None, now), REFRESH);
    }

    #[test]
    fn a_probe_due_is_looked_at_on_its_time_never_sooner_than_50_ms_nor_later_than_a_refresh() {
        let now = Utc.with_ymd_and_hms(2026, 11, 26, 12, 0, 0).unwrap();
        let at = |ms| Some(now + chrono::Duration::milliseconds(ms));
        assert_eq!(next_turn_in(at(300), now), Duration::from_millis(300));
        assert_eq!(next_turn_in(at(-5_000), now), Duration::from_millis(50));
        assert_eq!(next_turn_in(at(10), now), Duration::from_millis(50));
        assert_eq!(next_turn_in(at(60_000), now), REFRESH);
    }
}
