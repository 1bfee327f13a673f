//! Secrets at rest after the start-up walk (issue #33): once every stored
//! value is encrypted, a plaintext value in a secret column can only have
//! been written around hookd, so it is an error, never a signing secret.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;
use sqlx::PgPool;

use crate::helpers::{eventually, redis_url, spawn_app_with};
use crate::receiver::Receiver;

const DEADLINE: Duration = Duration::from_secs(15);
const KEYS: &str =
    "[secrets]\nkeys = [{ id = \"k\", key = \"ZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXp7fH1+f4CBgoM=\" }]\n";
/// A secret someone with write access to the database knows.
const PLANTED: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

#[sqlx::test]
async fn a_plaintext_secret_written_after_the_start_up_walk_is_refused_and_never_signs(
    pool: PgPool,
) {
    let receiver = Receiver::start().await;
    let app = spawn_app_with(pool.clone(), &redis_url(), KEYS).await;
    app.endpoint(json!({"uid": "planted", "url": receiver.url("/planted"), "schedule": ["0s"]}))
        .await;
    // Planted until the walk has ended: before that, plaintext is a row
    // not yet encrypted and still reads as itself.
    eventually(DEADLINE, "a plaintext secret to be refused", || async {
        sqlx::query("UPDATE endpoints SET secret = $1 WHERE uid = 'planted'")
            .bind(PLANTED)
            .execute(&pool)
            .await
            .unwrap();
        let (status, _) = app.get("/v1/endpoints/planted/secret").await;
        (status == StatusCode::INTERNAL_SERVER_ERROR).then_some(())
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
