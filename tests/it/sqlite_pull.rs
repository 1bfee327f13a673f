//! The embedded store's pull consumption on real SQLite files: the cases
//! of `conformance::pull`, on `SqliteStore`'s inherent methods (not yet
//! behind the seams). The cases of `conformance::pull_mode` are in
//! `sqlite_pull_mode`.

use std::time::Duration as StdDuration;

use chrono::{DateTime, Duration, Utc};
use hookd::domain::id::new_id;
use hookd::domain::lease::not_pulled;
use hookd::domain::outcome::OutcomeKind;
use hookd::domain::pull::{Delivery, Failure, Receipt};
use hookd::domain::status::Status;
use hookd::store::notifications::Notification;
use hookd::store::pull::{Leases, Taken};
use hookd::store::sqlite::SqliteStore;
use uuid::Uuid;

use crate::conformance::leases::{ack, failed, pick, MINUTE};
use crate::sqlite_writes::{commit_one, endpoint, new_notification, now, store};

/// A pull endpoint as the schema wants it, changed at `now`.
pub(crate) async fn pull_endpoint(store: &SqliteStore) -> Uuid {
    let id = Uuid::now_v7();
    let at = now().timestamp_micros();
    sqlx::query(
        "INSERT INTO endpoints (id, delivery, secret, schedule_ms, created_at, updated_at) \
         VALUES (?, 'pull', 'whsec_x', '[1000]', ?, ?)",
    )
    .bind(id)
    .bind(at)
    .bind(at)
    .execute(store.writer())
    .await
    .unwrap();
    id
}

/// Switches an endpoint's delivery, as an endpoint change does.
pub(crate) async fn switch(store: &SqliteStore, id: Uuid, delivery: Delivery) {
    let url = (delivery == Delivery::Push).then_some("https://example.com/hook");
    sqlx::query("UPDATE endpoints SET delivery = ?, url = ?, updated_at = ? WHERE id = ?")
        .bind(delivery.as_str())
        .bind(url)
        .bind(now().timestamp_micros())
        .bind(id)
        .execute(store.writer())
        .await
        .unwrap();
}

/// A pending notification of the endpoint, due at `at`, in its mode.
pub(crate) async fn due_at(
    store: &SqliteStore,
    endpoint: Uuid,
    at: DateTime<Utc>,
    pull: bool,
) -> Uuid {
    let mut item = new_notification(endpoint, None, "{\"n\":1}");
    item.deliver_at = at;
    item.next_attempt_at = at;
    item.pull = pull;
    let id = item.id;
    commit_one(store, item).await;
    id
}

pub(crate) async fn get(store: &SqliteStore, id: Uuid) -> Notification {
    store.get_notification(id).await.unwrap().unwrap()
}

pub(crate) fn micros(at: DateTime<Utc>) -> i64 {
    at.timestamp_micros()
}

pub(crate) async fn take(
    store: &SqliteStore,
    endpoint: Uuid,
    max: i64,
    lease: StdDuration,
) -> Vec<Taken> {
    store
        .take(endpoint, max, lease, Box::new(pick))
        .await
        .unwrap()
}

pub(crate) fn receipt(taken: &Taken) -> Receipt {
    Receipt {
        notification: taken.id,
        lease: taken.lease_id,
    }
}

pub(crate) async fn ack_with(store: &SqliteStore, receipt: Receipt) -> Vec<Uuid> {
    store
        .end_leases(
            Leases::Receipts(&[receipt]),
            Box::new(move |row| Some(ack(row, receipt.lease))),
        )
        .await
        .unwrap()
        .moved
}

#[tokio::test]
async fn a_take_leases_due_pull_rows_earliest_first_up_to_its_max() {
    let (_dir, store) = store().await;
    let puller = pull_endpoint(&store).await;
    let shop = endpoint(&store, 0).await;
    let now = now();
    let mut due = Vec::new();
    for seconds in [20, 30, 10] {
        let at = now - Duration::seconds(seconds);
        due.push((due_at(&store, puller, at, true).await, micros(at)));
    }
    due.sort_by_key(|(_, at)| *at);
    due_at(&store, puller, now + Duration::hours(1), true).await;
    due_at(&store, shop, now, false).await;

    let first = take(&store, puller, 2, MINUTE).await;
    let got: Vec<(Uuid, i64)> = first.iter().map(|t| (t.id, micros(t.due_at))).collect();
    assert_eq!(got, due[..2]);
    for taken in &first {
        assert_eq!((taken.endpoint_id, taken.attempts), (puller, 0));
        assert!(taken.lease_until > Utc::now() + Duration::seconds(50));
        assert!(taken.lease_until < Utc::now() + Duration::seconds(70));
        assert_eq!(taken.body, b"{\"n\":1}");
        let row = get(&store, taken.id).await;
        assert!(row.leased && row.pull);
        assert_eq!(row.status, Status::Pending);
    }
    assert_ne!(first[0].lease_id, first[1].lease_id);
    let rest = take(&store, puller, 10, MINUTE).await;
    assert_eq!(rest.iter().map(|t| t.id).collect::<Vec<_>>(), [due[2].0]);
    assert!(take(&store, puller, 10, MINUTE).await.is_empty());
    assert!(
        take(&store, shop, 10, MINUTE).await.is_empty(),
        "push rows are not taken"
    );
}

