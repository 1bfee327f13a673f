//! `GET /openapi.json`: the API's OpenAPI 3 document, generated from the
//! handlers' annotations (utoipa), so it cannot drift from the code silently;
//! a test also compares its paths with the router's.

use axum::Json;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use super::{endpoints, health, notifications};

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
        endpoints::update,
        endpoints::remove,
        endpoints::read_secret,
        endpoints::rotate_secret,
        notifications::create,
        notifications::create_batch,
        notifications::list,
        notifications::read,
        notifications::attempts,
        notifications::cancel,
        notifications::cancel_by_key,
        notifications::retry,
        health::healthz,
        health::readyz,
        health::metrics,
        openapi_json,
    ),
    modifiers(&BearerAuth),
    security(("bearer" = [])),
    tags(
        (name = "endpoints", description = "Receivers: URL, signing secret, delivery policy"),
        (name = "notifications", description = "What to deliver, and what became of it"),
        (name = "operations", description = "Health, readiness, this document"),
    )
)]
pub struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

#[utoipa::path(get, path = "/openapi.json", tag = "operations", security(()),
    responses((status = 200, description = "this document", content_type = "application/json")))]
pub async fn openapi_json() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}
