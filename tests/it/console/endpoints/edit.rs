//! An endpoint created and edited in the console: its URL, description,
//! types and timeout, its chart, its payload filter, and its kind of
//! signing with its public key.

use super::*;

async fn an_endpoint_is_created_and_its_url_description_types_and_timeout_edited_in_the_console(
    backend: Backend,
) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    let Some(browser) = Browser::open(&app, &backend, "new-endpoint").await else {
        return;
    };
    browser.sign_in(TOKEN).await;
    browser.click("nav-endpoints").await;
    browser.click("new-open").await;
    browser.type_into("new-uid", "acme-shop").await;
    browser.type_into("new-owner", "acme").await;
    browser.type_into("new-url", &receiver.url("/acme")).await;
    browser
        .type_into("new-description", "Acme's order callbacks")
        .await;
    browser
        .type_into("new-event_types", "order.*, refund.created")
        .await;
    assert_eq!(
        browser.unlabelled().await,
        json!([]),
        "every field has a label"
    );
    browser.click("new-submit").await;
    let secret = browser.text("new-secret").await;
    assert!(secret.starts_with("whsec_"), "{secret}");
    let (_, stored) = app.get("/v1/endpoints/acme-shop").await;
    assert_eq!(stored["owner"], "acme");
    assert_eq!(stored["url"], receiver.url("/acme"));
    assert_eq!(stored["description"], "Acme's order callbacks");
    assert_eq!(stored["event_types"], json!(["order.*", "refund.created"]));
    browser
        .wait_text("endpoints", "the new endpoint listed", |t| {
            t.contains("acme-shop")
        })
        .await;
    browser.screenshot("endpoint-created").await;

    browser.click("new-link").await;
    browser
        .wait_text("endpoint-id", "its page", |t| t == "acme-shop")
        .await;
    browser
        .type_into("policy-url", &receiver.url("/acme-v2"))
        .await;
    browser
        .type_into("policy-description", "Acme's callbacks, v2")
        .await;
    // Emptied as a person would (WebDriver's clear sends no input event).
    browser.type_into("policy-event-types", "x").await;
    browser
        .find("policy-event-types")
        .await
        .send_keys("\u{e003}")
        .await
        .unwrap();
    browser.type_into("policy-timeout", "2500").await;
    browser.click("policy-save").await;
    browser
        .wait_text("policy-result", "the save said", |t| t == "Saved.")
        .await;
    let (_, stored) = app.get("/v1/endpoints/acme-shop").await;
    assert_eq!(stored["url"], receiver.url("/acme-v2"));
    assert_eq!(stored["description"], "Acme's callbacks, v2");
    assert_eq!(stored["event_types"], json!(null), "all types again");
    assert_eq!(stored["timeout_ms"], 2500);
    browser.close().await;
}

async fn an_endpoints_page_charts_its_own_deliveries_only(backend: Backend) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    receiver.reply("/down", vec![Reply::status(503)]);
    let shop = app
        .endpoint(json!({"uid": "shop", "url": receiver.url("/hook")}))
        .await;
    let other = app
        .endpoint(json!({"uid": "other", "url": receiver.url("/down"), "schedule": ["0s"]}))
        .await;
    for i in 0..3 {
        app.notify(json!({"endpoint": "shop", "payload": {"i": i}}))
            .await;
    }
    for i in 0..2 {
        app.notify(json!({"endpoint": "other", "payload": {"i": i}}))
            .await;
    }
    eventually(Duration::from_secs(15), "every attempt", || async {
        (receiver.total() == 5).then_some(())
    })
    .await;
    let Some(browser) = Browser::open(&app, &backend, "endpoint-charts").await else {
        return;
    };
    browser.sign_in(TOKEN).await;
    browser
        .goto(&format!("#/endpoints/{}", shop["id"].as_str().unwrap()))
        .await;
    browser.find("endpoint-charts").await;
    browser
        .wait_text("total-delivered", "shop's three deliveries", |t| t == "3")
        .await;
    assert_eq!(browser.text("total-failed").await, "0");
    for chart in [
        "chart-deliveries",
        "chart-success",
        "chart-failures",
        "chart-lateness",
    ] {
        browser.find(chart).await;
    }
    // The pending backlog is sampled for the whole deployment only.
    assert!(browser.all("chart-pending").await.is_empty());
    // Nothing failed here: the failures chart says so.
    browser.find("chart-failures-empty").await;
    browser.screenshot("endpoint-charts").await;
    browser
        .goto(&format!("#/endpoints/{}", other["id"].as_str().unwrap()))
        .await;
    browser
        .wait_text("total-failed", "other's two failures", |t| t == "2")
        .await;
    assert_eq!(browser.text("total-delivered").await, "0");
    // Every attempt failed: a success ratio of 0 % is drawn, not "nothing".
    assert!(browser.all("chart-success-empty").await.is_empty());
    browser.close().await;
}

