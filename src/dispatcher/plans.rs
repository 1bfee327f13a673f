//! The endpoints the dispatcher has prepared (URL parsed, secrets opened and
//! keyed into their HMAC states, headers validated), kept from one claim to
//! the next so that a claim reads and prepares an endpoint only when its row
//! has changed. The row's `version` comes with every claimed
//! notification, so a change made by any process is seen by the next claim.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::delivery::Plan;
use crate::store::delivery::{Claimed, DeliveryEndpoint, DueNotification};

/// Endpoints kept at most. A working set larger than this is read per
/// claim, as it would be without the cache; this bounds the memory (a plan
/// is about a kilobyte).
const CAPACITY: usize = 4096;
/// How long a plan is used without its endpoint being read again even if
/// the version matches: a bound on trusting the version, for a writer that
/// does not raise it (a process of a build before the `version` column
/// during a rolling upgrade, or an operator's hand-written UPDATE).
const FRESH_FOR: chrono::Duration = chrono::Duration::seconds(60);

pub(super) struct Plans {
    entries: HashMap<Uuid, Entry>,
    default_timeout: Duration,
    max_timeout: Duration,
}

/// A claim's notifications with the plan of each of their endpoints.
pub(super) struct Loaded {
    pub notifications: Vec<DueNotification>,
    pub plans: HashMap<Uuid, Arc<Plan>>,
    /// Those the limiter let go before their rows were read, each at its
    /// slot (`screen`): not asked again.
    pub admitted: HashMap<Uuid, DateTime<Utc>>,
}

struct Entry {
    version: i64,
    plan: Arc<Plan>,
    /// When the plan stops being usable: `FRESH_FOR` after it was made, or
    /// earlier when a previous secret in it stops signing.
    until: DateTime<Utc>,
}

impl Plans {
    /// `max_timeout`: the longest an attempt may take in this process, so
    /// that it ends within the lease it was claimed with.
    pub fn new(default_timeout: Duration, max_timeout: Duration) -> Self {
        Self {
            entries: HashMap::new(),
            default_timeout,
            max_timeout,
        }
    }

    /// Whether the plan kept for `id` is of `version` and still usable.
    pub fn current(&self, id: Uuid, version: i64, now: DateTime<Utc>) -> bool {
        self.usable(id, version, now).is_some()
    }

    pub(super) fn usable(&self, id: Uuid, version: i64, now: DateTime<Utc>) -> Option<&Arc<Plan>> {
        self.entries
            .get(&id)
            .filter(|entry| entry.version == version && entry.until > now)
            .map(|entry| &entry.plan)
    }

    /// Prepares and keeps the endpoints a claim read, and finds the others
    /// its notifications need among those kept. An endpoint read for this
    /// claim wins: it may be newer than the version a notification was
    /// loaded with. A notification whose endpoint has no plan (its row is
    /// gone) is not sent.
    /// `admitted`: those the limiter let go before their rows were read.
    pub fn for_claim(
        &mut self,
        claimed: Claimed,
        admitted: HashMap<Uuid, DateTime<Utc>>,
        now: DateTime<Utc>,
    ) -> Loaded {
        // The kept plans first: preparing may make room by dropping some.
        let mut plans: HashMap<Uuid, Arc<Plan>> = HashMap::new();
        for row in &claimed.notifications {
            if plans.contains_key(&row.endpoint_id) {
                continue;
            }
            if let Some(plan) = row
                .endpoint_version
                .and_then(|version| self.usable(row.endpoint_id, version, now))
            {
                plans.insert(row.endpoint_id, plan.clone());
            }
        }
        for endpoint in claimed.endpoints {
            let id = endpoint.id;
            plans.insert(id, self.prepare(endpoint, now));
        }
        Loaded {
            notifications: claimed.notifications,
            plans,
            admitted,
        }
    }

