//! Sealing at rest is a wrapper over the store (`store::sealing`): through
//! it, each backend (PostgreSQL, SQLite) holds only ciphertext for signing
//! secrets and custom header values, read here from its own columns, and
//! every caller sees plaintext; without it, a backend holds what it is
//! given, so the wrapper is the only place that seals.

use std::collections::BTreeMap;

use chrono::Utc;
use hookd::domain::pull::Delivery;
use hookd::domain::sealed::{context, Keyring};
use hookd::store::endpoints::{Endpoint, EndpointRef, PreviousSecret};
use hookd::store::events::{EventInserted, NewDelivery, NewEvent};
use hookd::store::notifications::{Inserted, NewNotification};
use hookd::store::postgres::PgStore;
use hookd::store::sealing::Sealing;
use hookd::store::seams::{HousekeepingStore, ReadStore, WriteStore};
use hookd::store::writes::Writes;
use uuid::Uuid;

use crate::backends::Backend;

/// `$query` (SQL both dialects read alike) fetched with `$fetch` from the
/// backend's own database.
macro_rules! read {
    ($backend:expr, $query:expr, $fetch:ident) => {
        match $backend {
            Backend::Postgres { pool, .. } => $query.$fetch(pool).await,
            Backend::Sqlite { store, .. } => $query.$fetch(store.reader()).await,
        }
        .unwrap()
    };
}

/// `$run` with `$store` bound to the backend's store, bare or wrapped by
/// `$wrap`.
macro_rules! with_store {
    ($backend:expr, |$store:ident| $wrap:expr => $run:expr) => {
        match &$backend {
            Backend::Postgres { pool, .. } => {
                let $store = PgStore::new(pool.clone());
                let $store = $wrap;
                $run
            }
            Backend::Sqlite { store, .. } => {
                let $store = store.clone();
                let $store = $wrap;
                $run
            }
        }
    };
}

const KEY: &str = "ZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXp7fH1+f4CBgoM=";
const SECRET: &str = "whsec_current_C2VjcmV0LXZhbHVlLWZvci10ZXN0";
const PREVIOUS: &str = "whsec_previous_cHJldmlvdXMtc2VjcmV0LXZhbHVl";
const ROTATED: &str = "whsec_rotated_cm90YXRlZC1zZWNyZXQtdmFsdWUt";
const ENDPOINT_TOKEN: &str = "Bearer endpoint-credential";
const NOTIFICATION_TOKEN: &str = "Bearer notification-credential";
const EVENT_TOKEN: &str = "Bearer event-credential";

