//! Search by key (DESIGN §18): a key finds the notifications with it and
//! the deliveries of the events with it (a delivery's key is its
//! event's); a prefix finds every key that starts with it, through the
//! keys' indexes when few do and in bounded slices when many do, each
//! match once either way; and `completed_after` finds what ended since.

use std::collections::HashSet;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;
use sqlx::{PgPool, SqlitePool};
use uuid::Uuid;

use crate::backends::Backend;
use crate::helpers::eventually;
use crate::list_filters::{encoded, listed};

/// The most ids a prefix is read through the keys' indexes for
/// (`store::notifications::MAX_EXAMINED`).
const FEW: usize = 5_000;

async fn a_key_or_its_prefix_finds_notifications_and_the_deliveries_of_events_with_it(
    backend: Backend,
) {
    let app = backend.spawn().await;
    app.endpoint(json!({"uid": "shop-a"})).await;
    app.endpoint(json!({"uid": "shop-b"})).await;
    let notify = |endpoint: &str, key: &str| json!({"endpoint": endpoint, "key": key, "payload": {}, "delay": "1h"});
    let paid = app.notify(notify("shop-a", "order-12:paid")).await;
    let longer = app.notify(notify("shop-b", "order-123:paid")).await;
    let other = app.notify(notify("shop-a", "order-2:paid")).await;
    let unicode = app.notify(notify("shop-a", "订单-9")).await;
    let (status, event) = app
        .post(
            "/v1/events",
            json!({"event_type": "order.paid", "key": "order-129", "payload": {}, "delay": "1h"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{event}");
    let event = event["id"].as_str().unwrap().to_string();
    let deliveries = eventually(
        Duration::from_secs(20),
        "the event's two deliveries",
        || {
            let app = &app;
            let event = &event;
            async move {
                let found = listed(app, &format!("/v1/notifications?event={event}")).await;
                (found.len() == 2).then_some(found)
            }
        },
    )
    .await;

    // An event's key finds its deliveries; a notification's, itself.
    assert_eq!(
        listed(&app, "/v1/notifications?key=order-129").await,
        deliveries
    );
    assert_eq!(
        listed(&app, "/v1/notifications?key=order-12:paid").await,
        std::slice::from_ref(&paid)
    );

    // A prefix: every key that starts with it, newest first, an event's
    // deliveries among them; in one endpoint, that endpoint's.
    let mut expected = deliveries.clone();
    expected.extend([longer.clone(), paid.clone()]);
    assert_eq!(
        listed(&app, "/v1/notifications?key_prefix=order-12").await,
        expected
    );
    let (ids, _) = crate::list_bounds::walk(&app, "/v1/notifications?key_prefix=order-", 2).await;
    assert_eq!(ids.len(), 5, "each once, over pages of 2");
    // Oldest first: the same, the other way round, over pages too.
    let mut oldest = expected.clone();
    oldest.reverse();
    assert_eq!(
        listed(&app, "/v1/notifications?key_prefix=order-12&order=oldest").await,
        oldest
    );
    let (ids, _) =
        crate::list_bounds::walk(&app, "/v1/notifications?key_prefix=order-&order=oldest", 2).await;
    assert_eq!(ids.len(), 5, "each once, over pages of 2");
    assert!(ids.is_sorted(), "oldest first: {ids:?}");
    let shop_b = listed(
        &app,
        "/v1/notifications?key_prefix=order-12&endpoint=shop-b",
    )
    .await;
    assert_eq!(shop_b.len(), 2, "{shop_b:?}");
    assert!(shop_b.contains(&longer));
    assert_eq!(
        listed(
            &app,
            &format!("/v1/notifications?key_prefix={}", encoded("订单"))
        )
        .await,
        std::slice::from_ref(&unicode)
    );
    assert!(listed(&app, "/v1/notifications?key_prefix=order-3")
        .await
        .is_empty());
    assert_eq!(
        listed(&app, "/v1/notifications?key_prefix=order-2&status=pending").await,
        std::slice::from_ref(&other)
    );

    // What ended since a time: a cancel ends a notification.
    let (_, read) = app.get(&format!("/v1/notifications/{other}")).await;
    let before = encoded(read["created_at"].as_str().unwrap());
    let (status, body) = app
        .post(&format!("/v1/notifications/{other}/cancel"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let since = |at: &str| format!("/v1/notifications?status=cancelled&completed_after={at}");
    assert_eq!(
        listed(&app, &since(&before)).await,
        std::slice::from_ref(&other)
    );
    let later = encoded(&(chrono::Utc::now() + chrono::Duration::minutes(1)).to_rfc3339());
    assert!(listed(&app, &since(&later)).await.is_empty());

    for (query, field) in [
        ("key_prefix=order&key=order-12:paid", "key_prefix"),
        ("key_prefix=%00", "key_prefix"),
        ("key_prefix=", "key_prefix"),
        ("completed_after=an%20hour%20ago", "completed_after"),
        ("order=attempts", "order"),
        ("order=NEWEST", "order"),
    ] {
        let (status, body) = app.get(&format!("/v1/notifications?{query}")).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{query}: {body}");
        assert_eq!(body["error"]["field"], field, "{query}: {body}");
    }
}
both!(a_key_or_its_prefix_finds_notifications_and_the_deliveries_of_events_with_it);

/// A store to write keyed history into behind hookd's back.
enum Db<'a> {
    Postgres(&'a PgPool),
    Sqlite(&'a SqlitePool),
}

/// A notification of `endpoint` for each key, oldest first; their ids.
async fn keyed_history(db: Db<'_>, endpoint: Uuid, keys: &[String]) -> Vec<Uuid> {
    let ids: Vec<Uuid> = keys.iter().map(|_| Uuid::now_v7()).collect();
    match db {
        Db::Postgres(pool) => {
            // Its key's row too, as a create writes it.
            sqlx::query(
                "WITH n AS (INSERT INTO notifications (id, endpoint_id, key, content_type, body, \
                     schedule_ms, status, deliver_at, completed_at) \
                 SELECT u.id, $2, u.key, 'application/json', '\\x7b7d', '{0}', 'succeeded', \
                     now(), now() \
                 FROM UNNEST($1::uuid[], $3::text[]) AS u(id, key) RETURNING id, key) \
                 INSERT INTO notification_keys (key, endpoint_id, id) SELECT key, $2, id FROM n",
            )
            .bind(&ids)
            .bind(endpoint)
            .bind(keys)
            .execute(pool)
            .await
            .expect("the history is written");
        }
        Db::Sqlite(pool) => {
            let now = chrono::Utc::now().timestamp_micros();
            let mut tx = pool.begin().await.unwrap();
            let rows: Vec<(&Uuid, &String)> = ids.iter().zip(keys).collect();
            for chunk in rows.chunks(1_000) {
                let mut insert = sqlx::QueryBuilder::new(
                    "INSERT INTO notifications (id, endpoint_id, key, content_type, body, \
                     schedule_ms, status, deliver_at, created_at, updated_at, completed_at) ",
                );
                insert.push_values(chunk, |mut row, (id, key)| {
                    row.push_bind(**id)
                        .push_bind(endpoint)
                        .push_bind(key.as_str())
                        .push("'application/json', x'7b7d', '[0]', 'succeeded'")
                        .push_bind(now)
                        .push_bind(now)
                        .push_bind(now)
                        .push_bind(now);
                });
                insert.build().execute(&mut *tx).await.unwrap();
            }
            tx.commit().await.expect("the history is written");
        }
    }
    ids
}

async fn a_prefix_many_keys_start_with_is_searched_in_bounded_slices_and_finds_each_once(
    backend: Backend,
) {
    let app = backend.spawn().await;
    let endpoint = app.endpoint(json!({"uid": "busy"})).await;
    let endpoint: Uuid = endpoint["id"].as_str().unwrap().parse().unwrap();
    let db = || match &backend {
        Backend::Postgres { pool, .. } => Db::Postgres(pool),
        Backend::Sqlite { store, .. } => Db::Sqlite(store.writer()),
    };
    // 6,000 keys that start with "order-" (more than a prefix is read
    // through the indexes for), 1,111 of them with "order-1"; then 5,000
    // others, the newest slice a bounded page reads.
    let keys: Vec<String> = (1..=FEW + 1_000).map(|n| format!("order-{n}")).collect();
    let orders = keyed_history(db(), endpoint, &keys).await;
    let others: Vec<String> = (1..=FEW).map(|n| format!("refund-{n}")).collect();
    keyed_history(db(), endpoint, &others).await;

    let (ids, pages) = crate::list_bounds::walk(
        &app,
        "/v1/notifications?endpoint=busy&key_prefix=order-",
        500,
    )
    .await;
    let all: HashSet<Uuid> = orders.iter().copied().collect();
    crate::list_bounds::exactly_once(&ids, &all, "every order-");
    assert_eq!(
        pages[0],
        (0, true),
        "bounded: the newest slice has none: {pages:?}"
    );
    let ones: HashSet<Uuid> = orders
        .iter()
        .zip(&keys)
        .filter(|(_, key)| key.starts_with("order-1"))
        .map(|(id, _)| *id)
        .collect();
    assert_eq!(ones.len(), 1_111);
    let (ids, pages) =
        crate::list_bounds::walk(&app, "/v1/notifications?key_prefix=order-1", 500).await;
    crate::list_bounds::exactly_once(&ids, &ones, "every order-1");
    // Few: through the keys' indexes, every page full but the last.
    assert_eq!(
        pages.iter().map(|&(rows, _)| rows).collect::<Vec<_>>(),
        [500, 500, 111]
    );
    // Oldest first, through the keys' indexes and in bounded slices alike.
    for path in [
        "/v1/notifications?key_prefix=order-1&order=oldest",
        "/v1/notifications?endpoint=busy&key_prefix=order-&order=oldest",
    ] {
        let (ids, _) = crate::list_bounds::walk(&app, path, 500).await;
        let expected = if path.contains("order-1&") {
            &ones
        } else {
            &all
        };
        crate::list_bounds::exactly_once(&ids, expected, path);
        assert!(ids.is_sorted(), "{path}: oldest first");
    }
    let newest = listed(&app, "/v1/notifications?key_prefix=order-1&limit=1").await;
    assert_eq!(
        newest,
        [orders[1_998].to_string()],
        "order-1999, the newest of them"
    );
}
both!(a_prefix_many_keys_start_with_is_searched_in_bounded_slices_and_finds_each_once);