    fn prepare(&mut self, endpoint: DeliveryEndpoint, now: DateTime<Utc>) -> Arc<Plan> {
        let until = endpoint
            .previous_secrets
            .iter()
            .map(|previous| previous.expires_at)
            .filter(|expires_at| *expires_at > now)
            .fold(now + FRESH_FOR, DateTime::min);
        let (id, version) = (endpoint.id, endpoint.version);
        let plan = Arc::new(Plan::new(
            endpoint,
            now,
            self.default_timeout,
            self.max_timeout,
        ));
        if self.entries.len() >= CAPACITY && !self.entries.contains_key(&id) {
            self.entries.retain(|_, entry| entry.until > now);
            if self.entries.len() >= CAPACITY {
                self.entries.clear();
            }
        }
        self.entries.insert(
            id,
            Entry {
                version,
                plan: plan.clone(),
                until,
            },
        );
        plan
    }
}

#[cfg(test)]
pub(super) mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::store::endpoints::PreviousSecret;

    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

    pub(in crate::dispatcher) fn endpoint(
        id: Uuid,
        version: i64,
        previous_until: Option<DateTime<Utc>>,
    ) -> DeliveryEndpoint {
        DeliveryEndpoint {
            id,
            uid: None,
            version,
            url: "http://receiver.test/hook".into(),
            secret: SECRET.into(),
            previous_secrets: previous_until
                .map(|expires_at| PreviousSecret {
                    secret: SECRET.into(),
                    expires_at,
                })
                .into_iter()
                .collect(),
            success_body: None,
            success_filter: None,
            permanent_statuses: Vec::new(),
            schedule_jitter: 0.0,
            rate_limit_per_second: None,
            rate_limit_burst: None,
            fresh_share: None,
            breaker: Default::default(),
            headers: BTreeMap::new(),
            timeout_ms: None,
            max_in_flight: None,
            disabled: false,
            deleted: false,
            pull: false,
            unreadable: None,
        }
    }

    fn read(endpoints: Vec<DeliveryEndpoint>) -> Claimed {
        Claimed {
            notifications: Vec::new(),
            endpoints,
        }
    }

    #[test]
    fn a_kept_plan_is_current_only_at_the_version_it_was_read_at() {
        let mut plans = Plans::new(Duration::from_secs(1), Duration::from_secs(30));
        let now = Utc::now();
        let id = Uuid::now_v7();
        assert!(!plans.current(id, 7, now));
        plans.for_claim(read(vec![endpoint(id, 7, None)]), HashMap::new(), now);
        assert!(plans.current(id, 7, now));
        assert!(!plans.current(id, 8, now), "an updated row is read again");
        assert!(!plans.current(Uuid::now_v7(), 7, now));
        assert!(
            !plans.current(id, 7, now + FRESH_FOR),
            "even an unchanged row is read again after a while"
        );
    }

    #[test]
    fn a_kept_plan_ends_when_a_previous_secret_in_it_stops_signing() {
        let mut plans = Plans::new(Duration::from_secs(1), Duration::from_secs(30));
        let now = Utc::now();
        let (id, expires) = (Uuid::now_v7(), now + chrono::Duration::seconds(5));
        plans.for_claim(
            read(vec![endpoint(id, 1, Some(expires))]),
            HashMap::new(),
            now,
        );
        assert!(plans.current(id, 1, expires - chrono::Duration::milliseconds(1)));
        assert!(!plans.current(id, 1, expires));
    }

    #[test]
    fn the_kept_plans_stay_within_their_capacity() {
        let mut plans = Plans::new(Duration::from_secs(1), Duration::from_secs(30));
        let now = Utc::now();
        let endpoints = (0..CAPACITY + 10)
            .map(|i| endpoint(Uuid::now_v7(), i as i64, None))
            .collect();
        let loaded = plans.for_claim(read(endpoints), HashMap::new(), now);
        assert_eq!(
            loaded.plans.len(),
            CAPACITY + 10,
            "a claim gets every plan it read"
        );
        assert!(plans.entries.len() <= CAPACITY);
    }
}
