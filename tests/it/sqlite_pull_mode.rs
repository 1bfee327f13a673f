//! The embedded store's pull seam beyond leases, on real SQLite files: the
//! cases of `conformance::pull_mode` (when an endpoint next needs a
//! consumer, the delivery switch, strays and orphans, consumer tokens, and
//! the in-process pull signal).

use std::time::Duration as StdDuration;

use chrono::{Duration, Utc};
use hookd::domain::id::new_id;
use hookd::domain::pull::Delivery;
use hookd::domain::status::Status;
use hookd::store::endpoints::EndpointRef;
use uuid::Uuid;

use crate::conformance::leases::MINUTE;
use crate::sqlite_pull::{ack_with, due_at, get, micros, pull_endpoint, receipt, switch, take};
use crate::sqlite_writes::{endpoint, now, store};

#[tokio::test]
async fn next_pull_due_is_the_earliest_due_or_lease_end() {
    let (_dir, store) = store().await;
    let puller = pull_endpoint(&store).await;
    assert_eq!(store.next_pull_due(puller).await.unwrap(), None);
    let now = now();
    let (soon, later) = (now - Duration::seconds(10), now + Duration::seconds(30));
    due_at(&store, puller, soon, true).await;
    due_at(&store, puller, later, true).await;
    let next = store.next_pull_due(puller).await.unwrap();
    assert_eq!(next.map(micros), Some(micros(soon)));
    let taken = take(&store, puller, 1, MINUTE).await.remove(0);
    let next = store.next_pull_due(puller).await.unwrap();
    assert_eq!(next.map(micros), Some(micros(later)));
    let soon = Utc::now() + Duration::seconds(1);
    store
        .extend_lease(&receipt(&taken), taken.lease_until, soon)
        .await
        .unwrap()
        .unwrap();
    let next = store.next_pull_due(puller).await.unwrap();
    assert!(next.unwrap() < later, "now at its lease's end");
}

#[tokio::test]
async fn following_a_switch_to_pull_and_back_moves_only_what_differs() {
    let (_dir, store) = store().await;
    let shop = endpoint(&store, 0).await;
    let a = due_at(&store, shop, now(), false).await;
    let b = due_at(&store, shop, now(), false).await;
    let done = due_at(&store, shop, now(), false).await;
    sqlx::query(
        "UPDATE notifications SET status = 'cancelled', next_attempt_at = NULL WHERE id = ?",
    )
    .bind(done)
    .execute(store.writer())
    .await
    .unwrap();
    switch(&store, shop, Delivery::Pull).await;
    let moved = store.follow_delivery(shop, Delivery::Pull).await.unwrap();
    let mut ids: Vec<Uuid> = moved.iter().map(|(id, _)| *id).collect();
    ids.sort();
    let mut both = vec![a, b];
    both.sort();
    assert_eq!(ids, both);
    assert!(get(&store, a).await.pull && !get(&store, done).await.pull);
    assert!(store
        .follow_delivery(shop, Delivery::Pull)
        .await
        .unwrap()
        .is_empty());

    let taken = take(&store, shop, 1, MINUTE).await.remove(0);
    let untaken = if taken.id == a { b } else { a };
    let due_untaken = get(&store, untaken).await.next_attempt_at.map(micros);
    switch(&store, shop, Delivery::Push).await;
    let moved = store.follow_delivery(shop, Delivery::Push).await.unwrap();
    assert_eq!(moved.len(), 2);
    let leased_due = moved.iter().find(|(id, _)| *id == taken.id).unwrap().1;
    assert!(
        leased_due <= Utc::now() + Duration::seconds(1),
        "its lease ended: due now"
    );
    let other_due = moved.iter().find(|(id, _)| *id == untaken).unwrap().1;
    assert_eq!(Some(micros(other_due)), due_untaken, "due when it was");
    let lease = store.lease_of(taken.id).await.unwrap().unwrap();
    assert_eq!(lease.lease_id, None);
    assert!(
        ack_with(&store, receipt(&taken)).await.is_empty(),
        "its receipt stopped working"
    );
}

