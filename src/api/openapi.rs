//! `GET /openapi.json`: the API's OpenAPI 3 document, generated from the
//! handlers' annotations (utoipa), so it cannot drift from the code silently;
//! a test also compares its paths with the router's. Built once per
//! process and served with a strong ETag: `If-None-Match` with it gets 304.

use std::sync::OnceLock;

use axum::body::Bytes;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, ETAG, IF_NONE_MATCH};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use super::openapi_depth::{EndpointRefSchema, Links, OwnerSchema, Patterns};
use super::pagination::PageItems;
use super::{
    backlog, endpoints, event_types, events, health, notification_list, notifications, portal,
    public_key, pull, recover, secret, stats,
};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "hookd",
        description = "Webhook notification dispatcher: register notifications once; hookd signs, delivers and retries them, and records every attempt."
    ),
    paths(
        endpoints::create,
        endpoints::list,
        endpoints::read,
        backlog::read,
        event_types::read,
        endpoints::update,
        endpoints::remove,
        secret::read_secret,
        public_key::read_public_key,
        secret::rotate_secret,
        secret::end_overlap,
        recover::recover,
        recover::bulk_retry,
        recover::read,
        notifications::create,
        notifications::create_batch,
        notifications::send_test,
        notification_list::list,
        notifications::read,
        notifications::attempts,
        notifications::cancel,
        notifications::cancel_by_key_or_filter,
        notifications::retry,
        events::create,
        events::create_batch,
        events::list,
        events::read,
        events::cancel,
        pull::pull,
        pull::leases::ack,
        pull::leases::nack,
        pull::leases::extend,
        pull::leases::ack_batch,
        pull::leases::nack_batch,
        pull::consumer_token,
        stats::stats,
        portal::for_endpoint,
        portal::for_owner,
        portal::revoke,
        portal::revoke_owner,
        portal::whoami,
        health::healthz,
        health::readyz,
        health::metrics,
        openapi_json,
    ),
    // Named only by parameters, which utoipa does not collect schemas from.
    components(schemas(EndpointRefSchema, OwnerSchema)),
    modifiers(&BearerAuth, &CommonErrors, &Links, &Patterns, &PageItems),
    security(("bearer" = [])),
    tags(
        (name = "endpoints", description = "Receivers: URL, signing secret, delivery policy"),
        (name = "notifications", description = "What to deliver, and what became of it"),
        (name = "events", description = "Business facts that fan out to every subscribed endpoint of their owner"),
        (name = "pull", description = "Pull endpoints: consumers take due notifications under a lease, then ack or nack them"),
        (name = "stats", description = "The console's overview: per-minute counts of deliveries, failures, lateness and the backlog"),
        (name = "portal", description = "Signed, expiring console links scoped to one endpoint or owner; who the caller is"),
        (name = "service", description = "Liveness, readiness, metrics and this document: what a supervisor and a monitoring system read"),
    )
)]
pub struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        concat!(
                            "An API token from `api.tokens`, whose scopes decide what it may do: ",
                            "`admin` everything; `write` create and cancel notifications and events, ",
                            "retry; `read` status, lists, attempts; `secrets` read or rotate signing ",
                            "secrets; `pull` pull, ack, nack and extend on any pull endpoint. Or a ",
                            "pull endpoint's consumer token (`hkc_…`): pull, ack, nack and extend ",
                            "on that endpoint only. Or a portal link's token (`hookd_portal_…`, issued by ",
                            "`POST /v1/endpoints/{endpoint}/portal` or `/v1/owners/{owner}/portal`): list and read ",
                            "its endpoint's or owner's notifications, their attempts and endpoints, retry them, ",
                            "and `GET /v1/whoami`; outside its scope a single resource is 404. Outside them: 403 `forbidden`.",
                        ),
                    ))
                    .build(),
            ),
        );
    }
}

