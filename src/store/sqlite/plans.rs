//! The hot statements' plans on the migrated schema: each reads the index
//! meant for it (SQLite uses a partial index only when a query states its
//! terms, which a reworded query silently stops doing).

use super::housekeeping::PENDING_PAGE;
use super::notifications::{frontier_query, list_query, prefix_ids_query};
use super::{SqliteOptions, SqliteStore};
use crate::domain::status::Status;
use crate::store::notifications::{ListOrder, NotificationFilter};

pub(super) async fn plan(store: &SqliteStore, sql: &str) -> String {
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

/// A store on the migrated schema, in a directory of its own.
pub(super) async fn migrated() -> (tempfile::TempDir, SqliteStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("hookd.db"), &SqliteOptions::migrating())
        .await
        .unwrap();
    (dir, store)
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
    let (_dir, store) = migrated().await;
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
    // Few rows share a key: found on the key's index, then sorted; an
    // event's deliveries through its key's index, then theirs.
    let by_key = plan(&store, &listed(by_key)).await;
    assert!(by_key.contains("INDEX notifications_key"), "{by_key}");
    assert!(by_key.contains("INDEX events_key"), "{by_key}");
    assert!(by_key.contains("INDEX notifications_event"), "{by_key}");
    assert!(!by_key.contains("SCAN"), "{by_key}");
    let by_ids = NotificationFilter {
        key_prefix: Some("k".into()),
        ids: Some(vec![uuid::Uuid::nil()]),
        limit: 10,
        ..NotificationFilter::default()
    };
    // The few a prefix names: by the primary key.
    let by_ids = plan(&store, &listed(by_ids)).await;
    assert!(
        by_ids.contains("INDEX sqlite_autoindex_notifications_1 (id=?)"),
        "{by_ids}"
    );
    assert!(!by_ids.contains("SCAN notifications"), "{by_ids}");
    let prefix = NotificationFilter {
        key_prefix: Some("order-".into()),
        endpoint_id: Some(uuid::Uuid::nil()),
        cursor: Some(uuid::Uuid::max()),
        ..NotificationFilter::default()
    };
    // A prefix's ids: a range of each key's index.
    let sql = prefix_ids_query(&prefix, "order-", 5_001).into_string();
    let prefix = plan(&store, &sql).await;
    assert!(
        prefix.contains("INDEX notifications_key (key>? AND key<?)"),
        "{prefix}"
    );
    assert!(
        prefix.contains("INDEX events_key (key>? AND key<?)"),
        "{prefix}"
    );
    assert!(!prefix.contains("SCAN"), "{prefix}");
    let by_event = NotificationFilter {
        event_id: Some(uuid::Uuid::nil()),
        limit: 10,
        ..NotificationFilter::default()
    };
    assert_uses(
        &plan(&store, &listed(by_event)).await,
        "notifications_event",
    );
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
    bounded_lists_read_their_scope_from_the_frontier(&store).await;
}

