//! How old the push backlog is (`HousekeepingStore::due_backlog`): the
//! figure behind `hookd_oldest_due_seconds`, by whether a due row was
//! attempted before.

use std::time::Duration as StdDuration;

use chrono::{DateTime, Duration, Utc};
use hookd::domain::outcome::Outcome;
use hookd::store::housekeeping::OldestDue;
use uuid::Uuid;

use super::fixtures::{attempt, commit_new, create, due_at, endpoint, pull_endpoint, record};
use super::Backend;

fn oldest(endpoint_id: Uuid, attempted: bool, due_since: DateTime<Utc>) -> OldestDue {
    OldestDue {
        endpoint_id,
        attempted,
        due_since: DateTime::from_timestamp_micros(due_since.timestamp_micros()).unwrap(),
    }
}

pub async fn the_due_backlog_names_the_endpoints_due_longest_by_whether_attempted_and_counts_them<
    S: Backend,
>(
    store: S,
) {
    let clock = store.clock().clone();
    let now = clock.now();
    let ago = |seconds: i64| now - Duration::seconds(seconds);
    let (a, b, c) = (
        create(&store, endpoint()).await,
        create(&store, endpoint()).await,
        create(&store, endpoint()).await,
    );
    // Never attempted: a's oldest 300 s ago (and another), b 200 s, c 100 s.
    for (at, on) in [(300, &a), (50, &a), (200, &b), (100, &c)] {
        commit_new(&store, due_at(on, ago(at))).await;
    }
    // Attempted once, its retry due 400 s ago: c's oldest retry.
    let retried = commit_new(&store, due_at(&c, ago(500))).await;
    let retry = Outcome::Retry { at: ago(400) };
    record(&store, &[attempt(retried, c.id, 1, retry)]).await;
    // Left out: a row due in a minute, a pull row, a final row.
    commit_new(&store, due_at(&b, now + Duration::seconds(60))).await;
    let puller = create(&store, pull_endpoint()).await;
    commit_new(&store, due_at(&puller, ago(900))).await;
    let done = commit_new(&store, due_at(&b, ago(800))).await;
    record(&store, &[attempt(done, b.id, 1, Outcome::Succeeded)]).await;

    let backlog = store.due_backlog(now, 10).await.unwrap();
    assert_eq!(
        backlog.oldest,
        vec![
            oldest(a.id, false, ago(300)),
            oldest(b.id, false, ago(200)),
            oldest(c.id, false, ago(100)),
            oldest(c.id, true, ago(400)),
        ],
        "never attempted first, each kind oldest first"
    );
    assert_eq!((backlog.fresh, backlog.retrying), (4, 1));

    let top = store.due_backlog(now, 2).await.unwrap();
    assert_eq!(
        top.oldest,
        vec![
            oldest(a.id, false, ago(300)),
            oldest(b.id, false, ago(200)),
            oldest(c.id, true, ago(400)),
        ],
        "the limit is per kind"
    );
    assert_eq!((top.fresh, top.retrying), (4, 1), "counts are not limited");

    // Once the clock passes the later row's due time, it is due too.
    clock.advance(StdDuration::from_secs(120));
    let later = store.due_backlog(clock.now(), 10).await.unwrap();
    assert_eq!((later.fresh, later.retrying), (5, 1));
    assert_eq!(
        later.oldest, backlog.oldest,
        "b's oldest is still 200 s ago"
    );
}
