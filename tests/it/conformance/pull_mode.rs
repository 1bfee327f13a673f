//! The pull seam beyond leases: when an endpoint next needs a consumer,
//! the switch between push and pull (and rows written by a process that
//! had not seen it), and consumer tokens.

use std::time::Duration as StdDuration;

use chrono::{DateTime, Duration, Utc};
use hookd::domain::id::new_id;
use hookd::domain::pull::Delivery;
use hookd::domain::status::Status;
use hookd::store::endpoints::{Endpoint, EndpointRef};
use hookd::store::seams::{PullStore, WriteStore};
use uuid::Uuid;

use super::fixtures::{commit_new, create, due_at, endpoint, get, micros, pending, pull_endpoint};
use super::leases::{ack_with, receipt, take, MINUTE};
use super::Backend;

pub async fn next_pull_due_is_the_earliest_due_or_lease_end<S: Backend>(store: S) {
    let puller = create(&store, pull_endpoint()).await;
    assert_eq!(
        PullStore::next_pull_due(&store, puller.id).await.unwrap(),
        None
    );
    let now = Utc::now();
    let (soon, later) = (now - Duration::seconds(10), now + Duration::seconds(30));
    commit_new(&store, due_at(&puller, soon)).await;
    commit_new(&store, due_at(&puller, later)).await;
    let next = PullStore::next_pull_due(&store, puller.id).await.unwrap();
    assert_eq!(next.map(micros), Some(micros(soon)));
    // Leased for a minute: the other row is due first.
    let taken = take(&store, puller.id, 1, MINUTE).await.remove(0);
    let next = PullStore::next_pull_due(&store, puller.id).await.unwrap();
    assert_eq!(next.map(micros), Some(micros(later)));
    let soon = Utc::now() + Duration::seconds(1);
    PullStore::extend_lease(&store, &receipt(&taken), taken.lease_until, soon)
        .await
        .unwrap()
        .unwrap();
    let next: Option<DateTime<Utc>> = PullStore::next_pull_due(&store, puller.id).await.unwrap();
    assert!(next.unwrap() < later, "now at its lease's end");
}

pub async fn following_a_switch_to_pull_and_back_moves_only_what_differs<S: Backend>(store: S) {
    let shop = create(&store, endpoint()).await;
    let (a, b) = (pending(&store, &shop).await, pending(&store, &shop).await);
    let done = pending(&store, &shop).await;
    WriteStore::cancel_notification(&store, done, None)
        .await
        .unwrap();
    switch(&store, shop.id, Delivery::Pull).await;
    let moved = PullStore::follow_delivery(&store, shop.id, Delivery::Pull)
        .await
        .unwrap();
    let mut ids: Vec<Uuid> = moved.iter().map(|(id, _)| *id).collect();
    ids.sort();
    assert_eq!(ids, sorted(vec![a, b]));
    assert!(get(&store, a).await.pull && !get(&store, done).await.pull);
    assert!(PullStore::follow_delivery(&store, shop.id, Delivery::Pull)
        .await
        .unwrap()
        .is_empty());

    let taken = take(&store, shop.id, 1, MINUTE).await.remove(0);
    let untaken = if taken.id == a { b } else { a };
    let due_untaken = get(&store, untaken).await.next_attempt_at.map(micros);
    switch(&store, shop.id, Delivery::Push).await;
    let moved = PullStore::follow_delivery(&store, shop.id, Delivery::Push)
        .await
        .unwrap();
    assert_eq!(moved.len(), 2);
    let leased_due = moved.iter().find(|(id, _)| *id == taken.id).unwrap().1;
    assert!(
        leased_due <= Utc::now() + Duration::seconds(1),
        "its lease ended: due now"
    );
    let other_due = moved.iter().find(|(id, _)| *id == untaken).unwrap().1;
    assert_eq!(Some(micros(other_due)), due_untaken, "due when it was");
    assert_eq!(
        PullStore::lease_of(&store, taken.id)
            .await
            .unwrap()
            .unwrap()
            .lease_id,
        None
    );
    assert!(
        ack_with(&store, receipt(&taken)).await.is_empty(),
        "its receipt stopped working"
    );
}

fn sorted(mut ids: Vec<Uuid>) -> Vec<Uuid> {
    ids.sort();
    ids
}

pub(super) async fn switch<S: Backend>(store: &S, id: Uuid, delivery: Delivery) {
    WriteStore::modify_endpoint(
        store,
        &EndpointRef::Id(id),
        Box::new(move |e: &mut Endpoint| {
            e.delivery = delivery;
            e.url = (delivery == Delivery::Push).then(|| "http://127.0.0.1:1/hook".into());
            Ok(())
        }),
    )
    .await
    .unwrap()
    .unwrap()
    .unwrap();
}

