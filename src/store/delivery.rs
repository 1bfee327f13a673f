//! The dispatcher's side of the store: what a claim (or a hand-off) loads,
//! each claimed notification with its endpoint in one query, and retries by
//! hand. Recording attempts is `recording`.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::endpoints::PreviousSecret;
use super::events::{Event, NewDelivery};
use super::notifications::Notification;
use crate::domain::lane::Lane;
use crate::domain::schedule::Schedule;
use crate::domain::sealed::SealError;
use crate::domain::status::Status;

/// A claimed notification, as the dispatcher needs it. `Debug` leaves out
/// the body and the custom headers (which may carry credentials).
#[derive(Clone)]
pub struct DueNotification {
    pub id: Uuid,
    pub endpoint_id: Uuid,
    pub key: Option<String>,
    pub event_type: Option<String>,
    pub content_type: String,
    pub body: Vec<u8>,
    pub headers: BTreeMap<String, String>,
    pub schedule_ms: Vec<i64>,
    pub schedule_name: Option<String>,
    pub status: Status,
    pub attempts: i32,
    pub series_start: i32,
    /// Released by a closing circuit: its lane is backlog (`domain::lane`).
    pub released_by_circuit: bool,
    pub next_attempt_at: Option<DateTime<Utc>>,
    /// The event delivered, if this is an event's delivery.
    pub event_id: Option<Uuid>,
    /// A per-notification URL that replaces the endpoint's.
    pub url: Option<String>,
    /// The version of the endpoint's row when this was loaded (`None` if
    /// the row is gone): a prepared endpoint of the same version is still
    /// current.
    pub endpoint_version: Option<i64>,
    /// A custom header value that did not open: the attempt fails with it.
    pub unreadable: Option<SealError>,
    /// Its place in its key's order, on an ordered endpoint
    /// (`webhook-sequence`).
    pub sequence: Option<i64>,
}

impl std::fmt::Debug for DueNotification {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DueNotification")
            .field("id", &self.id)
            .field("endpoint_id", &self.endpoint_id)
            .field("status", &self.status)
            .field("attempts", &self.attempts)
            .field("next_attempt_at", &self.next_attempt_at)
            .finish_non_exhaustive()
    }
}

impl DueNotification {
    /// The share of its endpoint's capacity it is sent on.
    pub fn lane(&self) -> Lane {
        Lane::of(self.attempts, self.released_by_circuit)
    }

    /// A notification this process has just created, as a claim would load
    /// it, with the version its endpoint had in the creating statement.
    pub fn created(row: &Notification, endpoint_version: i64) -> Self {
        Self {
            id: row.id,
            endpoint_id: row.endpoint_id,
            key: row.key.clone(),
            event_type: row.event_type.clone(),
            content_type: row.content_type.clone(),
            body: row.body.clone(),
            headers: row.headers.clone(),
            schedule_ms: row.schedule_ms.clone(),
            schedule_name: row.schedule_name.clone(),
            status: row.status,
            attempts: row.attempts,
            series_start: row.series_start,
            released_by_circuit: false,
            next_attempt_at: row.next_attempt_at,
            event_id: row.event_id,
            url: row.url.clone(),
            endpoint_version: Some(endpoint_version),
            unreadable: None,
            sequence: row.sequence,
        }
    }

    /// A delivery of an event this process has just created, as a claim
    /// would load it (the event's type and body, the event's headers), with
    /// the version its endpoint had in the creating statement.
    pub fn delivering(
        event: &Event,
        headers: &BTreeMap<String, String>,
        delivery: &NewDelivery,
        endpoint_version: i64,
    ) -> Self {
        Self {
            id: delivery.id,
            endpoint_id: delivery.endpoint_id,
            key: None,
            event_type: Some(event.event_type.clone()),
            content_type: event.content_type.clone(),
            body: event.body.clone(),
            headers: headers.clone(),
            schedule_ms: delivery.schedule.delays_ms(),
            schedule_name: delivery.schedule.name().map(str::to_string),
            status: Status::Pending,
            attempts: 0,
            series_start: 0,
            released_by_circuit: false,
            next_attempt_at: Some(delivery.next_attempt_at),
            event_id: Some(event.id),
            url: None,
            endpoint_version: Some(endpoint_version),
            unreadable: None,
            sequence: delivery.place.sequence,
        }
    }

