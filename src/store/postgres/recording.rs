//! Recording attempts in PostgreSQL: one statement per batch, and, for
//! its ordered ends, the two of `releasing` that release what they let go
//! (`ENDED_KEYS`, then `RELEASE_ENDED`), given the successes as the
//! recording returned them.
//!
//! Nothing is decided here. Each record comes with its decisions made in
//! `domain/`: the notification's next state (`status::after_attempt`), the
//! row state it was decided on (`status::Expected`), where the attempt is
//! kept (`status::keeping`), its operator event (`operator_event`), and the
//! batch's endpoint health (`health::observe`). What the statement still
//! compares is persistence, each a compare-and-set on values the domain
//! chose, or an effect that commits only with the write it belongs to:
//! - `n.attempts = i.attempts AND n.series_start = i.series_start AND
//!   (n.status = 'pending')` and, for a pull lease, `n.lease_id = i.lease`
//!   (and `n.next_attempt_at = i.lease_ran_out_at` for one that ran out):
//!   the row is still as `Expected` says (its status is always pending:
//!   only pending notifications are attempted);
//! - an attempt row for a record that moved and is not kept `inline`, or
//!   that did not move and is kept `when_refused`; `ON CONFLICT` and the
//!   `first_attempt_ms IS NULL OR number <> 1` test keep one attempt 1 per
//!   notification, whether stored in a row or inline (a uniqueness, like a
//!   key's);
//! - after the statement, and only when a row did not move, a refused
//!   attempt kept in the history counts on a cancelled notification whose
//!   next attempt it is (`count_refused`, `status::COUNTS_REFUSED_ATTEMPTS`);
//! - operator events inserted for moved rows only, while the operator
//!   endpoint exists (`insert_operator_events!`);
//! - health written over an endpoint in the other state only
//!   (`(failing_since IS NOT NULL) = if_failing`, from
//!   `Health::changes_a_failing_endpoint`), still push (`url IS NOT NULL`:
//!   the schema's rendering of `delivery = 'push'`, the endpoints whose
//!   health is observed), and one of whose notifications moved.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::operator::{insert_operator_events, EventBinds};
use super::partitions::id_span;
use super::releasing::{release_ended, release_in_batch, Ends};
use super::PgStore;
use crate::domain::health::Health;
use crate::domain::operator_event::OPERATOR_ENDPOINT_ID;
use crate::domain::status::COUNTS_REFUSED_ATTEMPTS;
use crate::store::recording::{refused_kept, AttemptRecord, Recorded};
use crate::store::StoreError;

