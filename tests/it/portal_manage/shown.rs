//! What the portal shows a link's holder beside its endpoint: the
//! deployment's brand, and the event types sent lately to choose from.
//! On each backend.

use reqwest::StatusCode;
use serde_json::{json, Value};

use super::MANAGE;
use crate::backends::Backend;
use crate::portal::{get, issue, settings, KEY};

async fn the_portal_shows_the_deployments_brand(backend: Backend) {
    // `settings` ends in `[portal]`: the brand goes on in it, as the
    // README's example writes it.
    let config = format!(
        "{}name = \"Acme Payments\"\nlogo_url = \"https://cdn.acme.example/logo.svg\"\naccent = \"#0a7d5a\"\n",
        settings(KEY)
    );
    let app = backend.spawn_with(&config).await;
    app.endpoint(json!({"uid": "mine"})).await;
    let (token, _) = issue(&app, "/v1/endpoints/mine/portal", json!({})).await;
    let (_, who) = get(&app, &token, "/v1/whoami").await;
    assert_eq!(
        who["brand"],
        json!({"name": "Acme Payments", "logo_url": "https://cdn.acme.example/logo.svg", "accent": "#0a7d5a"})
    );
    // An operator is shown no brand.
    let (_, operator) = app.get("/v1/whoami").await;
    assert_eq!(operator["brand"], Value::Null);
    // The console admits the logo's origin for images, nothing more.
    let page = app
        .client
        .get(format!("{}/console/", app.base))
        .send()
        .await
        .unwrap();
    let policy = page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        policy.contains("img-src 'self' data: https://cdn.acme.example;"),
        "{policy}"
    );
    assert!(policy.contains("script-src 'self';"), "{policy}");
}
both!(the_portal_shows_the_deployments_brand);

async fn the_event_types_sent_lately_are_offered_to_choose_from(backend: Backend) {
    let app = backend.spawn_with(&settings(KEY)).await;
    app.endpoint(json!({"uid": "mine", "owner": "merchant-42", "event_types": ["order.*"]}))
        .await;
    app.endpoint(json!({"uid": "sibling", "owner": "merchant-42"}))
        .await;
    app.endpoint(json!({"uid": "stranger", "owner": "merchant-7"}))
        .await;
    app.endpoint(json!({"uid": "ownerless"})).await;
    for (owner, event_type) in [
        (Some("merchant-42"), "order.paid"),
        (Some("merchant-42"), "order.paid"),
        // Sent to the owner though this endpoint does not take it: one to
        // choose.
        (Some("merchant-42"), "refund.created"),
        (Some("merchant-7"), "invoice.issued"),
        (None, "ping"),
    ] {
        let mut event = json!({"event_type": event_type, "payload": {}, "delay": "1h"});
        if let Some(owner) = owner {
            event["owner"] = json!(owner);
        }
        let (status, answer) = app.post("/v1/events", event).await;
        assert_eq!(status, StatusCode::CREATED, "{answer}");
    }
    app.notify(
        json!({"endpoint": "mine", "event_type": "order.shipped", "payload": {}, "delay": "1h"}),
    )
    .await;

    let (token, _) = issue(
        &app,
        "/v1/endpoints/mine/portal",
        json!({"permissions": MANAGE}),
    )
    .await;
    let expected = json!(["order.paid", "order.shipped", "refund.created"]);
    let (status, recent) = get(&app, &token, "/v1/endpoints/mine/event-types").await;
    assert_eq!(status, StatusCode::OK, "{recent}");
    assert_eq!(recent["data"], expected);
    assert_eq!(recent["partial"], false);
    let (_, by_operator) = app.get("/v1/endpoints/mine/event-types").await;
    assert_eq!(by_operator["data"], expected);
    let (_, ownerless) = app.get("/v1/endpoints/ownerless/event-types").await;
    assert_eq!(ownerless["data"], json!(["ping"]));
    // Another owner's endpoint is not there for the link.
    let (status, _) = get(&app, &token, "/v1/endpoints/stranger/event-types").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}
both!(the_event_types_sent_lately_are_offered_to_choose_from);
