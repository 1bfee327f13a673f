//! Portal links (docs/design.md §11): `POST /v1/endpoints/{id}/portal` and
//! `POST /v1/owners/{owner}/portal` issue a signed, expiring link to the
//! console that shows one endpoint's or one owner's notifications; `access`
//! holds what such a link may do, enforced on every request. Also
//! `GET /v1/whoami`, which tells any caller what it is.

mod access;

use axum::extract::{Path, State};
use axum::http::header::HOST;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

pub(super) use access::admit;

use super::auth::{Audited, Caller};
use super::error::ApiError;
use super::extract::{NoBody, OptionalJsonBody};
use super::AppState;
use crate::domain::fields::valid_uid;
use crate::domain::portal::{
    sign, valid_lifetime, PortalClaims, PortalPermissions, PortalScope, DEFAULT_LIFETIME_SECONDS,
};
use crate::domain::problem::ErrorCode;
use crate::domain::scope::Scope;
use crate::store::endpoints::EndpointRef;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/endpoints/{endpoint}/portal", post(for_endpoint))
        .route("/v1/endpoints/{endpoint}/portal/revoke", post(revoke))
        .route("/v1/owners/{owner}/portal", post(for_owner))
        .route("/v1/owners/{owner}/portal/revoke", post(revoke_owner))
        .route("/v1/whoami", get(whoami))
}

/// The route every caller may call, whatever its scopes.
pub(super) const WHOAMI: &str = "/v1/whoami";

#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct IssueLink {
    /// How long the link works: 1 to 604800 seconds (7 days); default
    /// 86400 (a day).
    #[schema(minimum = 1, maximum = 604800)]
    pub expires_in_seconds: Option<i64>,
    /// What the holder may do: `read` (always named), `retry` (its
    /// notifications) and `manage` (change its endpoints' URL and event
    /// types, read and rotate their signing secret, send a test), each at
    /// most once. Default `["read", "retry"]`.
    #[schema(value_type = Option<Vec<PortalPermission>>, max_items = 3, example = json!(["read", "retry", "manage"]))]
    pub permissions: Option<crate::domain::bounded::Bounded<String, 3>>,
}

// The document's names for `PortalPermissions::NAMES`, which parses them.
/// What a portal link's holder may do: `read` its notifications (every
/// link may), `retry` them, `manage` its endpoints.
#[derive(utoipa::ToSchema)]
#[schema(rename_all = "lowercase")]
#[allow(dead_code)]
pub enum PortalPermission {
    Read,
    Retry,
    Manage,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct PortalLink {
    /// `<origin>/console/#portal=<token>`: the token rides in the fragment,
    /// which browsers never send to a server, so it is in no access log.
    pub url: String,
    pub expires_at: DateTime<Utc>,
}

/// Issue a portal link for an endpoint
#[utoipa::path(operation_id = "issue_endpoint_portal_link", post, path = "/v1/endpoints/{endpoint}/portal", tag = "portal", request_body = Option<IssueLink>,
    params(("endpoint" = crate::api::openapi_depth::EndpointRefSchema, Path, description = "id or uid")),
    responses((status = 201, body = PortalLink, description = "a link to the console that shows this endpoint's notifications and lets its holder retry them, until it expires"),
        (status = 404, body = super::error::ErrorBody),
        (status = 409, body = super::error::ErrorBody, description = "`portal_disabled`: portal.key is not set"),
        (status = 422, body = super::error::ErrorBody)))]
