//! Housekeeping's seam: the pending rows a rebuild, a sweep or a heal of
//! the due index reads, retention (`retention`), the disabling of failing
//! endpoints (`disabling`), and the due index's beats.

use chrono::{DateTime, Duration, Utc};
use hookd::domain::id::new_id;
use hookd::domain::outcome::Outcome;
use hookd::store::housekeeping::PendingCursor;
use hookd::store::seams::{HousekeepingStore, PendingRows, WriteStore};
use uuid::Uuid;

use super::fixtures::{
    attempt, commit_new, create, due_at, endpoint, micros, pending, pull_endpoint, record,
};
use super::Backend;

mod disabling;
mod retention;
pub use disabling::{
    a_failing_endpoint_is_disabled_once_with_its_event_unless_it_changed,
    re_enabling_a_disabled_endpoint_forgets_its_failures,
};
pub use retention::{
    retention_deletes_events_only_once_their_deliveries_are_gone,
    retention_deletes_final_rows_completed_before_the_bound_with_their_attempts,
    retention_forgets_a_key_once_none_of_its_notifications_is_left_and_no_stored_one_holds_it,
    retention_walks_the_rows_in_pages_by_cursor,
};

/// The keyset cursor after a page's last row.
fn cursor_after(rows: &[(Uuid, DateTime<Utc>)]) -> Option<PendingCursor> {
    rows.last().map(|(id, at)| (*at, *id))
}

fn in_micros(rows: Vec<(Uuid, DateTime<Utc>)>) -> Vec<(Uuid, i64)> {
    rows.into_iter().map(|(id, at)| (id, micros(at))).collect()
}

/// Pending push rows due at `base + seconds`, two sharing a due time, and a
/// pull row and a final row beside them; the push rows in (due, id) order.
async fn due_rows<S: Backend>(store: &S) -> Vec<(Uuid, i64)> {
    let shop = create(store, endpoint()).await;
    let puller = create(store, pull_endpoint()).await;
    let base = Utc::now() - Duration::minutes(1);
    let mut rows = Vec::new();
    for seconds in [30, 10, 20, 10] {
        let at = base + Duration::seconds(seconds);
        rows.push((commit_new(store, due_at(&shop, at)).await, micros(at)));
    }
    commit_new(store, due_at(&puller, base)).await;
    let done = commit_new(store, due_at(&shop, base)).await;
    record(store, &[attempt(done, shop.id, 1, Outcome::Succeeded)]).await;
    rows.sort_by_key(|(id, at)| (*at, *id));
    rows
}

pub async fn pending_rows_page_in_due_order_by_keyset<S: Backend>(store: S) {
    let rows = due_rows(&store).await;
    let first = in_micros(PendingRows::pending_page(&store, None, 3).await.unwrap());
    assert_eq!(first, rows[..3]);
    let raw = PendingRows::pending_page(&store, None, 3).await.unwrap();
    let cursor = cursor_after(&raw);
    let rest = in_micros(PendingRows::pending_page(&store, cursor, 3).await.unwrap());
    assert_eq!(rest, rows[3..], "neither the pull row nor the final one");
    // A cursor between two rows of one due time.
    let tie = PendingRows::pending_page(&store, None, 1).await.unwrap();
    let after_tie = in_micros(
        PendingRows::pending_page(&store, cursor_after(&tie), 1)
            .await
            .unwrap(),
    );
    assert_eq!(after_tie, rows[1..2]);
}

pub async fn pending_due_before_stops_at_its_bound<S: Backend>(store: S) {
    let rows = due_rows(&store).await;
    // Before the last row's due time: not that one.
    let bound = DateTime::from_timestamp_micros(rows[3].1).unwrap();
    let due = in_micros(
        HousekeepingStore::pending_due_before(&store, None, bound, 10)
            .await
            .unwrap(),
    );
    assert_eq!(due, rows[..3]);
    let first = HousekeepingStore::pending_due_before(&store, None, bound, 1)
        .await
        .unwrap();
    let next = HousekeepingStore::pending_due_before(&store, cursor_after(&first), bound, 10)
        .await
        .unwrap();
    assert_eq!(in_micros(next), rows[1..3]);
}

