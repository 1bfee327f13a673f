//! What a portal link may do, decided on every request by the server: read
//! its endpoint's (or owner's) notifications, those endpoints, its stats,
//! and `whoami`; with its `retry` permission, retry those notifications;
//! with `manage` (§18), change an endpoint's URL and event types, read and
//! rotate its signing secret, and send it a test, each request's body
//! naming only what the link may change. Lists are forced to its scope (a
//! query naming another endpoint or owner is refused); a single
//! notification or endpoint outside it is answered 404, as one that does
//! not exist, so a link cannot probe what else is there; any other route is
//! 403. A bad, expired or foreign token is 401, the same for every kind.

use std::str::FromStr;

use axum::extract::{FromRequestParts, RawPathParams, Request};
use axum::http::uri::PathAndQuery;
use axum::http::{Method, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use uuid::Uuid;

use crate::api::audit::{audit_answered, bounded, Refusals};
use crate::api::auth::Caller;
use crate::api::error::ApiError;
use crate::api::AppState;
use crate::domain::portal::{verify, PortalClaims, PortalScope};
use crate::domain::problem::ErrorCode;
use crate::domain::scope::Scopes;
use crate::store::endpoints::{Endpoint, EndpointRef};

/// The routes a link may call, by what must be checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    /// `GET /v1/whoami`: nothing to check.
    Whoami,
    /// A list whose `endpoint` / `owner` filter is forced to the scope.
    Forced,
    /// `GET /v1/endpoints`: forced, and for an endpoint's link that one.
    Endpoints,
    /// A notification named by `{id}`: in scope, or 404.
    Notification,
    /// A retry of a notification: in scope, and the link may retry.
    Retry,
    /// An endpoint named by `{endpoint}`: in scope, or 404.
    Endpoint,
    /// A change to an endpoint in scope, for a link that may manage: its
    /// JSON body (if any) names no field but these.
    Manage(&'static [&'static str]),
}

/// The fields a `manage` link may change on its endpoints.
const MANAGED_FIELDS: &[&str] = &["url", "event_types", "filter"];
/// The fields a `manage` link's test may name.
const TEST_FIELDS: &[&str] = &["event_type"];
/// The largest body a `manage` request may carry: a URL and up to 100
/// event types fit many times over.
const MAX_MANAGE_BODY: usize = 64 * 1024;

fn access(method: &Method, route: &str) -> Option<Access> {
    let read = matches!(*method, Method::GET | Method::HEAD);
    Some(match route {
        "/v1/whoami" if read => Access::Whoami,
        "/v1/notifications" | "/v1/stats" if read => Access::Forced,
        "/v1/endpoints" if read => Access::Endpoints,
        "/v1/notifications/{id}" | "/v1/notifications/{id}/attempts" if read => {
            Access::Notification
        }
        "/v1/notifications/{id}/retry" if *method == Method::POST => Access::Retry,
        // What waits for its endpoint is the receiver's own business too.
        "/v1/endpoints/{endpoint}"
        | "/v1/endpoints/{endpoint}/backlog"
        | "/v1/endpoints/{endpoint}/event-types"
        | "/v1/endpoints/{endpoint}/public-key"
            if read =>
        {
            Access::Endpoint
        }
        "/v1/endpoints/{endpoint}" if *method == Method::PATCH => Access::Manage(MANAGED_FIELDS),
        "/v1/endpoints/{endpoint}/secret" if read => Access::Manage(&[]),
        // A generated secret, with the deployment's overlap: the body
        // names nothing.
        "/v1/endpoints/{endpoint}/secret/rotate" if *method == Method::POST => Access::Manage(&[]),
        "/v1/endpoints/{endpoint}/test" if *method == Method::POST => Access::Manage(TEST_FIELDS),
        _ => return None,
    })
}

