//! The plan of every filter of `GET /v1/notifications`, alone and with each
//! scope a list may be forced to (none, an endpoint by a portal link or a
//! query, an owner), as generic plans: a filter an index serves reads that
//! index; any other (`status`, `event_type`, `completed_after`, a key
//! prefix many keys start with) is checked on the scope's rows
//! between the frontier and the cursor, read on the scope's own index, and
//! the frontier is found on that index's ids alone (issue #47). Nothing
//! reads the whole table.

use chrono::{Duration, Utc};
use sqlx::PgPool;
use uuid::Uuid;

use super::notifications::{frontier_query, list_query};
use crate::domain::created::CreatedWindow;
use crate::domain::status::Status;
use crate::store::notifications::{ListOrder, NotificationFilter};

async fn generic_plan(pool: &PgPool, sql: &str) -> String {
    let parameters = sql.matches('$').count();
    super::plan_tests::generic_plan(pool, sql, parameters)
        .await
        .join("\n")
}

/// 100 endpoints of 10 owners, 20,000 notifications of several statuses
/// and types over them, analyzed (see `list_plan_tests::table`).
async fn table(pool: &PgPool) {
    sqlx::raw_sql(
        "INSERT INTO endpoints (id, url, secret, schedule_ms, owner) \
         SELECT hookd_uuid_v7(), 'http://receiver.test/', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', \
             '{0}', 'owner-' || (g % 10) FROM generate_series(1, 100) g; \
         INSERT INTO notifications (id, endpoint_id, content_type, body, schedule_ms, status, \
             deliver_at, event_type) \
         SELECT hookd_uuid_v7(), e.id, 'application/json', '\\x7b7d', '{0}', \
             (ARRAY['succeeded', 'succeeded', 'succeeded', 'failed', 'cancelled'])[1 + g % 5], \
             now(), 'type-' || (g % 7) \
         FROM generate_series(1, 200) g, endpoints e; \
         ANALYZE endpoints, notifications_legacy;",
    )
    .execute(pool)
    .await
    .unwrap();
}

/// Each filter, with each scope.
fn every_filter() -> Vec<(String, NotificationFilter)> {
    let window = CreatedWindow {
        after: Some(Utc::now() - Duration::days(2)),
        before: Some(Utc::now() - Duration::days(1)),
    };
    let mut filters: Vec<(&str, NotificationFilter)> = vec![
        ("nothing", NotificationFilter::default()),
        (
            "event_type",
            NotificationFilter {
                event_type: Some("type-3".into()),
                ..NotificationFilter::default()
            },
        ),
        (
            "key",
            NotificationFilter {
                key: Some("k".into()),
                ..NotificationFilter::default()
            },
        ),
        (
            "event",
            NotificationFilter {
                event_id: Some(Uuid::nil()),
                ..NotificationFilter::default()
            },
        ),
        (
            "key_prefix that many keys start with",
            NotificationFilter {
                key_prefix: Some("order-".into()),
                ..NotificationFilter::default()
            },
        ),
        (
            "key_prefix that few keys start with",
            NotificationFilter {
                key_prefix: Some("order-".into()),
                ids: Some(vec![Uuid::nil(), Uuid::max()]),
                ..NotificationFilter::default()
            },
        ),
        (
            "failed since",
            NotificationFilter {
                status: Some(Status::Failed),
                completed_after: Some(Utc::now() - Duration::hours(1)),
                ..NotificationFilter::default()
            },
        ),
        (
            "created window",
            NotificationFilter {
                created: window,
                ..NotificationFilter::default()
            },
        ),
        (
            "status and event_type in a window",
            NotificationFilter {
                status: Some(Status::Failed),
                event_type: Some("type-3".into()),
                created: window,
                ..NotificationFilter::default()
            },
        ),
    ];
    for status in [
        Status::Pending,
        Status::Succeeded,
        Status::Failed,
        Status::Cancelled,
    ] {
        let filter = NotificationFilter {
            status: Some(status),
            ..NotificationFilter::default()
        };
        filters.push(("status", filter));
    }
    let mut all = Vec::new();
    for (name, filter) in filters {
        let scopes = [
            ("", None, None),
            (" of an endpoint", Some(Uuid::nil()), None),
            (" of an owner", None, Some("owner-3".to_string())),
            (
                " of an owner's endpoint",
                Some(Uuid::nil()),
                Some("owner-3".to_string()),
            ),
        ];
        for (scope, endpoint_id, owner) in scopes {
            for (way, order) in [
                ("", ListOrder::NewestFirst),
                (", oldest first", ListOrder::OldestFirst),
            ] {
                let mut filter = NotificationFilter {
                    endpoint_id,
                    owner: owner.clone(),
                    order,
                    limit: 51,
                    ..filter.clone()
                };
                filter.from = filter.bounded().then(Uuid::nil);
                all.push((format!("{name}{scope}{way}"), filter));
            }
        }
    }
    all
}

/// The lines of the plan that read `notifications` (its partitions).
fn notification_scans(plan: &str) -> Vec<&str> {
    plan.lines()
        .filter(|line| line.contains(" on notifications"))
        .collect()
}