pub async fn for_endpoint(
    State(state): State<AppState>,
    Path(endpoint): Path<String>,
    headers: HeaderMap,
    uri: Uri,
    OptionalJsonBody(request): OptionalJsonBody<IssueLink>,
) -> Result<(StatusCode, Extension<Audited>, Json<PortalLink>), ApiError> {
    let key = portal_key(&state)?;
    let lifetime = lifetime(&request)?;
    let permissions = permissions(&request)?;
    let endpoint = state
        .store
        .find_endpoint(&EndpointRef::parse(&endpoint))
        .await?
        .ok_or(ApiError::NotFound("endpoint"))?;
    let link = link(
        &state,
        &headers,
        &uri,
        &key,
        (
            PortalScope::Endpoint(endpoint.id),
            endpoint.portal_generation.max(0) as u32,
        ),
        (permissions, lifetime),
    )?;
    Ok((
        StatusCode::CREATED,
        Extension(Audited(endpoint.id)),
        Json(link),
    ))
}

/// Issue a portal link for an owner
#[utoipa::path(operation_id = "issue_owner_portal_link", post, path = "/v1/owners/{owner}/portal", tag = "portal", request_body = Option<IssueLink>,
    params(("owner" = crate::api::openapi_depth::OwnerSchema, Path, description = "the owner's uid: 1 to 128 of A-Z a-z 0-9 _ - . :, not dots alone, and not a UUID")),
    responses((status = 201, body = PortalLink, description = "a link to the console that shows the notifications of this owner's endpoints and lets its holder retry them, until it expires"),
        (status = 404, body = super::error::ErrorBody, description = "the owner has no live endpoint"),
        (status = 409, body = super::error::ErrorBody, description = "`portal_disabled`: portal.key is not set"),
        (status = 422, body = super::error::ErrorBody)))]
pub async fn for_owner(
    State(state): State<AppState>,
    Path(owner): Path<String>,
    headers: HeaderMap,
    uri: Uri,
    OptionalJsonBody(request): OptionalJsonBody<IssueLink>,
) -> Result<(StatusCode, Json<PortalLink>), ApiError> {
    let key = portal_key(&state)?;
    let lifetime = lifetime(&request)?;
    let permissions = permissions(&request)?;
    if !valid_uid(&owner) {
        return Err(crate::service::events::invalid_owner().into());
    }
    // The owner's generation: the highest of its endpoints', which a
    // revocation of the owner's links, or of one endpoint's, raises. An
    // owner with no live endpoint has nothing to show: its link would be
    // refused, and would start working for whoever is next given the name.
    let generation = state
        .service
        .owner_portal_generation(&owner)
        .await?
        .ok_or(ApiError::NotFound("owner"))?;
    let link = link(
        &state,
        &headers,
        &uri,
        &key,
        (PortalScope::Owner(owner), generation.max(0) as u32),
        (permissions, lifetime),
    )?;
    Ok((StatusCode::CREATED, Json(link)))
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct Revoked {
    pub endpoint_id: Uuid,
    /// Links issued from now on carry this generation; every earlier one
    /// is refused (401).
    pub generation: i32,
}

/// Revoke an endpoint's portal links
#[utoipa::path(operation_id = "revoke_endpoint_portal_links", post, path = "/v1/endpoints/{endpoint}/portal/revoke", tag = "portal",
    params(("endpoint" = crate::api::openapi_depth::EndpointRefSchema, Path, description = "id or uid")),
    responses((status = 200, body = Revoked, description = "every portal link of this endpoint issued so far, and every link of its owner (which shows this endpoint too), is refused from now on (within a second in other processes); `portal.key` and other endpoints' links are untouched"),
        (status = 404, body = super::error::ErrorBody)))]
