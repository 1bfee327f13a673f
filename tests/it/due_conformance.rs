//! One suite for every due index: each check is written once, over any
//! `DueIndex`, and stamped out per backend (`redis::…` on the real Redis,
//! a prefix per test; `redis_5::…` the same with hand-offs through the
//! script a Redis before 6.2 needs; `sharded::…` the same cut into 4 shards;
//! `cluster::…` in 16 shards on the real Redis Cluster; `memory::…` in
//! process). The shared refill fills an empty index of each from a real
//! PostgreSQL's pending rows.
//!
//! A sharded index orders a claim within a shard only (across shards it
//! takes by turns: `due::redis::sharded`), so the checks of order use ids
//! of one shard (`id`); the others use ids of several shards (`id_in`), so
//! that every call on ids is split across shards, and the refill's spread
//! over every shard.

use std::collections::HashSet;

use chrono::{DateTime, Duration, Utc};
use hookd::dispatcher::refill;
use hookd::domain::id::new_id;
use hookd::domain::shard::{shard_of, MAX_SHARDS};
use hookd::due::memory::MemoryIndex;
use hookd::due::redis::{RedisIndex, ShardedIndex};
use hookd::due::{score, DueIndex};
use hookd::store::postgres::PgStore;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::helpers::{redis_url, test_settings};
use crate::redis_cluster::cluster_index;

fn redis_index() -> RedisIndex {
    RedisIndex::new(&test_settings(&redis_url(), "").redis).unwrap()
}

fn sharded_index() -> ShardedIndex {
    ShardedIndex::new(&test_settings(&redis_url(), "[redis]\nshards = 4\n").redis).unwrap()
}

/// A new id in shard 0 of any shard count that divides 1024 (4, 16):
/// one shard orders its claims.
fn id() -> Uuid {
    loop {
        let id = new_id();
        if shard_of(&id, MAX_SHARDS) == 0 {
            return id;
        }
    }
}

/// A new id in shard `shard` (1 to 3) of 16 shards, and so in shard
/// `shard` of 4 too: ids of `id_in(1)`, `id_in(2)`, `id_in(3)` and `id()`
/// are in four different shards of either count.
fn id_in(shard: u16) -> Uuid {
    loop {
        let id = new_id();
        if shard_of(&id, 16) == shard {
            return id;
        }
    }
}

/// Stamps every check out once per backend, as `#[tokio::test]`s, and the
/// checks that need PostgreSQL as `#[sqlx::test]`s.
macro_rules! for_each_index {
    ($($check:ident),* $(,)?; with_store: $($stored:ident),* $(,)?) => {
        for_each_index!(@backend redis, redis_index(); $($check),*; $($stored),*);
        for_each_index!(@backend redis_5, redis_index().hand_off_by_script(); $($check),*; $($stored),*);
        for_each_index!(@backend sharded, sharded_index(); $($check),*; $($stored),*);
        for_each_index!(@backend cluster, cluster_index(); $($check),*; $($stored),*);
        for_each_index!(@backend memory, MemoryIndex::new(); $($check),*; $($stored),*);
    };
    (@backend $backend:ident, $make:expr; $($check:ident),*; $($stored:ident),*) => {
        mod $backend {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[tokio::test]
                async fn $check() {
                    super::$check($make).await
                }
            )*
            $(
                #[sqlx::test]
                async fn $stored(_: PgPoolOptions, connect: PgConnectOptions) {
                    let (pool, _closes) = crate::helpers::test_pool(connect).await;
                    super::$stored($make, pool).await
                }
            )*
        }
    };
}

for_each_index!(
    added_notifications_are_claimed_earliest_first_and_leased,
    a_claim_takes_only_what_is_due_by_its_time_and_no_more_than_its_limit,
    an_expired_lease_comes_back_due_at_once_and_counts_as_requeued,
    completing_ends_the_leases_and_schedules_the_next_attempts,
    a_rescheduled_claim_is_due_again_at_its_new_time_and_a_forgotten_one_is_gone,
    extending_moves_only_the_leases_still_held,
    a_notification_handed_over_leased_is_claimed_only_once_its_lease_expires,
    a_hand_off_keeps_a_lease_that_ends_later_and_replaces_an_ended_one,
    removing_drops_a_notification_whether_due_or_leased,
    the_leases_of_many_ids_are_read_at_once_with_their_ends,
    adding_a_notification_again_moves_it,
    adding_what_is_missing_leaves_what_is_due_or_leased_alone,
    a_marked_row_moves_earlier_but_never_later;
    with_store:
    the_shared_refill_fills_an_empty_index_with_every_pending_row_once,
);

