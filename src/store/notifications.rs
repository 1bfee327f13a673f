//! Notifications: one payload for one endpoint, and its delivery state.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::domain::json_value;
use crate::domain::schedule::Schedule;
use crate::domain::status::Status;

/// `Debug` masks header values and URL query strings (`store::debug`).
#[derive(Clone)]
pub struct Notification {
    pub id: Uuid,
    pub endpoint_id: Uuid,
    pub key: Option<String>,
    pub event_type: Option<String>,
    pub content_type: String,
    /// Empty in listings, which leave payloads out.
    pub body: Vec<u8>,
    pub headers: BTreeMap<String, String>,
    pub schedule_ms: Vec<i64>,
    pub schedule_name: Option<String>,
    pub status: Status,
    pub attempts: i32,
    pub series_start: i32,
    pub deliver_at: DateTime<Utc>,
    pub next_attempt_at: Option<DateTime<Utc>>,
    pub last_attempt_at: Option<DateTime<Utc>>,
    pub last_status_code: Option<i32>,
    pub last_error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub completed_at: Option<DateTime<Utc>>,
    /// The event this notification delivers, when it is one's delivery.
    pub event_id: Option<Uuid>,
    /// Where it goes instead of its endpoint's URL (a per-notification
    /// `notify_url`).
    pub url: Option<String>,
    /// Taken by consumers of a pull endpoint rather than POSTed.
    pub pull: bool,
    /// A consumer holds it under a lease that has not run out (read where
    /// it matters: status, lists, retry).
    pub leased: bool,
    /// Its order key, as the producer gave it.
    pub order_key: Option<String>,
    /// Its place in its key's order (1, 2, 3 …), when its endpoint orders
    /// by key: `webhook-sequence`.
    pub sequence: Option<i64>,
    /// The earlier notification of its key it waits for, while one is
    /// pending (or holds the key, under `ordering_on_failure = "hold"`):
    /// no dispatcher or consumer takes it meanwhile.
    pub behind: Option<Uuid>,
}

impl Notification {
    pub fn status(&self) -> Status {
        self.status
    }

    pub fn schedule(&self) -> Schedule {
        Schedule::from_stored(self.schedule_name.clone(), &self.schedule_ms)
    }

    /// Whether `other` carries the same payload
    /// (`domain::json_value::same_payload`).
    pub fn same_payload(&self, content_type: &str, body: &[u8]) -> bool {
        json_value::same_payload((&self.content_type, &self.body), (content_type, body))
    }
}

/// A notification to be created. The id is chosen by the caller (UUIDv7).
#[derive(Clone)]
pub struct NewNotification {
    pub id: Uuid,
    pub endpoint_id: Uuid,
    pub key: Option<String>,
    pub event_type: Option<String>,
    pub content_type: String,
    pub body: Vec<u8>,
    pub headers: BTreeMap<String, String>,
    pub schedule: Schedule,
    pub deliver_at: DateTime<Utc>,
    pub next_attempt_at: DateTime<Utc>,
    /// A per-notification URL, already validated.
    pub url: Option<String>,
    /// For a pull endpoint: consumers take it; it is not in the due index.
    pub pull: bool,
    /// Its order key (≤ 256 bytes).
    pub order_key: Option<String>,
    /// Its endpoint orders by key: the store gives it its key's next
    /// sequence, and `behind` while an earlier one is pending.
    pub ordered: bool,
}

/// What became of one notification of an insert.
#[derive(Debug)]
pub enum Inserted {
    Created(Notification),
    /// The endpoint already had a notification with this key and payload.
    Existing(Notification),
    /// The endpoint already has a notification with this key, another payload.
    KeyConflict(Notification),
}

#[derive(Debug, Default, Clone)]
pub struct NotificationFilter {
    pub endpoint_id: Option<Uuid>,
    pub status: Option<Status>,
    /// The notification's key, or its event's.
    pub key: Option<String>,
    /// A prefix of the notification's key, or of its event's: through
    /// `ids` when few rows have one (`ReadStore::key_prefix_ids`), else
    /// checked on the rows a bounded page reads.
    pub key_prefix: Option<String>,
    /// Only these notifications: those a key prefix names, when they are
    /// at most `MAX_EXAMINED`.
    pub ids: Option<Vec<Uuid>>,
    pub event_type: Option<String>,
    pub event_id: Option<Uuid>,
    /// Only the notifications of this owner's live endpoints.
    pub owner: Option<String>,
    /// Only those created in this window.
    pub created: crate::domain::created::CreatedWindow,
    /// Only those that ended (succeeded, failed or were cancelled) at or
    /// after this time: checked on the rows a bounded page reads.
    pub completed_after: Option<DateTime<Utc>>,
    /// Newest first, or oldest first.
    pub order: ListOrder,
    /// Keyset cursor: only notifications past this id in `order`.
    pub cursor: Option<Uuid>,
    /// A bounded page's frontier: only notifications up to this id in
    /// `order`, itself included (`SharedReads::notifications_frontier`).
    pub from: Option<Uuid>,
    pub limit: i64,
}

