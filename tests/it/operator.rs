//! Operator events: `notification.failed` and `endpoint.disabled`, received
//! by a real receiver and verified with the Standard Webhooks library, and
//! the automatic disabling of an endpoint whose every attempt has failed.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::backends::Backend;
use crate::helpers::{eventually, TestApp};
use crate::receiver::{Receiver, Reply};

const DEADLINE: Duration = Duration::from_secs(15);
const OPERATOR_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const OPERATOR_ENDPOINT: &str = "00000000-0000-7000-8000-00000000000f";

async fn spawn_with_operator(backend: &Backend, operator: &Receiver, extra: &str) -> TestApp {
    let overrides = format!(
        "[operator]\nurl = \"{}\"\nsecret = \"{OPERATOR_SECRET}\"\n{extra}",
        operator.url("/ops")
    );
    backend.spawn_with(&overrides).await
}

/// The operator events received so far, verified and parsed.
fn events(operator: &Receiver) -> Vec<Value> {
    let webhook = standardwebhooks::Webhook::new(OPERATOR_SECRET).unwrap();
    operator
        .received("/ops")
        .iter()
        .map(|request| {
            webhook
                .verify(&request.body, &request.headers)
                .expect("operator events are signed with operator.secret");
            serde_json::from_slice(&request.body).expect("operator events are JSON")
        })
        .collect()
}

fn an_hour_and_a_bit_ago() -> chrono::DateTime<chrono::Utc> {
    chrono::Utc::now() - chrono::Duration::minutes(61)
}

async fn wait_event(operator: &Receiver, kind: &str) -> Value {
    eventually(DEADLINE, &format!("a {kind} operator event"), || async {
        events(operator)
            .into_iter()
            .find(|e| e["type"] == json!(kind))
    })
    .await
}

