//! Events (docs/design.md §9): one business fact, fanned out to one notification
//! per subscribed endpoint of its owner, in the same statement as the event
//! itself. The fan-out is decided here, in Rust: the owner's live, enabled
//! endpoints (cached for `SUBSCRIBERS_TTL`), filtered by their patterns
//! (`domain::subscription`), their payload filters (`domain::payload_filter`,
//! parsed when the endpoint is read, the payload at most once per event)
//! and by the event's `endpoints`, if it names any.
//! A request's deliveries, all its events together, are bounded by
//! `api.max_deliveries_per_request`: past it the request is refused whole
//! (422) before anything is built or written.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::value::RawValue;
use uuid::Uuid;

use super::lookup::Resolved;
use super::notifications::{invalid_key, invalid_order_key, Accepted};
use super::payload::{content, deliver_at};
use super::{Service, ServiceError};
use crate::domain::bounded::{Bounded, BoundedMap};
use crate::domain::fields::{valid_key, valid_uid, MAX_HEADERS};
use crate::domain::ordering::{valid_order_key, KeyOrdering};
use crate::domain::payload_filter::{payload_json, PayloadFilter};
use crate::domain::problem::{ErrorCode, Kind, Problem};
use crate::domain::pull::Delivery;
use crate::domain::schedule::Schedule;
use crate::domain::subscription::{event_type_problem, subscribed};
use crate::domain::validate::check_headers;
use crate::store::events::{Event, EventInserted, NewDelivery, NewEvent, Subscriber};
use crate::store::writes::Writes;
use named::named_ids;

/// How long an owner's endpoints are reused for fan-outs. A change through
/// this process clears them at once; one through another process shows
/// within this time.
pub const SUBSCRIBERS_TTL: Duration = Duration::from_secs(1);
/// Most endpoints an event may name in `endpoints`.
pub const MAX_NAMED_ENDPOINTS: usize = 1000;

/// An event as a producer submits it.
/// `Debug` masks header values.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = CreateEvent)]
pub struct EventInput {
    /// What happened: `order.paid`. Dot-separated segments, none empty.
    #[schema(min_length = 1, max_length = 255)]
    pub event_type: String,
    /// The tenant whose endpoints hear of it; absent: endpoints without an
    /// owner.
    #[schema(min_length = 1, max_length = 128)]
    pub owner: Option<String>,
    /// A JSON payload, sent as the exact bytes given. Excludes `body`.
    #[schema(value_type = Option<serde_json::Value>)]
    pub payload: Option<Box<RawValue>>,
    /// A text body. Excludes `payload`.
    pub body: Option<String>,
    /// Default `application/json` (`text/plain; charset=utf-8` for a `body`).
    pub content_type: Option<String>,
    /// The producer's business key, unique per owner: sending the same
    /// event again with it is idempotent.
    #[schema(min_length = 1, max_length = 255)]
    pub key: Option<String>,
    /// RFC 3339 time before which nothing is sent. Excludes `delay`.
    #[schema(format = DateTime)]
    pub deliver_at: Option<String>,
    /// Wait before the deliveries are due (`"30s"`). Excludes `deliver_at`.
    pub delay: Option<String>,
    /// Extra headers on every delivery.
    #[schema(value_type = Option<std::collections::BTreeMap<String, String>>)]
    pub headers: Option<BoundedMap<MAX_HEADERS>>,
    /// Only these endpoints (id or uid) of the owner, if still subscribed;
    /// at least one (absent: every subscribed endpoint of the owner).
    #[schema(value_type = Option<Vec<String>>, min_items = 1, max_items = 1000)]
    pub endpoints: Option<Bounded<String, MAX_NAMED_ENDPOINTS>>,
    /// The business object it is about (`order-123`): its deliveries carry
    /// it, and on endpoints with `"ordering": "key"` they go one at a time
    /// per key, in creation order. 1 to 256 bytes.
    #[schema(min_length = 1, max_length = 256)]
    pub order_key: Option<String>,
    /// The trace this event belongs to: the create's `traceparent` header,
    /// kept as two of its headers and so sent on each of its deliveries
    /// (set by the API, not part of the body).
    #[serde(skip)]
    pub trace: Option<crate::telemetry::trace_context::TraceContext>,
}