    pub fn status(&self) -> Status {
        self.status
    }

    pub fn schedule(&self) -> Schedule {
        Schedule::from_stored(self.schedule_name.clone(), &self.schedule_ms)
    }
}

/// The endpoint policy that governs the deliveries of a claimed batch.
/// `Debug` shows only identity fields: the row holds signing secrets.
#[derive(Clone)]
pub struct DeliveryEndpoint {
    pub id: Uuid,
    /// The endpoint's uid, if it has one.
    pub uid: Option<String>,
    /// The row's `version`, raised by every change of what a delivery uses.
    pub version: i64,
    pub url: String,
    pub secret: String,
    pub previous_secrets: Vec<PreviousSecret>,
    pub success_body: Option<String>,
    pub success_filter: Option<crate::domain::payload_filter::PayloadFilter>,
    pub permanent_statuses: Vec<i32>,
    /// The endpoint's `schedule_jitter`, applied where a retry's time is
    /// decided.
    pub schedule_jitter: f64,
    /// The endpoint's own rate limit, both or neither.
    pub rate_limit_per_second: Option<f64>,
    pub rate_limit_burst: Option<i32>,
    /// The endpoint's own `fresh_share`, if it sets one.
    pub fresh_share: Option<f64>,
    /// The endpoint's circuit breaker settings (`domain::breaker`).
    pub breaker: crate::domain::breaker::Override,
    pub headers: BTreeMap<String, String>,
    pub timeout_ms: Option<i32>,
    pub max_in_flight: Option<i32>,
    pub disabled: bool,
    pub deleted: bool,
    /// The endpoint is pull now: its consumers take what was claimed.
    pub pull: bool,
    /// A secret or header value that did not open (its key is not in
    /// `secrets.keys`): every delivery to the endpoint fails with it.
    pub unreadable: Option<SealError>,
}

impl std::fmt::Debug for DeliveryEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeliveryEndpoint")
            .field("id", &self.id)
            .field("disabled", &self.disabled)
            .field("deleted", &self.deleted)
            .finish_non_exhaustive()
    }
}

/// What a claim loads: the notifications, and once each those of their
/// endpoints that the caller did not already have at their current version.
#[derive(Debug, Default)]
pub struct Claimed {
    pub notifications: Vec<DueNotification>,
    pub endpoints: Vec<DeliveryEndpoint>,
}

