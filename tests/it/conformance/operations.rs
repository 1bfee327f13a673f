//! Operations (`seams::OperationStore`, docs/design.md §16): one running
//! per endpoint and kind, a lease that one holder has until it runs out or
//! is given back, a recover that pages through the failed rows of its
//! window only for its holder, a bulk retry that restarts only what its
//! filter holds (an event's delivery by its event's type), and retention
//! that takes only finished operations. Every time a rule compares is passed in, so the cases move
//! time forward by passing a later `now`.

use chrono::{DateTime, Duration, Utc};
use hookd::domain::bulk::BulkFilter;
use hookd::domain::id::new_id;
use hookd::domain::operation::{OperationStatus, Window};
use hookd::domain::status::Status;
use hookd::store::endpoints::EndpointRef;
use hookd::store::operations::{Operation, Started};
use hookd::store::seams::WriteStore;
use uuid::Uuid;

use super::fixtures::{
    attempt, commit_new, create, endpoint, event, get, notification, pending, record, FAILED,
};
use super::Backend;

/// Now, at the microsecond every backend keeps.
fn now() -> DateTime<Utc> {
    DateTime::from_timestamp_micros(Utc::now().timestamp_micros()).unwrap()
}

fn recover_of(endpoint_id: Uuid, now: DateTime<Utc>) -> Operation {
    let window = Window {
        since: now - Duration::hours(1),
        until: now,
    };
    Operation::recover(endpoint_id, window, now)
}

async fn started<S: Backend>(store: &S, operation: &Operation) -> Operation {
    match store.start_operation(operation).await.unwrap() {
        Started::Started(stored) => stored,
        Started::Running(other) => panic!("one already runs: {other:?}"),
    }
}

pub async fn one_operation_of_a_kind_runs_per_endpoint_and_reads_back_as_stored<S: Backend>(
    store: S,
) {
    let shop = create(&store, endpoint()).await;
    let other = create(&store, endpoint()).await;
    let at = now();
    let first = recover_of(shop.id, at);
    assert_eq!(started(&store, &first).await, first);
    assert_eq!(
        store.get_operation(first.id).await.unwrap(),
        Some(first.clone())
    );
    assert_eq!(store.get_operation(new_id()).await.unwrap(), None);

    // A second recover of the same endpoint gets the running one, and is
    // not stored; another endpoint's starts.
    let second = recover_of(shop.id, at);
    match store.start_operation(&second).await.unwrap() {
        Started::Running(running) => assert_eq!(running.id, first.id),
        Started::Started(stored) => panic!("two run for one endpoint: {stored:?}"),
    }
    assert_eq!(store.get_operation(second.id).await.unwrap(), None);
    started(&store, &recover_of(other.id, at)).await;

    // Once the first has ended, the endpoint's next one starts.
    let holder = new_id();
    while store
        .lease_operation(holder, at, at + Duration::seconds(30))
        .await
        .unwrap()
        .is_some()
    {}
    store
        .fail_operation(first.id, holder, "stopped", at)
        .await
        .unwrap();
    assert_eq!(started(&store, &second).await.id, second.id);
}

pub async fn a_lease_goes_to_one_holder_until_it_runs_out_or_is_given_back<S: Backend>(store: S) {
    let shop = create(&store, endpoint()).await;
    let at = now();
    let operation = started(&store, &recover_of(shop.id, at)).await;
    let (a, b, c) = (new_id(), new_id(), new_id());
    let until = at + Duration::seconds(30);

    let leased = store.lease_operation(a, at, until).await.unwrap().unwrap();
    assert_eq!(
        (leased.id, leased.lease_holder, leased.lease_until),
        (operation.id, Some(a), Some(until))
    );
    assert_eq!(
        store.get_operation(operation.id).await.unwrap(),
        Some(leased)
    );
    // While it runs, nobody else takes it; at its end (inclusive), another does.
    let just_before = until - Duration::microseconds(1);
    assert!(store
        .lease_operation(b, just_before, just_before + Duration::seconds(30))
        .await
        .unwrap()
        .is_none());
    let later = until + Duration::seconds(30);
    let taken = store
        .lease_operation(b, until, later)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(taken.lease_holder, Some(b));

    // Given back by one that no longer holds it: nothing changes.
    store.release_operation(operation.id, a).await.unwrap();
    assert!(store
        .lease_operation(c, until, later)
        .await
        .unwrap()
        .is_none());
    // A failure reported by one that no longer holds it: nothing either.
    store
        .fail_operation(operation.id, a, "not mine", until)
        .await
        .unwrap();
    let still = store.get_operation(operation.id).await.unwrap().unwrap();
    assert_eq!(
        (still.status, still.lease_holder),
        (OperationStatus::Running, Some(b))
    );
    // Given back by its holder: the next runner takes it at once.
    store.release_operation(operation.id, b).await.unwrap();
    let again = store
        .lease_operation(c, until, later)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(again.lease_holder, Some(c));

    // Failed by its holder: ended, its lease gone, nobody takes it.
    store
        .fail_operation(operation.id, c, "the endpoint is gone", until)
        .await
        .unwrap();
    let failed = store.get_operation(operation.id).await.unwrap().unwrap();
    assert_eq!(failed.status, OperationStatus::Failed);
    assert_eq!(failed.error.as_deref(), Some("the endpoint is gone"));
    assert_eq!((failed.lease_holder, failed.lease_until), (None, None));
    assert_eq!(failed.finished_at, Some(until));
    assert!(store
        .lease_operation(a, later + Duration::hours(1), later + Duration::hours(2))
        .await
        .unwrap()
        .is_none());
}

