//! The plans of the list filters the console and portal links search with
//! (generic plans, as hookd's connections make them): a creation-time
//! window starts at its end in an id index instead of walking every newer
//! row, and an owner's list reads each of its endpoints' newest rows
//! instead of walking the primary key for rows of its endpoints.

use chrono::{Duration, Utc};
use sqlx::PgPool;

use super::notifications::{list_query, prefix_ids_query};
use crate::domain::created::CreatedWindow;
use crate::store::notifications::{ListOrder, NotificationFilter};

async fn generic_plan(pool: &PgPool, filter: &NotificationFilter) -> String {
    let sql = list_query(filter).into_string();
    let parameters = sql.matches('$').count();
    super::plan_tests::generic_plan(pool, &sql, parameters)
        .await
        .join("\n")
}

/// 100 endpoints of 10 owners, 20,000 notifications over them, analyzed
/// as autovacuum would: the partition that holds them (they are made now,
/// in the legacy partition of a new database), not the empty partitions
/// ahead, which an `ANALYZE notifications` would record as empty for good
/// (a plan then reads them by a scan of nothing, which autovacuum's
/// analyze of a filled partition replans).
async fn table(pool: &PgPool) {
    sqlx::raw_sql(
        "INSERT INTO endpoints (id, url, secret, schedule_ms, owner) \
         SELECT hookd_uuid_v7(), 'http://receiver.test/', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', \
             '{0}', 'owner-' || (g % 10) FROM generate_series(1, 100) g; \
         INSERT INTO notifications (id, endpoint_id, content_type, body, schedule_ms, status, \
             deliver_at) \
         SELECT hookd_uuid_v7(), e.id, 'application/json', '\\x7b7d', '{0}', 'succeeded', now() \
         FROM generate_series(1, 200), endpoints e; \
         ANALYZE endpoints, notifications_legacy;",
    )
    .execute(pool)
    .await
    .unwrap();
}

#[sqlx::test(migrator = "super::MIGRATOR")]
async fn a_creation_window_starts_at_its_end_in_an_id_index(pool: PgPool) {
    table(&pool).await;
    let window = CreatedWindow {
        after: Some(Utc::now() - Duration::days(2)),
        before: Some(Utc::now() - Duration::days(1)),
    };
    for filter in [
        NotificationFilter {
            created: window,
            limit: 51,
            ..NotificationFilter::default()
        },
        NotificationFilter {
            created: window,
            endpoint_id: Some(uuid::Uuid::nil()),
            limit: 51,
            ..NotificationFilter::default()
        },
    ] {
        let plan = generic_plan(&pool, &filter).await;
        assert!(
            plan.lines().any(|line| line.contains("Index Cond: ")
                && line.contains("(id >= $")
                && line.contains("(id < $")),
            "the window bounds an id index scan:\n{plan}"
        );
        assert!(!plan.contains("Seq Scan on notifications"), "{plan}");
    }
}

#[sqlx::test(migrator = "super::MIGRATOR")]
async fn an_owners_list_reads_its_endpoints_newest_or_oldest_rows(pool: PgPool) {
    table(&pool).await;
    for order in [ListOrder::NewestFirst, ListOrder::OldestFirst] {
        an_owners_list_reads_its_endpoints_rows_in(&pool, order).await;
    }
}

async fn an_owners_list_reads_its_endpoints_rows_in(pool: &PgPool, order: ListOrder) {
    let filter = NotificationFilter {
        owner: Some("owner-3".into()),
        order,
        limit: 51,
        ..NotificationFilter::default()
    };
    let plan = generic_plan(pool, &filter).await;
    assert!(
        plan.lines()
            .any(|line| line.contains("using notifications_endpoint_newest")),
        "each endpoint's newest rows through its index:\n{plan}"
    );
    assert!(
        plan.lines()
            .any(|line| line.contains("Index Cond: (endpoint_id = o.id)")),
        "{plan}"
    );
    assert!(!plan.contains("Seq Scan on notifications"), "{plan}");
}

/// A key prefix's ids: a range of the keys' byte-order indexes (the
/// notifications' and the events'), whatever the scope, never a scan of
/// the keys, the events or the scope's every row.
#[sqlx::test(migrator = "super::MIGRATOR")]
async fn a_key_prefix_reads_a_range_of_the_keys_byte_order_indexes(pool: PgPool) {
    table(&pool).await;
    sqlx::raw_sql(
        "INSERT INTO notification_keys (key, endpoint_id, id) \
         SELECT 'order-' || row_number() OVER (), endpoint_id, id FROM notifications; \
         INSERT INTO events (id, owner, event_type, key, content_type, body, deliver_at, deliveries) \
         SELECT hookd_uuid_v7(), 'owner-' || (g % 10), 'order.paid', 'event-' || g, \
             'application/json', '\\x7b7d', now(), 1 \
         FROM generate_series(1, 20000) g; \
         ANALYZE notification_keys, events;",
    )
    .execute(&pool)
    .await
    .unwrap();
    for endpoint_id in [None, Some(uuid::Uuid::nil())] {
        let filter = NotificationFilter {
            key_prefix: Some("order-12".into()),
            endpoint_id,
            cursor: Some(uuid::Uuid::max()),
            ..NotificationFilter::default()
        };
        let sql = prefix_ids_query(&filter, "order-12", 5_001).into_string();
        let parameters = sql.matches('$').count();
        let plan = super::plan_tests::generic_plan(&pool, &sql, parameters)
            .await
            .join("\n");
        assert!(plan.contains("notification_keys_prefix"), "{plan}");
        assert!(plan.contains("events_key_prefix"), "{plan}");
        assert!(!plan.contains("Seq Scan"), "{plan}");
        assert!(!plan.contains("notifications_endpoint_newest"), "{plan}");
    }
}