/// The endpoints of `notifications` whose copy at the caller `current`
/// says is not of the version a notification came with, each once, in
/// order: what a claim loads beside its rows (usually none). A row whose
/// endpoint is gone entirely (no version) asks for none.
pub fn stale_endpoints(
    notifications: &[DueNotification],
    current: &(dyn Fn(Uuid, i64) -> bool + Sync),
) -> Vec<Uuid> {
    let mut ids: Vec<Uuid> = notifications
        .iter()
        .filter(|n| {
            n.endpoint_version
                .is_some_and(|version| !current(n.endpoint_id, version))
        })
        .map(|n| n.endpoint_id)
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// What a claim needs of a notification to tell, before its body is read,
/// that it goes back to the index (its endpoint is throttled or its
/// circuit holds): a row without its body, headers or schedule.
#[derive(Debug, Clone, PartialEq)]
pub struct Head {
    pub id: Uuid,
    pub endpoint_id: Uuid,
    pub status: Status,
    pub next_attempt_at: Option<DateTime<Utc>>,
    /// Attempts made, in all its series.
    pub attempts: i32,
    /// Released by a closing circuit.
    pub released_by_circuit: bool,
    /// The version of the endpoint's row (`None` if the row is gone).
    pub endpoint_version: Option<i64>,
}

impl Head {
    /// The share of its endpoint's capacity it is sent on.
    pub fn lane(&self) -> Lane {
        Lane::of(self.attempts, self.released_by_circuit)
    }
}

/// The result of `POST /v1/notifications/{id}/retry`.
#[derive(Debug)]
pub enum Retry {
    Retried(Notification),
    /// Succeeded or cancelled: nothing to send again.
    NotRetryable(Notification),
    /// Pending, and being delivered (leased in the due index, or under a
    /// consumer's lease that has not run out): its attempt is under way,
    /// and a retry would race it.
    InFlight(Notification),
    /// Pulled, and its consumer's lease has run out without the attempt
    /// it ended being recorded yet (the lease sweep runs every second): the
    /// caller records that `lease_expired` attempt first, then retries.
    LeaseRanOut(Notification),
    /// Failed or pending, of an endpoint that was deleted: nothing would
    /// send it.
    EndpointDeleted(Notification),
    NotFound,
}

/// A notification's state as a retry by hand reads it (`RetryStep::read`).
pub(crate) struct RetryRead {
    pub status: Status,
    pub attempts: i32,
    pub lease: Option<crate::domain::lease::Lease>,
    /// Its endpoint was deleted (or is missing). PostgreSQL reads it under
    /// no lock (`postgres::delivery` says why): a delete committed while
    /// the retry runs leaves the row pending, and the dispatcher cancels it.
    pub endpoint_deleted: bool,
    /// The store's clock when it was read: whether a consumer's lease still
    /// runs.
    pub read_at: DateTime<Utc>,
}

/// A backend's side of a retry by hand, in one transaction: the read (no
/// other writer changes the row until `commit`) and the write.
#[async_trait::async_trait]
pub(crate) trait RetryStep: Send {
    /// The notification's state; `None`: no such notification.
    async fn read(&mut self, id: Uuid) -> Result<Option<RetryRead>, super::StoreError>;
    /// Starts the new series `retried` on the row read; the row after it.
    async fn write(
        &mut self,
        id: Uuid,
        retried: &crate::domain::transition::Retried,
        read_at: DateTime<Utc>,
    ) -> Result<Notification, super::StoreError>;
    /// The row as it is: what a refusal comes back with.
    async fn row(&mut self, id: Uuid) -> Result<Notification, super::StoreError>;
    /// Puts a final notification of an ordered key that is pending again
    /// back in its key's order (`store::ordering`): what it waits for now.
    async fn requeue(&mut self, row: &Notification) -> Result<Option<Uuid>, super::StoreError>;
    async fn commit(self) -> Result<(), super::StoreError>;
}

/// A retry by hand, at `now`, of notification `id` (`delivering`: the due
/// index holds a lease on it), for both backends: `step` reads,
/// `domain::transition::retry` decides, `step` writes the new series or
/// reads the row a refusal comes back with.
pub(crate) async fn retry_notification(
    mut step: impl RetryStep,
    id: Uuid,
    now: DateTime<Utc>,
    delivering: bool,
) -> Result<Retry, super::StoreError> {
    use crate::domain::transition::{retry, RetryRefused};
    let Some(read) = step.read(id).await? else {
        return Ok(Retry::NotFound);
    };
    let decided = retry(
        (read.status, read.attempts, read.lease),
        read.endpoint_deleted,
        delivering,
        now,
        read.read_at,
    );
    let row = match &decided {
        Ok(retried) => {
            let mut row = step.write(id, retried, read.read_at).await?;
            if read.status != Status::Pending && row.sequence.is_some() {
                row.behind = step.requeue(&row).await?;
            }
            row
        }
        Err(_) => step.row(id).await?,
    };
    step.commit().await?;
    Ok(match decided {
        Ok(_) => Retry::Retried(row),
        Err(RetryRefused::NotRetryable) => Retry::NotRetryable(row),
        Err(RetryRefused::InFlight) => Retry::InFlight(row),
        Err(RetryRefused::LeaseRanOut) => Retry::LeaseRanOut(row),
        Err(RetryRefused::EndpointDeleted) => Retry::EndpointDeleted(row),
    })
}
