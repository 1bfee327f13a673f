//! Claiming due notifications and giving them back. One Lua script, atomic
//! (`lua/claim.lua`): first expired leases return to the due set (and those
//! of claims whose answer was lost, `LostClaims`), then up to
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
    /// `lease_until`; leases expired at `now` return to `due` first, and
    /// so do those of this index's lost claims (`LostClaims`).
    pub async fn claim(
        &self,
        now: DateTime<Utc>,
        due_by: DateTime<Utc>,
        limit: usize,
        lease_until: DateTime<Utc>,
    ) -> Result<Claim, DueError> {
        // No connection (none could be made, or the layout check failed):
        // nothing is sent, so nothing to remember as lost, where it would
        // crowd out the claims that were.
        let mut conn = self.conn().await?;
        let (lease, lost) = {
            let mut claims = self.lost.lock().expect("lost claims lock");
            (claims.lease(lease_until), claims.unended(now))
        };
        type Reply = (
            Vec<Vec<u8>>,
            Option<String>,
            Option<String>,
            usize,
            usize,
            Vec<String>,
        );
        let reply: Result<Reply, DueError> = self
            .eval_on(&mut conn, &CLAIM, self.timeout * 4, |invocation| {
                invocation
                    .arg(score(now))
                    .arg(limit)
                    .arg(&lease)
                    .arg(MAX_REQUEUE)
                    .arg(score(due_by));
                for lost in &lost {
                    invocation.arg(lost);
                }
            })
            .await;
        let (members, next_due, next_lease, requeued, recovered, found) = match reply {
            Ok(reply) => reply,
            Err(error) => {
                // Sent, perhaps: it may run yet, and lease what nobody here
                // will deliver.
                self.lost_lease(lease, lease_until);
                return Err(error);
            }
        };
        (self.lost.lock().expect("lost claims lock")).ran(&found);
        let ids: Vec<Uuid> = members
            .iter()
            .map(|m| parse_member(m))
            .collect::<Result<_, _>>()?;
        // A lease ends at its millisecond (`LostClaims::lease`).
        let as_ms = |s: Option<String>| {
            s.and_then(|s| s.parse::<f64>().ok())
                .map(|f| f.floor() as i64)
        };
        Ok(Claim {
            ids,
            next_due_ms: as_ms(next_due),
            next_lease_ms: as_ms(next_lease),
            requeued,
            recovered,
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
        // `XX`: only leases still held; so even while the beats pause the
        // index (`Link::lease_conn`).
        let mut conn = self.observed(self.link.lease_conn().await)?;
        self.run_on::<()>(&mut conn, |p| {
            p.cmd("ZADD").arg(key).arg("XX").arg(&items).ignore();
        })
        .await
    }

    /// Whether `id` holds a lease that has not expired at `now`.
    pub async fn leased(&self, id: Uuid, now: DateTime<Utc>) -> Result<bool, DueError> {
        let key = &self.keys().inflight;
        // A lease ends at its millisecond (`LostClaims::lease`).
        let (expiry,): (Option<f64>,) = self
            .run(|p| {
                p.zscore(key, member(&id));
            })
            .await?;
        Ok(expiry.is_some_and(|expiry| expiry.floor() as i64 > now.timestamp_millis()))
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
        let (expiries,): (Vec<Option<f64>>,) = self
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
                let end = DateTime::from_timestamp_millis(expiry?.floor() as i64)?;
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

/// Most lost claims remembered, each asked for by every claim until it
/// ran or its lease ended (a ranged read of one score, cheap); beyond
/// them the oldest are left to their leases' expiry. A Redis that stays
/// down fails a claim about once a second (the dispatcher's back-off).
const MAX_LOST: usize = 64;

/// The claims of one index whose answer this process never read (and its
/// leases of handed-off notifications, `RedisIndex::add_leased`): a
/// timeout, a dropped connection. Such a claim may still have run, or run
/// later (a Redis that stalled runs what it had read once it goes on),
/// and then leased what nobody delivers until the lease expires
/// (`dispatcher.lease_ms`, a minute by default). So each claim's leases
/// end at a time of their own, its end in milliseconds and a fraction
/// (`lease`), and the next claims return what any lost claim leased
/// (`lua/claim.lua`), until one finds some (it ran: there is nothing more)
/// or its lease would have ended anyway. The fraction is one of 2,047
/// that each index takes in turn: two claims of one process never share
/// an end, and two processes' claims on one shard share it only if they
/// end in the same millisecond with the same fraction, one in 2,047; the
/// leases of the other are then returned too, and sent again, as after a
/// crash.
#[derive(Debug)]
pub(super) struct LostClaims {
    next: u32,
    lost: Vec<(String, DateTime<Utc>)>,
}

impl Default for LostClaims {
    fn default() -> Self {
        Self {
            next: rand::random(),
            lost: Vec::new(),
        }
    }
}

impl LostClaims {
    /// The lease score of a new claim ending at `until`: its millisecond
    /// and k/2048 of one (k from 1 to 2047), exactly a double until 2109,
    /// written as Redis reads it back. The lease still ends at that
    /// millisecond: every reader of a lease takes its whole part
    /// (`lua/claim.lua`'s expiry too).
    pub(super) fn lease(&mut self, until: DateTime<Utc>) -> String {
        self.next = self.next.wrapping_add(1);
        let k = 1 + self.next % 2047;
        let end = score(until) as f64 + f64::from(k) / 2048.0;
        end.to_string()
    }

    /// The lost claims' lease scores whose leases have not ended at `now`
    /// (a claim's millisecond: one ended by then, its end's millisecond
    /// not after now's, is requeued as any expired lease, and asked for
    /// again would be counted twice); the rest are forgotten.
    pub(super) fn unended(&mut self, now: DateTime<Utc>) -> Vec<String> {
        let now = score(now);
        self.lost.retain(|(_, until)| score(*until) > now);
        self.lost.iter().map(|(lease, _)| lease.clone()).collect()
    }

    pub(super) fn add(&mut self, lease: String, until: DateTime<Utc>) {
        if self.lost.len() == MAX_LOST {
            self.lost.remove(0);
        }
        self.lost.push((lease, until));
    }

    /// Those of `found` ran: what they leased is back.
    pub(super) fn ran(&mut self, found: &[String]) {
        if !found.is_empty() {
            self.lost.retain(|(lease, _)| !found.contains(lease));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claims_lease_ends_in_its_millisecond_and_reads_back_as_written() {
        let mut claims = LostClaims::default();
        let until = DateTime::from_timestamp_millis(1_795_000_000_123).unwrap();
        let mut seen = std::collections::HashSet::new();
        for _ in 0..2047 {
            let lease = claims.lease(until);
            let end: f64 = lease.parse().unwrap();
            assert!(
                end > 1_795_000_000_123.0 && end < 1_795_000_000_124.0,
                "{lease}"
            );
            assert_eq!(end.to_string(), lease);
            assert!(
                seen.insert(lease),
                "2,047 claims in a row, each its own end"
            );
        }
        // Still exact in 2109.
        let late = DateTime::from_timestamp_millis(4_398_046_511_000).unwrap();
        let end: f64 = claims.lease(late).parse().unwrap();
        assert_eq!(end.fract() * 2048.0, (end.fract() * 2048.0).round());
    }

    #[test]
    fn a_lost_claim_is_asked_after_until_it_ran_or_its_lease_ended() {
        let mut claims = LostClaims::default();
        let now = Utc::now();
        let first = claims.lease(now + chrono::Duration::seconds(60));
        claims.add(first.clone(), now + chrono::Duration::seconds(60));
        let second = claims.lease(now + chrono::Duration::seconds(1));
        claims.add(second.clone(), now + chrono::Duration::seconds(1));
        assert_eq!(claims.unended(now), [first.clone(), second.clone()]);
        let later = now + chrono::Duration::seconds(2);
        assert_eq!(claims.unended(later), std::slice::from_ref(&first));
        claims.ran(std::slice::from_ref(&first));
        assert!(claims.unended(now).is_empty());
    }

    #[test]
    fn a_lost_lease_ending_in_the_claims_millisecond_is_left_to_the_expiry() {
        let mut claims = LostClaims::default();
        // Both in the millisecond that ends at …124 (scores round up).
        let now = DateTime::from_timestamp_micros(1_795_000_000_123_500).unwrap();
        let until = now + chrono::Duration::microseconds(200);
        let lease = claims.lease(until);
        claims.add(lease.clone(), until);
        // The claim script's expiry takes every lease before now's next
        // millisecond (`claim.lua`): this one is requeued as expired, and
        // asking for it as lost too would count it twice.
        assert!(claims.unended(now).is_empty());
        let next = now - chrono::Duration::milliseconds(1);
        claims.add(lease.clone(), until);
        assert_eq!(claims.unended(next), [lease]);
    }
}
