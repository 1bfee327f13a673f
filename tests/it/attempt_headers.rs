//! An attempt's headers (docs/design.md §18) on each backend, through a
//! real receiver: the request headers the API shows are the ones the
//! receiver got (the signature verifies over them), a custom header by its
//! name only, the response's headers as the receiver answered them; none
//! for a delivery at its first attempt (kept in its notification's row);
//! and the attempt a retry started is marked.

use std::time::Duration;

use axum::http::{HeaderMap, HeaderName, HeaderValue};
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::backends::Backend;
use crate::helpers::{eventually, TestApp};
use crate::receiver::{Receiver, Reply};

const DEADLINE: Duration = Duration::from_secs(30);

/// The notification's first `count` attempts, once recorded.
async fn attempts(app: &TestApp, id: &str, count: usize) -> Vec<Value> {
    eventually(DEADLINE, "the attempts to be recorded", || async {
        let (_, page) = app.get(&format!("/v1/notifications/{id}/attempts")).await;
        let data = page["data"].as_array().cloned().unwrap_or_default();
        (data.len() >= count).then_some(data)
    })
    .await
}

/// `(name, value)` of each header line of an attempt's `field`.
fn lines(attempt: &Value, field: &str) -> Vec<(String, Option<String>)> {
    attempt[field]
        .as_array()
        .unwrap_or_else(|| panic!("{field} of {attempt}"))
        .iter()
        .map(|line| {
            (
                line["name"].as_str().unwrap().to_string(),
                line["value"].as_str().map(str::to_string),
            )
        })
        .collect()
}

/// The request headers an attempt shows with a value, as a header map.
fn shown_request(attempt: &Value) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in lines(attempt, "request_headers") {
        if let Some(value) = value {
            map.insert(
                HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(&value).unwrap(),
            );
        }
    }
    map
}

async fn an_attempt_shows_the_headers_the_receiver_got_and_the_ones_it_answered_with(
    backend: Backend,
) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    receiver.reply(
        "/hook",
        vec![
            Reply::With(503, "busy", vec![("x-reason", "maintenance")]),
            Reply::With(200, "ok", vec![("x-request-id", "r-2")]),
        ],
    );
    let endpoint = app
        .endpoint(json!({"uid": "shop", "url": receiver.url("/hook"),
            "headers": {"X-Api-Key": "s3cret-endpoint"}, "schedule": ["0s", "1s"]}))
        .await;
    let id = app
        .notify(json!({"endpoint": "shop", "event_type": "order.paid",
            "payload": {"order": 7}, "headers": {"X-Order": "s3cret-7"}}))
        .await;
    let got = receiver.wait_for("/hook", 2, DEADLINE).await;
    let shown = attempts(&app, &id, 2).await;
    let verifier = standardwebhooks::Webhook::new(endpoint["secret"].as_str().unwrap()).unwrap();
    for (attempt, request) in shown.iter().zip(&got) {
        let number = &attempt["number"];
        let headers = shown_request(attempt);
        // Each header shown with its value is the one the receiver got.
        for (name, value) in &headers {
            assert_eq!(
                request.headers.get(name),
                Some(value),
                "attempt {number}: {name}"
            );
        }
        for name in [
            "webhook-id",
            "webhook-timestamp",
            "webhook-signature",
            "content-type",
            "user-agent",
            "hookd-attempt",
            "hookd-event-type",
        ] {
            assert!(headers.contains_key(name), "attempt {number} shows {name}");
        }
        // So the signature verifies over what the API shows.
        verifier
            .verify(&request.body, &headers)
            .unwrap_or_else(|e| panic!("attempt {number}: {e:?}"));
        // The custom headers by their names only.
        let custom: Vec<_> = lines(attempt, "request_headers")
            .into_iter()
            .filter(|(_, value)| value.is_none())
            .map(|(name, _)| name)
            .collect();
        assert_eq!(custom, ["x-api-key", "x-order"], "attempt {number}");
        assert_eq!(attempt["retried"], json!(false));
    }
    let page = app.get(&format!("/v1/notifications/{id}/attempts")).await.1;
    assert!(
        !page.to_string().contains("s3cret"),
        "no custom header's value is shown: {page}"
    );
    let answered = |attempt: &Value, name: &str| {
        lines(attempt, "response_headers")
            .into_iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, value)| value)
    };
    assert_eq!(
        answered(&shown[0], "x-reason").as_deref(),
        Some("maintenance")
    );
    assert_eq!(answered(&shown[1], "x-request-id").as_deref(), Some("r-2"));
    assert_eq!(answered(&shown[1], "content-length").as_deref(), Some("2"));

    // Delivered at its first attempt, the attempt is kept in the
    // notification's row, without its headers (the write most deliveries
    // make stays as small as it was): the API says none were kept.
    let at_once = app
        .notify(json!({"endpoint": "shop", "payload": {"order": 8}}))
        .await;
    let [kept] = attempts(&app, &at_once, 1).await.try_into().unwrap();
    assert_eq!(kept["outcome"], json!("succeeded"));
    assert_eq!(kept["request_headers"], json!(null));
    assert_eq!(kept["response_headers"], json!(null));
}
both!(an_attempt_shows_the_headers_the_receiver_got_and_the_ones_it_answered_with);

async fn the_attempt_a_retry_starts_is_marked_and_the_schedules_own_are_not(backend: Backend) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    receiver.reply("/hook", vec![Reply::status(500), Reply::status(200)]);
    app.endpoint(json!({"uid": "shop", "url": receiver.url("/hook"), "schedule": ["0s"]}))
        .await;
    let id = app.notify(json!({"endpoint": "shop", "payload": {}})).await;
    eventually(DEADLINE, "the notification to fail", || async {
        let (_, n) = app.get(&format!("/v1/notifications/{id}")).await;
        (n["status"] == json!("failed")).then_some(())
    })
    .await;
    let (status, answer) = app
        .post(&format!("/v1/notifications/{id}/retry"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let shown = attempts(&app, &id, 2).await;
    let marks: Vec<_> = shown
        .iter()
        .map(|a| {
            (
                a["number"].clone(),
                a["outcome"].clone(),
                a["retried"].clone(),
            )
        })
        .collect();
    assert_eq!(
        marks,
        [
            (json!(1), json!("failed"), json!(false)),
            (json!(2), json!("succeeded"), json!(true)),
        ]
    );
}
both!(the_attempt_a_retry_starts_is_marked_and_the_schedules_own_are_not);
