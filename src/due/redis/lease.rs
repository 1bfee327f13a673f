//! Claiming due notifications and giving them back. One Lua script, atomic:
//! first expired leases return to `due`, then up to N due ids move to
//! `inflight` with a lease, and the earliest remaining due time comes back so
//! the dispatcher knows how long it may sleep. Completion happens only after
//! PostgreSQL has committed the outcome.

use chrono::{DateTime, Utc};
use redis::Script;
use std::sync::LazyLock;
use uuid::Uuid;

use super::{member, parse_member, score, Member, RedisIndex};
use crate::due::{Claim, DueError};

/// Most expired leases returned to `due` per claim call.
const MAX_REQUEUE: usize = 1000;

static CLAIM: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r#"
-- KEYS[1] due, KEYS[2] inflight; ARGV[1] now ms, ARGV[2] limit, ARGV[3] lease expiry ms,
-- ARGV[4] max requeue, ARGV[5] claim what is due by (ms, >= now)
-- Moves members from one set to the other at one score: a ZADD and a ZREM
-- per chunk, not per member (unpack is bounded by Lua's stack).
local function move(from, to, members, score)
  for i = 1, #members, 500 do
    local last = math.min(i + 499, #members)
    local scored = {}
    for j = i, last do
      scored[#scored + 1] = score
      scored[#scored + 1] = members[j]
    end
    redis.call('ZADD', to, unpack(scored))
    redis.call('ZREM', from, unpack(members, i, last))
  end
end
local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[4]))
move(KEYS[2], KEYS[1], expired, ARGV[1])
local ids = {}
local limit = tonumber(ARGV[2])
if limit > 0 then
  ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[5], 'LIMIT', 0, limit)
  move(KEYS[1], KEYS[2], ids, ARGV[3])
end
-- The earliest due time; the never-due sentinel (score inf) is not one.
local first = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(+inf', 'WITHSCORES', 'LIMIT', 0, 1)
local lease = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
return {ids, first[2] or false, lease[2] or false, #expired}
"#,
    )
});

impl RedisIndex {
    /// Claims up to `limit` ids due by `due_by`, leasing them until
    /// `lease_until`; leases expired at `now` return to `due` first.
    pub async fn claim(
        &self,
        now: DateTime<Utc>,
        due_by: DateTime<Utc>,
        limit: usize,
        lease_until: DateTime<Utc>,
    ) -> Result<Claim, DueError> {
        let mut conn = self.conn().await?;
        let mut invocation = CLAIM.prepare_invoke();
        invocation
            .key(&self.keys().due)
            .key(&self.keys().inflight)
            .arg(score(now))
            .arg(limit)
            .arg(score(lease_until))
            .arg(MAX_REQUEUE)
            .arg(score(due_by));
        let reply: (Vec<Vec<u8>>, Option<String>, Option<String>, usize) = self.observed(
            match tokio::time::timeout(self.timeout * 4, invocation.invoke_async(&mut conn)).await {
                Ok(result) => result.map_err(DueError::from),
                Err(_) => Err(DueError::Timeout(self.timeout * 4)),
            },
        )?;
        let (members, next_due, next_lease, requeued) = reply;
        let ids: Vec<Uuid> = members
            .iter()
            .map(|m| parse_member(m))
            .collect::<Result<_, _>>()?;
        let as_ms = |s: Option<String>| s.and_then(|s| s.parse::<f64>().ok()).map(|f| f as i64);
        Ok(Claim {
            ids,
            next_due_ms: as_ms(next_due),
            next_lease_ms: as_ms(next_lease),
            requeued,
        })
    }

    /// Ends leases after their outcome is committed: every id leaves
    /// `inflight`, and those with a next attempt go back to `due` at its time.
    /// One atomic round trip.
    pub async fn complete(
        &self,
        done: &[Uuid],
        next: &[(Uuid, DateTime<Utc>)],
    ) -> Result<(), DueError> {
        if done.is_empty() && next.is_empty() {
            return Ok(());
        }
        let keys = self.keys().clone();
        let done: Vec<Member> = done.iter().map(member).collect();
        let next: Vec<(i64, Member)> = next
            .iter()
            .map(|(id, at)| (score(*at), member(id)))
            .collect();
        self.run::<()>(|p| {
            p.atomic();
            if !done.is_empty() {
                p.zrem(&keys.inflight, &done).ignore();
            }
            if !next.is_empty() {
                p.zadd_multiple(&keys.due, &next).ignore();
            }
        })
        .await
    }

    /// Gives claimed ids back, due at the times given (now, for a release;
    /// later, for a deferral). Not an attempt: nothing was sent.
    pub async fn reschedule(&self, entries: &[(Uuid, DateTime<Utc>)]) -> Result<(), DueError> {
        let ids: Vec<Uuid> = entries.iter().map(|(id, _)| *id).collect();
        self.complete(&ids, entries).await
    }

    /// Drops claimed ids whose rows are gone or final.
    pub async fn forget(&self, ids: &[Uuid]) -> Result<(), DueError> {
        self.complete(ids, &[]).await
    }

    /// Moves the leases of those `ids` still in `inflight` to `until`, in
    /// one command (`ZADD XX`: an id whose lease ended is not leased again).
    pub async fn extend(&self, ids: &[Uuid], until: DateTime<Utc>) -> Result<(), DueError> {
        if ids.is_empty() {
            return Ok(());
        }
        let until = score(until);
        let items: Vec<(i64, Member)> = ids.iter().map(|id| (until, member(id))).collect();
        let key = &self.keys().inflight;
        self.run::<()>(|p| {
            p.cmd("ZADD").arg(key).arg("XX").arg(&items).ignore();
        })
        .await
    }

    /// Whether `id` holds a lease that has not expired at `now`.
    pub async fn leased(&self, id: Uuid, now: DateTime<Utc>) -> Result<bool, DueError> {
        let key = &self.keys().inflight;
        let (expiry,): (Option<i64>,) = self
            .run(|p| {
                p.zscore(key, member(&id));
            })
            .await?;
        Ok(expiry.is_some_and(|expiry| expiry > now.timestamp_millis()))
    }

    /// Sizes of the two sets: (due, inflight), the sentinel not counted.
    pub async fn depth(&self) -> Result<(u64, u64), DueError> {
        let keys = self.keys().clone();
        self.run(|p| {
            p.zcount(&keys.due, "-inf", "(+inf");
            p.zcard(&keys.inflight);
        })
        .await
    }
}
