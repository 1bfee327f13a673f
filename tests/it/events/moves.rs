//! An endpoint moved to another owner: the events of its former owner stop
//! reaching it, whether they are pending at the move or created afterwards
//! through a process that read the endpoint's owner before the move.

use super::*;
use crate::helpers::test_settings_with_prefix;

/// The event's deliveries, as its answer counts them.
fn deliveries(created: &Value) -> i64 {
    created["deliveries"].as_i64().unwrap()
}

/// An endpoint `uid` of `owner` delivering to `path` of `receiver`.
async fn owned(app: &TestApp, uid: &str, owner: &str, receiver: &Receiver, path: &str) {
    app.endpoint(json!({"uid": uid, "owner": owner, "url": receiver.url(path)}))
        .await;
}

async fn moved(app: &TestApp, uid: &str, owner: &str, receiver: &Receiver, path: &str) {
    let path_of = format!("/v1/endpoints/{uid}");
    let body = json!({"owner": owner, "url": receiver.url(path)});
    let (status, answer) = app.call(Method::PATCH, &path_of, Some(body)).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
}

/// Another process reads an owner's endpoints through a cache of a
/// second: an event created there just after the move was delivered to
/// the endpoint's new owner (a review saw a payload of the old owner's
/// arrive at the URL the new one had set). The insert now leaves out a
/// delivery whose endpoint is no longer its event's owner's.
#[sqlx::test]
async fn an_event_created_through_another_process_just_after_a_move_never_reaches_the_moved_endpoint(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let backend = Backend::postgres(pool);
    let prefix = new_prefix();
    let settings = || test_settings_with_prefix(&redis_url(), &prefix, "");
    let (first, second) = (
        backend.spawn_settings(settings()).await,
        backend.spawn_settings(settings()).await,
    );
    let receiver = Receiver::start().await;
    owned(&first, "moving", "acme", &receiver, "/acme-moving").await;
    owned(&first, "staying", "acme", &receiver, "/acme-staying").await;
    // The second process reads acme's endpoints, and keeps them a second.
    let warm = json!({"event_type": "order.paid", "owner": "acme", "payload": {"n": 1}});
    assert_eq!(deliveries(&event(&second, warm).await), 2);

    moved(&first, "moving", "globex", &receiver, "/globex-moving").await;
    let after = json!({"event_type": "order.paid", "owner": "acme", "payload": {"n": 2}});
    let created = event(&second, after).await;
    assert_eq!(
        deliveries(&created),
        1,
        "acme's staying endpoint only: {created}"
    );
    // Once acme's other endpoint has it, nothing of it is on its way to
    // globex's URL.
    let id = created["id"].as_str().unwrap();
    wait_counts(&second, id, "succeeded", 1).await;
    assert!(receiver.received("/globex-moving").is_empty());
}

/// What an endpoint holds of its former owner's events when it moves is
/// cancelled with the move (its own notifications, which a producer sent
/// to that endpoint, stay); the new owner's events reach it.
async fn an_endpoint_moved_to_another_owner_drops_the_pending_deliveries_of_its_former_owners_events(
    backend: Backend,
) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    owned(&app, "moving", "acme", &receiver, "/acme").await;
    let pending =
        json!({"event_type": "order.paid", "owner": "acme", "payload": {}, "delay": "1h"});
    let acmes = event(&app, pending).await;
    let own = app
        .notify(json!({"endpoint": "moving", "payload": {"own": true}, "delay": "1h"}))
        .await;

    moved(&app, "moving", "globex", &receiver, "/globex").await;
    let acmes = acmes["id"].as_str().unwrap();
    let (_, counts) = app.get(&format!("/v1/events/{acmes}")).await;
    assert_eq!(counts["counts"]["cancelled"], json!(1), "{counts}");
    let (_, own) = app.get(&format!("/v1/notifications/{own}")).await;
    assert_eq!(own["status"], "pending", "{own}");
    let globexs = json!({"event_type": "order.paid", "owner": "globex", "payload": {}});
    let globexs = event(&app, globexs).await;
    assert_eq!(deliveries(&globexs), 1);
    wait_counts(&app, globexs["id"].as_str().unwrap(), "succeeded", 1).await;
    assert!(receiver.received("/acme").is_empty());
}
both!(an_endpoint_moved_to_another_owner_drops_the_pending_deliveries_of_its_former_owners_events);
