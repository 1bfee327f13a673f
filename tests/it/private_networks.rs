//! `sender.allow_networks` and per-notification URLs (issue #33): an entry
//! opens a private network to the endpoints whose own URL lies in it, not to
//! any URL a `write` token names. Loopback is split into two entries,
//! 127.0.0.1/32 and 127.0.0.2/32, with real receivers on each.

use std::time::Duration;

use serde_json::json;

use crate::backends::Backend;
use crate::receiver::Receiver;

const DEADLINE: Duration = Duration::from_secs(15);

const SPLIT_LOOPBACK: &str = "[sender]\nallow_networks = [\"127.0.0.1/32\", \"127.0.0.2/32\"]\n";

/// The port of a receiver, for URLs that name it by another host.
fn port(receiver: &Receiver) -> u16 {
    receiver.base.rsplit(':').next().unwrap().parse().unwrap()
}

async fn a_per_notification_url_reaches_only_the_allowed_network_of_its_endpoint(backend: Backend) {
    let app = backend.spawn_with(SPLIT_LOOPBACK).await;
    let first = Receiver::start().await;
    let first_too = Receiver::start().await;
    let second = Receiver::start_at("127.0.0.2").await;
    // By name, so the endpoint's own URL is resolved to find its entry.
    let by_name = format!("http://localhost:{}/hook", port(&first));
    app.endpoint(json!({"uid": "in-first", "url": by_name, "schedule": ["0s"]}))
        .await;
    app.endpoint(json!({"uid": "in-second", "url": second.url("/hook"), "schedule": ["0s"]}))
        .await;

    let other_entry = app
        .notify(json!({"endpoint": "in-first", "payload": {}, "url": second.url("/x")}))
        .await;
    let same_entry = app
        .notify(json!({"endpoint": "in-first", "payload": {}, "url": first_too.url("/y")}))
        .await;
    // A name the resolver vets at connect time: localhost is 127.0.0.1
    // (and ::1), outside the second endpoint's entry.
    let by_name_elsewhere = format!("http://localhost:{}/z", port(&first_too));
    let resolved_elsewhere = app
        .notify(json!({"endpoint": "in-second", "payload": {}, "url": by_name_elsewhere}))
        .await;
    let own = app
        .notify(json!({"endpoint": "in-second", "payload": {}}))
        .await;

    for id in [&other_entry, &resolved_elsewhere] {
        let attempt = app.first_attempt(id, DEADLINE).await;
        assert_eq!(
            attempt["error"]["code"],
            json!("blocked_address"),
            "{attempt}"
        );
        assert!(attempt["status_code"].is_null(), "{attempt}");
    }
    first_too.wait_for("/y", 1, DEADLINE).await;
    second.wait_for("/hook", 1, DEADLINE).await;
    for id in [&same_entry, &own] {
        let attempt = app.first_attempt(id, DEADLINE).await;
        assert_eq!(attempt["status_code"], json!(200), "{attempt}");
    }
    assert!(second.received("/x").is_empty());
    assert!(first_too.received("/z").is_empty());
}
both!(a_per_notification_url_reaches_only_the_allowed_network_of_its_endpoint);

async fn a_per_notification_url_of_a_public_endpoint_reaches_no_allowed_network(backend: Backend) {
    let app = backend.spawn_with(SPLIT_LOOPBACK).await;
    let first = Receiver::start().await;
    // A public address (TEST-NET would be refused; this one is never
    // connected to: the notification names its own URL).
    app.endpoint(json!({"uid": "public", "url": "https://93.184.215.14/hook", "schedule": ["0s"]}))
        .await;
    let id = app
        .notify(json!({"endpoint": "public", "payload": {}, "url": first.url("/x")}))
        .await;
    let attempt = app.first_attempt(&id, DEADLINE).await;
    assert_eq!(
        attempt["error"]["code"],
        json!("blocked_address"),
        "{attempt}"
    );
    assert!(first.received("/x").is_empty());
}
both!(a_per_notification_url_of_a_public_endpoint_reaches_no_allowed_network);
