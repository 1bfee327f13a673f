//! Acting on many notifications from the list: the rows selected are
//! retried or cancelled after a confirmation that says how many; every
//! failed (pending) one that matches a search of one endpoint is retried
//! (cancelled) by filter, after a confirmation that counts them (a dry
//! run, which changes nothing); a search it cannot serve says what it
//! needs.

use std::time::Duration;

use serde_json::json;

use crate::backends::Backend;
use crate::console::Browser;
use crate::helpers::{eventually, TestApp, TOKEN};
use crate::receiver::{Receiver, Reply};

const DEADLINE: Duration = Duration::from_secs(20);

/// Waits until the list shows exactly `count` rows: a page read before
/// the route changed may still show more.
async fn rows(browser: &Browser, count: usize) {
    eventually(DEADLINE, &format!("{count} rows"), || async {
        (browser.all("result").await.len() == count).then_some(())
    })
    .await;
}

async fn status_of(app: &TestApp, id: &str) -> String {
    let (_, n) = app.get(&format!("/v1/notifications/{id}")).await;
    n["status"].as_str().unwrap_or_default().to_string()
}

async fn selected_rows_and_every_matching_failed_one_are_retried_from_the_list(backend: Backend) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    // Four attempts fail, then the receiver is back (its last reply repeats).
    let mut replies = vec![Reply::status(503); 4];
    replies.push(Reply::status(200));
    receiver.reply("/hook", replies);
    app.endpoint(json!({"uid": "shop", "url": receiver.url("/hook"), "schedule": ["0s"]}))
        .await;
    let mut failed = Vec::new();
    for (n, event_type) in [
        (1, "order.refunded"),
        (2, "order.paid"),
        (3, "order.paid"),
        (4, "order.paid"),
    ] {
        failed.push(
            app.notify(json!({"endpoint": "shop", "key": format!("order-{n}"),
                "event_type": event_type, "payload": {"n": n}}))
                .await,
        );
    }
    let mut waiting = Vec::new();
    for n in 5..8 {
        waiting.push(
            app.notify(
                json!({"endpoint": "shop", "key": format!("order-{n}"), "payload": {},
                "delay": "1h"}),
            )
            .await,
        );
    }
    for id in &failed {
        eventually(DEADLINE, "each to fail", || async {
            (status_of(&app, id).await == "failed").then_some(())
        })
        .await;
    }

    let Some(browser) = Browser::open(&app, &backend, "bulk").await else {
        return;
    };
    browser.sign_in(TOKEN).await;
    // Every failed one of every endpoint: retry by filter needs one endpoint.
    browser.goto("#/notifications?status=failed").await;
    rows(&browser, 4).await;
    browser
        .wait_text("retry-matching-hint", "what the search lacks", |t| {
            t.contains("search one endpoint's")
        })
        .await;

    // The refund, selected and retried.
    browser
        .goto("#/notifications?endpoint=shop&status=failed&event_type=order.refunded")
        .await;
    rows(&browser, 1).await;
    browser.click("select").await;
    browser.click("retry-selected").await;
    let question = browser.text("retry-selected-question").await;
    assert!(
        question.contains("Retry the 1 selected notification?"),
        "{question}"
    );
    browser.click("confirm").await;
    browser
        .wait_text("bulk-result", "the selection retried", |t| {
            t == "Retried 1 of 1."
        })
        .await;
    eventually(DEADLINE, "the refund to be sent again", || async {
        (status_of(&app, &failed[0]).await == "succeeded").then_some(())
    })
    .await;

    // Every paid one that failed, on every page: counted, then retried.
    browser
        .goto("#/notifications?endpoint=shop&status=failed&event_type=order.paid")
        .await;
    rows(&browser, 3).await;
    browser.click("retry-matching").await;
    browser
        .wait_text("retry-matching-question", "the count", |t| {
            t.contains("Send again the 3 failed notifications of shop that match this search")
        })
        .await;
    for id in &failed[1..] {
        assert_eq!(
            status_of(&app, id).await,
            "failed",
            "counting restarts nothing"
        );
    }
    browser.screenshot("retry-matching-question").await;
    browser.click("confirm").await;
    browser
        .wait_text("operation", "the retry to end", |t| {
            t.contains("Retry done: 3 of 3")
        })
        .await;
    for id in &failed[1..] {
        eventually(DEADLINE, "each paid one to be sent again", || async {
            (status_of(&app, id).await == "succeeded").then_some(())
        })
        .await;
    }
    // The list reads again: none of them is failed any more.
    rows(&browser, 0).await;

    // The newest waiting one (the first row), selected and cancelled.
    browser
        .goto("#/notifications?endpoint=shop&status=pending")
        .await;
    rows(&browser, 3).await;
    browser.click("select").await;
    browser.click("cancel-selected").await;
    let question = browser.text("cancel-selected-question").await;
    assert!(
        question.contains("Cancel the 1 selected notification?"),
        "{question}"
    );
    browser.click("confirm").await;
    browser
        .wait_text("bulk-result", "the selection cancelled", |t| {
            t == "Cancelled 1 of 1."
        })
        .await;
    assert_eq!(status_of(&app, &waiting[2]).await, "cancelled");
    // The selection went with the rows it named.
    browser
        .wait_text("cancel-selected", "the selection emptied", |t| {
            t == "Cancel selected (0)"
        })
        .await;
    rows(&browser, 2).await;
    // The other two, by filter: counted, then cancelled.
    browser.click("cancel-matching").await;
    browser
        .wait_text("cancel-matching-question", "the count", |t| {
            t.contains("Cancel the 2 pending notifications of shop that match this search")
        })
        .await;
    browser.click("confirm").await;
    browser
        .wait_text("operation", "the cancel to end", |t| {
            t.contains("Cancel done: 2 of 2")
        })
        .await;
    for id in &waiting[..2] {
        assert_eq!(status_of(&app, id).await, "cancelled");
    }
    rows(&browser, 0).await;
    assert_eq!(
        receiver.received("/hook").len(),
        8,
        "four failures, four sent again"
    );
    browser.screenshot("bulk-actions").await;
    browser.close().await;
}

both!(selected_rows_and_every_matching_failed_one_are_retried_from_the_list);