#[tokio::test]
async fn a_lease_is_extended_only_by_its_current_receipt_at_the_end_it_was_read_at() {
    let (_dir, store) = store().await;
    let puller = pull_endpoint(&store).await;
    due_at(&store, puller, now(), true).await;
    let taken = take(&store, puller, 1, MINUTE).await.remove(0);
    let held = receipt(&taken);
    let to = Utc::now() + Duration::seconds(600);
    let until = store
        .extend_lease(&held, taken.lease_until, to)
        .await
        .unwrap()
        .expect("extended");
    assert_eq!(micros(until), micros(to));
    let leased = store.lease_of(taken.id).await.unwrap().unwrap();
    assert_eq!(leased.lease_id, Some(taken.lease_id));
    assert_eq!(leased.next_attempt_at.map(micros), Some(micros(until)));
    assert!(leased.holds(taken.lease_id));

    let forged = Receipt {
        lease: new_id(),
        ..held
    };
    let later = to + Duration::seconds(1);
    assert_eq!(
        store.extend_lease(&forged, until, later).await.unwrap(),
        None,
        "another lease"
    );
    assert_eq!(
        store
            .extend_lease(&held, taken.lease_until, later)
            .await
            .unwrap(),
        None,
        "a stale read"
    );
    assert!(store
        .extend_lease(&held, until, later)
        .await
        .unwrap()
        .is_some());
    assert!(store.lease_of(new_id()).await.unwrap().is_none());
}

#[tokio::test]
async fn an_ack_with_the_current_receipt_ends_the_lease_and_a_stale_one_changes_nothing() {
    let (_dir, store) = store().await;
    let puller = pull_endpoint(&store).await;
    due_at(&store, puller, now(), true).await;
    let taken = take(&store, puller, 1, MINUTE).await.remove(0);
    let stale = Receipt {
        lease: new_id(),
        ..receipt(&taken)
    };
    assert!(ack_with(&store, stale).await.is_empty());
    let row = get(&store, taken.id).await;
    assert_eq!((row.status, row.attempts), (Status::Pending, 0));
    assert!(row.leased);
    assert!(store
        .list_attempts(taken.id, 0, 10)
        .await
        .unwrap()
        .is_empty());

    assert_eq!(ack_with(&store, receipt(&taken)).await, [taken.id]);
    let row = get(&store, taken.id).await;
    assert_eq!((row.status, row.attempts), (Status::Succeeded, 1));
    let lease = store.lease_of(taken.id).await.unwrap().unwrap();
    assert_eq!(lease.lease_id, None, "the lease ended with it");
    assert!(ack_with(&store, receipt(&taken)).await.is_empty());
    let listed = store.list_attempts(taken.id, 0, 10).await.unwrap();
    assert_eq!(
        listed.iter().map(|a| a.outcome).collect::<Vec<_>>(),
        [OutcomeKind::Succeeded]
    );
}