/// A notification to `endpoint` that ended failed; its id and when it ended.
async fn failed<S: Backend>(
    store: &S,
    endpoint: &hookd::store::endpoints::Endpoint,
) -> (Uuid, DateTime<Utc>) {
    let id = pending(store, endpoint).await;
    assert_eq!(
        record(store, &[attempt(id, endpoint.id, 1, FAILED)]).await,
        [id]
    );
    let row = get(store, id).await;
    (id, row.completed_at.expect("a failed notification ended"))
}

pub async fn a_recover_pages_through_the_failed_rows_of_its_window_only_for_its_holder<
    S: Backend,
>(
    store: S,
) {
    let shop = create(&store, endpoint()).await;
    let other = create(&store, endpoint()).await;
    // Ended one after another: before the window, its first (inclusive),
    // two more, its last (inclusive), after it.
    let mut ended = Vec::new();
    for _ in 0..5 {
        ended.push(failed(&store, &shop).await);
    }
    for pair in ended.windows(2) {
        assert!(pair[0].1 < pair[1].1, "each ended after the one before");
    }
    let elsewhere = failed(&store, &other).await.0;
    let still_pending = pending(&store, &shop).await;
    let window = Window {
        since: ended[1].1,
        until: ended[3].1,
    };
    let at = now();
    let operation = started(&store, &Operation::recover(shop.id, window, at)).await;
    let (holder, stranger) = (new_id(), new_id());
    let until = at + Duration::seconds(30);
    store
        .lease_operation(holder, at, until)
        .await
        .unwrap()
        .unwrap();

    assert!(store
        .operation_page(operation.id, stranger, 2, at, until)
        .await
        .unwrap()
        .is_none());
    let restarted_at = at + Duration::seconds(1);
    let renewed = at + Duration::seconds(31);
    let first = store
        .operation_page(operation.id, holder, 2, restarted_at, renewed)
        .await
        .unwrap()
        .expect("the holder pages");
    assert_eq!(first.restarted, [(ended[1].0, false), (ended[2].0, false)]);
    let after = first.operation.unwrap();
    assert_eq!((after.matched, after.started), (2, 2));
    assert_eq!(after.cursor, Some((ended[2].1, ended[2].0)));
    assert_eq!(after.status, OperationStatus::Running);
    assert_eq!(after.lease_until, Some(renewed));
    let row = get(&store, ended[1].0).await;
    assert_eq!(
        (row.status, row.next_attempt_at, row.completed_at),
        (Status::Pending, Some(restarted_at), None)
    );

    // The last page is shorter than its limit: the operation is done.
    let last = store
        .operation_page(operation.id, holder, 2, restarted_at, renewed)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(last.restarted, [(ended[3].0, false)]);
    let done = last.operation.unwrap();
    assert_eq!(
        (done.matched, done.started, done.status),
        (3, 3, OperationStatus::Done)
    );
    assert!(done.finished_at.is_some());
    assert!(store
        .operation_page(operation.id, holder, 2, restarted_at, renewed)
        .await
        .unwrap()
        .is_none());

    // Outside the window, another endpoint's, not failed: as they were.
    for id in [ended[0].0, ended[4].0, elsewhere] {
        assert_eq!(get(&store, id).await.status, Status::Failed, "{id}");
    }
    assert_eq!(get(&store, still_pending).await.attempts, 0);
}

