//! Why a pending notification waits (docs/design.md §17), derived when it
//! is read from what is already known: its row, its endpoint (disabled?
//! pull? rate-limited?), its endpoint's circuit, where the due index has
//! it, and the time. Nothing is stored for it.
//!
//! One reason is given, the first of these that holds:
//! 1. final: no reason (`None`);
//! 2. `in_flight`: an attempt is under way (a dispatcher's claim, or a
//!    pull consumer's lease), until that lease ends: whatever else holds
//!    the endpoint, this attempt goes on. A claim of a notification that
//!    holds a rate-limit slot still to come is the dispatcher keeping it
//!    until that slot (`dispatcher::throttle`), not an attempt; nor is a
//!    claim of a disabled push endpoint's notification, which the
//!    dispatcher gives back unsent;
//! 3. `endpoint_disabled`: the endpoint holds everything while disabled,
//!    push or pull, with no end known;
//! 4. `circuit_open`: a push endpoint's circuit holds (open or probing),
//!    until the probe may run (or the probing claim lapses), unless the
//!    notification is scheduled past that anyway;
//! 5. `ordering`: behind an earlier notification of its `order_key`
//!    (named in `behind`), until that one ends;
//! 6. `scheduled`: its next attempt is due later, until then;
//! 7. `pull`: due, and waiting for a consumer of its pull endpoint;
//! 8. `rate_limit`: due, and the due index holds it for a later slot its
//!    endpoint's rate limit gave it, until that slot;
//! 9. `due`: due now, waiting for a dispatcher to claim it.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;
use uuid::Uuid;

use super::breaker::{Circuit, State};
use super::problem::{ErrorCode, Problem};
use super::status::Status;

/// What a pending notification waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = WaitingReason)]
pub enum Reason {
    /// Its next attempt is due later (`until`).
    Scheduled,
    /// Due now: the next dispatcher claim takes it.
    Due,
    /// An attempt is under way until `until` (a push claim's lease, or a
    /// pull consumer's).
    InFlight,
    /// Its endpoint's rate limit gave it a later slot (`until`).
    RateLimit,
    /// Its endpoint's circuit is open; a probe may run at `until`.
    CircuitOpen,
    /// Behind an earlier notification of its `order_key` (`behind`).
    Ordering,
    /// Its endpoint is disabled: held until it is enabled again.
    EndpointDisabled,
    /// Due on a pull endpoint: waiting for a consumer to take it.
    Pull,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Scheduled => "scheduled",
            Reason::Due => "due",
            Reason::InFlight => "in_flight",
            Reason::RateLimit => "rate_limit",
            Reason::CircuitOpen => "circuit_open",
            Reason::Ordering => "ordering",
            Reason::EndpointDisabled => "endpoint_disabled",
            Reason::Pull => "pull",
        }
    }
}

impl Waiting {
    /// Why a manual retry is refused, if it would change nothing: the
    /// notification is held by its endpoint (disabled, or its circuit
    /// open) or by its key's order, not by its own schedule. The problem's
    /// code is the reason.
    pub fn refuses_retry(&self) -> Option<Problem> {
        let (code, why) = match self.reason {
            Reason::EndpointDisabled => (
                ErrorCode::EndpointDisabled,
                "its endpoint is disabled: enable it and the notification goes out".to_string(),
            ),
            Reason::CircuitOpen => (
                ErrorCode::CircuitOpen,
                match self.until {
                    Some(until) => format!(
                        "its endpoint's circuit is open: a probe may run at {}",
                        until.to_rfc3339_opts(SecondsFormat::Millis, true)
                    ),
                    None => "its endpoint's circuit is open".to_string(),
                },
            ),
            Reason::Ordering => (
                ErrorCode::Ordering,
                "it waits behind an earlier notification of its key".to_string(),
            ),
            _ => return None,
        };
        Some(Problem::conflict(
            code,
            format!(
                "the notification is held ({}): {why}; a retry would change nothing",
                self.reason.as_str()
            ),
        ))
    }
}

/// Why a pending notification waits, and until when if that is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Waiting {
    pub reason: Reason,
    /// When the wait ends, if known.
    pub until: Option<DateTime<Utc>>,
    /// The notification it waits behind (`ordering`).
    pub behind: Option<Uuid>,
}

/// What is known about a notification when it is read.
#[derive(Debug, Clone, Copy)]
pub struct Facts<'a> {
    pub status: Status,
    pub next_attempt_at: Option<DateTime<Utc>>,
    pub pull: bool,
    /// Until when an attempt holds it: a dispatcher's claim (the due
    /// index's lease) or a pull consumer's lease. `None`: none is under way.
    pub leased_until: Option<DateTime<Utc>>,
    /// Its endpoint is disabled.
    pub disabled: bool,
    /// Its endpoint's circuit, when not clean.
    pub circuit: Option<&'a Circuit>,
    /// The later slot its endpoint's rate limit gave it, if the due index
    /// holds it past its stored due time.
    pub slot: Option<DateTime<Utc>>,
    /// The earlier notification of its key it waits for.
    pub behind: Option<Uuid>,
}

