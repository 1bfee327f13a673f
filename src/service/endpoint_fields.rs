//! An endpoint's fields as a producer writes them, validated in one place:
//! a create applies them to `default_endpoint`, a PATCH to the stored
//! endpoint.

use std::collections::BTreeMap;

use chrono::Utc;
use serde::{Deserialize, Deserializer};

use super::breaker_fields::BreakerFields;
use super::events::invalid_owner;
use super::filter_fields::filter_of;
use super::payload::allowed_url;
use super::rate_limit_fields::parse_rate_limit;
use super::success_fields::apply_success_rule;
use crate::config::Settings;
use crate::domain::bounded::{Bounded, BoundedMap};
use crate::domain::breaker::Override;
use crate::domain::fields::{valid_uid, MAX_HEADERS, MAX_PERMANENT_STATUSES};
use crate::domain::jitter::{Jitter, MAX_JITTER};
use crate::domain::ordering::{KeyOrdering, OnFailure};
use crate::domain::problem::{shown, ErrorCode, Problem};
use crate::domain::pull::Delivery;
use crate::domain::schedule::{Schedule, ScheduleJson};
use crate::domain::secret::{Signing, SigningSecret};
use crate::domain::subscription::{pattern_problem, MAX_PATTERNS};
use crate::domain::validate::{check_headers, parse_schedule};
use crate::sender::guard::Guard;
use crate::store::endpoints::Endpoint;

