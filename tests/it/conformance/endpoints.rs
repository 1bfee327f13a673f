//! Endpoints through the seams: create, find, list, change under lock,
//! delete, and the subscribers a fan-out reads.

use std::collections::BTreeMap;

use hookd::domain::payload_filter::PayloadFilter;
use hookd::domain::problem::Problem;
use hookd::domain::pull::Delivery;
use hookd::domain::status::Status;
use hookd::store::endpoints::{Endpoint, EndpointRef};
use hookd::store::seams::{ReadStore, WriteStore};
use hookd::store::StoreError;

use super::fixtures::{attempt, create, endpoint, get, pending, record, FAILED};
use super::Backend;

/// A filter with each kind of node: paths, operators, `$or`, a large integer.
fn amount_filter() -> PayloadFilter {
    PayloadFilter::parse(serde_json::json!({
        "amount": {"$gte": 100, "$lt": 9_007_199_254_740_993_u64},
        "currency": "CNY",
        "$or": [{"customer.tier": {"$in": ["gold", "silver"]}}, {"rush": {"$exists": true}}]
    }))
    .unwrap()
}

/// A receiver's acknowledgement, as `success_filter` holds it.
fn code_filter() -> PayloadFilter {
    PayloadFilter::parse(serde_json::json!({"code": {"$in": ["SUCCESS", "OK"]}})).unwrap()
}

fn ids(endpoints: &[Endpoint]) -> Vec<uuid::Uuid> {
    endpoints.iter().map(|e| e.id).collect()
}

pub async fn a_created_endpoint_is_found_by_id_and_by_uid_as_it_was_given<S: Backend>(store: S) {
    let given = Endpoint {
        owner: Some("acme".into()),
        event_types: Some(vec!["order.*".into()]),
        filter: Some(amount_filter()),
        success_body: Some("ok".into()),
        permanent_statuses: vec![404, 410],
        headers: BTreeMap::from([("x-team".to_string(), "blue".to_string())]),
        timeout_ms: Some(2500),
        max_in_flight: Some(4),
        ..endpoint()
    };
    let created = create(&store, given.clone()).await;
    assert_eq!(created.id, given.id);
    assert!(!created.disabled);
    assert_eq!(created.failing_since, None);

    let uid = given.uid.clone().unwrap();
    for by in [EndpointRef::Id(given.id), EndpointRef::Uid(uid.clone())] {
        let found = ReadStore::find_endpoint(&store, &by)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(found.id, given.id, "{by:?}");
        assert_eq!(found.uid.as_deref(), Some(uid.as_str()));
        assert_eq!(found.owner.as_deref(), Some("acme"));
        assert_eq!(found.url, given.url);
        assert_eq!(found.delivery, Delivery::Push);
        assert_eq!(found.secret, given.secret);
        assert_eq!(found.event_types, given.event_types);
        assert_eq!(found.filter, given.filter);
        assert_eq!(found.schedule(), given.schedule());
        assert_eq!(found.success_body.as_deref(), Some("ok"));
        assert_eq!(found.permanent_statuses, [404, 410]);
        assert_eq!(found.headers, given.headers);
        assert_eq!(
            (found.timeout_ms, found.max_in_flight),
            (Some(2500), Some(4))
        );
    }
    let write_side = WriteStore::find_endpoint(&store, &EndpointRef::Uid(uid.clone()))
        .await
        .unwrap();
    assert_eq!(write_side.map(|e| e.id), Some(given.id));

    let other = create(&store, endpoint()).await;
    let mut found = WriteStore::find_endpoints(&store, &[other.id], &[uid])
        .await
        .unwrap();
    found.sort_by_key(|e| e.id);
    let mut expected = vec![given.id, other.id];
    expected.sort();
    assert_eq!(ids(&found), expected);
    let nobody = EndpointRef::Id(hookd::domain::id::new_id());
    assert!(ReadStore::find_endpoint(&store, &nobody)
        .await
        .unwrap()
        .is_none());
}

