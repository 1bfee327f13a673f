//! What an operator hands out from an endpoint's page (§18): a portal
//! link with the permissions and lifetime chosen there, which opens the
//! portal with them, the revocation of its links, and a pull endpoint's
//! consumer token, which pulls.

use std::time::Duration;

use chrono::{DateTime, Utc};
use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::backends::Backend;
use crate::console::Browser;
use crate::helpers::{eventually, TOKEN};
use crate::portal::{as_token, get, settings, KEY};

/// The value of the `data-test` input `test`.
async fn value_of(browser: &Browser, test: &str) -> String {
    browser.find(test).await;
    let script = format!("return document.querySelector('[data-test={test}]').value;");
    browser.run(&script).await.as_str().unwrap().to_string()
}

async fn an_operator_issues_a_portal_link_and_a_consumer_token_from_the_endpoints_page(
    backend: Backend,
) {
    let app = backend.spawn_with(&settings(KEY)).await;
    let shop = app
        .endpoint(json!({"uid": "shop", "owner": "merchant-42"}))
        .await;
    let (status, queue) = app
        .post("/v1/endpoints", json!({"uid": "queue", "delivery": "pull"}))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{queue}");
    app.notify(json!({"endpoint": "queue", "payload": {"job": 1}}))
        .await;

    let Some(browser) = Browser::open(&app, &backend, "links").await else {
        return;
    };
    browser.sign_in(TOKEN).await;
    browser
        .goto(&format!("#/endpoints/{}", shop["id"].as_str().unwrap()))
        .await;
    // The page has loaded once the form shows.
    browser.find("portal-link-lifetime").await;
    assert!(
        browser.all("consumer-token").await.is_empty(),
        "a push endpoint has no consumer"
    );
    browser
        .run("const s = document.querySelector('[data-test=portal-link-lifetime]'); s.value = '604800'; s.dispatchEvent(new Event('change', { bubbles: true }));")
        .await;
    browser.click("portal-link-manage").await;
    browser.click("portal-link-issue").await;
    let url = value_of(&browser, "portal-link-url").await;
    browser.screenshot("portal-link-issued").await;
    let (_, link) = url.split_once("#portal=").expect("a portal link");
    let (status, who) = get(&app, link, "/v1/whoami").await;
    assert_eq!(status, StatusCode::OK, "{who}");
    assert_eq!(who["permissions"], json!(["read", "retry", "manage"]));
    assert_eq!(who["portal"], json!({"endpoint": shop["id"]}));
    let expires: DateTime<Utc> = who["expires_at"].as_str().unwrap().parse().unwrap();
    let days = (expires - Utc::now()).num_hours() as f64 / 24.0;
    assert!((6.9..=7.0).contains(&days), "{days} days");

    // Revoked from the page: every link issued so far is refused.
    browser.click("portal-link-revoke").await;
    browser.click("confirm").await;
    browser.find("portal-link-revoked").await;
    assert_eq!(
        get(&app, link, "/v1/whoami").await.0,
        StatusCode::UNAUTHORIZED
    );
    browser.click("portal-link-issue").await;
    let url = value_of(&browser, "portal-link-url").await;
    let (_, link) = url.split_once("#portal=").expect("a portal link");
    assert_eq!(get(&app, link, "/v1/whoami").await.0, StatusCode::OK);
    // Opened in the operator's own tab, a link leaves the operator signed
    // in (a page could otherwise sign them out, or into another's portal).
    let operator = browser.text("who").await;
    browser.goto(&format!("#portal={link}")).await;
    let said = browser.text("session-notice").await;
    assert!(said.contains("private window"), "{said}");
    assert_eq!(browser.text("who").await, operator);
    browser.click("session-notice-dismiss").await;
    eventually(Duration::from_secs(15), "the notice dismissed", || async {
        browser.all("session-notice").await.is_empty().then_some(())
    })
    .await;

    // A consumer token replaces the one before, and pulls.
    browser
        .goto(&format!("#/endpoints/{}", queue["id"].as_str().unwrap()))
        .await;
    browser.click("consumer-token-issue").await;
    browser.click("confirm").await;
    let token = browser.text("consumer-token-value").await;
    assert!(token.starts_with("hkc_"), "{token}");
    let (status, pulled) = as_token(
        &app,
        &token,
        Method::POST,
        "/v1/endpoints/queue/pull",
        Some(json!({"max": 10})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{pulled}");
    assert_eq!(pulled["data"].as_array().map(Vec::len), Some(1), "{pulled}");

    // Signed out, the same tab opens the link's portal with what it was
    // issued with. The link arrives in the open console (only the fragment
    // changes) and signs in once hookd has checked it: the next address is
    // typed after that, as a user would, not while the check is under way.
    browser.click("sign-out").await;
    browser.find("sign-in").await;
    browser.goto_url(&url).await;
    browser
        .wait_text("who", "the portal link signed in", |t| {
            t.starts_with("portal:")
        })
        .await;
    browser
        .goto(&format!("#/endpoints/{}", shop["id"].as_str().unwrap()))
        .await;
    browser.find("manage").await;

    browser.close().await;
}

both!(an_operator_issues_a_portal_link_and_a_consumer_token_from_the_endpoints_page);
