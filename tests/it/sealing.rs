//! Sealing at rest is a wrapper over the store (`store::sealing`): through
//! it, PostgreSQL holds only ciphertext for signing secrets and custom
//! header values and every caller sees plaintext; without it, PostgreSQL
//! holds what it is given, so the wrapper is the only place that seals.

use std::collections::BTreeMap;

use chrono::Utc;
use hookd::domain::pull::Delivery;
use hookd::domain::sealed::{context, Keyring};
use hookd::store::endpoints::{Endpoint, EndpointRef, PreviousSecret};
use hookd::store::notifications::{Inserted, NewNotification};
use hookd::store::postgres::PgStore;
use hookd::store::sealing::Sealing;
use hookd::store::seams::{ReadStore, WriteStore};
use hookd::store::writes::Writes;
use sqlx::PgPool;
use uuid::Uuid;

const KEY: &str = "ZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXp7fH1+f4CBgoM=";
const SECRET: &str = "whsec_current_C2VjcmV0LXZhbHVlLWZvci10ZXN0";
const PREVIOUS: &str = "whsec_previous_cHJldmlvdXMtc2VjcmV0LXZhbHVl";
const ROTATED: &str = "whsec_rotated_cm90YXRlZC1zZWNyZXQtdmFsdWUt";
const ENDPOINT_TOKEN: &str = "Bearer endpoint-credential";
const NOTIFICATION_TOKEN: &str = "Bearer notification-credential";

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
        schedule_ms: vec![0],
        schedule_name: None,
        success_body: None,
        permanent_statuses: Vec::new(),
        headers: BTreeMap::from([("Authorization".into(), ENDPOINT_TOKEN.into())]),
        timeout_ms: None,
        max_in_flight: None,
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
    }
}

/// Writes an endpoint (created, then its secret rotated) and a notification
/// through `store`, checking it hands back plaintext each time, and returns
/// what PostgreSQL holds: the endpoint's secret, previous secrets and
/// header values, and the notification's header value.
async fn write_through<S: WriteStore + ReadStore>(
    store: &S,
    pool: &PgPool,
    uid: &str,
) -> [String; 4] {
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
    let committed = store
        .commit(Writes {
            notifications: vec![new],
            ..Default::default()
        })
        .await
        .unwrap();
    let Inserted::Created(row) = &committed.notifications[0] else {
        panic!("not created: {committed:?}");
    };
    assert_eq!(row.headers["Authorization"], NOTIFICATION_TOKEN);
    let read = store.get_notification(id).await.unwrap().unwrap();
    assert_eq!(read.headers["Authorization"], NOTIFICATION_TOKEN);

    let (secret, previous, header): (String, String, String) = sqlx::query_as(
        "SELECT secret, previous_secrets->0->>'secret', headers->>'Authorization' \
         FROM endpoints WHERE id = $1",
    )
    .bind(created.id)
    .fetch_one(pool)
    .await
    .unwrap();
    let notification_header: String =
        sqlx::query_scalar("SELECT headers->>'Authorization' FROM notifications WHERE id = $1")
            .bind(id)
            .fetch_one(pool)
            .await
            .unwrap();
    [secret, previous, header, notification_header]
}

#[sqlx::test]
async fn through_the_sealing_wrapper_postgresql_holds_only_ciphertext_bound_to_each_row(
    pool: PgPool,
) {
    let keys = Keyring::new([("k", KEY)]).unwrap();
    let store = Sealing::new(PgStore::new(pool.clone()), keys.clone());
    let [secret, previous, header, notification_header] =
        write_through(&store, &pool, "sealed").await;
    let (endpoint_id, notification_id): (Uuid, Uuid) = sqlx::query_as(
        "SELECT e.id, n.id FROM endpoints e JOIN notifications n ON n.endpoint_id = e.id",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
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
}

#[sqlx::test]
async fn postgresql_without_the_wrapper_stores_what_it_is_given(pool: PgPool) {
    let store = PgStore::new(pool.clone());
    let stored = write_through(&store, &pool, "plain").await;
    assert_eq!(
        stored,
        [ROTATED, PREVIOUS, ENDPOINT_TOKEN, NOTIFICATION_TOKEN].map(String::from)
    );
}
