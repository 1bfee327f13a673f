//! `/v1/notifications`: create (one or a batch), read, attempts, cancel,
//! retry; the list is `notification_list`'s. A notification is committed to PostgreSQL before the API
//! answers 201, then indexed in Redis; if Redis fails at that moment the row
//! is marked and indexed later, and the answer is still 201.

use std::collections::HashSet;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use uuid::Uuid;

use super::attempt_view::AttemptView;
use super::auth::{Caller, SeesSecrets};
use super::batch::{created_in, in_batch, parse_items, status_of};
use super::error::{ApiError, ErrorDetail};
use super::extract::{JsonBody, NoBody, QueryParams};
use super::notification_view::{secret_paths, NotificationView};
use super::pagination::{encode_cursor, page, Page, PageParams};
use super::traced::Traced;
use super::waiting::Holds;
use super::AppState;
use crate::domain::bounded::Bounded;
use crate::domain::problem::ErrorCode;
use crate::domain::scope::Scope;
use crate::service::notifications::{Accepted, NotificationInput, MAX_BATCH};
use crate::store::notifications::Notification;

pub fn router() -> Router<AppState> {
    Router::new()
        .route(
            "/v1/notifications",
            post(create).get(super::notification_list::list),
        )
        .route("/v1/notifications/batch", post(create_batch))
        .route("/v1/notifications/cancel", post(cancel_by_key_or_filter))
        .route("/v1/notifications/{id}", get(read))
        .route("/v1/notifications/{id}/attempts", get(attempts))
        .route("/v1/notifications/{id}/cancel", post(cancel))
        .route("/v1/notifications/{id}/retry", post(retry))
        .route("/v1/endpoints/{endpoint}/test", post(send_test))
}

fn accepted_notification(accepted: &Accepted<Notification>) -> &Notification {
    match accepted {
        Accepted::Created(n) | Accepted::Existing(n) => n,
    }
}

fn created_or_existing(
    accepted: Accepted<Notification>,
    caller: &SeesSecrets,
    (secret, holds): (&HashSet<Uuid>, &Holds),
) -> (StatusCode, NotificationView) {
    let shown = |n| NotificationView::summary(n, holds).shown_to(caller, secret);
    match accepted {
        Accepted::Created(n) => (StatusCode::CREATED, shown(n)),
        Accepted::Existing(n) => (StatusCode::OK, shown(n)),
    }
}

/// Create a notification
#[utoipa::path(operation_id = "create_notification", post, path = "/v1/notifications", tag = "notifications", request_body = NotificationInput,
    params(super::traced::TraceHeaders),
    responses(
        (status = 201, body = NotificationView, description = "created and committed"),
        (status = 200, body = NotificationView, description = "the existing notification with this key and payload"),
        (status = 409, body = super::error::ErrorBody, description = "this key exists with another payload"),
        (status = 413, body = super::error::ErrorBody), (status = 422, body = super::error::ErrorBody),
        (status = 503, body = super::error::ErrorBody)))]
pub async fn create(
    State(state): State<AppState>,
    caller: SeesSecrets,
    traced: Traced,
    JsonBody(mut request): JsonBody<NotificationInput>,
) -> Result<(StatusCode, Json<NotificationView>), ApiError> {
    request.trace = traced.kept.clone();
    let answer = create_one(&state, &caller, request).await;
    traced.end(&state, "POST /v1/notifications", &answer, |(status, _)| {
        (*status, usize::from(*status == StatusCode::CREATED))
    });
    answer
}

async fn create_one(
    state: &AppState,
    caller: &SeesSecrets,
    request: NotificationInput,
) -> Result<(StatusCode, Json<NotificationView>), ApiError> {
    let created = state.service.create_notification(request).await?;
    let secret = secret_paths(state, caller, [accepted_notification(&created)]).await;
    let holds = Holds::endpoints(state, [accepted_notification(&created)]).await;
    let (status, view) = created_or_existing(created, caller, (&secret, &holds));
    Ok((status, Json(view)))
}

#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SendTest {
    /// The test's event type: one the endpoint takes. Absent: `hookd.test`
    /// for an endpoint that takes every type, and none (which every
    /// endpoint takes) for one that takes only some.
    pub event_type: Option<String>,
}

/// The event type a test goes with: the chosen one, or `hookd.test` where
/// the endpoint takes every type.
fn test_event_type(
    chosen: Option<String>,
    endpoint: &crate::store::endpoints::Endpoint,
) -> Option<String> {
    chosen.or_else(|| {
        endpoint
            .event_types
            .is_none()
            .then(|| TEST_EVENT_TYPE.to_string())
    })
}

