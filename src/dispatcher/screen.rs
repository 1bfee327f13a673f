//! A claim's first look, before any body is read. While some endpoint is
//! known to be throttled (the limiter gave one of its notifications a slot
//! past the claim's horizon) or its circuit holds, a claim reads only the
//! heads of what it claimed (`DeliveryStore::load_heads`: endpoint, status,
//! due time); those of such endpoints are held (`Breaker::parks`) or put
//! to the limiter here, and go back to the index at their hold deadline or
//! their slot without their row being loaded. The rest, and those the
//! limiter lets go now (not asked again), are loaded
//! and dispatched as any claim. Anything unusual about a head (not pending,
//! not due, its endpoint's plan not at hand, deleted, disabled, pull, no
//! limit) is left to that path: a screen only ever puts back.
//!
//! A claim with no such endpoint known reads no head: one query, as before.
//! Nor does one while screens keep finding nothing to put back (the
//! watched endpoints' backlog is parked, what is claimed is others'): a
//! screen that put nothing back skips the next 1, 2, 4 … up to
//! `MAX_SKIP` claims, and one that did (or a throttle on the ordinary
//! path) screens again from the next claim. A head read is one more round
//! trip per claim, and a draining dispatcher's claims are small.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::breaker::Admit;
use super::plans::Plans;
use super::throttle::{horizon, put_back};
use super::{Dispatcher, Shared};
use crate::domain::rate::{Decision, RateLimit};
use crate::domain::status::Status;
use crate::limiter::Ask;

/// The most claims a run of fruitless screens makes the next ones skip.
const MAX_SKIP: u32 = 64;

/// The endpoints found throttled, each until the last slot it was seen
/// giving (past it, its bucket may have tokens again), and how many claims
/// go unscreened.
#[derive(Default)]
pub(super) struct Hint {
    state: Mutex<HintState>,
}

#[derive(Default)]
struct HintState {
    until: HashMap<Uuid, (DateTime<Utc>, RateLimit)>,
    skip: u32,
    backoff: u32,
}

impl Hint {
    /// `endpoint` (limited by `limit`) gave a slot at `at`, past a claim's
    /// horizon.
    pub(super) fn note(&self, endpoint: Uuid, limit: RateLimit, at: DateTime<Utc>) {
        let mut state = self.state.lock().expect("hint lock");
        let kept = state.until.entry(endpoint).or_insert((at, limit));
        *kept = (kept.0.max(at), limit);
        (state.skip, state.backoff) = (0, 0);
    }

    /// `endpoint`'s limit while it is being throttled at `now`: its
    /// successes may be recorded together (`domain::record_hold`).
    pub(super) fn limit_of(&self, endpoint: Uuid, now: DateTime<Utc>) -> Option<RateLimit> {
        let state = self.state.lock().expect("hint lock");
        let (until, limit) = state.until.get(&endpoint)?;
        (*until > now).then_some(*limit)
    }

    /// Those still throttled at `now` (forgetting the others), and whether
    /// this claim goes unscreened anyway.
    fn throttled(&self, now: DateTime<Utc>) -> (HashSet<Uuid>, bool) {
        let mut state = self.state.lock().expect("hint lock");
        state.until.retain(|_, (at, _)| *at > now);
        let skips = state.skip > 0;
        state.skip = state.skip.saturating_sub(1);
        (state.until.keys().copied().collect(), skips)
    }

    /// After a screen: whether it put anything back.
    fn screened(&self, put_back: bool) {
        let mut state = self.state.lock().expect("hint lock");
        state.backoff = if put_back {
            0
        } else {
            (state.backoff * 2).clamp(1, MAX_SKIP)
        };
        state.skip = state.backoff;
    }
}

/// What a screen leaves to the ordinary path: the ids to load and
/// dispatch, in claim order, and of those the ones the limiter let go, each
/// at its slot (they hold no slot any more and are not asked again).
type Screened = (Vec<Uuid>, HashMap<Uuid, DateTime<Utc>>);