pub async fn a_duplicate_uid_is_a_conflict_and_stores_nothing<S: Backend>(store: S) {
    let first = create(&store, endpoint()).await;
    let twin = Endpoint {
        uid: first.uid.clone(),
        ..endpoint()
    };
    let refused = WriteStore::create_endpoint(&store, &twin).await;
    assert!(
        matches!(refused, Err(StoreError::Conflict(_))),
        "{refused:?}"
    );
    assert!(ReadStore::find_endpoint(&store, &EndpointRef::Id(twin.id))
        .await
        .unwrap()
        .is_none());
    // The same id again too.
    let same_id = Endpoint {
        uid: None,
        ..first.clone()
    };
    let refused = WriteStore::create_endpoint(&store, &same_id).await;
    assert!(
        matches!(refused, Err(StoreError::Conflict(_))),
        "{refused:?}"
    );
}

pub async fn endpoints_list_newest_first_by_keyset_and_by_owner<S: Backend>(store: S) {
    let mut made = Vec::new();
    for owner in ["acme", "globex", "acme", "acme"] {
        made.push(
            create(
                &store,
                Endpoint {
                    owner: Some(owner.into()),
                    ..endpoint()
                },
            )
            .await,
        );
    }
    let gone = create(&store, endpoint()).await;
    WriteStore::delete_endpoint(&store, &EndpointRef::Id(gone.id))
        .await
        .unwrap();
    let newest_first: Vec<_> = made.iter().rev().map(|e| e.id).collect();

    let page = ReadStore::list_endpoints(&store, None, 3, None)
        .await
        .unwrap();
    assert_eq!(ids(&page), newest_first[..3]);
    let rest = ReadStore::list_endpoints(&store, Some(page[2].id), 3, None)
        .await
        .unwrap();
    assert_eq!(
        ids(&rest),
        newest_first[3..],
        "the deleted one is not listed"
    );

    let acme = ReadStore::list_endpoints(&store, None, 10, Some("acme"))
        .await
        .unwrap();
    assert_eq!(ids(&acme), [made[3].id, made[2].id, made[0].id]);
    let acme_after = ReadStore::list_endpoints(&store, Some(made[2].id), 10, Some("acme"))
        .await
        .unwrap();
    assert_eq!(ids(&acme_after), [made[0].id]);
    assert!(ReadStore::list_endpoints(&store, None, 10, Some("initech"))
        .await
        .unwrap()
        .is_empty());
}

