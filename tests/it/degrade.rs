//! Degrade, don't fail (#15): with a store stopped or stalled for real,
//! hookd goes on accepting, sends nothing twice, and answers in its own
//! shape. Each test asserts what arrives or what is stored, never how fast.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;
use sqlx::PgPool;

use crate::helpers::{eventually, spawn_app_with, RedisServer};
use crate::receiver::Receiver;

const DEADLINE: Duration = Duration::from_secs(60);

#[sqlx::test]
async fn with_redis_stopped_creates_stop_calling_it_and_are_delivered_once_it_is_back(
    pool: PgPool,
) {
    let mut redis = RedisServer::start().await;
    let port = redis.port;
    let app = spawn_app_with(pool.clone(), &redis.url(), "").await;
    let receiver = Receiver::start().await;
    app.endpoint(json!({"uid": "shop", "url": receiver.url("/hook")}))
        .await;
    assert!(!app.state.service.index_breaker_open());
    redis.kill();

    for round in 0..20 {
        let (status, created) = app
            .post(
                "/v1/notifications",
                json!({"endpoint": "shop", "payload": {"round": round}}),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{created}");
    }
    assert!(
        app.state.service.index_breaker_open(),
        "the first failure opened the breaker"
    );
    let marked: i64 = sqlx::query_scalar("SELECT count(*) FROM notifications WHERE needs_index")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(marked, 20, "every create left its row to the indexer");

    let _redis = RedisServer::start_on(port).await;
    // Creates go on; one after the back-off probes Redis in the background,
    // and the breaker closes when it answers.
    let created = AtomicUsize::new(20);
    eventually(DEADLINE, "the breaker to close", || async {
        let (status, body) = app
            .post(
                "/v1/notifications",
                json!({"endpoint": "shop", "payload": {"after": true}}),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        created.fetch_add(1, Ordering::SeqCst);
        (!app.state.service.index_breaker_open()).then_some(())
    })
    .await;
    let created = created.load(Ordering::SeqCst);
    let (distinct, total) = receiver.wait_distinct("/hook", created, DEADLINE).await;
    assert_eq!((distinct, total), (created, created), "each once");
}

#[sqlx::test]
async fn a_commit_whose_existing_key_cannot_be_read_stores_none_of_its_rows(pool: PgPool) {
    let app = spawn_app_with(pool.clone(), &crate::helpers::redis_url(), "").await;
    app.endpoint(json!({"uid": "shop"})).await;
    let (status, body) = app
        .post(
            "/v1/notifications",
            json!({"endpoint": "shop", "key": "order-1", "payload": {"order": 1}}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    // The stored row no longer decodes: reading it after the insert fails.
    sqlx::query("UPDATE notifications SET headers = '[1]'::jsonb WHERE key = 'order-1'")
        .execute(&pool)
        .await
        .unwrap();

    let (status, body) = app
        .post(
            "/v1/notifications/batch",
            json!({"notifications": [
                {"endpoint": "shop", "key": "order-2", "payload": {"order": 2}},
                {"endpoint": "shop", "payload": {"order": 3}},
                {"endpoint": "shop", "key": "order-1", "payload": {"order": 1}},
            ]}),
        )
        .await;
    assert!(status.is_server_error(), "{status}: {body}");
    let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM notifications")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(
        stored, 1,
        "the failed answer is true: neither the new key nor the row without one was committed"
    );
}
