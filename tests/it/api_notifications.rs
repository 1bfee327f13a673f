use std::time::Duration;

use chrono::{DateTime, Datelike, Utc};
use hookd::domain::status::Status;
use hookd::due::IndexState;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use uuid::Uuid;

use crate::backends::Backend;
use crate::helpers::{eventually, TestApp};

fn time(value: &Value) -> DateTime<Utc> {
    serde_json::from_value(value.clone()).unwrap_or_else(|_| panic!("{value} is a time"))
}

fn id(value: &Value) -> Uuid {
    value["id"].as_str().unwrap().parse().unwrap()
}

/// Waits until the index is complete: Redis's first rebuild at start
/// clears its due set, so a test that looks at the index must not look
/// before; the in-process index is complete from the start.
async fn index_complete(app: &TestApp) {
    let Some(recovery) = app.state.due.recovery() else {
        return;
    };
    eventually(Duration::from_secs(10), "the index marker", || async {
        (recovery.state().await.ok()? == IndexState::Complete).then_some(())
    })
    .await;
}

/// How many notifications the app's due index holds due (not leased).
async fn due_in_index(app: &TestApp) -> u64 {
    let (due, leased) = app.state.due.depth().await.expect("the index answers");
    assert_eq!(leased, 0, "nothing here is due soon enough to be claimed");
    due
}

async fn a_created_notification_is_committed_and_indexed_by_due_time(backend: Backend) {
    let app = backend.spawn().await;
    index_complete(&app).await;
    app.endpoint(json!({"uid": "shop"})).await;
    let (status, created) = app
        .post("/v1/notifications", json!({"endpoint": "shop", "payload": {"order": 123}, "key": "order-123:paid", "event_type": "order.paid", "delay": "1h"}))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(created["status"], json!("pending"));
    assert_eq!(created["attempts"], json!(0));
    assert_eq!(created["schedule"], json!("alipay"));

    let stored = app
        .state
        .store
        .get_notification(id(&created))
        .await
        .unwrap()
        .expect("committed");
    assert_eq!(stored.status, Status::Pending);
    // Stored to the microsecond (the answer to the create shows more).
    assert_eq!(
        stored.next_attempt_at.map(|at| at.timestamp_micros()),
        Some(time(&created["next_attempt_at"]).timestamp_micros())
    );
    assert_eq!(due_in_index(&app).await, 1);
    if !backend.is_embedded() {
        let score = app
            .index()
            .due_at(id(&created))
            .await
            .unwrap()
            .expect("indexed in Redis");
        assert_eq!(
            score,
            hookd::due::redis::score(time(&created["next_attempt_at"]))
        );
    }
}
both!(a_created_notification_is_committed_and_indexed_by_due_time);

async fn payload_bytes_are_stored_exactly_as_sent(backend: Backend) {
    let app = backend.spawn().await;
    app.endpoint(json!({"uid": "shop"})).await;
    let raw =
        r#"{"endpoint":"shop","payload":{ "amount" : 0.10, "big": 12345678901234567890123 }}"#;
    let (status, created) = app.call_raw(Method::POST, "/v1/notifications", raw).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let stored = app
        .state
        .store
        .get_notification(id(&created))
        .await
        .unwrap()
        .expect("committed");
    assert_eq!(
        stored.body,
        br#"{ "amount" : 0.10, "big": 12345678901234567890123 }"#
    );
    let (_, read) = app
        .get(&format!("/v1/notifications/{}", id(&created)))
        .await;
    assert_eq!(read["content_type"], json!("application/json"));
    assert!(read["payload"].is_object(), "{read}");
}
both!(payload_bytes_are_stored_exactly_as_sent);

