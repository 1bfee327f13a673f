//! Acting on leases by receipt: `ack`, `nack` and `extend` of one
//! notification, and `ack`/`nack` of a batch of one endpoint's receipts.

use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::api::auth::Caller;
use crate::api::batch::status_of;
use crate::api::error::{ApiError, ErrorDetail};
use crate::api::extract::JsonBody;
use crate::api::AppState;
use crate::domain::bounded::Bounded;
use crate::domain::problem::{cut, shown, ErrorCode, Problem};
use crate::domain::pull::{lease_duration, Receipt, MAX_MAX};
use crate::domain::status::Status;
use crate::service::pull::{End, Ended, Scope};
use crate::store::endpoints::EndpointRef;

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AckRequest {
    /// The receipt of the lease, as the pull returned it.
    pub receipt: String,
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NackRequest {
    pub receipt: String,
    /// Not before this long from now (`"5m"`): only pushes the schedule's
    /// next attempt later, never earlier; at most 24h.
    #[schema(example = "5m")]
    pub retry_after: Option<String>,
    /// Why, recorded as the attempt's error (at most 1,000 bytes kept).
    pub error: Option<String>,
    /// End it `failed` now, whatever the schedule says.
    #[serde(default)]
    pub permanent: bool,
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ExtendRequest {
    pub receipt: String,
    /// The lease's new length from now, `1s` to `12h`.
    #[schema(example = "1m")]
    pub lease: String,
}

/// What an ack or nack made of the notification.
#[derive(Serialize, utoipa::ToSchema)]
pub struct EndedView {
    pub id: Uuid,
    pub status: Status,
    /// The attempt the lease was.
    pub attempt: i32,
    /// When it is due again, after a nack that keeps it pending.
    pub next_attempt_at: Option<DateTime<Utc>>,
}

impl From<Ended> for EndedView {
    fn from(e: Ended) -> Self {
        Self {
            id: e.id,
            status: e.status,
            attempt: e.attempt,
            next_attempt_at: e.next_attempt_at,
        }
    }
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct LeaseView {
    pub id: Uuid,
    pub lease_until: DateTime<Utc>,
}

fn parse_id(text: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(text).map_err(|_| ApiError::NotFound("notification"))
}

/// The receipt of a single-notification route: well-formed, and for it.
fn receipt_for(id: &str, text: &str) -> Result<Receipt, ApiError> {
    let id = parse_id(id)?;
    let receipt = Receipt::parse(text, "receipt")?;
    if receipt.notification != id {
        return Err(Problem::invalid(
            ErrorCode::ReceiptMismatch,
            "receipt",
            "the receipt is for another notification",
        )
        .into());
    }
    Ok(receipt)
}

fn nack_of(
    retry_after: Option<&str>,
    error: Option<String>,
    permanent: bool,
) -> Result<End, ApiError> {
    let retry_after = retry_after
        .map(|text| {
            crate::domain::schedule::parse_duration(text)
                .map(Duration::from_millis)
                .map_err(|_| {
                    Problem::invalid(
                        ErrorCode::InvalidValue,
                        "retry_after",
                        "retry_after is a duration such as \"5m\", at most 24h",
                    )
                })
        })
        .transpose()?;
    let error = error.map(|text| cut(&text, 1000).replace('\0', "\u{FFFD}"));
    Ok(End::Nack {
        retry_after,
        error,
        permanent,
    })
}

async fn end_one(
    state: &AppState,
    caller: &Caller,
    receipt: Receipt,
    how: End,
) -> Result<Json<EndedView>, ApiError> {
    let scope = Scope {
        consumer: caller.consumer,
        endpoint: None,
    };
    let mut results = state.service.end_leases(&[receipt], &how, scope).await?;
    match results.pop() {
        Some(result) => Ok(Json(result?.into())),
        None => Err(ApiError::Internal(None)),
    }
}

/// Acknowledge a pulled notification
#[utoipa::path(operation_id = "ack", post, path = "/v1/notifications/{id}/ack", tag = "pull",
    params(("id" = Uuid, Path)), request_body = AckRequest,
    responses((status = 200, body = EndedView, description = "succeeded"),
        (status = 404, body = crate::api::error::ErrorBody),
        (status = 409, body = crate::api::error::ErrorBody, description = "`lease_lost` (the lease ran out or was ended, or the notification is no longer pending) or `not_pull`"),
        (status = 422, body = crate::api::error::ErrorBody)))]
pub async fn ack(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    JsonBody(request): JsonBody<AckRequest>,
) -> Result<Json<EndedView>, ApiError> {
    let receipt = receipt_for(&id, &request.receipt)?;
    end_one(&state, &caller, receipt, End::Ack).await
}

/// Give back a pulled notification
#[utoipa::path(operation_id = "nack", post, path = "/v1/notifications/{id}/nack", tag = "pull",
    params(("id" = Uuid, Path)), request_body = NackRequest,
    responses((status = 200, body = EndedView, description = "pending again at `next_attempt_at`, or failed"),
        (status = 404, body = crate::api::error::ErrorBody),
        (status = 409, body = crate::api::error::ErrorBody, description = "`lease_lost` (the lease ran out or was ended, or the notification is no longer pending) or `not_pull`"),
        (status = 422, body = crate::api::error::ErrorBody)))]
pub async fn nack(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    JsonBody(request): JsonBody<NackRequest>,
) -> Result<Json<EndedView>, ApiError> {
    let receipt = receipt_for(&id, &request.receipt)?;
    let how = nack_of(
        request.retry_after.as_deref(),
        request.error,
        request.permanent,
    )?;
    end_one(&state, &caller, receipt, how).await
}

