//! Lists whose filter no index serves beside their scope (`status`,
//! `event_type`; issue #47 finding 3) read a bounded slice of the scope per
//! page: a page may come back short or empty with a cursor past the rows
//! read, and following the cursors finds every match exactly once.

use std::collections::HashSet;

use serde_json::{json, Value};
use sqlx::{PgPool, SqlitePool};
use uuid::Uuid;

use crate::backends::Backend;
use crate::helpers::TestApp;

/// The most rows a page examines (`store::notifications::MAX_EXAMINED`).
const EXAMINED: usize = 5_000;

/// A store to write history into behind hookd's back, as a bulk import
/// would: the history's volume, without the API's pace.
pub enum Db<'a> {
    Postgres(&'a PgPool),
    Sqlite(&'a SqlitePool),
}

/// `n` notifications of `endpoint`, of type `order.paid`, oldest first,
/// every `every`-th `failed` and the rest `succeeded`. Returns the failed
/// ones' ids.
pub async fn history(db: Db<'_>, endpoint: Uuid, n: usize, every: usize) -> HashSet<Uuid> {
    let rows: Vec<(Uuid, &str)> = (1..=n)
        .map(|i| {
            let status = if i % every == 0 {
                "failed"
            } else {
                "succeeded"
            };
            (Uuid::now_v7(), status)
        })
        .collect();
    let failed = rows
        .iter()
        .filter(|(_, status)| *status == "failed")
        .map(|(id, _)| *id)
        .collect();
    match db {
        Db::Postgres(pool) => {
            let (ids, statuses): (Vec<Uuid>, Vec<&str>) = rows.into_iter().unzip();
            sqlx::query(
                "INSERT INTO notifications (id, endpoint_id, content_type, body, schedule_ms, \
                     status, deliver_at, completed_at, event_type) \
                 SELECT u.id, $2, 'application/json', '\\x7b7d', '{0}', u.status, now(), now(), \
                     'order.paid' \
                 FROM UNNEST($1::uuid[], $3::text[]) AS u(id, status)",
            )
            .bind(&ids)
            .bind(endpoint)
            .bind(&statuses)
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
                     event_type) ",
                );
                insert.push_values(chunk, |mut row, (id, status)| {
                    row.push_bind(*id)
                        .push_bind(endpoint)
                        .push("'application/json', x'7b7d', '[0]'")
                        .push_bind(*status)
                        .push_bind(now)
                        .push_bind(now)
                        .push_bind(now)
                        .push_bind(now)
                        .push("'order.paid'");
                });
                insert.build().execute(&mut *tx).await.unwrap();
            }
            tx.commit().await.expect("the history is written");
        }
    }
    failed
}

/// `n` events of `owner`, oldest first, of type `order.paid` but every
/// `every`-th `order.refunded`. Returns the refunded ones' ids.
async fn events(db: Db<'_>, owner: &str, n: usize, every: usize) -> HashSet<Uuid> {
    let rows: Vec<(Uuid, &str)> = (1..=n)
        .map(|i| {
            let kind = if i % every == 0 {
                "order.refunded"
            } else {
                "order.paid"
            };
            (Uuid::now_v7(), kind)
        })
        .collect();
    let refunded = rows
        .iter()
        .filter(|(_, kind)| *kind == "order.refunded")
        .map(|(id, _)| *id)
        .collect();
    match db {
        Db::Postgres(pool) => {
            let (ids, kinds): (Vec<Uuid>, Vec<&str>) = rows.into_iter().unzip();
            sqlx::query(
                "INSERT INTO events (id, owner, event_type, content_type, body, deliver_at, \
                     deliveries) \
                 SELECT u.id, $2, u.kind, 'application/json', '\\x7b7d', now(), 0 \
                 FROM UNNEST($1::uuid[], $3::text[]) AS u(id, kind)",
            )
            .bind(&ids)
            .bind(owner)
            .bind(&kinds)
            .execute(pool)
            .await
            .expect("the events are written");
        }
        Db::Sqlite(pool) => {
            let now = chrono::Utc::now().timestamp_micros();
            let mut tx = pool.begin().await.unwrap();
            for chunk in rows.chunks(1_000) {
                let mut insert = sqlx::QueryBuilder::new(
                    "INSERT INTO events (id, owner, event_type, content_type, body, deliver_at, \
                     deliveries, created_at) ",
                );
                insert.push_values(chunk, |mut row, (id, kind)| {
                    row.push_bind(*id)
                        .push_bind(owner)
                        .push_bind(*kind)
                        .push("'application/json', x'7b7d'")
                        .push_bind(now)
                        .push("0")
                        .push_bind(now);
                });
                insert.build().execute(&mut *tx).await.unwrap();
            }
            tx.commit().await.expect("the events are written");
        }
    }
    refunded
}

/// Follows `path`'s cursors to the end: every page's ids and the pages
/// (ids found, rows, cursor) as they came.
pub async fn walk(app: &TestApp, path: &str, limit: usize) -> (Vec<Uuid>, Vec<(usize, bool)>) {
    let mut ids = Vec::new();
    let mut pages = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let url = match &cursor {
            Some(cursor) => format!("{path}&limit={limit}&cursor={cursor}"),
            None => format!("{path}&limit={limit}"),
        };
        let (status, page) = app.get(&url).await;
        assert_eq!(status, 200, "{url}: {page}");
        let data = page["data"].as_array().unwrap();
        assert!(data.len() <= limit, "{page}");
        ids.extend(
            data.iter()
                .map(|n| n["id"].as_str().unwrap().parse::<Uuid>().unwrap()),
        );
        cursor = page["next_cursor"].as_str().map(str::to_string);
        pages.push((data.len(), cursor.is_some()));
        assert!(
            pages.len() <= 40,
            "{path}: the walk does not end: {pages:?}"
        );
        if cursor.is_none() {
            return (ids, pages);
        }
    }
}

