//! `database.read_url` (docs/design.md §13) with a real streaming replica
//! (`pg_basebackup -R` and a second `postgres`), started by each test for
//! itself: a test pauses its replica's replay to make it lag, which must
//! not reach any other test. Lists read the replica; a status query right
//! after a create still finds the notification (the primary answers what
//! the replica has not replayed yet); with the replica down, the primary
//! answers everything.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};
use sqlx::postgres::PgPoolOptions;
use sqlx::PgPool;

use crate::backends::Backend;
use crate::helpers::{eventually, PgServer, TestApp};
use crate::receiver::Receiver;

const DEADLINE: Duration = Duration::from_secs(30);

/// A primary with hookd's schema, its replica once it has replayed the
/// schema, and hookd reading from the replica.
async fn primary_and_replica() -> (PgServer, PgServer, PgPool, TestApp) {
    let primary = PgServer::start().await;
    let pool = PgPoolOptions::new()
        .max_connections(8)
        .connect(&primary.url())
        .await
        .unwrap();
    hookd::store::postgres::PgStore::new(pool.clone())
        .migrate()
        .await
        .unwrap();
    let replica = PgServer::replica_of(&primary).await;
    let on_replica = connect(&replica).await;
    eventually(DEADLINE, "the replica to have the schema", || async {
        let table: Option<String> =
            sqlx::query_scalar("SELECT CAST(to_regclass('notifications') AS TEXT)")
                .fetch_one(&on_replica)
                .await
                .ok()?;
        table.map(|_| ())
    })
    .await;
    let overrides = format!("[database]\nread_url = \"{}\"\n", replica.url());
    let app = Backend::postgres(pool.clone()).spawn_with(&overrides).await;
    (primary, replica, pool, app)
}

async fn connect(server: &PgServer) -> PgPool {
    PgPoolOptions::new()
        .max_connections(2)
        .connect(&server.url())
        .await
        .unwrap()
}

fn ids(page: &Value) -> Vec<String> {
    page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn a_status_query_right_after_a_create_finds_it_while_lists_read_the_lagging_replica() {
    let (_primary, replica, _pool, app) = primary_and_replica().await;
    let receiver = Receiver::start().await;
    app.endpoint(json!({"uid": "shop", "url": receiver.url("/hook")}))
        .await;
    let on_replica = connect(&replica).await;
    sqlx::query("SELECT pg_wal_replay_pause()")
        .execute(&on_replica)
        .await
        .unwrap();
    eventually(DEADLINE, "the replica's replay to pause", || async {
        let state: String = sqlx::query_scalar("SELECT pg_get_wal_replay_pause_state()")
            .fetch_one(&on_replica)
            .await
            .ok()?;
        (state == "paused").then_some(())
    })
    .await;

    let id = app
        .notify(json!({"endpoint": "shop", "payload": {"order": 123}}))
        .await;
    // The creator asks at once: the replica has not got it, the primary has.
    let (status, found) = app.get(&format!("/v1/notifications/{id}")).await;
    assert_eq!(status, StatusCode::OK, "{found}");
    assert_eq!(found["id"], json!(id));
    let (status, _) = app.get(&format!("/v1/notifications/{id}/attempts")).await;
    assert_eq!(status, StatusCode::OK);
    // A list is the replica's: it lags.
    let (status, page) = app.get("/v1/notifications?endpoint=shop").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert!(ids(&page).is_empty(), "the list read the primary: {page}");

    sqlx::query("SELECT pg_wal_replay_resume()")
        .execute(&on_replica)
        .await
        .unwrap();
    eventually(DEADLINE, "the replica to catch up", || async {
        let (_, page) = app.get("/v1/notifications?endpoint=shop").await;
        (ids(&page) == [id.clone()]).then_some(())
    })
    .await;
    let metrics = crate::helpers::scrape_metrics(&app.client, &app.base).await;
    assert!(
        metrics.contains("hookd_read_replica_fallbacks_total{reason=\"missing\"}"),
        "the fallback is counted"
    );
}

#[tokio::test]
async fn with_the_replica_down_every_read_is_answered_by_the_primary() {
    let (_primary, replica, _pool, app) = primary_and_replica().await;
    let receiver = Receiver::start().await;
    app.endpoint(json!({"uid": "shop", "url": receiver.url("/hook")}))
        .await;
    replica.stop();
    let id = app
        .notify(json!({"endpoint": "shop", "payload": {"order": 124}}))
        .await;
    let (status, found) = app.get(&format!("/v1/notifications/{id}")).await;
    assert_eq!(status, StatusCode::OK, "{found}");
    let (status, page) = app.get("/v1/notifications?endpoint=shop").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(ids(&page), vec![id]);
    let (status, events) = app.get("/v1/events").await;
    assert_eq!(status, StatusCode::OK, "{events}");
    let (status, _) = app.get("/readyz").await;
    assert_eq!(status, StatusCode::OK, "a replica down is not unreadiness");
}