#[sqlx::test(migrator = "super::MIGRATOR")]
async fn every_list_filter_reads_an_index_of_its_own_or_a_bounded_slice_of_its_scope(pool: PgPool) {
    table(&pool).await;
    for (name, filter) in every_filter() {
        let plan = generic_plan(&pool, &list_query(&filter).into_string()).await;
        assert!(
            !plan.contains("Seq Scan on notifications"),
            "{name}:\n{plan}"
        );
        let scans = notification_scans(&plan);
        assert!(!scans.is_empty(), "{name}:\n{plan}");
        if filter.bounded() {
            // A type is checked on each row read (its event by id), not
            // by reading every event of the type.
            assert!(!plan.contains("Seq Scan on events"), "{name}:\n{plan}");
            // The scope's rows from the frontier on: its index, from the
            // frontier (`id >= $n`, oldest first `id <= $n`), never an
            // index of the filter's.
            for scan in &scans {
                assert!(
                    !scan.contains("unsettled")
                        && !scan.contains("event_type")
                        && !scan.contains("completed"),
                    "{name}: read on the filter's index:\n{plan}"
                );
            }
            // Its scope's index (an endpoint's for an endpoint or each
            // endpoint of an owner, else the primary key) from the frontier.
            let scope = if filter.endpoint_id.is_some() || filter.owner.is_some() {
                "Index Cond: ((endpoint_id = "
            } else {
                "Index Cond: "
            };
            let from = format!("(id {} $", filter.order.up_to());
            assert!(
                plan.lines()
                    .any(|line| line.contains(scope) && line.contains(&from)),
                "{name}: not on its scope's index from the frontier:\n{plan}"
            );
            // The frontier: the scope's index, its ids alone, a row at
            // an offset (or one per endpoint of an owner).
            let frontier = generic_plan(&pool, &frontier_query(&filter, 5_000).into_string()).await;
            assert!(
                !frontier.contains("Seq Scan on notifications"),
                "{name}:\n{frontier}"
            );
            assert!(
                notification_scans(&frontier)
                    .iter()
                    .all(|scan| scan.contains("Index Only Scan")),
                "{name}: the frontier reads rows:\n{frontier}"
            );
            assert!(frontier.contains("Limit"), "{name}:\n{frontier}");
        } else if filter.key.is_some() {
            // The key's notifications, and its events' deliveries.
            assert!(plan.contains("notification_keys"), "{name}:\n{plan}");
            assert!(plan.contains("events_key"), "{name}:\n{plan}");
            assert!(plan.contains("notifications_event"), "{name}:\n{plan}");
        } else if filter.ids.is_some() {
            assert!(
                plan.contains("Index Cond: (id = ANY ($"),
                "{name}: not by id:\n{plan}"
            );
        } else if filter.event_id.is_some() {
            assert!(plan.contains("notifications_event"), "{name}:\n{plan}");
        } else {
            // No filter beyond the scope (and its window): the scope's
            // newest rows, up to the page's end.
            assert!(plan.contains("Limit"), "{name}:\n{plan}");
        }
    }
}

/// 20,000 events of 1,000 owners (and none) and 7 types, analyzed. (With
/// generic plans an owner is planned as the average one: with a handful of
/// owners, PostgreSQL reads the primary key for one, bounded by the id
/// range from the frontier.)
async fn events(pool: &PgPool) {
    sqlx::raw_sql(
        "INSERT INTO events (id, owner, event_type, content_type, body, deliver_at, deliveries) \
         SELECT hookd_uuid_v7(), CASE WHEN g % 11 = 0 THEN NULL ELSE 'owner-' || (g % 1000) END, \
             'type-' || (g % 7), 'application/json', '\\x7b7d', now(), 1 \
         FROM generate_series(1, 20000) g; \
         ANALYZE events;",
    )
    .execute(pool)
    .await
    .unwrap();
}

#[sqlx::test(migrator = "super::MIGRATOR")]
async fn every_event_filter_reads_an_index_of_its_own_or_a_bounded_slice_of_its_scope(
    pool: PgPool,
) {
    use crate::store::events::EventFilter;

    events(&pool).await;
    let window = CreatedWindow {
        after: Some(Utc::now() - Duration::days(2)),
        before: Some(Utc::now() - Duration::days(1)),
    };
    for owner in [None, Some(None), Some(Some("owner-3".to_string()))] {
        for (event_type, key, created) in [
            (None, None, CreatedWindow::default()),
            (Some("type-3"), None, CreatedWindow::default()),
            (Some("type-3"), None, window),
            (None, Some("k"), CreatedWindow::default()),
            (Some("type-3"), Some("k"), CreatedWindow::default()),
        ] {
            let mut filter = EventFilter {
                owner: owner.clone(),
                event_type: event_type.map(str::to_string),
                key: key.map(str::to_string),
                created,
                limit: 51,
                ..EventFilter::default()
            };
            filter.from = filter.bounded().then(Uuid::nil);
            let name = format!("{filter:?}");
            let sql = super::list_queries::events(&filter, "id").into_string();
            let plan = generic_plan(&pool, &sql).await;
            assert!(!plan.contains("Seq Scan on events"), "{name}:\n{plan}");
            if filter.key.is_some() {
                assert!(plan.contains("events_key"), "{name}:\n{plan}");
            } else if filter.bounded() {
                // Those without an owner: the planner knows from the
                // statistics of `owner IS NULL` (a literal) whether they are
                // few enough for the owner index, or the primary key is
                // read from the frontier.
                let scope = match &filter.owner {
                    Some(Some(_)) => "events_owner_newest",
                    Some(None) => "",
                    None => "events_pkey",
                };
                assert!(plan.contains(scope), "{name}:\n{plan}");
                assert!(
                    plan.lines()
                        .any(|line| line.contains("Index Cond: ") && line.contains("(id >= $")),
                    "{name}: not from the frontier:\n{plan}"
                );
                let sql = super::list_queries::events_frontier(&filter).into_string();
                let frontier = generic_plan(&pool, &sql).await;
                if !scope.is_empty() {
                    assert!(frontier.contains("Index Only Scan"), "{name}:\n{frontier}");
                }
                assert!(frontier.contains(scope), "{name}:\n{frontier}");
            } else {
                assert!(plan.contains("Limit"), "{name}:\n{plan}");
            }
        }
    }
}
