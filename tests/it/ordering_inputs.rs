//! Ordered delivery per key (docs/design.md §17), from the paths that
//! put notifications in a key's line: a batch's or an event's
//! deliveries, a recover, and what the API refuses. On each backend.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::backends::Backend;
use crate::ordering::{read, sequences, wait_status, DEADLINE};
use crate::receiver::{Receiver, Reply};

async fn an_order_key_or_an_ordering_out_of_bounds_is_refused_naming_the_field(backend: Backend) {
    let app = backend.spawn_with("[dispatcher]\nenabled = false\n").await;
    let endpoint = app.endpoint(json!({})).await;
    let endpoint = endpoint["id"].as_str().unwrap();
    for key in [
        json!(""),
        json!("k".repeat(257)),
        json!("a\u{0}b"),
        json!(7),
    ] {
        let (status, refused) = app
            .post(
                "/v1/notifications",
                json!({"endpoint": endpoint, "payload": {}, "order_key": key}),
            )
            .await;
        // 422 for a value out of bounds, 400 for one of another type.
        assert!(
            matches!(
                status,
                StatusCode::UNPROCESSABLE_ENTITY | StatusCode::BAD_REQUEST
            ),
            "{key}: {status} {refused}"
        );
        assert!(refused.to_string().contains("order_key"), "{refused}");
    }
    for fields in [
        json!({"ordering": "sideways"}),
        json!({"ordering_on_failure": "retry"}),
    ] {
        let (status, refused) = app
            .call(
                Method::PATCH,
                &format!("/v1/endpoints/{endpoint}"),
                Some(fields.clone()),
            )
            .await;
        assert!(
            matches!(
                status,
                StatusCode::UNPROCESSABLE_ENTITY | StatusCode::BAD_REQUEST
            ),
            "{fields}: {status} {refused}"
        );
        let field = fields.as_object().unwrap().keys().next().unwrap().clone();
        assert!(refused.to_string().contains(&field), "{refused}");
    }
    // A key of 256 bytes is one.
    let id = app
        .notify(json!({"endpoint": endpoint, "payload": {}, "order_key": "é".repeat(128)}))
        .await;
    assert_eq!(read(&app, &id).await["order_key"], json!("é".repeat(128)));
}
both!(an_order_key_or_an_ordering_out_of_bounds_is_refused_naming_the_field);

async fn an_events_deliveries_to_an_ordered_endpoint_follow_its_order_key(backend: Backend) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    receiver.reply("/erp", vec![Reply::status(500), Reply::status(200)]);
    let owner = "merchant-5";
    let ordered = app
        .endpoint(json!({
            "url": receiver.url("/erp"), "owner": owner, "ordering": "key",
            "schedule": ["0s", "300ms"],
        }))
        .await;
    app.endpoint(json!({"url": receiver.url("/plain"), "owner": owner}))
        .await;
    let mut events = Vec::new();
    for status in ["paid", "refunded"] {
        let (code, event) = app
            .post(
                "/v1/events",
                json!({"event_type": format!("order.{status}"), "owner": owner,
                    "order_key": "order-5", "payload": {"status": status}}),
            )
            .await;
        assert_eq!(code, StatusCode::CREATED, "{event}");
        assert_eq!(event["order_key"], "order-5", "{event}");
        events.push(event["id"].as_str().unwrap().to_string());
    }
    let erp = receiver.wait_for("/erp", 3, DEADLINE).await;
    let bodies: Vec<Value> = erp
        .iter()
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect();
    assert_eq!(
        bodies,
        [
            json!({"status": "paid"}),
            json!({"status": "paid"}),
            json!({"status": "refunded"})
        ],
        "the refund waited for the payment's retry"
    );
    assert_eq!(sequences(&erp), [1, 1, 2]);
    let plain = receiver.wait_for("/plain", 2, DEADLINE).await;
    assert!(plain.iter().all(|r| r.header("webhook-sequence").is_none()));
    let (_, deliveries) = app
        .get(&format!(
            "/v1/notifications?endpoint={}",
            ordered["id"].as_str().unwrap()
        ))
        .await;
    for delivery in deliveries["data"].as_array().unwrap() {
        assert_eq!(delivery["order_key"], "order-5", "{delivery}");
    }
}
both!(an_events_deliveries_to_an_ordered_endpoint_follow_its_order_key);

