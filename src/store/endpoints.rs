//! Endpoints: a receiver's URL, signing secrets and delivery policy.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::domain::ordering::{KeyOrdering, OnFailure};
use crate::domain::payload_filter::PayloadFilter;
use crate::domain::pull::Delivery;
use crate::domain::schedule::Schedule;

/// How a path names an endpoint: by id or by the producer's uid.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum EndpointRef {
    Id(Uuid),
    Uid(String),
}

impl EndpointRef {
    pub fn parse(text: &str) -> Self {
        match Uuid::parse_str(text) {
            Ok(id) => EndpointRef::Id(id),
            Err(_) => EndpointRef::Uid(text.to_string()),
        }
    }

    /// Whether this can name any endpoint at all: a uid that no endpoint
    /// could have (bad characters, a NUL byte) is never looked up.
    pub fn is_possible(&self) -> bool {
        match self {
            EndpointRef::Id(_) => true,
            EndpointRef::Uid(uid) => crate::domain::fields::valid_uid(uid),
        }
    }

    /// `(id, uid)` query parameters, exactly one of them set.
    #[cfg(feature = "server")]
    pub(crate) fn as_params(&self) -> (Option<Uuid>, Option<&str>) {
        match self {
            EndpointRef::Id(id) => (Some(*id), None),
            EndpointRef::Uid(uid) => (None, Some(uid)),
        }
    }
}

/// `Debug` shows only identity fields: the row holds signing secrets.
#[derive(Clone)]
pub struct Endpoint {
    pub id: Uuid,
    pub uid: Option<String>,
    /// The tenant it belongs to; events fan out within one owner.
    pub owner: Option<String>,
    /// Where hookd POSTs (push); `None` for a pull endpoint.
    pub url: Option<String>,
    /// POSTed by hookd, or taken by consumers (docs/design.md §10).
    pub delivery: Delivery,
    pub description: String,
    pub secret: String,
    /// Rotated-out secrets that still sign until their expiry, newest first.
    pub previous_secrets: Vec<PreviousSecret>,
    pub event_types: Option<Vec<String>>,
    /// A predicate over an event's payload: the endpoint takes only the
    /// events that satisfy it (`domain::payload_filter`).
    pub filter: Option<PayloadFilter>,
    pub schedule_ms: Vec<i64>,
    pub schedule_name: Option<String>,
    /// Each wait of the schedule is scaled by a random factor in
    /// [1 − j, 1 + j] (`domain::jitter`); 0: the schedule exact.
    pub schedule_jitter: f64,
    /// Its whole URL path is a credential (Slack-style webhook URLs):
    /// callers without the `secrets` scope see only the origin
    /// (`domain::receiver_url::mask_url`).
    pub url_secret: bool,
    /// Raised by each revocation of its portal links: a link issued in
    /// another generation is refused (`domain::portal`).
    pub portal_generation: i32,
    /// Its own rate limit (`domain::rate`), both or neither: none means
    /// `dispatcher.default_rate_limit`, if set.
    pub rate_limit_per_second: Option<f64>,
    pub rate_limit_burst: Option<i32>,
    /// Fresh notifications' part of its rate limit, 0 to 1
    /// (`domain::lane`); none: `dispatcher.fresh_share`.
    pub fresh_share: Option<f64>,
    /// The endpoint's circuit breaker settings over `[dispatcher.breaker]`,
    /// or off (`domain::breaker`).
    pub breaker: crate::domain::breaker::Override,
    pub success_body: Option<String>,
    /// A 2xx succeeds only with a JSON body that satisfies it
    /// (`domain::success`); set instead of `success_body`.
    pub success_filter: Option<PayloadFilter>,
    pub permanent_statuses: Vec<i32>,
    pub headers: BTreeMap<String, String>,
    pub timeout_ms: Option<i32>,
    pub max_in_flight: Option<i32>,
    /// Whether it attempts the notifications of one `order_key` one at a
    /// time, in creation order (`domain::ordering`).
    pub ordering: KeyOrdering,
    /// What a failed or cancelled notification of a key does to the later
    /// ones, when ordered.
    pub ordering_on_failure: OnFailure,
    pub disabled: bool,
    /// `failing` when hookd disabled it; `None` when enabled or disabled by hand.
    pub disabled_reason: Option<String>,
    /// Since when every attempt has failed; `None` after a success.
    pub failing_since: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// A secret or header value that did not open (its key is not in
    /// `secrets.keys`); those values read as empty. Such an endpoint still
    /// takes notifications, whose attempts fail saying why, but its secret
    /// cannot be shown and it cannot be changed until the key is back.
    pub unreadable: Option<crate::domain::sealed::SealError>,
}

/// A rotated-out signing secret and until when it still signs.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreviousSecret {
    pub secret: String,
    pub expires_at: DateTime<Utc>,
}

/// Most rotated-out secrets that sign at once; a rotation beyond drops the
/// oldest, so a receiver never has to check more than this plus one.
pub const MAX_PREVIOUS_SECRETS: usize = 5;

