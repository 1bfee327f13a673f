//! Events through the write and read seams: idempotency per owner and key,
//! reads and lists, and what a commit tells the dispatcher of the
//! endpoints of what it created.

use std::collections::BTreeMap;

use chrono::{Duration, Utc};
use hookd::domain::id::new_id;
use hookd::domain::schedule::Schedule;
use hookd::store::endpoints::Endpoint;
use hookd::store::events::{EventFilter, EventInserted, NewDelivery, NewEvent};
use hookd::store::notifications::{Inserted, NewNotification, NotificationFilter};
use hookd::store::seams::{DeliveryStore, ReadStore, WriteStore};
use hookd::store::writes::{Committed, Writes};
use uuid::Uuid;

use super::fixtures::{commit, create, endpoint, notification};
use super::Backend;

fn new_event(
    owner: Option<&str>,
    event_type: &str,
    key: Option<&str>,
    body: &str,
    to: &[&Endpoint],
) -> NewEvent {
    let at = Utc::now() - Duration::seconds(1);
    NewEvent {
        id: new_id(),
        owner: owner.map(str::to_string),
        event_type: event_type.into(),
        key: key.map(str::to_string),
        content_type: "application/json".into(),
        body: body.as_bytes().to_vec(),
        deliver_at: at,
        headers: BTreeMap::new(),
        order_key: None,
        deliveries: to
            .iter()
            .map(|e| NewDelivery {
                id: new_id(),
                headers: None,
                ordered: false,
                place: Default::default(),
                endpoint_id: e.id,
                schedule: Schedule::default(),
                next_attempt_at: at,
                pull: false,
            })
            .collect(),
    }
}

async fn commit_events<S: Backend>(store: &S, events: Vec<NewEvent>) -> Committed {
    WriteStore::commit(
        store,
        Writes {
            events,
            ..Writes::default()
        },
    )
    .await
    .unwrap()
}

/// What became of each event: created (its id), existing or conflicting
/// (the stored event's id).
fn outcomes(committed: &Committed) -> Vec<(&'static str, Uuid)> {
    committed
        .events
        .iter()
        .map(|e| match e {
            EventInserted::Created { event, .. } => ("created", event.id),
            EventInserted::Existing(event) => ("existing", event.id),
            EventInserted::KeyConflict(event) => ("conflict", event.id),
        })
        .collect()
}

async fn deliveries_of<S: Backend>(store: &S, event_id: Uuid) -> usize {
    ReadStore::list_notifications(
        store,
        &NotificationFilter {
            event_id: Some(event_id),
            limit: 100,
            ..NotificationFilter::default()
        },
    )
    .await
    .unwrap()
    .len()
}

