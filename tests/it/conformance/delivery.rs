//! The dispatcher's seam: what a claim loads (and the endpoint versions
//! that decide which endpoints come back), recording attempts under the
//! write guard, the attempts listed, and rows handed to pull consumers.

use chrono::{Duration, Utc};
use hookd::domain::id::new_id;
use hookd::domain::operator_event::{OperatorEvent, OPERATOR_ENDPOINT_ID};
use hookd::domain::outcome::{Outcome, OutcomeKind};
use hookd::domain::pull::Delivery;
use hookd::domain::status::Status;
use hookd::store::delivery::{Claimed, DueNotification, Retry};
use hookd::store::endpoints::{Endpoint, EndpointRef};
use hookd::store::notifications::NotificationFilter;
use hookd::store::recording::AttemptRecord;
use hookd::store::seams::{DeliveryStore, HousekeepingStore, PullStore, ReadStore, WriteStore};
use uuid::Uuid;

use super::fixtures::{
    attempt, commit_new, create, endpoint, event, get, micros, notification, operator_on, pending,
    record, retry_in, FAILED,
};
use super::Backend;

async fn claim<S: Backend>(
    store: &S,
    ids: &[Uuid],
    current: &(dyn Fn(Uuid, i64) -> bool + Sync),
) -> Claimed {
    DeliveryStore::load_claimed(store, ids, current)
        .await
        .unwrap()
}

fn endpoint_ids(claimed: &Claimed) -> Vec<Uuid> {
    let mut ids: Vec<Uuid> = claimed.endpoints.iter().map(|e| e.id).collect();
    ids.sort();
    ids
}

async fn failing_since<S: Backend>(store: &S, id: Uuid) -> Option<i64> {
    ReadStore::find_endpoint(store, &EndpointRef::Id(id))
        .await
        .unwrap()
        .unwrap()
        .failing_since
        .map(micros)
}

pub async fn a_claim_loads_its_notifications_and_each_stale_endpoint_once<S: Backend>(store: S) {
    let (a, b) = (
        create(&store, endpoint()).await,
        create(&store, endpoint()).await,
    );
    let given = notification(&a);
    let (n1, n2, n3) = (
        commit_new(&store, given.clone()).await,
        pending(&store, &a).await,
        pending(&store, &b).await,
    );
    let ids = [n1, n2, n3, new_id()];
    let stale = claim(&store, &ids, &|_, _| false).await;
    let mut loaded: Vec<Uuid> = stale.notifications.iter().map(|n| n.id).collect();
    loaded.sort();
    let mut expected = vec![n1, n2, n3];
    expected.sort();
    assert_eq!(loaded, expected, "an unknown id is left out");
    let mut both = vec![a.id, b.id];
    both.sort();
    assert_eq!(endpoint_ids(&stale), both, "each endpoint once");
    let first = stale.notifications.iter().find(|n| n.id == n1).unwrap();
    assert_eq!(first.body, given.body);
    assert_eq!(first.endpoint_id, a.id);
    assert_eq!((first.status, first.attempts), (Status::Pending, 0));
    let version_of_a = first.endpoint_version.expect("the endpoint exists");
    let loaded_a = stale.endpoints.iter().find(|e| e.id == a.id).unwrap();
    assert_eq!(loaded_a.version, version_of_a);
    assert_eq!(loaded_a.url, "http://127.0.0.1:1/hook");
    assert_eq!(loaded_a.secret, a.secret);
    assert!(!loaded_a.deleted && !loaded_a.disabled && !loaded_a.pull);

    // The caller's copy of `a` is current: only `b` comes back.
    let current = claim(&store, &ids, &|id, version| {
        id == a.id && version == version_of_a
    })
    .await;
    assert_eq!(current.notifications.len(), 3);
    assert_eq!(endpoint_ids(&current), [b.id]);
}

pub async fn an_endpoint_change_gives_it_a_new_version<S: Backend>(store: S) {
    let shop = create(&store, endpoint()).await;
    let id = pending(&store, &shop).await;
    let before = claim(&store, &[id], &|_, _| true).await.notifications[0]
        .endpoint_version
        .unwrap();
    WriteStore::modify_endpoint(
        &store,
        &EndpointRef::Id(shop.id),
        Box::new(|e: &mut Endpoint| {
            e.timeout_ms = Some(100);
            Ok(())
        }),
    )
    .await
    .unwrap()
    .unwrap()
    .unwrap();
    let after = claim(&store, &[id], &|_, version| version == before).await;
    assert_ne!(after.notifications[0].endpoint_version, Some(before));
    assert_eq!(endpoint_ids(&after), [shop.id]);
    assert_eq!(after.endpoints[0].timeout_ms, Some(100));
}

