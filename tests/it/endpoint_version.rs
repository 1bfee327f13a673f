//! An endpoint's `version` (optimistic concurrency, and what tells a
//! dispatcher its prepared plan is stale): raised by every change a
//! delivery uses, and not by the endpoint's health.

use hookd::domain::id;
use hookd::domain::outcome::Outcome;
use hookd::store::endpoints::{Endpoint, EndpointRef};
use hookd::store::postgres::PgStore;
use sqlx::PgPool;
use uuid::Uuid;

use crate::store::{attempt, endpoint, failing_since, notification, record, FAILED};

async fn version(pool: &PgPool, id: Uuid) -> i64 {
    sqlx::query_scalar("SELECT version FROM endpoints WHERE id = $1")
        .bind(id)
        .fetch_one(pool)
        .await
        .unwrap()
}

#[sqlx::test]
async fn an_endpoints_version_rises_with_each_change_a_delivery_uses_and_not_with_its_health(
    pool: PgPool,
) {
    let store = PgStore::new(pool.clone());
    let shop = id::new_id();
    endpoint(&pool, shop).await;
    assert_eq!(version(&pool, shop).await, 0);

    // Health: a failure and a success flip `failing_since`, not the version.
    let first = notification(&pool, shop).await;
    record(&store, &[attempt(first, shop, 1, FAILED)])
        .await
        .unwrap();
    assert!(failing_since(&pool, shop).await.is_some());
    let second = notification(&pool, shop).await;
    record(&store, &[attempt(second, shop, 1, Outcome::Succeeded)])
        .await
        .unwrap();
    assert!(failing_since(&pool, shop).await.is_none());
    assert_eq!(version(&pool, shop).await, 0);

    // A change of its settings does.
    let changed = store
        .modify_endpoint(
            &EndpointRef::Id(shop),
            Box::new(|e: &mut Endpoint| {
                e.description = "new".into();
                Ok::<(), hookd::domain::problem::Problem>(())
            }),
        )
        .await
        .unwrap();
    assert!(matches!(changed, Some(Ok(_))));
    assert_eq!(version(&pool, shop).await, 1);

    // And so does deleting it.
    store
        .delete_endpoint(&EndpointRef::Id(shop))
        .await
        .unwrap()
        .expect("the endpoint was there");
    assert_eq!(version(&pool, shop).await, 2);
}
