//! `/v1/notifications`: create (one or a batch), read, list, attempts,
//! cancel, retry. A notification is committed to PostgreSQL before the API
//! answers 201, then indexed in Redis; if Redis fails at that moment the row
//! is marked and indexed later, and the answer is still 201.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;
use uuid::Uuid;

use super::endpoints::{check_headers, parse_schedule};
use super::error::{ApiError, ErrorDetail};
use super::extract::{parse_json, JsonBody, QueryParams};
use super::pagination::{encode_cursor, page, Page, PageParams};
use super::AppState;
use crate::domain::fields::{valid_event_type, valid_key};
use crate::domain::schedule::parse_duration;
use crate::domain::status::Status;
use crate::store::attempts::Attempt;
use crate::store::delivery::Retry;
use crate::store::endpoints::{Endpoint, EndpointRef};
use crate::store::notifications::{
    Cancel, Inserted, NewNotification, Notification, NotificationFilter,
};

pub const MAX_BATCH: usize = 1000;
/// Furthest in the future a notification may be scheduled.
pub const MAX_DEFERRAL_DAYS: i64 = 365;
const DEFAULT_CONTENT_TYPE: &str = "application/json";
/// A `body` is text unless its `content_type` says otherwise.
const DEFAULT_TEXT_CONTENT_TYPE: &str = "text/plain; charset=utf-8";

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/notifications", post(create).get(list))
        .route("/v1/notifications/batch", post(create_batch))
        .route("/v1/notifications/cancel", post(cancel_by_key))
        .route("/v1/notifications/{id}", get(read))
        .route("/v1/notifications/{id}/attempts", get(attempts))
        .route("/v1/notifications/{id}/cancel", post(cancel))
        .route("/v1/notifications/{id}/retry", post(retry))
}