/// A request bearing a portal token (`hookd_portal_…`): verified against
/// `portal.key` (none set: no link works), then held to its scope.
pub(in crate::api) async fn admit(
    state: &AppState,
    refusals: &Refusals,
    token: &str,
    method: &Method,
    route: &str,
    mut request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let claims = state
        .settings
        .portal
        .key()
        .and_then(|key| verify(key, token, state.service.now()).ok());
    let Some(claims) = claims else {
        refusals.refused(Some(token), method, route, request.uri().path());
        return Err(ApiError::PortalRefused);
    };
    // A link lives no longer than what it shows: refused once its endpoint
    // is deleted or its links revoked, or its owner has no live endpoint.
    if !alive(state, &claims).await? {
        refusals.refused(Some(token), method, route, request.uri().path());
        return Err(ApiError::PortalRefused);
    }
    let caller = Caller {
        name: match &claims.scope {
            PortalScope::Endpoint(id) => format!("portal:endpoint:{id}"),
            PortalScope::Owner(uid) => format!("portal:owner:{uid}"),
        }
        .into(),
        scopes: Scopes::default(),
        consumer: None,
        portal: Some(claims.clone()),
    };
    let Some(access) = access(method, route) else {
        let path = bounded(request.uri().path());
        refusals.consumer_denied(&caller, method, route, &path);
        return Err(ApiError::Forbidden(
            "a portal link may only list and read its notifications, their attempts, its endpoints, their backlog and overview, retry them and, if it may manage, change its endpoints' URL and event types, read and rotate their secret and send them a test".into(),
        ));
    };
    let permissions = claims.permissions;
    let refused = match access {
        Access::Retry if !permissions.retry => Some("retry"),
        Access::Manage(_) if !permissions.manage => Some("manage"),
        _ => None,
    };
    if let Some(permission) = refused {
        let path = bounded(request.uri().path());
        refusals.consumer_denied(&caller, method, route, &path);
        return Err(ApiError::Forbidden(format!(
            "this portal link has no `{permission}` permission: ask its sender for one that has"
        )));
    }
    let scope = &claims.scope;
    match access {
        Access::Whoami => {}
        Access::Forced => force(state, scope, &mut request).await?,
        Access::Endpoints => match scope {
            PortalScope::Endpoint(id) => {
                let found = state.store.find_endpoint(&EndpointRef::Id(*id)).await?;
                let query = request.uri().query().unwrap_or_default();
                let page = crate::api::endpoints::page_of(state, found, query).await?;
                return Ok(Json(page).into_response());
            }
            PortalScope::Owner(_) => force(state, scope, &mut request).await?,
        },
        Access::Notification | Access::Retry => {
            let id = param(&mut request, "id").await;
            if !notification_in_scope(state, &claims, id.as_deref()).await? {
                return Err(ApiError::NotFound("notification"));
            }
        }
        Access::Endpoint => endpoint_in_scope(state, scope, &mut request).await?,
        Access::Manage(fields) => {
            let checked = match endpoint_in_scope(state, scope, &mut request).await {
                Ok(()) => only_fields(&mut request, fields).await,
                refused => refused,
            };
            // Refused for what it names (another's endpoint, a field it
            // may not change): audited as one refused for its permission.
            if let Err(error @ (ApiError::NotFound(_) | ApiError::Forbidden(_))) = checked {
                let path = bounded(request.uri().path());
                refusals.consumer_denied(&caller, method, route, &path);
                return Err(error);
            }
            checked?;
        }
    }
    // What a `manage` link changes is audited as an admin's change is.
    let audited = matches!(access, Access::Manage(_)).then(|| bounded(request.uri().path()));
    request.extensions_mut().insert(caller.clone());
    let response = next.run(request).await;
    if let Some(path) = &audited {
        audit_answered(&caller, method, route, path, &response);
    }
    Ok(response)
}

/// The request's `{endpoint}` is in scope, or 404 as if it did not exist.
async fn endpoint_in_scope(
    state: &AppState,
    scope: &PortalScope,
    request: &mut Request,
) -> Result<(), ApiError> {
    let by = param(request, "endpoint").await.unwrap_or_default();
    let found = state.store.find_endpoint(&EndpointRef::parse(&by)).await?;
    if !found.is_some_and(|e| in_scope(scope, &e)) {
        return Err(ApiError::NotFound("endpoint"));
    }
    Ok(())
}

/// The request's body (read here, at most `MAX_MANAGE_BODY`, and put back
/// for the handler) is empty or a JSON object naming none but `fields`.
/// Anything else is left to the handler's own errors, so a malformed body
/// gets the answer it gets from any caller.
async fn only_fields(request: &mut Request, fields: &[&str]) -> Result<(), ApiError> {
    let (parts, body) = std::mem::take(request).into_parts();
    let bytes = axum::body::to_bytes(body, MAX_MANAGE_BODY)
        .await
        .map_err(|_| ApiError::TooLarge {
            message: format!("a portal link's request body is at most {MAX_MANAGE_BODY} bytes"),
            field: None,
        })?;
    let named: Option<Vec<String>> =
        serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(&bytes)
            .ok()
            .map(|object| object.into_iter().map(|(name, _)| name).collect());
    if let Some(other) = named
        .iter()
        .flatten()
        .find(|name| !fields.contains(&name.as_str()))
    {
        let may = match fields {
            [] => "nothing".to_string(),
            [only] => only.to_string(),
            [first @ .., last] => format!("{} and {last}", first.join(", ")),
        };
        return Err(ApiError::Forbidden(format!(
            "a portal link may change {may} here, not `{}`",
            bounded(other)
        )));
    }
    *request = Request::from_parts(parts, axum::body::Body::from(bytes));
    Ok(())
}

