//! A receiver's portal link in the console: it signs in from the URL
//! fragment (then gone from the address bar), shows that endpoint's
//! notifications only and lets its holder retry; a tampered, expired or
//! foreign link is refused by the server, and the console says so.

use std::time::Duration;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use chrono::Utc;
use hookd::domain::portal::{sign, PortalClaims, PortalScope};
use serde_json::json;

use crate::backends::Backend;
use crate::console::Browser;
use crate::helpers::eventually;
use crate::receiver::{Receiver, Reply};

const KEY: &str = "portal-key-for-tests-0123456789abcdef";

fn portal_settings() -> String {
    format!("[portal]\nkey = \"{KEY}\"\n")
}

async fn a_portal_link_shows_its_endpoints_notifications_only(backend: Backend) {
    let app = backend.spawn_with(&portal_settings()).await;
    let receiver = Receiver::start().await;
    receiver.reply("/mine", vec![Reply::status(500), Reply::status(200)]);
    let mine = app
        .endpoint(json!({"uid": "acme-shop", "owner": "acme", "url": receiver.url("/mine"), "schedule": ["0s"]}))
        .await;
    let theirs = app.endpoint(json!({"url": receiver.url("/theirs")})).await;
    let failed = app
        .notify(json!({"endpoint": mine["id"], "key": "order-1:paid", "payload": {"order": 1}}))
        .await;
    app.notify(
        json!({"endpoint": theirs["id"], "key": "secret-order:paid", "payload": {}, "delay": "1h"}),
    )
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
    let (status, link) = app
        .post(
            &format!("/v1/endpoints/{}/portal", mine["id"].as_str().unwrap()),
            json!({}),
        )
        .await;
    assert_eq!(status, reqwest::StatusCode::CREATED, "{link}");

    let Some(browser) = Browser::open(&app, &backend, "portal").await else {
        return;
    };
    browser.goto_url(link["url"].as_str().unwrap()).await;
    browser
        .wait_text("results", "the endpoint's notification", |t| {
            t.contains("order-1:paid")
        })
        .await;
    assert_eq!(
        browser.all("result").await.len(),
        1,
        "only its endpoint's notifications"
    );
    // The header names the endpoint the link is for.
    browser
        .wait_text("who", "the portal's endpoint named", |t| {
            t.contains("acme-shop") && t.contains("acme")
        })
        .await;
    let fragment = browser.fragment().await;
    assert!(
        !fragment.contains("portal"),
        "the token left the address bar: {fragment}"
    );
    assert!(
        browser.all("nav-events").await.is_empty(),
        "no events in a portal"
    );
    browser.screenshot("portal-notifications").await;

    browser.click("result-link").await;
    assert!(
        browser.all("cancel").await.is_empty(),
        "a portal does not cancel"
    );
    browser.click("retry").await;
    receiver.wait_for("/mine", 2, Duration::from_secs(15)).await;
    browser.wait_count("attempt", 2).await;
    browser.screenshot("portal-retried").await;

    // Another endpoint's notification, opened by its address, is not there.
    let (_, others) = app
        .get(&format!(
            "/v1/notifications?endpoint={}",
            theirs["id"].as_str().unwrap()
        ))
        .await;
    let other = others["data"][0]["id"].as_str().unwrap();
    browser.goto(&format!("#/notifications/{other}")).await;
    let refused = browser.text("error").await;
    assert!(refused.contains("not found"), "{refused}");
    browser.screenshot("portal-other-notification").await;
    // The operator's events page, typed in, is no page of the portal's.
    browser.goto("#/events").await;
    let missing = browser.text("not-found").await;
    assert!(missing.contains("No such page"), "{missing}");

    // The same address in a new tab (no session), as a bookmark would
    // open it: a page that says to ask for a new link, not a sign-in
    // with an API token.
    browser.goto_url(link["url"].as_str().unwrap()).await;
    browser.find("results").await;
    browser
        .run("sessionStorage.clear(); location.reload();")
        .await;
    let ended = browser.text("portal-ended").await;
    assert!(ended.contains("ask the sender for a new one"), "{ended}");
    assert!(browser.all("sign-in").await.is_empty(), "no token sign-in");
    browser.screenshot("portal-new-tab").await;

    // Signing out of a portal lands there too.
    browser.goto_url(link["url"].as_str().unwrap()).await;
    browser.find("results").await;
    browser.click("sign-out").await;
    assert_eq!(browser.text("notice").await, "Signed out.");
    browser.find("portal-ended").await;
    assert!(browser.all("sign-in").await.is_empty(), "no token sign-in");
    browser.close().await;
}

