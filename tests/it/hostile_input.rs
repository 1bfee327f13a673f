//! Hostile bodies (DESIGN §14): every list in a request is counted while it
//! is parsed, the item past its limit refused by its place; and an error
//! quotes at most 128 bytes of what it was sent, however much that was.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::backends::Backend;

/// `{"<field>": [<item>, <item>, …]}`, `count` items, as raw text.
fn list_body(field: &str, item: &str, count: usize) -> String {
    let items = format!("{item},").repeat(count);
    format!("{{\"{field}\": [{}]}}", &items[..items.len() - 1])
}

fn assert_refused_at(status: StatusCode, body: &Value, field: &str, what: &str) {
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{what}: {body}");
    assert_eq!(
        body["error"]["code"],
        json!("invalid_value"),
        "{what}: {body}"
    );
    assert_eq!(body["error"]["field"], json!(field), "{what}: {body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("at most"), "{what}: {body}");
}

async fn every_list_in_a_body_is_refused_at_the_item_past_its_limit(backend: Backend) {
    let app = backend.spawn().await;
    app.endpoint(json!({"uid": "shop"})).await;
    let notification = r#"{"endpoint": "shop", "payload": {}}"#;
    let event = r#"{"event_type": "a", "payload": {}}"#;
    let cases = [
        (
            "notifications batch",
            "/v1/notifications/batch",
            list_body("notifications", notification, 1001),
            "notifications[1000]",
        ),
        // 8 MiB of zeros: four million items, refused at the 1,001st.
        (
            "millions of zeros",
            "/v1/notifications/batch",
            list_body("notifications", "0", 4 << 20),
            "notifications[1000]",
        ),
        (
            "events batch",
            "/v1/events/batch",
            list_body("events", event, 1001),
            "events[1000]",
        ),
        (
            "ack receipts",
            "/v1/endpoints/shop/ack",
            list_body("receipts", "\"hkr_x\"", 1001),
            "receipts[1000]",
        ),
        (
            "nack receipts",
            "/v1/endpoints/shop/nack",
            list_body("receipts", "\"\"", 3 << 20),
            "receipts[1000]",
        ),
        (
            "endpoints an event names",
            "/v1/events",
            format!(
                r#"{{"event_type": "a", "payload": {{}}, {}"#,
                &list_body("endpoints", "\"shop\"", 1001)[1..]
            ),
            "endpoints[1000]",
        ),
        (
            "event types",
            "/v1/endpoints",
            format!(
                r#"{{"url": "https://a.example", {}"#,
                &list_body("event_types", "\"a\"", 101)[1..]
            ),
            "event_types[100]",
        ),
        (
            "permanent statuses",
            "/v1/endpoints",
            format!(
                r#"{{"url": "https://a.example", {}"#,
                &list_body("permanent_statuses", "410", 201)[1..]
            ),
            "permanent_statuses[200]",
        ),
        (
            "a schedule",
            "/v1/endpoints",
            format!(
                r#"{{"url": "https://a.example", {}"#,
                &list_body("schedule", "0", 2 << 20)[1..]
            ),
            "schedule[1000]",
        ),
        (
            "a schedule of nested lists",
            "/v1/notifications",
            format!(
                r#"{{"endpoint": "shop", "payload": {{}}, "schedule": [{}]}}"#,
                vec![format!("[{}]", vec!["0"; 999].join(",")); 2].join(",")
            ),
            "schedule[1]",
        ),
        (
            "headers",
            "/v1/notifications",
            format!(
                r#"{{"endpoint": "shop", "payload": {{}}, "headers": {{{}}}}}"#,
                vec![r#""x-a": "1""#; 51].join(",")
            ),
            "headers",
        ),
    ];
    for (what, path, body, field) in cases {
        let (status, answer) = app.call_raw(Method::POST, path, body).await;
        assert_refused_at(status, &answer, field, what);
    }
    // A batch item past the limit is refused for its place, not its text.
    let mut batch = list_body("notifications", notification, 1000);
    batch.truncate(batch.len() - 2);
    batch.push_str(", not json at all");
    let (status, answer) = app
        .call_raw(Method::POST, "/v1/notifications/batch", batch)
        .await;
    assert_refused_at(status, &answer, "notifications[1000]", "malformed tail");
    // At the limit, a batch is taken.
    let (status, answer) = app
        .call_raw(
            Method::POST,
            "/v1/notifications/batch",
            list_body("notifications", notification, 1000),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["data"].as_array().map(Vec::len), Some(1000));
}
both!(every_list_in_a_body_is_refused_at_the_item_past_its_limit);

async fn an_error_quotes_at_most_128_bytes_of_a_megabytes_long_value(backend: Backend) {
    let app = backend.spawn().await;
    app.endpoint(json!({"uid": "shop"})).await;
    let (status, queue) = app
        .post("/v1/endpoints", json!({"uid": "queue", "delivery": "pull"}))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{queue}");
    // 6 MiB, within api.max_request_bytes; `"` and `\` are escaped by
    // serde's own quoting and must not end the cut early.
    let long = "é\"\\`x".repeat(4 << 18);
    let cases = [
        (
            "unknown field",
            "/v1/endpoints",
            json!({"url": "https://a.example", long.clone(): 1}),
        ),
        (
            "a string for a number",
            "/v1/endpoints",
            json!({"url": "https://a.example", "timeout_ms": long}),
        ),
        (
            "unknown variant",
            "/v1/endpoints",
            json!({"url": "https://a.example", "delivery": long}),
        ),
        (
            "a map key in the path",
            "/v1/endpoints",
            json!({"url": "https://a.example", "headers": {long.clone(): 5}}),
        ),
        // Within the 32 KiB all headers may take, so that the name is read.
        (
            "a header name",
            "/v1/endpoints",
            json!({"url": "https://a.example", "headers": {"é\"".repeat(10_000): "v"}}),
        ),
        (
            "a schedule preset",
            "/v1/endpoints",
            json!({"url": "https://a.example", "schedule": long}),
        ),
        (
            "a schedule's duration",
            "/v1/endpoints",
            json!({"url": "https://a.example", "schedule": [long]}),
        ),
        (
            "a pattern",
            "/v1/endpoints",
            json!({"url": "https://a.example", "event_types": [long]}),
        ),
        (
            "an unknown endpoint",
            "/v1/notifications",
            json!({"endpoint": long, "payload": {}}),
        ),
        (
            "a delay",
            "/v1/notifications",
            json!({"endpoint": "shop", "payload": {}, "delay": long}),
        ),
        (
            "a lease",
            "/v1/endpoints/queue/pull",
            json!({"lease": long}),
        ),
        (
            "a batch item",
            "/v1/notifications/batch",
            json!({"notifications": [{"endpoint": "shop", "payload": {}, long.clone(): 1}]}),
        ),
    ];
    let mut too_long = Vec::new();
    for (what, path, body) in cases {
        let (status, answer) = app.post(path, body).await;
        // A batch answers 200 with each item's own status and error.
        let (status, error) = match answer["data"][0].as_object() {
            Some(item) => (item["status"].as_u64(), &item["error"]),
            None => (Some(u64::from(status.as_u16())), &answer["error"]),
        };
        assert!(
            status.is_some_and(|s| (400..500).contains(&s)),
            "{what}: {status:?}"
        );
        assert!(error["code"].is_string(), "{what}: not the error shape");
        assert!(error["message"].is_string(), "{what}: not the error shape");
        let size = answer.to_string().len();
        if size >= 1024 {
            too_long.push(format!("{what}: a {size}-byte answer"));
        }
    }
    assert!(too_long.is_empty(), "{too_long:#?}");
}
both!(an_error_quotes_at_most_128_bytes_of_a_megabytes_long_value);
