//! `/v1/events`: create (one or a batch), read with delivery counts, list,
//! cancel. An event is committed with all its deliveries before the API
//! answers 201 (docs/design.md §9); its deliveries are listed by
//! `GET /v1/notifications?event=`.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use uuid::Uuid;

use super::batch::{created_in, in_batch, parse_items, status_of};
use super::error::{ApiError, ErrorDetail};
use super::extract::{JsonBody, NoBody, QueryParams};
use super::filters;
use super::pagination::{encode_cursor, page, Page, PageParams};
use super::traced::Traced;
use super::AppState;
use crate::domain::bounded::Bounded;
use crate::domain::status::Status;
use crate::service::events::EventInput;
use crate::service::notifications::{Accepted, MAX_BATCH};
use crate::store::events::{Event, EventFilter};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/events", post(create).get(list))
        .route("/v1/events/batch", post(create_batch))
        .route("/v1/events/{id}", get(read))
        .route("/v1/events/{id}/cancel", post(cancel))
}

/// An event as the API shows it.
#[derive(Serialize, utoipa::ToSchema)]
pub struct EventView {
    pub id: Uuid,
    pub event_type: String,
    pub owner: Option<String>,
    pub key: Option<String>,
    /// The business object it is about: its deliveries carry it, and on
    /// endpoints ordered by key go one at a time per key.
    pub order_key: Option<String>,
    /// Notifications its fan-out created, one per subscribed endpoint.
    pub deliveries: i32,
    pub content_type: String,
    pub deliver_at: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
    /// Its deliveries by status (single reads only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counts: Option<StatusCounts>,
    /// The JSON payload (single reads only, JSON content types).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<serde_json::Value>)]
    pub payload: Option<Box<RawValue>>,
    /// The body as text (single reads only, other content types).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
}

/// How many of an event's deliveries are in each status.
#[derive(Serialize, Default, utoipa::ToSchema)]
pub struct StatusCounts {
    pub pending: i64,
    pub succeeded: i64,
    pub failed: i64,
    pub cancelled: i64,
}

impl EventView {
    fn summary(event: Event) -> Self {
        Self {
            id: event.id,
            event_type: event.event_type,
            owner: event.owner,
            key: event.key,
            order_key: event.order_key,
            deliveries: event.deliveries,
            content_type: event.content_type,
            deliver_at: event.deliver_at,
            created_at: event.created_at,
            counts: None,
            payload: None,
            body: None,
        }
    }
}

fn created_or_existing(accepted: Accepted<Event>) -> (StatusCode, EventView) {
    match accepted {
        Accepted::Created(e) => (StatusCode::CREATED, EventView::summary(e)),
        Accepted::Existing(e) => (StatusCode::OK, EventView::summary(e)),
    }
}

/// Create an event
#[utoipa::path(operation_id = "create_event", post, path = "/v1/events", tag = "events", request_body = EventInput,
    params(super::traced::TraceHeaders),
    responses(
        (status = 201, body = EventView, description = "created and committed with all its deliveries"),
        (status = 200, body = EventView, description = "the existing event with this key and payload"),
        (status = 409, body = super::error::ErrorBody, description = "this key exists for this owner with another payload"),
        (status = 413, body = super::error::ErrorBody), (status = 422, body = super::error::ErrorBody),
        (status = 503, body = super::error::ErrorBody)))]
pub async fn create(
    State(state): State<AppState>,
    traced: Traced,
    JsonBody(mut input): JsonBody<EventInput>,
) -> Result<(StatusCode, Json<EventView>), ApiError> {
    input.trace = traced.kept.clone();
    let answer = async {
        let mut results = state.service.create_events(vec![input]).await?;
        let accepted = results.pop().ok_or(ApiError::Internal(None))??;
        let (status, view) = created_or_existing(accepted);
        Ok((status, Json(view)))
    }
    .await;
    traced.end(&state, "POST /v1/events", &answer, |(status, _)| {
        (*status, usize::from(*status == StatusCode::CREATED))
    });
    answer
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateEventBatch {
    /// Up to 1000 events, each as for `POST /v1/events`.
    #[schema(value_type = Vec<EventInput>, min_items = 1, max_items = 1000)]
    pub events: Bounded<Box<RawValue>, MAX_BATCH>,
}

/// One item's result: `status` is what a single create would have answered.
#[derive(Serialize, utoipa::ToSchema)]
pub struct EventBatchItem {
    pub status: u16,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event: Option<EventView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorDetail>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct EventBatchResult {
    /// One entry per submitted event, in order.
    pub data: Vec<EventBatchItem>,
}

/// Create events in a batch
#[utoipa::path(operation_id = "create_events_batch", post, path = "/v1/events/batch", tag = "events", request_body = CreateEventBatch,
    params(super::traced::TraceHeaders),
    responses((status = 200, body = EventBatchResult, description = "per-item results, in order"),
        (status = 413, body = super::error::ErrorBody), (status = 422, body = super::error::ErrorBody)))]