/// The console's answer to a link hookd refuses: the portal's own page
/// (never an API-token sign-in), saying so.
async fn refused(browser: &Browser, url: &str, page: &str) {
    browser.goto_url(url).await;
    let notice = browser.text("notice").await;
    assert!(
        notice.contains("not valid or has expired"),
        "{page}: {notice}"
    );
    assert!(
        browser.all("results").await.is_empty(),
        "{page}: nothing shown"
    );
    assert!(
        browser.all("sign-in").await.is_empty(),
        "{page}: no sign-in"
    );
    browser.find("portal-ended").await;
    browser.screenshot(page).await;
}

async fn a_tampered_expired_or_foreign_portal_link_is_refused(backend: Backend) {
    let app = backend.spawn_with(&portal_settings()).await;
    let mine = app.endpoint(json!({})).await;
    let theirs = app.endpoint(json!({})).await;
    let (_, link) = app
        .post(
            &format!("/v1/endpoints/{}/portal", mine["id"].as_str().unwrap()),
            json!({}),
        )
        .await;
    let url = link["url"].as_str().unwrap().to_string();
    let (base, token) = url.split_once("#portal=").unwrap();
    let body = token.strip_prefix("hookd_portal_").unwrap();
    let (payload, signature) = body.rsplit_once('.').unwrap();

    let Some(browser) = Browser::open(&app, &backend, "portal-refused").await else {
        return;
    };
    // Another endpoint's id in the payload, the signature kept.
    let text = String::from_utf8(URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap();
    let swapped = text.replace(mine["id"].as_str().unwrap(), theirs["id"].as_str().unwrap());
    let swapped = URL_SAFE_NO_PAD.encode(swapped);
    refused(
        &browser,
        &format!("{base}#portal=hookd_portal_{swapped}.{signature}"),
        "other-endpoint",
    )
    .await;

    // A signature that is not portal.key's.
    let mut forged = signature.to_string();
    let last = if forged.ends_with('A') { 'B' } else { 'A' };
    forged.pop();
    forged.push(last);
    refused(
        &browser,
        &format!("{base}#portal=hookd_portal_{payload}.{forged}"),
        "bad-signature",
    )
    .await;

    // Signed with the right key, but expired a minute ago.
    let expired = sign(
        KEY.as_bytes(),
        &PortalClaims {
            permissions: Default::default(),
            scope: PortalScope::Endpoint(mine["id"].as_str().unwrap().parse().unwrap()),
            expires_at: Utc::now() - chrono::Duration::seconds(60),
            generation: 0,
        },
    );
    refused(&browser, &format!("{base}#portal={expired}"), "expired").await;

    // The untouched link still works.
    browser.goto_url(&url).await;
    browser.find("notifications").await;
    browser.close().await;
}

/// An owner's link (`POST /v1/owners/{owner}/portal`): every endpoint of
/// that owner and their notifications, nothing of another owner's, even
/// by address.
async fn an_owners_portal_link_shows_that_owners_endpoints_and_nothing_else(backend: Backend) {
    let app = backend.spawn_with(&portal_settings()).await;
    let shop = app
        .endpoint(json!({"uid": "acme-shop", "owner": "acme"}))
        .await;
    let billing = app
        .endpoint(json!({"uid": "acme-billing", "owner": "acme"}))
        .await;
    let globex = app
        .endpoint(json!({"uid": "globex-shop", "owner": "globex"}))
        .await;
    for (endpoint, key) in [
        (&shop, "acme-1"),
        (&billing, "acme-2"),
        (&globex, "globex-1"),
    ] {
        app.notify(json!({"endpoint": endpoint["id"], "key": key, "payload": {}, "delay": "1h"}))
            .await;
    }
    let (status, link) = app.post("/v1/owners/acme/portal", json!({})).await;
    assert_eq!(status, reqwest::StatusCode::CREATED, "{link}");

    let Some(browser) = Browser::open(&app, &backend, "portal-owner").await else {
        return;
    };
    browser.goto_url(link["url"].as_str().unwrap()).await;
    assert_eq!(browser.text("who").await, "portal: owner acme");
    browser.wait_count("result", 2).await;
    let results = browser.text("results").await;
    assert!(
        results.contains("acme-1") && results.contains("acme-2") && !results.contains("globex"),
        "{results}"
    );
    browser.screenshot("portal-owner-notifications").await;

    browser.click("nav-endpoints").await;
    browser.wait_count("endpoint-row", 2).await;
    let endpoints = browser.text("endpoints").await;
    assert!(
        endpoints.contains("acme-shop")
            && endpoints.contains("acme-billing")
            && !endpoints.contains("globex"),
        "{endpoints}"
    );
    browser.screenshot("portal-owner-endpoints").await;

    // Another owner's endpoint, opened by its address, is not there.
    browser
        .goto(&format!("#/endpoints/{}", globex["id"].as_str().unwrap()))
        .await;
    let refused = browser.text("error").await;
    assert!(refused.contains("not found"), "{refused}");
    browser.close().await;
}

/// A logo as a deployment would serve it.
const LOGO: &str = "<svg xmlns='http://www.w3.org/2000/svg' width='28' height='28'>\
<circle cx='14' cy='14' r='12' fill='white'/></svg>";

/// A merchant holding a `manage` link (§18), under the deployment's
/// brand: it moves its URL, reads and rotates its secret, and sends
/// itself a test of one of its event types, from its endpoint's page.
async fn a_manage_link_lets_its_merchant_move_its_url_rotate_its_secret_and_send_a_test(
    backend: Backend,
) {
    let receiver = Receiver::start().await;
    receiver.reply(
        "/logo.svg",
        vec![Reply::With(
            200,
            LOGO,
            vec![("content-type", "image/svg+xml")],
        )],
    );
    // As the README's [portal] example writes it.
    let settings = format!(
        "{}name = \"Acme Payments\"\nlogo_url = \"{}\"\naccent = \"#0a7d5a\"\n",
        portal_settings(),
        receiver.url("/logo.svg")
    );
    let app = backend.spawn_with(&settings).await;
    let shop = app
        .endpoint(
            json!({"uid": "acme-shop", "owner": "acme", "description": "Acme's orders",
            "url": receiver.url("/old"), "event_types": ["refund.*", "order.paid", "order.refunded"]}),
        )
        .await;
    let id = shop["id"].as_str().unwrap();
    // A type sent to the owner that the endpoint does not take yet.
    let (status, event) = app
        .post(
            "/v1/events",
            json!({"owner": "acme", "event_type": "order.shipped", "payload": {}}),
        )
        .await;
    assert_eq!(status, reqwest::StatusCode::CREATED, "{event}");
    let (status, link) = app
        .post(
            "/v1/endpoints/acme-shop/portal",
            json!({"permissions": ["read", "retry", "manage"]}),
        )
        .await;
    assert_eq!(status, reqwest::StatusCode::CREATED, "{link}");

    let Some(browser) = Browser::open(&app, &backend, "portal-manage").await else {
        return;
    };
    browser.goto_url(link["url"].as_str().unwrap()).await;
    browser.find("notifications").await;
    let brand = browser.text("brand").await;
    assert_eq!(brand, "Acme Payments");
    assert_eq!(
        browser.run("return document.title").await,
        json!("Acme Payments"),
        "the tab is the deployment's, not hookd's"
    );
    let logo_loaded = browser
        .run("const l = document.querySelector('[data-test=brand-logo]'); return l.complete && l.naturalWidth > 0;")
        .await;
    assert_eq!(logo_loaded, json!(true), "the logo loads under the policy");
    let header = browser
        .run("return getComputedStyle(document.querySelector('header.top')).backgroundColor;")
        .await;
    assert_eq!(
        header,
        json!("rgb(10, 125, 90)"),
        "the accent colours the header"
    );

    browser.goto(&format!("#/endpoints/{id}")).await;
    browser.find("manage").await;
    assert!(
        browser.all("policy").await.is_empty(),
        "no operator's policy form"
    );
    browser.type_into("manage-url", &receiver.url("/new")).await;
    // The types sent lately are offered: the one it does not take yet is
    // added by its checkbox.
    browser
        .wait_text("manage-recent-types", "the recent types", |t| {
            t.contains("order.shipped")
        })
        .await;
    browser
        .run("document.querySelector('[data-test=manage-recent-type][value=\"order.shipped\"]').click();")
        .await;
    // And only the payloads of one store, as the merchant writes it.
    browser
        .type_into("manage-filter", r#"{"store": "sh-01"}"#)
        .await;
    browser.click("manage-save").await;
    browser
        .wait_text("manage-saved", "the save", |t| t == "Saved.")
        .await;
    let (_, stored) = app.get("/v1/endpoints/acme-shop").await;
    assert_eq!(stored["url"], json!(receiver.url("/new")));
    assert_eq!(
        stored["event_types"],
        json!(["refund.*", "order.paid", "order.refunded", "order.shipped"])
    );
    assert_eq!(stored["filter"], json!({"store": "sh-01"}));

    browser.click("manage-show-secret").await;
    let (_, secret) = app.get("/v1/endpoints/acme-shop/secret").await;
    let shown = browser.text("manage-secret").await;
    assert_eq!(json!(shown), secret["secret"]);
    browser.click("manage-rotate").await;
    browser.click("confirm").await;
    let rotated = browser
        .wait_text("manage-secret", "the new secret", |t| {
            t != shown && t.starts_with("whsec_")
        })
        .await;
    let (_, secret) = app.get("/v1/endpoints/acme-shop/secret").await;
    assert_eq!(json!(rotated), secret["secret"]);
    browser.screenshot("portal-manage").await;

    // As offered: the first exact type, never the pattern listed before it
    // (which a test cannot be sent as: it once was, and was refused).
    browser.click("manage-send-test").await;
    browser
        .wait_text("manage-test-result", "the test sent", |t| {
            t.contains("order.paid")
        })
        .await;
    browser
        .run("const s = document.querySelector('[data-test=manage-test-type]'); s.value = 'order.refunded'; s.dispatchEvent(new Event('change', { bubbles: true }));")
        .await;
    browser.click("manage-send-test").await;
    browser
        .wait_text("manage-test-result", "the test sent", |t| {
            t.contains("order.refunded")
        })
        .await;
    let got = receiver.wait_for("/new", 2, Duration::from_secs(15)).await;
    let types: Vec<serde_json::Value> = got
        .iter()
        .map(|r| serde_json::from_slice::<serde_json::Value>(&r.body).unwrap())
        .inspect(|body| assert_eq!(body["type"], "hookd.test"))
        .map(|body| body["event_type"].clone())
        .collect();
    assert_eq!(types, [json!("order.paid"), json!("order.refunded")]);
    browser.close().await;
}

both!(
    a_manage_link_lets_its_merchant_move_its_url_rotate_its_secret_and_send_a_test,
    a_portal_link_shows_its_endpoints_notifications_only,
    a_tampered_expired_or_foreign_portal_link_is_refused,
    an_owners_portal_link_shows_that_owners_endpoints_and_nothing_else,
);