pub async fn revoke(
    State(state): State<AppState>,
    Path(endpoint): Path<String>,
    _: NoBody,
) -> Result<(Extension<Audited>, Json<Revoked>), ApiError> {
    let (endpoint_id, generation) = state
        .service
        .revoke_portal_links(&EndpointRef::parse(&endpoint))
        .await?;
    Ok((
        Extension(Audited(endpoint_id)),
        Json(Revoked {
            endpoint_id,
            generation,
        }),
    ))
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct OwnerRevoked {
    pub owner: String,
    /// Links issued from now on, the owner's and its endpoints', carry
    /// this generation; every earlier one is refused (401).
    pub generation: i32,
}

/// Revoke an owner's portal links
#[utoipa::path(operation_id = "revoke_owner_portal_links", post, path = "/v1/owners/{owner}/portal/revoke", tag = "portal",
    params(("owner" = crate::api::openapi_depth::OwnerSchema, Path, description = "the owner's uid")),
    responses((status = 200, body = OwnerRevoked, description = "every portal link of this owner issued so far, and every link of each of its endpoints, is refused from now on (within a second in other processes); other owners' links are untouched"),
        (status = 404, body = super::error::ErrorBody, description = "the owner has no live endpoint: its links are refused already"),
        (status = 422, body = super::error::ErrorBody, description = "`invalid_value`: not an owner's uid")))]
pub async fn revoke_owner(
    State(state): State<AppState>,
    Path(owner): Path<String>,
    _: NoBody,
) -> Result<Json<OwnerRevoked>, ApiError> {
    if !valid_uid(&owner) {
        return Err(crate::service::events::invalid_owner().into());
    }
    let generation = state.service.revoke_owner_portal_links(&owner).await?;
    Ok(Json(OwnerRevoked { owner, generation }))
}

fn portal_key(state: &AppState) -> Result<Vec<u8>, ApiError> {
    state
        .settings
        .portal
        .key()
        .map(<[u8]>::to_vec)
        .ok_or_else(|| ApiError::Conflict {
            code: ErrorCode::PortalDisabled,
            message: "portal links are off: set portal.key (at least 32 bytes, e.g. HOOKD_PORTAL__KEY=$(openssl rand -base64 32))".into(),
        })
}

fn lifetime(request: &IssueLink) -> Result<i64, ApiError> {
    let seconds = request
        .expires_in_seconds
        .unwrap_or(DEFAULT_LIFETIME_SECONDS);
    if !valid_lifetime(seconds) {
        return Err(ApiError::invalid(
            ErrorCode::InvalidValue,
            "expires_in_seconds",
            "expires_in_seconds is 1 to 604800 (7 days)",
        ));
    }
    Ok(seconds)
}

fn permissions(request: &IssueLink) -> Result<PortalPermissions, ApiError> {
    let Some(names) = &request.permissions else {
        return Ok(PortalPermissions::default());
    };
    PortalPermissions::from_names(names).ok_or_else(|| {
        ApiError::invalid(
            ErrorCode::InvalidValue,
            "permissions",
            "permissions lists \"read\" and any of \"retry\" and \"manage\", each once",
        )
    })
}

fn link(
    state: &AppState,
    headers: &HeaderMap,
    uri: &Uri,
    key: &[u8],
    (scope, generation): (PortalScope, u32),
    (permissions, lifetime): (PortalPermissions, i64),
) -> Result<PortalLink, ApiError> {
    let origin = match state.settings.portal.base_origin() {
        Some(origin) => origin,
        None => request_origin(state, headers, uri)?,
    };
    let expires_at = DateTime::from_timestamp(state.service.now().timestamp() + lifetime, 0)
        .ok_or(ApiError::Internal(None))?;
    let token = sign(
        key,
        &PortalClaims {
            permissions,
            scope,
            expires_at,
            generation,
        },
    );
    Ok(PortalLink {
        url: format!("{origin}/console/#portal={token}"),
        expires_at,
    })
}

/// The origin the issuing request was addressed to. Only an `admin` caller
/// gets here and the link goes back to that caller alone, so a `Host` it
/// chose can mislead nobody else; it must still be a plain authority, so
/// the link cannot be bent into another URL. Behind a proxy the request's
/// `Host` is the proxy's upstream name: set `portal.base_url`.
fn request_origin(state: &AppState, headers: &HeaderMap, uri: &Uri) -> Result<String, ApiError> {
    let host = headers
        .get(HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_string)
        .or_else(|| uri.authority().map(|a| a.as_str().to_string()));
    let authority = host
        .as_deref()
        .and_then(|h| h.parse::<axum::http::uri::Authority>().ok())
        .filter(|a| !a.as_str().contains('@'))
        .ok_or_else(|| {
            ApiError::invalid(
                ErrorCode::InvalidValue,
                "host",
                "the request names no usable Host: set portal.base_url",
            )
        })?;
    let scheme = if state.settings.server.tls_cert.is_empty() {
        "http"
    } else {
        "https"
    };
    Ok(format!(
        "{scheme}://{}",
        authority.as_str().to_ascii_lowercase()
    ))
}

