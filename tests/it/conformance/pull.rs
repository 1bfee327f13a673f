//! The pull seam: takes under leases, their extension and end, and the
//! rule every write by a receipt keeps: only the lease the row holds now
//! counts, so a stale receipt changes nothing. Also the switch between
//! push and pull, and consumer tokens.

use std::time::Duration as StdDuration;

use chrono::{DateTime, Duration, Utc};
use hookd::domain::id::new_id;
use hookd::domain::lease::{at_pull, due_again, ended_now, failure_span, not_pulled, AtPull};
use hookd::domain::outcome::{Outcome, OutcomeKind};
use hookd::domain::pull::{after_failure, failure_error, Delivery, Failure, Receipt};
use hookd::domain::schedule::Schedule;
use hookd::domain::status::{after_attempt, Status};
use hookd::store::endpoints::{Endpoint, EndpointRef};
use hookd::store::notifications::NewNotification;
use hookd::store::pull::{Leased, Leases, Taken};
use hookd::store::pull_due::Pick;
use hookd::store::recording::AttemptRecord;
use hookd::store::seams::{PullStore, ReadStore, WriteStore};
use uuid::Uuid;

use super::fixtures::{commit_new, create, due_at, endpoint, get, micros, pending, pull_endpoint};
use super::Backend;

const MINUTE: StdDuration = StdDuration::from_secs(60);

/// What a pull makes of a row, as `domain::lease` decides.
fn pick(row: &Leased) -> Pick {
    match at_pull(row.lease(), row.next_attempt_at, row.now) {
        AtPull::Take => Pick {
            record: None,
            take: row.next_attempt_at,
        },
        AtPull::Leave => Pick::default(),
        AtPull::RanOut(_) => {
            let record = failed(row, &Failure::LeaseExpired);
            let take = due_again(&record.outcome, row.now)
                .then_some(record.next.next_attempt_at)
                .flatten();
            Pick {
                record: Some(record),
                take,
            }
        }
    }
}

/// A failed leased attempt on the row as read, with the lease it ends.
fn failed(row: &Leased, failure: &Failure) -> AttemptRecord {
    let schedule = Schedule::from_stored(row.schedule_name.clone(), &row.schedule_ms);
    let number = row.attempts + 1;
    let (started, ended) = failure_span(failure, row.lease(), row.now);
    let in_series = (number - row.series_start).max(1) as u32;
    let outcome = after_failure(failure, &schedule, in_series, ended);
    let (code, message) = failure_error(failure, None);
    let expired = *failure == Failure::LeaseExpired;
    AttemptRecord {
        error_code: Some(code.into()),
        error_message: Some(message.clone()),
        next: after_attempt(&outcome, Some((code, &message))),
        outcome,
        started_at: started,
        lease: row
            .lease_id
            .map(|lease| (lease, row.lease().filter(|_| expired).map(|l| l.until))),
        ..ack(row, Uuid::nil())
    }
}

/// An ack of the row as read, presenting `lease`.
fn ack(row: &Leased, lease: Uuid) -> AttemptRecord {
    let (started_at, _) = ended_now(row.lease(), row.now);
    AttemptRecord {
        notification_id: row.id,
        endpoint_id: row.endpoint_id,
        number: row.attempts + 1,
        series_start: row.series_start,
        started_at,
        duration_ms: 1,
        status_code: None,
        response_body: None,
        error_code: None,
        error_message: None,
        outcome: Outcome::Succeeded,
        next: after_attempt(&Outcome::Succeeded, None),
        event: None,
        lease: Some((lease, None)),
    }
}

async fn take<S: Backend>(store: &S, endpoint: Uuid, max: i64, lease: StdDuration) -> Vec<Taken> {
    PullStore::take(store, endpoint, max, lease, Box::new(pick))
        .await
        .unwrap()
}

fn receipt(taken: &Taken) -> Receipt {
    Receipt {
        notification: taken.id,
        lease: taken.lease_id,
    }
}

