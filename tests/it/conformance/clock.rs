//! The one clock (`hookd::clock`): every rule a store decides reads the
//! clock it was given, in both backends, never the database's own. Each
//! case moves the store's clock past a boundary and watches the rule
//! follow it; with PostgreSQL deciding by its `now()` (the host's time,
//! minutes behind the moved clock) each would find the boundary not
//! passed.

use std::time::Duration as StdDuration;

use chrono::Duration;
use hookd::domain::id::new_id;
use hookd::domain::lease::{lease_end, not_pulled};
use hookd::domain::operation::Window;
use hookd::domain::pull::{Delivery, Failure};
use hookd::domain::status::Status;
use hookd::store::endpoints::EndpointRef;
use hookd::store::operations::Operation;
use hookd::store::pull::Leases;
use hookd::store::seams::{OperationStore, PullStore, WriteStore};
use hookd::store::StoreKind;

use super::fixtures::{commit_new, create, due_at, get, pending, pull_endpoint};
use super::leases::{at_once, failed, receipt, take, MINUTE};
use super::pull_mode::switch;
use super::Backend;

pub async fn a_lease_runs_until_the_clock_passes_its_end_and_is_then_taken_back<S: Backend>(
    store: S,
) {
    let clock = store.clock().clone();
    let puller = create(&store, pull_endpoint()).await;
    let id = commit_new(&store, at_once(&puller)).await;
    let before = clock.now();
    let first = take(&store, puller.id, 1, MINUTE).await.remove(0);
    let after = clock.now();
    assert!(
        before + Duration::seconds(60) <= first.lease_until
            && first.lease_until <= after + Duration::seconds(60),
        "a lease ends a lease's length after the clock it was taken by"
    );
    assert!(get(&store, id).await.leased);
    assert!(take(&store, puller.id, 1, MINUTE).await.is_empty());

    clock.advance(StdDuration::from_secs(61));
    assert!(
        PullStore::extend_lease(&store, &receipt(&first), first.lease_until, clock.now())
            .await
            .unwrap()
            .is_none(),
        "a lease the clock has passed is not extended"
    );
    let second = take(&store, puller.id, 1, MINUTE).await.remove(0);
    assert_eq!(
        (second.id, second.attempts),
        (id, 1),
        "taken back, the lease that ran out recorded as an attempt"
    );
    assert!(second.lease_until > clock.now() + Duration::seconds(59));
}

pub async fn a_ran_out_lease_is_swept_only_once_the_clock_passes_its_end<S: Backend>(store: S) {
    let clock = store.clock().clone();
    let puller = create(&store, pull_endpoint()).await;
    let id = pending(&store, &puller).await;
    take(&store, puller.id, 1, MINUTE).await;
    let sweep = || {
        PullStore::end_leases(
            &store,
            Leases::Expired {
                endpoint: Some(puller.id),
                limit: 10,
            },
            Box::new(|row| Some(failed(row, &Failure::LeaseExpired))),
        )
    };
    assert!(sweep().await.unwrap().rows.is_empty(), "still running");
    clock.advance(StdDuration::from_secs(120));
    assert_eq!(sweep().await.unwrap().moved, [id]);
    let row = get(&store, id).await;
    assert_eq!((row.attempts, row.leased), (1, false));
}

pub async fn a_pull_nobody_takes_ends_once_the_clock_passes_its_wait<S: Backend>(store: S) {
    let clock = store.clock().clone();
    let puller = create(&store, pull_endpoint()).await;
    let id = commit_new(&store, due_at(&puller, clock.now())).await;
    let end = || {
        PullStore::end_unpulled(
            &store,
            MINUTE,
            10,
            Box::new(|row| {
                let gave_up_at = not_pulled(row.lease(), row.next_attempt_at, MINUTE, row.now)?;
                let failure = Failure::NotPulled {
                    due_at: row.next_attempt_at?,
                    gave_up_at,
                };
                Some(failed(row, &failure))
            }),
        )
    };
    assert!(end().await.unwrap().is_empty(), "its wait has not passed");
    clock.advance(StdDuration::from_secs(90));
    assert_eq!(end().await.unwrap(), [id]);
    assert_eq!(get(&store, id).await.status, Status::Failed);
}

pub async fn strays_and_orphans_are_looked_for_within_the_window_the_clock_says<S: Backend>(
    store: S,
) {
    let clock = store.clock().clone();
    let switched = create(&store, pull_endpoint()).await;
    switch(&store, switched.id, Delivery::Push).await;
    let deleted = create(&store, pull_endpoint()).await;
    WriteStore::delete_endpoint(&store, &EndpointRef::Id(deleted.id))
        .await
        .unwrap();
    // Two days on, the switch and the delete are older than the window.
    clock.advance(StdDuration::from_secs(2 * 24 * 3600));
    let stray = commit_new(&store, due_at(&switched, clock.now())).await;
    let orphan = pending(&store, &deleted).await;
    assert!(PullStore::adopt_strays(&store, 10)
        .await
        .unwrap()
        .is_empty());
    assert!(PullStore::cancel_orphans(&store, 10)
        .await
        .unwrap()
        .is_empty());
    assert!(get(&store, stray).await.pull);
    assert_eq!(get(&store, orphan).await.status, Status::Pending);
}

pub async fn an_operation_lease_is_taken_over_only_once_the_clock_passes_its_end<S: Backend>(
    store: S,
) {
    let clock = store.clock().clone();
    let endpoint = create(&store, pull_endpoint()).await;
    let now = clock.now();
    let window = Window {
        since: now - Duration::hours(1),
        until: now,
    };
    let operation = Operation::recover(endpoint.id, window, now);
    OperationStore::start_operation(&store, &operation)
        .await
        .unwrap();
    let (first, second) = (new_id(), new_id());
    let lease = |holder| {
        let now = clock.now();
        OperationStore::lease_operation(&store, holder, now, lease_end(now, MINUTE))
    };
    let held = lease(first).await.unwrap().expect("free to take");
    assert_eq!(held.lease_holder, Some(first));
    assert!(lease(second).await.unwrap().is_none(), "held until its end");
    clock.advance(StdDuration::from_secs(61));
    let taken = lease(second).await.unwrap().expect("its lease ran out");
    assert_eq!((taken.id, taken.lease_holder), (operation.id, Some(second)));
}

pub async fn a_database_with_a_clock_of_its_own_reports_how_far_the_process_clock_moved_from_it<
    S: Backend,
>(
    store: S,
) {
    let ahead = Duration::hours(1);
    store
        .clock()
        .advance(ahead.to_std().expect("an hour is positive"));
    let skew = store.clock_skew().await.expect("the clock is read");
    match store.kind() {
        // The database's clock is the host's, an hour behind the moved one.
        StoreKind::Postgres => {
            let skew = skew.expect("PostgreSQL has a clock of its own");
            assert!(
                (skew + ahead).abs() < Duration::seconds(5),
                "skew {skew} is the hour the clock moved, behind"
            );
        }
        // The file is read by this process's clock only.
        StoreKind::Sqlite => assert_eq!(skew, None),
    }
}
