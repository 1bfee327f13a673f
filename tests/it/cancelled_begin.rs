//! A future dropped while its transaction's `BEGIN` is on the wire: a
//! request whose client went away (hyper drops the handler), a timeout, a
//! task stopped at shutdown. sqlx 0.9.0 returned that connection to the
//! pool still inside the transaction, and the next statement on it ran in
//! there and never committed (transact-rs/sqlx#4393, fixed in 0.9.1). A CI
//! run lost an endpoint that way: created with a 201, then unknown to the
//! notification that named it, after a process sharing the pool stopped.

use futures::FutureExt;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::Connection;

use crate::helpers::{redis_url, test_pool, test_settings};

/// Rounds of cancel-then-write: the cancel lands while `BEGIN` waits for
/// its answer unless the server answers within the poll that sent it.
const ROUNDS: i64 = 20;

#[sqlx::test]
async fn a_transaction_cancelled_while_it_begins_leaves_the_next_write_committed(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (observer, _closes) = test_pool(connect).await;
    sqlx::query("CREATE TABLE writes (round bigint)")
        .execute(&observer)
        .await
        .unwrap();
    // hookd's own pool, one connection, so the write below takes the very
    // connection the cancelled transaction began on.
    let settings = test_settings(&redis_url(), "").database;
    let hookd = hookd::store::postgres::pool_options(&settings)
        .max_connections(1)
        .min_connections(1)
        .connect_with((*observer.connect_options()).clone())
        .await
        .unwrap();
    for round in 1..=ROUNDS {
        let mut conn = hookd.acquire().await.unwrap();
        // One poll: `BEGIN` is written and its answer not yet read.
        let began = conn.begin().now_or_never();
        drop(began);
        drop(conn);
        sqlx::query("INSERT INTO writes VALUES ($1)")
            .bind(round)
            .execute(&hookd)
            .await
            .unwrap();
        let seen: i64 = sqlx::query_scalar("SELECT count(*) FROM writes")
            .fetch_one(&observer)
            .await
            .unwrap();
        assert_eq!(
            seen, round,
            "round {round}: the write ran inside the cancelled transaction"
        );
    }
}