/// Acks with `receipt` whatever the row holds (the store must check); the
/// ids that moved.
async fn ack_with<S: Backend>(store: &S, receipt: Receipt) -> Vec<Uuid> {
    PullStore::end_leases(
        store,
        Leases::Receipts(&[receipt]),
        Box::new(move |row| Some(ack(row, receipt.lease))),
    )
    .await
    .unwrap()
    .moved
}

/// A schedule that retries at once: a lease that ran out is due again.
fn at_once(endpoint: &Endpoint) -> NewNotification {
    NewNotification {
        schedule: Schedule::from_stored(None, &[0, 0, 0]),
        ..due_at(endpoint, Utc::now() - Duration::seconds(1))
    }
}

pub async fn a_take_leases_due_pull_rows_earliest_first_up_to_its_max<S: Backend>(store: S) {
    let puller = create(&store, pull_endpoint()).await;
    let shop = create(&store, endpoint()).await;
    let now = Utc::now();
    let mut due = Vec::new();
    for seconds in [20, 30, 10] {
        let at = now - Duration::seconds(seconds);
        due.push((commit_new(&store, due_at(&puller, at)).await, micros(at)));
    }
    due.sort_by_key(|(_, at)| *at);
    commit_new(&store, due_at(&puller, now + Duration::hours(1))).await;
    pending(&store, &shop).await;

    let first = take(&store, puller.id, 2, MINUTE).await;
    let got: Vec<(Uuid, i64)> = first.iter().map(|t| (t.id, micros(t.due_at))).collect();
    assert_eq!(got, due[..2]);
    for taken in &first {
        assert_eq!((taken.endpoint_id, taken.attempts), (puller.id, 0));
        assert!(taken.lease_until > Utc::now() + Duration::seconds(50));
        assert!(taken.lease_until < Utc::now() + Duration::seconds(70));
        assert!(!taken.body.is_empty());
        let row = get(&store, taken.id).await;
        assert!(row.leased && row.pull);
        assert_eq!(row.status, Status::Pending);
    }
    assert_ne!(first[0].lease_id, first[1].lease_id);
    // Leased rows are left; one not due yet is not taken.
    let rest = take(&store, puller.id, 10, MINUTE).await;
    assert_eq!(rest.iter().map(|t| t.id).collect::<Vec<_>>(), [due[2].0]);
    assert!(take(&store, puller.id, 10, MINUTE).await.is_empty());
    assert!(
        take(&store, shop.id, 10, MINUTE).await.is_empty(),
        "push rows are not taken"
    );
}

