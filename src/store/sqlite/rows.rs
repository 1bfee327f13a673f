//! How the embedded schema's encodings (migrations/sqlite) become the
//! store's model types: times as INTEGER microseconds, JSON and arrays as
//! TEXT, booleans as 0/1, ids as 16-byte BLOBs (sqlx's own `Uuid`
//! encoding for SQLite).

use serde::de::DeserializeOwned;
use serde::Serialize;
use sqlx::sqlite::SqliteRow;
use sqlx::Row;

use super::columns::{json, optional_time, time};
use crate::domain::ordering::{KeyOrdering, OnFailure};
use crate::domain::pull::Delivery;
use crate::store::endpoints::Endpoint;

fn decode_error(column: &str, error: impl std::fmt::Display) -> sqlx::Error {
    sqlx::Error::ColumnDecode {
        index: column.to_string(),
        source: error.to_string().into(),
    }
}

/// A value kept as JSON text.
pub(crate) fn to_json(value: &impl Serialize) -> String {
    // The model's JSON columns are maps, lists and strings: serialising
    // them cannot fail.
    serde_json::to_string(value).unwrap_or_default()
}

pub(crate) fn optional_json<T: DeserializeOwned>(
    row: &SqliteRow,
    column: &str,
) -> Result<Option<T>, sqlx::Error> {
    let text: Option<String> = row.try_get(column)?;
    text.map(|text| serde_json::from_str(&text).map_err(|e| decode_error(column, e)))
        .transpose()
}

/// One of `all`, by the name `name_of` gives it, from a TEXT column.
fn named<T: Copy>(
    row: &SqliteRow,
    column: &str,
    all: &[T],
    name_of: impl Fn(T) -> &'static str,
) -> Result<T, sqlx::Error> {
    let text: String = row.try_get(column)?;
    all.iter()
        .copied()
        .find(|v| name_of(*v) == text)
        .ok_or_else(|| decode_error(column, format!("unknown {column} {text:?}")))
}

fn delivery(row: &SqliteRow) -> Result<Delivery, sqlx::Error> {
    let text: String = row.try_get("delivery")?;
    match text.as_str() {
        "push" => Ok(Delivery::Push),
        "pull" => Ok(Delivery::Pull),
        other => Err(decode_error(
            "delivery",
            format!("unknown delivery {other:?}"),
        )),
    }
}

/// The columns `endpoint` reads, spliced into queries (constants only).
pub(crate) const ENDPOINT_COLUMNS: &str = "id, uid, url, description, secret, previous_secrets, \
     event_types, schedule_ms, schedule_name, success_body, permanent_statuses, headers, timeout_ms, \
     max_in_flight, disabled, disabled_reason, failing_since, created_at, updated_at, owner, delivery, schedule_jitter, \
     rate_limit_per_second, rate_limit_burst, breaker_off, breaker_failures, breaker_open_ms, breaker_max_open_ms, url_secret, portal_generation, \
     ordering, ordering_on_failure, fresh_share, filter, success_filter";

pub(crate) fn endpoint(row: &SqliteRow) -> Result<Endpoint, sqlx::Error> {
    Ok(Endpoint {
        id: row.try_get("id")?,
        uid: row.try_get("uid")?,
        owner: row.try_get("owner")?,
        url: row.try_get("url")?,
        delivery: delivery(row)?,
        description: row.try_get("description")?,
        secret: row.try_get("secret")?,
        previous_secrets: json(row, "previous_secrets")?,
        event_types: optional_json(row, "event_types")?,
        filter: optional_json(row, "filter")?,
        schedule_ms: json(row, "schedule_ms")?,
        schedule_name: row.try_get("schedule_name")?,
        schedule_jitter: row.try_get("schedule_jitter")?,
        url_secret: row.try_get("url_secret")?,
        portal_generation: row.try_get("portal_generation")?,
        rate_limit_per_second: row.try_get("rate_limit_per_second")?,
        rate_limit_burst: row.try_get("rate_limit_burst")?,
        fresh_share: row.try_get("fresh_share")?,
        breaker: breaker_override(row)?,
        success_body: row.try_get("success_body")?,
        success_filter: optional_json(row, "success_filter")?,
        permanent_statuses: json(row, "permanent_statuses")?,
        headers: json(row, "headers")?,
        timeout_ms: row.try_get("timeout_ms")?,
        max_in_flight: row.try_get("max_in_flight")?,
        ordering: named(row, "ordering", &KeyOrdering::ALL, |o| o.as_str())?,
        ordering_on_failure: named(row, "ordering_on_failure", &OnFailure::ALL, |o| o.as_str())?,
        disabled: row.try_get("disabled")?,
        disabled_reason: row.try_get("disabled_reason")?,
        failing_since: optional_time(row, "failing_since")?,
        created_at: time(row, "created_at")?,
        updated_at: time(row, "updated_at")?,
        unreadable: None,
    })
}

/// An endpoint's breaker settings (`breaker_*` columns).
pub(crate) fn breaker_override(
    row: &SqliteRow,
) -> Result<crate::domain::breaker::Override, sqlx::Error> {
    Ok(crate::domain::breaker::Override::stored(
        row.try_get("breaker_off")?,
        row.try_get("breaker_failures")?,
        row.try_get("breaker_open_ms")?,
        row.try_get("breaker_max_open_ms")?,
    ))
}
