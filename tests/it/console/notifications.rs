//! Notifications as an operator handles them in the console: found by
//! key, opened, retried until a real receiver gets them (the timeline
//! grows), cancelled; and a payload is only ever shown as text.

use std::time::Duration;

use serde_json::json;

use crate::backends::Backend;
use crate::console::Browser;
use crate::helpers::{eventually, TOKEN};
use crate::receiver::{Receiver, Reply};

/// Runs a command the console offers to copy, as a user pasting it into a
/// shell would; it must succeed.
async fn run_copied(curl: &str) {
    let run = tokio::process::Command::new("bash")
        .args(["-c", &format!("{curl} --silent --show-error --fail")])
        .output()
        .await
        .unwrap();
    assert!(run.status.success(), "{curl}: {run:?}");
}

async fn a_failed_notification_found_by_key_is_retried_until_the_receiver_gets_it(
    backend: Backend,
) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    receiver.reply(
        "/hook",
        vec![Reply::body(500, "down for maintenance"), Reply::status(200)],
    );
    let endpoint = app
        .endpoint(json!({"uid": "slowpay-notify", "owner": "merchant-7",
            "description": "Slowpay's order callbacks", "url": receiver.url("/hook"), "schedule": ["0s"]}))
        .await;
    let endpoint_id = endpoint["id"].as_str().unwrap();
    let id = app
        .notify(json!({"endpoint": endpoint["id"], "key": "order-123:paid",
            "event_type": "order.paid", "payload": {"order": 123, "amount": "42.00"}}))
        .await;
    // Another notification, which the search must leave out.
    app.notify(
        json!({"endpoint": endpoint["id"], "key": "order-124:paid", "payload": {}, "delay": "1h"}),
    )
    .await;
    eventually(
        Duration::from_secs(15),
        "the only attempt to fail",
        || async {
            let (_, n) = app.get(&format!("/v1/notifications/{id}")).await;
            (n["status"] == "failed").then_some(())
        },
    )
    .await;

    let Some(browser) = Browser::open(&app, &backend, "retry").await else {
        return;
    };
    browser.sign_in(TOKEN).await;
    browser.click("nav-notifications").await;
    browser.type_into("filter-key", "order-123:paid").await;
    browser.click("search-submit").await;
    browser
        .wait_text("results", "only the notification with that key", |t| {
            t.contains("order-123:paid") && !t.contains("order-124:paid")
        })
        .await;
    assert!(browser.fragment().await.contains("key=order-123"));
    // The endpoint by its name and owner, not its id.
    browser
        .wait_text("result-endpoint", "the endpoint named in the list", |t| {
            t.contains("slowpay-notify") && t.contains("merchant-7")
        })
        .await;
    assert_eq!(
        browser.unlabelled().await,
        json!([]),
        "every field has a label"
    );
    browser.screenshot("search-by-key").await;

    browser.click("result-link").await;
    let shown = browser.text("notification-id").await;
    assert_eq!(shown, id);
    assert_eq!(browser.text("status").await, "failed");
    let named = browser
        .wait_text("endpoint-row", "the endpoint named on the page", |t| {
            t.contains("slowpay-notify") && t.contains("Slowpay's order callbacks")
        })
        .await;
    assert!(!named.contains(endpoint_id), "{named}");
    browser.wait_count("attempt", 1).await;
    let first = browser.text("attempt").await;
    assert!(first.contains("HTTP 500"), "{first}");
    browser.screenshot("failed-notification").await;

    browser.click("retry").await;
    browser.find("action-result").await;
    receiver.wait_for("/hook", 2, Duration::from_secs(15)).await;
    browser.wait_count("attempt", 2).await;
    browser
        .wait_text("status", "the status to show the success", |t| {
            t == "succeeded"
        })
        .await;
    let outcomes = browser.all("attempt-status").await;
    assert_eq!(outcomes[1].text().await.unwrap(), "HTTP 200");
    // The attempt the retry started is marked, the first is not.
    assert_eq!(browser.wait_count("attempt-retried", 1).await, 1);
    let marked = browser.run(
        "return [...document.querySelectorAll('[data-test=attempt]')].map(a => !!a.querySelector('[data-test=attempt-retried]'))",
    ).await;
    assert_eq!(marked, json!([false, true]));
    // Its request's headers as sent, and the request as a curl command
    // that, run as copied, sends what hookd sent: the signature verifies.
    browser.wait_count("request-headers", 2).await;
    let curl = browser
        .run("return document.querySelectorAll('[data-test=attempt-curl]')[1].textContent")
        .await;
    let curl = curl.as_str().unwrap().to_string();
    assert!(curl.starts_with("curl -X POST"), "{curl}");
    let before = receiver.received("/hook").len();
    run_copied(&curl).await;
    let replayed = receiver
        .wait_for("/hook", before + 1, Duration::from_secs(15))
        .await;
    let (sent, again) = (&replayed[1], &replayed[before]);
    assert_eq!(again.body, sent.body, "the body as sent");
    for name in ["webhook-id", "webhook-timestamp", "webhook-signature"] {
        assert_eq!(again.header(name), sent.header(name), "{name}");
    }
    standardwebhooks::Webhook::new(endpoint["secret"].as_str().unwrap())
        .unwrap()
        .verify(&again.body, &again.headers)
        .expect("the copied request's signature verifies");
    // A body that begins with `@` is sent as it is, not read as the name
    // of a file on the machine that runs the command.
    let script = format!(
        "return import('./assets/notification.js').then((m) => m.curlOf({{}}, '{}', '@/etc/hostname'))",
        receiver.url("/at")
    );
    let curl = browser.run(&script).await;
    let curl = curl.as_str().unwrap().to_string();
    run_copied(&curl).await;
    let got = receiver.wait_for("/at", 1, Duration::from_secs(15)).await;
    assert_eq!(got[0].body, &b"@/etc/hostname"[..], "{curl}");
    browser.screenshot("retried-notification").await;
    browser.close().await;
}