#[tokio::test]
async fn strays_and_orphans_follow_their_endpoint() {
    let (_dir, store) = store().await;
    // Written as pull by a process that had not seen the switch to push.
    let switched = pull_endpoint(&store).await;
    switch(&store, switched, Delivery::Push).await;
    let stray = due_at(&store, switched, now(), true).await;
    let kept = pull_endpoint(&store).await;
    let pulled = due_at(&store, kept, now(), true).await;
    let adopted = store.adopt_strays(10).await.unwrap();
    assert_eq!(
        adopted.iter().map(|(id, _)| *id).collect::<Vec<_>>(),
        [stray]
    );
    assert!(!get(&store, stray).await.pull);
    assert!(get(&store, pulled).await.pull);

    // Written as pull by a process that had not seen the delete.
    let deleted = pull_endpoint(&store).await;
    store
        .delete_endpoint(&EndpointRef::Id(deleted))
        .await
        .unwrap();
    let orphan = due_at(&store, deleted, now(), true).await;
    assert_eq!(store.cancel_orphaned_pulls(10).await.unwrap(), 1);
    assert_eq!(get(&store, orphan).await.status, Status::Cancelled);
    assert_eq!(get(&store, pulled).await.status, Status::Pending);
    assert_eq!(store.cancel_orphaned_pulls(10).await.unwrap(), 0);
}

#[tokio::test]
async fn consumer_tokens_are_read_all_then_by_change() {
    let (_dir, store) = store().await;
    let puller = pull_endpoint(&store).await;
    let other = pull_endpoint(&store).await;
    assert!(store.set_consumer_token(puller, &[1; 32]).await.unwrap());
    assert!(store.set_consumer_token(other, &[2; 32]).await.unwrap());
    assert!(!store.set_consumer_token(new_id(), &[3; 32]).await.unwrap());

    let all = store.consumer_tokens(None).await.unwrap();
    let mine = all.rows.iter().find(|r| r.endpoint_id == puller).unwrap();
    assert_eq!(
        (mine.digest, mine.deleted, mine.delivery),
        (Some([1; 32]), false, Delivery::Pull)
    );
    assert_eq!(all.rows.len(), 2);
    let quiet = store.consumer_tokens(Some(all.read_at)).await.unwrap();
    assert!(quiet.rows.is_empty(), "{:?}", quiet.rows);
    assert!(quiet.read_at >= all.read_at);

    // A new token replaces the one before.
    store.set_consumer_token(puller, &[4; 32]).await.unwrap();
    let changed = store.consumer_tokens(Some(quiet.read_at)).await.unwrap();
    let rows: Vec<_> = changed
        .rows
        .iter()
        .map(|r| (r.endpoint_id, r.digest))
        .collect();
    assert_eq!(rows, [(puller, Some([4; 32]))]);

    store.revoke_consumer_token(other).await.unwrap();
    let all = store.consumer_tokens(None).await.unwrap();
    assert_eq!(
        all.rows.iter().map(|r| r.endpoint_id).collect::<Vec<_>>(),
        [puller]
    );

    store
        .delete_endpoint(&EndpointRef::Id(puller))
        .await
        .unwrap();
    let gone = store.consumer_tokens(Some(changed.read_at)).await.unwrap();
    let row = gone
        .rows
        .iter()
        .find(|r| r.endpoint_id == puller)
        .expect("the delete is a change");
    assert!(row.deleted);
    assert!(!store.set_consumer_token(puller, &[5; 32]).await.unwrap());
}

#[tokio::test]
async fn a_pull_signal_wakes_listeners_of_its_endpoint() {
    let (_dir, store) = store().await;
    let store = std::sync::Arc::new(store);
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let shutdown = tokio_util::sync::CancellationToken::new();
    let listening = {
        let (store, shutdown) = (store.clone(), shutdown.clone());
        tokio::spawn(async move {
            let woken = move |endpoint: Option<Uuid>| {
                let _ = tx.send(endpoint);
            };
            store.listen_pull(&woken, &shutdown).await;
        })
    };
    // The listener says it may have missed signals once it listens: after
    // that, no signal is lost.
    let first = tokio::time::timeout(StdDuration::from_secs(10), rx.recv())
        .await
        .expect("the listener starts");
    assert_eq!(first, Some(None));
    let endpoint = new_id();
    store.signal_pull(&[endpoint]).await.unwrap();
    let heard = tokio::time::timeout(StdDuration::from_secs(10), rx.recv())
        .await
        .expect("the signal arrives");
    assert_eq!(heard, Some(Some(endpoint)));
    shutdown.cancel();
    tokio::time::timeout(StdDuration::from_secs(10), listening)
        .await
        .expect("the listener stops at shutdown")
        .unwrap();
}
