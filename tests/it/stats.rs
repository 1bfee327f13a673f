//! `GET /v1/stats` (the console's overview) on both backends: counts of
//! real deliveries to a real receiver, filtered by endpoint and owner,
//! the windows and their steps, bad parameters; an owner's counts through
//! an owner change and a delete; in server mode, two processes sharing one
//! database add up without doubling, per endpoint and per owner. What the
//! store itself counts, samples and forgets is the conformance suite's
//! (`conformance::stats`), for every backend and wrapper.

use std::time::Duration;

use chrono::Utc;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use crate::backends::Backend;
use crate::helpers::{eventually, new_prefix, redis_url, test_settings_with_prefix, TestApp};
use crate::receiver::{Receiver, Reply};

const DEADLINE: Duration = Duration::from_secs(20);

fn sum(column: &Value) -> i64 {
    column
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .sum()
}

/// The overview for `query`, once its totals say `delivered` and `failed`
/// (read again then: its parts are read side by side, and one read
/// during the last commit may have seen it and another not).
async fn stats_once(app: &TestApp, query: &str, delivered: i64, failed: i64) -> Value {
    let path = format!("/v1/stats?{query}");
    eventually(DEADLINE, &format!("{path} to count"), || async {
        let (status, stats) = app.get(&path).await;
        assert_eq!(status, StatusCode::OK, "{stats}");
        let totals = &stats["totals"];
        (totals["delivered"] == json!(delivered) && totals["failed"] == json!(failed)).then_some(())
    })
    .await;
    app.get(&path).await.1
}

async fn attempts_of(app: &TestApp, query: &str) -> (i64, usize) {
    let (status, stats) = app.get(&format!("/v1/stats?{query}")).await;
    assert_eq!(status, StatusCode::OK, "{query}: {stats}");
    let failing = stats["failing_endpoints"].as_array().unwrap().len();
    (stats["totals"]["attempts"].as_i64().unwrap(), failing)
}

async fn the_overview_counts_real_deliveries_and_failures_by_endpoint_and_owner(backend: Backend) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    receiver.reply("/fail", vec![Reply::status(500)]);
    app.endpoint(json!({"uid": "good", "owner": "shop-a", "url": receiver.url("/ok")}))
        .await;
    let bad = app
        .endpoint(
            json!({"uid": "bad", "owner": "shop-b", "url": receiver.url("/fail"),
            "schedule": ["0s", "100ms"]}),
        )
        .await;
    for i in 0..3 {
        app.notify(json!({"endpoint": "good", "payload": {"i": i}}))
            .await;
    }
    app.notify(json!({"endpoint": "bad", "payload": {}})).await;

    let hour = stats_once(&app, "", 3, 1).await;
    assert_eq!(hour["window"], "1h");
    assert_eq!(hour["step_seconds"], 60);
    let totals = &hour["totals"];
    assert_eq!(totals["attempts"], 5, "{hour}");
    assert_eq!(totals["failed_attempts"], 2);
    assert_eq!(totals["success_ratio"], 0.6);
    for column in ["delivered", "failed", "attempts", "failed_attempts"] {
        assert_eq!(hour[column].as_array().unwrap().len(), 60, "{column}");
        assert_eq!(json!(sum(&hour[column])), totals[column], "{column}");
    }
    // Every attempt was due at once: its lateness is small, and counted.
    let p99: Vec<i64> = hour["lateness_p99_ms"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_i64)
        .collect();
    assert!(!p99.is_empty(), "{hour}");
    assert!(p99.iter().all(|ms| *ms < 10_000), "{p99:?}");
    let ratios: Vec<f64> = hour["success_ratio"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_f64)
        .collect();
    assert!(!ratios.is_empty() && ratios.iter().all(|r| (0.0..=1.0).contains(r)));
    // The backlog was sampled when hookd started.
    assert!(
        hour["pending"]
            .as_array()
            .unwrap()
            .iter()
            .any(Value::is_i64),
        "{hour}"
    );
    assert_eq!(
        hour["failing_endpoints"],
        json!([{"endpoint_id": bad["id"], "url": receiver.url("/fail"),
                "failed_attempts": 2, "attempts": 2}])
    );

    // A day: the same counts in 144 steps of ten minutes.
    let day = stats_once(&app, "window=24h", 3, 1).await;
    assert_eq!(day["step_seconds"], 600);
    assert_eq!(day["time"].as_array().unwrap().len(), 144);
    assert_eq!(sum(&day["attempts"]), 5);
    assert_eq!(day["failing_endpoints"], hour["failing_endpoints"]);

    // Filtered: by endpoint (uid or id), by owner, by both.
    let bad_id = bad["id"].as_str().unwrap();
    assert_eq!(attempts_of(&app, "endpoint=good").await, (3, 0));
    assert_eq!(
        attempts_of(&app, &format!("endpoint={bad_id}")).await,
        (2, 1)
    );
    assert_eq!(attempts_of(&app, "owner=shop-b&window=24h").await, (2, 1));
    assert_eq!(attempts_of(&app, "owner=shop-a").await, (3, 0));
    assert_eq!(attempts_of(&app, "owner=shop-a&endpoint=bad").await, (0, 0));
    assert_eq!(attempts_of(&app, "endpoint=nobody").await, (0, 0));
    assert_eq!(attempts_of(&app, "owner=nobody").await, (0, 0));
    // The backlog sample is every endpoint's: a filtered view has none.
    for filter in ["owner=shop-a", "endpoint=good"] {
        let (_, view) = app.get(&format!("/v1/stats?{filter}")).await;
        let pending = view["pending"].as_array().unwrap();
        assert!(pending.iter().all(Value::is_null), "{filter}: {view}");
    }
}
both!(the_overview_counts_real_deliveries_and_failures_by_endpoint_and_owner);

