//! Ordering's side of the stores (docs/design.md §17): what a recorded end
//! releases, and what waits for a notification that retention removed.

use chrono::{DateTime, Duration, Utc};
use hookd::domain::ordering::{KeyOrdering, OnFailure};
use hookd::domain::outcome::Outcome;
use hookd::domain::status::Status;
use hookd::store::endpoints::Endpoint;
use hookd::store::notifications::{Inserted, NewNotification};
use hookd::store::recording::Recorded;
use hookd::store::seams::{DeliveryStore, HousekeepingStore, PendingRows};
use uuid::Uuid;

use super::fixtures::{
    attempt, commit, commit_new, create, endpoint, get, keyed, micros, record, retry_in, FAILED,
};
use super::Backend;

/// A stored endpoint ordered by key, with `on_failure`.
async fn ordered<S: Backend>(store: &S, on_failure: OnFailure) -> Endpoint {
    create(
        store,
        Endpoint {
            ordering: KeyOrdering::Key,
            ordering_on_failure: on_failure,
            ..endpoint()
        },
    )
    .await
}

pub async fn a_notification_waiting_for_a_holder_retention_removed_is_its_keys_head_again<
    S: Backend,
>(
    store: S,
) {
    let shop = ordered(&store, OnFailure::Hold).await;
    let holder = commit_new(&store, keyed(&shop, "order-7")).await;
    record(&store, &[attempt(holder, shop.id, 1, FAILED)]).await;
    let second = commit_new(&store, keyed(&shop, "order-7")).await;
    let third = commit_new(&store, keyed(&shop, "order-7")).await;
    assert_eq!(get(&store, second).await.behind, Some(holder));
    let released = HousekeepingStore::release_stranded(&store, None, 100).await;
    assert_eq!(released.unwrap().0, 0, "a stored holder holds its key");

    let bound = Utc::now() + Duration::milliseconds(1);
    let (purged, _) = HousekeepingStore::purge_completed(&store, bound, None, 100)
        .await
        .unwrap();
    assert_eq!(purged, 1, "the holder");
    let released = HousekeepingStore::release_stranded(&store, None, 100).await;
    assert_eq!(released.unwrap().0, 1);
    assert_eq!(get(&store, second).await.behind, None, "the key's head");
    assert_eq!(get(&store, third).await.behind, Some(second), "in order");
    let owed: Vec<Uuid> = HousekeepingStore::needing_index(&store, 100)
        .await
        .unwrap()
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    assert!(owed.contains(&second), "owed to the due index: {owed:?}");
    let released = HousekeepingStore::release_stranded(&store, None, 100).await;
    assert_eq!(released.unwrap().0, 0, "once");
}

/// Housekeeping looks for stranded and orphaned notifications a page at a
/// time (`release_stranded`), so that a tick beside millions waiting costs
/// what it costs beside a few: each page goes on after the last, and the
/// one that reaches the end says so, for the walk to start again.
pub async fn the_walk_for_orphans_goes_a_page_at_a_time_and_comes_round<S: Backend>(store: S) {
    let shop = ordered(&store, OnFailure::Hold).await;
    let mut waiting = Vec::new();
    for key in ["order-1", "order-2", "order-3"] {
        let holder = commit_new(&store, keyed(&shop, key)).await;
        record(&store, &[attempt(holder, shop.id, 1, FAILED)]).await;
        waiting.push(commit_new(&store, keyed(&shop, key)).await);
    }
    let bound = Utc::now() + Duration::milliseconds(1);
    let (purged, _) = HousekeepingStore::purge_completed(&store, bound, None, 100)
        .await
        .unwrap();
    assert_eq!(purged, 3, "the holders");

    let (moved, next) = HousekeepingStore::release_stranded(&store, None, 2)
        .await
        .unwrap();
    assert_eq!(moved, 2, "the first page's two");
    assert!(next.is_some(), "the walk goes on");
    let (moved, next) = HousekeepingStore::release_stranded(&store, next, 2)
        .await
        .unwrap();
    assert_eq!((moved, next), (1, None), "the last one, and the end");
    for id in waiting {
        assert_eq!(get(&store, id).await.behind, None, "each its key's head");
    }
}

