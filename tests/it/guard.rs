//! The address guard end to end: with no `sender.allow_networks`, every
//! spelling of a non-public address in a receiver URL is refused, when the
//! URL is given (422) and, for one stored before, before any connection,
//! and the attempt says so.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::backends::Backend;
use crate::helpers::{eventually, http_client, TestApp};

const DEADLINE: Duration = Duration::from_secs(15);

/// Receiver URLs whose host is not a public address, in the spellings that
/// used to slip through (issue #18) and the usual ones. The URL parser turns
/// the IPv4 oddities (`0x7f.1`, `2130706433`, `127.1`) into 127.0.0.1.
const SPELLINGS: [&str; 22] = [
    "http://127.0.0.1:9/hook",
    "http://0x7f.1:9/hook",
    "http://2130706433:9/hook",
    "http://127.1:9/hook",
    "http://0177.0.0.1:9/hook",
    "http://169.254.169.254/latest/meta-data",
    "http://10.0.0.1:9/hook",
    "http://[::1]:9/hook",
    "http://[::ffff:127.0.0.1]:9/hook",
    "http://[::ffff:0:7f00:1]:9/hook",
    "http://[64:ff9b::7f00:1]:9/hook",
    "http://[64:ff9b:1::7f00:1]:9/hook",
    "http://[100::1]:9/hook",
    "http://[3fff::1]:9/hook",
    "http://[3fff:abc::1]:9/hook",
    "http://[2001:db8::1]:9/hook",
    "http://[2002:7f00:1::1]:9/hook",
    "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]:9/hook",
    "http://[fc00::1]:9/hook",
    "http://[fe80::1]:9/hook",
    "http://[fec0::1]:9/hook",
    "http://[5f00::1]:9/hook",
];

async fn an_endpoint_url_at_a_blocked_address_is_refused_at_create_and_at_a_change(
    backend: Backend,
) {
    let app = backend.spawn_with("[sender]\nallow_networks = []\n").await;
    // A name is resolved at each attempt, so it is taken here.
    let named = app
        .endpoint(json!({"url": "http://localhost:9/hook", "schedule": ["0s"]}))
        .await;
    let path = format!("/v1/endpoints/{}", named["id"].as_str().unwrap());
    for url in SPELLINGS {
        let (status, refused) = app
            .post("/v1/endpoints", json!({"url": url, "schedule": ["0s"]}))
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{url}: {refused}");
        assert_eq!(refused["error"]["code"], json!("invalid_url"), "{url}");
        assert_eq!(refused["error"]["field"], json!("url"), "{url}");
        let message = refused["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("sender.allow_networks"),
            "{url}: {message}"
        );

        let (status, refused) = app
            .call(Method::PATCH, &path, Some(json!({"url": url})))
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{url}: {refused}");
        assert_eq!(refused["error"]["code"], json!("invalid_url"), "{url}");
    }
    let (_, kept) = app.get(&path).await;
    assert_eq!(kept["url"], json!("http://localhost:9/hook"));
}
both!(an_endpoint_url_at_a_blocked_address_is_refused_at_create_and_at_a_change);

/// Stops `app` and waits until it no longer answers, so that nothing of it
/// runs beside the next.
pub(crate) async fn stopped(app: TestApp) {
    let base = app.base.clone();
    drop(app);
    eventually(DEADLINE, "the first hookd to stop", || async {
        let answer = http_client().get(format!("{base}/healthz")).send().await;
        answer.is_err().then_some(())
    })
    .await;
}

/// An endpoint stored while `sender.allow_networks` allowed its address (or
/// before hookd refused such a URL at create) is refused by the sender's
/// guard at each attempt once the setting no longer allows it.
async fn every_non_public_spelling_stored_before_is_a_blocked_address(backend: Backend) {
    let wide = "[sender]\nallow_networks = [\"0.0.0.0/0\", \"::/0\"]\n";
    let first = backend.spawn_with(wide).await;
    let mut endpoints = Vec::new();
    for url in SPELLINGS {
        let endpoint = first
            .endpoint(json!({"url": url, "schedule": ["0s"]}))
            .await;
        endpoints.push((url, endpoint));
    }
    stopped(first).await;

    let app = backend.spawn_with("[sender]\nallow_networks = []\n").await;
    let mut notifications = Vec::new();
    for (url, endpoint) in endpoints {
        let id = app
            .notify(json!({"endpoint": endpoint["id"], "payload": {}}))
            .await;
        notifications.push((url, endpoint["url"].clone(), id));
    }
    for (url, stored, id) in notifications {
        let attempt = app.first_attempt(&id, DEADLINE).await;
        assert_eq!(
            attempt["error"]["code"],
            json!("blocked_address"),
            "{url} (stored as {stored}): {attempt}"
        );
        assert!(attempt["status_code"].is_null(), "{url}: {attempt}");
    }
}
both!(every_non_public_spelling_stored_before_is_a_blocked_address);
