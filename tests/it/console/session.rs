//! Signing in and out: a token is checked before it is kept, kept for
//! the tab only, and forgotten on sign-out.

use crate::backends::Backend;
use crate::console::Browser;
use crate::helpers::TOKEN;

async fn signing_in_checks_the_token_and_signing_out_forgets_it(backend: Backend) {
    let app = backend.spawn().await;
    let Some(browser) = Browser::open(&app, &backend, "sign-in").await else {
        return;
    };
    browser.goto("").await;
    browser.find("sign-in").await;
    browser.screenshot("sign-in").await;

    browser.type_into("token", "not-the-token").await;
    browser.click("sign-in-submit").await;
    let refused = browser.text("sign-in-error").await;
    assert!(refused.contains("not valid"), "{refused}");
    browser.screenshot("sign-in-refused").await;

    // With the keyboard: the token, then Enter.
    browser
        .type_into("token", &format!("{TOKEN}\u{E007}"))
        .await;
    browser.find("overview").await;
    browser.screenshot("overview").await;
    let kept = browser
        .run("return sessionStorage.getItem('hookd.token')")
        .await;
    assert_eq!(kept, TOKEN, "the token is kept for the tab");
    let local = browser.run("return localStorage.length").await;
    assert_eq!(local, 0, "nothing is kept beyond the tab");

    // A reload keeps the session.
    browser.goto("#/endpoints").await;
    browser.find("endpoints-page").await;
    browser.screenshot("endpoints").await;

    browser.click("sign-out").await;
    browser.find("sign-in").await;
    let gone = browser
        .run("return sessionStorage.getItem('hookd.token')")
        .await;
    assert!(gone.is_null(), "sign-out forgets the token: {gone}");
    browser.goto("#/notifications").await;
    browser.find("sign-in").await;
    browser.screenshot("signed-out").await;
    browser.close().await;
}

both!(signing_in_checks_the_token_and_signing_out_forgets_it);

/// With no tokens configured hookd answers this machine without one: the
/// console opens without a sign-in, reads and acts.
async fn the_open_mode_needs_no_sign_in(backend: Backend) {
    let app = backend.spawn_with("[api]\ntokens = []\n").await;
    assert!(app.state.auth.is_open(), "no tokens: the open mode");
    let endpoint = app.endpoint(serde_json::json!({})).await;
    let id = app
        .notify(serde_json::json!({"endpoint": endpoint["id"], "key": "local-1", "payload": {}, "delay": "1h"}))
        .await;
    let Some(browser) = Browser::open(&app, &backend, "open-mode").await else {
        return;
    };
    browser.goto(&format!("#/notifications/{id}")).await;
    browser.find("who").await;
    browser.click("cancel").await;
    browser.click("confirm").await;
    browser
        .wait_text("status", "the cancel to show", |t| t == "cancelled")
        .await;
    browser.screenshot("open-mode").await;
    browser.close().await;
}

both!(the_open_mode_needs_no_sign_in);
