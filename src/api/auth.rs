//! Who is calling, and whether they may. Every resource route needs a
//! scope, decided in one table (`required_scope`) from the method and the
//! route template, so a new route is `admin` until someone says otherwise.
//! Tokens are compared as SHA-256 digests in constant time. With no tokens
//! configured (local development) the API is open, but only to this
//! machine's own tools: a web page in a browser on the same machine can
//! neither read nor change anything (`local_only`).

use std::sync::Arc;

use axum::extract::{MatchedPath, Request, State};
use axum::http::header::{AUTHORIZATION, CONTENT_TYPE, HOST, ORIGIN};
use axum::http::{HeaderMap, Method};
use axum::middleware::Next;
use axum::response::Response;
use uuid::Uuid;

use super::audit::{audit, bounded, Refusals};
use super::error::ApiError;
use super::AppState;
use crate::config::{digest, ApiSettings, Credential};
use crate::domain::pull::CONSUMER_TOKEN_PREFIX;
use crate::domain::receiver_url::UrlMask;
use crate::domain::scope::{Scope, Scopes};

/// The configured tokens, digested once at start-up.
#[derive(Debug)]
pub struct Auth {
    credentials: Vec<Credential>,
    /// How URLs are shown to callers without the `secrets` scope.
    url_mask: Arc<UrlMask>,
    /// Bounds the audit lines of unauthorized requests.
    refusals: Refusals,
}

/// Who made a request: the token's name (never the token) and its scopes.
/// Handlers and audit events read it from the request's extensions.
#[derive(Debug, Clone)]
pub struct Caller {
    pub name: Arc<str>,
    pub scopes: Scopes,
    /// A consumer token's endpoint (docs/design.md §10): such a caller may pull,
    /// ack, nack and extend there, and nothing else.
    pub consumer: Option<Uuid>,
    /// A portal link's scope and expiry (docs/design.md §11): what it may do is
    /// `api::portal`'s to decide.
    pub portal: Option<crate::domain::portal::PortalClaims>,
}

/// The id a successful admin action created or changed, for its audit event
/// (a handler puts it in the response's extensions).
#[derive(Debug, Clone, Copy)]
pub struct Audited(pub Uuid);

impl Auth {
    pub fn new(settings: &ApiSettings) -> Self {
        Self {
            credentials: settings.credentials(),
            // Validated at load (`config::validate`): a bad pattern never
            // gets here, and none would only mask less.
            url_mask: Arc::new(UrlMask::new(&settings.secret_path_patterns).unwrap_or_default()),
            refusals: Refusals::default(),
        }
    }

    /// No tokens: the open, loopback-only mode.
    pub fn is_open(&self) -> bool {
        self.credentials.is_empty()
    }

    /// The caller a presented token stands for. Every configured digest is
    /// compared, each in constant time, whatever matched: neither the
    /// time taken nor an early exit tells how close a guess came.
    pub fn identify(&self, presented: &str) -> Option<Caller> {
        let presented = digest(presented);
        let mut found = None;
        for credential in &self.credentials {
            if constant_time_eq(&credential.digest, &presented) {
                found = Some(credential);
            }
        }
        found.map(|c| Caller {
            name: c.name.as_str().into(),
            scopes: c.scopes,
            consumer: None,
            portal: None,
        })
    }
}

/// Whether the caller may see what a receiver URL holds (docs/design.md §14):
/// receivers' tokens often ride in its query string or its path (chat
/// webhooks), so callers without the `secrets` scope (or `admin`) see
/// `?token=***` and credential-like path segments as `***`
/// (`UrlMask::show`). A request without a caller sees them masked.
#[derive(Debug, Clone)]
pub struct SeesSecrets {
    sees: bool,
    mask: Arc<UrlMask>,
}

impl SeesSecrets {
    /// A caller who sees no secret, whoever asked (a portal link's views).
    pub fn nothing(state: &AppState) -> Self {
        Self {
            sees: false,
            mask: state.auth.url_mask.clone(),
        }
    }

    /// Whether URLs are shown whole to this caller.
    pub fn sees(&self) -> bool {
        self.sees
    }

    /// `url` as this caller may see it; `whole_path` when it is (or lies
    /// under) a `url_secret` endpoint's URL.
    pub fn url(&self, url: String, whole_path: bool) -> String {
        if self.sees {
            return url;
        }
        self.mask.show(&url, whole_path)
    }
}

