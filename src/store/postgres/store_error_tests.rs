//! What a PostgreSQL error becomes in the store (`From<sqlx::Error> for
//! StoreError`), on errors a real server raised: the API answers 503 for
//! `Unavailable` and 500 for `Database`.

use sqlx::PgPool;

use crate::store::StoreError;

/// The error of a statement that raises `sqlstate`.
async fn raised(pool: &PgPool, sqlstate: &str) -> StoreError {
    let sql = format!("DO $$ BEGIN RAISE EXCEPTION 'raised' USING ERRCODE = '{sqlstate}'; END $$");
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
        .execute(pool)
        .await
        .unwrap_err()
        .into()
}

#[sqlx::test]
async fn errors_that_pass_are_unavailable_and_the_others_keep_their_kind(pool: PgPool) {
    let passing = [
        "08006", "57P01", "57P03", "40001", "40P01", "53100", "53200", "53300",
    ];
    for code in passing {
        let error = raised(&pool, code).await;
        assert!(
            matches!(error, StoreError::Unavailable(_)),
            "{code}: {error:?}"
        );
    }
    for code in ["42P01", "55P03", "XX000", "23503", "40002"] {
        let error = raised(&pool, code).await;
        assert!(
            matches!(error, StoreError::Database(_)),
            "{code}: {error:?}"
        );
    }
    let error = raised(&pool, "23505").await;
    assert!(matches!(error, StoreError::Conflict(_)), "{error:?}");
    for code in ["22P02", "23514"] {
        let error = raised(&pool, code).await;
        assert!(
            matches!(error, StoreError::InvalidValue(_)),
            "{code}: {error:?}"
        );
    }
}

/// Two transactions that take two rows in opposite orders: PostgreSQL
/// fails one of them, and that one's error is one to try again.
#[sqlx::test]
async fn the_transaction_a_deadlock_fails_gets_an_error_to_try_again(pool: PgPool) {
    sqlx::raw_sql("CREATE TABLE pair (id int PRIMARY KEY); INSERT INTO pair VALUES (1), (2)")
        .execute(&pool)
        .await
        .unwrap();
    let both_hold_one = std::sync::Arc::new(tokio::sync::Barrier::new(2));
    let take = |first: i32, second: i32| {
        let (pool, both_hold_one) = (pool.clone(), both_hold_one.clone());
        async move {
            let mut tx = pool.begin().await?;
            let lock = "SELECT id FROM pair WHERE id = $1 FOR UPDATE";
            sqlx::query(lock).bind(first).execute(&mut *tx).await?;
            both_hold_one.wait().await;
            sqlx::query(lock).bind(second).execute(&mut *tx).await?;
            tx.commit().await
        }
    };
    let (one, other) = tokio::join!(take(1, 2), take(2, 1));
    let failed = match (one, other) {
        (Err(error), Ok(())) | (Ok(()), Err(error)) => error,
        both => panic!("PostgreSQL fails exactly one: {both:?}"),
    };
    let code = failed.as_database_error().and_then(|e| e.code());
    assert_eq!(code.as_deref(), Some("40P01"));
    assert!(matches!(
        StoreError::from(failed),
        StoreError::Unavailable(_)
    ));
}

#[test]
fn a_server_that_does_not_speak_postgresql_makes_the_database_unavailable() {
    let error = sqlx::Error::Protocol("unexpected response from SSLRequest: 0x48".into());
    assert!(matches!(
        StoreError::from(error),
        StoreError::Unavailable(_)
    ));
}
