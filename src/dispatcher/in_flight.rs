//! What this dispatcher process is delivering now, per endpoint and lane,
//! against each endpoint's in-flight cap, split by lane (`domain::lane`,
//! design §17); the notifications waiting here for a slot
//! (`lanes`); and how long each endpoint's attempts take, which says how
//! long one over the cap should wait.

use std::collections::HashMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::lanes::Queue;
use crate::domain::lane::{self, Lane};

/// A notification over its endpoint's in-flight cap is given back (not an
/// attempt) until about when a slot should free: the endpoint's average
/// attempt duration times its place in line over the cap, within these
/// bounds. A fast endpoint cycles in milliseconds; a hanging one is looked at
/// every few seconds instead of churning the index.
const MIN_CAP_DEFERRAL: Duration = Duration::from_millis(5);
const MAX_CAP_DEFERRAL: Duration = Duration::from_secs(5);
/// Assumed attempt duration of an endpoint not seen yet.
const FIRST_GUESS_MS: f64 = 50.0;
/// Endpoints whose attempt durations are remembered before idle ones are
/// forgotten.
const MAX_TRACKED_ENDPOINTS: usize = 4096;

/// What this process is delivering now: per endpoint (fresh, backlog),
/// and which ids in which lane; the fresh ones waiting for a slot; and how
/// long each endpoint's attempts have been taking.
pub(super) struct InFlight {
    by_endpoint: HashMap<Uuid, [u32; 2]>,
    pub(super) ids: HashMap<Uuid, Lane>,
    /// Fresh ones, and backlog ones, waiting here for a slot (`lanes`).
    pub(super) fresh: Queue,
    pub(super) backlog: Queue,
    latency_ms: HashMap<Uuid, f64>,
    /// Per endpoint and line, when the last one given back to the index
    /// was told to come back (`defer`).
    lines: HashMap<(Uuid, Lane), DateTime<Utc>>,
    /// `hookd_deliveries_in_flight`, looked up in the metrics registry once
    /// rather than twice per delivery (0.6 % of the dispatcher's CPU in the
    /// drain's profile, session 14). Made after the recorder is installed.
    gauge: metrics::Gauge,
}

impl Default for InFlight {
    fn default() -> Self {
        Self {
            by_endpoint: HashMap::new(),
            ids: HashMap::new(),
            fresh: Queue::default(),
            backlog: Queue::default(),
            latency_ms: HashMap::new(),
            lines: HashMap::new(),
            gauge: metrics::gauge!("hookd_deliveries_in_flight"),
        }
    }
}

impl InFlight {
    /// Takes a slot of `endpoint`'s `cap` for `id` of `lane`, if the cap,
    /// split by `share` while fresh work waits here, has room for it.
    pub(super) fn try_start(
        &mut self,
        endpoint: Uuid,
        (id, lane): (Uuid, Lane),
        (cap, share): (u32, f64),
    ) -> bool {
        let waiting = self.fresh.waits(endpoint);
        let counts = self.by_endpoint.entry(endpoint).or_default();
        if !lane::has_room(lane, *counts, cap, share, waiting) {
            return false;
        }
        counts[lane.index()] += 1;
        self.ids.insert(id, lane);
        self.gauge.set(self.ids.len() as f64);
        true
    }

    /// When the `place`-th notification waiting for `endpoint` (cap `cap`)
    /// should be looked at again.
    pub(super) fn deferral(&self, endpoint: Uuid, place: u32, cap: u32) -> Duration {
        let typical = self
            .latency_ms
            .get(&endpoint)
            .copied()
            .unwrap_or(FIRST_GUESS_MS);
        let wait = typical * (1.0 + f64::from(place) / f64::from(cap.max(1)));
        Duration::from_secs_f64(wait / 1000.0).clamp(MIN_CAP_DEFERRAL, MAX_CAP_DEFERRAL)
    }

    /// When one found over `endpoint`'s cap in `line` (`slots` of it, with
    /// `ahead` waiting here before it) should be looked at again: a slot's
    /// worth of the endpoint's attempt duration after the last one this
    /// line deferred, whichever claim found that one, and no sooner than
    /// its place behind `ahead` says. Counted per claim instead, each claim
    /// of a backlog over the cap sent its deferred ones back at the times
    /// of the claim before it: the dispatcher claimed, loaded and put back
    /// the whole backlog every few milliseconds, and a receiver capped at
    /// 32 got half the deliveries it could take (`BENCHMARKS.md`).
    pub(super) fn defer(
        &mut self,
        (endpoint, line): (Uuid, Lane),
        ahead: u32,
        slots: u32,
        now: DateTime<Utc>,
    ) -> DateTime<Utc> {
        let typical = self
            .latency_ms
            .get(&endpoint)
            .copied()
            .unwrap_or(FIRST_GUESS_MS);
        let step = typical / f64::from(slots.max(1));
        let own_place = typical + step * f64::from(ahead + 1);
        let after_last = self
            .lines
            .get(&(endpoint, line))
            .and_then(|at| (*at - now).num_microseconds())
            .filter(|us| *us > 0)
            .map(|us| us as f64 / 1000.0 + step);
        let ms = after_last.map_or(own_place, |after| after.max(own_place));
        let wait = Duration::from_secs_f64(ms / 1000.0).clamp(MIN_CAP_DEFERRAL, MAX_CAP_DEFERRAL);
        let at = now + chrono::Duration::from_std(wait).unwrap_or_default();
        if self.lines.len() >= MAX_TRACKED_ENDPOINTS {
            self.lines.retain(|_, at| *at > now);
        }
        self.lines.insert((endpoint, line), at);
        at
    }

