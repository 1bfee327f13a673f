//! Secrets at rest, issue #33: `operator.url` is sealed like the other
//! secrets; and once the start-up walk has encrypted every stored value, a
//! plaintext value in a secret column can only have been written around
//! hookd, so it is an error, never a signing secret.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;

use crate::backends::Backend;
use crate::helpers::eventually;
use crate::receiver::{Receiver, Reply};

const DEADLINE: Duration = Duration::from_secs(15);
/// How long a test that waits for plaintext to be refused keeps the row
/// sealed between two tries. hookd refuses plaintext only once a check
/// finds none (three checks, a second apart, then it gives up until the
/// next start): a row left in clear for most of the wait, as when each try
/// followed the last within 10 ms, was found by all three on a loaded
/// machine, and refusal never came.
const SEALED_BETWEEN_TRIES: Duration = Duration::from_millis(250);
const KEYS: &str =
    "[secrets]\nkeys = [{ id = \"k\", key = \"ZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXp7fH1+f4CBgoM=\" }]\n";
/// A secret someone with write access to the database knows.
const PLANTED: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

async fn a_plaintext_secret_written_after_the_start_up_walk_is_refused_and_never_signs(
    backend: Backend,
) {
    let receiver = Receiver::start().await;
    let app = backend.spawn_with(KEYS).await;
    app.endpoint(json!({"uid": "planted", "url": receiver.url("/planted"), "schedule": ["0s"]}))
        .await;
    let sealed = backend
        .texts("SELECT secret FROM endpoints WHERE uid = 'planted'")
        .await
        .remove(0);
    assert!(sealed.starts_with("enc:v1:k:"), "{sealed}");
    // Before the walk has ended, plaintext is a row not yet encrypted and
    // reads as itself: each try plants it and, when it was still read,
    // puts the sealed value back, so the walk never finds it.
    let plant = |value: &str| {
        let value = value.to_string();
        let backend = &backend;
        async move {
            let sql = "UPDATE endpoints SET secret = $1 WHERE uid = 'planted'";
            assert_eq!(backend.execute(sql, &[value.as_str()]).await, 1);
        }
    };
    eventually(DEADLINE, "a plaintext secret to be refused", || async {
        plant(PLANTED).await;
        let (status, _) = app.get("/v1/endpoints/planted/secret").await;
        if status == StatusCode::INTERNAL_SERVER_ERROR {
            return Some(());
        }
        plant(&sealed).await;
        tokio::time::sleep(SEALED_BETWEEN_TRIES).await;
        None
    })
    .await;

    app.state.service.forget_cached_endpoints();
    let id = app
        .notify(json!({"endpoint": "planted", "payload": {}}))
        .await;
    let attempt = eventually(DEADLINE, "the attempt to be recorded", || async {
        let (_, page) = app.get(&format!("/v1/notifications/{id}/attempts")).await;
        page["data"].as_array().and_then(|a| a.first().cloned())
    })
    .await;
    assert_eq!(
        attempt["error"]["code"],
        json!("sealed_secret"),
        "{attempt}"
    );
    let message = attempt["error"]["message"].as_str().unwrap();
    assert!(message.contains("plaintext"), "{attempt}");
    assert!(receiver.received("/planted").is_empty());
}
both!(a_plaintext_secret_written_after_the_start_up_walk_is_refused_and_never_signs);

async fn the_operator_url_is_stored_sealed_and_still_receives_events(backend: Backend) {
    let operator = Receiver::start().await;
    let receiver = Receiver::start().await;
    receiver.reply("/down", vec![Reply::status(503)]);
    let overrides = format!(
        "{KEYS}[operator]\nurl = \"{}\"\nsecret = \"{PLANTED}\"\n",
        operator.url("/ops?token=operator-s3cret")
    );
    let app = backend.spawn_with(&overrides).await;
    app.endpoint(json!({"uid": "down", "url": receiver.url("/down"), "schedule": ["0s"]}))
        .await;
    app.notify(json!({"endpoint": "down", "payload": {}})).await;
    let got = operator.wait_for("/ops", 1, DEADLINE).await;
    standardwebhooks::Webhook::new(PLANTED)
        .unwrap()
        .verify(&got[0].body, &got[0].headers)
        .expect("signed with operator.secret");
    // Each backend's own column, as stored: only ciphertext.
    let stored = backend
        .texts("SELECT url FROM endpoints WHERE managed")
        .await;
    assert_eq!(stored.len(), 1);
    assert!(stored[0].starts_with("enc:v1:k:"), "{stored:?}");
    assert!(!stored[0].contains("operator-s3cret"), "{stored:?}");
}
both!(the_operator_url_is_stored_sealed_and_still_receives_events);

