//! Retention of ordering keys (docs/design.md §17, #48): a key's row goes
//! once retention removed all its notifications and nothing holds it, and
//! a later notification of the key starts again at sequence 1; a key with
//! a notification left keeps its row and its sequence; a holder retention
//! removed holds nothing, its successors go in order; in
//! PostgreSQL, a key a create holds is passed over without waiting. The
//! tests drive retention themselves (the app's own is off), on each
//! backend.

use std::time::Duration;

use chrono::Utc;
use reqwest::StatusCode;
use serde_json::{json, Value};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use crate::backends::Backend;
use crate::helpers::{eventually, TestApp};
use crate::receiver::{Receiver, Reply};

const DEADLINE: Duration = Duration::from_secs(30);
const KEYS: &str = "SELECT count(*) FROM order_keys";

async fn read(app: &TestApp, id: &str) -> Value {
    let (status, read) = app.get(&format!("/v1/notifications/{id}")).await;
    assert_eq!(status, StatusCode::OK, "{read}");
    read
}

async fn wait_status(app: &TestApp, id: &str, status: &str) {
    eventually(DEADLINE, &format!("{id} {status}"), || async {
        (read(app, id).await["status"] == status).then_some(())
    })
    .await
}

async fn notify_keyed(app: &TestApp, endpoint: &str, key: &str, extra: Value) -> String {
    let mut body = json!({"endpoint": endpoint, "payload": {}, "order_key": key});
    body.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    app.notify(body).await
}

/// An endpoint ordering by key (`on_failure` under a failure), to
/// `receiver`'s `path`.
async fn ordered(app: &TestApp, receiver: &Receiver, path: &str, on_failure: &str) -> String {
    let endpoint = app
        .endpoint(json!({
            "url": receiver.url(path), "ordering": "key",
            "ordering_on_failure": on_failure, "schedule": ["0s"],
        }))
        .await;
    endpoint["id"].as_str().unwrap().to_string()
}

/// A retention cutoff just after now, once the clock has passed it: what
/// ends from here on ends after it.
async fn passed_bound() -> chrono::DateTime<Utc> {
    let bound = Utc::now() + chrono::Duration::milliseconds(1);
    eventually(DEADLINE, "past the bound", || async {
        (Utc::now() > bound).then_some(())
    })
    .await;
    bound
}

/// Retention of the notifications completed before `before`, then a walk
/// of every ordering key: how many keys went.
async fn retention(backend: &Backend, before: chrono::DateTime<Utc>) -> u64 {
    let store = backend.housekeeping();
    let mut after = None;
    loop {
        let (_, next) = store.purge_completed(before, after, 100).await.unwrap();
        after = match next {
            Some(next) => Some(next),
            None => break,
        };
    }
    let (mut deleted, mut after) = (0, None);
    loop {
        let (gone, next) = store.purge_order_keys(after, 100, before).await.unwrap();
        deleted += gone;
        after = match next {
            Some(next) => Some(next),
            None => return deleted,
        };
    }
}

/// The one key stored stays through retention at `bound` (`why`), and
/// goes through retention a minute from now.
async fn one_key_stays_past_then_goes(backend: &Backend, bound: chrono::DateTime<Utc>, why: &str) {
    assert_eq!(retention(backend, bound).await, 0, "{why}");
    assert_eq!(backend.count(KEYS).await, 1);
    let later = Utc::now() + chrono::Duration::minutes(1);
    assert_eq!(retention(backend, later).await, 1);
    assert_eq!(backend.count(KEYS).await, 0, "the key's row is gone");
}

