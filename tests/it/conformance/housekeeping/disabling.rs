//! The disabling of failing endpoints through the housekeeping seam: one
//! failing past the threshold is disabled once, with its operator event,
//! unless it changed since it was read; re-enabled, it forgets its
//! failures.

use chrono::{Duration, Utc};
use hookd::domain::health::DISABLED_FAILING;
use hookd::domain::operator_event::{DisabledEndpoint, OperatorEvent, OPERATOR_ENDPOINT_ID};
use hookd::store::endpoints::{Endpoint, EndpointRef};
use hookd::store::health::FailingEndpoint;
use hookd::store::notifications::NotificationFilter;
use hookd::store::recording::AttemptRecord;
use hookd::store::seams::{HousekeepingStore, ReadStore, WriteStore};

use crate::conformance::fixtures::{
    attempt, create, endpoint, operator_on, pending, record, retry_in,
};
use crate::conformance::Backend;

fn disabled_events(read: &[FailingEndpoint]) -> Vec<OperatorEvent> {
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
}

/// An endpoint failing since `ago`, by a recorded failure.
async fn failing_for<S: Backend>(store: &S, ago: Duration) -> Endpoint {
    let shop = create(store, endpoint()).await;
    let id = pending(store, &shop).await;
    let failure = AttemptRecord {
        started_at: Utc::now() - ago,
        due_at: None,
        ..attempt(id, shop.id, 1, retry_in(60))
    };
    record(store, &[failure]).await;
    shop
}

async fn operator_events<S: Backend>(store: &S) -> Vec<String> {
    ReadStore::list_notifications(
        store,
        &NotificationFilter {
            endpoint_id: Some(OPERATOR_ENDPOINT_ID),
            limit: 10,
            ..NotificationFilter::default()
        },
    )
    .await
    .unwrap()
    .into_iter()
    .filter_map(|n| n.key)
    .collect()
}

pub async fn a_failing_endpoint_is_disabled_once_with_its_event_unless_it_changed<S: Backend>(
    store: S,
) {
    operator_on(&store).await;
    let shop = failing_for(&store, Duration::hours(2)).await;
    failing_for(&store, Duration::minutes(5)).await;
    let threshold = Utc::now() - Duration::hours(1);
    let stale = HousekeepingStore::failing_endpoints(&store, threshold)
        .await
        .unwrap();
    assert_eq!(stale.iter().map(|e| e.id).collect::<Vec<_>>(), [shop.id]);
    assert_eq!(stale[0].url, "http://127.0.0.1:1/hook");

    // Changed after it was read: that read disables nothing.
    WriteStore::modify_endpoint(
        &store,
        &EndpointRef::Id(shop.id),
        Box::new(|e: &mut Endpoint| {
            e.description = "changed".into();
            Ok(())
        }),
    )
    .await
    .unwrap()
    .unwrap()
    .unwrap();
    let none = HousekeepingStore::disable_endpoints(
        &store,
        &stale,
        DISABLED_FAILING,
        &disabled_events(&stale),
    )
    .await
    .unwrap();
    assert!(none.is_empty());
    assert!(operator_events(&store).await.is_empty());

    let read = HousekeepingStore::failing_endpoints(&store, threshold)
        .await
        .unwrap();
    let events = disabled_events(&read);
    let disabled = HousekeepingStore::disable_endpoints(&store, &read, DISABLED_FAILING, &events)
        .await
        .unwrap();
    assert_eq!(disabled, [shop.id]);
    assert_eq!(operator_events(&store).await, [events[0].key.clone()]);
    let found = ReadStore::find_endpoint(&store, &EndpointRef::Id(shop.id))
        .await
        .unwrap()
        .unwrap();
    assert!(found.disabled);
    assert_eq!(found.disabled_reason.as_deref(), Some(DISABLED_FAILING));
    // A second process with the same read changes nothing more.
    let again = HousekeepingStore::disable_endpoints(&store, &read, DISABLED_FAILING, &events)
        .await
        .unwrap();
    assert!(again.is_empty());
    assert_eq!(operator_events(&store).await.len(), 1);
    assert!(HousekeepingStore::failing_endpoints(&store, threshold)
        .await
        .unwrap()
        .is_empty());
    // The operator endpoint is hookd's own: no listing shows it.
    let listed = ReadStore::list_endpoints(&store, None, 10, None)
        .await
        .unwrap();
    assert!(listed.iter().all(|e| e.id != OPERATOR_ENDPOINT_ID));
}

pub async fn re_enabling_a_disabled_endpoint_forgets_its_failures<S: Backend>(store: S) {
    let shop = failing_for(&store, Duration::hours(2)).await;
    let read = HousekeepingStore::failing_endpoints(&store, Utc::now())
        .await
        .unwrap();
    HousekeepingStore::disable_endpoints(&store, &read, DISABLED_FAILING, &[])
        .await
        .unwrap();
    let enabled = WriteStore::modify_endpoint(
        &store,
        &EndpointRef::Id(shop.id),
        Box::new(|e: &mut Endpoint| {
            e.disabled = false;
            Ok(())
        }),
    )
    .await
    .unwrap()
    .unwrap()
    .unwrap();
    assert!(!enabled.disabled);
    assert_eq!(
        (enabled.disabled_reason, enabled.failing_since),
        (None, None)
    );
    let found = ReadStore::find_endpoint(&store, &EndpointRef::Id(shop.id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((found.disabled_reason, found.failing_since), (None, None));
    assert!(HousekeepingStore::failing_endpoints(&store, Utc::now())
        .await
        .unwrap()
        .is_empty());
}
