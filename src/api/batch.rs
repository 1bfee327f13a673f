//! What the batch routes share: each item parsed on its own (a bad item
//! fails alone, with its own status and error), the valid ones handed to
//! the service in one call, and the results put back in place.

use std::future::Future;

use axum::http::StatusCode;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use super::error::{ApiError, ErrorDetail};
use super::extract::parse_json;
use crate::domain::problem::{ErrorCode, Problem};
use crate::service::notifications::MAX_BATCH;
use crate::service::ServiceError;

/// Parses each item of a batch of 1 to `MAX_BATCH` (named `field`).
pub fn parse_items<T: DeserializeOwned>(
    raws: &[Box<RawValue>],
    field: &str,
) -> Result<Vec<Result<T, ApiError>>, ApiError> {
    if raws.is_empty() || raws.len() > MAX_BATCH {
        return Err(ApiError::invalid(
            ErrorCode::InvalidValue,
            field,
            format!("a batch holds 1 to {MAX_BATCH} {field}"),
        ));
    }
    Ok(raws
        .iter()
        .map(|raw| parse_json(raw.get().as_bytes()))
        .collect())
}

/// Hands the parsed items to `create` in one call and returns every item's
/// result in the order submitted.
pub async fn in_batch<T, R, F, Fut>(
    items: Vec<Result<T, ApiError>>,
    create: F,
) -> Result<Vec<Result<R, ApiError>>, ApiError>
where
    F: FnOnce(Vec<T>) -> Fut,
    Fut: Future<Output = Result<Vec<Result<R, Problem>>, ServiceError>>,
{
    let mut valid = Vec::with_capacity(items.len());
    let slots: Vec<Result<(), ApiError>> = items
        .into_iter()
        .map(|item| item.map(|input| valid.push(input)))
        .collect();
    let mut results = create(valid).await?.into_iter();
    Ok(slots
        .into_iter()
        .map(|slot| {
            slot.and_then(|()| {
                results
                    .next()
                    .ok_or(ApiError::Internal(None))?
                    .map_err(ApiError::from)
            })
        })
        .collect())
}

/// One item's status, and its error when it failed.
pub fn status_of<V>(
    item: Result<(StatusCode, V), ApiError>,
) -> (u16, Option<V>, Option<ErrorDetail>) {
    match item {
        Ok((status, view)) => (status.as_u16(), Some(view), None),
        Err(error) => (error.status().as_u16(), None, Some(error.body().error)),
    }
}

/// How many of a batch's items were created (201): the count a create's
/// span reports.
pub fn created_in(statuses: impl Iterator<Item = u16>) -> usize {
    statuses.filter(|status| *status == 201).count()
}
