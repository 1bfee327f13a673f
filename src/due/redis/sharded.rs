//! The due index cut into shards (docs/design.md §13), for a Redis Cluster: one
//! `RedisIndex` per shard, each under a hash tag of its own (`{P:N}`), so
//! that each script call touches one slot and the shards spread over the
//! cluster's masters. A notification lives in the shard its id hashes to
//! (`domain::shard`); every call on ids is split by shard, one call per
//! shard concerned, the shards' calls in parallel.
//!
//! A claim visits the shards one after another until its batch is full,
//! starting one shard further at each claim: a shard with a backlog
//! cannot hold the others back (within as many claims as there are shards,
//! each has been visited first). Within a shard, earliest due first; across
//! shards, by turns. A shard that does not answer (its master failing
//! over) is passed over: the others go on delivering. The shards after it
//! in that claim are claimed at once, each for a share of what is left, so
//! that a claim waits one timeout for a hung master, not one for each of
//! its shards; and the claims that follow skip it for a back-off
//! (`domain::shard::claim_backoff`), so a dead master does not cost every
//! claim its timeout until the failover.
//!
//! Each shard has its own marker, sentinel and rebuild lock: losing one
//! (a master failed over without its data, a flushed slot) rebuilds that
//! shard only (`Recovery::parts`). Keys beside the index's (a rate
//! limit's buckets) and the layout key stay under the prefix's own tag (`{P}`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use chrono::{DateTime, Utc};
use futures::future::{join_all, try_join_all};
use uuid::Uuid;

use super::{link::Link, RedisIndex};
use crate::config::RedisSettings;
use crate::domain::index_owner::AnotherIndex;
use crate::domain::shard::{claim_backoff, shard_of, visit_order};
use crate::due::{Claim, DueError, DueIndex, IndexState, Recovery};

/// The sharded index. Cheap to share; its shards share one connection.
pub struct ShardedIndex {
    shards: Vec<RedisIndex>,
    /// Where the next claim starts.
    next: AtomicUsize,
    /// By shard: claims failed in a row, and until when claims skip it.
    backoff: Vec<Mutex<(u32, Option<Instant>)>>,
}

impl ShardedIndex {
    pub fn new(settings: &RedisSettings) -> Result<Self, DueError> {
        let link = Arc::new(Link::new(settings)?);
        let shards: Vec<RedisIndex> = (0..settings.shard_count().max(1))
            .map(|n| RedisIndex::on(link.clone(), settings, &format!("{}:{n}", settings.prefix)))
            .collect();
        Ok(Self {
            backoff: shards.iter().map(|_| Mutex::new((0, None))).collect(),
            shards,
            // Processes start at different shards, so their first claims
            // do not all go to the same one.
            next: AtomicUsize::new(rand::random::<u16>().into()),
        })
    }

    /// The shards, in order: shard `n` is under the hash tag `{P:n}`.
    pub fn shards(&self) -> &[RedisIndex] {
        &self.shards
    }

    /// The shard that holds `id`.
    pub fn shard_of(&self, id: &Uuid) -> usize {
        usize::from(shard_of(id, self.shards.len() as u16))
    }

    /// `items` by shard: only the shards that get some.
    fn split<T: Clone>(&self, items: &[T], id: impl Fn(&T) -> Uuid) -> Vec<(usize, Vec<T>)> {
        let mut by_shard: Vec<Vec<T>> = vec![Vec::new(); self.shards.len()];
        for item in items {
            by_shard[self.shard_of(&id(item))].push(item.clone());
        }
        by_shard
            .into_iter()
            .enumerate()
            .filter(|(_, items)| !items.is_empty())
            .collect()
    }

