//! The index's `Recovery` on Redis. A marker key says the index is
//! complete; when Redis restarts empty, is flushed or fails over, the marker
//! is gone and one process (holding a short lock) refills `due` from the
//! pending rows (`dispatcher::refill` reads them and calls `add_missing`).
//! Adds never touch ids that are in flight or already due: the same script
//! serves the refill and the periodic sweep for rows that fell through the
//! cracks.

use std::sync::LazyLock;
use std::time::Duration;

use super::script::Script;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{member, parse_member, score, script, RedisIndex};
use crate::domain::index_owner::AnotherIndex;
use crate::due::{DueError, IndexState, Recovery};

static ADD_MISSING: LazyLock<Script> =
    LazyLock::new(|| script(include_str!("lua/add_missing.lua")));

static CLEAR: LazyLock<Script> = LazyLock::new(|| script(include_str!("lua/clear.lua")));

/// What `ADD_MISSING` does with the entries it is given.
#[derive(Clone, Copy)]
enum Mode {
    /// Changes nothing; says which are in neither set.
    Look,
    /// Adds those in neither set.
    Add,
    /// Adds those in neither set, and moves to its time one due later.
    AddOrMoveEarlier,
}

impl Mode {
    fn arg(self) -> &'static str {
        match self {
            Mode::Look => "0",
            Mode::Add => "1",
            Mode::AddOrMoveEarlier => "2",
        }
    }
}

static RELEASE_LOCK: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r#"
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"#,
    )
});

/// The marker's value starts with the format of the index's members. A
/// build that changes the format changes this, and the first process of the
/// new build to look clears the index and rebuilds it from PostgreSQL.
/// `f3`: the due set in buckets (`f2`: one sorted set of compact 14-byte
/// members; before it, the marker held a bare time and members were 16
/// bytes).
pub const INDEX_FORMAT: &str = "f3:";

/// A member of `due` (the buckets' directory) that is never due (score
/// +inf) and is no bucket, added with the marker. When `due` disappears on
/// its own (evicted, deleted by hand, missing on a promoted replica), it goes
/// too, while the marker stays: that is how the loss of `due` alone is
/// noticed within a housekeeping tick instead of by the sweep. The scripts
/// take it away themselves when they find a bucket or the ranges lost
/// (`lua/buckets.lua` names it too).
pub const DUE_SENTINEL: &[u8] = b"hookd:due";

impl RedisIndex {
    pub(crate) fn marker_key(&self) -> String {
        format!("{}:{{{}}}:indexed", self.prefix(), self.tag())
    }

    fn lock_key(&self) -> String {
        format!("{}:{{{}}}:rebuild-lock", self.prefix(), self.tag())
    }

    /// Whether the index is known to be complete, and in this build's
    /// format: what the marker and the sentinel member of `due` say
    /// (`DueLost`: the marker is there, but `due` lost its sentinel or the
    /// ranges are gone).
    pub async fn index_state(&self) -> Result<IndexState, DueError> {
        // Asked every housekeeping tick: where a switchover is noticed, and
        // a layout recorded anew after Redis lost it.
        self.link.check_master().await;
        self.link.check_layout().await;
        let key = self.marker_key();
        let due = &self.keys().due;
        let ranges = &self.keys().ranges;
        let (marker, sentinel, ranged): (Option<String>, Option<f64>, bool) = self
            .run(|p| {
                p.get(&key);
                p.zscore(due, DUE_SENTINEL);
                p.exists(ranges);
            })
            .await?;
        Ok(match marker {
            None => IndexState::Missing,
            Some(value) if !value.starts_with(INDEX_FORMAT) => IndexState::OtherFormat,
            Some(_) if sentinel.is_none() || !ranged => IndexState::DueLost,
            Some(_) => IndexState::Complete,
        })
    }

    /// Whether the index is complete and current (see `index_state`).
    pub async fn is_indexed(&self) -> Result<bool, DueError> {
        Ok(self.index_state().await? == IndexState::Complete)
    }

    /// Marks the index complete: the marker, the sentinel in `due`, and the
    /// first range of an index still empty.
    pub async fn mark_indexed(&self) -> Result<(), DueError> {
        let key = self.marker_key();
        let keys = self.keys().clone();
        // The host's clock, not the rule clock: the marker only says when
        // the index was built, for an operator to read.
        let value = format!("{INDEX_FORMAT}{}", Utc::now().timestamp_millis());
        self.run::<()>(|p| {
            p.atomic();
            p.cmd("ZADD")
                .arg(&keys.due)
                .arg("+inf")
                .arg(DUE_SENTINEL)
                .ignore();
            p.cmd("ZADD")
                .arg(&keys.ranges)
                .arg("NX")
                .arg(0)
                .arg("")
                .ignore();
            p.set_nx(&keys.count, 0).ignore();
            p.set(&key, value).ignore();
        })
        .await
    }

