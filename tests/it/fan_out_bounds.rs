//! Fan-out bounds (issue #47, finding 4): one request's deliveries are
//! capped by `api.max_deliveries_per_request` (one 70 KB batch once made
//! 200,000 deliveries in one commit and held the embedded writer 20 s),
//! and another producer's creates go on beside a fan-out of the cap.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::backends::Backend;
use crate::helpers::TestApp;

/// Where the endpoints point: nothing is sent in these tests (every event
/// is delayed an hour).
const NOWHERE: &str = "http://127.0.0.1:9/hook";

async fn endpoints(app: &TestApp, owner: &str, count: usize) {
    for i in 0..count {
        app.endpoint(json!({"uid": format!("{owner}-{i}"), "url": NOWHERE, "owner": owner}))
            .await;
    }
}

fn batch(owner: &str, events: usize) -> Value {
    let events: Vec<Value> = (0..events)
        .map(|i| json!({"event_type": "order.paid", "owner": owner, "payload": {"n": i}, "delay": "1h"}))
        .collect();
    json!({ "events": events })
}

async fn a_request_fanning_out_past_the_cap_is_refused_whole_and_one_at_the_cap_is_accepted(
    backend: Backend,
) {
    // As a user sets it: `[api] max_deliveries_per_request` in the file.
    let app = backend
        .spawn_with("[api]\nmax_deliveries_per_request = 12\n")
        .await;
    endpoints(&app, "shop", 4).await;

    // A batch of 4 events to 4 endpoints: 16 deliveries, over 12.
    let (status, refused) = app.post("/v1/events/batch", batch("shop", 4)).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    assert_eq!(refused["error"]["code"], "invalid_value", "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("api.max_deliveries_per_request") && message.contains("16"),
        "names the key and the count: {message}"
    );
    // One event alone is counted as well: with `endpoints` naming them it
    // is 4, under the cap; the cap is per request, not per event.
    let (status, single) = app
        .post(
            "/v1/events",
            json!({"event_type": "order.paid", "owner": "shop", "payload": {}, "delay": "1h",
                   "endpoints": ["shop-0", "shop-1", "shop-2", "shop-3"]}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{single}");
    let events = backend.count("SELECT count(*) FROM events").await;
    let notifications = backend.count("SELECT count(*) FROM notifications").await;
    assert_eq!(
        (events, notifications),
        (1, 4),
        "the refused batch stored nothing"
    );

    // Exactly at the cap: 3 events to 4 endpoints, 12 deliveries.
    let (status, accepted) = app.post("/v1/events/batch", batch("shop", 3)).await;
    assert_eq!(status, StatusCode::OK, "{accepted}");
    for item in accepted["data"].as_array().unwrap() {
        assert_eq!(item["status"], 201, "{item}");
        assert_eq!(item["event"]["deliveries"], 4, "{item}");
    }
    let notifications = backend.count("SELECT count(*) FROM notifications").await;
    assert_eq!(notifications, 16);
}
both!(a_request_fanning_out_past_the_cap_is_refused_whole_and_one_at_the_cap_is_accepted);

/// A fan-out of the default cap (100 events to 100 endpoints: 10,000
/// deliveries) while another producer creates notifications one at a
/// time: each of its creates answers within 2 s (before: the
/// embedded writer was held for the whole fan-out), and the fan-out is
/// written whole, one delivery per event and endpoint.
async fn another_producers_creates_go_on_beside_a_fan_out_of_the_cap(backend: Backend) {
    let app = backend.spawn().await;
    endpoints(&app, "wide", 100).await;
    app.endpoint(json!({"uid": "other", "url": NOWHERE})).await;

    let (client, base) = (app.client.clone(), app.base.clone());
    let started = Instant::now();
    let fan_out = tokio::spawn(async move {
        let response = client
            .post(format!("{base}/v1/events/batch"))
            .bearer_auth(crate::helpers::TOKEN)
            .json(&batch("wide", 100))
            .send()
            .await
            .unwrap();
        let status = response.status();
        let answer: Value = response.json().await.unwrap();
        (status, answer, started.elapsed())
    });
    let mut latencies = Vec::new();
    while !fan_out.is_finished() {
        let sent = Instant::now();
        let (status, created) = app
            .post(
                "/v1/notifications",
                json!({"endpoint": "other", "payload": {"n": latencies.len()}, "delay": "1h"}),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{created}");
        latencies.push(sent.elapsed());
    }
    let (status, answer, took) = fan_out.await.unwrap();
    assert_eq!(status, StatusCode::OK, "{answer}");
    let slowest = latencies.iter().max().copied().unwrap_or_default();
    println!(
        "fan-out of 10,000 deliveries took {took:?}; {} creates beside it, the slowest {slowest:?}",
        latencies.len()
    );
    assert!(!latencies.is_empty(), "a create ran beside the fan-out");
    // The whole fan-out is one transaction of about 0.2 s on this machine
    // (BENCHMARKS.md); a create waits for it at most. 2 s leaves a loaded
    // CI machine ten times that, and still refuses the 20 s of before.
    assert!(
        slowest < Duration::from_secs(2),
        "a create waited {slowest:?} behind the fan-out"
    );
    for item in answer["data"].as_array().unwrap() {
        assert_eq!(item["event"]["deliveries"], 100, "{item}");
    }
    let written = backend
        .count("SELECT count(*) FROM notifications WHERE event_id IS NOT NULL")
        .await;
    let distinct = backend
        .count(
            "SELECT count(*) FROM (SELECT DISTINCT event_id, endpoint_id FROM notifications \
             WHERE event_id IS NOT NULL) AS pairs",
        )
        .await;
    assert_eq!((written, distinct), (10_000, 10_000));
}
both!(another_producers_creates_go_on_beside_a_fan_out_of_the_cap);
