//! Leases across processes: consumers of two processes take each
//! notification once, another process's delete, switch to push or create
//! is seen, and leases outlive a crash of hookd.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use super::{status_becomes, waiting_pull, DEADLINE};
use crate::backends::Backend;
use crate::helpers::{
    database_url, free_port, new_prefix, redis_url, spawn_app, HookdProcess, TOKEN,
};
use crate::pull::{ids, notify, pull_endpoint, send};
use crate::receiver::Receiver;

// On SQLite the two apps share one store (the file is one process's).
async fn concurrent_consumers_on_two_processes_take_each_notification_once(backend: Backend) {
    let a = backend.spawn().await;
    let b = backend.spawn().await;
    let endpoint = pull_endpoint(&a, json!({})).await;
    let items: Vec<Value> = (0..500)
        .map(|i| json!({"endpoint": endpoint, "payload": {"n": i}}))
        .collect();
    let (status, _) = a
        .post("/v1/notifications/batch", json!({"notifications": items}))
        .await;
    assert_eq!(status, StatusCode::OK);

    let mut consumers = Vec::new();
    for i in 0..6 {
        let app = if i % 2 == 0 { &a } else { &b };
        let (base, client, endpoint) = (app.base.clone(), app.client.clone(), endpoint.clone());
        consumers.push(tokio::spawn(async move {
            let mut taken = Vec::new();
            loop {
                let url = format!("{base}/v1/endpoints/{endpoint}/pull");
                let (_, pulled) = send(
                    &client,
                    Method::POST,
                    url,
                    TOKEN,
                    json!({"max": 7, "lease": "1m"}),
                )
                .await;
                let data = pulled["data"].as_array().unwrap().clone();
                if data.is_empty() {
                    return taken;
                }
                let receipts: Vec<Value> = data.iter().map(|d| d["receipt"].clone()).collect();
                let url = format!("{base}/v1/endpoints/{endpoint}/ack");
                let (_, acked) = send(
                    &client,
                    Method::POST,
                    url,
                    TOKEN,
                    json!({"receipts": receipts}),
                )
                .await;
                for item in acked["data"].as_array().unwrap() {
                    assert_eq!(item["status"], 200, "{item}");
                }
                taken.extend(ids(&data));
            }
        }));
    }
    let mut counts: HashMap<String, usize> = HashMap::new();
    for consumer in consumers {
        for id in consumer.await.unwrap() {
            *counts.entry(id).or_default() += 1;
        }
    }
    assert_eq!(counts.len(), 500, "every notification was taken");
    assert!(counts.values().all(|&n| n == 1), "none was taken twice");
}
both!(concurrent_consumers_on_two_processes_take_each_notification_once);

// On SQLite the two apps share one store (the file is one process's): as
// two requests in one process can, one writes what the other's cache
// no longer holds.
async fn a_pull_notification_created_as_another_process_deletes_its_endpoint_is_cancelled(
    backend: Backend,
) {
    let a = backend.spawn().await;
    let b = backend.spawn().await;
    // B must still serve the endpoint from its one-second cache after A
    // deleted it; a busy machine may need more tries, as many as fit in
    // the deadline (a count of tries is a guess at the machine's speed).
    let started = Instant::now();
    let mut tries = 0;
    let id = loop {
        tries += 1;
        let endpoint = pull_endpoint(&a, json!({})).await;
        notify(&b, &endpoint, json!({})).await;
        let (status, deleted) = a
            .call(Method::DELETE, &format!("/v1/endpoints/{endpoint}"), None)
            .await;
        assert_eq!(status, StatusCode::OK, "{deleted}");
        let (status, created) = b
            .post(
                "/v1/notifications",
                json!({"endpoint": endpoint, "payload": {}}),
            )
            .await;
        if status == StatusCode::CREATED {
            break created["id"]
                .as_str()
                .unwrap()
                .parse::<uuid::Uuid>()
                .unwrap();
        }
        assert!(
            started.elapsed() < DEADLINE,
            "B never served the deleted endpoint from its cache in {tries} tries: {created}"
        );
    };
    // The 30 s sweep of stray pull rows gets to it.
    status_becomes(&b, id, "cancelled", Duration::from_secs(45)).await;
}
both!(a_pull_notification_created_as_another_process_deletes_its_endpoint_is_cancelled);

