//! The OpenAPI document matches the router: every route the code declares is
//! documented with its methods, and every documented operation is routed.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::backends::Backend;

/// (method, path) pairs declared with `.route(...)` in the API's sources.
fn routed() -> BTreeSet<(String, String)> {
    let sources = [
        include_str!("../../src/api/endpoints.rs"),
        include_str!("../../src/api/backlog.rs"),
        include_str!("../../src/api/event_types.rs"),
        include_str!("../../src/api/notifications.rs"),
        include_str!("../../src/api/events.rs"),
        include_str!("../../src/api/pull/mod.rs"),
        include_str!("../../src/api/recover.rs"),
        include_str!("../../src/api/stats.rs"),
        include_str!("../../src/api/portal/mod.rs"),
        include_str!("../../src/api/health.rs"),
        include_str!("../../src/api/mod.rs"),
    ];
    let mut routes = BTreeSet::new();
    for source in sources {
        // rustfmt wraps long calls: scan the text without white space.
        let source: String = source.split_whitespace().collect();
        for chunk in source.split(".route(\"").skip(1) {
            let (path, rest) = chunk.split_once('"').unwrap();
            let handlers = &rest[..rest.find([';', '}']).unwrap_or(rest.len())];
            for method in ["get", "post", "patch", "delete", "put"] {
                if handlers.contains(&format!("{method}("))
                    || handlers.contains(&format!(".{method}("))
                {
                    routes.insert((method.to_string(), path.to_string()));
                }
            }
        }
    }
    routes
}

async fn document(app: &crate::helpers::TestApp) -> Value {
    app.client
        .get(format!("{}/openapi.json", app.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

async fn the_openapi_document_lists_exactly_the_routes_of_the_router(backend: Backend) {
    let app = backend.spawn().await;
    let document = document(&app).await;
    assert!(document["openapi"].as_str().unwrap().starts_with("3."));
    let mut documented = BTreeSet::new();
    let mut operation_ids = BTreeSet::new();
    for (path, operations) in document["paths"].as_object().unwrap() {
        for (method, operation) in operations.as_object().unwrap() {
            documented.insert((method.clone(), path.clone()));
            // Client generators name their functions after these.
            let id = operation["operationId"].as_str().unwrap_or_default();
            assert!(
                !id.is_empty() && operation_ids.insert(id.to_string()),
                "{method} {path}: operationId {id:?} missing or not unique"
            );
        }
    }
    let routed = routed();
    assert!(
        routed.len() >= 18,
        "the source scan found the routes: {routed:?}"
    );
    assert_eq!(documented, routed);
    // Every error response refers to the one error shape.
    assert!(document["components"]["schemas"]["ErrorBody"].is_object());
    assert!(document["components"]["securitySchemes"]["bearer"].is_object());
}
both!(the_openapi_document_lists_exactly_the_routes_of_the_router);

/// The other direction, against the live router rather than the sources:
/// every documented operation reaches a handler. Path parameters name
/// nothing that exists, so handlers answer 4xx of their own, never the
/// router's "route not found" or 405.
async fn every_documented_operation_reaches_a_handler_of_the_live_router(backend: Backend) {
    let app = backend.spawn().await;
    let document = document(&app).await;
    let mut probed = 0;
    for (path, operations) in document["paths"].as_object().unwrap() {
        let concrete: String = path
            .split('/')
            .map(|part| {
                if part.starts_with('{') {
                    "no-such-thing"
                } else {
                    part
                }
            })
            .collect::<Vec<_>>()
            .join("/");
        for method in operations.as_object().unwrap().keys() {
            let method = reqwest::Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            let response = app
                .client
                .request(method.clone(), format!("{}{concrete}", app.base))
                .bearer_auth(crate::helpers::TOKEN)
                .header("content-type", "application/json")
                .body("{}")
                .send()
                .await
                .unwrap();
            let status = response.status();
            let body = response.text().await.unwrap();
            assert_ne!(status, 405, "{method} {path}: {body}");
            assert_ne!(status, 401, "{method} {path}: the probe must pass auth");
            assert!(
                !body.contains("route not found"),
                "{method} {path} fell through to the router's fallback: {body}"
            );
            probed += 1;
        }
    }
    assert!(probed >= 18, "probed {probed} operations");
}
both!(every_documented_operation_reaches_a_handler_of_the_live_router);

/// #47: `/openapi.json` (no token) was built anew for each request, 2.9 ms
/// of CPU each: anyone who reached the port could keep a core busy. It is
/// built once, with a strong ETag, and a matching `If-None-Match` gets 304.
async fn the_openapi_document_is_served_with_an_etag_and_304_when_it_matches(backend: Backend) {
    let app = backend.spawn().await;
    let get = |tag: Option<&'static str>| {
        let mut request = app.client.get(format!("{}/openapi.json", app.base));
        if let Some(tag) = tag {
            request = request.header("if-none-match", tag);
        }
        request.send()
    };
    let first = get(None).await.unwrap();
    assert_eq!(first.status(), reqwest::StatusCode::OK);
    let tag = first.headers()["etag"].to_str().unwrap().to_string();
    assert!(
        tag.starts_with('"') && !tag.starts_with("W/"),
        "a strong tag: {tag}"
    );
    let body = first.bytes().await.unwrap();
    let second = get(None).await.unwrap();
    assert_eq!(second.headers()["etag"].to_str().unwrap(), tag);
    assert_eq!(
        second.bytes().await.unwrap(),
        body,
        "the same bytes each time"
    );

    let tag: &'static str = Box::leak(tag.into_boxed_str());
    let weak: &'static str = Box::leak(format!("\"other\", W/{tag}").into_boxed_str());
    for matching in [tag, weak, "*"] {
        let not_modified = get(Some(matching)).await.unwrap();
        assert_eq!(
            not_modified.status(),
            reqwest::StatusCode::NOT_MODIFIED,
            "{matching}"
        );
        assert!(not_modified.bytes().await.unwrap().is_empty());
    }
    let other = get(Some("\"something-else\"")).await.unwrap();
    assert_eq!(other.status(), reqwest::StatusCode::OK);
}
both!(the_openapi_document_is_served_with_an_etag_and_304_when_it_matches);
