//! Endpoints as an operator handles them in the console: health, disable
//! and enable, rotate the secret, a test notification, recover what
//! failed with the operation's progress, and the policy edited.

use std::time::Duration;

use serde_json::json;

use crate::backends::Backend;
use crate::console::Browser;
use crate::helpers::{eventually, TOKEN};
use crate::receiver::{Receiver, Reply};

async fn an_endpoint_is_disabled_enabled_rotated_and_tested_from_its_page(backend: Backend) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    let endpoint = app
        .endpoint(json!({"uid": "shop", "owner": "merchant-42", "url": receiver.url("/hook")}))
        .await;
    let id = endpoint["id"].as_str().unwrap().to_string();

    let Some(browser) = Browser::open(&app, &backend, "endpoint").await else {
        return;
    };
    browser.sign_in(TOKEN).await;
    browser.click("nav-endpoints").await;
    browser
        .wait_text("endpoints", "the endpoint listed", |t| t.contains("shop"))
        .await;
    browser.screenshot("endpoints").await;
    browser.click("endpoint-link").await;
    assert_eq!(browser.text("endpoint-id").await, "shop");
    assert_eq!(browser.text("circuit").await, "closed");
    assert_eq!(browser.text("disabled").await, "no");
    browser.screenshot("endpoint").await;

    // Disabling asks first, naming the endpoint; one click changes nothing.
    browser.click("toggle-disabled").await;
    let question = browser.text("toggle-disabled-question").await;
    assert!(question.contains("Disable shop?"), "{question}");
    let (_, stored) = app.get(&format!("/v1/endpoints/{id}")).await;
    assert_eq!(stored["disabled"], false);
    browser.click("confirm").await;
    browser
        .wait_text("disabled", "the endpoint shown disabled", |t| t == "yes")
        .await;
    let (_, stored) = app.get(&format!("/v1/endpoints/{id}")).await;
    assert_eq!(stored["disabled"], true);
    browser.click("toggle-disabled").await;
    browser
        .wait_text("disabled", "the endpoint shown enabled", |t| t == "no")
        .await;

    // "Not now" leaves the secret as it was.
    browser.click("rotate-secret").await;
    browser.click("confirm-not-now").await;
    browser.find("rotate-secret").await;
    let (_, secret) = app.get(&format!("/v1/endpoints/{id}/secret")).await;
    assert_eq!(secret["secret"], endpoint["secret"]);
    browser.click("rotate-secret").await;
    browser.click("confirm").await;
    let shown = browser.text("new-secret").await;
    let (_, secret) = app.get(&format!("/v1/endpoints/{id}/secret")).await;
    assert_eq!(secret["secret"], shown.as_str());
    assert_ne!(endpoint["secret"], shown.as_str(), "a new secret");

    browser.click("send-test").await;
    browser.find("test-link").await;
    let got = receiver.wait_for("/hook", 1, Duration::from_secs(15)).await;
    assert!(String::from_utf8_lossy(&got[0].body).contains("hookd.test"));
    browser.screenshot("endpoint-after-actions").await;
    browser.close().await;
}

