//! Recording attempts in PostgreSQL: one statement per batch, and two
//! more that release what its ordered ends let go (`ENDED_KEYS`, then
//! `RELEASE_ENDED`), given its successes as the recording returned them.
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
//! - operator events inserted for moved rows only, while the operator
//!   endpoint exists (`insert_operator_events!`);
//! - health written over an endpoint in the other state only
//!   (`(failing_since IS NOT NULL) = if_failing`, from
//!   `Health::changes_a_failing_endpoint`), still push (`url IS NOT NULL`:
//!   the schema's rendering of `delivery = 'push'`, the endpoints whose
//!   health is observed), and one of whose notifications moved.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

use super::operator::{insert_operator_events, EventBinds};
use super::ordering::released;
use super::partitions::id_span;
use super::PgStore;
use crate::domain::health::Health;
use crate::domain::operator_event::OPERATOR_ENDPOINT_ID;
use crate::domain::status::Status;
use crate::store::recording::{ended, AttemptRecord, Recorded};
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
    if count_minutes {
        let sums = crate::store::stats::sums_of(records, &ids);
        super::stats::add_minute_sums(conn, &sums).await?;
    }
    Ok(Moved { ids, order_keys })
}

/// The notifications a recording moved (`record_attempts_on`), in the
/// statement's order, and the order key of each (`None` for an unordered
/// one).
#[derive(Debug, Default)]
pub(super) struct Moved {
    pub ids: Vec<Uuid>,
    pub order_keys: Vec<Option<String>>,
}

/// Says that this transaction releases the successors of the ordered
/// notifications it ends itself (`release_ended`), so that the release
/// trigger stands aside for it (migration `20261208000054`).
const RELEASE_IN_BATCH: &str = "SELECT set_config('hookd.release', 'batch', true)";

/// The ordered ones of a batch that ended, in (endpoint, key) order, the
/// order a create takes key rows in, each with what it waited for by the
/// rule (`behind`, NULL for its key's head: `ordering::released`) and what
/// its end does to its key: `holds` for a head that ended otherwise than
/// succeeded on an endpoint that holds its keys (`ordering_on_failure =
/// 'hold'`).
/// - The successes (`$4`, with their endpoints `$5` and keys `$6`) are
///   known in full from the recording: a success waits for nothing (the
///   recording cleared its `behind`), holds nothing, and was stamped `$7`.
///   Reading them again was a third of what the two statements cost an
///   ordered round of the bench, and over half the buffers they touched
///   (`BENCHMARKS.md`).
/// - The others (`$1`, ids from `$2` to `$3`) are read, each reached by
///   its primary key (not through `sequence IS NOT NULL`, which offers
///   `notifications_order` to a generic plan: the caller passes only
///   ordered ones).
macro_rules! ended_ordered {
    () => {
        concat!(
            "WITH ended AS MATERIALIZED ( \
                 SELECT * FROM ( \
                     SELECT s.id, s.endpoint_id, s.order_key, $7::timestamptz AS updated_at, \
                         true AS succeeded, NULL::uuid AS behind, false AS holds \
                     FROM UNNEST($4::uuid[], $5::uuid[], $6::text[]) AS s(id, endpoint_id, order_key) \
                     UNION ALL \
                     SELECT n.id, n.endpoint_id, n.order_key, n.updated_at, \
                         n.status = 'succeeded' AS succeeded, \
                         CASE WHEN NOT ",
            released!("n"),
            " THEN n.behind END AS behind, \
                         (n.status <> 'succeeded' AND ",
            released!("n"),
            " AND e.ordering_on_failure = 'hold') AS holds \
                     FROM notifications n JOIN endpoints e ON e.id = n.endpoint_id \
                     WHERE n.id = ANY($1) AND n.id BETWEEN $2 AND $3 \
                       AND n.order_key IS NOT NULL AND n.status <> 'pending' \
                 ) u ORDER BY u.endpoint_id, u.order_key \
             )"
        )
    };
}

