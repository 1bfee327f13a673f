//! `GET /v1/endpoints/{endpoint}/backlog`: what waits for an endpoint, so
//! that the console (and an operator with curl) sees at a glance whether a
//! receiver is keeping up: pending, due and not yet sent (behind the
//! endpoint's cap, rate limit or open circuit, or waiting for a pull
//! consumer), and under a consumer's lease.

use axum::extract::{Path, State};
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;

use super::error::ApiError;
use super::AppState;
use crate::store::backlog::{Backlog, BACKLOG_CAP};
use crate::store::endpoints::EndpointRef;

pub fn router() -> Router<AppState> {
    Router::new().route("/v1/endpoints/{endpoint}/backlog", get(read))
}

/// An endpoint's pending notifications. Each count stops at 100,000:
/// `capped` says one reached it (then read it as "at least").
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct BacklogView {
    /// Not ended yet.
    pub pending: i64,
    /// Pending and due by now, not under a live consumer's lease: waiting
    /// for a delivery slot, the rate limit, a closed circuit or a consumer
    /// (a lease that ran out counts here).
    pub due: i64,
    /// Pending under a pull consumer's lease that has not run out.
    pub leased: i64,
    /// Some count reached 100,000 and stopped there.
    pub capped: bool,
}

impl From<Backlog> for BacklogView {
    fn from(backlog: Backlog) -> Self {
        let capped = [backlog.pending, backlog.due, backlog.leased]
            .iter()
            .any(|count| *count >= BACKLOG_CAP);
        Self {
            pending: backlog.pending,
            due: backlog.due,
            leased: backlog.leased,
            capped,
        }
    }
}

/// What waits for an endpoint, and why
#[utoipa::path(operation_id = "get_endpoint_backlog", get, path = "/v1/endpoints/{endpoint}/backlog", tag = "endpoints",
    params(("endpoint" = crate::api::openapi_depth::EndpointRefSchema, Path, description = "id or uid")),
    responses((status = 200, body = BacklogView, description = "what waits for the endpoint now"),
        (status = 404, body = super::error::ErrorBody)))]
pub async fn read(
    State(state): State<AppState>,
    Path(endpoint): Path<String>,
) -> Result<Json<BacklogView>, ApiError> {
    let endpoint = state
        .store
        .find_endpoint(&EndpointRef::parse(&endpoint))
        .await?
        .ok_or(ApiError::NotFound("endpoint"))?;
    let backlog = state
        .store
        .endpoint_backlog(endpoint.id, state.service.now())
        .await?;
    Ok(Json(backlog.into()))
}