impl Endpoint {
    /// Makes `new` the signing secret. The current one keeps signing until
    /// `now + overlap` (not at all for a zero overlap); expired ones go, and
    /// beyond `MAX_PREVIOUS_SECRETS` the oldest go.
    pub fn rotate_secret(&mut self, new: String, now: DateTime<Utc>, overlap: chrono::Duration) {
        let old = std::mem::replace(&mut self.secret, new);
        let previous = &mut self.previous_secrets;
        previous.retain(|p| p.expires_at > now);
        if overlap > chrono::Duration::zero() {
            previous.insert(
                0,
                PreviousSecret {
                    secret: old,
                    expires_at: now + overlap,
                },
            );
        }
        previous.truncate(MAX_PREVIOUS_SECRETS);
    }

    /// Stops every rotated-out secret signing now.
    pub fn end_overlap(&mut self) {
        self.previous_secrets.clear();
    }

    /// The rotated-out secrets still signing at `now`, newest first.
    pub fn signing_previous(&self, now: DateTime<Utc>) -> impl Iterator<Item = &PreviousSecret> {
        self.previous_secrets
            .iter()
            .filter(move |p| p.expires_at > now)
    }

    pub fn schedule(&self) -> Schedule {
        Schedule::from_stored(self.schedule_name.clone(), &self.schedule_ms)
    }

    pub fn set_schedule(&mut self, schedule: &Schedule) {
        self.schedule_ms = schedule.delays_ms();
        self.schedule_name = schedule.name().map(str::to_string);
    }

    /// About how many bytes this row holds in memory, for bounded caches.
    pub fn approximate_size(&self) -> u32 {
        let text = self.url.as_ref().map_or(0, String::len)
            + self.description.len()
            + self.secret.len()
            + self
                .previous_secrets
                .iter()
                .map(|p| p.secret.len() + 32)
                .sum::<usize>()
            + self.success_body.as_ref().map_or(0, String::len)
            + [&self.filter, &self.success_filter]
                .into_iter()
                .flatten()
                .map(PayloadFilter::approximate_size)
                .sum::<usize>()
            + self
                .event_types
                .iter()
                .flatten()
                .map(|t| t.len() + 24)
                .sum::<usize>()
            + self
                .headers
                .iter()
                .map(|(name, value)| name.len() + value.len() + 64)
                .sum::<usize>();
        u32::try_from(text + 512).unwrap_or(u32::MAX)
    }

    /// Whether a notification of `event_type` may be sent here: its
    /// `event_types` patterns match it (docs/design.md §9).
    pub fn accepts_event_type(&self, event_type: Option<&str>) -> bool {
        crate::domain::subscription::subscribed(self.event_types.as_deref(), event_type)
    }
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("id", &self.id)
            .field("uid", &self.uid)
            .field("disabled", &self.disabled)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint(secret: &str) -> Endpoint {
        let now = Utc::now();
        Endpoint {
            id: Uuid::nil(),
            uid: None,
            owner: None,
            url: None,
            delivery: Delivery::Push,
            description: String::new(),
            secret: secret.to_string(),
            previous_secrets: Vec::new(),
            event_types: None,
            filter: None,
            schedule_ms: Vec::new(),
            schedule_name: None,
            schedule_jitter: 0.0,
            url_secret: false,
            portal_generation: 0,
            rate_limit_per_second: None,
            rate_limit_burst: None,
            fresh_share: None,
            breaker: Default::default(),
            success_body: None,
            success_filter: None,
            permanent_statuses: Vec::new(),
            headers: BTreeMap::new(),
            timeout_ms: None,
            max_in_flight: None,
            ordering: Default::default(),
            ordering_on_failure: Default::default(),
            disabled: false,
            disabled_reason: None,
            failing_since: None,
            created_at: now,
            updated_at: now,
            unreadable: None,
        }
    }

    fn signing(endpoint: &Endpoint, now: DateTime<Utc>) -> Vec<&str> {
        endpoint
            .signing_previous(now)
            .map(|p| p.secret.as_str())
            .collect()
    }

    #[test]
    fn each_rotated_out_secret_signs_until_its_own_expiry() {
        let now = Utc::now();
        let hour = chrono::Duration::hours(1);
        let mut e = endpoint("s0");
        e.rotate_secret("s1".into(), now, hour);
        e.rotate_secret("s2".into(), now + chrono::Duration::minutes(1), hour * 24);
        assert_eq!(e.secret, "s2");
        assert_eq!(signing(&e, now), ["s1", "s0"]);
        assert_eq!(signing(&e, now + hour * 2), ["s1"]);
        // A zero overlap drops only the secret it replaces.
        e.rotate_secret("s3".into(), now, chrono::Duration::zero());
        assert_eq!(signing(&e, now), ["s1", "s0"]);
        e.end_overlap();
        assert!(signing(&e, now).is_empty());
    }

    #[test]
    fn at_most_five_rotated_out_secrets_sign_and_the_oldest_go_first() {
        let now = Utc::now();
        let mut e = endpoint("s0");
        for i in 1..=7 {
            e.rotate_secret(format!("s{i}"), now, chrono::Duration::hours(1));
        }
        assert_eq!(signing(&e, now), ["s6", "s5", "s4", "s3", "s2"]);
        // Expired ones are dropped by the next rotation.
        e.rotate_secret(
            "s8".into(),
            now + chrono::Duration::hours(2),
            chrono::Duration::hours(1),
        );
        assert_eq!(e.previous_secrets.len(), 1);
    }
}
