//! Pull consumption (DESIGN.md §10) end to end: real hookd processes,
//! PostgreSQL and Redis.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use sqlx::PgPool;

use crate::helpers::{
    database_url, eventually, free_port, new_prefix, redis_url, spawn_app, spawn_app_with,
    HookdProcess, RedisServer, TestApp, TOKEN,
};
use crate::receiver::Receiver;

const DEADLINE: Duration = Duration::from_secs(20);

pub(crate) async fn pull_endpoint(app: &TestApp, fields: Value) -> String {
    let mut body = json!({"delivery": "pull"});
    crate::helpers::merge(&mut body, fields);
    let (status, endpoint) = app.post("/v1/endpoints", body).await;
    assert_eq!(status, StatusCode::CREATED, "{endpoint}");
    assert_eq!(endpoint["url"], Value::Null);
    assert_eq!(endpoint["delivery"], "pull");
    endpoint["id"].as_str().unwrap().to_string()
}

pub(crate) async fn notify(app: &TestApp, endpoint: &str, extra: Value) -> String {
    let mut body = json!({"endpoint": endpoint, "payload": {"order": 1}});
    crate::helpers::merge(&mut body, extra);
    app.notify(body).await
}

pub(crate) async fn pull(app: &TestApp, endpoint: &str, request: Value) -> Vec<Value> {
    let (status, pulled) = app
        .post(&format!("/v1/endpoints/{endpoint}/pull"), request)
        .await;
    assert_eq!(status, StatusCode::OK, "{pulled}");
    pulled["data"].as_array().unwrap().clone()
}

/// `method url` with `token` and a JSON body, from any client: the status
/// and the JSON answer (`Null` when there is none).
async fn send(
    client: &reqwest::Client,
    method: Method,
    url: String,
    token: &str,
    body: Value,
) -> (StatusCode, Value) {
    let response = client
        .request(method, url)
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap();
    (
        response.status(),
        response.json::<Value>().await.unwrap_or(Value::Null),
    )
}

/// A consumer waiting on `endpoint` for up to 20 s, once `app` counts it
/// among the waiters; the handle gives its answer.
async fn waiting_pull(app: &TestApp, endpoint: &str) -> tokio::task::JoinHandle<Value> {
    let (base, client, path) = (
        app.base.clone(),
        app.client.clone(),
        format!("/v1/endpoints/{endpoint}/pull"),
    );
    let waiting = tokio::spawn(async move {
        send(
            &client,
            Method::POST,
            format!("{base}{path}"),
            TOKEN,
            json!({"wait": "20s"}),
        )
        .await
        .1
    });
    let endpoint_id: uuid::Uuid = endpoint.parse().unwrap();
    eventually(DEADLINE, "the consumer to wait", || async {
        (app.state.service.pull_waiters(endpoint_id) > 0).then_some(())
    })
    .await;
    waiting
}

/// Waits until the notification's row has `status`, polled in PostgreSQL.
async fn status_becomes(pool: &PgPool, id: uuid::Uuid, status: &str, deadline: Duration) {
    eventually(
        deadline,
        &format!("the notification to be {status}"),
        || async {
            let now: String = sqlx::query_scalar("SELECT status FROM notifications WHERE id = $1")
                .bind(id)
                .fetch_one(pool)
                .await
                .unwrap();
            (now == status).then_some(())
        },
    )
    .await;
}

/// The answer is 409 with this error code.
fn assert_conflict((status, body): (StatusCode, Value), code: &str) {
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (StatusCode::CONFLICT, Some(code)),
        "{body}"
    );
}

pub(crate) fn ids(items: &[Value]) -> Vec<String> {
    items
        .iter()
        .map(|i| i["id"].as_str().unwrap().to_string())
        .collect()
}