impl axum::extract::FromRequestParts<AppState> for SeesSecrets {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let caller = parts.extensions.get::<Caller>();
        Ok(Self {
            sees: caller.is_some_and(|c| c.scopes.allow(Scope::Secrets)),
            mask: state.auth.url_mask.clone(),
        })
    }
}

/// The scope a route needs. Reading or rotating signing secrets needs
/// `secrets`; other reads need `read`; sending, cancelling, retrying
/// and recovering need `write`; pulling, acking, nacking and extending need `pull` (they
/// hand over payloads and custom headers in clear, which a producer's
/// `write` token must not read); everything else (endpoint create, change,
/// delete) `admin`.
pub fn required_scope(method: &Method, route: &str) -> Scope {
    if route.starts_with("/v1/endpoints/{endpoint}/secret") {
        return Scope::Secrets;
    }
    if matches!(*method, Method::GET | Method::HEAD) {
        return Scope::Read;
    }
    match route {
        "/v1/notifications"
        | "/v1/notifications/batch"
        | "/v1/notifications/cancel"
        | "/v1/notifications/retry"
        | "/v1/notifications/{id}/cancel"
        | "/v1/notifications/{id}/retry"
        | "/v1/events"
        | "/v1/events/batch"
        | "/v1/events/{id}/cancel"
        | "/v1/endpoints/{endpoint}/recover"
        | "/v1/endpoints/{endpoint}/test" => Scope::Write,
        route if super::pull::consumer_route(route) => Scope::Pull,
        // Issuing a consumer token (DESIGN §14: `admin`) hands out a
        // credential that reads payloads, which `secrets` alone may not.
        _ => Scope::Admin,
    }
}

/// Authenticates, checks the route's scope, and writes an audit event for
/// every admin or secrets action (allowed or refused), every request whose
/// token is missing or unknown, and every consumer token used off its
/// routes.
pub async fn authorize(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(String::new, |p| p.as_str().to_string());
    let method = request.method().clone();
    let needed = required_scope(&method, &route);
    let presented = bearer(request.headers()).map(str::to_string);
    if let Some(token) = presented
        .as_deref()
        .filter(|t| t.starts_with(CONSUMER_TOKEN_PREFIX))
    {
        return consume(&state, token, &method, &route, request, next).await;
    }
    if let Some(token) = presented
        .as_deref()
        .filter(|t| t.starts_with(crate::domain::portal::PORTAL_TOKEN_PREFIX))
    {
        let refusals = &state.auth.refusals;
        return super::portal::admit(&state, refusals, token, &method, &route, request, next).await;
    }
    let caller = if state.auth.is_open() {
        let authority = request.uri().authority().map(|a| a.as_str().to_string());
        local_only(&method, request.headers(), authority.as_deref())?;
        Caller {
            name: "local".into(),
            scopes: Scopes::ALL,
            consumer: None,
            portal: None,
        }
    } else {
        match presented
            .as_deref()
            .and_then(|token| state.auth.identify(token))
        {
            Some(caller) => caller,
            None => {
                state.auth.refusals.refused(
                    presented.as_deref(),
                    &method,
                    &route,
                    request.uri().path(),
                );
                return Err(ApiError::Unauthorized);
            }
        }
    };
    let audited = matches!(needed, Scope::Admin | Scope::Secrets);
    let path = audited.then(|| bounded(request.uri().path()));
    // Any caller may ask who it is.
    if !caller.scopes.allow(needed) && route != super::portal::WHOAMI {
        if let Some(path) = &path {
            audit(&caller, &method, &route, path, "denied", None);
        }
        return Err(ApiError::Forbidden(format!(
            "the token `{}` lacks the `{needed}` scope this route needs",
            caller.name
        )));
    }
    request.extensions_mut().insert(caller.clone());
    let response = next.run(request).await;
    if let Some(path) = &path {
        super::audit::audit_answered(&caller, &method, &route, path, &response);
    }
    Ok(response)
}

