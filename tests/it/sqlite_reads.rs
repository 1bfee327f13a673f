//! The embedded store's listings and housekeeping on real SQLite files:
//! notification filters and pages, attempts with one kept inline, pending
//! rows in due order, retention.

use chrono::{DateTime, Duration, Utc};
use hookd::domain::outcome::OutcomeKind;
use hookd::domain::status::Status;
use hookd::store::notifications::{Inserted, NewNotification, NotificationFilter};
use hookd::store::sqlite::SqliteStore;
use hookd::store::writes::Writes;
use uuid::Uuid;

use crate::sqlite_writes::{endpoint, new_notification, now, store};

async fn commit(store: &SqliteStore, items: Vec<NewNotification>) -> Vec<Uuid> {
    let committed = store
        .commit(Writes {
            notifications: items,
            ..Writes::default()
        })
        .await
        .unwrap();
    committed
        .notifications
        .iter()
        .map(|r| match r {
            Inserted::Created(n) => n.id,
            _ => panic!("not created"),
        })
        .collect()
}

/// Moves a row to a final status, as recording an attempt would.
async fn complete(store: &SqliteStore, id: Uuid, status: Status, at: DateTime<Utc>) {
    sqlx::query(
        "UPDATE notifications SET status = ?, completed_at = ?, next_attempt_at = NULL \
         WHERE id = ?",
    )
    .bind(status.as_str())
    .bind(at.timestamp_micros())
    .bind(id)
    .execute(store.writer())
    .await
    .unwrap();
}

async fn attempt_row(store: &SqliteStore, id: Uuid, number: i32, outcome: &str) {
    sqlx::query(
        "INSERT INTO attempts (notification_id, number, started_at, duration_ms, status_code, \
             response_body, error_code, error_message, outcome) \
         VALUES (?, ?, ?, 12, 503, 'busy', 'http_status', 'HTTP 503', ?)",
    )
    .bind(id)
    .bind(number)
    .bind(1_000_000 * number as i64)
    .bind(outcome)
    .execute(store.writer())
    .await
    .unwrap();
}

#[tokio::test]
async fn notifications_list_newest_first_by_every_filter_in_pages() {
    let (_dir, store) = store().await;
    let (one, two) = (endpoint(&store, 0).await, endpoint(&store, 0).await);
    let mut typed = new_notification(one, Some("k1"), "1");
    typed.event_type = Some("user.created".into());
    let ids = commit(
        &store,
        vec![
            typed,
            new_notification(one, Some("k2"), "2"),
            new_notification(two, Some("k1"), "3"),
            new_notification(two, None, "4"),
        ],
    )
    .await;
    complete(&store, ids[1], Status::Failed, now()).await;
    complete(&store, ids[3], Status::Succeeded, now()).await;
    let list = |filter: NotificationFilter| {
        let store = store.clone();
        async move {
            let rows = store.list_notifications(&filter).await.unwrap();
            assert!(rows.iter().all(|n| n.body.is_empty()), "no payloads");
            rows.iter().map(|n| n.id).collect::<Vec<_>>()
        }
    };
    let all = NotificationFilter {
        limit: 10,
        ..NotificationFilter::default()
    };
    assert_eq!(list(all.clone()).await, [ids[3], ids[2], ids[1], ids[0]]);
    let by_endpoint = NotificationFilter {
        endpoint_id: Some(one),
        ..all.clone()
    };
    assert_eq!(list(by_endpoint).await, [ids[1], ids[0]]);
    for (status, expected) in [
        (Status::Pending, vec![ids[2], ids[0]]),
        (Status::Failed, vec![ids[1]]),
        (Status::Succeeded, vec![ids[3]]),
        (Status::Cancelled, vec![]),
    ] {
        let filter = NotificationFilter {
            status: Some(status),
            ..all.clone()
        };
        assert_eq!(list(filter).await, expected, "{status}");
    }
    let by_key = NotificationFilter {
        key: Some("k1".into()),
        ..all.clone()
    };
    assert_eq!(list(by_key).await, [ids[2], ids[0]]);
    let by_type = NotificationFilter {
        event_type: Some("user.created".into()),
        ..all.clone()
    };
    assert_eq!(list(by_type).await, [ids[0]]);
    let by_event = NotificationFilter {
        event_id: Some(Uuid::now_v7()),
        ..all.clone()
    };
    assert!(list(by_event).await.is_empty());
    let page = NotificationFilter {
        limit: 3,
        ..all.clone()
    };
    assert_eq!(list(page).await, [ids[3], ids[2], ids[1]]);
    let next = NotificationFilter {
        limit: 3,
        cursor: Some(ids[1]),
        ..all
    };
    assert_eq!(list(next).await, [ids[0]]);
}