    /// Drops the whole index, leases included, and its marker: what a rebuild
    /// does first when it finds an index of another format. Deliveries in
    /// flight then may be sent once more (the rebuild cannot tell them from
    /// the rest), as after any loss of Redis.
    pub async fn clear_index(&self) -> Result<(), DueError> {
        let keys = self.keys().clone();
        let marker = self.marker_key();
        self.run::<()>(|p| {
            p.atomic();
            p.del(&keys.due).ignore();
            p.del(&keys.ranges).ignore();
            p.del(&keys.count).ignore();
            p.del(&keys.inflight).ignore();
            p.del(&marker).ignore();
        })
        .await?;
        self.unlink_buckets().await
    }

    /// Empties the due set (buckets, directory, ranges) and keeps the
    /// leases: what every rebuild does first, so that no bucket the
    /// directory or the ranges lost track of holds members no claim would
    /// find. The buckets the ranges know go at once, with them; then `SCAN`
    /// finds any other (ranges lost and written anew know fewer).
    pub async fn clear_due(&self) -> Result<(), DueError> {
        let _: i64 = self.eval(&CLEAR, self.timeout * 10, |_| {}).await?;
        self.unlink_buckets().await
    }

    /// Unlinks every key named like a bucket, found by `SCAN`.
    async fn unlink_buckets(&self) -> Result<(), DueError> {
        let pattern = self.keys().buckets_pattern();
        let mut cursor: u64 = 0;
        loop {
            // On a cluster, the command before SCAN (which names no key)
            // sends the pipeline to the master of the index's slot.
            let ((next, mut found),): ((u64, Vec<Vec<u8>>),) = self
                .run(|p| {
                    p.exists(&self.keys().ranges).ignore();
                    p.cmd("SCAN")
                        .arg(cursor)
                        .arg("MATCH")
                        .arg(&pattern)
                        .arg("COUNT")
                        .arg(1000);
                })
                .await?;
            // Ranges and a count written since by another process stay.
            found.retain(|key| self.keys().is_bucket(key));
            if !found.is_empty() {
                self.run::<()>(|p| {
                    p.cmd("UNLINK").arg(&found).ignore();
                })
                .await?;
            }
            if next == 0 {
                return Ok(());
            }
            cursor = next;
        }
    }

    /// Takes the rebuild lock for `ttl`, or returns `None` if another process
    /// holds it. Renew by calling again with the same token.
    pub async fn lock_rebuild(&self, token: &str, ttl: Duration) -> Result<bool, DueError> {
        let key = self.lock_key();
        let ttl_ms = ttl.as_millis() as u64;
        let (held,): (Option<String>,) = self
            .run(|p| {
                p.cmd("SET")
                    .arg(&key)
                    .arg(token)
                    .arg("NX")
                    .arg("PX")
                    .arg(ttl_ms);
            })
            .await?;
        if held.is_some() {
            return Ok(true);
        }
        // Ours already? Then extend it.
        let (current,): (Option<String>,) = self
            .run(|p| {
                p.get(&key);
            })
            .await?;
        if current.as_deref() == Some(token) {
            self.run::<()>(|p| {
                p.pexpire(&key, ttl_ms as i64).ignore();
            })
            .await?;
            return Ok(true);
        }
        Ok(false)
    }

    pub async fn unlock_rebuild(&self, token: &str) -> Result<(), DueError> {
        let mut conn = self.conn().await?;
        let released: Result<i64, _> = RELEASE_LOCK
            .prepare_invoke()
            .key(self.lock_key())
            .arg(token)
            .invoke_async(&mut conn)
            .await;
        self.observed(released.map_err(DueError::from))?;
        Ok(())
    }

