//! The dispatcher's side of the store: load claimed notifications with their
//! endpoint in one query, record a batch of attempts in one statement, and
//! retries by hand. What a recorded attempt changes
//! is decided in `domain/` (the notification's next state, its operator
//! event, the endpoint's health); this writes it, fenced against concurrent
//! writers.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use sqlx::types::Json;
use uuid::Uuid;

use super::endpoints::PreviousSecret;
use super::events::{Event, NewDelivery};
use super::notifications::{cancel_pending, Notification, Pending};
use super::operator::{insert_operator_events, EventBinds};
use super::{Store, StoreError};
use crate::domain::health::Health;
use crate::domain::operator_event::{OperatorEvent, OPERATOR_ENDPOINT_ID};
use crate::domain::outcome::Outcome;
use crate::domain::schedule::Schedule;
use crate::domain::sealed::SealError;
use crate::domain::status::{AfterAttempt, Status};

/// A claimed notification, as the dispatcher needs it. `Debug` leaves out
/// the body and the custom headers (which may carry credentials).
#[derive(Clone, sqlx::FromRow)]
pub struct DueNotification {
    pub id: Uuid,
    pub endpoint_id: Uuid,
    pub key: Option<String>,
    pub event_type: Option<String>,
    pub content_type: String,
    pub body: Vec<u8>,
    pub headers: Json<BTreeMap<String, String>>,
    pub schedule_ms: Vec<i64>,
    pub schedule_name: Option<String>,
    pub status: Status,
    pub attempts: i32,
    pub series_start: i32,
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
    #[sqlx(skip)]
    pub unreadable: Option<SealError>,
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
            next_attempt_at: row.next_attempt_at,
            event_id: row.event_id,
            url: row.url.clone(),
            endpoint_version: Some(endpoint_version),
            unreadable: None,
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
            headers: Json(headers.clone()),
            schedule_ms: delivery.schedule.delays_ms(),
            schedule_name: delivery.schedule.name().map(str::to_string),
            status: Status::Pending,
            attempts: 0,
            series_start: 0,
            next_attempt_at: Some(delivery.next_attempt_at),
            event_id: Some(event.id),
            url: None,
            endpoint_version: Some(endpoint_version),
            unreadable: None,
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
#[derive(Clone, sqlx::FromRow)]
pub struct DeliveryEndpoint {
    pub id: Uuid,
    /// The row's version: its `xmin`, which every update of the row changes.
    pub version: i64,
    pub url: String,
    pub secret: String,
    pub previous_secrets: Json<Vec<PreviousSecret>>,
    pub success_body: Option<String>,
    pub permanent_statuses: Vec<i32>,
    pub headers: Json<BTreeMap<String, String>>,
    pub timeout_ms: Option<i32>,
    pub max_in_flight: Option<i32>,
    pub disabled: bool,
    pub deleted: bool,
    /// The endpoint is pull now: its consumers take what was claimed.
    pub pull: bool,
    /// A secret or header value that did not open (its key is not in
    /// `secrets.keys`): every delivery to the endpoint fails with it.
    #[sqlx(skip)]
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

/// One finished attempt, to be recorded, with what it decided.
#[derive(Debug, Clone)]
pub struct AttemptRecord {
    pub notification_id: Uuid,
    /// The notification's endpoint, whose health the attempt tells of.
    pub endpoint_id: Uuid,
    /// 1-based, over every series: the notification had `number - 1` before.
    pub number: i32,
    /// The series the attempt belongs to: a retry since then wins.
    pub series_start: i32,
    pub started_at: DateTime<Utc>,
    pub duration_ms: i32,
    pub status_code: Option<i32>,
    pub response_body: Option<String>,
    pub error_code: Option<String>,
    pub error_message: Option<String>,
    pub outcome: Outcome,
    /// What the notification becomes (`domain::status::after_attempt`).
    pub next: AfterAttempt,
    /// The `notification.failed` event, when `next` ends it failed and
    /// operator events are on.
    pub event: Option<OperatorEvent>,
    /// For the end of a pull lease: the lease, and whether it is ending
    /// because it ran out. The attempt is written only if that lease is
    /// still the notification's and has (or, for an ack or nack, has not)
    /// run out; `None` for push.
    pub lease: Option<(Uuid, bool)>,
}

/// The result of `POST /v1/notifications/{id}/retry`.
#[derive(Debug)]
pub enum Retry {
    Retried(Notification),
    /// Succeeded or cancelled: nothing to send again.
    NotRetryable(Notification),
    /// A consumer holds it under a lease that has not run out: its attempt
    /// is under way, and a retry would race it.
    InFlight(Notification),
    NotFound,
}

impl Store {
    /// Loads claimed notifications, each with its endpoint row's version,
    /// then the endpoints for which `current` says the caller's copy is not
    /// of that version: usually none, so a claim is one query. An endpoint
    /// is decoded (and opened, when sealed) once per batch at most rather
    /// than once per notification. Notifications without custom headers
    /// open nothing.
    pub async fn load_claimed(
        &self,
        ids: &[Uuid],
        current: &(dyn Fn(Uuid, i64) -> bool + Sync),
    ) -> Result<Claimed, StoreError> {
        // An event's delivery has its event's body and type (stored once
        // per event).
        let mut notifications = sqlx::query_as::<_, DueNotification>(
            "SELECT n.id, n.endpoint_id, n.key, n.content_type, \
                 CASE WHEN n.event_id IS NULL THEN n.event_type ELSE e.event_type END AS event_type, \
                 CASE WHEN n.event_id IS NULL THEN n.body ELSE e.body END AS body, \
                 n.headers, n.schedule_ms, n.schedule_name, n.status, n.attempts, n.series_start, \
                 n.next_attempt_at, n.event_id, n.url, \
                 (SELECT ep.xmin::text::bigint FROM endpoints ep WHERE ep.id = n.endpoint_id) \
                     AS endpoint_version \
             FROM notifications n LEFT JOIN events e ON e.id = n.event_id \
             WHERE n.id = ANY($1)",
        )
        .bind(ids)
        .fetch_all(&self.pool)
        .await?;
        for row in &mut notifications {
            row.unreadable = self.open_outgoing_headers(row.id, &mut row.headers.0);
        }
        self.with_endpoints(notifications, current).await
    }

