//! `/v1/endpoints`: receivers, their signing secrets and delivery policy.
//! Create and PATCH share one path: a create applies its fields to a default
//! endpoint, so every field is validated in one place.

use std::collections::BTreeMap;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use super::auth::{Audited, Caller, SeesSecrets};
use super::error::ApiError;
use super::extract::{JsonBody, QueryParams};
use super::filters;
use super::pagination::{encode_cursor, page, Page, PageParams};
use super::AppState;
use crate::domain::fields::{masked, MASK};
use crate::domain::ordering::{KeyOrdering, OnFailure};
use crate::domain::pull::Delivery;
use crate::domain::secret::Signing;
use crate::service::endpoints::{BreakerFields, Changer, EndpointFields};
use crate::store::endpoints::{Endpoint, EndpointRef};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/endpoints", post(create).get(list))
        .route(
            "/v1/endpoints/{endpoint}",
            get(read).patch(update).delete(remove),
        )
        .route(
            "/v1/endpoints/{endpoint}/secret",
            get(super::secret::read_secret),
        )
        .route(
            "/v1/endpoints/{endpoint}/public-key",
            get(super::public_key::read_public_key),
        )
        .route(
            "/v1/endpoints/{endpoint}/secret/rotate",
            post(super::secret::rotate_secret),
        )
        .route(
            "/v1/endpoints/{endpoint}/secret/previous",
            axum::routing::delete(super::secret::end_overlap),
        )
}

/// An endpoint as the API shows it. The secret appears only when it is new
/// (create, rotate) or asked for (`GET .../secret`).
#[derive(Serialize, utoipa::ToSchema)]
pub struct EndpointView {
    pub id: Uuid,
    #[schema(required = true)]
    pub uid: Option<String>,
    /// The tenant it belongs to; events fan out within one owner.
    #[schema(required = true)]
    pub owner: Option<String>,
    /// Where hookd POSTs; null for a pull endpoint.
    #[schema(required = true)]
    pub url: Option<String>,
    /// `push` (hookd POSTs to `url`) or `pull` (consumers take them).
    pub delivery: Delivery,
    pub description: String,
    #[schema(required = true)]
    pub event_types: Option<Vec<String>>,
    /// `hmac` (a shared secret signs `v1,`), `ed25519` (a private key
    /// signs `v1a,`) or `rsa2` (an RSA key signs a form body's `sign`);
    /// receivers of the last two verify with `GET .../public-key`.
    pub signing: Signing,
    /// The predicate an event's payload must satisfy to reach it, as
    /// written; null: every event of its types.
    #[schema(value_type = Option<Object>, required = true)]
    pub filter: Option<crate::domain::payload_filter::PayloadFilter>,
    #[schema(value_type = crate::domain::schedule::ScheduleSpec)]
    pub schedule: Value,
    /// Each wait of the schedule is scaled by a random factor in
    /// [1 − j, 1 + j]; 0 keeps the schedule exact.
    #[schema(minimum = 0.0, maximum = 0.5)]
    pub schedule_jitter: f64,
    /// The endpoint's own rate limit; `null`: none of its own
    /// (`dispatcher.default_rate_limit` applies, if set).
    #[schema(required = true)]
    pub rate_limit: Option<crate::domain::rate::RateLimit>,
    /// Fresh notifications' part of the rate limit while retries are due
    /// beside them (lanes); `null`: `dispatcher.fresh_share` applies.
    #[schema(minimum = 0.0, maximum = 1.0, required = true)]
    pub fresh_share: Option<f64>,
    /// The circuit breaker's settings over `[dispatcher.breaker]` (absent
    /// ones are the defaults); null: no breaker.
    #[schema(required = true)]
    pub breaker: Option<BreakerFields>,
    /// The endpoint's circuit now.
    pub circuit: CircuitView,
    #[schema(required = true)]
    pub success_body: Option<String>,
    /// The filter a 2xx answer's JSON body must satisfy, as written;
    /// null: none.
    #[schema(value_type = Option<Object>, required = true)]
    pub success_filter: Option<crate::domain::payload_filter::PayloadFilter>,
    pub permanent_statuses: Vec<i32>,
    /// Custom headers by name; their values are never shown (`***`).
    pub headers: BTreeMap<String, String>,
    #[schema(required = true)]
    pub timeout_ms: Option<i32>,
    #[schema(required = true)]
    pub max_in_flight: Option<i32>,
    /// `key`: the notifications of one `order_key` go one at a time, in
    /// creation order; `none`: each on its own.
    pub ordering: KeyOrdering,
    /// When a notification of an ordered key ends failed or cancelled:
    /// `continue` releases the next, `hold` keeps the later ones waiting.
    pub ordering_on_failure: OnFailure,
    pub disabled: bool,
    /// The whole path of `url` is a credential: callers without the
    /// `secrets` scope see only its origin.
    pub url_secret: bool,
    /// `failing` when hookd disabled the endpoint because every attempt
    /// failed for `dispatcher.disable_failing_endpoints_after_hours`.
    #[schema(required = true)]
    pub disabled_reason: Option<String>,
    /// Since when every attempt to the endpoint has failed; null after a
    /// success.
    #[schema(required = true)]
    pub failing_since: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

impl EndpointView {
    pub(super) fn of(endpoint: Endpoint) -> Self {
        Self {
            id: endpoint.id,
            schedule: endpoint.schedule().to_json(),
            uid: endpoint.uid,
            owner: endpoint.owner,
            url: endpoint.url.map(without_userinfo),
            delivery: endpoint.delivery,
            description: endpoint.description,
            event_types: endpoint.event_types,
            signing: Signing::of(&endpoint.secret),
            filter: endpoint.filter,
            schedule_jitter: endpoint.schedule_jitter,
            rate_limit: crate::domain::rate::RateLimit::stored(
                endpoint.rate_limit_per_second,
                endpoint.rate_limit_burst,
            ),
            fresh_share: endpoint.fresh_share,
            breaker: BreakerFields::of(endpoint.breaker),
            circuit: CircuitView::default(),
            success_body: endpoint.success_body,
            success_filter: endpoint.success_filter,
            permanent_statuses: endpoint.permanent_statuses,
            headers: masked(endpoint.headers),
            timeout_ms: endpoint.timeout_ms,
            max_in_flight: endpoint.max_in_flight,
            ordering: endpoint.ordering,
            ordering_on_failure: endpoint.ordering_on_failure,
            disabled: endpoint.disabled,
            url_secret: endpoint.url_secret,
            disabled_reason: endpoint.disabled_reason,
            failing_since: endpoint.failing_since,
            created_at: endpoint.created_at,
            updated_at: endpoint.updated_at,
            secret: None,
        }
    }

