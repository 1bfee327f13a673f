//! Cancels (by id, by key, by event, with an endpoint spared) and retries
//! (the transitions and their refusals) through the write seam.

use chrono::{Duration, Utc};
use hookd::domain::id::new_id;
use hookd::domain::outcome::Outcome;
use hookd::domain::status::Status;
use hookd::store::cancel::Cancel;
use hookd::store::delivery::Retry;
use hookd::store::endpoints::Endpoint;
use hookd::store::notifications::NewNotification;
use hookd::store::seams::{HousekeepingStore, ReadStore, WriteStore};
use uuid::Uuid;

use super::fixtures::{
    attempt, commit, commit_new, create, endpoint, event, get, micros, notification, pending,
    pull_endpoint, record, retry_in, FAILED,
};
use super::leases::{take, MINUTE};
use super::Backend;

fn keyed(endpoint: &Endpoint, key: &str) -> NewNotification {
    NewNotification {
        key: Some(key.into()),
        ..notification(endpoint)
    }
}

pub async fn a_cancel_by_id_takes_only_a_pending_notification_not_spared<S: Backend>(store: S) {
    let shop = create(&store, endpoint()).await;
    let id = pending(&store, &shop).await;
    // Spared: left pending, and read back.
    match WriteStore::cancel_notification(&store, id, Some(shop.id))
        .await
        .unwrap()
    {
        Cancel::NotPending(row) => assert_eq!(row.status, Status::Pending),
        other => panic!("{other:?}"),
    }
    match WriteStore::cancel_notification(&store, id, Some(new_id()))
        .await
        .unwrap()
    {
        Cancel::Cancelled(row) => {
            assert_eq!(row.status, Status::Cancelled);
            assert!(row.completed_at.is_some() && row.next_attempt_at.is_none());
        }
        other => panic!("{other:?}"),
    }
    match WriteStore::cancel_notification(&store, id, None)
        .await
        .unwrap()
    {
        Cancel::NotPending(row) => assert_eq!(row.status, Status::Cancelled),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        WriteStore::cancel_notification(&store, new_id(), None)
            .await
            .unwrap(),
        Cancel::NotFound
    ));
    // Nothing of it is left to index.
    let pending_rows = HousekeepingStore::still_pending(&store, &[id])
        .await
        .unwrap();
    assert!(pending_rows.is_empty());
}

pub async fn a_cancel_by_key_takes_the_pending_ones_of_that_key_but_the_spared_endpoint<
    S: Backend,
>(
    store: S,
) {
    let (a, b, c) = (
        create(&store, endpoint()).await,
        create(&store, endpoint()).await,
        create(&store, endpoint()).await,
    );
    let items: Vec<NewNotification> = [&a, &b, &c]
        .into_iter()
        .map(|e| keyed(e, "order-9"))
        .collect();
    let ids: Vec<Uuid> = items.iter().map(|n| n.id).collect();
    commit(&store, items).await;
    let other_key = commit_new(&store, keyed(&a, "order-10")).await;

    let on_a = WriteStore::cancel_by_key(&store, "order-9", Some(a.id), None)
        .await
        .unwrap();
    assert_eq!(on_a, [ids[0]]);
    let rest = WriteStore::cancel_by_key(&store, "order-9", None, Some(c.id))
        .await
        .unwrap();
    assert_eq!(
        rest,
        [ids[1]],
        "only pending ones, not the spared endpoint's"
    );
    assert_eq!(get(&store, ids[2]).await.status, Status::Pending);
    assert_eq!(get(&store, other_key).await.status, Status::Pending);
    let last = WriteStore::cancel_by_key(&store, "order-9", None, None)
        .await
        .unwrap();
    assert_eq!(last, [ids[2]]);
    assert!(WriteStore::cancel_by_key(&store, "order-9", None, None)
        .await
        .unwrap()
        .is_empty());
}

pub async fn cancelling_an_event_cancels_its_pending_deliveries<S: Backend>(store: S) {
    let (a, b) = (
        create(&store, endpoint()).await,
        create(&store, endpoint()).await,
    );
    let (id, deliveries) = event(&store, None, "order.paid", &[&a, &b]).await;
    record(
        &store,
        &[attempt(deliveries[0], a.id, 1, Outcome::Succeeded)],
    )
    .await;
    let cancelled = WriteStore::cancel_event(&store, id).await.unwrap();
    assert_eq!(cancelled, Some(vec![deliveries[1]]));
    let mut counts = ReadStore::event_counts(&store, id).await.unwrap();
    counts.sort_by_key(|(status, _)| status.as_str());
    assert_eq!(counts, [(Status::Cancelled, 1), (Status::Succeeded, 1)]);
    assert_eq!(
        WriteStore::cancel_event(&store, id).await.unwrap(),
        Some(vec![])
    );
    assert_eq!(
        WriteStore::cancel_event(&store, new_id()).await.unwrap(),
        None
    );
}

