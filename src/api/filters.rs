//! List filters no row can match are refused (422, the field named), on
//! both backends alike: PostgreSQL refused a NUL byte by itself, while
//! SQLite, which stores one, looked for it and answered an empty page.
//! The rules are those a value must meet to be stored.

use chrono::{DateTime, Utc};

use super::error::ApiError;
use crate::domain::created::CreatedWindow;
use crate::domain::fields::{valid_event_type, valid_key, valid_uid};
use crate::domain::problem::ErrorCode;
use crate::service::events::invalid_owner;
use crate::service::notifications::invalid_key;
use crate::store::endpoints::EndpointRef;

pub(super) fn owner(owner: Option<&str>) -> Result<(), ApiError> {
    match owner {
        Some(owner) if !valid_uid(owner) => Err(invalid_owner().into()),
        _ => Ok(()),
    }
}

/// An endpoint named by its id or uid (`?endpoint=`): text that is
/// neither names no endpoint.
pub(super) fn endpoint(endpoint: Option<&str>) -> Result<Option<EndpointRef>, ApiError> {
    let endpoint = endpoint.map(EndpointRef::parse);
    match &endpoint {
        Some(EndpointRef::Uid(uid)) if !valid_uid(uid) => Err(ApiError::invalid(
            ErrorCode::InvalidValue,
            "endpoint",
            "endpoint is an endpoint's id or uid",
        )),
        _ => Ok(endpoint),
    }
}

pub(super) fn key(key: Option<&str>) -> Result<(), ApiError> {
    match key {
        Some(key) if !valid_key(key) => Err(invalid_key().into()),
        _ => Ok(()),
    }
}

pub(super) fn event_type(event_type: Option<&str>) -> Result<(), ApiError> {
    match event_type {
        Some(event_type) if !valid_event_type(event_type) => Err(ApiError::invalid(
            ErrorCode::InvalidValue,
            "event_type",
            "event_type is 1 to 255 of A-Z a-z 0-9 _ - . : /",
        )),
        _ => Ok(()),
    }
}

/// A time parameter, RFC 3339.
pub(super) fn time(
    field: &'static str,
    text: Option<&str>,
) -> Result<Option<DateTime<Utc>>, ApiError> {
    text.map(|text| {
        DateTime::parse_from_rfc3339(text.trim())
            .map(|at| at.with_timezone(&Utc))
            .map_err(|_| {
                ApiError::invalid(
                    ErrorCode::InvalidValue,
                    field,
                    format!("{field} is an RFC 3339 time, such as 2026-11-26T10:00:00Z"),
                )
            })
    })
    .transpose()
}

/// A key prefix: what a key may be (`key`), and not beside a key.
pub(super) fn key_prefix(prefix: Option<&str>, key: Option<&str>) -> Result<(), ApiError> {
    match prefix {
        Some(prefix) if !valid_key(prefix) => Err(ApiError::invalid(
            ErrorCode::InvalidValue,
            "key_prefix",
            "key_prefix is 1 to 255 bytes without control characters",
        )),
        Some(_) if key.is_some() => Err(ApiError::invalid(
            ErrorCode::InvalidValue,
            "key_prefix",
            "key_prefix and key do not go together: a key is exact, a prefix finds every key that starts with it",
        )),
        _ => Ok(()),
    }
}

/// `created_after` / `created_before`: RFC 3339 times, the window
/// `[after, before)`.
pub(super) fn created(
    after: Option<&str>,
    before: Option<&str>,
) -> Result<CreatedWindow, ApiError> {
    Ok(CreatedWindow::asked(
        time("created_after", after)?,
        time("created_before", before)?,
    )?)
}