fn ms(at: DateTime<Utc>) -> Option<i64> {
    Some(score(at))
}

async fn added_notifications_are_claimed_earliest_first_and_leased(index: impl DueIndex) {
    let now = Utc::now();
    let (a, b, c, later) = (id(), id(), id(), id());
    index
        .add(&[
            (a, now - Duration::seconds(3)),
            (b, now - Duration::seconds(1)),
            (c, now - Duration::seconds(2)),
            (later, now + Duration::hours(1)),
        ])
        .await
        .unwrap();
    assert_eq!(index.depth().await.unwrap(), (4, 0));

    let lease = now + Duration::minutes(5);
    let claim = index.claim(now, now, 10, lease).await.unwrap();
    assert_eq!(claim.ids, vec![a, c, b]);
    assert_eq!(claim.requeued, 0);
    assert_eq!(claim.next_due_ms, ms(now + Duration::hours(1)));
    assert_eq!(claim.next_lease_ms, ms(lease));
    assert_eq!(index.depth().await.unwrap(), (1, 3));
    for id in [a, b, c] {
        assert!(index.leased(id, now).await.unwrap(), "{id} is leased");
    }
    assert!(!index.leased(later, now).await.unwrap());
    let after = lease + Duration::milliseconds(1);
    assert!(
        !index.leased(a, after).await.unwrap(),
        "a lease ends at its time"
    );
    index.ping().await.unwrap();
}

async fn a_claim_takes_only_what_is_due_by_its_time_and_no_more_than_its_limit(
    index: impl DueIndex,
) {
    let now = Utc::now();
    let due: Vec<(Uuid, DateTime<Utc>)> = (1..=5)
        .map(|s| (id(), now - Duration::seconds(6 - s)))
        .collect();
    let (soon, later) = (id(), id());
    index.add(&due).await.unwrap();
    index
        .add(&[
            (soon, now + Duration::seconds(10)),
            (later, now + Duration::seconds(20)),
        ])
        .await
        .unwrap();
    let lease = now + Duration::minutes(5);

    let first = index.claim(now, now, 3, lease).await.unwrap();
    let earliest: Vec<Uuid> = due[..3].iter().map(|(id, _)| *id).collect();
    assert_eq!(first.ids, earliest);
    assert_eq!(first.next_due_ms, ms(due[3].1));

    let ahead = index
        .claim(now, now + Duration::seconds(10), 10, lease)
        .await
        .unwrap();
    assert_eq!(ahead.ids, vec![due[3].0, due[4].0, soon]);
    assert_eq!(ahead.next_due_ms, ms(now + Duration::seconds(20)));
    assert!(index
        .claim(now, now, 10, lease)
        .await
        .unwrap()
        .ids
        .is_empty());
    assert_eq!(index.depth().await.unwrap(), (1, 6));
}

async fn an_expired_lease_comes_back_due_at_once_and_counts_as_requeued(index: impl DueIndex) {
    let now = Utc::now();
    let (a, b) = (id(), id());
    index.add(&[(a, now - Duration::seconds(1))]).await.unwrap();
    let first_lease = now + Duration::seconds(1);
    assert_eq!(
        index.claim(now, now, 10, first_lease).await.unwrap().ids,
        vec![a]
    );
    index.add(&[(b, now - Duration::seconds(2))]).await.unwrap();

    // Before its lease ends, nothing comes back.
    let lease = now + Duration::minutes(5);
    let early = index
        .claim(now, now - Duration::seconds(5), 10, lease)
        .await
        .unwrap();
    assert_eq!((early.ids.len(), early.requeued), (0, 0));
    assert_eq!(early.next_lease_ms, ms(first_lease));

    let later = now + Duration::seconds(2);
    let claim = index.claim(later, later, 10, lease).await.unwrap();
    assert_eq!(claim.requeued, 1);
    // Due again at the claim's time: after b, which was due before it.
    assert_eq!(claim.ids, vec![b, a]);
    assert_eq!(claim.next_due_ms, None);
    assert_eq!(claim.next_lease_ms, ms(lease));
    assert!(index.leased(a, later).await.unwrap(), "leased anew");
    assert_eq!(index.depth().await.unwrap(), (0, 2));
}