/// An owner's counts are its endpoints' attempts recorded while they were
/// its (`owner_minute_stats`): an endpoint given to another owner leaves
/// its past with the old one, a deleted endpoint leaves its past too; the
/// failing endpoints an owner sees ranked are those it has now.
async fn an_owners_overview_counts_what_its_endpoints_did_while_they_were_its(backend: Backend) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    receiver.reply("/fail", vec![Reply::status(500)]);
    for (uid, owner, path) in [
        ("kept", Some("shop-a"), "/ok"),
        ("moved", Some("shop-a"), "/fail"),
        ("other", Some("shop-b"), "/ok"),
        ("nobodys", None, "/ok"),
    ] {
        app.endpoint(
            json!({"uid": uid, "owner": owner, "url": receiver.url(path),
                            "schedule": ["0s"]}),
        )
        .await;
    }
    for uid in ["kept", "kept", "moved", "other", "nobodys"] {
        app.notify(json!({"endpoint": uid, "payload": {}})).await;
    }
    stats_once(&app, "", 4, 1).await;
    assert_eq!(attempts_of(&app, "owner=shop-a").await, (3, 1));
    assert_eq!(attempts_of(&app, "owner=shop-b&window=24h").await, (1, 0));

    let (status, patched) = app
        .call(
            Method::PATCH,
            "/v1/endpoints/moved",
            Some(json!({"owner": "shop-b"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{patched}");
    app.notify(json!({"endpoint": "moved", "payload": {}}))
        .await;
    stats_once(&app, "", 4, 2).await;
    // shop-a keeps the attempt made while `moved` was its, and no longer
    // sees the endpoint ranked; shop-b counts the attempt since and ranks
    // the endpoint it has now, by its failures in the window.
    assert_eq!(attempts_of(&app, "owner=shop-a").await, (3, 0));
    let (_, b) = app.get("/v1/stats?owner=shop-b").await;
    assert_eq!(b["totals"]["attempts"], 2, "{b}");
    assert_eq!(b["totals"]["failed"], 1, "{b}");
    assert_eq!(
        b["failing_endpoints"],
        json!([{"endpoint_id": patched["id"], "url": receiver.url("/fail"),
                "failed_attempts": 2, "attempts": 2}])
    );

    let (status, _) = app.call(Method::DELETE, "/v1/endpoints/kept", None).await;
    assert!(status.is_success(), "{status}");
    assert_eq!(attempts_of(&app, "owner=shop-a").await, (3, 0));
    let (_, a) = app.get("/v1/stats?owner=shop-a&window=24h").await;
    assert_eq!(a["totals"]["delivered"], 2, "{a}");
    // The deployment's counts are every owner's and the owner-less ones.
    assert_eq!(attempts_of(&app, "").await, (6, 1));
}
both!(an_owners_overview_counts_what_its_endpoints_did_while_they_were_its);

async fn the_window_is_an_hour_or_a_day_of_aligned_steps_and_bad_parameters_are_refused(
    backend: Backend,
) {
    let app = backend.spawn().await;
    let before = Utc::now().timestamp();
    let (status, day) = app.get("/v1/stats?window=24h").await;
    let after = Utc::now().timestamp();
    assert_eq!(status, StatusCode::OK, "{day}");
    assert_eq!(
        (day["window"].clone(), day["step_seconds"].clone()),
        (json!("24h"), json!(600))
    );
    let time: Vec<i64> = day["time"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_i64().unwrap())
        .collect();
    assert_eq!(time.len(), 144);
    assert!(time.windows(2).all(|w| w[1] - w[0] == 600));
    let last = *time.last().unwrap();
    assert!(
        last % 600 == 0 && (before - 599..=after).contains(&last),
        "{last}"
    );
    for column in [
        "delivered",
        "failed",
        "attempts",
        "failed_attempts",
        "success_ratio",
        "lateness_p99_ms",
        "pending",
    ] {
        assert_eq!(day[column].as_array().unwrap().len(), 144, "{column}");
    }
    assert!(day["success_ratio"]
        .as_array()
        .unwrap()
        .iter()
        .all(Value::is_null));
    assert_eq!(day["totals"]["success_ratio"], Value::Null);
    assert_eq!(day["failing_endpoints"], json!([]));

    let (_, hour) = app.get("/v1/stats?window=1h").await;
    assert_eq!(
        (hour["window"].clone(), hour["step_seconds"].clone()),
        (json!("1h"), json!(60))
    );
    assert_eq!(hour["time"].as_array().unwrap().len(), 60);

    for (query, field) in [
        ("window=7d", "window"),
        ("window=1h&window=24h", "window"),
        ("nope=1", "nope"),
        ("owner=a%20b", "owner"),
        ("endpoint=a%00b", "endpoint"),
    ] {
        let (status, error) = app.get(&format!("/v1/stats?{query}")).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{query}: {error}");
        assert_eq!(error["error"]["field"], field, "{query}: {error}");
    }
}
both!(the_window_is_an_hour_or_a_day_of_aligned_steps_and_bad_parameters_are_refused);

/// Server mode: two hookd processes on one PostgreSQL and one Redis due
/// index (one deployment) deliver a batch between them, recording into
/// the same rows at the same time; the counts are the batch, exactly.
#[sqlx::test]
async fn two_processes_sharing_one_database_add_up_without_doubling(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let backend = Backend::postgres(pool.clone());
    let prefix = new_prefix();
    let first = backend
        .spawn_settings(test_settings_with_prefix(&redis_url(), &prefix, ""))
        .await;
    let second = backend
        .spawn_settings(test_settings_with_prefix(&redis_url(), &prefix, ""))
        .await;
    let receiver = Receiver::start().await;
    // Two endpoints of one owner: the processes add to the owner's rows
    // for both at once.
    for uid in ["shop", "shop-2"] {
        first
            .endpoint(json!({"uid": uid, "owner": "acme", "url": receiver.url("/hook")}))
            .await;
    }
    const COUNT: i64 = 400;
    for (i, app) in [&first, &second].into_iter().cycle().take(4).enumerate() {
        let uid = ["shop", "shop-2"][i / 2];
        let items: Vec<Value> = (0..COUNT / 4)
            .map(|j| json!({"endpoint": uid, "payload": {"i": i, "j": j}}))
            .collect();
        let (status, body) = app
            .post("/v1/notifications/batch", json!({"notifications": items}))
            .await;
        assert!(status.is_success(), "{body}");
    }
    receiver
        .wait_distinct("/hook", COUNT as usize, DEADLINE)
        .await;
    for app in [&first, &second] {
        let stats = stats_once(app, "", COUNT, 0).await;
        assert_eq!(stats["totals"]["attempts"], COUNT, "{stats}");
        assert_eq!(sum(&stats["delivered"]), COUNT);
        let shop = stats_once(app, "endpoint=shop&window=24h", COUNT / 2, 0).await;
        assert_eq!(shop["totals"]["attempts"], COUNT / 2, "{shop}");
        let acme = stats_once(app, "owner=acme&window=24h", COUNT, 0).await;
        assert_eq!(acme["totals"]["attempts"], COUNT, "{acme}");
        assert_eq!(sum(&acme["delivered"]), COUNT);
    }
    // Exactly the deliveries, however many requests the receiver saw
    // (a duplicate delivery moves nothing and is not counted).
    let delivered: i64 = sqlx::query_scalar("SELECT sum(delivered)::bigint FROM minute_stats")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(delivered, COUNT);
    let owners: i64 = sqlx::query_scalar(
        "SELECT sum(attempts)::bigint FROM owner_minute_stats WHERE owner = 'acme'",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(owners, COUNT);
}
