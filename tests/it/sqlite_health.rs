//! The embedded store's housekeeping of endpoints on real SQLite files:
//! the managed operator endpoint kept in step, failing endpoints disabled
//! with their operator events, and rows changed since read left alone.

use chrono::{Duration, Utc};
use hookd::domain::operator_event::{DisabledEndpoint, OperatorEvent, OPERATOR_ENDPOINT_ID};
use hookd::store::seams::OperatorTarget;
use hookd::store::sqlite::SqliteStore;
use uuid::Uuid;

use crate::sqlite_writes::{endpoint, store};

async fn operator_row(store: &SqliteStore) -> Option<(Option<String>, i64, bool)> {
    sqlx::query_as("SELECT url, version, deleted_at IS NOT NULL FROM endpoints WHERE id = ?")
        .bind(OPERATOR_ENDPOINT_ID)
        .fetch_optional(store.writer())
        .await
        .unwrap()
}

async fn fail_since(store: &SqliteStore, id: Uuid, minutes: i64) {
    let at = (Utc::now() - Duration::minutes(minutes)).timestamp_micros();
    sqlx::query("UPDATE endpoints SET failing_since = ? WHERE id = ?")
        .bind(at)
        .bind(id)
        .execute(store.writer())
        .await
        .unwrap();
}

#[tokio::test]
async fn sqlite_the_operator_endpoint_is_written_only_when_its_target_changes() {
    let (_dir, store) = store().await;
    let target = || OperatorTarget::plain("http://127.0.0.1:1/a", "whsec_a");
    store.sync_operator_endpoint(Some(target())).await.unwrap();
    assert_eq!(
        operator_row(&store).await,
        Some((Some("http://127.0.0.1:1/a".into()), 0, false))
    );
    store.sync_operator_endpoint(Some(target())).await.unwrap();
    assert_eq!(operator_row(&store).await.unwrap().1, 0, "unchanged");
    store
        .sync_operator_endpoint(Some(OperatorTarget::plain(
            "http://127.0.0.1:1/b",
            "whsec_a",
        )))
        .await
        .unwrap();
    assert_eq!(
        operator_row(&store).await,
        Some((Some("http://127.0.0.1:1/b".into()), 1, false))
    );
    store.sync_operator_endpoint(None).await.unwrap();
    assert!(operator_row(&store).await.unwrap().2, "deleted");
    store.sync_operator_endpoint(Some(target())).await.unwrap();
    assert_eq!(
        operator_row(&store).await,
        Some((Some("http://127.0.0.1:1/a".into()), 3, false))
    );
}

#[tokio::test]
async fn sqlite_failing_endpoints_are_disabled_with_their_event_unless_changed_since_read() {
    let (_dir, store) = store().await;
    store
        .sync_operator_endpoint(Some(OperatorTarget::plain(
            "http://127.0.0.1:1/op",
            "whsec_a",
        )))
        .await
        .unwrap();
    let (old, changed, recent) = (
        endpoint(&store, 0).await,
        endpoint(&store, 0).await,
        endpoint(&store, 0).await,
    );
    fail_since(&store, old, 120).await;
    fail_since(&store, changed, 120).await;
    fail_since(&store, recent, 1).await;
    let failing = store
        .failing_endpoints(Utc::now() - Duration::minutes(60))
        .await
        .unwrap();
    let mut expected = vec![old, changed];
    expected.sort();
    assert_eq!(failing.iter().map(|e| e.id).collect::<Vec<_>>(), expected);
    // A success ends `changed`'s run after it was read.
    sqlx::query("UPDATE endpoints SET failing_since = NULL WHERE id = ?")
        .bind(changed)
        .execute(store.writer())
        .await
        .unwrap();
    let reason = "failing for an hour";
    let events: Vec<OperatorEvent> = failing
        .iter()
        .map(|e| {
            OperatorEvent::endpoint_disabled(
                &DisabledEndpoint {
                    endpoint_id: e.id,
                    endpoint_uid: e.uid.as_deref(),
                    url: &e.url,
                    failing_since: e.failing_since,
                    reason,
                },
                Utc::now(),
            )
        })
        .collect();
    assert_eq!(events.len(), 2);
    let disabled = store
        .disable_endpoints(&failing, reason, &events)
        .await
        .unwrap();
    assert_eq!(disabled, [old]);
    let keys: Vec<String> =
        sqlx::query_scalar("SELECT key FROM notifications WHERE endpoint_id = ?")
            .bind(OPERATOR_ENDPOINT_ID)
            .fetch_all(store.writer())
            .await
            .unwrap();
    let old_event = events.iter().find(|e| e.subject == old).unwrap();
    assert_eq!(keys, std::slice::from_ref(&old_event.key));
    // Read again, it is no longer failing-and-enabled: a second pass
    // disables nothing.
    assert!(store
        .disable_endpoints(&failing, reason, &events)
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn sqlite_a_reseal_walk_rewrites_rows_not_under_the_key_and_then_finds_none() {
    let (_dir, store) = store().await;
    let (a, b) = (endpoint(&store, 0).await, endpoint(&store, 0).await);
    sqlx::query("UPDATE endpoints SET headers = '{\"x-k\":\"v\"}' WHERE id = ?")
        .bind(b)
        .execute(store.writer())
        .await
        .unwrap();
    let mut item = crate::sqlite_writes::new_notification(a, None, "{}");
    item.headers.insert("x-h".into(), "plain".into());
    let id = item.id;
    crate::sqlite_writes::commit_one(&store, item).await;
    let prefix = "enc:v1:k2:";
    assert_eq!(store.count_not_starting_with(prefix).await.unwrap(), 3);

    let seal = |v: &mut String| *v = format!("{prefix}{v}");
    let mut first = |row: &mut hookd::store::seams::EndpointSecrets| {
        seal(&mut row.secret);
        row.headers.values_mut().for_each(seal);
        true
    };
    let page = store
        .reseal_endpoints(Uuid::nil(), 1, prefix, &mut first)
        .await
        .unwrap();
    assert_eq!((page.next, page.changed), (Some(a.min(b)), 1));
    let page = store
        .reseal_endpoints(page.next.unwrap(), 10, prefix, &mut first)
        .await
        .unwrap();
    assert_eq!((page.next, page.changed), (None, 1));
    let mut headers = |_: Uuid, h: &mut std::collections::BTreeMap<String, String>| {
        h.values_mut().for_each(seal);
        true
    };
    let page = store
        .reseal_notifications(Uuid::nil(), 10, prefix, &mut headers)
        .await
        .unwrap();
    assert_eq!((page.next, page.changed), (None, 1));
    assert_eq!(store.count_not_starting_with(prefix).await.unwrap(), 0);
    let row = store.get_notification(id).await.unwrap().unwrap();
    assert_eq!(row.headers["x-h"], "enc:v1:k2:plain");
}
