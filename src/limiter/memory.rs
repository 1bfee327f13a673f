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
    bucket_ttl_us, decide, decide_lanes, reservation_ttl_us, Bucket, Decision, Reservation,
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
            let (buckets, decisions) = match ask.limit.lanes(ask.share) {
                None => {
                    let held: Vec<_> = held.iter().map(|(_, r)| *r).collect();
                    let bucket = state.bucket((ask.endpoint, None), now_us);
                    let (bucket, decisions) =
                        decide(bucket, ask.limit, (now_us, due_by_us), ask.room, &held);
                    (vec![(None, bucket)], decisions)
                }
                Some(limits) => {
                    let lanes = [Lane::Fresh, Lane::Backlog];
                    let kept = lanes.map(|lane| state.bucket((ask.endpoint, Some(lane)), now_us));
                    let (buckets, decisions) =
                        decide_lanes(kept, limits, (now_us, due_by_us), ask.room, &held);
                    (
                        lanes.map(Some).into_iter().zip(buckets).collect(),
                        decisions,
                    )
                }
            };
            for ((id, lane), decision) in ask.notifications.iter().zip(&decisions) {
                match *decision {
                    Decision::Send { .. } => {
                        state.reservations.remove(id);
                    }
                    Decision::Reserve { at_us } => {
                        // In its own lane's bucket, or the one bucket.
                        let epoch_us = buckets
                            .iter()
                            .find(|(kept, _)| kept.is_none_or(|kept| kept == *lane))
                            .map_or(now_us, |(_, bucket)| bucket.epoch_us);
                        let reservation = Reservation { at_us, epoch_us };
                        let expires = now_us + reservation_ttl_us(at_us, now_us);
                        state.reservations.insert(*id, (reservation, expires));
                    }
                    Decision::Wait { .. } => {}
                }
            }
            for (lane, bucket) in buckets {
                let expires = now_us + bucket_ttl_us(&bucket, now_us);
                state
                    .buckets
                    .insert((ask.endpoint, lane), (bucket, expires));
            }
            out.extend(decisions);
        }
        Ok(out)
    }
}
