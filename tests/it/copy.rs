//! `hookd copy`: an embedded hookd's SQLite file (written through the
//! store's seams, secrets sealed with a key) copied into a real PostgreSQL
//! database; every column of every row compared, runs repeated, refused
//! and resumed; then server mode, on real Redis, delivering what was
//! pending.

mod compare;
mod embedded;
mod refusals;

use std::collections::HashSet;
use std::path::Path;
use std::time::Duration as StdDuration;

use hookd::copy::{CopyArgs, CopyError, Summary};
use hookd::domain::operator_event::OPERATOR_ENDPOINT_ID;
use hookd::store::sqlite::{SqliteOptions, SqliteStore};
use serde_json::{json, Value};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::PgPool;
use uuid::Uuid;

use crate::conformance::fixtures;
use crate::helpers::{empty_database, eventually, spawn_app_with};
use crate::receiver::Receiver;
use compare::{assert_same_rows, leased_operations, marked, source_counts, TABLES};
use embedded::{embedded, keyring, KEY, SECRET};

const DEADLINE: StdDuration = StdDuration::from_secs(30);

/// The test database's URL: `DATABASE_URL` naming the database of `pool`.
fn url_of(pool: &PgPool) -> String {
    let options = pool.connect_options();
    let database = options.get_database().expect("a test database has a name");
    let mut url = url::Url::parse(&std::env::var("DATABASE_URL").unwrap()).unwrap();
    url.set_path(&format!("/{database}"));
    url.to_string()
}

fn args(from: &Path, pool: &PgPool, merge: bool) -> CopyArgs {
    CopyArgs {
        from: format!("sqlite:{}", from.display()),
        to: url_of(pool),
        merge,
    }
}

async fn copy(from: &Path, pool: &PgPool, merge: bool) -> anyhow::Result<Summary> {
    hookd::copy::run(args(from, pool, merge)).await
}

fn counts(summary: &Summary) -> Vec<(u64, u64)> {
    TABLES
        .iter()
        .map(|(table, _, _)| {
            let t = summary.table(table).expect("a copied table");
            (t.copied, t.skipped)
        })
        .collect()
}

#[sqlx::test(migrations = false)]
async fn a_copy_migrates_the_target_and_carries_every_column_of_every_row(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    empty_database(&pool).await;
    let source = embedded("http://127.0.0.1:9").await;
    let expected = source_counts(&source.path).await;
    assert!(
        expected.iter().all(|n| *n > 0),
        "every table has rows: {expected:?}"
    );

    let summary = copy(&source.path, &pool, false).await.unwrap();

    let copied: Vec<(u64, u64)> = expected.iter().map(|n| (*n, 0)).collect();
    assert_eq!(counts(&summary), copied);
    assert_same_rows(&pool, &source.path).await;
    assert_eq!(leased_operations(&pool).await, 0);
    // Sealed as stored: the same ciphertext, under the embedded key.
    let prefix = keyring().current_prefix().unwrap();
    let (secret, tenant): (String, String) =
        sqlx::query_as("SELECT secret, headers->>'X-Tenant' FROM endpoints WHERE id = $1")
            .bind(source.push.id)
            .fetch_one(&pool)
            .await
            .unwrap();
    assert!(secret.starts_with(&prefix), "{secret}");
    assert!(tenant.starts_with(&prefix), "{tenant}");
    // Pending push rows, and only those, are owed to the due index.
    let mut pending_push: HashSet<Uuid> = source.to_push.iter().copied().collect();
    pending_push.insert(source.to_event);
    let operator_events: Vec<Uuid> = sqlx::query_scalar(
        "SELECT id FROM notifications WHERE endpoint_id = $1 AND status = 'pending'",
    )
    .bind(OPERATOR_ENDPOINT_ID)
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(operator_events.len(), 1, "the failure's operator event");
    pending_push.extend(operator_events);
    assert_eq!(marked(&pool).await, pending_push);
}

