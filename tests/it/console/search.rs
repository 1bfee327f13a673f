//! Searching as an on-call engineer does: a key prefix finds every key
//! that starts with it, an event's deliveries among them; an event's key
//! finds its deliveries; "Failed in the last hour" lists the scope's
//! recent failures, which can then be retried by filter after a count.

use std::time::Duration;

use serde_json::json;

use crate::backends::Backend;
use crate::console::Browser;
use crate::helpers::{eventually, TOKEN};
use crate::receiver::{Receiver, Reply};

const DEADLINE: Duration = Duration::from_secs(20);

async fn rows(browser: &Browser, count: usize) {
    eventually(DEADLINE, &format!("{count} rows"), || async {
        (browser.all("result").await.len() == count).then_some(())
    })
    .await;
}

async fn a_key_prefix_an_events_key_the_last_hours_failures_and_each_order_are_found_from_the_search_form(
    backend: Backend,
) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    receiver.reply("/hook", vec![Reply::status(503)]);
    app.endpoint(json!({"uid": "shop", "url": receiver.url("/hook"), "schedule": ["0s"]}))
        .await;
    let mut failing = Vec::new();
    for key in ["order-12:paid", "order-123:paid"] {
        failing.push(
            app.notify(json!({"endpoint": "shop", "key": key, "payload": {}}))
                .await,
        );
    }
    app.notify(json!({"endpoint": "shop", "key": "order-2:paid", "payload": {}, "delay": "1h"}))
        .await;
    let (status, event) = app
        .post(
            "/v1/events",
            json!({"event_type": "order.paid", "key": "order-129", "payload": {}, "delay": "1h"}),
        )
        .await;
    assert_eq!(status, 201, "{event}");
    let event = event["id"].as_str().unwrap().to_string();
    for id in &failing {
        eventually(DEADLINE, "each to fail", || async {
            let (_, n) = app.get(&format!("/v1/notifications/{id}")).await;
            (n["status"] == "failed").then_some(())
        })
        .await;
    }
    eventually(DEADLINE, "the event's delivery", || async {
        let (_, page) = app.get(&format!("/v1/notifications?event={event}")).await;
        (page["data"].as_array().unwrap().len() == 1).then_some(())
    })
    .await;

    let Some(browser) = Browser::open(&app, &backend, "search").await else {
        return;
    };
    browser.sign_in(TOKEN).await;
    browser.click("nav-notifications").await;
    browser.type_into("filter-key_prefix", "order-12").await;
    browser.click("search-submit").await;
    // order-12:paid, order-123:paid and the delivery of event order-129.
    rows(&browser, 3).await;
    assert!(browser.fragment().await.contains("key_prefix=order-12"));
    browser.screenshot("search-by-key-prefix").await;
    // Oldest first: order-12:paid, the first created, leads.
    let first_title = || async {
        let link = browser.find("result-link").await;
        // A page rebuilt meanwhile detaches the link: read as no title.
        link.attr("title").await.ok().flatten().unwrap_or_default()
    };
    assert_ne!(first_title().await, failing[0], "newest first by default");
    browser
        .run(
            "const s = document.querySelector('[data-test=filter-order]'); s.value = 'oldest'; \
             s.dispatchEvent(new Event('change', { bubbles: true }));",
        )
        .await;
    browser.click("search-submit").await;
    eventually(DEADLINE, "the oldest first", || async {
        (browser.fragment().await.contains("order=oldest") && first_title().await == failing[0])
            .then_some(())
    })
    .await;
    rows(&browser, 3).await;

    browser.goto("#/notifications?key=order-129").await;
    rows(&browser, 1).await;
    let link = browser.find("result-link").await;
    let title = link.attr("title").await.unwrap().unwrap_or_default();
    let (_, page) = app.get(&format!("/v1/notifications?event={event}")).await;
    assert_eq!(
        Some(title.as_str()),
        page["data"][0]["id"].as_str(),
        "the event's delivery"
    );

    // The last hour's failures of one endpoint: the two, and a retry of
    // every one of them, counted first.
    browser.goto("#/notifications").await;
    browser.type_into("filter-endpoint", "shop").await;
    browser.click("failed-last-hour").await;
    rows(&browser, 2).await;
    let fragment = browser.fragment().await;
    assert!(
        fragment.contains("status=failed") && fragment.contains("completed_after="),
        "{fragment}"
    );
    browser.click("retry-matching").await;
    browser
        .wait_text("retry-matching-question", "the count", |t| {
            t.contains("Send again the 2 failed notifications of shop that match this search")
        })
        .await;
    browser.screenshot("failed-last-hour").await;
    browser.click("confirm").await;
    browser
        .wait_text("operation", "the retry to end", |t| {
            t.contains("Retry done: 2 of 2")
        })
        .await;
    receiver.wait_distinct("/hook", 2, DEADLINE).await;

    // An endpoint's most attempted first, from its page: only those
    // attempted more than once.
    let twice = app
        .endpoint(json!({"uid": "twice", "url": receiver.url("/hook"), "schedule": ["0s", "0s"]}))
        .await;
    let retried = app
        .notify(json!({"endpoint": "twice", "key": "order-7:paid", "payload": {}}))
        .await;
    eventually(DEADLINE, "both attempts to fail", || async {
        let (_, n) = app.get(&format!("/v1/notifications/{retried}")).await;
        (n["status"] == "failed" && n["attempts"] == 2).then_some(())
    })
    .await;
    browser
        .goto(&format!("#/endpoints/{}", twice["id"].as_str().unwrap()))
        .await;
    browser.click("endpoint-most-attempted").await;
    rows(&browser, 1).await;
    assert!(browser.fragment().await.contains("order=attempts"));
    let link = browser.find("result-link").await;
    assert_eq!(
        link.attr("title").await.ok().flatten().as_deref(),
        Some(retried.as_str())
    );
    browser.close().await;
}

both!(a_key_prefix_an_events_key_the_last_hours_failures_and_each_order_are_found_from_the_search_form);
