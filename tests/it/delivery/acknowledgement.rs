//! What a receiver's answer counts as: a success body or a success filter
//! it must satisfy (and bad filters refused, naming the field), and the
//! answers that end the schedule at once. On each backend.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use super::{attempts, wait_status};
use crate::backends::Backend;
use crate::receiver::{Receiver, Reply};

async fn success_body_rejects_a_200_ok_and_accepts_success(backend: Backend) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    receiver.reply(
        "/alipay",
        vec![Reply::body(200, "ok"), Reply::body(200, " success\n")],
    );
    app.endpoint(json!({"uid": "alipay", "url": receiver.url("/alipay"), "success_body": "success", "schedule": ["0s", "100ms", "100ms"]}))
        .await;
    let id = app
        .notify(json!({"endpoint": "alipay", "payload": {}}))
        .await;
    let done = wait_status(&app, &id, "succeeded").await;
    assert_eq!(done["attempts"], json!(2));
    let list = attempts(&app, &id).await;
    assert_eq!(list[0]["outcome"], json!("retry"));
    assert_eq!(list[0]["response_body"], json!("ok"));
    assert_eq!(list[1]["outcome"], json!("succeeded"));
}
both!(success_body_rejects_a_200_ok_and_accepts_success);

async fn a_success_filter_takes_only_a_json_answer_that_satisfies_it(backend: Backend) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    receiver.reply(
        "/wechat",
        vec![
            Reply::body(200, "SUCCESS"),
            Reply::body(200, r#"{"code":"FAIL","message":"signature mismatch"}"#),
            Reply::body(500, r#"{"code":"SUCCESS"}"#),
            Reply::body(200, "{\"code\": \"SUCCESS\", \"message\": \"成功\"}\n"),
        ],
    );
    let (status, created) = app
        .post(
            "/v1/endpoints",
            json!({"uid": "wechat", "url": receiver.url("/wechat"),
                   "success_filter": {"code": "SUCCESS"},
                   "schedule": ["0s", "100ms", "100ms", "100ms"]}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(created["success_filter"], json!({"code": "SUCCESS"}));
    assert_eq!(created["success_body"], Value::Null);
    let id = app
        .notify(json!({"endpoint": "wechat", "payload": {}}))
        .await;
    let done = wait_status(&app, &id, "succeeded").await;
    assert_eq!(done["attempts"], json!(4));
    let list = attempts(&app, &id).await;
    let outcomes: Vec<&Value> = list.iter().map(|a| &a["outcome"]).collect();
    assert_eq!(
        outcomes,
        [
            &json!("retry"),
            &json!("retry"),
            &json!("retry"),
            &json!("succeeded")
        ]
    );
    assert_eq!(list[1]["status_code"], json!(200));
    assert_eq!(
        list[1]["response_body"],
        json!(r#"{"code":"FAIL","message":"signature mismatch"}"#)
    );
}
both!(a_success_filter_takes_only_a_json_answer_that_satisfies_it);

async fn an_endpoint_acknowledges_by_success_body_or_success_filter_and_bad_filters_are_named(
    backend: Backend,
) {
    let app = backend.spawn().await;
    let (status, refused) = app
        .post(
            "/v1/endpoints",
            json!({"uid": "both", "url": "http://127.0.0.1:9/",
                   "success_body": "success", "success_filter": {"code": "SUCCESS"}}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    assert_eq!(refused["error"]["field"], json!("success_filter"));
    for (filter, code, field) in [
        (
            json!({"code": {"$like": "S%"}}),
            "invalid_filter",
            "success_filter.code.$like",
        ),
        (json!("code=SUCCESS"), "invalid_filter", "success_filter"),
        (
            json!({"x": "y".repeat(5000)}),
            "invalid_filter",
            "success_filter",
        ),
    ] {
        let (status, refused) = app
            .post(
                "/v1/endpoints",
                json!({"uid": "bad", "url": "http://127.0.0.1:9/", "success_filter": filter}),
            )
            .await;
        assert_eq!(
            status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{filter}: {refused}"
        );
        assert_eq!(refused["error"]["code"], json!(code), "{filter}");
        assert_eq!(refused["error"]["field"], json!(field), "{filter}");
    }
    // A key named twice in one object, which serde_json would drop silently.
    let (status, refused) = app
        .call_raw(
            Method::POST,
            "/v1/endpoints",
            r#"{"uid": "twice", "url": "http://127.0.0.1:9/", "success_filter": {"code": "SUCCESS", "code": "FAIL"}}"#,
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    assert_eq!(refused["error"]["field"], json!("success_filter"));
    for uid in ["both", "bad", "twice"] {
        let (status, _) = app.get(&format!("/v1/endpoints/{uid}")).await;
        assert_eq!(
            status,
            StatusCode::NOT_FOUND,
            "{uid}: nothing refused was stored"
        );
    }

    // From one rule to the other: the old one is cleared in the same PATCH.
    app.endpoint(json!({"uid": "alipay", "url": "http://127.0.0.1:9/", "success_body": "success"}))
        .await;
    let (status, refused) = app
        .call(
            Method::PATCH,
            "/v1/endpoints/alipay",
            Some(json!({"success_filter": {"code": "SUCCESS"}})),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    assert_eq!(refused["error"]["field"], json!("success_filter"));
    let (status, changed) = app
        .call(
            Method::PATCH,
            "/v1/endpoints/alipay",
            Some(json!({"success_body": null, "success_filter": {"ret_code": {"$in": ["0000", "0001"]}}})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{changed}");
    assert_eq!(changed["success_body"], Value::Null);
    assert_eq!(
        changed["success_filter"],
        json!({"ret_code": {"$in": ["0000", "0001"]}})
    );
    let (_, shown) = app.get("/v1/endpoints/alipay").await;
    assert_eq!(shown["success_filter"], changed["success_filter"]);
    let (status, cleared) = app
        .call(
            Method::PATCH,
            "/v1/endpoints/alipay",
            Some(json!({"success_filter": null})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{cleared}");
    assert_eq!(cleared["success_filter"], Value::Null);
}
both!(an_endpoint_acknowledges_by_success_body_or_success_filter_and_bad_filters_are_named);

async fn gone_and_webhook_delivery_abort_end_the_schedule_at_once(backend: Backend) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    receiver.reply("/gone", vec![Reply::status(410)]);
    receiver.reply(
        "/abort",
        vec![Reply::With(500, "", vec![("webhook-delivery", "abort")])],
    );
    receiver.reply("/teapot", vec![Reply::status(418)]);
    for (uid, path, extra) in [
        ("gone", "/gone", json!({})),
        ("abort", "/abort", json!({})),
        ("teapot", "/teapot", json!({"permanent_statuses": [418]})),
    ] {
        let mut fields =
            json!({"uid": uid, "url": receiver.url(path), "schedule": ["0s", "100ms", "100ms"]});
        crate::helpers::merge(&mut fields, extra);
        app.endpoint(fields).await;
    }
    for uid in ["gone", "abort", "teapot"] {
        let id = app.notify(json!({"endpoint": uid, "payload": {}})).await;
        let failed = wait_status(&app, &id, "failed").await;
        assert_eq!(failed["attempts"], json!(1), "{uid}");
        assert_eq!(
            attempts(&app, &id).await[0]["outcome"],
            json!("failed"),
            "{uid}"
        );
    }
    assert_eq!(receiver.total(), 3);
}
both!(gone_and_webhook_delivery_abort_end_the_schedule_at_once);