pub async fn a_lease_is_extended_only_by_its_current_receipt_while_it_runs<S: Backend>(store: S) {
    let puller = create(&store, pull_endpoint()).await;
    pending(&store, &puller).await;
    let taken = take(&store, puller.id, 1, MINUTE).await.remove(0);
    let held = receipt(&taken);
    let longer = StdDuration::from_secs(600);
    let until = PullStore::extend_lease(&store, &held, longer, Some(puller.id))
        .await
        .unwrap()
        .expect("extended");
    assert!(until > Utc::now() + Duration::seconds(590) && until > taken.lease_until);
    let leased = PullStore::lease_of(&store, taken.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(leased.lease_id, Some(taken.lease_id));
    assert_eq!(leased.next_attempt_at.map(micros), Some(micros(until)));
    assert!(leased.holds(taken.lease_id));

    let forged = Receipt {
        lease: new_id(),
        ..held
    };
    assert_eq!(
        PullStore::extend_lease(&store, &forged, longer, None)
            .await
            .unwrap(),
        None
    );
    let elsewhere = PullStore::extend_lease(&store, &held, longer, Some(new_id()))
        .await
        .unwrap();
    assert_eq!(elsewhere, None, "another endpoint's consumer");
    assert!(PullStore::extend_lease(&store, &held, MINUTE, None)
        .await
        .unwrap()
        .is_some());

    // A lease that ran out cannot be extended.
    pending(&store, &puller).await;
    let ran_out = take(&store, puller.id, 1, StdDuration::ZERO)
        .await
        .remove(0);
    let refused = PullStore::extend_lease(&store, &receipt(&ran_out), longer, None)
        .await
        .unwrap();
    assert_eq!(refused, None);
    assert!(PullStore::lease_of(&store, new_id())
        .await
        .unwrap()
        .is_none());
}

pub async fn an_ack_with_the_current_receipt_ends_the_lease_and_a_stale_one_changes_nothing<
    S: Backend,
>(
    store: S,
) {
    let puller = create(&store, pull_endpoint()).await;
    pending(&store, &puller).await;
    let taken = take(&store, puller.id, 1, MINUTE).await.remove(0);
    let stale = Receipt {
        lease: new_id(),
        ..receipt(&taken)
    };
    assert!(ack_with(&store, stale).await.is_empty());
    let row = get(&store, taken.id).await;
    assert_eq!((row.status, row.attempts), (Status::Pending, 0));
    assert!(row.leased);
    assert!(ReadStore::list_attempts(&store, taken.id, 0, 10)
        .await
        .unwrap()
        .is_empty());

    assert_eq!(ack_with(&store, receipt(&taken)).await, [taken.id]);
    let row = get(&store, taken.id).await;
    assert_eq!((row.status, row.attempts), (Status::Succeeded, 1));
    let lease = PullStore::lease_of(&store, taken.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(lease.lease_id, None, "the lease ended with it");
    // The same receipt again: the lease is gone.
    assert!(ack_with(&store, receipt(&taken)).await.is_empty());
    let listed = ReadStore::list_attempts(&store, taken.id, 0, 10)
        .await
        .unwrap();
    assert_eq!(
        listed.iter().map(|a| a.outcome).collect::<Vec<_>>(),
        [OutcomeKind::Succeeded]
    );
}

pub async fn a_lease_that_ran_out_is_recorded_at_the_next_take_and_its_receipt_goes_stale<
    S: Backend,
>(
    store: S,
) {
    let puller = create(&store, pull_endpoint()).await;
    let id = commit_new(&store, at_once(&puller)).await;
    let first = take(&store, puller.id, 1, StdDuration::ZERO)
        .await
        .remove(0);
    assert_eq!(first.id, id);
    let retry = get(&store, id).await;
    assert!(!retry.leased, "a zero lease has run out");

    let second = take(&store, puller.id, 1, MINUTE).await.remove(0);
    assert_eq!(
        (second.id, second.attempts),
        (id, 1),
        "the lease that ran out was an attempt"
    );
    assert_ne!(second.lease_id, first.lease_id);
    assert!(ack_with(&store, receipt(&first)).await.is_empty());
    assert_eq!(get(&store, id).await.status, Status::Pending);
    assert_eq!(ack_with(&store, receipt(&second)).await, [id]);
    let listed = ReadStore::list_attempts(&store, id, 0, 10).await.unwrap();
    let seen: Vec<_> = listed
        .iter()
        .map(|a| (a.number, a.outcome, a.error_code.clone()))
        .collect();
    assert_eq!(
        seen,
        [
            (1, OutcomeKind::Retry, Some("lease_expired".to_string())),
            (2, OutcomeKind::Succeeded, None)
        ]
    );
}

pub async fn an_expired_lease_is_recorded_only_if_not_extended_since_it_was_read<S: Backend>(
    store: S,
) {
    let puller = create(&store, pull_endpoint()).await;
    let id = commit_new(&store, at_once(&puller)).await;
    take(&store, puller.id, 1, StdDuration::ZERO).await;
    // Decided on a read whose lease ran out at another time (an extend
    // came between): not written.
    let moved = PullStore::end_leases(
        &store,
        Leases::ExpiredOf(&[id]),
        Box::new(|row| {
            let mut record = failed(row, &Failure::LeaseExpired);
            record.lease = record
                .lease
                .map(|(lease, at)| (lease, at.map(|t| t - Duration::seconds(1))));
            Some(record)
        }),
    )
    .await
    .unwrap();
    assert_eq!(moved.rows.len(), 1);
    assert!(moved.moved.is_empty());
    assert_eq!(get(&store, id).await.attempts, 0);
    let moved = PullStore::end_leases(
        &store,
        Leases::ExpiredOf(&[id]),
        Box::new(|row| Some(failed(row, &Failure::LeaseExpired))),
    )
    .await
    .unwrap();
    assert_eq!(moved.moved, [id]);
    let lease = PullStore::lease_of(&store, id).await.unwrap().unwrap();
    assert_eq!((lease.attempts, lease.lease_id), (1, None));
}

pub async fn expired_leases_are_read_only_once_run_out<S: Backend>(store: S) {
    let puller = create(&store, pull_endpoint()).await;
    let running = pending(&store, &puller).await;
    let ran_out = pending(&store, &puller).await;
    take(&store, puller.id, 1, MINUTE).await;
    take(&store, puller.id, 1, StdDuration::ZERO).await;
    let read = |which: Leases<'static>| {
        let store = &store;
        async move {
            let ended = PullStore::end_leases(store, which, Box::new(|_| None))
                .await
                .unwrap();
            assert!(ended.moved.is_empty(), "nothing decided, nothing written");
            ended.rows.into_iter().map(|r| r.id).collect::<Vec<_>>()
        }
    };
    let of_puller = Leases::Expired {
        endpoint: Some(puller.id),
        limit: 10,
    };
    assert_eq!(read(of_puller).await, [ran_out]);
    assert_eq!(
        read(Leases::Expired {
            endpoint: None,
            limit: 10
        })
        .await,
        [ran_out]
    );
    assert!(read(Leases::Expired {
        endpoint: Some(new_id()),
        limit: 10
    })
    .await
    .is_empty());
    let both: &'static [Uuid] = Box::leak(Box::new([running, ran_out]));
    assert_eq!(read(Leases::ExpiredOf(both)).await, [ran_out]);
    let receipts: &'static [Receipt] = Box::leak(Box::new([Receipt {
        notification: running,
        lease: new_id(),
    }]));
    assert_eq!(
        read(Leases::Receipts(receipts)).await,
        [running],
        "a receipt's row is read as it is"
    );
}