#[sqlx::test]
async fn a_second_run_is_refused_without_merge_and_with_it_copies_nothing(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let source = embedded("http://127.0.0.1:9").await;
    let first = copy(&source.path, &pool, false).await.unwrap();

    let refused = copy(&source.path, &pool, false).await.unwrap_err();
    let message = refused.to_string();
    assert!(
        matches!(refused.downcast_ref(), Some(CopyError::NotEmpty(_))),
        "{message}"
    );
    assert!(!message.contains('\n'), "one line: {message}");
    assert!(message.contains("notifications: "), "{message}");
    assert!(message.contains("--merge"), "{message}");

    let second = copy(&source.path, &pool, true).await.unwrap();
    assert_eq!(second.copied(), 0);
    let skipped: Vec<(u64, u64)> = counts(&first).iter().map(|(n, _)| (0, *n)).collect();
    assert_eq!(counts(&second), skipped);
    assert_same_rows(&pool, &source.path).await;
}

#[sqlx::test]
async fn a_copy_that_stopped_midway_is_completed_by_running_it_again(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let source = embedded("http://127.0.0.1:9").await;
    copy(&source.path, &pool, false).await.unwrap();
    // What a copy stopped in the middle of notifications leaves: its first
    // tables whole, notifications from some page on missing (with their
    // keys, written by the same statement).
    let gone: i64 = sqlx::query_scalar(
        "WITH gone AS (DELETE FROM notifications \
             WHERE id > (SELECT id FROM notifications ORDER BY id OFFSET 300 LIMIT 1) RETURNING id), \
         keys AS (DELETE FROM notification_keys WHERE id IN (SELECT id FROM gone)) \
         SELECT count(*) FROM gone",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    let gone = gone as u64;
    assert!(gone > 100);

    let resumed = copy(&source.path, &pool, true).await.unwrap();

    let notifications = resumed.table("notifications").unwrap();
    assert_eq!(notifications.copied, gone);
    assert_eq!(resumed.copied(), gone, "nothing else was missing");
    assert_same_rows(&pool, &source.path).await;
}

#[sqlx::test]
async fn after_a_copy_server_mode_delivers_each_pending_notification_once(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let receiver = Receiver::start().await;
    let source = embedded(&receiver.base).await;
    copy(&source.path, &pool, false).await.unwrap();

    let overrides = format!(
        "[secrets]\nkeys = [{{ id = \"k\", key = \"{KEY}\" }}]\n\
         [operator]\nurl = \"{}\"\nsecret = \"{SECRET}\"\n",
        receiver.url("/operator")
    );
    let app = spawn_app_with(pool.clone(), &crate::helpers::redis_url(), &overrides).await;

    let expected = source.to_push.len();
    receiver.wait_distinct("/a", expected, DEADLINE).await;
    receiver.wait_distinct("/c", 1, DEADLINE).await;
    receiver.wait_distinct("/operator", 1, DEADLINE).await;
    // Every one of them is recorded succeeded: nothing is in flight now.
    let mut delivered: Vec<Uuid> = source.to_push.clone();
    delivered.push(source.to_event);
    eventually(DEADLINE, "every delivery recorded", || async {
        let done: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM notifications WHERE id = ANY($1) AND status = 'succeeded'",
        )
        .bind(&delivered)
        .fetch_one(&pool)
        .await
        .unwrap();
        (done as usize == delivered.len()).then_some(())
    })
    .await;
    assert_eq!(receiver.distinct("/a"), (expected, expected), "each once");
    assert_eq!(receiver.distinct("/c"), (1, 1));
    assert_eq!(receiver.distinct("/operator"), (1, 1));
    // The bulk cancel the embedded hookd was running goes on here (a
    // review saw one answered 202 vanish in the move, and the
    // notifications it had to cancel delivered).
    let path = format!("/v1/operations/{}", source.operation);
    eventually(DEADLINE, "the copied operation done", || async {
        let (status, operation) = app.get(&path).await;
        assert_eq!(status, reqwest::StatusCode::OK, "{operation}");
        (operation["status"] == "done").then_some(())
    })
    .await;

    // Signed with the secret sealed in the file, opened by the server's key.
    let webhook = standardwebhooks::Webhook::new(SECRET).unwrap();
    let got = receiver.received("/a");
    for request in &got {
        webhook
            .verify(&request.body, &request.headers)
            .expect("the signature verifies");
    }
    let retried = source.retried.to_string();
    let second = got
        .iter()
        .find(|r| r.header("webhook-id") == Some(retried.as_str()))
        .unwrap();
    assert_eq!(
        second.header("hookd-attempt"),
        Some("2"),
        "the history goes on"
    );
    let tenant = got[0].header("x-tenant");
    assert_eq!(tenant, Some("acme"), "a sealed header opened");

    // The consumer token works; the lease held in the file still holds.
    let response = app
        .client
        .post(format!("{}/v1/endpoints/{}/pull", app.base, source.pull.id))
        .bearer_auth(&source.token)
        .json(&json!({"max": 10}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), reqwest::StatusCode::OK);
    let pulled: Value = response.json().await.unwrap();
    let ids: Vec<String> = pulled["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        ids,
        vec![source.to_pull.to_string()],
        "not {}",
        source.leased
    );
}