impl PgStore {
    /// Records many attempts in one statement (one commit, with the
    /// per-minute counts they add): inserts the
    /// attempt rows and writes each notification's decided next state. A
    /// notification delivered at its first attempt (`Keeping::inline`) that
    /// moves keeps that attempt in its own row
    /// (`first_attempt_ms`, `first_attempt_body`, with `last_attempt_at` and
    /// `last_status_code`) instead of a row of `attempts`: the write most
    /// deliveries make, spared (migration `20261128000001`). A second
    /// recording of that attempt (a process whose lease ran out) adds no
    /// row 1 beside it, as `ON CONFLICT` keeps the first of two rows. A
    /// notification moves only if it is still as its record's `Expected`
    /// says (pending, with exactly that many attempts in the same series,
    /// under the same lease), so a duplicate delivery (a lease that expired
    /// mid-attempt) or one that raced a cancel or a retry changes nothing
    /// but its own attempt row (`Keeping::when_refused`). Returns the ids
    /// whose state moved.
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
    ) -> Result<Recorded, StoreError> {
        if records.is_empty() {
            return Ok(Recorded::default());
        }
        // A transaction, for the per-minute counts written after the
        // statement (`record_attempts_on`) and what the ends released.
        let mut tx = self.pool.begin().await?;
        let now = self.clock.now();
        let ordered = records.iter().any(|r| r.ordered);
        if ordered {
            release_in_batch(&mut tx).await?;
        }
        let moved = record_attempts_on(&mut tx, records, health, now, self.count_minutes).await?;
        let released = if ordered {
            release_ended(&mut tx, &Ends::of(records, &moved), now).await?
        } else {
            Vec::new()
        };
        tx.commit().await?;
        Ok(Recorded {
            moved: moved.ids,
            released,
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
             $12::timestamptz[], $13::bool[], $14::text[], $23::uuid[], $24::timestamptz[], \
             $25::int[], $26::bool[], $27::bool[], $30::text[], $31::text[], $32::bool[]) \
         AS t(id, number, started_at, duration_ms, status_code, response_body, error_code, \
              error_message, outcome, series_start, status, next_at, completed, last_error, \
              lease, lease_ran_out_at, attempts, inline, kept_if_refused, sent_headers, \
              response_headers, retried) \
     ), moved AS ( \
         UPDATE notifications n SET \
             attempts = i.number, \
             status = i.status, \
             next_attempt_at = i.next_at, \
             last_attempt_at = i.started_at, \
             last_status_code = i.status_code, \
             last_error = i.last_error, \
             first_attempt_ms = CASE WHEN i.inline THEN i.duration_ms \
                                     ELSE n.first_attempt_ms END, \
             first_attempt_body = CASE WHEN i.inline THEN i.response_body \
                                       ELSE n.first_attempt_body END, \
             completed_at = CASE WHEN i.completed THEN $29::timestamptz END, \
             behind = CASE WHEN i.status = 'succeeded' THEN NULL ELSE n.behind END, \
             lease_id = NULL, leased_at = NULL, \
             updated_at = $29 \
         FROM input i \
         WHERE n.id = i.id \
           AND (n.status = 'pending') IS TRUE AND n.attempts = i.attempts \
           AND n.series_start = i.series_start \
           AND (i.lease IS NULL OR (n.lease_id = i.lease \
                AND (i.lease_ran_out_at IS NULL OR n.next_attempt_at = i.lease_ran_out_at))) \
         RETURNING n.id, n.endpoint_id, n.order_key, i.inline \
     ), recorded AS ( \
         INSERT INTO attempts (notification_id, number, started_at, duration_ms, status_code, \
             response_body, error_code, error_message, outcome, sent_headers, response_headers, \
             retried) \
         SELECT id, number, started_at, duration_ms, status_code, response_body, error_code, \
             error_message, outcome, sent_headers, response_headers, retried FROM input i \
         WHERE i.id IN (SELECT id FROM moved WHERE NOT inline) \
            OR (i.kept_if_refused AND i.id NOT IN (SELECT id FROM moved) \
                AND EXISTS (SELECT 1 FROM notifications n WHERE n.id = i.id \
                            AND (n.first_attempt_ms IS NULL OR i.number <> 1))) \
         ON CONFLICT (notification_id, number) DO NOTHING \
     ), ",
    insert_operator_events!("moved", "$28", "$15", "$16", "$17", "$18", "$19", "$29"),
    ", health AS ( \
         SELECT * FROM UNNEST($20::uuid[], $21::timestamptz[], $22::bool[]) \
         AS h(id, failing_since, if_failing) \
     ), changing AS MATERIALIZED ( \
         SELECT e.id, h.failing_since FROM endpoints e JOIN health h ON h.id = e.id \
         WHERE (e.failing_since IS NOT NULL) = h.if_failing AND e.url IS NOT NULL \
           AND EXISTS (SELECT 1 FROM moved m WHERE m.endpoint_id = e.id) \
         ORDER BY e.id FOR NO KEY UPDATE OF e \
     ), healed AS ( \
         UPDATE endpoints e SET failing_since = c.failing_since \
         FROM changing c WHERE e.id = c.id \
     ) \
     SELECT id, order_key FROM moved"
);
/// `PgStore::record_attempts` in a transaction of the caller's. Every lease a
/// recorded attempt ends is cleared with it; an attempt that ends a pull
/// lease is written only if that lease is still the row's (`lease`). An
/// attempt row is written only for a notification that exists: `attempts`
/// has no foreign key (it cost a query and a row lock per attempt), so
/// this statement keeps that rule, and retention deletes attempts with
/// their notification. Then the attempts that moved their notification
/// are added to the per-minute counts (`stats::add_minute_sums`, one
/// statement; unless `count_minutes` is off), committing with them or not
/// at all: a batch the recorder writes again after an error is counted
/// once. Rows are stamped at `now` (the store's clock).
///
/// Returns the notifications that moved, each with its order key: what
/// `release_ended` needs of one that succeeded, which it then does not
/// read again.
pub(super) async fn record_attempts_on(
    conn: &mut sqlx::PgConnection,
    records: &[AttemptRecord],
    health: &[(Uuid, Health)],
    now: DateTime<Utc>,
    count_minutes: bool,
) -> Result<Moved, StoreError> {
    if records.is_empty() {
        return Ok(Moved::default());
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
    let mut ran_out = Vec::with_capacity(records.len());
    let mut attempts = Vec::with_capacity(records.len());
    let mut inline = Vec::with_capacity(records.len());
    let mut kept_if_refused = Vec::with_capacity(records.len());
    let mut sent = Vec::with_capacity(records.len());
    let mut response_headers = Vec::with_capacity(records.len());
    let mut retried = Vec::with_capacity(records.len());
    let mut events = EventBinds::default();
    for r in records {
        ids.push(r.notification_id);
        numbers.push(r.number);
        series.push(r.expected.series_start);
        attempts.push(r.expected.attempts);
        inline.push(r.keep.inline);
        kept_if_refused.push(r.keep.when_refused);
        started.push(r.started_at);
        durations.push(r.duration_ms);
        status_codes.push(r.status_code);
        // PostgreSQL text cannot hold NUL bytes; receivers can send them.
        bodies.push(
            r.response_body
                .as_ref()
                .map(|b| b.replace('\0', "\u{FFFD}")),
        );
        sent.push(r.sent_headers.as_deref());
        response_headers.push(r.response_headers.as_deref());
        retried.push(r.retried());
        error_codes.push(r.error_code.as_deref());
        error_messages.push(r.error_message.as_deref());
        outcomes.push(r.outcome.kind());
        statuses.push(r.next.status);
        next_ats.push(r.next.next_attempt_at);
        completed.push(r.next.completed);
        last_errors.push(r.next.last_error.as_deref());
        leases.push(r.expected.lease.map(|lease| lease.id));
        ran_out.push(r.expected.lease.and_then(|lease| lease.ran_out_at));
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
    let rows: Vec<(Uuid, Option<String>)> = sqlx::query_as(RECORD_ATTEMPTS)
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
        .bind(&ran_out)
        .bind(&attempts)
        .bind(&inline)
        .bind(&kept_if_refused)
        .bind(&events.ids)
        .bind(now)
        .bind(&sent)
        .bind(&response_headers)
        .bind(&retried)
        .fetch_all(&mut *conn)
        .await?;
    let (ids, order_keys): (Vec<Uuid>, Vec<Option<String>>) = rows.into_iter().unzip();
    if ids.len() < records.len() {
        let moved: HashSet<Uuid> = ids.iter().copied().collect();
        let moves: Vec<bool> = records
            .iter()
            .map(|r| moved.contains(&r.notification_id))
            .collect();
        count_refused(conn, &refused_kept(records, &moves), now).await?;
    }
    if count_minutes {
        let sums = crate::store::stats::sums_of(records, &ids);
        super::stats::add_minute_sums(conn, &sums).await?;
    }
    Ok(Moved { ids, order_keys })
}

/// Counts refused attempts that were kept (`recording::refused_kept`) on
/// their notifications where `status::COUNTS_REFUSED_ATTEMPTS` says they
/// count: the attempt is the notification's next one, and becomes its
/// last (`attempts`, `last_attempt_at`, `last_status_code`,
/// `last_error`); its status stays. Only when a batch had a row that did
/// not move, so the recording of nearly every batch runs nothing more.
async fn count_refused(
    conn: &mut sqlx::PgConnection,
    refused: &[&AttemptRecord],
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    if refused.is_empty() {
        return Ok(());
    }
    let ids: Vec<Uuid> = refused.iter().map(|r| r.notification_id).collect();
    let numbers: Vec<i32> = refused.iter().map(|r| r.number).collect();
    let started: Vec<DateTime<Utc>> = refused.iter().map(|r| r.started_at).collect();
    let codes: Vec<Option<i32>> = refused.iter().map(|r| r.status_code).collect();
    let errors: Vec<Option<&str>> = refused
        .iter()
        .map(|r| r.next.last_error.as_deref())
        .collect();
    let (low, high) = id_span(&ids);
    sqlx::query(
        "UPDATE notifications n SET attempts = i.number, last_attempt_at = i.started_at, \
             last_status_code = i.status_code, last_error = i.last_error, updated_at = $8 \
         FROM UNNEST($1::uuid[], $2::int[], $3::timestamptz[], $4::int[], $5::text[]) \
             AS i(id, number, started_at, status_code, last_error) \
         WHERE n.id = i.id AND n.id BETWEEN $6 AND $7 AND n.status = $9 \
           AND n.attempts = i.number - 1",
    )
    .bind(&ids)
    .bind(&numbers)
    .bind(&started)
    .bind(&codes)
    .bind(&errors)
    .bind(low)
    .bind(high)
    .bind(now)
    .bind(COUNTS_REFUSED_ATTEMPTS)
    .execute(conn)
    .await?;
    Ok(())
}

/// The notifications a recording moved (`record_attempts_on`), in the
/// statement's order, and the order key of each (`None` for an unordered
/// one).
#[derive(Debug, Default)]
pub(super) struct Moved {
    pub ids: Vec<Uuid>,
    pub order_keys: Vec<Option<String>>,
}
