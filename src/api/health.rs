//! `GET /healthz` (the process is up) and `GET /readyz` (ready to accept
//! notifications: PostgreSQL answers, or the embedded file answers and can
//! grow). Redis being down only degrades
//! readiness: notifications are still accepted and indexed later, so a
//! Redis outage must not take every hookd out of a load balancer. The
//! checks are cached for `READY_CACHE`, so anonymous callers cannot turn
//! `/readyz` into a stream of pings at the stores.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;

use super::AppState;
use crate::domain::index_owner::{AnotherIndex, OwnerUnknown};
use crate::due::DueError;
use crate::store::StoreKind;

const CHECK_TIMEOUT: Duration = Duration::from_secs(2);
/// How long one readiness check answers every caller.
pub const READY_CACHE: Duration = Duration::from_secs(1);

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
}

#[derive(Clone, Serialize, utoipa::ToSchema)]
pub struct Health {
    /// `ok` (healthz); `ready`, `degraded` (Redis unreachable: notifications
    /// are accepted and indexed once it is back, deliveries wait) or
    /// `unavailable` (the database unreachable) for readiness.
    pub status: &'static str,
    /// Readiness only: `embedded` (SQLite, the due index in the process) or
    /// `server` (PostgreSQL and Redis).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<&'static str>,
    /// Server mode's stores, `ok` or `unreachable` (readiness only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub postgres: Option<&'static str>,
    /// `ok`, `unreachable`, or `paused`: Redis answers, but this process
    /// does not use its index (another index serves the database, or this
    /// process could not tell the database which index it uses for 15 s;
    /// `warnings` says which).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redis: Option<&'static str>,
    /// The embedded mode's file, `ok`, `unreachable`, or `unwritable`: its
    /// file system has no room for another page or is read-only, so creates
    /// fail (readiness only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sqlite: Option<&'static str>,
    /// What an operator should fix, e.g. a Redis `maxmemory-policy` that
    /// may evict the due index.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// The last readiness answer and when it was made; one check runs at a
/// time, and callers meanwhile wait for it.
#[derive(Clone, Default)]
pub struct Readiness(Arc<tokio::sync::Mutex<Option<(Instant, StatusCode, Health)>>>);

/// Is the process alive
#[utoipa::path(operation_id = "healthz", get, path = "/healthz", tag = "service", security(()), responses((status = 200, body = Health, description = "the process is up (liveness); `/readyz` checks the stores")))]
pub async fn healthz() -> Json<Health> {
    Json(Health {
        status: "ok",
        mode: None,
        postgres: None,
        redis: None,
        sqlite: None,
        warnings: Vec::new(),
    })
}

/// Can the process serve: database, due index, disk
#[utoipa::path(operation_id = "readyz", get, path = "/readyz", tag = "service", security(()), responses(
    (status = 200, body = Health, description = "the database answers: notifications are accepted (`degraded` when Redis does not answer)"),
    (status = 503, body = Health, description = "the database does not answer, or (embedded) its file cannot grow: a full disk"),
))]
pub async fn readyz(State(state): State<AppState>) -> (StatusCode, Json<Health>) {
    let mut cached = state.readiness.0.lock().await;
    if let Some((at, status, health)) = &*cached {
        if at.elapsed() < READY_CACHE {
            return (*status, Json(health.clone()));
        }
    }
    let (database, redis, warning) = tokio::join!(
        tokio::time::timeout(CHECK_TIMEOUT, state.store.ping()),
        tokio::time::timeout(CHECK_TIMEOUT, state.due.ping()),
        tokio::time::timeout(CHECK_TIMEOUT, state.due.warnings()),
    );
    let database_ok = matches!(database, Ok(Ok(())));
    let redis_ok = matches!(redis, Ok(Ok(())));
    if redis_ok {
        state.service.index_answered();
    }
    let word = |ok| if ok { "ok" } else { "unreachable" };
    // The embedded file answered, and could not grow (`SqliteStore::ping`).
    let unwritable = matches!(
        &database,
        Ok(Err(crate::store::StoreError::Unavailable(cause)))
            if cause.downcast_ref::<std::io::Error>().is_some()
    );
    let (status, word_status) = match (database_ok, redis_ok) {
        (true, true) => (StatusCode::OK, "ready"),
        (true, false) => (StatusCode::OK, "degraded"),
        (false, _) => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
    };
    // An index in this process cannot be unreachable; only Redis is named.
    // One that answers but is not this process's to use says `paused`
    // (`domain::index_owner`; the warnings say why).
    let paused = matches!(&redis, Ok(Err(DueError::Unavailable(cause)))
        if cause.is::<AnotherIndex>() || cause.is::<OwnerUnknown>());
    let redis =
        (state.due.recovery().is_some()).then(|| if paused { "paused" } else { word(redis_ok) });
    let database = Some(word(database_ok));
    let health = match state.store.kind() {
        StoreKind::Postgres => Health {
            status: word_status,
            mode: Some("server"),
            postgres: database,
            redis,
            sqlite: None,
            warnings: warning.unwrap_or_default(),
        },
        StoreKind::Sqlite => Health {
            status: word_status,
            mode: Some("embedded"),
            postgres: None,
            redis,
            sqlite: if unwritable {
                Some("unwritable")
            } else {
                database
            },
            warnings: warning.unwrap_or_default(),
        },
    };
    *cached = Some((Instant::now(), status, health.clone()));
    (status, Json(health))
}

/// Prometheus metrics
#[utoipa::path(operation_id = "metrics", get, path = "/metrics", tag = "service", security(()),
    responses((status = 200, description = "Prometheus text format", content_type = "text/plain")))]
pub async fn metrics() -> ([(axum::http::HeaderName, &'static str); 1], String) {
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4",
        )],
        crate::telemetry::render(),
    )
}
