//! Notifications through the write and read seams: the store's side of
//! idempotency, reads and lists, cancels, retries and the marks of rows
//! the due index could not take.

use std::collections::BTreeMap;

use chrono::{Duration, Utc};
use hookd::domain::id::new_id;
use hookd::domain::status::Status;
use hookd::store::cancel::Cancel;
use hookd::store::delivery::Retry;
use hookd::store::notifications::{Inserted, NewNotification, NotificationFilter};
use hookd::store::seams::{HousekeepingStore, PullStore, ReadStore, WriteStore};
use uuid::Uuid;

use super::fixtures::{
    attempt, commit, commit_new, create, endpoint, event, get, micros, notification, pending,
    pull_endpoint, record, retry_in, FAILED,
};
use super::Backend;
use hookd::domain::outcome::Outcome;

fn keyed(endpoint: &hookd::store::endpoints::Endpoint, key: &str, body: &str) -> NewNotification {
    NewNotification {
        key: Some(key.into()),
        body: body.as_bytes().to_vec(),
        ..notification(endpoint)
    }
}

fn sorted(mut ids: Vec<Uuid>) -> Vec<Uuid> {
    ids.sort();
    ids
}

pub async fn a_committed_notification_reads_back_as_given<S: Backend>(store: S) {
    let shop = create(&store, endpoint()).await;
    let given = NewNotification {
        key: Some("order-1".into()),
        headers: BTreeMap::from([("x-trace".to_string(), "t1".to_string())]),
        url: Some("http://127.0.0.1:1/hook/orders".into()),
        ..notification(&shop)
    };
    let inserted = commit(&store, vec![given.clone()]).await;
    let [Inserted::Created(created)] = inserted.as_slice() else {
        panic!("not created: {inserted:?}");
    };
    assert_eq!(created.id, given.id);
    assert_eq!(created.status, Status::Pending);

    let read = get(&store, given.id).await;
    assert_eq!(read.endpoint_id, shop.id);
    assert_eq!(read.key.as_deref(), Some("order-1"));
    assert_eq!(read.event_type.as_deref(), Some("order.paid"));
    assert_eq!(read.content_type, "application/json");
    assert_eq!(read.body, given.body);
    assert_eq!(read.headers.0, given.headers);
    assert_eq!(read.schedule(), given.schedule);
    assert_eq!(
        (read.status, read.attempts, read.series_start),
        (Status::Pending, 0, 0)
    );
    assert_eq!(
        read.next_attempt_at.map(micros),
        Some(micros(given.next_attempt_at))
    );
    assert_eq!(micros(read.deliver_at), micros(given.deliver_at));
    assert_eq!(read.url, given.url);
    assert!(!read.pull && !read.leased);
    assert_eq!(micros(read.created_at), micros(created.created_at));
    assert!(read.completed_at.is_none() && read.last_attempt_at.is_none());
    assert!(ReadStore::get_notification(&store, new_id())
        .await
        .unwrap()
        .is_none());
}

pub async fn the_same_key_and_payload_gives_the_existing_row_and_another_payload_a_conflict<
    S: Backend,