    /// Adds the entries that are in neither `due` nor `inflight`; returns how
    /// many were added. A batch of any size (a refill gathers 200,000) is
    /// written in id order, `WRITE` entries per script call: a bucket holds
    /// a range of ids, so each call costs one lookup and one ZADD per
    /// bucket, not per member.
    pub async fn add_missing(&self, entries: &[(Uuid, DateTime<Utc>)]) -> Result<usize, DueError> {
        // A compact id's member keeps its bytes in the id's order, so the
        // ids' order is the members' (other ids only miss the shortcut).
        let sorted;
        let entries = if entries.is_sorted_by_key(|(id, _)| *id) {
            entries
        } else {
            let mut copy = entries.to_vec();
            copy.sort_unstable_by_key(|(id, _)| *id);
            sorted = copy;
            &sorted[..]
        };
        let mut added = 0;
        for chunk in entries.chunks(WRITE) {
            added += self.missing_among(chunk, Mode::Add).await?.0;
        }
        Ok(added)
    }

    /// As `add_missing`, and moves to its time an entry that is due later
    /// (a retry whose write Redis refused left it at its old time); returns
    /// how many were added or moved.
    pub async fn add_marked(&self, entries: &[(Uuid, DateTime<Utc>)]) -> Result<usize, DueError> {
        Ok(self.missing_among(entries, Mode::AddOrMoveEarlier).await?.0)
    }

    /// The ids among `entries` that are in neither `due` nor `inflight`,
    /// changing nothing.
    pub async fn missing(&self, entries: &[(Uuid, DateTime<Utc>)]) -> Result<Vec<Uuid>, DueError> {
        Ok(self.missing_among(entries, Mode::Look).await?.1)
    }

    /// How many entries `mode` wrote (or would write), and which (except
    /// for `Mode::Add`, which does not list them).
    async fn missing_among(
        &self,
        entries: &[(Uuid, DateTime<Utc>)],
        mode: Mode,
    ) -> Result<(usize, Vec<Uuid>), DueError> {
        if entries.is_empty() {
            return Ok((0, Vec::new()));
        }
        let (count, found): (usize, Vec<Vec<u8>>) = self
            .eval(&ADD_MISSING, self.timeout * 10, |invocation| {
                invocation.arg(mode.arg());
                for (id, at) in entries {
                    invocation.arg(score(*at)).arg(member(id));
                }
            })
            .await?;
        let ids = found
            .iter()
            .map(|m| parse_member(m))
            .collect::<Result<_, _>>()?;
        Ok((count, ids))
    }
}

/// Entries per script call of `add_missing`.
const WRITE: usize = 5000;
/// How long the rebuild lock lasts without being renewed.
const LOCK_TTL: Duration = Duration::from_secs(30);

#[async_trait::async_trait]
impl Recovery for RedisIndex {
    fn epoch(&self) -> u64 {
        RedisIndex::epoch(self)
    }

    async fn state(&self) -> Result<IndexState, DueError> {
        self.index_state().await
    }

    async fn lock_refill(&self) -> Result<bool, DueError> {
        self.lock_rebuild(&self.token, LOCK_TTL).await
    }

    async fn unlock_refill(&self) -> Result<(), DueError> {
        self.unlock_rebuild(&self.token).await
    }

    async fn clear(&self) -> Result<(), DueError> {
        self.clear_index().await
    }

    async fn clear_due(&self) -> Result<(), DueError> {
        RedisIndex::clear_due(self).await
    }

    async fn mark_complete(&self) -> Result<(), DueError> {
        self.mark_indexed().await
    }

    async fn missing(&self, entries: &[(Uuid, DateTime<Utc>)]) -> Result<Vec<Uuid>, DueError> {
        RedisIndex::missing(self, entries).await
    }

    async fn identity(&self) -> Result<String, DueError> {
        // Observed: on a cluster, failures renew the connection (nothing
        // else reaches Redis from a paused process).
        self.observed(self.link.identity().await)
    }

    fn beats_start(&self) {
        self.link.beats_start()
    }

    fn set_owner(&self, another: Option<AnotherIndex>, at: std::time::Instant) {
        self.link.set_owner(another, at)
    }

    fn paused(&self) -> bool {
        self.link.paused()
    }
}

#[cfg(test)]
mod tests {
    use super::member;
    use crate::domain::id::new_id;

    #[test]
    fn compact_ids_in_id_order_are_their_members_in_byte_order() {
        let mut ids: Vec<uuid::Uuid> = (0..2000).map(|_| new_id()).collect();
        ids.reverse();
        ids.sort_unstable();
        let members: Vec<Vec<u8>> = ids
            .iter()
            .map(|id| member(id).as_bytes().to_vec())
            .collect();
        assert!(members.windows(2).all(|pair| pair[0] < pair[1]));
    }
}
