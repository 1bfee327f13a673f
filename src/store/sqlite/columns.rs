//! How the embedded schema's columns become the store's types (the
//! encodings its migration's header lists: ids as 16-byte BLOBs, times as
//! INTEGER microseconds, JSON and arrays as TEXT), and the rows of
//! notifications, events and attempts read with them.

use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use sqlx::sqlite::SqliteRow;
use sqlx::Row;
use uuid::Uuid;

use crate::domain::lease::{self, Lease};
use crate::domain::outcome::OutcomeKind;
use crate::domain::status::Status;
use crate::store::attempts::Attempt;
use crate::store::events::Event;
use crate::store::notifications::Notification;

/// A time as the schema holds it: microseconds since the epoch, UTC, the
/// precision PostgreSQL's timestamptz has.
pub(crate) fn micros(at: DateTime<Utc>) -> i64 {
    at.timestamp_micros()
}

/// A list of ids as one bound value: a JSON array of their hex, which a
/// statement reads back as BLOBs with `SELECT unhex(value) FROM
/// json_each(?)` (SQLite has no array parameters).
pub(crate) fn id_list(ids: &[Uuid]) -> String {
    let hex: Vec<String> = ids.iter().map(|id| id.simple().to_string()).collect();
    serde_json::Value::from(hex).to_string()
}

/// The ids of `id_list`, as a subquery for `… IN (…)` with one parameter.
pub(crate) const IN_ID_LIST: &str = "(SELECT unhex(value) FROM json_each(?))";

/// `$statement` over the records of a JSON array of arrays bound at
/// `$param`, as a common table `$name` of one column, `value`: each record
/// as JSONB, made once. `json_each` gives an array's element as JSON text,
/// made again from the array at every `value` a statement reads and then
/// parsed again by `->>` (or looked up in SQLite's cache of parses by its
/// text): about 0.6 µs each, and the recorder's move reads 19 a record.
/// As JSONB, `->>` reads the record's bytes where they are: the move of
/// 800 records took 0.72 of the time (`BENCHMARKS.md`, #48).
/// `MATERIALIZED` keeps SQLite from folding the table into the statement,
/// which would make the JSONB again at every read.
macro_rules! records {
    ($name:literal, $param:literal, $statement:literal) => {
        concat!(
            "WITH ",
            $name,
            " AS MATERIALIZED (SELECT jsonb(value) AS value FROM json_each(",
            $param,
            ")) ",
            $statement
        )
    };
}
pub(crate) use records;

/// A read of many rows as one: `SELECT json_group_array(json_array(
/// <columns>)) <from>`, decoded by `rows_of`. sqlx hands each row of a
/// SQLite statement over from the connection's worker thread, about 8 µs
/// a row; a thousand rows as one JSON text cost a fifth of that
/// (`BENCHMARKS.md`, #48). Ids go as `hex(…)`, or `nullif(hex(…), '')`
/// where they may be NULL.
pub(crate) fn json_rows(columns: &str, from: &str) -> String {
    format!("SELECT json_group_array(json_array({columns})) {from}")
}

/// The rows of a `json_rows` read, each a tuple of its columns.
pub(crate) fn rows_of<T: DeserializeOwned>(text: &str) -> Result<Vec<T>, sqlx::Error> {
    serde_json::from_str(text).map_err(|error| decode_error("json_group_array", error))
}

/// A value as JSON TEXT (headers, schedules).
pub(crate) fn json_text<T: serde::Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).expect("maps of strings and arrays of numbers serialise")
}

fn decode_error(column: &str, source: impl Into<sqlx::error::BoxDynError>) -> sqlx::Error {
    sqlx::Error::ColumnDecode {
        index: column.to_string(),
        source: source.into(),
    }
}

pub(crate) fn time_of(column: &str, us: i64) -> Result<DateTime<Utc>, sqlx::Error> {
    DateTime::from_timestamp_micros(us)
        .ok_or_else(|| decode_error(column, format!("time out of range: {us} µs")))
}

pub(crate) fn time(row: &SqliteRow, column: &str) -> Result<DateTime<Utc>, sqlx::Error> {
    time_of(column, row.try_get(column)?)
}

pub(crate) fn optional_time(
    row: &SqliteRow,
    column: &str,
) -> Result<Option<DateTime<Utc>>, sqlx::Error> {
    row.try_get::<Option<i64>, _>(column)?
        .map(|us| time_of(column, us))
        .transpose()
}

pub(crate) fn json<T: DeserializeOwned>(row: &SqliteRow, column: &str) -> Result<T, sqlx::Error> {
    let text: &str = row.try_get(column)?;
    serde_json::from_str(text).map_err(|e| decode_error(column, e))
}

fn flag(row: &SqliteRow, column: &str) -> Result<bool, sqlx::Error> {
    Ok(row.try_get::<i64, _>(column)? != 0)
}

pub(crate) fn status(row: &SqliteRow, column: &str) -> Result<Status, sqlx::Error> {
    let text: &str = row.try_get(column)?;
    Status::parse(text).ok_or_else(|| decode_error(column, format!("unknown status {text:?}")))
}

