//! `GET /v1/endpoints/{id}/public-key` (docs/design.md §19): what an
//! `ed25519` or `rsa2` endpoint's receiver verifies deliveries with. It is
//! public: any read token, or a portal link in scope, may read it.

use axum::extract::{Path, State};
use axum::Json;
use chrono::{DateTime, Utc};
use serde::Serialize;

use super::endpoints::readable;
use super::error::ApiError;
use super::AppState;
use crate::domain::problem::{ErrorCode, Problem};
use crate::domain::secret::{Signing, SigningSecret};

/// What verifies an `ed25519` endpoint's deliveries.
#[derive(Serialize, utoipa::ToSchema)]
pub struct PublicKeyView {
    /// `whpk_<base64 of the 32 bytes>` (ed25519): verifies the `v1a,`
    /// signatures; a PEM SubjectPublicKeyInfo (rsa2): verifies `sign`.
    pub public_key: String,
    /// Rotated-out keys that still sign beside it, newest first.
    pub previous_public_keys: Vec<PreviousPublicKeyView>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct PreviousPublicKeyView {
    pub public_key: String,
    /// Deliveries stop carrying a signature with this key at this time.
    pub expires_at: DateTime<Utc>,
}

/// An endpoint's public signing key
#[utoipa::path(operation_id = "get_endpoint_public_key", get, path = "/v1/endpoints/{endpoint}/public-key", tag = "endpoints",
    params(("endpoint" = crate::api::openapi_depth::EndpointRefSchema, Path, description = "id or uid")),
    responses((status = 200, body = PublicKeyView, description = "the public key of an ed25519 or rsa2 endpoint; it is public: any read token, or a portal link, may read it"),
        (status = 404, body = super::error::ErrorBody), (status = 409, body = super::error::ErrorBody, description = "the endpoint signs with a shared secret (hmac)")))]
pub async fn read_public_key(
    State(state): State<AppState>,
    Path(endpoint): Path<String>,
) -> Result<Json<PublicKeyView>, ApiError> {
    let endpoint = readable(&state, &endpoint).await?;
    let public = |text: &str| SigningSecret::parse(text).ok().and_then(|s| s.public_key());
    // A form has one `sign`: a rotated-out RSA key no longer signs.
    let still_signs = |text: &str| Signing::of(text) != Signing::Rsa2;
    let Some(public_key) = public(&endpoint.secret) else {
        return Err(Problem::conflict(
            ErrorCode::Conflict,
            "the endpoint signs with a shared secret (hmac): it has no public key; PATCH {\"signing\": \"ed25519\"} gives it one",
        )
        .into());
    };
    let now = state.service.now();
    let previous_public_keys = endpoint
        .signing_previous(now)
        .filter(|p| still_signs(&p.secret))
        .filter_map(|p| {
            public(&p.secret).map(|public_key| PreviousPublicKeyView {
                public_key,
                expires_at: p.expires_at,
            })
        })
        .collect();
    Ok(Json(PublicKeyView {
        public_key,
        previous_public_keys,
    }))
}
