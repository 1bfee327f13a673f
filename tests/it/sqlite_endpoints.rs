//! Endpoints on the SQLite store behave as on PostgreSQL: every field
//! comes back as written, soft delete, the owner filter, keyset pages, and
//! changes that bump the version.

use std::collections::BTreeMap;
use std::pin::pin;

use chrono::{DateTime, Duration, Utc};
use hookd::domain::pull::Delivery;
use hookd::store::endpoints::{Endpoint, EndpointRef, PreviousSecret};
use hookd::store::sqlite::{SqliteOptions, SqliteStore};
use hookd::store::StoreError;
use uuid::Uuid;

async fn store() -> (tempfile::TempDir, SqliteStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("hookd.db"), &SqliteOptions::migrating())
        .await
        .unwrap();
    (dir, store)
}

/// Times as the store keeps them: whole microseconds.
fn at_micros(at: DateTime<Utc>) -> DateTime<Utc> {
    DateTime::from_timestamp_micros(at.timestamp_micros()).unwrap()
}

fn endpoint(uid: Option<&str>, owner: Option<&str>) -> Endpoint {
    let now = Utc::now();
    Endpoint {
        id: hookd::domain::id::new_id(),
        uid: uid.map(str::to_string),
        owner: owner.map(str::to_string),
        url: Some("https://example.com/hook".into()),
        delivery: Delivery::Push,
        description: "orders".into(),
        secret: "whsec_current".into(),
        previous_secrets: vec![PreviousSecret {
            secret: "whsec_old".into(),
            expires_at: at_micros(now + Duration::hours(1)),
        }],
        event_types: Some(vec!["order.*".into()]),
        filter: None,
        schedule_ms: vec![0, 5_000, 60_000],
        schedule_name: None,
        schedule_jitter: 0.0,
        url_secret: false,
        portal_generation: 0,
        rate_limit_per_second: None,
        rate_limit_burst: None,
        fresh_share: None,
        breaker: Default::default(),
        success_body: Some("ok".into()),
        success_filter: None,
        permanent_statuses: vec![410, 404],
        headers: BTreeMap::from([("x-team".to_string(), "billing".to_string())]),
        timeout_ms: Some(3_000),
        max_in_flight: None,
        ordering: Default::default(),
        ordering_on_failure: Default::default(),
        disabled: false,
        disabled_reason: None,
        failing_since: None,
        created_at: now,
        updated_at: now,
        unreadable: None,
    }
}

async fn version(store: &SqliteStore, id: Uuid) -> i64 {
    sqlx::query_scalar("SELECT version FROM endpoints WHERE id = ?")
        .bind(id)
        .fetch_one(store.reader())
        .await
        .unwrap()
}

#[tokio::test]
async fn an_endpoint_comes_back_as_written_by_id_and_by_uid() {
    let (_dir, store) = store().await;
    let written = endpoint(Some("orders"), Some("acme"));
    let created = store.create_endpoint(&written).await.unwrap();

    for by in [
        EndpointRef::Id(written.id),
        EndpointRef::Uid("orders".into()),
    ] {
        let found = store.find_endpoint(&by).await.unwrap().expect("found");
        assert_eq!(found.id, written.id);
        assert_eq!(found.uid, written.uid);
        assert_eq!(found.owner, written.owner);
        assert_eq!(found.url, written.url);
        assert_eq!(found.delivery, Delivery::Push);
        assert_eq!(found.description, written.description);
        assert_eq!(found.secret, written.secret);
        assert!(found.previous_secrets == written.previous_secrets);
        assert_eq!(found.event_types, written.event_types);
        assert_eq!(found.schedule_ms, written.schedule_ms);
        assert_eq!(found.success_body, written.success_body);
        assert_eq!(found.permanent_statuses, written.permanent_statuses);
        assert!(found.headers == written.headers);
        assert_eq!(found.timeout_ms, written.timeout_ms);
        assert_eq!(found.max_in_flight, None);
        assert!(!found.disabled);
        assert_eq!(found.created_at, created.created_at);
        assert_eq!(found.created_at, found.updated_at);
    }
    assert!(created.created_at <= Utc::now());
    assert_eq!(version(&store, written.id).await, 0);
    assert!(store
        .find_endpoint(&EndpointRef::Uid("unknown".into()))
        .await
        .unwrap()
        .is_none());

    let many = store
        .find_endpoints(&[written.id, Uuid::now_v7()], &["orders".into()])
        .await
        .unwrap();
    assert_eq!(many.len(), 1);
}

