//! Pull consumption (docs/design.md §10): `POST /v1/endpoints/{id}/pull` takes
//! due notifications under a lease (long-polling with `wait`); `ack`,
//! `nack` and `extend` act on a lease by its receipt, one at a time or in
//! batches; `consumer-token` issues the token a third-party consumer uses.
//! A consumer token reaches these routes only, for its own endpoint
//! (`auth`); the service checks the endpoint of every receipt.

pub mod leases;

use std::collections::BTreeMap;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::post;
use axum::{Extension, Json, Router};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use uuid::Uuid;

use super::auth::{Audited, Caller};
use super::error::ApiError;
use super::extract::OptionalJsonBody;
use super::AppState;
use crate::domain::pull::{take, Receipt};
use crate::store::endpoints::EndpointRef;
use crate::store::pull::Taken;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/endpoints/{endpoint}/pull", post(pull))
        .route("/v1/endpoints/{endpoint}/ack", post(leases::ack_batch))
        .route("/v1/endpoints/{endpoint}/nack", post(leases::nack_batch))
        .route(
            "/v1/endpoints/{endpoint}/consumer-token",
            post(consumer_token),
        )
        .route("/v1/notifications/{id}/ack", post(leases::ack))
        .route("/v1/notifications/{id}/nack", post(leases::nack))
        .route("/v1/notifications/{id}/extend", post(leases::extend))
}

/// The routes a consumer token may call (with `{endpoint}` its own).
pub fn consumer_route(route: &str) -> bool {
    matches!(
        route,
        "/v1/endpoints/{endpoint}/pull"
            | "/v1/endpoints/{endpoint}/ack"
            | "/v1/endpoints/{endpoint}/nack"
            | "/v1/notifications/{id}/ack"
            | "/v1/notifications/{id}/nack"
            | "/v1/notifications/{id}/extend"
    )
}

#[derive(Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PullRequest {
    /// Most notifications to take, 1 to 1000. Default 10.
    #[schema(minimum = 1, maximum = 1000)]
    pub max: Option<i64>,
    /// How long the consumer holds them, `1s` to `12h`. Default `30s`.
    #[schema(example = "30s")]
    pub lease: Option<String>,
    /// How long to wait for the first due notification, `0s` to `20s`.
    /// Default `0s`: answer at once.
    #[schema(example = "20s")]
    pub wait: Option<String>,
}

/// A notification taken under a lease.
#[derive(Serialize, utoipa::ToSchema)]
pub struct Pulled {
    pub id: Uuid,
    /// Names this lease: ack, nack or extend with it.
    pub receipt: String,
    /// 1-based, over every series: this lease is that attempt.
    pub attempt: i32,
    pub event_type: Option<String>,
    pub event_id: Option<Uuid>,
    pub key: Option<String>,
    /// The business object it is about, on an endpoint ordered by key: a
    /// pull offers only each key's earliest pending notification.
    #[schema(required = true)]
    pub order_key: Option<String>,
    /// Its place in its key's order (1, 2, 3 …), as a push delivery's
    /// `webhook-sequence`: a gap tells the consumer one is missing. `null`
    /// unless its endpoint orders by key.
    #[schema(required = true)]
    pub sequence: Option<i64>,
    pub content_type: String,
    /// The JSON payload (JSON content types).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<serde_json::Value>)]
    pub payload: Option<Box<RawValue>>,
    /// The body as text (other content types).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// The notification's custom headers.
    pub headers: BTreeMap<String, String>,
    pub created_at: DateTime<Utc>,
    /// When the lease runs out unless extended.
    pub lease_until: DateTime<Utc>,
}

impl Pulled {
    fn of(taken: Taken) -> Self {
        let (payload, body) = super::body::shown(&taken.content_type, taken.body);
        Self {
            id: taken.id,
            receipt: Receipt {
                notification: taken.id,
                lease: taken.lease_id,
            }
            .encode(),
            attempt: taken.attempts + 1,
            event_type: taken.event_type,
            event_id: taken.event_id,
            key: taken.key,
            order_key: taken.order_key,
            sequence: taken.sequence,
            content_type: taken.content_type,
            payload,
            body,
            headers: taken.headers,
            created_at: taken.created_at,
            lease_until: taken.lease_until,
        }
    }
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct PullResult {
    /// Earliest due first; empty when nothing was due within `wait`.
    pub data: Vec<Pulled>,
}

/// Take due notifications under a lease
#[utoipa::path(operation_id = "pull", post, path = "/v1/endpoints/{endpoint}/pull", tag = "pull",
    params(("endpoint" = crate::api::openapi_depth::EndpointRefSchema, Path, description = "id or uid")), request_body = Option<PullRequest>,
    responses((status = 200, body = PullResult, description = "the notifications taken, each under a lease; none if nothing came due within `wait`"),
        (status = 403, body = super::error::ErrorBody, description = "a token without the `pull` scope, or a consumer token of another endpoint"),
        (status = 404, body = super::error::ErrorBody),
        (status = 409, body = super::error::ErrorBody, description = "a push or disabled endpoint"),
        (status = 422, body = super::error::ErrorBody)))]
pub async fn pull(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(endpoint): Path<String>,
    // Every field has a default: no body pulls with them all.
    OptionalJsonBody(request): OptionalJsonBody<PullRequest>,
) -> Result<Json<PullResult>, ApiError> {
    let mut take = take(
        request.max,
        request.lease.as_deref(),
        request.wait.as_deref(),
    )?;
    // Answer before the request's own time limit does.
    let limit = Duration::from_millis(state.settings.server.request_timeout_ms);
    take.wait = take.wait.min(limit.saturating_sub(Duration::from_secs(1)));
    let (_, taken) = state
        .service
        .pull(&EndpointRef::parse(&endpoint), caller.consumer, take)
        .await?;
    Ok(Json(PullResult {
        data: taken.into_iter().map(Pulled::of).collect(),
    }))
}

/// A consumer token, shown once.
#[derive(Serialize, utoipa::ToSchema)]
pub struct ConsumerToken {
    pub endpoint_id: Uuid,
    /// `hkc_…`: may pull, ack, nack and extend for this endpoint only.
    /// hookd keeps only its digest; a new one replaces it.
    pub token: String,
}

/// Issue a pull consumer's token
#[utoipa::path(operation_id = "issue_consumer_token", post, path = "/v1/endpoints/{endpoint}/consumer-token", tag = "pull",
    params(("endpoint" = crate::api::openapi_depth::EndpointRefSchema, Path, description = "id or uid")),
    responses((status = 201, body = ConsumerToken, description = "the new token; the one before stops working (in this process at once, in others within a second or two)"),
        (status = 404, body = super::error::ErrorBody),
        (status = 409, body = super::error::ErrorBody, description = "a push endpoint (`not_pull`): only pull endpoints have consumers")))]
pub async fn consumer_token(
    State(state): State<AppState>,
    Path(endpoint): Path<String>,
) -> Result<(StatusCode, Extension<Audited>, Json<ConsumerToken>), ApiError> {
    let (endpoint_id, token) = state
        .service
        .issue_consumer_token(&EndpointRef::parse(&endpoint))
        .await?;
    Ok((
        StatusCode::CREATED,
        Extension(Audited(endpoint_id)),
        Json(ConsumerToken { endpoint_id, token }),
    ))
}