async fn a_notification_that_ends_failed_is_reported_to_the_operator_webhook_signed(
    backend: Backend,
) {
    let operator = Receiver::start().await;
    let receiver = Receiver::start().await;
    receiver.reply("/down", vec![Reply::body(503, "maintenance")]);
    let app = spawn_with_operator(&backend, &operator, "").await;
    let endpoint = app
        .endpoint(json!({"uid": "shop", "url": receiver.url("/down"), "schedule": ["0s", "100ms"]}))
        .await;
    let (status, created) = app
        .post(
            "/v1/notifications",
            json!({"endpoint": "shop", "key": "order-7", "event_type": "order.paid", "payload": {}}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");

    let event = wait_event(&operator, "notification.failed").await;
    let data = &event["data"];
    assert_eq!(data["notification_id"], created["id"]);
    assert_eq!(data["endpoint_id"], endpoint["id"]);
    assert_eq!(data["key"], json!("order-7"));
    assert_eq!(data["event_type"], json!("order.paid"));
    assert_eq!(data["attempts"], json!(2));
    assert_eq!(data["last_status_code"], json!(503));
    assert!(event["timestamp"].is_string(), "{event}");
    let request = &operator.received("/ops")[0];
    assert_eq!(
        request.header("hookd-event-type"),
        Some("notification.failed")
    );

    // The event is itself a notification, with its history in the API.
    let (_, listed) = app
        .get("/v1/notifications?event_type=notification.failed")
        .await;
    let rows = listed["data"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{listed}");
    assert_eq!(rows[0]["endpoint_id"], json!(OPERATOR_ENDPOINT));
}
both!(a_notification_that_ends_failed_is_reported_to_the_operator_webhook_signed);

async fn a_pulled_notification_whose_last_lease_runs_out_is_reported_as_failed(backend: Backend) {
    let operator = Receiver::start().await;
    let app = spawn_with_operator(&backend, &operator, "").await;
    let (status, endpoint) = app
        .post(
            "/v1/endpoints",
            json!({"uid": "ledger", "delivery": "pull", "schedule": ["0s"]}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{endpoint}");
    let (_, created) = app
        .post(
            "/v1/notifications",
            json!({"endpoint": "ledger", "key": "order-8", "payload": {}}),
        )
        .await;
    let (_, taken) = app
        .post("/v1/endpoints/ledger/pull", json!({"lease": "1s"}))
        .await;
    assert_eq!(taken["data"][0]["id"], created["id"], "{taken}");

    // Never acked: the only attempt's lease runs out, and it fails.
    let event = wait_event(&operator, "notification.failed").await;
    let data = &event["data"];
    assert_eq!(data["notification_id"], created["id"]);
    assert_eq!(data["key"], json!("order-8"));
    assert_eq!(data["attempts"], json!(1));
    assert!(
        data["last_error"]
            .as_str()
            .is_some_and(|e| e.starts_with("lease_expired")),
        "{event}"
    );
}
both!(a_pulled_notification_whose_last_lease_runs_out_is_reported_as_failed);

async fn the_operator_endpoint_is_neither_listed_nor_changeable_through_the_api(backend: Backend) {
    let operator = Receiver::start().await;
    let app = spawn_with_operator(&backend, &operator, "").await;
    eventually(DEADLINE, "the operator endpoint to exist", || async {
        let count = backend
            .count("SELECT count(*) FROM endpoints WHERE managed")
            .await;
        (count == 1).then_some(())
    })
    .await;
    let (_, list) = app.get("/v1/endpoints").await;
    assert_eq!(list["data"], json!([]));
    let path = format!("/v1/endpoints/{OPERATOR_ENDPOINT}");
    assert_eq!(app.get(&path).await.0, StatusCode::NOT_FOUND);
    let (status, _) = app
        .call(
            Method::PATCH,
            &path,
            Some(json!({"url": "http://127.0.0.1:1/x"})),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(
        app.call(Method::DELETE, &path, None).await.0,
        StatusCode::NOT_FOUND
    );
    let (status, body) = app
        .post(
            "/v1/notifications",
            json!({"endpoint": OPERATOR_ENDPOINT, "payload": {}}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
}
both!(the_operator_endpoint_is_neither_listed_nor_changeable_through_the_api);

async fn failures_mark_an_endpoint_failing_and_a_success_clears_it(backend: Backend) {
    let receiver = Receiver::start().await;
    receiver.reply("/flaky", vec![Reply::status(500), Reply::status(200)]);
    let app = backend.spawn().await;
    app.endpoint(json!({"uid": "flaky", "url": receiver.url("/flaky"), "schedule": ["0s", "1s"]}))
        .await;
    app.post(
        "/v1/notifications",
        json!({"endpoint": "flaky", "payload": {}}),
    )
    .await;
    let failing = eventually(DEADLINE, "the endpoint to be failing", || async {
        let (_, endpoint) = app.get("/v1/endpoints/flaky").await;
        endpoint["failing_since"].as_str().map(str::to_string)
    })
    .await;
    assert!(!failing.is_empty());
    eventually(DEADLINE, "the success to clear failing_since", || async {
        let (_, endpoint) = app.get("/v1/endpoints/flaky").await;
        endpoint["failing_since"].is_null().then_some(())
    })
    .await;
}
both!(failures_mark_an_endpoint_failing_and_a_success_clears_it);

async fn an_endpoint_moved_to_pull_stops_failing_and_failing_push_endpoints_are_still_disabled(
    backend: Backend,
) {
    let operator = Receiver::start().await;
    let receiver = Receiver::start().await;
    receiver.reply("/down", vec![Reply::status(500)]);
    receiver.reply("/moved", vec![Reply::status(500)]);
    let app = spawn_with_operator(
        &backend,
        &operator,
        "[dispatcher]\ndisable_failing_endpoints_after_hours = 1\n",
    )
    .await;
    let mut ids = Vec::new();
    for uid in ["down", "moved"] {
        let endpoint = app.endpoint(
            json!({"uid": uid, "url": receiver.url(&format!("/{uid}")), "schedule": ["0s", "1h"]}),
        )
        .await;
        ids.push(endpoint["id"].as_str().unwrap().parse().unwrap());
        app.post("/v1/notifications", json!({"endpoint": uid, "payload": {}}))
            .await;
        let path = format!("/v1/endpoints/{uid}");
        eventually(DEADLINE, "the endpoint to be failing", || async {
            let (_, e) = app.get(&path).await;
            e["failing_since"].is_string().then_some(())
        })
        .await;
    }

    let (status, moved) = app
        .call(
            Method::PATCH,
            "/v1/endpoints/moved",
            Some(json!({"delivery": "pull"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{moved}");
    assert!(moved["failing_since"].is_null(), "{moved}");

    // Both an hour and a bit into their failures, as a release before this
    // one could leave a pull endpoint: its missing URL must not stop the
    // check for every other endpoint.
    for id in ids {
        backend.fail_since(id, an_hour_and_a_bit_ago()).await;
    }
    let event = wait_event(&operator, "endpoint.disabled").await;
    assert_eq!(event["data"]["endpoint_uid"], json!("down"));
    assert_eq!(
        app.get("/v1/endpoints/down").await.1["disabled"],
        json!(true)
    );
    assert_eq!(
        app.get("/v1/endpoints/moved").await.1["disabled"],
        json!(false)
    );
}
both!(an_endpoint_moved_to_pull_stops_failing_and_failing_push_endpoints_are_still_disabled);

async fn an_endpoint_failing_for_the_configured_period_is_disabled_and_reported(backend: Backend) {
    let operator = Receiver::start().await;
    let receiver = Receiver::start().await;
    receiver.reply("/down", vec![Reply::status(500)]);
    let app = spawn_with_operator(
        &backend,
        &operator,
        "[dispatcher]\ndisable_failing_endpoints_after_hours = 1\n",
    )
    .await;
    let endpoint = app
        .endpoint(json!({"uid": "down", "url": receiver.url("/down"), "schedule": ["0s", "1h"]}))
        .await;
    app.post(
        "/v1/notifications",
        json!({"endpoint": "down", "payload": {}}),
    )
    .await;
    receiver.wait_for("/down", 1, DEADLINE).await;
    eventually(DEADLINE, "the endpoint to be failing", || async {
        let (_, e) = app.get("/v1/endpoints/down").await;
        e["failing_since"].is_string().then_some(())
    })
    .await;
    assert_eq!(
        app.get("/v1/endpoints/down").await.1["disabled"],
        json!(false)
    );

    // An hour and a bit of failures, without waiting an hour.
    let id = endpoint["id"].as_str().unwrap().parse().unwrap();
    backend.fail_since(id, an_hour_and_a_bit_ago()).await;
    let event = wait_event(&operator, "endpoint.disabled").await;
    assert_eq!(event["data"]["endpoint_id"], endpoint["id"]);
    assert_eq!(event["data"]["endpoint_uid"], json!("down"));
    assert_eq!(event["data"]["reason"], json!("failing"));
    let (_, disabled) = app.get("/v1/endpoints/down").await;
    assert_eq!(disabled["disabled"], json!(true));
    assert_eq!(disabled["disabled_reason"], json!("failing"));

    // Re-enabling starts the clock again instead of disabling at once.
    let (status, enabled) = app
        .call(
            Method::PATCH,
            "/v1/endpoints/down",
            Some(json!({"disabled": false})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{enabled}");
    assert_eq!(enabled["disabled"], json!(false));
    assert!(enabled["failing_since"].is_null(), "{enabled}");
    assert!(enabled["disabled_reason"].is_null(), "{enabled}");
    assert_eq!(
        events(&operator)
            .iter()
            .filter(|e| e["type"] == json!("endpoint.disabled"))
            .count(),
        1
    );
}
both!(an_endpoint_failing_for_the_configured_period_is_disabled_and_reported);

async fn a_failing_operator_webhook_is_never_listed_among_the_failing_endpoints(backend: Backend) {
    let operator = Receiver::start().await;
    operator.reply("/ops", vec![Reply::status(503)]);
    let receiver = Receiver::start().await;
    receiver.reply("/down", vec![Reply::status(503)]);
    let app = spawn_with_operator(&backend, &operator, "").await;
    app.endpoint(json!({"uid": "shop", "url": receiver.url("/down"), "schedule": ["0s"]}))
        .await;
    app.notify(json!({"endpoint": "shop", "payload": {"order": 1}}))
        .await;
    // The failure is reported to the operator's webhook, which fails too.
    operator.wait_for("/ops", 1, DEADLINE).await;
    let stats = eventually(DEADLINE, "the shop's failure counted", || async {
        let (_, stats) = app.get("/v1/stats").await;
        (stats["failing_endpoints"].as_array()?.len() == 1).then_some(stats)
    })
    .await;
    // Give the operator's failed attempt time to be counted too, then
    // look again: its URL (a secret of the configuration) is never shown.
    eventually(DEADLINE, "the operator's attempt recorded", || async {
        let (_, stats) = app.get("/v1/stats").await;
        (stats["totals"]["failed_attempts"].as_i64()? >= 2).then_some(())
    })
    .await;
    let (_, stats_now) = app.get("/v1/stats").await;
    let listed: Vec<&Value> = stats_now["failing_endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["endpoint_id"])
        .collect();
    assert!(
        !listed.contains(&&json!(OPERATOR_ENDPOINT)),
        "{stats_now} (before: {stats})"
    );
    assert!(!stats_now.to_string().contains("/ops"), "{stats_now}");
}
both!(a_failing_operator_webhook_is_never_listed_among_the_failing_endpoints);