/// A notification as a producer submits it.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateNotification {
    /// The endpoint's id or uid.
    #[schema(min_length = 1, max_length = 128)]
    pub endpoint: String,
    /// A JSON payload, sent as the exact bytes given. Excludes `body`.
    #[schema(value_type = Option<serde_json::Value>)]
    pub payload: Option<Box<RawValue>>,
    /// A text body (with `content_type`, e.g. a form for Alipay-style
    /// receivers). Excludes `payload`.
    pub body: Option<String>,
    /// Default `application/json`.
    pub content_type: Option<String>,
    pub event_type: Option<String>,
    /// The producer's business key (`order-123:paid`), unique per endpoint:
    /// creating again with it is idempotent.
    #[schema(min_length = 1, max_length = 255)]
    pub key: Option<String>,
    /// RFC 3339 time before which nothing is sent. Excludes `delay`.
    pub deliver_at: Option<String>,
    /// Wait before the notification is due (`"30s"`, `"2m"`). Excludes `deliver_at`.
    pub delay: Option<String>,
    /// Overrides the endpoint's schedule for this notification.
    #[schema(value_type = Option<super::openapi::ScheduleSpec>)]
    pub schedule: Option<Value>,
    /// Extra headers for this notification's deliveries.
    pub headers: Option<BTreeMap<String, String>>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct LastAttempt {
    pub at: DateTime<Utc>,
    pub status_code: Option<i32>,
    pub error: Option<String>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct NotificationView {
    pub id: Uuid,
    pub endpoint_id: Uuid,
    pub key: Option<String>,
    pub event_type: Option<String>,
    pub status: Status,
    /// Attempts made so far, over every series.
    pub attempts: i32,
    /// When the next attempt is due; `null` once final.
    pub next_attempt_at: Option<DateTime<Utc>>,
    pub deliver_at: DateTime<Utc>,
    pub last_attempt: Option<LastAttempt>,
    pub content_type: String,
    #[schema(value_type = super::openapi::ScheduleSpec)]
    pub schedule: Value,
    /// Custom headers by name; their values are never shown (`***`).
    pub headers: BTreeMap<String, String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub completed_at: Option<DateTime<Utc>>,
    /// The JSON payload (single reads only, JSON content types).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<serde_json::Value>)]
    pub payload: Option<Box<RawValue>>,
    /// The body as text (single reads only, other content types).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
}

impl NotificationView {
    fn summary(n: Notification) -> Self {
        Self {
            id: n.id,
            endpoint_id: n.endpoint_id,
            status: n.status(),
            schedule: n.schedule().to_json(),
            last_attempt: n.last_attempt_at.map(|at| LastAttempt {
                at,
                status_code: n.last_status_code,
                error: n.last_error.clone(),
            }),
            key: n.key,
            event_type: n.event_type,
            attempts: n.attempts,
            next_attempt_at: n.next_attempt_at,
            deliver_at: n.deliver_at,
            content_type: n.content_type,
            headers: super::endpoints::masked(n.headers.0),
            created_at: n.created_at,
            updated_at: n.updated_at,
            completed_at: n.completed_at,
            payload: None,
            body: None,
        }
    }

    fn full(mut n: Notification) -> Self {
        let body = std::mem::take(&mut n.body);
        let is_json = is_json_content_type(&n.content_type);
        let mut view = Self::summary(n);
        match String::from_utf8(body) {
            Ok(text) if is_json && serde_json::from_str::<&RawValue>(&text).is_ok() => {
                view.payload = RawValue::from_string(text).ok();
            }
            Ok(text) => view.body = Some(text),
            Err(e) => view.body = Some(String::from_utf8_lossy(e.as_bytes()).into_owned()),
        }
        view
    }
}

/// A client's value as an error message quotes it: at most 128 bytes.
fn shown(text: &str) -> &str {
    let mut end = text.len().min(128);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

fn is_json_content_type(content_type: &str) -> bool {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    essence == "application/json" || essence.ends_with("+json")
}

/// Validates one submission against its endpoint and builds the row.
fn prepare(
    request: CreateNotification,
    endpoints: &HashMap<EndpointRef, Arc<Endpoint>>,
    max_payload_bytes: usize,
    now: DateTime<Utc>,
) -> Result<NewNotification, ApiError> {
    let endpoint = endpoints
        .get(&EndpointRef::parse(&request.endpoint))
        .ok_or_else(|| {
            ApiError::invalid(
                "unknown_endpoint",
                "endpoint",
                format!("no endpoint has id or uid `{}`", shown(&request.endpoint)),
            )
        })?;
    let (body, field) = match (request.payload, request.body) {
        (Some(_), Some(_)) => {
            return Err(ApiError::invalid(
                "conflicting_fields",
                "body",
                "give either payload (JSON) or body (text), not both",
            ))
        }
        (None, None) => {
            return Err(ApiError::invalid(
                "missing_field",
                "payload",
                "payload (JSON) or body (text) is required",
            ))
        }
        (Some(payload), None) => (payload.get().as_bytes().to_vec(), "payload"),
        (None, Some(body)) => (body.into_bytes(), "body"),
    };
    if body.len() > max_payload_bytes {
        return Err(ApiError::TooLarge {
            message: format!(
                "{field} is {} bytes; api.max_payload_bytes is {max_payload_bytes}",
                body.len()
            ),
            field: Some(field.into()),
        });
    }
    let default_type = if field == "body" {
        DEFAULT_TEXT_CONTENT_TYPE
    } else {
        DEFAULT_CONTENT_TYPE
    };
    let content_type = request.content_type.unwrap_or_else(|| default_type.into());
    if content_type.len() > 255
        || !content_type.contains('/')
        || reqwest::header::HeaderValue::from_str(&content_type).is_err()
    {
        return Err(ApiError::invalid(
            "invalid_value",
            "content_type",
            "content_type is a media type such as application/json",
        ));
    }
    if let Some(event_type) = &request.event_type {
        if !valid_event_type(event_type) {
            return Err(ApiError::invalid(
                "invalid_value",
                "event_type",
                "event_type is 1 to 255 of A-Z a-z 0-9 _ - . : /",
            ));
        }
    }
    if !endpoint.accepts_event_type(request.event_type.as_deref()) {
        return Err(ApiError::invalid(
            "event_type_not_subscribed",
            "event_type",
            "the endpoint's event_types do not include this event type",
        ));
    }
    if let Some(key) = &request.key {
        if !valid_key(key) {
            return Err(invalid_key());
        }
    }
    let deliver_at = match (request.deliver_at, request.delay) {
        (Some(_), Some(_)) => {
            return Err(ApiError::invalid(
                "conflicting_fields",
                "delay",
                "give either deliver_at or delay, not both",
            ))
        }
        (Some(at), None) => DateTime::parse_from_rfc3339(&at)
            .map_err(|_| {
                ApiError::invalid(
                    "invalid_value",
                    "deliver_at",
                    "deliver_at is an RFC 3339 time such as 2026-01-31T12:00:00Z",
                )
            })?
            .with_timezone(&Utc),
        (None, Some(delay)) => {
            let ms = parse_duration(&delay)
                .map_err(|e| ApiError::invalid("invalid_value", "delay", e.to_string()))?;
            now + chrono::Duration::milliseconds(ms as i64)
        }
        (None, None) => now,
    };
    if deliver_at > now + chrono::Duration::days(MAX_DEFERRAL_DAYS) {
        return Err(ApiError::invalid(
            "invalid_value",
            "deliver_at",
            format!("notifications may be deferred by at most {MAX_DEFERRAL_DAYS} days"),
        ));
    }
    let schedule = match &request.schedule {
        Some(value) => parse_schedule(value, "schedule")?,
        None => endpoint.schedule(),
    };
    let headers = request.headers.unwrap_or_default();
    check_headers(&headers, "headers")?;
    let due = deliver_at.max(now)
        + chrono::Duration::from_std(schedule.first_delay()).unwrap_or_default();
    Ok(NewNotification {
        id: crate::domain::id::new_id(),
        endpoint_id: endpoint.id,
        key: request.key,
        event_type: request.event_type,
        content_type,
        body,
        headers,
        schedule,
        deliver_at,
        next_attempt_at: due,
    })
}

/// Finds every endpoint the requests name: from the cache, then the rest in
/// one query, by id and uid. Keyed by the parsed reference, so spellings of
/// one id share an entry.
async fn resolve_endpoints(
    state: &AppState,
    names: &[&str],
) -> Result<HashMap<EndpointRef, Arc<Endpoint>>, ApiError> {
    let mut found = HashMap::new();
    let mut missing = HashSet::new();
    for name in names {
        let wanted = EndpointRef::parse(name);
        // No endpoint can have an impossible uid; `prepare` reports it.
        if !wanted.is_possible() || found.contains_key(&wanted) || missing.contains(&wanted) {
            continue;
        }
        match state.endpoints.get(&wanted) {
            Some(endpoint) => {
                found.insert(wanted, endpoint);
            }
            None => {
                missing.insert(wanted);
            }
        }
    }
    if missing.is_empty() {
        return Ok(found);
    }
    let mut ids = Vec::new();
    let mut uids = Vec::new();
    for wanted in missing {
        match wanted {
            EndpointRef::Id(id) => ids.push(id),
            EndpointRef::Uid(uid) => uids.push(uid),
        }
    }
    for endpoint in state.store.find_endpoints(&ids, &uids).await? {
        let endpoint = Arc::new(endpoint);
        if ids.contains(&endpoint.id) {
            state
                .endpoints
                .put(EndpointRef::Id(endpoint.id), endpoint.clone());
            found.insert(EndpointRef::Id(endpoint.id), endpoint.clone());
        }
        if let Some(uid) = endpoint.uid.as_ref().filter(|u| uids.contains(u)) {
            let by = EndpointRef::Uid(uid.clone());
            state.endpoints.put(by.clone(), endpoint.clone());
            found.insert(by, endpoint);
        }
    }
    Ok(found)
}

/// Commits the notifications (group commit) and indexes the new ones.
async fn accept(state: &AppState, items: Vec<NewNotification>) -> Result<Vec<Inserted>, ApiError> {
    if items.is_empty() {
        return Ok(Vec::new());
    }
    state.ingest.submit(items).await
}

fn created_or_existing(result: Inserted) -> Result<(StatusCode, NotificationView), ApiError> {
    match result {
        Inserted::Created(n) => Ok((StatusCode::CREATED, NotificationView::summary(n))),
        Inserted::Existing(n) => Ok((StatusCode::OK, NotificationView::summary(n))),
        Inserted::KeyConflict(n) => Err(ApiError::Conflict {
            code: "key_conflict",
            message: format!(
                "notification {} already has this key on this endpoint, with another payload",
                n.id
            ),
        }),
    }
}

#[utoipa::path(operation_id = "create_notification", post, path = "/v1/notifications", tag = "notifications", request_body = CreateNotification,
    responses(
        (status = 201, body = NotificationView, description = "created and committed"),
        (status = 200, body = NotificationView, description = "the existing notification with this key and payload"),
        (status = 409, body = super::error::ErrorBody, description = "this key exists with another payload"),
        (status = 413, body = super::error::ErrorBody), (status = 422, body = super::error::ErrorBody),
        (status = 503, body = super::error::ErrorBody)))]