/// The event type of a test nobody chose a type for.
const TEST_EVENT_TYPE: &str = "hookd.test";

/// Send an endpoint a test notification
#[utoipa::path(operation_id = "send_test_notification", post, path = "/v1/endpoints/{endpoint}/test", tag = "endpoints", request_body = Option<SendTest>,
    params(("endpoint" = crate::api::openapi_depth::EndpointRefSchema, Path, description = "id or uid")),
    responses(
        (status = 201, body = NotificationView, description = "a test notification, created and committed like any other; its payload is `{\"type\": \"hookd.test\", \"event_type\": …, \"sent_at\": …}`"),
        (status = 404, body = super::error::ErrorBody),
        (status = 422, body = super::error::ErrorBody, description = "the endpoint does not take that event type")))]
pub async fn send_test(
    State(state): State<AppState>,
    caller: SeesSecrets,
    Path(endpoint): Path<String>,
    super::extract::OptionalJsonBody(request): super::extract::OptionalJsonBody<SendTest>,
) -> Result<(StatusCode, Json<NotificationView>), ApiError> {
    let found = state
        .store
        .find_endpoint(&crate::store::endpoints::EndpointRef::parse(&endpoint))
        .await?
        .ok_or(ApiError::NotFound("endpoint"))?;
    let event_type = test_event_type(request.event_type, &found);
    let payload = serde_json::json!({
        "type": TEST_EVENT_TYPE,
        "event_type": event_type,
        "sent_at": state.service.now(),
    });
    let input = NotificationInput::test(
        found.id.to_string(),
        RawValue::from_string(payload.to_string()).map_err(ApiError::internal)?,
        event_type,
    );
    create_one(&state, &caller, input).await
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateBatch {
    /// Up to 1000 notifications, each as for `POST /v1/notifications`.
    #[schema(value_type = Vec<NotificationInput>, min_items = 1, max_items = 1000)]
    pub notifications: Bounded<Box<RawValue>, MAX_BATCH>,
}

/// One item's result: `status` is what a single create would have answered.
#[derive(Serialize, utoipa::ToSchema)]
pub struct BatchItem {
    pub status: u16,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notification: Option<NotificationView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorDetail>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct BatchResult {
    /// One entry per submitted notification, in order.
    pub data: Vec<BatchItem>,
}

/// Create notifications in a batch
#[utoipa::path(operation_id = "create_notifications_batch", post, path = "/v1/notifications/batch", tag = "notifications", request_body = CreateBatch,
    params(super::traced::TraceHeaders),
    responses((status = 200, body = BatchResult, description = "per-item results, in order"),
        (status = 413, body = super::error::ErrorBody), (status = 422, body = super::error::ErrorBody)))]
pub async fn create_batch(
    State(state): State<AppState>,
    caller: SeesSecrets,
    traced: Traced,
    JsonBody(batch): JsonBody<CreateBatch>,
) -> Result<Json<BatchResult>, ApiError> {
    let answer = create_many(&state, &caller, &traced, batch).await;
    traced.end(&state, "POST /v1/notifications/batch", &answer, |result| {
        (
            StatusCode::OK,
            created_in(result.data.iter().map(|item| item.status)),
        )
    });
    answer
}

async fn create_many(
    state: &AppState,
    caller: &SeesSecrets,
    traced: &Traced,
    batch: CreateBatch,
) -> Result<Json<BatchResult>, ApiError> {
    let items = parse_items(&batch.notifications, "notifications")?;
    let results = in_batch(items, |mut inputs: Vec<NotificationInput>| {
        for input in &mut inputs {
            input.trace = traced.kept.clone();
        }
        state.service.create_notifications(inputs)
    })
    .await?;
    let accepted = results
        .iter()
        .filter_map(|item| item.as_ref().ok())
        .map(accepted_notification);
    let secret = secret_paths(state, caller, accepted.clone()).await;
    let holds = Holds::endpoints(state, accepted).await;
    let data = results
        .into_iter()
        .map(|item| {
            let shown = |accepted| created_or_existing(accepted, caller, (&secret, &holds));
            let (status, notification, error) = status_of(item.map(shown));
            BatchItem {
                status,
                notification,
                error,
            }
        })
        .collect();
    Ok(Json(BatchResult { data }))
}

fn parse_id(text: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(text).map_err(|_| ApiError::NotFound("notification"))
}