impl std::fmt::Debug for EventInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventInput")
            .field("event_type", &self.event_type)
            .field("owner", &self.owner)
            .field("key", &self.key)
            .field("headers", &self.headers)
            .field("endpoints", &self.endpoints)
            .finish_non_exhaustive()
    }
}

/// An owner's candidate endpoints, by owner, briefly. Requests that miss
/// the same owner at once wait for one read (see `lookup::EndpointCache`).
#[derive(Clone)]
pub(super) struct SubscriberCache(moka::future::Cache<Option<String>, Arc<Vec<Subscriber>>>);

impl Default for SubscriberCache {
    fn default() -> Self {
        Self(
            moka::future::Cache::builder()
                // Weighed by what the entries hold, the owner and each
                // endpoint's patterns and schedule included, so neither many
                // owners nor long pattern lists exceed the bound.
                .max_capacity(64 << 20)
                .weigher(|owner: &Option<String>, list: &Arc<Vec<Subscriber>>| {
                    let endpoints: usize = list.iter().map(Subscriber::approximate_size).sum();
                    let key = owner.as_ref().map_or(0, String::len);
                    u32::try_from(64 + key + endpoints).unwrap_or(u32::MAX)
                })
                .time_to_live(SUBSCRIBERS_TTL)
                .build(),
        )
    }
}

impl SubscriberCache {
    pub(super) fn clear(&self) {
        self.0.invalidate_all();
    }
}

/// A validated event before its fan-out.
struct Prepared {
    event: NewEvent,
    /// The endpoints it names, when it narrows its fan-out to them.
    named: Option<Vec<Uuid>>,
    /// Its payload as payload filters read it: parsed once, when the first
    /// endpoint with a filter asks, and never for an event none asks of.
    json: OnceLock<Option<serde_json::Value>>,
}

impl Prepared {
    /// Whether an endpoint with this filter takes the event.
    fn passes(&self, filter: Option<&PayloadFilter>) -> bool {
        filter.is_none_or(|filter| {
            let json = self
                .json
                .get_or_init(|| payload_json(&self.event.content_type, &self.event.body));
            filter.matches(json.as_ref())
        })
    }
}

impl Service {
    /// Creates events, each with its deliveries; each succeeds or fails
    /// alone, in order. One commit for all the valid ones.
    pub async fn create_events(
        &self,
        inputs: Vec<EventInput>,
    ) -> Result<Vec<Result<Accepted<Event>, Problem>>, ServiceError> {
        // Only names of events that may name them are looked up: an event
        // over the limit is refused anyway, and must not cost a lookup.
        let names: Vec<&str> = inputs
            .iter()
            .filter_map(|i| i.endpoints.as_deref())
            .filter(|names| names.len() <= MAX_NAMED_ENDPOINTS)
            .flatten()
            .map(String::as_str)
            .collect();
        let named = self.resolve_endpoints(names).await?;
        let now = self.now();
        let prepared: Vec<Result<Prepared, Problem>> = inputs
            .into_iter()
            .map(|input| self.prepare_event(input, &named, now))
            .collect();
        let owners: Vec<Option<String>> = prepared
            .iter()
            .flatten()
            .filter(|p| p.named.is_none())
            .map(|p| p.event.owner.clone())
            .collect();
        let subscribers = self.subscribers(owners).await?;
        let named_by_id: HashMap<Uuid, _> = named.values().map(|e| (e.id, e)).collect();
        // The request's fan-out is bounded as a whole: counted before any
        // delivery is built, so a refused one costs no memory either.
        let max = self.settings.api.max_deliveries_per_request;
        let total: usize = prepared
            .iter()
            .flatten()
            .map(|p| matching(p, &subscribers, &named_by_id).count())
            .sum();
        if total > max {
            metrics::counter!("hookd_fan_outs_refused_total").increment(1);
            return Err(too_many_deliveries(total, max).into());
        }
        let mut writes = Writes::default();
        let slots: Vec<Result<(), Problem>> = prepared
            .into_iter()
            .map(|p| {
                p.map(|mut p| {
                    p.event.deliveries = fan_out(&p, &subscribers, &named_by_id, now);
                    writes.events.push(p.event);
                })
            })
            .collect();
        let mut inserted = self.commit.submit(writes).await?.events.into_iter();
        Ok(slots
            .into_iter()
            .map(|slot| {
                slot.and_then(|()| match inserted.next() {
                    Some(EventInserted::Created { event, .. }) => {
                        // Once per event created: a replay of its key, or a
                        // conflict with it, fanned out to nobody new.
                        metrics::counter!("hookd_events_created_total").increment(1);
                        metrics::histogram!("hookd_event_fan_out").record(event.deliveries as f64);
                        Ok(Accepted::Created(event))
                    }
                    Some(EventInserted::Existing(event)) => Ok(Accepted::Existing(event)),
                    Some(EventInserted::KeyConflict(event)) => Err(Problem::conflict(
                        ErrorCode::KeyConflict,
                        format!(
                            "event {} already has this key for this owner, with another payload or type",
                            event.id
                        ),
                    )),
                    None => Err(Problem::conflict(ErrorCode::Conflict, "not committed")),
                })
            })
            .collect())
    }

