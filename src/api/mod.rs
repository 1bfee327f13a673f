//! The REST API (axum): one file per resource, each with its `router()`.

pub mod auth;
pub mod endpoints;
pub mod error;
pub mod extract;
pub mod health;
pub mod ingest;
pub mod notifications;
pub mod openapi;
pub mod pagination;

use std::sync::Arc;
use std::time::Duration;

use axum::extract::DefaultBodyLimit;
use axum::Router;
use chrono::{DateTime, Utc};
use tokio::sync::Notify;
use tower_http::catch_panic::CatchPanicLayer;
use uuid::Uuid;

use crate::config::Settings;
use crate::due::DueIndex;
use crate::store::endpoints::{Endpoint, EndpointRef};
use crate::store::Store;
use error::ApiError;

/// What every handler shares: cheap handles only.
#[derive(Clone)]
pub struct AppState {
    pub store: Store,
    pub due: DueIndex,
    pub settings: Arc<Settings>,
    /// The configured tokens, digested once.
    pub auth: Arc<auth::Auth>,
    /// Wakes this process's dispatcher when something becomes due soon.
    pub wake: Arc<Notify>,
    /// Group commit of new notifications.
    pub ingest: ingest::Ingest,
    /// Endpoints recently named by creates, so a create costs one commit
    /// and not a lookup too.
    pub endpoints: EndpointCache,
    /// The last `/readyz` answer, reused for a second.
    pub readiness: health::Readiness,
}

/// Endpoints by canonical reference (an id however it was spelled, or a
/// valid uid), for `ENDPOINT_CACHE_TTL`, bounded by the bytes the entries
/// hold. A change made through this process clears it; one made through
/// another process shows here within the TTL. Keyed by the parsed
/// reference, never the raw text: one endpoint named in a thousand
/// spellings of its UUID is one entry.
#[derive(Clone)]
pub struct EndpointCache(moka::sync::Cache<EndpointRef, Arc<Endpoint>>);

pub const ENDPOINT_CACHE_TTL: Duration = Duration::from_secs(1);
/// What the cached endpoints may weigh in all (headers, URLs, secrets).
pub const ENDPOINT_CACHE_BYTES: u64 = 16 << 20;

impl Default for EndpointCache {
    fn default() -> Self {
        Self(
            moka::sync::Cache::builder()
                .max_capacity(ENDPOINT_CACHE_BYTES)
                .weigher(|_, endpoint: &Arc<Endpoint>| endpoint.approximate_size())
                .time_to_live(ENDPOINT_CACHE_TTL)
                .build(),
        )
    }
}

impl EndpointCache {
    pub fn get(&self, by: &EndpointRef) -> Option<Arc<Endpoint>> {
        self.0.get(by)
    }

    /// Caches `endpoint` under the reference it was found by.
    pub fn put(&self, by: EndpointRef, endpoint: Arc<Endpoint>) {
        if by.is_possible() {
            self.0.insert(by, endpoint);
        }
    }

    pub fn clear(&self) {
        self.0.invalidate_all();
    }
}

impl AppState {
    /// Adds committed notifications to the due index. If Redis fails, they
    /// are marked in PostgreSQL and the indexer adds them later: the producer
    /// already has its 201, and PostgreSQL has the notification.
    pub async fn index_due(&self, due: &[(Uuid, DateTime<Utc>)]) {
        if due.is_empty() {
            return;
        }
        match self.due.add(due).await {
            Ok(()) => {
                let soon = Utc::now()
                    + chrono::Duration::milliseconds(self.settings.dispatcher.max_idle_ms as i64);
                if due.iter().any(|(_, at)| *at <= soon) {
                    self.wake.notify_one();
                }
            }
            Err(error) => {
                tracing::warn!(%error, count = due.len(), "could not index notifications; marking them for the indexer");
                let ids: Vec<Uuid> = due.iter().map(|(id, _)| *id).collect();
                if let Err(error) = self.store.mark_needs_index(&ids).await {
                    // The overdue sweep still finds them: rows that are due
                    // and in neither Redis set are re-indexed.
                    tracing::warn!(%error, "could not mark notifications for indexing");
                }
            }
        }
    }

    /// Removes notifications from the due index, best effort: the dispatcher
    /// skips ids whose rows are no longer pending anyway.
    pub async fn unindex(&self, ids: &[Uuid]) {
        if let Err(error) = self.due.remove(ids).await {
            tracing::debug!(%error, "could not remove notifications from the due index");
        }
    }
}

/// The whole API: resources behind bearer auth, operations open. With
/// `server.metrics_listen` set, `/metrics` is served there instead.
pub fn router(state: AppState) -> Router {
    let resources = Router::new()
        .merge(endpoints::router())
        .merge(notifications::router())
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            auth::authorize,
        ));
    let operations = if state.settings.server.metrics_listen.is_some() {
        health::router().route("/openapi.json", axum::routing::get(openapi::openapi_json))
    } else {
        operations_router()
    };
    finish(operations.merge(resources), state)
}

/// What a dispatcher-only process serves: the operations routes, with the
/// same error shape, limits and request metrics as the whole API.
pub fn operations_only_router(state: AppState) -> Router {
    finish(operations_router(), state)
}

/// The layers every router shares. Panics become a 500 in the API's error
/// shape inside the request counter, so they are counted too.
fn finish(routes: Router<AppState>, state: AppState) -> Router {
    let max_request_bytes = state.settings.api.max_request_bytes;
    routes
        .fallback(|| async { ApiError::NotFound("route") })
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed })
        .layer(DefaultBodyLimit::max(max_request_bytes))
        .layer(CatchPanicLayer::custom(|_| {
            tracing::error!("a request handler panicked");
            axum::response::IntoResponse::into_response(ApiError::Internal)
        }))
        .layer(axum::middleware::from_fn_with_state(
            Duration::from_millis(state.settings.server.request_timeout_ms),
            request_timeout,
        ))
        .layer(axum::middleware::from_fn(count_requests))
        .with_state(state)
}

/// Health, readiness, metrics and the API document: served by every role.
pub fn operations_router() -> Router<AppState> {
    health::router()
        .route("/openapi.json", axum::routing::get(openapi::openapi_json))
        .route("/metrics", axum::routing::get(health::metrics))
}

/// Answers 408 in the API's error shape when a request, reading its body
/// included, takes longer than `limit` (tower-http's layer answers a bare
/// 408).
async fn request_timeout(
    axum::extract::State(limit): axum::extract::State<Duration>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    match tokio::time::timeout(limit, next.run(request)).await {
        Ok(response) => response,
        Err(_) => axum::response::IntoResponse::into_response(ApiError::RequestTimeout),
    }
}

/// Counts requests by route template (never the raw path: ids would make
/// labels unbounded), method and status.
async fn count_requests(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let route = request
        .extensions()
        .get::<axum::extract::MatchedPath>()
        .map_or_else(|| "unmatched".to_string(), |p| p.as_str().to_string());
    let method = method_label(request.method());
    let response = next.run(request).await;
    metrics::counter!(
        "hookd_api_requests_total",
        "route" => route,
        "method" => method,
        "status" => response.status().as_u16().to_string()
    )
    .increment(1);
    response
}

/// The method as a label: the standard ones by name, any other as `other`,
/// so a client inventing methods cannot grow the label set.
fn method_label(method: &axum::http::Method) -> &'static str {
    use axum::http::Method;
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}
