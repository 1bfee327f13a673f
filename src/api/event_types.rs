//! `GET /v1/endpoints/{endpoint}/event-types`: the event types an endpoint
//! was sent in the last 30 days, for its owner (or a portal link that may
//! manage it) to choose what it takes from (docs/design.md §18).

use axum::extract::{Path, State};
use axum::routing::get;
use axum::{Json, Router};
use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use super::error::ApiError;
use super::AppState;
use crate::domain::id::first_of_ms;
use crate::store::endpoints::EndpointRef;

/// How far back the types are looked for.
const WINDOW_DAYS: i64 = 30;
/// The most rows read from each source (the owner's events, the
/// endpoint's notifications), newest first: the types of a busy owner's
/// latest traffic, at a bounded cost whatever its history.
const PER_SOURCE: i64 = 10_000;
/// The most types answered.
const MAX_TYPES: usize = 200;

pub fn router() -> Router<AppState> {
    Router::new().route("/v1/endpoints/{endpoint}/event-types", get(read))
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct RecentEventTypes {
    /// The distinct event types, sorted: of the newest 10,000 events of
    /// the endpoint's owner and of its own newest 10,000 notifications
    /// created since `since`, whether or not the endpoint takes them (for
    /// a busy owner, the types of its latest traffic); at most 200.
    pub data: Vec<String>,
    /// 30 days before the request.
    pub since: DateTime<Utc>,
    /// More than 200 types were found: the first 200 are answered.
    pub partial: bool,
}

/// The event types an endpoint has received
#[utoipa::path(operation_id = "get_endpoint_event_types", get, path = "/v1/endpoints/{endpoint}/event-types", tag = "endpoints",
    params(("endpoint" = crate::api::openapi_depth::EndpointRefSchema, Path, description = "id or uid")),
    responses((status = 200, body = RecentEventTypes, description = "the event types sent lately to the endpoint or its owner"),
        (status = 404, body = super::error::ErrorBody)))]
pub async fn read(
    State(state): State<AppState>,
    Path(endpoint): Path<String>,
) -> Result<Json<RecentEventTypes>, ApiError> {
    let endpoint = state
        .store
        .find_endpoint(&EndpointRef::parse(&endpoint))
        .await?
        .ok_or(ApiError::NotFound("endpoint"))?;
    let since = state.service.now() - Duration::days(WINDOW_DAYS);
    let mut types = state
        .store
        .recent_event_types(
            endpoint.id,
            endpoint.owner.as_deref(),
            first_of_ms(since.timestamp_millis()),
            PER_SOURCE,
        )
        .await?;
    types.sort();
    let partial = types.len() > MAX_TYPES;
    types.truncate(MAX_TYPES);
    Ok(Json(RecentEventTypes {
        data: types,
        since,
        partial,
    }))
}