/// The walks that fill the due index (a rebuild's pages, the overdue
/// sweep's pages and its re-read, a heal after a failover) leave out a
/// notification that waits behind its key: nothing would send it, and a
/// claim of it read as an attempt under way, which let a retry through.
/// Once its key releases it, they find it.
pub async fn the_walks_that_fill_the_index_leave_out_one_waiting_behind_its_key<S: Backend>(
    store: S,
) {
    let shop = ordered(&store, OnFailure::Continue).await;
    let head = commit_new(&store, keyed(&shop, "order-9")).await;
    let second = commit_new(&store, keyed(&shop, "order-9")).await;
    for (walk, found) in index_walks(&store, &[head, second]).await {
        assert!(found.contains(&head), "{walk}: the key's head");
        assert!(!found.contains(&second), "{walk}: not the one behind it");
    }
    record(&store, &[attempt(head, shop.id, 1, Outcome::Succeeded)]).await;
    for (walk, found) in index_walks(&store, &[head, second]).await {
        assert!(
            found.contains(&second),
            "{walk}: released by the head's success"
        );
    }
}

/// What each walk that fills the due index finds among the stored rows
/// (the re-read among `ids`).
async fn index_walks<S: Backend>(store: &S, ids: &[Uuid]) -> [(&'static str, Vec<Uuid>); 4] {
    let found = |rows: Vec<(Uuid, DateTime<Utc>)>| -> Vec<Uuid> {
        rows.into_iter().map(|(id, _)| id).collect()
    };
    let later = Utc::now() + Duration::hours(1);
    let rebuild = PendingRows::pending_page(store, None, 100).await.unwrap();
    let sweep = HousekeepingStore::pending_due_before(store, None, later, 100)
        .await
        .unwrap();
    let reread = HousekeepingStore::still_pending(store, ids).await.unwrap();
    let heal = HousekeepingStore::pending_created_after(store, Uuid::nil(), 100)
        .await
        .unwrap();
    [
        ("rebuild", found(rebuild)),
        ("sweep", found(sweep)),
        ("re-read", found(reread)),
        ("heal", found(heal)),
    ]
}

/// What the housekeeper still owes to the due index.
async fn owed<S: Backend>(store: &S) -> Vec<Uuid> {
    HousekeepingStore::needing_index(store, 100)
        .await
        .unwrap()
        .into_iter()
        .map(|(id, _)| id)
        .collect()
}

/// Recording the end of a key's head names the notification it released
/// (its key's next, with its due time), taken off the housekeeper's list
/// in the same transaction; a retry of the head releases nothing, nor does
/// an end recorded as not ordered.
pub async fn recording_the_end_of_a_keys_head_names_the_next_one_it_released<S: Backend>(store: S) {
    let shop = ordered(&store, OnFailure::Continue).await;
    let head = commit_new(&store, keyed(&shop, "order-8")).await;
    let next = commit_new(&store, keyed(&shop, "order-8")).await;
    let ordered = |number, outcome| {
        let mut record = attempt(head, shop.id, number, outcome);
        record.ordered = true;
        record
    };

    let retried = DeliveryStore::record_attempts(&store, &[ordered(1, retry_in(60))], &[])
        .await
        .unwrap();
    assert_eq!(retried.moved, [head]);
    assert_eq!(retried.released, [], "a retry ends nothing");
    assert_eq!(get(&store, next).await.behind, Some(head));

    let ended = DeliveryStore::record_attempts(&store, &[ordered(2, Outcome::Succeeded)], &[])
        .await
        .unwrap();
    assert_eq!(ended.moved, [head]);
    let released: Vec<Uuid> = ended.released.iter().map(|(id, _)| *id).collect();
    assert_eq!(released, [next], "its key's next");
    let due = get(&store, next).await.next_attempt_at.unwrap();
    assert_eq!(
        ended.released[0].1.timestamp_micros(),
        due.timestamp_micros(),
        "with its due time"
    );
    assert!(
        !owed(&store).await.contains(&next),
        "taken off the housekeeper's list"
    );

    let other = commit_new(&store, keyed(&shop, "order-9")).await;
    let after = commit_new(&store, keyed(&shop, "order-9")).await;
    let unordered = DeliveryStore::record_attempts(
        &store,
        &[attempt(other, shop.id, 1, Outcome::Succeeded)],
        &[],
    )
    .await
    .unwrap();
    assert_eq!(unordered.moved, [other]);
    assert_eq!(unordered.released, [], "not recorded as ordered");
    assert!(
        owed(&store).await.contains(&after),
        "left to the housekeeper"
    );
}

/// `notification`'s first attempt to `endpoint`, a success, recorded as
/// ordered.
async fn record_ordered_success<S: Backend>(
    store: &S,
    notification: Uuid,
    endpoint: &Endpoint,
) -> Recorded {
    let mut success = attempt(notification, endpoint.id, 1, Outcome::Succeeded);
    success.ordered = true;
    DeliveryStore::record_attempts(store, &[success], &[])
        .await
        .unwrap()
}

/// A recorded success of a key's head lets a pull successor go (one whose
/// endpoint turned pull while it waited): it waits for nothing after, and
/// for a consumer from the success on, and is not named for the due index,
/// which holds pushed notifications only.
pub async fn a_recorded_success_lets_a_pull_successor_wait_for_a_consumer_from_then<S: Backend>(
    store: S,
) {
    let shop = ordered(&store, OnFailure::Continue).await;
    let head = commit_new(&store, keyed(&shop, "order-10")).await;
    let long_ago = Utc::now() - Duration::hours(1);
    let next = commit_new(
        &store,
        NewNotification {
            pull: true,
            next_attempt_at: long_ago,
            deliver_at: long_ago,
            ..keyed(&shop, "order-10")
        },
    )
    .await;
    assert_eq!(get(&store, next).await.behind, Some(head));

    let ended = record_ordered_success(&store, head, &shop).await;
    assert_eq!(ended.moved, [head]);
    assert_eq!(ended.released, [], "a pull row is not indexed");
    let next = get(&store, next).await;
    assert_eq!(next.behind, None, "it waits for nothing");
    assert_eq!(
        next.next_attempt_at.map(micros),
        Some(micros(get(&store, head).await.updated_at)),
        "its wait for a consumer starts at the success"
    );
}

/// A recorded success of a key's tail leaves the key without one: the
/// next notification of the key waits for nothing, and is its head.
pub async fn a_recorded_success_of_a_keys_tail_leaves_the_next_create_its_head<S: Backend>(
    store: S,
) {
    let shop = ordered(&store, OnFailure::Continue).await;
    let only = commit_new(&store, keyed(&shop, "order-11")).await;
    let ended = record_ordered_success(&store, only, &shop).await;
    assert_eq!(ended.moved, [only]);
    assert_eq!(ended.released, [], "nothing waited for it");

    // As placed by the create (a read would apply the rule, by which one
    // placed behind a success waits for nothing either).
    let next = match commit(&store, vec![keyed(&shop, "order-11")])
        .await
        .remove(0)
    {
        Inserted::Created(row) => row,
        other => panic!("not created: {other:?}"),
    };
    assert_eq!(next.behind, None, "placed behind nothing");
    assert_eq!(next.sequence, Some(2), "the key's second");
}

/// A batch can hold two records of one notification (an attempt whose
/// outcome waited while a duplicate's was decided on the same state); one
/// of them moves the row, which one is the store's to say, and the other
/// writes nothing. What the end releases follows the row: under `hold`, a
/// key's head that ended failed holds its key, so the next one keeps
/// waiting and is not released, whatever the other record said; one that
/// ended succeeded releases the next. Each order of the two records is
/// tried on a key of its own.
pub async fn of_two_records_of_a_keys_head_in_one_batch_the_one_that_moved_it_decides_what_it_releases<
    S: Backend,
>(
    store: S,
) {
    let shop = ordered(&store, OnFailure::Hold).await;
    let ordered = |id, outcome| {
        let mut record = attempt(id, shop.id, 1, outcome);
        record.ordered = true;
        record
    };
    let mut heads = Vec::new();
    let mut batch = Vec::new();
    for (key, first, second) in [
        ("order-12", FAILED, Outcome::Succeeded),
        ("order-13", Outcome::Succeeded, FAILED),
    ] {
        let head = commit_new(&store, keyed(&shop, key)).await;
        let next = commit_new(&store, keyed(&shop, key)).await;
        batch.push(ordered(head, first));
        batch.push(ordered(head, second));
        heads.push((head, next));
    }

    let recorded = DeliveryStore::record_attempts(&store, &batch, &[])
        .await
        .unwrap();

    let released: Vec<Uuid> = recorded.released.iter().map(|(id, _)| *id).collect();
    for (head, next) in heads {
        let status = get(&store, head).await.status();
        match status {
            Status::Succeeded => {
                assert!(released.contains(&next), "released by its head's success");
            }
            Status::Failed => {
                assert!(!released.contains(&next), "held by its failed head");
                assert_eq!(get(&store, next).await.behind, Some(head));
            }
            other => panic!("the head neither succeeded nor failed: {other:?}"),
        }
    }
    let read = HousekeepingStore::release_stranded(&store, None, 100).await;
    assert_eq!(
        read.unwrap().0,
        0,
        "none stranded: a failed head holds its key"
    );
}