    /// Adds shard `n`'s claim to `claim`, or counts its failure: claims
    /// pass over a failing shard for a back-off (`claim_backoff`).
    fn settle(
        &self,
        n: usize,
        part: Result<Claim, DueError>,
        claim: &mut Claim,
        failure: &mut Option<DueError>,
    ) {
        match part {
            Ok(part) => {
                *self.backoff[n].lock().expect("backoff lock") = (0, None);
                claim.ids.extend(part.ids);
                claim.requeued += part.requeued;
                claim.recovered += part.recovered;
                claim.next_due_ms = earliest(claim.next_due_ms, part.next_due_ms);
                claim.next_lease_ms = earliest(claim.next_lease_ms, part.next_lease_ms);
            }
            Err(error) => {
                let mut backoff = self.backoff[n].lock().expect("backoff lock");
                backoff.0 = backoff.0.saturating_add(1);
                backoff.1 = Some(Instant::now() + claim_backoff(backoff.0));
                tracing::debug!(shard = n, %error, "cannot claim from a shard; passing it over");
                failure.get_or_insert(error);
            }
        }
    }

    /// Runs `call` on each shard that gets some of `items`, in parallel.
    async fn each<'a, T: Clone, R, F, Fut>(
        &'a self,
        items: &[T],
        id: impl Fn(&T) -> Uuid,
        call: F,
    ) -> Result<Vec<R>, DueError>
    where
        F: Fn(&'a RedisIndex, Vec<T>) -> Fut,
        Fut: std::future::Future<Output = Result<R, DueError>>,
    {
        try_join_all(
            self.split(items, id)
                .into_iter()
                .map(|(n, part)| call(&self.shards[n], part)),
        )
        .await
    }
}

fn entry_id(entry: &(Uuid, DateTime<Utc>)) -> Uuid {
    entry.0
}

fn same(id: &Uuid) -> Uuid {
    *id
}

#[async_trait::async_trait]
impl DueIndex for ShardedIndex {
    async fn add(&self, entries: &[(Uuid, DateTime<Utc>)]) -> Result<(), DueError> {
        self.each(entries, entry_id, |shard, part| async move {
            shard.add(&part).await
        })
        .await
        .map(drop)
    }

    /// Every shard's write runs to its end, none dropped halfway (a
    /// dropped one could still run and say nothing). If any fails, the
    /// caller hands none of the ids to its dispatcher (it marks them for
    /// the indexer), so every shard's lease is remembered as lost: the
    /// next claim on each shard returns what its write leased, rather
    /// than the healthy shards' ids waiting a whole lease, skipped by the
    /// indexer because they are leased.
    async fn add_leased(&self, ids: &[Uuid], lease_until: DateTime<Utc>) -> Result<(), DueError> {
        let parts = self.split(ids, same);
        let written = join_all(
            parts
                .iter()
                .map(|(n, part)| self.shards[*n].lease_ids(part, lease_until)),
        )
        .await;
        let mut leases = Vec::with_capacity(written.len());
        let mut failure = None;
        for ((n, _), (lease, added)) in parts.iter().zip(written) {
            leases.extend(lease.map(|lease| (*n, lease)));
            if let Err(error) = added {
                failure.get_or_insert(error);
            }
        }
        match failure {
            None => Ok(()),
            Some(error) => {
                for (n, lease) in leases {
                    self.shards[n].lost_lease(lease, lease_until);
                }
                Err(error)
            }
        }
    }

    async fn remove(&self, ids: &[Uuid]) -> Result<(), DueError> {
        self.each(
            ids,
            same,
            |shard, part| async move { shard.remove(&part).await },
        )
        .await
        .map(drop)
    }

