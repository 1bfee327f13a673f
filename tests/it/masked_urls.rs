//! Receiver URLs as the API shows them (issue #33): tokens in a query
//! string are credentials, so callers without the `secrets` scope (or
//! `admin`) see `?token=***` in endpoint, notification and attempt views,
//! and credential-like path segments (#47) as `***`.

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

/// A URL sent back as a caller without the `secrets` scope was shown it
/// (a form filled from a read, a path changed) is refused, naming the
/// mask, and the secret it would have replaced is kept.
async fn a_url_sent_back_with_its_secret_masked_is_refused_and_the_secret_kept(backend: Backend) {
    let app = backend.spawn_with(&scoped_tokens()).await;
    let receiver = Receiver::start().await;
    let endpoint_url = receiver.url("/hook?token=endpoint-s3cret");
    let endpoint = app.endpoint(json!({"url": endpoint_url})).await;
    let path = format!("/v1/endpoints/{}", endpoint["id"].as_str().unwrap());
    let shown = send(&app, Method::GET, &path, READ_TOKEN, None).await;
    let moved = shown["url"]
        .as_str()
        .unwrap()
        .replace("/hook?", "/hook-v2?");
    let (status, refused) = app
        .call(Method::PATCH, &path, Some(json!({"url": moved})))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    assert_eq!(refused["error"]["code"], "invalid_url");
    assert_eq!(refused["error"]["field"], "url");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`***`"),
        "{refused}"
    );
    let kept = send(&app, Method::GET, &path, TOKEN, None).await;
    assert_eq!(kept["url"], json!(endpoint_url));
}

both!(a_url_sent_back_with_its_secret_masked_is_refused_and_the_secret_kept);

/// #47: chat webhooks (Slack, Discord, Teams) carry their token in the
/// path, which `read` tokens saw whole.
async fn credential_like_path_segments_are_masked_for_callers_without_the_secrets_scope(
    backend: Backend,
) {
    let config = format!("{}secret_path_patterns = [\"^sk_\"]\n", scoped_tokens());
    let app = backend.spawn_with(&config).await;
    let receiver = Receiver::start().await;
    let token = "abcdEFGH1234ijklMNOP5678";
    let endpoint_url = receiver.url(&format!("/services/T0AAAAAAA/B0BBBBBBB/{token}"));
    let endpoint = app.endpoint(json!({"url": endpoint_url})).await;
    let endpoint_id = endpoint["id"].as_str().unwrap().to_string();
    let notification_url = format!("{endpoint_url}/sk_live/orders");
    let created = send(
        &app,
        Method::POST,
        "/v1/notifications",
        WRITE_TOKEN,
        Some(json!({"endpoint": endpoint_id, "payload": {}, "url": notification_url})),
    )
    .await;
    let id = created["id"].as_str().unwrap().to_string();
    let masked_endpoint = receiver.url("/services/T0AAAAAAA/B0BBBBBBB/***");
    assert_eq!(
        created["url"],
        json!(format!("{masked_endpoint}/***/orders"))
    );
    receiver
        .wait_for(
            &format!("/services/T0AAAAAAA/B0BBBBBBB/{token}/sk_live/orders"),
            1,
            DEADLINE,
        )
        .await;
    // Received is not recorded yet: the attempt's page is read once it is.
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
        format!("/v1/notifications/{id}/attempts"),
    ];
    for path in &views {
        let shown = send(&app, Method::GET, path, READ_TOKEN, None)
            .await
            .to_string();
        assert!(!shown.contains(token), "{path}: {shown}");
        assert!(!shown.contains("sk_live"), "{path}: {shown}");
        assert!(shown.contains("B0BBBBBBB/***"), "{path}: {shown}");
    }
    let shown = send(&app, Method::GET, &views[0], READ_TOKEN, None).await;
    assert_eq!(shown["url"], json!(masked_endpoint));
    for token in [READ_SECRETS_TOKEN, TOKEN] {
        let endpoint = send(&app, Method::GET, &views[0], token, None).await;
        assert_eq!(endpoint["url"], json!(endpoint_url));
        let notification = send(&app, Method::GET, &views[2], token, None).await;
        assert_eq!(notification["url"], json!(notification_url));
    }
}
both!(credential_like_path_segments_are_masked_for_callers_without_the_secrets_scope);

/// #47: `"url_secret": true` hides an endpoint's whole path (and its
/// notifications' URLs') from callers without the `secrets` scope.
async fn a_url_secret_endpoint_shows_only_its_origin_to_callers_without_the_secrets_scope(
    backend: Backend,
) {
    let app = backend.spawn_with(&scoped_tokens()).await;
    let receiver = Receiver::start().await;
    let endpoint_url = receiver.url("/hooks/acme/private-route");
    let endpoint = app
        .endpoint(json!({"url": endpoint_url, "url_secret": true}))
        .await;
    assert_eq!(endpoint["url_secret"], json!(true));
    let endpoint_id = endpoint["id"].as_str().unwrap().to_string();
    let notification_url = format!("{endpoint_url}/order-7");
    let created = send(
        &app,
        Method::POST,
        "/v1/notifications",
        WRITE_TOKEN,
        Some(json!({"endpoint": endpoint_id, "payload": {}, "url": notification_url})),
    )
    .await;
    let origin_only = receiver.url("/***");
    assert_eq!(created["url"], json!(origin_only));
    let id = created["id"].as_str().unwrap().to_string();
    let views = [
        format!("/v1/endpoints/{endpoint_id}"),
        format!("/v1/notifications/{id}"),
        format!("/v1/notifications/{id}/attempts"),
    ];
    for path in &views {
        let shown = send(&app, Method::GET, path, READ_TOKEN, None)
            .await
            .to_string();
        assert!(!shown.contains("private-route"), "{path}: {shown}");
    }
    let admin = send(&app, Method::GET, &views[0], TOKEN, None).await;
    assert_eq!(admin["url"], json!(endpoint_url));

    // Turned off: the path shows again, its segments judged one by one.
    let patched = send(
        &app,
        Method::PATCH,
        &views[0],
        TOKEN,
        Some(json!({"url_secret": false})),
    )
    .await;
    assert_eq!(patched["url_secret"], json!(false));
    eventually(DEADLINE, "the change to be seen", || async {
        let shown = send(&app, Method::GET, &views[1], READ_TOKEN, None).await;
        (shown["url"] == json!(notification_url)).then_some(())
    })
    .await;
}
both!(a_url_secret_endpoint_shows_only_its_origin_to_callers_without_the_secrets_scope);
