//! Events and fan-out (docs/design.md §9) end to end: real hookd on each
//! backend (PostgreSQL and Redis, SQLite and its in-process index) and a
//! real receiver.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use crate::backends::Backend;
use crate::helpers::{
    database_url, eventually, free_port, http_client, new_prefix, redis_url, HookdProcess, TestApp,
    TOKEN,
};
use crate::receiver::Receiver;

const DEADLINE: Duration = Duration::from_secs(20);

async fn event(app: &TestApp, body: Value) -> Value {
    let (status, created) = app.post("/v1/events", body).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    created
}

/// Waits until every delivery of the event has `status`; returns the event.
async fn wait_counts(app: &TestApp, id: &str, status: &str, count: i64) -> Value {
    eventually(
        DEADLINE,
        &format!("{count} deliveries {status}"),
        || async {
            let (_, event) = app.get(&format!("/v1/events/{id}")).await;
            (event["counts"][status] == json!(count)).then_some(event)
        },
    )
    .await
}

async fn an_event_reaches_every_subscribed_endpoint_once(backend: Backend) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    let mut secrets = HashMap::new();
    for (path, types) in [
        ("/wildcard", json!(["order.*"])),
        ("/exact", json!(["order.paid"])),
        ("/all", Value::Null),
        ("/star", json!(["*"])),
        ("/refunds", json!(["refund.*"])),
    ] {
        let endpoint = app
            .endpoint(json!({"url": receiver.url(path), "owner": "m-1", "event_types": types}))
            .await;
        secrets.insert(path, endpoint["secret"].as_str().unwrap().to_string());
    }
    app.endpoint(json!({"url": receiver.url("/disabled"), "owner": "m-1", "disabled": true}))
        .await;

    let created = event(
        &app,
        json!({"event_type": "order.paid", "owner": "m-1", "payload": {"order": 123}}),
    )
    .await;
    assert_eq!(created["deliveries"], json!(4), "{created}");
    assert_eq!(created["owner"], json!("m-1"));
    let id = created["id"].as_str().unwrap();

    let done = wait_counts(&app, id, "succeeded", 4).await;
    assert_eq!(done["payload"], json!({"order": 123}));
    let mut webhook_ids = HashSet::new();
    for path in ["/wildcard", "/exact", "/all", "/star"] {
        let got = receiver.received(path);
        assert_eq!(got.len(), 1, "{path} gets the event once");
        let request = &got[0];
        assert_eq!(&request.body[..], br#"{"order":123}"#);
        assert_eq!(request.header("hookd-event-id"), Some(id));
        assert_eq!(request.header("hookd-event-type"), Some("order.paid"));
        webhook_ids.insert(request.header("webhook-id").unwrap().to_string());
        standardwebhooks::Webhook::new(&secrets[path])
            .unwrap()
            .verify(&request.body, &request.headers)
            .expect("each endpoint's delivery is signed with its own secret");
    }
    assert_eq!(webhook_ids.len(), 4, "each delivery has its own webhook-id");
    assert!(receiver.received("/refunds").is_empty());
    assert!(receiver.received("/disabled").is_empty());

    let (_, deliveries) = app.get(&format!("/v1/notifications?event={id}")).await;
    let listed: HashSet<String> = deliveries["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            assert_eq!(n["event_id"], json!(id));
            assert_eq!(n["event_type"], json!("order.paid"));
            n["id"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(
        listed, webhook_ids,
        "the event's deliveries are listed by it"
    );
    let (_, by_type) = app.get("/v1/notifications?event_type=order.paid").await;
    let by_type: HashSet<String> = by_type["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        by_type, webhook_ids,
        "the event's deliveries are listed by its type"
    );
    let (_, other_type) = app.get("/v1/notifications?event_type=order.refunded").await;
    assert_eq!(other_type["data"], json!([]));
    let (_, one) = app
        .get(&format!(
            "/v1/notifications/{}",
            webhook_ids.iter().next().unwrap()
        ))
        .await;
    assert_eq!(
        one["payload"],
        json!({"order": 123}),
        "a delivery shows its event's payload"
    );
    assert_eq!(one["event_type"], json!("order.paid"));
}
both!(an_event_reaches_every_subscribed_endpoint_once);

async fn a_delivery_retried_or_cancelled_still_shows_its_events_type(backend: Backend) {
    let app = backend.spawn().await;
    app.endpoint(json!({"url": "http://127.0.0.1:9/", "owner": "t"}))
        .await;
    let created = event(
        &app,
        json!({"event_type": "order.shipped", "owner": "t", "payload": {}, "delay": "1h"}),
    )
    .await;
    let (_, deliveries) = app
        .get(&format!(
            "/v1/notifications?event={}",
            created["id"].as_str().unwrap()
        ))
        .await;
    let id = deliveries["data"][0]["id"].as_str().unwrap().to_string();
    let (status, retried) = app
        .call(
            reqwest::Method::POST,
            &format!("/v1/notifications/{id}/retry"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{retried}");
    assert_eq!(retried["event_type"], json!("order.shipped"));
    let (status, cancelled) = app
        .call(
            reqwest::Method::POST,
            &format!("/v1/notifications/{id}/cancel"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{cancelled}");
    assert_eq!(cancelled["event_type"], json!("order.shipped"));
}
both!(a_delivery_retried_or_cancelled_still_shows_its_events_type);

async fn an_event_never_reaches_another_owners_endpoint(backend: Backend) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    app.endpoint(json!({"url": receiver.url("/m1"), "owner": "m-1"}))
        .await;
    app.endpoint(json!({"url": receiver.url("/m2"), "owner": "m-2"}))
        .await;
    app.endpoint(json!({"url": receiver.url("/none")})).await;

    let for_m1 = event(
        &app,
        json!({"event_type": "order.paid", "owner": "m-1", "payload": {}}),
    )
    .await;
    let unowned = event(&app, json!({"event_type": "order.paid", "payload": {}})).await;
    let nobody = event(
        &app,
        json!({"event_type": "order.paid", "owner": "m-3", "payload": {}}),
    )
    .await;
    assert_eq!(for_m1["deliveries"], json!(1));
    assert_eq!(unowned["deliveries"], json!(1));
    assert_eq!(
        nobody["deliveries"],
        json!(0),
        "an event without subscribers is stored"
    );

    receiver.wait_for("/m1", 1, DEADLINE).await;
    receiver.wait_for("/none", 1, DEADLINE).await;
    wait_counts(&app, unowned["id"].as_str().unwrap(), "succeeded", 1).await;
    assert!(receiver.received("/m2").is_empty(), "m-2 hears of nothing");
    assert_eq!(receiver.received("/m1").len(), 1);
    assert_eq!(receiver.received("/none").len(), 1);

    let (_, listed) = app.get("/v1/events?owner=m-1").await;
    assert_eq!(listed["data"].as_array().unwrap().len(), 1);
    assert_eq!(listed["data"][0]["id"], for_m1["id"]);
    let (_, endpoints) = app.get("/v1/endpoints?owner=m-2").await;
    assert_eq!(endpoints["data"].as_array().unwrap().len(), 1);
}
both!(an_event_never_reaches_another_owners_endpoint);

async fn wildcard_subscription_matches_sub_types_only(backend: Backend) {
    let app = backend.spawn().await;
    app.endpoint(json!({"owner": "w", "event_types": ["order.*"], "disabled": false}))
        .await;
    for (event_type, expected) in [
        ("order", 0),
        ("order.paid", 1),
        ("order.paid.late", 1),
        ("orders.paid", 0),
        ("refund.order.paid", 0),
    ] {
        let created = event(
            &app,
            json!({"event_type": event_type, "owner": "w", "payload": {}, "delay": "1h"}),
        )
        .await;
        assert_eq!(created["deliveries"], json!(expected), "{event_type}");
    }
}
both!(wildcard_subscription_matches_sub_types_only);

async fn cancelling_an_event_cancels_its_pending_deliveries(backend: Backend) {
    let app = backend.spawn().await;
    for _ in 0..3 {
        app.endpoint(json!({"owner": "c"})).await;
    }
    let created = event(
        &app,
        json!({"event_type": "order.paid", "owner": "c", "payload": {}, "delay": "1h"}),
    )
    .await;
    let id = created["id"].as_str().unwrap();
    let (status, cancelled) = app
        .post(&format!("/v1/events/{id}/cancel"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{cancelled}");
    assert_eq!(cancelled["cancelled"], json!(3));
    let (_, read) = app.get(&format!("/v1/events/{id}")).await;
    assert_eq!(read["counts"]["cancelled"], json!(3), "{read}");
    assert_eq!(read["counts"]["pending"], json!(0));
    let (_, again) = app
        .post(&format!("/v1/events/{id}/cancel"), json!({}))
        .await;
    assert_eq!(again["cancelled"], json!(0), "nothing is pending any more");
    let (status, _) = app
        .post(
            &format!("/v1/events/{}/cancel", uuid::Uuid::now_v7()),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}
both!(cancelling_an_event_cancels_its_pending_deliveries);

/// `hookd_event_fan_out` counts each created event once, by its
/// deliveries: it counted each twice, and every replay of a key and every
/// conflict with one too. A process of its own, so that no other test's
/// events are in its metrics.
#[tokio::test]
async fn the_fan_out_histogram_counts_each_created_event_once() {
    let dir = tempfile::tempdir().unwrap();
    let hookd = crate::embedded::Embedded::start(dir.path(), &[]).await;
    for uid in ["m1-erp", "m1-shop", "m1-ledger"] {
        hookd
            .endpoint(uid, "http://127.0.0.1:9/hook", json!({"owner": "m1"}))
            .await;
    }
    let body = |amount: i64| {
        json!({"event_type": "order.paid", "owner": "m1", "key": "order-1:paid",
               "delay": "1h", "payload": {"amount": amount}})
    };
    let (status, created) = hookd.post("/v1/events", body(1)).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(created["deliveries"], 3);
    let (status, _) = hookd.post("/v1/events", body(1)).await;
    assert_eq!(status, StatusCode::OK, "a replay of its key");
    let (status, _) = hookd.post("/v1/events", body(2)).await;
    assert_eq!(status, StatusCode::CONFLICT, "its key with another payload");

    let text = crate::helpers::scrape_metrics(&http_client(), &hookd.base).await;
    let value = |name: &str| crate::helpers::metric(&text, &format!("{name} "));
    assert_eq!(value("hookd_events_created_total"), 1.0, "{text}");
    assert_eq!(value("hookd_event_fan_out_count"), 1.0, "{text}");
    assert_eq!(value("hookd_event_fan_out_sum"), 3.0, "{text}");
}

/// A rate() alert on a counter works before the first time it counts:
/// each counter the README lists without labels, and each circuit state,
/// is exported at 0 by a process that has done nothing yet.
#[tokio::test]
async fn counters_an_operator_alerts_on_are_exported_at_zero_from_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let hookd = crate::embedded::Embedded::start(dir.path(), &[]).await;
    let text = crate::helpers::scrape_metrics(&http_client(), &hookd.base).await;
    for line in [
        "hookd_notifications_throttled_total 0",
        "hookd_notifications_held_total 0",
        "hookd_notifications_failed_circuit_open_total 0",
        "hookd_recover_restarted_total 0",
        "hookd_bulk_cancelled_total 0",
        "hookd_ordering_stranded_released_total 0",
        "hookd_circuit_transitions_total{state=\"open\"} 0",
        "hookd_circuit_transitions_total{state=\"probing\"} 0",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} missing:\n{text}");
    }
}

mod lifecycle;
mod moves;
mod requests;