/// Whether what `claims` show still exists and was not revoked: the
/// endpoint live (through the endpoint cache: a second old at most) and
/// of the link's generation, or the owner with a live endpoint and no
/// revocation since the link was issued.
async fn alive(state: &AppState, claims: &PortalClaims) -> Result<bool, ApiError> {
    Ok(match &claims.scope {
        PortalScope::Endpoint(id) => state
            .service
            .live_endpoint(*id)
            .await?
            .is_some_and(|e| e.portal_generation.max(0) as u32 == claims.generation),
        // Issued at the owner's generation then, the highest of its
        // endpoints'; revoking the owner's links or one of its endpoints'
        // raises it past every link issued before.
        PortalScope::Owner(uid) => state
            .service
            .owner_portal_generation(uid)
            .await?
            .is_some_and(|now| claims.generation >= now.max(0) as u32),
    })
}

/// The route's `name` parameter, percent-decoded as the handler sees it.
async fn param(request: &mut Request, name: &str) -> Option<String> {
    let (mut parts, body) = std::mem::take(request).into_parts();
    let params = RawPathParams::from_request_parts(&mut parts, &())
        .await
        .ok();
    *request = Request::from_parts(parts, body);
    params?
        .iter()
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.to_string())
}

fn in_scope(scope: &PortalScope, endpoint: &Endpoint) -> bool {
    match scope {
        PortalScope::Endpoint(id) => endpoint.id == *id,
        PortalScope::Owner(uid) => endpoint.owner.as_deref() == Some(uid.as_str()),
    }
}

async fn notification_in_scope(
    state: &AppState,
    claims: &PortalClaims,
    id: Option<&str>,
) -> Result<bool, ApiError> {
    let Some(id) = id.and_then(|text| Uuid::parse_str(text).ok()) else {
        return Ok(false);
    };
    let Some(notification) = state.store.get_notification(id).await? else {
        return Ok(false);
    };
    Ok(match &claims.scope {
        PortalScope::Endpoint(id) => notification.endpoint_id == *id,
        // The owner's live endpoints, as the forced `owner` filter lists.
        PortalScope::Owner(_) => state
            .store
            .find_endpoint(&EndpointRef::Id(notification.endpoint_id))
            .await?
            .is_some_and(|e| in_scope(&claims.scope, &e)),
    })
}

/// Rewrites the query so the handler lists only the scope: `endpoint=<id>`
/// or `owner=<uid>` replaces whatever the caller sent, once each value it
/// sent was found to name the scope itself (else 403).
async fn force(
    state: &AppState,
    scope: &PortalScope,
    request: &mut Request,
) -> Result<(), ApiError> {
    let query = request.uri().query().unwrap_or_default();
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query).map_err(|e| {
        ApiError::malformed(
            ErrorCode::InvalidQuery,
            None,
            format!("invalid query string: {e}"),
        )
    })?;
    let mut kept = Vec::with_capacity(pairs.len() + 1);
    for (name, value) in pairs {
        let allowed = match name.as_str() {
            "endpoint" => names_endpoint_in_scope(state, scope, &value).await?,
            "owner" => names_owner_in_scope(state, scope, &value).await?,
            _ => {
                kept.push((name, value));
                continue;
            }
        };
        if !allowed {
            return Err(ApiError::Forbidden(format!(
                "a portal link lists only its own notifications and endpoints: `{name}` names another"
            )));
        }
        // An owner's link may narrow its list to one of its endpoints.
        if name == "endpoint" && matches!(scope, PortalScope::Owner(_)) {
            kept.push((name, value));
        }
    }
    match scope {
        PortalScope::Endpoint(id) => kept.push(("endpoint".to_string(), id.to_string())),
        // Narrowed to one of its endpoints, checked above, an owner's list
        // needs no `owner=` as well: a list that takes `endpoint` alone
        // (the most attempted first) would refuse the two together.
        PortalScope::Owner(_) if kept.iter().any(|(name, _)| name == "endpoint") => {}
        PortalScope::Owner(uid) => kept.push(("owner".to_string(), uid.clone())),
    }
    let query = serde_urlencoded::to_string(&kept).map_err(ApiError::internal)?;
    let mut parts = request.uri().clone().into_parts();
    parts.path_and_query = Some(
        PathAndQuery::from_str(&format!("{}?{query}", request.uri().path()))
            .map_err(ApiError::internal)?,
    );
    *request.uri_mut() = Uri::from_parts(parts).map_err(ApiError::internal)?;
    Ok(())
}