/// Why the notification of `facts` waits at `now`; `None` once final.
pub fn waiting(facts: &Facts<'_>, now: DateTime<Utc>) -> Option<Waiting> {
    if facts.status != Status::Pending {
        return None;
    }
    let due_at = facts.next_attempt_at;
    // A dispatcher holds a notification whose rate-limit slot is still to
    // come under a lease until then: that lease is no attempt.
    let slot = facts.slot.filter(|s| *s > now);
    // Nor is a dispatcher's claim of a disabled push endpoint's
    // notification: the dispatcher sends nothing to a disabled endpoint and
    // gives such a claim back at once, for later. (An attempt begun before
    // the endpoint was disabled reads `endpoint_disabled` too, which is
    // what holds it once that attempt ends.) A pull consumer's lease is
    // its own, and goes on whatever its endpoint.
    let claimed_while_disabled = facts.disabled && !facts.pull;
    let attempt = facts
        .leased_until
        .filter(|u| *u > now && slot.is_none() && !claimed_while_disabled);
    let (reason, until) = if let Some(until) = attempt {
        (Reason::InFlight, Some(until))
    } else if facts.disabled {
        (Reason::EndpointDisabled, None)
    } else if let Some(until) = circuit_holds(facts, now) {
        (Reason::CircuitOpen, until)
    } else if facts.behind.is_some() {
        (Reason::Ordering, None)
    } else if let Some(at) = due_at.filter(|at| *at > now) {
        (Reason::Scheduled, Some(at))
    } else if facts.pull {
        (Reason::Pull, None)
    } else if let Some(slot) = slot {
        (Reason::RateLimit, Some(slot))
    } else {
        (Reason::Due, None)
    };
    let behind = facts.behind.filter(|_| reason == Reason::Ordering);
    Some(Waiting {
        reason,
        until,
        behind,
    })
}

/// Whether a push endpoint's circuit holds the notification: `Some(until)`
/// (when a probe may run, if known), unless it is scheduled past that.
fn circuit_holds(facts: &Facts<'_>, now: DateTime<Utc>) -> Option<Option<DateTime<Utc>>> {
    let circuit = facts.circuit.filter(|c| c.holds() && !facts.pull)?;
    let until = match circuit.state {
        State::Probing => circuit.probe_until,
        _ => circuit.next_probe_at,
    }
    .filter(|until| *until > now);
    match (facts.next_attempt_at, until) {
        (Some(at), Some(until)) if at > until => None,
        _ => Some(until),
    }
}

#[cfg(test)]
mod tests {
    use chrono::Duration;

