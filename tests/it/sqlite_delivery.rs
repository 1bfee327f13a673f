//! How the embedded schema stores what recording attempts writes, which no
//! seam shows: the conformance suite (`conformance/delivery.rs`) runs the
//! delivery cases on both backends, and PostgreSQL's twin of this one is in
//! `store.rs`.

use hookd::domain::outcome::{Outcome, OutcomeKind};
use hookd::domain::status::Status;
use hookd::store::notifications::Inserted;
use hookd::store::recording::AttemptRecord;

use crate::conformance::fixtures::{attempt, retry_in};
use crate::sqlite_writes::{commit_one, endpoint, new_notification, store};

#[tokio::test]
async fn a_first_success_is_kept_in_its_notification_row_and_a_late_duplicate_adds_no_attempt_row()
{
    let (_dir, store) = store().await;
    let shop = endpoint(&store, 0).await;
    let Inserted::Created(row) = commit_one(&store, new_notification(shop, None, "{}")).await
    else {
        panic!("created");
    };
    let id = row.id;
    let delivered = AttemptRecord {
        status_code: Some(200),
        response_body: Some("thanks".into()),
        duration_ms: 7,
        ..attempt(id, shop, 1, Outcome::Succeeded)
    };
    assert_eq!(
        store
            .record_attempts(&[delivered], &[])
            .await
            .unwrap()
            .moved,
        [id]
    );
    let kept: (Option<i32>, Option<String>) = sqlx::query_as(
        "SELECT first_attempt_ms, first_attempt_body FROM notifications WHERE id = ?",
    )
    .bind(id)
    .fetch_one(store.reader())
    .await
    .unwrap();
    assert_eq!(kept, (Some(7), Some("thanks".into())));
    let rows = || async {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM attempts")
            .fetch_one(store.reader())
            .await
            .unwrap()
    };
    assert_eq!(rows().await, 0, "kept inline, not in a row of attempts");

    // A process whose lease ran out records attempt 1 again, failed: it
    // moves nothing, and attempt 1 is still the one kept inline.
    let late = attempt(id, shop, 1, retry_in(60));
    assert!(store
        .record_attempts(&[late], &[])
        .await
        .unwrap()
        .moved
        .is_empty());
    assert_eq!(rows().await, 0);
    let listed = store.list_attempts(id, 0, 10).await.unwrap();
    assert_eq!(
        listed
            .iter()
            .map(|a| (a.number, a.outcome))
            .collect::<Vec<_>>(),
        [(1, OutcomeKind::Succeeded)]
    );
    let row = store.get_notification(id).await.unwrap().unwrap();
    assert_eq!(row.status, Status::Succeeded);
}