#[tokio::test]
async fn a_first_attempt_kept_in_its_row_is_listed_as_attempt_one() {
    let (_dir, store) = store().await;
    let endpoint_id = endpoint(&store, 0).await;
    let ids = commit(
        &store,
        vec![
            new_notification(endpoint_id, None, "1"),
            new_notification(endpoint_id, None, "2"),
        ],
    )
    .await;
    let (kept, rows) = (ids[0], ids[1]);
    let at = now();
    sqlx::query(
        "UPDATE notifications SET last_attempt_at = ?, first_attempt_ms = 87, \
             first_attempt_body = 'ok', last_status_code = 200 WHERE id = ?",
    )
    .bind(at.timestamp_micros())
    .bind(kept)
    .execute(store.writer())
    .await
    .unwrap();
    // A row 1 beside it (written by an older build) is not listed twice.
    for number in 1..=3 {
        attempt_row(&store, kept, number, "retry").await;
        attempt_row(&store, rows, number, "retry").await;
    }

    let listed = store.list_attempts(kept, 0, 10).await.unwrap();
    assert_eq!(
        listed.iter().map(|a| a.number).collect::<Vec<_>>(),
        [1, 2, 3]
    );
    let first = &listed[0];
    assert_eq!(first.notification_id, kept);
    assert_eq!(first.started_at, at);
    assert_eq!(first.duration_ms, 87);
    assert_eq!(first.status_code, Some(200));
    assert_eq!(first.response_body.as_deref(), Some("ok"));
    assert_eq!(first.error_code, None);
    assert_eq!(first.outcome, OutcomeKind::Succeeded);
    let second = &listed[1];
    assert_eq!(second.started_at, DateTime::from_timestamp(2, 0).unwrap());
    assert_eq!(second.error_message.as_deref(), Some("HTTP 503"));
    assert_eq!(second.outcome, OutcomeKind::Retry);

    let after_first = store.list_attempts(kept, 1, 10).await.unwrap();
    assert_eq!(
        after_first.iter().map(|a| a.number).collect::<Vec<_>>(),
        [2, 3]
    );
    let limited = store.list_attempts(kept, 0, 2).await.unwrap();
    assert_eq!(limited.iter().map(|a| a.number).collect::<Vec<_>>(), [1, 2]);
    let plain = store.list_attempts(rows, 0, 10).await.unwrap();
    assert_eq!(
        plain.iter().map(|a| a.number).collect::<Vec<_>>(),
        [1, 2, 3]
    );
    assert_eq!(plain[0].outcome, OutcomeKind::Retry);
}

#[tokio::test]
async fn pending_rows_come_in_due_order_page_by_page_without_pull_or_final_rows() {
    let (_dir, store) = store().await;
    let endpoint_id = endpoint(&store, 0).await;
    let base = now();
    let mut items = Vec::new();
    // Two rows share a due time: the id orders them.
    for offset in [30, 10, 20, 10, 40, 50] {
        let mut item = new_notification(endpoint_id, None, "x");
        item.next_attempt_at = base + Duration::microseconds(offset);
        items.push(item);
    }
    items[4].pull = true;
    let ids = commit(&store, items.clone()).await;
    complete(&store, ids[5], Status::Cancelled, now()).await;

    let mut expected: Vec<(Uuid, DateTime<Utc>)> = items[..4]
        .iter()
        .map(|i| (i.id, i.next_attempt_at))
        .collect();
    expected.sort_by_key(|&(id, at)| (at, id));
    let mut walked = Vec::new();
    let mut cursor = None;
    loop {
        let page = store.pending_page(cursor, 2).await.unwrap();
        assert!(page.len() <= 2);
        let Some(&last) = page.last() else { break };
        walked.extend(page);
        cursor = Some((last.1, last.0));
    }
    assert_eq!(walked, expected);

    let due = store
        .pending_due_before(None, base + Duration::microseconds(20), 10)
        .await
        .unwrap();
    assert_eq!(due, expected[..2]);
    let after = store
        .pending_due_before(
            Some((expected[0].1, expected[0].0)),
            base + Duration::seconds(1),
            10,
        )
        .await
        .unwrap();
    assert_eq!(after, expected[1..]);

    let still = store.still_pending(&ids).await.unwrap();
    let mut still_ids: Vec<Uuid> = still.iter().map(|r| r.0).collect();
    still_ids.sort();
    assert_eq!(still_ids, ids[..4]);
    let created = store.pending_created_after(ids[1], 10).await.unwrap();
    assert_eq!(
        created.iter().map(|r| r.0).collect::<Vec<_>>(),
        [ids[2], ids[3]]
    );

    // Marks for the due index: only pending rows take one; a final row's
    // mark comes back without a due time.
    store.mark_needs_index(&ids).await.unwrap();
    let owed = store.needing_index(10).await.unwrap();
    assert_eq!(owed.len(), 5, "the cancelled row takes no mark");
    sqlx::query("UPDATE notifications SET needs_index = 1 WHERE id = ?")
        .bind(ids[5])
        .execute(store.writer())
        .await
        .unwrap();
    let owed = store.needing_index(10).await.unwrap();
    assert!(owed.contains(&(ids[5], None)));
    assert!(owed.contains(&(ids[0], Some(items[0].next_attempt_at))));
    store.clear_needs_index(&ids).await.unwrap();
    assert!(store.needing_index(10).await.unwrap().is_empty());
}

