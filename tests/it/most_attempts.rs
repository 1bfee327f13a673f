//! `GET /v1/notifications?order=attempts`: one endpoint's notifications
//! attempted more than once, most attempts first, then newest, in pages
//! whose cursors find each once; a status checked on bounded slices.

use std::collections::HashSet;
use std::time::Duration;

use serde_json::{json, Value};
use uuid::Uuid;

use crate::backends::Backend;
use crate::helpers::eventually;
use crate::list_bounds::{exactly_once, walk, Db};
use crate::receiver::{Receiver, Reply};

/// One row of a history: its id, attempts and status.
type Row = (Uuid, i32, &'static str);

/// Writes `rows` for `endpoint` behind hookd's back, as a bulk import
/// would: ended notifications (none pending, which hookd would send).
async fn history(db: Db<'_>, endpoint: Uuid, rows: &[Row]) {
    match db {
        Db::Postgres(pool) => {
            let ids: Vec<Uuid> = rows.iter().map(|r| r.0).collect();
            let attempts: Vec<i32> = rows.iter().map(|r| r.1).collect();
            let statuses: Vec<&str> = rows.iter().map(|r| r.2).collect();
            sqlx::query(
                "INSERT INTO notifications (id, endpoint_id, content_type, body, schedule_ms, \
                     status, deliver_at, completed_at, attempts) \
                 SELECT u.id, $2, 'application/json', '\\x7b7d', '{0}', u.status, now(), now(), \
                     u.attempts \
                 FROM UNNEST($1::uuid[], $3::text[], $4::int[]) AS u(id, status, attempts)",
            )
            .bind(&ids)
            .bind(endpoint)
            .bind(&statuses)
            .bind(&attempts)
            .execute(pool)
            .await
            .expect("the history is written");
            sqlx::query("ANALYZE notifications")
                .execute(pool)
                .await
                .unwrap();
        }
        Db::Sqlite(pool) => {
            let now = chrono::Utc::now().timestamp_micros();
            let mut tx = pool.begin().await.unwrap();
            for chunk in rows.chunks(1_000) {
                let mut insert = sqlx::QueryBuilder::new(
                    "INSERT INTO notifications (id, endpoint_id, content_type, body, \
                     schedule_ms, status, deliver_at, created_at, updated_at, completed_at, \
                     attempts) ",
                );
                insert.push_values(chunk, |mut row, (id, attempts, status)| {
                    row.push_bind(*id)
                        .push_bind(endpoint)
                        .push("'application/json', x'7b7d', '[0]'")
                        .push_bind(*status)
                        .push_bind(now)
                        .push_bind(now)
                        .push_bind(now)
                        .push_bind(now)
                        .push_bind(*attempts);
                });
                insert.build().execute(&mut *tx).await.unwrap();
            }
            tx.commit().await.expect("the history is written");
        }
    }
}

/// The order the list promises: most attempts first, then newest.
fn ordered(rows: &[Row]) -> Vec<Uuid> {
    let mut sorted = rows.to_vec();
    sorted.sort_by_key(|r| std::cmp::Reverse((r.1, r.0)));
    sorted.into_iter().map(|r| r.0).collect()
}

async fn an_endpoints_most_attempted_notifications_come_first_and_each_once(backend: Backend) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    receiver.reply("/hook", vec![Reply::status(503)]);
    let id = |endpoint: Value| endpoint["id"].as_str().unwrap().parse::<Uuid>().unwrap();
    let busy = id(app.endpoint(json!({"uid": "busy"})).await);
    let other = id(app.endpoint(json!({"uid": "other"})).await);
    let db = || match &backend {
        Backend::Postgres { pool, .. } => Db::Postgres(pool),
        Backend::Sqlite { store, .. } => Db::Sqlite(store.writer()),
    };
    // 12,000 of busy's notifications, oldest first: 11,000 attempted 2 to 8
    // times, 10 of them succeeded at last, the rest failed; and 1,000
    // attempted once or never, which the list leaves out.
    let rows: Vec<Row> = (0..12_000i32)
        .map(|i| {
            let (attempts, status) = match i {
                i if i % 12 == 0 => (i % 2, "cancelled"),
                i if i % 1_300 == 1 => (2 + i % 7, "succeeded"),
                i => (2 + i % 7, "failed"),
            };
            (Uuid::now_v7(), attempts, status)
        })
        .collect();
    history(db(), busy, &rows).await;
    history(db(), other, &[(Uuid::now_v7(), 9, "failed")]).await;
    let retried: Vec<Row> = rows.iter().copied().filter(|r| r.1 > 1).collect();
    assert_eq!(retried.len(), 11_000);

    // Every one attempted more than once, each once, in the order.
    let (ids, pages) = walk(&app, "/v1/notifications?order=attempts&endpoint=busy", 500).await;
    assert_eq!(ids, ordered(&retried), "most attempts first, then newest");
    assert_eq!(pages.len(), 22, "{pages:?}");
    let (_, first) = app
        .get("/v1/notifications?order=attempts&endpoint=busy&limit=1")
        .await;
    assert_eq!(first["data"][0]["attempts"], 8, "{first}");

    // A status: checked on slices of 5,000, so a page may be short, and
    // the cursors still find each once, in the order.
    let succeeded: Vec<Row> = retried
        .iter()
        .copied()
        .filter(|r| r.2 == "succeeded")
        .collect();
    assert_eq!(succeeded.len(), 10);
    let (ids, pages) = walk(
        &app,
        "/v1/notifications?order=attempts&endpoint=busy&status=succeeded",
        4,
    )
    .await;
    assert_eq!(ids, ordered(&succeeded), "{pages:?}");
    // The first 5,000 hold 5 of the 10 (those of 8, 7 and 6 attempts).
    let (_, page) = app
        .get("/v1/notifications?order=attempts&endpoint=busy&status=succeeded&limit=50")
        .await;
    assert_eq!(page["data"].as_array().unwrap().len(), 5, "{page}");
    assert!(
        page["next_cursor"].is_string(),
        "a short page goes on: {page}"
    );
    let expected: HashSet<Uuid> = succeeded.iter().map(|r| r.0).collect();
    exactly_once(&ids, &expected, "the succeeded");

    // What hookd itself records is listed too: two failed attempts.
    let shop = app
        .endpoint(json!({"uid": "shop", "url": receiver.url("/hook"), "schedule": ["0s", "0s"]}))
        .await;
    let failing = app
        .notify(json!({"endpoint": shop["id"], "payload": {"order": 7}}))
        .await;
    eventually(Duration::from_secs(20), "two attempts to fail", || async {
        let (_, n) = app.get(&format!("/v1/notifications/{failing}")).await;
        (n["status"] == "failed").then_some(())
    })
    .await;
    let (status, page) = app
        .get("/v1/notifications?order=attempts&endpoint=shop")
        .await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["data"][0]["id"], failing.as_str(), "{page}");
    assert_eq!(page["data"][0]["attempts"], 2, "{page}");

    // One endpoint's, by status at most; a cursor of another order is not
    // one of this order's.
    for (query, field) in [
        ("order=attempts", "order"),
        ("order=attempts&owner=shop-7", "owner"),
        ("order=attempts&endpoint=busy&key=k", "key"),
        (
            "order=attempts&endpoint=busy&created_after=2026-01-01T00:00:00Z",
            "created_after",
        ),
        ("order=most", "order"),
    ] {
        let (status, body) = app.get(&format!("/v1/notifications?{query}")).await;
        assert_eq!(status, 422, "{query}: {body}");
        assert_eq!(body["error"]["field"], field, "{query}: {body}");
    }
    let (_, newest) = app.get("/v1/notifications?endpoint=busy&limit=1").await;
    let cursor = newest["next_cursor"].as_str().unwrap();
    let (status, body) = app
        .get(&format!(
            "/v1/notifications?order=attempts&endpoint=busy&cursor={cursor}"
        ))
        .await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = app
        .get("/v1/notifications?order=attempts&endpoint=nobody")
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"], json!([]), "an unknown endpoint has none");
}
both!(an_endpoints_most_attempted_notifications_come_first_and_each_once);
