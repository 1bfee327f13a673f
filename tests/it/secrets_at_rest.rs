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
