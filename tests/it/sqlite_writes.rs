//! The embedded store's write path and reads on real SQLite files: a group
//! commit of notifications and events, idempotency keys, and what the API
//! reads back.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};
use hookd::domain::schedule::Schedule;
use hookd::domain::status::Status;
use hookd::store::events::{EventFilter, EventInserted, NewDelivery, NewEvent};
use hookd::store::notifications::{Inserted, NewNotification, Notification, NotificationFilter};
use hookd::store::sqlite::{SqliteOptions, SqliteStore};
use hookd::store::writes::Writes;
use hookd::store::StoreError;
use tempfile::TempDir;
use uuid::Uuid;

/// A migrated store on a new file; the directory lives as long as it.
pub(crate) async fn store() -> (TempDir, SqliteStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("hookd.db"), &SqliteOptions::migrating())
        .await
        .unwrap();
    (dir, store)
}

/// Now, at the microsecond precision both backends keep.
pub(crate) fn now() -> DateTime<Utc> {
    DateTime::from_timestamp_micros(Utc::now().timestamp_micros()).unwrap()
}

/// A push endpoint written as the schema wants it (the endpoint code is
/// not what these tests are about), at `version`.
pub(crate) async fn endpoint(store: &SqliteStore, version: i64) -> Uuid {
    let id = Uuid::now_v7();
    sqlx::query(
        "INSERT INTO endpoints (id, url, secret, schedule_ms, version, created_at, updated_at) \
         VALUES (?, 'https://example.com/hook', 'whsec_x', '[1000]', ?, 0, 0)",
    )
    .bind(id)
    .bind(version)
    .execute(store.writer())
    .await
    .unwrap();
    id
}

/// `endpoint` of `owner`: an event reaches only its owner's endpoints.
async fn owned_endpoint(store: &SqliteStore, version: i64, owner: &str) -> Uuid {
    let id = endpoint(store, version).await;
    sqlx::query("UPDATE endpoints SET owner = ? WHERE id = ?")
        .bind(owner)
        .bind(id)
        .execute(store.writer())
        .await
        .unwrap();
    id
}

pub(crate) fn new_notification(
    endpoint_id: Uuid,
    key: Option<&str>,
    body: &str,
) -> NewNotification {
    let at = now();
    NewNotification {
        id: Uuid::now_v7(),
        endpoint_id,
        key: key.map(str::to_string),
        event_type: Some("order.paid".into()),
        content_type: "application/json".into(),
        body: body.as_bytes().to_vec(),
        headers: BTreeMap::new(),
        schedule: Schedule::default(),
        deliver_at: at,
        next_attempt_at: at,
        url: None,
        pull: false,
        order_key: None,
        ordered: false,
    }
}

pub(crate) async fn commit_one(store: &SqliteStore, item: NewNotification) -> Inserted {
    let writes = Writes {
        notifications: vec![item],
        ..Writes::default()
    };
    let mut committed = store.commit(writes).await.unwrap();
    committed.notifications.remove(0)
}

fn created(inserted: &Inserted) -> &Notification {
    match inserted {
        Inserted::Created(n) => n,
        other => panic!("not created: {other:?}"),
    }
}

/// Every field, times to the microsecond.
fn assert_same(read: &Notification, written: &Notification) {
    assert_eq!(read.id, written.id);
    assert_eq!(read.endpoint_id, written.endpoint_id);
    assert_eq!(read.key, written.key);
    assert_eq!(read.event_type, written.event_type);
    assert_eq!(read.content_type, written.content_type);
    assert_eq!(read.body, written.body);
    assert_eq!(read.headers, written.headers);
    assert_eq!(read.schedule_ms, written.schedule_ms);
    assert_eq!(read.schedule_name, written.schedule_name);
    assert_eq!(read.status, written.status);
    assert_eq!(read.attempts, written.attempts);
    assert_eq!(read.series_start, written.series_start);
    assert_eq!(read.deliver_at, written.deliver_at);
    assert_eq!(read.next_attempt_at, written.next_attempt_at);
    assert_eq!(read.last_attempt_at, written.last_attempt_at);
    assert_eq!(read.last_status_code, written.last_status_code);
    assert_eq!(read.last_error, written.last_error);
    assert_eq!(read.created_at, written.created_at);
    assert_eq!(read.updated_at, written.updated_at);
    assert_eq!(read.completed_at, written.completed_at);
    assert_eq!(read.event_id, written.event_id);
    assert_eq!(read.url, written.url);
    assert_eq!(read.pull, written.pull);
    assert_eq!(read.leased, written.leased);
}