async fn failed_notifications_are_recovered_and_the_policy_edited_from_the_endpoint_page(
    backend: Backend,
) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    receiver.reply("/hook", vec![Reply::status(503), Reply::status(200)]);
    let endpoint = app
        .endpoint(json!({"url": receiver.url("/hook"), "schedule": ["0s"]}))
        .await;
    let id = endpoint["id"].as_str().unwrap().to_string();
    let failed = app
        .notify(json!({"endpoint": id, "key": "order-7:paid", "payload": {"order": 7}}))
        .await;
    eventually(
        Duration::from_secs(15),
        "the notification to fail",
        || async {
            let (_, n) = app.get(&format!("/v1/notifications/{failed}")).await;
            (n["status"] == "failed").then_some(())
        },
    )
    .await;

    let Some(browser) = Browser::open(&app, &backend, "recover").await else {
        return;
    };
    browser.sign_in(TOKEN).await;
    browser.goto(&format!("#/endpoints/{id}")).await;
    browser.find("policy").await;
    assert_eq!(
        browser.unlabelled().await,
        json!([]),
        "every field has a label"
    );
    // The confirmation counts first (a dry run): one failed, none restarted yet.
    browser.click("recover-submit").await;
    browser
        .wait_text("recover-submit-question", "the recover's count", |t| {
            t.contains("Send again the 1 notification to") && t.contains("and now")
        })
        .await;
    let (_, still) = app.get(&format!("/v1/notifications/{failed}")).await;
    assert_eq!(still["status"], "failed", "the count restarts nothing");
    browser.click("confirm").await;
    browser
        .wait_text("operation", "the recover to finish", |t| {
            t.contains("done") && t.contains("1 of 1")
        })
        .await;
    receiver.wait_for("/hook", 2, Duration::from_secs(15)).await;
    browser.screenshot("recovered").await;

    browser.type_into("policy-schedule", "0s, 30s, 5m").await;
    browser.type_into("policy-per-second", "5").await;
    browser.type_into("policy-burst", "10").await;
    browser.type_into("policy-success-body", "success").await;
    browser.click("policy-save").await;
    browser
        .wait_text("rate-limit", "the new rate limit shown", |t| {
            t == "5/s, burst 10"
        })
        .await;
    let (_, stored) = app.get(&format!("/v1/endpoints/{id}")).await;
    assert_eq!(stored["schedule"], json!(["0s", "30s", "5m"]));
    assert_eq!(
        stored["rate_limit"],
        json!({"per_second": 5.0, "burst": 10})
    );
    assert_eq!(stored["success_body"], "success");

    // Jitter, the cap, the fresh lane's share, the breaker and ordering.
    let choose = |test: &str, value: &str| {
        format!(
            "const s = document.querySelector('[data-test={test}]'); s.value = '{value}'; \
             s.dispatchEvent(new Event('change', {{ bubbles: true }}));"
        )
    };
    browser.find("policy-jitter").await;
    browser.type_into("policy-jitter", "0.1").await;
    browser.type_into("policy-max-in-flight", "4").await;
    browser.type_into("policy-fresh-share", "0.8").await;
    browser.type_into("policy-breaker-failures", "3").await;
    browser.type_into("policy-breaker-open-ms", "60000").await;
    browser.run(&choose("policy-ordering", "key")).await;
    browser.run(&choose("policy-on-failure", "hold")).await;
    browser.click("policy-save").await;
    let stored = eventually(Duration::from_secs(15), "the policy saved", || async {
        let (_, stored) = app.get(&format!("/v1/endpoints/{id}")).await;
        (stored["ordering"] == "key").then_some(stored)
    })
    .await;
    assert_eq!(stored["schedule_jitter"], json!(0.1));
    assert_eq!(stored["max_in_flight"], json!(4));
    assert_eq!(stored["fresh_share"], json!(0.8));
    assert_eq!(
        stored["breaker"],
        json!({"failures": 3, "open_ms": 60000, "max_open_ms": null})
    );
    assert_eq!(stored["ordering_on_failure"], "hold");
    // The form is rebuilt from what is stored, and says so.
    browser
        .wait_text("policy-result", "the save's note", |t| t == "Saved.")
        .await;
    assert_eq!(
        browser
            .run("return document.querySelector('[data-test=policy-breaker-failures]').value")
            .await,
        json!("3")
    );
    // Off turns the breaker off; the rest stays.
    browser.run(&choose("policy-breaker", "off")).await;
    browser.click("policy-save").await;
    eventually(Duration::from_secs(15), "the breaker off", || async {
        let (_, stored) = app.get(&format!("/v1/endpoints/{id}")).await;
        (stored["breaker"].is_null() && stored["ordering"] == "key").then_some(())
    })
    .await;
    // Stored is not yet shown: the console rebuilds the form once it has
    // read the endpoint back, and a value typed before that is lost with the
    // old form. The old form says "Saving…" until then.
    browser
        .wait_text("policy-save", "the form rebuilt from what was saved", |t| {
            t == "Save"
        })
        .await;
    browser.screenshot("policy-saved").await;

    // A value hookd refuses is named, and nothing changes.
    browser.type_into("policy-burst", "0").await;
    browser.click("policy-save").await;
    let refused = browser.text("policy-error").await;
    assert!(refused.contains("burst"), "{refused}");
    browser.screenshot("policy-refused").await;
    browser.close().await;
}