    /// Notifications to deliver with, once each, those of their endpoints
    /// for which `current` says the caller's copy is not of the version the
    /// notification came with: usually none, and then no query at all.
    pub async fn with_endpoints(
        &self,
        notifications: Vec<DueNotification>,
        current: &(dyn Fn(Uuid, i64) -> bool + Sync),
    ) -> Result<Claimed, StoreError> {
        let mut endpoint_ids: Vec<Uuid> = notifications
            .iter()
            .filter(|n| {
                n.endpoint_version
                    .is_some_and(|version| !current(n.endpoint_id, version))
            })
            .map(|n| n.endpoint_id)
            .collect();
        endpoint_ids.sort_unstable();
        endpoint_ids.dedup();
        let mut endpoints = if endpoint_ids.is_empty() {
            Vec::new()
        } else {
            sqlx::query_as::<_, DeliveryEndpoint>(
                "SELECT id, xmin::text::bigint AS version, COALESCE(url, '') AS url, secret, \
                     previous_secrets, success_body, permanent_statuses, headers, timeout_ms, \
                     max_in_flight, disabled, \
                     (deleted_at IS NOT NULL) AS deleted, delivery = 'pull' AS pull \
                 FROM endpoints WHERE id = ANY($1)",
            )
            .bind(&endpoint_ids)
            .fetch_all(&self.pool)
            .await?
        };
        for endpoint in &mut endpoints {
            if let Err(error) = self.open_delivery_endpoint(endpoint) {
                tracing::error!(endpoint_id = %endpoint.id, %error, "cannot open the endpoint's secret or headers; its deliveries fail until secrets.keys holds the key");
                endpoint.unreadable = Some(error);
            }
        }
        Ok(Claimed {
            notifications,
            endpoints,
        })
    }

    /// Records many attempts in one statement (one commit): inserts the
    /// attempt rows and writes each notification's decided next state. A
    /// notification moves only if it is still pending and had exactly
    /// `number - 1` attempts in the same series, so a duplicate delivery (a
    /// lease that expired mid-attempt) or one that raced a cancel or a retry
    /// changes nothing but its own attempt row. Returns the ids whose state
    /// moved.
    ///
    /// In the same statement, so that none commits without the others:
    /// - each record's operator event is inserted if its notification moved
    ///   (a notification never ends failed without its event);
    /// - `health` (`domain::health::observe` over the batch, in endpoint id
    ///   order) is written to each endpoint that one of the moved
    ///   notifications belongs to and whose state it changes. Those rows are
    ///   locked in id order before any is written: two processes recording
    ///   changes to the same endpoints wait for each other instead of
    ///   deadlocking. An endpoint whose state does not change (nearly every
    ///   batch) is read, neither locked nor written.
    ///
    /// `(n.status = 'pending') IS TRUE` says `status = 'pending'` in a form
    /// the planner cannot match to the partial index
    /// `notifications_pending_due (next_attempt_at, id) WHERE status =
    /// 'pending'`: on a table without fresh statistics (a bulk load just
    /// before), it chose that index with `id = ANY($1)` as a filter on its
    /// second column, walking every pending row per batch (28 ms per 100
    /// acks beside 20,000 pending, 85 buffers per row), instead of the
    /// primary key.
    ///
    /// How the update finds its rows, and why not also by `id = ANY($1)`:
    /// `RECORD_ATTEMPTS`.
    pub async fn record_attempts(
        &self,
        records: &[AttemptRecord],
        health: &[(Uuid, Health)],
    ) -> Result<Vec<Uuid>, StoreError> {
        if records.is_empty() {
            return Ok(Vec::new());
        }
        let mut conn = self.pool.acquire().await?;
        record_attempts_on(&mut conn, records, health).await
    }