    /// As `caller` may see it: the URL's query-string values and
    /// credential-like path segments (its whole path with `url_secret`)
    /// masked for callers without the `secrets` scope.
    pub(super) fn shown_to(mut self, caller: &SeesSecrets) -> Self {
        let whole_path = self.url_secret;
        self.url = self.url.map(|url| caller.url(url, whole_path));
        self
    }

    pub(super) fn with_secret(endpoint: Endpoint) -> Self {
        let secret = endpoint.secret.clone();
        Self {
            secret: Some(secret),
            ..Self::of(endpoint)
        }
    }
}

/// An endpoint's circuit breaker state.
// docs/design.md §16.
#[derive(Serialize, utoipa::ToSchema)]
pub struct CircuitView {
    /// `closed` (delivering), `open` (nothing sent; due notifications
    /// held) or `probing` (one notification sent to see if it is back).
    #[schema(value_type = String, example = "closed")]
    pub state: &'static str,
    /// When the circuit opened (kept through failed probes).
    pub opened_at: Option<DateTime<Utc>>,
    /// When the next probe goes.
    pub next_probe_at: Option<DateTime<Utc>>,
    /// Pending notifications due by now that wait for the circuit to
    /// close; 0 when closed.
    pub held: i64,
}

impl Default for CircuitView {
    fn default() -> Self {
        Self {
            state: "closed",
            opened_at: None,
            next_probe_at: None,
            held: 0,
        }
    }
}

impl CircuitView {
    /// The circuits of `views`' endpoints, read at once; a circuit that
    /// cannot be read shows closed rather than fail the request.
    async fn fill(state: &AppState, views: &mut [EndpointView]) {
        let ids: Vec<Uuid> = views.iter().map(|v| v.id).collect();
        let circuits = match state.breaker.circuits_of(&ids).await {
            Ok(circuits) => circuits,
            Err(error) => {
                tracing::warn!(%error, "cannot read circuits");
                return;
            }
        };
        let now = state.service.now();
        for (id, circuit) in circuits {
            let Some(view) = views.iter_mut().find(|v| v.id == id) else {
                continue;
            };
            view.circuit.state = circuit.state.as_str();
            if circuit.holds() {
                view.circuit.opened_at = circuit.opened_at;
                view.circuit.next_probe_at = circuit.next_probe_at;
                view.circuit.held = state.breaker.due_count(id, now).await.unwrap_or(0);
            }
        }
    }
}

/// An endpoint URL as responses show it. URLs with credentials are refused
/// now, but rows from before that rule may hold some: they are masked.
fn without_userinfo(url: String) -> String {
    match url::Url::parse(&url) {
        Ok(mut parsed) if !parsed.username().is_empty() || parsed.password().is_some() => {
            let _ = parsed.set_username(MASK);
            let _ = parsed.set_password(None);
            parsed.to_string()
        }
        _ => url,
    }
}

/// Create an endpoint
#[utoipa::path(operation_id = "create_endpoint", post, path = "/v1/endpoints", tag = "endpoints", request_body = EndpointFields,
    responses((status = 201, body = EndpointView, description = "created, with its signing secret"),
        (status = 409, body = super::error::ErrorBody, description = "an endpoint with this `uid` exists"), (status = 422, body = super::error::ErrorBody)))]