async fn a_key_whose_notifications_retention_removed_starts_again_at_sequence_one(
    backend: Backend,
) {
    let app = backend.spawn_with("[retention]\ndays = 0\n").await;
    let receiver = Receiver::start().await;
    let endpoint = ordered(&app, &receiver, "/done", "continue").await;
    for _ in 0..2 {
        let id = notify_keyed(&app, &endpoint, "order-1", json!({})).await;
        wait_status(&app, &id, "succeeded").await;
    }
    assert_eq!(backend.count(KEYS).await, 1);

    let later = Utc::now() + chrono::Duration::minutes(1);
    assert_eq!(retention(&backend, later).await, 1);
    assert_eq!(backend.count(KEYS).await, 0, "the key's row is gone");

    let again = notify_keyed(&app, &endpoint, "order-1", json!({})).await;
    assert_eq!(read(&app, &again).await["sequence"], 1);
    wait_status(&app, &again, "succeeded").await;
    assert_eq!(sequences(&receiver, "/done"), ["1", "2", "1"]);
}
both!(a_key_whose_notifications_retention_removed_starts_again_at_sequence_one);

async fn a_key_with_a_notification_left_keeps_its_row_and_its_sequence_goes_on(backend: Backend) {
    let app = backend.spawn_with("[retention]\ndays = 0\n").await;
    let receiver = Receiver::start().await;
    let endpoint = ordered(&app, &receiver, "/left", "continue").await;
    // "pending": its first delivered and purged, its second waits an hour.
    let first = notify_keyed(&app, &endpoint, "pending", json!({})).await;
    wait_status(&app, &first, "succeeded").await;
    notify_keyed(&app, &endpoint, "pending", json!({"delay": "1h"})).await;
    // "final": delivered after the bound, so retention keeps it.
    let bound = passed_bound().await;
    let kept = notify_keyed(&app, &endpoint, "final", json!({})).await;
    wait_status(&app, &kept, "succeeded").await;

    assert_eq!(retention(&backend, bound).await, 0);
    assert_eq!(backend.count(KEYS).await, 2);
    let (status, _) = app.get(&format!("/v1/notifications/{first}")).await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "the pending key's first was purged"
    );
    let next = notify_keyed(&app, &endpoint, "pending", json!({})).await;
    assert_eq!(read(&app, &next).await["sequence"], 3);
    let next = notify_keyed(&app, &endpoint, "final", json!({})).await;
    assert_eq!(read(&app, &next).await["sequence"], 2);
}
both!(a_key_with_a_notification_left_keeps_its_row_and_its_sequence_goes_on);

/// A cancel ends a key's line outside a recording (the release trigger
/// stamps the key's row, in both backends): the key stays while its
/// cancelled one is within retention, and goes once retention passed it.
async fn a_key_whose_last_notification_was_cancelled_goes_once_retention_passed_the_cancel(
    backend: Backend,
) {
    let app = backend.spawn_with("[retention]\ndays = 0\n").await;
    let receiver = Receiver::start().await;
    let endpoint = ordered(&app, &receiver, "/cancelled", "continue").await;
    let id = notify_keyed(&app, &endpoint, "order-9", json!({"delay": "1h"})).await;
    let bound = passed_bound().await;
    let (_, cancelled) = app
        .call(
            reqwest::Method::POST,
            &format!("/v1/notifications/{id}/cancel"),
            None,
        )
        .await;
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");

    one_key_stays_past_then_goes(&backend, bound, "cancelled after the bound").await;
    let again = notify_keyed(&app, &endpoint, "order-9", json!({})).await;
    assert_eq!(read(&app, &again).await["sequence"], 1);
}
both!(a_key_whose_last_notification_was_cancelled_goes_once_retention_passed_the_cancel);

/// The `webhook-sequence` of each request `receiver` got at `path`.
fn sequences(receiver: &Receiver, path: &str) -> Vec<String> {
    receiver
        .received(path)
        .iter()
        .filter_map(|r| r.header("webhook-sequence").map(str::to_owned))
        .collect()
}

/// Under `hold`, to `receiver`'s `/held` (which fails once, then
/// succeeds): an endpoint whose key "order-7" its failed head holds; the
/// endpoint and the head.
async fn held_key(app: &TestApp, receiver: &Receiver) -> (String, String) {
    receiver.reply("/held", vec![Reply::status(500), Reply::status(200)]);
    let endpoint = ordered(app, receiver, "/held", "hold").await;
    let head = notify_keyed(app, &endpoint, "order-7", json!({})).await;
    wait_status(app, &head, "failed").await;
    (endpoint, head)
}