pub fn exactly_once(found: &[Uuid], expected: &HashSet<Uuid>, what: &str) {
    let distinct: HashSet<Uuid> = found.iter().copied().collect();
    assert_eq!(distinct.len(), found.len(), "{what}: a row came twice");
    assert_eq!(&distinct, expected, "{what}: not every match, or others");
}

async fn a_filtered_page_reads_a_bounded_slice_and_its_cursors_find_every_match_once(
    backend: Backend,
) {
    let app = backend.spawn().await;
    let id = |endpoint: Value| endpoint["id"].as_str().unwrap().parse::<Uuid>().unwrap();
    let busy = id(app
        .endpoint(json!({"uid": "busy", "owner": "shop-7"}))
        .await);
    let quiet = id(app
        .endpoint(json!({"uid": "quiet", "owner": "shop-7"}))
        .await);
    let elsewhere = id(app
        .endpoint(json!({"uid": "elsewhere", "owner": "shop-8"}))
        .await);
    let db = || match &backend {
        Backend::Postgres { pool, .. } => Db::Postgres(pool),
        Backend::Sqlite { store, .. } => Db::Sqlite(store.writer()),
    };
    let failed_elsewhere = history(db(), elsewhere, 3_000, 100).await;
    let failed_quiet = history(db(), quiet, 300, 50).await;
    let failed_busy = history(db(), busy, 2 * EXAMINED + 2_000, 1_000).await;

    // 12 of 12,000 failed: each page reads 5,000 and finds 5 of 10.
    let (ids, pages) = walk(&app, "/v1/notifications?endpoint=busy&status=failed", 10).await;
    exactly_once(&ids, &failed_busy, "an endpoint's failed");
    assert!(
        pages.iter().any(|&(rows, more)| rows < 10 && more),
        "a short page with a cursor: {pages:?}"
    );
    // None of a type: empty pages, each with a cursor, to the end.
    let (ids, pages) = walk(
        &app,
        "/v1/notifications?endpoint=busy&event_type=never.seen",
        50,
    )
    .await;
    assert!(ids.is_empty());
    assert_eq!(pages[0], (0, true), "{pages:?}");
    assert!(pages.len() <= 4, "{pages:?}");

    // An owner's, as its portal link lists: both its endpoints', nobody
    // else's; unfiltered, its first page is full.
    let shop: HashSet<Uuid> = failed_busy.union(&failed_quiet).copied().collect();
    let (ids, _) = walk(&app, "/v1/notifications?owner=shop-7&status=failed", 4).await;
    exactly_once(&ids, &shop, "an owner's failed");
    let (status, page) = app.get("/v1/notifications?owner=shop-7&limit=50").await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["data"].as_array().unwrap().len(), 50, "{page}");
    assert!(page["next_cursor"].is_string());

    // Every endpoint's, by an unscoped filter.
    let all: HashSet<Uuid> = shop.union(&failed_elsewhere).copied().collect();
    let (ids, pages) = walk(&app, "/v1/notifications?status=failed", 7).await;
    exactly_once(&ids, &all, "every failed");
    assert!(pages.len() >= 3, "{pages:?}");

    // Oldest first, on each path: the same matches, in creation order.
    for (path, expected) in [
        ("endpoint=busy&status=failed", &failed_busy),
        ("owner=shop-7&status=failed", &shop),
        ("status=failed", &all),
    ] {
        let path = format!("/v1/notifications?order=oldest&{path}");
        let (ids, _) = walk(&app, &path, 7).await;
        exactly_once(&ids, expected, &path);
        assert!(ids.is_sorted(), "{path}: oldest first");
    }
    let (_, page) = app
        .get("/v1/notifications?owner=shop-7&order=oldest&limit=50")
        .await;
    let first: Vec<Uuid> = page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap().parse().unwrap())
        .collect();
    assert_eq!(first.len(), 50, "{page}");
    assert!(first.is_sorted(), "{first:?}");

    // Events by type, an owner's and everyone's alike.
    let refunded = events(db(), "shop-7", 2 * EXAMINED + 2_000, 1_000).await;
    let other = events(db(), "shop-8", 1_000, 100).await;
    let path = "/v1/events?owner=shop-7&event_type=order.refunded";
    let (ids, pages) = walk(&app, path, 10).await;
    exactly_once(&ids, &refunded, "an owner's events of a type");
    assert!(
        pages.iter().any(|&(rows, more)| rows < 10 && more),
        "a short page with a cursor: {pages:?}"
    );
    let every: HashSet<Uuid> = refunded.union(&other).copied().collect();
    let (ids, _) = walk(&app, "/v1/events?event_type=order.refunded", 10).await;
    exactly_once(&ids, &every, "every event of a type");
}
both!(a_filtered_page_reads_a_bounded_slice_and_its_cursors_find_every_match_once);