pub async fn pull_rows_nobody_took_in_time_end<S: Backend>(store: S) {
    let puller = create(&store, pull_endpoint()).await;
    let old = commit_new(&store, due_at(&puller, Utc::now() - Duration::minutes(2))).await;
    let fresh = pending(&store, &puller).await;
    let max_wait = MINUTE;
    let ended = PullStore::end_unpulled(
        &store,
        max_wait,
        10,
        Box::new(move |row| {
            let gave_up_at = not_pulled(row.lease(), row.next_attempt_at, max_wait, row.now)?;
            let failure = Failure::NotPulled {
                due_at: row.next_attempt_at?,
                gave_up_at,
            };
            Some(failed(row, &failure))
        }),
    )
    .await
    .unwrap();
    assert_eq!(ended, [old]);
    let row = get(&store, old).await;
    assert_eq!((row.status, row.attempts), (Status::Failed, 1));
    assert_eq!(get(&store, fresh).await.status, Status::Pending);
}

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
    PullStore::extend_lease(&store, &receipt(&taken), StdDuration::from_secs(1), None)
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

async fn switch<S: Backend>(store: &S, id: Uuid, delivery: Delivery) {
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

pub async fn strays_and_orphans_follow_their_endpoint<S: Backend>(store: S) {
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

    // Written as pull by a process that had not seen the delete.
    let deleted = create(&store, pull_endpoint()).await;
    WriteStore::delete_endpoint(&store, &EndpointRef::Id(deleted.id))
        .await
        .unwrap();
    let orphan = pending(&store, &deleted).await;
    assert_eq!(
        PullStore::cancel_orphaned_pulls(&store, 10).await.unwrap(),
        1
    );
    assert_eq!(get(&store, orphan).await.status, Status::Cancelled);
    assert_eq!(get(&store, pulled).await.status, Status::Pending);
    assert_eq!(
        PullStore::cancel_orphaned_pulls(&store, 10).await.unwrap(),
        0
    );
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