/// Read a notification
#[utoipa::path(operation_id = "get_notification", get, path = "/v1/notifications/{id}", tag = "notifications",
    params(("id" = Uuid, Path)),
    responses((status = 200, body = NotificationView, description = "the notification, its payload and where it stands"), (status = 404, body = super::error::ErrorBody)))]
pub async fn read(
    State(state): State<AppState>,
    caller: SeesSecrets,
    Path(id): Path<String>,
) -> Result<Json<NotificationView>, ApiError> {
    let found = state
        .store
        .get_notification(parse_id(&id)?)
        .await?
        .ok_or(ApiError::NotFound("notification"))?;
    let secret = secret_paths(&state, &caller, [&found]).await;
    let holds = Holds::read(&state, [&found]).await;
    Ok(Json(
        NotificationView::full(found, &holds).shown_to(&caller, &secret),
    ))
}

/// List a notification's attempts
#[utoipa::path(operation_id = "list_notification_attempts", get, path = "/v1/notifications/{id}/attempts", tag = "notifications",
    params(("id" = Uuid, Path), ("limit" = Option<i64>, Query, minimum = 1, maximum = 500, description = "1 to 500, default 50"), ("cursor" = Option<String>, Query, description = "`next_cursor` of the previous page, unchanged")),
    responses((status = 200, body = Page<AttemptView>, description = "in attempt order"), (status = 404, body = super::error::ErrorBody)))]
pub async fn attempts(
    State(state): State<AppState>,
    caller: SeesSecrets,
    Path(id): Path<String>,
    QueryParams(params): QueryParams<PageParams>,
) -> Result<Json<Page<AttemptView>>, ApiError> {
    let id = parse_id(&id)?;
    let limit = params.limit()?;
    let after = params.cursor_number()?.unwrap_or(0);
    // Its attempts' requests' headers follow from it (`AttemptView::of`).
    let notification = state
        .store
        .get_notification(id)
        .await?
        .ok_or(ApiError::NotFound("notification"))?;
    // Whether its endpoint keeps its whole path secret: only for a URL of
    // its own, shown to a caller who may not see it whole.
    let whole_path = notification.url.is_some()
        && !caller.sees()
        && !secret_paths(&state, &caller, [&notification])
            .await
            .is_empty();
    let url = notification
        .url
        .clone()
        .map(|url| caller.url(url, whole_path));
    let rows = state.store.list_attempts(id, after, limit + 1).await?;
    Ok(Json(page(
        rows,
        limit,
        |a| encode_cursor(a.number),
        |a| AttemptView {
            url: url.clone(),
            ..AttemptView::of(a, &notification)
        },
    )))
}

/// Cancel a notification
#[utoipa::path(operation_id = "cancel_notification", post, path = "/v1/notifications/{id}/cancel", tag = "notifications",
    params(("id" = Uuid, Path)),
    responses((status = 200, body = NotificationView, description = "cancelled (or already was)"),
        (status = 403, body = super::error::ErrorBody, description = "an operator alert, and the token is not `admin`"),
        (status = 404, body = super::error::ErrorBody),
        (status = 409, body = super::error::ErrorBody, description = "already succeeded or failed")))]
pub async fn cancel(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    sees: SeesSecrets,
    Path(id): Path<String>,
    _: NoBody,
) -> Result<Json<NotificationView>, ApiError> {
    let cancelled = state
        .service
        .cancel_notification(parse_id(&id)?, caller.scopes.allow(Scope::Admin))
        .await?;
    let secret = secret_paths(&state, &sees, [&cancelled]).await;
    Ok(Json(
        NotificationView::summary(cancelled, &Holds::default()).shown_to(&sees, &secret),
    ))
}

/// Cancel by key (at once), or by filter (an operation): `key`, or
/// `endpoint` with the list's filters, not both.
#[derive(Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelRequest {
    /// Cancel at once every pending notification with this business key.
    #[schema(min_length = 1, max_length = 255)]
    pub key: Option<String>,
    /// With `key`: only this endpoint's (id or uid), all endpoints when
    /// absent. Without: required, the endpoint whose pending notifications
    /// the filters below pick (an operation).
    pub endpoint: Option<String>,
    /// By filter: only `pending` (the default).
    pub status: Option<String>,
    /// By filter: the notification's type, or its event's.
    pub event_type: Option<String>,
    /// By filter: a prefix of the notification's key, or of its event's.
    pub key_prefix: Option<String>,
    /// By filter, RFC 3339: created at or after.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub created_after: Option<String>,
    /// By filter, RFC 3339: created before.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub created_before: Option<String>,
    /// By filter: count what it would cancel, and change nothing.
    #[serde(default)]
    pub dry_run: bool,
}