pub async fn strays_and_orphans_push_or_pull_follow_their_endpoint<S: Backend>(store: S) {
    // Written as pull by a process that had not seen the switch to push.
    let switched = create(&store, pull_endpoint()).await;
    switch(&store, switched.id, Delivery::Push).await;
    let stray = commit_new(&store, due_at(&switched, Utc::now())).await;
    let kept = create(&store, pull_endpoint()).await;
    let pulled = pending(&store, &kept).await;
    assert!(get(&store, stray).await.pull);
    let adopted = PullStore::adopt_strays(&store, 10).await.unwrap();
    assert_eq!(
        adopted.iter().map(|(id, _)| *id).collect::<Vec<_>>(),
        [stray]
    );
    assert!(!get(&store, stray).await.pull);
    assert!(get(&store, pulled).await.pull);

    // Written by a process that had not seen the delete: pull, and push
    // due next week, which no claim would find before then.
    let deleted = create(&store, pull_endpoint()).await;
    WriteStore::delete_endpoint(&store, &EndpointRef::Id(deleted.id))
        .await
        .unwrap();
    let orphan = pending(&store, &deleted).await;
    let gone_push = create(&store, endpoint()).await;
    let live_push = create(&store, endpoint()).await;
    WriteStore::delete_endpoint(&store, &EndpointRef::Id(gone_push.id))
        .await
        .unwrap();
    let next_week = Utc::now() + Duration::days(7);
    let scheduled = commit_new(&store, due_at(&gone_push, next_week)).await;
    let kept_push = commit_new(&store, due_at(&live_push, next_week)).await;
    let mut cancelled = PullStore::cancel_orphans(&store, 10).await.unwrap();
    cancelled.sort();
    let mut both = vec![orphan, scheduled];
    both.sort();
    assert_eq!(cancelled, both);
    assert_eq!(get(&store, orphan).await.status, Status::Cancelled);
    assert_eq!(get(&store, scheduled).await.status, Status::Cancelled);
    assert_eq!(get(&store, pulled).await.status, Status::Pending);
    assert_eq!(get(&store, kept_push).await.status, Status::Pending);
    assert!(PullStore::cancel_orphans(&store, 10)
        .await
        .unwrap()
        .is_empty());
}

pub async fn consumer_tokens_are_read_all_then_by_change<S: Backend>(store: S) {
    let puller = create(&store, pull_endpoint()).await;
    let other = create(&store, pull_endpoint()).await;
    assert!(PullStore::set_consumer_token(&store, puller.id, &[1; 32])
        .await
        .unwrap());
    assert!(PullStore::set_consumer_token(&store, other.id, &[2; 32])
        .await
        .unwrap());
    assert!(!PullStore::set_consumer_token(&store, new_id(), &[3; 32])
        .await
        .unwrap());

    let all = PullStore::consumer_tokens(&store, None).await.unwrap();
    let mine = all
        .rows
        .iter()
        .find(|r| r.endpoint_id == puller.id)
        .unwrap();
    assert_eq!(
        (mine.digest, mine.deleted, mine.delivery),
        (Some([1; 32]), false, Delivery::Pull)
    );
    assert_eq!(all.rows.len(), 2);
    let quiet = PullStore::consumer_tokens(&store, Some(all.read_at))
        .await
        .unwrap();
    assert!(quiet.rows.is_empty(), "{:?}", quiet.rows);
    assert!(quiet.read_at >= all.read_at);

    // A new token replaces the one before.
    PullStore::set_consumer_token(&store, puller.id, &[4; 32])
        .await
        .unwrap();
    let changed = PullStore::consumer_tokens(&store, Some(quiet.read_at))
        .await
        .unwrap();
    let rows: Vec<_> = changed
        .rows
        .iter()
        .map(|r| (r.endpoint_id, r.digest))
        .collect();
    assert_eq!(rows, [(puller.id, Some([4; 32]))]);

    PullStore::revoke_consumer_token(&store, other.id)
        .await
        .unwrap();
    let all = PullStore::consumer_tokens(&store, None).await.unwrap();
    assert_eq!(
        all.rows.iter().map(|r| r.endpoint_id).collect::<Vec<_>>(),
        [puller.id]
    );

    WriteStore::delete_endpoint(&store, &EndpointRef::Id(puller.id))
        .await
        .unwrap();
    let gone = PullStore::consumer_tokens(&store, Some(changed.read_at))
        .await
        .unwrap();
    let row = gone
        .rows
        .iter()
        .find(|r| r.endpoint_id == puller.id)
        .expect("the delete is a change");
    assert!(row.deleted);
    assert!(!PullStore::set_consumer_token(&store, puller.id, &[5; 32])
        .await
        .unwrap());
}

/// Nothing after the switch (a failure, a kill) can leave the token to work
/// again once the endpoint is pull again: the switch itself deleted it.
pub async fn a_switch_to_push_revokes_the_consumer_token_in_its_own_commit<S: Backend>(store: S) {
    let puller = create(&store, pull_endpoint()).await;
    let other = create(&store, pull_endpoint()).await;
    for (endpoint, digest) in [(&puller, [7; 32]), (&other, [8; 32])] {
        assert!(PullStore::set_consumer_token(&store, endpoint.id, &digest)
            .await
            .unwrap());
    }
    switch(&store, puller.id, Delivery::Push).await;
    switch(&store, puller.id, Delivery::Pull).await;
    let digests: Vec<_> = PullStore::consumer_tokens(&store, None)
        .await
        .unwrap()
        .rows
        .into_iter()
        .filter(|row| row.digest.is_some())
        .map(|row| row.endpoint_id)
        .collect();
    assert_eq!(
        digests,
        [other.id],
        "only the endpoint never switched keeps one"
    );
}

pub async fn a_pull_signal_wakes_listeners_of_its_endpoint<S: Backend>(store: S) {
    let store = std::sync::Arc::new(store);
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let shutdown = tokio_util::sync::CancellationToken::new();
    let listening = {
        let (store, shutdown) = (store.clone(), shutdown.clone());
        tokio::spawn(async move {
            let woken = move |endpoint: Option<Uuid>| {
                let _ = tx.send(endpoint);
            };
            PullStore::listen_pull(&*store, &woken, &shutdown).await;
        })
    };
    // The listener says it may have missed signals once it listens (so a
    // signal sent before may be lost); after that, none is.
    let first = tokio::time::timeout(StdDuration::from_secs(10), rx.recv())
        .await
        .expect("the listener starts");
    assert_eq!(first, Some(None));
    let endpoint = new_id();
    PullStore::signal_pull(&*store, &[endpoint]).await.unwrap();
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
