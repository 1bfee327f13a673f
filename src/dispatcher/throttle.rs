//! Rate limits in the dispatcher. Of the deliveries a batch would start
//! (past the deleted, pull and disabled checks, each holding one of the
//! global permits), those to an endpoint with a limit (its own, or
//! `dispatcher.default_rate_limit`) are held here instead of started, and
//! put to the limiter in one call for the whole batch, with the room each
//! endpoint's concurrency cap leaves. Those it lets go start (at their
//! slot); the others give their permit back and go back to the due index
//! for the slot they hold: nothing is written to the store, no attempt is
//! counted, and they are claimed again when their slot comes, not before:
//! at the start of its group of slots (`domain::rate::park_us`), when one
//! claim takes the group and each goes at its own slot. A batch with no
//! limited endpoint calls nothing. An endpoint found throttled is noted
//! (`screen::Hint`): the claims after read the heads of their notifications
//! first, and its throttled ones go back without their bodies being read.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use tokio::sync::OwnedSemaphorePermit;
use uuid::Uuid;

use super::delivery::Plan;
use super::in_flight::InFlight;
use super::Shared;
use crate::domain::rate::{horizon_us, park_us, Decision, RateLimit};
use crate::limiter::{Ask, Limiter};
use crate::store::delivery::DueNotification;

/// When the limiter cannot answer (Redis down), limited deliveries wait
/// this long and are looked at again: never sent unlimited, since a limit
/// is a promise to someone else's server; the claim that follows fails the
/// same way while Redis is down, so this is rarely reached.
pub(super) const LIMITER_BACKOFF: Duration = Duration::from_secs(1);

/// A delivery ready to start: the row, its plan, when, and its permit.
pub(super) type Start = (
    DueNotification,
    Arc<Plan>,
    DateTime<Utc>,
    OwnedSemaphorePermit,
);

/// The limited deliveries of one batch, per endpoint, in batch order.
pub(super) struct Throttle {
    default: Option<RateLimit>,
    /// `dispatcher.fresh_share`: for endpoints without their own.
    share: f64,
    /// Let go by the limiter before their rows were read (`screen`), each
    /// at its slot: not asked again.
    admitted: HashMap<Uuid, DateTime<Utc>>,
    asks: Vec<Ask>,
    /// Per ask: the endpoint's cap, and the deliveries in ask order.
    held: Vec<(u32, Vec<Start>)>,
    by_endpoint: HashMap<Uuid, usize>,
}

impl Throttle {
    pub(super) fn new(
        (default, share): (Option<RateLimit>, f64),
        admitted: HashMap<Uuid, DateTime<Utc>>,
    ) -> Self {
        Self {
            default,
            share,
            admitted,
            asks: Vec::new(),
            held: Vec::new(),
            by_endpoint: HashMap::new(),
        }
    }

    /// Holds `start` if its endpoint has a limit; gives it back otherwise.
    pub(super) fn hold(&mut self, start: Start, cap: u32) -> Option<Start> {
        if let Some(at) = self.admitted.get(&start.0.id) {
            let (row, plan, due_at, permit) = start;
            return Some((row, plan, due_at.max(*at), permit));
        }
        let Some(limit) = start.1.rate_limit.or(self.default) else {
            return Some(start);
        };
        let endpoint = start.0.endpoint_id;
        let place = *self.by_endpoint.entry(endpoint).or_insert_with(|| {
            self.asks.push(Ask {
                endpoint,
                limit,
                share: start.1.fresh_share.unwrap_or(self.share),
                room: 0,
                notifications: Vec::new(),
            });
            self.held.push((cap, Vec::new()));
            self.asks.len() - 1
        });
        self.asks[place]
            .notifications
            .push((start.0.id, start.0.lane()));
        self.held[place].1.push(start);
        None
    }