/// One endpoint's notifications attempted more than once, most attempts
/// first, then newest (`GET /v1/notifications?order=attempts`): the
/// chronic failures and the longest retries, read on an index of those
/// rows alone (`notifications_endpoint_most_attempts`, `attempts > 1`), so
/// the deliveries that succeed at once never pay for it.
#[derive(Debug, Default, Clone)]
pub struct MostAttempted {
    pub endpoint_id: Uuid,
    /// Checked on the rows a page reads, at most `MAX_EXAMINED` of them
    /// (`SharedReads::most_attempted_frontier`).
    pub status: Option<Status>,
    /// Keyset cursor: only those after this `(attempts, id)` in the order.
    pub cursor: Option<(i32, Uuid)>,
    /// A status's slice: only those up to this `(attempts, id)`, itself
    /// included.
    pub from: Option<(i32, Uuid)>,
    pub limit: i64,
}

/// The order of a list of notifications: by creation, which is by id
/// (UUIDv7), so every path of the list is a keyset walk of an id index in
/// one direction or the other.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ListOrder {
    #[default]
    NewestFirst,
    OldestFirst,
}

impl ListOrder {
    /// `ORDER BY id …`.
    pub fn direction(self) -> &'static str {
        match self {
            Self::NewestFirst => "DESC",
            Self::OldestFirst => "ASC",
        }
    }

    /// `id … cursor`: the ids past a cursor.
    pub fn past(self) -> &'static str {
        match self {
            Self::NewestFirst => "<",
            Self::OldestFirst => ">",
        }
    }

    /// `id … frontier`: the ids up to a bounded page's frontier.
    pub fn up_to(self) -> &'static str {
        match self {
            Self::NewestFirst => ">=",
            Self::OldestFirst => "<=",
        }
    }
}

/// The most rows a filtered page of notifications examines (issue #47): a
/// filter no index serves together with the list's scope (`status`,
/// `event_type` within an endpoint or an owner) is checked on the scope's
/// newest rows below the cursor, at most this many, and the page answers
/// what it found there with a cursor past them, however few. Some 5 to 10
/// ms of reading on either backend.
pub const MAX_EXAMINED: i64 = 5_000;

impl NotificationFilter {
    /// Whether a page reads a bounded slice of its scope (the frontier,
    /// then the rows from there): with a filter no index serves beside the
    /// scope, and always for an owner's list (SQLite reads the owner's
    /// endpoints' rows and sorts them, which a bound keeps small). A `key`
    /// or an `event` names few rows through an index of its own: no bound.
    pub fn bounded(&self) -> bool {
        let indexed = self.key.is_some() || self.event_id.is_some() || self.ids.is_some();
        !indexed && (self.residual() || self.owner.is_some())
    }

    /// Whether a term no index of the scope serves is checked on its rows.
    fn residual(&self) -> bool {
        self.status.is_some()
            || self.event_type.is_some()
            || self.completed_after.is_some()
            || (self.key_prefix.is_some() && self.ids.is_none())
    }

    /// The ids the filter's rows lie among, as `id <op> <bound>` terms:
    /// its creation window's start and end, and its cursor.
    pub fn id_terms(&self) -> impl Iterator<Item = (&'static str, Uuid)> {
        let (low, high) = self.created.id_range();
        [
            low.map(|low| (">=", low)),
            high.map(|high| ("<", high)),
            self.cursor.map(|cursor| (self.order.past(), cursor)),
        ]
        .into_iter()
        .flatten()
    }

    /// The key prefix, when the rows a bounded page reads are checked
    /// for it one by one (it names more than `MAX_EXAMINED`).
    pub fn checked_prefix(&self) -> Option<&str> {
        self.key_prefix.as_deref().filter(|_| self.ids.is_none())
    }

    /// The rows a bounded page reads from each endpoint of a scope of
    /// `endpoints`: `MAX_EXAMINED` shared among them, and at least a full
    /// page each, so that an owner's unfiltered list is always a full
    /// page. (A scope that is one endpoint, or every endpoint, is 1.)
    pub fn examined_per_endpoint(&self, endpoints: i64) -> i64 {
        let share = if self.residual() {
            MAX_EXAMINED.div_euclid(endpoints.max(1))
        } else {
            0
        };
        share.max(self.limit).max(1)
    }
}

impl NewNotification {
    /// The row the store created, with the place in its key's order the
    /// store gave it (`Ordered::default()` for one not ordered).
    pub(crate) fn into_row(self, created_at: DateTime<Utc>, place: Ordered) -> Notification {
        Notification {
            id: self.id,
            endpoint_id: self.endpoint_id,
            key: self.key,
            event_type: self.event_type,
            content_type: self.content_type,
            body: self.body,
            headers: self.headers,
            schedule_ms: self.schedule.delays_ms(),
            schedule_name: self.schedule.name().map(str::to_string),
            status: Status::Pending,
            attempts: 0,
            series_start: 0,
            deliver_at: self.deliver_at,
            next_attempt_at: Some(self.next_attempt_at),
            last_attempt_at: None,
            last_status_code: None,
            last_error: None,
            created_at,
            updated_at: created_at,
            completed_at: None,
            event_id: None,
            url: self.url,
            pull: self.pull,
            leased: false,
            order_key: self.order_key,
            sequence: place.sequence,
            behind: place.behind,
        }
    }
}

/// The place a create gave a notification in its key's order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ordered {
    pub sequence: Option<i64>,
    pub behind: Option<Uuid>,
}
