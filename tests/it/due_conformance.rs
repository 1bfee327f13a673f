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
//!
//! The checks of leases are in `leases`, the shared refill's in
//! `refilling`: `for_each_index!` stamps them out with the rest.

mod leases;
mod refilling;

use std::collections::HashSet;

use chrono::{DateTime, Duration, Utc};
use hookd::domain::id::new_id;
use hookd::domain::shard::{shard_of, MAX_SHARDS};
use hookd::due::memory::MemoryIndex;
use hookd::due::redis::{RedisIndex, ShardedIndex};
use hookd::due::{score, DueIndex};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use uuid::Uuid;

use crate::helpers::{redis_url, test_settings};
use crate::redis_cluster::cluster_index;
use leases::{
    a_hand_off_keeps_a_lease_that_ends_later_and_replaces_an_ended_one,
    a_notification_handed_over_leased_is_claimed_only_once_its_lease_expires,
    an_expired_lease_comes_back_due_at_once_and_counts_as_requeued,
    extending_moves_only_the_leases_still_held,
    the_leases_of_many_ids_are_read_at_once_with_their_ends,
};
use refilling::the_shared_refill_fills_an_empty_index_with_every_pending_row_once;

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
