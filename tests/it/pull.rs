//! Pull consumption (docs/design.md §10) end to end: taking, acking, nacking
//! and what is refused, on each backend (PostgreSQL and Redis, SQLite and
//! its in-process index). Leases running out, waiting consumers and more
//! than one process are in `pull_leases`.

use std::collections::HashSet;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use crate::backends::Backend;
use crate::helpers::{spawn_app_with, RedisServer, TestApp};
use crate::receiver::Receiver;

const DEADLINE: std::time::Duration = std::time::Duration::from_secs(20);

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
pub(crate) async fn send(
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

async fn a_consumer_takes_due_notifications_earliest_first_and_acks_or_nacks_them(
    backend: Backend,
) {
    let app = backend.spawn().await;
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
both!(a_consumer_takes_due_notifications_earliest_first_and_acks_or_nacks_them);

async fn a_pull_without_a_body_takes_with_the_defaults(backend: Backend) {
    let app = backend.spawn().await;
    let endpoint = pull_endpoint(&app, json!({})).await;
    let id = notify(&app, &endpoint, json!({})).await;
    let (status, pulled) = app
        .call_raw(Method::POST, &format!("/v1/endpoints/{endpoint}/pull"), "")
        .await;
    assert_eq!(status, StatusCode::OK, "{pulled}");
    assert_eq!(pulled["data"][0]["id"], json!(id), "{pulled}");
}
both!(a_pull_without_a_body_takes_with_the_defaults);

async fn a_consumer_token_pulls_its_own_endpoint_and_nothing_else(backend: Backend) {
    let app = backend.spawn().await;
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
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("consumer token"), "{message}");
}
both!(a_consumer_token_pulls_its_own_endpoint_and_nothing_else);

async fn bad_pull_requests_are_refused_and_change_nothing(backend: Backend) {
    let app = backend.spawn().await;
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
        (json!({"max": -1}), "max"),
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
        let message = body["error"]["message"].as_str().unwrap();
        assert!(!message.contains("4294967295"), "{request}: {message}");
        if field == "wait" {
            assert!(
                !message.contains("5m"),
                "an example out of range: {message}"
            );
        }
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
    // In a batch of another endpoint, the item names its place.
    let elsewhere = pull_endpoint(&app, json!({})).await;
    let (status, body) = app
        .post(
            &format!("/v1/endpoints/{elsewhere}/ack"),
            json!({"receipts": [receipt(&other)]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body["data"][0]["error"]["code"], "receipt_mismatch",
        "{body}"
    );
    assert_eq!(body["data"][0]["error"]["field"], "receipts[0]", "{body}");
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
both!(bad_pull_requests_are_refused_and_change_nothing);

async fn switching_an_endpoint_between_push_and_pull_moves_its_pending_notifications(
    backend: Backend,
) {
    let app = backend.spawn().await;
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
    // The lease the switch ended is the first attempt, and the push the
    // second: the receiver can tell it may have seen this one before.
    assert_eq!(delivered[0].header("hookd-attempt"), Some("2"));
    let listed = crate::helpers::eventually(DEADLINE, "the push attempt recorded", || async {
        let (_, page) = app.get(&format!("/v1/notifications/{id}/attempts")).await;
        let list = page["data"].as_array().cloned().unwrap_or_default();
        (list.len() == 2).then_some(list)
    })
    .await;
    assert_eq!(
        (&listed[0]["number"], &listed[0]["error"]["code"]),
        (&json!(1), &json!("switched_to_push")),
        "{listed:?}"
    );
    assert_eq!(
        (&listed[1]["number"], &listed[1]["status_code"]),
        (&json!(2), &json!(200)),
        "{listed:?}"
    );
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
both!(switching_an_endpoint_between_push_and_pull_moves_its_pending_notifications);

async fn an_event_fans_out_to_pull_endpoints_too(backend: Backend) {
    let app = backend.spawn().await;
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
both!(an_event_fans_out_to_pull_endpoints_too);

#[sqlx::test]
async fn pull_notifications_survive_a_flush_of_redis(_: PgPoolOptions, connect: PgConnectOptions) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
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