async fn a_text_body_keeps_its_content_type(backend: Backend) {
    let app = backend.spawn().await;
    app.endpoint(json!({"uid": "alipay"})).await;
    let (status, created) = app
        .post(
            "/v1/notifications",
            json!({"endpoint": "alipay", "body": "trade_no=1&trade_status=TRADE_SUCCESS", "content_type": "application/x-www-form-urlencoded"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let (_, read) = app
        .get(&format!("/v1/notifications/{}", id(&created)))
        .await;
    assert_eq!(read["body"], json!("trade_no=1&trade_status=TRADE_SUCCESS"));
    assert_eq!(
        read["content_type"],
        json!("application/x-www-form-urlencoded")
    );
    assert!(read.get("payload").is_none());
    // A body without a content type is text, and reads back as sent.
    let (_, plain) = app
        .post(
            "/v1/notifications",
            json!({"endpoint": "alipay", "body": "not json"}),
        )
        .await;
    let (_, read) = app.get(&format!("/v1/notifications/{}", id(&plain))).await;
    assert_eq!(read["content_type"], json!("text/plain; charset=utf-8"));
    assert_eq!(read["body"], json!("not json"));
}
both!(a_text_body_keeps_its_content_type);

async fn the_same_key_and_payload_returns_the_existing_notification(backend: Backend) {
    let app = backend.spawn().await;
    app.endpoint(json!({"uid": "shop"})).await;
    let request =
        json!({"endpoint": "shop", "payload": {"order": 1, "paid": true}, "key": "order-1:paid"});
    let (status, first) = app.post("/v1/notifications", request.clone()).await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, again) = app.post("/v1/notifications", request).await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(again["id"], first["id"]);
    // Re-serialised differently (key order, spacing) is the same payload.
    let (status, reordered) = app
        .call_raw(
            Method::POST,
            "/v1/notifications",
            r#"{"key":"order-1:paid","endpoint":"shop","payload":{"paid":true,   "order":1}}"#,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{reordered}");
    assert_eq!(reordered["id"], first["id"]);
}
both!(the_same_key_and_payload_returns_the_existing_notification);

async fn a_keyed_resend_whose_amounts_are_written_another_way_returns_the_existing_notification(
    backend: Backend,
) {
    let app = backend.spawn().await;
    app.endpoint(json!({"uid": "shop"})).await;
    let send = |payload: &'static str| {
        let app = &app;
        async move {
            app.call_raw(
                Method::POST,
                "/v1/notifications",
                format!(r#"{{"endpoint":"shop","key":"order-7:paid","payload":{payload}}}"#),
            )
            .await
        }
    };
    let (status, first) = send(r#"{"amount": 12.50, "fee": 0.1, "note": "caf\u00e9"}"#).await;
    assert_eq!(status, StatusCode::CREATED, "{first}");
    // The same amounts as another JSON library writes them.
    for same in [
        r#"{"amount": 12.5, "fee": 0.1, "note": "café"}"#,
        r#"{"fee": 1e-1, "note": "café", "amount": 1.25E1}"#,
    ] {
        let (status, again) = send(same).await;
        assert_eq!(status, StatusCode::OK, "{same}: {again}");
        assert_eq!(again["id"], first["id"]);
    }
    // A fee that f64 cannot tell from 0.1 is another payload.
    let (status, body) =
        send(r#"{"amount": 12.50, "fee": 0.10000000000000001, "note": "café"}"#).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], json!("key_conflict"));
    // Text is compared as sent, though it reads as JSON.
    let text = |amount: &str| {
        json!({"endpoint": "shop", "key": "order-8:paid", "content_type": "text/plain",
               "body": format!("{{\"amount\": {amount}}}")})
    };
    let (status, first) = app.post("/v1/notifications", text("12.50")).await;
    assert_eq!(status, StatusCode::CREATED, "{first}");
    let (status, body) = app.post("/v1/notifications", text("12.5")).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
}
both!(a_keyed_resend_whose_amounts_are_written_another_way_returns_the_existing_notification);

async fn the_same_key_with_another_payload_is_a_conflict(backend: Backend) {
    let app = backend.spawn().await;
    let shop = app.endpoint(json!({"uid": "shop"})).await;
    app.endpoint(json!({"uid": "other"})).await;
    let (status, _) = app
        .post(
            "/v1/notifications",
            json!({"endpoint": "shop", "payload": {"v": 1}, "key": "k"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, body) = app
        .post(
            "/v1/notifications",
            json!({"endpoint": shop["id"], "payload": {"v": 2}, "key": "k"}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], json!("key_conflict"));
    // Amounts beyond f64 precision are different payloads, not the same one.
    let (status, _) = app
        .call_raw(
            Method::POST,
            "/v1/notifications",
            r#"{"endpoint":"shop","key":"big","payload":{"amount":12345678901234567890123}}"#,
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, body) = app
        .call_raw(
            Method::POST,
            "/v1/notifications",
            r#"{"endpoint":"shop","key":"big","payload":{"amount":12345678901234567890124}}"#,
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    // Keys are unique per endpoint: another endpoint may use the same one.
    let (status, _) = app
        .post(
            "/v1/notifications",
            json!({"endpoint": "other", "payload": {"v": 2}, "key": "k"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
}
both!(the_same_key_with_another_payload_is_a_conflict);

async fn delay_and_deliver_at_set_the_first_due_time(backend: Backend) {
    let app = backend.spawn().await;
    app.endpoint(json!({"uid": "shop"})).await;
    let before = Utc::now();
    let (status, delayed) = app
        .post(
            "/v1/notifications",
            json!({"endpoint": "shop", "payload": {}, "delay": "90s"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{delayed}");
    let due = time(&delayed["next_attempt_at"]);
    let expected = before + chrono::Duration::seconds(90);
    assert!(
        due >= expected && due < expected + chrono::Duration::seconds(5),
        "{due} vs {expected}"
    );

    let at = (Utc::now() + chrono::Duration::days(30))
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    let (status, scheduled) = app
        .post(
            "/v1/notifications",
            json!({"endpoint": "shop", "payload": {}, "deliver_at": at}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{scheduled}");
    assert_eq!(time(&scheduled["next_attempt_at"]), time(&json!(at)));
    assert_eq!(time(&scheduled["deliver_at"]), time(&json!(at)));

    // The schedule's first entry is added to the due time.
    let (status, shifted) = app
        .post("/v1/notifications", json!({"endpoint": "shop", "payload": {}, "deliver_at": at, "schedule": ["1500ms", "2s"]}))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{shifted}");
    assert_eq!(shifted["schedule"], json!(["1500ms", "2s"]));
    assert_eq!(
        time(&shifted["next_attempt_at"]),
        time(&json!(at)) + chrono::Duration::milliseconds(1500)
    );
}
both!(delay_and_deliver_at_set_the_first_due_time);

async fn a_deliver_at_in_a_leap_second_or_in_nanoseconds_reads_back_as_it_was_answered(
    backend: Backend,
) {
    let app = backend.spawn().await;
    app.endpoint(json!({"uid": "shop"})).await;
    let year = Utc::now().year() + 1;
    for (given, stored) in [
        (
            format!("{year}-06-30T23:59:60.5Z"),
            format!("{year}-07-01T00:00:00.500Z"),
        ),
        (
            format!("{year}-01-02T03:04:05.123456789+00:00"),
            format!("{year}-01-02T03:04:05.123456Z"),
        ),
    ] {
        let (status, created) = app
            .post(
                "/v1/notifications",
                json!({"endpoint": "shop", "payload": {}, "deliver_at": given}),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{given}: {created}");
        let (status, read) = app
            .get(&format!(
                "/v1/notifications/{}",
                created["id"].as_str().unwrap()
            ))
            .await;
        assert_eq!(status, StatusCode::OK, "{read}");
        assert_eq!(created["deliver_at"], read["deliver_at"], "{given}");
        assert_eq!(
            created["next_attempt_at"], read["next_attempt_at"],
            "{given}"
        );
        assert_eq!(time(&read["deliver_at"]), time(&json!(stored)), "{given}");
    }
}
both!(a_deliver_at_in_a_leap_second_or_in_nanoseconds_reads_back_as_it_was_answered);

async fn a_batch_creates_each_valid_item_and_reports_each_invalid_one(backend: Backend) {
    let app = backend.spawn().await;
    app.endpoint(json!({"uid": "shop"})).await;
    let (status, body) = app
        .post(
            "/v1/notifications/batch",
            json!({"notifications": [
                {"endpoint": "shop", "payload": {"n": 1}, "key": "a"},
                {"endpoint": "nowhere", "payload": {"n": 2}},
                {"endpoint": "shop", "payload": {"n": 3}, "schedule": "soon"},
                {"endpoint": "shop", "payload": {"n": 1}, "key": "a"},
                {"endpoint": "shop", "payload": {"n": 5}, "key": "a"},
                {"endpoint": "shop", "paylaod": {"n": 6}},
                {"endpoint": "shop", "body": "plain", "content_type": "text/plain"}
            ]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let items = body["data"].as_array().unwrap();
    let statuses: Vec<u64> = items
        .iter()
        .map(|i| i["status"].as_u64().unwrap())
        .collect();
    assert_eq!(statuses, vec![201, 422, 422, 200, 409, 422, 201]);
    assert_eq!(items[1]["error"]["code"], json!("unknown_endpoint"));
    assert_eq!(items[2]["error"]["field"], json!("schedule"));
    assert_eq!(
        items[3]["notification"]["id"],
        items[0]["notification"]["id"]
    );
    assert_eq!(items[5]["error"]["code"], json!("unknown_field"));

    let (_, listed) = app.get("/v1/notifications?endpoint=shop").await;
    assert_eq!(listed["data"].as_array().unwrap().len(), 2);
}
both!(a_batch_creates_each_valid_item_and_reports_each_invalid_one);

async fn two_processes_creating_the_same_keys_in_opposite_orders_at_once_both_succeed(
    backend: Backend,
) {
    let a = backend.spawn().await;
    let b = backend.spawn().await;
    a.endpoint(json!({"uid": "shop"})).await;
    for round in 0..5 {
        let items: Vec<Value> = (0..500)
            .map(|i| json!({"endpoint": "shop", "payload": {"n": i}, "key": format!("r{round}-k{i}"), "delay": "1h"}))
            .collect();
        let reversed: Vec<Value> = items.iter().rev().cloned().collect();
        let (first, second) = tokio::join!(
            a.post("/v1/notifications/batch", json!({"notifications": items})),
            b.post(
                "/v1/notifications/batch",
                json!({"notifications": reversed})
            ),
        );
        for (status, body) in [first, second] {
            assert_eq!(status, StatusCode::OK, "round {round}: {body}");
            for item in body["data"].as_array().unwrap() {
                let item_status = item["status"].as_u64().unwrap();
                assert!(
                    item_status == 200 || item_status == 201,
                    "round {round}: {item}"
                );
            }
        }
    }
}
both!(two_processes_creating_the_same_keys_in_opposite_orders_at_once_both_succeed);

async fn listing_filters_by_endpoint_status_key_and_event_type_newest_first(backend: Backend) {
    let app = backend.spawn().await;
    app.endpoint(json!({"uid": "a"})).await;
    app.endpoint(json!({"uid": "b"})).await;
    let mut ids = Vec::new();
    for i in 0..6 {
        let endpoint = if i % 2 == 0 { "a" } else { "b" };
        let event_type = if i < 3 {
            "order.paid"
        } else {
            "order.refunded"
        };
        let (_, created) = app
            .post(
                "/v1/notifications",
                json!({"endpoint": endpoint, "payload": {"i": i}, "key": format!("k{}", i % 3), "event_type": event_type, "delay": "1h"}),
            )
            .await;
        ids.push(created["id"].clone());
    }
    let (_, cancelled) = app
        .call(
            Method::POST,
            &format!("/v1/notifications/{}/cancel", ids[0].as_str().unwrap()),
            None,
        )
        .await;
    assert_eq!(cancelled["status"], json!("cancelled"));

    let listed = |query: &'static str| {
        let app = &app;
        async move {
            let (status, body) = app.get(&format!("/v1/notifications?{query}")).await;
            assert_eq!(status, StatusCode::OK, "{body}");
            body["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| n["id"].clone())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(
        listed("endpoint=a").await,
        vec![ids[4].clone(), ids[2].clone(), ids[0].clone()]
    );
    assert_eq!(listed("status=cancelled").await, vec![ids[0].clone()]);
    assert_eq!(listed("key=k1").await, vec![ids[4].clone(), ids[1].clone()]);
    assert_eq!(
        listed("event_type=order.paid&endpoint=b").await,
        vec![ids[1].clone()]
    );
    assert_eq!(listed("endpoint=nobody").await, Vec::<Value>::new());
    // Listings leave payloads out.
    let (_, body) = app.get("/v1/notifications?limit=1").await;
    assert!(body["data"][0].get("payload").is_none());

    // Pages of two walk every notification exactly once.
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("/v1/notifications?limit=2&cursor={c}"),
            None => "/v1/notifications?limit=2".to_string(),
        };
        let (_, body) = app.get(&path).await;
        seen.extend(
            body["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| n["id"].clone()),
        );
        match body["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => break,
        }
    }
    let mut newest_first = ids.clone();
    newest_first.reverse();
    assert_eq!(seen, newest_first);
}
both!(listing_filters_by_endpoint_status_key_and_event_type_newest_first);

mod cancel;