/// `release_ended`'s first statement, the release trigger's rule
/// (`hookd_release_order`, migration `20261209000055`) for the key rows
/// of every notification of `$1` that ended ordered:
/// - the key's tail, ended, leaves the key its predecessor as tail (none
///   if it holds the key);
/// - one that succeeded frees its key if it held it;
/// - one that `holds` names itself on its key's row.
///
/// Each key's row is read by its key in a lateral read that `OFFSET 0`
/// keeps from becoming a join over every key, and locked there, in the
/// ended ones' (endpoint, key) order; a row a create holds is waited for,
/// and read again as the create left it (its tail moved on: the row is
/// left alone). The update finds each row by its key, the `ANY` lists
/// keeping it on the primary key whatever the plan guesses of
/// `order_keys` (`ordering_plan_tests`).
pub(super) const ENDED_KEYS: &str = concat!(
    ended_ordered!(),
    ", keyed AS MATERIALIZED ( \
         SELECT x.endpoint_id, x.order_key, x.id, x.behind, x.succeeded, x.holds \
         FROM ended x CROSS JOIN LATERAL (SELECT 1 FROM order_keys k \
             WHERE k.endpoint_id = x.endpoint_id AND k.order_key = x.order_key \
               AND (x.holds OR k.tail = x.id OR (x.succeeded AND k.held_by = x.id)) \
             FOR UPDATE OFFSET 0) k \
     ) UPDATE order_keys k SET \
         held_by = CASE WHEN y.holds THEN y.id \
             WHEN y.succeeded AND k.held_by = y.id THEN NULL ELSE k.held_by END, \
         tail = CASE WHEN k.tail = y.id THEN CASE WHEN y.holds THEN NULL ELSE y.behind END \
             ELSE k.tail END \
     FROM keyed y \
     WHERE k.endpoint_id = y.endpoint_id AND k.order_key = y.order_key \
       AND k.endpoint_id = ANY(ARRAY(SELECT y.endpoint_id FROM keyed y)) \
       AND k.order_key = ANY(ARRAY(SELECT y.order_key FROM keyed y))"
);

/// `release_ended`'s second statement, in a snapshot taken once the key
/// rows are written (`ENDED_KEYS`): the successors of each of `$1` that
/// ended ordered and does not hold its key.
/// - A success's push successors wait for nothing now, by the rule
///   (migration `20261210000056`), and are only read: each is returned
///   for the caller to index (its mark for the housekeeper is left clear:
///   the caller indexes it after the commit, and the overdue sweep if that
///   fails). Nothing is written on them.
/// - Every other successor is passed over, as the release trigger does: it
///   now waits for what the ended one waited for, and a pull one that waits
///   for nothing starts its wait for a consumer then. Those are locked in
///   id order before any is written, as `clear_needs_index` locks the rows
///   it clears: two transactions taking the same rows in opposite orders
///   deadlocked.
///
/// The successors are found by one read of `notifications_behind` per
/// partition, probed with the list of ended ones (`behind = ANY`), and
/// matched with what each waited for by a hash. A join on `behind` alone,
/// on statistics taken while nothing waited (the index looks empty), made
/// a generic plan hash the whole index against the batch, reading every
/// waiting notification per batch; a probe per ended one in a lateral
/// read ran on every partition once per ended one, the day partitions
/// made ahead and still empty included (`ordering_plan_tests`).
pub(super) const RELEASE_ENDED: &str = concat!(
    ended_ordered!(),
    ", waiting AS MATERIALIZED ( \
         SELECT s.id, s.pull, s.next_attempt_at, x.succeeded, x.behind, x.updated_at \
         FROM notifications s JOIN ended x ON x.id = s.behind \
         WHERE s.behind = ANY(ARRAY(SELECT x.id FROM ended x WHERE NOT x.holds)) \
           AND (s.status = 'pending') IS TRUE \
     ), locked AS ( \
         SELECT s.id, w.behind, w.updated_at FROM waiting w \
         JOIN notifications s ON s.id = w.id \
         WHERE NOT (w.succeeded AND NOT w.pull) \
         ORDER BY s.id FOR UPDATE OF s \
     ), passed AS ( \
         UPDATE notifications s SET \
             behind = w.behind, \
             next_attempt_at = CASE WHEN w.behind IS NULL AND s.pull \
                 THEN GREATEST(s.next_attempt_at, w.updated_at) ELSE s.next_attempt_at END \
         FROM locked w WHERE s.id = w.id \
         RETURNING s.id, s.next_attempt_at, w.behind IS NULL AND NOT s.pull AS released \
     ) \
     SELECT id, next_attempt_at FROM passed WHERE released \
     UNION ALL \
     SELECT id, next_attempt_at FROM waiting WHERE succeeded AND NOT pull"
);

/// Readies a recording transaction to release the successors of what it
/// ends (`release_ended`) instead of the trigger doing it row by row.
async fn release_in_batch(conn: &mut PgConnection) -> Result<(), StoreError> {
    sqlx::query(RELEASE_IN_BATCH).execute(conn).await?;
    Ok(())
}

/// The ordered ends of a recorded batch, as `ended_ordered!` takes them:
/// the successes with their endpoints and keys, and the others' ids.
#[derive(Debug, Default)]
struct Ends {
    succeeded: Vec<Uuid>,
    endpoints: Vec<Uuid>,
    keys: Vec<String>,
    others: Vec<Uuid>,
}

