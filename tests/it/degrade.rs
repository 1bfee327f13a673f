//! Degrade, don't fail (#15): with a store stopped or stalled for real,
//! hookd goes on accepting, sends nothing twice, and answers in its own
//! shape. Each test asserts what arrives or what is stored, never how fast.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use tokio::sync::Notify;
use uuid::Uuid;

use crate::helpers::{
    eventually, free_port, http_client, metric, new_prefix, redis_url, scrape_metrics,
    spawn_app_with, HookdProcess, PgServer, RedisServer,
};
use crate::receiver::{Receiver, Reply};

const DEADLINE: Duration = Duration::from_secs(60);

#[sqlx::test]
async fn with_redis_stopped_creates_stop_calling_it_and_are_delivered_once_it_is_back(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let mut redis = RedisServer::start().await;
    let port = redis.port;
    let app = spawn_app_with(pool.clone(), &redis.url(), "").await;
    let receiver = Receiver::start().await;
    app.endpoint(json!({"uid": "shop", "url": receiver.url("/hook")}))
        .await;
    assert!(!app.state.service.index_breaker_open());
    redis.kill();

    let mut created = serde_json::Value::Null;
    for round in 0..20 {
        let status;
        (status, created) = app
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
    // Whether one is being delivered cannot be known: a retry waits.
    let (status, body) = app
        .post(
            &format!(
                "/v1/notifications/{}/retry",
                created["id"].as_str().unwrap()
            ),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");

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

/// The create path's breaker closes when `/readyz` finds Redis answering,
/// not only when a create comes to probe it: an idle process reported it
/// open (`hookd_index_breaker_open` 1) for as long as no create came.
#[sqlx::test]
async fn readiness_closes_the_index_breaker_once_redis_answers_without_a_create(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let mut redis = RedisServer::start().await;
    let port = redis.port;
    let app = spawn_app_with(pool.clone(), &redis.url(), "").await;
    app.endpoint(json!({"uid": "shop"})).await;
    redis.kill();
    let (status, body) = app
        .post(
            "/v1/notifications",
            json!({"endpoint": "shop", "payload": {}}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert!(app.state.service.index_breaker_open());

    let _redis = RedisServer::start_on(port).await;
    eventually(DEADLINE, "readiness to close the breaker", || async {
        let (status, _) = app.get("/readyz").await;
        assert_eq!(status, StatusCode::OK);
        (!app.state.service.index_breaker_open()).then_some(())
    })
    .await;
}

/// While Redis is down, the due index's gauges read NaN, not their last
/// reading: a review's dashboard showed 31 notifications due for the
/// whole of a 20 s outage. They read again once Redis is back.
#[sqlx::test]
async fn the_due_index_gauges_read_nan_while_redis_is_down(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let mut redis = RedisServer::start().await;
    let (_hookd, base, log) =
        HookdProcess::start_ready_on(&pool, &redis.url(), "gauges", DEADLINE).await;
    let client = http_client();
    let due = || async {
        let text = scrape_metrics(&client, &base).await;
        (text
            .lines()
            .any(|l| l.starts_with("hookd_due_notifications ")))
        .then(|| metric(&text, "hookd_due_notifications "))
    };
    eventually(DEADLINE, "a reading", || async {
        due().await.filter(|n| n.is_finite())
    })
    .await;

    redis.kill();
    eventually(DEADLINE, "NaN while Redis is down", || async {
        due().await.filter(|n| n.is_nan())
    })
    .await;
    let _redis = RedisServer::start_on(redis.port).await;
    eventually(DEADLINE, "a reading once Redis is back", || async {
        due().await.filter(|n| n.is_finite())
    })
    .await;
    std::fs::remove_file(log).ok();
}

#[sqlx::test]
async fn a_commit_whose_existing_key_cannot_be_read_stores_none_of_its_rows(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let app = spawn_app_with(pool.clone(), &redis_url(), "").await;
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

#[sqlx::test]
async fn a_delivery_whose_outcome_waits_on_a_stalled_postgres_keeps_its_lease_and_arrives_once(
    _: PgPoolOptions,
    _: PgConnectOptions,
) {
    let pg = PgServer::start().await;
    let pool = PgPoolOptions::new()
        .max_connections(8)
        .acquire_timeout(Duration::from_secs(1))
        .connect(&pg.url())
        .await
        .unwrap();
    hookd::store::postgres::PgStore::new(pool.clone())
        .migrate()
        .await
        .unwrap();
    let app = spawn_app_with(
        pool,
        &redis_url(),
        "[sender]\ntimeout_ms = 2000\n[dispatcher]\nlease_ms = 7000\n",
    )
    .await;
    let receiver = Receiver::start().await;
    let gate = Arc::new(Notify::new());
    receiver.reply("/hook", vec![Reply::Gated(gate.clone(), 200)]);
    app.endpoint(json!({"uid": "shop", "url": receiver.url("/hook"), "schedule": ["0s", "1h"]}))
        .await;
    let (status, created) = app
        .post(
            "/v1/notifications",
            json!({"endpoint": "shop", "payload": {}}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let id: Uuid = created["id"].as_str().unwrap().parse().unwrap();

    // The delivery is under way: PostgreSQL stalls before its outcome is
    // written, and the receiver answers 200.
    receiver.wait_for("/hook", 1, DEADLINE).await;
    let claimed_until = lease_expiry(&app, id)
        .await
        .expect("a delivery under way is leased");
    pg.pause();
    gate.notify_one();
    // Past the lease it was claimed with (and a claim after it), PostgreSQL
    // goes on.
    eventually(DEADLINE, "the first lease to be over", || async {
        (chrono::Utc::now().timestamp_millis() > claimed_until + 2000).then_some(())
    })
    .await;
    pg.unpause();

    eventually(
        DEADLINE,
        "the outcome written and the lease ended",
        || async {
            let (_, n) = app.get(&format!("/v1/notifications/{id}")).await;
            let settled =
                n["status"] == json!("succeeded") && lease_expiry(&app, id).await.is_none();
            settled.then_some(())
        },
    )
    .await;
    assert_eq!(
        receiver.received("/hook").len(),
        1,
        "the lease was extended while the outcome waited: nothing claimed it again"
    );
}

/// When `id`'s lease ends (unix ms: a claim's lease carries a fraction
/// that only tells it from others'), if it is leased.
async fn lease_expiry(app: &crate::helpers::TestApp, id: Uuid) -> Option<i64> {
    let client = redis::Client::open(redis_url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let expiry: Option<f64> = redis::cmd("ZSCORE")
        .arg(&app.index().keys().inflight)
        .arg(hookd::due::redis::member(&id))
        .query_async(&mut conn)
        .await
        .unwrap();
    expiry.map(|ms| ms.floor() as i64)
}

#[sqlx::test]
async fn a_retry_of_a_notification_being_delivered_answers_409_in_flight(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let app = spawn_app_with(pool, &redis_url(), "").await;
    let receiver = Receiver::start().await;
    let gate = Arc::new(Notify::new());
    receiver.reply(
        "/hook",
        vec![Reply::Gated(gate.clone(), 500), Reply::status(200)],
    );
    app.endpoint(json!({"uid": "shop", "url": receiver.url("/hook"), "schedule": ["0s"]}))
        .await;
    let id = app.notify(json!({"endpoint": "shop", "payload": {}})).await;
    let retry = format!("/v1/notifications/{id}/retry");

    receiver.wait_for("/hook", 1, DEADLINE).await;
    let (status, body) = app.post(&retry, json!({})).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], json!("in_flight"));

    // The attempt fails (its only one) and its lease ends: now a retry is
    // taken and starts a new series.
    gate.notify_one();
    eventually(DEADLINE, "a retry to be taken", || async {
        let (status, body) = app.post(&retry, json!({})).await;
        match status {
            StatusCode::OK => Some(()),
            StatusCode::CONFLICT => {
                assert_eq!(body["error"]["code"], json!("in_flight"));
                None
            }
            other => panic!("{other}: {body}"),
        }
    })
    .await;
    receiver.wait_for("/hook", 2, DEADLINE).await;
    assert_eq!(
        receiver.received("/hook").len(),
        2,
        "one attempt per series: the refused retry sent nothing"
    );
}

#[sqlx::test]
async fn a_retry_that_a_claim_overtakes_leaves_the_notification_in_flight_once(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    // No dispatcher in this process: the test claims, as another
    // process's dispatcher would.
    let app = spawn_app_with(
        pool.clone(),
        &redis_url(),
        "[dispatcher]\nenabled = false\n",
    )
    .await;
    app.endpoint(json!({"uid": "shop", "url": "http://127.0.0.1:9/hook"}))
        .await;
    let id = app.notify(json!({"endpoint": "shop", "payload": {}})).await;
    let uuid: Uuid = id.parse().unwrap();

    // The retry finds the notification not leased, then waits for its row,
    // which this transaction holds; meanwhile a dispatcher claims it.
    let mut holder = pool.begin().await.unwrap();
    sqlx::query("SELECT 1 FROM notifications WHERE id = $1 FOR UPDATE")
        .bind(uuid)
        .execute(&mut *holder)
        .await
        .unwrap();
    let retry = format!("/v1/notifications/{id}/retry");
    let ((status, body), ()) = tokio::join!(app.post(&retry, json!({})), async {
        eventually(DEADLINE, "the retry waiting for the row", || async {
            let waiting: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM pg_stat_activity \
                 WHERE datname = current_database() AND wait_event_type = 'Lock'",
            )
            .fetch_one(&pool)
            .await
            .unwrap();
            (waiting > 0).then_some(())
        })
        .await;
        assert_eq!(claim_due(&app).await, vec![uuid], "the dispatcher's claim");
        holder.rollback().await.unwrap();
    });
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["status"], json!("pending"));

    // The claim's delivery is the new series' first attempt: the retry did
    // not put the notification due beside its lease, for a second claim
    // to send it again at the same time.
    assert_eq!(app.index().due_at(uuid).await.unwrap(), None);
    assert!(lease_expiry(&app, uuid).await.is_some(), "still in flight");
    let again = claim_due(&app).await;
    assert!(again.is_empty(), "claimed twice: {again:?}");
}

/// What a dispatcher's claim takes now (anything due within the hour),
/// leased for ten minutes.
async fn claim_due(app: &crate::helpers::TestApp) -> Vec<Uuid> {
    let now = chrono::Utc::now();
    let claim = app
        .index()
        .claim(
            now,
            now + chrono::Duration::hours(1),
            10,
            now + chrono::Duration::minutes(10),
        )
        .await
        .unwrap();
    claim.ids
}

#[sqlx::test]
async fn a_failed_notification_is_retried_while_its_last_lease_is_still_being_released(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    // The recorder commits an attempt, then ends its lease in Redis: a
    // producer that sees `failed` in between and retries must not be told
    // the notification is being delivered.
    let app = spawn_app_with(pool, &redis_url(), "").await;
    let receiver = Receiver::start().await;
    receiver.reply("/hook", vec![Reply::status(500), Reply::status(200)]);
    app.endpoint(json!({"uid": "shop", "url": receiver.url("/hook"), "schedule": ["0s"]}))
        .await;
    let id = app.notify(json!({"endpoint": "shop", "payload": {}})).await;
    eventually(DEADLINE, "the notification to fail", || async {
        let (_, got) = app.get(&format!("/v1/notifications/{id}")).await;
        (got["status"] == "failed").then_some(())
    })
    .await;
    // Its last attempt's lease, not released yet.
    let uuid: uuid::Uuid = id.parse().unwrap();
    app.index()
        .add_leased(&[uuid], chrono::Utc::now() + chrono::Duration::seconds(60))
        .await
        .unwrap();

    let (status, body) = app
        .post(&format!("/v1/notifications/{id}/retry"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["status"], json!("pending"));
}

#[sqlx::test]
async fn sigterm_while_postgres_is_stalled_still_exits_0(_: PgPoolOptions, _: PgConnectOptions) {
    let pg = PgServer::start_migrated().await;
    let listen = format!("127.0.0.1:{}", free_port());
    let log = std::env::temp_dir().join(format!("hookd-stalled-{}.log", Uuid::now_v7()));
    // A query to a stalled PostgreSQL waits as long as the stall (or the
    // 10-minute acquire timeout): only the shutdown's own limit ends it.
    let env = [
        ("HOOKD_DATABASE__ACQUIRE_TIMEOUT_MS", "600000"),
        ("HOOKD_SERVER__SHUTDOWN_TIMEOUT_MS", "2000"),
    ];
    let mut hookd =
        HookdProcess::start_logged(&pg.url(), &redis_url(), &new_prefix(), &env, &listen, &log);
    HookdProcess::wait_ready(&format!("http://{listen}"), DEADLINE).await;

    pg.pause();
    // Housekeeping queries PostgreSQL every second: one now waits on it.
    eventually(
        DEADLINE,
        "a query waiting on the stalled PostgreSQL",
        || async { pg.has_unread_requests().then_some(()) },
    )
    .await;
    hookd.signal("TERM");
    let code = hookd.wait(DEADLINE).await;
    pg.unpause();
    let _ = std::fs::remove_file(&log);
    assert_eq!(code, Some(0), "shutdown did not wait for the stalled query");
}
