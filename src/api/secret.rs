//! `/v1/endpoints/{endpoint}/secret`: an endpoint's signing key, read,
//! rotated, and its rotated-out keys stopped. A shared HMAC secret goes to
//! whoever the route admits; a key pair's private half only to the
//! `secrets` scope (`shows_key`), its public half is `public_key`'s.

use axum::extract::{Path, State};
use axum::Json;
use chrono::{DateTime, Utc};
use serde::Serialize;

use super::auth::SeesSecrets;
use super::endpoints::{readable, EndpointView};
use super::error::ApiError;
use super::extract::OptionalJsonBody;
use super::AppState;
use crate::domain::secret::Signing;
use crate::service::endpoints::RotateSecret;
use crate::store::endpoints::{Endpoint, EndpointRef};

#[derive(Serialize, utoipa::ToSchema)]
pub struct SecretView {
    pub secret: String,
    /// Until when the last rotated-out secret still signs, if one does.
    pub previous_secret_expires_at: Option<DateTime<Utc>>,
    /// The rotated-out secrets that still sign beside `secret`, newest
    /// first: their expiry only, never their value.
    pub previous_secrets: Vec<PreviousSecretView>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct PreviousSecretView {
    /// Deliveries stop carrying a signature with this secret at this time.
    pub expires_at: DateTime<Utc>,
}

impl SecretView {
    fn of(endpoint: &Endpoint, now: DateTime<Utc>) -> Self {
        let previous: Vec<PreviousSecretView> = endpoint
            .signing_previous(now)
            .map(|p| PreviousSecretView {
                expires_at: p.expires_at,
            })
            .collect();
        Self {
            secret: endpoint.secret.clone(),
            previous_secret_expires_at: previous.iter().map(|p| p.expires_at).max(),
            previous_secrets: previous,
        }
    }
}

/// Read an endpoint's signing secret
#[utoipa::path(operation_id = "get_endpoint_secret", get, path = "/v1/endpoints/{endpoint}/secret", tag = "endpoints",
    params(("endpoint" = crate::api::openapi_depth::EndpointRefSchema, Path, description = "id or uid")),
    responses((status = 200, body = SecretView, description = "the current signing secret"), (status = 404, body = super::error::ErrorBody)))]
pub async fn read_secret(
    State(state): State<AppState>,
    caller: SeesSecrets,
    Path(endpoint): Path<String>,
) -> Result<Json<SecretView>, ApiError> {
    let endpoint = readable(&state, &endpoint).await?;
    if !shows_key(&endpoint, &caller) {
        return Err(ApiError::Forbidden(format!(
            "endpoint {} signs with {}: its private key is shown only with the `secrets` scope; its receiver verifies with the public key, GET /v1/endpoints/{}/public-key",
            endpoint.id,
            Signing::of(&endpoint.secret).as_str(),
            endpoint.id
        )));
    }
    Ok(Json(SecretView::of(&endpoint, state.service.now())))
}

/// Whether `caller` may see the endpoint's signing key. A shared HMAC
/// secret is shown to whoever the route admits (the `secrets` scope, or a
/// portal `manage` link: its receiver verifies with that secret). A key
/// pair's private half (`ed25519`, `rsa2`) signs for hookd alone, and an
/// rsa2 key may be the operator's one key for many merchants: only the
/// `secrets` scope sees it (docs/design.md §19); a portal link is given
/// the public key (`public_key`), as its page shows.
fn shows_key(endpoint: &Endpoint, caller: &SeesSecrets) -> bool {
    caller.sees() || Signing::of(&endpoint.secret) == Signing::Hmac
}

/// Rotate an endpoint's signing secret
#[utoipa::path(operation_id = "rotate_endpoint_secret", post, path = "/v1/endpoints/{endpoint}/secret/rotate", tag = "endpoints", request_body = Option<RotateSecret>,
    params(("endpoint" = crate::api::openapi_depth::EndpointRefSchema, Path, description = "id or uid")),
    responses((status = 200, body = EndpointView, description = "the endpoint with its new secret"), (status = 404, body = super::error::ErrorBody)))]
pub async fn rotate_secret(
    State(state): State<AppState>,
    caller: SeesSecrets,
    Path(endpoint): Path<String>,
    // The body is optional: an empty one asks for a generated secret.
    OptionalJsonBody(request): OptionalJsonBody<RotateSecret>,
) -> Result<Json<EndpointView>, ApiError> {
    let rotated = state
        .service
        .rotate_secret(&EndpointRef::parse(&endpoint), request)
        .await?;
    // A manage link may rotate an ed25519 key; the new private key stays
    // hookd's (`shows_key`).
    let view = if shows_key(&rotated, &caller) {
        EndpointView::with_secret(rotated)
    } else {
        EndpointView::of(rotated)
    };
    Ok(Json(view.shown_to(&caller)))
}

/// End a secret rotation's overlap
#[utoipa::path(operation_id = "end_endpoint_secret_overlap", delete, path = "/v1/endpoints/{endpoint}/secret/previous", tag = "endpoints",
    params(("endpoint" = crate::api::openapi_depth::EndpointRefSchema, Path, description = "id or uid")),
    responses((status = 200, body = SecretView, description = "the secret, with no rotated-out secret signing any more"), (status = 404, body = super::error::ErrorBody)))]
pub async fn end_overlap(
    State(state): State<AppState>,
    Path(endpoint): Path<String>,
) -> Result<Json<SecretView>, ApiError> {
    let ended = state
        .service
        .end_overlap(&EndpointRef::parse(&endpoint))
        .await?;
    Ok(Json(SecretView::of(&ended, state.service.now())))
}
