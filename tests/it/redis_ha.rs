//! Redis on a bad day, with real processes: the `due` set lost alone, a
//! Redis that refuses writes because it is full, and a Sentinel failover
//! with the master killed mid-traffic. Each counts what the receiver got;
//! how fast it got there is measured in the benchmark, not here.

mod sentinel;

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use crate::helpers::{eventually, free_port, spawn_app_with, RedisServer, TestApp};
use crate::receiver::{Receiver, Reply};

/// Long enough for a loaded CI machine, healing included: alone, this
/// debug build heals and delivers 3,000 in about 6 s (1.3 s to the first,
/// then about 750/s), and beside the rest of the suite on 2 cores once
/// took over 25 s.
const DEADLINE: Duration = Duration::from_secs(60);

async fn redis(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

/// `CONFIG SET maxmemory <bytes>`: "1" fills Redis (every write refused
/// with OOM), "0" lifts the limit.
fn set_maxmemory(bytes: &str) -> redis::Cmd {
    redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg(bytes)
        .to_owned()
}

/// Creates `count` notifications for `shop`, in batches of 500; returns
/// how many were accepted (201).
async fn submit(app: &TestApp, count: usize, delay: &str) -> usize {
    let mut accepted = 0;
    for start in (0..count).step_by(500) {
        let items: Vec<Value> = (start..count.min(start + 500))
            .map(|i| json!({"endpoint": "shop", "payload": {"i": i}, "delay": delay}))
            .collect();
        let (status, body) = app
            .post("/v1/notifications/batch", json!({"notifications": items}))
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        accepted += body["data"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|item| item["status"] == 201)
            .count();
    }
    accepted
}

async fn shop(app: &TestApp, receiver: &Receiver) {
    app.endpoint(json!({"uid": "shop", "url": receiver.url("/hook")}))
        .await;
    eventually(DEADLINE, "the index marker", || async {
        app.index().is_indexed().await.ok().filter(|i| *i)
    })
    .await;
}

#[sqlx::test]
async fn losing_the_due_set_alone_is_noticed_and_healed(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let server = RedisServer::start().await;
    let app = spawn_app_with(pool, &server.url(), "").await;
    let receiver = Receiver::start().await;
    shop(&app, &receiver).await;
    assert_eq!(submit(&app, 2000, "2s").await, 2000);
    // What eviction, a mistaken DEL or a replica that missed the writes
    // does: `due` is gone, the marker stays.
    let mut conn = redis(&server.url()).await;
    let deleted: i64 = redis::cmd("DEL")
        .arg(&app.index().keys().due)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(deleted, 1);
    let (distinct, total) = receiver.wait_distinct("/hook", 2000, DEADLINE).await;
    assert_eq!((distinct, total), (2000, 2000));
}

#[sqlx::test]
async fn a_full_redis_refuses_writes_yet_every_create_is_accepted_and_delivered(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let server = RedisServer::start_with(free_port(), &["--maxmemory-policy", "noeviction"]).await;
    let app = spawn_app_with(pool, &server.url(), "").await;
    let receiver = Receiver::start().await;
    shop(&app, &receiver).await;
    // Redis full: its memory limit below what it holds, so every write is
    // refused with OOM until it has room again.
    let mut conn = redis(&server.url()).await;
    let _: () = set_maxmemory("1").query_async(&mut conn).await.unwrap();
    let refused = app
        .state
        .due
        .add(&[(uuid::Uuid::now_v7(), chrono::Utc::now())])
        .await;
    assert!(
        refused.is_err_and(|e| e.to_string().contains("OOM")),
        "Redis took a write while full"
    );
    assert_eq!(submit(&app, 3000, "0s").await, 3000);
    let _: () = set_maxmemory("0").query_async(&mut conn).await.unwrap();
    let (distinct, total) = receiver.wait_distinct("/hook", 3000, DEADLINE).await;
    assert_eq!((distinct, total), (3000, 3000));
}

#[sqlx::test]
async fn a_retry_that_a_full_redis_could_not_move_is_sent_once_redis_has_room(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let server = RedisServer::start_with(free_port(), &["--maxmemory-policy", "noeviction"]).await;
    let app = spawn_app_with(pool, &server.url(), "").await;
    let receiver = Receiver::start().await;
    receiver.reply("/hook", vec![Reply::status(500), Reply::status(200)]);
    app.endpoint(json!({"uid": "shop", "url": receiver.url("/hook"), "schedule": ["0s", "1h"]}))
        .await;
    let id = app.notify(json!({"endpoint": "shop", "payload": {}})).await;
    // Its first attempt fails; the next one is an hour away, in `due`.
    let path = format!("/v1/notifications/{id}");
    eventually(DEADLINE, "the first attempt recorded", || async {
        let (_, n) = app.get(&path).await;
        (n["attempts"] == json!(1) && n["leased"] == json!(false)).then_some(())
    })
    .await;

    // A retry now, while Redis refuses writes: PostgreSQL takes it, the
    // index cannot move it.
    let mut conn = redis(&server.url()).await;
    let _: () = set_maxmemory("1").query_async(&mut conn).await.unwrap();
    let (status, retried) = app.post(&format!("{path}/retry"), json!({})).await;
    assert_eq!(status, StatusCode::OK, "{retried}");
    let _: () = set_maxmemory("0").query_async(&mut conn).await.unwrap();

    receiver.wait_for("/hook", 2, DEADLINE).await;
    eventually(DEADLINE, "the retry recorded", || async {
        let (_, n) = app.get(&path).await;
        (n["status"] == json!("succeeded")).then_some(())
    })
    .await;
}

#[sqlx::test]
async fn a_row_lost_from_redis_is_found_behind_a_hundred_thousand_that_deferrals_left_overdue(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let server = RedisServer::start().await;
    let app = spawn_app_with(pool.clone(), &server.url(), "").await;
    let receiver = Receiver::start().await;
    shop(&app, &receiver).await;
    // What a dispatcher leaves behind a disabled endpoint or one at its cap:
    // rows overdue in PostgreSQL, due later in Redis (a deferral re-times a
    // row in Redis alone). These are due in an hour in Redis.
    let parked = 100_000;
    for start in (0..parked).step_by(1000) {
        let items: Vec<Value> = (start..start + 1000)
            .map(|i| json!({"endpoint": "shop", "payload": {"parked": i}, "delay": "1h"}))
            .collect();
        let (status, body) = app
            .post("/v1/notifications/batch", json!({"notifications": items}))
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    sqlx::query("UPDATE notifications SET next_attempt_at = now() - interval '10 minutes'")
        .execute(&pool)
        .await
        .unwrap();
    // A row whose indexing was lost (a crash between its commit and its
    // ZADD): due now in PostgreSQL, in neither Redis set.
    let (status, lost) = app
        .post(
            "/v1/notifications",
            json!({"endpoint": "shop", "payload": {"lost": true}, "delay": "1h"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{lost}");
    let id: uuid::Uuid = lost["id"].as_str().unwrap().parse().unwrap();
    app.state.due.remove(&[id]).await.unwrap();
    sqlx::query("UPDATE notifications SET next_attempt_at = now() WHERE id = $1")
        .bind(id)
        .execute(&pool)
        .await
        .unwrap();
    // The sweep walks everything overdue a page (5,000) every two seconds:
    // 40 s to get past the parked rows. It finds the lost one first.
    let (distinct, total) = receiver.wait_distinct("/hook", 1, DEADLINE).await;
    assert_eq!((distinct, total), (1, 1));
    let arrived = receiver.received("/hook");
    assert_eq!(
        arrived[0].header("webhook-id"),
        Some(id.to_string().as_str())
    );
}