fn outcome(row: &SqliteRow, column: &str) -> Result<OutcomeKind, sqlx::Error> {
    let text: &str = row.try_get(column)?;
    [
        OutcomeKind::Succeeded,
        OutcomeKind::Retry,
        OutcomeKind::Failed,
    ]
    .into_iter()
    .find(|o| o.as_str() == text)
    .ok_or_else(|| decode_error(column, format!("unknown outcome {text:?}")))
}

/// Every column `notification` reads but `body`, which each query chooses
/// (`NOTIFICATION_BODY`, or `x''`). A delivery of an event has its event's
/// type, kept on the event row only (as in PostgreSQL). Whether the row is
/// `leased` is not decided here: its `lease_id` is read, and
/// `domain::lease::held` decides as the row is decoded (`notification`).
pub(crate) const NOTIFICATION_COLUMNS: &str = concat!(
    "id, endpoint_id, key, content_type, headers, \
     schedule_ms, schedule_name, status, attempts, series_start, deliver_at, next_attempt_at, \
     last_attempt_at, last_status_code, last_error, created_at, updated_at, completed_at, \
     event_id, url, pull, order_key, sequence, \
     CASE WHEN ",
    super::ordering::released!("notifications"),
    " THEN NULL ELSE behind END AS behind, lease_id, \
     CASE WHEN event_id IS NULL THEN event_type \
         ELSE (SELECT e.event_type FROM events e WHERE e.id = notifications.event_id) END \
         AS event_type"
);
/// A notification's body; a delivery of an event has its event's.
pub(crate) const NOTIFICATION_BODY: &str = "CASE WHEN event_id IS NULL THEN body \
     ELSE (SELECT e.body FROM events e WHERE e.id = notifications.event_id) END AS body";
/// A notification read with `NOTIFICATION_COLUMNS` and a body, at `read_at`
/// (the clock of its read): whether a consumer's lease holds then is
/// `domain::lease::held`'s. A row read without a clock (one a write met)
/// holds none, as in PostgreSQL.
pub(crate) fn notification(
    row: &SqliteRow,
    read_at: Option<DateTime<Utc>>,
) -> Result<Notification, sqlx::Error> {
    let next_attempt_at = optional_time(row, "next_attempt_at")?;
    let lease = Lease::stored(row.try_get("lease_id")?, None, next_attempt_at);
    Ok(Notification {
        id: row.try_get("id")?,
        endpoint_id: row.try_get("endpoint_id")?,
        key: row.try_get("key")?,
        event_type: row.try_get("event_type")?,
        content_type: row.try_get("content_type")?,
        body: row.try_get("body")?,
        headers: json(row, "headers")?,
        schedule_ms: json(row, "schedule_ms")?,
        schedule_name: row.try_get("schedule_name")?,
        status: status(row, "status")?,
        attempts: row.try_get("attempts")?,
        series_start: row.try_get("series_start")?,
        deliver_at: time(row, "deliver_at")?,
        next_attempt_at,
        last_attempt_at: optional_time(row, "last_attempt_at")?,
        last_status_code: row.try_get("last_status_code")?,
        last_error: row.try_get("last_error")?,
        created_at: time(row, "created_at")?,
        updated_at: time(row, "updated_at")?,
        completed_at: optional_time(row, "completed_at")?,
        event_id: row.try_get("event_id")?,
        url: row.try_get("url")?,
        pull: flag(row, "pull")?,
        leased: read_at.is_some_and(|now| lease::held(lease, now)),
        order_key: row.try_get("order_key")?,
        sequence: row.try_get("sequence")?,
        behind: row.try_get("behind")?,
    })
}

/// Every column of an event but its body.
pub(crate) const EVENT_COLUMNS: &str =
    "id, owner, event_type, key, content_type, deliver_at, deliveries, created_at, order_key";

pub(crate) fn event(row: &SqliteRow) -> Result<Event, sqlx::Error> {
    Ok(Event {
        id: row.try_get("id")?,
        owner: row.try_get("owner")?,
        event_type: row.try_get("event_type")?,
        key: row.try_get("key")?,
        content_type: row.try_get("content_type")?,
        body: row.try_get("body")?,
        deliver_at: time(row, "deliver_at")?,
        deliveries: row.try_get("deliveries")?,
        created_at: time(row, "created_at")?,
        order_key: row.try_get("order_key")?,
    })
}

pub(crate) fn attempt(row: &SqliteRow) -> Result<Attempt, sqlx::Error> {
    Ok(Attempt {
        notification_id: row.try_get("notification_id")?,
        number: row.try_get("number")?,
        started_at: time(row, "started_at")?,
        duration_ms: row.try_get("duration_ms")?,
        status_code: row.try_get("status_code")?,
        response_body: row.try_get("response_body")?,
        error_code: row.try_get("error_code")?,
        error_message: row.try_get("error_message")?,
        outcome: outcome(row, "outcome")?,
        response_headers: row.try_get("response_headers")?,
        sent_headers: row.try_get("sent_headers")?,
        retried: row.try_get("retried")?,
    })
}
