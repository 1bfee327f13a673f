//! The security review's findings, tried as an attacker would: scoped
//! tokens, audit events, the open (tokenless) mode against web pages,
//! header caps, masked values, and memory under hostile spellings.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use crate::backends::Backend;
use crate::helpers::{free_port, new_prefix, HookdProcess, TOKEN};

const DEADLINE: Duration = Duration::from_secs(20);
const READ_TOKEN: &str = "read-token-0123456789abcdef";
const WRITE_TOKEN: &str = "write-token-0123456789abcdef";
const SECRETS_TOKEN: &str = "secrets-token-0123456789abcdef";
/// Given to hookd as its SHA-256 only.
const DIGEST_TOKEN: &str = "digest-token-0123456789abcdef";

fn scoped_tokens() -> String {
    use sha2::Digest;
    let digest: String = sha2::Sha256::digest(DIGEST_TOKEN.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!(
        "[api]\ntokens = [\"{TOKEN}\", \
         {{ name = \"dashboard\", token = \"{READ_TOKEN}\", scopes = [\"read\"] }}, \
         {{ name = \"checkout\", token = \"{WRITE_TOKEN}\", scopes = [\"write\"] }}, \
         {{ name = \"ops\", token = \"{SECRETS_TOKEN}\", scopes = [\"secrets\"] }}, \
         {{ name = \"hashed\", sha256 = \"{digest}\", scopes = [\"read\", \"write\"] }}]\n"
    )
}

async fn send(
    client: &reqwest::Client,
    method: Method,
    url: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut request = client.request(method, url);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("hookd answers");
    let status = response.status();
    let body = response.json().await.unwrap_or(Value::Null);
    (status, body)
}

async fn each_token_may_do_only_what_its_scopes_allow(backend: Backend) {
    let app = backend.spawn_with(&scoped_tokens()).await;
    let endpoint = app.endpoint(json!({"uid": "scoped"})).await;
    let id = endpoint["id"].as_str().unwrap().to_string();
    let client = &app.client;
    let url = |path: &str| format!("{}{path}", app.base);
    let notification = json!({"endpoint": "scoped", "payload": {"n": 1}});

    // A read token reads, and cannot send, change or see secrets.
    let (status, body) = send(
        client,
        Method::POST,
        &url("/v1/notifications"),
        Some(READ_TOKEN),
        Some(notification.clone()),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["error"]["code"], "forbidden");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("dashboard"));
    let (status, _) = send(
        client,
        Method::GET,
        &url("/v1/endpoints"),
        Some(READ_TOKEN),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = send(
        client,
        Method::GET,
        &url(&format!("/v1/endpoints/{id}/secret")),
        Some(READ_TOKEN),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = send(
        client,
        Method::PATCH,
        &url(&format!("/v1/endpoints/{id}")),
        Some(READ_TOKEN),
        Some(json!({"disabled": true})),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // A write token sends, and cannot read secrets nor manage endpoints.
    let (status, created) = send(
        client,
        Method::POST,
        &url("/v1/notifications"),
        Some(WRITE_TOKEN),
        Some(notification),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let (status, _) = send(
        client,
        Method::GET,
        &url(&format!("/v1/endpoints/{id}/secret")),
        Some(WRITE_TOKEN),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = send(
        client,
        Method::POST,
        &url(&format!("/v1/endpoints/{id}/secret/rotate")),
        Some(WRITE_TOKEN),
        Some(json!({})),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = send(
        client,
        Method::POST,
        &url("/v1/endpoints"),
        Some(WRITE_TOKEN),
        Some(json!({"url": "http://127.0.0.1:9/x"})),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = send(
        client,
        Method::DELETE,
        &url(&format!("/v1/endpoints/{id}")),
        Some(WRITE_TOKEN),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // The secrets scope reads the secret; the endpoint still exists, unchanged.
    let (status, secret) = send(
        client,
        Method::GET,
        &url(&format!("/v1/endpoints/{id}/secret")),
        Some(SECRETS_TOKEN),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(secret["secret"], endpoint["secret"]);
    // A consumer token reads payloads: issuing one is for admin tokens only.
    let (status, refused) = send(
        client,
        Method::POST,
        &url(&format!("/v1/endpoints/{id}/consumer-token")),
        Some(SECRETS_TOKEN),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{refused}");
    assert_eq!(refused["error"]["code"], "forbidden");
    let (status, _) = send(
        client,
        Method::POST,
        &url("/v1/notifications"),
        Some(SECRETS_TOKEN),
        Some(json!({"endpoint": "scoped", "payload": {}})),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // A token configured by its digest works; nothing else does.
    let (status, _) = send(
        client,
        Method::GET,
        &url(&format!(
            "/v1/notifications/{}",
            created["id"].as_str().unwrap()
        )),
        Some(DIGEST_TOKEN),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    for wrong in [
        None,
        Some("read-token-0123456789abcdeX"),
        Some(""),
        Some(&DIGEST_TOKEN[..21]),
    ] {
        let (status, body) = send(client, Method::GET, &url("/v1/endpoints"), wrong, None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{wrong:?}");
        assert_eq!(body["error"]["code"], "unauthorized");
    }
    let (_, after) = app.get(&format!("/v1/endpoints/{id}")).await;
    assert_eq!(after["disabled"], false);
}
both!(each_token_may_do_only_what_its_scopes_allow);

async fn the_open_mode_refuses_web_pages_and_foreign_hosts(backend: Backend) {
    let app = backend.spawn_with("[api]\ntokens = []\n").await;
    let endpoint = app.endpoint(json!({})).await;
    let id = endpoint["id"].as_str().unwrap();
    let rotate = format!("{}/v1/endpoints/{id}/secret/rotate", app.base);
    let read_secret = format!("{}/v1/endpoints/{id}/secret", app.base);
    let client = crate::helpers::http_client();

    // What a page on evil.example can make a browser send: a "simple"
    // cross-origin POST, no preflight.
    let response = client
        .post(&rotate)
        .header("content-type", "text/plain")
        .header("origin", "https://evil.example")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert!(response.status().is_client_error(), "{}", response.status());
    // Even without an Origin header, a text/plain or bodiless POST is refused.
    for content_type in [Some("text/plain"), None] {
        let mut request = client.post(&rotate);
        if let Some(content_type) = content_type {
            request = request.header("content-type", content_type);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"]["code"], "unsupported_media_type");
    }
    // DNS rebinding: the page's own name resolves to 127.0.0.1.
    let response = client
        .get(&read_secret)
        .header("host", "rebind.evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "forbidden");
    assert!(body.get("secret").is_none());

    // Nothing was rotated; local tools still work.
    let response = client.get(&read_secret).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let secret: Value = response.json().await.unwrap();
    assert_eq!(secret["secret"], endpoint["secret"]);
    let response = client.post(&rotate).json(&json!({})).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
}
both!(the_open_mode_refuses_web_pages_and_foreign_hosts);

async fn custom_headers_are_capped_and_their_values_never_shown(backend: Backend) {
    let app = backend.spawn().await;
    let (status, body) = app
        .post(
            "/v1/endpoints",
            json!({"url": "http://127.0.0.1:9/x", "headers": {"X-Big": "a".repeat(8 * 1024 + 1)}}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"]["field"], "headers.X-Big");
    let many: serde_json::Map<String, Value> = (0..5)
        .map(|i| (format!("X-Part-{i}"), Value::from("b".repeat(7 * 1024))))
        .collect();
    let (status, body) = app
        .post(
            "/v1/endpoints",
            json!({"url": "http://127.0.0.1:9/x", "headers": many}),
        )
        .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    assert_eq!(body["error"]["field"], "headers");

    let endpoint = app
        .endpoint(
            json!({"uid": "masked", "headers": {"Authorization": "Bearer receiver-credential"}}),
        )
        .await;
    assert_eq!(endpoint["headers"]["Authorization"], "***");
    let (status, body) = app
        .post(
            "/v1/notifications",
            json!({"endpoint": "masked", "payload": {}, "headers": many}),
        )
        .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    let (status, created) = app
        .post("/v1/notifications", json!({"endpoint": "masked", "payload": {}, "headers": {"X-Api-Key": "per-order-credential"}}))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let id = created["id"].as_str().unwrap();
    for path in [
        "/v1/endpoints".to_string(),
        "/v1/endpoints/masked".to_string(),
        format!("/v1/notifications/{id}"),
        "/v1/notifications?limit=5".to_string(),
    ] {
        let (status, body) = app.get(&path).await;
        assert_eq!(status, StatusCode::OK);
        let text = body.to_string();
        assert!(!text.contains("receiver-credential"), "{path}: {text}");
        assert!(!text.contains("per-order-credential"), "{path}: {text}");
    }
}
both!(custom_headers_are_capped_and_their_values_never_shown);

async fn a_url_with_credentials_is_refused(backend: Backend) {
    let app = backend.spawn().await;
    for url in [
        "https://user:pw@example.com/hook",
        "https://user@example.com/hook",
    ] {
        let (status, body) = app.post("/v1/endpoints", json!({"url": url})).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{url}: {body}");
        assert_eq!(body["error"]["code"], "invalid_url");
        assert!(!body.to_string().contains("pw@"), "{body}");
    }
}
both!(a_url_with_credentials_is_refused);

mod bounds;
