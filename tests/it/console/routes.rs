//! #47: a route's parameter reaches the API as one encoded path segment.
//! `#/notifications/..\..\v1\endpoints\shop\secret#` once made the console
//! `GET /v1/endpoints/shop/secret` with the signed-in admin's token (the
//! URL parser reads `\` as `/` and resolves `..`): a link could make an
//! admin's browser read what the link's author names.

use serde_json::{json, Value};

use crate::backends::Backend;
use crate::console::Browser;
use crate::helpers::TOKEN;

/// The API paths the page requested since the last `clear`.
async fn requested(browser: &Browser) -> Vec<String> {
    let names = browser
        .run(
            "return performance.getEntriesByType('resource')\
               .map(e => new URL(e.name).pathname)\
               .filter(p => p.startsWith('/v1/'))",
        )
        .await;
    match names {
        Value::Array(names) => names
            .iter()
            .map(|n| n.as_str().unwrap_or_default().to_string())
            .collect(),
        other => panic!("resource names: {other}"),
    }
}

async fn a_hostile_route_parameter_never_reaches_another_api_path(backend: Backend) {
    let app = backend.spawn().await;
    app.endpoint(json!({"uid": "shop", "url": "https://shop.example/hook"}))
        .await;
    let Some(browser) = Browser::open(&app, &backend, "hostile-route").await else {
        return;
    };
    browser.goto("").await;
    browser
        .type_into("token", &format!("{TOKEN}\u{E007}"))
        .await;
    browser.find("overview").await;

    for route in [
        r"..\..\v1\endpoints\shop\secret#",
        "../../v1/endpoints/shop/secret",
        "%2e%2e/%2e%2e/v1/endpoints/shop/secret",
        r"..\..\v1\endpoints\shop\secret\rotate",
    ] {
        browser
            .run("performance.clearResourceTimings(); return null")
            .await;
        browser.goto(&format!("#/notifications/{route}")).await;
        browser.find("error").await;
        let paths = requested(&browser).await;
        for path in &paths {
            // The overview's refresh, when it was under way as the route
            // changed, may land after the clear.
            assert!(
                path.starts_with("/v1/notifications/") || path == "/v1/stats",
                "{route}: the console requested {path} ({paths:?})"
            );
            assert!(!path.contains("/secret"), "{route}: {path}");
        }
    }
    browser.screenshot("hostile-route").await;
    browser.close().await;
}
both!(a_hostile_route_parameter_never_reaches_another_api_path);
