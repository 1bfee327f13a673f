//! How the embedded schema stores what recording attempts writes, which no
//! seam shows: the conformance suite (`conformance/delivery.rs`) runs the
//! delivery cases on both backends, and PostgreSQL's twin of this one is in
//! `store.rs`.

use hookd::domain::outcome::{Outcome, OutcomeKind};
use hookd::domain::status::Status;
use hookd::store::notifications::Inserted;
use hookd::store::recording::AttemptRecord;
use uuid::Uuid;

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

// Issue #48: a recording that finds the writer held waits for it no
// longer than a create that takes it: the create writes the recording in
// its own transaction, and both are committed together.
#[tokio::test(flavor = "current_thread")]
async fn a_recording_waiting_behind_a_create_is_committed_with_the_create() {
    let (_dir, store) = store().await;
    let shop = endpoint(&store, 0).await;
    let Inserted::Created(row) = commit_one(&store, new_notification(shop, None, "{}")).await
    else {
        panic!("created");
    };
    let held = store.writer().acquire().await.unwrap();
    // The create queues for the writer first, then the recording comes.
    // On this test's one thread, each spawned task runs up to its wait
    // for the writer before the next line does.
    let create = tokio::spawn({
        let store = store.clone();
        async move { commit_one(&store, new_notification(shop, None, "{}")).await }
    });
    tokio::task::yield_now().await;
    let record = tokio::spawn({
        let store = store.clone();
        let delivered = attempt(row.id, shop, 1, Outcome::Succeeded);
        async move { store.record_attempts(&[delivered], &[]).await }
    });
    tokio::task::yield_now().await;
    drop(held);

    let Inserted::Created(second) = create.await.unwrap() else {
        panic!("created");
    };
    let recorded = record.await.unwrap().unwrap();
    assert_eq!(recorded.moved, [row.id]);
    assert_eq!(
        store.recordings_ridden(),
        1,
        "written in the create's commit"
    );
    let statuses: Vec<(Uuid, String)> =
        sqlx::query_as("SELECT id, status FROM notifications ORDER BY id")
            .fetch_all(store.reader())
            .await
            .unwrap();
    assert_eq!(
        statuses,
        [
            (row.id, "succeeded".to_string()),
            (second.id, "pending".to_string())
        ]
    );

    // With the writer free, a recording writes itself.
    let again = attempt(second.id, shop, 1, Outcome::Succeeded);
    let recorded = store.record_attempts(&[again], &[]).await.unwrap();
    assert_eq!(recorded.moved, [second.id]);
    assert_eq!(store.recordings_ridden(), 1);
}
