//! Endpoint health in the store, on both backends: a failing endpoint is
//! disabled once, with its operator event, unless it changed since it was
//! read; the keys of those events.

use chrono::{DateTime, Utc};
use hookd::domain::health::DISABLED_FAILING;
use hookd::domain::operator_event::{DisabledEndpoint, OperatorEvent};
use hookd::store::endpoints::{Endpoint, EndpointRef};
use hookd::store::health::FailingEndpoint;
use hookd::store::postgres::PgStore;
use hookd::store::seams::{ReadStore, WriteStore};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use uuid::Uuid;

use crate::backends::Backend;
use crate::conformance::fixtures::{create, endpoint, operator_on};
use crate::conformance::Backend as Store;

async fn a_failing_endpoint_is_disabled_once_with_its_event_unless_it_changed_since_read(
    backend: Backend,
) {
    match &backend {
        Backend::Postgres { pool, .. } => {
            disabled_once(&backend, &PgStore::new(pool.clone())).await
        }
        Backend::Sqlite { store, .. } => disabled_once(&backend, store).await,
    }
}
both!(a_failing_endpoint_is_disabled_once_with_its_event_unless_it_changed_since_read);

async fn disabled_once<S: Store>(backend: &Backend, store: &S) {
    operator_on(store).await;
    let shop = create(store, endpoint()).await.id;
    backend
        .fail_since(shop, Utc::now() - chrono::Duration::hours(2))
        .await;
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
    let events_stored =
        || backend.texts("SELECT key FROM notifications WHERE event_type = 'endpoint.disabled'");

    // Changed (say, its URL) after it was read: not disabled on that read.
    let stale = store.failing_endpoints(before).await.unwrap();
    assert_eq!(stale.len(), 1);
    let changed = WriteStore::modify_endpoint(
        store,
        &EndpointRef::Id(shop),
        Box::new(|e: &mut Endpoint| {
            e.url = Some("http://127.0.0.1:2/new".into());
            Ok::<(), hookd::domain::problem::Problem>(())
        }),
    )
    .await
    .unwrap();
    assert!(matches!(changed, Some(Ok(_))));
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
    let now = ReadStore::find_endpoint(store, &EndpointRef::Id(shop))
        .await
        .unwrap()
        .expect("a disabled endpoint is still there");
    assert!(now.disabled);
    assert_eq!(now.disabled_reason.as_deref(), Some("failing"));

    // A second process with the same read changes nothing more.
    let again = store
        .disable_endpoints(&read, DISABLED_FAILING, &events)
        .await
        .unwrap();
    assert!(again.is_empty());
    assert_eq!(events_stored().await.len(), 1);
}

// PostgreSQL is the oracle here: keys built before hookd computed them in
// Rust must still match, so this reads PostgreSQL's own arithmetic.
#[sqlx::test]
async fn disabled_event_keys_count_seconds_as_postgresql_did_when_it_built_them(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
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
