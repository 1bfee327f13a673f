//! A key row left without its notification (a crash between retention's
//! drop of a day and its deletion of the day's key rows, or a purge by an
//! older hookd, docs/partitioning.md): the key is taken over by the next
//! create, as a key freed by retention always could be, and by the next
//! recording of an operator event with that key. PostgreSQL only:
//! the embedded store keeps keys on the notification rows.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use uuid::Uuid;

use crate::helpers::{eventually, redis_url, spawn_app, spawn_app_with};
use crate::receiver::{Receiver, Reply};

const DEADLINE: Duration = Duration::from_secs(15);

#[sqlx::test]
async fn a_key_whose_notification_is_gone_is_taken_over_without_failing_its_batch(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let app = spawn_app(pool.clone()).await;
    let endpoint = app.endpoint(json!({"uid": "shop"})).await;
    let endpoint_id: Uuid = endpoint["id"].as_str().unwrap().parse().unwrap();
    let gone = hookd::domain::id::new_id();
    sqlx::query("INSERT INTO notification_keys (key, endpoint_id, id) VALUES ('stale', $1, $2)")
        .bind(endpoint_id)
        .bind(gone)
        .execute(&pool)
        .await
        .unwrap();

    // The stale key and others at the same moment: one group commit or a
    // few, none failing. Two creates of the stale key: one takes it over,
    // the other gets the one that did.
    let body = |key: Option<&str>, n: i32| match key {
        Some(key) => json!({"endpoint": "shop", "key": key, "payload": {"n": n}}),
        None => json!({"endpoint": "shop", "payload": {"n": n}}),
    };
    let (stale_a, stale_b, fresh, plain) = tokio::join!(
        app.post("/v1/notifications", body(Some("stale"), 1)),
        app.post("/v1/notifications", body(Some("stale"), 1)),
        app.post("/v1/notifications", body(Some("fresh"), 2)),
        app.post("/v1/notifications", body(None, 3)),
    );
    assert_eq!(fresh.0, StatusCode::CREATED, "{}", fresh.1);
    assert_eq!(plain.0, StatusCode::CREATED, "{}", plain.1);
    let mut statuses = [stale_a.0, stale_b.0];
    statuses.sort();
    assert_eq!(
        statuses,
        [StatusCode::OK, StatusCode::CREATED],
        "{stale_a:?} {stale_b:?}"
    );
    assert_eq!(
        stale_a.1["id"], stale_b.1["id"],
        "both name the one that took the key"
    );

    let taken: Uuid = stale_a.1["id"].as_str().unwrap().parse().unwrap();
    let key_row: Uuid = sqlx::query_scalar(
        "SELECT id FROM notification_keys WHERE key = 'stale' AND endpoint_id = $1",
    )
    .bind(endpoint_id)
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(key_row, taken);
    // Taken over, the key is an existing key like any other.
    let (status, again) = app.post("/v1/notifications", body(Some("stale"), 1)).await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(again["id"], stale_a.1["id"]);
}

#[sqlx::test]
async fn an_operator_event_whose_key_row_is_left_without_its_event_is_still_reported(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let operator = Receiver::start().await;
    let receiver = Receiver::start().await;
    receiver.reply("/down", vec![Reply::body(503, "maintenance")]);
    let overrides = format!(
        "[operator]\nurl = \"{}\"\nsecret = \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"\n",
        operator.url("/ops")
    );
    let app = spawn_app_with(pool.clone(), &redis_url(), &overrides).await;
    app.endpoint(json!({"uid": "shop", "url": receiver.url("/down"), "schedule": ["0s"]}))
        .await;
    // Due in a second: its event's key row is left stale before it fails.
    let (status, created) = app
        .post(
            "/v1/notifications",
            json!({"endpoint": "shop", "payload": {}, "delay": "1s"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let id = created["id"].as_str().unwrap();
    let operator_endpoint: Uuid = "00000000-0000-7000-8000-00000000000f".parse().unwrap();
    let event_key = format!("notification.failed:{id}:1");
    let gone = hookd::domain::id::new_id();
    eventually(DEADLINE, "the operator endpoint", || async {
        sqlx::query("INSERT INTO notification_keys (key, endpoint_id, id) VALUES ($1, $2, $3)")
            .bind(&event_key)
            .bind(operator_endpoint)
            .bind(gone)
            .execute(&pool)
            .await
            .ok()
    })
    .await;

    eventually(DEADLINE, "the notification.failed event", || async {
        operator
            .received("/ops")
            .iter()
            .any(|r| r.header("hookd-event-type") == Some("notification.failed"))
            .then_some(())
    })
    .await;
    let key_row: Uuid =
        sqlx::query_scalar("SELECT id FROM notification_keys WHERE key = $1 AND endpoint_id = $2")
            .bind(&event_key)
            .bind(operator_endpoint)
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_ne!(key_row, gone, "the key row was taken over by the event");
}