async fn a_key_whose_failed_holder_retention_removed_is_no_longer_held(backend: Backend) {
    let app = backend.spawn_with("[retention]\ndays = 0\n").await;
    let receiver = Receiver::start().await;
    let (endpoint, head) = held_key(&app, &receiver).await;
    let second = notify_keyed(&app, &endpoint, "order-7", json!({})).await;
    let third = notify_keyed(&app, &endpoint, "order-7", json!({})).await;
    assert_eq!(read(&app, &second).await["status"], "pending", "held");

    // Retention removes the holder, which can never be retried now: its
    // successors go, in order, and the key is no longer held.
    let later = Utc::now() + chrono::Duration::minutes(1);
    assert_eq!(retention(&backend, later).await, 0, "the key has history");
    let (status, _) = app.get(&format!("/v1/notifications/{head}")).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "the holder was purged");
    wait_status(&app, &second, "succeeded").await;
    wait_status(&app, &third, "succeeded").await;
    let next = notify_keyed(&app, &endpoint, "order-7", json!({})).await;
    assert_eq!(read(&app, &next).await["sequence"], 4);
    wait_status(&app, &next, "succeeded").await;
    assert_eq!(sequences(&receiver, "/held"), ["1", "2", "3", "4"]);

    // With its history gone too, the key's row follows the normal rule.
    let later = Utc::now() + chrono::Duration::minutes(1);
    assert_eq!(retention(&backend, later).await, 1);
    assert_eq!(backend.count(KEYS).await, 0, "the key's row is gone");
}
both!(a_key_whose_failed_holder_retention_removed_is_no_longer_held);

async fn a_key_whose_holder_retention_removed_starts_again_at_sequence_one(backend: Backend) {
    let app = backend.spawn_with("[retention]\ndays = 0\n").await;
    let receiver = Receiver::start().await;
    let (endpoint, _) = held_key(&app, &receiver).await;

    let later = Utc::now() + chrono::Duration::minutes(1);
    assert_eq!(retention(&backend, later).await, 1, "nothing holds the key");
    assert_eq!(backend.count(KEYS).await, 0);
    let next = notify_keyed(&app, &endpoint, "order-7", json!({})).await;
    assert_eq!(read(&app, &next).await["sequence"], 1);
    wait_status(&app, &next, "succeeded").await;
}
both!(a_key_whose_holder_retention_removed_starts_again_at_sequence_one);

