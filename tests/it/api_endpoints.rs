use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::backends::Backend;
use crate::helpers::TOKEN;

async fn creating_an_endpoint_returns_a_generated_whsec_secret_and_defaults(backend: Backend) {
    let app = backend.spawn().await;
    let (status, endpoint) = app
        .post(
            "/v1/endpoints",
            json!({"url": "https://example.com/hook", "uid": "orders"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{endpoint}");
    let secret = endpoint["secret"].as_str().unwrap();
    assert!(secret.starts_with("whsec_"), "{secret}");
    assert!(hookd::domain::secret::SigningSecret::parse(secret).is_ok());
    assert_eq!(endpoint["schedule"], json!("alipay"));
    assert_eq!(endpoint["permanent_statuses"], json!([410]));
    assert_eq!(endpoint["disabled"], json!(false));
    assert_eq!(endpoint["uid"], json!("orders"));

    // Reads do not show the secret; the secret route does.
    let (_, read) = app.get("/v1/endpoints/orders").await;
    assert!(read.get("secret").is_none());
    let (_, shown) = app.get("/v1/endpoints/orders/secret").await;
    assert_eq!(shown["secret"], json!(secret));
}
both!(creating_an_endpoint_returns_a_generated_whsec_secret_and_defaults);

async fn an_endpoint_can_be_read_by_id_and_by_uid(backend: Backend) {
    let app = backend.spawn().await;
    let created = app.endpoint(json!({"uid": "billing.eu"})).await;
    let id = created["id"].as_str().unwrap();
    let (status, by_id) = app.get(&format!("/v1/endpoints/{id}")).await;
    assert_eq!(status, StatusCode::OK);
    let (status, by_uid) = app.get("/v1/endpoints/billing.eu").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(by_id, by_uid);
    let (status, body) = app.get("/v1/endpoints/nobody").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body["error"]["code"], json!("not_found"));
}
both!(an_endpoint_can_be_read_by_id_and_by_uid);

async fn patching_changes_only_the_given_fields_and_null_resets_to_the_default(backend: Backend) {
    let app = backend.spawn().await;
    let created = app
        .endpoint(json!({"uid": "p", "description": "first", "success_body": "success", "schedule": "wechat"}))
        .await;
    let (status, patched) = app
        .call(
            Method::PATCH,
            "/v1/endpoints/p",
            Some(json!({"description": "second", "schedule": null, "timeout_ms": 2000, "headers": {"X-Tenant": "acme"}})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{patched}");
    assert_eq!(patched["description"], json!("second"));
    assert_eq!(patched["schedule"], json!("alipay"));
    assert_eq!(patched["success_body"], json!("success"));
    assert_eq!(patched["timeout_ms"], json!(2000));
    // Header values are write-only: a response names the header, masked.
    assert_eq!(patched["headers"], json!({"X-Tenant": "***"}));
    assert_eq!(patched["url"], created["url"]);

    let (status, body) = app
        .call(
            Method::PATCH,
            "/v1/endpoints/p",
            Some(json!({"secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"})),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"]["field"], json!("secret"));
}
both!(patching_changes_only_the_given_fields_and_null_resets_to_the_default);

async fn event_types_set_to_null_take_every_type_again(backend: Backend) {
    let app = backend.spawn().await;
    app.endpoint(json!({"uid": "typed", "event_types": ["order.*"]}))
        .await;
    let (status, patched) = app
        .call(
            Method::PATCH,
            "/v1/endpoints/typed",
            Some(json!({"event_types": null})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{patched}");
    assert_eq!(patched["event_types"], json!(null));
    let (_, stored) = app.get("/v1/endpoints/typed").await;
    assert_eq!(stored["event_types"], json!(null), "{stored}");
}
both!(event_types_set_to_null_take_every_type_again);

async fn a_second_endpoint_with_the_same_uid_is_a_conflict(backend: Backend) {
    let app = backend.spawn().await;
    app.endpoint(json!({"uid": "dup"})).await;
    let (status, body) = app
        .post(
            "/v1/endpoints",
            json!({"url": "https://example.com", "uid": "dup"}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], json!("uid_taken"));
}
both!(a_second_endpoint_with_the_same_uid_is_a_conflict);

async fn deleting_an_endpoint_cancels_its_pending_notifications_and_frees_its_uid(
    backend: Backend,
) {
    let app = backend.spawn().await;
    app.endpoint(json!({"uid": "gone"})).await;
    let (_, notification) = app
        .post(
            "/v1/notifications",
            json!({"endpoint": "gone", "payload": {"n": 1}, "delay": "1h"}),
        )
        .await;
    let (status, deleted) = app.call(Method::DELETE, "/v1/endpoints/gone", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(deleted["cancelled_notifications"], json!(1));
    let (status, _) = app.get("/v1/endpoints/gone").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (_, after) = app
        .get(&format!(
            "/v1/notifications/{}",
            notification["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(after["status"], json!("cancelled"));
    // The row stays (notifications have no foreign key to endpoints: a
    // delete that removed the row would leave them naming nothing).
    let orphans = backend
        .count(
            "SELECT count(*) FROM notifications n \
             WHERE NOT EXISTS (SELECT 1 FROM endpoints e WHERE e.id = n.endpoint_id)",
        )
        .await;
    assert_eq!(orphans, 0);
    // The uid can name a new endpoint.
    app.endpoint(json!({"uid": "gone"})).await;
}
both!(deleting_an_endpoint_cancels_its_pending_notifications_and_frees_its_uid);

async fn rotating_a_secret_keeps_the_previous_one_signing_for_a_day(backend: Backend) {
    let app = backend.spawn().await;
    let created = app.endpoint(json!({"uid": "rot"})).await;
    let (status, rotated) = app
        .call(Method::POST, "/v1/endpoints/rot/secret/rotate", None)
        .await;
    assert_eq!(status, StatusCode::OK, "{rotated}");
    assert_ne!(rotated["secret"], created["secret"]);
    let (_, secret) = app.get("/v1/endpoints/rot/secret").await;
    assert_eq!(secret["secret"], rotated["secret"]);
    let expires: chrono::DateTime<chrono::Utc> =
        serde_json::from_value(secret["previous_secret_expires_at"].clone()).unwrap();
    let hours = (expires - chrono::Utc::now()).num_minutes() as f64 / 60.0;
    assert!((23.9..=24.0).contains(&hours), "{hours}");

    // A chosen secret must be well-formed.
    let (status, body) = app
        .post(
            "/v1/endpoints/rot/secret/rotate",
            json!({"secret": "not-a-secret"}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(body["error"]["code"], json!("invalid_secret"));
}
both!(rotating_a_secret_keeps_the_previous_one_signing_for_a_day);

async fn endpoints_are_listed_newest_first_one_page_at_a_time(backend: Backend) {
    let app = backend.spawn().await;
    for i in 0..5 {
        app.endpoint(json!({"uid": format!("e{i}")})).await;
    }
    let (_, first) = app.get("/v1/endpoints?limit=3").await;
    let uids: Vec<_> = first["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["uid"].clone())
        .collect();
    assert_eq!(uids, vec![json!("e4"), json!("e3"), json!("e2")]);
    let cursor = first["next_cursor"].as_str().unwrap();
    let (_, second) = app
        .get(&format!("/v1/endpoints?limit=3&cursor={cursor}"))
        .await;
    let uids: Vec<_> = second["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["uid"].clone())
        .collect();
    assert_eq!(uids, vec![json!("e1"), json!("e0")]);
    assert!(second["next_cursor"].is_null());
}
both!(endpoints_are_listed_newest_first_one_page_at_a_time);

async fn requests_without_a_valid_token_are_refused_but_health_checks_are_open(backend: Backend) {
    let app = backend.spawn().await;
    let url = format!("{}/v1/endpoints", app.base);
    for auth in [
        None,
        Some("Bearer wrong-token-123"),
        Some("Basic dXNlcjpwYXNz"),
        Some(TOKEN),
    ] {
        let mut request = app.client.get(&url);
        if let Some(auth) = auth {
            request = request.header("authorization", auth);
        }
        let response = request.send().await.unwrap();
        // A bare token without the scheme is refused too.
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{auth:?}");
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(body["error"]["code"], json!("unauthorized"));
    }
    let response = app
        .client
        .get(&url)
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    for path in ["/healthz", "/readyz"] {
        let response = app
            .client
            .get(format!("{}{path}", app.base))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{path}");
    }
}
both!(requests_without_a_valid_token_are_refused_but_health_checks_are_open);

async fn readiness_names_the_mode_and_the_stores_it_runs_on(backend: Backend) {
    let app = backend.spawn().await;
    let (status, ready) = app.get("/readyz").await;
    assert_eq!(status, StatusCode::OK, "{ready}");
    assert_eq!(ready["status"], json!("ready"), "{ready}");
    if backend.is_embedded() {
        assert_eq!(ready["mode"], json!("embedded"), "{ready}");
        assert_eq!(ready["sqlite"], json!("ok"), "{ready}");
        // An index in the process has nothing to be unreachable.
        assert!(ready.get("redis").is_none(), "{ready}");
        assert!(ready.get("postgres").is_none(), "{ready}");
    } else {
        assert_eq!(ready["mode"], json!("server"), "{ready}");
        assert_eq!(ready["postgres"], json!("ok"), "{ready}");
        assert_eq!(ready["redis"], json!("ok"), "{ready}");
        assert!(ready.get("sqlite").is_none(), "{ready}");
    }
}
both!(readiness_names_the_mode_and_the_stores_it_runs_on);