/// An endpoint deleted while its recover runs: nothing would send what
/// the recover restarts (the dispatcher cancels what a deleted endpoint
/// holds), so its next page restarts nothing and ends it `failed`, saying
/// why, rather than turning failed notifications pending to be cancelled.
/// A bulk cancel of it ends `done`, as before.
pub async fn a_recover_whose_endpoint_was_deleted_ends_failed_and_restarts_nothing<S: Backend>(
    store: S,
) {
    let shop = create(&store, endpoint()).await;
    let (first, _) = failed(&store, &shop).await;
    let (second, _) = failed(&store, &shop).await;
    let at = now();
    let operation = started(&store, &recover_of(shop.id, at)).await;
    let holder = new_id();
    let until = at + Duration::seconds(30);
    store
        .lease_operation(holder, at, until)
        .await
        .unwrap()
        .unwrap();
    let page = store
        .operation_page(operation.id, holder, 1, at, until)
        .await
        .unwrap()
        .expect("the holder pages");
    assert_eq!(page.restarted, [(first, false)]);

    WriteStore::delete_endpoint(&store, &EndpointRef::Id(shop.id))
        .await
        .unwrap()
        .expect("deleted");
    let page = store
        .operation_page(operation.id, holder, 1, at, until)
        .await
        .unwrap()
        .expect("the holder pages");
    assert!(page.restarted.is_empty(), "{:?}", page.restarted);
    let ended = page.operation.unwrap();
    assert_eq!(ended.status, OperationStatus::Failed);
    assert_eq!(ended.error.as_deref(), Some("the endpoint was deleted"));
    assert_eq!((ended.matched, ended.started), (1, 1));
    assert!(ended.finished_at.is_some());
    assert_eq!(get(&store, second).await.status, Status::Failed);

    // A bulk cancel walks on: the delete cancelled what it would.
    let cancel = started(
        &store,
        &Operation::cancel(shop.id, BulkFilter::default(), at),
    )
    .await;
    let page = one_page(&store, &cancel, at).await;
    assert!(page.cancelled.is_empty());
    assert_eq!(page.operation.unwrap().status, OperationStatus::Done);
}

/// Ends `id` failed; when.
async fn fail<S: Backend>(store: &S, endpoint: Uuid, id: Uuid) -> DateTime<Utc> {
    assert_eq!(
        record(store, &[attempt(id, endpoint, 1, FAILED)]).await,
        [id]
    );
    get(store, id).await.completed_at.expect("ended")
}

/// Leases `operation` (the only one running) and works one page of 10.
async fn one_page<S: Backend>(
    store: &S,
    operation: &Operation,
    at: DateTime<Utc>,
) -> hookd::store::operations::OperationPage {
    let (holder, until) = (new_id(), at + Duration::seconds(30));
    let leased = store.lease_operation(holder, at, until).await.unwrap();
    assert_eq!(leased.map(|o| o.id), Some(operation.id));
    store
        .operation_page(operation.id, holder, 10, at, until)
        .await
        .unwrap()
        .expect("the holder pages")
}

pub async fn a_bulk_retry_restarts_only_the_failed_rows_its_filter_holds<S: Backend>(store: S) {
    let shop = create(&store, endpoint()).await;
    let keyed = |key: &str| {
        let mut item = notification(&shop);
        item.key = Some(key.to_string());
        item
    };
    let first = commit_new(&store, keyed("order-1")).await;
    let second = commit_new(&store, keyed("order-2")).await;
    let other_key = commit_new(&store, keyed("invoice-1")).await;
    let (_, deliveries) = event(&store, None, "order.refunded", &[&shop]).await;
    let delivery = deliveries[0];
    for id in [first, second, other_key, delivery] {
        fail(&store, shop.id, id).await;
    }
    let still_pending = pending(&store, &shop).await;
    let at = now();

    // A page as a dry run reads it: every failure, the delivery with its
    // event's type.
    let read = store
        .failed_page(shop.id, (DateTime::UNIX_EPOCH, Uuid::nil()), at, 10)
        .await
        .unwrap();
    let ids: Vec<Uuid> = read.iter().map(|row| row.id).collect();
    assert_eq!(ids, [first, second, other_key, delivery]);
    assert_eq!(read[3].event_type.as_deref(), Some("order.refunded"));
    assert_eq!(read[0].key.as_deref(), Some("order-1"));

    let by_key = BulkFilter {
        key_prefix: Some("order-".into()),
        ..BulkFilter::default()
    };
    let operation = started(&store, &Operation::retry(shop.id, by_key.clone(), None, at)).await;
    assert_eq!(operation.filter, Some(by_key));
    let page = one_page(&store, &operation, at).await;
    assert_eq!(page.restarted, [(first, false), (second, false)]);
    let done = page.operation.unwrap();
    assert_eq!(
        (done.matched, done.started, done.status),
        (2, 2, OperationStatus::Done)
    );
    for id in [other_key, delivery] {
        assert_eq!(get(&store, id).await.status, Status::Failed);
    }

    // By the event's type: the delivery only.
    let refunds = BulkFilter {
        event_type: Some("order.refunded".into()),
        ..BulkFilter::default()
    };
    let operation = started(&store, &Operation::retry(shop.id, refunds, None, at)).await;
    let page = one_page(&store, &operation, at).await;
    assert_eq!(page.restarted, [(delivery, false)]);
    assert_eq!(get(&store, other_key).await.status, Status::Failed);
    assert_eq!(get(&store, still_pending).await.attempts, 0);
}

