//! Events (docs/design.md §9): one business fact, stored once with its payload,
//! and its deliveries (one notification per subscribed endpoint), written
//! by one statement so that neither is ever stored without the other.

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::notifications::Ordered;
use crate::domain::pull::Delivery;
use crate::domain::schedule::Schedule;

#[derive(Debug, Clone)]
pub struct Event {
    pub id: Uuid,
    pub owner: Option<String>,
    pub event_type: String,
    pub key: Option<String>,
    pub content_type: String,
    /// Empty in listings, which leave payloads out.
    pub body: Vec<u8>,
    pub deliver_at: DateTime<Utc>,
    /// Notifications the fan-out created.
    pub deliveries: i32,
    pub created_at: DateTime<Utc>,
    /// The business object it is about (`NewEvent::order_key`).
    pub order_key: Option<String>,
}

/// The endpoints `events` deliver to, each once: whose owners
/// `keep_owned` needs.
pub(crate) fn delivery_endpoints(events: &[NewEvent]) -> Vec<Uuid> {
    let mut ids: Vec<Uuid> = (events.iter())
        .flat_map(|event| event.deliveries.iter().map(|d| d.endpoint_id))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// Keeps, of each event's deliveries, those whose endpoint is still its
/// owner's, as `owners` says (each endpoint's owner, read in the insert's
/// transaction). The fan-out chose them from its subscribers, which another
/// process may have read up to `SUBSCRIBERS_TTL` before an endpoint moved
/// to another owner: such an endpoint gets nothing of the event, since an
/// event never reaches another owner's endpoint. An endpoint `owners` does
/// not know keeps its delivery (a deleted one's are cancelled before
/// they are sent). PostgreSQL finds the same deliveries in its insert
/// statement (`postgres::events`), which then leaves them out.
pub(crate) fn keep_owned(events: &mut [NewEvent], owners: &HashMap<Uuid, Option<String>>) {
    let strays: HashSet<Uuid> = (events.iter())
        .flat_map(|event| {
            let stray = |d: &&NewDelivery| {
                owners
                    .get(&d.endpoint_id)
                    .is_some_and(|owner| *owner != event.owner)
            };
            event.deliveries.iter().filter(stray).map(|d| d.id)
        })
        .collect();
    drop_strays(events, &strays);
}

/// Drops the deliveries `strays` names; returns how many each event lost
/// (only those that lost some).
pub(crate) fn drop_strays(events: &mut [NewEvent], strays: &HashSet<Uuid>) -> Vec<(Uuid, i32)> {
    let mut lost = Vec::new();
    for event in events.iter_mut() {
        let before = event.deliveries.len();
        event.deliveries.retain(|d| !strays.contains(&d.id));
        if event.deliveries.len() < before {
            lost.push((event.id, (before - event.deliveries.len()) as i32));
        }
    }
    lost
}

/// An event to be created, with the deliveries its fan-out chose.
/// `Debug` masks header values (`store::debug`).
pub struct NewEvent {
    pub id: Uuid,
    pub owner: Option<String>,
    pub event_type: String,
    pub key: Option<String>,
    pub content_type: String,
    pub body: Vec<u8>,
    pub deliver_at: DateTime<Utc>,
    /// Custom headers every delivery carries (unless it has its own).
    pub headers: BTreeMap<String, String>,
    /// The business object it is about: its deliveries carry it, and those
    /// to endpoints ordered by key are ordered by it.
    pub order_key: Option<String>,
    pub deliveries: Vec<NewDelivery>,
}

/// One delivery of a new event: a notification to one endpoint. `Debug`
/// masks header values (`store::debug`).
pub struct NewDelivery {
    pub id: Uuid,
    pub endpoint_id: Uuid,
    pub schedule: Schedule,
    pub next_attempt_at: DateTime<Utc>,
    /// To a pull endpoint: not in the due index.
    pub pull: bool,
    /// The headers this delivery stores instead of its event's: set by a
    /// wrapper that stores them per delivery (sealed, bound to the
    /// delivery's id); `None`: the event's.
    pub headers: Option<BTreeMap<String, String>>,
    /// Its endpoint orders by key and its event has one: the store gives it
    /// a place in its key's order (`store::ordering`).
    pub ordered: bool,
    /// The place the store gave it, once created.
    pub place: Ordered,
}

/// What became of one event of a commit.
pub enum EventInserted {
    /// Stored, with its push deliveries (and when each is due), the
    /// custom headers they carry, and the pull endpoints it reached.
    Created {
        event: Event,
        push: Vec<NewDelivery>,
        headers: BTreeMap<String, String>,
        pulled: Vec<Uuid>,
    },
    /// The owner already had an event with this key and payload.
    Existing(Event),
    /// The owner already has an event with this key, another payload.
    KeyConflict(Event),
}

/// A live, enabled endpoint that events of its owner may fan out to.
#[derive(Debug, Clone)]
pub struct Subscriber {
    pub id: Uuid,
    pub owner: Option<String>,
    pub event_types: Option<Vec<String>>,
    /// Only events whose payload satisfies it (`domain::payload_filter`).
    pub filter: Option<crate::domain::payload_filter::PayloadFilter>,
    pub schedule_ms: Vec<i64>,
    pub schedule_name: Option<String>,
    pub delivery: Delivery,
    /// Whether its deliveries of an event with an `order_key` are ordered.
    pub ordering: crate::domain::ordering::KeyOrdering,
}

impl Subscriber {
    /// About how many bytes this row holds in memory, for bounded caches.
    pub fn approximate_size(&self) -> usize {
        let patterns: usize = self
            .event_types
            .iter()
            .flatten()
            .map(|p| p.len() + 24)
            .sum();
        96 + self.owner.as_ref().map_or(0, String::len)
            + patterns
            + self.filter.as_ref().map_or(0, |f| f.approximate_size())
            + self.schedule_ms.len() * 8
            + self.schedule_name.as_ref().map_or(0, String::len)
    }

    pub fn schedule(&self) -> Schedule {
        Schedule::from_stored(self.schedule_name.clone(), &self.schedule_ms)
    }
}

#[derive(Debug, Default, Clone)]
pub struct EventFilter {
    /// `Some(None)`: events without an owner.
    pub owner: Option<Option<String>>,
    pub event_type: Option<String>,
    pub key: Option<String>,
    /// Only those created in this window.
    pub created: crate::domain::created::CreatedWindow,
    /// Keyset cursor: only events older than this id.
    pub before: Option<Uuid>,
    /// A bounded page's frontier: only events at or after this id
    /// (`SharedReads::events_frontier`).
    pub from: Option<Uuid>,
    pub limit: i64,
}

impl EventFilter {
    /// Whether a page reads a bounded slice of its scope (every event, or
    /// an owner's) as a notifications' list does
    /// (`store::notifications::MAX_EXAMINED`): with a type, which no index
    /// serves beside the owner (PostgreSQL has no index on it at all),
    /// unless a key names the few rows through its own.
    pub fn bounded(&self) -> bool {
        self.event_type.is_some() && self.key.is_none()
    }
}

impl NewEvent {
    /// The stored row, with the count of its deliveries (moved out of it
    /// already).
    pub(crate) fn into_row(self, created_at: DateTime<Utc>, deliveries: usize) -> Event {
        Event {
            id: self.id,
            owner: self.owner,
            event_type: self.event_type,
            key: self.key,
            content_type: self.content_type,
            body: self.body,
            deliver_at: self.deliver_at,
            deliveries: deliveries as i32,
            created_at,
            order_key: self.order_key,
        }
    }
}