#[sqlx::test]
async fn a_file_left_by_a_hookd_killed_mid_run_is_copied_with_its_write_ahead_log(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    // What kill -9 leaves: commits in the WAL not yet checkpointed into
    // the file, and no lock held. Taken here by copying the files of a
    // store still open, with nothing writing (the shared-memory index is
    // left behind: it is rebuilt from the WAL).
    let dir = tempfile::tempdir().unwrap();
    let live = dir.path().join("live.db");
    let store = SqliteStore::open(&live, &SqliteOptions::migrating())
        .await
        .unwrap();
    let endpoint = fixtures::create(&store, fixtures::endpoint()).await;
    let ids = fixtures::commit(
        &store,
        (0..50).map(|_| fixtures::notification(&endpoint)).collect(),
    )
    .await;
    let killed = dir.path().join("killed.db");
    std::fs::copy(&live, &killed).unwrap();
    let wal = std::fs::copy(
        dir.path().join("live.db-wal"),
        dir.path().join("killed.db-wal"),
    )
    .unwrap();
    assert!(wal > 0, "the commits are in the WAL");
    let files = |path: &Path| {
        let wal = format!("{}-wal", path.display());
        (std::fs::read(path).unwrap(), std::fs::read(wal).unwrap())
    };
    let before = files(&killed);

    let summary = copy(&killed, &pool, false).await.unwrap();

    assert!(
        files(&killed) == before,
        "the file and its WAL are as they were"
    );

    assert_eq!(summary.table("endpoints").unwrap().copied, 1);
    assert_eq!(
        summary.table("notifications").unwrap().copied,
        ids.len() as u64
    );
    assert_same_rows(&pool, &killed).await;
    store.close().await;
}

#[sqlx::test]
async fn a_target_holding_only_the_operator_endpoint_its_server_made_counts_as_empty(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let source = embedded("http://127.0.0.1:9").await;
    // A server started once with `operator.url` set, and nothing else.
    let server = hookd::store::postgres::PgStore::new(pool.clone());
    fixtures::operator_on(&server).await;

    let summary = copy(&source.path, &pool, false).await.unwrap();

    let endpoints = summary.table("endpoints").unwrap();
    assert_eq!(
        endpoints.skipped, 1,
        "the server's operator endpoint is kept"
    );
    assert_eq!(summary.table("notifications").unwrap().skipped, 0);
}

#[sqlx::test]
async fn large_payloads_are_copied_in_smaller_pages_whole(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hookd.db");
    let store = SqliteStore::open(&path, &SqliteOptions::migrating())
        .await
        .unwrap();
    let endpoint = fixtures::create(&store, fixtures::endpoint()).await;
    // 24 MiB of bodies in 96 rows: more than a page's byte budget.
    for _ in 0..4 {
        let batch = (0..24)
            .map(|i| {
                let mut n = fixtures::notification(&endpoint);
                n.body = vec![b'a' + i as u8; 256 << 10];
                n
            })
            .collect();
        fixtures::commit(&store, batch).await;
    }
    store.close().await;

    let summary = copy(&path, &pool, false).await.unwrap();

    assert_eq!(summary.table("notifications").unwrap().copied, 96);
    assert_same_rows(&pool, &path).await;
}
