//! Operations (docs/design.md §16, §18): `POST
//! /v1/endpoints/{endpoint}/recover` starts one that restarts the
//! endpoint's notifications that ended `failed` in a window, `POST
//! /v1/notifications/retry` one that restarts those that failed and match
//! a filter, `POST /v1/notifications/cancel` without a key one that
//! cancels the pending ones that match (`notifications::cancel_by_key_or_filter`).
//! Each answers 202 at once (or, `dry_run`, 200 with the count), and `GET
//! /v1/operations/{id}` follows it.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::error::{ApiError, ErrorBody};
use super::extract::{JsonBody, OptionalJsonBody};
use super::AppState;
use crate::domain::bulk::BulkFilter;
use crate::domain::operation::{OperationKind, OperationStatus};
use crate::domain::problem::ErrorCode;
use crate::domain::status::Status;
use crate::service::bulk::Asked;
use crate::store::operations::{Operation, Started};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/endpoints/{endpoint}/recover", post(recover))
        .route("/v1/notifications/retry", post(bulk_retry))
        .route("/v1/operations/{id}", get(read))
}

/// What to recover: the notifications that ended `failed` (by the time
/// they failed, their `completed_at`) between `since` and `until`, both
/// included.
#[derive(Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RecoverRequest {
    /// Required. RFC 3339, not in the future.
    #[schema(value_type = String, format = DateTime, example = "2026-11-26T02:00:00Z")]
    pub since: Option<String>,
    /// RFC 3339, not before `since`, not in the future; default: now.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub until: Option<String>,
    /// Count what it would restart, and change nothing.
    #[serde(default)]
    pub dry_run: bool,
}

/// An operation: work hookd does in the background, in pages, resumed
/// after a restart.
#[derive(Serialize, utoipa::ToSchema)]
pub struct OperationView {
    pub id: Uuid,
    pub kind: OperationKind,
    pub endpoint_id: Uuid,
    pub status: OperationStatus,
    /// Failed notifications of the window (a retry: that its filter holds;
    /// a cancel: pending ones its filter holds) found so far.
    pub matched: i64,
    /// Of those, restarted as a new attempt series (due now); a cancel's,
    /// cancelled.
    pub started: i64,
    /// The failures it reads: a recover's window; a retry's, from the
    /// beginning to when it started.
    pub since: DateTime<Utc>,
    pub until: DateTime<Utc>,
    /// A retry's or a cancel's filter.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filter: Option<BulkFilter>,
    pub created_at: DateTime<Utc>,
    /// When it ended `done` or `failed`; null while it runs.
    pub finished_at: Option<DateTime<Utc>>,
    /// Why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl From<Operation> for OperationView {
    fn from(operation: Operation) -> Self {
        Self {
            id: operation.id,
            kind: operation.kind,
            endpoint_id: operation.endpoint_id,
            status: operation.status,
            matched: operation.matched,
            started: operation.started,
            since: operation.window.since,
            until: operation.window.until,
            filter: operation.filter,
            created_at: operation.created_at,
            finished_at: operation.finished_at,
            error: operation.error,
        }
    }
}

/// The 409 of a second recover: the error, and the operation that runs.
#[derive(Serialize, utoipa::ToSchema)]
pub struct RecoverRunning {
    #[serde(flatten)]
    pub error: ErrorBody,
    pub operation: OperationView,
}

/// Send an endpoint's failed notifications again
#[utoipa::path(operation_id = "recover_endpoint", post, path = "/v1/endpoints/{endpoint}/recover", tag = "endpoints",
    params(("endpoint" = crate::api::openapi_depth::EndpointRefSchema, Path, description = "id or uid")),
    request_body = RecoverRequest,
    responses((status = 200, body = Matched, description = "`dry_run`: how many it would restart; nothing changed"),
        (status = 202, body = OperationView, description = "started: every notification of the endpoint that ended `failed` in the window is restarted as a new series, due now, in pages; poll `GET /v1/operations/{id}`"),
        (status = 404, body = ErrorBody, description = "no such endpoint (or it was deleted)"),
        (status = 409, body = RecoverRunning, description = "a recover of this endpoint runs (`operation_running`): it is in `operation`"),
        (status = 422, body = ErrorBody, description = "`since` missing or not RFC 3339, a time in the future, or `until` before `since`; `error.field` names it")))]
pub async fn recover(
    State(state): State<AppState>,
    Path(endpoint): Path<String>,
    OptionalJsonBody(request): OptionalJsonBody<RecoverRequest>,
) -> Result<Response, ApiError> {
    let asked = state
        .recovery
        .start(
            &endpoint,
            request.since.as_deref(),
            request.until.as_deref(),
            request.dry_run,
        )
        .await?;
    Ok(answered(asked))
}

fn answered(asked: Asked) -> Response {
    match asked {
        Asked::Matched(matched) => Json(Matched { matched }).into_response(),
        Asked::Started(started) => answer(*started),
    }
}