#[tokio::test]
async fn a_live_uid_names_one_endpoint() {
    let (_dir, store) = store().await;
    store
        .create_endpoint(&endpoint(Some("orders"), None))
        .await
        .unwrap();
    let error = store
        .create_endpoint(&endpoint(Some("orders"), None))
        .await
        .expect_err("uid taken");
    assert!(
        matches!(&error, StoreError::Conflict(name) if name == "endpoints_uid_key"),
        "{error:?}"
    );
}

#[tokio::test]
async fn endpoints_are_listed_newest_first_a_page_at_a_time_and_by_owner() {
    let (_dir, store) = store().await;
    let mut ids = Vec::new();
    for i in 0..5 {
        let owner = if i % 2 == 0 { "acme" } else { "globex" };
        let e = endpoint(None, Some(owner));
        store.create_endpoint(&e).await.unwrap();
        ids.push(e.id);
    }
    let gone = endpoint(None, Some("acme"));
    store.create_endpoint(&gone).await.unwrap();
    store
        .delete_endpoint(&EndpointRef::Id(gone.id))
        .await
        .unwrap();
    ids.reverse();

    let first = store.list_endpoints(None, 2, None).await.unwrap();
    let first: Vec<Uuid> = first.iter().map(|e| e.id).collect();
    assert_eq!(first, ids[..2]);
    let next = store
        .list_endpoints(Some(first[1]), 10, None)
        .await
        .unwrap();
    let next: Vec<Uuid> = next.iter().map(|e| e.id).collect();
    assert_eq!(next, ids[2..]);

    let acme = store.list_endpoints(None, 10, Some("acme")).await.unwrap();
    let acme: Vec<Uuid> = acme.iter().map(|e| e.id).collect();
    assert_eq!(acme, [ids[0], ids[2], ids[4]]);
}

#[tokio::test]
async fn a_change_is_written_with_a_new_version_and_a_refused_one_writes_nothing() {
    let (_dir, store) = store().await;
    let e = endpoint(Some("orders"), None);
    store.create_endpoint(&e).await.unwrap();
    let by = EndpointRef::Id(e.id);

    let refused = store
        .modify_endpoint(&by, |e| {
            e.description = "never".into();
            Err("no")
        })
        .await
        .unwrap();
    assert!(matches!(refused, Some(Err("no"))));
    assert_eq!(version(&store, e.id).await, 0);

    let changed = store
        .modify_endpoint(&by, |e| {
            e.description = "invoices".into();
            e.schedule_ms = vec![1_000];
            Ok::<_, ()>(())
        })
        .await
        .unwrap()
        .expect("found")
        .unwrap();
    assert_eq!(changed.description, "invoices");
    assert!(changed.updated_at >= changed.created_at);
    let found = store.find_endpoint(&by).await.unwrap().unwrap();
    assert_eq!(found.description, "invoices");
    assert_eq!(found.schedule_ms, [1_000]);
    assert_eq!(version(&store, e.id).await, 1);

    let unknown = store
        .modify_endpoint(&EndpointRef::Id(Uuid::now_v7()), |_| Ok::<_, ()>(()))
        .await
        .unwrap();
    assert!(unknown.is_none());
}

#[tokio::test]
async fn re_enabling_an_endpoint_clears_what_hookd_recorded_of_its_failures() {
    let (_dir, store) = store().await;
    let e = endpoint(None, None);
    store.create_endpoint(&e).await.unwrap();
    // As the periodic check leaves a failing endpoint it disabled.
    sqlx::query(
        "UPDATE endpoints SET disabled = 1, disabled_reason = 'failing', failing_since = 1 WHERE id = ?",
    )
    .bind(e.id)
    .execute(store.writer())
    .await
    .unwrap();
    let by = EndpointRef::Id(e.id);

    let still = store
        .modify_endpoint(&by, |e| {
            e.description = "still off".into();
            Ok::<_, ()>(())
        })
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(still.disabled_reason.as_deref(), Some("failing"));
    assert!(still.failing_since.is_some());

    let enabled = store
        .modify_endpoint(&by, |e| {
            e.disabled = false;
            Ok::<_, ()>(())
        })
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(enabled.disabled_reason, None);
    assert_eq!(enabled.failing_since, None);
}