async fn completing_ends_the_leases_and_schedules_the_next_attempts(index: impl DueIndex) {
    let now = Utc::now();
    let (a, b) = (id_in(1), id_in(2));
    index
        .add(&[(a, now - Duration::seconds(1)), (b, now)])
        .await
        .unwrap();
    let lease = now + Duration::minutes(5);
    assert_eq!(index.claim(now, now, 10, lease).await.unwrap().ids.len(), 2);

    let retry = now + Duration::hours(1);
    index.complete(&[a, b], &[(b, retry)]).await.unwrap();
    assert_eq!(index.depth().await.unwrap(), (1, 0));
    assert!(!index.leased(a, now).await.unwrap());
    assert!(!index.leased(b, now).await.unwrap());
    let idle = index.claim(now, now, 10, lease).await.unwrap();
    assert!(idle.ids.is_empty());
    assert_eq!((idle.next_due_ms, idle.next_lease_ms), (ms(retry), None));
    assert_eq!(
        index.claim(retry, retry, 10, lease).await.unwrap().ids,
        vec![b]
    );
}

async fn a_rescheduled_claim_is_due_again_at_its_new_time_and_a_forgotten_one_is_gone(
    index: impl DueIndex,
) {
    let now = Utc::now();
    let (a, b) = (id_in(1), id_in(2));
    index
        .add(&[(a, now - Duration::seconds(1)), (b, now)])
        .await
        .unwrap();
    let lease = now + Duration::minutes(5);
    assert_eq!(index.claim(now, now, 10, lease).await.unwrap().ids.len(), 2);

    let deferred = now + Duration::seconds(10);
    index.reschedule(&[(a, deferred)]).await.unwrap();
    index.forget(&[b]).await.unwrap();
    assert_eq!(index.depth().await.unwrap(), (1, 0));
    assert!(!index.leased(a, now).await.unwrap());
    let idle = index.claim(now, now, 10, lease).await.unwrap();
    assert!(idle.ids.is_empty());
    assert_eq!(idle.next_due_ms, ms(deferred));
    assert_eq!(
        index
            .claim(deferred, deferred, 10, lease)
            .await
            .unwrap()
            .ids,
        vec![a]
    );
}

async fn extending_moves_only_the_leases_still_held(index: impl DueIndex) {
    let now = Utc::now();
    let (held, ended) = (id_in(1), id_in(2));
    index
        .add(&[(held, now - Duration::seconds(1)), (ended, now)])
        .await
        .unwrap();
    let lease = now + Duration::minutes(5);
    assert_eq!(index.claim(now, now, 10, lease).await.unwrap().ids.len(), 2);
    index.forget(&[ended]).await.unwrap();

    let until = now + Duration::hours(1);
    index.extend(&[held, ended], until).await.unwrap();
    assert_eq!(index.depth().await.unwrap(), (0, 1));
    let after_first_lease = now + Duration::minutes(10);
    assert!(index.leased(held, after_first_lease).await.unwrap());
    assert!(!index.leased(ended, now).await.unwrap(), "not leased again");
    let claim = index
        .claim(after_first_lease, after_first_lease, 10, lease)
        .await
        .unwrap();
    assert_eq!((claim.ids.len(), claim.requeued), (0, 0));
    assert_eq!(claim.next_lease_ms, ms(until));
}

async fn a_notification_handed_over_leased_is_claimed_only_once_its_lease_expires(
    index: impl DueIndex,
) {
    let now = Utc::now();
    let handed = id_in(3);
    let until = now + Duration::seconds(1);
    index.add_leased(&[handed], until).await.unwrap();
    assert_eq!(index.depth().await.unwrap(), (0, 1));
    assert!(index.leased(handed, now).await.unwrap());

    let lease = now + Duration::minutes(5);
    let early = index.claim(now, now, 10, lease).await.unwrap();
    assert!(early.ids.is_empty());
    assert_eq!(early.next_lease_ms, ms(until));
    let later = now + Duration::seconds(2);
    let claim = index.claim(later, later, 10, lease).await.unwrap();
    assert_eq!((claim.ids, claim.requeued), (vec![handed], 1));
}