async fn events_lead_to_their_deliveries(backend: Backend) {
    let app = backend.spawn().await;
    app.endpoint(json!({"owner": "merchant-42", "url": "http://127.0.0.1:9/erp"}))
        .await;
    let (status, event) = app
        .post(
            "/v1/events",
            json!({"event_type": "order.paid", "owner": "merchant-42", "key": "order-123:paid",
                "payload": {"order": 123}, "delay": "1h"}),
        )
        .await;
    assert_eq!(status, reqwest::StatusCode::CREATED, "{event}");

    let Some(browser) = Browser::open(&app, &backend, "events").await else {
        return;
    };
    browser.sign_in(TOKEN).await;
    browser.click("nav-events").await;
    browser
        .wait_text("events", "the event listed", |t| t.contains("order.paid"))
        .await;
    browser.screenshot("events").await;
    browser.find("event-row").await;
    browser
        .run("document.querySelector('[data-test=event-row] a').click()")
        .await;
    browser
        .wait_text("results", "the event's delivery", |t| {
            t.contains("order.paid")
        })
        .await;
    assert_eq!(browser.all("result").await.len(), 1, "one delivery");
    assert!(browser
        .fragment()
        .await
        .contains(event["id"].as_str().unwrap()));
    browser.screenshot("event-deliveries").await;
    browser.close().await;
}

async fn a_pull_endpoint_shows_its_leased_and_waiting_notifications(backend: Backend) {
    let app = backend.spawn().await;
    let (status, endpoint) = app.post("/v1/endpoints", json!({"delivery": "pull"})).await;
    assert_eq!(status, reqwest::StatusCode::CREATED, "{endpoint}");
    let id = endpoint["id"].as_str().unwrap().to_string();
    for n in 0..3 {
        app.notify(json!({"endpoint": id, "key": format!("job-{n}"), "payload": {"job": n}}))
            .await;
    }
    let (status, pulled) = app
        .post(
            &format!("/v1/endpoints/{id}/pull"),
            json!({"max": 1, "lease": "5m"}),
        )
        .await;
    assert_eq!(status, reqwest::StatusCode::OK, "{pulled}");

    let Some(browser) = Browser::open(&app, &backend, "pull").await else {
        return;
    };
    browser.sign_in(TOKEN).await;
    browser.goto(&format!("#/endpoints/{id}")).await;
    browser
        .wait_text("pull", "one leased, two waiting", |t| {
            t == "1 leased, 2 waiting"
        })
        .await;
    browser.screenshot("pull-endpoint").await;
    browser.close().await;
}