/// Fields of an endpoint as a producer writes them. In a PATCH, an absent
/// field is left alone and `null` resets it to its default.
#[derive(Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EndpointFields {
    /// The producer's own name for the endpoint, usable wherever an id is.
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<String>)]
    uid: Option<Option<String>>,
    /// The tenant the endpoint belongs to (`merchant-42`): events fan out
    /// only to endpoints of their own owner.
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<String>)]
    owner: Option<Option<String>>,
    /// `http` or `https` URL that receives the POSTs. Required for a push
    /// endpoint; a pull endpoint has none.
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<String>, pattern = "^[Hh][Tt][Tt][Pp][Ss]?://")]
    url: Option<Option<String>>,
    /// `push` (default): hookd POSTs each notification to `url`. `pull`:
    /// consumers take them with `POST /v1/endpoints/{id}/pull`. A PATCH
    /// may switch; pending notifications follow.
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<Delivery>)]
    pub(super) delivery: Option<Option<Delivery>>,
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<String>)]
    description: Option<Option<String>>,
    /// `whsec_<base64 of 24 to 64 bytes>` (hmac), `whsk_<base64 of an
    /// Ed25519 seed or secret key>` (ed25519), or an RSA private key of
    /// 2048 to 4096 bits in PEM (rsa2, required: hookd makes none);
    /// generated when absent, of the kind `signing` asks. Set on create
    /// only: change it with `POST .../secret/rotate`.
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<String>, pattern = "^(whsec_[A-Za-z0-9+/]{32,88}={0,2}|whsk_[A-Za-z0-9+/]{43,86}={0,2}|\\s*-----BEGIN (RSA )?PRIVATE KEY-----[\\s\\S]+)$")]
    pub(super) secret: Option<Option<String>>,
    /// `hmac` (default, and `null`): each delivery is signed `v1,` with
    /// the shared secret. `ed25519`: signed `v1a,` with a private key
    /// hookd keeps sealed; receivers verify with the public key of `GET
    /// /v1/endpoints/{id}/public-key`. A PATCH that switches generates a
    /// key of the new kind, and the old one signs beside it for
    /// `secrets.rotation_overlap_ms`. `rsa2` (create only, with your RSA
    /// key as `secret`): form bodies get `sign_type=RSA2` and `sign`,
    /// SHA256withRSA over their other parameters sorted by name, as Alipay
    /// signs its asynchronous notifications; the public key is a PEM at
    /// `.../public-key`, and a JSON notification is refused.
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<Signing>)]
    signing: Option<Option<Signing>>,
    /// Patterns of the event types this endpoint takes: exact
    /// (`order.paid`), a prefix (`order.*`: one or more segments under
    /// `order`) or `*`; absent or null: all.
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<Vec<String>>)]
    event_types: Option<Option<Bounded<String, MAX_PATTERNS>>>,
    /// Only events whose JSON payload satisfies this predicate reach the
    /// endpoint: `{"amount": {"$gte": 100}, "currency": "CNY"}`. Dotted
    /// paths (`customer.tier`), a scalar for equality or operators `$eq
    /// $ne $in $nin $gt $gte $lt $lte $exists`, and `$and` / `$or` lists;
    /// at most 4096 bytes, 64 conditions, `$and`/`$or` 4 deep. An event
    /// with a text `body` matches no filter. Absent or null: every event
    /// of the subscribed types. A key one object of the filter names twice
    /// is refused (`invalid_filter`).
    // Read as text, for the repeated-key check (`domain::json_keys`).
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<Object>)]
    filter: Option<Option<Box<serde_json::value::RawValue>>>,
    /// A preset name (`alipay`, `wechat`, `exponential`) or an array of
    /// durations (`["0s", "500ms", "2m"]`). Default `alipay`.
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<crate::domain::schedule::ScheduleSpec>)]
    schedule: Option<Option<ScheduleJson>>,
    /// Scales each wait of the schedule (not the first attempt's, nor a
    /// receiver's `Retry-After`) by a random factor in [1 − j, 1 + j], so
    /// that notifications that failed together do not retry together.
    /// 0 to 0.5; default (and `null`) 0: the schedule exact.
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<f64>, minimum = 0.0, maximum = 0.5)]
    schedule_jitter: Option<Option<f64>>,
    /// At most `per_second` deliveries a second to this endpoint, up to
    /// `burst` at once, across every hookd process. A throttled
    /// notification stays pending, costs no attempt, and is sent when its
    /// slot comes. `null`: none of its own (`dispatcher.default_rate_limit`
    /// applies, if set).
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<crate::domain::rate::RateLimit>)]
    rate_limit: Option<Option<serde_json::Value>>,
    /// The part of the rate limit kept for fresh notifications (first
    /// attempts) while retries are due beside them; either lane lends
    /// what it leaves idle to the other. 0 to 1; 0: one budget in due
    /// order. `null`: `dispatcher.fresh_share` (0.5 by default).
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<f64>, minimum = 0.0, maximum = 1.0)]
    fresh_share: Option<Option<f64>>,
    /// The circuit breaker: after `failures` consecutive failed attempts
    /// (timeouts, connection and TLS errors, 5xx, 429) nothing is sent for
    /// `open_ms` (±20 %, doubled after each failed probe up to
    /// `max_open_ms`), then one probe. Absent on create: the defaults
    /// (`[dispatcher.breaker]`); an object: its fields over the defaults
    /// (`{}` is the defaults); `null`: no breaker for this endpoint.
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<BreakerFields>)]
    breaker: Option<Option<BreakerFields>>,
    /// When set, a 2xx only succeeds if the trimmed body equals it (`success`).
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<String>)]
    success_body: Option<Option<String>>,
    /// For receivers that acknowledge in JSON: when set, a 2xx only
    /// succeeds if its body is JSON that satisfies this filter, in the
    /// language of `filter` (`{"code": "SUCCESS"}`; `{"ret_code": "0000"}`).
    /// An answer that is not JSON, or longer than hookd reads of it,
    /// fails. Set this or `success_body`, not both. Absent or null: none.
    // Read as text, for the repeated-key check (`domain::json_keys`).
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<Object>)]
    success_filter: Option<Option<Box<serde_json::value::RawValue>>>,
    /// Statuses (400 to 599) that end the schedule at once. Default `[410]`.
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<Vec<u16>>)]
    permanent_statuses: Option<Option<Bounded<u16, MAX_PERMANENT_STATUSES>>>,
    /// Extra headers sent with every delivery.
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<BTreeMap<String, String>>)]
    headers: Option<Option<BoundedMap<MAX_HEADERS>>>,
    /// Per-attempt time limit, from 1 ms to the longest the delivery lease
    /// allows (55000 with the default lease); default `sender.timeout_ms`.
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<u64>, minimum = 1)]
    timeout_ms: Option<Option<u64>>,
    /// Cap on concurrent deliveries to this endpoint.
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<u32>, minimum = 1, maximum = 10000)]
    max_in_flight: Option<Option<u32>>,
    /// `key`: the notifications of one `order_key` are attempted one at a
    /// time, in creation order, each carrying `webhook-sequence`. Default
    /// (and `null`) `none`. Switching to `none` releases every one waiting.
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<KeyOrdering>)]
    ordering: Option<Option<KeyOrdering>>,
    /// When a notification of an ordered key ends `failed` or `cancelled`:
    /// `continue` (default, and `null`) releases the next one; `hold`
    /// keeps the later ones waiting until it is retried to success, or
    /// they are cancelled. Switching to `continue` releases the held keys.
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<OnFailure>)]
    ordering_on_failure: Option<Option<OnFailure>>,
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<bool>)]
    pub(super) disabled: Option<Option<bool>>,
    /// The whole path of `url` is a credential (e.g. a chat webhook's
    /// `/services/T…/B…/…`): callers without the `secrets` scope see only
    /// its origin, and the URLs of its notifications likewise. Default
    /// (and `null`) false: path segments that look like credentials are
    /// masked one by one.
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<bool>)]
    url_secret: Option<Option<bool>>,
}