pub async fn a_failed_notification_is_retried_as_a_new_series_from_now<S: Backend>(store: S) {
    let shop = create(&store, endpoint()).await;
    let id = pending(&store, &shop).await;
    record(&store, &[attempt(id, shop.id, 1, retry_in(-1))]).await;
    record(&store, &[attempt(id, shop.id, 2, FAILED)]).await;
    HousekeepingStore::clear_needs_index(&store, &[id])
        .await
        .unwrap();
    let now = Utc::now();
    match WriteStore::retry_notification(&store, id, now, true)
        .await
        .unwrap()
    {
        Retry::Retried(row) => {
            assert_eq!(
                (row.status, row.attempts, row.series_start),
                (Status::Pending, 2, 2)
            );
            assert_eq!(row.next_attempt_at.map(micros), Some(micros(now)));
            assert!(row.completed_at.is_none());
            assert_eq!(row.body, get(&store, id).await.body, "read with its body");
        }
        other => panic!("{other:?}"),
    }
    let due = HousekeepingStore::still_pending(&store, &[id])
        .await
        .unwrap();
    assert_eq!(
        due.iter()
            .map(|(i, at)| (*i, micros(*at)))
            .collect::<Vec<_>>(),
        [(id, micros(now))]
    );
    // Its next attempt is number 3 of the series starting after 2.
    let mut next = attempt(id, shop.id, 3, Outcome::Succeeded);
    next.expected.series_start = 2;
    assert_eq!(record(&store, &[next]).await, [id]);
}

pub async fn a_retry_refuses_final_in_flight_and_unknown_notifications<S: Backend>(store: S) {
    let shop = create(&store, endpoint()).await;
    let now = Utc::now();
    let delivered = pending(&store, &shop).await;
    record(
        &store,
        &[attempt(delivered, shop.id, 1, Outcome::Succeeded)],
    )
    .await;
    let cancelled = pending(&store, &shop).await;
    WriteStore::cancel_notification(&store, cancelled, None)
        .await
        .unwrap();
    let in_flight = pending(&store, &shop).await;
    for id in [delivered, cancelled] {
        let refused = WriteStore::retry_notification(&store, id, now, false)
            .await
            .unwrap();
        assert!(
            matches!(refused, Retry::NotRetryable(ref row) if row.id == id),
            "{refused:?}"
        );
    }
    let refused = WriteStore::retry_notification(&store, in_flight, now, true)
        .await
        .unwrap();
    assert!(matches!(refused, Retry::InFlight(_)), "{refused:?}");
    assert!(matches!(
        WriteStore::retry_notification(&store, new_id(), now, false)
            .await
            .unwrap(),
        Retry::NotFound
    ));

    // A pulled one under a running lease is in flight whatever the index
    // says; one whose lease ran out unrecorded is told apart.
    let puller = create(&store, pull_endpoint()).await;
    let leased = pending(&store, &puller).await;
    take(&store, puller.id, 10, MINUTE).await;
    let refused = WriteStore::retry_notification(&store, leased, now, false)
        .await
        .unwrap();
    assert!(
        matches!(refused, Retry::InFlight(ref row) if row.leased),
        "{refused:?}"
    );
    let ran_out = pending(&store, &puller).await;
    take(&store, puller.id, 10, std::time::Duration::ZERO).await;
    let refused = WriteStore::retry_notification(&store, ran_out, now, false)
        .await
        .unwrap();
    assert!(matches!(refused, Retry::LeaseRanOut(_)), "{refused:?}");
}

pub async fn a_pending_notification_not_in_flight_is_retried_at_once<S: Backend>(store: S) {
    let shop = create(&store, endpoint()).await;
    let later = Utc::now() + Duration::hours(1);
    let id = commit_new(&store, super::fixtures::due_at(&shop, later)).await;
    let now = Utc::now();
    match WriteStore::retry_notification(&store, id, now, false)
        .await
        .unwrap()
    {
        Retry::Retried(row) => {
            assert_eq!(row.status, Status::Pending);
            assert_eq!(row.next_attempt_at.map(micros), Some(micros(now)));
        }
        other => panic!("{other:?}"),
    }
}
