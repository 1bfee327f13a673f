//! Ordering's side of housekeeping (docs/design.md §17): what waits for a
//! notification that retention removed.

use chrono::{Duration, Utc};
use hookd::domain::ordering::{KeyOrdering, OnFailure};
use hookd::store::endpoints::Endpoint;
use hookd::store::seams::HousekeepingStore;
use uuid::Uuid;

use super::fixtures::{attempt, commit_new, create, endpoint, get, keyed, record, FAILED};
use super::Backend;

pub async fn a_notification_waiting_for_a_holder_retention_removed_is_its_keys_head_again<
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
    let holder = commit_new(&store, keyed(&shop, "order-7")).await;
    record(&store, &[attempt(holder, shop.id, 1, FAILED)]).await;
    let second = commit_new(&store, keyed(&shop, "order-7")).await;
    let third = commit_new(&store, keyed(&shop, "order-7")).await;
    assert_eq!(get(&store, second).await.behind, Some(holder));
    let released = HousekeepingStore::release_stranded(&store, 100).await;
    assert_eq!(released.unwrap(), 0, "a stored holder holds its key");

    let bound = Utc::now() + Duration::milliseconds(1);
    let (purged, _) = HousekeepingStore::purge_completed(&store, bound, None, 100)
        .await
        .unwrap();
    assert_eq!(purged, 1, "the holder");
    let released = HousekeepingStore::release_stranded(&store, 100).await;
    assert_eq!(released.unwrap(), 1);
    assert_eq!(get(&store, second).await.behind, None, "the key's head");
    assert_eq!(get(&store, third).await.behind, Some(second), "in order");
    let owed: Vec<Uuid> = HousekeepingStore::needing_index(&store, 100)
        .await
        .unwrap()
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    assert!(owed.contains(&second), "owed to the due index: {owed:?}");
    let released = HousekeepingStore::release_stranded(&store, 100).await;
    assert_eq!(released.unwrap(), 0, "once");
}