pub async fn still_pending_keeps_only_pending_push_rows<S: Backend>(store: S) {
    let shop = create(&store, endpoint()).await;
    let puller = create(&store, pull_endpoint()).await;
    let kept = pending(&store, &shop).await;
    let pulled = pending(&store, &puller).await;
    let cancelled = pending(&store, &shop).await;
    WriteStore::cancel_notification(&store, cancelled, None)
        .await
        .unwrap();
    let found = HousekeepingStore::still_pending(&store, &[kept, pulled, cancelled, new_id()])
        .await
        .unwrap();
    assert_eq!(found.iter().map(|(id, _)| *id).collect::<Vec<_>>(), [kept]);
}

pub async fn pending_created_after_pages_in_id_order<S: Backend>(store: S) {
    let shop = create(&store, endpoint()).await;
    let puller = create(&store, pull_endpoint()).await;
    let first = pending(&store, &shop).await;
    // Due later than the rows after it: the order is by id, not due time.
    let late = commit_new(&store, due_at(&shop, Utc::now() + Duration::hours(1))).await;
    pending(&store, &puller).await;
    let last = pending(&store, &shop).await;
    let ids =
        |rows: Vec<(Uuid, DateTime<Utc>)>| rows.into_iter().map(|(id, _)| id).collect::<Vec<_>>();
    let page = HousekeepingStore::pending_created_after(&store, first, 1)
        .await
        .unwrap();
    assert_eq!(ids(page), [late]);
    let rest = HousekeepingStore::pending_created_after(&store, late, 10)
        .await
        .unwrap();
    assert_eq!(ids(rest), [last]);
    let all = HousekeepingStore::pending_created_after(&store, Uuid::nil(), 10)
        .await
        .unwrap();
    assert_eq!(ids(all), [first, late, last]);
}