#[tokio::test]
async fn a_deleted_endpoint_is_gone_frees_its_uid_and_cancels_its_pending_notifications() {
    let (_dir, store) = store().await;
    let e = endpoint(Some("orders"), None);
    store.create_endpoint(&e).await.unwrap();
    let insert = |status: &'static str| {
        let store = store.clone();
        let endpoint_id = e.id;
        async move {
            let id = Uuid::now_v7();
            sqlx::query(
                "INSERT INTO notifications (id, endpoint_id, content_type, body, schedule_ms, \
                 status, deliver_at, next_attempt_at, created_at, updated_at) \
                 VALUES (?, ?, 'application/json', x'7b7d', '[0]', ?, 0, 0, 0, 0)",
            )
            .bind(id)
            .bind(endpoint_id)
            .bind(status)
            .execute(store.writer())
            .await
            .unwrap();
            id
        }
    };
    let pending = insert("pending").await;
    let succeeded = insert("succeeded").await;

    let cancelled = store
        .delete_endpoint(&EndpointRef::Uid("orders".into()))
        .await
        .unwrap()
        .expect("there was one");
    assert_eq!(cancelled, [pending]);
    let statuses: Vec<(Uuid, String)> =
        sqlx::query_as("SELECT id, status FROM notifications ORDER BY id")
            .fetch_all(store.reader())
            .await
            .unwrap();
    assert_eq!(
        statuses,
        [
            (pending, "cancelled".into()),
            (succeeded, "succeeded".into())
        ]
    );

    assert!(store
        .find_endpoint(&EndpointRef::Id(e.id))
        .await
        .unwrap()
        .is_none());
    assert!(store
        .delete_endpoint(&EndpointRef::Id(e.id))
        .await
        .unwrap()
        .is_none());
    store
        .create_endpoint(&endpoint(Some("orders"), None))
        .await
        .expect("the uid is free again");
}

/// A change stamps its time with the writer held: a read of token changes
/// that took the writer while a delete waited for it still sees the delete
/// the next time, instead of a time older than its own.
#[tokio::test]
async fn a_delete_waiting_for_the_writer_is_read_by_the_next_read_of_token_changes() {
    let (_dir, store) = store().await;
    let mut pull = endpoint(Some("orders"), None);
    pull.url = None;
    pull.delivery = Delivery::Pull;
    store.create_endpoint(&pull).await.unwrap();
    assert!(store.set_consumer_token(pull.id, &[7; 32]).await.unwrap());
    let first = store.consumer_tokens(None).await.unwrap();

    // The writer held, a read of changes queues for it, then the delete.
    let held = store.writer().acquire().await.unwrap();
    let mut read = pin!(store.consumer_tokens(Some(first.read_at)));
    assert!(futures::poll!(read.as_mut()).is_pending());
    let by = EndpointRef::Id(pull.id);
    let mut delete = pin!(store.delete_endpoint(&by));
    assert!(futures::poll!(delete.as_mut()).is_pending());
    // The read's clock is past anything the delete could have taken so far.
    let queued = Utc::now().timestamp_micros();
    while Utc::now().timestamp_micros() <= queued {
        std::hint::spin_loop();
    }
    drop(held);

    let during = read.await.unwrap();
    assert!(
        during.rows.iter().all(|row| !row.deleted),
        "the read ran before the delete"
    );
    delete.await.unwrap().expect("deleted");
    let after = store.consumer_tokens(Some(during.read_at)).await.unwrap();
    assert!(
        after
            .rows
            .iter()
            .any(|row| row.endpoint_id == pull.id && row.deleted),
        "the delete is read as a change after the read it waited behind"
    );
}
