//! An endpoint secret's rotation and its overlap; beside them, what
//! `config check` says without keys, and two processes sealing at start.

use super::*;

async fn a_second_rotation_keeps_the_first_secret_signing_until_it_expires(backend: Backend) {
    let app = backend.spawn_with(&keys(&[("k", KEY_NEW)])).await;
    let receiver = Receiver::start().await;
    let s0 = app
        .endpoint(json!({"uid": "twice", "url": receiver.url("/twice")}))
        .await["secret"]
        .clone();
    // Long enough for one delivery on a loaded machine, short for a test.
    let s1 = rotate(&app, "twice", Some(json!({"overlap": "4s"}))).await;
    let s2 = rotate(&app, "twice", Some(json!({"overlap": "1h"}))).await;

    let request = deliver(&app, &receiver, "twice", "/twice").await;
    assert_eq!(signatures(&request), 3);
    assert!(verifies(&request, &s0) && verifies(&request, &s1) && verifies(&request, &s2));
    let (_, secret) = app.get("/v1/endpoints/twice/secret").await;
    assert_eq!(secret["secret"], s2);
    assert_eq!(
        secret["previous_secrets"].as_array().unwrap().len(),
        2,
        "{secret}"
    );
    assert!(!secret.to_string().contains(&key_part(&s0)), "{secret}");

    // s0 signed for its own overlap, unaffected by the second rotation; s1
    // keeps signing after.
    eventually(DEADLINE, "the first secret to expire", || async {
        let (_, secret) = app.get("/v1/endpoints/twice/secret").await;
        (secret["previous_secrets"].as_array()?.len() == 1).then_some(())
    })
    .await;
    let request = deliver(&app, &receiver, "twice", "/twice").await;
    assert_eq!(signatures(&request), 2);
    assert!(!verifies(&request, &s0));
    assert!(verifies(&request, &s1) && verifies(&request, &s2));
}
both!(a_second_rotation_keeps_the_first_secret_signing_until_it_expires);

async fn overlap_zero_drops_previous_secrets_at_once(backend: Backend) {
    let overrides = format!("{}rotation_overlap_ms = 0\n", keys(&[("k", KEY_NEW)]));
    let app = backend.spawn_with(&overrides).await;
    let receiver = Receiver::start().await;
    let s0 = app
        .endpoint(json!({"uid": "now", "url": receiver.url("/now")}))
        .await["secret"]
        .clone();
    // secrets.rotation_overlap_ms = 0: the replaced secret stops at once.
    let s1 = rotate(&app, "now", None).await;
    let request = deliver(&app, &receiver, "now", "/now").await;
    assert_eq!(signatures(&request), 1);
    assert!(verifies(&request, &s1) && !verifies(&request, &s0));

    // And per rotation, whatever the default.
    let s2 = rotate(&app, "now", Some(json!({"overlap": "0s"}))).await;
    let request = deliver(&app, &receiver, "now", "/now").await;
    assert_eq!(signatures(&request), 1);
    assert!(verifies(&request, &s2) && !verifies(&request, &s1));
    let (_, secret) = app.get("/v1/endpoints/now/secret").await;
    assert_eq!(secret["previous_secrets"], json!([]));
    assert!(secret["previous_secret_expires_at"].is_null());

    // Up to 7 days; longer, or not a duration: refused, naming the field.
    rotate(&app, "now", Some(json!({"overlap": "7d"}))).await;
    for overlap in ["8d", "soon"] {
        let (status, body) = app
            .post(
                "/v1/endpoints/now/secret/rotate",
                json!({"overlap": overlap}),
            )
            .await;
        assert_eq!(
            status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{overlap}: {body}"
        );
        assert_eq!(body["error"]["field"], json!("overlap"));
    }
}
both!(overlap_zero_drops_previous_secrets_at_once);

