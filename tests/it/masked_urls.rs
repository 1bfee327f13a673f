//! Receiver URLs as the API shows them (issue #33): tokens in a query
//! string are credentials, so callers without the `secrets` scope (or
//! `admin`) see `?token=***` in endpoint, notification and attempt views.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::backends::Backend;
use crate::helpers::{eventually, TestApp, TOKEN};
use crate::receiver::Receiver;

const DEADLINE: Duration = Duration::from_secs(15);
const READ_TOKEN: &str = "read-token-0123456789abcdef";
const WRITE_TOKEN: &str = "write-token-0123456789abcdef";
const READ_SECRETS_TOKEN: &str = "read-secrets-token-0123456789abcdef";

fn scoped_tokens() -> String {
    format!(
        "[api]\ntokens = [\"{TOKEN}\", \
         {{ name = \"dashboard\", token = \"{READ_TOKEN}\", scopes = [\"read\"] }}, \
         {{ name = \"checkout\", token = \"{WRITE_TOKEN}\", scopes = [\"write\"] }}, \
         {{ name = \"ops\", token = \"{READ_SECRETS_TOKEN}\", scopes = [\"read\", \"secrets\"] }}]\n"
    )
}

async fn send(
    app: &TestApp,
    method: Method,
    path: &str,
    token: &str,
    body: Option<Value>,
) -> Value {
    let mut request = app
        .client
        .request(method, format!("{}{path}", app.base))
        .bearer_auth(token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("hookd answers");
    assert!(
        response.status().is_success(),
        "{path}: {}",
        response.status()
    );
    response.json().await.unwrap()
}

async fn query_string_values_are_masked_for_callers_without_the_secrets_scope(backend: Backend) {
    let app = backend.spawn_with(&scoped_tokens()).await;
    let receiver = Receiver::start().await;
    let endpoint_url = receiver.url("/hook?token=endpoint-s3cret&v=2");
    let endpoint = app.endpoint(json!({"url": endpoint_url})).await;
    let endpoint_id = endpoint["id"].as_str().unwrap().to_string();
    let notification_url = receiver.url("/hook/n?token=notification-s3cret");
    let created = send(
        &app,
        Method::POST,
        "/v1/notifications",
        WRITE_TOKEN,
        Some(json!({"endpoint": endpoint_id, "payload": {}, "url": notification_url})),
    )
    .await;
    let id = created["id"].as_str().unwrap().to_string();
    assert_eq!(created["url"], json!(receiver.url("/hook/n?token=***")));
    receiver.wait_for("/hook/n", 1, DEADLINE).await;
    let attempts_path = format!("/v1/notifications/{id}/attempts");
    eventually(DEADLINE, "the attempt to be recorded", || async {
        let (status, page) = app.get(&attempts_path).await;
        (status == StatusCode::OK && page["data"][0]["status_code"] == json!(200)).then_some(())
    })
    .await;

    let views = [
        format!("/v1/endpoints/{endpoint_id}"),
        "/v1/endpoints".to_string(),
        format!("/v1/notifications/{id}"),
        format!("/v1/notifications?endpoint={endpoint_id}"),
        attempts_path,
    ];
    for path in &views {
        let shown = send(&app, Method::GET, path, READ_TOKEN, None)
            .await
            .to_string();
        assert!(!shown.contains("s3cret"), "{path}: {shown}");
        assert!(shown.contains("token=***"), "{path}: {shown}");
    }
    let endpoint = send(&app, Method::GET, &views[0], READ_TOKEN, None).await;
    assert_eq!(
        endpoint["url"],
        json!(receiver.url("/hook?token=***&v=***"))
    );

    // `secrets` (with `read`) and `admin` see them whole.
    for token in [READ_SECRETS_TOKEN, TOKEN] {
        let endpoint = send(&app, Method::GET, &views[0], token, None).await;
        assert_eq!(endpoint["url"], json!(endpoint_url));
        let notification = send(&app, Method::GET, &views[2], token, None).await;
        assert_eq!(notification["url"], json!(notification_url));
    }
}
both!(query_string_values_are_masked_for_callers_without_the_secrets_scope);