#[tokio::test]
async fn a_committed_batch_reads_back_field_for_field() {
    let (_dir, store) = store().await;
    let endpoint_id = endpoint(&store, 7).await;
    let mut full = new_notification(endpoint_id, Some("order-1"), "");
    full.body = vec![0, 159, 146, 150, 255];
    full.content_type = "application/octet-stream".into();
    full.headers = BTreeMap::from([
        ("x-tenant".into(), "acme".into()),
        ("x-b".into(), "2".into()),
    ]);
    full.schedule = Schedule::from_stored(None, &[1_000, 60_000, 3_600_000]);
    full.deliver_at = now() + Duration::microseconds(1_234_567);
    full.next_attempt_at = full.deliver_at;
    full.url = Some("https://example.com/elsewhere?token=1".into());
    let plain = new_notification(endpoint_id, None, r#"{"n":1}"#);
    let before = now();

    let committed = store
        .commit(Writes {
            notifications: vec![full.clone(), plain.clone()],
            events: vec![],
            endpoint_versions: true,
        })
        .await
        .unwrap();

    assert_eq!(committed.notifications.len(), 2);
    for (inserted, given) in committed.notifications.iter().zip([&full, &plain]) {
        let row = created(inserted);
        assert_eq!(row.id, given.id, "in the order given");
        assert!(row.created_at >= before && row.created_at <= now());
        let read = store.get_notification(row.id).await.unwrap().unwrap();
        assert_same(&read, row);
        assert_eq!(committed.endpoint_versions.get(&row.id), Some(&7));
    }
    let read = store.get_notification(full.id).await.unwrap().unwrap();
    assert_eq!(read.body, [0, 159, 146, 150, 255]);
    assert_eq!(read.schedule(), full.schedule);
    assert_eq!(read.status(), Status::Pending);
    assert!(store
        .get_notification(Uuid::now_v7())
        .await
        .unwrap()
        .is_none());
}

#[tokio::test]
async fn a_key_met_again_returns_the_existing_row_or_a_conflict_by_payload() {
    let (_dir, store) = store().await;
    let endpoint_id = endpoint(&store, 0).await;
    let other_endpoint = endpoint(&store, 0).await;
    let first = created(
        &commit_one(
            &store,
            new_notification(endpoint_id, Some("k"), r#"{"a":1,"b":2}"#),
        )
        .await,
    )
    .clone();

    // The same JSON value written otherwise is the same payload.
    let again = new_notification(endpoint_id, Some("k"), r#"{ "b": 2, "a": 1 }"#);
    match commit_one(&store, again.clone()).await {
        Inserted::Existing(row) => assert_same(&row, &first),
        other => panic!("not the existing row: {other:?}"),
    }
    match commit_one(
        &store,
        new_notification(endpoint_id, Some("k"), r#"{"a":2}"#),
    )
    .await
    {
        Inserted::KeyConflict(row) => assert_eq!(row.id, first.id),
        other => panic!("not a conflict: {other:?}"),
    }
    assert!(store.get_notification(again.id).await.unwrap().is_none());

    // A key names one row per endpoint; in one batch, the first given wins.
    let a = new_notification(other_endpoint, Some("k"), "1");
    let b = new_notification(other_endpoint, Some("k"), "1");
    let c = new_notification(other_endpoint, Some("k"), "2");
    let committed = store
        .commit(Writes {
            notifications: vec![a.clone(), b, c],
            ..Writes::default()
        })
        .await
        .unwrap();
    let results = committed.notifications;
    assert_eq!(created(&results[0]).id, a.id);
    assert!(matches!(&results[1], Inserted::Existing(row) if row.id == a.id));
    assert!(matches!(&results[2], Inserted::KeyConflict(row) if row.id == a.id));
    let listed = store
        .list_notifications(&NotificationFilter {
            key: Some("k".into()),
            limit: 10,
            ..NotificationFilter::default()
        })
        .await
        .unwrap();
    let mut ids: Vec<Uuid> = listed.iter().map(|n| n.id).collect();
    ids.sort();
    assert_eq!(ids, [first.id, a.id]);
}

fn new_event(owner: Option<&str>, key: Option<&str>, endpoints: &[(Uuid, bool)]) -> NewEvent {
    let at = now();
    NewEvent {
        id: Uuid::now_v7(),
        owner: owner.map(str::to_string),
        event_type: "invoice.paid".into(),
        key: key.map(str::to_string),
        content_type: "application/json".into(),
        body: br#"{"invoice":42}"#.to_vec(),
        deliver_at: at,
        headers: BTreeMap::from([("x-source".into(), "billing".into())]),
        order_key: None,
        deliveries: endpoints
            .iter()
            .map(|&(endpoint_id, pull)| NewDelivery {
                id: Uuid::now_v7(),
                headers: None,
                ordered: false,
                place: Default::default(),
                endpoint_id,
                schedule: Schedule::from_stored(Some("custom".into()), &[5, 10]),
                next_attempt_at: at + Duration::seconds(1),
                pull,
            })
            .collect(),
    }
}

#[tokio::test]
async fn an_event_commits_with_its_deliveries_which_read_its_type_and_payload() {
    let (_dir, store) = store().await;
    let push = owned_endpoint(&store, 3, "acme").await;
    let pull = owned_endpoint(&store, 4, "acme").await;
    let event = new_event(Some("acme"), Some("inv-42"), &[(push, false), (pull, true)]);
    let (event_id, delivery_ids) = (event.id, [event.deliveries[0].id, event.deliveries[1].id]);
    let committed = store
        .commit(Writes {
            notifications: vec![],
            events: vec![event],
            endpoint_versions: true,
        })
        .await
        .unwrap();

    let EventInserted::Created {
        event: row,
        push: pushed,
        headers,
        pulled,
    } = &committed.events[0]
    else {
        panic!("not created");
    };
    assert_eq!(row.deliveries, 2);
    assert_eq!(
        pushed.iter().map(|d| d.id).collect::<Vec<_>>(),
        [delivery_ids[0]]
    );
    assert_eq!(pulled, &[pull]);
    assert_eq!(headers.get("x-source").map(String::as_str), Some("billing"));
    assert_eq!(committed.endpoint_versions.get(&delivery_ids[0]), Some(&3));
    assert_eq!(committed.endpoint_versions.get(&delivery_ids[1]), Some(&4));
    assert_eq!(
        committed.due(),
        [(delivery_ids[0], pushed[0].next_attempt_at)]
    );

    let stored = store.get_event(event_id).await.unwrap().unwrap();
    assert_eq!(stored.body, br#"{"invoice":42}"#);
    assert_eq!(stored.created_at, row.created_at);
    assert_eq!(stored.deliver_at, row.deliver_at);
    let delivery = store
        .get_notification(delivery_ids[1])
        .await
        .unwrap()
        .unwrap();
    assert_eq!(delivery.event_id, Some(event_id));
    assert_eq!(delivery.event_type.as_deref(), Some("invoice.paid"));
    assert_eq!(delivery.body, br#"{"invoice":42}"#);
    assert!(delivery.pull);
    assert_eq!(delivery.schedule_name.as_deref(), Some("custom"));
    assert_eq!(delivery.schedule_ms, [5, 10]);
    assert_eq!(delivery.headers, *headers);
    assert_eq!(
        store.event_counts(event_id).await.unwrap(),
        [(Status::Pending, 2)]
    );

    // The key again: the event as it is, and no delivery written.
    let same = new_event(Some("acme"), Some("inv-42"), &[(push, false)]);
    let mut changed = new_event(Some("acme"), Some("inv-42"), &[(push, false)]);
    changed.event_type = "invoice.voided".into();
    let unowned = new_event(None, Some("inv-42"), &[]);
    let again = store
        .commit(Writes {
            events: vec![same, changed, unowned],
            ..Writes::default()
        })
        .await
        .unwrap();
    assert!(matches!(&again.events[0], EventInserted::Existing(e) if e.id == event_id));
    assert!(matches!(&again.events[1], EventInserted::KeyConflict(e) if e.id == event_id));
    assert!(matches!(&again.events[2], EventInserted::Created { .. }));
    assert_eq!(
        store.event_counts(event_id).await.unwrap(),
        [(Status::Pending, 2)]
    );
    // Owners without a name share one namespace.
    let unowned_again = new_event(None, Some("inv-42"), &[]);
    let third = store
        .commit(Writes {
            events: vec![unowned_again],
            ..Writes::default()
        })
        .await
        .unwrap();
    assert!(matches!(&third.events[0], EventInserted::Existing(_)));
}

#[tokio::test]
async fn a_commit_that_fails_stores_nothing_of_its_batch() {
    let (_dir, store) = store().await;
    let endpoint_id = owned_endpoint(&store, 0, "acme").await;
    let taken = created(&commit_one(&store, new_notification(endpoint_id, None, "1")).await).id;
    let fine = new_notification(endpoint_id, Some("fine"), "2");
    let mut event = new_event(Some("acme"), None, &[(endpoint_id, false)]);
    // A delivery whose id is taken: its insert fails after the rest.
    event.deliveries[0].id = taken;
    let event_id = event.id;

    let error = store
        .commit(Writes {
            notifications: vec![fine.clone()],
            events: vec![event],
            endpoint_versions: false,
        })
        .await
        .expect_err("the delivery's id is taken");
    assert!(
        matches!(&error, StoreError::Conflict(name) if name == "notifications_pkey"),
        "{error:?}"
    );
    assert!(store.get_notification(fine.id).await.unwrap().is_none());
    assert!(store.get_event(event_id).await.unwrap().is_none());
}

#[tokio::test]
async fn events_list_newest_first_by_owner_type_and_key_in_pages() {
    let (_dir, store) = store().await;
    let mut ids = Vec::new();
    for (owner, key) in [
        (Some("a"), Some("1")),
        (None, None),
        (Some("a"), None),
        (Some("b"), Some("1")),
    ] {
        let event = new_event(owner, key, &[]);
        ids.push(event.id);
        store
            .commit(Writes {
                events: vec![event],
                ..Writes::default()
            })
            .await
            .unwrap();
    }
    let list = |filter: EventFilter| {
        let store = store.clone();
        async move {
            let events = store.list_events(&filter).await.unwrap();
            assert!(events.iter().all(|e| e.body.is_empty()), "no payloads");
            events.iter().map(|e| e.id).collect::<Vec<_>>()
        }
    };
    let all = EventFilter {
        limit: 10,
        ..EventFilter::default()
    };
    assert_eq!(list(all.clone()).await, [ids[3], ids[2], ids[1], ids[0]]);
    let owned_by_a = EventFilter {
        owner: Some(Some("a".into())),
        ..all.clone()
    };
    assert_eq!(list(owned_by_a).await, [ids[2], ids[0]]);
    let unowned = EventFilter {
        owner: Some(None),
        ..all.clone()
    };
    assert_eq!(list(unowned).await, [ids[1]]);
    let keyed = EventFilter {
        key: Some("1".into()),
        event_type: Some("invoice.paid".into()),
        ..all.clone()
    };
    assert_eq!(list(keyed).await, [ids[3], ids[0]]);
    let other_type = EventFilter {
        event_type: Some("nope".into()),
        ..all.clone()
    };
    assert!(list(other_type).await.is_empty());
    let first_page = EventFilter {
        limit: 2,
        ..all.clone()
    };
    assert_eq!(list(first_page).await, [ids[3], ids[2]]);
    let next_page = EventFilter {
        limit: 2,
        before: Some(ids[2]),
        ..all
    };
    assert_eq!(list(next_page).await, [ids[1], ids[0]]);
}

#[tokio::test]
async fn a_batch_larger_than_one_statement_commits_every_row_in_order() {
    let (_dir, store) = store().await;
    let endpoint_id = endpoint(&store, 2).await;
    let items: Vec<NewNotification> = (0..203)
        .map(|i| new_notification(endpoint_id, Some(&format!("k{i}")), &i.to_string()))
        .collect();
    let endpoints: Vec<(Uuid, bool)> = (0..131).map(|_| (endpoint_id, false)).collect();
    let event = new_event(None, None, &endpoints);
    let event_id = event.id;
    let committed = store
        .commit(Writes {
            notifications: items.clone(),
            events: vec![event],
            endpoint_versions: false,
        })
        .await
        .unwrap();
    let ids: Vec<Uuid> = committed
        .notifications
        .iter()
        .map(|r| created(r).id)
        .collect();
    assert_eq!(ids, items.iter().map(|i| i.id).collect::<Vec<_>>());
    assert!(committed.endpoint_versions.is_empty(), "not asked for");
    assert_eq!(committed.due().len(), 203 + 131);
    let deliveries = store
        .list_notifications(&NotificationFilter {
            event_id: Some(event_id),
            limit: 1000,
            ..NotificationFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(deliveries.len(), 131);
    let all = store
        .list_notifications(&NotificationFilter {
            endpoint_id: Some(endpoint_id),
            limit: 1000,
            ..NotificationFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(all.len(), 203 + 131);
}