pub async fn create(
    State(state): State<AppState>,
    JsonBody(request): JsonBody<CreateNotification>,
) -> Result<(StatusCode, Json<NotificationView>), ApiError> {
    let endpoints = resolve_endpoints(&state, &[request.endpoint.as_str()]).await?;
    let item = prepare(
        request,
        &endpoints,
        state.settings.api.max_payload_bytes,
        Utc::now(),
    )?;
    let result = accept(&state, vec![item])
        .await?
        .pop()
        .ok_or(ApiError::Internal)?;
    let (status, view) = created_or_existing(result)?;
    Ok((status, Json(view)))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateBatch {
    /// Up to 1000 notifications, each as for `POST /v1/notifications`.
    #[schema(value_type = Vec<CreateNotification>, min_items = 1, max_items = 1000)]
    pub notifications: Vec<Box<RawValue>>,
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

#[utoipa::path(operation_id = "create_notifications_batch", post, path = "/v1/notifications/batch", tag = "notifications", request_body = CreateBatch,
    responses((status = 200, body = BatchResult, description = "per-item results, in order"),
        (status = 413, body = super::error::ErrorBody), (status = 422, body = super::error::ErrorBody)))]
pub async fn create_batch(
    State(state): State<AppState>,
    JsonBody(batch): JsonBody<CreateBatch>,
) -> Result<Json<BatchResult>, ApiError> {
    if batch.notifications.is_empty() || batch.notifications.len() > MAX_BATCH {
        return Err(ApiError::invalid(
            "invalid_value",
            "notifications",
            format!("a batch holds 1 to {MAX_BATCH} notifications"),
        ));
    }
    let parsed: Vec<Result<CreateNotification, ApiError>> = batch
        .notifications
        .iter()
        .map(|raw| parse_json(raw.get().as_bytes()))
        .collect();
    let names: Vec<&str> = parsed
        .iter()
        .flatten()
        .map(|r| r.endpoint.as_str())
        .collect();
    let endpoints = resolve_endpoints(&state, &names).await?;
    let now = Utc::now();
    let prepared: Vec<Result<NewNotification, ApiError>> = parsed
        .into_iter()
        .map(|r| r.and_then(|r| prepare(r, &endpoints, state.settings.api.max_payload_bytes, now)))
        .collect();
    // Valid items move into `valid`; each slot keeps its place or its error.
    let mut valid = Vec::with_capacity(prepared.len());
    let slots: Vec<Result<(), ApiError>> = prepared
        .into_iter()
        .map(|p| p.map(|item| valid.push(item)))
        .collect();
    let mut inserted = accept(&state, valid).await?.into_iter();
    let data = slots
        .into_iter()
        .map(|p| {
            let outcome = p.and_then(|_| {
                let result = inserted.next().ok_or(ApiError::Internal)?;
                created_or_existing(result)
            });
            match outcome {
                Ok((status, view)) => BatchItem {
                    status: status.as_u16(),
                    notification: Some(view),
                    error: None,
                },
                Err(error) => BatchItem {
                    status: error.status().as_u16(),
                    notification: None,
                    error: Some(error.body().error),
                },
            }
        })
        .collect();
    Ok(Json(BatchResult { data }))
}