async fn an_endpoints_payload_filter_is_shown_and_edited_from_its_page_and_a_refusal_names_the_path(
    backend: Backend,
) {
    let app = backend.spawn().await;
    let endpoint = app
        .endpoint(json!({"uid": "cny-only", "filter": {"currency": "CNY"}}))
        .await;
    let id = endpoint["id"].as_str().unwrap().to_string();
    let Some(browser) = Browser::open(&app, &backend, "payload-filter").await else {
        return;
    };
    browser.sign_in(TOKEN).await;
    browser.goto(&format!("#/endpoints/{id}")).await;
    browser
        .wait_text("payload-filter", "the stored filter", |t| {
            t == r#"{"currency":"CNY"}"#
        })
        .await;

    // Not JSON: the console says so and sends nothing.
    browser.type_into("policy-filter", "{currency: CNY}").await;
    browser.click("policy-save").await;
    browser
        .wait_text("policy-error", "the console's refusal", |t| {
            t.contains("not JSON")
        })
        .await;
    // JSON hookd refuses: its message names the path and the operator.
    browser
        .type_into("policy-filter", r#"{"amount": {"$gte": true}}"#)
        .await;
    browser.click("policy-save").await;
    browser
        .wait_text("policy-error", "hookd's refusal", |t| {
            t.contains("filter.amount.$gte") && t.contains("number or a string")
        })
        .await;
    let (_, stored) = app.get("/v1/endpoints/cny-only").await;
    assert_eq!(
        stored["filter"],
        json!({"currency": "CNY"}),
        "nothing written"
    );

    browser
        .type_into(
            "policy-filter",
            r#"{"amount": {"$gte": 100}, "currency": {"$in": ["CNY", "HKD"]}}"#,
        )
        .await;
    browser.click("policy-save").await;
    browser
        .wait_text("policy-result", "the save said", |t| t == "Saved.")
        .await;
    browser
        .wait_text("payload-filter", "the new filter", |t| {
            t == r#"{"amount":{"$gte":100},"currency":{"$in":["CNY","HKD"]}}"#
        })
        .await;
    let (_, stored) = app.get("/v1/endpoints/cny-only").await;
    assert_eq!(
        stored["filter"],
        json!({"amount": {"$gte": 100}, "currency": {"$in": ["CNY", "HKD"]}})
    );
    browser.close().await;
}

async fn an_endpoints_success_filter_is_shown_and_edited_from_its_page(backend: Backend) {
    let app = backend.spawn().await;
    let endpoint = app
        .endpoint(json!({"uid": "wechat", "success_filter": {"code": "SUCCESS"}}))
        .await;
    let id = endpoint["id"].as_str().unwrap().to_string();
    let Some(browser) = Browser::open(&app, &backend, "success-filter").await else {
        return;
    };
    browser.sign_in(TOKEN).await;
    browser.goto(&format!("#/endpoints/{id}")).await;
    browser
        .wait_text("success-rule", "the stored rule", |t| {
            t.starts_with(r#"2xx with a JSON body matching {"code":"SUCCESS"}"#)
        })
        .await;

    // Not JSON: the console says so and sends nothing.
    browser
        .type_into("policy-success-filter", "{code: SUCCESS}")
        .await;
    browser.click("policy-save").await;
    browser
        .wait_text("policy-error", "the console's refusal", |t| {
            t.contains("not JSON")
        })
        .await;
    browser
        .type_into("policy-success-filter", r#"{"ret_code": "0000"}"#)
        .await;
    browser.click("policy-save").await;
    browser
        .wait_text("policy-result", "the save said", |t| t == "Saved.")
        .await;
    browser
        .wait_text("success-rule", "the new rule", |t| {
            t.starts_with(r#"2xx with a JSON body matching {"ret_code":"0000"}"#)
        })
        .await;
    let (_, stored) = app.get("/v1/endpoints/wechat").await;
    assert_eq!(stored["success_filter"], json!({"ret_code": "0000"}));
    assert_eq!(stored["success_body"], serde_json::Value::Null);
    browser.close().await;
}

async fn an_endpoints_kind_of_signing_and_its_public_key_are_shown_on_its_page(backend: Backend) {
    let app = backend.spawn().await;
    let shared = app.endpoint(json!({"uid": "shared"})).await;
    let keyed = app
        .endpoint(json!({"uid": "keyed", "signing": "ed25519"}))
        .await;
    let (_, keys) = app.get("/v1/endpoints/keyed/public-key").await;
    let Some(browser) = Browser::open(&app, &backend, "signing").await else {
        return;
    };
    browser.sign_in(TOKEN).await;
    browser
        .goto(&format!("#/endpoints/{}", shared["id"].as_str().unwrap()))
        .await;
    browser
        .wait_text("signing", "the shared secret's kind", |t| {
            t.starts_with("hmac")
        })
        .await;
    browser
        .goto(&format!("#/endpoints/{}", keyed["id"].as_str().unwrap()))
        .await;
    browser
        .wait_text("public-key", "the public key", |t| {
            t == keys["public_key"].as_str().unwrap()
        })
        .await;
    assert!(browser.text("signing").await.starts_with("ed25519 (v1a)"));
    browser.close().await;
}

both!(
    an_endpoints_kind_of_signing_and_its_public_key_are_shown_on_its_page,
    an_endpoints_success_filter_is_shown_and_edited_from_its_page,
    an_endpoints_payload_filter_is_shown_and_edited_from_its_page_and_a_refusal_names_the_path,
    an_endpoints_page_charts_its_own_deliveries_only,
    an_endpoint_is_created_and_its_url_description_types_and_timeout_edited_in_the_console,
);