impl Dispatcher {
    /// Screens claimed `ids` (see the module's doc); gives back to the
    /// index, in one call, those it held or throttled.
    pub(super) async fn screen(
        &self,
        ids: Vec<Uuid>,
        plans: &Plans,
        shared: &Arc<Shared>,
        (now, due_by): (DateTime<Utc>, DateTime<Utc>),
    ) -> Screened {
        let (mut watched, skips) = shared.throttled.throttled(now);
        watched.extend(shared.breaker.holding());
        let unscreened = |ids| (ids, HashMap::new());
        if watched.is_empty() || skips {
            return unscreened(ids);
        }
        let heads = match self.store.load_heads(&ids).await {
            Ok(heads) => heads,
            // The full load meets the same store; it says what to do.
            Err(_) => return unscreened(ids),
        };
        let busy = shared.busy_among(&ids);
        let default = self
            .settings
            .dispatcher
            .default_rate_limit
            .and_then(|d| d.limit());
        let default_cap = self.settings.dispatcher.endpoint_max_in_flight;
        let mut later = Vec::new();
        let mut asks: Vec<(Ask, u32)> = Vec::new();
        let mut by_endpoint: HashMap<Uuid, usize> = HashMap::new();
        let mut asked = HashSet::new();
        for head in heads {
            if !watched.contains(&head.endpoint_id) || busy.contains(&head.id) {
                continue;
            }
            let Some(due_at) = head
                .next_attempt_at
                .filter(|at| head.status == Status::Pending && *at <= due_by)
            else {
                continue;
            };
            let Some(plan) = head
                .endpoint_version
                .and_then(|version| plans.usable(head.endpoint_id, version, now))
            else {
                continue;
            };
            if plan.deleted || plan.pull || plan.disabled || shared.breaker.is_probe(head.id) {
                continue;
            }
            match shared
                .breaker
                .admit(plan.breaker, (head.endpoint_id, head.id), due_at, now)
            {
                Admit::Send => {}
                Admit::Park(until) => {
                    later.push((head.id, until));
                    asked.insert(head.id);
                    continue;
                }
                // Deferred or failed: on its row, by the ordinary path.
                Admit::Defer(_) | Admit::Fail => continue,
            }
            let Some(limit) = plan.rate_limit.or(default) else {
                continue;
            };
            let cap = plan.max_in_flight.unwrap_or(default_cap);
            let place = *by_endpoint.entry(head.endpoint_id).or_insert_with(|| {
                asks.push((
                    Ask {
                        endpoint: head.endpoint_id,
                        limit,
                        share: plan
                            .fresh_share
                            .unwrap_or(self.settings.dispatcher.fresh_share),
                        room: 0,
                        notifications: Vec::new(),
                    },
                    cap,
                ));
                asks.len() - 1
            });
            asks[place].0.notifications.push((head.id, head.lane()));
            asked.insert(head.id);
        }
        let mut admitted = HashMap::new();
        if !asks.is_empty() {
            self.settle_heads(asks, shared, (now, due_by), &mut admitted, &mut later)
                .await;
        }
        shared.throttled.screened(!later.is_empty());
        if !later.is_empty() {
            if let Err(error) = self.due.reschedule(&later).await {
                tracing::warn!(%error, "cannot defer claims; their leases will expire");
            }
        }
        let load = ids
            .into_iter()
            .filter(|id| !asked.contains(id) || admitted.contains_key(id))
            .collect();
        (load, admitted)
    }