/// 202 with the operation started, or 409 with the one of its kind that
/// runs for the endpoint.
fn answer(started: Started) -> Response {
    match started {
        Started::Started(operation) => {
            (StatusCode::ACCEPTED, Json(OperationView::from(operation))).into_response()
        }
        Started::Running(operation) => {
            let error = ApiError::Conflict {
                code: ErrorCode::OperationRunning,
                message: format!(
                    "a {} of this endpoint runs: operation {}; wait until it is done",
                    operation.kind.as_str(),
                    operation.id
                ),
            };
            let body = RecoverRunning {
                error: error.body(),
                operation: operation.into(),
            };
            (StatusCode::CONFLICT, Json(body)).into_response()
        }
    }
}

/// The filter a bulk action's body asks for (`changes`: the status it
/// changes), each field checked as the lists check it.
fn filter_of(
    changes: Status,
    status: Option<&str>,
    event_type: Option<String>,
    key_prefix: Option<String>,
    (created_after, created_before): (Option<&str>, Option<&str>),
) -> Result<BulkFilter, ApiError> {
    let created = super::filters::created(created_after, created_before)?;
    Ok(BulkFilter::asked(
        changes, status, event_type, key_prefix, created,
    )?)
}

/// A cancel by filter (`POST /v1/notifications/cancel` without `key`):
/// the endpoint's pending notifications that the filter holds, as an
/// operation, or counted.
pub(super) async fn cancel_by_filter(
    state: &AppState,
    request: super::notifications::CancelRequest,
    admin: bool,
) -> Result<Response, ApiError> {
    let Some(endpoint) = request.endpoint else {
        return Err(ApiError::invalid(
            ErrorCode::MissingField,
            "key",
            "key is required to cancel by key; to cancel by filter, name the endpoint",
        ));
    };
    let filter = filter_of(
        Status::Pending,
        request.status.as_deref(),
        request.event_type,
        request.key_prefix,
        (
            request.created_after.as_deref(),
            request.created_before.as_deref(),
        ),
    )?;
    let asked = state
        .recovery
        .start_cancel(&endpoint, filter, request.dry_run, admin)
        .await?;
    Ok(answered(asked))
}

/// Which failed notifications to restart: those of `endpoint` that the
/// other fields (each as the list's filter of that name) all hold.
#[derive(Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BulkRetryRequest {
    /// Required: the endpoint's id or uid.
    pub endpoint: Option<String>,
    /// Only `failed` (the default): pending notifications are on their way,
    /// succeeded and cancelled ones are final.
    pub status: Option<String>,
    /// The notification's type, or its event's.
    pub event_type: Option<String>,
    /// A prefix of the notification's key, or of its event's.
    pub key_prefix: Option<String>,
    /// RFC 3339: created at or after.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub created_after: Option<String>,
    /// RFC 3339: created before.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub created_before: Option<String>,
    /// RFC 3339: failed at or after (as a recover's `since`), not in the
    /// future.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub completed_after: Option<String>,
    /// Count what it would restart, and change nothing.
    #[serde(default)]
    pub dry_run: bool,
}

/// A dry run's answer.
#[derive(Serialize, utoipa::ToSchema)]
pub struct Matched {
    /// Notifications it would change now: failed ones restarted, or
    /// pending ones cancelled.
    pub matched: i64,
}

/// Retry failed notifications by filter
#[utoipa::path(operation_id = "retry_notifications", post, path = "/v1/notifications/retry", tag = "notifications",
    request_body = BulkRetryRequest,
    responses((status = 200, body = Matched, description = "`dry_run`: how many it would restart; nothing changed"),
        (status = 202, body = OperationView, description = "started: every failed notification of the endpoint that the filter holds (failed until now) is restarted as a new series, due now, in pages; poll `GET /v1/operations/{id}`"),
        (status = 409, body = RecoverRunning, description = "a retry of this endpoint runs (`operation_running`): it is in `operation`"),
        (status = 422, body = ErrorBody, description = "`endpoint` missing or unknown, `status` other than `failed`, or a filter no notification can match; `error.field` names it")))]
pub async fn bulk_retry(
    State(state): State<AppState>,
    JsonBody(request): JsonBody<BulkRetryRequest>,
) -> Result<Response, ApiError> {
    let Some(endpoint) = request.endpoint else {
        return Err(ApiError::invalid(
            ErrorCode::MissingField,
            "endpoint",
            "endpoint is required: the id or uid whose failed notifications are retried",
        ));
    };
    let filter = filter_of(
        Status::Failed,
        request.status.as_deref(),
        request.event_type,
        request.key_prefix,
        (
            request.created_after.as_deref(),
            request.created_before.as_deref(),
        ),
    )?;
    let failed_since = super::filters::time("completed_after", request.completed_after.as_deref())?;
    let asked = state
        .recovery
        .start_retry(&endpoint, filter, failed_since, request.dry_run)
        .await?;
    Ok(answered(asked))
}

/// Read a bulk operation's progress
#[utoipa::path(operation_id = "read_operation", get, path = "/v1/operations/{id}", tag = "endpoints",
    params(("id" = Uuid, Path)),
    responses((status = 200, body = OperationView, description = "the operation as it stands"),
        (status = 404, body = ErrorBody)))]
pub async fn read(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<OperationView>, ApiError> {
    let id = Uuid::parse_str(&id).map_err(|_| ApiError::NotFound("operation"))?;
    let operation = state
        .recovery
        .get(id)
        .await?
        .ok_or(ApiError::NotFound("operation"))?;
    Ok(Json(operation.into()))
}