fn parse_id(text: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(text).map_err(|_| ApiError::NotFound("notification"))
}

#[utoipa::path(operation_id = "get_notification", get, path = "/v1/notifications/{id}", tag = "notifications",
    params(("id" = Uuid, Path)),
    responses((status = 200, body = NotificationView), (status = 404, body = super::error::ErrorBody)))]
pub async fn read(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<NotificationView>, ApiError> {
    let found = state.store.get_notification(parse_id(&id)?).await?;
    found
        .map(|n| Json(NotificationView::full(n)))
        .ok_or(ApiError::NotFound("notification"))
}

#[derive(Debug, Default, Deserialize)]
pub struct ListParams {
    endpoint: Option<String>,
    status: Option<String>,
    key: Option<String>,
    event_type: Option<String>,
    limit: Option<String>,
    cursor: Option<String>,
}

#[utoipa::path(operation_id = "list_notifications", get, path = "/v1/notifications", tag = "notifications",
    params(("endpoint" = Option<String>, Query, description = "id or uid"),
        ("status" = Option<Status>, Query), ("key" = Option<String>, Query), ("event_type" = Option<String>, Query),
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 500, description = "1 to 500, default 50"), ("cursor" = Option<String>, Query, description = "`next_cursor` of the previous page, unchanged")),
    responses((status = 200, body = Page<NotificationView>, description = "newest first, without payloads"),
        (status = 400, body = super::error::ErrorBody), (status = 422, body = super::error::ErrorBody)))]
