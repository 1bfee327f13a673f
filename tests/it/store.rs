//! The store's boundary and write rules, against a real PostgreSQL: typed
//! statuses and outcomes in their text columns.

use hookd::domain::outcome::OutcomeKind;
use hookd::domain::status::Status;
use sqlx::PgPool;

#[sqlx::test]
async fn every_status_and_outcome_round_trips_through_its_text_column(pool: PgPool) {
    for status in Status::ALL {
        let (back, text): (Status, String) = sqlx::query_as("SELECT $1::text, $1::text")
            .bind(status)
            .fetch_one(&pool)
            .await
            .unwrap();
        assert_eq!(back, status);
        assert_eq!(text, status.as_str());
    }
    for outcome in [
        OutcomeKind::Succeeded,
        OutcomeKind::Retry,
        OutcomeKind::Failed,
    ] {
        let (back, text): (OutcomeKind, String) = sqlx::query_as("SELECT $1::text, $1::text")
            .bind(outcome)
            .fetch_one(&pool)
            .await
            .unwrap();
        assert_eq!(back, outcome);
        assert_eq!(text, outcome.as_str());
    }
    // Arrays too: the recorder binds a batch's outcomes as one text[].
    let texts: Vec<String> = sqlx::query_scalar("SELECT unnest($1::text[])")
        .bind(vec![OutcomeKind::Retry, OutcomeKind::Failed])
        .fetch_all(&pool)
        .await
        .unwrap();
    assert_eq!(texts, ["retry", "failed"]);
}

#[sqlx::test]
async fn a_stored_value_outside_the_enum_is_an_error_not_a_fallback(pool: PgPool) {
    for text in ["done", "PENDING", ""] {
        let decoded = sqlx::query_scalar::<_, Status>("SELECT $1::text")
            .bind(text)
            .fetch_one(&pool)
            .await;
        assert!(decoded.is_err(), "{text:?} decoded as {decoded:?}");
    }
}