/// Distinguishes an absent field (`None`) from an explicit `null` (`Some(None)`).
fn patch<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(deserializer).map(Some)
}

impl EndpointFields {
    /// The URL this change sets, if it sets one.
    pub(super) fn url(&self) -> Option<&str> {
        self.url.as_ref()?.as_deref()
    }

    /// Applies the fields to `endpoint`, validating each.
    ///
    /// `rotated_at`: when a stored endpoint is changed (a PATCH), the time
    /// a switch of `signing` rotates its key at; `None` on create, where
    /// the new key simply replaces the generated one.
    pub(super) fn apply(
        self,
        endpoint: &mut Endpoint,
        settings: &Settings,
        guard: &Guard,
        rotated_at: Option<chrono::DateTime<Utc>>,
    ) -> Result<(), Problem> {
        if let Some(uid) = self.uid {
            if let Some(uid) = &uid {
                if !valid_uid(uid) {
                    return Err(Problem::invalid(
                        ErrorCode::InvalidValue,
                        "uid",
                        "uid is 1 to 128 of A-Z a-z 0-9 _ - . :, not dots alone (. and .. are path segments), and must not look like a UUID",
                    ));
                }
            }
            endpoint.uid = uid;
        }
        if let Some(owner) = self.owner {
            if owner.as_deref().is_some_and(|o| !valid_uid(o)) {
                return Err(invalid_owner());
            }
            endpoint.owner = owner;
        }
        if let Some(delivery) = self.delivery {
            endpoint.delivery = delivery.unwrap_or_default();
            if endpoint.delivery == Delivery::Pull {
                endpoint.url = None;
            }
        }
        if let Some(url) = self.url {
            if endpoint.delivery == Delivery::Pull {
                return Err(Problem::invalid(
                    ErrorCode::ConflictingFields,
                    "url",
                    "a pull endpoint has no url: its consumers take notifications with POST /v1/endpoints/{id}/pull",
                ));
            }
            let url = url.ok_or_else(|| {
                Problem::invalid(ErrorCode::InvalidValue, "url", "url cannot be null")
            })?;
            endpoint.url = Some(allowed_url(&url, settings.sender.https_only, guard)?);
        }
        if endpoint.delivery == Delivery::Push && endpoint.url.is_none() {
            return Err(Problem::invalid(
                ErrorCode::MissingField,
                "url",
                "url is required for a push endpoint",
            ));
        }
        if let Some(ordering) = self.ordering {
            endpoint.ordering = ordering.unwrap_or_default();
        }
        if let Some(on_failure) = self.ordering_on_failure {
            endpoint.ordering_on_failure = on_failure.unwrap_or_default();
        }
        if let Some(description) = self.description {
            let description = description.unwrap_or_default();
            if description.len() > 1000 || description.contains('\0') {
                return Err(Problem::invalid(
                    ErrorCode::InvalidValue,
                    "description",
                    "description is at most 1000 bytes, without NUL characters",
                ));
            }
            endpoint.description = description;
        }
        let secret_given = matches!(self.secret, Some(Some(_)));
        if let Some(secret) = self.secret {
            endpoint.secret = match secret {
                Some(text) => SigningSecret::parse(&text)
                    .map_err(|e| {
                        Problem::invalid(ErrorCode::InvalidSecret, "secret", e.to_string())
                    })?
                    .as_str()
                    .to_string(),
                None => SigningSecret::generate().as_str().to_string(),
            };
        }
        if let Some(signing) = self.signing {
            let signing = signing.unwrap_or_default();
            let current = Signing::of(&endpoint.secret);
            if current != signing {
                if secret_given {
                    return Err(Problem::invalid(
                        ErrorCode::ConflictingFields,
                        "secret",
                        format!(
                            "the secret is an {} key, and signing is {}: give {}",
                            current.as_str(),
                            signing.as_str(),
                            match signing {
                                Signing::Hmac => "a `whsec_` secret, or none",
                                Signing::Ed25519 => "a `whsk_` key, or none",
                                Signing::Rsa2 => "an RSA private key in PEM",
                            }
                        ),
                    ));
                }
                let Some(new) = SigningSecret::generate_for(signing) else {
                    // hookd makes no RSA keys: the operator brings one.
                    return Err(Problem::invalid(
                        ErrorCode::InvalidValue,
                        if rotated_at.is_some() { "signing" } else { "secret" },
                        "rsa2 signs with your own RSA private key: create the endpoint with it as `secret` (PEM, 2048 to 4096 bits: openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048)",
                    ));
                };
                let new = new.as_str().to_string();
                match rotated_at {
                    Some(now) => endpoint.rotate_secret(
                        new,
                        now,
                        chrono::Duration::from_std(settings.rotation_overlap()).unwrap_or_default(),
                    ),
                    None => endpoint.secret = new,
                }
            }
        }
        if let Some(event_types) = self.event_types {
            if let Some(types) = &event_types {
                if types.is_empty() || types.len() > MAX_PATTERNS {
                    return Err(Problem::invalid(
                        ErrorCode::InvalidValue,
                        "event_types",
                        "event_types lists 1 to 100 patterns (`order.paid`, `order.*`, `*`), or is null for all",
                    ));
                }
                for (i, pattern) in types.iter().enumerate() {
                    if let Some(problem) = pattern_problem(pattern) {
                        return Err(Problem::invalid(
                            ErrorCode::InvalidPattern,
                            format!("event_types[{i}]"),
                            format!("`{}` is not a pattern: {problem}", shown(pattern)),
                        ));
                    }
                }
            }
            endpoint.event_types = event_types.map(Bounded::into_vec);
        }
        if let Some(filter) = self.filter {
            endpoint.filter = filter
                .as_deref()
                .map(|text| filter_of(text, "filter"))
                .transpose()?;
        }
        if let Some(schedule) = self.schedule {
            let schedule = match schedule {
                Some(value) => parse_schedule(&value.0, "schedule")?,
                None => Schedule::default(),
            };
            endpoint.set_schedule(&schedule);
        }
        if let Some(jitter) = self.schedule_jitter {
            let jitter = jitter.unwrap_or(0.0);
            if Jitter::new(jitter).is_none() {
                return Err(Problem::invalid(
                    ErrorCode::InvalidValue,
                    "schedule_jitter",
                    format!("schedule_jitter is a number from 0 to {MAX_JITTER}, or null for 0"),
                ));
            }
            endpoint.schedule_jitter = jitter;
        }
        if let Some(limit) = self.rate_limit {
            let limit = limit.as_ref().map(parse_rate_limit).transpose()?;
            endpoint.rate_limit_per_second = limit.map(|l| l.per_second);
            endpoint.rate_limit_burst = limit.map(|l| l.burst as i32);
        }
        if let Some(share) = self.fresh_share {
            if share.is_some_and(|s| !(0.0..=1.0).contains(&s)) {
                return Err(Problem::invalid(
                    ErrorCode::InvalidValue,
                    "fresh_share",
                    "fresh_share is a number from 0 to 1, or null for dispatcher.fresh_share",
                ));
            }
            endpoint.fresh_share = share;
        }
        if let Some(breaker) = self.breaker {
            endpoint.breaker = match breaker {
                None => Override {
                    off: true,
                    ..Override::default()
                },
                Some(fields) => fields
                    .to_override(settings.dispatcher.breaker.policy())
                    .map_err(|(field, must)| {
                        let name = format!("breaker.{field}");
                        let message = format!("{name} is {must}, or breaker null for none");
                        Problem::invalid(ErrorCode::InvalidValue, name, message)
                    })?,
            };
        }
        apply_success_rule(endpoint, self.success_body, self.success_filter)?;
        if let Some(statuses) = self.permanent_statuses {
            let statuses = statuses.map_or_else(|| vec![410], Bounded::into_vec);
            if let Some(bad) = statuses.iter().find(|s| !(400..=599).contains(*s)) {
                return Err(Problem::invalid(
                    ErrorCode::InvalidValue,
                    "permanent_statuses",
                    format!("{bad} is not a 4xx or 5xx status"),
                ));
            }
            endpoint.permanent_statuses = statuses.into_iter().map(i32::from).collect();
        }
        if let Some(headers) = self.headers {
            let headers = headers.map(BoundedMap::into_map).unwrap_or_default();
            check_headers(&headers, "headers")?;
            endpoint.headers = headers;
        }
        if let Some(timeout_ms) = self.timeout_ms {
            let max = settings.max_endpoint_timeout().as_millis() as u64;
            if timeout_ms.is_some_and(|t| !(1..=max).contains(&t)) {
                return Err(Problem::invalid(
                    ErrorCode::InvalidValue,
                    "timeout_ms",
                    format!("timeout_ms must be between 1 and {max}"),
                ));
            }
            endpoint.timeout_ms = timeout_ms.map(|t| t as i32);
        }
        if let Some(max_in_flight) = self.max_in_flight {
            if max_in_flight.is_some_and(|m| !(1..=10_000).contains(&m)) {
                return Err(Problem::invalid(
                    ErrorCode::InvalidValue,
                    "max_in_flight",
                    "max_in_flight must be between 1 and 10000",
                ));
            }
            endpoint.max_in_flight = max_in_flight.map(|m| m as i32);
        }
        if let Some(disabled) = self.disabled {
            endpoint.disabled = disabled.unwrap_or(false);
        }
        if let Some(url_secret) = self.url_secret {
            endpoint.url_secret = url_secret.unwrap_or(false);
        }
        Ok(())
    }
}

/// An endpoint of the defaults, made at `now`.
pub(super) fn default_endpoint(now: chrono::DateTime<Utc>) -> Endpoint {
    let schedule = Schedule::default();
    Endpoint {
        id: crate::domain::id::new_id(),
        uid: None,
        owner: None,
        url: None,
        delivery: Delivery::Push,
        description: String::new(),
        secret: SigningSecret::generate().as_str().to_string(),
        previous_secrets: Vec::new(),
        event_types: None,
        filter: None,
        schedule_ms: schedule.delays_ms(),
        schedule_name: schedule.name().map(str::to_string),
        schedule_jitter: 0.0,
        url_secret: false,
        portal_generation: 0,
        rate_limit_per_second: None,
        rate_limit_burst: None,
        fresh_share: None,
        breaker: Override::default(),
        success_body: None,
        success_filter: None,
        permanent_statuses: vec![410],
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