/// A hand-off's write that runs late (its connection stalled while
/// others went on) can find its id claimed meanwhile by another process
/// from the indexer's marks, under a lease that ends later: it must not
/// move that lease, which the next claim would then take for the
/// hand-off's and return while the other process delivers. A lease that
/// ended and is not requeued yet (the breaker's probe may choose such a
/// notification: `leased` calls it free) is replaced, and ids not leased
/// in the same call are leased.
async fn a_hand_off_keeps_a_lease_that_ends_later_and_replaces_an_ended_one(index: impl DueIndex) {
    let now = Utc::now();
    let (claimed, handed, ended) = (id_in(1), id_in(2), id_in(3));
    index.add(&[(claimed, now)]).await.unwrap();
    let held = now + Duration::minutes(5);
    let claim = index.claim(now, now, 10, held).await.unwrap();
    assert_eq!(claim.ids, [claimed]);
    index
        .add_leased(&[ended], now - Duration::seconds(1))
        .await
        .unwrap();
    assert!(!index.leased(ended, now).await.unwrap());

    let soon = now + Duration::seconds(1);
    index
        .add_leased(&[claimed, handed, ended], soon)
        .await
        .unwrap();
    let mut ends = index
        .lease_ends(&[claimed, handed, ended], now)
        .await
        .unwrap()
        .into_iter()
        .map(|(id, at)| (id, ms(at)))
        .collect::<Vec<_>>();
    ends.sort();
    let mut expected = vec![(claimed, ms(held)), (handed, ms(soon)), (ended, ms(soon))];
    expected.sort();
    assert_eq!(ends, expected, "the claim's lease is as it was");
    let later = now + Duration::seconds(2);
    let claim = index.claim(later, later, 10, held).await.unwrap();
    let mut requeued = claim.ids.clone();
    requeued.sort();
    let mut expected = vec![handed, ended];
    expected.sort();
    assert_eq!(
        (requeued, claim.requeued),
        (expected, 2),
        "only the hand-off's leases ended"
    );
}

async fn the_leases_of_many_ids_are_read_at_once_with_their_ends(index: impl DueIndex) {
    let now = Utc::now();
    let (first, second, due, unknown) = (id_in(1), id_in(2), id_in(3), id_in(4));
    let (soon, later) = (now + Duration::seconds(1), now + Duration::minutes(5));
    index.add_leased(&[first], soon).await.unwrap();
    index.add_leased(&[second], later).await.unwrap();
    index.add(&[(due, now)]).await.unwrap();
    let mut ends = index
        .lease_ends(&[first, second, due, unknown], now)
        .await
        .unwrap();
    ends.sort();
    let mut expected = vec![(first, soon), (second, later)];
    expected.sort();
    let whole_ms = |v: Vec<(Uuid, DateTime<Utc>)>| -> Vec<(Uuid, Option<i64>)> {
        v.into_iter().map(|(id, at)| (id, ms(at))).collect()
    };
    assert_eq!(whole_ms(ends), whole_ms(expected));
    let after = soon + Duration::milliseconds(1);
    let ends = index.lease_ends(&[first, second], after).await.unwrap();
    assert_eq!(
        whole_ms(ends),
        vec![(second, ms(later))],
        "an ended lease is left out"
    );
    assert!(index.lease_ends(&[], now).await.unwrap().is_empty());
}

async fn removing_drops_a_notification_whether_due_or_leased(index: impl DueIndex) {
    let now = Utc::now();
    let (leased, due, kept) = (id_in(1), id_in(2), id_in(3));
    index
        .add(&[(due, now), (kept, now + Duration::hours(1))])
        .await
        .unwrap();
    let lease = now + Duration::minutes(5);
    // Leased without a claim, which would take by turns across shards.
    index.add_leased(&[leased], lease).await.unwrap();
    assert!(index.leased(leased, now).await.unwrap());

    index.remove(&[leased, due]).await.unwrap();
    assert_eq!(index.depth().await.unwrap(), (1, 0));
    assert!(!index.leased(leased, now).await.unwrap());
    let claim = index.claim(now, now, 10, lease).await.unwrap();
    assert!(claim.ids.is_empty());
    assert_eq!(claim.next_due_ms, ms(now + Duration::hours(1)));
    assert_eq!(claim.next_lease_ms, None);
}

async fn adding_a_notification_again_moves_it(index: impl DueIndex) {
    let now = Utc::now();
    let (earlier, later) = (id_in(1), id_in(2));
    index
        .add(&[
            (earlier, now + Duration::hours(1)),
            (later, now - Duration::seconds(1)),
        ])
        .await
        .unwrap();
    index
        .add(&[
            (earlier, now - Duration::seconds(1)),
            (later, now + Duration::hours(2)),
        ])
        .await
        .unwrap();
    assert_eq!(index.depth().await.unwrap(), (2, 0));
    let lease = now + Duration::minutes(5);
    let claim = index.claim(now, now, 10, lease).await.unwrap();
    assert_eq!(claim.ids, vec![earlier]);
    assert_eq!(claim.next_due_ms, ms(now + Duration::hours(2)));
}