async fn a_pending_notification_is_cancelled_from_its_page(backend: Backend) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    let endpoint = app.endpoint(json!({"url": receiver.url("/hook")})).await;
    let id = app
        .notify(json!({"endpoint": endpoint["id"], "key": "refund-9", "payload": {"refund": 9}, "delay": "1h"}))
        .await;

    let Some(browser) = Browser::open(&app, &backend, "cancel").await else {
        return;
    };
    browser.sign_in(TOKEN).await;
    browser.goto(&format!("#/notifications/{id}")).await;
    assert_eq!(browser.text("status").await, "pending");
    let countdown = browser.text("countdown").await;
    assert!(
        countdown.starts_with("in 59m") || countdown.starts_with("in 1h"),
        "{countdown}"
    );
    let waiting = browser.text("waiting").await;
    assert!(waiting.starts_with("scheduled"), "{waiting}");
    // What the list and the timeline say of when it goes next: a held one
    // says why and when it may go, not a next attempt minutes ago.
    let labels = browser
        .run(
            "return import('./assets/ui.js').then((m) => { const now = Date.parse('2026-12-06T12:00:00Z'); return [\
               m.nextLabel({ next_attempt_at: '2026-12-06T11:55:00Z', waiting: { reason: 'circuit_open', until: '2026-12-06T12:01:43Z' } }, now),\
               m.nextLabel({ next_attempt_at: '2026-12-06T11:58:00Z', waiting: { reason: 'ordering', until: null } }, now),\
               m.nextLabel({ next_attempt_at: '2026-12-06T12:10:00Z', waiting: { reason: 'scheduled', until: '2026-12-06T12:10:00Z' } }, now),\
               m.nextLabel({ next_attempt_at: null, waiting: null }, now)] })",
        )
        .await;
    assert_eq!(
        labels,
        json!([
            "circuit open, probe in 1m 43s",
            "behind its key",
            "in 10m 0s",
            "—"
        ])
    );
    // A trace context is no secret: its values are shown, the others'
    // masked; one an attempt did not keep is left out of its curl command
    // rather than sent as a placeholder (a malformed traceparent).
    let shown = browser
        .run(
            "return import('./assets/notification.js').then((m) => [\
               m.headerList({ traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', 'x-api-key': '***' }),\
               m.curlOf({ request_headers: [{ name: 'traceparent', value: null }, { name: 'x-api-key', value: null }] }, 'https://r.example/h', '{}')])",
        )
        .await;
    assert_eq!(
        shown[0],
        "traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01, x-api-key (values hidden)"
    );
    let curl = shown[1].as_str().unwrap();
    assert!(
        curl.contains("x-api-key: <value not kept>") && !curl.contains("traceparent"),
        "{curl}"
    );
    browser.screenshot("pending-notification").await;

    // By keyboard: the question takes the focus on its harmless answer,
    // Escape answers it, and the focus is back on the button that asked.
    // The focus moves once the page has drawn the change: looked for
    // until it has.
    let focus_on = |want: &'static str| {
        let browser = &browser;
        async move {
            let focused = "return document.activeElement && document.activeElement.dataset.test";
            eventually(Duration::from_secs(10), want, || async {
                (browser.run(focused).await == want).then_some(())
            })
            .await;
        }
    };
    browser.click("cancel").await;
    browser.find("cancel-question").await;
    focus_on("confirm-not-now").await;
    browser
        .run("document.activeElement.dispatchEvent(new KeyboardEvent('keydown', { key: 'Escape', bubbles: true }))")
        .await;
    browser.find("cancel").await;
    assert!(browser.all("cancel-question").await.is_empty());
    focus_on("cancel").await;
    assert_eq!(browser.text("status").await, "pending");
    browser.click("cancel").await;
    browser.click("confirm").await;
    browser
        .wait_text("status", "the status to show the cancel", |t| {
            t == "cancelled"
        })
        .await;
    let (_, stored) = app.get(&format!("/v1/notifications/{id}")).await;
    assert_eq!(stored["status"], "cancelled");
    assert_eq!(receiver.total(), 0, "nothing is sent after a cancel");
    assert_eq!(
        browser.text("waiting-row").await,
        "—",
        "final: waits for nothing"
    );
    browser.screenshot("cancelled-notification").await;
    browser.close().await;
}