/// A success releases its successor without writing it in PostgreSQL (the
/// successor still names it: migration `20261210000056`), so retention
/// removing the success must not leave the successor waiting for a
/// removed one: housekeeping would give it a place again behind the
/// latest pending one of its key before it, here a retried one that
/// waits for it, and each would wait for the other for ever.
async fn a_pending_notification_whose_releasing_success_retention_removed_is_still_its_keys_head(
    backend: Backend,
) {
    let app = backend.spawn_with("[retention]\ndays = 0\n").await;
    let receiver = Receiver::start().await;
    receiver.reply("/cycle", vec![Reply::status(500), Reply::status(200)]);
    let endpoint = ordered(&app, &receiver, "/cycle", "continue").await;
    let failed = notify_keyed(&app, &endpoint, "order-c", json!({})).await;
    wait_status(&app, &failed, "failed").await;
    // The second goes in a second and releases the third, placed behind it
    // in the same batch and due in an hour.
    let item = |delay: &str| json!({"endpoint": endpoint, "payload": {}, "order_key": "order-c", "delay": delay});
    let ids = app.notify_batch(vec![item("1s"), item("1h")]).await;
    let [second, third]: [String; 2] = ids.try_into().unwrap();
    assert_eq!(read(&app, &third).await["waiting"]["behind"], json!(second));
    wait_status(&app, &second, "succeeded").await;
    // The failed one, retried, goes back in line behind the third (the
    // key's head, which may be in flight).
    let (status, retried) = app
        .post(&format!("/v1/notifications/{failed}/retry"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{retried}");
    assert_eq!(retried["waiting"]["behind"], json!(third), "{retried}");

    let later = Utc::now() + chrono::Duration::minutes(1);
    assert_eq!(retention(&backend, later).await, 0, "the key has history");
    let (status, _) = app.get(&format!("/v1/notifications/{second}")).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "the success was purged");
    backend
        .housekeeping()
        .release_stranded(None, 100)
        .await
        .unwrap();
    let head = read(&app, &third).await;
    assert_eq!(head["waiting"]["reason"], "scheduled", "{head}");
    assert_eq!(head["waiting"]["behind"], Value::Null, "{head}");
    assert_eq!(read(&app, &failed).await["waiting"]["behind"], json!(third));

    // The line still moves: the third cancelled, the retried one goes.
    let (status, _) = app
        .post(&format!("/v1/notifications/{third}/cancel"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK);
    wait_status(&app, &failed, "succeeded").await;
}
both!(a_pending_notification_whose_releasing_success_retention_removed_is_still_its_keys_head);

/// Server mode: a create of a key holds the key's row until it commits
/// (it writes its notification first). Retention passes over a row so held
/// at once, never waiting for the create nor deleting under it, and takes
/// the key at a later pass if the create left it without history.
#[sqlx::test]
async fn a_key_a_create_holds_is_passed_over_without_waiting(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    use hookd::store::seams::HousekeepingStore;
    let store = hookd::store::postgres::PgStore::new(pool.clone());
    let endpoint = uuid::Uuid::now_v7();
    sqlx::query(
        "INSERT INTO order_keys (endpoint_id, order_key, last_sequence) VALUES ($1, 'order-1', 3)",
    )
    .bind(endpoint)
    .execute(&pool)
    .await
    .unwrap();
    let mut create = pool.begin().await.unwrap();
    sqlx::query("UPDATE order_keys SET last_sequence = last_sequence + 1 WHERE endpoint_id = $1")
        .bind(endpoint)
        .execute(&mut *create)
        .await
        .unwrap();
    // Past its row's stamp: only the create's lock keeps it.
    let before = Utc::now() + chrono::Duration::minutes(1);
    let pass = tokio::time::timeout(DEADLINE, store.purge_order_keys(None, 100, before))
        .await
        .expect("the pass does not wait for the create");
    assert_eq!(pass.unwrap(), (0, None), "the held row is passed over");
    create.rollback().await.unwrap();
    assert_eq!(
        store.purge_order_keys(None, 100, before).await.unwrap(),
        (1, None)
    );
}

/// Turning an endpoint's ordering off empties every line of it (each key
/// row stamped then): its keys stay while the turn-off is within
/// retention and go after it, even with a formerly ordered notification
/// still pending, which no longer waits for anything (README, "ordered
/// delivery per key").
async fn a_key_whose_endpoint_stopped_ordering_goes_once_retention_passed_the_change(
    backend: Backend,
) {
    let app = backend.spawn_with("[retention]\ndays = 0\n").await;
    let receiver = Receiver::start().await;
    let endpoint = ordered(&app, &receiver, "/unordered", "continue").await;
    let waiting = notify_keyed(&app, &endpoint, "order-5", json!({"delay": "1h"})).await;
    let bound = passed_bound().await;
    let (status, changed) = app
        .call(
            reqwest::Method::PATCH,
            &format!("/v1/endpoints/{endpoint}"),
            Some(json!({"ordering": "none"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{changed}");

    one_key_stays_past_then_goes(&backend, bound, "changed after the bound").await;
    assert_eq!(read(&app, &waiting).await["status"], "pending");
}
both!(a_key_whose_endpoint_stopped_ordering_goes_once_retention_passed_the_change);
