//! Fan-out bounds (issue #47, finding 4): one request's deliveries are
//! capped by `api.max_deliveries_per_request` (one 70 KB batch once made
//! 200,000 deliveries in one commit and held the embedded writer 20 s);
//! an allowed fan-out does not hold the embedded writer for its whole
//! length (it is written 1,000 deliveries a transaction), another
//! producer's creates go on beside it, and every delivery is written once,
//! a kill -9 between its transactions included.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::backends::Backend;
use crate::embedded::{Embedded, DEADLINE};
use crate::helpers::{eventually, metric, TestApp};

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
    if backend.is_embedded() {
        // SQLite wrote it 1,000 deliveries a transaction: the event's
        // transaction and nine after it, each holding the writer for
        // about a tenth of the whole (BENCHMARKS.md has the figures).
        let metrics = crate::helpers::scrape_metrics(&app.client, &app.base).await;
        let transactions = metric(&metrics, "hookd_fan_out_transaction_seconds_count");
        let held = metric(&metrics, "hookd_fan_out_transaction_seconds_sum");
        println!(
            "{transactions} transactions after the first, {:.1} ms each on average",
            held * 1000.0 / transactions.max(1.0)
        );
        assert!(
            transactions >= 9.0,
            "{transactions} transactions after the first"
        );
    }
}
both!(another_producers_creates_go_on_beside_a_fan_out_of_the_cap);

/// A count from the embedded file, read beside the process that writes it.
async fn in_file(dir: &std::path::Path, sql: &str) -> i64 {
    in_file_value(dir, sql).await.unwrap_or_default()
}

/// One value (or none) from the embedded file beside hookd.
async fn in_file_value<T>(dir: &std::path::Path, sql: &str) -> Option<T>
where
    T: for<'r> sqlx::Decode<'r, sqlx::Sqlite> + sqlx::Type<sqlx::Sqlite> + Send + Unpin,
{
    let options = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(dir.join("hookd.db"))
        .read_only(true);
    let pool = sqlx::SqlitePool::connect_with(options).await.unwrap();
    let value = sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_string()))
        .fetch_optional(&pool)
        .await
        .unwrap();
    pool.close().await;
    value
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
    let (mut hookd, request) = wide_fan_out(dir.path()).await;
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
    assert_eq!(written(dir.path()).await, (50_000, 50_000, 0));
    // And what the API shows of one of them.
    let (_, listed) = hookd.get("/v1/events?limit=1").await;
    let id = listed["data"][0]["id"].as_str().unwrap().to_string();
    let (_, event) = hookd.get(&format!("/v1/events/{id}")).await;
    assert_eq!(event["counts"]["pending"], 50, "{event}");
}

/// A cancel of an event while its fan-out is still being written (its
/// plan stored, deliveries still to come): every delivery of the event
/// ends cancelled, the ones the fan-out had not written yet included, and
/// the fan-out still writes each delivery once.
#[tokio::test]
async fn a_cancel_during_a_fan_out_reaches_the_deliveries_still_planned() {
    let dir = tempfile::tempdir().unwrap();
    let (hookd, request) = wide_fan_out(dir.path()).await;
    let event = planned_event(dir.path()).await;
    let (status, answer) = hookd
        .post(&format!("/v1/events/{event}/cancel"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["cancelled"], 50, "{answer}");
    assert_eq!(request.await.unwrap().unwrap(), StatusCode::OK);

    let of_event = |what: &str| {
        format!(
            "SELECT count(*) FROM notifications WHERE hex(event_id) = upper('{}'){what}",
            event.simple()
        )
    };
    let (all, cancelled) = (
        in_file(dir.path(), &of_event("")).await,
        in_file(dir.path(), &of_event(" AND status = 'cancelled'")).await,
    );
    assert_eq!(
        (all, cancelled),
        (50, 50),
        "the event's deliveries, and those cancelled"
    );
    assert_eq!(written(dir.path()).await, (50_000, 50_000, 0));
}

/// hookd with 50 endpoints of owner `wide`, and a batch of 1,000 events
/// fanning out to all of them (50,000 deliveries: 50 transactions, a
/// window of seconds) under way; the batch's answer (or the error of a
/// process killed first) comes from the task.
async fn wide_fan_out(
    dir: &std::path::Path,
) -> (
    Embedded,
    tokio::task::JoinHandle<reqwest::Result<StatusCode>>,
) {
    let env = [("HOOKD_API__MAX_DELIVERIES_PER_REQUEST", "50000")];
    let hookd = Embedded::start(dir, &env).await;
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
    (hookd, request)
}

/// What the file holds of `wide_fan_out`'s deliveries: (stored, distinct
/// event and endpoint pairs, plans left).
async fn written(dir: &std::path::Path) -> (i64, i64, i64) {
    (
        in_file(dir, STORED).await,
        in_file(dir, PAIRS).await,
        in_file(dir, "SELECT count(*) FROM fanout_plans").await,
    )
}

/// The event of the last plan stored: written out last, 49 transactions
/// after the first, so still planned when the caller acts on it.
async fn planned_event(dir: &std::path::Path) -> uuid::Uuid {
    eventually(DEADLINE, "a fan-out between its transactions", || async {
        let hex: Option<String> = in_file_value(
            dir,
            "SELECT lower(hex(event_id)) FROM fanout_plans ORDER BY rowid DESC LIMIT 1",
        )
        .await;
        hex.map(|hex| uuid::Uuid::parse_str(&hex).unwrap())
    })
    .await
}

/// An endpoint deleted while a fan-out to it is being written: every
/// delivery to it ends cancelled, the ones still planned included.
#[tokio::test]
async fn an_endpoint_deleted_during_a_fan_out_has_none_of_its_deliveries_left_pending() {
    let dir = tempfile::tempdir().unwrap();
    let (hookd, request) = wide_fan_out(dir.path()).await;
    planned_event(dir.path()).await;
    let (status, answer) = hookd
        .call(reqwest::Method::DELETE, "/v1/endpoints/wide-49", None)
        .await;
    assert!(status.is_success(), "{status} {answer}");
    assert_eq!(request.await.unwrap().unwrap(), StatusCode::OK);

    let to_deleted =
        "SELECT count(*) FROM notifications n JOIN endpoints e ON e.id = n.endpoint_id \
                      WHERE e.uid = 'wide-49'";
    let (all, pending) = (
        in_file(dir.path(), to_deleted).await,
        in_file(
            dir.path(),
            &format!("{to_deleted} AND n.status = 'pending'"),
        )
        .await,
    );
    assert_eq!(
        (all, pending),
        (1000, 0),
        "deliveries to the deleted endpoint, and those pending"
    );
}