    /// Asks the limiter about the screened heads: those it lets go now are
    /// `admitted`, the others go in `later` at their slot (or when their
    /// endpoint's cap may have room), as `Throttle::settle` places them.
    async fn settle_heads(
        &self,
        mut asks: Vec<(Ask, u32)>,
        shared: &Shared,
        (now, due_by): (DateTime<Utc>, DateTime<Utc>),
        admitted: &mut HashMap<Uuid, DateTime<Utc>>,
        later: &mut Vec<(Uuid, DateTime<Utc>)>,
    ) {
        {
            let in_flight = shared.in_flight.lock().expect("in-flight lock");
            for (ask, cap) in &mut asks {
                ask.room = cap.saturating_sub(in_flight.count(ask.endpoint)) as usize;
            }
        }
        let (asks, caps): (Vec<Ask>, Vec<u32>) = asks.into_iter().unzip();
        let horizon = horizon(&asks, now, due_by);
        let decisions = match self.limiter.admit(now, horizon, &asks).await {
            Ok(decisions) => decisions,
            Err(error) => {
                // Never sent unlimited: as `Throttle::settle` does.
                tracing::warn!(%error, "cannot ask the rate limiter; limited deliveries wait");
                let back = now
                    + chrono::Duration::from_std(super::throttle::LIMITER_BACKOFF)
                        .unwrap_or_default();
                later.extend(
                    asks.iter()
                        .flat_map(|a| a.notifications.iter().map(|(id, _)| (*id, back))),
                );
                return;
            }
        };
        let mut decisions = decisions.into_iter();
        let mut throttled = 0u64;
        let in_flight = shared.in_flight.lock().expect("in-flight lock");
        for (ask, cap) in asks.iter().zip(caps) {
            let mut place = 0;
            for (id, _) in &ask.notifications {
                let decision = decisions.next().unwrap_or(Decision::Wait {
                    at_us: now.timestamp_micros(),
                });
                let at = super::throttle::time(decision.at_us());
                if let Decision::Send { .. } = decision {
                    admitted.insert(*id, at);
                    continue;
                }
                if at > horizon {
                    throttled += 1;
                    shared.throttled.note(ask.endpoint, ask.limit, at);
                }
                later.push((
                    *id,
                    put_back(ask, decision, (now, horizon), &in_flight, cap, &mut place),
                ));
            }
        }
        if throttled > 0 {
            metrics::counter!("hookd_notifications_throttled_total").increment(throttled);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: RateLimit = RateLimit {
        per_second: 10.0,
        burst: 20,
    };

    fn skipped(hint: &Hint, claims: usize) -> usize {
        let now = Utc::now();
        (0..claims).filter(|_| hint.throttled(now).1).count()
    }

    #[test]
    fn fruitless_screens_skip_ever_more_claims_up_to_the_most_and_a_throttle_ends_it() {
        let hint = Hint::default();
        let endpoint = Uuid::now_v7();
        hint.note(endpoint, LIMIT, Utc::now() + chrono::Duration::hours(1));
        assert_eq!(hint.throttled(Utc::now()).0, HashSet::from([endpoint]));
        let mut skips = Vec::new();
        for _ in 0..9 {
            hint.screened(false);
            skips.push(skipped(&hint, MAX_SKIP as usize + 1));
        }
        assert_eq!(skips, [1, 2, 4, 8, 16, 32, 64, 64, 64]);
        hint.screened(false);
        hint.note(endpoint, LIMIT, Utc::now() + chrono::Duration::hours(1));
        assert_eq!(skipped(&hint, 2), 0, "screens again from the next claim");
        hint.screened(false);
        hint.screened(true);
        assert_eq!(skipped(&hint, 2), 0);
    }

    #[test]
    fn an_endpoint_is_watched_until_the_last_slot_it_gave() {
        let hint = Hint::default();
        let endpoint = Uuid::now_v7();
        let now = Utc::now();
        hint.note(endpoint, LIMIT, now + chrono::Duration::seconds(5));
        hint.note(endpoint, LIMIT, now + chrono::Duration::seconds(2));
        let seconds = |s| now + chrono::Duration::seconds(s);
        assert!(hint.throttled(seconds(4)).0.contains(&endpoint));
        assert_eq!(hint.limit_of(endpoint, seconds(4)), Some(LIMIT));
        assert!(hint.throttled(seconds(5)).0.is_empty());
        assert_eq!(hint.limit_of(endpoint, seconds(5)), None);
    }
}