    /// Cancels pending notifications whose endpoint was deleted (a create that
    /// raced the delete).
    pub async fn cancel_notifications(&self, ids: &[Uuid]) -> Result<(), StoreError> {
        cancel_pending(&self.pool, Pending::Ids(ids)).await?;
        Ok(())
    }

    /// Starts a new attempt series now for a failed or pending notification.
    pub async fn retry_notification(
        &self,
        id: Uuid,
        now: DateTime<Utc>,
    ) -> Result<Retry, StoreError> {
        // An event's delivery comes back with its event's type and body.
        let retried = sqlx::query_as::<_, Notification>(sqlx::AssertSqlSafe(format!(
            "UPDATE notifications SET status = 'pending', series_start = attempts, next_attempt_at = $2, \
                 completed_at = NULL, needs_index = false, lease_id = NULL, leased_at = NULL, \
                 updated_at = now() \
             WHERE id = $1 AND status IN ('pending', 'failed') \
               AND (lease_id IS NULL OR next_attempt_at <= now()) RETURNING {}",
            super::notifications::columns_with_body()
        )))
        .bind(id)
        .bind(now)
        .fetch_optional(&self.pool)
        .await?;
        if let Some(row) = retried {
            return Ok(Retry::Retried(self.open_notification(row)));
        }
        Ok(match self.get_notification(id).await? {
            Some(row) if row.status() == Status::Pending && row.leased => Retry::InFlight(row),
            Some(row) => Retry::NotRetryable(row),
            None => Retry::NotFound,
        })
    }
}

/// The recording statement (`record_attempts_on`).
///
/// The update is driven by the input: for each attempt it probes the
/// primary key (`n.id = i.id`). hookd's connections plan it once
/// (`plan_cache_mode = force_generic_plan`), and a generic plan counts 10
/// rows out of any UNNEST. With `n.id = ANY($1)` in the WHERE clause as
/// well (it was there to steer custom plans away from hashing every pending
/// row), the generic plan took `notifications` for a single row and
/// scanned the whole input once per notification: quadratic, 999,000
/// rows compared for a batch of 1,000, 216 ms for 624 attempts; and as
/// a slow statement lets the next batch grow, at 4,000 notifications/s
/// it ran away to batches of 900 taking 345 ms each. The test
/// `the_recording_statement_probes_the_primary_key_per_attempt` reads its
/// plan.
pub(super) const RECORD_ATTEMPTS: &str = concat!(
    "WITH input AS ( \
         SELECT * FROM UNNEST($1::uuid[], $2::int[], $3::timestamptz[], $4::int[], $5::int[], \
             $6::text[], $7::text[], $8::text[], $9::text[], $10::int[], $11::text[], \
             $12::timestamptz[], $13::bool[], $14::text[], $23::uuid[], $24::bool[]) \
         AS t(id, number, started_at, duration_ms, status_code, response_body, error_code, \
              error_message, outcome, series_start, status, next_at, completed, last_error, \
              lease, expired) \
     ), moved AS ( \
         UPDATE notifications n SET \
             attempts = i.number, \
             status = i.status, \
             next_attempt_at = i.next_at, \
             last_attempt_at = i.started_at, \
             last_status_code = i.status_code, \
             last_error = i.last_error, \
             completed_at = CASE WHEN i.completed THEN now() END, \
             lease_id = NULL, leased_at = NULL, \
             updated_at = now() \
         FROM input i \
         WHERE n.id = i.id \
           AND (n.status = 'pending') IS TRUE AND n.attempts = i.number - 1 \
           AND n.series_start = i.series_start \
           AND (i.lease IS NULL OR (n.lease_id = i.lease \
                AND (n.next_attempt_at <= now()) = i.expired)) \
         RETURNING n.id, n.endpoint_id \
     ), recorded AS ( \
         INSERT INTO attempts (notification_id, number, started_at, duration_ms, status_code, \
             response_body, error_code, error_message, outcome) \
         SELECT id, number, started_at, duration_ms, status_code, response_body, error_code, \
             error_message, outcome FROM input i \
         WHERE i.id IN (SELECT id FROM moved) \
            OR (i.lease IS NULL AND EXISTS (SELECT 1 FROM notifications n WHERE n.id = i.id)) \
         ON CONFLICT (notification_id, number) DO NOTHING \
     ), reported AS (",
    insert_operator_events!("moved", "$15", "$16", "$17", "$18", "$19"),
    "), health AS ( \
         SELECT * FROM UNNEST($20::uuid[], $21::timestamptz[], $22::bool[]) \
         AS h(id, failing_since, if_failing) \
     ), changing AS MATERIALIZED ( \
         SELECT e.id, h.failing_since FROM endpoints e JOIN health h ON h.id = e.id \
         WHERE (e.failing_since IS NOT NULL) = h.if_failing \
           AND EXISTS (SELECT 1 FROM moved m WHERE m.endpoint_id = e.id) \
         ORDER BY e.id FOR NO KEY UPDATE OF e \
     ), healed AS ( \
         UPDATE endpoints e SET failing_since = c.failing_since \
         FROM changing c WHERE e.id = c.id \
     ) \
     SELECT id FROM moved"
);

/// `Store::record_attempts` on a connection of the caller's. Every lease a
/// recorded attempt ends is cleared with it; an attempt that ends a pull
/// lease is written only if that lease is still the row's (`lease`). An
/// attempt row is written only for a notification that exists: `attempts`
/// has no foreign key (it cost a query and a row lock per attempt), so
/// this statement keeps that rule, and retention deletes attempts with
/// their notification.
pub(super) async fn record_attempts_on(
    conn: &mut sqlx::PgConnection,
    records: &[AttemptRecord],
    health: &[(Uuid, Health)],
) -> Result<Vec<Uuid>, StoreError> {
    if records.is_empty() {
        return Ok(Vec::new());
    }
    let mut ids = Vec::with_capacity(records.len());
    let mut numbers = Vec::with_capacity(records.len());
    let mut series = Vec::with_capacity(records.len());
    let mut started = Vec::with_capacity(records.len());
    let mut durations = Vec::with_capacity(records.len());
    let mut status_codes = Vec::with_capacity(records.len());
    let mut bodies = Vec::with_capacity(records.len());
    let mut error_codes = Vec::with_capacity(records.len());
    let mut error_messages = Vec::with_capacity(records.len());
    let mut outcomes = Vec::with_capacity(records.len());
    let mut statuses = Vec::with_capacity(records.len());
    let mut next_ats = Vec::with_capacity(records.len());
    let mut completed = Vec::with_capacity(records.len());
    let mut last_errors = Vec::with_capacity(records.len());
    let mut leases = Vec::with_capacity(records.len());
    let mut expired = Vec::with_capacity(records.len());
    let mut events = EventBinds::default();
    for r in records {
        ids.push(r.notification_id);
        numbers.push(r.number);
        series.push(r.series_start);
        started.push(r.started_at);
        durations.push(r.duration_ms);
        status_codes.push(r.status_code);
        // PostgreSQL text cannot hold NUL bytes; receivers can send them.
        bodies.push(
            r.response_body
                .as_ref()
                .map(|b| b.replace('\0', "\u{FFFD}")),
        );
        error_codes.push(r.error_code.as_deref());
        error_messages.push(r.error_message.as_deref());
        outcomes.push(r.outcome.kind());
        statuses.push(r.next.status);
        next_ats.push(r.next.next_attempt_at);
        completed.push(r.next.completed);
        last_errors.push(r.next.last_error.as_deref());
        leases.push(r.lease.map(|(lease, _)| lease));
        expired.push(r.lease.is_some_and(|(_, expired)| expired));
        if let Some(event) = &r.event {
            events.push(event);
        }
    }
    let health_ids: Vec<Uuid> = health.iter().map(|(id, _)| *id).collect();
    let failing_since: Vec<Option<DateTime<Utc>>> =
        health.iter().map(|(_, h)| h.failing_since()).collect();
    let if_failing: Vec<bool> = health
        .iter()
        .map(|(_, h)| h.changes_a_failing_endpoint())
        .collect();
    let moved: Vec<Uuid> = sqlx::query_scalar(RECORD_ATTEMPTS)
        .bind(&ids)
        .bind(&numbers)
        .bind(&started)
        .bind(&durations)
        .bind(&status_codes)
        .bind(&bodies)
        .bind(&error_codes)
        .bind(&error_messages)
        .bind(&outcomes)
        .bind(&series)
        .bind(&statuses)
        .bind(&next_ats)
        .bind(&completed)
        .bind(&last_errors)
        .bind(&events.subjects)
        .bind(&events.types)
        .bind(&events.keys)
        .bind(&events.bodies)
        .bind(OPERATOR_ENDPOINT_ID)
        .bind(&health_ids)
        .bind(&failing_since)
        .bind(&if_failing)
        .bind(&leases)
        .bind(&expired)
        .fetch_all(&mut *conn)
        .await?;
    Ok(moved)
}
