//! A key row left without its notification (a crash between retention's
//! drop of a day and its deletion of the day's key rows, or a purge by an
//! older hookd, docs/partitioning.md): the key is taken over by the next
//! create, as a key freed by retention always could be. PostgreSQL only:
//! the embedded store keeps keys on the notification rows.

use reqwest::StatusCode;
use serde_json::json;
use sqlx::PgPool;
use uuid::Uuid;

use crate::helpers::spawn_app;

#[sqlx::test]
async fn a_key_whose_notification_is_gone_is_taken_over_without_failing_its_batch(pool: PgPool) {
    let app = spawn_app(pool.clone()).await;
    let endpoint = app.endpoint(json!({"uid": "shop"})).await;
    let endpoint_id: Uuid = endpoint["id"].as_str().unwrap().parse().unwrap();
    let gone = hookd::domain::id::new_id();
    sqlx::query("INSERT INTO notification_keys (key, endpoint_id, id) VALUES ('stale', $1, $2)")
        .bind(endpoint_id)
        .bind(gone)
        .execute(&pool)
        .await
        .unwrap();

    // The stale key and others at the same moment: one group commit or a
    // few, none failing. Two creates of the stale key: one takes it over,
    // the other gets the one that did.
    let body = |key: Option<&str>, n: i32| match key {
        Some(key) => json!({"endpoint": "shop", "key": key, "payload": {"n": n}}),
        None => json!({"endpoint": "shop", "payload": {"n": n}}),
    };
    let (stale_a, stale_b, fresh, plain) = tokio::join!(
        app.post("/v1/notifications", body(Some("stale"), 1)),
        app.post("/v1/notifications", body(Some("stale"), 1)),
        app.post("/v1/notifications", body(Some("fresh"), 2)),
        app.post("/v1/notifications", body(None, 3)),
    );
    assert_eq!(fresh.0, StatusCode::CREATED, "{}", fresh.1);
    assert_eq!(plain.0, StatusCode::CREATED, "{}", plain.1);
    let mut statuses = [stale_a.0, stale_b.0];
    statuses.sort();
    assert_eq!(
        statuses,
        [StatusCode::OK, StatusCode::CREATED],
        "{stale_a:?} {stale_b:?}"
    );
    assert_eq!(
        stale_a.1["id"], stale_b.1["id"],
        "both name the one that took the key"
    );

    let taken: Uuid = stale_a.1["id"].as_str().unwrap().parse().unwrap();
    let key_row: Uuid = sqlx::query_scalar(
        "SELECT id FROM notification_keys WHERE key = 'stale' AND endpoint_id = $1",
    )
    .bind(endpoint_id)
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(key_row, taken);
    // Taken over, the key is an existing key like any other.
    let (status, again) = app.post("/v1/notifications", body(Some("stale"), 1)).await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(again["id"], stale_a.1["id"]);
}
