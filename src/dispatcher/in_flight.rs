//! What this dispatcher process is delivering now, per endpoint and lane,
//! against each endpoint's in-flight cap, split by lane (`domain::lane`,
//! design §17); the fresh notifications waiting here for a slot
//! (`lanes`); and how long each endpoint's attempts take, which says how
//! long one over the cap should wait.

use std::collections::HashMap;
use std::time::Duration;

use uuid::Uuid;

use super::lanes::FreshWaiting;
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
    pub(super) fresh: FreshWaiting,
    latency_ms: HashMap<Uuid, f64>,
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
            fresh: FreshWaiting::default(),
            latency_ms: HashMap::new(),
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
}
