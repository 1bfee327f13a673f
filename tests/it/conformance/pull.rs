//! The pull seam: takes under leases, their extension and end, and the
//! rule every write by a receipt keeps: only the lease the row holds now
//! counts, so a stale receipt changes nothing (nor reports anything).

use std::time::Duration as StdDuration;

use chrono::{Duration, Utc};
use hookd::domain::id::new_id;
use hookd::domain::lease::not_pulled;
use hookd::domain::operator_event::{OperatorEvent, OPERATOR_ENDPOINT_ID};
use hookd::domain::outcome::OutcomeKind;
use hookd::domain::pull::{Failure, Receipt};
use hookd::domain::status::Status;
use hookd::store::notifications::NotificationFilter;
use hookd::store::pull::{Leased, Leases};
use hookd::store::seams::{PullStore, ReadStore};
use uuid::Uuid;

use super::fixtures::{
    commit_new, create, due_at, endpoint, get, micros, operator_on, pending, pull_endpoint,
};
use super::leases::{ack, ack_with, at_once, failed, receipt, take, MINUTE};
use super::Backend;

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

pub async fn a_lease_is_extended_only_by_its_current_receipt_at_the_end_it_was_read_at<
    S: Backend,
>(
    store: S,
) {
    // Whether a lease may be extended is decided in `domain::lease` (the
    // service reads it with `lease_of`); the store compare-and-sets the
    // lease's id and the end it was read at.
    let puller = create(&store, pull_endpoint()).await;
    pending(&store, &puller).await;
    let taken = take(&store, puller.id, 1, MINUTE).await.remove(0);
    let held = receipt(&taken);
    let to = Utc::now() + Duration::seconds(600);
    let until = PullStore::extend_lease(&store, &held, taken.lease_until, to)
        .await
        .unwrap()
        .expect("extended");
    assert_eq!(micros(until), micros(to));
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
        PullStore::extend_lease(&store, &forged, until, to + Duration::seconds(1))
            .await
            .unwrap(),
        None,
        "another lease"
    );
    // Read before the extension above: the end it was read at is gone.
    assert_eq!(
        PullStore::extend_lease(&store, &held, taken.lease_until, to + Duration::seconds(1))
            .await
            .unwrap(),
        None,
        "a stale read"
    );
    assert!(
        PullStore::extend_lease(&store, &held, until, to + Duration::seconds(1))
            .await
            .unwrap()
            .is_some()
    );
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
            if let Some(lease) = record.expected.lease.as_mut() {
                lease.ran_out_at = lease.ran_out_at.map(|t| t - Duration::seconds(1));
            }
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

/// The rows `which` selects, with nothing decided (so nothing written).
async fn read_leases<S: Backend>(store: &S, which: Leases<'_>) -> Vec<Uuid> {
    let ended = PullStore::end_leases(store, which, Box::new(|_| None))
        .await
        .unwrap();
    assert!(ended.moved.is_empty(), "nothing decided, nothing written");
    ended.rows.into_iter().map(|r| r.id).collect()
}

pub async fn expired_leases_are_read_only_once_run_out<S: Backend>(store: S) {
    let puller = create(&store, pull_endpoint()).await;
    let running = pending(&store, &puller).await;
    let ran_out = pending(&store, &puller).await;
    take(&store, puller.id, 1, MINUTE).await;
    take(&store, puller.id, 1, StdDuration::ZERO).await;
    let expired = |endpoint| Leases::Expired {
        endpoint,
        limit: 10,
    };
    assert_eq!(
        read_leases(&store, expired(Some(puller.id))).await,
        [ran_out]
    );
    assert_eq!(read_leases(&store, expired(None)).await, [ran_out]);
    assert!(read_leases(&store, expired(Some(new_id())))
        .await
        .is_empty());
    let both = [running, ran_out];
    assert_eq!(
        read_leases(&store, Leases::ExpiredOf(&both)).await,
        [ran_out]
    );
    let receipts = [Receipt {
        notification: running,
        lease: new_id(),
    }];
    assert_eq!(
        read_leases(&store, Leases::Receipts(&receipts)).await,
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

/// The operator endpoint's notifications, keys only.
async fn operator_event_keys<S: Backend>(store: &S) -> Vec<Option<String>> {
    let filter = NotificationFilter {
        endpoint_id: Some(OPERATOR_ENDPOINT_ID),
        limit: 10,
        ..NotificationFilter::default()
    };
    ReadStore::list_notifications(store, &filter)
        .await
        .unwrap()
        .into_iter()
        .map(|n| n.key)
        .collect()
}

pub async fn an_ended_lease_writes_its_operator_event_once_and_a_refused_answer_kept_is_listed<
    S: Backend,
>(
    store: S,
) {
    operator_on(&store).await;
    let puller = create(&store, pull_endpoint()).await;
    pending(&store, &puller).await;
    let taken = take(&store, puller.id, 1, MINUTE).await.remove(0);
    // An answer kept even when refused, not inline, with its event.
    let answer = move |row: &Leased, lease: Uuid| {
        let mut record = ack(row, lease);
        record.keep.when_refused = true;
        record.keep.inline = false;
        record.event = Some(OperatorEvent {
            subject: row.id,
            event_type: "notification.succeeded",
            key: format!("succeeded:{}", row.id),
            body: b"{}".to_vec(),
        });
        record
    };
    let receipts = [receipt(&taken)];
    let end = |lease: Uuid| {
        PullStore::end_leases(
            &store,
            Leases::Receipts(&receipts),
            Box::new(move |row| Some(answer(row, lease))),
        )
    };
    // A stale answer moves nothing and reports nothing, but is kept.
    assert!(end(new_id()).await.unwrap().moved.is_empty());
    assert!(
        operator_event_keys(&store).await.is_empty(),
        "no event without its change"
    );
    let listed = ReadStore::list_attempts(&store, taken.id, 0, 10)
        .await
        .unwrap();
    assert_eq!(listed.len(), 1);

    assert_eq!(end(taken.lease_id).await.unwrap().moved, [taken.id]);
    assert_eq!(
        operator_event_keys(&store).await,
        [Some(format!("succeeded:{}", taken.id))]
    );
    assert_eq!(get(&store, taken.id).await.status, Status::Succeeded);
    // Attempt 1 was kept from the refused answer; the moved one adds none.
    let listed = ReadStore::list_attempts(&store, taken.id, 0, 10)
        .await
        .unwrap();
    assert_eq!(listed.len(), 1);
}
