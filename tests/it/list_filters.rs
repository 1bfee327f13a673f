//! The list filters the console searches with (CONTRACT36 §4):
//! notifications by owner and creation time, events by creation time, the
//! window half-open `[created_after, created_before)`, and a malformed
//! value refused naming its field.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::backends::Backend;
use crate::helpers::TestApp;

pub fn encoded(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

pub async fn listed(app: &TestApp, path: &str) -> Vec<String> {
    let (status, page) = app.get(path).await;
    assert_eq!(status, StatusCode::OK, "{path}: {page}");
    page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["id"].as_str().unwrap().to_string())
        .collect()
}

async fn created_at(app: &TestApp, path: &str) -> String {
    let (_, item) = app.get(path).await;
    item["created_at"].as_str().unwrap().to_string()
}

async fn notifications_are_found_by_owner_and_creation_time(backend: Backend) {
    let app = backend.spawn().await;
    app.endpoint(json!({"uid": "a", "owner": "merchant-42"}))
        .await;
    app.endpoint(json!({"uid": "b", "owner": "merchant-7"}))
        .await;
    let mut ids = Vec::new();
    for endpoint in ["a", "b", "a"] {
        let body = json!({"endpoint": endpoint, "payload": {}, "delay": "1h"});
        ids.push(app.notify(body).await);
    }
    let (first, second, third) = (&ids[0], &ids[1], &ids[2]);
    let owned = listed(&app, "/v1/notifications?owner=merchant-42").await;
    assert_eq!(owned, [third.clone(), first.clone()]);
    assert!(listed(&app, "/v1/notifications?owner=nobody")
        .await
        .is_empty());

    let at = encoded(&created_at(&app, &format!("/v1/notifications/{second}")).await);
    let after = listed(&app, &format!("/v1/notifications?created_after={at}")).await;
    assert_eq!(after, [third.clone(), second.clone()]);
    let before = listed(&app, &format!("/v1/notifications?created_before={at}")).await;
    assert_eq!(before, vec![first.clone()]);
    let path = format!("/v1/notifications?created_after={at}&owner=merchant-42");
    assert_eq!(listed(&app, &path).await, vec![third.clone()]);
    // An empty window is refused, as a bulk action's is: the caller
    // swapped the ends, and an empty page would not say so.
    let path = format!("/v1/notifications?created_after={at}&created_before={at}");
    let (status, body) = app.get(&path).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"]["field"], "created_before", "{body}");
    // Another offset names the same instant.
    let far = encoded("2000-01-01T02:00:00+02:00");
    let path = format!("/v1/notifications?created_after={far}&limit=2");
    assert_eq!(listed(&app, &path).await, [third.clone(), second.clone()]);

    for (query, field) in [
        ("created_after=yesterday", "created_after"),
        ("created_before=2026-13-01T00:00:00Z", "created_before"),
        ("created_after=2026-11-26", "created_after"),
        ("owner=has%20space", "owner"),
    ] {
        let (status, body) = app.get(&format!("/v1/notifications?{query}")).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{query}: {body}");
        assert_eq!(body["error"]["field"], field, "{query}");
    }
}
both!(notifications_are_found_by_owner_and_creation_time);

async fn events_are_found_by_creation_time(backend: Backend) {
    let app = backend.spawn().await;
    let mut ids = Vec::new();
    for n in 0..3 {
        let (status, event) = app
            .post(
                "/v1/events",
                json!({"event_type": "invoice.paid", "owner": "merchant-42", "payload": {"n": n}}),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{event}");
        ids.push(event["id"].as_str().unwrap().to_string());
    }
    let at = encoded(&created_at(&app, &format!("/v1/events/{}", ids[1])).await);
    let after = listed(&app, &format!("/v1/events?created_after={at}")).await;
    assert_eq!(after, [ids[2].clone(), ids[1].clone()]);
    let before = listed(
        &app,
        &format!("/v1/events?created_before={at}&owner=merchant-42"),
    )
    .await;
    assert_eq!(before, [ids[0].clone()]);
    for (query, field) in [
        ("created_after=soon", "created_after"),
        ("created_before=1", "created_before"),
    ] {
        let (status, body): (StatusCode, Value) = app.get(&format!("/v1/events?{query}")).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{query}: {body}");
        assert_eq!(body["error"]["field"], field, "{query}");
    }
}
both!(events_are_found_by_creation_time);