pub async fn create(
    State(state): State<AppState>,
    JsonBody(fields): JsonBody<EndpointFields>,
) -> Result<(StatusCode, Extension<Audited>, Json<EndpointView>), ApiError> {
    let created = state.service.create_endpoint(fields).await?;
    Ok((
        StatusCode::CREATED,
        Extension(Audited(created.id)),
        Json(EndpointView::with_secret(created)),
    ))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListParams {
    owner: Option<String>,
    limit: Option<String>,
    cursor: Option<String>,
}

/// List endpoints
#[utoipa::path(operation_id = "list_endpoints", get, path = "/v1/endpoints", tag = "endpoints",
    params(("owner" = Option<crate::api::openapi_depth::OwnerSchema>, Query, description = "only this owner's endpoints"),
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 500, description = "1 to 500, default 50"), ("cursor" = Option<String>, Query, description = "`next_cursor` of the previous page, unchanged")),
    responses((status = 200, body = Page<EndpointView>, description = "newest first, without secrets")))]
pub async fn list(
    State(state): State<AppState>,
    caller: SeesSecrets,
    QueryParams(params): QueryParams<ListParams>,
) -> Result<Json<Page<EndpointView>>, ApiError> {
    let paging = PageParams {
        limit: params.limit,
        cursor: params.cursor,
    };
    let limit = paging.limit()?;
    filters::owner(params.owner.as_deref())?;
    let rows = state
        .store
        .list_endpoints(paging.cursor_id()?, limit + 1, params.owner.as_deref())
        .await?;
    let mut listed = page(
        rows,
        limit,
        |e| encode_cursor(e.id),
        |e| EndpointView::of(e).shown_to(&caller),
    );
    CircuitView::fill(&state, &mut listed.data).await;
    Ok(Json(listed))
}

/// A list of `found` alone (or none): what a portal link of one endpoint
/// gets for `GET /v1/endpoints` (`api::portal`). Its `query` is read as
/// the list's own is (a parameter the list does not take is 422, a bad
/// `limit` or `cursor` too), and an `owner` other than the endpoint's is
/// 403, as it is for an owner's link.
pub(super) async fn page_of(
    state: &AppState,
    found: Option<Endpoint>,
    query: &str,
) -> Result<Page<EndpointView>, ApiError> {
    let params: ListParams = crate::api::extract::query_of(query)?;
    let paging = PageParams {
        limit: params.limit,
        cursor: params.cursor,
    };
    paging.limit()?;
    paging.cursor_id()?;
    filters::owner(params.owner.as_deref())?;
    if let Some(owner) = params.owner.as_deref() {
        if found.as_ref().and_then(|e| e.owner.as_deref()) != Some(owner) {
            return Err(ApiError::Forbidden(
                "this portal link lists its own endpoint only: the owner filter names another"
                    .into(),
            ));
        }
    }
    let mut data: Vec<EndpointView> = found
        .map(|e| EndpointView::of(e).shown_to(&SeesSecrets::nothing(state)))
        .into_iter()
        .collect();
    CircuitView::fill(state, &mut data).await;
    Ok(Page {
        data,
        next_cursor: None,
    })
}