async fn a_payload_with_a_script_shows_as_text(backend: Backend) {
    let app = backend.spawn().await;
    let endpoint = app.endpoint(json!({})).await;
    let hostile = "<script>window.pwned = 1</script><img src=x onerror=\"window.pwned = 2\">";
    let id = app
        .notify(json!({"endpoint": endpoint["id"], "payload": {"note": hostile}, "delay": "1h"}))
        .await;

    let Some(browser) = Browser::open(&app, &backend, "payload").await else {
        return;
    };
    browser.sign_in(TOKEN).await;
    browser.goto(&format!("#/notifications/{id}")).await;
    let payload = browser.text("payload").await;
    assert!(
        payload.contains("<script>window.pwned = 1</script>"),
        "{payload}"
    );
    assert!(payload.contains("<img src=x"), "{payload}");
    let probe = browser
        .run(
            "const pre = document.querySelector('[data-test=payload]');\
             return [pre.children.length, typeof window.pwned];",
        )
        .await;
    assert_eq!(
        probe,
        json!([0, "undefined"]),
        "the payload made no element and ran nothing"
    );
    browser.screenshot("payload-as-text").await;

    // Readable on a phone: the page fits 390 px without sideways scrolling.
    browser.set_size(390, 844).await;
    let overflow = browser
        .run("return document.documentElement.scrollWidth <= window.innerWidth")
        .await;
    assert_eq!(overflow, true, "the notification page fits a phone's width");
    browser.screenshot("notification-phone").await;
    browser.close().await;
}

