//! `GET /healthz` (the process is up) and `GET /readyz` (PostgreSQL and
//! Redis answer; says which does not).

use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;

use super::AppState;

const CHECK_TIMEOUT: Duration = Duration::from_secs(2);

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct Health {
    /// `ok`, `ready` or `unavailable`.
    pub status: &'static str,
    /// `ok` or `unreachable` (readiness only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub postgres: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redis: Option<&'static str>,
}

#[utoipa::path(operation_id = "healthz", get, path = "/healthz", tag = "operations", security(()), responses((status = 200, body = Health)))]
pub async fn healthz() -> Json<Health> {
    Json(Health {
        status: "ok",
        postgres: None,
        redis: None,
    })
}

#[utoipa::path(operation_id = "readyz", get, path = "/readyz", tag = "operations", security(()), responses(
    (status = 200, body = Health, description = "both stores answer"),
    (status = 503, body = Health, description = "a store does not answer; the body says which"),
))]
pub async fn readyz(State(state): State<AppState>) -> (StatusCode, Json<Health>) {
    let (pg, redis) = tokio::join!(
        tokio::time::timeout(CHECK_TIMEOUT, state.store.ping()),
        tokio::time::timeout(CHECK_TIMEOUT, state.due.ping()),
    );
    let pg_ok = matches!(pg, Ok(Ok(())));
    let redis_ok = matches!(redis, Ok(Ok(())));
    let word = |ok| if ok { "ok" } else { "unreachable" };
    let status = if pg_ok && redis_ok {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (
        status,
        Json(Health {
            status: if status == StatusCode::OK {
                "ready"
            } else {
                "unavailable"
            },
            postgres: Some(word(pg_ok)),
            redis: Some(word(redis_ok)),
        }),
    )
}

#[utoipa::path(operation_id = "metrics", get, path = "/metrics", tag = "operations", security(()),
    responses((status = 200, description = "Prometheus text format", content_type = "text/plain")))]
pub async fn metrics() -> ([(axum::http::HeaderName, &'static str); 1], String) {
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4",
        )],
        crate::telemetry::metrics().render(),
    )
}
