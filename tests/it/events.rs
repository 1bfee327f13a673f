//! Events and fan-out (docs/design.md §9) end to end: real hookd on each
//! backend (PostgreSQL and Redis, SQLite and its in-process index) and a
//! real receiver.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use crate::backends::Backend;
use crate::helpers::{
    database_url, eventually, free_port, new_prefix, redis_url, HookdProcess, TestApp, TOKEN,
};
use crate::receiver::Receiver;

const DEADLINE: Duration = Duration::from_secs(20);

async fn event(app: &TestApp, body: Value) -> Value {
    let (status, created) = app.post("/v1/events", body).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    created
}

/// Waits until every delivery of the event has `status`; returns the event.
async fn wait_counts(app: &TestApp, id: &str, status: &str, count: i64) -> Value {
    eventually(
        DEADLINE,
        &format!("{count} deliveries {status}"),
        || async {
            let (_, event) = app.get(&format!("/v1/events/{id}")).await;
            (event["counts"][status] == json!(count)).then_some(event)
        },
    )
    .await
}

async fn an_event_reaches_every_subscribed_endpoint_once(backend: Backend) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    let mut secrets = HashMap::new();
    for (path, types) in [
        ("/wildcard", json!(["order.*"])),
        ("/exact", json!(["order.paid"])),
        ("/all", Value::Null),
        ("/star", json!(["*"])),
        ("/refunds", json!(["refund.*"])),
    ] {
        let endpoint = app
            .endpoint(json!({"url": receiver.url(path), "owner": "m-1", "event_types": types}))
            .await;
        secrets.insert(path, endpoint["secret"].as_str().unwrap().to_string());
    }
    app.endpoint(json!({"url": receiver.url("/disabled"), "owner": "m-1", "disabled": true}))
        .await;

    let created = event(
        &app,
        json!({"event_type": "order.paid", "owner": "m-1", "payload": {"order": 123}}),
    )
    .await;
    assert_eq!(created["deliveries"], json!(4), "{created}");
    assert_eq!(created["owner"], json!("m-1"));
    let id = created["id"].as_str().unwrap();

    let done = wait_counts(&app, id, "succeeded", 4).await;
    assert_eq!(done["payload"], json!({"order": 123}));
    let mut webhook_ids = HashSet::new();
    for path in ["/wildcard", "/exact", "/all", "/star"] {
        let got = receiver.received(path);
        assert_eq!(got.len(), 1, "{path} gets the event once");
        let request = &got[0];
        assert_eq!(&request.body[..], br#"{"order":123}"#);
        assert_eq!(request.header("hookd-event-id"), Some(id));
        assert_eq!(request.header("hookd-event-type"), Some("order.paid"));
        webhook_ids.insert(request.header("webhook-id").unwrap().to_string());
        standardwebhooks::Webhook::new(&secrets[path])
            .unwrap()
            .verify(&request.body, &request.headers)
            .expect("each endpoint's delivery is signed with its own secret");
    }
    assert_eq!(webhook_ids.len(), 4, "each delivery has its own webhook-id");
    assert!(receiver.received("/refunds").is_empty());
    assert!(receiver.received("/disabled").is_empty());

    let (_, deliveries) = app.get(&format!("/v1/notifications?event={id}")).await;
    let listed: HashSet<String> = deliveries["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            assert_eq!(n["event_id"], json!(id));
            assert_eq!(n["event_type"], json!("order.paid"));
            n["id"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(
        listed, webhook_ids,
        "the event's deliveries are listed by it"
    );
    let (_, by_type) = app.get("/v1/notifications?event_type=order.paid").await;
    let by_type: HashSet<String> = by_type["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        by_type, webhook_ids,
        "the event's deliveries are listed by its type"
    );
    let (_, other_type) = app.get("/v1/notifications?event_type=order.refunded").await;
    assert_eq!(other_type["data"], json!([]));
    let (_, one) = app
        .get(&format!(
            "/v1/notifications/{}",
            webhook_ids.iter().next().unwrap()
        ))
        .await;
    assert_eq!(
        one["payload"],
        json!({"order": 123}),
        "a delivery shows its event's payload"
    );
    assert_eq!(one["event_type"], json!("order.paid"));
}
both!(an_event_reaches_every_subscribed_endpoint_once);

async fn a_delivery_retried_or_cancelled_still_shows_its_events_type(backend: Backend) {
    let app = backend.spawn().await;
    app.endpoint(json!({"url": "http://127.0.0.1:9/", "owner": "t"}))
        .await;
    let created = event(
        &app,
        json!({"event_type": "order.shipped", "owner": "t", "payload": {}, "delay": "1h"}),
    )
    .await;
    let (_, deliveries) = app
        .get(&format!(
            "/v1/notifications?event={}",
            created["id"].as_str().unwrap()
        ))
        .await;
    let id = deliveries["data"][0]["id"].as_str().unwrap().to_string();
    let (status, retried) = app
        .call(
            reqwest::Method::POST,
            &format!("/v1/notifications/{id}/retry"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{retried}");
    assert_eq!(retried["event_type"], json!("order.shipped"));
    let (status, cancelled) = app
        .call(
            reqwest::Method::POST,
            &format!("/v1/notifications/{id}/cancel"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{cancelled}");
    assert_eq!(cancelled["event_type"], json!("order.shipped"));
}
both!(a_delivery_retried_or_cancelled_still_shows_its_events_type);

async fn an_event_never_reaches_another_owners_endpoint(backend: Backend) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    app.endpoint(json!({"url": receiver.url("/m1"), "owner": "m-1"}))
        .await;
    app.endpoint(json!({"url": receiver.url("/m2"), "owner": "m-2"}))
        .await;
    app.endpoint(json!({"url": receiver.url("/none")})).await;

    let for_m1 = event(
        &app,
        json!({"event_type": "order.paid", "owner": "m-1", "payload": {}}),
    )
    .await;
    let unowned = event(&app, json!({"event_type": "order.paid", "payload": {}})).await;
    let nobody = event(
        &app,
        json!({"event_type": "order.paid", "owner": "m-3", "payload": {}}),
    )
    .await;
    assert_eq!(for_m1["deliveries"], json!(1));
    assert_eq!(unowned["deliveries"], json!(1));
    assert_eq!(
        nobody["deliveries"],
        json!(0),
        "an event without subscribers is stored"
    );

    receiver.wait_for("/m1", 1, DEADLINE).await;
    receiver.wait_for("/none", 1, DEADLINE).await;
    wait_counts(&app, unowned["id"].as_str().unwrap(), "succeeded", 1).await;
    assert!(receiver.received("/m2").is_empty(), "m-2 hears of nothing");
    assert_eq!(receiver.received("/m1").len(), 1);
    assert_eq!(receiver.received("/none").len(), 1);

    let (_, listed) = app.get("/v1/events?owner=m-1").await;
    assert_eq!(listed["data"].as_array().unwrap().len(), 1);
    assert_eq!(listed["data"][0]["id"], for_m1["id"]);
    let (_, endpoints) = app.get("/v1/endpoints?owner=m-2").await;
    assert_eq!(endpoints["data"].as_array().unwrap().len(), 1);
}
both!(an_event_never_reaches_another_owners_endpoint);

async fn wildcard_subscription_matches_sub_types_only(backend: Backend) {
    let app = backend.spawn().await;
    app.endpoint(json!({"owner": "w", "event_types": ["order.*"], "disabled": false}))
        .await;
    for (event_type, expected) in [
        ("order", 0),
        ("order.paid", 1),
        ("order.paid.late", 1),
        ("orders.paid", 0),
        ("refund.order.paid", 0),
    ] {
        let created = event(
            &app,
            json!({"event_type": event_type, "owner": "w", "payload": {}, "delay": "1h"}),
        )
        .await;
        assert_eq!(created["deliveries"], json!(expected), "{event_type}");
    }
}
both!(wildcard_subscription_matches_sub_types_only);

async fn cancelling_an_event_cancels_its_pending_deliveries(backend: Backend) {
    let app = backend.spawn().await;
    for _ in 0..3 {
        app.endpoint(json!({"owner": "c"})).await;
    }
    let created = event(
        &app,
        json!({"event_type": "order.paid", "owner": "c", "payload": {}, "delay": "1h"}),
    )
    .await;
    let id = created["id"].as_str().unwrap();
    let (status, cancelled) = app
        .post(&format!("/v1/events/{id}/cancel"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{cancelled}");
    assert_eq!(cancelled["cancelled"], json!(3));
    let (_, read) = app.get(&format!("/v1/events/{id}")).await;
    assert_eq!(read["counts"]["cancelled"], json!(3), "{read}");
    assert_eq!(read["counts"]["pending"], json!(0));
    let (_, again) = app
        .post(&format!("/v1/events/{id}/cancel"), json!({}))
        .await;
    assert_eq!(again["cancelled"], json!(0), "nothing is pending any more");
    let (status, _) = app
        .post(
            &format!("/v1/events/{}/cancel", uuid::Uuid::now_v7()),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}
both!(cancelling_an_event_cancels_its_pending_deliveries);

async fn an_event_key_is_idempotent_per_owner(backend: Backend) {
    let app = backend.spawn().await;
    app.endpoint(json!({"owner": "k"})).await;
    app.endpoint(json!({"owner": "l"})).await;
    let body = json!({"event_type": "order.paid", "owner": "k", "key": "order-1:paid", "payload": {"a": 1, "b": 2}, "delay": "1h"});
    let first = event(&app, body.clone()).await;
    let (status, again) = app
        .post(
            "/v1/events",
            json!({"event_type": "order.paid", "owner": "k", "key": "order-1:paid", "payload": {"b": 2, "a": 1}, "delay": "1h"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "the same event again: {again}");
    assert_eq!(again["id"], first["id"]);
    let (_, deliveries) = app
        .get(&format!(
            "/v1/notifications?event={}",
            first["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(
        deliveries["data"].as_array().unwrap().len(),
        1,
        "no second fan-out"
    );

    let mut other = body.clone();
    other["payload"] = json!({"a": 2});
    let (status, conflict) = app.post("/v1/events", other).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(conflict["error"]["code"], json!("key_conflict"));

    // An amount written another way is the same event; one that f64 would
    // round to it is not.
    let amount = |amount: &str| {
        format!(
            r#"{{"event_type":"order.paid","owner":"k","key":"order-2:paid","payload":{{"amount":{amount}}},"delay":"1h"}}"#
        )
    };
    let (status, paid) = app
        .call_raw(Method::POST, "/v1/events", amount("12.50"))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{paid}");
    let (status, again) = app
        .call_raw(Method::POST, "/v1/events", amount("1.25e1"))
        .await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(again["id"], paid["id"]);
    let (status, conflict) = app
        .call_raw(Method::POST, "/v1/events", amount("12.5000000000000001"))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{conflict}");

    let mut elsewhere = body;
    elsewhere["owner"] = json!("l");
    let (status, _) = app.post("/v1/events", elsewhere).await;
    assert_eq!(status, StatusCode::CREATED, "keys are per owner");
}
both!(an_event_key_is_idempotent_per_owner);

async fn an_event_can_name_the_endpoints_it_goes_to(backend: Backend) {
    let app = backend.spawn().await;
    let a = app.endpoint(json!({"uid": "a", "owner": "n"})).await;
    app.endpoint(json!({"uid": "b", "owner": "n"})).await;
    app.endpoint(json!({"uid": "c", "owner": "n", "event_types": ["refund.*"]}))
        .await;
    app.endpoint(json!({"uid": "other", "owner": "o"})).await;
    let created = event(
        &app,
        json!({"event_type": "order.paid", "owner": "n", "payload": {}, "delay": "1h", "endpoints": [a["id"], "c"]}),
    )
    .await;
    assert_eq!(
        created["deliveries"],
        json!(1),
        "c is named but not subscribed"
    );
    let (_, listed) = app
        .get(&format!(
            "/v1/notifications?event={}",
            created["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(listed["data"][0]["endpoint_id"], a["id"]);

    let (status, refused) = app
        .post("/v1/events", json!({"event_type": "order.paid", "owner": "n", "payload": {}, "endpoints": ["a", "missing"]}))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(refused["error"]["code"], json!("unknown_endpoint"));
    assert_eq!(refused["error"]["field"], json!("endpoints[1]"));
    let (status, refused) = app
        .post("/v1/events", json!({"event_type": "order.paid", "owner": "n", "payload": {}, "endpoints": ["other"]}))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(refused["error"]["code"], json!("owner_mismatch"));
    let (_, events) = app.get("/v1/events?owner=n").await;
    assert_eq!(
        events["data"].as_array().unwrap().len(),
        1,
        "nothing half-written"
    );
}
both!(an_event_can_name_the_endpoints_it_goes_to);

async fn bad_events_and_patterns_are_refused_naming_the_field(backend: Backend) {
    let app = backend.spawn().await;
    for (pattern, field) in [("order.**", "event_types[0]"), (".paid", "event_types[0]")] {
        let (status, body) = app
            .post(
                "/v1/endpoints",
                json!({"url": "http://127.0.0.1:9/", "event_types": [pattern]}),
            )
            .await;
        assert_eq!(
            status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{pattern}: {body}"
        );
        assert_eq!(body["error"]["code"], json!("invalid_pattern"));
        assert_eq!(body["error"]["field"], json!(field));
    }
    let cases = [
        (json!({"owner": "x", "payload": {}}), "event_type"),
        (json!({"event_type": ".paid", "payload": {}}), "event_type"),
        (
            json!({"event_type": "order.*", "payload": {}}),
            "event_type",
        ),
        (
            json!({"event_type": "a", "owner": "bad owner", "payload": {}}),
            "owner",
        ),
        (json!({"event_type": "a"}), "payload"),
        (
            json!({"event_type": "a", "payload": {}, "body": "x"}),
            "body",
        ),
        (
            json!({"event_type": "a", "payload": {}, "headers": {"webhook-id": "x"}}),
            "headers.webhook-id",
        ),
        (
            json!({"event_type": "a", "payload": {}, "delay": "soon"}),
            "delay",
        ),
    ];
    for (body, field) in cases {
        let (status, answer) = app.post("/v1/events", body.clone()).await;
        assert!(
            status == StatusCode::UNPROCESSABLE_ENTITY || status == StatusCode::BAD_REQUEST,
            "{body}: {status} {answer}"
        );
        assert_eq!(answer["error"]["field"], json!(field), "{body}: {answer}");
    }
    let big = "x".repeat(262_145);
    let (status, answer) = app
        .post("/v1/events", json!({"event_type": "a", "body": big}))
        .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(answer["error"]["field"], json!("body"));
    let too_many: Vec<Value> = (0..1001)
        .map(|_| json!({"event_type": "a", "payload": {}}))
        .collect();
    let (status, answer) = app
        .post("/v1/events/batch", json!({"events": too_many}))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(answer["error"]["field"], json!("events[1000]"));
    let (status, batch) = app
        .post(
            "/v1/events/batch",
            json!({"events": [{"event_type": "a", "payload": {}}, {"event_type": "", "payload": {}}]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(batch["data"][0]["status"], json!(201));
    assert_eq!(batch["data"][1]["status"], json!(422));
    let (_, events) = app.get("/v1/events").await;
    assert_eq!(
        events["data"].as_array().unwrap().len(),
        1,
        "only the valid item of the batch is stored: {events}"
    );
}
both!(bad_events_and_patterns_are_refused_naming_the_field);

/// Issue #33: the same origin is not enough; only paths under the
/// endpoint's own get its credentials.
async fn an_endpoints_custom_headers_go_to_a_per_notification_url_only_under_its_own_url(
    backend: Backend,
) {
    let app = backend.spawn().await;
    let own = Receiver::start().await;
    let elsewhere = Receiver::start().await;
    app.endpoint(
        json!({"uid": "partner", "url": own.url("/hooks/a"), "headers": {"X-Api-Key": "s3cret"}}),
    )
    .await;
    let urls = [
        own.url("/hooks/a/order-1"),
        own.url("/hooks/a-evil"),
        own.url("/hooks/b"),
        own.url("/hooks/a/../b/dots"),
        elsewhere.url("/hooks/a/order-2"),
    ];
    for url in &urls {
        let (status, created) = app
            .post(
                "/v1/notifications",
                json!({"endpoint": "partner", "payload": {}, "url": url, "headers": {"X-Order": "1"}}),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{created}");
    }
    let under = own.wait_for("/hooks/a/order-1", 1, DEADLINE).await;
    assert_eq!(under[0].header("x-api-key"), Some("s3cret"));
    for (receiver, path) in [
        (&own, "/hooks/a-evil"),
        (&own, "/hooks/b"),
        (&own, "/hooks/b/dots"),
        (&elsewhere, "/hooks/a/order-2"),
    ] {
        let got = receiver.wait_for(path, 1, DEADLINE).await;
        assert_eq!(got[0].header("x-api-key"), None, "{path}");
        assert_eq!(got[0].header("x-order"), Some("1"), "{path}");
        assert!(got[0].header("webhook-signature").is_some(), "{path}");
    }
}
both!(an_endpoints_custom_headers_go_to_a_per_notification_url_only_under_its_own_url);

async fn a_per_notification_url_gets_the_endpoint_signature(backend: Backend) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    let endpoint = app
        .endpoint(json!({"uid": "shop", "url": receiver.url("/endpoint")}))
        .await;
    let url = receiver.url("/order-123/notify");
    let (status, created) = app
        .post(
            "/v1/notifications",
            json!({"endpoint": "shop", "payload": {"order": 123}, "url": url}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(created["url"], json!(url));
    let got = receiver.wait_for("/order-123/notify", 1, DEADLINE).await;
    standardwebhooks::Webhook::new(endpoint["secret"].as_str().unwrap())
        .unwrap()
        .verify(&got[0].body, &got[0].headers)
        .expect("signed with the endpoint's secret");
    assert!(receiver.received("/endpoint").is_empty());
    let id = created["id"].as_str().unwrap();
    let attempts = eventually(DEADLINE, "the attempt to be recorded", || async {
        let (_, page) = app.get(&format!("/v1/notifications/{id}/attempts")).await;
        let data = page["data"].as_array().cloned().unwrap_or_default();
        (!data.is_empty()).then_some(data)
    })
    .await;
    assert_eq!(
        attempts[0]["url"],
        json!(url),
        "the attempt shows where it went"
    );
    let (_, read) = app.get(&format!("/v1/notifications/{id}")).await;
    assert_eq!(read["url"], json!(url));

    for (bad, what) in [
        ("http://user:pw@127.0.0.1/x", "credentials"),
        ("http://10.1.2.3/notify", "a private address"),
        ("ftp://example.com/", "another scheme"),
    ] {
        let (status, answer) = app
            .post(
                "/v1/notifications",
                json!({"endpoint": "shop", "payload": {}, "url": bad}),
            )
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{what}: {answer}");
        assert_eq!(answer["error"]["code"], json!("invalid_url"), "{what}");
        assert_eq!(answer["error"]["field"], json!("url"), "{what}");
    }
}
both!(a_per_notification_url_gets_the_endpoint_signature);

/// Kills the real binary with SIGKILL while it fans an event out to 10,000
/// endpoints; the producer sends the event again (same key) to a new
/// process, as it would after losing its connection. Every endpoint then
/// gets the event exactly once.
#[sqlx::test]
async fn a_crash_during_fan_out_loses_no_delivery(_: PgPoolOptions, connect: PgConnectOptions) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    const ENDPOINTS: usize = 10_000;
    let receiver = Receiver::start().await;
    let secret = hookd::domain::secret::SigningSecret::generate();
    sqlx::query(
        "INSERT INTO endpoints (id, url, secret, schedule_ms, owner) \
         SELECT hookd_uuid_v7(), $1, $2, '{0,500}', 'bulk' FROM generate_series(1, $3)",
    )
    .bind(receiver.url("/bulk"))
    .bind(secret.as_str())
    .bind(ENDPOINTS as i32)
    .execute(&pool)
    .await
    .unwrap();
    let db = database_url(&pool);
    let prefix = new_prefix();
    let dir = std::env::temp_dir();
    let start = |log: &str| {
        let port = free_port();
        let process = HookdProcess::start_logged(
            &db,
            &redis_url(),
            &prefix,
            &[("HOOKD_API__TOKENS", &format!("[\"{TOKEN}\"]"))],
            &format!("127.0.0.1:{port}"),
            &dir.join(format!("{prefix}-{log}.log")),
        );
        (process, format!("http://127.0.0.1:{port}"))
    };
    let body = json!({"event_type": "order.paid", "owner": "bulk", "key": "order-9:paid", "payload": {"order": 9}, "delay": "2s"});
    let client = crate::helpers::http_client();
    let post = |base: String| {
        let (client, body) = (client.clone(), body.clone());
        async move {
            client
                .post(format!("{base}/v1/events"))
                .bearer_auth(TOKEN)
                .json(&body)
                .send()
                .await
        }
    };

    let (mut first, base) = start("first");
    HookdProcess::wait_ready(&base, DEADLINE).await;
    let request = tokio::spawn(post(base));
    // Kill it while the fan-out statement runs (or, on a fast machine, as
    // soon after as the test can see it).
    let kill_deadline = Instant::now() + DEADLINE;
    loop {
        let running: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'WITH input AS%' AND state = 'active'",
        )
        .fetch_one(&pool)
        .await
        .unwrap();
        if running > 0 || request.is_finished() || Instant::now() > kill_deadline {
            break;
        }
        tokio::task::yield_now().await;
    }
    first.signal("KILL");
    first.wait(DEADLINE).await;
    let first_answer = request.await.unwrap();
    println!(
        "killed during the fan-out; the first request got {:?}",
        first_answer.as_ref().map(|r| r.status())
    );

    let (_second, base) = start("second");
    HookdProcess::wait_ready(&base, DEADLINE).await;
    let answer = post(base).await.expect("the second process answers");
    assert!(
        answer.status() == StatusCode::CREATED || answer.status() == StatusCode::OK,
        "{}",
        answer.status()
    );
    let created: Value = answer.json().await.unwrap();
    assert_eq!(created["deliveries"], json!(ENDPOINTS));
    let (distinct, total) = receiver
        .wait_distinct("/bulk", ENDPOINTS, Duration::from_secs(120))
        .await;
    assert_eq!(distinct, ENDPOINTS);
    // A moment for a stray second delivery to show, polled, not slept: the
    // counts must stay put while the dispatcher has nothing left.
    let events: i64 = sqlx::query_scalar("SELECT count(*) FROM events")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(events, 1, "one event, however many requests");
    eventually(DEADLINE, "every delivery recorded as succeeded", || async {
        let succeeded: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM notifications WHERE status = 'succeeded' AND event_id IS NOT NULL",
        )
        .fetch_one(&pool)
        .await
        .unwrap();
        (succeeded == ENDPOINTS as i64).then_some(())
    })
    .await;
    assert_eq!(
        receiver.distinct("/bulk"),
        (ENDPOINTS, ENDPOINTS),
        "each endpoint got the event exactly once ({total} requests when the last arrived)"
    );
}

/// An event of owner `r` (one endpoint) whose delivery stays pending for an
/// hour: retention keeps it.
async fn kept_event(app: &TestApp) -> Value {
    event(
        app,
        json!({"event_type": "a.b", "owner": "r", "payload": {}, "delay": "1h"}),
    )
    .await
}

/// An event of an owner with no endpoints: no deliveries, so retention
/// deletes it.
async fn event_without_deliveries(app: &TestApp) -> Value {
    event(
        app,
        json!({"event_type": "a.b", "owner": "nobody", "payload": {}}),
    )
    .await
}

async fn retention_deletes_an_event_only_once_its_deliveries_are_gone(backend: Backend) {
    let app = backend.spawn().await;
    app.endpoint(json!({"owner": "r"})).await;
    let kept = kept_event(&app).await;
    let gone = event_without_deliveries(&app).await;
    assert_eq!(gone["deliveries"], json!(0));
    let store = backend.housekeeping();
    let later = chrono::Utc::now() + chrono::Duration::minutes(1);
    assert_eq!(
        store.purge_events(later, None, 100).await.unwrap(),
        (1, None)
    );
    let (status, _) = app
        .get(&format!("/v1/events/{}", gone["id"].as_str().unwrap()))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = app
        .get(&format!("/v1/events/{}", kept["id"].as_str().unwrap()))
        .await;
    assert_eq!(status, StatusCode::OK, "its delivery is still pending");
    assert_eq!(
        store.purge_events(later, None, 100).await.unwrap(),
        (0, None)
    );
}
both!(retention_deletes_an_event_only_once_its_deliveries_are_gone);

async fn retention_walks_events_once_past_those_it_keeps(backend: Backend) {
    let app = backend.spawn().await;
    app.endpoint(json!({"owner": "r"})).await;
    // Three kept (a delivery pending), then one whose deliveries are gone.
    for _ in 0..3 {
        kept_event(&app).await;
    }
    let gone = event_without_deliveries(&app).await;
    let store = backend.housekeeping();
    let later = chrono::Utc::now() + chrono::Duration::minutes(1);
    // Two at a time: the first batch deletes nothing and says where to go
    // on; the second reaches the one to delete and ends the walk.
    let (deleted, next) = store.purge_events(later, None, 2).await.unwrap();
    assert_eq!(deleted, 0);
    let next = next.expect("a full batch says where to go on");
    assert_eq!(
        store.purge_events(later, Some(next), 2).await.unwrap(),
        (1, Some(gone["id"].as_str().unwrap().parse().unwrap()))
    );
    let (status, _) = app
        .get(&format!("/v1/events/{}", gone["id"].as_str().unwrap()))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}
both!(retention_walks_events_once_past_those_it_keeps);
