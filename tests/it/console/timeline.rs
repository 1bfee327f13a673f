//! A notification that took three attempts, as its page shows them: each
//! attempt's time, status, duration, response body and error, in order,
//! and the request and response headers of each.
//! Its screenshot is the README's.

use std::time::Duration;

use serde_json::json;

use crate::backends::Backend;
use crate::console::Browser;
use crate::helpers::{eventually, TOKEN};
use crate::receiver::{Receiver, Reply};

async fn every_attempt_of_a_notification_is_on_its_timeline(backend: Backend) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    receiver.reply(
        "/alipay/notify",
        vec![
            Reply::body(503, "upstream unavailable, retry later"),
            Reply::Slow(Duration::from_millis(900)),
            Reply::body(200, "success"),
        ],
    );
    let endpoint = app
        .endpoint(json!({"uid": "merchant-42-shop", "owner": "merchant-42",
            "url": receiver.url("/alipay/notify"), "timeout_ms": 500,
            "schedule": ["0s", "1s", "2s", "10m"], "success_body": "success"}))
        .await;
    let id = app
        .notify(
            json!({"endpoint": endpoint["id"], "key": "order-123:paid", "event_type": "order.paid",
            "payload": {"order_id": "123", "merchant": "merchant-42", "amount": "42.00",
                "currency": "CNY", "status": "paid", "paid_at": "2026-11-26T06:40:12Z"}}),
        )
        .await;
    eventually(
        Duration::from_secs(30),
        "the third attempt to succeed",
        || async {
            let (_, n) = app.get(&format!("/v1/notifications/{id}")).await;
            (n["status"] == "succeeded").then_some(())
        },
    )
    .await;

    let Some(browser) = Browser::open(&app, &backend, "timeline").await else {
        return;
    };
    browser.sign_in(TOKEN).await;
    browser.goto(&format!("#/notifications/{id}")).await;
    browser.wait_count("attempt", 3).await;
    let mut shown = Vec::new();
    for attempt in browser.all("attempt").await {
        shown.push(attempt.text().await.unwrap());
    }
    assert!(
        shown[0].contains("HTTP 503") && shown[0].contains("upstream unavailable"),
        "{shown:?}"
    );
    assert!(
        shown[1].contains("no response") && shown[1].contains("timeout"),
        "{shown:?}"
    );
    assert!(
        shown[2].contains("HTTP 200") && shown[2].contains("succeeded"),
        "{shown:?}"
    );
    assert_eq!(browser.text("status").await, "succeeded");
    // The success's request headers as sent and its response's, open.
    browser.wait_count("request-headers", 3).await;
    let opened = browser
        .run(
            "const last = [...document.querySelectorAll('[data-test=attempt]')][2];
             const open = [...last.querySelectorAll('details')].filter(d => d.querySelector('[data-test=request-headers], [data-test=response-headers]'));
             open.forEach(d => { d.open = true; });
             return last.querySelector('[data-test=request-headers]').textContent",
        )
        .await;
    let opened = opened.as_str().unwrap_or_default();
    for name in [
        "webhook-id",
        "webhook-timestamp",
        "webhook-signature",
        "hookd-attempt3",
    ] {
        assert!(opened.contains(name), "{name} in {opened}");
    }
    browser.screenshot("notification-timeline").await;

    // A delivery its receiver accepted at the first attempt keeps no
    // headers, and its attempt says so rather than show nothing.
    let first_time = app
        .notify(json!({"endpoint": endpoint["id"], "key": "order-124:paid", "payload": {}}))
        .await;
    eventually(
        Duration::from_secs(30),
        "the first attempt to succeed",
        || async {
            let (_, n) = app.get(&format!("/v1/notifications/{first_time}")).await;
            (n["status"] == "succeeded").then_some(())
        },
    )
    .await;
    browser.goto(&format!("#/notifications/{first_time}")).await;
    browser
        .wait_text("attempt-headers-absent", "why no headers", |t| {
            t.contains("accepted at the first attempt")
        })
        .await;
    assert!(browser.all("request-headers").await.is_empty());
    browser.close().await;
}

both!(every_attempt_of_a_notification_is_on_its_timeline);
