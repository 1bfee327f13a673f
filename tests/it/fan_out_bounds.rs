//! Fan-out bounds (issue #47, finding 4): one request's deliveries are
//! capped by `api.max_deliveries_per_request`, and an allowed fan-out
//! does not hold the embedded writer for its whole length: another
//! producer's creates go on beside it, and every delivery is written once,
//! a kill -9 between its transactions included.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::backends::Backend;
use crate::embedded::{Embedded, DEADLINE};
use crate::helpers::{eventually, TestApp};

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
/// time: each of its creates answers within a second (before: the
/// embedded writer was held for the whole fan-out), and the fan-out is
/// written whole, one delivery per event and endpoint.
async fn another_producers_creates_answer_within_a_second_during_a_fan_out_of_the_cap(
    backend: Backend,
) {
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
    assert!(
        slowest < Duration::from_secs(1),
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
    if backend.is_embedded() {
        let plans = backend.count("SELECT count(*) FROM fanout_plans").await;
        assert_eq!(plans, 0, "no plan is left once the fan-out is answered");
    }
}
both!(another_producers_creates_answer_within_a_second_during_a_fan_out_of_the_cap);

/// The embedded file, read beside the process that writes it.
async fn in_file(dir: &std::path::Path, sql: &str) -> i64 {
    let options = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(dir.join("hookd.db"))
        .read_only(true);
    let pool = sqlx::SqlitePool::connect_with(options).await.unwrap();
    let count = sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_string()))
        .fetch_one(&pool)
        .await
        .unwrap();
    pool.close().await;
    count
}

const STORED: &str = "SELECT count(*) FROM notifications WHERE event_id IS NOT NULL";
const PROMISED: &str = "SELECT coalesce(sum(deliveries), 0) FROM events";
const PAIRS: &str =
    "SELECT count(*) FROM (SELECT DISTINCT event_id, endpoint_id FROM notifications \
                     WHERE event_id IS NOT NULL)";

/// kill -9 between a fan-out's transactions (a plan stored, deliveries
/// still to write), then a restart on the same file: every event stored
/// gets all its deliveries, each once.
#[tokio::test]
async fn kill_9_between_a_fan_outs_transactions_then_restart_writes_every_delivery_once() {
    let dir = tempfile::tempdir().unwrap();
    // 1,000 events to 50 endpoints: 50 transactions of 1,000 deliveries,
    // a window of seconds to kill in.
    let env = [("HOOKD_API__MAX_DELIVERIES_PER_REQUEST", "50000")];
    let mut hookd = Embedded::start(dir.path(), &env).await;
    for i in 0..50 {
        hookd
            .endpoint(&format!("wide-{i}"), NOWHERE, json!({"owner": "wide"}))
            .await;
    }
    let client = crate::helpers::http_client();
    let url = format!("{}/v1/events/batch", hookd.base);
    let request = tokio::spawn(async move {
        client
            .post(url)
            .bearer_auth(crate::helpers::TOKEN)
            .json(&batch("wide", 1000))
            .send()
            .await
            .map(|r| r.status())
    });
    // Killed while a plan is stored: the fan-out's first transaction is
    // committed and its last is not.
    eventually(DEADLINE, "a fan-out between its transactions", || async {
        (in_file(dir.path(), "SELECT count(*) FROM fanout_plans").await > 0).then_some(())
    })
    .await;
    hookd.kill_9().await;
    let answered = request.await.unwrap();
    assert!(
        answered.is_err(),
        "the kill came before the answer: {answered:?}"
    );
    let (stored, promised) = (
        in_file(dir.path(), STORED).await,
        in_file(dir.path(), PROMISED).await,
    );
    println!("killed with {stored} of {promised} deliveries written");
    assert_eq!(promised, 50_000, "the events were committed whole");
    assert!(stored < promised, "the kill came between transactions");

    hookd.restart().await;
    let (stored, pairs, plans) = (
        in_file(dir.path(), STORED).await,
        in_file(dir.path(), PAIRS).await,
        in_file(dir.path(), "SELECT count(*) FROM fanout_plans").await,
    );
    assert_eq!((stored, pairs, plans), (50_000, 50_000, 0));
    // And what the API shows of one of them.
    let (_, listed) = hookd.get("/v1/events?limit=1").await;
    let id = listed["data"][0]["id"].as_str().unwrap().to_string();
    let (_, event) = hookd.get(&format!("/v1/events/{id}")).await;
    assert_eq!(event["counts"]["pending"], 50, "{event}");
}