impl CancelRequest {
    /// Whether it names any filter field (which a cancel by key takes none of).
    fn filtered(&self) -> bool {
        self.status.is_some()
            || self.event_type.is_some()
            || self.key_prefix.is_some()
            || self.created_after.is_some()
            || self.created_before.is_some()
            || self.dry_run
    }
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct Cancelled {
    pub cancelled: usize,
    pub ids: Vec<Uuid>,
}

/// What a cancel answers 200: by key, what it cancelled; a dry run by
/// filter, how many it would.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum CancelAnswer {
    Cancelled(Cancelled),
    Matched(super::recover::Matched),
}

/// Cancel pending notifications by filter
#[utoipa::path(operation_id = "cancel_notifications", post, path = "/v1/notifications/cancel", tag = "notifications", request_body = CancelRequest,
    responses((status = 200, body = CancelAnswer, description = "by `key`: the pending notifications with this key that were cancelled (operator alerts only with an `admin` token); a `dry_run` by filter: how many it would cancel, nothing changed"),
        (status = 202, body = super::recover::OperationView, description = "by filter: started; every pending notification of the endpoint created until now that the filter holds is cancelled, in pages; poll `GET /v1/operations/{id}`"),
        (status = 403, body = super::error::ErrorBody, description = "the operator endpoint named, and the token is not `admin`"),
        (status = 409, body = super::recover::RecoverRunning, description = "by filter: a cancel of this endpoint runs (`operation_running`): it is in `operation`"),
        (status = 422, body = super::error::ErrorBody, description = "neither `key` nor `endpoint`, `key` with a filter, `status` other than `pending`, an unknown endpoint, or a filter no notification can match; `error.field` names it")))]
pub async fn cancel_by_key_or_filter(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    JsonBody(request): JsonBody<CancelRequest>,
) -> Result<axum::response::Response, ApiError> {
    use axum::response::IntoResponse;
    let admin = caller.scopes.allow(Scope::Admin);
    let Some(key) = request.key.as_deref() else {
        return super::recover::cancel_by_filter(&state, request, admin).await;
    };
    if request.filtered() {
        return Err(ApiError::invalid(
            ErrorCode::InvalidValue,
            "key",
            "key cancels at once and takes no filter; to cancel by filter, leave key out and name the endpoint",
        ));
    }
    let ids = state
        .service
        .cancel_by_key(key, request.endpoint.as_deref(), admin)
        .await?;
    Ok(Json(CancelAnswer::Cancelled(Cancelled {
        cancelled: ids.len(),
        ids,
    }))
    .into_response())
}

/// Retry a failed notification
#[utoipa::path(operation_id = "retry_notification", post, path = "/v1/notifications/{id}/retry", tag = "notifications",
    params(("id" = Uuid, Path)),
    responses((status = 200, body = NotificationView, description = "pending again, due now, with a fresh attempt series"),
        (status = 404, body = super::error::ErrorBody),
        (status = 409, body = super::error::ErrorBody, description = "succeeded or cancelled, or its endpoint deleted: nothing to retry (`not_retryable`); being delivered at this moment (`in_flight`); or pending and held, which a retry would not change: its endpoint is disabled (`endpoint_disabled`) or its circuit open (`circuit_open`), the code naming its `waiting` reason"),
        (status = 503, body = super::error::ErrorBody, description = "the due index (Redis, in server mode) does not answer: whether it is being delivered cannot be known; or the database is unavailable")))]
pub async fn retry(
    State(state): State<AppState>,
    caller: SeesSecrets,
    Path(id): Path<String>,
    _: NoBody,
) -> Result<Json<NotificationView>, ApiError> {
    let id = parse_id(&id)?;
    // Held by its endpoint or its key: a retry would change nothing.
    if let Some(found) = state.store.get_notification(id).await? {
        let held = Holds::read(&state, [&found]).await.of(&found);
        if let Some(problem) = held.and_then(|w| w.refuses_retry()) {
            return Err(problem.into());
        }
    }
    let retried = state.service.retry_notification(id).await?;
    let secret = secret_paths(&state, &caller, [&retried]).await;
    let holds = Holds::read(&state, [&retried]).await;
    Ok(Json(
        NotificationView::summary(retried, &holds).shown_to(&caller, &secret),
    ))
}
