//! What an event's request may say: a key, idempotent per owner; the
//! endpoints it names; and bad events and patterns, refused naming the
//! field. On each backend.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use super::event;
use crate::backends::Backend;

async fn an_event_key_is_idempotent_per_owner(backend: Backend) {
    let app = backend.spawn().await;
    app.endpoint(json!({"owner": "k"})).await;
    app.endpoint(json!({"owner": "l"})).await;
    let body = json!({"event_type": "order.paid", "owner": "k", "key": "order-1:paid", "payload": {"a": 1, "b": 2}, "delay": "1h"});
    let first = event(&app, body.clone()).await;
    let (status, again) = app
        .post(
            "/v1/events",
            json!({"event_type": "order.paid", "owner": "k", "key": "order-1:paid", "payload": {"b": 2, "a": 1}, "delay": "1h"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "the same event again: {again}");
    assert_eq!(again["id"], first["id"]);
    let (_, deliveries) = app
        .get(&format!(
            "/v1/notifications?event={}",
            first["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(
        deliveries["data"].as_array().unwrap().len(),
        1,
        "no second fan-out"
    );

    let mut other = body.clone();
    other["payload"] = json!({"a": 2});
    let (status, conflict) = app.post("/v1/events", other).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(conflict["error"]["code"], json!("key_conflict"));

    // An amount written another way is the same event; one that f64 would
    // round to it is not.
    let amount = |amount: &str| {
        format!(
            r#"{{"event_type":"order.paid","owner":"k","key":"order-2:paid","payload":{{"amount":{amount}}},"delay":"1h"}}"#
        )
    };
    let (status, paid) = app
        .call_raw(Method::POST, "/v1/events", amount("12.50"))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{paid}");
    let (status, again) = app
        .call_raw(Method::POST, "/v1/events", amount("1.25e1"))
        .await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(again["id"], paid["id"]);
    let (status, conflict) = app
        .call_raw(Method::POST, "/v1/events", amount("12.5000000000000001"))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{conflict}");

    let mut elsewhere = body;
    elsewhere["owner"] = json!("l");
    let (status, _) = app.post("/v1/events", elsewhere).await;
    assert_eq!(status, StatusCode::CREATED, "keys are per owner");
}
both!(an_event_key_is_idempotent_per_owner);

async fn an_event_can_name_the_endpoints_it_goes_to(backend: Backend) {
    let app = backend.spawn().await;
    let a = app.endpoint(json!({"uid": "a", "owner": "n"})).await;
    app.endpoint(json!({"uid": "b", "owner": "n"})).await;
    app.endpoint(json!({"uid": "c", "owner": "n", "event_types": ["refund.*"]}))
        .await;
    app.endpoint(json!({"uid": "other", "owner": "o"})).await;
    let created = event(
        &app,
        json!({"event_type": "order.paid", "owner": "n", "payload": {}, "delay": "1h", "endpoints": [a["id"], "c"]}),
    )
    .await;
    assert_eq!(
        created["deliveries"],
        json!(1),
        "c is named but not subscribed"
    );
    let (_, listed) = app
        .get(&format!(
            "/v1/notifications?event={}",
            created["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(listed["data"][0]["endpoint_id"], a["id"]);

    let (status, refused) = app
        .post("/v1/events", json!({"event_type": "order.paid", "owner": "n", "payload": {}, "endpoints": ["a", "missing"]}))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(refused["error"]["code"], json!("unknown_endpoint"));
    assert_eq!(refused["error"]["field"], json!("endpoints[1]"));
    let (status, refused) = app
        .post("/v1/events", json!({"event_type": "order.paid", "owner": "n", "payload": {}, "endpoints": ["other"]}))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(refused["error"]["code"], json!("owner_mismatch"));
    let (status, refused) = app
        .post(
            "/v1/events",
            json!({"event_type": "order.paid", "owner": "n", "payload": {}, "endpoints": []}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    assert_eq!(refused["error"]["field"], json!("endpoints"));
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("leave `endpoints` out")),
        "{refused}"
    );
    let (_, events) = app.get("/v1/events?owner=n").await;
    assert_eq!(
        events["data"].as_array().unwrap().len(),
        1,
        "nothing half-written, and no event that names no endpoint"
    );
}
both!(an_event_can_name_the_endpoints_it_goes_to);

async fn bad_events_and_patterns_are_refused_naming_the_field(backend: Backend) {
    let app = backend.spawn().await;
    for (pattern, field) in [("order.**", "event_types[0]"), (".paid", "event_types[0]")] {
        let (status, body) = app
            .post(
                "/v1/endpoints",
                json!({"url": "http://127.0.0.1:9/", "event_types": [pattern]}),
            )
            .await;
        assert_eq!(
            status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{pattern}: {body}"
        );
        assert_eq!(body["error"]["code"], json!("invalid_pattern"));
        assert_eq!(body["error"]["field"], json!(field));
    }
    let cases = [
        (json!({"owner": "x", "payload": {}}), "event_type"),
        (json!({"event_type": ".paid", "payload": {}}), "event_type"),
        (
            json!({"event_type": "order.*", "payload": {}}),
            "event_type",
        ),
        (
            json!({"event_type": "a", "owner": "bad owner", "payload": {}}),
            "owner",
        ),
        (json!({"event_type": "a"}), "payload"),
        (
            json!({"event_type": "a", "payload": {}, "body": "x"}),
            "body",
        ),
        (
            json!({"event_type": "a", "payload": {}, "headers": {"webhook-id": "x"}}),
            "headers.webhook-id",
        ),
        (
            json!({"event_type": "a", "payload": {}, "delay": "soon"}),
            "delay",
        ),
    ];
    for (body, field) in cases {
        let (status, answer) = app.post("/v1/events", body.clone()).await;
        assert!(
            status == StatusCode::UNPROCESSABLE_ENTITY || status == StatusCode::BAD_REQUEST,
            "{body}: {status} {answer}"
        );
        assert_eq!(answer["error"]["field"], json!(field), "{body}: {answer}");
    }
    let big = "x".repeat(262_145);
    let (status, answer) = app
        .post("/v1/events", json!({"event_type": "a", "body": big}))
        .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(answer["error"]["field"], json!("body"));
    let too_many: Vec<Value> = (0..1001)
        .map(|_| json!({"event_type": "a", "payload": {}}))
        .collect();
    let (status, answer) = app
        .post("/v1/events/batch", json!({"events": too_many}))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(answer["error"]["field"], json!("events[1000]"));
    let (status, batch) = app
        .post(
            "/v1/events/batch",
            json!({"events": [{"event_type": "a", "payload": {}}, {"event_type": "", "payload": {}}]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(batch["data"][0]["status"], json!(201));
    assert_eq!(batch["data"][1]["status"], json!(422));
    let (_, events) = app.get("/v1/events").await;
    assert_eq!(
        events["data"].as_array().unwrap().len(),
        1,
        "only the valid item of the batch is stored: {events}"
    );
}
both!(bad_events_and_patterns_are_refused_naming_the_field);