/// The three things the first console showed wrong (#49): a rotated
/// secret or a notice kept by a page when only the id in its URL
/// changed, a test notification refused by an endpoint that takes only
/// some event types, and "Saved." wiped by the form rebuilt after a save.
async fn no_notice_or_secret_of_one_page_is_shown_on_another_and_tests_and_saves_say_so(
    backend: Backend,
) {
    let app = backend
        .spawn_with("[secrets]\nrotation_overlap_ms = 3600000\n")
        .await;
    let receiver = Receiver::start().await;
    let id = |endpoint: serde_json::Value| endpoint["id"].as_str().unwrap().to_string();
    let flaky = id(app
        .endpoint(
            json!({"uid": "flaky-shop", "url": receiver.url("/flaky"), "event_types": ["order.*"]}),
        )
        .await);
    let slowpay = id(app
        .endpoint(json!({"uid": "slowpay-notify", "url": receiver.url("/slowpay")}))
        .await);
    let later = |n: u32| json!({"endpoint": "slowpay-notify", "delay": "1h", "payload": {"n": n}});
    let (first, second) = (app.notify(later(1)).await, app.notify(later(2)).await);

    let Some(browser) = Browser::open(&app, &backend, "no-crossing").await else {
        return;
    };
    browser.sign_in(TOKEN).await;
    browser.goto(&format!("#/endpoints/{slowpay}")).await;
    browser
        .wait_text("endpoint-id", "slowpay-notify's page", |t| {
            t == "slowpay-notify"
        })
        .await;
    browser.goto(&format!("#/endpoints/{flaky}")).await;
    browser
        .wait_text("endpoint-id", "flaky-shop's page", |t| t == "flaky-shop")
        .await;
    // An endpoint that takes only order.* takes a test without a type.
    browser.click("send-test").await;
    browser.find("test-link").await;
    let got = receiver
        .wait_for("/flaky", 1, Duration::from_secs(15))
        .await;
    assert!(String::from_utf8_lossy(&got[0].body).contains("hookd.test"));
    assert_eq!(got[0].header("hookd-event-type"), None);

    browser.click("rotate-secret").await;
    browser.click("confirm").await;
    let secret = browser.text("new-secret").await;
    // The overlap is the deployment's (an hour here), not a fixed 24 h.
    let (_, overlap) = app.get(&format!("/v1/endpoints/{flaky}/secret")).await;
    let until: chrono::DateTime<chrono::Utc> =
        serde_json::from_value(overlap["previous_secret_expires_at"].clone()).unwrap();
    let rotated = browser.text("endpoint-result").await;
    assert!(
        rotated.contains(&until.format("%Y-%m-%d %H:%M:%SZ").to_string())
            && !rotated.contains("24 h"),
        "{rotated}"
    );

    // Back, as the operator pressed it: slowpay-notify's page, and
    // nothing of flaky-shop's.
    browser.run("history.back()").await;
    browser
        .wait_text("endpoint-id", "slowpay-notify's page again", |t| {
            t == "slowpay-notify"
        })
        .await;
    let page = browser.run("return document.body.innerText").await;
    let page = page.as_str().unwrap_or_default();
    assert!(
        !page.contains(&secret),
        "flaky-shop's secret on slowpay-notify's page: {page}"
    );
    assert!(browser.all("endpoint-result").await.is_empty(), "{page}");
    browser.screenshot("back-on-another-endpoint").await;

    browser.type_into("policy-schedule", "0s, 1m").await;
    browser.click("policy-save").await;
    browser
        .wait_text("policy-result", "the save said", |t| t == "Saved.")
        .await;
    let (_, stored) = app.get(&format!("/v1/endpoints/{slowpay}")).await;
    assert_eq!(stored["schedule"], json!(["0s", "1m"]));
    browser.screenshot("saved").await;

    // "Retry requested" belongs to the notification retried only.
    browser.goto(&format!("#/notifications/{first}")).await;
    browser
        .wait_text("notification-id", "the first notification", |t| t == first)
        .await;
    browser.click("retry").await;
    browser
        .wait_text("action-result", "the retry said", |t| {
            t.contains("Retry requested")
        })
        .await;
    browser.goto(&format!("#/notifications/{second}")).await;
    browser
        .wait_text("notification-id", "the second notification", |t| {
            t == second
        })
        .await;
    assert!(browser.all("action-result").await.is_empty());
    browser.close().await;
}

both!(
    a_pull_endpoint_shows_its_leased_and_waiting_notifications,
    no_notice_or_secret_of_one_page_is_shown_on_another_and_tests_and_saves_say_so,
    an_endpoint_is_disabled_enabled_rotated_and_tested_from_its_page,
    failed_notifications_are_recovered_and_the_policy_edited_from_the_endpoint_page,
    events_lead_to_their_deliveries,
);

mod edit;