    async fn claim(
        &self,
        now: DateTime<Utc>,
        due_by: DateTime<Utc>,
        limit: usize,
        lease_until: DateTime<Utc>,
    ) -> Result<Claim, DueError> {
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        let mut claim = Claim::default();
        let mut failure = None;
        let mut rest = Vec::new();
        for n in visit_order(start, self.shards.len()) {
            let left = limit.saturating_sub(claim.ids.len());
            if left == 0 && !claim.ids.is_empty() {
                // Full: the dispatcher claims again at once, so the times
                // of the shards not visited are not needed.
                break;
            }
            let skip_until = self.backoff[n].lock().expect("backoff lock").1;
            if let Some(until) = skip_until.filter(|until| *until > Instant::now()) {
                // Its due times are unknown: look again when the back-off ends.
                let wait = until.saturating_duration_since(Instant::now());
                let back = now.timestamp_millis() + wait.as_millis() as i64;
                claim.next_due_ms = earliest(claim.next_due_ms, Some(back));
                continue;
            }
            if failure.is_some() {
                rest.push(n);
                continue;
            }
            let part = self.shards[n].claim(now, due_by, left, lease_until).await;
            self.settle(n, part, &mut claim, &mut failure);
        }
        // A shard failed: its master may be down or hung, and so may the
        // next shards' (a master holds several). The shards left are
        // claimed at once, each for its share of what is left, so that the
        // claim waits one timeout, not one for each shard of that master.
        // (Fewer left than shards: those without a share are looked at
        // by the next claim, at once.)
        let left = limit.saturating_sub(claim.ids.len());
        if left > 0 && rest.len() > left {
            rest.truncate(left);
            claim.next_due_ms = earliest(claim.next_due_ms, Some(now.timestamp_millis()));
        }
        let shares = rest.iter().enumerate().map(|(i, &n)| {
            let share = match left {
                0 => 0,
                _ => left / rest.len() + usize::from(i < left % rest.len()),
            };
            self.shards[n].claim(now, due_by, share, lease_until)
        });
        for (n, part) in rest.iter().zip(join_all(shares).await) {
            self.settle(*n, part, &mut claim, &mut failure);
        }
        match failure {
            // Nothing claimed and a shard failing: the dispatcher backs off.
            Some(error) if claim.ids.is_empty() => Err(error),
            _ => Ok(claim),
        }
    }

    async fn complete(
        &self,
        done: &[Uuid],
        next: &[(Uuid, DateTime<Utc>)],
    ) -> Result<(), DueError> {
        let mut done_by = vec![Vec::new(); self.shards.len()];
        let mut next_by = vec![Vec::new(); self.shards.len()];
        for id in done {
            done_by[self.shard_of(id)].push(*id);
        }
        for entry in next {
            next_by[self.shard_of(&entry.0)].push(*entry);
        }
        try_join_all(
            done_by
                .iter()
                .zip(&next_by)
                .zip(&self.shards)
                .filter(|((done, next), _)| !done.is_empty() || !next.is_empty())
                .map(|((done, next), shard)| shard.complete(done, next)),
        )
        .await
        .map(drop)
    }

    async fn reschedule(&self, entries: &[(Uuid, DateTime<Utc>)]) -> Result<(), DueError> {
        self.each(entries, entry_id, |shard, part| async move {
            shard.reschedule(&part).await
        })
        .await
        .map(drop)
    }

    async fn forget(&self, ids: &[Uuid]) -> Result<(), DueError> {
        self.each(
            ids,
            same,
            |shard, part| async move { shard.forget(&part).await },
        )
        .await
        .map(drop)
    }

    async fn extend(&self, ids: &[Uuid], until: DateTime<Utc>) -> Result<(), DueError> {
        self.each(ids, same, |shard, part| async move {
            shard.extend(&part, until).await
        })
        .await
        .map(drop)
    }

    async fn leased(&self, id: Uuid, now: DateTime<Utc>) -> Result<bool, DueError> {
        self.shards[self.shard_of(&id)].leased(id, now).await
    }

    async fn lease_ends(
        &self,
        ids: &[Uuid],
        now: DateTime<Utc>,
    ) -> Result<Vec<(Uuid, DateTime<Utc>)>, DueError> {
        let ends = self
            .each(ids, same, |shard, part| async move {
                shard.lease_ends(&part, now).await
            })
            .await?;
        Ok(ends.into_iter().flatten().collect())
    }

