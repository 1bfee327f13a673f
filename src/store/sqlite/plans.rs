//! The hot statements' plans on the migrated schema: each reads the index
//! meant for it (SQLite uses a partial index only when a query states its
//! terms, which a reworded query silently stops doing).

use super::housekeeping::PENDING_PAGE;
use super::notifications::list_query;
use super::{SqliteOptions, SqliteStore};
use crate::domain::status::Status;
use crate::store::notifications::NotificationFilter;

async fn plan(store: &SqliteStore, sql: &str) -> String {
    // Parameters left unbound are NULL: the plan does not depend on them.
    let rows: Vec<(i64, i64, i64, String)> =
        sqlx::query_as(sqlx::AssertSqlSafe(format!("EXPLAIN QUERY PLAN {sql}")))
            .fetch_all(store.reader())
            .await
            .unwrap();
    rows.into_iter()
        .map(|(.., detail)| detail)
        .collect::<Vec<_>>()
        .join("\n")
}

fn assert_uses(plan: &str, index: &str) {
    assert!(
        plan.contains(&format!("INDEX {index}")),
        "not on {index}:\n{plan}"
    );
    assert!(!plan.contains("TEMP B-TREE"), "sorts:\n{plan}");
}

#[tokio::test]
async fn the_hot_statements_read_their_indexes() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("hookd.db"), &SqliteOptions::migrating())
        .await
        .unwrap();
    assert_uses(
        &plan(&store, PENDING_PAGE).await,
        "notifications_pending_due",
    );
    let sql = "SELECT id FROM notifications WHERE needs_index = 1 ORDER BY next_attempt_at LIMIT ?";
    assert_uses(&plan(&store, sql).await, "notifications_needs_index");
    let sql = "SELECT id FROM notifications WHERE key = ? AND endpoint_id = ?";
    assert_uses(&plan(&store, sql).await, "notifications_key");
    let sql = "SELECT id FROM events WHERE key = ? AND ifnull(owner, x'') = ifnull(?, x'')";
    assert_uses(&plan(&store, sql).await, "events_key");

    let listed = |filter: NotificationFilter| list_query(&filter).into_string();
    let by_key = NotificationFilter {
        key: Some("k".into()),
        limit: 10,
        ..NotificationFilter::default()
    };
    // Few rows share a key: found on the key's index, then sorted.
    let by_key = plan(&store, &listed(by_key)).await;
    assert!(by_key.contains("INDEX notifications_key"), "{by_key}");
    for status in [Status::Failed, Status::Cancelled] {
        let filter = NotificationFilter {
            status: Some(status),
            limit: 10,
            ..NotificationFilter::default()
        };
        assert_uses(
            &plan(&store, &listed(filter)).await,
            "notifications_unsettled_newest",
        );
    }
    // Pending and succeeded rows are most rows: the primary key, newest
    // first, stops at the page's end (as in PostgreSQL).
    for status in [Status::Pending, Status::Succeeded] {
        let filter = NotificationFilter {
            status: Some(status),
            limit: 10,
            ..NotificationFilter::default()
        };
        let plan = plan(&store, &listed(filter)).await;
        assert!(!plan.contains("TEMP B-TREE"), "{plan}");
    }
    // An event type: the notifications of that type and those of its
    // events', each on its index.
    let by_type = NotificationFilter {
        event_type: Some("t".into()),
        limit: 10,
        ..NotificationFilter::default()
    };
    let by_type = plan(&store, &listed(by_type)).await;
    for index in [
        "notifications_event_type_newest",
        "events_event_type_newest",
        "notifications_event",
    ] {
        assert!(by_type.contains(&format!("INDEX {index}")), "{by_type}");
    }
    let by_endpoint = NotificationFilter {
        endpoint_id: Some(uuid::Uuid::nil()),
        limit: 10,
        ..NotificationFilter::default()
    };
    assert_uses(
        &plan(&store, &listed(by_endpoint)).await,
        "notifications_endpoint_newest",
    );
    let window = crate::domain::created::CreatedWindow {
        after: Some(chrono::Utc::now()),
        before: Some(chrono::Utc::now()),
    };
    let by_window = NotificationFilter {
        created: window,
        limit: 10,
        ..NotificationFilter::default()
    };
    // A creation window: the primary key from the window's end.
    let by_window = plan(&store, &listed(by_window)).await;
    assert!(
        by_window.contains(
            "SEARCH notifications USING INDEX sqlite_autoindex_notifications_1 (id>? AND id<?)"
        ),
        "{by_window}"
    );
    assert!(!by_window.contains("TEMP B-TREE"), "{by_window}");
    let by_owner = NotificationFilter {
        owner: Some("o".into()),
        limit: 10,
        ..NotificationFilter::default()
    };
    // An owner's: its endpoints on the owner index, their rows on the
    // endpoint index, then sorted. SQLite has no LATERAL to stop at a
    // page per endpoint as PostgreSQL does, so this reads all of the
    // owner's notifications before the page (a cost that grows with the
    // owner's history; not measured at scale).
    let by_owner = plan(&store, &listed(by_owner)).await;
    for index in ["notifications_endpoint_newest", "endpoints_owner"] {
        assert!(by_owner.contains(&format!("INDEX {index}")), "{by_owner}");
    }
}