    use super::*;

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + seconds, 0).unwrap()
    }

    fn due() -> Facts<'static> {
        Facts {
            status: Status::Pending,
            next_attempt_at: Some(at(0)),
            pull: false,
            leased_until: None,
            disabled: false,
            circuit: None,
            slot: None,
            behind: None,
        }
    }

    fn reason(facts: Facts<'_>) -> (Reason, Option<DateTime<Utc>>) {
        let waiting = waiting(&facts, at(10)).expect("pending");
        (waiting.reason, waiting.until)
    }

    fn open(probe_at: DateTime<Utc>) -> Circuit {
        Circuit {
            state: State::Open,
            opened_at: Some(at(0)),
            next_probe_at: Some(probe_at),
            open_ms: 30_000,
            ..Circuit::default()
        }
    }

    #[test]
    fn a_final_notification_waits_for_nothing() {
        for status in [Status::Succeeded, Status::Failed, Status::Cancelled] {
            let facts = Facts { status, ..due() };
            assert_eq!(waiting(&facts, at(10)), None);
        }
    }

    #[test]
    fn a_due_notification_waits_for_a_claim_and_a_later_one_for_its_time() {
        assert_eq!(reason(due()), (Reason::Due, None));
        let later = Facts {
            next_attempt_at: Some(at(60)),
            ..due()
        };
        assert_eq!(reason(later), (Reason::Scheduled, Some(at(60))));
    }

    #[test]
    fn an_attempt_under_way_comes_before_every_hold() {
        let circuit = open(at(40));
        let pushed = Facts {
            leased_until: Some(at(20)),
            circuit: Some(&circuit),
            ..due()
        };
        assert_eq!(reason(pushed), (Reason::InFlight, Some(at(20))));
        let consumed = Facts {
            leased_until: Some(at(20)),
            pull: true,
            disabled: true,
            ..due()
        };
        assert_eq!(reason(consumed), (Reason::InFlight, Some(at(20))));
        let lapsed = Facts {
            leased_until: Some(at(5)),
            ..due()
        };
        assert_eq!(reason(lapsed), (Reason::Due, None));
    }

    #[test]
    fn a_notification_behind_an_earlier_one_of_its_key_names_it_after_its_endpoints_holds() {
        let earlier = Uuid::now_v7();
        let behind = Facts {
            behind: Some(earlier),
            next_attempt_at: Some(at(60)),
            ..due()
        };
        let waits = waiting(&behind, at(10)).expect("pending");
        assert_eq!((waits.reason, waits.until), (Reason::Ordering, None));
        assert_eq!(waits.behind, Some(earlier));
        let disabled = Facts {
            disabled: true,
            ..behind
        };
        let waits = waiting(&disabled, at(10)).expect("pending");
        assert_eq!(
            (waits.reason, waits.behind),
            (Reason::EndpointDisabled, None)
        );
    }

    #[test]
    fn a_dispatchers_claim_of_a_disabled_push_endpoints_notification_is_no_attempt() {
        // Between its claim and its giving back, the dispatcher holds it
        // under a lease; what holds it is still the endpoint.
        let facts = Facts {
            leased_until: Some(at(70)),
            disabled: true,
            ..due()
        };
        assert_eq!(reason(facts), (Reason::EndpointDisabled, None));
    }

    #[test]
    fn a_disabled_endpoint_holds_push_and_pull_alike_before_its_circuit() {
        let circuit = open(at(40));
        for pull in [false, true] {
            let facts = Facts {
                disabled: true,
                pull,
                circuit: Some(&circuit),
                next_attempt_at: Some(at(60)),
                ..due()
            };
            assert_eq!(reason(facts), (Reason::EndpointDisabled, None));
        }
    }

    #[test]
    fn an_open_circuit_holds_until_its_probe_unless_scheduled_past_it() {
        let circuit = open(at(40));
        let held = Facts {
            circuit: Some(&circuit),
            slot: Some(at(30)),
            ..due()
        };
        assert_eq!(reason(held), (Reason::CircuitOpen, Some(at(40))));
        let past = Facts {
            circuit: Some(&circuit),
            next_attempt_at: Some(at(50)),
            ..due()
        };
        assert_eq!(reason(past), (Reason::Scheduled, Some(at(50))));
        let probing = Circuit {
            state: State::Probing,
            probe_until: Some(at(25)),
            ..circuit
        };
        let facts = Facts {
            circuit: Some(&probing),
            ..due()
        };
        assert_eq!(reason(facts), (Reason::CircuitOpen, Some(at(25))));
        let closed = Circuit::default();
        let facts = Facts {
            circuit: Some(&closed),
            ..due()
        };
        assert_eq!(reason(facts), (Reason::Due, None));
    }

    #[test]
    fn a_due_pull_notification_waits_for_a_consumer_and_no_circuit() {
        let circuit = open(at(40));
        let facts = Facts {
            pull: true,
            circuit: Some(&circuit),
            ..due()
        };
        assert_eq!(reason(facts), (Reason::Pull, None));
        let later = Facts {
            pull: true,
            next_attempt_at: Some(at(60)),
            ..due()
        };
        assert_eq!(reason(later), (Reason::Scheduled, Some(at(60))));
    }

    #[test]
    fn a_due_notification_given_a_later_slot_waits_for_its_rate_limit() {
        let facts = Facts {
            slot: Some(at(10) + Duration::milliseconds(500)),
            ..due()
        };
        assert_eq!(
            reason(facts),
            (
                Reason::RateLimit,
                Some(at(10) + Duration::milliseconds(500))
            )
        );
        // Kept under a claim until its slot: still the rate limit.
        let parked = Facts {
            slot: Some(at(30)),
            leased_until: Some(at(40)),
            ..due()
        };
        assert_eq!(reason(parked), (Reason::RateLimit, Some(at(30))));
    }

    #[test]
    fn only_the_holds_of_an_endpoint_or_a_key_refuse_a_retry_with_their_reason() {
        let held = |reason| Waiting {
            reason,
            until: Some(at(40)),
            behind: None,
        };
        for (reason, code) in [
            (Reason::CircuitOpen, ErrorCode::CircuitOpen),
            (Reason::EndpointDisabled, ErrorCode::EndpointDisabled),
            (Reason::Ordering, ErrorCode::Ordering),
        ] {
            let problem = held(reason).refuses_retry().expect("held");
            assert_eq!(problem.code, code);
            assert!(
                problem.message.contains(reason.as_str()),
                "{}",
                problem.message
            );
        }
        for free in [
            Reason::Due,
            Reason::Scheduled,
            Reason::Pull,
            Reason::RateLimit,
            Reason::InFlight,
        ] {
            assert!(held(free).refuses_retry().is_none(), "{free:?}");
        }
    }

    #[test]
    fn reasons_read_as_the_contract_names_them() {
        let json = serde_json::to_value(Reason::EndpointDisabled).unwrap();
        assert_eq!(json, "endpoint_disabled");
        assert_eq!(Reason::InFlight.as_str(), "in_flight");
    }
}
