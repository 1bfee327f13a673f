//! The due index's buckets on a real Redis: every bucket stays in Redis's
//! compact encoding as notifications come and go, and the index answers as
//! one sorted set would.

use std::collections::HashSet;

use chrono::{DateTime, Duration, Utc};
use hookd::domain::id::new_id;
use hookd::due::redis::{RedisIndex, ShardedIndex};
use hookd::due::{DueIndex, IndexState};
use uuid::Uuid;

use crate::helpers::{eventually, redis_url, test_settings};

const DEADLINE: std::time::Duration = std::time::Duration::from_secs(30);

fn index() -> RedisIndex {
    RedisIndex::new(&test_settings(&redis_url(), "").redis).unwrap()
}

async fn conn() -> redis::aio::MultiplexedConnection {
    redis::Client::open(redis_url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

/// Every bucket's key with its encoding and size.
async fn buckets(index: &RedisIndex) -> Vec<(Vec<u8>, String, u64)> {
    let mut conn = conn().await;
    let pattern = index.keys().buckets_pattern();
    let mut cursor: u64 = 0;
    let mut keys = Vec::new();
    loop {
        let (next, found): (u64, Vec<Vec<u8>>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(&pattern)
            .arg("COUNT")
            .arg(1000)
            .query_async(&mut conn)
            .await
            .unwrap();
        keys.extend(found.into_iter().filter(|k| index.keys().is_bucket(k)));
        if next == 0 {
            break;
        }
        cursor = next;
    }
    let mut out = Vec::new();
    for key in keys {
        let (encoding, size): (String, u64) = redis::pipe()
            .cmd("OBJECT")
            .arg("ENCODING")
            .arg(&key)
            .zcard(&key)
            .query_async(&mut conn)
            .await
            .unwrap();
        out.push((key, encoding, size));
    }
    out
}

/// Claims everything due by `by`, 500 at a time.
async fn claim_all(index: &RedisIndex, by: DateTime<Utc>) -> Vec<Uuid> {
    let mut all = Vec::new();
    loop {
        let claim = index
            .claim(Utc::now(), by, 500, Utc::now() + Duration::minutes(5))
            .await
            .unwrap();
        if claim.ids.is_empty() {
            return all;
        }
        all.extend(claim.ids);
    }
}

#[tokio::test]
async fn twenty_thousand_pending_notifications_stay_in_small_compact_buckets_and_are_claimed_once_each(
) {
    let index = index();
    let now = Utc::now();
    // Half due now, half in an hour: claims must take exactly the first half.
    let entries: Vec<(Uuid, DateTime<Utc>)> = (0..20_000)
        .map(|i| {
            let at = if i % 2 == 0 {
                now - Duration::milliseconds(i)
            } else {
                now + Duration::hours(1)
            };
            (new_id(), at)
        })
        .collect();
    for chunk in entries.chunks(1000) {
        index.add(chunk).await.unwrap();
    }
    assert_eq!(index.depth().await.unwrap(), (20_000, 0));
    let found = buckets(&index).await;
    assert!(found.len() > 100, "the set is cut: {} buckets", found.len());
    assert_eq!(found.iter().map(|(_, _, n)| n).sum::<u64>(), 20_000);
    for (key, encoding, size) in &found {
        assert_eq!(encoding, "listpack", "{key:?} holds {size}");
    }

    let claimed = claim_all(&index, now).await;
    let due: HashSet<Uuid> = entries.iter().step_by(2).map(|(id, _)| *id).collect();
    assert_eq!(claimed.len(), due.len(), "each due one once");
    assert_eq!(claimed.iter().copied().collect::<HashSet<_>>(), due);
    assert_eq!(index.depth().await.unwrap(), (10_000, 10_000));

    // As they complete, the buckets merge back and stay compact.
    for chunk in claimed.chunks(1000) {
        index.complete(chunk, &[]).await.unwrap();
    }
    let later = claim_all(&index, now + Duration::hours(2)).await;
    assert_eq!(later.len(), 10_000);
    index.complete(&later, &[]).await.unwrap();
    assert_eq!(index.depth().await.unwrap(), (0, 0));
    assert!(buckets(&index).await.is_empty(), "no bucket is left");
}

#[tokio::test]
async fn a_notification_moved_earlier_or_later_or_removed_is_found_where_it_now_is() {
    let index = index();
    let now = Utc::now();
    // Enough to split the set, so lookups cross buckets.
    let others: Vec<(Uuid, DateTime<Utc>)> = (0..3000)
        .map(|_| (new_id(), now + Duration::hours(3)))
        .collect();
    index.add(&others).await.unwrap();
    let (early, late, gone) = (new_id(), new_id(), new_id());
    let hour = now + Duration::hours(1);
    index
        .add(&[(early, hour), (late, hour), (gone, hour)])
        .await
        .unwrap();
    index
        .add(&[
            (early, now - Duration::seconds(1)),
            (late, now + Duration::hours(2)),
        ])
        .await
        .unwrap();
    index.remove(&[gone]).await.unwrap();
    assert_eq!(
        index.due_at(late).await.unwrap(),
        Some(hookd::due::redis::score(now + Duration::hours(2)))
    );
    assert_eq!(index.due_at(gone).await.unwrap(), None);
    assert_eq!(claim_all(&index, now).await, vec![early]);
    assert!(claim_all(&index, hour + Duration::minutes(1))
        .await
        .is_empty());
    assert_eq!(
        claim_all(&index, now + Duration::hours(2)).await,
        vec![late]
    );
    assert_eq!(index.depth().await.unwrap(), (3000, 2));
}

#[tokio::test]
async fn add_missing_adds_only_what_is_neither_due_nor_leased() {
    let index = index();
    let now = Utc::now();
    let queued: Vec<(Uuid, DateTime<Utc>)> = (0..2000).map(|_| (new_id(), now)).collect();
    index.add(&queued).await.unwrap();
    let leased = claim_all(&index, now).await;
    assert_eq!(leased.len(), 2000);
    let later: Vec<(Uuid, DateTime<Utc>)> = (0..2000)
        .map(|_| (new_id(), now + Duration::hours(1)))
        .collect();
    index.add(&later).await.unwrap();
    let fresh: Vec<(Uuid, DateTime<Utc>)> = (0..500).map(|_| (new_id(), now)).collect();
    let offered: Vec<(Uuid, DateTime<Utc>)> = queued
        .iter()
        .chain(&later)
        .map(|(id, _)| (*id, now))
        .chain(fresh.iter().copied())
        .collect();
    let missing: HashSet<Uuid> = index.missing(&offered).await.unwrap().into_iter().collect();
    let expected: HashSet<Uuid> = fresh.iter().map(|(id, _)| *id).collect();
    assert_eq!(missing, expected);
    assert_eq!(index.add_missing(&offered).await.unwrap(), 500);
    assert_eq!(index.depth().await.unwrap(), (2500, 2000));
    // Marked rows move earlier; the rest stay.
    assert_eq!(index.add_marked(&offered).await.unwrap(), 2000);
    assert_eq!(claim_all(&index, now).await.len(), 2500);
}

#[tokio::test]
async fn a_bucket_lost_from_under_the_index_is_noticed_by_the_next_claim() {
    let index = index();
    index.mark_indexed().await.unwrap();
    let now = Utc::now();
    let entries: Vec<(Uuid, DateTime<Utc>)> = (0..2000).map(|_| (new_id(), now)).collect();
    index.add(&entries).await.unwrap();
    assert_eq!(index.index_state().await.unwrap(), IndexState::Complete);
    let (key, _, _) = buckets(&index).await.remove(0);
    let _: () = redis::cmd("DEL")
        .arg(&key)
        .query_async(&mut conn().await)
        .await
        .unwrap();
    let claimed = claim_all(&index, now).await;
    assert!(claimed.len() < 2000);
    assert_eq!(index.index_state().await.unwrap(), IndexState::DueLost);
}

#[tokio::test]
async fn lost_ranges_are_noticed_and_clearing_leaves_no_bucket_behind() {
    let index = index();
    index.mark_indexed().await.unwrap();
    let now = Utc::now();
    let entries: Vec<(Uuid, DateTime<Utc>)> = (0..2000).map(|_| (new_id(), now)).collect();
    index.add(&entries).await.unwrap();
    let _: () = redis::cmd("DEL")
        .arg(&index.keys().ranges)
        .query_async(&mut conn().await)
        .await
        .unwrap();
    assert_eq!(index.index_state().await.unwrap(), IndexState::DueLost);
    // A write meanwhile starts the ranges anew; the sentinel stays away.
    index.add(&[(new_id(), now)]).await.unwrap();
    assert_eq!(index.index_state().await.unwrap(), IndexState::DueLost);
    index.clear_due().await.unwrap();
    assert!(buckets(&index).await.is_empty());
    assert_eq!(index.depth().await.unwrap(), (0, 0));
}

#[tokio::test]
async fn a_claim_of_a_backlog_takes_the_earliest_created_as_one_run_of_neighbouring_ids() {
    let index = index();
    let now = Utc::now();
    // A backlog as an outage leaves it: due in the order it was created.
    let entries: Vec<(Uuid, DateTime<Utc>)> = (0..10_000)
        .map(|i| (new_id(), now - Duration::milliseconds(10_000 - i)))
        .collect();
    for chunk in entries.chunks(500) {
        index.add(chunk).await.unwrap();
    }
    let claim = index
        .claim(now, now, 500, now + Duration::minutes(5))
        .await
        .unwrap();
    let mut claimed = claim.ids;
    claimed.sort();
    let first: Vec<Uuid> = entries[..500].iter().map(|(id, _)| *id).collect();
    assert_eq!(claimed, first);
}

#[tokio::test]
async fn ids_added_out_of_order_across_ranges_are_each_found_in_their_own_range() {
    let index = index();
    let now = Utc::now() + Duration::hours(1);
    let ids: Vec<Uuid> = (0..300).map(|_| new_id()).collect();
    // Three buckets of about 50: ranges start at '', ids[50] and ids[100].
    let first: Vec<(Uuid, DateTime<Utc>)> = ids[..150].iter().map(|id| (*id, now)).collect();
    index.add(&first).await.unwrap();
    // Then, in one call, the next ids newest first, each after one of the
    // first range: the last range is cut, and its new ids are not in order.
    let mut mixed = Vec::new();
    for (newer, older) in ids[150..].iter().rev().zip(ids[..50].iter().cycle()) {
        mixed.push((*newer, now));
        mixed.push((*older, now));
    }
    index.add(&mixed).await.unwrap();
    for id in &ids {
        assert!(index.due_at(*id).await.unwrap().is_some(), "{id} is found");
    }
    assert_eq!(index.depth().await.unwrap(), (300, 0));
}

/// A claim whose answer never came can still run: a Redis that stalled
/// (SIGSTOP here; a fork, a frozen machine) runs what it had read once it
/// goes on, after hookd gave up waiting. What that claim leased is then
/// delivered by nobody: it came back only when its lease ended, a minute
/// on by default (`redis_cluster::lost_master::hung::readiness_is_degraded_…`
/// saw one arrive 58 s after a hung master went on). Now the next claim
/// returns it.
#[tokio::test]
async fn what_a_claim_leased_after_its_caller_gave_up_comes_back_at_the_next_claim() {
    let redis = crate::helpers::RedisServer::start().await;
    let index = RedisIndex::new(&test_settings(&redis.url(), "[redis]\ntimeout_ms = 100").redis);
    let index = index.unwrap();
    // Connected, with the claim's script loaded: a stalled claim is then
    // one command Redis has read.
    let nothing = index.claim(Utc::now(), Utc::now(), 10, Utc::now()).await;
    assert!(nothing.unwrap().ids.is_empty());
    let id = new_id();
    index.add(&[(id, Utc::now())]).await.unwrap();

    redis.pause();
    let now = Utc::now();
    let lost = index.claim(now, now, 10, now + Duration::minutes(1)).await;
    assert!(lost.is_err(), "a stalled Redis answers no claim: {lost:?}");
    redis.unpause();
    // The claim Redis had read runs now: the id is leased for a minute.
    let conn = redis::Client::open(redis.url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    eventually(DEADLINE, "the stalled claim to run", || {
        let mut conn = conn.clone();
        let key = index.keys().inflight.clone();
        async move {
            let lease: Option<f64> = redis::cmd("ZSCORE")
                .arg(key)
                .arg(hookd::due::redis::member(&id))
                .query_async(&mut conn)
                .await
                .unwrap();
            lease.map(drop)
        }
    })
    .await;

    let now = Utc::now();
    let claim = index
        .claim(now, now, 10, now + Duration::minutes(1))
        .await
        .unwrap();
    assert_eq!(claim.ids, [id], "the lost claim's lease came back");
    assert_eq!(claim.recovered, 1);
    assert_eq!(index.depth().await.unwrap(), (0, 1));
}

/// A hand-off split over shards fails as a whole when one shard's write
/// fails, and its caller then hands none of it to the dispatcher (it marks
/// the rows for the indexer, which passes over leased ids). What the other
/// shards leased came back only when their lease ended, a minute by
/// default; now the next claim returns it, as a lost claim's. One shard
/// fails here on a key of the wrong type (a master that hung fails the
/// same way in a cluster).
#[tokio::test]
async fn what_a_hand_off_leased_on_healthy_shards_comes_back_at_the_next_claim_when_another_failed()
{
    let index = ShardedIndex::new(&test_settings(&redis_url(), "[redis]\nshards = 4\n").redis);
    let index = index.unwrap();
    let in_shard = |n: usize| loop {
        let id = new_id();
        if index.shard_of(&id) == n {
            return id;
        }
    };
    let (healthy, broken) = (in_shard(0), in_shard(1));
    let broken_key = index.shards()[1].keys().inflight.clone();
    let mut conn = conn().await;
    let () = redis::cmd("SET")
        .arg(&broken_key)
        .arg("not a sorted set")
        .query_async(&mut conn)
        .await
        .unwrap();

    let now = Utc::now();
    let handed = index
        .add_leased(&[healthy, broken], now + Duration::minutes(1))
        .await;
    assert!(handed.is_err(), "one shard refused its part: {handed:?}");
    assert!(index.leased(healthy, now).await.unwrap());
    let () = redis::cmd("DEL")
        .arg(&broken_key)
        .query_async(&mut conn)
        .await
        .unwrap();

    let now = Utc::now();
    let claim = index
        .claim(now, now, 10, now + Duration::minutes(1))
        .await
        .unwrap();
    assert_eq!(claim.ids, [healthy], "the healthy shard's lease came back");
    assert_eq!(claim.recovered, 1);
}