pub async fn list(
    State(state): State<AppState>,
    QueryParams(params): QueryParams<ListParams>,
) -> Result<Json<Page<NotificationView>>, ApiError> {
    let paging = PageParams {
        limit: params.limit,
        cursor: params.cursor,
    };
    let limit = paging.limit()?;
    let status = params
        .status
        .map(|s| {
            Status::parse(&s).ok_or_else(|| {
                ApiError::invalid(
                    "invalid_value",
                    "status",
                    "status is one of pending, succeeded, failed, cancelled",
                )
            })
        })
        .transpose()?;
    let endpoint_id = match params.endpoint.as_deref().map(EndpointRef::parse) {
        // An id names its endpoint's notifications even after the endpoint
        // was deleted: their history stays queryable.
        Some(EndpointRef::Id(id)) => Some(id),
        Some(by) => match state.store.find_endpoint(&by).await? {
            Some(endpoint) => Some(endpoint.id),
            // An unknown endpoint has no notifications.
            None => {
                return Ok(Json(Page {
                    data: Vec::new(),
                    next_cursor: None,
                }))
            }
        },
        None => None,
    };
    let filter = NotificationFilter {
        endpoint_id,
        status,
        key: params.key,
        event_type: params.event_type,
        before: paging.cursor_id()?,
        limit: limit + 1,
    };
    let rows = state.store.list_notifications(&filter).await?;
    Ok(Json(page(
        rows,
        limit,
        |n| encode_cursor(n.id),
        NotificationView::summary,
    )))
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct AttemptView {
    /// 1-based, over every series.
    pub number: i32,
    pub started_at: DateTime<Utc>,
    pub duration_ms: i32,
    pub status_code: Option<i32>,
    /// The first 4 KiB of the response body.
    pub response_body: Option<String>,
    /// Why no acceptable response came: `timeout`, `connect`, `blocked_address`...
    pub error: Option<AttemptError>,
    /// `succeeded`, `retry` (another attempt follows) or `failed` (final).
    pub outcome: String,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct AttemptError {
    pub code: String,
    pub message: String,
}

impl From<Attempt> for AttemptView {
    fn from(a: Attempt) -> Self {
        Self {
            number: a.number,
            started_at: a.started_at,
            duration_ms: a.duration_ms,
            status_code: a.status_code,
            response_body: a.response_body,
            error: a.error_code.map(|code| AttemptError {
                code,
                message: a.error_message.unwrap_or_default(),
            }),
            outcome: a.outcome.to_string(),
        }
    }
}

#[utoipa::path(operation_id = "list_notification_attempts", get, path = "/v1/notifications/{id}/attempts", tag = "notifications",
    params(("id" = Uuid, Path), ("limit" = Option<i64>, Query, minimum = 1, maximum = 500, description = "1 to 500, default 50"), ("cursor" = Option<String>, Query, description = "`next_cursor` of the previous page, unchanged")),
    responses((status = 200, body = Page<AttemptView>, description = "in attempt order"), (status = 404, body = super::error::ErrorBody)))]