// On SQLite the two apps share one store (the file is one process's): as
// two requests in one process can, one writes what the other's cache
// no longer holds.
async fn a_notification_created_pull_as_another_process_switches_its_endpoint_to_push_is_sent(
    backend: Backend,
) {
    let a = backend.spawn().await;
    let b = backend.spawn().await;
    let receiver = Receiver::start().await;
    // B must still take the endpoint as pull from its one-second cache
    // after A switched it; a busy machine may need more tries, as many as
    // fit in the deadline (a count of tries is a guess at its speed).
    let started = Instant::now();
    let mut tries = 0;
    let id = loop {
        tries += 1;
        let endpoint = pull_endpoint(&a, json!({})).await;
        notify(&b, &endpoint, json!({})).await;
        let (status, switched) = a
            .call(
                Method::PATCH,
                &format!("/v1/endpoints/{endpoint}"),
                Some(json!({"delivery": "push", "url": receiver.url("/hook")})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{switched}");
        let (status, created) = b
            .post(
                "/v1/notifications",
                json!({"endpoint": endpoint, "payload": {"late": true}}),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{created}");
        let id: uuid::Uuid = created["id"].as_str().unwrap().parse().unwrap();
        let pull = backend
            .count_for(
                "SELECT count(*) FROM notifications WHERE id = $1 AND pull",
                id,
            )
            .await;
        if pull == 1 {
            break id;
        }
        assert!(
            started.elapsed() < DEADLINE,
            "B never wrote a notification as pull after the switch in {tries} tries"
        );
    };
    // The 30 s sweep of stray pull rows gets to it.
    status_becomes(&b, id, "succeeded", Duration::from_secs(45)).await;
    let (distinct, total) = receiver.distinct("/hook");
    assert_eq!(distinct, total, "each sent once");
}
both!(a_notification_created_pull_as_another_process_switches_its_endpoint_to_push_is_sent);

#[sqlx::test]
async fn a_waiting_pull_answers_when_another_process_creates_a_notification(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let app = spawn_app(pool.clone()).await;
    let endpoint = pull_endpoint(&app, json!({})).await;
    let port = free_port();
    let prefix = new_prefix();
    let log = std::env::temp_dir().join(format!("{prefix}-producer.log"));
    let _producer = HookdProcess::start_logged(
        &database_url(&pool),
        &redis_url(),
        &prefix,
        &[("HOOKD_API__TOKENS", &format!("[\"{TOKEN}\"]"))],
        &format!("127.0.0.1:{port}"),
        &log,
    );
    let producer = format!("http://127.0.0.1:{port}");
    HookdProcess::wait_ready(&producer, DEADLINE).await;

    let started = Instant::now();
    let waiting = waiting_pull(&app, &endpoint).await;
    let (status, created) = send(
        &crate::helpers::http_client(),
        Method::POST,
        format!("{producer}/v1/notifications"),
        TOKEN,
        json!({"endpoint": endpoint, "payload": {"n": 1}}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let pulled = waiting.await.unwrap();
    assert_eq!(pulled["data"][0]["id"], created["id"], "{pulled}");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "the pull was woken, not answered at the end of its wait"
    );
}

#[sqlx::test]
async fn leases_outlive_a_crash_of_hookd(_: PgPoolOptions, connect: PgConnectOptions) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let db = database_url(&pool);
    let prefix = new_prefix();
    let start = |name: &str| {
        let port = free_port();
        let process = HookdProcess::start_logged(
            &db,
            &redis_url(),
            &prefix,
            &[("HOOKD_API__TOKENS", &format!("[\"{TOKEN}\"]"))],
            &format!("127.0.0.1:{port}"),
            &std::env::temp_dir().join(format!("{prefix}-{name}.log")),
        );
        (process, format!("http://127.0.0.1:{port}"))
    };
    // The schema comes from the test's own app; the processes use it.
    let app = spawn_app(pool.clone()).await;
    let endpoint = pull_endpoint(&app, json!({"schedule": ["0s", "1s"]})).await;
    let kept = notify(&app, &endpoint, json!({})).await;
    let dropped = notify(&app, &endpoint, json!({})).await;
    drop(app);

    let (mut first, base) = start("first");
    HookdProcess::wait_ready(&base, DEADLINE).await;
    let client = crate::helpers::http_client();
    let call = |base: String, path: String, body: Value| {
        let client = client.clone();
        async move { send(&client, Method::POST, format!("{base}{path}"), TOKEN, body).await }
    };
    let (_, taken) = call(
        base.clone(),
        format!("/v1/endpoints/{endpoint}/pull"),
        json!({"max": 1, "lease": "1m"}),
    )
    .await;
    assert_eq!(taken["data"][0]["id"], kept.as_str());
    let (_, short) = call(
        base.clone(),
        format!("/v1/endpoints/{endpoint}/pull"),
        json!({"max": 1, "lease": "1s"}),
    )
    .await;
    assert_eq!(short["data"][0]["id"], dropped.as_str());
    first.signal("KILL");
    first.wait(DEADLINE).await;

    let (_second, base) = start("second");
    HookdProcess::wait_ready(&base, DEADLINE).await;
    let (status, acked) = call(
        base.clone(),
        format!("/v1/notifications/{kept}/ack"),
        json!({"receipt": taken["data"][0]["receipt"]}),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::OK,
        "a lease taken before the crash is honoured: {acked}"
    );
    assert_eq!(acked["status"], "succeeded");
    // The short lease ran out meanwhile: retried on schedule, as attempt 2.
    let (_, again) = call(
        base.clone(),
        format!("/v1/endpoints/{endpoint}/pull"),
        json!({"wait": "15s"}),
    )
    .await;
    assert_eq!(again["data"][0]["id"], dropped.as_str(), "{again}");
    assert_eq!(again["data"][0]["attempt"], 2);
}