async fn ending_the_overlap_stops_old_secrets_signing(backend: Backend) {
    let app = backend.spawn_with(&keys(&[("k", KEY_NEW)])).await;
    let receiver = Receiver::start().await;
    let s0 = app
        .endpoint(json!({"uid": "end", "url": receiver.url("/end")}))
        .await["secret"]
        .clone();
    let s1 = rotate(&app, "end", None).await;
    let s2 = rotate(&app, "end", None).await;
    let request = deliver(&app, &receiver, "end", "/end").await;
    assert_eq!(signatures(&request), 3);

    let (status, ended) = app
        .call(Method::DELETE, "/v1/endpoints/end/secret/previous", None)
        .await;
    assert_eq!(status, StatusCode::OK, "{ended}");
    assert_eq!(ended["secret"], s2);
    assert_eq!(ended["previous_secrets"], json!([]));
    let request = deliver(&app, &receiver, "end", "/end").await;
    assert_eq!(signatures(&request), 1);
    assert!(verifies(&request, &s2));
    assert!(!verifies(&request, &s1) && !verifies(&request, &s0));

    let (status, _) = app
        .call(Method::DELETE, "/v1/endpoints/nope/secret/previous", None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}
both!(ending_the_overlap_stops_old_secrets_signing);

#[test]
fn config_check_warns_without_keys_and_never_prints_a_key() {
    let check = |env: &[(&str, &str)]| {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_hookd"));
        command.args(["config", "check"]).env_remove("HOOKD_CONFIG");
        for (key, value) in env {
            command.env(key, value);
        }
        let output = command.output().unwrap();
        assert!(output.status.success());
        String::from_utf8(output.stdout).unwrap()
    };
    let plain = check(&[]);
    assert!(
        plain
            .lines()
            .any(|l| l.starts_with("# warning: secrets.keys is empty")),
        "{plain}"
    );
    let keyed = check(&[(
        "HOOKD_SECRETS__KEYS",
        &format!("[{{id=\"2026-11\",key=\"{KEY_NEW}\"}}]"),
    )]);
    assert!(!keyed.contains("# warning"), "{keyed}");
    assert!(
        keyed.contains("2026-11") && !keyed.contains(KEY_NEW),
        "{keyed}"
    );
}

async fn two_processes_starting_together_encrypt_every_row_exactly_once(backend: Backend) {
    let plain = backend.spawn().await;
    plain.endpoint(json!({"uid": "bulk"})).await;
    // More than one batch of the walk.
    let items: Vec<Value> = (0..1200)
        .map(|i| {
            json!({"endpoint": "bulk", "payload": {}, "delay": "1h",
                   "headers": {"X-Key": format!("bulk-{i}")}})
        })
        .collect();
    for chunk in items.chunks(600) {
        let (status, body) = plain
            .post("/v1/notifications/batch", json!({"notifications": chunk}))
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    drop(plain);

    let overrides = keys(&[("k", KEY_NEW)]);
    let first = backend.spawn_with(&overrides).await;
    let _second = backend.spawn_beside(&first, &overrides).await;
    eventually(DEADLINE, "every header value to be sealed", || async {
        let plaintext = backend
            .count(
                "SELECT count(*) FROM notifications WHERE headers->>'X-Key' NOT LIKE 'enc:v1:k:%'",
            )
            .await;
        (plaintext == 0).then_some(())
    })
    .await;
    // Each value opens to what was sent: sealed once, never sealed again
    // by the other process.
    let keyring = hookd::domain::sealed::Keyring::new([("k", KEY_NEW)]).unwrap();
    let all = "SELECT id, headers->>'X-Key' FROM notifications";
    let rows: Vec<(uuid::Uuid, String)> = match &backend {
        Backend::Postgres { pool, .. } => sqlx::query_as(all).fetch_all(pool).await,
        Backend::Sqlite { store, .. } => sqlx::query_as(all).fetch_all(store.reader()).await,
    }
    .unwrap();
    assert_eq!(rows.len(), 1200);
    let mut opened: Vec<String> = rows
        .iter()
        .map(|(id, sealed)| {
            let context = hookd::domain::sealed::context::notification_header(*id, "X-Key");
            keyring.open(sealed, &context).unwrap().into_owned()
        })
        .collect();
    opened.sort();
    let mut sent: Vec<String> = (0..1200).map(|i| format!("bulk-{i}")).collect();
    sent.sort();
    assert_eq!(opened, sent);
}
both!(two_processes_starting_together_encrypt_every_row_exactly_once);