pub async fn attempts(
    State(state): State<AppState>,
    Path(id): Path<String>,
    QueryParams(params): QueryParams<PageParams>,
) -> Result<Json<Page<AttemptView>>, ApiError> {
    let id = parse_id(&id)?;
    let limit = params.limit()?;
    let after = params.cursor_number()?.unwrap_or(0);
    let rows = state.store.list_attempts(id, after, limit + 1).await?;
    if rows.is_empty() && after == 0 && state.store.get_notification(id).await?.is_none() {
        return Err(ApiError::NotFound("notification"));
    }
    Ok(Json(page(
        rows,
        limit,
        |a| encode_cursor(a.number),
        AttemptView::from,
    )))
}

#[utoipa::path(operation_id = "cancel_notification", post, path = "/v1/notifications/{id}/cancel", tag = "notifications",
    params(("id" = Uuid, Path)),
    responses((status = 200, body = NotificationView, description = "cancelled (or already was)"),
        (status = 404, body = super::error::ErrorBody),
        (status = 409, body = super::error::ErrorBody, description = "already succeeded or failed")))]
pub async fn cancel(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<NotificationView>, ApiError> {
    match state.store.cancel_notification(parse_id(&id)?).await? {
        Cancel::Cancelled(n) => {
            state.unindex(&[n.id]).await;
            Ok(Json(NotificationView::summary(n)))
        }
        Cancel::NotPending(n) if n.status() == Status::Cancelled => {
            Ok(Json(NotificationView::summary(n)))
        }
        Cancel::NotPending(n) => Err(ApiError::Conflict {
            code: "not_pending",
            message: format!(
                "the notification has {}; only pending ones can be cancelled",
                n.status
            ),
        }),
        Cancel::NotFound => Err(ApiError::NotFound("notification")),
    }
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelByKey {
    #[schema(min_length = 1, max_length = 255)]
    pub key: String,
    /// Only this endpoint's (id or uid); all endpoints when absent.
    pub endpoint: Option<String>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct Cancelled {
    pub cancelled: usize,
    pub ids: Vec<Uuid>,
}

fn invalid_key() -> ApiError {
    ApiError::invalid(
        "invalid_value",
        "key",
        "key is 1 to 255 bytes without control characters",
    )
}

#[utoipa::path(operation_id = "cancel_notifications_by_key", post, path = "/v1/notifications/cancel", tag = "notifications", request_body = CancelByKey,
    responses((status = 200, body = Cancelled), (status = 422, body = super::error::ErrorBody)))]
pub async fn cancel_by_key(
    State(state): State<AppState>,
    JsonBody(request): JsonBody<CancelByKey>,
) -> Result<Json<Cancelled>, ApiError> {
    if !valid_key(&request.key) {
        return Err(invalid_key());
    }
    let endpoint_id = match &request.endpoint {
        Some(name) => Some(
            state
                .store
                .find_endpoint(&EndpointRef::parse(name))
                .await?
                .ok_or_else(|| {
                    ApiError::invalid(
                        "unknown_endpoint",
                        "endpoint",
                        format!("no endpoint has id or uid `{name}`"),
                    )
                })?
                .id,
        ),
        None => None,
    };
    let ids = state.store.cancel_by_key(&request.key, endpoint_id).await?;
    state.unindex(&ids).await;
    Ok(Json(Cancelled {
        cancelled: ids.len(),
        ids,
    }))
}

#[utoipa::path(operation_id = "retry_notification", post, path = "/v1/notifications/{id}/retry", tag = "notifications",
    params(("id" = Uuid, Path)),
    responses((status = 200, body = NotificationView, description = "pending again, due now, with a fresh attempt series"),
        (status = 404, body = super::error::ErrorBody),
        (status = 409, body = super::error::ErrorBody, description = "succeeded or cancelled: nothing to retry")))]
pub async fn retry(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<NotificationView>, ApiError> {
    let now = Utc::now();
    match state.store.retry_notification(parse_id(&id)?, now).await? {
        Retry::Retried(n) => {
            state.index_due(&[(n.id, now)]).await;
            Ok(Json(NotificationView::summary(n)))
        }
        Retry::NotRetryable(n) => Err(ApiError::Conflict {
            code: "not_retryable",
            message: format!(
                "the notification has {}; only failed or pending ones can be retried",
                n.status
            ),
        }),
        Retry::NotFound => Err(ApiError::NotFound("notification")),
    }
}
