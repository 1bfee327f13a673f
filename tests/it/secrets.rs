//! Secrets at rest and rotation: what a dump of the database shows (`pg_dump`
//! against the test's own database; every stored value of the SQLite file),
//! what a receiver gets signed with, and how rotated-out secrets stop
//! signing.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use sqlx::PgPool;

use crate::backends::Backend;
use crate::helpers::{as_postgres, database_url, eventually, TestApp};
use crate::receiver::{Received, Receiver};

const DEADLINE: Duration = Duration::from_secs(15);
const KEY_OLD: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
const KEY_NEW: &str = "ZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXp7fH1+f4CBgoM=";
const KEY_OTHER: &str = "yMnKy8zNzs/Q0dLT1NXW19jZ2tvc3d7f4OHi4+Tl5uc=";

/// `[secrets]` with these `(id, key)` pairs, the first sealing.
fn keys(pairs: &[(&str, &str)]) -> String {
    let list: Vec<String> = pairs
        .iter()
        .map(|(id, key)| format!("{{ id = \"{id}\", key = \"{key}\" }}"))
        .collect();
    format!("[secrets]\nkeys = [{}]\n", list.join(", "))
}

/// Everything the test's database holds, as text: `pg_dump` of
/// PostgreSQL's, and every column of every row of SQLite's file, each
/// backend's own columns as stored.
async fn dump(backend: &Backend) -> String {
    match backend {
        Backend::Postgres { pool, .. } => pg_dump(pool).await,
        Backend::Sqlite { store, .. } => sqlite_dump(store.reader()).await,
    }
}

/// Each value as its bytes (a BLOB's too, so plaintext in one would
/// show), one a line.
async fn sqlite_dump(reader: &sqlx::SqlitePool) -> String {
    let tables: Vec<String> =
        sqlx::query_scalar("SELECT name FROM sqlite_master WHERE type = 'table'")
            .fetch_all(reader)
            .await
            .unwrap();
    let mut dumped = String::new();
    for table in tables {
        let columns: Vec<String> = sqlx::query_scalar("SELECT name FROM pragma_table_info(?)")
            .bind(&table)
            .fetch_all(reader)
            .await
            .unwrap();
        for column in columns {
            let values: Vec<Option<Vec<u8>>> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
                "SELECT CAST(\"{column}\" AS BLOB) FROM \"{table}\""
            )))
            .fetch_all(reader)
            .await
            .unwrap();
            for value in values.into_iter().flatten() {
                dumped.push_str(&String::from_utf8_lossy(&value));
                dumped.push('\n');
            }
        }
    }
    dumped
}

