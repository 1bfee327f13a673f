//! The address guard end to end: with no `sender.allow_networks`, every
//! spelling of a non-public address in a receiver URL is refused before any
//! connection, and the attempt says so.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;

use crate::backends::Backend;

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

async fn every_non_public_spelling_is_a_blocked_address(backend: Backend) {
    // The test settings allow 127.0.0.0/8; this app allows nothing.
    let app = backend.spawn_with("[sender]\nallow_networks = []\n").await;
    let mut notifications = Vec::new();
    for url in SPELLINGS {
        let (status, endpoint) = app
            .post("/v1/endpoints", json!({"url": url, "schedule": ["0s"]}))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{url}: {endpoint}");
        let (status, created) = app
            .post(
                "/v1/notifications",
                json!({"endpoint": endpoint["id"], "payload": {}}),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{url}: {created}");
        notifications.push((
            url,
            endpoint["url"].clone(),
            created["id"].as_str().unwrap().to_string(),
        ));
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
both!(every_non_public_spelling_is_a_blocked_address);
