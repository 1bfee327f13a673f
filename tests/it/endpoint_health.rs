//! Endpoint health against a real PostgreSQL: a failing endpoint is
//! disabled once, with its operator event, unless it changed since it was
//! read; the keys of those events.

use chrono::{DateTime, Utc};
use hookd::domain::health::DISABLED_FAILING;
use hookd::domain::id;
use hookd::domain::operator_event::{DisabledEndpoint, OperatorEvent, OPERATOR_ENDPOINT_ID};
use hookd::store::health::FailingEndpoint;
use hookd::store::postgres::PgStore;
use sqlx::PgPool;
use uuid::Uuid;

use crate::store::endpoint;

#[sqlx::test]
async fn a_failing_endpoint_is_disabled_once_with_its_event_unless_it_changed_since_read(
    pool: PgPool,
) {
    let store = PgStore::new(pool.clone());
    endpoint(&pool, OPERATOR_ENDPOINT_ID).await;
    let shop = id::new_id();
    endpoint(&pool, shop).await;
    sqlx::query("UPDATE endpoints SET failing_since = now() - interval '2 hours' WHERE id = $1")
        .bind(shop)
        .execute(&pool)
        .await
        .unwrap();
    let before = Utc::now() - chrono::Duration::hours(1);
    let events_for = |read: &[FailingEndpoint]| -> Vec<OperatorEvent> {
        read.iter()
            .map(|e| {
                OperatorEvent::endpoint_disabled(
                    &DisabledEndpoint {
                        endpoint_id: e.id,
                        endpoint_uid: e.uid.as_deref(),
                        url: &e.url,
                        failing_since: e.failing_since,
                        reason: DISABLED_FAILING,
                    },
                    Utc::now(),
                )
            })
            .collect()
    };
    let events_stored = || async {
        sqlx::query_scalar::<_, String>(
            "SELECT key FROM notifications WHERE event_type = 'endpoint.disabled'",
        )
        .fetch_all(&pool)
        .await
        .unwrap()
    };

    // Changed (say, its URL) after it was read: not disabled on that read.
    let stale = store.failing_endpoints(before).await.unwrap();
    assert_eq!(stale.len(), 1);
    sqlx::query(
        "UPDATE endpoints SET url = 'http://127.0.0.1:2/new', updated_at = now() WHERE id = $1",
    )
    .bind(shop)
    .execute(&pool)
    .await
    .unwrap();
    let disabled = store
        .disable_endpoints(&stale, DISABLED_FAILING, &events_for(&stale))
        .await
        .unwrap();
    assert!(disabled.is_empty());
    assert!(events_stored().await.is_empty());

    let read = store.failing_endpoints(before).await.unwrap();
    assert_eq!(read[0].url, "http://127.0.0.1:2/new");
    let events = events_for(&read);
    let disabled = store
        .disable_endpoints(&read, DISABLED_FAILING, &events)
        .await
        .unwrap();
    assert_eq!(disabled, [shop]);
    assert_eq!(events_stored().await, [events[0].key.clone()]);
    let (is_disabled, reason): (bool, Option<String>) =
        sqlx::query_as("SELECT disabled, disabled_reason FROM endpoints WHERE id = $1")
            .bind(shop)
            .fetch_one(&pool)
            .await
            .unwrap();
    assert!(is_disabled);
    assert_eq!(reason.as_deref(), Some("failing"));

    // A second process with the same read changes nothing more.
    let again = store
        .disable_endpoints(&read, DISABLED_FAILING, &events)
        .await
        .unwrap();
    assert!(again.is_empty());
    assert_eq!(events_stored().await.len(), 1);
}

#[sqlx::test]
async fn disabled_event_keys_count_seconds_as_postgresql_did_when_it_built_them(pool: PgPool) {
    for text in [
        "2026-11-23 08:00:00.5+00",
        "2026-11-23 08:00:00.499999+00",
        "2026-11-23 08:00:00.500001+00",
        "1969-12-31 23:59:58.5+00",
    ] {
        let (at, seconds): (DateTime<Utc>, i64) =
            sqlx::query_as("SELECT $1::timestamptz, extract(epoch FROM $1::timestamptz)::bigint")
                .bind(text)
                .fetch_one(&pool)
                .await
                .unwrap();
        let id = Uuid::from_u128(7);
        let event = OperatorEvent::endpoint_disabled(
            &DisabledEndpoint {
                endpoint_id: id,
                endpoint_uid: None,
                url: "",
                failing_since: at,
                reason: DISABLED_FAILING,
            },
            Utc::now(),
        );
        assert_eq!(
            event.key,
            format!("endpoint.disabled:{id}:{seconds}"),
            "{text}"
        );
    }
}