pub async fn an_event_key_is_idempotent_per_owner<S: Backend>(store: S) {
    let (a, b) = (
        create(&store, owned("acme")).await,
        create(&store, owned("acme")).await,
    );
    let first = new_event(
        Some("acme"),
        "order.paid",
        Some("o-1"),
        r#"{"a":1,"b":2}"#,
        &[&a, &b],
    );
    let id = first.id;
    assert_eq!(
        outcomes(&commit_events(&store, vec![first]).await),
        [("created", id)]
    );
    let again = commit_events(
        &store,
        vec![
            new_event(
                Some("acme"),
                "order.paid",
                Some("o-1"),
                r#"{"b":2,"a":1}"#,
                &[&a],
            ),
            new_event(Some("acme"), "order.paid", Some("o-1"), r#"{"a":2}"#, &[&a]),
            new_event(
                Some("acme"),
                "order.refunded",
                Some("o-1"),
                r#"{"a":1,"b":2}"#,
                &[&a],
            ),
        ],
    )
    .await;
    assert_eq!(
        outcomes(&again),
        [("existing", id), ("conflict", id), ("conflict", id)],
        "another type is another payload"
    );
    assert_eq!(deliveries_of(&store, id).await, 2, "nothing more delivered");
    let globexs = create(&store, owned("globex")).await;
    let elsewhere = new_event(Some("globex"), "order.paid", Some("o-1"), "{}", &[&globexs]);
    let other = elsewhere.id;
    assert_eq!(
        outcomes(&commit_events(&store, vec![elsewhere]).await),
        [("created", other)]
    );
    let stored = ReadStore::get_event(&store, id).await.unwrap().unwrap();
    assert_eq!(stored.deliveries, 2);
}

pub async fn events_read_with_their_body_and_list_newest_first_filtered<S: Backend>(store: S) {
    let shop = create(&store, owned("acme")).await;
    let made = [
        new_event(
            Some("acme"),
            "order.paid",
            Some("k1"),
            r#"{"n":1}"#,
            &[&shop],
        ),
        new_event(None, "order.paid", None, r#"{"n":2}"#, &[]),
        new_event(Some("acme"), "invoice.sent", None, r#"{"n":3}"#, &[&shop]),
    ];
    let ids: Vec<Uuid> = made.iter().map(|e| e.id).collect();
    for event in made {
        commit_events(&store, vec![event]).await;
    }
    let read = ReadStore::get_event(&store, ids[0]).await.unwrap().unwrap();
    assert_eq!(
        (read.owner.as_deref(), read.event_type.as_str()),
        (Some("acme"), "order.paid")
    );
    assert_eq!(
        (read.key.as_deref(), read.body.as_slice()),
        (Some("k1"), &br#"{"n":1}"#[..])
    );
    assert_eq!(read.deliveries, 1);
    assert!(ReadStore::get_event(&store, new_id())
        .await
        .unwrap()
        .is_none());

    let list = |filter: EventFilter| {
        let store = &store;
        async move {
            let rows = ReadStore::list_events(store, &filter).await.unwrap();
            assert!(rows.iter().all(|e| e.body.is_empty()), "no payloads");
            rows.into_iter().map(|e| e.id).collect::<Vec<_>>()
        }
    };
    let all = EventFilter {
        limit: 10,
        ..EventFilter::default()
    };
    assert_eq!(list(all.clone()).await, [ids[2], ids[1], ids[0]]);
    let page = EventFilter {
        limit: 2,
        before: Some(ids[2]),
        ..all.clone()
    };
    assert_eq!(list(page).await, [ids[1], ids[0]]);
    let acme = EventFilter {
        owner: Some(Some("acme".into())),
        ..all.clone()
    };
    assert_eq!(list(acme).await, [ids[2], ids[0]]);
    let unowned = EventFilter {
        owner: Some(None),
        ..all.clone()
    };
    assert_eq!(list(unowned).await, [ids[1]]);
    let paid = EventFilter {
        event_type: Some("order.paid".into()),
        ..all.clone()
    };
    assert_eq!(list(paid).await, [ids[1], ids[0]]);
    let keyed = EventFilter {
        key: Some("k1".into()),
        ..all
    };
    assert_eq!(list(keyed).await, [ids[0]]);
}

pub async fn a_commit_asked_for_endpoint_versions_gives_those_a_claim_reads<S: Backend>(store: S) {
    let shop = create(&store, endpoint()).await;
    let single = notification(&shop);
    let event = new_event(None, "order.paid", None, "{}", &[&shop]);
    let delivery = event.deliveries[0].id;
    let committed = WriteStore::commit(
        &store,
        Writes {
            notifications: vec![single.clone()],
            events: vec![event],
            endpoint_versions: true,
        },
    )
    .await
    .unwrap();
    let claimed = DeliveryStore::load_claimed(&store, &[single.id, delivery], &|_, _| true)
        .await
        .unwrap();
    let version = claimed.notifications[0]
        .endpoint_version
        .expect("a version");
    assert_eq!(committed.endpoint_versions.get(&single.id), Some(&version));
    assert_eq!(committed.endpoint_versions.get(&delivery), Some(&version));
    let plain = WriteStore::commit(
        &store,
        Writes {
            notifications: vec![notification(&shop)],
            ..Writes::default()
        },
    )
    .await
    .unwrap();
    assert!(plain.endpoint_versions.is_empty(), "only when asked");
}

pub async fn one_key_twice_in_one_commit_creates_the_first_and_finds_it_for_the_second<
    S: Backend,
>(
    store: S,
) {
    let shop = create(&store, endpoint()).await;
    let keyed = || NewNotification {
        key: Some("twice".into()),
        body: b"{}".to_vec(),
        ..notification(&shop)
    };
    let (first, second) = (keyed(), keyed());
    let results = commit(&store, vec![first.clone(), second]).await;
    match results.as_slice() {
        [Inserted::Created(created), Inserted::Existing(existing)] => {
            assert_eq!((created.id, existing.id), (first.id, first.id));
        }
        other => panic!("{other:?}"),
    }
}

/// A delivery to an endpoint that is not the event's owner's is not
/// written: the fan-out may have read its subscribers before the endpoint
/// moved to another owner (another process's, a second old), and an event
/// never reaches another owner's endpoint. The event is stored with the
/// deliveries that remain.
pub async fn an_event_is_never_written_for_another_owners_endpoint<S: Backend>(store: S) {
    let (acmes, globexs, nobodys) = (
        create(&store, owned("acme")).await,
        create(&store, owned("globex")).await,
        create(&store, endpoint()).await,
    );
    let event = new_event(
        Some("acme"),
        "order.paid",
        None,
        "{}",
        &[&acmes, &globexs, &nobodys],
    );
    let id = event.id;
    assert_eq!(
        outcomes(&commit_events(&store, vec![event]).await),
        [("created", id)]
    );
    let stored = ReadStore::get_event(&store, id).await.unwrap().unwrap();
    assert_eq!(stored.deliveries, 1, "acme's endpoint only");
    assert_eq!(deliveries_of(&store, id).await, 1);
}

/// An endpoint of `owner`.
fn owned(owner: &str) -> Endpoint {
    Endpoint {
        owner: Some(owner.into()),
        ..endpoint()
    }
}