/// Read an endpoint
#[utoipa::path(operation_id = "get_endpoint", get, path = "/v1/endpoints/{endpoint}", tag = "endpoints",
    params(("endpoint" = crate::api::openapi_depth::EndpointRefSchema, Path, description = "id or uid")),
    responses((status = 200, body = EndpointView, description = "the endpoint, without its secret"), (status = 404, body = super::error::ErrorBody)))]
pub async fn read(
    State(state): State<AppState>,
    caller: SeesSecrets,
    Path(endpoint): Path<String>,
) -> Result<Json<EndpointView>, ApiError> {
    let found = state
        .store
        .find_endpoint(&EndpointRef::parse(&endpoint))
        .await?;
    let mut view = [found
        .map(|e| EndpointView::of(e).shown_to(&caller))
        .ok_or(ApiError::NotFound("endpoint"))?];
    CircuitView::fill(&state, &mut view).await;
    let [view] = view;
    Ok(Json(view))
}

/// Change an endpoint
#[utoipa::path(operation_id = "update_endpoint", patch, path = "/v1/endpoints/{endpoint}", tag = "endpoints", request_body = EndpointFields,
    params(("endpoint" = crate::api::openapi_depth::EndpointRefSchema, Path, description = "id or uid")),
    responses((status = 200, body = EndpointView, description = "the endpoint as changed"), (status = 403, body = super::error::ErrorBody, description = "a portal link: a field it may not change, or a url that would take the endpoint's custom headers or a private network elsewhere"), (status = 404, body = super::error::ErrorBody), (status = 409, body = super::error::ErrorBody, description = "`uid_taken`: another endpoint has this uid"), (status = 422, body = super::error::ErrorBody)))]
pub async fn update(
    State(state): State<AppState>,
    Extension(who): Extension<Caller>,
    caller: SeesSecrets,
    Path(endpoint): Path<String>,
    JsonBody(fields): JsonBody<EndpointFields>,
) -> Result<Json<EndpointView>, ApiError> {
    let changer = match who.portal {
        Some(_) => Changer::Link,
        None => Changer::Operator,
    };
    let updated = state
        .service
        .update_endpoint(&EndpointRef::parse(&endpoint), fields, changer)
        .await?;
    // As a read shows it: a portal link that may manage the endpoint sees
    // a `url_secret` URL masked here too.
    let mut view = [EndpointView::of(updated).shown_to(&caller)];
    CircuitView::fill(&state, &mut view).await;
    let [view] = view;
    Ok(Json(view))
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct Deleted {
    pub deleted: bool,
    /// Pending notifications of the endpoint that were cancelled.
    pub cancelled_notifications: usize,
}

/// Delete an endpoint
#[utoipa::path(operation_id = "delete_endpoint", delete, path = "/v1/endpoints/{endpoint}", tag = "endpoints",
    params(("endpoint" = crate::api::openapi_depth::EndpointRefSchema, Path, description = "id or uid")),
    responses((status = 200, body = Deleted, description = "deleted, and its pending notifications cancelled"), (status = 404, body = super::error::ErrorBody)))]
pub async fn remove(
    State(state): State<AppState>,
    Path(endpoint): Path<String>,
) -> Result<Json<Deleted>, ApiError> {
    let cancelled = state
        .service
        .delete_endpoint(&EndpointRef::parse(&endpoint))
        .await?;
    Ok(Json(Deleted {
        deleted: true,
        cancelled_notifications: cancelled,
    }))
}

/// The endpoint, with its keys opened: one whose sealed values did not open
/// (their key is not in `secrets.keys`) is an error, never an empty key.
pub(super) async fn readable(state: &AppState, endpoint: &str) -> Result<Endpoint, ApiError> {
    let endpoint = state
        .store
        .find_endpoint(&EndpointRef::parse(endpoint))
        .await?
        .ok_or(ApiError::NotFound("endpoint"))?;
    if let Some(error) = endpoint.unreadable.clone() {
        let what = format!("endpoint {}", endpoint.id);
        return Err(ApiError::internal(crate::store::StoreError::Sealed {
            what,
            error,
        }));
    }
    Ok(endpoint)
}