async fn adding_what_is_missing_leaves_what_is_due_or_leased_alone(index: impl DueIndex) {
    let now = Utc::now();
    let (due, leased, missing) = (id_in(1), id_in(2), id_in(3));
    index.add(&[(due, now + Duration::hours(1))]).await.unwrap();
    index
        .add_leased(&[leased], now + Duration::minutes(5))
        .await
        .unwrap();

    let offered: Vec<(Uuid, DateTime<Utc>)> = [due, leased, missing]
        .iter()
        .map(|id| (*id, now - Duration::seconds(1)))
        .collect();
    assert_eq!(index.add_missing(&offered).await.unwrap(), 1);
    assert_eq!(index.add_missing(&offered).await.unwrap(), 0);
    assert_eq!(index.depth().await.unwrap(), (2, 1));
    let claim = index
        .claim(now, now, 10, now + Duration::minutes(5))
        .await
        .unwrap();
    assert_eq!(claim.ids, vec![missing], "the due one stayed where it was");
}

async fn a_marked_row_moves_earlier_but_never_later(index: impl DueIndex) {
    let now = Utc::now();
    // `stays` claimed first: the due ones in one shard.
    let (moved, stays, leased, added) = (id(), id(), id_in(1), id());
    index
        .add(&[
            (moved, now + Duration::hours(1)),
            (stays, now - Duration::seconds(2)),
        ])
        .await
        .unwrap();
    index
        .add_leased(&[leased], now + Duration::minutes(5))
        .await
        .unwrap();

    let marked: Vec<(Uuid, DateTime<Utc>)> = [moved, stays, leased, added]
        .iter()
        .map(|id| (*id, now - Duration::seconds(1)))
        .collect();
    assert_eq!(index.add_marked(&marked).await.unwrap(), 2);
    let claim = index
        .claim(now, now, 10, now + Duration::minutes(10))
        .await
        .unwrap();
    assert_eq!(claim.ids[0], stays, "still due when it was");
    let claimed: HashSet<Uuid> = claim.ids.into_iter().collect();
    assert_eq!(claimed, HashSet::from([moved, stays, added]));
}

/// Pending rows the refill must find (more than one page of them), and
/// rows it must not: final ones and pull ones.
async fn the_shared_refill_fills_an_empty_index_with_every_pending_row_once(
    index: impl DueIndex,
    pool: PgPool,
) {
    let now = Utc::now();
    let pending: Vec<(Uuid, DateTime<Utc>)> = (0..12_000)
        .map(|i| (new_id(), now - Duration::seconds(i % 500)))
        .collect();
    insert(&pool, &pending, "pending", false).await;
    let others: Vec<(Uuid, DateTime<Utc>)> = (0..50).map(|_| (new_id(), now)).collect();
    insert(&pool, &others[..25], "succeeded", false).await;
    insert(&pool, &others[25..], "pending", true).await;
    let store = PgStore::new(pool);
    let shutdown = CancellationToken::new();

    let filled = refill::fill(&index, &store, &shutdown).await.unwrap();
    assert_eq!(filled.map(|f| f.added), Some(pending.len()));
    assert_eq!(index.depth().await.unwrap(), (pending.len() as u64, 0));
    let again = refill::fill(&index, &store, &shutdown).await.unwrap();
    assert_eq!(again.map(|f| f.added), Some(0), "nothing is added twice");

    let mut claimed = Vec::new();
    loop {
        let claim = index
            .claim(now, now, 1000, now + Duration::minutes(5))
            .await
            .unwrap();
        if claim.ids.is_empty() {
            break;
        }
        claimed.extend(claim.ids);
    }
    assert_eq!(
        claimed.iter().copied().collect::<HashSet<_>>(),
        pending.iter().map(|(id, _)| *id).collect::<HashSet<_>>()
    );
    assert_eq!(claimed.len(), pending.len(), "each once");
}

/// Notifications with these ids and due times, in `status` (final ones
/// have no due time), for a push endpoint or a `pull` one.
async fn insert(pool: &PgPool, rows: &[(Uuid, DateTime<Utc>)], status: &str, pull: bool) {
    let (ids, due): (Vec<Uuid>, Vec<DateTime<Utc>>) = rows.iter().copied().unzip();
    sqlx::query(
        "INSERT INTO notifications (id, endpoint_id, content_type, body, schedule_ms, status, \
             deliver_at, next_attempt_at, pull) \
         SELECT id, $3, 'application/json', '\\x7b7d', '{0}', $4, at, \
             CASE WHEN $4 = 'pending' THEN at END, $5 \
         FROM unnest($1::uuid[], $2::timestamptz[]) AS r(id, at)",
    )
    .bind(&ids)
    .bind(&due)
    .bind(new_id())
    .bind(status)
    .bind(pull)
    .execute(pool)
    .await
    .unwrap();
}