#[sqlx::test]
async fn a_consumer_takes_due_notifications_earliest_first_and_acks_or_nacks_them(pool: PgPool) {
    let app = spawn_app(pool).await;
    let endpoint = pull_endpoint(&app, json!({"schedule": ["0s", "1h"]})).await;
    let first = notify(&app, &endpoint, json!({"key": "order-1:paid"})).await;
    let (status, second) = app
        .post(
            "/v1/notifications",
            json!({"endpoint": endpoint, "body": "plain", "content_type": "text/plain"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{second}");
    let second = second["id"].as_str().unwrap().to_string();
    notify(&app, &endpoint, json!({"delay": "1h"})).await;

    let taken = pull(&app, &endpoint, json!({"max": 10, "lease": "1m"})).await;
    assert_eq!(
        ids(&taken),
        [first.clone(), second.clone()],
        "due ones, earliest first"
    );
    assert_eq!(taken[0]["payload"], json!({"order": 1}));
    assert_eq!(taken[0]["key"], "order-1:paid");
    assert_eq!(taken[0]["attempt"], 1);
    assert_eq!(taken[1]["body"], "plain");
    let (_, read) = app.get(&format!("/v1/notifications/{first}")).await;
    assert_eq!(read["leased"], true, "{read}");
    assert!(
        pull(&app, &endpoint, json!({})).await.is_empty(),
        "leased ones are not taken twice"
    );

    let (status, acked) = app
        .post(
            &format!("/v1/notifications/{first}/ack"),
            json!({"receipt": taken[0]["receipt"]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{acked}");
    assert_eq!(acked["status"], "succeeded");
    let (status, nacked) = app
        .post(
            &format!("/v1/notifications/{second}/nack"),
            json!({"receipt": taken[1]["receipt"], "error": "ledger busy", "retry_after": "2h"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{nacked}");
    assert_eq!(nacked["status"], "pending");
    let next: chrono::DateTime<chrono::Utc> =
        nacked["next_attempt_at"].as_str().unwrap().parse().unwrap();
    assert!(
        next > chrono::Utc::now() + chrono::Duration::minutes(110),
        "retry_after pushed it later: {next}"
    );

    let (_, attempts) = app
        .get(&format!("/v1/notifications/{first}/attempts"))
        .await;
    assert_eq!(attempts["data"][0]["outcome"], "succeeded", "{attempts}");
    assert_eq!(attempts["data"][0]["number"], 1);
    let (_, attempts) = app
        .get(&format!("/v1/notifications/{second}/attempts"))
        .await;
    assert_eq!(attempts["data"][0]["outcome"], "retry", "{attempts}");
    assert_eq!(
        attempts["data"][0]["error"],
        json!({"code": "nack", "message": "ledger busy"}),
        "{attempts}"
    );
    let (_, read) = app.get(&format!("/v1/notifications/{first}")).await;
    assert_eq!(read["status"], "succeeded");
    assert_eq!(read["leased"], false);
    assert_eq!(read["attempts"], 1);
}

#[sqlx::test]
async fn a_consumer_that_never_acks_gets_its_notifications_back_after_the_lease_and_only_then(
    pool: PgPool,
) {
    let app = spawn_app(pool).await;
    let endpoint = pull_endpoint(&app, json!({"schedule": ["0s", "1s", "1s"]})).await;
    let id = notify(&app, &endpoint, json!({})).await;
    let taken = pull(&app, &endpoint, json!({"lease": "2s"})).await;
    assert_eq!(ids(&taken), [id.as_str()]);
    let lease_until: chrono::DateTime<chrono::Utc> =
        taken[0]["lease_until"].as_str().unwrap().parse().unwrap();

    // A second consumer waits for it: it comes back after the lease (and
    // the schedule's next delay), as attempt 2.
    let again = pull(&app, &endpoint, json!({"wait": "15s", "lease": "2s"})).await;
    let back_at = chrono::Utc::now();
    assert_eq!(ids(&again), [id.as_str()]);
    assert_eq!(again[0]["attempt"], 2);
    assert!(
        back_at >= lease_until,
        "taken again at {back_at}, before the lease ended at {lease_until}"
    );
    let (_, attempts) = app.get(&format!("/v1/notifications/{id}/attempts")).await;
    assert_eq!(
        attempts["data"][0]["error"]["code"], "lease_expired",
        "{attempts}"
    );
    assert_eq!(attempts["data"][0]["outcome"], "retry");

    // The stale receipt is refused; the current one works.
    let (status, refused) = app
        .post(
            &format!("/v1/notifications/{id}/ack"),
            json!({"receipt": taken[0]["receipt"]}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{refused}");
    assert_eq!(refused["error"]["code"], "lease_lost");

    // The last attempt is taken and never acked: when its lease runs out,
    // the schedule is over and it fails.
    let last = pull(&app, &endpoint, json!({"wait": "15s", "lease": "1s"})).await;
    assert_eq!(last[0]["attempt"], 3);
    let failed = eventually(DEADLINE, "the notification to fail", || async {
        let (_, read) = app.get(&format!("/v1/notifications/{id}")).await;
        (read["status"] == "failed").then_some(read)
    })
    .await;
    assert_eq!(failed["attempts"], 3, "{failed}");
}

#[sqlx::test]
async fn a_retry_just_after_a_lease_ran_out_first_records_the_attempt_that_lease_ended(
    pool: PgPool,
) {
    let app = spawn_app(pool).await;
    let endpoint = pull_endpoint(&app, json!({"schedule": ["0s", "1h"]})).await;
    let id = notify(&app, &endpoint, json!({})).await;
    let taken = pull(&app, &endpoint, json!({"lease": "1s"})).await;
    assert_eq!(ids(&taken), [id.as_str()]);
    // Retried as soon as the lease has run out: before the lease sweep
    // (every second) has recorded the attempt, in all but about one run in
    // a hundred (where the sweep's record is what this test then reads).
    eventually(DEADLINE, "the lease to run out", || async {
        let (_, read) = app.get(&format!("/v1/notifications/{id}")).await;
        (read["leased"] == false).then_some(())
    })
    .await;
    let (status, retried) = app
        .post(&format!("/v1/notifications/{id}/retry"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{retried}");
    assert_eq!(retried["status"], "pending", "{retried}");
    assert_eq!(retried["attempts"], 1, "{retried}");

    let (_, attempts) = app.get(&format!("/v1/notifications/{id}/attempts")).await;
    let attempts = attempts["data"].as_array().unwrap();
    assert_eq!(attempts.len(), 1, "{attempts:?}");
    assert_eq!(attempts[0]["number"], 1);
    assert_eq!(
        attempts[0]["error"]["code"], "lease_expired",
        "{attempts:?}"
    );
    // The new series starts after it, due now; the lease it ended is
    // recorded once, however the sweep and the retry met.
    let again = pull(&app, &endpoint, json!({"lease": "1m"})).await;
    assert_eq!(ids(&again), [id.as_str()]);
    assert_eq!(again[0]["attempt"], 2);
    let (status, acked) = app
        .post(
            &format!("/v1/notifications/{id}/ack"),
            json!({"receipt": again[0]["receipt"]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{acked}");
    let (_, attempts) = app.get(&format!("/v1/notifications/{id}/attempts")).await;
    let outcomes: Vec<(i64, &str)> = attempts["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["number"].as_i64().unwrap(),
                a["outcome"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(outcomes, [(1, "retry"), (2, "succeeded")], "{attempts}");
}

#[sqlx::test]
async fn a_pull_notification_created_as_another_process_deletes_its_endpoint_is_cancelled(
    pool: PgPool,
) {
    let a = spawn_app(pool.clone()).await;
    let b = spawn_app(pool.clone()).await;
    // B must still serve the endpoint from its one-second cache after A
    // deleted it; a busy machine may need another try.
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
            tries < 5,
            "B never served the deleted endpoint from its cache: {created}"
        );
    };
    // The 30 s sweep of stray pull rows gets to it.
    status_becomes(&pool, id, "cancelled", Duration::from_secs(45)).await;
}

#[sqlx::test]
async fn a_notification_created_pull_as_another_process_switches_its_endpoint_to_push_is_sent(
    pool: PgPool,
) {
    let a = spawn_app(pool.clone()).await;
    let b = spawn_app(pool.clone()).await;
    let receiver = Receiver::start().await;
    // B must still take the endpoint as pull from its one-second cache
    // after A switched it; a busy machine may need another try.
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
        let pull: bool = sqlx::query_scalar("SELECT pull FROM notifications WHERE id = $1")
            .bind(id)
            .fetch_one(&pool)
            .await
            .unwrap();
        if pull {
            break id;
        }
        assert!(
            tries < 5,
            "B never wrote a notification as pull after the switch"
        );
    };
    // The 30 s sweep of stray pull rows gets to it.
    status_becomes(&pool, id, "succeeded", Duration::from_secs(45)).await;
    let (distinct, total) = receiver.distinct("/hook");
    assert_eq!(distinct, total, "each sent once");
}

#[sqlx::test]
async fn a_pull_without_a_body_takes_with_the_defaults(pool: PgPool) {
    let app = spawn_app(pool).await;
    let endpoint = pull_endpoint(&app, json!({})).await;
    let id = notify(&app, &endpoint, json!({})).await;
    let (status, pulled) = app
        .call_raw(Method::POST, &format!("/v1/endpoints/{endpoint}/pull"), "")
        .await;
    assert_eq!(status, StatusCode::OK, "{pulled}");
    assert_eq!(pulled["data"][0]["id"], json!(id), "{pulled}");
}

#[sqlx::test]
async fn a_waiting_consumer_gets_a_nacked_notification_when_it_is_due_again(pool: PgPool) {
    let app = spawn_app(pool).await;
    let endpoint = pull_endpoint(&app, json!({"schedule": ["0s", "1s"]})).await;
    let id = notify(&app, &endpoint, json!({})).await;
    let taken = pull(&app, &endpoint, json!({"lease": "1m"})).await;
    assert_eq!(ids(&taken), vec![id.clone()]);

    // Another consumer waits while the only notification is leased for a
    // minute, longer than its wait.
    let started = Instant::now();
    let waiting = waiting_pull(&app, &endpoint).await;
    let (status, nacked) = app
        .post(
            &format!("/v1/notifications/{id}/nack"),
            json!({"receipt": taken[0]["receipt"]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{nacked}");
    assert_eq!(nacked["status"], "pending");

    let pulled = waiting.await.unwrap();
    assert_eq!(pulled["data"][0]["id"], json!(id), "{pulled}");
    assert_eq!(pulled["data"][0]["attempt"], 2, "{pulled}");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "the waiter looked again at the nack, not at the end of its wait"
    );
}

#[sqlx::test]
async fn a_waiting_pull_answers_when_another_process_creates_a_notification(pool: PgPool) {
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
async fn leases_outlive_a_crash_of_hookd(pool: PgPool) {
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

#[sqlx::test]
async fn pull_notifications_survive_a_flush_of_redis(pool: PgPool) {
    let redis = RedisServer::start().await;
    let app = spawn_app_with(pool, &redis.url(), "").await;
    let endpoint = pull_endpoint(&app, json!({})).await;
    let mut created = HashSet::new();
    for _ in 0..50 {
        created.insert(notify(&app, &endpoint, json!({})).await);
    }
    crate::resilience::redis_command(&redis.url(), "FLUSHALL").await;
    let taken = pull(&app, &endpoint, json!({"max": 100})).await;
    assert_eq!(ids(&taken).into_iter().collect::<HashSet<_>>(), created);
}

#[sqlx::test]
async fn concurrent_consumers_on_two_processes_take_each_notification_once(pool: PgPool) {
    let a = spawn_app(pool.clone()).await;
    let b = spawn_app(pool).await;
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

#[sqlx::test]
async fn a_consumer_token_pulls_its_own_endpoint_and_nothing_else(pool: PgPool) {
    let app = spawn_app(pool).await;
    let mine = pull_endpoint(&app, json!({})).await;
    let other = pull_endpoint(&app, json!({})).await;
    let id = notify(&app, &mine, json!({})).await;
    let theirs = notify(&app, &other, json!({})).await;
    let (status, issued) = app
        .post(&format!("/v1/endpoints/{mine}/consumer-token"), json!({}))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{issued}");
    let token = issued["token"].as_str().unwrap().to_string();
    assert!(token.starts_with("hkc_"));

    let as_consumer = |method: Method, path: String, body: Value| {
        let (client, base, token) = (app.client.clone(), app.base.clone(), token.clone());
        async move { send(&client, method, format!("{base}{path}"), &token, body).await }
    };
    let (status, pulled) = as_consumer(
        Method::POST,
        format!("/v1/endpoints/{mine}/pull"),
        json!({}),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(pulled["data"][0]["id"], id.as_str());
    let (status, acked) = as_consumer(
        Method::POST,
        format!("/v1/notifications/{id}/ack"),
        json!({"receipt": pulled["data"][0]["receipt"]}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{acked}");

    for (method, path) in [
        (Method::POST, format!("/v1/endpoints/{other}/pull")),
        (Method::GET, format!("/v1/notifications/{id}")),
        (Method::GET, "/v1/endpoints".to_string()),
        (Method::POST, format!("/v1/endpoints/{mine}/consumer-token")),
    ] {
        let (status, body) = as_consumer(method.clone(), path.clone(), json!({})).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{method} {path}: {body}");
        assert!(body["error"]["code"].is_string(), "{body}");
    }
    // A receipt of another endpoint's notification, through this token.
    let taken = pull(&app, &other, json!({})).await;
    let (status, body) = as_consumer(
        Method::POST,
        format!("/v1/notifications/{theirs}/ack"),
        json!({"receipt": taken[0]["receipt"]}),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");

    // Rotation: the old token stops working at once.
    let (_, rotated) = app
        .post(&format!("/v1/endpoints/{mine}/consumer-token"), json!({}))
        .await;
    assert_ne!(rotated["token"], issued["token"]);
    let (status, body) = as_consumer(
        Method::POST,
        format!("/v1/endpoints/{mine}/pull"),
        json!({}),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert_eq!(body["error"]["code"], "unauthorized");
}

#[sqlx::test]
async fn bad_pull_requests_are_refused_and_change_nothing(pool: PgPool) {
    let app = spawn_app(pool).await;
    let endpoint = pull_endpoint(&app, json!({})).await;
    let push = app.endpoint(json!({})).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let id = notify(&app, &endpoint, json!({})).await;
    let other = notify(&app, &endpoint, json!({})).await;
    for (request, field) in [
        (json!({"max": 0}), "max"),
        (json!({"max": 1001}), "max"),
        (json!({"lease": "0s"}), "lease"),
        (json!({"lease": "13h"}), "lease"),
        (json!({"wait": "21s"}), "wait"),
    ] {
        let (status, body) = app
            .post(&format!("/v1/endpoints/{endpoint}/pull"), request.clone())
            .await;
        assert_eq!(
            status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{request}: {body}"
        );
        assert_eq!(body["error"]["field"], field, "{request}: {body}");
    }
    assert_conflict(
        app.post(&format!("/v1/endpoints/{push}/pull"), json!({}))
            .await,
        "not_pull",
    );
    let (status, body) = app
        .post(
            "/v1/endpoints",
            json!({"delivery": "pull", "url": "http://127.0.0.1:9/x"}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"]["field"], "url");

    let taken = pull(&app, &endpoint, json!({"max": 2})).await;
    let receipt = |of: &str| taken.iter().find(|t| t["id"] == of).unwrap()["receipt"].clone();
    // A receipt of another notification.
    let (status, body) = app
        .post(
            &format!("/v1/notifications/{id}/ack"),
            json!({"receipt": receipt(&other)}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"]["code"], "receipt_mismatch");
    for bad in [json!("hkr_nope"), json!(""), json!(42)] {
        let (status, body) = app
            .post(
                &format!("/v1/notifications/{id}/ack"),
                json!({"receipt": bad}),
            )
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}: {body}");
    }
    // Ack after cancel: the cancel ended the lease (DESIGN §10).
    let (status, _) = app
        .post(&format!("/v1/notifications/{id}/cancel"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_conflict(
        app.post(
            &format!("/v1/notifications/{id}/ack"),
            json!({"receipt": receipt(&id)}),
        )
        .await,
        "lease_lost",
    );
    // Retry while a consumer holds it.
    assert_conflict(
        app.post(&format!("/v1/notifications/{other}/retry"), json!({}))
            .await,
        "in_flight",
    );
    // Ack of a push notification, with a well-formed receipt for it.
    let pushed = notify(&app, &push, json!({"delay": "1h"})).await;
    let forged = hookd::domain::pull::Receipt {
        notification: pushed.parse().unwrap(),
        lease: uuid::Uuid::new_v4(),
    }
    .encode();
    assert_conflict(
        app.post(
            &format!("/v1/notifications/{pushed}/ack"),
            json!({"receipt": forged}),
        )
        .await,
        "not_pull",
    );
    // Nothing changed: the held one still acks.
    let (status, body) = app
        .post(
            &format!("/v1/notifications/{other}/ack"),
            json!({"receipt": receipt(&other)}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, read) = app.get(&format!("/v1/notifications/{pushed}")).await;
    assert_eq!(
        (read["status"].as_str(), read["attempts"].as_i64()),
        (Some("pending"), Some(0))
    );
}

#[sqlx::test]
async fn switching_an_endpoint_between_push_and_pull_moves_its_pending_notifications(pool: PgPool) {
    let app = spawn_app(pool).await;
    let receiver = Receiver::start().await;
    let endpoint = app.endpoint(json!({"url": receiver.url("/hook")})).await;
    let endpoint = endpoint["id"].as_str().unwrap().to_string();
    let id = notify(&app, &endpoint, json!({"delay": "2s"})).await;
    let (status, switched) = app
        .call(
            Method::PATCH,
            &format!("/v1/endpoints/{endpoint}"),
            Some(json!({"delivery": "pull"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{switched}");
    assert_eq!(switched["url"], Value::Null);
    let taken = pull(&app, &endpoint, json!({"wait": "15s", "lease": "1m"})).await;
    assert_eq!(ids(&taken), [id.as_str()]);

    // Back to push (a URL is required): the leased one is delivered.
    let (status, body) = app
        .call(
            Method::PATCH,
            &format!("/v1/endpoints/{endpoint}"),
            Some(json!({"delivery": "push"})),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"]["field"], "url");
    let (status, _) = app
        .call(
            Method::PATCH,
            &format!("/v1/endpoints/{endpoint}"),
            Some(json!({"delivery": "push", "url": receiver.url("/hook")})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let delivered = receiver.wait_for("/hook", 1, DEADLINE).await;
    assert_eq!(delivered[0].header("webhook-id"), Some(id.as_str()));
    let (status, body) = app
        .post(
            &format!("/v1/notifications/{id}/ack"),
            json!({"receipt": taken[0]["receipt"]}),
        )
        .await;
    assert_eq!(
        status,
        StatusCode::CONFLICT,
        "the switch ended the lease: {body}"
    );
}

#[sqlx::test]
async fn an_event_fans_out_to_pull_endpoints_too(pool: PgPool) {
    let app = spawn_app(pool).await;
    let receiver = Receiver::start().await;
    app.endpoint(json!({"url": receiver.url("/push"), "owner": "m-1"}))
        .await;
    let pulled = pull_endpoint(&app, json!({"owner": "m-1", "event_types": ["order.*"]})).await;
    let (status, event) = app
        .post(
            "/v1/events",
            json!({"event_type": "order.paid", "owner": "m-1", "payload": {"order": 7}}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{event}");
    let taken = pull(&app, &pulled, json!({"wait": "10s"})).await;
    assert_eq!(taken.len(), 1);
    assert_eq!(taken[0]["event_id"], event["id"]);
    assert_eq!(taken[0]["event_type"], "order.paid");
    assert_eq!(taken[0]["payload"], json!({"order": 7}));
    receiver.wait_for("/push", 1, DEADLINE).await;
}