async fn a_recovered_series_goes_back_in_its_keys_line_in_creation_order(backend: Backend) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    let path = |n: usize| format!("/recovered/{n}");
    for n in 1..=3 {
        receiver.reply(&path(n), vec![Reply::status(500)]);
    }
    let endpoint = app
        .endpoint(json!({"url": receiver.url("/recovered"), "ordering": "key", "schedule": ["0s"]}))
        .await;
    let endpoint = endpoint["id"].as_str().unwrap();
    let since = chrono::Utc::now() - chrono::Duration::minutes(1);
    let mut ids = Vec::new();
    for n in 1..=3 {
        let body = json!({"endpoint": endpoint, "payload": {}, "order_key": "order-3",
            "url": receiver.url(&path(n))});
        ids.push(app.notify(body).await);
    }
    for id in &ids {
        wait_status(&app, id, "failed").await;
    }
    // The first answers after a pause: without order, the others would
    // arrive meanwhile.
    const PAUSE: Duration = Duration::from_millis(500);
    receiver.reply(&path(1), vec![Reply::Slow(PAUSE)]);
    for n in 2..=3 {
        receiver.reply(&path(n), vec![Reply::status(200)]);
    }
    let (status, operation) = app
        .post(
            &format!("/v1/endpoints/{endpoint}/recover"),
            json!({"since": since.to_rfc3339()}),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{operation}");
    for id in &ids {
        wait_status(&app, id, "succeeded").await;
    }
    // Each path's second request is its recovered attempt.
    let recovered: Vec<chrono::DateTime<chrono::Utc>> =
        (1..=3).map(|n| receiver.received(&path(n))[1].at).collect();
    assert!(
        recovered[1] - recovered[0] >= chrono::Duration::from_std(PAUSE).unwrap(),
        "the second went once the first was answered: {recovered:?}"
    );
    assert!(recovered[2] > recovered[1], "{recovered:?}");
}
both!(a_recovered_series_goes_back_in_its_keys_line_in_creation_order);

/// Ordering turned off and on again: what is still pending of a key from
/// before (one ordered then, one created while ordering was off) goes
/// back in its key's line in creation order, numbered on, and a
/// notification created after waits behind them, where it once went
/// first. Once they end (here cancelled), it goes, with its sequence.
async fn ordering_turned_on_again_puts_what_is_pending_back_in_line_before_what_comes_next(
    backend: Backend,
) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    let endpoint = app
        .endpoint(json!({"url": receiver.url("/again"), "ordering": "key"}))
        .await;
    let endpoint = endpoint["id"].as_str().unwrap();
    let path = format!("/v1/endpoints/{endpoint}");
    let later = |n: i64| json!({"endpoint": endpoint, "payload": {"n": n}, "order_key": "order-9", "delay": "1h"});
    let first = app.notify(later(1)).await;
    let turn = |ordering: &'static str| {
        let (app, path) = (&app, &path);
        async move {
            let (status, body) = app
                .call(Method::PATCH, path, Some(json!({"ordering": ordering})))
                .await;
            assert_eq!(status, StatusCode::OK, "{body}");
        }
    };
    turn("none").await;
    let second = app.notify(later(2)).await;
    assert_eq!(read(&app, &second).await["sequence"], Value::Null);
    turn("key").await;
    let third = app
        .notify(json!({"endpoint": endpoint, "payload": {"n": 3}, "order_key": "order-9"}))
        .await;

    let (first_read, second_read, third_read) = (
        read(&app, &first).await,
        read(&app, &second).await,
        read(&app, &third).await,
    );
    assert_eq!(first_read["sequence"], 1, "{first_read}");
    assert_eq!(first_read["waiting"]["reason"], "scheduled", "{first_read}");
    assert_eq!(second_read["sequence"], 2, "{second_read}");
    assert_eq!(
        second_read["waiting"]["behind"],
        json!(first),
        "{second_read}"
    );
    assert_eq!(third_read["sequence"], 3, "{third_read}");
    assert_eq!(third_read["waiting"]["reason"], "ordering", "{third_read}");
    assert_eq!(
        third_read["waiting"]["behind"],
        json!(second),
        "{third_read}"
    );
    assert!(receiver.received("/again").is_empty(), "nothing went ahead");

    for id in [&first, &second] {
        let (status, body) = app
            .post(&format!("/v1/notifications/{id}/cancel"), json!({}))
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    wait_status(&app, &third, "succeeded").await;
    let got = receiver.wait_for("/again", 1, DEADLINE).await;
    assert_eq!(sequences(&got), [3]);
}
both!(ordering_turned_on_again_puts_what_is_pending_back_in_line_before_what_comes_next);