fn endpoint(uid: &str) -> Endpoint {
    let now = Utc::now();
    Endpoint {
        id: hookd::domain::id::new_id(),
        uid: Some(uid.to_string()),
        owner: None,
        url: Some("https://receiver.example/hook".into()),
        delivery: Delivery::Push,
        description: String::new(),
        secret: SECRET.into(),
        previous_secrets: vec![PreviousSecret {
            secret: PREVIOUS.into(),
            expires_at: now + chrono::Duration::hours(1),
        }],
        event_types: None,
        filter: None,
        schedule_ms: vec![0],
        schedule_name: None,
        schedule_jitter: 0.0,
        url_secret: false,
        portal_generation: 0,
        rate_limit_per_second: None,
        rate_limit_burst: None,
        fresh_share: None,
        breaker: Default::default(),
        success_body: None,
        success_filter: None,
        permanent_statuses: Vec::new(),
        headers: BTreeMap::from([("Authorization".into(), ENDPOINT_TOKEN.into())]),
        timeout_ms: None,
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

fn notification(endpoint_id: Uuid) -> NewNotification {
    let now = Utc::now();
    NewNotification {
        id: hookd::domain::id::new_id(),
        endpoint_id,
        key: None,
        event_type: None,
        content_type: "application/json".into(),
        body: b"{}".to_vec(),
        headers: BTreeMap::from([("Authorization".into(), NOTIFICATION_TOKEN.into())]),
        schedule: Default::default(),
        deliver_at: now,
        next_attempt_at: now,
        url: None,
        pull: false,
        order_key: None,
        ordered: false,
    }
}

/// An event with custom headers and two deliveries to `endpoint_id`.
fn event(endpoint_id: Uuid) -> NewEvent {
    let now = Utc::now();
    let delivery = || NewDelivery {
        id: hookd::domain::id::new_id(),
        endpoint_id,
        schedule: Default::default(),
        next_attempt_at: now,
        pull: false,
        headers: None,
        ordered: false,
        place: Default::default(),
    };
    NewEvent {
        id: hookd::domain::id::new_id(),
        owner: None,
        event_type: "order.paid".into(),
        key: None,
        content_type: "application/json".into(),
        body: b"{}".to_vec(),
        deliver_at: now,
        headers: BTreeMap::from([("Authorization".into(), EVENT_TOKEN.into())]),
        order_key: None,
        deliveries: vec![delivery(), delivery()],
    }
}

/// Writes an endpoint (created, then its secret rotated), a notification
/// and an event with two deliveries through `store`, checking it hands back
/// plaintext each time, and returns what the backend holds: the endpoint's
/// secret, previous secret and header value, the notification's header
/// value, and each delivery's header value.
async fn write_through<S: WriteStore + ReadStore>(
    store: &S,
    backend: &Backend,
    uid: &str,
) -> [String; 6] {
    let created = store.create_endpoint(&endpoint(uid)).await.unwrap();
    assert_eq!(created.secret, SECRET);
    assert_eq!(created.headers["Authorization"], ENDPOINT_TOKEN);
    // The change sees the values in clear, and what it leaves is stored.
    let changed = store
        .modify_endpoint(
            &EndpointRef::Uid(uid.into()),
            Box::new(|e: &mut Endpoint| {
                assert_eq!(e.secret, SECRET);
                assert_eq!(e.previous_secrets[0].secret, PREVIOUS);
                assert_eq!(e.headers["Authorization"], ENDPOINT_TOKEN);
                e.secret = ROTATED.into();
                Ok(())
            }),
        )
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(changed.secret, ROTATED);
    assert_eq!(changed.previous_secrets[0].secret, PREVIOUS);
    let found = WriteStore::find_endpoint(store, &EndpointRef::Id(created.id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found.secret, ROTATED);
    assert_eq!(found.headers["Authorization"], ENDPOINT_TOKEN);
    assert!(found.unreadable.is_none());

    let new = notification(created.id);
    let id = new.id;
    let new_event = event(created.id);
    let deliveries: Vec<Uuid> = new_event.deliveries.iter().map(|d| d.id).collect();
    let committed = store
        .commit(Writes {
            notifications: vec![new],
            events: vec![new_event],
            endpoint_versions: false,
        })
        .await
        .unwrap();
    let Inserted::Created(row) = &committed.notifications[0] else {
        panic!("not created: {committed:?}");
    };
    assert_eq!(row.headers["Authorization"], NOTIFICATION_TOKEN);
    let EventInserted::Created { headers, push, .. } = &committed.events[0] else {
        panic!("not created: {committed:?}");
    };
    assert_eq!(headers["Authorization"], EVENT_TOKEN);
    assert!(push.iter().all(|d| d.headers.is_none()));
    for id in [id, deliveries[0], deliveries[1]] {
        let read = store.get_notification(id).await.unwrap().unwrap();
        assert!(read.headers["Authorization"].starts_with("Bearer "));
    }

    let (secret, previous, header): (String, String, String) = read!(
        backend,
        sqlx::query_as(
            "SELECT secret, previous_secrets->0->>'secret', headers->>'Authorization' \
             FROM endpoints WHERE id = $1",
        )
        .bind(created.id),
        fetch_one
    );
    let header_of = "SELECT headers->>'Authorization' FROM notifications WHERE id = $1";
    let notification_header: String =
        read!(backend, sqlx::query_scalar(header_of).bind(id), fetch_one);
    let mut delivery_headers = Vec::new();
    for id in deliveries {
        let stored: String = read!(backend, sqlx::query_scalar(header_of).bind(id), fetch_one);
        delivery_headers.push(stored);
    }
    let [first, second] = <[String; 2]>::try_from(delivery_headers).unwrap();
    [secret, previous, header, notification_header, first, second]
}

async fn through_the_sealing_wrapper_the_store_holds_only_ciphertext_bound_to_each_row(
    backend: Backend,
) {
    let keys = Keyring::new([("k", KEY)]).unwrap();
    let [secret, previous, header, notification_header, _, _] = with_store!(
        backend,
        |store| Sealing::new(store, keys.clone()) => write_through(&store, &backend, "sealed").await
    );
    let (endpoint_id, notification_id): (Uuid, Uuid) = read!(
        &backend,
        sqlx::query_as(
            "SELECT e.id, n.id FROM endpoints e JOIN notifications n ON n.endpoint_id = e.id \
             WHERE n.event_id IS NULL",
        ),
        fetch_one
    );
    for (stored, plaintext, context) in [
        (&secret, ROTATED, context::endpoint_secret(endpoint_id)),
        (
            &previous,
            PREVIOUS,
            context::endpoint_previous_secret(endpoint_id),
        ),
        (
            &header,
            ENDPOINT_TOKEN,
            context::endpoint_header(endpoint_id, "Authorization"),
        ),
        (
            &notification_header,
            NOTIFICATION_TOKEN,
            context::notification_header(notification_id, "Authorization"),
        ),
    ] {
        assert!(stored.starts_with("enc:v1:k:"), "{stored}");
        assert!(!stored.contains(plaintext), "{stored}");
        assert_eq!(keys.open(stored, &context).unwrap(), plaintext);
    }
    // An event's headers are sealed for each of its deliveries.
    let deliveries: Vec<(Uuid, String)> = read!(
        &backend,
        sqlx::query_as(
            "SELECT id, headers->>'Authorization' FROM notifications WHERE event_id IS NOT NULL",
        ),
        fetch_all
    );
    assert_eq!(deliveries.len(), 2);
    for (id, stored) in deliveries {
        assert!(stored.starts_with("enc:v1:k:"), "{stored}");
        let context = context::notification_header(id, "Authorization");
        assert_eq!(keys.open(&stored, &context).unwrap(), EVENT_TOKEN);
    }
}
both!(through_the_sealing_wrapper_the_store_holds_only_ciphertext_bound_to_each_row);

async fn the_store_without_the_wrapper_stores_what_it_is_given(backend: Backend) {
    let stored = with_store!(
        backend,
        |store| store => write_through(&store, &backend, "plain").await
    );
    assert_eq!(
        stored,
        [
            ROTATED,
            PREVIOUS,
            ENDPOINT_TOKEN,
            NOTIFICATION_TOKEN,
            EVENT_TOKEN,
            EVENT_TOKEN
        ]
        .map(String::from)
    );
}
both!(the_store_without_the_wrapper_stores_what_it_is_given);

async fn the_operator_endpoint_is_stored_sealed_and_rewritten_only_when_its_target_changes(
    backend: Backend,
) {
    let keys = Keyring::new([("k", KEY)]).unwrap();
    with_store!(
        backend,
        |store| Sealing::new(store, keys.clone()) => operator_rewritten(&store, &backend, &keys).await
    );
}
both!(the_operator_endpoint_is_stored_sealed_and_rewritten_only_when_its_target_changes);

async fn operator_rewritten<S: HousekeepingStore>(store: &S, backend: &Backend, keys: &Keyring) {
    use hookd::domain::operator_event::OPERATOR_ENDPOINT_ID;
    use hookd::store::seams::OperatorTarget;

    let url = "https://chat.example/hooks?token=operator-s3cret";
    let stored = || async {
        let (url, secret): (String, String) = read!(
            backend,
            sqlx::query_as("SELECT url, secret FROM endpoints WHERE id = $1")
                .bind(OPERATOR_ENDPOINT_ID),
            fetch_one
        );
        (url, secret)
    };
    store
        .sync_operator_endpoint(Some(OperatorTarget::plain(url, SECRET)))
        .await
        .unwrap();
    let first = stored().await;
    let opened = keys
        .open(&first.0, &context::endpoint_url(OPERATOR_ENDPOINT_ID))
        .unwrap();
    assert_eq!(opened, url);
    assert!(first.1.starts_with("enc:v1:k:"), "{}", first.1);

    // The same target again: sealed anew it would read differently, so an
    // unchanged row shows nothing was written.
    store
        .sync_operator_endpoint(Some(OperatorTarget::plain(url, SECRET)))
        .await
        .unwrap();
    assert_eq!(stored().await, first);

    store
        .sync_operator_endpoint(Some(OperatorTarget::plain(url, ROTATED)))
        .await
        .unwrap();
    let (_, secret) = stored().await;
    let context = context::endpoint_secret(OPERATOR_ENDPOINT_ID);
    assert_eq!(keys.open(&secret, &context).unwrap(), ROTATED);
}