/// Who the caller is, as `GET /v1/whoami` shows it.
#[derive(Serialize, utoipa::ToSchema)]
pub struct WhoAmI {
    /// The token's name from `api.tokens`; `local` in the open mode;
    /// `portal:endpoint:<id>` or `portal:owner:<uid>` for a portal link;
    /// `consumer:<endpoint id>` for a consumer token.
    pub name: String,
    /// The token's scopes. Empty for a portal link or a consumer token:
    /// what those may do is fixed (see `portal`).
    #[schema(value_type = Vec<String>)]
    pub scopes: Vec<&'static str>,
    /// For a portal link, what it shows: `{"endpoint": "<id>"}` or
    /// `{"owner": "<uid>"}`. It may list and read those notifications,
    /// their attempts, its endpoints with their backlog, the overview
    /// narrowed to them, and retry them.
    pub portal: Option<PortalView>,
    /// When a portal link stops working.
    pub expires_at: Option<DateTime<Utc>>,
    /// For a portal link, what its holder may do: `read`, and any of
    /// `retry` and `manage`.
    #[schema(value_type = Option<Vec<PortalPermission>>)]
    pub permissions: Option<Vec<&'static str>>,
    /// For a portal link, the deployment's branding (`[portal]` `name`,
    /// `logo_url`, `accent`), for the page to show its holder.
    pub brand: Option<Brand>,
}

/// How the portal presents the deployment to a link's holder.
#[derive(Serialize, utoipa::ToSchema)]
pub struct Brand {
    /// `portal.name`; empty: the page says "Webhooks".
    pub name: String,
    /// `portal.logo_url`, or null.
    pub logo_url: Option<String>,
    /// `portal.accent` (`#rrggbb`), or null.
    pub accent: Option<String>,
}

#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum PortalView {
    Endpoint(Uuid),
    Owner(String),
}

/// Who the caller is and what it may reach
#[utoipa::path(operation_id = "whoami", get, path = "/v1/whoami", tag = "portal",
    responses((status = 200, body = WhoAmI, description = "the caller: any valid token, portal link or consumer token, or the open mode")))]
pub async fn whoami(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> Json<WhoAmI> {
    let scopes = [
        Scope::Admin,
        Scope::Write,
        Scope::Read,
        Scope::Secrets,
        Scope::Pull,
    ];
    let held = if caller.scopes.allow(Scope::Admin) {
        vec![Scope::Admin.as_str()]
    } else {
        scopes
            .into_iter()
            .filter(|s| caller.scopes.allow(*s))
            .map(Scope::as_str)
            .collect()
    };
    let portal = caller.portal.as_ref();
    Json(WhoAmI {
        name: caller.name.to_string(),
        scopes: held,
        portal: portal.map(|claims| match &claims.scope {
            PortalScope::Endpoint(id) => PortalView::Endpoint(*id),
            PortalScope::Owner(uid) => PortalView::Owner(uid.clone()),
        }),
        expires_at: portal.map(|claims| claims.expires_at),
        permissions: portal.map(|claims| claims.permissions.names()),
        brand: portal.map(|_| {
            let settings = &state.settings.portal;
            let set = |text: &str| (!text.is_empty()).then(|| text.to_string());
            Brand {
                name: settings.name.clone(),
                logo_url: set(&settings.logo_url),
                accent: set(&settings.accent),
            }
        }),
    })
}
