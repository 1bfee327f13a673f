//! The rate limiter of one process (embedded mode): buckets and
//! reservations in maps, pruned of what has expired now and then. With
//! lanes on (`Ask::share`), an endpoint has a bucket per lane.

use std::collections::HashMap;
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{Ask, Limiter, LimiterError};
use crate::domain::lane::Lane;
use crate::domain::rate::{
    bucket_ttl_us, decide, decide_lanes, reservation_ttl_us, Bucket, Decision, LaneDecision,
    Reservation,
};

/// How often expired buckets and reservations are dropped (µs).
const PRUNE_EVERY_US: i64 = 60_000_000;

#[derive(Debug, Default)]
pub struct MemoryLimiter {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Endpoint (and lane, when lanes are on) → its bucket, and when it
    /// expires (µs).
    buckets: HashMap<(Uuid, Option<Lane>), (Bucket, i64)>,
    /// Notification → the slot it holds, and when that expires (µs).
    reservations: HashMap<Uuid, (Reservation, i64)>,
    next_prune_us: i64,
}

impl MemoryLimiter {
    pub fn new() -> Self {
        Self::default()
    }

    /// Reservations held (expired ones not yet pruned included).
    pub fn reservations(&self) -> usize {
        self.state.lock().expect("limiter lock").reservations.len()
    }
}

impl State {
    /// The bucket kept under `key`, taken out (put back once decided), if
    /// not expired.
    fn bucket(&mut self, key: (Uuid, Option<Lane>), now_us: i64) -> Option<Bucket> {
        self.buckets
            .remove(&key)
            .filter(|(_, expires)| *expires > now_us)
            .map(|(bucket, _)| bucket)
    }

    /// The rule for `ask` over its endpoint's buckets (taken out: the
    /// caller puts back those returned, each under its lane when lanes are
    /// on): each decision, and the reservation to keep for a `Reserve`.
    fn decide(
        &mut self,
        ask: &Ask,
        (now_us, due_by_us): (i64, i64),
        held: &[(Lane, Option<Reservation>)],
    ) -> (Vec<(Option<Lane>, Bucket)>, Vec<LaneDecision>) {
        let Some(limits) = ask.limit.lanes(ask.share) else {
            let held: Vec<_> = held.iter().map(|(_, r)| *r).collect();
            let bucket = self.bucket((ask.endpoint, None), now_us);
            let (bucket, decisions) =
                decide(bucket, ask.limit, (now_us, due_by_us), ask.room, &held);
            let epoch_us = bucket.epoch_us;
            let decided = decisions
                .into_iter()
                .map(|decision| {
                    let reservation = Reservation {
                        at_us: decision.at_us(),
                        epoch_us,
                        lent: None,
                    };
                    (decision, Some(reservation))
                })
                .collect();
            return (vec![(None, bucket)], decided);
        };
        let lanes = [Lane::Fresh, Lane::Backlog];
        let kept = lanes.map(|lane| self.bucket((ask.endpoint, Some(lane)), now_us));
        let (buckets, decided) = decide_lanes(kept, limits, (now_us, due_by_us), ask.room, held);
        (lanes.map(Some).into_iter().zip(buckets).collect(), decided)
    }

    fn prune(&mut self, now_us: i64) {
        if now_us < self.next_prune_us {
            return;
        }
        self.buckets.retain(|_, (_, expires)| *expires > now_us);
        self.reservations
            .retain(|_, (_, expires)| *expires > now_us);
        self.next_prune_us = now_us + PRUNE_EVERY_US;
    }
}

#[async_trait::async_trait]
impl Limiter for MemoryLimiter {
    async fn slots(
        &self,
        ids: &[Uuid],
        now: DateTime<Utc>,
    ) -> Result<Vec<(Uuid, DateTime<Utc>)>, LimiterError> {
        let now_us = now.timestamp_micros();
        let state = self.state.lock().expect("limiter lock");
        Ok(ids
            .iter()
            .filter_map(|id| {
                let (reservation, expires) = state.reservations.get(id)?;
                if *expires <= now_us || reservation.at_us <= now_us {
                    return None;
                }
                Some((*id, DateTime::from_timestamp_micros(reservation.at_us)?))
            })
            .collect())
    }

