//! The REST API (axum): one file per resource, each with its `router()`.

mod attempt_view;
mod audit;
pub mod auth;
pub mod backlog;
mod batch;
mod body;
pub mod concurrency;
pub mod endpoints;
pub mod error;
pub mod event_types;
pub mod events;
pub mod extract;
mod filters;
mod headers;
pub mod health;
pub mod notification_list;
pub mod notification_view;
pub mod notifications;
pub mod openapi;
mod openapi_depth;
pub mod pagination;
pub mod portal;
pub mod public_key;
pub mod pull;
pub mod recover;
pub mod secret;
pub mod stats;
mod traced;
mod waiting;

use std::sync::Arc;
use std::time::Duration;

use axum::extract::DefaultBodyLimit;
use axum::Router;
use tower_http::catch_panic::CatchPanicLayer;

use crate::config::Settings;
use crate::due::SharedIndex;
use crate::service::Service;
use crate::store::seams::SharedReads;
use error::ApiError;

/// What every handler shares, behind one `Arc`: axum clones the state for
/// each middleware and extractor of every request, and cloning the handles
/// one by one (an atomic increment each, and a decrement each to drop) was
/// a tenth of a create's CPU (BENCHMARKS.md, "#50: a create's state cloned
/// whole").
#[derive(Clone)]
pub struct AppState(Arc<Handles>);

impl AppState {
    pub fn new(handles: Handles) -> Self {
        Self(Arc::new(handles))
    }
}

impl std::ops::Deref for AppState {
    type Target = Handles;

    fn deref(&self) -> &Handles {
        &self.0
    }
}

/// What `AppState` holds: cheap handles only. Writes go through `service`;
/// reads go to `store` directly.
pub struct Handles {
    pub service: Service,
    pub store: SharedReads,
    pub due: SharedIndex,
    /// The rate limiter beside the index: its slots tell why a
    /// notification waits.
    pub limiter: crate::limiter::SharedLimiter,
    /// Endpoints' circuits, shown with them.
    pub breaker: crate::store::seams::SharedBreaker,
    pub settings: Arc<Settings>,
    /// The configured tokens, digested once.
    pub auth: Arc<auth::Auth>,
    /// The last `/readyz` answer, reused for a second.
    pub readiness: health::Readiness,
    /// Recover operations: started here, run in the background.
    pub recovery: crate::service::recover::Recovery,
    /// Reads under way by credential (`concurrency`).
    pub in_flight: Arc<concurrency::InFlight>,
    /// Where the spans of creates go (`telemetry.otlp_endpoint`).
    pub spans: crate::telemetry::spans::Spans,
}

/// The whole API: resources behind bearer auth, operations open. With
/// `server.metrics_listen` set, `/metrics` is served there instead.
/// `pages`: routes served beside the API without a token (the console's
/// files, composed by `startup`: the API does not know the console).
pub fn router(state: AppState, pages: Router<AppState>) -> Router {
    let resources = Router::new()
        .merge(endpoints::router())
        .merge(backlog::router())
        .merge(event_types::router())
        .merge(notifications::router())
        .merge(events::router())
        .merge(pull::router())
        .merge(recover::router())
        .merge(stats::router())
        .merge(portal::router())
        // Inside `authorize`, which names the caller it counts by.
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            concurrency::limit,
        ))
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            auth::authorize,
        ));
    let operations = if state.settings.server.metrics_listen.is_some() {
        health::router().route("/openapi.json", axum::routing::get(openapi::openapi_json))
    } else {
        operations_router()
    };
    finish(operations.merge(resources).merge(pages), state)
}

/// What a dispatcher-only process serves: the operations routes, with the
/// same error shape, limits and request metrics as the whole API.
pub fn operations_only_router(state: AppState) -> Router {
    finish(operations_router(), state)
}

/// The layers every router shares. Panics become a 500 in the API's error
/// shape inside the request counter, so they are counted too. The security
/// headers (`headers`) are set in `count_and_limit`, the outermost layer,
/// rather than in a layer of their own, which would box every request once
/// more.
fn finish(routes: Router<AppState>, state: AppState) -> Router {
    let max_request_bytes = state.settings.api.max_request_bytes;
    routes
        .fallback(|| async { ApiError::NotFound("route") })
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed })
        .layer(axum::middleware::from_fn(extract::utf8_path))
        .layer(DefaultBodyLimit::max(max_request_bytes))
        .layer(CatchPanicLayer::custom(|_| {
            tracing::error!("a request handler panicked");
            axum::response::IntoResponse::into_response(ApiError::Internal(None))
        }))
        .layer(axum::middleware::from_fn_with_state(
            Outermost {
                limit: Duration::from_millis(state.settings.server.request_timeout_ms),
                max_request_bytes,
                console_csp: headers::console_csp(state.settings.portal.logo_origin().as_deref()),
            },
            count_and_limit,
        ))
        .with_state(state)
}

/// Health, readiness, metrics and the API document: served by every role.
pub fn operations_router() -> Router<AppState> {
    health::router()
        .route("/openapi.json", axum::routing::get(openapi::openapi_json))
        .route("/metrics", axum::routing::get(health::metrics))
}

/// Counts requests by route template (never the raw path: ids would make
/// labels unbounded), method and status, and answers 408 in the API's
/// error shape when a request, reading its body included, takes longer
/// than `limit` (tower-http's layer answers a bare 408). One layer, not
/// two: each `from_fn` layer boxes and clones the services under it for
/// every request.
async fn count_and_limit(
    axum::extract::State(outermost): axum::extract::State<Outermost>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let route = request
        .extensions()
        .get::<axum::extract::MatchedPath>()
        .map_or_else(|| "unmatched".to_string(), |p| p.as_str().to_string());
    let method = method_label(request.method());
    let headers = headers::Kind::of(request.uri().path());
    let mut response = if declares_more_than(&request, outermost.max_request_bytes) {
        axum::response::IntoResponse::into_response(ApiError::TooLarge {
            message: "the request is larger than api.max_request_bytes".into(),
            field: None,
        })
    } else {
        match tokio::time::timeout(outermost.limit, next.run(request)).await {
            Ok(response) => response,
            Err(_) => axum::response::IntoResponse::into_response(ApiError::RequestTimeout),
        }
    };
    metrics::counter!(
        "hookd_api_requests_total",
        "route" => route,
        "method" => method,
        "status" => response.status().as_u16().to_string()
    )
    .increment(1);
    // Here, outermost, so errors of every layer get them too.
    headers.apply(response.headers_mut(), &outermost.console_csp);
    response
}

/// What `count_and_limit` needs: the request timeout, and the console's
/// Content-Security-Policy, made once from the settings.
#[derive(Clone)]
struct Outermost {
    limit: Duration,
    /// `api.max_request_bytes`: a request that declares a larger body is
    /// answered 413 at once, not after waiting for a body it is refused
    /// anyway (the body limit counts only what arrives).
    max_request_bytes: usize,
    console_csp: axum::http::HeaderValue,
}

/// Whether the request declares a body over `max` bytes.
fn declares_more_than(request: &axum::extract::Request, max: usize) -> bool {
    request
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|text| text.parse::<u64>().ok())
        .is_some_and(|length| length > max as u64)
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