/// A request with a consumer token: a working token (known in memory, no
/// query: `service::pull::tokens`), on a route consumers may call. Which
/// endpoint it may act on is checked where the endpoint is known (the
/// service).
async fn consume(
    state: &AppState,
    token: &str,
    method: &Method,
    route: &str,
    mut request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let endpoint = match state.service.consumer_endpoint(token).await {
        Ok(Some(endpoint)) => endpoint,
        Ok(None) => {
            state
                .auth
                .refusals
                .refused(Some(token), method, route, request.uri().path());
            return Err(ApiError::ConsumerRefused);
        }
        Err(not_loaded) => {
            return Err(ApiError::Unavailable {
                what: "the database",
                source: Arc::new(not_loaded),
            })
        }
    };
    let caller = Caller {
        name: format!("consumer:{endpoint}").into(),
        scopes: Scopes::default(),
        consumer: Some(endpoint),
        portal: None,
    };
    if !super::pull::consumer_route(route) && route != super::portal::WHOAMI {
        let path = bounded(request.uri().path());
        state
            .auth
            .refusals
            .consumer_denied(&caller, method, route, &path);
        return Err(ApiError::Forbidden(
            "a consumer token may only pull, ack, nack and extend its own endpoint's notifications"
                .to_string(),
        ));
    }
    request.extensions_mut().insert(caller);
    Ok(next.run(request).await)
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// The checks of the open mode. A page in the user's browser can send
/// requests to `localhost`, and through DNS rebinding it can even read the
/// answers under a name of its own. So: the `Host` must be a loopback name
/// or address (defeats rebinding), a request a browser marks as coming
/// from another site or origin is refused (the console, served by hookd
/// itself, is same-origin and allowed), and a POST, PUT or PATCH must be
/// `application/json`, which no cross-origin page can send without a CORS
/// preflight that hookd never grants. DELETE always needs that preflight.
fn local_only(
    method: &Method,
    headers: &HeaderMap,
    authority: Option<&str>,
) -> Result<(), ApiError> {
    let refuse = |message: &str| Err(ApiError::Forbidden(message.to_string()));
    // HTTP/1.1 names the host in `Host`, HTTP/2 in the `:authority`.
    let host = headers
        .get(HOST)
        .and_then(|h| h.to_str().ok())
        .or(authority);
    if !host.is_some_and(is_loopback_authority) {
        return refuse(
            "without api.tokens hookd answers only requests addressed to localhost or a loopback address",
        );
    }
    // Only hookd's own pages (the console) may call it from a browser: the
    // origin must be this very host and port. Another port of localhost is
    // another origin, a dev server say, and is refused.
    if let Some(origin) = headers.get(ORIGIN) {
        let own = origin
            .to_str()
            .ok()
            .and_then(|o| o.split_once("://"))
            .is_some_and(|(scheme, authority)| {
                matches!(scheme, "http" | "https")
                    && host.is_some_and(|host| authority.eq_ignore_ascii_case(host))
            });
        if !own {
            return refuse(
                "without api.tokens hookd refuses requests from web pages of other origins",
            );
        }
    }
    // `same-site` is another port or name of this machine: not ours either.
    if headers.get("sec-fetch-site").is_some_and(|site| {
        let site = site.as_bytes();
        site.eq_ignore_ascii_case(b"cross-site") || site.eq_ignore_ascii_case(b"same-site")
    }) {
        return refuse("without api.tokens hookd refuses cross-site requests");
    }
    if matches!(*method, Method::POST | Method::PUT | Method::PATCH) {
        let json = headers
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"));
        if !json {
            return Err(ApiError::UnsupportedMediaType);
        }
    }
    Ok(())
}

/// `localhost`, `*.localhost`, `127.x.y.z` or `[::1]`, with or without a
/// port, and nothing else: a host of letters, digits, dots and hyphens (or
/// an IPv6 literal in brackets) and a port of digits, so that no userinfo,
/// path or fragment (`localhost:80@evil.example`, `evil.example#.localhost`)
/// passes for one.
fn is_loopback_authority(authority: &str) -> bool {
    let port_ok = |port: Option<&str>| {
        port.is_none_or(|p| (1..=5).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_digit()))
    };
    if let Some(rest) = authority.strip_prefix('[') {
        let Some((v6, after)) = rest.split_once(']') else {
            return false;
        };
        let port = match after {
            "" => None,
            _ => match after.strip_prefix(':') {
                Some(port) => Some(port),
                None => return false,
            },
        };
        return port_ok(port)
            && v6
                .parse::<std::net::Ipv6Addr>()
                .is_ok_and(|ip| ip.is_loopback());
    }
    let (host, port) = match authority.split_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (authority, None),
    };
    let host = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    let name = !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-');
    port_ok(port)
        && name
        && (host == "localhost"
            || host.ends_with(".localhost")
            || host
                .parse::<std::net::Ipv4Addr>()
                .is_ok_and(|ip| ip.is_loopback()))
}

fn constant_time_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
#[path = "auth_tests.rs"]
mod tests;