/// The whole test database as `pg_dump` writes it.
async fn pg_dump(pool: &PgPool) -> String {
    let program = pg_dump_binary();
    let mut command = tokio::process::Command::from(as_postgres(&program));
    let output = command
        .arg("--dbname")
        .arg(database_url(pool))
        .output()
        .await
        .expect("pg_dump runs (HOOKD_TEST_PG_BINDIR or PATH)");
    assert!(
        output.status.success(),
        "pg_dump failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("the dump is text")
}

/// `pg_dump` beside the server binaries (HOOKD_TEST_PG_BINDIR may hold
/// links to them only: then beside their target), or on PATH.
fn pg_dump_binary() -> String {
    let Ok(dir) = std::env::var("HOOKD_TEST_PG_BINDIR") else {
        return "pg_dump".to_string();
    };
    let dir = std::path::PathBuf::from(dir);
    let linked = std::fs::canonicalize(dir.join("pg_ctl"))
        .ok()
        .and_then(|p| p.parent().map(|d| d.join("pg_dump")));
    [Some(dir.join("pg_dump")), linked]
        .into_iter()
        .flatten()
        .find(|p| p.is_file())
        .map_or_else(|| "pg_dump".to_string(), |p| p.display().to_string())
}

/// The part of a `whsec_` secret that is the key.
fn key_part(secret: &Value) -> String {
    secret.as_str().unwrap()["whsec_".len()..].to_string()
}

async fn rotate(app: &TestApp, endpoint: &str, body: Option<Value>) -> Value {
    let (status, rotated) = app
        .call(
            Method::POST,
            &format!("/v1/endpoints/{endpoint}/secret/rotate"),
            body,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{rotated}");
    rotated["secret"].clone()
}

/// Sends a notification to `endpoint` and returns what `path` received.
async fn deliver(app: &TestApp, receiver: &Receiver, endpoint: &str, path: &str) -> Received {
    let before = receiver.received(path).len();
    let (status, created) = app
        .post(
            "/v1/notifications",
            json!({"endpoint": endpoint, "payload": {"n": before}}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    receiver.wait_for(path, before + 1, DEADLINE).await[before].clone()
}

fn signatures(request: &Received) -> usize {
    request
        .header("webhook-signature")
        .unwrap()
        .split(' ')
        .count()
}

fn verifies(request: &Received, secret: &Value) -> bool {
    standardwebhooks::Webhook::new(secret.as_str().unwrap())
        .unwrap()
        .verify(&request.body, &request.headers)
        .is_ok()
}

async fn a_database_dump_reveals_no_secret_or_header_value(backend: Backend) {
    let app = backend.spawn_with(&keys(&[("2026-11", KEY_NEW)])).await;
    let receiver = Receiver::start().await;
    let endpoint_marker = "endpoint-marker-7f3a9c";
    let notification_marker = "notification-marker-51be02";
    let created = app
        .endpoint(json!({
            "uid": "shop",
            "url": receiver.url("/hook"),
            "headers": {"Authorization": format!("Bearer {endpoint_marker}")},
        }))
        .await;
    let first = created["secret"].clone();
    let second = rotate(&app, "shop", None).await;
    let (status, notification) = app
        .post(
            "/v1/notifications",
            json!({"endpoint": "shop", "payload": {"order": 1},
                   "headers": {"X-Api-Key": notification_marker}}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{notification}");

    let got = receiver.wait_for("/hook", 1, DEADLINE).await;
    let request = &got[0];
    assert_eq!(
        request.header("authorization"),
        Some(format!("Bearer {endpoint_marker}").as_str())
    );
    assert_eq!(request.header("x-api-key"), Some(notification_marker));
    assert_eq!(signatures(request), 2);
    assert!(verifies(request, &first) && verifies(request, &second));

    let dumped = dump(&backend).await;
    assert!(
        dumped.contains("enc:v1:2026-11:"),
        "the dump holds the rows"
    );
    for marker in [
        endpoint_marker.to_string(),
        notification_marker.to_string(),
        key_part(&first),
        key_part(&second),
    ] {
        assert!(!dumped.contains(&marker), "the dump shows {marker}");
    }
}
both!(a_database_dump_reveals_no_secret_or_header_value);

async fn rows_written_before_keys_were_set_are_encrypted_on_start(backend: Backend) {
    let plain = backend.spawn().await;
    let created = plain
        .endpoint(json!({"uid": "old", "headers": {"Authorization": "Bearer header-marker-e41"}}))
        .await;
    let first = created["secret"].clone();
    let second = rotate(&plain, "old", None).await;
    let (status, _) = plain
        .post(
            "/v1/notifications",
            json!({"endpoint": "old", "payload": {}, "delay": "1h",
                   "headers": {"X-Api-Key": "notification-marker-e42"}}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let markers = [
        "header-marker-e41".to_string(),
        "notification-marker-e42".to_string(),
        key_part(&first),
        key_part(&second),
    ];
    let dumped = dump(&backend).await;
    assert!(
        markers.iter().all(|m| dumped.contains(m)),
        "without keys, values are stored as given"
    );
    drop(plain);

    let sealed = backend.spawn_with(&keys(&[("k1", KEY_NEW)])).await;
    eventually(DEADLINE, "every plaintext value to be sealed", || async {
        let dumped = dump(&backend).await;
        markers.iter().all(|m| !dumped.contains(m)).then_some(())
    })
    .await;
    let (_, secret) = sealed.get("/v1/endpoints/old/secret").await;
    assert_eq!(secret["secret"], second);
    assert_eq!(secret["previous_secrets"].as_array().unwrap().len(), 1);
}
both!(rows_written_before_keys_were_set_are_encrypted_on_start);

async fn a_retired_key_still_decrypts_and_rows_move_to_the_new_key(backend: Backend) {
    let receiver = Receiver::start().await;
    let old = backend.spawn_with(&keys(&[("old", KEY_OLD)])).await;
    let created = old
        .endpoint(json!({"uid": "moving", "url": receiver.url("/moving"),
                         "headers": {"X-Token": "moving-marker"}}))
        .await;
    let secret = created["secret"].clone();
    assert!(dump(&backend).await.contains("enc:v1:old:"));
    drop(old);

    // The new key seals; the old one still opens what it sealed.
    let both = backend
        .spawn_with(&keys(&[("new", KEY_NEW), ("old", KEY_OLD)]))
        .await;
    let (_, read) = both.get("/v1/endpoints/moving/secret").await;
    assert_eq!(read["secret"], secret);
    eventually(DEADLINE, "rows to move to the new key", || async {
        let dumped = dump(&backend).await;
        (!dumped.contains("enc:v1:old:") && dumped.contains("enc:v1:new:")).then_some(())
    })
    .await;
    drop(both);

    // The old key is retired: everything opens under the new one alone.
    let new = backend.spawn_with(&keys(&[("new", KEY_NEW)])).await;
    let request = deliver(&new, &receiver, "moving", "/moving").await;
    assert!(verifies(&request, &secret));
    assert_eq!(request.header("x-token"), Some("moving-marker"));
    drop(new);

    // A key hookd does not have: a clear failure, never a panic or a
    // delivery signed with something else.
    let wrong = backend.spawn_with(&keys(&[("other", KEY_OTHER)])).await;
    let (status, _) = wrong.get("/v1/endpoints/moving/secret").await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    let (status, _) = wrong
        .post("/v1/endpoints/moving/secret/rotate", json!({}))
        .await;
    assert_eq!(
        status,
        StatusCode::INTERNAL_SERVER_ERROR,
        "nothing is overwritten"
    );
    let sealed = backend
        .texts("SELECT secret FROM endpoints WHERE uid = 'moving'")
        .await
        .remove(0);
    assert!(sealed.starts_with("enc:v1:new:"), "left as it was");
}
both!(a_retired_key_still_decrypts_and_rows_move_to_the_new_key);

async fn a_sealed_secret_under_an_unknown_key_fails_the_attempt_with_a_clear_error(
    backend: Backend,
) {
    let receiver = Receiver::start().await;
    let app = backend.spawn_with(&keys(&[("k", KEY_NEW)])).await;
    app.endpoint(json!({"uid": "lost", "url": receiver.url("/lost"), "schedule": ["0s"]}))
        .await;
    // The row claims a key id nobody has, as after retiring a key too early.
    let gone =
        "UPDATE endpoints SET secret = 'enc:v1:gone:' || substr(secret, length('enc:v1:k:') + 1) \
         WHERE uid = $1";
    assert_eq!(backend.execute(gone, &["lost"]).await, 1);
    app.state.service.forget_cached_endpoints();
    let (status, created) = app
        .post(
            "/v1/notifications",
            json!({"endpoint": "lost", "payload": {}}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let id = created["id"].as_str().unwrap().to_string();
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
    assert!(
        attempt["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`gone`"),
        "{attempt}"
    );
    assert!(receiver.received("/lost").is_empty());
}
both!(a_sealed_secret_under_an_unknown_key_fails_the_attempt_with_a_clear_error);

async fn a_pulled_notification_whose_sealed_header_does_not_open_fails_its_attempt_and_the_rest_are_handed_over(
    backend: Backend,
) {
    let app = backend.spawn_with(&keys(&[("k", KEY_NEW)])).await;
    let (status, endpoint) = app
        .post(
            "/v1/endpoints",
            json!({"uid": "box", "delivery": "pull", "schedule": ["0s", "1h"]}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{endpoint}");
    let create = |body: Value| {
        let app = &app;
        async move {
            let (status, created) = app.post("/v1/notifications", body).await;
            assert_eq!(status, StatusCode::CREATED, "{created}");
            created["id"].as_str().unwrap().to_string()
        }
    };
    let lost = create(
        json!({"endpoint": "box", "payload": {"n": 1}, "headers": {"X-Token": "lost-marker"}}),
    )
    .await;
    let fine = create(json!({"endpoint": "box", "payload": {"n": 2}})).await;
    // The header claims a key id nobody has, as after retiring a key too early.
    let lost_id: uuid::Uuid = lost.parse().unwrap();
    let changed = match &backend {
        Backend::Postgres { pool, .. } => sqlx::query(
            "UPDATE notifications SET headers = jsonb_build_object('X-Token', \
                 'enc:v1:gone:' || substr(headers->>'X-Token', length('enc:v1:k:') + 1)) \
             WHERE id = $1",
        )
        .bind(lost_id)
        .execute(pool)
        .await
        .map(|done| done.rows_affected()),
        Backend::Sqlite { store, .. } => sqlx::query(
            "UPDATE notifications SET headers = json_object('X-Token', \
                 'enc:v1:gone:' || substr(headers->>'X-Token', length('enc:v1:k:') + 1)) \
             WHERE id = $1",
        )
        .bind(lost_id)
        .execute(store.writer())
        .await
        .map(|done| done.rows_affected()),
    };
    assert_eq!(changed.unwrap(), 1);

    // The start-up reseal walk goes over the changed row again (it is not
    // under the current key), holding it for a moment; a pull skips a row
    // another transaction holds, so the next pull takes it. Pull until the
    // lost one has its attempt; only `fine` may ever be handed over.
    let taken = std::sync::Mutex::new(Vec::new());
    let page = eventually(DEADLINE, "the lost one's failed attempt", || async {
        let (status, pulled) = app.post("/v1/endpoints/box/pull", json!({"max": 10})).await;
        assert_eq!(status, StatusCode::OK, "{pulled}");
        let ids = pulled["data"].as_array().unwrap().iter();
        let ids = ids.map(|n| n["id"].as_str().unwrap().to_string());
        taken.lock().unwrap().extend(ids);
        let (_, page) = app.get(&format!("/v1/notifications/{lost}/attempts")).await;
        (!page["data"].as_array().unwrap().is_empty()).then_some(page)
    })
    .await;
    assert_eq!(taken.into_inner().unwrap(), [fine.as_str()]);
    let attempts = page["data"].as_array().unwrap();
    assert_eq!(attempts.len(), 1, "{page}");
    assert_eq!(attempts[0]["error"]["code"], json!("sealed_secret"));
    assert!(
        attempts[0]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`gone`"),
        "{page}"
    );
    // The schedule goes on, as for push: putting the key back heals it.
    let (_, notification) = app.get(&format!("/v1/notifications/{lost}")).await;
    assert_eq!(notification["status"], json!("pending"), "{notification}");
    assert_eq!(notification["leased"], json!(false), "{notification}");
}
both!(a_pulled_notification_whose_sealed_header_does_not_open_fails_its_attempt_and_the_rest_are_handed_over);

mod rotation;
