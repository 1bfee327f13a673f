//! Endpoint health: since when every attempt to an endpoint has failed
//! (`failing_since`, shown by the API). A success clears it; the first
//! failure after a success starts it; later failures leave it be. Endpoints
//! failing for `dispatcher.disable_failing_endpoints_after_hours` are then
//! disabled, for this reason.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use uuid::Uuid;

/// `disabled_reason` of an endpoint hookd disabled, and the `reason` of its
/// `endpoint.disabled` event.
pub const DISABLED_FAILING: &str = "failing";

/// What a batch of attempts says about one endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Health {
    /// At least one attempt succeeded: the endpoint is not failing.
    Recovered,
    /// Every attempt failed, the first of them at `since`.
    Failing { since: DateTime<Utc> },
}

impl Health {
    /// The endpoint's `failing_since` after this batch...
    pub fn failing_since(self) -> Option<DateTime<Utc>> {
        match self {
            Health::Recovered => None,
            Health::Failing { since } => Some(since),
        }
    }

    /// ...which is written only over an endpoint in the other state: a
    /// recovery changes a failing endpoint, a failure a healthy one (one
    /// failing already keeps the start of its run).
    pub fn changes_a_failing_endpoint(self) -> bool {
        matches!(self, Health::Recovered)
    }
}

/// Per endpoint, in id order, what a batch of attempts, each
/// `(endpoint, succeeded, started_at)`, says about it.
pub fn observe(
    attempts: impl IntoIterator<Item = (Uuid, bool, DateTime<Utc>)>,
) -> Vec<(Uuid, Health)> {
    let mut seen: BTreeMap<Uuid, Health> = BTreeMap::new();
    for (endpoint, succeeded, started_at) in attempts {
        let health = seen
            .entry(endpoint)
            .or_insert(Health::Failing { since: started_at });
        *health = match (*health, succeeded) {
            (_, true) | (Health::Recovered, _) => Health::Recovered,
            (Health::Failing { since }, false) => Health::Failing {
                since: since.min(started_at),
            },
        };
    }
    seen.into_iter().collect()
}

/// The health hookd keeps on an endpoint: why hookd disabled it, if it
/// did, and since when every attempt failed, if they do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    pub disabled_reason: Option<String>,
    pub failing_since: Option<DateTime<Utc>>,
}

/// What a change of an endpoint's settings (`was_disabled` before,
/// `disabled` and `pushes` after: it has a URL) leaves of the health kept:
/// the reason hookd disabled it lasts only while it stays disabled; an
/// endpoint enabled again, or one that no longer pushes (pull), starts
/// with a clean record.
pub fn after_change(kept: Kept, was_disabled: bool, disabled: bool, pushes: bool) -> Kept {
    let enabled_again = was_disabled && !disabled;
    Kept {
        disabled_reason: kept.disabled_reason.filter(|_| disabled),
        failing_since: kept.failing_since.filter(|_| pushes && !enabled_again),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_700_000_000 + seconds, 0).unwrap()
    }

    #[test]
    fn one_success_in_a_batch_means_recovered_whatever_failed_beside_it() {
        let a = Uuid::from_u128(1);
        let seen = observe([(a, false, at(1)), (a, true, at(2)), (a, false, at(3))]);
        assert_eq!(seen, [(a, Health::Recovered)]);
        assert_eq!(Health::Recovered.failing_since(), None);
        assert!(Health::Recovered.changes_a_failing_endpoint());
    }

    #[test]
    fn only_failures_mean_failing_since_the_earliest_attempt() {
        let a = Uuid::from_u128(1);
        let seen = observe([(a, false, at(5)), (a, false, at(2)), (a, false, at(9))]);
        assert_eq!(seen, [(a, Health::Failing { since: at(2) })]);
        let failing = seen[0].1;
        assert_eq!(failing.failing_since(), Some(at(2)));
        assert!(!failing.changes_a_failing_endpoint());
    }

    #[test]
    fn endpoints_come_out_once_each_in_id_order() {
        let (a, b, c) = (Uuid::from_u128(1), Uuid::from_u128(2), Uuid::from_u128(3));
        let seen = observe([
            (c, true, at(0)),
            (a, false, at(0)),
            (b, false, at(1)),
            (a, false, at(2)),
        ]);
        let ids: Vec<Uuid> = seen.iter().map(|(id, _)| *id).collect();
        assert_eq!(ids, [a, b, c]);
    }

    #[test]
    fn a_change_keeps_health_only_while_the_endpoint_stays_as_it_was() {
        let since = Utc::now();
        let kept = || Kept {
            disabled_reason: Some(DISABLED_FAILING.to_string()),
            failing_since: Some(since),
        };
        // (was disabled, disabled, pushes) -> (reason kept, failing kept)
        let cases = [
            ((true, true, true), (true, true)),
            ((true, false, true), (false, false)),
            ((false, false, true), (false, true)),
            ((false, true, true), (true, true)),
            ((false, false, false), (false, false)),
            ((true, true, false), (true, false)),
        ];
        for ((was, now, pushes), (reason, failing)) in cases {
            let after = after_change(kept(), was, now, pushes);
            assert_eq!(
                after.disabled_reason.is_some(),
                reason,
                "{was} {now} {pushes}"
            );
            assert_eq!(
                after.failing_since.is_some(),
                failing,
                "{was} {now} {pushes}"
            );
        }
    }
}