pub async fn a_claimed_delivery_of_an_event_carries_the_event_body_and_type<S: Backend>(store: S) {
    let shop = create(&store, endpoint()).await;
    let (event_id, deliveries) = event(&store, None, "invoice.sent", &[&shop]).await;
    let claimed = claim(&store, &deliveries, &|_, _| true).await;
    let [delivery] = claimed.notifications.as_slice() else {
        panic!("{claimed:?}");
    };
    assert_eq!(delivery.event_id, Some(event_id));
    assert_eq!(delivery.event_type.as_deref(), Some("invoice.sent"));
    assert_eq!(delivery.body, br#"{"event":true}"#);
    assert_eq!(get(&store, deliveries[0]).await.body, br#"{"event":true}"#);
}

pub async fn a_claim_of_a_deleted_endpoint_says_so_and_its_rows_can_be_cancelled<S: Backend>(
    store: S,
) {
    let shop = create(&store, endpoint()).await;
    WriteStore::delete_endpoint(&store, &EndpointRef::Id(shop.id))
        .await
        .unwrap();
    // Created by a process whose cache had not yet seen the delete.
    let late = pending(&store, &shop).await;
    let claimed = claim(&store, &[late], &|_, _| false).await;
    assert_eq!(claimed.notifications.len(), 1);
    assert!(claimed.endpoints[0].deleted);
    DeliveryStore::cancel_notifications(&store, &[late])
        .await
        .unwrap();
    assert_eq!(get(&store, late).await.status, Status::Cancelled);
}

pub async fn notifications_at_hand_come_with_their_stale_endpoints<S: Backend>(store: S) {
    let shop = create(&store, endpoint()).await;
    let id = pending(&store, &shop).await;
    let version = claim(&store, &[id], &|_, _| true).await.notifications[0]
        .endpoint_version
        .unwrap();
    let at_hand = DueNotification::created(&get(&store, id).await, version);
    let fresh = DeliveryStore::with_endpoints(&store, vec![at_hand.clone()], &|_, v| v == version)
        .await
        .unwrap();
    assert_eq!(fresh.notifications.len(), 1);
    assert!(fresh.endpoints.is_empty());
    let stale = DeliveryStore::with_endpoints(&store, vec![at_hand], &|_, _| false)
        .await
        .unwrap();
    assert_eq!(endpoint_ids(&stale), [shop.id]);
}

pub async fn an_attempt_moves_its_notification_once_and_a_second_record_changes_nothing<
    S: Backend,
>(
    store: S,
) {
    let shop = create(&store, endpoint()).await;
    let (a, b) = (pending(&store, &shop).await, pending(&store, &shop).await);
    let first = attempt(a, shop.id, 1, retry_in(60));
    let moved = record(&store, &[first.clone(), attempt(b, shop.id, 1, FAILED)]).await;
    let mut expected = vec![a, b];
    expected.sort();
    let mut moved = moved;
    moved.sort();
    assert_eq!(moved, expected);
    let row = get(&store, a).await;
    assert_eq!((row.status, row.attempts), (Status::Pending, 1));
    assert_eq!(
        row.next_attempt_at.map(micros),
        first.next.next_attempt_at.map(micros)
    );
    assert_eq!(
        row.last_attempt_at.map(micros),
        Some(micros(first.started_at))
    );
    assert_eq!(
        row.last_error.as_deref(),
        Some("connect: connection refused")
    );
    let failed = get(&store, b).await;
    assert_eq!(failed.status, Status::Failed);
    assert!(failed.completed_at.is_some() && failed.next_attempt_at.is_none());

    // The same attempt again (a lease that ran out mid-attempt), with
    // another outcome: nothing moves, no second attempt 1 is listed.
    assert!(record(&store, &[attempt(a, shop.id, 1, FAILED)])
        .await
        .is_empty());
    assert_eq!(get(&store, a).await.status, Status::Pending);
    let listed = ReadStore::list_attempts(&store, a, 0, 10).await.unwrap();
    assert_eq!(
        listed
            .iter()
            .map(|x| (x.number, x.outcome))
            .collect::<Vec<_>>(),
        [(1, OutcomeKind::Retry)]
    );
    // Nor does an attempt that skips a number.
    assert!(record(&store, &[attempt(a, shop.id, 3, FAILED)])
        .await
        .is_empty());
    assert_eq!(get(&store, a).await.attempts, 1);
}

pub async fn an_attempt_that_lost_to_a_cancel_is_counted_and_changes_no_status<S: Backend>(
    store: S,
) {
    let shop = create(&store, endpoint()).await;
    let id = pending(&store, &shop).await;
    WriteStore::cancel_notification(&store, id, None)
        .await
        .unwrap();
    let mut late = attempt(id, shop.id, 1, Outcome::Succeeded);
    late.status_code = Some(200);
    assert!(record(&store, std::slice::from_ref(&late)).await.is_empty());
    let row = get(&store, id).await;
    // The receiver answered 200: the notification stays cancelled, and says
    // what its attempts list says.
    assert_eq!((row.status, row.attempts), (Status::Cancelled, 1));
    assert_eq!(
        row.last_attempt_at.map(micros),
        Some(micros(late.started_at))
    );
    assert_eq!(row.last_status_code, Some(200));
    assert!(row.next_attempt_at.is_none());
    // The attempt was made: its row is kept, for the record.
    let listed = ReadStore::list_attempts(&store, id, 0, 10).await.unwrap();
    assert_eq!(listed.iter().map(|x| x.number).collect::<Vec<_>>(), [1]);
    assert_eq!(
        failing_since(&store, shop.id).await,
        None,
        "no health from it"
    );
    // The same attempt again (a duplicate) is not its next one: no count.
    assert!(record(&store, &[attempt(id, shop.id, 1, FAILED)])
        .await
        .is_empty());
    let row = get(&store, id).await;
    assert_eq!((row.attempts, row.last_status_code), (1, Some(200)));
    assert_eq!(row.last_error, None);
}

/// A batch whose rows are not all as their records expect moves the rest
/// and names only those: SQLite writes a batch without RETURNING and
/// counts the rows it changed, and a count short of the batch has it
/// written again to learn which moved.
pub async fn a_batch_moves_the_rows_still_as_expected_and_names_only_those<S: Backend>(store: S) {
    let shop = create(&store, endpoint()).await;
    let (a, b, c) = (
        pending(&store, &shop).await,
        pending(&store, &shop).await,
        pending(&store, &shop).await,
    );
    WriteStore::cancel_notification(&store, b, None)
        .await
        .unwrap();
    let batch = [
        attempt(a, shop.id, 1, retry_in(60)),
        attempt(b, shop.id, 1, FAILED),
        attempt(c, shop.id, 1, Outcome::Succeeded),
    ];
    let mut moved = record(&store, &batch).await;
    moved.sort();
    let mut expected = vec![a, c];
    expected.sort();
    assert_eq!(moved, expected);
    let (a_row, b_row, c_row) = (
        get(&store, a).await,
        get(&store, b).await,
        get(&store, c).await,
    );
    assert_eq!((a_row.status, a_row.attempts), (Status::Pending, 1));
    assert_eq!((b_row.status, b_row.attempts), (Status::Cancelled, 1));
    assert_eq!((c_row.status, c_row.attempts), (Status::Succeeded, 1));
    for id in [a, b, c] {
        let listed = ReadStore::list_attempts(&store, id, 0, 10).await.unwrap();
        assert_eq!(
            listed.iter().map(|x| x.number).collect::<Vec<_>>(),
            [1],
            "one attempt 1 for {id}"
        );
    }
}

pub async fn an_attempt_of_a_series_a_retry_replaced_changes_nothing<S: Backend>(store: S) {
    let shop = create(&store, endpoint()).await;
    let id = pending(&store, &shop).await;
    record(&store, &[attempt(id, shop.id, 1, retry_in(60))]).await;
    let retried = WriteStore::retry_notification(&store, id, Utc::now(), false)
        .await
        .unwrap();
    assert!(
        matches!(retried, Retry::Retried(ref row) if row.series_start == 1),
        "{retried:?}"
    );
    // Attempt 2 of the old series, finishing after the retry.
    assert!(
        record(&store, &[attempt(id, shop.id, 2, Outcome::Succeeded)])
            .await
            .is_empty()
    );
    assert_eq!(get(&store, id).await.status, Status::Pending);
    let mut of_new_series = attempt(id, shop.id, 2, Outcome::Succeeded);
    of_new_series.expected.series_start = 1;
    assert_eq!(record(&store, &[of_new_series]).await, [id]);
    assert_eq!(get(&store, id).await.status, Status::Succeeded);
}

pub async fn a_first_success_keeps_its_attempt_and_a_late_duplicate_adds_none<S: Backend>(
    store: S,
) {
    let shop = create(&store, endpoint()).await;
    let id = pending(&store, &shop).await;
    let delivered = AttemptRecord {
        status_code: Some(200),
        response_body: Some("thanks".into()),
        duration_ms: 7,
        ..attempt(id, shop.id, 1, Outcome::Succeeded)
    };
    assert_eq!(record(&store, std::slice::from_ref(&delivered)).await, [id]);
    let row = get(&store, id).await;
    assert_eq!(
        (row.status, row.attempts, row.last_status_code),
        (Status::Succeeded, 1, Some(200))
    );
    assert!(row.completed_at.is_some());
    let check = |listed: Vec<hookd::store::attempts::Attempt>| {
        let [kept] = listed.as_slice() else {
            panic!("{listed:?}")
        };
        assert_eq!(
            (
                kept.number,
                kept.outcome,
                kept.status_code,
                kept.response_body.as_deref()
            ),
            (1, OutcomeKind::Succeeded, Some(200), Some("thanks"))
        );
        assert_eq!((kept.duration_ms, kept.error_code.as_deref()), (7, None));
        assert_eq!(micros(kept.started_at), micros(delivered.started_at));
    };
    check(ReadStore::list_attempts(&store, id, 0, 10).await.unwrap());
    assert!(ReadStore::list_attempts(&store, id, 1, 10)
        .await
        .unwrap()
        .is_empty());
    // A process whose lease ran out records attempt 1 again, failed.
    assert!(record(&store, &[attempt(id, shop.id, 1, retry_in(60))])
        .await
        .is_empty());
    check(ReadStore::list_attempts(&store, id, 0, 10).await.unwrap());
}

pub async fn a_failure_commits_with_its_operator_event_once<S: Backend>(store: S) {
    let shop = create(&store, endpoint()).await;
    let (without, with) = (pending(&store, &shop).await, pending(&store, &shop).await);
    // No operator endpoint: the failure is recorded, its event goes nowhere.
    assert_eq!(
        record(&store, &[attempt(without, shop.id, 1, FAILED)]).await,
        [without]
    );
    operator_on(&store).await;
    let failure = attempt(with, shop.id, 1, FAILED);
    let event: OperatorEvent = failure.event.clone().expect("an event");
    assert_eq!(record(&store, std::slice::from_ref(&failure)).await, [with]);
    assert!(record(&store, &[failure]).await.is_empty());

    let events = ReadStore::list_notifications(
        &store,
        &NotificationFilter {
            endpoint_id: Some(OPERATOR_ENDPOINT_ID),
            limit: 10,
            ..NotificationFilter::default()
        },
    )
    .await
    .unwrap();
    let [stored] = events.as_slice() else {
        panic!("{events:?}")
    };
    assert_eq!(stored.key.as_deref(), Some(event.key.as_str()));
    assert_eq!(
        stored.event_type.as_deref(),
        Some(OperatorEvent::NOTIFICATION_FAILED)
    );
    assert_eq!(stored.status, Status::Pending);
    assert_eq!(get(&store, stored.id).await.body, event.body);
    // Due at once, and owed to the due index by the housekeeper.
    let owed = HousekeepingStore::needing_index(&store, 10).await.unwrap();
    assert_eq!(
        owed.iter().map(|(id, _)| *id).collect::<Vec<_>>(),
        [stored.id]
    );
    assert!(owed[0]
        .1
        .is_some_and(|at| at <= Utc::now() + Duration::seconds(1)));

    // Without the operator endpoint (`operator.url` unset), failures
    // report nothing more.
    HousekeepingStore::sync_operator_endpoint(&store, None)
        .await
        .unwrap();
    let after = pending(&store, &shop).await;
    assert_eq!(
        record(&store, &[attempt(after, shop.id, 1, FAILED)]).await,
        [after]
    );
    let events = ReadStore::list_notifications(
        &store,
        &NotificationFilter {
            endpoint_id: Some(OPERATOR_ENDPOINT_ID),
            limit: 10,
            ..NotificationFilter::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(events.len(), 1);
}

mod attempts;
pub use attempts::*;