async fn a_held_notification_says_why_on_its_page_and_its_retry_is_refused(backend: Backend) {
    let app = backend.spawn().await;
    let endpoint = app.endpoint(json!({"disabled": true})).await;
    let id = app
        .notify(json!({"endpoint": endpoint["id"], "payload": {}}))
        .await;

    let Some(browser) = Browser::open(&app, &backend, "held").await else {
        return;
    };
    browser.sign_in(TOKEN).await;
    browser.goto(&format!("#/notifications/{id}")).await;
    let waiting = browser.text("waiting").await;
    assert!(waiting.starts_with("endpoint disabled"), "{waiting}");
    browser.click("retry").await;
    let refused = browser
        .wait_text("action-error", "the retry to be refused", |t| !t.is_empty())
        .await;
    assert!(refused.contains("held (endpoint_disabled)"), "{refused}");
    browser.screenshot("held-notification").await;
    browser.close().await;
}

/// One endpoint with every value at its longest (a 128-character uid, a
/// 1,000-byte description, a long owner and URL) and a notification with a
/// 200-byte key: the lists stay about the window's width, each long value
/// cut in its cell and whole in its title, and the endpoint is named by its
/// description too; a deleted endpoint's notification says it is gone, not
/// a bare id. The review found the list 14,267 px wide, its last columns
/// 14,000 px to the right on every row.
async fn one_long_value_keeps_every_list_to_the_windows_width(backend: Backend) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    let uid = format!("acme-{}", "u".repeat(123));
    let description = format!("Acme's orders: {}", "d".repeat(980));
    let long = app
        .endpoint(json!({
            "uid": uid, "owner": format!("merchant-{}", "o".repeat(110)), "description": description,
            "url": receiver.url(&format!("/{}", "p".repeat(1500)))
        }))
        .await;
    app.notify(
        json!({"endpoint": long["id"], "key": "k".repeat(200), "payload": {}, "delay": "1h"}),
    )
    .await;
    let gone = app
        .endpoint(json!({"uid": "gone", "url": receiver.url("/gone")}))
        .await;
    app.notify(json!({"endpoint": gone["id"], "payload": {}, "delay": "1h"}))
        .await;
    let (status, _) = app
        .call(reqwest::Method::DELETE, "/v1/endpoints/gone", None)
        .await;
    assert_eq!(status, reqwest::StatusCode::OK);

    let Some(browser) = Browser::open(&app, &backend, "long-values").await else {
        return;
    };
    browser.sign_in(TOKEN).await;
    let width = |table: &str| {
        format!(
            "return [document.querySelector('[data-test={table}]').scrollWidth, window.innerWidth]"
        )
    };
    browser.goto("#/notifications").await;
    browser.wait_count("result-link", 2).await;
    browser
        .wait_text("results", "the endpoints named", |t| {
            t.contains("acme-u") && t.contains("deleted, or not readable here")
        })
        .await;
    let [table, window] =
        serde_json::from_value::<[u64; 2]>(browser.run(&width("results")).await).unwrap();
    assert!(
        table <= window * 3 / 2,
        "the list is {table} px wide in {window}"
    );
    let results = browser.text("results").await;
    assert!(
        results.contains("deleted, or not readable here"),
        "{results}"
    );
    let key_title = browser
        .run("return document.querySelector('[data-test=result-key][title^=kkk]').title.length")
        .await;
    assert_eq!(key_title, json!(200));

    browser.goto("#/endpoints").await;
    browser.wait_count("endpoint-row", 1).await;
    let [table, window] =
        serde_json::from_value::<[u64; 2]>(browser.run(&width("endpoints")).await).unwrap();
    assert!(
        table <= window * 3 / 2,
        "the endpoints list is {table} px wide in {window}"
    );
    let shown = browser.text("endpoint-description").await;
    assert!(shown.starts_with("Acme's orders"), "{shown}");
    browser.close().await;
}

both!(
    one_long_value_keeps_every_list_to_the_windows_width,
    a_held_notification_says_why_on_its_page_and_its_retry_is_refused,
    a_failed_notification_found_by_key_is_retried_until_the_receiver_gets_it,
    a_pending_notification_is_cancelled_from_its_page,
    a_payload_with_a_script_shows_as_text,
);