/// A filter no index serves beside the scope (`status`, `event_type`), and
/// an owner's list: the scope's rows between the frontier and the cursor,
/// on the scope's index (an endpoint's, each of the owner's endpoints', or
/// the primary key), never an index of the filter's; the frontier on the
/// ids of that index alone (issue #47).
async fn bounded_lists_read_their_scope_from_the_frontier(store: &SqliteStore) {
    let mut filters = vec![
        NotificationFilter {
            event_type: Some("t".into()),
            ..NotificationFilter::default()
        },
        NotificationFilter {
            key_prefix: Some("order-".into()),
            ..NotificationFilter::default()
        },
        NotificationFilter {
            completed_after: Some(chrono::Utc::now()),
            status: Some(Status::Failed),
            ..NotificationFilter::default()
        },
    ];
    for status in [
        Status::Pending,
        Status::Succeeded,
        Status::Failed,
        Status::Cancelled,
    ] {
        filters.push(NotificationFilter {
            status: Some(status),
            ..NotificationFilter::default()
        });
    }
    filters.push(NotificationFilter::default());
    let scopes = [
        (None, None),
        (Some(uuid::Uuid::nil()), None),
        (None, Some("o".to_string())),
    ];
    let orders = [ListOrder::NewestFirst, ListOrder::OldestFirst];
    for filter in filters {
        for ((endpoint_id, owner), order) in scopes
            .iter()
            .flat_map(|scope| orders.map(|order| (scope.clone(), order)))
        {
            let filter = NotificationFilter {
                endpoint_id,
                owner,
                order,
                from: Some(uuid::Uuid::nil()),
                cursor: Some(uuid::Uuid::max()),
                limit: 10,
                ..filter.clone()
            };
            if !filter.bounded() {
                continue;
            }
            let sql = list_query(&filter).into_string();
            let listed = plan(store, &sql).await;
            let scope_index = if endpoint_id.is_some() || filter.owner.is_some() {
                "notifications_endpoint_newest"
            } else {
                "sqlite_autoindex_notifications_1"
            };
            let scope = format!("USING INDEX {scope_index} (endpoint_id=? AND id>? AND id<?)");
            let scope = if scope_index.starts_with("sqlite") {
                format!("USING INDEX {scope_index} (id>? AND id<?)")
            } else {
                scope
            };
            // `notifications` is read on the scope's index alone.
            for line in listed
                .lines()
                .filter(|l| l.contains(" notifications USING"))
            {
                assert!(line.contains(scope_index), "{sql}\n{listed}");
            }
            assert!(listed.contains(&scope), "{sql}\n{listed}");
            // A type: each row's event by id, not a list of the type's
            // events (an owner's list is its endpoints').
            let lists = listed.matches("LIST SUBQUERY").count();
            assert!(
                lists <= usize::from(filter.owner.is_some()),
                "{sql}\n{listed}"
            );
            assert!(!listed.contains("SCAN e"), "{sql}\n{listed}");
            if filter.owner.is_none() {
                assert!(!listed.contains("TEMP B-TREE"), "{sql}\n{listed}");
            }
            let sql = frontier_query(&filter, 5_000).into_string();
            let frontier = plan(store, &sql).await;
            assert!(
                frontier.contains("USING COVERING INDEX"),
                "{sql}\n{frontier}"
            );
            assert!(!frontier.contains("SCAN n"), "{sql}\n{frontier}");
            assert!(!frontier.contains("TEMP B-TREE"), "{sql}\n{frontier}");
        }
    }
}

#[tokio::test]
async fn the_recent_event_types_read_each_source_newest_first_on_its_index() {
    let (_dir, store) = migrated().await;
    let plan = plan(&store, super::notifications::RECENT_EVENT_TYPES).await;
    assert!(plan.contains("INDEX events_owner_newest"), "{plan}");
    assert!(
        plan.contains("INDEX notifications_endpoint_newest"),
        "{plan}"
    );
    assert!(!plan.contains("SCAN events"), "{plan}");
    assert!(!plan.contains("SCAN notifications"), "{plan}");
}

#[tokio::test]
async fn the_due_backlog_walks_the_pending_index_in_due_order() {
    let (_dir, store) = migrated().await;
    let plan = plan(&store, super::due_age::DUE_BACKLOG).await;
    assert_eq!(
        plan.matches("INDEX notifications_pending_due").count(),
        2,
        "each kind walks the pending rows' index:\n{plan}"
    );
    assert!(
        !plan.contains("TEMP B-TREE FOR ORDER BY"),
        "in the index's order, without sorting what is due:\n{plan}"
    );
}

/// The 30 s sweeps of stray and orphaned rows walk the endpoints changed or
/// deleted, then each one's pending rows by index: never the whole backlog.
#[tokio::test]
async fn the_stray_and_orphan_sweeps_read_only_the_endpoints_changed_and_their_pending_rows() {
    let (_dir, store) = migrated().await;
    for (sql, index) in [
        (super::pull::STRAYS, "notifications_pull_due"),
        (super::pull::ORPHANS, "notifications_endpoint_pending_due"),
    ] {
        let plan = plan(&store, sql).await;
        assert!(
            plan.contains(&format!("INDEX {index} (endpoint_id=?)")),
            "{plan}"
        );
        assert!(
            !plan.contains("SCAN n"),
            "every pending row walked:\n{plan}"
        );
    }
}

// Issue #48: a create reads back the key rows it wrote by their keys,
// not by a walk of every key of the table.
#[tokio::test]
async fn the_key_rows_a_create_wrote_are_read_back_by_their_keys() {
    let (_dir, store) = migrated().await;
    let plan = plan(&store, super::ordering::WRITTEN_KEYS.as_str()).await;
    assert_uses(&plan, "sqlite_autoindex_order_keys_1");
    assert!(!plan.contains("SCAN k"), "{plan}");
}

