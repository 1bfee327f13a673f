//! Notifications through the write and read seams: the store's side of
//! idempotency, reads and lists, and the marks of rows the due index
//! could not take (cancels and retries: `cancel_retry`).

use std::collections::BTreeMap;

use hookd::domain::id::new_id;
use hookd::domain::status::Status;
use hookd::store::notifications::{
    Inserted, ListOrder, MostAttempted, NewNotification, NotificationFilter,
};
use hookd::store::seams::{HousekeepingStore, ReadStore, WriteStore};
use uuid::Uuid;

use super::fixtures::{
    attempt, commit, commit_new, create, endpoint, event, get, micros, notification, pending,
    record, retry_in, FAILED,
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
    assert_eq!(read.headers, given.headers);
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

/// A batch as large as the API takes (`MAX_BATCH`), its rows with headers
/// and a URL of their own, commits whole: the SQLite store writes a batch
/// in one multi-row statement (`store::sqlite::returning`), whose bound
/// values must stay under SQLite's limit, and a key met in it makes it
/// write the run again to learn which rows it created.
pub async fn a_full_batch_commits_every_row_and_a_key_met_in_it_is_found_not_created<S: Backend>(
    store: S,
) {
    use hookd::service::notifications::MAX_BATCH;
    let shop = create(&store, endpoint()).await;
    let own_headers_and_url = |i: usize| NewNotification {
        headers: BTreeMap::from([("x-trace".to_string(), format!("t{i}"))]),
        url: Some(format!("http://127.0.0.1:1/hook/{i}")),
        ..notification(&shop)
    };
    let given: Vec<NewNotification> = (0..MAX_BATCH).map(own_headers_and_url).collect();
    let inserted = commit(&store, given.clone()).await;
    assert_eq!(inserted.len(), MAX_BATCH);
    for (result, item) in inserted.iter().zip(&given) {
        assert!(
            matches!(result, Inserted::Created(row) if row.id == item.id),
            "{result:?}"
        );
    }
    for item in [&given[0], &given[MAX_BATCH / 2], &given[MAX_BATCH - 1]] {
        let read = get(&store, item.id).await;
        assert_eq!(
            (&read.body, &read.headers, &read.url),
            (&item.body, &item.headers, &item.url)
        );
    }

    // One key of the batch, stored before it.
    let at = MAX_BATCH / 2;
    let met = commit_new(&store, keyed(&shop, &format!("order-{at}"), "{}")).await;
    let keyed_batch: Vec<NewNotification> = (0..MAX_BATCH)
        .map(|i| keyed(&shop, &format!("order-{i}"), "{}"))
        .collect();
    let inserted = commit(&store, keyed_batch.clone()).await;
    assert_eq!(inserted.len(), MAX_BATCH);
    for (i, (result, item)) in inserted.iter().zip(&keyed_batch).enumerate() {
        match result {
            Inserted::Existing(row) if i == at => assert_eq!(row.id, met),
            Inserted::Created(row) if i != at => assert_eq!(row.id, item.id),
            other => panic!("item {i}: {other:?}"),
        }
    }
    assert!(ReadStore::get_notification(&store, keyed_batch[at].id)
        .await
        .unwrap()
        .is_none());
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

pub async fn notifications_list_newest_or_oldest_first_filtered_without_payloads<S: Backend>(
    store: S,
) {
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
        cursor: Some(third),
        ..page.clone()
    };
    assert_eq!(list(next).await, [second, first]);
    // Oldest first: the same rows the other way, a cursor past them.
    let oldest = NotificationFilter {
        order: ListOrder::OldestFirst,
        ..page
    };
    assert_eq!(list(oldest.clone()).await, [first, second]);
    let next = NotificationFilter {
        cursor: Some(second),
        ..oldest
    };
    assert_eq!(list(next).await, [third, deliveries[0]]);
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

/// One endpoint's notifications attempted more than once, most attempts
/// first, then newest (`order=attempts`): those attempted once are not in
/// it, a cursor of `(attempts, id)` goes on past its row, a status is
/// checked on the rows read, and a slice under `MAX_EXAMINED` has no
/// frontier.
pub async fn the_most_attempted_come_first_and_those_attempted_once_not_at_all<S: Backend>(
    store: S,
) {
    let (a, b) = (
        create(&store, endpoint()).await,
        create(&store, endpoint()).await,
    );
    let once = pending(&store, &a).await;
    let twice = pending(&store, &a).await;
    let thrice = pending(&store, &a).await;
    let also_twice = pending(&store, &a).await;
    let elsewhere = pending(&store, &b).await;
    let later = retry_in(60);
    record(
        &store,
        &[once, twice, thrice, also_twice]
            .map(|id| attempt(id, a.id, 1, later))
            .into_iter()
            .chain([attempt(elsewhere, b.id, 1, later)])
            .collect::<Vec<_>>(),
    )
    .await;
    record(
        &store,
        &[
            attempt(twice, a.id, 2, later),
            attempt(thrice, a.id, 2, later),
            attempt(also_twice, a.id, 2, FAILED),
            attempt(elsewhere, b.id, 2, FAILED),
        ],
    )
    .await;
    record(&store, &[attempt(thrice, a.id, 3, FAILED)]).await;

    let listed = |filter: MostAttempted| {
        let store = &store;
        async move {
            let rows = ReadStore::most_attempted(store, &filter).await.unwrap();
            assert!(rows.iter().all(|n| n.body.is_empty()), "no payloads");
            rows.into_iter()
                .map(|n| (n.attempts, n.id))
                .collect::<Vec<_>>()
        }
    };
    let all = MostAttempted {
        endpoint_id: a.id,
        limit: 10,
        ..MostAttempted::default()
    };
    assert_eq!(
        listed(all.clone()).await,
        [(3, thrice), (2, also_twice), (2, twice)]
    );
    let past = MostAttempted {
        cursor: Some((2, also_twice)),
        ..all.clone()
    };
    assert_eq!(listed(past).await, [(2, twice)]);
    let failed = MostAttempted {
        status: Some(Status::Failed),
        ..all.clone()
    };
    assert_eq!(
        ReadStore::most_attempted_frontier(&store, &failed)
            .await
            .unwrap(),
        None,
        "fewer than a slice"
    );
    assert_eq!(listed(failed).await, [(3, thrice), (2, also_twice)]);
    let up_to = MostAttempted {
        from: Some((2, also_twice)),
        ..all
    };
    assert_eq!(
        listed(up_to).await,
        [(3, thrice), (2, also_twice)],
        "up to the frontier, itself included"
    );
}