#[tokio::test]
async fn retention_deletes_only_final_rows_completed_before_the_bound_with_their_attempts() {
    let (_dir, store) = store().await;
    let endpoint_id = endpoint(&store, 0).await;
    let items: Vec<NewNotification> = (0..7)
        .map(|i| new_notification(endpoint_id, None, &i.to_string()))
        .collect();
    let ids = commit(&store, items).await;
    let long_ago = now() - Duration::days(40);
    let bound = now() + Duration::seconds(1);
    for (i, status) in [
        (0, Status::Succeeded),
        (1, Status::Failed),
        (3, Status::Cancelled),
        (5, Status::Succeeded),
    ] {
        complete(&store, ids[i], status, long_ago).await;
        attempt_row(&store, ids[i], 1, "retry").await;
    }
    // Completed after the bound: kept.
    complete(&store, ids[6], Status::Failed, bound + Duration::seconds(1)).await;
    attempt_row(&store, ids[2], 1, "retry").await;

    let mut steps = Vec::new();
    let mut after = None;
    loop {
        let (deleted, next) = store.purge_completed(bound, after, 2).await.unwrap();
        steps.push(deleted);
        match next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    assert_eq!(steps, [2, 1, 1, 0]);
    for (i, id) in ids.iter().enumerate() {
        let kept = store.get_notification(*id).await.unwrap().is_some();
        assert_eq!(kept, [2, 4, 6].contains(&i), "row {i}");
        let attempts = store.list_attempts(*id, 0, 10).await.unwrap().len();
        assert_eq!(attempts, usize::from(i == 2), "attempts of row {i}");
    }
}

#[tokio::test]
async fn an_event_is_purged_once_its_deliveries_are_gone() {
    let (_dir, store) = store().await;
    let endpoint_id = endpoint(&store, 0).await;
    let mut events = Vec::new();
    for deliveries in [0, 1] {
        let at = now();
        events.push(hookd::store::events::NewEvent {
            id: Uuid::now_v7(),
            owner: None,
            event_type: "t".into(),
            key: None,
            content_type: "text/plain".into(),
            body: b"e".to_vec(),
            deliver_at: at,
            headers: Default::default(),
            order_key: None,
            deliveries: (0..deliveries)
                .map(|_| hookd::store::events::NewDelivery {
                    id: Uuid::now_v7(),
                    headers: None,
                    ordered: false,
                    place: Default::default(),
                    endpoint_id,
                    schedule: Default::default(),
                    next_attempt_at: at,
                    pull: false,
                })
                .collect(),
        });
    }
    let (bare, delivered) = (events[0].id, events[1].id);
    store
        .commit(Writes {
            events,
            ..Writes::default()
        })
        .await
        .unwrap();
    let bound = now() + Duration::seconds(1);

    assert_eq!(
        store.purge_events(bound, None, 10).await.unwrap(),
        (1, None)
    );
    assert!(store.get_event(bare).await.unwrap().is_none());
    assert!(store.get_event(delivered).await.unwrap().is_some());
    // A walk in pages: a full page gives where to go on from.
    assert_eq!(
        store.purge_events(bound, None, 1).await.unwrap(),
        (0, Some(delivered))
    );
    assert_eq!(
        store.purge_events(bound, Some(delivered), 1).await.unwrap(),
        (0, None)
    );
}

#[tokio::test]
async fn a_notification_is_leased_while_its_consumers_lease_has_not_run_out() {
    let (_dir, store) = store().await;
    let endpoint_id = endpoint(&store, 0).await;
    let ids = commit(
        &store,
        vec![
            new_notification(endpoint_id, None, "1"),
            new_notification(endpoint_id, None, "2"),
        ],
    )
    .await;
    for (id, until) in [
        (ids[0], now() + Duration::minutes(5)),
        (ids[1], now() - Duration::seconds(1)),
    ] {
        sqlx::query("UPDATE notifications SET lease_id = ?, next_attempt_at = ? WHERE id = ?")
            .bind(Uuid::now_v7())
            .bind(until.timestamp_micros())
            .bind(id)
            .execute(store.writer())
            .await
            .unwrap();
    }
    let one = store.get_notification(ids[0]).await.unwrap().unwrap();
    let two = store.get_notification(ids[1]).await.unwrap().unwrap();
    assert!(one.leased);
    assert!(!two.leased, "its lease ran out");
    let listed = store
        .list_notifications(&NotificationFilter {
            limit: 10,
            ..NotificationFilter::default()
        })
        .await
        .unwrap();
    let leased: Vec<(Uuid, bool)> = listed.iter().map(|n| (n.id, n.leased)).collect();
    assert_eq!(leased, [(ids[1], false), (ids[0], true)]);
}