impl Ends {
    /// The ends among `records` of those the recording `moved`: a success
    /// by its record's decision (it moved, so its row is as decided) and
    /// the key the recording returned; any other end by id, and so is a
    /// notification with two records in the batch (which of them moved it
    /// is the row's to say).
    fn of(records: &[AttemptRecord], moved: &Moved) -> Ends {
        let keys: HashMap<Uuid, &String> = moved
            .ids
            .iter()
            .zip(&moved.order_keys)
            .filter_map(|(id, key)| Some((*id, key.as_ref()?)))
            .collect();
        let mut decided: HashMap<Uuid, Option<&AttemptRecord>> = HashMap::new();
        for record in records {
            decided
                .entry(record.notification_id)
                .and_modify(|only| *only = None)
                .or_insert(Some(record));
        }
        let mut taken = HashSet::new();
        let mut ends = Ends::default();
        for id in ended(records, &moved.ids) {
            if !taken.insert(id) {
                continue;
            }
            match (decided.get(&id).copied().flatten(), keys.get(&id)) {
                (Some(record), Some(key)) if record.next.status == Status::Succeeded => {
                    ends.succeeded.push(id);
                    ends.endpoints.push(record.endpoint_id);
                    ends.keys.push((*key).clone());
                }
                _ => ends.others.push(id),
            }
        }
        ends
    }

    fn is_empty(&self) -> bool {
        self.succeeded.is_empty() && self.others.is_empty()
    }
}

/// Releases the successors of what the batch ended ordered (`Ends`),
/// after `release_in_batch` (`ENDED_KEYS`, then `RELEASE_ENDED`); returns
/// the heads it released, to be indexed (`Recorded::released`).
async fn release_ended(
    conn: &mut PgConnection,
    ends: &Ends,
    now: DateTime<Utc>,
) -> Result<Vec<(Uuid, DateTime<Utc>)>, StoreError> {
    if ends.is_empty() {
        return Ok(Vec::new());
    }
    let (low, high) = id_span(&ends.others);
    // Two statements: the second's snapshot sees every create that held
    // a key row the first waited for (`store::ordering`).
    sqlx::query(ENDED_KEYS)
        .bind(&ends.others)
        .bind(low)
        .bind(high)
        .bind(&ends.succeeded)
        .bind(&ends.endpoints)
        .bind(&ends.keys)
        .bind(now)
        .execute(&mut *conn)
        .await?;
    Ok(sqlx::query_as(RELEASE_ENDED)
        .bind(&ends.others)
        .bind(low)
        .bind(high)
        .bind(&ends.succeeded)
        .bind(&ends.endpoints)
        .bind(&ends.keys)
        .bind(now)
        .fetch_all(conn)
        .await?)
}

#[cfg(test)]
mod tests {
    use chrono::Utc;
    use uuid::Uuid;

    use super::{Ends, Moved};
    use crate::domain::outcome::{FailReason, Outcome};
    use crate::domain::status::{after_attempt, expected, Keeping};
    use crate::store::recording::AttemptRecord;

    /// An attempt at ordered notification `id` that ends it with `outcome`.
    fn ending(id: Uuid, endpoint_id: Uuid, outcome: Outcome) -> AttemptRecord {
        AttemptRecord {
            notification_id: id,
            endpoint_id,
            number: 1,
            expected: expected(0, 0, None, false),
            keep: Keeping {
                inline: false,
                when_refused: false,
            },
            started_at: Utc::now(),
            due_at: None,
            duration_ms: 1,
            status_code: Some(200),
            response_body: None,
            response_headers: None,
            sent_headers: None,
            error_code: None,
            error_message: None,
            next: after_attempt(&outcome, None),
            outcome,
            tells_of_endpoint: true,
            event: None,
            ordered: true,
        }
    }

    #[test]
    fn a_moved_success_is_taken_from_its_record_and_every_other_end_is_read_by_id() {
        let endpoint = Uuid::now_v7();
        let [success, failure, twice, unmoved, unkeyed] = [(); 5].map(|_| Uuid::now_v7());
        let records = vec![
            ending(success, endpoint, Outcome::Succeeded),
            ending(failure, endpoint, Outcome::Failed(FailReason::Exhausted)),
            ending(twice, endpoint, Outcome::Succeeded),
            ending(twice, endpoint, Outcome::Failed(FailReason::Exhausted)),
            ending(unmoved, endpoint, Outcome::Succeeded),
            ending(unkeyed, endpoint, Outcome::Succeeded),
        ];
        let key = |k: &str| Some(k.to_string());
        let moved = Moved {
            ids: vec![success, failure, twice, unkeyed],
            order_keys: vec![key("a"), key("b"), key("c"), None],
        };
        let ends = Ends::of(&records, &moved);
        assert_eq!(ends.succeeded, vec![success]);
        assert_eq!(ends.endpoints, vec![endpoint]);
        assert_eq!(ends.keys, vec!["a".to_string()]);
        assert_eq!(ends.others, vec![failure, twice, unkeyed]);
    }
}
