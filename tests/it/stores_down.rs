//! The API with a store down: PostgreSQL down answers 503 quickly; Redis down
//! still accepts (PostgreSQL has the notification) and marks it for indexing.

use std::time::{Duration, Instant};

use hookd::due::redis::RedisIndex;
use hookd::startup::{App, Role};
use hookd::store::postgres::PgStore;
use reqwest::StatusCode;
use serde_json::json;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use uuid::Uuid;

use crate::helpers::{free_port, redis_url, spawn_app_with, test_settings, RedisServer, TOKEN};

#[sqlx::test]
async fn with_redis_down_notifications_are_still_accepted_and_marked_for_indexing(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let mut redis = RedisServer::start().await;
    let app = spawn_app_with(pool.clone(), &redis.url(), "").await;
    app.endpoint(json!({"uid": "shop"})).await;
    redis.kill();

    let (status, created) = app
        .post(
            "/v1/notifications",
            json!({"endpoint": "shop", "payload": {"order": 1}}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let id: Uuid = created["id"].as_str().unwrap().parse().unwrap();
    let needs_index: bool =
        sqlx::query_scalar("SELECT needs_index FROM notifications WHERE id = $1")
            .bind(id)
            .fetch_one(&pool)
            .await
            .unwrap();
    assert!(needs_index);

    // Ready means "can accept": Redis down only degrades it.
    let (status, ready) = app.get("/readyz").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(ready["status"], json!("degraded"));
    assert_eq!(ready["redis"], json!("unreachable"));
    assert_eq!(ready["postgres"], json!("ok"));
}

#[tokio::test]
async fn with_postgres_down_the_api_answers_503_quickly_and_readyz_says_so() {
    // Nothing listens on this port: to hookd, PostgreSQL is down.
    let url = format!("postgres://postgres@127.0.0.1:{}/hookd", free_port());
    let pool = PgPoolOptions::new()
        .acquire_timeout(Duration::from_secs(1))
        .connect_lazy(&url)
        .unwrap();
    let settings = test_settings(&redis_url(), "");
    let due = RedisIndex::new(&settings.redis).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let app = App::with_parts(
        settings,
        PgStore::new(pool),
        std::sync::Arc::new(due),
        listener,
        Role::All,
    );
    let base = format!("http://{}", app.local_addr());
    tokio::spawn(app.run(std::future::pending()));
    let client = crate::helpers::http_client();

    let started = Instant::now();
    let response = client
        .post(format!("{base}/v1/notifications"))
        .bearer_auth(TOKEN)
        .json(&json!({"endpoint": "shop", "payload": {}}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], json!("unavailable"));
    assert!(
        !body.to_string().contains("127.0.0.1"),
        "no internals leak: {body}"
    );

    let response = client.get(format!("{base}/readyz")).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["postgres"], json!("unreachable"));
    // Redis answers; once no beat has reached the database for 15 s the
    // index pauses (`domain::index_owner`), and the warnings say why.
    let warned = body["warnings"].to_string();
    assert!(
        body["redis"] == json!("ok")
            || (body["redis"] == json!("paused") && warned.contains("has not told the database")),
        "{body}"
    );
}
