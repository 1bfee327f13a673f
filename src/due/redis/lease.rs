//! Claiming due notifications and giving them back. One Lua script, atomic
//! (`lua/claim.lua`): first expired leases return to the due set, then up to
//! N due ids move to `inflight` with a lease, and the earliest remaining due
//! time comes back so the dispatcher knows how long it may sleep. Completion
//! happens only after PostgreSQL has committed the outcome.

use super::script::Script;
use chrono::{DateTime, Utc};
use std::sync::LazyLock;
use uuid::Uuid;

use super::{member, parse_member, score, script, Member, RedisIndex, COMPLETE};
use crate::due::{Claim, DueError};

/// Most expired leases returned to `due` per claim call.
const MAX_REQUEUE: usize = 1000;

static CLAIM: LazyLock<Script> = LazyLock::new(|| script(include_str!("lua/claim.lua")));

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
        let reply: (Vec<Vec<u8>>, Option<String>, Option<String>, usize) = self
            .eval(&CLAIM, self.timeout * 4, |invocation| {
                invocation
                    .arg(score(now))
                    .arg(limit)
                    .arg(score(lease_until))
                    .arg(MAX_REQUEUE)
                    .arg(score(due_by));
            })
            .await?;
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
        self.eval::<()>(&COMPLETE, self.timeout, |invocation| {
            invocation.arg(done.len());
            for id in done {
                invocation.arg(member(id));
            }
            for (id, at) in next {
                invocation.arg(score(*at)).arg(member(id));
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

    /// When the leases of those `ids` that hold one unexpired at `now` end,
    /// in one command (`ZMSCORE`), whatever their number.
    pub async fn lease_ends(
        &self,
        ids: &[Uuid],
        now: DateTime<Utc>,
    ) -> Result<Vec<(Uuid, DateTime<Utc>)>, DueError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let key = &self.keys().inflight;
        let (expiries,): (Vec<Option<i64>>,) = self
            .run(|p| {
                p.cmd("ZMSCORE")
                    .arg(key)
                    .arg(ids.iter().map(member).collect::<Vec<_>>());
            })
            .await?;
        Ok(ids
            .iter()
            .zip(expiries)
            .filter_map(|(id, expiry)| {
                let end = DateTime::from_timestamp_millis(expiry?)?;
                (end > now).then_some((*id, end))
            })
            .collect())
    }

    /// Sizes of the two sets: (due, inflight).
    pub async fn depth(&self) -> Result<(u64, u64), DueError> {
        let keys = self.keys().clone();
        let (due, leased): (Option<u64>, u64) = self
            .run(|p| {
                p.get(&keys.count);
                p.zcard(&keys.inflight);
            })
            .await?;
        Ok((due.unwrap_or(0), leased))
    }
}