pub async fn create_batch(
    State(state): State<AppState>,
    traced: Traced,
    JsonBody(batch): JsonBody<CreateEventBatch>,
) -> Result<Json<EventBatchResult>, ApiError> {
    let answer = async {
        let items = parse_items(&batch.events, "events")?;
        let data = in_batch(items, |mut inputs: Vec<EventInput>| {
            for input in &mut inputs {
                input.trace = traced.kept.clone();
            }
            state.service.create_events(inputs)
        })
        .await?
        .into_iter()
        .map(|item| {
            let (status, event, error) = status_of(item.map(created_or_existing));
            EventBatchItem {
                status,
                event,
                error,
            }
        })
        .collect();
        Ok(Json(EventBatchResult { data }))
    }
    .await;
    traced.end(&state, "POST /v1/events/batch", &answer, |result| {
        let statuses = result.data.iter().map(|item| item.status);
        (StatusCode::OK, created_in(statuses))
    });
    answer
}

fn parse_id(text: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(text).map_err(|_| ApiError::NotFound("event"))
}

/// Read an event and its notifications
#[utoipa::path(operation_id = "get_event", get, path = "/v1/events/{id}", tag = "events",
    params(("id" = Uuid, Path)),
    responses((status = 200, body = EventView, description = "the event, its payload and its deliveries by status"),
        (status = 404, body = super::error::ErrorBody)))]
pub async fn read(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<EventView>, ApiError> {
    let id = parse_id(&id)?;
    let mut event = state
        .store
        .get_event(id)
        .await?
        .ok_or(ApiError::NotFound("event"))?;
    let mut counts = StatusCounts::default();
    for (status, count) in state.store.event_counts(id).await? {
        *match status {
            Status::Pending => &mut counts.pending,
            Status::Succeeded => &mut counts.succeeded,
            Status::Failed => &mut counts.failed,
            Status::Cancelled => &mut counts.cancelled,
        } = count;
    }
    let body = std::mem::take(&mut event.body);
    let content_type = event.content_type.clone();
    let mut view = EventView::summary(event);
    (view.payload, view.body) = super::body::shown(&content_type, body);
    view.counts = Some(counts);
    Ok(Json(view))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListParams {
    owner: Option<String>,
    event_type: Option<String>,
    key: Option<String>,
    created_after: Option<String>,
    created_before: Option<String>,
    limit: Option<String>,
    cursor: Option<String>,
}

/// List events
#[utoipa::path(operation_id = "list_events", get, path = "/v1/events", tag = "events",
    params(("owner" = Option<crate::api::openapi_depth::OwnerSchema>, Query), ("event_type" = Option<String>, Query), ("key" = Option<String>, Query),
        ("created_after" = Option<chrono::DateTime<chrono::Utc>>, Query, description = "RFC 3339: only those created at or after this time"),
        ("created_before" = Option<chrono::DateTime<chrono::Utc>>, Query, description = "RFC 3339: only those created before this time"),
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 500, description = "1 to 500, default 50"), ("cursor" = Option<String>, Query, description = "`next_cursor` of the previous page, unchanged")),
    description = "Newest first. With `event_type` (and no `key`), each page checks at most 5,000 events of its scope (an owner's, or all): it holds the matches found there, possibly fewer than `limit` or none, and `next_cursor` goes on past the events read. Follow `next_cursor` until it is `null`, whatever the page's length.",
    responses((status = 200, body = Page<EventView>, description = "newest first, without payloads; `next_cursor` is `null` only on the last page"),
        (status = 429, body = super::error::ErrorBody, description = "`too_many_requests`: this credential has `api.max_concurrent_per_credential` reads under way")))]
pub async fn list(
    State(state): State<AppState>,
    QueryParams(params): QueryParams<ListParams>,
) -> Result<Json<Page<EventView>>, ApiError> {
    let paging = PageParams {
        limit: params.limit,
        cursor: params.cursor,
    };
    let limit = paging.limit()?;
    filters::owner(params.owner.as_deref())?;
    filters::event_type(params.event_type.as_deref())?;
    filters::key(params.key.as_deref())?;
    let created = filters::created(
        params.created_after.as_deref(),
        params.created_before.as_deref(),
    )?;
    let mut filter = EventFilter {
        owner: params.owner.map(Some),
        event_type: params.event_type,
        key: params.key,
        created,
        before: paging.cursor_id()?,
        from: None,
        limit: limit + 1,
    };
    // A type reads a bounded slice of the scope, as notifications' lists.
    if filter.bounded() {
        filter.from = state.store.events_frontier(&filter).await?;
    }
    let rows = state.store.list_events(&filter).await?;
    let mut listed = page(rows, limit, |e| encode_cursor(e.id), EventView::summary);
    if listed.next_cursor.is_none() {
        listed.next_cursor = filter.from.map(encode_cursor);
    }
    Ok(Json(listed))
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct EventCancelled {
    /// Pending deliveries that were cancelled now.
    pub cancelled: usize,
}

/// Cancel an event's pending notifications
#[utoipa::path(operation_id = "cancel_event", post, path = "/v1/events/{id}/cancel", tag = "events",
    params(("id" = Uuid, Path)),
    responses((status = 200, body = EventCancelled, description = "its pending deliveries are cancelled; the others keep their status"),
        (status = 404, body = super::error::ErrorBody)))]
pub async fn cancel(
    State(state): State<AppState>,
    Path(id): Path<String>,
    _: NoBody,
) -> Result<Json<EventCancelled>, ApiError> {
    let cancelled = state.service.cancel_event(parse_id(&id)?).await?;
    Ok(Json(EventCancelled { cancelled }))
}
