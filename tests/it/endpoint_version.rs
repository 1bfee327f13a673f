//! An endpoint's `version` (optimistic concurrency, and what tells a
//! dispatcher its prepared plan is stale): raised by every change a
//! delivery uses, and not by the endpoint's health.

use hookd::domain::outcome::Outcome;
use hookd::store::endpoints::{Endpoint, EndpointRef};
use hookd::store::postgres::PgStore;
use hookd::store::seams::{ReadStore, WriteStore};
use uuid::Uuid;

use crate::backends::Backend;
use crate::conformance::fixtures::{attempt, create, endpoint, pending, record, FAILED};
use crate::conformance::Backend as Store;

async fn version(backend: &Backend, id: Uuid) -> i64 {
    backend
        .count_for("SELECT version FROM endpoints WHERE id = $1", id)
        .await
}

async fn failing<S: Store>(store: &S, id: Uuid) -> bool {
    ReadStore::find_endpoint(store, &EndpointRef::Id(id))
        .await
        .unwrap()
        .expect("the endpoint exists")
        .failing_since
        .is_some()
}

async fn an_endpoints_version_rises_with_each_change_a_delivery_uses_and_not_with_its_health(
    backend: Backend,
) {
    match &backend {
        Backend::Postgres { pool, .. } => rises(&backend, &PgStore::new(pool.clone())).await,
        Backend::Sqlite { store, .. } => rises(&backend, store).await,
    }
}
both!(an_endpoints_version_rises_with_each_change_a_delivery_uses_and_not_with_its_health);

async fn rises<S: Store>(backend: &Backend, store: &S) {
    let created = create(store, endpoint()).await;
    let shop = created.id;
    assert_eq!(version(backend, shop).await, 0);

    // Health: a failure and a success flip `failing_since`, not the version.
    let first = pending(store, &created).await;
    record(store, &[attempt(first, shop, 1, FAILED)]).await;
    assert!(failing(store, shop).await);
    let second = pending(store, &created).await;
    record(store, &[attempt(second, shop, 1, Outcome::Succeeded)]).await;
    assert!(!failing(store, shop).await);
    assert_eq!(version(backend, shop).await, 0);

    // A change of its settings does.
    let changed = WriteStore::modify_endpoint(
        store,
        &EndpointRef::Id(shop),
        Box::new(|e: &mut Endpoint| {
            e.description = "new".into();
            Ok::<(), hookd::domain::problem::Problem>(())
        }),
    )
    .await
    .unwrap();
    assert!(matches!(changed, Some(Ok(_))));
    assert_eq!(version(backend, shop).await, 1);

    // And so does deleting it.
    WriteStore::delete_endpoint(store, &EndpointRef::Id(shop))
        .await
        .unwrap()
        .expect("the endpoint was there");
    assert_eq!(version(backend, shop).await, 2);
}