// Issue #48: retention walks every ordering key, a page at a time, from
// the key rows alone (their line and its stamp), as in PostgreSQL.
#[tokio::test]
async fn a_page_of_ordering_keys_reads_the_key_rows_from_its_cursor_and_only_their_holders() {
    let (_dir, store) = migrated().await;
    let page = plan(&store, super::ordering_retention::KEY_PAGE).await;
    assert_uses(&page, "sqlite_autoindex_order_keys_1");
    assert!(!page.contains("notifications_order"), "{page}");
    assert!(
        !page.contains("SCAN h"),
        "a holder is probed by its id: {page}"
    );
}

// Issue #48: housekeeping looks every second, a page at a time, for what
// waits for a notification retention removed.
#[tokio::test]
async fn what_waits_for_a_removed_notification_is_found_through_the_behind_index() {
    let (_dir, store) = migrated().await;
    let orphans = plan(&store, super::ordering_retention::ORPHANS).await;
    assert!(orphans.contains("INDEX notifications_behind"), "{orphans}");
    assert!(orphans.contains("INDEX notifications_order"), "{orphans}");
    assert!(!orphans.contains("SCAN notifications"), "{orphans}");
    // And, a page of the same walk, for what waits behind a failed one.
    let stranded = plan(&store, super::ordering::STRANDED).await;
    assert!(
        stranded.contains("INDEX notifications_behind"),
        "{stranded}"
    );
    assert!(!stranded.contains("SCAN w"), "{stranded}");
    assert!(!stranded.contains("SCAN p"), "{stranded}");
}

// Issue #48: recording a batch, and what its ordered ends release, reach
// each row by its id or through `behind`; none reads a key's notifications
// (20 per key in the ordering bench, any number for a long-lived key).
#[tokio::test]
async fn recording_and_the_release_it_triggers_reach_each_row_by_id_or_behind() {
    let (_dir, store) = migrated().await;
    for (sql, index) in [
        (
            super::recording::MOVE.as_str(),
            "sqlite_autoindex_notifications_1",
        ),
        (super::recording::KEEP, "sqlite_autoindex_notifications_1"),
        (
            super::releasing::SUCCESSORS.as_str(),
            "notifications_behind",
        ),
        (
            super::releasing::RELEASED.as_str(),
            "sqlite_autoindex_notifications_1",
        ),
    ] {
        let plan = plan(&store, sql).await;
        assert!(plan.contains(&format!("INDEX {index}")), "{sql}\n{plan}");
        assert!(!plan.contains("SCAN n"), "{sql}\n{plan}");
        assert!(!plan.contains("notifications_order"), "{sql}\n{plan}");
    }
    // The release trigger's successor update, as installed, with its
    // row's values as parameters (EXPLAIN QUERY PLAN does not descend
    // into triggers).
    let row_values = regex::Regex::new(r"NEW\.\w+").unwrap();
    let trigger: String = sqlx::query_scalar(
        "SELECT sql FROM sqlite_master WHERE type = 'trigger' \
         AND name = 'notifications_release_order'",
    )
    .fetch_one(store.reader())
    .await
    .unwrap();
    let start = trigger.rfind("UPDATE notifications SET").unwrap();
    let end = start + trigger[start..].find(';').unwrap();
    let update = row_values.replace_all(&trigger[start..end], "?");
    let release = plan(&store, &update).await;
    assert!(
        release.contains("INDEX notifications_behind"),
        "{update}\n{release}"
    );
    assert!(
        !release.contains("notifications_order"),
        "{update}\n{release}"
    );
    // What the recorded successes release, set-based: each reached by
    // its id, its key's row by its key, a held key through the index of
    // held ones (`0025_recorded_successes_set_based.sql`).
    let statements: Vec<&str> = super::releasing::SUCCESSES_RELEASE.split("; ").collect();
    let expected = [
        &[
            "sqlite_autoindex_notifications_1",
            "sqlite_autoindex_order_keys_1",
        ][..],
        &["order_keys_held_by"],
        &["sqlite_autoindex_notifications_1"],
    ];
    assert_eq!(statements.len(), expected.len());
    for (sql, indexes) in statements.into_iter().zip(expected) {
        let plan = plan(&store, sql).await;
        for index in indexes {
            assert!(plan.contains(&format!("INDEX {index}")), "{sql}\n{plan}");
        }
        assert!(!plan.contains("SCAN k"), "{sql}\n{plan}");
        assert!(!plan.contains("SCAN n"), "{sql}\n{plan}");
        assert!(!plan.contains("SCAN order_keys"), "{sql}\n{plan}");
        assert!(!plan.contains("SCAN notifications"), "{sql}\n{plan}");
    }
}