/// The operator endpoint's URL, as stored (one row, live or deleted).
async fn stored_operator_url(backend: &Backend) -> String {
    let stored = backend
        .texts("SELECT url FROM endpoints WHERE managed")
        .await;
    assert_eq!(stored.len(), 1, "{stored:?}");
    stored.into_iter().next().unwrap()
}

async fn an_operator_url_a_hookd_without_keys_stored_in_clear_is_sealed_by_the_walk(
    backend: Backend,
) {
    let operator = Receiver::start().await;
    let url = operator.url("/ops?token=operator-s3cret");
    let without_keys = backend
        .spawn_with(&format!(
            "[operator]\nurl = \"{url}\"\nsecret = \"{PLANTED}\"\n"
        ))
        .await;
    eventually(DEADLINE, "the operator endpoint, in clear", || async {
        let stored = backend
            .texts("SELECT url FROM endpoints WHERE managed")
            .await;
        (stored.len() == 1 && stored[0] == url).then_some(())
    })
    .await;
    drop(without_keys);

    // Keys now, and no operator webhook: its endpoint is deleted, and its
    // row (with the chat webhook's token in the URL) stays.
    let _app = backend.spawn_with(KEYS).await;
    eventually(
        DEADLINE,
        "the walk to seal the stored operator URL",
        || async {
            let stored = stored_operator_url(&backend).await;
            stored.starts_with("enc:v1:k:").then_some(())
        },
    )
    .await;
    let stored = stored_operator_url(&backend).await;
    assert!(!stored.contains("operator-s3cret"), "{stored}");
    let secret = backend
        .texts("SELECT secret FROM endpoints WHERE managed")
        .await;
    assert!(secret[0].starts_with("enc:v1:k:"), "{secret:?}");
}
both!(an_operator_url_a_hookd_without_keys_stored_in_clear_is_sealed_by_the_walk);

async fn a_plaintext_operator_url_written_after_the_walk_is_refused_and_gets_no_event(
    backend: Backend,
) {
    let operator = Receiver::start().await;
    let attacker = Receiver::start().await;
    let receiver = Receiver::start().await;
    receiver.reply("/down", vec![Reply::status(503)]);
    let overrides = format!(
        "{KEYS}[operator]\nurl = \"{}\"\nsecret = \"{PLANTED}\"\n",
        operator.url("/ops")
    );
    let app = backend.spawn_with(&overrides).await;
    eventually(DEADLINE, "the operator endpoint, sealed", || async {
        let stored = backend
            .texts("SELECT url FROM endpoints WHERE managed")
            .await;
        stored.first()?.starts_with("enc:v1:k:").then_some(())
    })
    .await;
    // Once the walk has left no plaintext, a plaintext secret is refused:
    // wait for that, as the test of secrets above does.
    app.endpoint(json!({"uid": "probe", "url": receiver.url("/probe")}))
        .await;
    let sealed = backend
        .texts("SELECT secret FROM endpoints WHERE uid = 'probe'")
        .await
        .remove(0);
    let plant = |value: String| {
        let backend = &backend;
        async move {
            let sql = "UPDATE endpoints SET secret = $1 WHERE uid = 'probe'";
            assert_eq!(backend.execute(sql, &[value.as_str()]).await, 1);
        }
    };
    eventually(DEADLINE, "plaintext to be refused", || async {
        plant(PLANTED.to_string()).await;
        let (status, _) = app.get("/v1/endpoints/probe/secret").await;
        if status == StatusCode::INTERNAL_SERVER_ERROR {
            return Some(());
        }
        plant(sealed.clone()).await;
        tokio::time::sleep(SEALED_BETWEEN_TRIES).await;
        None
    })
    .await;

    // Someone with write access to the database points operator events
    // at their own URL, in clear.
    let planted = attacker.url("/stolen");
    let sql = "UPDATE endpoints SET url = $1, version = version + 1 WHERE managed";
    assert_eq!(backend.execute(sql, &[planted.as_str()]).await, 1);
    app.endpoint(json!({"uid": "down", "url": receiver.url("/down"), "schedule": ["0s"]}))
        .await;
    app.notify(json!({"endpoint": "down", "payload": {}})).await;
    let error = eventually(DEADLINE, "the operator event's attempt", || async {
        let errors = backend
            .texts(
                "SELECT COALESCE(last_error, '') FROM notifications \
                 WHERE event_type = 'notification.failed'",
            )
            .await;
        errors.into_iter().find(|e| !e.is_empty())
    })
    .await;
    assert!(error.contains("plaintext"), "{error}");
    assert!(attacker.received("/stolen").is_empty());
    assert!(operator.received("/ops").is_empty());
}
both!(a_plaintext_operator_url_written_after_the_walk_is_refused_and_gets_no_event);