>(
    store: S,
) {
    let shop = create(&store, endpoint()).await;
    let first = commit_new(&store, keyed(&shop, "order-1", r#"{"a":1,"b":2}"#)).await;
    // The same JSON value serialised otherwise is the same payload.
    let results = commit(
        &store,
        vec![
            keyed(&shop, "order-1", r#"{ "b": 2, "a": 1 }"#),
            keyed(&shop, "order-1", r#"{"a":1,"b":3}"#),
            keyed(&shop, "order-2", r#"{"a":1}"#),
        ],
    )
    .await;
    match results.as_slice() {
        [Inserted::Existing(same), Inserted::KeyConflict(other), Inserted::Created(new)] => {
            assert_eq!(same.id, first);
            assert_eq!(same.body, br#"{"a":1,"b":2}"#, "the stored payload");
            assert_eq!(other.id, first);
            assert_ne!(new.id, first);
        }
        other => panic!("{other:?}"),
    }
    let listed = ReadStore::list_notifications(
        &store,
        &NotificationFilter {
            key: Some("order-1".into()),
            limit: 10,
            ..NotificationFilter::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(listed.iter().map(|n| n.id).collect::<Vec<_>>(), [first]);
}

pub async fn a_key_is_unique_per_endpoint_only<S: Backend>(store: S) {
    let (a, b) = (
        create(&store, endpoint()).await,
        create(&store, endpoint()).await,
    );
    let results = commit(
        &store,
        vec![keyed(&a, "order-1", "{}"), keyed(&b, "order-1", "{}")],
    )
    .await;
    assert!(matches!(
        results.as_slice(),
        [Inserted::Created(_), Inserted::Created(_)]
    ));
}

pub async fn notifications_list_newest_first_filtered_without_payloads<S: Backend>(store: S) {
    let (a, b) = (
        create(&store, endpoint()).await,
        create(&store, endpoint()).await,
    );
    let first = pending(&store, &a).await;
    let second = commit_new(
        &store,
        NewNotification {
            key: Some("k".into()),
            event_type: Some("invoice.sent".into()),
            ..notification(&a)
        },
    )
    .await;
    let third = pending(&store, &b).await;
    let (event_id, deliveries) = event(&store, None, "invoice.sent", &[&a]).await;
    record(&store, &[attempt(first, a.id, 1, FAILED)]).await;

    let list = |filter: NotificationFilter| {
        let store = &store;
        async move {
            let rows = ReadStore::list_notifications(store, &filter).await.unwrap();
            assert!(rows.iter().all(|n| n.body.is_empty()), "no payloads");
            rows.into_iter().map(|n| n.id).collect::<Vec<_>>()
        }
    };
    let all = NotificationFilter {
        limit: 10,
        ..NotificationFilter::default()
    };
    assert_eq!(
        list(all.clone()).await,
        [deliveries[0], third, second, first]
    );
    let page = NotificationFilter {
        limit: 2,
        ..all.clone()
    };
    assert_eq!(list(page.clone()).await, [deliveries[0], third]);
    let next = NotificationFilter {
        before: Some(third),
        ..page
    };
    assert_eq!(list(next).await, [second, first]);
    let of_a = NotificationFilter {
        endpoint_id: Some(a.id),
        ..all.clone()
    };
    assert_eq!(list(of_a).await, [deliveries[0], second, first]);
    let failed = NotificationFilter {
        status: Some(Status::Failed),
        ..all.clone()
    };
    assert_eq!(list(failed).await, [first]);
    let by_key = NotificationFilter {
        key: Some("k".into()),
        ..all.clone()
    };
    assert_eq!(list(by_key).await, [second]);
    // An event's delivery has its event's type.
    let by_type = NotificationFilter {
        event_type: Some("invoice.sent".into()),
        ..all.clone()
    };
    assert_eq!(list(by_type).await, [deliveries[0], second]);
    let by_event = NotificationFilter {
        event_id: Some(event_id),
        ..all
    };
    assert_eq!(list(by_event).await, deliveries);
}

pub async fn notification_url_tells_unknown_from_none<S: Backend>(store: S) {
    let shop = create(&store, endpoint()).await;
    let plain = pending(&store, &shop).await;
    let own = commit_new(
        &store,
        NewNotification {
            url: Some("http://127.0.0.1:1/hook/x".into()),
            ..notification(&shop)
        },
    )
    .await;
    assert_eq!(
        ReadStore::notification_url(&store, plain).await.unwrap(),
        Some(None)
    );
    assert_eq!(
        ReadStore::notification_url(&store, own).await.unwrap(),
        Some(Some("http://127.0.0.1:1/hook/x".into()))
    );
    assert_eq!(
        ReadStore::notification_url(&store, new_id()).await.unwrap(),
        None
    );
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
        .map(|e| keyed(e, "order-9", "{}"))
        .collect();
    let ids: Vec<Uuid> = items.iter().map(|n| n.id).collect();
    commit(&store, items).await;
    let other_key = commit_new(&store, keyed(&a, "order-10", "{}")).await;

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
    let next = hookd::store::recording::AttemptRecord {
        series_start: 2,
        ..attempt(id, shop.id, 3, Outcome::Succeeded)
    };
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
    take_all(&store, puller.id, std::time::Duration::from_secs(60)).await;
    let refused = WriteStore::retry_notification(&store, leased, now, false)
        .await
        .unwrap();
    assert!(
        matches!(refused, Retry::InFlight(ref row) if row.leased),
        "{refused:?}"
    );
    let ran_out = pending(&store, &puller).await;
    take_all(&store, puller.id, std::time::Duration::ZERO).await;
    let refused = WriteStore::retry_notification(&store, ran_out, now, false)
        .await
        .unwrap();
    assert!(matches!(refused, Retry::LeaseRanOut(_)), "{refused:?}");
}

/// Takes every free due row of a pull endpoint under `lease`.
async fn take_all<S: Backend>(store: &S, endpoint_id: Uuid, lease: std::time::Duration) {
    PullStore::take(
        store,
        endpoint_id,
        100,
        lease,
        Box::new(|row| hookd::store::pull_due::Pick {
            record: None,
            take: row
                .lease_id
                .is_none()
                .then_some(row.next_attempt_at)
                .flatten(),
        }),
    )
    .await
    .unwrap();
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

pub async fn marks_for_indexing_are_kept_for_pending_rows_until_cleared<S: Backend>(store: S) {
    let shop = create(&store, endpoint()).await;
    let (a, b, done) = (
        pending(&store, &shop).await,
        pending(&store, &shop).await,
        pending(&store, &shop).await,
    );
    record(&store, &[attempt(done, shop.id, 1, Outcome::Succeeded)]).await;
    WriteStore::mark_needs_index(&store, &[a, b, done])
        .await
        .unwrap();
    let owed = HousekeepingStore::needing_index(&store, 10).await.unwrap();
    assert_eq!(
        sorted(owed.iter().map(|(id, _)| *id).collect()),
        sorted(vec![a, b]),
        "not a final one"
    );
    let due_a = get(&store, a).await.next_attempt_at;
    assert!(owed.contains(&(a, due_a)));
    assert_eq!(
        HousekeepingStore::needing_index(&store, 1)
            .await
            .unwrap()
            .len(),
        1
    );

    // Marked, then final: owed without a due time, only the mark to clear.
    record(&store, &[attempt(b, shop.id, 1, Outcome::Succeeded)]).await;
    let owed = HousekeepingStore::needing_index(&store, 10).await.unwrap();
    assert!(owed.contains(&(b, None)), "{owed:?}");

    HousekeepingStore::clear_needs_index(&store, &[a, b])
        .await
        .unwrap();
    assert!(HousekeepingStore::needing_index(&store, 10)
        .await
        .unwrap()
        .is_empty());
    // A cancel leaves nothing to index either.
    WriteStore::mark_needs_index(&store, &[a]).await.unwrap();
    WriteStore::cancel_notification(&store, a, None)
        .await
        .unwrap();
    assert!(HousekeepingStore::needing_index(&store, 10)
        .await
        .unwrap()
        .is_empty());
}