/// The errors any `/v1` operation can answer, documented once here rather
/// than on every handler: 400 (unreadable request), 401 (no or wrong
/// token), 503 (a store is unreachable); 422 where there are parameters or
/// a body to validate; 413 where there is a body. An error response a
/// handler lists without saying why gets the same words: OpenAPI 3.1
/// requires a description on every response, and utoipa 6 leaves an empty
/// one out instead of writing `""`.
struct CommonErrors;

/// What an error status means on any `/v1` operation.
fn error_description(status: &str) -> Option<&'static str> {
    Some(match status {
        "400" => "malformed request: JSON that does not parse, a bad cursor or path",
        "401" => "missing or unknown bearer token",
        "403" => "forbidden: the token lacks the route's scope, a portal link or a consumer token is used outside what it may reach, or (no tokens configured) the request comes from a web page of another origin",
        "408" => "the request, body included, took longer than `server.request_timeout_ms`",
        "415" => "with no tokens configured: a POST or PATCH whose `Content-Type` is not `application/json` (send the header with or without a body)",
        "429" => "the credential has `api.max_concurrent_per_credential` reads under way; retry after `Retry-After`",
        "404" => "not found: `error.message` names what",
        "409" => "the resource's state does not allow it: `error.code` says why",
        "413" => "the request or one payload is too large",
        "422" => "a value is invalid; `error.field` names it",
        "503" => "the database is unreachable, or the embedded file cannot be written; retry later",
        _ => return None,
    })
}

impl Modify for CommonErrors {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::{ContentBuilder, Ref, RefOr, ResponseBuilder};
        let error = |description: &str| {
            ResponseBuilder::new()
                .description(description)
                .content(
                    "application/json",
                    ContentBuilder::new()
                        .schema(Some(Ref::from_schema_name("ErrorBody")))
                        .build(),
                )
                .build()
        };
        for (path, item) in openapi.paths.paths.iter_mut() {
            if !path.starts_with("/v1/") {
                continue;
            }
            let operations = [
                ("get", item.get.as_mut()),
                ("post", item.post.as_mut()),
                ("patch", item.patch.as_mut()),
                ("delete", item.delete.as_mut()),
            ];
            for (method, operation) in operations {
                let Some(operation) = operation else { continue };
                optional_body_not_null(operation);
                let has_body = operation.request_body.is_some();
                let has_params = operation.parameters.as_ref().is_some_and(|p| !p.is_empty());
                let responses = &mut operation.responses.responses;
                let mut common = vec!["400", "401", "403", "408", "503"];
                if has_body || has_params {
                    common.push("422");
                }
                if has_body {
                    common.push("413");
                }
                match method {
                    // Reads are what the per-credential cap counts.
                    "get" => common.push("429"),
                    "post" | "patch" => common.push("415"),
                    _ => {}
                }
                for status in common {
                    if let Some(description) = error_description(status) {
                        responses
                            .entry(status.to_string())
                            .or_insert_with(|| error(description).into());
                    }
                }
                for (status, response) in responses.iter_mut() {
                    if let (RefOr::T(response), Some(description)) =
                        (response, error_description(status))
                    {
                        if response.description.is_empty() {
                            response.description = description.to_string();
                        }
                    }
                }
            }
        }
    }
}