/// The due indexes' beats (`domain::index_owner`), as the store keeps
/// them, a row per process: an index keeps its first sighting while one
/// of its processes beats, a process joining it takes that sighting, a
/// newcomer is seen after it, a name said to be gone hands its sighting on
/// and loses its rows, a stopped process's row goes, one unseen for a day
/// is deleted, and only those seen within `LIVE_FOR` are returned.
pub async fn an_index_beat_keeps_its_first_sighting_and_returns_the_live_ones<S: Backend>(
    store: S,
) {
    use hookd::domain::index_owner::{another_owner, Beat, IndexSeen, FORGET_AFTER, LIVE_FOR};
    // Whole microseconds, as both schemas keep them.
    let start = DateTime::from_timestamp_micros(micros(Utc::now())).unwrap();
    let (p1, p2, p3) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
    let beat = |identity: &str, process: Uuid, gone: Option<&str>, now: DateTime<Utc>| Beat {
        identity: identity.into(),
        process,
        gone: gone.map(str::to_owned),
        now,
        claims: true,
    };
    let names = |seen: &[IndexSeen]| {
        let mut names: Vec<String> = seen.iter().map(|s| s.identity.clone()).collect();
        names.sort();
        names
    };
    let of = |seen: &[IndexSeen], process: Uuid| {
        seen.iter().find(|s| s.process == process).cloned().unwrap()
    };

    let first = store.beat_index(&beat("a", p1, None, start)).await.unwrap();
    assert_eq!(first.len(), 1);
    assert_eq!((first[0].first_seen, first[0].seen_at), (start, start));
    // b's host reads a time before a's first sighting: b still comes after.
    let seen = store
        .beat_index(&beat("b", p2, None, start - Duration::seconds(2)))
        .await
        .unwrap();
    assert_eq!(names(&seen), ["a", "b"]);
    assert!(of(&seen, p2).first_seen > start);
    assert!(another_owner("b", &seen).is_some(), "a was seen first");
    // A second process of a takes its first sighting.
    let later = start + Duration::seconds(5);
    let seen = store.beat_index(&beat("a", p3, None, later)).await.unwrap();
    assert_eq!(names(&seen), ["a", "a", "b"]);
    assert_eq!(of(&seen, p3).first_seen, start);
    let again = store.beat_index(&beat("a", p1, None, later)).await.unwrap();
    assert_eq!(
        of(&again, p1).first_seen,
        start,
        "a beat keeps the first sighting"
    );
    assert_eq!(another_owner("a", &again), None);

    // A beat whose clock reads earlier does not move a row back.
    let behind = store.beat_index(&beat("a", p1, None, start)).await.unwrap();
    assert_eq!(of(&behind, p1).seen_at, later);

    // a's Redis lost its keys and named it c: c takes a's first sighting,
    // and every row of a goes.
    let seen = store
        .beat_index(&beat("c", p1, Some("a"), later + Duration::seconds(1)))
        .await
        .unwrap();
    assert_eq!(names(&seen), ["b", "c"]);
    assert_eq!(of(&seen, p1).first_seen, start);
    assert_eq!(another_owner("c", &seen), None);
    // A beat may not name itself gone.
    let seen = store
        .beat_index(&beat("b", p2, Some("b"), later + Duration::seconds(1)))
        .await
        .unwrap();
    assert_eq!(names(&seen), ["b", "c"]);

    // c's only process stops while b is live: its row stays (a restart
    // must not hand the database to b).
    store
        .end_index_beats(p1, later + Duration::seconds(1))
        .await
        .unwrap();
    let seen = store
        .beat_index(&beat("b", p2, None, later + Duration::seconds(2)))
        .await
        .unwrap();
    assert_eq!(names(&seen), ["b", "c"]);
    // b's process was killed (its row stays); c beats on until b is
    // unseen for LIVE_FOR behind it (behind its beat stored, at its next
    // one), then stops: its row goes.
    let c_alone = later + Duration::seconds(3) + LIVE_FOR;
    let seen = store
        .beat_index(&beat("c", p1, None, c_alone - Duration::seconds(1)))
        .await
        .unwrap();
    assert_eq!(names(&seen), ["b", "c"]);
    let seen = store
        .beat_index(&beat("c", p1, None, c_alone))
        .await
        .unwrap();
    assert_eq!(names(&seen), ["c"]);
    store.end_index_beats(p1, c_alone).await.unwrap();

    // c starts again with only b's row stored: liveness counts from the
    // latest row (as after an outage in which no beat got through), so c
    // comes after b, the index seen last; at c's next beat b is unseen
    // for LIVE_FOR behind it, and c owns the database.
    let past_b = c_alone + Duration::seconds(1);
    let seen = store
        .beat_index(&beat("c", p1, None, past_b))
        .await
        .unwrap();
    assert_eq!(names(&seen), ["b", "c"]);
    assert!(another_owner("c", &seen).is_some());
    let seen = store
        .beat_index(&beat("c", p1, None, past_b + Duration::seconds(1)))
        .await
        .unwrap();
    assert_eq!(names(&seen), ["c"]);
    assert_eq!(of(&seen, p1).first_seen, past_b);

    // A day later, every row unseen since: deleted, and a new beat finds
    // itself alone.
    let next_day = past_b + FORGET_AFTER + Duration::seconds(2);
    let seen = store
        .beat_index(&beat("d", p3, None, next_day))
        .await
        .unwrap();
    assert_eq!(names(&seen), ["d"]);
    assert_eq!(of(&seen, p3).first_seen, next_day);

    // A process that does not claim (`--role api`) reads and writes
    // nothing: it sees d, and stays unseen itself.
    let api = Beat {
        claims: false,
        ..beat("e", p1, None, next_day + Duration::seconds(1))
    };
    let seen = store.beat_index(&api).await.unwrap();
    assert_eq!(names(&seen), ["d"]);
    assert!(another_owner("e", &seen).is_some());
    let seen = store
        .beat_index(&beat("d", p3, None, next_day + Duration::seconds(2)))
        .await
        .unwrap();
    assert_eq!(names(&seen), ["d"]);
}