    async fn add_missing(&self, entries: &[(Uuid, DateTime<Utc>)]) -> Result<usize, DueError> {
        let added = self
            .each(entries, entry_id, |shard, part| async move {
                shard.add_missing(&part).await
            })
            .await?;
        Ok(added.into_iter().sum())
    }

    async fn add_marked(&self, entries: &[(Uuid, DateTime<Utc>)]) -> Result<usize, DueError> {
        let added = self
            .each(entries, entry_id, |shard, part| async move {
                shard.add_marked(&part).await
            })
            .await?;
        Ok(added.into_iter().sum())
    }

    async fn depth(&self) -> Result<(u64, u64), DueError> {
        let depths = try_join_all(self.shards.iter().map(RedisIndex::depth)).await?;
        Ok(depths
            .into_iter()
            .fold((0, 0), |(due, leased), (d, l)| (due + d, leased + l)))
    }

    async fn ping(&self) -> Result<(), DueError> {
        self.shards[0].ping_every_master().await
    }

    async fn warnings(&self) -> Vec<String> {
        self.shards[0].index_warnings().await
    }

    fn recovery(&self) -> Option<&dyn Recovery> {
        Some(self)
    }

    /// The first shard: its prefix's own tag is the deployment's, whatever
    /// the shard.
    fn redis(&self) -> Option<&RedisIndex> {
        self.shards[0].redis()
    }
}

fn earliest(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The whole index's recovery is its shards' together; a refill works on
/// the shards found lost (`parts`), the whole-index calls serve whoever
/// treats it as one.
#[async_trait::async_trait]
impl Recovery for ShardedIndex {
    fn epoch(&self) -> u64 {
        self.shards[0].epoch()
    }

    async fn state(&self) -> Result<IndexState, DueError> {
        for shard in &self.shards {
            match shard.index_state().await? {
                IndexState::Complete => {}
                lost => return Ok(lost),
            }
        }
        Ok(IndexState::Complete)
    }

    async fn lock_refill(&self) -> Result<bool, DueError> {
        for (n, shard) in self.shards.iter().enumerate() {
            if !Recovery::lock_refill(shard).await? {
                for taken in &self.shards[..n] {
                    Recovery::unlock_refill(taken).await?;
                }
                return Ok(false);
            }
        }
        Ok(true)
    }

    async fn unlock_refill(&self) -> Result<(), DueError> {
        try_join_all(self.shards.iter().map(Recovery::unlock_refill))
            .await
            .map(drop)
    }

    async fn clear(&self) -> Result<(), DueError> {
        try_join_all(self.shards.iter().map(RedisIndex::clear_index))
            .await
            .map(drop)
    }

    async fn clear_due(&self) -> Result<(), DueError> {
        try_join_all(self.shards.iter().map(RedisIndex::clear_due))
            .await
            .map(drop)
    }

    async fn mark_complete(&self) -> Result<(), DueError> {
        try_join_all(self.shards.iter().map(RedisIndex::mark_indexed))
            .await
            .map(drop)
    }

    async fn missing(&self, entries: &[(Uuid, DateTime<Utc>)]) -> Result<Vec<Uuid>, DueError> {
        let found = self
            .each(entries, entry_id, |shard, part| async move {
                shard.missing(&part).await
            })
            .await?;
        Ok(found.into_iter().flatten().collect())
    }

    /// The shards share one link, and one name.
    async fn identity(&self) -> Result<String, DueError> {
        Recovery::identity(&self.shards[0]).await
    }

    fn beats_start(&self) {
        Recovery::beats_start(&self.shards[0])
    }

    fn set_owner(&self, another: Option<AnotherIndex>, at: std::time::Instant) {
        Recovery::set_owner(&self.shards[0], another, at)
    }

    fn paused(&self) -> bool {
        Recovery::paused(&self.shards[0])
    }

    fn parts(&self) -> Vec<&dyn Recovery> {
        self.shards
            .iter()
            .map(|shard| shard as &dyn Recovery)
            .collect()
    }

    fn part_of(&self, id: &Uuid) -> usize {
        self.shard_of(id)
    }
}