/// Extend a pulled notification's lease
#[utoipa::path(operation_id = "extend", post, path = "/v1/notifications/{id}/extend", tag = "pull",
    params(("id" = Uuid, Path)), request_body = ExtendRequest,
    responses((status = 200, body = LeaseView, description = "the lease, until its new end"),
        (status = 404, body = crate::api::error::ErrorBody),
        (status = 409, body = crate::api::error::ErrorBody, description = "`lease_lost` (the lease ran out or was ended, or the notification is no longer pending) or `not_pull`"),
        (status = 422, body = crate::api::error::ErrorBody)))]
pub async fn extend(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    JsonBody(request): JsonBody<ExtendRequest>,
) -> Result<Json<LeaseView>, ApiError> {
    let receipt = receipt_for(&id, &request.receipt)?;
    let lease = lease_duration(&request.lease, "lease")?;
    let scope = Scope {
        consumer: caller.consumer,
        endpoint: None,
    };
    let lease_until = state.service.extend_lease(&receipt, lease, scope).await?;
    Ok(Json(LeaseView {
        id: receipt.notification,
        lease_until,
    }))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AckBatch {
    /// 1 to 1000 receipts of this endpoint's leases.
    #[schema(value_type = Vec<String>)]
    pub receipts: Bounded<String, { MAX_MAX as usize }>,
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NackBatch {
    /// 1 to 1000 receipts of this endpoint's leases.
    #[schema(value_type = Vec<String>)]
    pub receipts: Bounded<String, { MAX_MAX as usize }>,
    #[schema(example = "5m")]
    pub retry_after: Option<String>,
    pub error: Option<String>,
    #[serde(default)]
    pub permanent: bool,
}

/// One receipt's result in a batch.
#[derive(Serialize, utoipa::ToSchema)]
pub struct EndedItem {
    pub receipt: String,
    /// 200, or the status the receipt alone would have had.
    pub status: u16,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<EndedView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorDetail>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct EndedBatch {
    /// In the order of `receipts`.
    pub data: Vec<EndedItem>,
}

async fn end_batch(
    state: &AppState,
    caller: &Caller,
    endpoint: &str,
    receipts: Vec<String>,
    how: End,
) -> Result<Json<EndedBatch>, ApiError> {
    if receipts.is_empty() || receipts.len() > MAX_MAX as usize {
        return Err(ApiError::invalid(
            ErrorCode::InvalidValue,
            "receipts",
            format!("receipts holds 1 to {MAX_MAX} receipts"),
        ));
    }
    let endpoint = state
        .service
        .pull_endpoint_id(&EndpointRef::parse(endpoint), caller.consumer)
        .await?;
    let parsed: Vec<Result<Receipt, Problem>> = receipts
        .iter()
        .enumerate()
        .map(|(i, text)| Receipt::parse(text, &format!("receipts[{i}]")))
        .collect();
    let valid: Vec<Receipt> = parsed.iter().filter_map(|r| r.clone().ok()).collect();
    let scope = Scope {
        consumer: caller.consumer,
        endpoint: Some(endpoint),
    };
    let mut ended = if valid.is_empty() {
        Vec::new()
    } else {
        state.service.end_leases(&valid, &how, scope).await?
    }
    .into_iter();
    let data = receipts
        .into_iter()
        .zip(parsed)
        .map(|(receipt, parsed)| {
            let result = parsed
                .and_then(|_| {
                    ended
                        .next()
                        .unwrap_or(Err(Problem::not_found("notification")))
                })
                .map(|e| (StatusCode::OK, EndedView::from(e)))
                .map_err(ApiError::from);
            let (status, result, error) = status_of(result);
            EndedItem {
                // A receipt is 47 bytes: a longer text is not one, and is
                // quoted as any other client text in an error.
                receipt: shown(&receipt).into_owned(),
                status,
                result,
                error,
            }
        })
        .collect();
    Ok(Json(EndedBatch { data }))
}

/// Acknowledge pulled notifications
#[utoipa::path(operation_id = "ack_batch", post, path = "/v1/endpoints/{endpoint}/ack", tag = "pull",
    params(("endpoint" = crate::api::openapi_depth::EndpointRefSchema, Path, description = "id or uid")), request_body = AckBatch,
    responses((status = 200, body = EndedBatch, description = "one result per receipt"),
        (status = 404, body = crate::api::error::ErrorBody),
        (status = 409, body = crate::api::error::ErrorBody, description = "a push endpoint (`not_pull`): it has no leases"),
        (status = 422, body = crate::api::error::ErrorBody)))]
pub async fn ack_batch(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(endpoint): Path<String>,
    JsonBody(request): JsonBody<AckBatch>,
) -> Result<Json<EndedBatch>, ApiError> {
    end_batch(
        &state,
        &caller,
        &endpoint,
        request.receipts.into_vec(),
        End::Ack,
    )
    .await
}

/// Give back pulled notifications
#[utoipa::path(operation_id = "nack_batch", post, path = "/v1/endpoints/{endpoint}/nack", tag = "pull",
    params(("endpoint" = crate::api::openapi_depth::EndpointRefSchema, Path, description = "id or uid")), request_body = NackBatch,
    responses((status = 200, body = EndedBatch, description = "one result per receipt"),
        (status = 404, body = crate::api::error::ErrorBody),
        (status = 409, body = crate::api::error::ErrorBody, description = "a push endpoint (`not_pull`): it has no leases"),
        (status = 422, body = crate::api::error::ErrorBody)))]
pub async fn nack_batch(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(endpoint): Path<String>,
    JsonBody(request): JsonBody<NackBatch>,
) -> Result<Json<EndedBatch>, ApiError> {
    let how = nack_of(
        request.retry_after.as_deref(),
        request.error,
        request.permanent,
    )?;
    end_batch(&state, &caller, &endpoint, request.receipts.into_vec(), how).await
}