    pub(super) fn observe(&mut self, endpoint: Uuid, took: Duration) {
        let ms = took.as_secs_f64() * 1000.0;
        let average = self.latency_ms.entry(endpoint).or_insert(ms);
        *average = 0.8 * *average + 0.2 * ms;
        if self.latency_ms.len() > MAX_TRACKED_ENDPOINTS {
            // Forget endpoints with nothing in flight: they start again from
            // their next attempt's duration. Keeps the map to the endpoints
            // this process is busy with, however many exist.
            let busy = &self.by_endpoint;
            self.latency_ms
                .retain(|id, _| *id == endpoint || busy.contains_key(id));
        }
    }

    /// Deliveries to `endpoint` in flight now.
    pub(super) fn count(&self, endpoint: Uuid) -> u32 {
        self.by_endpoint
            .get(&endpoint)
            .map_or(0, |[fresh, backlog]| fresh + backlog)
    }

    pub(super) fn finish(&mut self, endpoint: Uuid, id: Uuid) {
        let Some(lane) = self.ids.remove(&id) else {
            return;
        };
        if let Some(counts) = self.by_endpoint.get_mut(&endpoint) {
            counts[lane.index()] = counts[lane.index()].saturating_sub(1);
            if *counts == [0, 0] {
                self.by_endpoint.remove(&endpoint);
            }
        }
        self.gauge.set(self.ids.len() as f64);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use uuid::Uuid;

    use super::{InFlight, MAX_TRACKED_ENDPOINTS};
    use crate::domain::lane::Lane;

    #[test]
    fn attempt_durations_are_kept_for_a_bounded_number_of_endpoints() {
        let mut in_flight = InFlight::default();
        let busy = Uuid::now_v7();
        assert!(in_flight.try_start(busy, (Uuid::now_v7(), Lane::Fresh), (8, 0.5)));
        for _ in 0..3 * MAX_TRACKED_ENDPOINTS {
            in_flight.observe(Uuid::now_v7(), Duration::from_millis(5));
        }
        in_flight.observe(busy, Duration::from_millis(5));
        assert!(in_flight.latency_ms.len() <= MAX_TRACKED_ENDPOINTS + 1);
        assert!(in_flight.latency_ms.contains_key(&busy));
    }

    #[test]
    fn those_over_the_cap_come_back_a_slot_apart_across_claims_not_at_the_same_times() {
        let mut in_flight = InFlight::default();
        let endpoint = Uuid::now_v7();
        in_flight.observe(endpoint, Duration::from_millis(32));
        let now = chrono::Utc::now();
        // Cap 32, 32 ms an attempt: a slot frees every millisecond.
        let first_claim: Vec<_> = (0..100)
            .map(|_| in_flight.defer((endpoint, Lane::Backlog), 0, 32, now))
            .collect();
        let second_claim: Vec<_> = (0..100)
            .map(|_| in_flight.defer((endpoint, Lane::Backlog), 0, 32, now))
            .collect();
        let ms = |at: chrono::DateTime<chrono::Utc>| (at - now).num_microseconds().unwrap() / 1000;
        assert_eq!(ms(first_claim[0]), 33, "one attempt, then its place");
        assert_eq!(ms(first_claim[99]), 132);
        assert_eq!(ms(second_claim[0]), 133, "after the first claim's last");
        assert_eq!(ms(second_claim[99]), 232);
        // Another lane, or another endpoint, has a line of its own; one
        // with a waiting line here starts behind it.
        let fresh = in_flight.defer((endpoint, Lane::Fresh), 10, 32, now);
        assert_eq!(ms(fresh), 43);
        // Once the last one's time has passed, a line starts over.
        let later = now + chrono::Duration::seconds(1);
        let again = in_flight.defer((endpoint, Lane::Backlog), 0, 32, later);
        assert_eq!((again - later).num_milliseconds(), 33);
    }
}