pub async fn a_bulk_cancel_cancels_only_the_pending_rows_its_filter_holds_created_before_it<
    S: Backend,
>(
    store: S,
) {
    let shop = create(&store, endpoint()).await;
    let keyed = |key: &str| {
        let mut item = notification(&shop);
        item.key = Some(key.to_string());
        item
    };
    let first = commit_new(&store, keyed("order-1")).await;
    let second = commit_new(&store, keyed("order-2")).await;
    let invoice = commit_new(&store, keyed("invoice-1")).await;
    let ended = commit_new(&store, keyed("order-3")).await;
    fail(&store, shop.id, ended).await;
    let at = now();
    let later = commit_new(&store, keyed("order-4")).await;

    let read = store.endpoint_page(shop.id, Uuid::max(), 10).await.unwrap();
    let ids: Vec<Uuid> = read.iter().map(|row| row.id).collect();
    assert_eq!(ids, [later, ended, invoice, second, first], "newest first");

    let by_key = BulkFilter {
        key_prefix: Some("order-".into()),
        ..BulkFilter::default()
    };
    let operation = started(&store, &Operation::cancel(shop.id, by_key, at)).await;
    let page = one_page(&store, &operation, at).await;
    let mut cancelled = page.cancelled.clone();
    cancelled.sort();
    let mut wanted = vec![first, second];
    wanted.sort();
    assert_eq!(cancelled, wanted);
    let done = page.operation.unwrap();
    assert_eq!(
        (done.matched, done.started, done.status),
        (2, 2, OperationStatus::Done)
    );
    assert_eq!(get(&store, first).await.status, Status::Cancelled);
    assert_eq!(get(&store, invoice).await.status, Status::Pending);
    assert_eq!(get(&store, ended).await.status, Status::Failed);
    assert_eq!(
        get(&store, later).await.status,
        Status::Pending,
        "created after the cancel started"
    );
}

pub async fn purging_operations_takes_only_finished_ones_before_the_bound_up_to_the_limit<
    S: Backend,
>(
    store: S,
) {
    let at = now();
    let mut operations = Vec::new();
    for _ in 0..4 {
        let shop = create(&store, endpoint()).await;
        operations.push(started(&store, &recover_of(shop.id, at)).await.id);
    }
    let holder = new_id();
    while store
        .lease_operation(holder, at, at + Duration::seconds(30))
        .await
        .unwrap()
        .is_some()
    {}
    // Three end (three hours, two hours and an hour ago); one runs on.
    for (id, hours) in operations.iter().zip([3, 2, 1]) {
        store
            .fail_operation(*id, holder, "stopped", at - Duration::hours(hours))
            .await
            .unwrap();
    }
    let running = operations[3];
    let exists = |id: Uuid| {
        let store = &store;
        async move { store.get_operation(id).await.unwrap().is_some() }
    };

    // Before an hour and a half ago, one at a time: the two oldest.
    let bound = at - Duration::minutes(90);
    assert_eq!(store.purge_operations(bound, 1).await.unwrap(), 1);
    assert_eq!(store.purge_operations(bound, 1).await.unwrap(), 1);
    assert_eq!(store.purge_operations(bound, 1).await.unwrap(), 0);
    assert!(!exists(operations[0]).await && !exists(operations[1]).await);
    assert!(exists(operations[2]).await, "it ended after the bound");
    // However late the bound, a running operation stays.
    assert_eq!(
        store
            .purge_operations(at + Duration::days(1), 10)
            .await
            .unwrap(),
        1
    );
    assert!(exists(running).await);
}
