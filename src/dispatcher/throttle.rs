//! Rate limits in the dispatcher. Of the deliveries a batch would start
//! (past the deleted, pull and disabled checks, each holding one of the
//! global permits), those to an endpoint with a limit (its own, or
//! `dispatcher.default_rate_limit`) are held here instead of started, and
//! put to the limiter in one call for the whole batch, with the room each
//! endpoint's concurrency cap leaves. Those it lets go start (at their
//! slot); the others give their permit back and go back to the due index
//! for the slot they hold: nothing is written to the store, no attempt is
//! counted, and they are claimed again when their slot comes, not before.
//! A batch with no limited endpoint calls nothing.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use tokio::sync::OwnedSemaphorePermit;
use uuid::Uuid;

use super::delivery::Plan;
use super::Shared;
use crate::domain::rate::{Decision, RateLimit};
use crate::limiter::{Ask, Limiter};
use crate::store::delivery::DueNotification;

/// When the limiter cannot answer (Redis down), limited deliveries wait
/// this long and are looked at again: never sent unlimited, since a limit
/// is a promise to someone else's server; the claim that follows fails the
/// same way while Redis is down, so this is rarely reached.
const LIMITER_BACKOFF: Duration = Duration::from_secs(1);

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
    asks: Vec<Ask>,
    /// Per ask: the endpoint's cap, and the deliveries in ask order.
    held: Vec<(u32, Vec<Start>)>,
    by_endpoint: HashMap<Uuid, usize>,
}

impl Throttle {
    pub(super) fn new(default: Option<RateLimit>) -> Self {
        Self {
            default,
            asks: Vec::new(),
            held: Vec::new(),
            by_endpoint: HashMap::new(),
        }
    }

    /// Holds `start` if its endpoint has a limit; gives it back otherwise.
    pub(super) fn hold(&mut self, start: Start, cap: u32) -> Option<Start> {
        let Some(limit) = start.1.rate_limit.or(self.default) else {
            return Some(start);
        };
        let endpoint = start.0.endpoint_id;
        let place = *self.by_endpoint.entry(endpoint).or_insert_with(|| {
            self.asks.push(Ask {
                endpoint,
                limit,
                room: 0,
                notifications: Vec::new(),
            });
            self.held.push((cap, Vec::new()));
            self.asks.len() - 1
        });
        self.asks[place].notifications.push(start.0.id);
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
        let decisions = match limiter.admit(now, due_by, &self.asks).await {
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
        for (cap, starts) in self.held {
            let mut place = 0;
            for (row, plan, due_at, permit) in starts {
                let decision = decisions.next().unwrap_or(Decision::Wait {
                    at_us: now.timestamp_micros(),
                });
                let at = time(decision.at_us());
                match decision {
                    Decision::Send { .. } if in_flight.try_start(row.endpoint_id, row.id, cap) => {
                        starting.push((row, plan, due_at.max(at), permit));
                    }
                    _ if at > due_by => {
                        throttled += 1;
                        later.push((row.id, at));
                    }
                    _ => {
                        // Its time has come but the cap has no room: back
                        // when a slot should free, on the slot it holds.
                        place += 1;
                        let wait = in_flight.deferral(row.endpoint_id, place, cap);
                        let wait = chrono::Duration::from_std(wait).unwrap_or_default();
                        later.push((row.id, at.max(now + wait)));
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

fn time(us: i64) -> DateTime<Utc> {
    Utc.timestamp_micros(us).single().unwrap_or_else(Utc::now)
}