    /// Cancels every pending delivery of the event; returns how many.
    pub async fn cancel_event(&self, id: Uuid) -> Result<usize, ServiceError> {
        let ids = self
            .store
            .cancel_event(id)
            .await?
            .ok_or_else(|| Problem::not_found("event"))?;
        self.unindex(&ids).await;
        Ok(ids.len())
    }

    fn prepare_event(
        &self,
        input: EventInput,
        named: &Resolved,
        now: DateTime<Utc>,
    ) -> Result<Prepared, Problem> {
        if let Some(problem) = event_type_problem(&input.event_type) {
            return Err(Problem::invalid(
                ErrorCode::InvalidValue,
                "event_type",
                problem,
            ));
        }
        if let Some(owner) = &input.owner {
            if !valid_uid(owner) {
                return Err(invalid_owner());
            }
        }
        let content = content(
            input.payload,
            input.body,
            input.content_type,
            self.settings.api.max_payload_bytes,
        )?;
        content.readable_by_filters()?;
        if let Some(key) = &input.key {
            if !valid_key(key) {
                return Err(invalid_key());
            }
        }
        if input
            .order_key
            .as_deref()
            .is_some_and(|k| !valid_order_key(k))
        {
            return Err(invalid_order_key());
        }
        let deliver_at = deliver_at(input.deliver_at, input.delay, now)?;
        let mut headers = input.headers.map(BoundedMap::into_map).unwrap_or_default();
        check_headers(&headers, "headers")?;
        crate::telemetry::trace_context::TraceContext::keep(input.trace.as_ref(), &mut headers);
        let named = match &input.endpoints {
            None => None,
            Some(names) => Some(named_ids(names, named, input.owner.as_deref())?),
        };
        Ok(Prepared {
            event: NewEvent {
                id: crate::domain::id::new_id(),
                owner: input.owner,
                event_type: input.event_type,
                key: input.key,
                content_type: content.content_type,
                body: content.body,
                deliver_at,
                headers,
                order_key: input.order_key,
                deliveries: Vec::new(),
            },
            named,
            json: OnceLock::new(),
        })
    }

    /// The candidate endpoints of `owners`, from the cache, then the rest
    /// in one query.
    async fn subscribers(
        &self,
        mut owners: Vec<Option<String>>,
    ) -> Result<HashMap<Option<String>, Arc<Vec<Subscriber>>>, ServiceError> {
        owners.sort_unstable();
        owners.dedup();
        let mut found = HashMap::with_capacity(owners.len());
        let mut missing = Vec::new();
        for owner in owners {
            match self.subscribers.0.get(&owner).await {
                Some(list) => {
                    found.insert(owner, list);
                }
                None => missing.push(owner),
            }
        }
        if missing.is_empty() {
            return Ok(found);
        }
        if let [owner] = missing.as_slice() {
            // The usual miss: one read, whoever else is waiting for it.
            let read = async {
                let owners = std::slice::from_ref(owner);
                let list = self.store.subscribers(owners).await.map_err(Arc::new)?;
                Ok::<_, Arc<crate::store::StoreError>>(Arc::new(
                    list.into_iter()
                        .filter(|subscriber| subscriber.owner == *owner)
                        .collect(),
                ))
            };
            let list = self
                .subscribers
                .0
                .try_get_with(owner.clone(), read)
                .await
                .map_err(|error| ServiceError::Store(error.as_ref().clone()))?;
            found.insert(owner.clone(), list);
            return Ok(found);
        }
        let mut by_owner: HashMap<Option<String>, Vec<Subscriber>> =
            missing.iter().map(|o| (o.clone(), Vec::new())).collect();
        for subscriber in self.store.subscribers(&missing).await? {
            if let Some(list) = by_owner.get_mut(&subscriber.owner) {
                list.push(subscriber);
            }
        }
        for (owner, list) in by_owner {
            let list = Arc::new(list);
            self.subscribers.0.insert(owner.clone(), list.clone()).await;
            found.insert(owner, list);
        }
        Ok(found)
    }
}