    /// Asks the limiter about what it holds (nothing when it holds
    /// nothing); returns those that start now, each at its slot, and puts
    /// the others in `later` at theirs (or when the cap may have room).
    pub(super) async fn settle(
        mut self,
        limiter: &dyn Limiter,
        shared: &Shared,
        (now, due_by): (DateTime<Utc>, DateTime<Utc>),
        later: &mut Vec<(Uuid, DateTime<Utc>)>,
    ) -> Vec<Start> {
        if self.asks.is_empty() {
            return Vec::new();
        }
        {
            let in_flight = shared.in_flight.lock().expect("in-flight lock");
            for (ask, (cap, _)) in self.asks.iter_mut().zip(&self.held) {
                ask.room = cap.saturating_sub(in_flight.count(ask.endpoint)) as usize;
            }
        }
        let horizon = horizon(&self.asks, now, due_by);
        let decisions = match limiter.admit(now, horizon, &self.asks).await {
            Ok(decisions) => decisions,
            Err(error) => {
                tracing::warn!(%error, "cannot ask the rate limiter; limited deliveries wait");
                let back = now + chrono::Duration::from_std(LIMITER_BACKOFF).unwrap_or_default();
                later.extend(
                    self.held
                        .iter()
                        .flat_map(|(_, starts)| starts.iter().map(move |(row, ..)| (row.id, back))),
                );
                return Vec::new();
            }
        };
        let mut decisions = decisions.into_iter();
        let mut starting = Vec::new();
        let mut throttled = 0u64;
        let mut in_flight = shared.in_flight.lock().expect("in-flight lock");
        let default_share = self.share;
        for ((cap, starts), ask) in self.held.into_iter().zip(&self.asks) {
            let mut place = 0;
            for (row, plan, due_at, permit) in starts {
                let decision = decisions.next().unwrap_or(Decision::Wait {
                    at_us: now.timestamp_micros(),
                });
                let at = time(decision.at_us());
                let slot = (row.id, row.lane());
                let share = plan.fresh_share.unwrap_or(default_share);
                match decision {
                    Decision::Send { .. }
                        if in_flight.try_start(row.endpoint_id, slot, (cap, share)) =>
                    {
                        starting.push((row, plan, due_at.max(at), permit));
                    }
                    _ => {
                        if at > horizon {
                            throttled += 1;
                            shared.throttled.note(ask.endpoint, ask.limit, at);
                        }
                        let back =
                            put_back(ask, decision, (now, horizon), &in_flight, cap, &mut place);
                        later.push((row.id, back));
                    }
                }
            }
        }
        if throttled > 0 {
            metrics::counter!("hookd_notifications_throttled_total").increment(throttled);
        }
        starting
    }
}

/// The time a batch's limited endpoints are decided up to: the end of the
/// group of slots now is in for each (`domain::rate::horizon_us`), the
/// latest of them, and never before the batch's own `due_by`. The room the
/// caps leave bounds what goes, each at its slot.
pub(super) fn horizon(asks: &[Ask], now: DateTime<Utc>, due_by: DateTime<Utc>) -> DateTime<Utc> {
    let (now_us, due_by_us) = (now.timestamp_micros(), due_by.timestamp_micros());
    let latest = asks
        .iter()
        .map(|ask| horizon_us(ask.limit, now_us, due_by_us))
        .max()
        .unwrap_or(due_by_us);
    time(latest)
}

/// When a notification the limiter did not let start now comes back: a
/// slot past the horizon at the start of its group; one whose time has
/// come but whose endpoint's cap has no room (`place`-th of those) when a
/// slot of the cap should free, on the slot it holds.
pub(super) fn put_back(
    ask: &Ask,
    decision: Decision,
    (now, horizon): (DateTime<Utc>, DateTime<Utc>),
    in_flight: &InFlight,
    cap: u32,
    place: &mut u32,
) -> DateTime<Utc> {
    let at = time(decision.at_us());
    if at > horizon {
        return time(park_us(decision.at_us(), ask.limit));
    }
    *place += 1;
    let wait = in_flight.deferral(ask.endpoint, *place, cap);
    at.max(now + chrono::Duration::from_std(wait).unwrap_or_default())
}

pub(super) fn time(us: i64) -> DateTime<Utc> {
    Utc.timestamp_micros(us).single().unwrap_or_else(Utc::now)
}
