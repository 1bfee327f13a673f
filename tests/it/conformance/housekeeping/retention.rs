//! Retention through the housekeeping seam: final rows completed before
//! the bound go with their attempts, in pages by cursor; events once their
//! deliveries are gone; keys once nothing holds them.

use chrono::{DateTime, Duration, Utc};
use hookd::domain::ordering::{KeyOrdering, OnFailure};
use hookd::domain::outcome::Outcome;
use hookd::store::endpoints::Endpoint;
use hookd::store::seams::{HousekeepingStore, ReadStore, WriteStore};

use crate::conformance::fixtures::{
    attempt, commit_new, create, endpoint, event, get, keyed, pending, record, retry_in, FAILED,
};
use crate::conformance::Backend;

pub async fn retention_deletes_final_rows_completed_before_the_bound_with_their_attempts<
    S: Backend,
>(
    store: S,
) {
    let shop = create(&store, endpoint()).await;
    let (failed, succeeded, cancelled, waiting) = (
        pending(&store, &shop).await,
        pending(&store, &shop).await,
        pending(&store, &shop).await,
        pending(&store, &shop).await,
    );
    let before_completion = Utc::now();
    record(
        &store,
        &[
            attempt(failed, shop.id, 1, FAILED),
            attempt(succeeded, shop.id, 1, Outcome::Succeeded),
        ],
    )
    .await;
    WriteStore::cancel_notification(&store, cancelled, None)
        .await
        .unwrap();
    record(&store, &[attempt(waiting, shop.id, 1, retry_in(3600))]).await;

    // Completed after the bound: kept.
    let (deleted, next) = HousekeepingStore::purge_completed(&store, before_completion, None, 100)
        .await
        .unwrap();
    assert_eq!((deleted, next), (0, None));
    let bound = Utc::now() + Duration::milliseconds(1);
    let (deleted, next) = HousekeepingStore::purge_completed(&store, bound, None, 100)
        .await
        .unwrap();
    assert_eq!((deleted, next), (3, None));
    for gone in [failed, succeeded, cancelled] {
        assert!(ReadStore::get_notification(&store, gone)
            .await
            .unwrap()
            .is_none());
        assert!(ReadStore::list_attempts(&store, gone, 0, 10)
            .await
            .unwrap()
            .is_empty());
    }
    assert!(ReadStore::get_notification(&store, waiting)
        .await
        .unwrap()
        .is_some());
    assert_eq!(
        ReadStore::list_attempts(&store, waiting, 0, 10)
            .await
            .unwrap()
            .len(),
        1
    );
}

pub async fn retention_walks_the_rows_in_pages_by_cursor<S: Backend>(store: S) {
    let shop = create(&store, endpoint()).await;
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(pending(&store, &shop).await);
    }
    let kept = pending(&store, &shop).await;
    for id in &ids {
        WriteStore::cancel_notification(&store, *id, None)
            .await
            .unwrap();
    }
    let bound = Utc::now() + Duration::milliseconds(1);
    let (deleted, next) = HousekeepingStore::purge_completed(&store, bound, None, 2)
        .await
        .unwrap();
    assert_eq!((deleted, next), (2, Some(ids[1])));
    let (deleted, next) = HousekeepingStore::purge_completed(&store, bound, next, 2)
        .await
        .unwrap();
    // Scanned the last cancelled row and the pending one: a full page.
    assert_eq!((deleted, next), (1, Some(kept)));
    let (deleted, next) = HousekeepingStore::purge_completed(&store, bound, next, 2)
        .await
        .unwrap();
    assert_eq!((deleted, next), (0, None));
    assert!(ReadStore::get_notification(&store, kept)
        .await
        .unwrap()
        .is_some());
}

pub async fn retention_deletes_events_only_once_their_deliveries_are_gone<S: Backend>(store: S) {
    let (a, b) = (
        create(&store, endpoint()).await,
        create(&store, endpoint()).await,
    );
    let (id, deliveries) = event(&store, None, "order.paid", &[&a, &b]).await;
    WriteStore::cancel_notification(&store, deliveries[0], None)
        .await
        .unwrap();
    let bound = || Utc::now() + Duration::milliseconds(1);
    HousekeepingStore::purge_completed(&store, bound(), None, 100)
        .await
        .unwrap();
    let (deleted, next) = HousekeepingStore::purge_events(&store, bound(), None, 100)
        .await
        .unwrap();
    assert_eq!((deleted, next), (0, None), "a delivery is still pending");
    assert!(ReadStore::get_event(&store, id).await.unwrap().is_some());

    WriteStore::cancel_event(&store, id).await.unwrap();
    HousekeepingStore::purge_completed(&store, bound(), None, 100)
        .await
        .unwrap();
    // Created after the bound: kept.
    let early = DateTime::from_timestamp_millis(0).unwrap();
    assert_eq!(
        HousekeepingStore::purge_events(&store, early, None, 100)
            .await
            .unwrap(),
        (0, None)
    );
    let (deleted, _) = HousekeepingStore::purge_events(&store, bound(), None, 100)
        .await
        .unwrap();
    assert_eq!(deleted, 1);
    assert!(ReadStore::get_event(&store, id).await.unwrap().is_none());
}

pub async fn retention_forgets_a_key_once_none_of_its_notifications_is_left_and_no_stored_one_holds_it<
    S: Backend,
>(
    store: S,
) {
    let shop = create(
        &store,
        Endpoint {
            ordering: KeyOrdering::Key,
            ordering_on_failure: OnFailure::Hold,
            ..endpoint()
        },
    )
    .await;
    // "gone" delivered, "held" failed (holding its key), "kept" pending.
    let gone = commit_new(&store, keyed(&shop, "gone")).await;
    let held = commit_new(&store, keyed(&shop, "held")).await;
    commit_new(&store, keyed(&shop, "kept")).await;
    record(
        &store,
        &[
            attempt(gone, shop.id, 1, Outcome::Succeeded),
            attempt(held, shop.id, 1, FAILED),
        ],
    )
    .await;
    let bound = Utc::now() + Duration::milliseconds(1);
    let (purged, _) = HousekeepingStore::purge_completed(&store, bound, None, 100)
        .await
        .unwrap();
    assert_eq!(purged, 2, "the history of gone and held");

    // A key a page, in (endpoint, key) order: "held"'s holder is gone, so
    // it holds nothing; only "kept" stays.
    let key = |name: &str| Some((shop.id, name.to_string()));
    let mut steps = Vec::new();
    let mut cursor = None;
    loop {
        let (deleted, next) = HousekeepingStore::purge_order_keys(&store, cursor, 1, bound)
            .await
            .unwrap();
        steps.push((deleted, next.clone()));
        cursor = next;
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!(
        steps,
        [
            (1, key("gone")),
            (1, key("held")),
            (0, key("kept")),
            (0, None)
        ]
    );
    assert_eq!(
        HousekeepingStore::purge_order_keys(&store, None, 100, bound)
            .await
            .unwrap(),
        (0, None)
    );

    // A key without history starts again at 1; the others go on.
    let again = get(&store, commit_new(&store, keyed(&shop, "gone")).await).await;
    assert_eq!((again.sequence, again.behind), (Some(1), None));
    let later = get(&store, commit_new(&store, keyed(&shop, "kept")).await).await;
    assert_eq!(later.sequence, Some(2));
    let again = get(&store, commit_new(&store, keyed(&shop, "held")).await).await;
    assert_eq!(
        (again.sequence, again.behind),
        (Some(1), None),
        "no longer behind its holder"
    );
}