pub async fn a_change_under_lock_is_written_and_a_refused_one_changes_nothing<S: Backend>(
    store: S,
) {
    let made = create(&store, endpoint()).await;
    let by = EndpointRef::Uid(made.uid.clone().unwrap());
    let changed = WriteStore::modify_endpoint(
        &store,
        &by,
        Box::new(|e: &mut Endpoint| {
            e.description = "changed".into();
            e.url = Some("http://127.0.0.1:2/new".into());
            e.owner = Some("acme".into());
            e.filter = Some(amount_filter());
            e.success_filter = Some(code_filter());
            Ok(())
        }),
    )
    .await
    .unwrap()
    .expect("found")
    .expect("accepted");
    assert_eq!(changed.description, "changed");
    assert_eq!(changed.filter, Some(amount_filter()));
    assert_eq!(changed.success_filter, Some(code_filter()));
    assert!(changed.updated_at >= made.updated_at);

    let refused = WriteStore::modify_endpoint(
        &store,
        &EndpointRef::Id(made.id),
        Box::new(|e: &mut Endpoint| {
            e.description = "half way".into();
            Err(Problem::not_found("the change"))
        }),
    )
    .await
    .unwrap()
    .expect("found");
    assert!(refused.is_err());
    let read = ReadStore::find_endpoint(&store, &EndpointRef::Id(made.id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(read.description, "changed");
    assert_eq!(read.url.as_deref(), Some("http://127.0.0.1:2/new"));
    assert_eq!(read.owner.as_deref(), Some("acme"));
    assert_eq!(read.filter, Some(amount_filter()));
    assert_eq!(read.success_filter, Some(code_filter()));
    let cleared = WriteStore::modify_endpoint(
        &store,
        &by,
        Box::new(|e: &mut Endpoint| {
            e.filter = None;
            e.success_filter = None;
            Ok(())
        }),
    )
    .await
    .unwrap()
    .expect("found")
    .expect("accepted");
    assert_eq!(cleared.filter, None);
    assert_eq!(cleared.success_filter, None);

    let nobody = WriteStore::modify_endpoint(
        &store,
        &EndpointRef::Uid("nobody".into()),
        Box::new(|_: &mut Endpoint| Ok(())),
    )
    .await
    .unwrap();
    assert!(nobody.is_none());
}

pub async fn deleting_an_endpoint_cancels_its_pending_notifications_and_frees_its_uid<
    S: Backend,
>(
    store: S,
) {
    let made = create(&store, endpoint()).await;
    let other = create(&store, endpoint()).await;
    let (a, b) = (pending(&store, &made).await, pending(&store, &made).await);
    let done = pending(&store, &made).await;
    record(&store, &[attempt(done, made.id, 1, FAILED)]).await;
    let elsewhere = pending(&store, &other).await;

    let by = EndpointRef::Uid(made.uid.clone().unwrap());
    let mut cancelled = WriteStore::delete_endpoint(&store, &by)
        .await
        .unwrap()
        .expect("it existed");
    cancelled.sort();
    let mut expected = vec![a, b];
    expected.sort();
    assert_eq!(cancelled, expected);
    // The history stays, final rows as they were.
    assert_eq!(get(&store, a).await.status, Status::Cancelled);
    assert!(get(&store, a).await.completed_at.is_some());
    assert_eq!(get(&store, done).await.status, Status::Failed);
    assert_eq!(get(&store, elsewhere).await.status, Status::Pending);

    assert!(ReadStore::find_endpoint(&store, &EndpointRef::Id(made.id))
        .await
        .unwrap()
        .is_none());
    assert!(WriteStore::delete_endpoint(&store, &by)
        .await
        .unwrap()
        .is_none());
    // The uid is free for a new endpoint.
    let reborn = Endpoint {
        uid: made.uid.clone(),
        ..endpoint()
    };
    create(&store, reborn.clone()).await;
    let found = ReadStore::find_endpoint(&store, &by)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found.id, reborn.id);
}

pub async fn subscribers_are_the_live_enabled_endpoints_of_the_owners_asked<S: Backend>(store: S) {
    let owned = |owner: Option<&str>| Endpoint {
        owner: owner.map(str::to_string),
        ..endpoint()
    };
    let acme = create(
        &store,
        Endpoint {
            filter: Some(amount_filter()),
            ..owned(Some("acme"))
        },
    )
    .await;
    let unowned = create(&store, owned(None)).await;
    let globex = create(&store, owned(Some("globex"))).await;
    let disabled = create(
        &store,
        Endpoint {
            disabled: true,
            ..owned(Some("acme"))
        },
    )
    .await;
    let deleted = create(&store, owned(Some("acme"))).await;
    WriteStore::delete_endpoint(&store, &EndpointRef::Id(deleted.id))
        .await
        .unwrap();

    let of = |owners: Vec<Option<String>>| {
        let store = &store;
        async move {
            let mut found: Vec<_> = WriteStore::subscribers(store, &owners)
                .await
                .unwrap()
                .into_iter()
                .map(|s| s.id)
                .collect();
            found.sort();
            found
        }
    };
    assert_eq!(of(vec![Some("acme".into())]).await, [acme.id]);
    assert_eq!(of(vec![None]).await, [unowned.id]);
    let mut both = vec![acme.id, globex.id];
    both.sort();
    assert_eq!(
        of(vec![Some("acme".into()), Some("globex".into())]).await,
        both
    );
    assert!(!of(vec![Some("acme".into())]).await.contains(&disabled.id));
    // A fan-out evaluates the filter from the subscriber as stored.
    let read = WriteStore::subscribers(&store, &[Some("acme".into())])
        .await
        .unwrap();
    assert_eq!(read[0].filter, Some(amount_filter()));
    let unfiltered = WriteStore::subscribers(&store, &[None]).await.unwrap();
    assert_eq!(unfiltered[0].filter, None);
}