/// An optional body (`request_body = Option<T>`) as "`T`, or no body":
/// not required, its schema `T` alone. utoipa writes it required-less with
/// the schema `T | null`, which the Python generator turned into sending
/// its own "unset" marker when the call gave no body (a `TypeError`), and
/// a JSON `null` body is no body hookd takes.
fn optional_body_not_null(operation: &mut utoipa::openapi::path::Operation) {
    use utoipa::openapi::schema::Schema;
    use utoipa::openapi::{RefOr, Required};
    let Some(RefOr::T(body)) = operation.request_body.as_mut() else {
        return;
    };
    if body.required == Some(Required::True) {
        return;
    }
    for content in body.content.values_mut() {
        let RefOr::T(content) = content else {
            continue;
        };
        let Some(RefOr::T(Schema::OneOf(one_of))) = &content.schema else {
            continue;
        };
        let not_null: Vec<_> = one_of
            .items
            .iter()
            .filter(|item| !matches!(item, RefOr::T(Schema::Object(o)) if o.schema_type == utoipa::openapi::schema::SchemaType::Type(utoipa::openapi::Type::Null)))
            .cloned()
            .collect();
        if let [only] = not_null.as_slice() {
            content.schema = Some(only.clone());
        }
    }
    body.required = Some(Required::False);
}

/// This OpenAPI document
#[utoipa::path(operation_id = "openapi_document", get, path = "/openapi.json", tag = "service", security(()),
    responses((status = 200, description = "this document, with its `ETag`", content_type = "application/json"),
        (status = 304, description = "not modified: `If-None-Match` names this document's `ETag`")))]
pub async fn openapi_json(headers: HeaderMap) -> Response {
    let document = served();
    let common = [
        // Cached, but asked about each time: a new hookd's document must be
        // seen at once, and the ETag makes asking cheap.
        (CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        (ETAG, document.etag.clone()),
    ];
    let asked = headers
        .get_all(IF_NONE_MATCH)
        .iter()
        .filter_map(|value| value.to_str().ok());
    if none_match_fails(asked, document.tag()) {
        return (StatusCode::NOT_MODIFIED, common).into_response();
    }
    (
        common,
        [(CONTENT_TYPE, HeaderValue::from_static("application/json"))],
        document.bytes.clone(),
    )
        .into_response()
}

/// The document as served: built once per process (issue #47: building
/// it took 2.9 ms of CPU a request, on a route open to anyone), with its
/// strong ETag.
struct Served {
    bytes: Bytes,
    etag: HeaderValue,
}

impl Served {
    /// The ETag's opaque tag, between its quotes.
    fn tag(&self) -> &str {
        self.etag.to_str().unwrap_or_default().trim_matches('"')
    }
}

/// The document's bytes, as `GET /openapi.json` serves them (`hookd
/// openapi` prints them, for the clients' generators).
pub fn document() -> &'static [u8] {
    &served().bytes
}

fn served() -> &'static Served {
    static SERVED: OnceLock<Served> = OnceLock::new();
    SERVED.get_or_init(|| {
        let bytes = serde_json::to_vec(&ApiDoc::openapi()).expect("the document serialises");
        let digest = Sha256::digest(&bytes);
        let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
        Served {
            bytes: Bytes::from(bytes),
            etag: HeaderValue::from_str(&format!("\"{hex}\"")).expect("hex is a header value"),
        }
    })
}

/// Whether `If-None-Match` (every field line of it) makes a GET answer
/// 304 for the entity tag `tag`: `*`, or a listed tag equal to it by the
/// weak comparison (RFC 9110 §13.1.2: `W/` is ignored). Tags are read as
/// the grammar has them, quoted, so a comma inside one splits nothing; a
/// malformed list matches from nothing after its fault.
fn none_match_fails<'a>(fields: impl Iterator<Item = &'a str>, tag: &str) -> bool {
    for field in fields {
        if field.trim() == "*" {
            return true;
        }
        let mut rest = field;
        loop {
            rest = rest.trim_start_matches([' ', '\t', ',']);
            if rest.is_empty() {
                break;
            }
            let unweak = rest.strip_prefix("W/").unwrap_or(rest);
            let Some(quoted) = unweak.strip_prefix('"') else {
                break;
            };
            let Some(end) = quoted.find('"') else {
                break;
            };
            if &quoted[..end] == tag {
                return true;
            }
            rest = &quoted[end + 1..];
        }
    }
    false
}

#[cfg(test)]
#[path = "openapi_tests.rs"]
mod tests;
