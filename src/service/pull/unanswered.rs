//! The leases and waits hookd ends without a consumer's answer: a lease
//! that ran out (`lease_expired`), a due notification no consumer took
//! within `pull.max_wait` (`not_pulled`), and the leases a switch to push
//! ends (`switched_to_push`). Each is one failed attempt, recorded as a
//! consumer's nack is (`leases::attempt`).

use std::collections::HashSet;

use uuid::Uuid;

use super::leases::{attempt, Swept, EXPIRE_BATCH};
use crate::domain::lease::not_pulled;
use crate::domain::pull::Failure;
use crate::service::{Service, ServiceError};
use crate::store::pull::Leases;

impl Service {
    /// Records an expired attempt for each lease that ran out (of one
    /// endpoint, or all), at most `EXPIRE_BATCH`.
    pub async fn expire_leases(&self, endpoint: Option<Uuid>) -> Result<Swept, ServiceError> {
        self.record_expired(Leases::Expired {
            endpoint,
            limit: EXPIRE_BATCH,
        })
        .await
    }

    /// Records an expired attempt for each of these notifications whose
    /// lease ran out (a retry's, before the sweep gets to it).
    pub async fn expire_leases_of(&self, ids: &[Uuid]) -> Result<Swept, ServiceError> {
        self.record_expired(Leases::ExpiredOf(ids)).await
    }

    /// Ends the leases `endpoint`'s consumers hold, as it switches to push
    /// (its endpoint row committed as push: no consumer takes more), each
    /// with an attempt: `lease_expired` for one that ran out, as the sweep
    /// records it, and `switched_to_push` for one still running, due again
    /// at once. The push attempt then follows that attempt, numbered after
    /// it, rather than repeating an attempt number the consumer saw. An ack
    /// that lands first wins, as it does against the sweep.
    pub(super) async fn end_held_leases(&self, endpoint: Uuid) -> Result<(), ServiceError> {
        let operator = self.settings.operator.enabled();
        loop {
            let mut ran_out = HashSet::new();
            let ended = self
                .pull
                .end_leases(
                    Leases::HeldBy {
                        endpoint,
                        limit: EXPIRE_BATCH,
                    },
                    Box::new(|row| {
                        let lease = row.lease()?;
                        let failure = if lease.runs_at(row.now) {
                            Failure::SwitchedToPush
                        } else {
                            ran_out.insert(row.id);
                            Failure::LeaseExpired
                        };
                        Some(attempt(row, &failure, None, operator))
                    }),
                )
                .await?;
            let expired = ended.moved.iter().filter(|id| ran_out.contains(id)).count();
            for (how, count) in [
                ("lease_expired", expired),
                ("switched_to_push", ended.moved.len() - expired),
            ] {
                if count > 0 {
                    metrics::counter!("hookd_pull_ended_total", "how" => how)
                        .increment(count as u64);
                }
            }
            // A row another write changed first keeps its lease here: the
            // switch's move below ends it without an attempt.
            if (ended.rows.len() as i64) < EXPIRE_BATCH || ended.moved.is_empty() {
                return Ok(());
            }
        }
    }

    /// Ends the pull notifications that no consumer took within
    /// `pull.max_wait` of their due time (DESIGN §10): each with a failed
    /// attempt `not_pulled`, which ends it `failed` with the operator event
    /// as for push; at most `EXPIRE_BATCH`. Returns how many ended.
    pub async fn end_unpulled(&self) -> Result<usize, ServiceError> {
        let operator = self.settings.operator.enabled();
        let max_wait = self.settings.pull_max_wait();
        let message = format!(
            "no consumer took it within pull.max_wait ({})",
            humantime::format_duration(max_wait)
        );
        let ended = self
            .pull
            .end_unpulled(
                max_wait,
                EXPIRE_BATCH,
                Box::new(|row| {
                    let gave_up_at =
                        not_pulled(row.lease(), row.next_attempt_at, max_wait, row.now)?;
                    let failure = Failure::NotPulled {
                        due_at: row.next_attempt_at?,
                        gave_up_at,
                    };
                    Some(attempt(row, &failure, Some(&message), operator))
                }),
            )
            .await?;
        if !ended.is_empty() {
            metrics::counter!("hookd_pull_ended_total", "how" => "not_pulled")
                .increment(ended.len() as u64);
        }
        Ok(ended.len())
    }

    async fn record_expired(&self, which: Leases<'_>) -> Result<Swept, ServiceError> {
        let operator = self.settings.operator.enabled();
        let ended = self
            .pull
            .end_leases(
                which,
                Box::new(|row| {
                    // Read as ran out by the query; decided here.
                    let lease = row.lease()?;
                    (!lease.runs_at(row.now))
                        .then(|| attempt(row, &Failure::LeaseExpired, None, operator))
                }),
            )
            .await?;
        if !ended.moved.is_empty() {
            metrics::counter!("hookd_pull_ended_total", "how" => "lease_expired")
                .increment(ended.moved.len() as u64);
        }
        Ok(Swept {
            read: ended.rows.len(),
            ended: ended.moved.len(),
        })
    }
}