type Named<'a> = HashMap<Uuid, &'a Arc<crate::store::endpoints::Endpoint>>;

/// The endpoints one event fans out to: its owner's enabled endpoints
/// whose patterns match its type and whose payload filter (if any) its
/// payload satisfies, narrowed to those it names; each with
/// its schedule and delivery mode.
fn matching<'a>(
    prepared: &'a Prepared,
    subscribers: &'a HashMap<Option<String>, Arc<Vec<Subscriber>>>,
    named: &'a Named<'a>,
) -> Box<dyn Iterator<Item = (Uuid, Schedule, Delivery, KeyOrdering)> + 'a> {
    let event = &prepared.event;
    match &prepared.named {
        Some(ids) => Box::new(
            ids.iter()
                .filter_map(|id| named.get(id))
                .filter(|e| {
                    !e.disabled
                        && subscribed(e.event_types.as_deref(), Some(&event.event_type))
                        && prepared.passes(e.filter.as_ref())
                })
                .map(|e| (e.id, e.schedule(), e.delivery, e.ordering)),
        ),
        None => Box::new(
            subscribers
                .get(&event.owner)
                .into_iter()
                .flat_map(|list| list.iter())
                .filter(|s| {
                    subscribed(s.event_types.as_deref(), Some(&event.event_type))
                        && prepared.passes(s.filter.as_ref())
                })
                .map(|s| (s.id, s.schedule(), s.delivery, s.ordering)),
        ),
    }
}

/// The deliveries of one event (`matching`).
fn fan_out(
    prepared: &Prepared,
    subscribers: &HashMap<Option<String>, Arc<Vec<Subscriber>>>,
    named: &Named<'_>,
    now: DateTime<Utc>,
) -> Vec<NewDelivery> {
    let start = prepared.event.deliver_at.max(now);
    let keyed = prepared.event.order_key.is_some();
    matching(prepared, subscribers, named)
        .map(|(endpoint_id, schedule, mode, ordering)| NewDelivery {
            id: crate::domain::id::new_id(),
            endpoint_id,
            next_attempt_at: start
                + chrono::Duration::from_std(schedule.first_delay()).unwrap_or_default(),
            schedule,
            pull: mode == Delivery::Pull,
            headers: None,
            ordered: keyed && ordering == KeyOrdering::Key,
            place: Default::default(),
        })
        .collect()
}

/// A request whose events would fan out to more than
/// `api.max_deliveries_per_request` notifications (issue #47: one batch to
/// 200 endpoints made 200,000 in one commit).
fn too_many_deliveries(total: usize, max: usize) -> Problem {
    Problem {
        kind: Kind::Invalid,
        code: ErrorCode::InvalidValue,
        field: None,
        message: format!(
            "this request's events fan out to {total} deliveries; \
             api.max_deliveries_per_request allows {max} per request: send fewer events \
             per request, or narrow them with `endpoints`"
        ),
    }
}

pub(crate) fn invalid_owner() -> Problem {
    Problem::invalid(
        ErrorCode::InvalidValue,
        "owner",
        "owner is 1 to 128 of A-Z a-z 0-9 _ - . :, not dots alone (. and .. are path segments), and must not look like a UUID",
    )
}

mod named;

#[cfg(test)]
mod tests;