#[tokio::test]
async fn a_lease_that_ran_out_is_recorded_at_the_next_take_and_its_receipt_goes_stale() {
    let (_dir, store) = store().await;
    let puller = pull_endpoint(&store).await;
    let mut item = new_notification(puller, None, "{}");
    item.pull = true;
    item.next_attempt_at = now() - Duration::seconds(1);
    // Retried at once, so the take that records the lease takes it again.
    item.schedule = hookd::domain::schedule::Schedule::from_stored(None, &[0, 0, 0]);
    let id = item.id;
    commit_one(&store, item).await;
    let first = take(&store, puller, 1, StdDuration::ZERO).await.remove(0);
    assert_eq!(first.id, id);
    assert!(!get(&store, id).await.leased, "a zero lease has run out");

    let second = take(&store, puller, 1, MINUTE).await.remove(0);
    assert_eq!(
        (second.id, second.attempts),
        (id, 1),
        "the lease that ran out was an attempt"
    );
    assert_ne!(second.lease_id, first.lease_id);
    assert!(ack_with(&store, receipt(&first)).await.is_empty());
    assert_eq!(get(&store, id).await.status, Status::Pending);
    assert_eq!(ack_with(&store, receipt(&second)).await, [id]);
    let listed = store.list_attempts(id, 0, 10).await.unwrap();
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

/// The rows `which` selects, with nothing decided (so nothing written).
async fn read_leases(store: &SqliteStore, which: Leases<'_>) -> Vec<Uuid> {
    let ended = store.end_leases(which, Box::new(|_| None)).await.unwrap();
    assert!(ended.moved.is_empty(), "nothing decided, nothing written");
    ended.rows.into_iter().map(|r| r.id).collect()
}

#[tokio::test]
async fn expired_leases_are_read_once_run_out_and_recorded_only_if_not_extended_since() {
    let (_dir, store) = store().await;
    let puller = pull_endpoint(&store).await;
    let running = due_at(&store, puller, now() - Duration::seconds(2), true).await;
    let ran_out = due_at(&store, puller, now() - Duration::seconds(1), true).await;
    take(&store, puller, 1, MINUTE).await;
    take(&store, puller, 1, StdDuration::ZERO).await;
    let expired = |endpoint| Leases::Expired {
        endpoint,
        limit: 10,
    };
    assert_eq!(read_leases(&store, expired(Some(puller))).await, [ran_out]);
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

    // Decided on a read whose lease ran out at another time: not written.
    let ended = store
        .end_leases(
            Leases::ExpiredOf(&[ran_out]),
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
    assert_eq!(ended.rows.len(), 1);
    assert!(ended.moved.is_empty());
    assert_eq!(get(&store, ran_out).await.attempts, 0);
    let ended = store
        .end_leases(
            Leases::ExpiredOf(&[ran_out]),
            Box::new(|row| Some(failed(row, &Failure::LeaseExpired))),
        )
        .await
        .unwrap();
    assert_eq!(ended.moved, [ran_out]);
    let lease = store.lease_of(ran_out).await.unwrap().unwrap();
    assert_eq!((lease.attempts, lease.lease_id), (1, None));
}

#[tokio::test]
async fn pull_rows_nobody_took_in_time_end() {
    let (_dir, store) = store().await;
    let puller = pull_endpoint(&store).await;
    let old = due_at(&store, puller, now() - Duration::minutes(2), true).await;
    let fresh = due_at(&store, puller, now(), true).await;
    let max_wait = MINUTE;
    let ended = store
        .end_unpulled(
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

#[tokio::test]
async fn an_ended_lease_writes_its_operator_event_once_and_a_refused_answer_kept_is_listed() {
    use hookd::domain::operator_event::{OperatorEvent, OPERATOR_ENDPOINT_ID};
    let (_dir, store) = store().await;
    sqlx::query(
        "INSERT INTO endpoints (id, url, secret, schedule_ms, managed, created_at, updated_at) \
         VALUES (?, 'https://example.com/ops', 'whsec_x', '[1000]', 1, 0, 0)",
    )
    .bind(OPERATOR_ENDPOINT_ID)
    .execute(store.writer())
    .await
    .unwrap();
    let puller = pull_endpoint(&store).await;
    due_at(&store, puller, now(), true).await;
    let taken = take(&store, puller, 1, MINUTE).await.remove(0);
    let answer = move |row: &hookd::store::pull::Leased, lease: Uuid| {
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
        store.end_leases(
            Leases::Receipts(&receipts),
            Box::new(move |row| Some(answer(row, lease))),
        )
    };
    // A stale answer moves nothing and reports nothing, but is kept.
    let stale = end(new_id()).await.unwrap();
    assert!(stale.moved.is_empty());
    let events: i64 =
        sqlx::query_scalar("SELECT count(*) FROM notifications WHERE endpoint_id = ?")
            .bind(OPERATOR_ENDPOINT_ID)
            .fetch_one(store.reader())
            .await
            .unwrap();
    assert_eq!(events, 0, "no event without its change");
    assert_eq!(store.list_attempts(taken.id, 0, 10).await.unwrap().len(), 1);

    assert_eq!(end(taken.lease_id).await.unwrap().moved, [taken.id]);
    let keys: Vec<Option<String>> =
        sqlx::query_scalar("SELECT key FROM notifications WHERE endpoint_id = ?")
            .bind(OPERATOR_ENDPOINT_ID)
            .fetch_all(store.reader())
            .await
            .unwrap();
    assert_eq!(keys, [Some(format!("succeeded:{}", taken.id))]);
    assert_eq!(get(&store, taken.id).await.status, Status::Succeeded);
    // Attempt 1 was kept from the refused answer; the moved one adds none.
    assert_eq!(store.list_attempts(taken.id, 0, 10).await.unwrap().len(), 1);
}