    async fn admit(
        &self,
        now: DateTime<Utc>,
        due_by: DateTime<Utc>,
        asks: &[Ask],
    ) -> Result<Vec<Decision>, LimiterError> {
        let (now_us, due_by_us) = (now.timestamp_micros(), due_by.timestamp_micros());
        let mut state = self.state.lock().expect("limiter lock");
        state.prune(now_us);
        let mut out = Vec::with_capacity(asks.iter().map(|a| a.notifications.len()).sum());
        for ask in asks {
            let held: Vec<(Lane, Option<Reservation>)> = ask
                .notifications
                .iter()
                .map(|(id, lane)| {
                    let reservation = state
                        .reservations
                        .get(id)
                        .filter(|(_, expires)| *expires > now_us)
                        .map(|(reservation, _)| *reservation);
                    (*lane, reservation)
                })
                .collect();
            let (buckets, decided) = state.decide(ask, (now_us, due_by_us), &held);
            for ((id, _), (decision, reservation)) in ask.notifications.iter().zip(&decided) {
                match (*decision, reservation) {
                    (Decision::Send { .. }, _) => {
                        state.reservations.remove(id);
                    }
                    (Decision::Reserve { at_us }, Some(reservation)) => {
                        let expires = now_us + reservation_ttl_us(at_us, now_us);
                        state.reservations.insert(*id, (*reservation, expires));
                    }
                    _ => {}
                }
            }
            for (lane, bucket) in buckets {
                let expires = now_us + bucket_ttl_us(&bucket, now_us);
                state
                    .buckets
                    .insert((ask.endpoint, lane), (bucket, expires));
            }
            out.extend(decided.into_iter().map(|(decision, _)| decision));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::rate::RateLimit;

    #[tokio::test]
    async fn with_a_share_of_0_both_lanes_share_the_single_bucket_rule() {
        let limiter = MemoryLimiter::new();
        let limit = RateLimit::new(10.0, 3).unwrap();
        let endpoint = Uuid::now_v7();
        let ids: Vec<(Uuid, Lane)> = (0..12)
            .map(|n| (Uuid::now_v7(), Lane::of(n % 2, false)))
            .collect();
        let t0 = Utc::now();
        // The rule alone, over a bucket and reservations of its own.
        let (mut bucket, mut held) = (None, HashMap::<Uuid, Reservation>::new());
        let mut waiting = ids.clone();
        for step in 0..20 {
            let now = t0 + chrono::Duration::milliseconds(100 * step);
            let ask = Ask {
                endpoint,
                limit,
                share: 0.0,
                room: 2,
                notifications: waiting.clone(),
            };
            let by_limiter = limiter.admit(now, now, &[ask]).await.unwrap();
            let reservations: Vec<_> = waiting
                .iter()
                .map(|(id, _)| held.get(id).copied())
                .collect();
            let now_us = now.timestamp_micros();
            let (kept, by_rule) = decide(bucket, limit, (now_us, now_us), 2, &reservations);
            assert_eq!(by_limiter, by_rule, "step {step}");
            for ((id, _), decision) in waiting.iter().zip(&by_rule) {
                if let Decision::Reserve { at_us } = *decision {
                    let reservation = Reservation {
                        at_us,
                        epoch_us: kept.epoch_us,
                        lent: None,
                    };
                    held.insert(*id, reservation);
                }
            }
            let sent: Vec<bool> = by_rule
                .iter()
                .map(|d| matches!(d, Decision::Send { .. }))
                .collect();
            let mut sent = sent.into_iter();
            waiting.retain(|_| !sent.next().unwrap_or(false));
            bucket = Some(kept);
        }
        assert!(waiting.is_empty(), "{} never sent", waiting.len());
    }
}