async fn names_endpoint_in_scope(
    state: &AppState,
    scope: &PortalScope,
    by: &str,
) -> Result<bool, ApiError> {
    let by = EndpointRef::parse(by);
    if let (PortalScope::Endpoint(id), EndpointRef::Id(named)) = (scope, &by) {
        return Ok(id == named);
    }
    let found = state.store.find_endpoint(&by).await?;
    Ok(found.is_some_and(|e| in_scope(scope, &e)))
}

async fn names_owner_in_scope(
    state: &AppState,
    scope: &PortalScope,
    owner: &str,
) -> Result<bool, ApiError> {
    Ok(match scope {
        PortalScope::Owner(uid) => uid == owner,
        PortalScope::Endpoint(id) => state
            .store
            .find_endpoint(&EndpointRef::Id(*id))
            .await?
            .is_some_and(|e| e.owner.as_deref() == Some(owner)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_reaches_only_its_routes() {
        let allowed = [
            (Method::GET, "/v1/whoami", Access::Whoami),
            (Method::GET, "/v1/notifications", Access::Forced),
            (Method::HEAD, "/v1/notifications", Access::Forced),
            (Method::GET, "/v1/stats", Access::Forced),
            (Method::GET, "/v1/endpoints", Access::Endpoints),
            (Method::GET, "/v1/notifications/{id}", Access::Notification),
            (
                Method::GET,
                "/v1/notifications/{id}/attempts",
                Access::Notification,
            ),
            (Method::POST, "/v1/notifications/{id}/retry", Access::Retry),
            (Method::GET, "/v1/endpoints/{endpoint}", Access::Endpoint),
            (
                Method::GET,
                "/v1/endpoints/{endpoint}/backlog",
                Access::Endpoint,
            ),
            (
                Method::GET,
                "/v1/endpoints/{endpoint}/event-types",
                Access::Endpoint,
            ),
            (
                Method::PATCH,
                "/v1/endpoints/{endpoint}",
                Access::Manage(MANAGED_FIELDS),
            ),
            (
                Method::GET,
                "/v1/endpoints/{endpoint}/secret",
                Access::Manage(&[]),
            ),
            (
                Method::POST,
                "/v1/endpoints/{endpoint}/secret/rotate",
                Access::Manage(&[]),
            ),
            (
                Method::POST,
                "/v1/endpoints/{endpoint}/test",
                Access::Manage(TEST_FIELDS),
            ),
        ];
        for (method, route, expected) in allowed {
            assert_eq!(access(&method, route), Some(expected), "{method} {route}");
        }
        for (method, route) in [
            (Method::POST, "/v1/notifications"),
            (Method::POST, "/v1/notifications/batch"),
            (Method::POST, "/v1/notifications/cancel"),
            (Method::POST, "/v1/notifications/{id}/cancel"),
            (Method::GET, "/v1/notifications/{id}/retry"),
            (Method::PUT, "/v1/endpoints/{endpoint}"),
            (Method::DELETE, "/v1/endpoints/{endpoint}"),
            (Method::POST, "/v1/endpoints"),
            (Method::DELETE, "/v1/endpoints/{endpoint}/secret/previous"),
            (Method::POST, "/v1/endpoints/{endpoint}/recover"),
            (Method::POST, "/v1/endpoints/{endpoint}/portal"),
            (Method::POST, "/v1/endpoints/{endpoint}/portal/revoke"),
            (Method::POST, "/v1/owners/{owner}/portal"),
            (Method::POST, "/v1/owners/{owner}/portal/revoke"),
            (Method::POST, "/v1/endpoints/{endpoint}/consumer-token"),
            (Method::POST, "/v1/endpoints/{endpoint}/pull"),
            (Method::GET, "/v1/events"),
            (Method::POST, "/v1/events"),
            (Method::GET, "/v1/operations/{id}"),
            (Method::GET, "/v1/something/new"),
        ] {
            assert_eq!(access(&method, route), None, "{method} {route}");
        }
    }
}
